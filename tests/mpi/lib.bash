# SPDX-License-Identifier: MIT
# tests/mpi/lib.bash — helpers for the MPI tests, sourced by tests/mpi/*.sh (named .bash so that
# tests/run.sh, which runs every *.sh, does not run it).
#
# Each case prints one line: `ok - NAME`, `not ok - NAME: why` or `skip - NAME: reason`. memlife
# starts mpirun itself (`--ranks N`), oversubscribed, so 8 ranks run on a 2-core machine.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
# The text the cases read is what a pipe gets: full width, no colour (base/human.h).
unset COLUMNS NO_COLOR
BUILD=${BUILD:-build}
MEMLIFE=${MEMLIFE:-$ROOT/$BUILD/memlife}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memlife-mpi.XXXXXX")
# Under SANITIZE=1 the ranks keep ASan and UBSan, but not LeakSanitizer: its stop-the-world
# tracer crashes now and then in Open MPI's multi-threaded processes on these VMs ("Tracer caught
# signal 11", seen in a clean-clone CI run of equiv_host.sh), which would fail a case for no fault
# of memlife. Leaks on the MPI paths are not checked here; the unit, CLI and valgrind tests check
# the rest.
# With leaks off, the fast unwinder is enough (the slow one only served the suppressions), which
# halves Open MPI's start-up under ASan. SLOW=2 doubles the time bounds of cases that time a
# whole job, start-up included.
SLOW=1
if ldd "$MEMLIFE" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:fast_unwind_on_malloc=1"
    SLOW=2
fi
# At the end every memlife JSON left in $TMP validates against schemas/ (tests/json.bash).
. "$ROOT/tests/json.bash"
trap 'json_collect "$TMP"; rm -rf "$TMP"' EXIT

if [ ! -x "$MEMLIFE" ]; then
    echo "error: $MEMLIFE is not built (run make)" >&2
    exit 2
fi

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; }
skip() { echo "skip - $1: $2"; }

# The host backend needs Open MPI at build time and mpirun now.
host_backend_missing() {
    if ! command -v mpirun >/dev/null 2>&1; then
        echo "no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)"
    elif "$MEMLIFE" --version | grep -q 'host (not built)'; then
        echo "memlife was built without Open MPI (apt-get install libopenmpi-dev, then make)"
    fi
}

# require_host_backend NAME...: where the host backend cannot run, one skip line per NAME (the
# cases the script would have run, so the count of skips stays honest) and the script ends,
# exit 0; else nothing.
require_host_backend() {
    local why n
    why=$(host_backend_missing)
    [ -z "$why" ] && return 0
    for n in "$@"; do skip "$n" "$why"; done
    exit 0
}

# The interpreter the torch backend would pick: MEMLIFE_PYTHON, else the first python3 on PATH
# that imports torch, else /usr/bin/python3 if it does; empty when none has torch.
torch_python() {
    if [ -n "${MEMLIFE_PYTHON:-}" ]; then echo "$MEMLIFE_PYTHON"; return; fi
    local p
    for p in $(type -ap python3) /usr/bin/python3; do
        if "$p" -c 'import torch' 2>/dev/null; then echo "$p"; return; fi
    done
}

# run ARGS...: runs memlife with ARGS; stdout in $TMP/out, stderr in $TMP/err, exit code in $RC,
# seconds in $SECS.
# Resolved once: some cases run with a PATH that hides mpirun (and /usr/bin with it).
TIMEOUT_BIN=$(command -v timeout)
# Every case runs under a wall-clock bound, so one that hangs fails (exit 124) instead of
# stalling the whole suite; memlife's own deadlines are far shorter than this.
run() {
    local t0=$SECONDS
    "$TIMEOUT_BIN" -k 5 "${CASE_TIMEOUT:-240}" "$MEMLIFE" "$@" >"$TMP/out" 2>"$TMP/err"
    RC=$?
    SECS=$((SECONDS - t0))
    json_keep "$TMP/out" "$TMP"
}

# jq_true NAME FILTER FILE: a case that passes when jq's FILTER is true on FILE.
jq_case() {
    local name=$1 filter=$2 file=$3 got
    got=$(jq -r "$filter" "$file" 2>&1)
    if [ "$got" = true ]; then ok "$name"; else not_ok "$name" "$(echo "$got" | head -3 | tr '\n' ' ')"; fi
}
# jq_run_case NAME FILTER FILE: jq_case after the last `run`, which must have exited 0; else not ok
# with its exit code and the first lines of its stderr.
jq_run_case() {
    if [ "$RC" -ne 0 ]; then not_ok "$1" "exit $RC: $(head -2 "$TMP/err" | tr '\n' ' ')"; else jq_case "$@"; fi
}
