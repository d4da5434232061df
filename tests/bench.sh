#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/bench.sh — how fast memlife reads, lints and predicts big schedules (`make bench`).
#
# For generated schedules of 10k, 100k and 1M steps (tests/bench/gen.c: a realistic mix of
# allocs, every collective, events, syncs, rank-dependent views and `when:`, and frees over
# let-expressions) it measures, as the best of RUNS runs, the CPU time (user + sys, from wait4's
# rusage via tests/bench/cputime.c) and the peak RSS of:
#   yaml-loop  a bare libyaml event loop over the file (tests/bench/yamlloop.c): the ceiling
#   load       sched_load_file alone (tests/bench/loadtime.c)
#   memlife    `memlife predict FILE --format json -o /dev/null`: load + expand every rank +
#              lint + predict + report, the whole command
# CPU time, not wall time: the machines are shared and noisy; best of 3 takes out the rest.
# Targets: memlife at most 1.25x the loop's CPU time at 1M steps and at most 300 B of
# peak RSS per step, on the generated mix and on a training-like schedule (gen N training: two
# streams, events both ways, rank-dependent views, world 4: the shape of the held-out schedule),
# and on a 2-D mesh training step it was not tuned on (tests/bench/gen_mesh.c: world 4 as dp 2 x
# tp 2 with a communicator each, three streams, in-place views at the rank's place in its group);
# cost linear in steps (CPU time per step, largest vs smallest size, <= 1.5x). Then,
# at the largest size: where the time goes, the pipeline's phases one by one
# (tests/bench/phases.c); and memlife on the same schedule without `rank` (gen N rank-free),
# which takes the one-expansion path for every rank.
# Environment: SIZES="10000 100000 1000000", RUNS=3, CC=cc. Exit 0 unless it could not run.
set -eu
cd "$(dirname "$0")/.."

CC=${CC:-cc}
SIZES=${SIZES:-"10000 100000 1000000"}
RUNS=${RUNS:-3}
B=build/bench
mkdir -p "$B"

$CC -O2 -o "$B/gen" tests/bench/gen.c
$CC -O2 -o "$B/gen_mesh" tests/bench/gen_mesh.c
$CC -O2 -o "$B/cputime" tests/bench/cputime.c
$CC -O2 -o "$B/yamlloop" tests/bench/yamlloop.c -Wl,-Bstatic -lyaml -Wl,-Bdynamic
make -s build/libmemlife.a memlife
# The drivers link the library as memlife does: with the Makefile's LDLIBS (MPI, CUDA when found).
# shellcheck disable=SC2016 # $(LDLIBS) is make's, not the shell's
LDLIBS=$(printf 'bench-print-ldlibs:\n\t@echo $(LDLIBS)\n' |
    make -s --no-print-directory -f Makefile -f - bench-print-ldlibs)
for t in loadtime phases; do
    # shellcheck disable=SC2086 # LDLIBS is a list of words
    $CC -O2 -std=c11 -D_GNU_SOURCE -Iruntime -Ianalyzer -I. -o "$B/$t" "tests/bench/$t.c" \
        build/libmemlife.a $LDLIBS
done

# run_best BEST CMD...: runs CMD once; prints "CPU_SECONDS PEAK_RSS_KB" of this run or of BEST,
# whichever used less CPU; "fail" if the run fails (its stderr is left in $B/stderr).
run_best() {
    best=$1
    shift
    if [ "$best" = fail ] || ! "$B/cputime" "$B/usage" "$@" >/dev/null 2>"$B/stderr"; then
        echo fail
        return
    fi
    awk -v best="$best" '{ if (best == "" || $1 < best + 0) print $1, $2; else print best }' \
        "$B/usage"
}

# measure FILE: best of RUNS for the loop, the loader and memlife on FILE, into $loop, $load,
# $pred. The three take turns within each round, so a busy spell on the machine hits all three
# rather than one.
measure() {
    loop=""
    load=""
    pred=""
    i=0
    while [ "$i" -lt "$RUNS" ]; do
        loop=$(run_best "$loop" "$B/yamlloop" "$1")
        load=$(run_best "$load" "$B/loadtime" "$1")
        pred=$(run_best "$pred" ./memlife predict "$1" --format json -o /dev/null)
        i=$((i + 1))
    done
}

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
echo "machine: $(uname -n), ${cpu:-unknown cpu}, $(nproc) cores; CPU time = user + sys, best of $RUNS"
printf '%9s %6s %9s %7s %9s %6s %9s %6s %8s %7s\n' steps MB loop-cpu MB/s load-cpu ratio \
    memlife ratio RSS-MB B/step
first_per=""
last_per=""
last_ratio=""
last_n=""
phases=""
free_line=""
for n in $SIZES; do
    f="$B/gen-$n.yaml"
    "$B/gen" "$n" >"$f"
    bytes=$(wc -c <"$f")
    measure "$f"
    if [ "$loop" = fail ] || [ "$load" = fail ] || [ "$pred" = fail ]; then
        echo "a run failed on $f:" >&2
        head -5 "$B/stderr" >&2
        rm -f "$f"
        continue
    fi
    awk -v n="$n" -v bytes="$bytes" -v loop="$loop" -v load="$load" -v pred="$pred" 'BEGIN {
        split(loop, a, " "); split(load, b, " "); split(pred, c, " ")
        printf "%9d %6.1f %9.3f %7.1f %9.3f %6.2f %9.3f %6.2f %8.0f %7.0f\n", n, bytes / 1e6,
               a[1], bytes / 1e6 / a[1], b[1], b[1] / a[1], c[1], c[1] / a[1], c[2] / 1024,
               c[2] * 1024 / n
    }'
    per=$(awk -v p="$pred" -v n="$n" 'BEGIN { split(p, c, " "); printf "%.12f", c[1] / n }')
    [ -n "$first_per" ] || first_per=$per
    last_per=$per
    last_n=$n
    last_ratio=$(awk -v l="$loop" -v p="$pred" 'BEGIN { split(l, a, " "); split(p, c, " ");
        printf "%.2f", c[1] / a[1] }')
    if [ "$n" = "$(echo "$SIZES" | awk '{ print $NF }')" ]; then
        phases=$("$B/phases" "$f" 2>&1 || true)
        last_mem=$(awk -v p="$pred" -v n="$n" 'BEGIN { split(p, c, " "); printf "%.0f", c[2] * 1024 / n }')
        "$B/gen" "$n" training >"$f"
        measure "$f"
        train_ratio=fail
        train_mem=fail
        if [ "$pred" != fail ] && [ "$loop" != fail ]; then
            train_ratio=$(awk -v l="$loop" -v p="$pred" 'BEGIN { split(l, a, " "); split(p, c, " ");
                printf "%.2f", c[1] / a[1] }')
            train_mem=$(awk -v p="$pred" -v n="$n" 'BEGIN { split(p, c, " "); printf "%.0f", c[2] * 1024 / n }')
        fi
        train_line=$(awk -v p="$pred" -v loop="$loop" -v n="$n" 'BEGIN { split(p, c, " "); split(loop, a, " ");
            if (p == "fail" || loop == "fail") print "failed"
            else printf "memlife %.3f s, ratio %.2f (its loop %.3f s), RSS %.0f MB, %.0f B/step", c[1],
                        c[1] / a[1], a[1], c[2] / 1024, c[2] * 1024 / n }')
        "$B/gen_mesh" "$n" >"$f"
        measure "$f"
        mesh_ratio=fail
        mesh_mem=fail
        if [ "$pred" != fail ] && [ "$loop" != fail ]; then
            mesh_ratio=$(awk -v l="$loop" -v p="$pred" 'BEGIN { split(l, a, " "); split(p, c, " ");
                printf "%.2f", c[1] / a[1] }')
            mesh_mem=$(awk -v p="$pred" -v n="$n" 'BEGIN { split(p, c, " "); printf "%.0f", c[2] * 1024 / n }')
        fi
        "$B/gen" "$n" rank-free >"$f"
        measure "$f"
        free_line=$(awk -v p="$pred" -v loop="$loop" 'BEGIN { split(p, c, " "); split(loop, a, " ");
            if (p == "fail" || loop == "fail") print "failed"
            else printf "memlife %.3f s, ratio %.2f (its loop %.3f s), RSS %.0f MB", c[1],
                        c[1] / a[1], a[1], c[2] / 1024 }')
    fi
    rm -f "$f"
done
echo "phases at $last_n steps: ${phases:-n/a}"
echo "training schedule at $last_n steps (gen N training): ${train_line:-n/a}"
echo "rank-free variant at $last_n steps (one expansion for every rank): ${free_line:-n/a}"

if [ -z "$last_n" ]; then
    echo "no size could be measured" >&2
    exit 2
fi
# the targets above, for the generated mix and for the training schedule
for row in "mix $last_ratio ${last_mem:-fail}" "training ${train_ratio:-fail} ${train_mem:-fail}" \
    "mesh ${mesh_ratio:-fail} ${mesh_mem:-fail}"; do
    # shellcheck disable=SC2086 # the row's three words
    set -- $row
    awk -v what="$1" -v r="$2" -v m="$3" -v n="$last_n" 'BEGIN {
        if (r == "fail") { printf "FAIL - %s at %d steps: a run failed\n", what, n; exit }
        printf "%s - memlife / yaml-loop CPU time, %s at %d steps: %.2f (target <= 1.25)\n",
               (r <= 1.25) ? "PASS" : "FAIL", what, n, r
        printf "%s - memlife peak RSS per step, %s at %d steps: %d B (target <= 300)\n",
               (m <= 300) ? "PASS" : "FAIL", what, n, m
    }'
done
awk -v a="$first_per" -v b="$last_per" -v sizes="$SIZES" 'BEGIN {
    k = split(sizes, s, " ")
    g = b / a
    printf "%s - memlife CPU time per step, %s vs %s steps: %.2fx (target <= 1.5x)\n",
           (g <= 1.5) ? "PASS" : "FAIL", s[k], s[1], g
}'

# How the cost grows with the size: predict (steps, buffers) and optimize, ratios within this run.
echo
./tests/bench/scale.sh || echo "scale benchmark: a run failed" >&2
./tests/bench/import_bench.sh || echo "import benchmark: a run failed" >&2
# predict of the schedule import_bench.sh just wrote (its 1 M-event snapshot: 666,794 steps, each
# with its time_us) against the bare libyaml loop over it: at most 2x, best of RUNS each.
IMPORTED=${BENCH_DIR:-/tmp/memlife-import-bench}/import.yaml
if [ -s "$IMPORTED" ]; then
    measure "$IMPORTED"
    case "$loop $pred" in *fail*) echo "predict of the imported schedule: a run failed" >&2 ;; esac
    # shellcheck disable=SC2086 # "CPU RSS" pairs
    set -- $loop $pred
    awk -v l="$1" -v p="$3" 'BEGIN {
        printf "%s - predict of the imported schedule: %.2f s CPU, %.2fx the libyaml loop (%.2f s; target <= 2)\n",
               (p <= 2 * l) ? "PASS" : "FAIL", p, p / l, l }'
fi
./tests/bench/capture_bench.sh || echo "capture benchmark: a run failed" >&2
./tests/bench/fit_bench.sh || echo "fit benchmark: a run failed" >&2

# The host backend against a minimal MPI program (wall time, best of 9, 2 ranks).
./tests/bench/host_mpi.sh || echo "host backend benchmark: a run failed" >&2

# The torch allocator model: 10 M random malloc/free events, up to 2048 live blocks
# (tests/bench/torchalloc_bench.c, its own process CPU time), best of 3; target 10 M events/s.
$CC -O2 -std=c11 -D_GNU_SOURCE -Iruntime -Ianalyzer -I. -o "$B/torchalloc_bench" \
    tests/bench/torchalloc_bench.c build/libmemlife.a -lm
# ta_best ARGS...: the best events/s of 3 runs of the bench with ARGS
ta_best() {
    best=0
    for _ in 1 2 3; do
        r=$("$B/torchalloc_bench" "$@" 2>/dev/null | awk '/events\/s/ { print $3 }') || r=0
        best=$(awk -v a="${r:-0}" -v b="$best" 'BEGIN { print (a + 0 > b + 0) ? a : b }')
    done
    echo "$best"
}
ta_best=$(ta_best)
awk -v r="$ta_best" 'BEGIN {
    printf "%s - torch allocator model: %.2f M events/s (2048 live blocks, best of 3; target >= 10 M)\n",
           (r >= 10e6) ? "PASS" : "FAIL", r / 1e6 }'

# The same model on snapshot-shaped input (tests/bench/import_bench.sh's churn: 1000 live blocks
# of 1 B .. 64 MiB, some 650 segments), asking for the stats after every event as predict's torch
# view does: they must not walk the segments; 1 M events, best of 3; target 10 M events/s.
ta_best=$(ta_best 1000000 "" 1000 snapshot)
awk -v r="$ta_best" 'BEGIN {
    printf "%s - torch allocator model, stats every event: %.2f M events/s (snapshot-shaped, best of 3; target >= 10 M)\n",
           (r >= 10e6) ? "PASS" : "FAIL", r / 1e6 }'
