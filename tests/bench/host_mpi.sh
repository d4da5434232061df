#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/host_mpi.sh — the host backend against a minimal MPI program (`make bench`).
#
# The seed's AllReduce (schedules/seed/01_allreduce_full.yaml: one in-place AllReduce of
# 256 MiB) run by `memlife run --backend host --ranks 2`, against tests/bench/host_mpi_min.c
# under `mpirun -np 2` (MPI_Init, the buffer, one in-place MPI_Allreduce, MPI_Finalize): wall
# time of the whole command (mpirun start-up included on both sides), best of RUNS (default 9:
# two ranks fill a 2-core machine, where one busy spell moved a run by 10-20%), the two taking
# turns so that a busy spell hits both. Target: memlife / minimal
# <= 1.05. Prints one PASS/FAIL line. Exit 0 unless it could not run.
set -u
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-9}
B=build/bench
mkdir -p "$B"
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    echo "SKIP - host backend vs minimal MPI: no mpicc/mpirun"
    exit 0
fi
mpicc -O2 -o "$B/host_mpi_min" tests/bench/host_mpi_min.c || exit 2
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

# wall CMD...: seconds of wall time of CMD (stdout and stderr dropped); "fail" if it failed.
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || { echo fail; return; }
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
best() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "fail" || b == "fail") print "fail";
                                          else if (a == "" || b + 0 < a + 0) print b; else print a }'; }

m=""
l=""
for _ in $(seq "$RUNS"); do
    m=$(best "$m" "$(wall mpirun -np 2 "$B/host_mpi_min")")
    l=$(best "$l" "$(wall ./memlife run schedules/seed/01_allreduce_full.yaml --backend host --ranks 2)")
done
if [ "$m" = fail ] || [ "$l" = fail ]; then
    echo "FAIL - host backend vs minimal MPI: a run failed"
    exit 1
fi
awk -v m="$m" -v l="$l" -v runs="$RUNS" 'BEGIN {
    r = l / m
    printf "%s - host backend, 256 MiB in-place AllReduce at 2 ranks: memlife %.3f s, minimal MPI %.3f s, %.2fx (wall, best of %d; target <= 1.05)\n",
           (r <= 1.05) ? "PASS" : "FAIL", l, m, r, runs }'
