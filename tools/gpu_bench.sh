#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tools/gpu_bench.sh — `memlife bench`'s GPU checks on the 2 x H200 machine in one
# command. Run from the repository root with the binary built on the CPU machine carried along
# (build/memlife; libyaml is static, CUPTI is loaded at run time):
#
#   bash tools/gpu_bench.sh            # writes $OUT/bench.log, and per run JSON + table + stderr
#                                      # under $OUT/bench-results/{mpi,single}/
#
# It prints the machine, then runs tests/gpu/bench.sh — the same cases `make test-gpu` runs — in
# both launch modes (mpirun -np 2, one process per GPU; --gpus 2, one process):
#   the chapter's sweep 1 KiB .. 256 MiB, direct vs decomposed, 3 warm-ups + 10 alternating
#   cycles, with --graph, every span started aligned on the device (the default; the report's
#   header says so): the table; CV <= 5% at 256 MiB for both plans; the ratio stated there
#   (PyTorch: 1.232x); the overhead columns at every size, with the targets: GPU spans
#   memlife / bare <= 1.02 at >= 16 MiB, the host's issue time of memlife <= 2 us over bare's at
#   1 KiB; graph replays (20 copies of the timed part per graph below 16 MiB) stable at every
#   size (the issue's aim);
#   the kernel probe (5 iterations, 64 MiB int32) with --kernels: 10 AllReduce kernels in region
#   direct, 10 ReduceScatter + 10 AllGather in region decomposed, names shown.
# Then every table in full, and, when nsys is installed and time is left, the chapter's own
# method as a cross-check (nsys profile + nvtx_kern_sum over the probe's regions).
# One `ok - ` / `not ok - ` line per item, a summary. Every command runs under `timeout`; the whole
# session stays under 5 minutes (SESSION_BUDGET seconds, default 280; nsys only when 150 s are
# left). Exit 0 when no item failed.
set -u
cd "$(dirname "$0")/.." || exit 2
# shellcheck source=tools/gpu_common.bash
. tools/gpu_common.bash
gpu_session_env bench.log 280
export RESULTS=$OUT/bench-results
T0=$SECONDS
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

left() { echo $((BUDGET - (SECONDS - T0))); }

# The chapter's method on the probe: Nsight Systems' kernel count per NVTX range. memlife names
# its plan ranges "plan:NAME (mode)", so ":direct" and ":decomposed" are the regions alone; one
# cycle, no warm-up: each region runs once (5 iterations).
nsys_cross_check() {
    local nsys
    nsys=$(command -v nsys || true)
    if [ -z "$nsys" ]; then
        echo "skip - nsys nvtx_kern_sum cross-check: nsys is not installed"
        return
    fi
    if [ "$(left)" -lt 150 ]; then
        echo "skip - nsys nvtx_kern_sum cross-check: $(left) s of the budget left"
        return
    fi
    local rep=$RESULTS/nsys_probe limit=$(( $(left) - 50 ))
    [ "$limit" -gt 120 ] && limit=120
    timeout -k 10 "$limit" "$nsys" profile -t cuda,nvtx -o "$rep" --force-overwrite true \
        "$MEMLIFE" bench schedules/kernel_probe.yaml --backend cuda --gpus 2 --warmup 0 \
        --cycles 1 -q </dev/null >"$rep.log" 2>&1
    timeout -k 5 30 "$nsys" stats --report nvtx_kern_sum --format csv -o "$rep" "$rep.nsys-rep" \
        >>"$rep.log" 2>&1
    local csv
    csv=$(ls "$rep"_nvtx_kern_sum*.csv 2>/dev/null | head -n 1)
    if [ -z "$csv" ]; then
        echo "skip - nsys nvtx_kern_sum cross-check: no report ($(tail -n 2 "$rep.log" | tr '\n' ' '))"
        return
    fi
    python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda names: next((k for k in (rows[0].keys() if rows else []) if k in names), None)
rng, inst = key(("NVTX Range", "Range")), key(("Kern Inst", "Kernel Instances", "Instances"))
if not rng or not inst:
    print("skip - nsys nvtx_kern_sum cross-check: unknown columns %s" % list(rows[0].keys() if rows else []))
    sys.exit(0)
count = {}
for r in rows:
    name = r[rng].split(":")[-1]
    count[name] = count.get(name, 0) + int(float(r[inst] or 0))
d, c = count.get("direct"), count.get("decomposed")
print("%s - nsys nvtx_kern_sum cross-check: :direct %s kernels, :decomposed %s (want 10 vs 20)"
      % ("ok" if (d, c) == (10, 20) else "not ok", d, c))
PY
}

session() {
    echo "# memlife bench on the GPU machine, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), binary built at commit $(build_commit)"
    gpu_machine clocks.sm,clocks.max.sm,temperature.gpu
    echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
    if [ ! -x "$MEMLIFE" ]; then
        echo "not ok - $MEMLIFE is missing: build it with make on the CPU machine and carry build/memlife"
        return
    fi
    timeout 30 "$MEMLIFE" --version
    timeout 30 ldd "$MEMLIFE" | grep -E 'nccl|cudart|cupti|mpi\.|jansson|not found'
    ls /usr/local/cuda/lib64/libcupti.so* /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -n 3
    echo "## tests/gpu/bench.sh ($(left) s of the budget left)"
    BENCH_TIMEOUT=$(( ($(left) - 30) / 3 > 60 ? ($(left) - 30) / 3 : 60 )) \
        timeout -k 10 "$(( $(left) - 30 ))" bash tests/gpu/bench.sh
    local rc=$?
    [ "$rc" -eq 0 ] || echo "not ok - tests/gpu/bench.sh: could not run to the end (exit $rc)"
    echo "## nsys ($(left) s of the budget left)"
    nsys_cross_check
    local f
    for f in "$RESULTS"/*/sweep.out "$RESULTS"/*/kernel_probe.out; do
        [ -f "$f" ] || continue
        echo "## ${f#"$RESULTS"/}"
        cat "$f"
    done
    echo "## progress and notes (stderr, NCCL INFO lines left out)"
    for f in "$RESULTS"/*/*.err; do
        [ -f "$f" ] || continue
        echo "### ${f#"$RESULTS"/}"
        grep -v 'NCCL INFO' "$f" | head -n 40
    done
    echo "## every run: command, exit code, time"
    grep '^### ' "$RESULTS/commands.log" 2>/dev/null
    echo "## session took $((SECONDS - T0)) s"
}

session 2>&1 | tee "$LOG.tmp"
tap_summary "$LOG.tmp" "$LOG"
