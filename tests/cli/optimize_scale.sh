#!/usr/bin/env bash
# memlife optimize on big schedules is near-linear: 10,000 and 100,000 steps of the chapter's
# naive RS+AG, repeated with 1000 cycling buffer names (every group frees what it allocated), so
# that lifetimes and in place rewrite every group (each stage writes, reloads, lints and
# predicts the whole file at 4 ranks). Bounds: 100k steps within 60 s ("seconds, not minutes"),
# and 10x the steps within 25x the time (linear would be 10x; the margin absorbs a loaded
# machine and the fixed start-up of the 10k run). The measured times are printed.
. "$(dirname "$0")/lib.bash"

gen() {   # N: a schedule of about N steps (7 per group)
    awk -v n="$1" 'BEGIN {
        print "name: naive-rs-ag-x" n
        print "world: 4"
        print "dtype: float32"
        print "let: {M: 4MiB, q: M / 4 / world}"
        print "steps:"
        for (k = 0; k * 7 < n; k++) {
            g = k % 1000
            printf "  - alloc: {buf: full%d, bytes: M}\n", g
            printf "  - alloc: {buf: shard%d, count: q}\n", g
            printf "  - alloc: {buf: gathered%d, bytes: M}\n", g
            printf "  - reduce_scatter: {send: full%d, recv: shard%d, op: sum}\n", g, g
            printf "  - all_gather: {send: shard%d, recv: gathered%d}\n", g, g
            print  "  - sync: device"
            printf "  - free: [full%d, shard%d, gathered%d]\n", g, g, g
        }
    }'
}

secs() {   # FILE: wall seconds of `memlife optimize FILE`, or "fail"
    local t0 t1
    t0=$(date +%s.%N)
    "$MEMLIFE" optimize "$1" -o "$1.out" --format json >"$TMP/report.json" 2>"$TMP/err" || {
        echo fail
        return
    }
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}

gen 10000 >"$TMP/s10k.yaml"
gen 100000 >"$TMP/s100k.yaml"
t10=$(secs "$TMP/s10k.yaml")
t100=$(secs "$TMP/s100k.yaml")
if [ "$t10" = fail ] || [ "$t100" = fail ]; then
    not_ok "optimize 10k / 100k steps" "exit non-zero: $(head -1 "$TMP/err")"
    exit 0
fi
# every group became one in-place buffer: peak M (4 MiB), from 2M + M/4 (9 MiB)
peak=$(grep -A3 '"after"' "$TMP/report.json" | grep -m1 '"peak"' | tr -dc 0-9)
if [ "$peak" = $((4 * 1048576)) ]; then
    ok "optimize 100k steps rewrites every group: peak 4 MiB (from 9 MiB)"
else
    not_ok "optimize 100k steps: peak after" "$peak, want $((4 * 1048576))"
fi
verdict=$(echo "$t10 $t100" | awk '{ r = $2 / ($1 > 0.01 ? $1 : 0.01);
    printf "%s %.1f", ($2 <= 60 && r <= 25) ? "ok" : "slow", r }')
if [ "${verdict%% *}" = ok ]; then
    ok "optimize scales: 10k steps ${t10} s, 100k steps ${t100} s (x${verdict#* })"
else
    not_ok "optimize scales" "10k steps ${t10} s, 100k steps ${t100} s (x${verdict#* }); want <= 60 s and <= x25"
fi
