#!/bin/bash
# SPDX-License-Identifier: MIT
# trace_result.sh — `memlife trace` of a `memlife run` result (host backend, 4 ranks): events sit
# at the measured times (op k from the sample before it to its own), counters carry the measured
# bytes beside the predicted ones, and on the host backend they agree byte for byte.
# seed: naive RS+AG with M = 4 MiB: requested peak 9 MiB (2M + M/4).
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "skip - trace-result: mpirun not installed"; exit 0; }
command -v python3 >/dev/null || { echo "skip - trace-result: python3 not installed"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT

if ! "$ML" run schedules/seed/03_rs_ag_naive.yaml --set M=4MiB --format json -o "$tmp/run.json" >"$tmp/log" 2>&1; then
    echo "skip - trace-result: memlife run on the host backend failed: $(tail -c 200 "$tmp/log")"
    exit 0
fi
if ! "$ML" trace "$tmp/run.json" --set M=4MiB -o "$tmp/t.json" 2>"$tmp/err"; then
    echo "not ok - trace-result: exit $?: $(head -c 200 "$tmp/err")"; exit 0
fi

python3 - "$tmp/run.json" "$tmp/t.json" <<'PY'
import sys, json
run, tr = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ev = tr['traceEvents']
procs = {e['args']['name']: e['pid'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
bad_t, bad_c = [], []
for rank in run['schedules'][0]['ranks']:
    pid = procs.get('rs-ag-naive-lifetime rank %d' % rank['rank'])
    t = {s['index']: s['t'] * 1e6 for s in rank['measured']['timeline'] if s['index'] is not None}
    for e in ev:
        if e['pid'] != pid or e['ph'] != 'X' or e.get('cat') != 'collective':
            continue
        k = {'reduce_scatter': 3, 'all_gather': 4}[e['name']]
        if abs(e['ts'] - t[k - 1]) > 1e-3 or abs(e['ts'] + e['dur'] - t[k]) > 1e-3:
            bad_t.append((rank['rank'], e['name'], e['ts'], e['dur'], t[k - 1], t[k]))
    req = [e['args'] for e in ev if e['pid'] == pid and e['ph'] == 'C' and e['name'] == 'requested bytes']
    if not req or any(a.get('measured') != a['predicted'] for a in req) or max(a['measured'] for a in req) != 9 << 20:
        bad_c.append((rank['rank'], req))
    dev = [e['args'] for e in ev if e['pid'] == pid and e['ph'] == 'C' and e['name'] == 'device bytes']
    if any('measured' in a for a in dev):   # the host backend reads no device memory
        bad_c.append((rank['rank'], 'device measured on host'))
print('ok - trace-result-measured-times' if not bad_t and len(procs) == 4 else 'not ok - trace-result-measured-times: %s' % bad_t[:2])
print('ok - trace-result-counters' if not bad_c else 'not ok - trace-result-counters: %s' % bad_c[:1])
PY
