# SPDX-License-Identifier: MIT
# tests/gpu/lib.bash — helpers for the GPU tests, sourced by tests/gpu/*.sh (named .bash so that
# tests/run.sh, which runs every *.sh, does not run it) and, through them, by tools/gpu_session.sh.
#
# Every case runs `memlife run --backend cuda` on GPU_WORLD GPUs (default 2; 1, 2, 4 and 8 have
# their numbers derived in each script) in each launch mode of GPU_MODES (default both):
#   mpi     mpirun --allow-run-as-root --oversubscribe -np N memlife run ... --backend cuda
#   single  memlife run ... --backend cuda --gpus N
# with a JSON report in $RESULTS/MODE/NAME.json and its stdout / stderr beside it, and prints one
# line per acceptance item (`ok - `, `not ok - `, `skip - `). Every command runs under `timeout`.
# Without a GPU (nvidia-smi -L fails or lists too few) each case prints `skip - NAME: no GPU`.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# The text the cases read is what a pipe gets: full width, no colour (base/human.h).
unset COLUMNS NO_COLOR
BUILD=${BUILD:-build}
MEMLIFE=${MEMLIFE:-$ROOT/$BUILD/memlife}
GPU_WORLD=${GPU_WORLD:-2}
GPU_MODES=${GPU_MODES:-mpi single}
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
CHECK=(python3 "$ROOT/tests/gpu/gpu_check.py")

# NVLink SHARP stays off (the backend sets it too, without overriding a value given here).
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# At the end every memlife JSON in $RESULTS validates against schemas/ (tests/json.bash).
. "$ROOT/tests/json.bash"
if [ -n "${RESULTS:-}" ]; then
    mkdir -p "$RESULTS" || exit 2
    trap 'json_collect "$RESULTS"' EXIT
else
    RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/memlife-gpu.XXXXXX")
    trap 'json_collect "$RESULTS"; rm -rf "$RESULTS"' EXIT
fi

# gpu_ready: true when nvidia-smi lists at least GPU_WORLD GPUs and memlife is built with a
# usable cuda backend; else GPU_WHY says why not.
gpu_ready() {
    GPU_WHY=""
    if ! timeout 30 nvidia-smi -L >/dev/null 2>&1; then
        GPU_WHY="no GPU"
        return 1
    fi
    local n
    n=$(timeout 30 nvidia-smi -L | grep -c '^GPU ')
    if [ "$n" -lt "$GPU_WORLD" ]; then
        GPU_WHY="no GPU: $n visible, $GPU_WORLD needed"
        return 1
    fi
    if [ ! -x "$MEMLIFE" ]; then
        GPU_WHY="$MEMLIFE is not built (make)"
        return 1
    fi
    return 0
}

# gpu_skip NAME...: one skip line per case.
gpu_skip() {
    local n
    for n in "$@"; do echo "skip - $n: $GPU_WHY"; done
}

# gpu_memlife MODE NAME COMMAND ARGS...: memlife COMMAND ARGS --backend cuda in MODE on GPU_WORLD
# GPUs, under STEP_TIMEOUT. Sets RC, SECS, JSON ($RESULTS/MODE/NAME.json, removed first: where
# ARGS may have the report written), ERR and OUTF (its stderr and stdout beside it). Appends the
# command and its stderr to $RESULTS/commands.log. stdin is /dev/null: mpirun forwards stdin to
# rank 0 and would eat the caller's loop input.
gpu_memlife() {
    local mode=$1 name=$2 cmd=$3
    shift 3
    local base=$RESULTS/$mode/$name
    mkdir -p "$RESULTS/$mode"
    rm -f "$base.json"
    JSON=$base.json
    ERR=$base.err
    OUTF=$base.out
    local t0=$SECONDS
    case $mode in
    mpi)
        timeout -k 10 "$STEP_TIMEOUT" mpirun --allow-run-as-root --oversubscribe -np "$GPU_WORLD" \
            "$MEMLIFE" "$cmd" "$@" --backend cuda
        ;;
    single)
        timeout -k 10 "$STEP_TIMEOUT" "$MEMLIFE" "$cmd" "$@" --backend cuda --gpus "$GPU_WORLD"
        ;;
    *)
        echo "unknown launch mode '$mode'" >&2
        false
        ;;
    esac </dev/null >"$OUTF" 2>"$ERR"
    RC=$?
    SECS=$((SECONDS - t0))
    {
        echo "### $mode/$name: memlife $cmd $* --backend cuda ($mode) -> exit $RC in ${SECS} s"
        cat "$ERR"
    } >>"$RESULTS/commands.log"
}

# gpu_run MODE NAME ARGS...: memlife run ARGS in MODE, the JSON report in $JSON (gpu_memlife).
gpu_run() {
    local mode=$1 name=$2
    shift 2
    gpu_memlife "$mode" "$name" run "$@" --world "$GPU_WORLD" --format json \
        -o "$RESULTS/$mode/$name.json"
}

# gpu_show_err: the last run's error lines (else the tail of its stderr), indented, under a
# `not ok` line.
gpu_show_err() {
    # mpirun's own boxes and "FAKE"/NCCL INFO chatter say nothing about the cause.
    local useful
    useful=$(grep -v -E '^-+$|^[[:space:]]*$|mpirun detected|Process name|Exit code|job to be|first process|Primary job|returned a non-zero|NCCL INFO' "$ERR" 2>/dev/null)
    if printf '%s\n' "$useful" | grep -q -i 'error'; then
        printf '%s\n' "$useful" | grep -i -m 4 'error' | sed 's/^/    /'
    elif [ -n "$useful" ]; then
        printf '%s\n' "$useful" | tail -n 8 | sed 's/^/    /'
    fi
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        echo "    (exit $RC: killed by timeout after ${SECS} s)"
    fi
    return 0
}

# gpu_check KIND NAME ARGS...: gpu_check.py's verdict lines; stderr of the run under a failure.
gpu_check() {
    local out
    out=$("${CHECK[@]}" "$@" 2>&1)
    printf '%s\n' "$out"
    if printf '%s\n' "$out" | grep -q '^not ok - '; then gpu_show_err; fi
    return 0
}

# The chapter's lifetimes at M = 256 MiB on N ranks (requested view, MiB): name steady peak.
# AllReduce M/M; RS only M/N / M+M/N; naive RS+AG M / 2M+M/N; optimized RS+AG M / M+M/N.
#   N = 1: 256/256, 256/512, 256/768, 256/512 (measured on one H200)
#   N = 2: 256/256, 128/384, 256/640, 256/384 (PyTorch and memlife on 2 x H200, docs/design.md)
#   N = 4: 256/256,  64/320, 256/576, 256/320 (the chapter, 4 x V100)
#   N = 8: 256/256,  32/288, 256/544, 256/288
# GPU_WORLD must divide 256 (MiB) for these to be whole MiB: 1, 2, 4, 8 are the worlds used.
gpu_seed_lifetimes() {
    local m=256 s=$((256 / GPU_WORLD))
    echo "01_allreduce_full $m $m"
    echo "02_rs_only $s $((m + s))"
    echo "03_rs_ag_naive $m $((2 * m + s))"
    echo "04_rs_ag_optimized $m $((m + s))"
}

# gpu_kind: the GPU's kind as memlife's --gpu names it (the communicator view's constants),
# from nvidia-smi's name of GPU 0: H100 80GB -> h100-80gb, H200 -> h200; empty for any other
# (the view then has no measured constant for it).
gpu_kind() {
    local name
    name=$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null)
    case $name in
    *H100*80GB*) echo h100-80gb ;;
    *H200*) echo h200 ;;
    *) echo "" ;;
    esac
}
