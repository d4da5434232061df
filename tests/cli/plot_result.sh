#!/bin/bash
# SPDX-License-Identifier: MIT
# plot_result.sh — `memlife plot` of a `memlife run` result (host backend, 4 ranks): the measured
# curve is drawn dashed over the prediction, --time puts it over the measured seconds, and a result
# whose run used other --set values than the plot is refused (exit 2).
# seed: naive RS+AG with M = 4 MiB: peak 2M + M/4 = 9 MiB on every rank (chapter 07's formula).
cd "$(dirname "$0")/../.." || exit 1
ML=${MEMLIFE:-./memlife}
[ -x "$ML" ] || { echo "memlife binary not found at $ML" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "skip - plot-result: mpirun not installed"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d); . "$(dirname "$0")/../json.bash"; trap 'json_collect "$tmp"; rm -rf "$tmp"' EXIT
NAIVE=schedules/seed/03_rs_ag_naive.yaml

if ! "$ML" run "$NAIVE" --set M=4MiB --format json -o "$tmp/run.json" >"$tmp/log" 2>&1; then
    echo "skip - plot-result: memlife run on the host backend failed: $(tail -c 200 "$tmp/log")"
    exit 0
fi

"$ML" plot "$tmp/run.json" --set M=4MiB -o "$tmp/p.svg" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] && grep -q 'data-kind="measured"[^>]*stroke-dasharray' "$tmp/p.svg" &&
   grep -q '>peak 9 MiB<' "$tmp/p.svg" && grep -q 'predicted (solid) and measured (dashed)' "$tmp/p.svg"; then
    echo "ok - plot-result-measured"
else
    echo "not ok - plot-result-measured: exit $rc: $(head -c 200 "$tmp/err")"
fi

"$ML" plot "$tmp/run.json" --set M=4MiB --time -o "$tmp/t.svg" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] && grep -q '>time since baseline (measured)<' "$tmp/t.svg"; then
    echo "ok - plot-result-time"
else
    echo "not ok - plot-result-time: exit $rc: $(head -c 200 "$tmp/err")"
fi

"$ML" plot "$tmp/run.json" -o "$tmp/bad.svg" 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "pass the run's --set values" "$tmp/err" && [ ! -e "$tmp/bad.svg" ]; then
    echo "ok - plot-result-other-set-refused"
else
    echo "not ok - plot-result-other-set-refused: exit $rc: $(head -c 200 "$tmp/err")"
fi
