#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/scale.sh — how memlife's cost grows with the size of a schedule (`make bench`).
#
# Linear work gives about 10x for 10x the size, anything quadratic about 100x. Each size is
# measured as the best of RUNS runs of user CPU time (page-fault and kernel time, which is noise
# on a shared VM, is left out), and the ratio is taken within this one run:
#   predict steps:    1 M vs 10 M written steps (tests/cli/scale_gen.c steps), `memlife predict`
#   predict buffers:  100 k vs 1 M buffers live at once (scale_gen buffers)
#   predict races:    100 k vs 1 M steps of two-stream prefetch (scale_gen races): the race lint's
#                     per-buffer segments (measured 0.18 s -> 1.9 s, 10.5x, on the 2-core VM)
#   optimize steps:   10 k vs 100 k steps of the naive RS+AG, 1000 cycling buffer names
#                     (tests/bench/optimize_gen.awk), `memlife optimize`
# Each line says PASS or FAIL against the bound 15x (optimize 25x: it reloaded the file per
# stage once) and the peak RSS ratio. Environment: RUNS=3, SCALE_BIG=0 skips the 10 M
# size (about 45 s and 5 GB), OPTIMIZE_BASELINE=PATH compares optimize with another build (below).
# Exit 0 unless a run failed.
set -u
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-3}
CC=${CC:-cc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
$CC -O2 -o "$T/gen" tests/cli/scale_gen.c || exit 2

# best_of CMD...: best user CPU seconds and the peak RSS (KiB) of that run, of RUNS runs.
best_of() {
    python3 - "$RUNS" "$@" <<'PY'
import os, subprocess, sys
runs, cmd = int(sys.argv[1]), sys.argv[2:]
best = None
for _ in range(runs):
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1); os.dup2(fd, 2)
        os.execv(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        print("fail"); sys.exit(0)
    if best is None or ru.ru_utime < best[0]:
        best = (ru.ru_utime, ru.ru_maxrss)
print("%.3f %d" % best)
PY
}

# ratio NAME BOUND SMALL_FILE BIG_FILE CMD...: CMD gets the file appended.
ratio() {
    local name=$1 bound=$2 small=$3 big=$4 a b
    shift 4
    a=$(best_of "$@" "$small")
    b=$(best_of "$@" "$big")
    last_big=$b
    if [ "$a" = fail ] || [ "$b" = fail ]; then
        echo "FAIL - $name: a run failed"
        return 1
    fi
    awk -v n="$name" -v bound="$bound" -v a="$a" -v b="$b" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        rt = y[1] / (x[1] > 0.001 ? x[1] : 0.001); rm = y[2] / (x[2] > 1 ? x[2] : 1)
        printf "%s - %s: user cpu %.2f s -> %.2f s (%.1fx), peak rss %d -> %d MiB (%.1fx), bound %sx\n",
               (rt < bound && rm < bound) ? "PASS" : "FAIL", n, x[1], y[1], rt, x[2] / 1024,
               y[2] / 1024, rm, bound }'
}

echo "machine: $(uname -n), $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores; best of $RUNS, user CPU time"
rc=0
if [ "${SCALE_BIG:-1}" != 0 ]; then
    "$T/gen" steps 1000000 >"$T/s1.yaml"
    "$T/gen" steps 10000000 >"$T/s10.yaml"
    ratio "predict 1M vs 10M steps" 15 "$T/s1.yaml" "$T/s10.yaml" ./memlife predict || rc=1
    rm -f "$T/s1.yaml" "$T/s10.yaml"
fi
"$T/gen" buffers 100000 >"$T/b1.yaml"
"$T/gen" buffers 1000000 >"$T/b10.yaml"
ratio "predict 100k vs 1M buffers" 15 "$T/b1.yaml" "$T/b10.yaml" ./memlife predict || rc=1
rm -f "$T/b1.yaml" "$T/b10.yaml"
"$T/gen" races 100000 >"$T/r1.yaml"
"$T/gen" races 1000000 >"$T/r10.yaml"
ratio "predict 100k vs 1M race-linted steps" 15 "$T/r1.yaml" "$T/r10.yaml" ./memlife predict || rc=1
rm -f "$T/r1.yaml" "$T/r10.yaml"
awk -v n=10000 -f tests/bench/optimize_gen.awk >"$T/o1.yaml"
awk -v n=100000 -f tests/bench/optimize_gen.awk >"$T/o10.yaml"
ratio "optimize 10k vs 100k steps" 25 "$T/o1.yaml" "$T/o10.yaml" ./memlife optimize -o "$T/out.yaml" || rc=1
# optimize in bounded memory: peak RSS at 100k steps at most 600 MiB (it was 1158
# MiB, and 1.04 s user CPU, on the 2-core VM before each stage released its trees).
awk -v b="${last_big:-fail}" 'BEGIN {
    if (b == "fail") { print "FAIL - optimize 100k steps: a run failed"; exit }
    split(b, y, " ")
    printf "%s - optimize 100k steps: peak rss %d MiB (target <= 600), user cpu %.2f s\n",
           (y[2] / 1024 <= 600) ? "PASS" : "FAIL", y[2] / 1024, y[1] }'
# Against another build (optimize of 100k steps at most 0.7x the CPU time of the build
# before the stages stopped reloading their text): OPTIMIZE_BASELINE=PATH/memlife runs it and this
# build on the same 100k-step file, alternately, best of RUNS each, and prints the ratio.
if [ -n "${OPTIMIZE_BASELINE:-}" ]; then
    a=$(best_of "$OPTIMIZE_BASELINE" optimize -o "$T/base.yaml" "$T/o10.yaml")
    b=$(best_of ./memlife optimize -o "$T/out.yaml" "$T/o10.yaml")
    a2=$(best_of "$OPTIMIZE_BASELINE" optimize -o "$T/base.yaml" "$T/o10.yaml")
    b2=$(best_of ./memlife optimize -o "$T/out.yaml" "$T/o10.yaml")
    awk -v a="$a" -v b="$b" -v a2="$a2" -v b2="$b2" 'BEGIN {
        split(a, x, " "); split(b, y, " "); split(a2, x2, " "); split(b2, y2, " ")
        base = x[1] < x2[1] ? x[1] : x2[1]; now = y[1] < y2[1] ? y[1] : y2[1]
        r = now / (base > 0.001 ? base : 0.001)
        printf "%s - optimize 100k steps vs OPTIMIZE_BASELINE: user cpu %.2f s -> %.2f s (%.2fx, target <= 0.7x)\n",
               (r <= 0.7) ? "PASS" : "FAIL", base, now, r }'
fi
exit $rc
