#!/bin/sh
# tests/bench.sh — how fast memlife reads big schedules (`make bench`).
#
# For generated schedules of 10k, 100k and 1M steps (tests/bench/gen.c: a realistic mix of
# allocs, every collective, events, syncs and frees over let-expressions) it times, as the best
# of RUNS wall-clock runs:
#   yaml-loop  a bare libyaml event loop over the file (tests/bench/yamlloop.c): the yardstick
#   load       sched_load_file alone (tests/bench/loadtime.c)
#   predict    `memlife predict FILE --format json -o /dev/null`: load + lint + predict + report
# and prints each against the loop. Target (issue 2 §6): predict at no less than half the loop's
# speed, i.e. a ratio of at most 2.0; and time per step that does not grow with the size.
# Environment: SIZES="10000 100000 1000000", RUNS=3, CC=cc.
set -eu
cd "$(dirname "$0")/.."

CC=${CC:-cc}
SIZES=${SIZES:-"10000 100000 1000000"}
RUNS=${RUNS:-3}
B=build/bench
mkdir -p "$B"

$CC -O2 -o "$B/gen" tests/bench/gen.c
$CC -O2 -o "$B/yamlloop" tests/bench/yamlloop.c -Wl,-Bstatic -lyaml -Wl,-Bdynamic
make -s build/libmemlife.a
$CC -O2 -std=c11 -D_GNU_SOURCE -Iruntime -o "$B/loadtime" tests/bench/loadtime.c \
    build/libmemlife.a -Wl,-Bstatic -lyaml -Wl,-Bdynamic -ljansson -lm

now() { date +%s.%N; }

# best_of CMD...: the smallest wall time of RUNS runs, in seconds; "fail" if the command fails.
best_of() {
    best=""
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        t0=$(now)
        if ! "$@" >/dev/null 2>"$B/stderr"; then
            echo fail
            return
        fi
        t1=$(now)
        best=$(awk -v a="$t0" -v b="$t1" -v best="$best" \
            'BEGIN { t = b - a; if (best == "" || t < best + 0) print t; else print best }')
        i=$((i + 1))
    done
    echo "$best"
}

have_predict=0
if [ -x ./memlife ] && ./memlife predict --help >/dev/null 2>&1; then
    have_predict=1
fi

printf '%9s %8s %11s %8s %9s %6s %10s %6s\n' steps MB yaml-loop MB/s load ratio predict ratio
first_per_step=""
last_per_step=""
verdict_target="met"
for n in $SIZES; do
    f="$B/gen-$n.yaml"
    "$B/gen" "$n" >"$f"
    mb=$(awk -v s="$(wc -c <"$f")" 'BEGIN { printf "%.1f", s / 1e6 }')
    loop=$(best_of "$B/yamlloop" "$f")
    load=$(best_of "$B/loadtime" "$f")
    pred="n/a"
    if [ "$have_predict" = 1 ]; then
        pred=$(best_of ./memlife predict "$f" --format json -o /dev/null)
        if [ "$pred" = fail ]; then
            echo "predict failed on $f:" >&2
            head -5 "$B/stderr" >&2
        fi
    fi
    line=$(awk -v n="$n" -v mb="$mb" -v loop="$loop" -v load="$load" -v pred="$pred" 'BEGIN {
        r1 = (load == "fail") ? "fail" : sprintf("%.2f", load / loop)
        r2 = (pred == "n/a" || pred == "fail") ? pred : sprintf("%.2f", pred / loop)
        printf "%9d %8s %11.3f %8.1f %9s %6s %10s %6s", n, mb, loop, mb / loop,
               (load == "fail") ? "fail" : sprintf("%.3f", load), r1,
               (pred == "n/a" || pred == "fail") ? pred : sprintf("%.3f", pred), r2
    }')
    echo "$line"
    # Time per step of the slowest whole path measured (predict if there, else load).
    whole=$pred
    [ "$whole" = "n/a" ] || [ "$whole" = fail ] && whole=$load
    if [ "$whole" != fail ]; then
        per=$(awk -v t="$whole" -v n="$n" 'BEGIN { printf "%.9f", t / n }')
        [ -n "$first_per_step" ] || first_per_step=$per
        last_per_step=$per
        ok=$(awk -v t="$whole" -v l="$loop" 'BEGIN { print (t <= 2.0 * l) ? "yes" : "no" }')
        [ "$ok" = yes ] || verdict_target="missed"
    fi
    rm -f "$f"
done

if [ -n "$first_per_step" ]; then
    awk -v a="$first_per_step" -v b="$last_per_step" 'BEGIN {
        g = b / a
        printf "time per step, largest vs smallest size: %.2fx (%s)\n", g,
               (g <= 1.5) ? "linear" : "grows faster than linear"
    }'
fi
what="load"
[ "$have_predict" = 1 ] && what="predict"
echo "target (ratio <= 2.0, $what against the bare loop): $verdict_target"
