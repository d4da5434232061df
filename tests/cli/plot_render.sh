#!/bin/bash
# SPDX-License-Identifier: MIT
# plot_render.sh — the SVG of `memlife plot` rendered by headless Chromium, each at its own size:
#   - seeds 03/04 (naive 576 MiB, optimized 320 MiB, chapter 07 at world 4): the screenshot is not
#     blank, and the red peak markers are drawn where the SVG says;
#   - an imported PyTorch snapshot (a_train.pickle) and schedules/training/pipeline_1f1b.yaml: the
#     screenshot has the SVG's size, and the colours of its bands (each band's fill at its opacity
#     over white) are there in pixels, 4 or more of them; for the pipeline the four ranks' curve
#     colours too (every rank drawn).
# The PNG is decoded with python3's zlib alone (no imaging package).
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
shoot() {   # name, width, height
    HOME=$tmp timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$tmp/profile" --screenshot="$tmp/$1.png" --window-size="$2,$3" \
        "file://$tmp/$1.svg" >"$tmp/chromium.log" 2>&1
    [ -s "$tmp/$1.png" ] && return 0
    echo "not ok - plot-render: chromium wrote no screenshot of $1: $(tail -c 300 "$tmp/chromium.log")"
    return 1
}
svg_size() { sed -n 's/.*<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$tmp/$1.svg"; }
shoot p 1280 800 || exit 0
"$ML" import tests/torch/fixtures/snapshots/a_train.pickle -o "$tmp/a.yaml" >/dev/null 2>&1
if ! "$ML" plot "$tmp/a.yaml" -o "$tmp/a.svg" 2>"$tmp/err" ||
   ! "$ML" plot schedules/training/pipeline_1f1b.yaml -o "$tmp/pp.svg" 2>>"$tmp/err"; then
    echo "not ok - plot-render: memlife plot failed: $(head -c 300 "$tmp/err")"
    exit 0
fi
# shellcheck disable=SC2046
shoot a $(svg_size a) && shoot pp $(svg_size pp) || exit 0

python3 - "$tmp" <<'PY'
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

tmp = sys.argv[1]
try:
    w, h, bpp, rows = decode_png(tmp + '/p.png')
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
# each panel is drawn at its own origin and placed by translate(X Y)
peaks = []
for g in ET.parse(tmp + '/p.svg').getroot().iter(S + 'g'):
    if g.get('class') == 'panel':
        dx, dy = map(float, g.get('transform')[len('translate('):-1].split())
        peaks += [(c, dx, dy) for c in g.iter(S + 'circle') if c.get('class') == 'peak']
missing = []
for c, dx, dy in peaks:
    cx, cy = int(round(float(c.get('cx')) + dx)), int(round(float(c.get('cy')) + dy))
    near = [px(x, y) for y in range(max(cy - 3, 0), min(cy + 4, h)) for x in range(max(cx - 3, 0), min(cx + 4, w))]
    if not any(r > 150 and g < 90 and b < 90 for r, g, b in near):
        missing.append((c.get('data-bytes'), cx, cy))
report('plot-render-peak-markers', len(peaks) == 2 and not missing, 'no red marker at %s' % missing)

def rgb(hexa):
    return tuple(int(hexa[i:i + 2], 16) for i in (1, 3, 5))
def present(counts, want, tol=6):
    return any(all(abs(a - b) <= tol for a, b in zip(c, want)) and n >= 20 for c, n in counts.items())
for name, curves in (('a', ['#1f77b4']), ('pp', ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'])):
    root = ET.parse('%s/%s.svg' % (tmp, name)).getroot()
    try:
        w, h, bpp, rows = decode_png('%s/%s.png' % (tmp, name))
    except Exception as e:
        report('plot-render-' + name, False, 'cannot decode the screenshot: %s' % e); continue
    report('plot-render-%s-size' % name, (w, h) == (int(root.get('width')), int(root.get('height'))),
           '%dx%d for an SVG of %sx%s' % (w, h, root.get('width'), root.get('height')))
    counts = {}
    for y in range(h):
        for x in range(w):
            c = tuple(rows[y][x * bpp:x * bpp + 3])
            counts[c] = counts.get(c, 0) + 1
    # a band's colour as drawn: its fill at its opacity over the white page
    want = {}
    for e in root.iter(S + 'path'):
        if e.get('class') == 'band' and e.get('data-name') and not e.get('data-small'):
            op = float(e.get('fill-opacity'))
            want[e.get('data-name')] = tuple(round(255 - op * (255 - v)) for v in rgb(e.get('fill')))
    seen = [n for n, c in want.items() if present(counts, c)]
    report('plot-render-%s-band-colours' % name, len(seen) >= 4 and len(set(want.values())) >= 4,
           'band colours seen for %s of %s' % (seen, sorted(want)))
    lines = [c for c in curves if not present(counts, rgb(c), tol=30)]
    report('plot-render-%s-ranks' % name, not lines, 'no pixels of the curves %s' % lines)
PY
