#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/run.sh — runs every test memlife has and ends with exactly `N passed, N failed, N skipped`.
#
#   unit:    every $BUILD/tests/test_* (cmocka); counts its "[  PASSED  ] N test(s)." and
#            "[  FAILED  ] N test(s)" lines; a binary that crashes or prints no summary fails.
#   scripts: every tests/cli/*.sh, tests/mpi/*.sh, tests/torch/*.sh and tests/capture/*.sh, and tests/gpu/*.sh with --gpu; each prints
#            `ok - NAME`, `not ok - NAME: why` or `skip - NAME: reason` lines, counted here; a
#            script that exits non-zero could not run at all and counts as one failure.
# Without --gpu, each GPU script is reported as skipped (one line, with its number of tests).
# Exit status: 0 when nothing failed, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
export BUILD
# Every script's text is what a pipe gets, at full width (base/human.h); a terminal's COLUMNS
# would narrow the tables the goldens hold.
unset COLUMNS
# The Python environment tools/deps.sh makes (PyTorch, jsonschema, pytest) comes first on PATH,
# so every script's python3 is the one with them; MEMLIFE_PYTHON (the torch backend's
# interpreter) points at it unless the caller chose another.
if [ -x .venv/bin/python ]; then
    export PATH="$PWD/.venv/bin:$PATH"
    export MEMLIFE_PYTHON=${MEMLIFE_PYTHON:-$PWD/.venv/bin/python}
fi
TIMEOUT=${TEST_TIMEOUT:-600}
GPU=0
for arg in "$@"; do
    case $arg in
    --gpu) GPU=1 ;;
    *) echo "usage: tests/run.sh [--gpu]" >&2; exit 2 ;;
    esac
done

passed=0 failed=0 skipped=0
failures=()

note_fail() { failed=$((failed + $2)); failures+=("$1"); }

run_unit() {
    local bin=$1 name out rc p f s
    name=unit/$(basename "$bin")
    out=$(CMOCKA_MESSAGE_OUTPUT=stdout timeout "$TIMEOUT" "$bin" 2>&1)
    rc=$?
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9][0-9]*\) test(s)\..*/\1/p' | tail -1)
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9][0-9]*\) test(s).*/\1/p' | tail -1)
    s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9][0-9]*\) test(s).*/\1/p' | tail -1)
    passed=$((passed + ${p:-0}))
    skipped=$((skipped + ${s:-0}))
    if [ -n "$f" ] && [ "$f" -gt 0 ]; then
        printf '%s\n' "$out" | grep -vE '^\[ +(RUN|OK) +\]' | head -60
        # cmocka lists each failing test as "[  FAILED  ] name" after the summary line.
        local names
        names=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([^0-9].*\)$/\1/p' | sort -u)
        failed=$((failed + f))
        if [ -n "$names" ]; then
            while IFS= read -r t; do failures+=("$name: $t"); done <<<"$names"
        else
            failures+=("$name ($f failed)")
        fi
        echo "not ok - $name: $f of $((${p:-0} + f)) failed"
    elif [ "$rc" -ne 0 ] || [ -z "$p" ]; then
        printf '%s\n' "$out" | tail -20
        if [ "$rc" -ge 124 ]; then why="crashed or timed out (exit $rc)"; else why="exit $rc, no cmocka summary"; fi
        note_fail "$name ($why)" 1
        echo "not ok - $name: $why"
    else
        echo "ok - $name: $p tests"
    fi
}

run_script() {
    local script=$1 out rc o n s line
    out=$(timeout "$TIMEOUT" bash "$script" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    o=$(printf '%s\n' "$out" | grep -c '^ok - ')
    n=$(printf '%s\n' "$out" | grep -c '^not ok - ')
    s=$(printf '%s\n' "$out" | grep -c '^skip - ')
    passed=$((passed + o))
    skipped=$((skipped + s))
    failed=$((failed + n))
    while IFS= read -r line; do failures+=("${script#tests/}: ${line#not ok - }"); done < <(
        printf '%s\n' "$out" | grep '^not ok - ')
    if [ "$rc" -ne 0 ]; then
        note_fail "${script#tests/}: could not run (exit $rc)" 1
        echo "not ok - ${script#tests/}: could not run (exit $rc)"
    fi
}

# How many tests a GPU script holds: its "# tests: N" header, else its `ok - ` cases.
gpu_test_count() {
    local n
    n=$(sed -n 's/^# tests: *\([0-9][0-9]*\).*/\1/p' "$1" | head -1)
    [ -n "$n" ] || n=$(grep -c 'ok - ' "$1")
    [ "$n" -gt 0 ] || n=1
    echo "$n"
}

shopt -s nullglob
units=("$BUILD"/tests/test_*)
if [ ${#units[@]} -eq 0 ]; then
    echo "not ok - unit: no test binaries under $BUILD/tests (run make test)"
    note_fail "unit: no test binaries" 1
fi
for bin in "${units[@]}"; do
    [ -x "$bin" ] && [ -f "$bin" ] || continue
    run_unit "$bin"
done
for script in tests/cli/*.sh tests/mpi/*.sh tests/torch/*.sh tests/capture/*.sh; do
    run_script "$script"
done
for script in tests/gpu/*.sh; do
    if [ "$GPU" = 1 ]; then
        run_script "$script"
    else
        n=$(gpu_test_count "$script")
        echo "skip - gpu: $n GPU tests in $script need a GPU; run make test-gpu on a GPU machine"
        skipped=$((skipped + n))
    fi
done

if [ ${#failures[@]} -gt 0 ]; then
    echo
    echo "failed:"
    for f in "${failures[@]}"; do echo "  $f"; done
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
