#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests: 19
# memlife fit against the real program on one GPU (make test-gpu). For each model family of
# tests/capture/programs/gpt.py (FSDP2, FSDP2 + activation checkpointing, DDP) at worlds 8 and
# 64 (torch's fake process group: rank 0's memory, no communication), the step is captured on
# the virtual device at MBS 1, 2, 4 (`capture --on fake --vary`, as on a laptop without a GPU),
# and for three budgets `memlife fit` names the largest MBS whose step fits. The budget is then
# the caching allocator's limit in the real program (set_per_process_memory_fraction, chosen so
# that PyTorch's own product gives exactly the budget): the named MBS must run, MBS + 1 must run
# out of memory, and the allocator's retries must be needed exactly when fit says so. Without a
# limit, the predicted peak memory_reserved at the captured MBS 1, 2, 4 and the uncaptured 3 and
# 6 must be within 0.5% of the run's (the numbers are printed; the goal is equal).
# Last, the total a GPU shows: DDP at world 1 on a real NCCL group; NVML's used memory after the
# step (torch.cuda.device_memory_used) within 2% of memlife's total (the torch view's peak
# reserved + the communicator view's NCCL memory + the CUDA context, `fit --gpu KIND`).
cd "$(dirname "$0")/../.." || exit 2
MEMLIFE=${MEMLIFE:-$PWD/${BUILD:-build}/memlife}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} PYTHONUNBUFFERED=1
P=tests/capture/programs/gpt.py
MODES=(fsdp fsdp_ac ddp)
WORLDS=(8 64)
names=()
for m in "${MODES[@]}"; do
    for w in "${WORLDS[@]}"; do
        names+=("fit gpu $m world $w: the fitting MBS runs, the next runs out of memory (3 budgets)"
                "fit gpu $m world $w: predicted peak reserved at MBS 1 2 3 4 6 within 0.5%"
                "fit gpu $m world $w: allocator retries as fit says")
    done
done
names+=("fit gpu total: NVML's used memory within 2% of memlife's total")
if ! nvidia-smi -L >/dev/null 2>&1 || ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    for n in "${names[@]}"; do echo "skip - $n: no GPU with PyTorch"; done
    exit 0
fi
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
    *H100*) KIND=h100-80gb ;;
    *H200*) KIND=h200 ;;
    *) KIND= ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SIZE=(--set D=1024 --set L=4 --set S=1024 --set H=16)
budgets() {   # MODE -> three budgets around its peaks at MBS 1..16
    case $1 in
        ddp) echo 2GiB 3GiB 4GiB ;;
        *) echo 1GiB 1536MiB 2304MiB ;;
    esac
}

# the captures, in parallel (CPU work)
for m in "${MODES[@]}"; do
    for w in "${WORLDS[@]}"; do
        timeout 600 "$MEMLIFE" capture $P --world "$w" --set MODE="$m" "${SIZE[@]}" --vary MBS=1,2,4 \
            --on fake -o "$tmp/${m}_$w.yaml" -q 2>"$tmp/${m}_$w.cerr" &
    done
done
timeout 600 "$MEMLIFE" capture $P --world 1 --set MODE=ddp "${SIZE[@]}" --vary MBS=1,2,4 \
    --on fake -o "$tmp/ddp_1.yaml" -q 2>"$tmp/ddp_1.cerr" &
wait

json() {   # FILE KEY...: a value of a JSON document
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d)' "$@"
}
reserved_at() {   # YAML MBS -> predicted peak reserved
    "$MEMLIFE" predict "$1" --set MBS="$2" --format json -o "$tmp/p.json" 2>/dev/null &&
        json "$tmp/p.json" schedules 0 ranks 0 torch reserved peak
}

# the jobs: one real run each, written as lines of run_real.py arguments
: >"$tmp/jobs"
for m in "${MODES[@]}"; do
    for w in "${WORLDS[@]}"; do
        y=$tmp/${m}_$w.yaml
        [ -s "$y" ] || continue
        for b in $(budgets "$m"); do
            "$MEMLIFE" fit "$y" --vary MBS --budget "$b" --reserve 0 --context 0 --format json \
                -o "$tmp/fit_${m}_${w}_$b.json" 2>"$tmp/fit_${m}_${w}_$b.err" || continue
            v=$(json "$tmp/fit_${m}_${w}_$b.json" value)
            lim=$(json "$tmp/fit_${m}_${w}_$b.json" budget)
            for mbs in "$v" $((v + 1)); do
                echo "${m}_${w}_${b}_$mbs --world $w --set MODE=$m ${SIZE[*]} --set MBS=$mbs --limit $lim" >>"$tmp/jobs"
            done
        done
        for mbs in 1 2 3 4 6; do
            echo "${m}_${w}_free_$mbs --world $w --set MODE=$m ${SIZE[*]} --set MBS=$mbs" >>"$tmp/jobs"
        done
    done
done
# eight processes at once (each under 5 GiB of the GPU; CPU-bound start-up overlaps)
export tmp
# shellcheck disable=SC2016
xargs -P 8 -L 1 bash -c 'timeout 300 python3 tests/capture/run_real.py '"$P"' "${@:1}" >"$tmp/run_$0.json" 2>"$tmp/run_$0.err"' <"$tmp/jobs"
# alone on the GPU: NVML's used memory is the device's, every process's
idle=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
# shellcheck disable=SC2086
timeout 300 python3 tests/capture/run_real.py $P --world 1 --group nccl --set MODE=ddp "${SIZE[@]}" \
    --set MBS=2 >"$tmp/run_ddp_1_nccl_2.json" 2>"$tmp/run_ddp_1_nccl_2.err"

field() {   # RUN KEY -> a field of a real run's JSON ("" when the run left none)
    [ -s "$tmp/run_$1.json" ] && json "$tmp/run_$1.json" "$2" 2>/dev/null
}
for m in "${MODES[@]}"; do
    for w in "${WORLDS[@]}"; do
        y=$tmp/${m}_$w.yaml
        if [ ! -s "$y" ]; then
            for k in 0 1 2; do echo "not ok - fit gpu $m world $w: capture failed: $(head -c 300 "$tmp/${m}_$w.cerr")"; done
            continue
        fi
        runs_ok=1 retries_ok=1 what="" rwhat=""
        for b in $(budgets "$m"); do
            f=$tmp/fit_${m}_${w}_$b.json
            if [ ! -s "$f" ]; then
                runs_ok=0; what+=" $b: fit failed ($(head -c 200 "$tmp/fit_${m}_${w}_$b.err"))"; continue
            fi
            v=$(json "$f" value) pr=$(json "$f" retries)
            oom_v=$(field "${m}_${w}_${b}_$v" oom) oom_n=$(field "${m}_${w}_${b}_$((v + 1))" oom)
            rr=$(field "${m}_${w}_${b}_$v" alloc_retries)
            what+=" $b: MBS=$v oom=${oom_v:-?} (peak reserved $(field "${m}_${w}_${b}_$v" peak_reserved)), MBS=$((v + 1)) oom=${oom_n:-?};"
            rwhat+=" $b: MBS=$v predicted $pr, real ${rr:-?};"
            [ "$oom_v" = False ] && [ "$oom_n" = True ] || runs_ok=0
            [ -n "$rr" ] && { [ "$pr" = 0 ] && [ "$rr" = 0 ] || { [ "$pr" != 0 ] && [ "$rr" != 0 ]; }; } || retries_ok=0
        done
        n="fit gpu $m world $w"
        if [ $runs_ok = 1 ]; then echo "ok - $n: the fitting MBS runs, the next runs out of memory:$what"
        else echo "not ok - $n: the fitting MBS runs, the next runs out of memory:$what"; fi
        close=1 cwhat=""
        for mbs in 1 2 3 4 6; do
            p=$(reserved_at "$y" "$mbs") r=$(field "${m}_${w}_free_$mbs" peak_reserved)
            cwhat+=" MBS=$mbs predicted ${p:-?} real ${r:-?};"
            python3 -c 'import sys; p, r = map(int, sys.argv[1:]); sys.exit(abs(p - r) > r * 0.005)' \
                "${p:-0}" "${r:-0}" 2>/dev/null || close=0
        done
        if [ $close = 1 ]; then echo "ok - $n: predicted peak reserved within 0.5%:$cwhat"
        else echo "not ok - $n: predicted peak reserved within 0.5%:$cwhat"; fi
        if [ $retries_ok = 1 ]; then echo "ok - $n: allocator retries as fit says:$rwhat"
        else echo "not ok - $n: allocator retries as fit says:$rwhat"; fi
    done
done

# the total a GPU shows
n="fit gpu total: NVML's used memory within 2% of memlife's total"
used=$(field ddp_1_nccl_2 device_used)
if [ -z "$KIND" ]; then
    echo "skip - $n: no communicator model for $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
elif [ -z "$used" ] || ! "$MEMLIFE" fit "$tmp/ddp_1.yaml" --vary MBS --set MBS=2 --budget 80GiB \
        --gpu "$KIND" --format json -o "$tmp/fit_total.json" 2>"$tmp/fit_total.err"; then
    echo "not ok - $n: used ${used:-?}: $(head -c 300 "$tmp/run_ddp_1_nccl_2.err" "$tmp/fit_total.err")"
else
    res=$(reserved_at "$tmp/ddp_1.yaml" 2)
    comm=$(json "$tmp/fit_total.json" reserve communicator)
    ctx=$(json "$tmp/fit_total.json" reserve context)
    real_res=$(field ddp_1_nccl_2 peak_reserved)
    total=$((res + comm + ctx))
    line="NVML used $used B (idle device before: ${idle:-?} MiB); memlife $total B = reserved $res (real $real_res) + NCCL $comm + context $ctx ($KIND)"
    echo "# stages of the run (device used, allocator reserved): $(python3 -c 'import json, sys
print("; ".join("%s %d %d" % (s["stage"], s["used"], s["reserved"]) for s in json.load(open(sys.argv[1]))["stages"]))' "$tmp/run_ddp_1_nccl_2.json")"
    if python3 -c 'import sys; u, t = map(int, sys.argv[1:]); sys.exit(abs(u - t) > t * 0.02)' "$used" "$total"; then
        echo "ok - $n: $line"
    else
        echo "not ok - $n: $line"
    fi
fi
