#!/bin/bash
# SPDX-License-Identifier: MIT
# plot_render.sh — the SVG of `memlife plot` rendered by headless Chromium: the screenshot is not
# blank, and the red peak markers are drawn where the SVG says (naive 576 MiB, optimized 320 MiB,
# chapter 07 at world 4). The PNG is decoded with python3's zlib alone (no imaging package).
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
CHROMIUM=$(command -v chromium || command -v chromium-browser)
if [ -z "$CHROMIUM" ]; then echo "skip - plot-render: chromium not installed"; exit 0; fi
command -v python3 >/dev/null || { echo "skip - plot-render: python3 not installed"; exit 0; }
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT

if ! "$ML" plot schedules/seed/03_rs_ag_naive.yaml schedules/seed/04_rs_ag_optimized.yaml \
        -o "$tmp/p.svg" 2>"$tmp/err"; then
    echo "not ok - plot-render: memlife plot failed: $(head -c 300 "$tmp/err")"
    exit 0
fi
# A fresh profile folder keeps the run independent of any user state; HOME too (root's may be
# read-only under CI).
HOME=$tmp timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$tmp/profile" --screenshot="$tmp/p.png" --window-size=1280,800 \
    "file://$tmp/p.svg" >"$tmp/chromium.log" 2>&1
if [ ! -s "$tmp/p.png" ]; then
    echo "not ok - plot-render: chromium wrote no screenshot: $(tail -c 300 "$tmp/chromium.log")"
    exit 0
fi

python3 - "$tmp/p.png" "$tmp/p.svg" <<'PY'
import sys, zlib, struct, xml.etree.ElementTree as ET

def decode_png(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
    pos, idat = 8, b''
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):     # undo the PNG scanline filter
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line); prev = line
    return w, h, bpp, rows

def report(name, ok, why=''):
    print(('ok - ' + name) if ok else ('not ok - %s: %s' % (name, why)))

try:
    w, h, bpp, rows = decode_png(sys.argv[1])
except Exception as e:
    report('plot-render', False, 'cannot decode the screenshot: %s' % e); sys.exit(0)
px = lambda x, y: tuple(rows[y][x * bpp:x * bpp + 3])
colors, dark = set(), 0
for y in range(0, h, 2):
    for x in range(0, w, 2):
        c = px(x, y); colors.add(c)
        dark += sum(c) < 600
report('plot-render-not-blank', len(colors) >= 16 and dark > 1000,
       '%d distinct colours, %d non-white samples' % (len(colors), dark))

S = '{http://www.w3.org/2000/svg}'
peaks = [c for c in ET.parse(sys.argv[2]).getroot().iter(S + 'circle') if c.get('class') == 'peak']
missing = []
for c in peaks:
    cx, cy = int(round(float(c.get('cx')))), int(round(float(c.get('cy'))))
    near = [px(x, y) for y in range(max(cy - 3, 0), min(cy + 4, h)) for x in range(max(cx - 3, 0), min(cx + 4, w))]
    if not any(r > 150 and g < 90 and b < 90 for r, g, b in near):
        missing.append((c.get('data-bytes'), cx, cy))
report('plot-render-peak-markers', len(peaks) == 2 and not missing, 'no red marker at %s' % missing)
PY
