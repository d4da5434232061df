#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Inputs that are small to write and huge to act on end quickly, with the right words:
#
#   findings:  one step that repeats a finding a million times (`free: [a, a, ...]`, a freed `a`
#              read 40 000 times) is linted in linear time, and of each file's errors only the
#              first 100 are printed (each with its note), then "N more errors not shown": the
#              million-name free has 999 999 double frees (the first free is fine), so
#              999 999 - 100 = 999 899 more; the 40 000 reads of a freed buffer are 40 000
#              errors, 39 900 more. --max-errors N prints N, --max-errors 0 all of them.
#   views:     a compute that lists 200 000 views of one live buffer (a[0:8], a[8:8], a[16:8],
#              a[24:8] in turn, of 1024 float32) is predicted in linear time, with the numbers of
#              the four views once: requested peak 4096 + 32 (b) = 4128 B; floor the union
#              a[0:32] (128 B) + b (32 B) = 160 B (analyzer/predict/floor.c).
#
# Each runs under `timeout` and a 2 GB address-space limit (as tests/bad does, where the
# expansions that are refused before they grow are): a lint that goes quadratic ends as a
# timeout or an out-of-memory exit 3 instead of the exit 2 this file expects. Under ASan the
# shadow memory does not fit a ulimit; ASan's own RSS limit bounds memory instead, and the fast
# unwinder records the million findings' allocations (the slow one, make test's for Open MPI's
# suppressions, takes 70 s over them; these commands start no MPI).
. "$(dirname "$0")/lib.bash"

LIMIT_KB=2000000
if ldd "$MEMLIFE" 2>/dev/null | grep -q libasan; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=2000:fast_unwind_on_malloc=1"
    LIMIT_KB=unlimited
fi

# bounded SECONDS ARGS...: memlife ARGS under the limits, like run.
bounded() {
    local secs=$1
    shift
    (ulimit -v "$LIMIT_KB" && exec timeout "$secs" "$MEMLIFE" "$@") >"$TMP/out" 2>"$TMP/err"
    RC=$?
}

# names N NAME: "NAME, NAME, ..." N times.
names() { python3 -c "import sys; print(', '.join([sys.argv[2]] * int(sys.argv[1])))" "$1" "$2"; }

# shown NAME WANT_ERRORS WANT_NOTES WANT_LAST: exit 2, the counts of error and note lines in
# $TMP/err, and its last line.
shown() {
    local name=$1 want_e=$2 want_n=$3 want_last=$4 why="" e n last
    e=$(grep -c ': error: ' "$TMP/err")
    n=$(grep -c ': note: ' "$TMP/err")
    last=$(tail -1 "$TMP/err")
    [ "$RC" -eq 2 ] || why="exit $RC, want 2 (124: timed out)"
    [ "$e" = "$want_e" ] || why="${why:+$why; }$e error lines, want $want_e"
    [ "$n" = "$want_n" ] || why="${why:+$why; }$n note lines, want $want_n"
    [ "$last" = "$want_last" ] || why="${why:+$why; }last line '$last', want '$want_last'"
    if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}

f=$TMP/free1m.yaml
{
    printf 'world: 1\nsteps:\n  - alloc: {buf: a, count: 8}\n  - free: ['
    names 1000000 a
    printf ']\n'
} >"$f"
bounded 60 check "$f"
# 100 errors, each with its note, and the count of the rest
shown "a free of one name 1 M times: 100 errors shown, then the count" 100 101 \
    "$f: note: 999899 more errors not shown (--max-errors 0 shows all)"
first=$(head -2 "$TMP/err" | tr '\n' '|')
[ "$first" = "$f:4:15: error: 'a' freed twice|$f:4:12: note: 'a' was freed here|" ] &&
    ok "the first double free is the second name (column 15), its note the first (column 12)" ||
    not_ok "the first double free" "got '$first'"

f=$TMP/reads.yaml
{
    printf 'world: 1\nsteps:\n  - alloc: {buf: a, count: 8}\n  - alloc: {buf: b, count: 8}\n'
    printf '  - free: a\n  - compute: {reads: ['
    names 40000 a
    printf '], writes: [b]}\n  - free: b\n'
} >"$f"
bounded 30 check "$f"
shown "a freed buffer read 40 000 times in one step: 100 errors shown" 100 101 \
    "$f: note: 39900 more errors not shown (--max-errors 0 shows all)"
bounded 30 check --max-errors 3 "$f"
shown "--max-errors 3" 3 4 "$f: note: 39997 more errors not shown (--max-errors 0 shows all)"
bounded 30 check --max-errors 0 "$f"
shown "--max-errors 0 prints all 40 000" 40000 40000 "$f:5:11: note: 'a' was freed here"
bounded 30 check --max-errors -1 "$f"
[ "$RC" -eq 2 ] && grep -q "max-errors" "$TMP/err" && ok "--max-errors -1 is a usage error" ||
    not_ok "--max-errors -1" "exit $RC: $(head -1 "$TMP/err")"

f=$TMP/views.yaml
{
    printf 'world: 1\nsteps:\n  - alloc: {buf: a, count: 1024}\n  - alloc: {buf: b, count: 8}\n'
    printf '  - compute: {reads: ['
    python3 -c "print(', '.join('\"a[%d:8]\"' % (8 * (k % 4)) for k in range(200000)))"
    printf '], writes: [b]}\n  - free: [a, b]\n'
} >"$f"
bounded 10 predict --format json "$f"
got=$(jq -c '.schedules[0].ranks[0] | [.requested.peak, .floor]' "$TMP/out" 2>/dev/null)
[ "$RC" -eq 0 ] && [ "$got" = "[4128,160]" ] &&
    ok "200 000 views of one buffer in one compute: requested peak 4128 B, floor 160 B" ||
    not_ok "200 000 views of one buffer in one compute" "exit $RC (124: timed out), [peak, floor] $got, want [4128,160]"
