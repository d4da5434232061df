#!/bin/bash
# SPDX-License-Identifier: MIT
# trace_json.sh — `memlife trace` writes Chrome trace-event JSON: one process per rank, counter
# tracks of requested and device bytes, a complete event per collective with its arguments, per
# sync, per region, an instant per alloc/free; counts match the ops of the schedule.
# seed: naive RS+AG at world 4 — 3 allocs, RS + AG, 1 sync, 2 frees; peak 576 MiB.
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
command -v python3 >/dev/null || { echo "skip - trace-json: python3 not installed"; exit 0; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

if ! "$ML" trace schedules/seed/03_rs_ag_naive.yaml -o "$tmp/t.json" 2>"$tmp/err"; then
    echo "not ok - trace-json-writes: exit $?: $(head -c 300 "$tmp/err")"; exit 0
fi
echo "ok - trace-json-writes"

python3 - "$tmp/t.json" <<'PY'
import sys, json
from collections import Counter
def report(name, ok, why=''):
    print(('ok - ' + name) if ok else ('not ok - %s: %s' % (name, why)))
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    report('trace-json-loads', False, e); sys.exit(0)
ev = doc.get('traceEvents', [])
report('trace-json-loads', isinstance(ev, list) and ev, 'no traceEvents')
procs = {e['pid']: e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
report('trace-json-processes', sorted(procs.values()) == ['rs-ag-naive-lifetime rank %d' % r for r in range(4)], procs)

bad = []
for pid in procs:
    mine = [e for e in ev if e['pid'] == pid]
    kinds = Counter((e['ph'], e.get('cat')) for e in mine)
    if kinds[('X', 'collective')] != 2: bad.append('collectives %d' % kinds[('X', 'collective')])
    if kinds[('X', 'sync')] != 1: bad.append('syncs %d' % kinds[('X', 'sync')])
    if kinds[('i', 'buffer')] != 5: bad.append('buffer events %d' % kinds[('i', 'buffer')])
    colls = {e['name']: e for e in mine if e.get('cat') == 'collective'}
    rs, ag = colls.get('reduce_scatter'), colls.get('all_gather')
    if not rs or not ag: bad.append('names %s' % list(colls)); continue
    # count is NCCL's: RS the recvcount, AG the sendcount (M/world floats = 16 Mi elements)
    want = {'bytes': 256 << 20, 'count': 16 << 20, 'op': 'sum', 'dtype': 'float32',
            'stream': 'default', 'in_place': False}
    got = {k: rs['args'].get(k) for k in want}
    if got != want: bad.append('rs args %s' % got)
    if 'op' in ag['args'] or ag['args'].get('bytes') != 256 << 20: bad.append('ag args %s' % ag['args'])
    # predicted time: op k spans [k, k+1) us; RS is op 3, AG op 4
    if (rs['ts'], rs['dur'], ag['ts']) != (3, 1, 4): bad.append('times %s' % ((rs['ts'], rs['dur'], ag['ts']),))
    req = [e['args']['predicted'] for e in mine if e['ph'] == 'C' and e['name'] == 'requested bytes']
    dev = [e['args']['predicted'] for e in mine if e['ph'] == 'C' and e['name'] == 'device bytes']
    if max(req) != 576 << 20 or req[-1] != 256 << 20: bad.append('requested counter %s' % req)
    if max(dev) != 576 << 20: bad.append('device counter %s' % dev)
report('trace-json-events-per-rank', not bad, bad)
PY
