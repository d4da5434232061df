# SPDX-License-Identifier: MIT
# tools/gpu_common.bash — what the GPU session scripts share, sourced by tools/gpu_*.sh from the
# repository root.

# build_commit: the commit the carried binary was built from (its --version says it; the device's
# checkout may lag behind: only the working tree is copied there).
build_commit() {
    "${BUILD:-build}/memlife" --version 2>/dev/null | sed -n 's/.*(\([^)]*\)).*/\1/p' | head -n 1
}

# tap_summary TMP LOG: appends to TMP (a session's output) a summary — every `not ok - ` line and
# "N passed, N failed, N skipped" — prints it, moves TMP to LOG, and returns 0 when no line
# failed, 1 otherwise.
tap_summary() {
    local tmp=$1 log=$2 ok bad skip
    ok=$(grep -c '^ok - ' "$tmp")
    bad=$(grep -c '^not ok - ' "$tmp")
    skip=$(grep -c '^skip - ' "$tmp")
    {
        echo "## summary"
        grep '^not ok - ' "$tmp"
        echo "$ok passed, $bad failed, $skip skipped"
    } | tee -a "$tmp"
    mv "$tmp" "$log"
    [ "$bad" -eq 0 ]
}

# gpu_session_env LOGNAME BUDGET: what both sessions run under, set in the caller's shell: OUT
# (made; exit 2 when it cannot be), LOG=$OUT/LOGNAME, BUDGET (SESSION_BUDGET, else the given
# seconds), BUILD and MEMLIFE, NVLink multicast off (NCCL_NVLS_ENABLE=0, which the session logs) and
# Open MPI allowed to run as root. RESULTS stays with each script: one keeps it under OUT,
# the other packs a temporary one.
gpu_session_env() {
    OUT=${OUT:-$PWD/gpu-out}
    mkdir -p "$OUT" || exit 2
    LOG=$OUT/$1
    BUDGET=${SESSION_BUDGET:-$2}
    export BUILD=${BUILD:-build}
    export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    MEMLIFE=$BUILD/memlife
}

# gpu_machine FIELDS: the "## machine" lines: the GPUs, nvidia-smi's FIELDS after
# index,name,driver_version, and the MPI version.
gpu_machine() {
    echo "## machine"
    timeout 30 nvidia-smi -L || echo "nvidia-smi -L failed: no GPU"
    timeout 30 nvidia-smi --query-gpu="index,name,driver_version,$1" --format=csv
    timeout 10 mpirun --version 2>&1 | head -n 1
}
