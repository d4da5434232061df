#!/bin/bash
# SPDX-License-Identifier: MIT
# plot_svg.sh — `memlife plot` output parsed with a real XML parser (python3 xml.etree): the
# labels, the peaks' coordinates against the drawn y axis, a shared scale, self-containment.
# seed: naive RS+AG peak 576 MiB, optimized 320 MiB at world 4 (chapter 07).
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
command -v python3 >/dev/null || { echo "skip - plot-svg: python3 not installed"; exit 0; }
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT
NAIVE=schedules/seed/03_rs_ag_naive.yaml OPT=schedules/seed/04_rs_ag_optimized.yaml

if ! "$ML" plot "$NAIVE" "$OPT" -o "$tmp/p.svg" 2>"$tmp/err"; then
    echo "not ok - plot-svg-writes: exit $?: $(head -c 300 "$tmp/err")"
    exit 0
fi
echo "ok - plot-svg-writes"

python3 - "$tmp/p.svg" <<'PY'
import sys, re, xml.etree.ElementTree as ET
S = '{http://www.w3.org/2000/svg}'
def report(name, ok, why=''):
    print(('ok - ' + name) if ok else ('not ok - %s: %s' % (name, why)))
try:
    root = ET.parse(sys.argv[1]).getroot()
except ET.ParseError as e:
    report('plot-svg-parses', False, e); sys.exit(0)
report('plot-svg-parses', root.tag == S + 'svg', root.tag)

texts = [''.join(t.itertext()) for t in root.iter(S + 'text')]
# span labels sit in the stream lanes, only where they fit: all_gather does (98 px of
# 66 px a slot... two slots wide in the optimized panel), reduce_scatter (14 glyphs, 82 px) does
# not fit its 66 px span and is dropped rather than drawn over its neighbour
# the peak's buffers largest first (full and gathered 256 MiB, in allocation order, then shard)
want = ['peak 576 MiB', 'peak 320 MiB', 'live: full 256 MiB, gathered 256 MiB, shard 64 MiB',
        'live: full 256 MiB, shard 64 MiB', 'all_gather', 'default', 'sync', 'ranks 0-3',
        'rs-ag-naive-lifetime', 'rs-ag-optimized-lifetime', 'full', 'shard', 'gathered']
missing = [w for w in want if w not in texts]
report('plot-svg-labels', not missing, 'missing %s' % missing)
# no two lane labels overlap (glyphs at 5.6 px, the estimate the writer uses)
labels = sorted((float(t.get('y')), float(t.get('x')), ''.join(t.itertext())) for t in root.iter(S + 'text')
                if t.get('class') == 'lane-label')
clash = [(a, b) for a, b in zip(labels, labels[1:]) if a[0] == b[0] and a[1] + 5.6 * len(a[2]) > b[1]]
report('plot-svg-lane-labels-apart', labels and not clash, clash or 'no lane labels')

panels = [g for g in root.iter(S + 'g') if g.get('class') == 'panel']
report('plot-svg-two-panels', len(panels) == 2, '%d panels' % len(panels))

# Each peak circle must sit where its own panel's y ticks put its bytes, and the two panels must
# draw the same ticks (one shared scale).
scales, bad = [], []
for g in panels:
    ticks = [(float(t.get('data-bytes')), float(t.get('data-y'))) for t in g.iter(S + 'text') if t.get('class') == 'ytick']
    (b0, y0), (bt, yt) = min(ticks), max(ticks)
    scales.append(ticks)
    for c in g.iter(S + 'circle'):
        if c.get('class') != 'peak':
            continue
        want_y = y0 - (y0 - yt) * float(c.get('data-bytes')) / bt
        if abs(float(c.get('cy')) - want_y) > 0.2:
            bad.append('cy %s != %.1f' % (c.get('cy'), want_y))
peaks = sorted(int(c.get('data-bytes')) for c in root.iter(S + 'circle') if c.get('class') == 'peak')
report('plot-svg-peak-values', peaks == [320 << 20, 576 << 20], peaks)
report('plot-svg-peak-coordinates', not bad and len(peaks) == 2, bad)
report('plot-svg-shared-scale', len(scales) == 2 and scales[0] == scales[1], scales)

text = open(sys.argv[1], encoding='utf-8').read()
external = [w for w in ('href', '<script', '@import', 'url(', '@font-face', '<image') if w in text]
fonts = set(e.get('font-family') for e in root.iter() if e.get('font-family'))
report('plot-svg-self-contained', not external and fonts == {'sans-serif'}, (external, fonts))
PY

# Bad input: exit 2 and nothing written.
rm -f "$tmp/bad.svg"
"$ML" plot does-not-exist.yaml -o "$tmp/bad.svg" 2>/dev/null; rc=$?
if [ $rc -eq 2 ] && [ ! -e "$tmp/bad.svg" ]; then echo "ok - plot-bad-input"; else echo "not ok - plot-bad-input: exit $rc"; fi
"$ML" plot "$NAIVE" --time -o "$tmp/bad.svg" 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "needs a run result" "$tmp/err" && [ ! -e "$tmp/bad.svg" ]; then
    echo "ok - plot-time-needs-run"
else
    echo "not ok - plot-time-needs-run: exit $rc: $(head -c 200 "$tmp/err")"
fi
