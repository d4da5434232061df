# SPDX-License-Identifier: MIT
# tests/cli/lib.bash — helpers for the CLI golden tests, sourced by tests/cli/*.sh (named .bash
# so that tests/run.sh, which runs every *.sh, does not run it).
#
# Each test case prints exactly one line: `ok - NAME`, `not ok - NAME: why`. Goldens live in
# tests/cli/golden/NAME.out (stdout) and NAME.err (stderr, where the case keeps one); on a mismatch
# the unified diff is printed under the `not ok` line. UPDATE_GOLDEN=1 rewrites the goldens from
# the current output instead of comparing (then review them with git diff).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
BUILD=${BUILD:-build}
MEMLIFE=${MEMLIFE:-$ROOT/$BUILD/memlife}
GOLDEN=$ROOT/tests/cli/golden
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memlife-cli.XXXXXX")
# At the end every memlife JSON left in $TMP validates against schemas/ (tests/json.bash).
. "$ROOT/tests/json.bash"
trap 'json_collect "$TMP"; rm -rf "$TMP"' EXIT

# Goldens are the full-width, colourless text a pipe gets (base/human.h): a terminal's COLUMNS
# must not narrow them. The width and colour cases set them on purpose (tests/cli/people.sh).
unset COLUMNS NO_COLOR

# predict's communicator view reads NCCL's variables, as NCCL would: none may leak into goldens.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^NCCL_')

if [ ! -x "$MEMLIFE" ]; then
    echo "error: $MEMLIFE is not built (run make)" >&2
    exit 2
fi

# run CMD...: runs memlife with CMD, keeping stdout in $TMP/out, stderr in $TMP/err, the exit
# code in $RC.
run() {
    "$MEMLIFE" "$@" >"$TMP/out" 2>"$TMP/err"
    RC=$?
    json_keep "$TMP/out" "$TMP"
}

ok() { echo "ok - $1"; }
not_ok() { echo "not ok - $1: $2"; }

# golden NAME FILE: compares FILE with tests/cli/golden/NAME; returns 1 and prints the diff when
# they differ (or the golden is missing).
golden() {
    local want=$GOLDEN/$1 got=$2
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
        mkdir -p "$GOLDEN"
        cp "$got" "$want"
        return 0
    fi
    if [ ! -f "$want" ]; then
        echo "  missing golden $want (UPDATE_GOLDEN=1 creates it)"
        return 1
    fi
    diff -u --label "golden/$1" --label "actual" "$want" "$got" | sed 's/^/  /' | head -80
    cmp -s "$want" "$got"
}

# expect_case NAME RC [OUT_GOLDEN] [ERR_GOLDEN] -- ARGS...: one case: runs memlife ARGS, checks
# the exit code and, where named, stdout/stderr against goldens.
expect_case() {
    local name=$1 want_rc=$2 out_golden=$3 err_golden=$4
    shift 5
    run "$@"
    local why=""
    [ "$RC" -eq "$want_rc" ] || why="exit $RC, want $want_rc"
    if [ -n "$out_golden" ] && ! golden "$out_golden" "$TMP/out"; then
        why="${why:+$why; }stdout differs from golden/$out_golden"
    fi
    if [ -n "$err_golden" ] && ! golden "$err_golden" "$TMP/err"; then
        why="${why:+$why; }stderr differs from golden/$err_golden"
    fi
    if [ -z "$why" ]; then ok "$name"; else
        not_ok "$name" "$why"
        [ -s "$TMP/err" ] && [ -z "$err_golden" ] && sed 's/^/  stderr: /' "$TMP/err" | head -10
    fi
}
