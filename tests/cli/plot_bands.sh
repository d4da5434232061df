#!/bin/bash
# SPDX-License-Identifier: MIT
# plot_bands.sh — the buffer bands, rows, ticks and grid of `memlife plot`, checked from the SVG
# text (python3 xml.etree) against numbers computed here from the inputs themselves:
#   - a real PyTorch snapshot (tests/torch/fixtures/snapshots/a_train.pickle, imported): at most 10
#     named bands plus one "N small buffers" band whose N is the count of buffers neither named nor
#     drawn one by one in grey (those are each 0.5% of the peak or more); the named bands hold
#     most of the bytes times steps (the snapshot's two 32 MiB buffers alone hold over half); the
#     largest allocation has a band; the peak's note lists the buffers live at
#     the peak largest first, the first being the largest live there by the imported steps; the x
#     ticks are horizontal and no two labels meet;
#   - schedules/training/pipeline_1f1b.yaml at world 4: the four stages hold different stashes, so
#     every rank has its own row, bands and curve;
#   - 16 plans of 13 schedules in one picture: a grid (3 columns), every panel on its own y scale
#     (top tick between its peak and twice it: 1 MiB training plans beside 576 MiB seeds), and one
#     colour per buffer name across all panels, with names that recur ('opt', 'full') to test it;
#   - the torch view: the reserved curve never under the allocated one, with the envelope drawn.
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
command -v python3 >/dev/null || { echo "skip - plot-bands: python3 not installed"; exit 0; }
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT
SNAP=tests/torch/fixtures/snapshots/a_train.pickle

if ! "$ML" import "$SNAP" -o "$tmp/a.yaml" >/dev/null 2>"$tmp/err" ||
   ! "$ML" plot "$tmp/a.yaml" -o "$tmp/a.svg" 2>>"$tmp/err" ||
   ! "$ML" plot "$tmp/a.yaml" --view torch -o "$tmp/at.svg" 2>>"$tmp/err" ||
   ! "$ML" plot schedules/training/pipeline_1f1b.yaml -o "$tmp/p.svg" 2>>"$tmp/err" ||
   ! "$ML" plot schedules/training/fsdp2.yaml --view torch -o "$tmp/ft.svg" 2>>"$tmp/err" ||
   ! "$ML" plot schedules/training/*.yaml schedules/seed/0[1-4]*.yaml schedules/seed/06*.yaml \
        schedules/optimize/*.yaml -o "$tmp/m.svg" 2>>"$tmp/err"; then
    echo "not ok - plot-bands-writes: $(head -c 300 "$tmp/err")"
    exit 0
fi
echo "ok - plot-bands-writes"

python3 - "$tmp" <<'PY'
import re, sys, xml.etree.ElementTree as ET
S = '{http://www.w3.org/2000/svg}'
tmp = sys.argv[1]
def report(name, ok, why=''):
    print(('ok - ' + name) if ok else ('not ok - %s: %s' % (name, why)))
def load(name):
    return ET.parse('%s/%s' % (tmp, name)).getroot()
def cls(root, tag, c):
    return [e for e in root.iter(S + tag) if (e.get('class') or '').split()[:1] == [c]]
def text(e):
    return ''.join(e.itertext())

# --- the imported snapshot: its steps, replayed here
steps = [l for l in open(tmp + '/a.yaml') if l.startswith('- ')]
live, start, size, area, after = {}, {}, {}, {}, []
for k, l in enumerate(steps):
    m = re.match(r'- alloc: \{buf: (\S+), bytes: (\d+)\}', l)
    if m:
        start[m[1]], size[m[1]] = k, int(m[2]); live[m[1]] = int(m[2])
    m = re.match(r'- free: (\S+)', l)
    if m:
        area[m[1]] = area.get(m[1], 0) + size[m[1]] * (k - start[m[1]]); del live[m[1]]
    after.append(dict(live))
for b in live:
    area[b] = area.get(b, 0) + size[b] * (len(steps) - start[b])

a = load('a.svg')
bands = cls(a, 'path', 'band')
named = [b for b in bands if b.get('data-buffer') and not b.get('data-other')]
others = [b for b in bands if b.get('data-other')]
small = [b for b in bands if b.get('data-small')]
names = set(b.get('data-name') for b in named)
drawn = set(b.get('data-buffer') for b in named)
n_small = len(set(size) - drawn - set(b.get('data-buffer') for b in others))
report('plot-bands-count', 1 <= len(names) <= 10 and len(small) == 1 and
       small[0].get('data-small') == str(n_small) and small[0].get('data-name') == '%d small buffers' % n_small,
       (sorted(names), [(s.get('data-small'), s.get('data-name')) for s in small], n_small))
legend = [text(t) for t in cls(a, 'text', 'legend')]
n_other = len(set(b.get('data-buffer') for b in others))
report('plot-bands-named-in-legend', all(any(l.startswith(n) for l in legend) for n in names) and
       '%d small buffers' % n_small in legend and '%d other buffers, one by one' % n_other in legend,
       (sorted(names), legend))
# the unnamed allocations drawn one by one are no tiny ones: each at least 0.5% of the peak
peak_bytes = max(sum(l.values()) for l in after)
tiny = [b.get('data-buffer') for b in others if int(b.get('data-bytes')) < 0.005 * peak_bytes]
report('plot-bands-others-not-tiny', others and not tiny, (len(others), tiny[:3]))
share = sum(area[b] for b in drawn) / sum(area.values())
report('plot-bands-hold-most', share > 0.5, 'named bands hold %.2f of bytes x steps' % share)
largest = max(size, key=lambda b: (size[b], -start[b]))
report('plot-bands-largest-drawn', largest in drawn, '%s (%d B) not drawn' % (largest, size[largest]))

peak = cls(a, 'circle', 'peak')[0]
at = after[int(peak.get('data-op'))]
note = ' '.join(text(t) for t in cls(a, 'text', 'peak-label'))
items = re.findall(r'([^ ,]+) ([0-9.]+) (B|KiB|MiB|GiB)', note.split('live:')[1].split(' and ')[0])
unit = {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}
sizes = [float(v) * unit[u] for _, v, u in items]
report('plot-bands-peak-largest-first',
       sum(at.values()) == int(peak.get('data-bytes')) and items and
       items[0][0] == max(at, key=lambda b: (at[b], -start[b])) and sizes == sorted(sizes, reverse=True),
       (sum(at.values()), peak.get('data-bytes'), items[:4]))

def ticks_apart(root):
    bad = []
    for g in cls(root, 'g', 'panel'):
        ts = sorted((float(t.get('x')), text(t)) for t in cls(g, 'text', 'xtick'))
        bad += [(p, q) for p, q in zip(ts, ts[1:]) if p[0] + 3.1 * len(p[1]) + 4 > q[0] - 3.1 * len(q[1])]
        bad += [t.get('transform') for t in cls(g, 'text', 'xtick') if t.get('transform')]
        if len(ts) < 3:
            bad.append('only %d ticks' % len(ts))
    return bad
bad = ticks_apart(a)
report('plot-bands-xticks-apart', not bad and float(a.get('width')) <= 1600, (bad[:3], a.get('width')))

# --- pipeline 1F1B: a row, bands and a curve for every rank
p = load('p.svg')
rows = sorted(text(t) for t in cls(p, 'text', 'row-label'))
ranks = lambda els: sorted(set(e.get('data-rank') for e in els))
want = ['0', '1', '2', '3']
report('plot-bands-every-rank', rows == ['rank 0', 'rank 1', 'rank 2', 'rank 3'] and
       ranks(cls(p, 'path', 'band')) == want and ranks(cls(p, 'path', 'curve')) == want,
       (rows, ranks(cls(p, 'path', 'band')), ranks(cls(p, 'path', 'curve'))))

# --- many schedules: a grid, own scales, one colour per name
m = load('m.svg')
panels = cls(m, 'g', 'panel')
xs = sorted(set(g.get('transform').split()[0] for g in panels))
ys = sorted(set(g.get('transform').split()[1] for g in panels))
report('plot-bands-grid', len(panels) == 16 and len(xs) == 3 and len(ys) == 6 and ticks_apart(m) == [],
       (len(panels), xs, ys, ticks_apart(m)[:3]))
scale_bad = []
for g in panels:
    top = max(float(t.get('data-bytes')) for t in cls(g, 'text', 'ytick'))
    pk = max(float(c.get('data-bytes')) for c in cls(g, 'circle', 'peak'))
    if not pk <= top <= 2 * pk:
        scale_bad.append((text(cls(g, 'text', 'title')[0]), pk, top))
report('plot-bands-own-scales', not scale_bad, scale_bad)
fills, panels_of = {}, {}
for i, g in enumerate(panels):
    for b in cls(g, 'path', 'band'):
        if b.get('data-other'):
            continue
        fills.setdefault(b.get('data-name'), set()).add(b.get('fill'))
        panels_of.setdefault(b.get('data-name'), set()).add(i)
many = [n for n in fills if len(fills[n]) != 1]
report('plot-bands-one-colour-per-name', not many and len(panels_of.get('opt', ())) >= 5 and
       len(panels_of.get('full', ())) >= 4, ({n: fills[n] for n in many}, panels_of.get('opt'), panels_of.get('full')))

# --- the torch view: reserved over allocated, at every x where either steps
def steps_of(d):
    pts, x, y = [], 0.0, 0.0
    for cmd, v in re.findall(r'([MHV])([-0-9. ]+)', d):
        if cmd == 'M':
            x, y = map(float, v.split())
        elif cmd == 'H':
            x = float(v)
        else:
            y = float(v)
        pts.append((x, y))
    return pts
def at_x(pts, x):   # the last y drawn at or left of x (a step function)
    y = pts[0][1]
    for px_, py_ in pts:
        if px_ <= x + 1e-9:
            y = py_
    return y
for name in ('at.svg', 'ft.svg'):
    root, bad = load(name), []
    curves = {}
    for c in cls(root, 'path', 'curve'):
        curves[(c.get('data-rank'), c.get('data-kind'))] = steps_of(c.get('d'))
    pairs = [r for (r, k) in curves if k == 'reserved' and (r, 'allocated') in curves]
    for r in pairs:
        res, alc = curves[(r, 'reserved')], curves[(r, 'allocated')]
        for x in sorted(set(px_ for px_, _ in res + alc)):
            if at_x(res, x) > at_x(alc, x) + 0.05:   # y grows downwards
                bad.append((r, x, at_x(res, x), at_x(alc, x)))
    report('plot-bands-reserved-over-allocated ' + name, pairs and not bad and
           len(cls(root, 'path', 'reserved-envelope')) == len(pairs), (pairs, bad[:3]))
PY
