# optimize_gen.awk — `awk -v n=N -f optimize_gen.awk`: a schedule of about N steps of the
# chapter's naive RS+AG (7 steps per group), with 1000 cycling buffer names (every group frees
# what it allocated), so that lifetimes and in place rewrite every group. Used by
# tests/cli/optimize_scale.sh (the exact peak after) and tests/bench/scale.sh (time growth).
BEGIN {
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
}
