#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The torch backend (runtime/backends/torch.c + runtime/backends/torch/driver.py) on CPUs over
# gloo, with the python3 that has torch (make deps puts PyTorch in .venv, which tests/run.sh puts first on PATH):
#   - the seed schedules at 2 and 4 ranks: every data check PASS, requested bytes measured =
#     predicted on every rank and op; at 4 ranks the chapter's 256/256, 64/320, 256/576,
#     256/320 MiB; the result says which collectives gloo emulated;
#   - failures with a stand-in driver (tests/mpi/data/fake_torch_driver.py, no torch needed): a
#     driver that dies, one that stops answering, an interpreter without torch: exit 3 within the
#     deadline, the reason, no result file, no driver left running.
. "$(dirname "$0")/lib.bash"

require_host_backend "torch backend"

TORCH_PY=$(torch_python)

MiB=1048576
if [ -z "$TORCH_PY" ]; then
    skip "torch backend: seed schedules" "no python3 with torch (make deps)"
else
    for n in 2 4; do
        name="torch backend, $n ranks: seed schedules, checks PASS, requested measured = predicted"
        run run schedules/seed/0[1-5]*.yaml --backend torch --ranks "$n" --format json -o "$TMP/t$n.json"
        if [ "$RC" -ne 0 ]; then
            not_ok "$name" "exit $RC: $(head -3 "$TMP/err" | tr '\n' ' ')"
            continue
        fi
        # 9 schedules (4 lifetimes, 5 contracts) x n ranks
        jq_case "$name" '[.schedules[] | .ranks[] | .match and
            .measured.requested.steady == .requested.steady and
            .measured.requested.peak == .requested.peak] | length == 9 * '"$n"' and all' "$TMP/t$n.json"
        # the contracts' rows: 12 checks x n ranks (exact sum 3, nondivisible 1, padding 4, wrong op 2, wrong order 2)
        jq_case "torch backend, $n ranks: 12 x $n check rows, all pass" \
            '[.schedules[] | .checks[]? | .status == "pass"] | length == 12 * '"$n"' and all' "$TMP/t$n.json"
        jq_case "torch backend, $n ranks: provenance names gloo and what it emulated" \
            '.provenance.backend == "torch" and .provenance.torch_process_group == "gloo" and
             (.provenance.torch_emulated | contains("reduce_scatter=all_reduce"))' "$TMP/t$n.json"
    done
    want='{"allreduce-full":[256,256],"reduce-scatter-shard":[64,320],"rs-ag-naive-lifetime":[256,576],"rs-ag-optimized-lifetime":[256,320]}'
    [ -f "$TMP/t4.json" ] && jq_case "torch backend, 4 ranks: measured 256/256, 64/320, 256/576, 256/320 MiB" \
        "($want) as \$w | [.schedules[] | select(\$w[.name]) | .name as \$n | .ranks[] |
          .measured.requested.steady == \$w[\$n][0] * $MiB and
          .measured.requested.peak == \$w[\$n][1] * $MiB] | length == 16 and all" "$TMP/t4.json"
fi

# Failures, with the stand-in driver under the plain python3 (it needs no torch).
FAKE=tests/mpi/data/fake_torch_driver.py
PY=$(command -v python3)
fail_case() {   # NAME WANT LIMIT [RC] -- ARGS: the run fails with exit RC (default 3)
    local name=$1 want=$2 limit=$3 want_rc=3
    shift 3
    if [ "${1:-}" = 2 ]; then want_rc=2; shift; fi
    rm -f "$TMP/f.json"
    local t0=$SECONDS
    run run tests/mpi/data/faults.yaml --backend torch --ranks 4 -o "$TMP/f.json" "$@"
    local took=$((SECONDS - t0)) left
    left=$(pgrep -f "$FAKE" | head -1)
    if [ "$RC" -eq "$want_rc" ] && grep -qF -- "$want" "$TMP/err" && [ ! -e "$TMP/f.json" ] &&
        [ "$took" -le "$limit" ] && [ -z "$left" ]; then
        ok "torch backend: $name (exit $want_rc in ${took} s)"
    else
        not_ok "torch backend: $name" "exit $RC after ${took} s (limit $limit), driver left: ${left:-none}; $(head -2 "$TMP/err" | tr '\n' ' ')"
    fi
}
export MEMLIFE_TORCH_DRIVER=$FAKE FAKE_RANK=1 FAKE_AT=4
MEMLIFE_PYTHON=$PY FAKE_MODE=die fail_case "a driver killed at its 4th request" \
    "was ended by signal 9 (Killed)" 30
# rank 1's driver never answers: its peers' sequence exchange ends the job at the 3 s deadline
MEMLIFE_PYTHON=$PY FAKE_MODE=hang fail_case "a driver that stops answering, --timeout 3" \
    "for ranks [1] (in an exchange with every rank; deadline 3 s, --timeout)" 30 --timeout 3
unset MEMLIFE_TORCH_DRIVER FAKE_RANK FAKE_AT
# pyenv's python3 here, or any interpreter without torch: the driver exits 9
cat >"$TMP/notorch" <<'SH'
#!/bin/sh

exit 9
SH
chmod +x "$TMP/notorch"
MEMLIFE_PYTHON=$TMP/notorch fail_case "MEMLIFE_PYTHON without torch" \
    "backend 'torch' could not start: MEMLIFE_PYTHON=$TMP/notorch cannot import torch" 30
# a driver path that cannot be read is refused with the environment's other checks, before
# mpirun starts (exit 2, runtime/exec/env.c)
MEMLIFE_TORCH_DRIVER=$TMP/missing.py fail_case "MEMLIFE_TORCH_DRIVER missing" \
    "environment variable MEMLIFE_TORCH_DRIVER='$TMP/missing.py' cannot be read" 30 2
# what the caching allocator cannot express is refused before any rank starts (exit 2)
run run schedules/chunked_rs_only.yaml --backend torch --ranks 2
if [ "$RC" -eq 2 ] && grep -q "chunked_rs_only.yaml:24:5: error: the torch backend cannot run this: chunked buffers (chunks: 2)" "$TMP/err"; then
    ok "torch backend: a chunked buffer is refused before anything runs (exit 2)"
else
    not_ok "torch backend: chunked refusal" "exit $RC: $(head -1 "$TMP/err")"
fi
