/* SPDX-License-Identifier: MIT */
/* test_compact.c — the pipeline's compact path (pipeline_opts.keep_plans false, as predict and
 * check run it: analyzer/pipeline/pipeline.c's plan_compact_pass, plan_compact, lint_walk): it
 * must change nothing but what stays in memory.
 *
 * Every case runs pipeline_run twice on the same file, with keep_plans true (every rank's whole
 * plan, the reference) and false; the diagnostics (text, rank, mark, in order), the contract
 * rows, every rank's prediction and the expectation rows must be identical. Then each rank's
 * plan is compact or whole as the case says: a compact one keeps exactly the ops its prediction
 * names (the peaks' steps), equal to the reference's, and rank 0's still answers
 * plan_first_colls and plan_timed_compute as the whole plan does; a whole one has the
 * reference's ops.
 *
 * Both paths have two ways (analyzer/pipeline/rankshare.h): ranks that differ from rank 0 only in views' offsets
 * take rank 0's expansion with their own offsets and share its prediction (plan_compact_pass with members;
 * whole plans: plan_copy); the others expand one by one (plan_compact_pass, every rank a base; whole plans:
 * plan_expand). The reference is whole plans forced per rank (share_offsets off); against it
 * each case runs whole plans the way the case names, compact the way the case names (as predict
 * runs it) and compact forced per rank. The cases move offsets alone (the middle
 * path, in-place flags and the floor with them), and sizes, `when:`, repeat counts and lets
 * with offsets alongside (the per-rank path). `when:`s that name rank, world and lets split
 * the ranks into shapes (plan_shapes_new): the compact path then takes groups of ranks, each
 * run of one shape its first rank's expansion with its own offsets (plan_compact_pass), and
 * the cases that do (`grouped`) are compared with both references as the others are. */
#include "plantest.h"
#include "pipeline/pipeline.h"

#include <fcntl.h>
#include <unistd.h>

typedef struct {
    const char *name;
    const char *yaml;
    int rc;                /* pipeline_run's */
    /* per rank: 'c' compact, 'w' whole; "" when the pipeline stops before (no plans kept) */
    const char *kept;
    bool moved;            /* ranks differ only in offsets: the middle path (rankshare.h's OFFSETS) */
    /* ranks differ by `when:`s of rank too (plan_shapes_new): the compact path takes groups of
     * ranks (rankshare.h's GROUPS, moved there); whole plans expand per rank */
    bool grouped;
    /* with the timeline off, as predict and check run (the fast case needs it off): how many
     * ranks are subset members (rankshare.h's subset members: a base's ops with the ops of its
     * `when:`s that are false on the rank absent), worked out from the case's `when:`s */
    int subsets;
} compact_case;

/* offsets_only_fsdp's group of P floats, slices of E (fsdp_groups_reuse_names) */
#define FSDP_GROUP(P, E)                                                                           \
    "  - alloc: {buf: p, count: " #P ", init: rank_iota}\n  - alloc: {buf: g, count: " #P "}\n"   \
    "  - compute: {reads: [p], writes: [g], time: 80}\n  - alloc: {buf: sh, count: " #E "}\n"    \
    "  - reduce_scatter: {send: g, recv: sh, op: avg}\n  - free: g\n"                           \
    "  - compute: {reads: [sh], writes: ['p[rank*" #E " : " #E "]'], time: 10}\n"               \
    "  - record: {event: done}\n  - wait: {event: done, stream: comm}\n"                         \
    "  - all_gather: {send: 'p[rank*" #E " : " #E "]', recv: p, stream: comm}\n"                \
    "  - sync: device\n  - free: [sh, p]\n"

/* tests/bench/gen.c's mix, one group: buffers w and g */
#define MIX_GROUP                                                                                  \
    "  - alloc: {buf: w, bytes: M, init: rank_iota}\n  - alloc: {buf: g, bytes: q}\n"            \
    "  - reduce_scatter: {send: w, recv: g, op: sum}\n  - record: {event: scattered}\n"         \
    "  - wait: {event: scattered, stream: comm}\n"                                               \
    "  - all_gather: {send: g, recv: w, stream: comm}\n"                                         \
    "  - record: {event: ready, stream: comm}\n  - wait: {event: ready}\n"                       \
    "  - all_reduce: {buf: 'w[rank*s : s]', op: max}\n"                                          \
    "  - when: rank == 0\n    compute: {reads: [g], writes: w}\n"                                \
    "  - broadcast: {buf: g, root: world - 1}\n  - sync: device\n  - free: [w, g]\n"

static const compact_case cases[] = {
    /* rank in a view and a size: every rank expands differently; nothing else to read: all
     * compact */
    {"rank_in_view",
     "world: 4\nlet: {e: 16}\nexpect:\n  requested: {peak: 640}\nsteps:\n"
     "  - alloc: {buf: p, count: 64, dtype: bfloat16}\n  - alloc: {buf: a, bytes: 512}\n"
     "  - compute: {reads: [p], writes: [a], time: 40}\n  - free: a\n"
     "  - all_gather: {send: 'p[rank*e : e]', recv: p}\n  - sync: device\n"
     "  - alloc: {buf: q, bytes: 256 * (rank + 1)}\n  - free: [q, p]\n",
     0, "cccc", false, false, 0},
    /* FSDP's shape (tests/bench/gen.c training): rank moves the optimizer's slice and the
     * all_gather's send side only; that all_gather is in place on every rank */
    {"offsets_only_fsdp",
     "world: 4\nlet: {P: 64, e: P / world}\nstreams: [comm]\nevents: [done]\n"
     "expect:\n  requested: {peak: 4 * P + 4 * e}\nsteps:\n"
     "  - alloc: {buf: p, count: P, init: rank_iota}\n  - alloc: {buf: g, count: P}\n"
     "  - compute: {reads: [p], writes: [g], time: 80}\n  - alloc: {buf: sh, count: e}\n"
     "  - reduce_scatter: {send: g, recv: sh, op: avg}\n  - free: g\n"
     "  - compute: {reads: [sh], writes: ['p[rank*e : e]'], time: 10}\n"
     "  - record: {event: done}\n  - wait: {event: done, stream: comm}\n"
     "  - all_gather: {send: 'p[rank*e : e]', recv: p, stream: comm}\n"
     "  - sync: device\n  - free: [sh, p]\n",
     0, "cccc", true, false, 0},
    /* offsets that move in an indexed repeat (rank and the index), and an in-place flag that
     * only rank 0 has: its recv x[0 : 16] is NCCL's in-place slot, the others' x[64 : 16] lies
     * outside the send side */
    {"offsets_index_and_in_place",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 128}\n  - alloc: {buf: y, count: 256}\n"
     "  - repeat:\n      count: 3\n      index: j\n"
     "      steps:\n        - copy: {src: 'x[rank*16 : 16]', dst: 'y[(rank + 4*j) * 16 : 16]'}\n"
     "  - reduce_scatter: {send: 'x[0 : 64]', recv: 'x[(rank + 3) / 4 * 64 : 16]'}\n"
     "  - check: {name: c, equal: ['y[rank*16 : 16]', 'x[rank*16 : 16]']}\n  - free: [x, y]\n",
     0, "cccc", true, false, 0},
    /* a floor that the offsets move: the compute's read x[rank : 16] lies inside the scaled
     * x[rank*32 : 32] on rank 0 (floor 32 floats, 128 B) and not on the others (48, 192 B) */
    {"offsets_move_the_floor",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 128}\n"
     "  - scale: {buf: 'x[rank*32 : 32]', by: 2}\n"
     "  - compute: {reads: ['x[rank : 16]'], writes: ['x[rank * 16 : 8]']}\n  - free: x\n",
     0, "cccc", true, false, 0},
    /* an out-of-place reduce_scatter whose send slot of rank 0 is read afterwards: NCCL's
     * in-place share is the other ranks' alone, so the floors differ (floor_short_way) */
    {"shard_slot_read_on_rank_0",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 16}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - reduce_scatter: {send: x, recv: y}\n"
     "  - compute: {reads: ['x[0 : 16]', y]}\n  - free: [x, y]\n",
     0, "cccc", true, false, 0},
    /* the first collective is refused (expect_error): the report's first collectives are the
     * all_reduce alone, from the prediction's pass (plan_compact_with) as from the ops */
    {"refused_first_collective",
     "world: 4\nsteps:\n  - alloc: {buf: a, count: 1003, dtype: int64}\n"
     "  - alloc: {buf: b, count: 250, dtype: int64}\n"
     "  - expect_error: {name: nondivisible, error: size_mismatch,\n"
     "                   step: {reduce_scatter: {send: a, recv: b}}}\n"
     "  - scale: {buf: 'a[rank*16 : 16]', by: 2}\n  - all_reduce: {buf: b}\n"
     "  - free: [a, b]\n",
     0, "cccc", true, false, 0},
    /* a view past its buffer on rank 3 alone (48 + 20 > 64): rank 3's lint error */
    {"offset_out_of_bounds_on_rank_3",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - scale: {buf: 'x[rank*16 : 20]', by: 2}\n  - free: x\n",
     -1, "cccc", true, false, 0},
    /* an offset negative on rank 3 alone: that rank's expansion error only */
    {"offset_negative_on_rank_3",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - scale: {buf: 'x[(2 - rank) * 16 : 16]', by: 2}\n  - free: x\n",
     -1, "", true, false, 0},
    /* offsets with rank in a `when:` (groups: ranks 0-1, 2-3; the collectives diverge, rank 0
     * is expanded again for the messages), a repeat's count, a let: per rank */
    {"offsets_and_when",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - when: rank < 2\n    all_reduce: {buf: x}\n"
     "  - free: x\n",
     -1, "wccc", false, true, 0},
    {"offsets_and_repeat_count",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - repeat: {count: rank + 1, steps: [{scale: {buf: 'x[rank*16 : 16]', by: 2}}]}\n"
     "  - free: x\n",
     0, "cccc", false, false, 0},
    {"offsets_through_let",
     "world: 4\nlet: {o: rank * 16}\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - scale: {buf: 'x[o : 16]', by: 2}\n  - free: x\n",
     0, "cccc", false, false, 0},
    /* rank 0 alone issues a collective: the cross-rank messages name rank 0's, which is
     * expanded again (whole); the others stay compact */
    {"diverging_collectives",
     "world: 4\nsteps:\n  - alloc: {buf: x, bytes: 1KiB}\n"
     "  - when: rank == 0\n    all_reduce: {buf: x}\n  - free: x\n",
     -1, "wccc", false, true, 0},
    /* a send/recv pair on every rank: nothing is compacted */
    {"p2p_everywhere",
     "world: 2\nsteps:\n  - alloc: {buf: a, count: 8}\n  - alloc: {buf: b, count: 8}\n"
     "  - group:\n      - send: {buf: a, peer: 1 - rank}\n      - recv: {buf: b, peer: 1 - rank}\n"
     "  - free: [a, b]\n",
     0, "ww", false, false, 0},
    /* the first send on rank 2: ranks 0 and 1 were compacted and are expanded again */
    {"p2p_from_rank_2",
     "world: 4\nsteps:\n  - alloc: {buf: a, count: 8 * (rank + 1)}\n"
     "  - when: rank == 2\n    send: {buf: a, peer: 3}\n  - free: a\n",
     -1, "wwww", false, false, 0},
    /* an expansion error on rank 3 alone: that error only, as the full path stops there */
    {"expand_error_on_rank_3",
     "world: 4\nsteps:\n  - alloc: {buf: a, bytes: 200 - 100 * rank}\n  - free: a\n",
     -1, "", false, false, 0},
    /* a lint error on every rank (use after free) with rank-dependent sizes */
    {"lint_error_every_rank",
     "world: 3\nsteps:\n  - alloc: {buf: a, bytes: 64 * (rank + 1)}\n  - free: a\n"
     "  - compute: {reads: [a]}\n",
     -1, "ccc", false, false, 0},
    /* failing expectations, evaluated after the compact ranks' predictions */
    {"expectation_fails",
     "world: 2\nexpect:\n  requested: {peak: 1}\nsteps:\n"
     "  - alloc: {buf: a, bytes: 64 * (rank + 1)}\n  - free: a\n",
     0, "cc", false, false, 0},
    /* ---- groups of ranks: `when:`s that name rank (plan_shapes_new, rankshare.h's GROUPS) ---- */
    /* gen.c's mix, twice: rank 0 alone computes, ranks 1-3 differ by the all_reduce's slice
     * (groups {0}, {1, 2, 3}); the collectives agree, so rank 0 stays compact */
    {"when_rank_0_mix",
     "world: 4\nlet: {M: 256, q: M / world, s: q / 4}\nstreams: [comm]\n"
     "events: [ready, scattered]\nsteps:\n" MIX_GROUP MIX_GROUP,
     0, "cccc", false, true, 3},
    /* interleaved groups {0, 2}, {1, 3}: every rank is a base, expanded into the array the rank
     * before gave back; ranks 0 and 2 are expanded apart */
    {"when_rank_odd_interleaved",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n"
     "  - when: rank % 2 == 1\n    compute: {reads: [x], writes: [y], time: 5}\n"
     "  - all_reduce: {buf: y}\n  - free: [x, y]\n",
     0, "cccc", false, true, 1},
    /* the same groups, but the odd ranks issue one more collective: rank 0 is expanded again,
     * whole, for the cross-rank messages (lint_walk_needs_rank0) */
    {"when_rank_odd_diverging",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n"
     "  - when: rank % 2 == 1\n    all_reduce: {buf: x}\n  - free: x\n",
     -1, "wccc", false, true, 0},
    /* groups {0, 1, 2} (rank 0 the base of two members, whose floors are rank 0's record's)
     * and {3}, which frees its second buffer early */
    {"when_rank_below_last",
     "world: 4\nlet: {e: 16}\nexpect:\n  requested: {peak: 512}\nsteps:\n"
     "  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - compute: {reads: ['x[rank*e : e]'], writes: ['y[rank*e : e]'], time: 5}\n"
     "  - when: rank >= world - 1\n    free: y\n"
     "  - alloc: {buf: z, count: 32}\n  - all_reduce: {buf: 'x[rank*e : e]'}\n"
     "  - free: z\n  - when: rank < world - 1\n    free: y\n  - free: x\n",
     0, "cccc", false, true, 0},
    /* a `when:` of rank in a repeat without index and in one with an index (the offsets name
     * the index, the `when:` does not): groups {0}, {1}, {2, 3} */
    {"when_rank_in_repeats",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 128}\n"
     "  - repeat:\n      count: 3\n      steps:\n"
     "        - when: rank == 1\n          scale: {buf: 'x[rank*16 : 16]', by: 2}\n"
     "  - repeat:\n      count: 2\n      index: j\n      steps:\n"
     "        - when: rank > 1\n          scale: {buf: 'x[(rank + 4*j) * 8 : 8]', by: 3}\n"
     "        - all_reduce: {buf: 'x[j * 16 : 16]'}\n"
     "  - free: x\n",
     0, "cccc", false, true, 0},
    /* a `when:` of rank and a repeat's index varies inside the expansion: per rank */
    {"when_index_and_rank",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - repeat:\n      count: 4\n      index: j\n      steps:\n"
     "        - when: j == rank\n          scale: {buf: 'x[j*16 : 16]', by: 2}\n"
     "  - free: x\n",
     0, "cccc", false, false, 0},
    /* every rank's `when:` true: one shape, rank 0 the one base (as offsets alone) */
    {"when_rank_true_everywhere",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank < world\n    scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - free: x\n",
     0, "cccc", false, true, 0},
    /* a `when:` that divides by zero on rank 2: no shapes; per rank, rank 2's expansion error */
    {"when_fails_on_rank_2",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: 4 / (rank - 2) > 0\n    scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - free: x\n",
     -1, "", false, false, 0},
    /* the same `when:` where no rank reaches it (a repeat of none): no shapes, per rank, and
     * no error */
    {"when_fails_unreached",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - repeat:\n      count: 0\n      steps:\n"
     "        - when: 4 / (rank - 2) > 0\n          scale: {buf: x, by: 2}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - free: x\n",
     0, "cccc", false, false, 0},
    /* expect_error around a step of ranks 0-1 (groups {0, 1}, {2, 3}): ranks 2 and 3, base
     * and member, are told the wrapped step does not run there */
    {"when_rank_in_expect_error",
     "world: 4\nsteps:\n  - alloc: {buf: a, count: 1003, dtype: int64}\n"
     "  - alloc: {buf: b, count: 250, dtype: int64}\n  - scale: {buf: 'a[rank*16 : 16]', by: 2}\n"
     "  - expect_error:\n      name: nondivisible\n      error: size_mismatch\n"
     "      step: {when: rank < 2, reduce_scatter: {send: a, recv: b}}\n"
     "  - free: [a, b]\n",
     -1, "cccc", false, true, 0},
    /* a view past its buffer on rank 3 alone (48 + 20 > 64), a member of rank 1's group */
    {"when_rank_0_lint_error_in_member",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank == 0\n    compute: {reads: [x], time: 5}\n"
     "  - scale: {buf: 'x[rank*16 : 20]', by: 2}\n  - free: x\n",
     -1, "cccc", false, true, 3},
    /* an offset negative on rank 3 alone, a member of rank 1's group: its expansion error */
    {"when_rank_0_offset_fails_in_member",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank == 0\n    compute: {reads: [x], time: 5}\n"
     "  - scale: {buf: 'x[(2 - rank) * 16 : 16]', by: 2}\n  - free: x\n",
     -1, "", false, true, 2},
    /* the same offset negative on rank 2, the base of group {2, 3}: its expansion error */
    {"when_rank_offset_fails_in_base",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank < 2\n    compute: {reads: [x], time: 5}\n"
     "  - scale: {buf: 'x[(1 - rank) * 16 : 16]', by: 2}\n  - free: x\n",
     -1, "", false, true, 0},
    /* ---- subset members: a rank whose true `when:`s are all true on its base (rankshare.h:
     * the base's ops with some absent) ---- */
    /* rank 1 lacks the compute (a subset member of rank 0), ranks 2-3 are rank 0's shape, whose
     * lint walks rank 2 whole (its ops are not those lint last walked, rank 1's); z's alloc,
     * every rank's peak, comes after the absent op: op 4 on rank 0, op 3 on rank 1 */
    {"subset_rank_not_1",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - when: rank != 1\n    compute: {reads: [x], writes: [y], time: 5}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - alloc: {buf: z, count: 128}\n"
     "  - compute: {reads: [z], time: 7}\n"
     "  - all_reduce: {buf: y}\n  - free: [x, y, z]\n",
     0, "cccc", false, true, 1},
    /* interleaved: ranks 1 and 3 lack the compute (subset members of rank 0), rank 2 is rank
     * 0's shape; rank 3's absent ops are rank 1's, its lint walk not (rank 2's came between) */
    {"subset_rank_even",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: y, count: 64}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n"
     "  - when: rank % 2 == 0\n    compute: {reads: [x], writes: [y], time: 5}\n"
     "  - all_reduce: {buf: y}\n  - free: [x, y]\n",
     0, "cccc", false, true, 2},
    /* an alloc under the `when:`: the views after it resolve against it (plan.c), so every
     * rank that lacks it is a base, as before */
    {"subset_alloc_is_a_base",
     "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - when: rank == 0\n    alloc: {buf: t, count: 32}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2}\n  - when: rank == 0\n    free: t\n"
     "  - free: x\n",
     0, "cccc", false, true, 0},
    /* rank 0's compute on comm writes y, which the default stream then scales unordered: a
     * race on rank 0 alone; ranks 1-3 lack the compute and have none */
    {"subset_race_on_rank_0",
     "world: 4\nstreams: [comm]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - alloc: {buf: y, count: 64}\n"
     "  - when: rank == 0\n    compute: {reads: [x], writes: [y], stream: comm, time: 5}\n"
     "  - scale: {buf: 'y[rank*16 : 16]', by: 2}\n  - sync: device\n  - free: [x, y]\n",
     -1, "cccc", false, true, 3},
    /* rank 0's floor is at its compute, which reads all of a (1024 B) while b (64 B) is needed
     * after: 1088; the others never touch a: b alone, 64 (subset_numbers) */
    {"subset_floor_on_rank_0",
     "world: 4\nsteps:\n  - alloc: {buf: a, count: 256}\n  - alloc: {buf: b, count: 16}\n"
     "  - scale: {buf: 'b[rank*4 : 4]', by: 2}\n"
     "  - when: rank == 0\n    compute: {reads: [a, b], time: 3}\n"
     "  - free: a\n  - all_reduce: {buf: b}\n  - free: b\n",
     0, "cccc", false, true, 3},
    /* rank 0's compute without a time, on comm after the host waited 50 us: the others' time
     * model totals are rank 0's (rankshare.c's group_subset), compared with their own */
    {"subset_untimed_compute",
     "world: 4\nstreams: [comm]\nevents: [e]\nsteps:\n  - alloc: {buf: x, count: 1024}\n"
     "  - alloc: {buf: y, count: 64}\n  - compute: {reads: [x], time: 50}\n  - sync: device\n"
     "  - when: rank == 0\n    compute: {reads: [y], stream: comm}\n"
     "  - record: {event: e}\n  - wait: {event: e, stream: comm}\n"
     "  - scale: {buf: 'x[rank*16 : 16]', by: 2, stream: comm}\n"
     "  - all_reduce: {buf: y, stream: comm}\n  - sync: device\n  - free: [x, y]\n",
     0, "cccc", false, true, 3},
    /* rank 0's compute is comm's first op: on the others the copy after it is, the record
     * takes the copy's number and every later number of comm is one less (lint.c's moved
     * walk of the absent ops' buffers); ordered, free of races and hazards on every rank */
    {"subset_clocks_shift",
     "world: 4\nstreams: [comm]\nevents: [e, f]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - alloc: {buf: y, count: 64}\n"
     "  - when: rank == 0\n    compute: {reads: [x], writes: [y], stream: comm}\n"
     "  - copy: {src: x, dst: y, stream: comm}\n  - record: {event: e, stream: comm}\n"
     "  - wait: {event: e}\n  - scale: {buf: 'y[rank*16 : 16]', by: 2}\n"
     "  - record: {event: f}\n  - wait: {event: f, stream: comm}\n"
     "  - compute: {reads: [y], stream: comm}\n  - sync: device\n  - free: [x, y]\n",
     0, "cccc", false, true, 3},
    /* the same without the wait on e: the scale races the copy on every rank (each on its
     * slice), so the base's walk reported and the others take the whole walk */
    {"subset_clocks_shift_race",
     "world: 4\nstreams: [comm]\nevents: [e, f]\nsteps:\n  - alloc: {buf: x, count: 64}\n"
     "  - alloc: {buf: y, count: 64}\n"
     "  - when: rank == 0\n    compute: {reads: [x], writes: [y], stream: comm}\n"
     "  - copy: {src: x, dst: y, stream: comm}\n  - record: {event: e, stream: comm}\n"
     "  - scale: {buf: 'y[rank*16 : 16]', by: 2}\n"
     "  - record: {event: f}\n  - wait: {event: f, stream: comm}\n"
     "  - compute: {reads: [y], stream: comm}\n  - sync: device\n  - free: [x, y]\n",
     -1, "cccc", false, true, 3},
    /* an expect_error just before the `when:` (its wrapped step runs on every rank): subset
     * members, every rank's row passing */
    {"subset_after_expect_error",
     "world: 4\nsteps:\n  - alloc: {buf: a, count: 1003, dtype: int64}\n"
     "  - alloc: {buf: b, count: 250, dtype: int64}\n"
     "  - expect_error:\n      name: nondivisible\n      error: size_mismatch\n"
     "      step: {reduce_scatter: {send: a, recv: b}}\n"
     "  - when: rank == 0\n    compute: {reads: [a], writes: [b], time: 4}\n"
     "  - scale: {buf: 'a[rank*16 : 16]', by: 2}\n  - free: [a, b]\n",
     0, "cccc", false, true, 3},
    /* the `when:` inside the expect_error: the wrapped step's ops are what the marker refuses
     * and lint's row reads, so every rank without it is a base (plan_shapes_absent) */
    {"subset_inside_expect_error",
     "world: 4\nsteps:\n  - alloc: {buf: a, count: 1003, dtype: int64}\n"
     "  - alloc: {buf: b, count: 250, dtype: int64}\n"
     "  - scale: {buf: 'a[rank*16 : 16]', by: 2}\n"
     "  - expect_error:\n      name: nondivisible\n      error: size_mismatch\n"
     "      step: {when: rank == 0, reduce_scatter: {send: a, recv: b}}\n"
     "  - expect_error:\n      name: computed\n      error: size_mismatch\n"
     "      step: {when: rank == 0, compute: {reads: [a], time: 2}}\n"
     "  - free: [a, b]\n",
     -1, "cccc", false, true, 0},
    /* offsets_only_fsdp's group four times, the names reused as gen.c's training reuses them,
     * the third group twice the size: the record keeps a set's ranges once where they are those
     * last kept for its buffer (floor.c: SHARE_AGAIN), and the fourth group's must not be
     * taken for the second's past the third's */
    {"fsdp_groups_reuse_names",
     "world: 4\nstreams: [comm]\nevents: [done]\nsteps:\n" FSDP_GROUP(64, 16)
         FSDP_GROUP(64, 16) FSDP_GROUP(128, 32) FSDP_GROUP(64, 16),
     0, "cccc", true, false, 0},
};

static void run_pipeline_with(const char *path, bool keep, bool share_offsets, bool timeline,
                              pipeline_result *res, int *rc) {
    const char *files[1] = {path};
    pipeline_input in = {.files = files, .n_files = 1};
    pipeline_opts_default(&in.what);
    in.what.keep_plans = keep;
    in.what.share_offsets = share_offsets;
    in.what.timeline = timeline;
    *rc = pipeline_run(&in, res);
}

static void run_pipeline(const char *path, bool keep, bool share_offsets, pipeline_result *res,
                         int *rc) {
    run_pipeline_with(path, keep, share_offsets, true, res, rc);
}

static void same_prediction(const pred_rank *a, const pred_rank *b) {
    assert_int_equal(a->rank, b->rank);
    for (int v = 0; v < VIEW_COUNT; v++) {
        assert_int_equal(a->steady[v], b->steady[v]);
        assert_int_equal(a->peak[v], b->peak[v]);
        assert_int_equal(a->peak_op[v], b->peak_op[v]);
        assert_int_equal(a->exact[v], b->exact[v]);
        assert_int_equal(a->peak_lo[v], b->peak_lo[v]);
        assert_int_equal(a->peak_hi[v], b->peak_hi[v]);
        assert_int_equal(a->n_peak_live[v], b->n_peak_live[v]);
        if (a->n_peak_live[v])
            assert_memory_equal(a->peak_live[v], b->peak_live[v],
                                a->n_peak_live[v] * sizeof(uint32_t));
    }
    assert_int_equal(a->floor, b->floor);
    assert_int_equal(a->timed, b->timed);
    assert_true(a->step_us == b->step_us && a->comm_us == b->comm_us &&
                a->exposed_comm_us == b->exposed_comm_us);
    assert_int_equal(a->n_timeline, b->n_timeline);
    if (a->n_timeline)
        assert_memory_equal(a->timeline, b->timeline, a->n_timeline * sizeof *a->timeline);
}

static void same_op(const plan_op *x, const plan_op *y) {
    plan_op xo = *x, yo = *y;   /* the steps are of two loads: their marks, then the rest */
    assert_int_equal(xo.step->mark.line, yo.step->mark.line);
    assert_int_equal(xo.step->mark.col, yo.step->mark.col);
    xo.step = yo.step = NULL;
    assert_memory_equal(&xo, &yo, sizeof xo);
}

static void compact_plan_matches(const rank_plan *x, const rank_plan *y, const pred_rank *pr) {
    assert_non_null(x->kept_at);
    assert_int_equal(x->n_ops, y->n_ops);
    for (size_t k = 0; k < x->n_kept; k++) {   /* increasing, each a peak's step */
        assert_true(k == 0 || x->kept_at[k - 1] < x->kept_at[k]);
        bool named = false;
        for (int v = 0; v < VIEW_COUNT; v++)
            named |= pr->peak_op[v] == x->kept_at[k];
        assert_true(named);
        same_op(&x->ops[k], &y->ops[x->kept_at[k]]);
    }
    for (int v = 0; v < VIEW_COUNT; v++)
        if (pr->peak_op[v] < x->n_ops)
            same_op(plan_op_at(x, pr->peak_op[v]), &y->ops[pr->peak_op[v]]);
    assert_int_equal(x->summary, x->rank == 0);   /* what the report reads, rank 0's only */
    if (x->summary) {
        ml_coll a[COLL_COUNT], b[COLL_COUNT];
        uint32_t na = plan_first_colls(x, a), nb = plan_first_colls(y, b);
        assert_int_equal(na, nb);
        if (na)
            assert_memory_equal(a, b, na * sizeof *a);
        assert_int_equal(plan_timed_compute(x), plan_timed_compute(y));
    }
    assert_null(x->extra_views);
    assert_null(x->index_vals);
}

/* compact (a run the way `moved` says, its plans as `kept` says) against full (the
 * reference). */
static void same_outcome(const compact_case *c, const pipeline_result *full,
                         const pipeline_result *compact, bool moved, const char *kept) {
    assert_int_equal(compact->diags.items.n, full->diags.items.n);
    assert_int_equal(compact->diags.errors, full->diags.errors);
    for (size_t k = 0; k < full->diags.items.n; k++) {
        const ml_diag *x = &ML_VEC_AT(&compact->diags.items, ml_diag, k);
        const ml_diag *y = &ML_VEC_AT(&full->diags.items, ml_diag, k);
        assert_int_equal(x->level, y->level);
        assert_string_equal(x->text, y->text);
        assert_int_equal(x->rank, y->rank);
        assert_int_equal(x->mark.line, y->mark.line);
        assert_int_equal(x->mark.col, y->mark.col);
    }
    assert_int_equal(compact->items.n, 1);
    const pipeline_item *it = &ML_VEC_AT(&compact->items, pipeline_item, 0);
    const pipeline_item *ref = &ML_VEC_AT(&full->items, pipeline_item, 0);
    assert_false(it->shared);
    assert_int_equal(it->moved, moved);
    assert_int_equal(it->lint.n_rows, ref->lint.n_rows);
    for (size_t k = 0; k < ref->lint.n_rows; k++) {
        assert_string_equal(it->lint.rows[k].name, ref->lint.rows[k].name);
        assert_int_equal(it->lint.rows[k].pass, ref->lint.rows[k].pass);
        assert_string_equal(it->lint.rows[k].detail, ref->lint.rows[k].detail);
    }
    if (c->rc == 0) {   /* a failed run's predictions are not read */
        for (int r = 0; r < it->world; r++)
            same_prediction(&it->pred[r], &ref->pred[r]);
        assert_int_equal(it->n_expects, ref->n_expects);
        assert_int_equal(it->expect_failures, ref->expect_failures);
        for (size_t k = 0; k < ref->n_expects; k++) {
            assert_int_equal(it->expects[k].got, ref->expects[k].got);
            assert_int_equal(it->expects[k].pass, ref->expects[k].pass);
        }
    }
    for (int r = 0; r < (int)strlen(kept); r++) {
        const rank_plan *x = &it->plans[r], *y = &ref->plans[r];
        assert_int_equal(x->rank, r);
        assert_memory_equal(x->slots, y->slots,
                            (EXPR_SLOT_FIRST_LET + x->s->n_lets) * sizeof *x->slots);
        if (kept[r] == 'c') {
            compact_plan_matches(x, y, &it->pred[r]);
        } else {
            assert_null(x->kept_at);
            assert_int_equal(x->n_ops, y->n_ops);
            for (size_t i = 0; i < x->n_ops; i++)
                same_op(&x->ops[i], &y->ops[i]);
        }
    }
}

static void run_case(const compact_case *c) {
    print_message("case %s\n", c->name);
    char path[] = "/tmp/memlife-compact-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, c->yaml, strlen(c->yaml)), (ssize_t)strlen(c->yaml));
    close(fd);
    /* the reference: whole plans, every rank expanded on its own */
    pipeline_result full, full_moved, compact, per_rank;
    int rc_full, rc_full_moved, rc_compact, rc_per_rank;
    run_pipeline(path, true, false, &full, &rc_full);
    run_pipeline(path, true, true, &full_moved, &rc_full_moved);
    run_pipeline(path, false, true, &compact, &rc_compact);
    run_pipeline(path, false, false, &per_rank, &rc_per_rank);
    unlink(path);
    assert_int_equal(rc_full, c->rc);
    assert_int_equal(rc_full_moved, c->rc);
    assert_int_equal(rc_compact, c->rc);
    assert_int_equal(rc_per_rank, c->rc);
    char whole[16] = "";   /* whole plans keep every op, as many ranks as the case keeps */
    memset(whole, 'w', strlen(c->kept));
    same_outcome(c, &full, &full_moved, c->moved, whole);
    same_outcome(c, &full, &compact, c->moved || c->grouped, c->kept);
    same_outcome(c, &full, &per_rank, false, c->kept);
    assert_int_equal(ML_VEC_AT(&compact.items, pipeline_item, 0).subset_members, 0);
    pipeline_result_free(&full);
    pipeline_result_free(&full_moved);
    pipeline_result_free(&compact);
    pipeline_result_free(&per_rank);
    /* without the timeline, as predict and check run: subset members where the case has them,
     * against whole plans per rank without it */
    assert_int_equal(write(fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600), c->yaml,
                           strlen(c->yaml)),
                     (ssize_t)strlen(c->yaml));
    close(fd);
    run_pipeline_with(path, true, false, false, &full, &rc_full);
    run_pipeline_with(path, false, true, false, &compact, &rc_compact);
    /* MEMLIFE_NO_SHARE (rankshare.h): the reference pass, sharing on in the options */
    assert_int_equal(setenv("MEMLIFE_NO_SHARE", "1", 1), 0);
    run_pipeline_with(path, false, true, false, &per_rank, &rc_per_rank);
    assert_int_equal(unsetenv("MEMLIFE_NO_SHARE"), 0);
    unlink(path);
    assert_int_equal(rc_full, c->rc);
    assert_int_equal(rc_compact, c->rc);
    assert_int_equal(rc_per_rank, c->rc);
    same_outcome(c, &full, &compact, c->moved || c->grouped, c->kept);
    same_outcome(c, &full, &per_rank, false, c->kept);
    if (compact.items.n) {
        assert_int_equal(ML_VEC_AT(&compact.items, pipeline_item, 0).subset_members, c->subsets);
        assert_int_equal(ML_VEC_AT(&per_rank.items, pipeline_item, 0).subset_members, 0);
    }
    pipeline_result_free(&full);
    pipeline_result_free(&compact);
    pipeline_result_free(&per_rank);
}

static const compact_case *case_named(const char *name);

/* The numbers of two subset cases, worked out by hand (the cases' comments): the floor where
 * rank 0's compute is its op, and every rank's peak op after the absent op in its own indices
 * (the requested series' peak at z's alloc). */
static void subset_numbers(void **state) {
    (void)state;
    const struct {
        const char *name;
        uint64_t floor[4];
        size_t peak_op[4];        /* the requested series' */
    } nc[] = {
        {"subset_floor_on_rank_0", {1088, 64, 64, 64}, {1, 1, 1, 1}},
        {"subset_rank_not_1", {0, 0, 0, 0}, {4, 3, 4, 4}},
    };
    for (size_t k = 0; k < ML_ARRAY_LEN(nc); k++) {
        const compact_case *c = case_named(nc[k].name);
        char path[] = "/tmp/memlife-compact-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, c->yaml, strlen(c->yaml)), (ssize_t)strlen(c->yaml));
        close(fd);
        pipeline_result res;
        int rc;
        run_pipeline_with(path, false, true, false, &res, &rc);
        unlink(path);
        assert_int_equal(rc, 0);
        const pipeline_item *it = &ML_VEC_AT(&res.items, pipeline_item, 0);
        assert_int_equal(it->subset_members, c->subsets);
        for (int r = 0; r < 4; r++) {
            if (nc[k].floor[r])
                assert_int_equal(it->pred[r].floor, nc[k].floor[r]);
            assert_int_equal(it->pred[r].peak_op[VIEW_REQUESTED], nc[k].peak_op[r]);
        }
        pipeline_result_free(&res);
    }
}

static void compact_path_changes_nothing(void **state) {
    (void)state;
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++)
        run_case(&cases[k]);
}

/* A small generator for floor_short_way_generated (64-bit LCG, Knuth's constants). */
static uint64_t floor_rand(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return *s >> 33;
}

typedef struct floor_case floor_case;

/* Rank 0's record, then every rank's floor by the short way and floor_rank_after against
 * floor_rank (its whole pass on its own plan); fc: the case's expectations (NULL: the full
 * path only, the short way wherever it answers). Returns how many ranks took the short way. */
static unsigned floor_compare(const char *yaml, const floor_case *fc);

/* The floor's short way (floor.c: floor_rank_record on rank 0, floor_rank_shared on the
 * others) against each rank's whole backward pass (floor_rank), on plans expanded rank by rank.
 * short: whether the short way answers (else floor_rank_after takes the whole pass); floor and
 * at: each rank's floor and its op, worked out by hand (0: only compared with floor_rank). */
struct floor_case {
    const char *yaml;
    const char *short_way;   /* ranks 1-3: 's' the short way answers, 'f' the whole pass */
    uint64_t floor[4];
    size_t at[4];
};

static unsigned floor_compare(const char *yaml, const floor_case *fc) {
    pt_run r;
    pt_load(&r, yaml, 0);
    assert_int_equal(r.world, 4);
    sched_params params = {0};
    plan_offsets *po = plan_offsets_new(&r.plans[0], &params);
    if (!po)
        print_message("%s", yaml);
    assert_non_null(po);
    size_t n_vary;
    const size_t *vary = plan_offsets_ops(po, &n_vary);
    assert_true(n_vary > 0 || !fc);
    floor_forward *fw = floor_forward_new(&r.plans[0]);
    const sched_step *wrapped = NULL;   /* the op an expect_error wraps, as floor_rank */
    for (size_t i = 0; i < r.plans[0].n_ops; i++) {
        const plan_op *op = &r.plans[0].ops[i];
        bool refused = wrapped && op->step == wrapped;
        if (!refused)
            wrapped = op->kind == OP_EXPECT_BEGIN ? op->step->u.expect_error.step : NULL;
        floor_forward_op(fw, &r.plans[0], i, refused);
    }
    size_t at0, at_full;
    assert_int_equal(floor_rank_record(&r.plans[0], fw, vary, n_vary, &at0),
                     floor_rank(&r.plans[0], &at_full));
    assert_int_equal(at0, at_full);
    unsigned took = 0;
    for (int k = 0; k < 4; k++) {
        uint64_t full = floor_rank(&r.plans[k], &at_full), got = 0;
        size_t at = 0;
        if (fc && fc->floor[0]) {
            assert_int_equal(full, fc->floor[k]);
            assert_int_equal(at_full, fc->at[k]);
        }
        if (k > 0) {
            bool short_way = floor_rank_shared(&r.plans[k], fw, &got, &at);
            if (fc)
                assert_int_equal(short_way, fc->short_way[k - 1] == 's');
            if (short_way) {
                if (got != full || at != at_full)
                    print_message("rank %d: %s", k, yaml);
                assert_int_equal(got, full);
                assert_int_equal(at, at_full);
                took++;
            }
        }
        assert_int_equal(floor_rank_after(&r.plans[k], fw, &at), full);
        assert_int_equal(at, at_full);
    }
    floor_forward_free(fw);
    plan_offsets_free(po);
    pt_free(&r);
    return took;
}

/* Windows of the short way (floor.c: a varying op opens a buffer it reads or overwrites; a whole
 * view read or overwritten, an alloc or a free closes it), float32, world 4. */
static const char *const window_yaml[] = {
    /* mix: gen.c's group (tests/bench/gen.c, MIX_GROUP) as ranks 1-3 have it (no compute),
     * w 16 floats (64 B), g 4 (16 B), s = 4. Backward: the broadcast reads g: 16 (op 5, the
     * same op on every rank: coll_alike); the all_reduce reads w[4r, 4r + 4): 32 (op 4), and
     * opens w; the all_gather overwrites all of w (48 more) and reads g, needed already: 80
     * (op 3), and closes w (empty after it on every rank); the reduce_scatter reads w: 80, less
     * the rank's send slot, not needed: 64 (op 2). */
    "world: 4\nsteps:\n  - alloc: {buf: w, count: 16}\n  - alloc: {buf: g, count: 4}\n"
    "  - reduce_scatter: {send: w, recv: g, op: sum}\n  - all_gather: {send: g, recv: w}\n"
    "  - all_reduce: {buf: 'w[rank*4 : 4]', op: max}\n  - broadcast: {buf: g, root: 3}\n"
    "  - free: [w, g]\n",
    /* gap: the compute reads x[0, 16 B): 16 (op 4); the scale of x[16r, 16r + 16) adds
     * nothing on rank 0 (16) and 16 bytes elsewhere (32, op 3): D = 16 from there; the scale
     * of y (128 B) is a gap op: 144 on rank 0, 160 = 144 + D on the others (op 2); x's window
     * closes at its alloc (op 0). */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 16}\n  - alloc: {buf: y, count: 32}\n"
    "  - scale: {buf: y, by: 2}\n  - scale: {buf: 'x[rank*4 : 4]', by: 2}\n"
    "  - compute: {reads: ['x[0 : 4]']}\n  - free: [x, y]\n",
    /* never converges: the scale reads x[64r, 64r + 80) (past x's 256 bytes on rank 3 only);
     * the all_reduce reads all of x and closes the window: x whole after it on ranks 0-2, on
     * rank 3 x[0, 272): rank 3 takes the whole pass, floor 272 at the all_reduce (op 1); the
     * others 256 there. */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - all_reduce: {buf: x}\n"
    "  - scale: {buf: 'x[rank*16 : 20]', by: 2}\n  - free: x\n",
    /* tie: z's scale (48 B, op 8) is rest, before any window; the compute reads x[0, 16): 16
     * (op 4); the scale of x's slice opens x, D = 16 off rank 0 (op 3); the scale of y (16 B)
     * is a gap op: 32 on rank 0, 48 on the others (op 2), equal to z's: the first op, op 2,
     * is named there, op 8 on rank 0. */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 16}\n  - alloc: {buf: y, count: 4}\n"
    "  - scale: {buf: y, by: 2}\n  - scale: {buf: 'x[rank*4 : 4]', by: 2}\n"
    "  - compute: {reads: ['x[0 : 4]']}\n  - free: [x, y]\n  - alloc: {buf: z, count: 12}\n"
    "  - scale: {buf: z, by: 2}\n  - free: z\n",
    /* shard of rank in a window: the compute reads x[0, 16), z[0, 16) and y: 48 (op 5); the
     * scale of x's slice: 48 on rank 0, 64 elsewhere (D = 16, op 4); the reduce_scatter (op 3)
     * inside x's window reads z (48 more): 96 on rank 0, whose send slot z[0, 16) is needed
     * (no share), 112 elsewhere less the slot's 16: 96 on every rank, an event (rank 0's
     * share plus D would give 112, the share on rank 0's sets without D 80). */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 16}\n  - alloc: {buf: y, count: 4}\n"
    "  - alloc: {buf: z, count: 16}\n  - reduce_scatter: {send: z, recv: y}\n"
    "  - scale: {buf: 'x[rank*4 : 4]', by: 2}\n"
    "  - compute: {reads: ['x[0 : 4]', 'z[0 : 4]', y]}\n  - free: [x, y, z]\n",
    /* refused in a window: the reduce_scatter (16 floats into 5) is refused and touches x,
     * open from the scale: neither pass looks at it. Backward: the compute reads x[0, 16):
     * 16 (op 5); the scale (op 4): 16 on rank 0 (the first op with it), 32 elsewhere. */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 16}\n  - alloc: {buf: b, count: 5}\n"
    "  - expect_error: {name: e, error: size_mismatch,\n"
    "                   step: {reduce_scatter: {send: x, recv: b}}}\n"
    "  - scale: {buf: 'x[rank*4 : 4]', by: 2}\n"
    "  - compute: {reads: ['x[0 : 4]']}\n  - free: [x, b]\n",
    /* sweep with another window open: the compute reads y[0, 16), x[0, 16) and g: 48 (op 6);
     * x's slice scaled: 48 on rank 0, 64 elsewhere (op 5), x open; y's slice: 48 on rank 0,
     * 80 elsewhere (op 4, D = 32); the all_gather overwrites all of x (48 more on rank 0, 32
     * elsewhere; g needed already): 96 on rank 0, 112 elsewhere (op 3), a sweep: x closed
     * without its sets, its B rank 0's plus y's difference (16) after it. */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 16}\n  - alloc: {buf: y, count: 16}\n"
    "  - alloc: {buf: g, count: 4}\n  - all_gather: {send: g, recv: x}\n"
    "  - scale: {buf: 'y[rank*4 : 4]', by: 2}\n  - scale: {buf: 'x[rank*4 : 4]', by: 2}\n"
    "  - compute: {reads: ['y[0 : 4]', 'x[0 : 4]', g]}\n  - free: [x, y, g]\n",
    /* a sweep that fails: the scale reads x[64r, 64r + 80): 80 (op 3), x open; the all_gather
     * overwrites all of x (256 B) and reads g (64 B, not needed: NCCL's share): 80 + 64 + 176
     * - 64 = 256 on ranks 0-2 (op 2); on rank 3 x's bytes needed run past the view, to 272:
     * the whole pass, 80 + 64 + 192 - 64 = 272. */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: g, count: 16}\n"
    "  - all_gather: {send: g, recv: x}\n  - scale: {buf: 'x[rank*16 : 20]', by: 2}\n"
    "  - free: [x, g]\n",
    /* no sweep where rank 0's own bytes run past the view: as the case before with the slices
     * the other way round, x[192, 272) on rank 0: its all_gather 80 + 64 + 192 - 64 = 272
     * (op 2), x[256, 272) still needed after it; an event, not a sweep, closes x, empty after
     * it on the others: not rank 0's set, the whole pass, 256 (a sweep would give them rank
     * 0's 272 the short way) */
    "world: 4\nsteps:\n  - alloc: {buf: x, count: 64}\n  - alloc: {buf: g, count: 16}\n"
    "  - all_gather: {send: g, recv: x}\n  - scale: {buf: 'x[(3 - rank)*16 : 20]', by: 2}\n"
    "  - free: [x, g]\n",
};

static void floor_short_way(void **state) {
    (void)state;
    const floor_case fc[] = {
        /* shard_slot_read_on_rank_0 (float32). Backward: the compute reads x[0, 64) and y:
         * 128 at op 4. The reduce_scatter (op 3) adds x's other 192 bytes: 320, less NCCL's
         * in-place share, y's 64 bytes, where the rank's send slot x[64r, 64r + 64) is not
         * needed after it: on ranks 1-3 (256), not on rank 0 (320). The scale (op 2) reads a
         * slice of x, all needed already: 256, the first op with the ranks' 256. The scale
         * moves on each rank and is redone; the sets after it (x whole) are rank 0's. */
        {cases[4].yaml, "sss", {320, 256, 256, 256}, {3, 2, 2, 2}},
        /* offsets_only_fsdp: the all_gather's send slice lies in its recv, which it reads, and
         * the optimizer's slice is written, not read: each rank's sets after them are rank 0's */
        {cases[1].yaml, "sss", {0}, {0}},
        /* offsets_move_the_floor: the compute's read x[rank : 16] leaves other bytes needed on
         * each rank: x's window opens at the compute and stays open through the scale (a
         * slice) to the alloc, where both sets are empty: floors 128 on rank 0 and 192 on the
         * others, each rank's own sets through the window */
        {cases[3].yaml, "sss", {128, 192, 192, 192}, {1, 1, 1, 1}},
        /* offsets_index_and_in_place: rank 0's in-place flag differs; every op but the
         * allocs and frees varies, x's and y's windows stay open to their allocs */
        {cases[2].yaml, "sss", {0}, {0}},
        /* fsdp_groups_reuse_names: as offsets_only_fsdp, through sets kept once */
        {cases[ML_ARRAY_LEN(cases) - 1].yaml, "sss", {0}, {0}},
        {window_yaml[0], "sss", {80, 80, 80, 80}, {3, 3, 3, 3}},
        {window_yaml[1], "sss", {144, 160, 160, 160}, {2, 2, 2, 2}},
        {window_yaml[2], "ssf", {256, 256, 256, 272}, {1, 1, 1, 1}},
        {window_yaml[3], "sss", {48, 48, 48, 48}, {8, 2, 2, 2}},
        {window_yaml[4], "sss", {96, 96, 96, 96}, {3, 3, 3, 3}},
        {window_yaml[5], "sss", {16, 32, 32, 32}, {4, 4, 4, 4}},
        {window_yaml[6], "sss", {96, 112, 112, 112}, {3, 3, 3, 3}},
        {window_yaml[7], "ssf", {256, 256, 256, 272}, {2, 2, 2, 2}},
        {window_yaml[8], "fff", {272, 256, 256, 256}, {2, 2, 2, 2}},
    };
    assert_string_equal(cases[4].name, "shard_slot_read_on_rank_0");
    assert_string_equal(cases[1].name, "offsets_only_fsdp");
    assert_string_equal(cases[3].name, "offsets_move_the_floor");
    assert_string_equal(cases[2].name, "offsets_index_and_in_place");
    assert_string_equal(cases[ML_ARRAY_LEN(cases) - 1].name, "fsdp_groups_reuse_names");
    for (size_t c = 0; c < ML_ARRAY_LEN(fc); c++) {
        print_message("floor case %zu\n", c);
        floor_compare(fc[c].yaml, &fc[c]);
    }
}

/* Generated schedules (world 4, buffers a, b, c of 16 floats and d of 4; views that rank
 * moves, whole views, every kind of data op, refused ones, buffers freed and allocated
 * again): every rank's floor and its op by floor_rank_after equal the whole pass's, and so
 * do the short way's where it answers. A fixed seed: the same schedules on every run; the
 * count of ranks that took the short way is a floor on how much of it was exercised. */
static void floor_short_way_generated(void **state) {
    (void)state;
    static const char *const slice[] = {
        "X[rank*4 : 4]", "X[(3 - rank)*4 : 4]", "X[rank*2 : 4]", "X[8 : 4]",
        "X[(rank % 2)*8 : 4]", "X[0 : 4]", "X[rank*3 : 4]",
    };
    uint64_t seed = 21;
    unsigned short_ranks = 0;
    for (int n = 0; n < 400; n++) {
        char yaml[4096], view[4][64];
        int len = snprintf(yaml, sizeof yaml,
                           "world: 4\nsteps:\n  - alloc: {buf: a, count: 16}\n"
                           "  - alloc: {buf: b, count: 16}\n  - alloc: {buf: c, count: 16}\n"
                           "  - alloc: {buf: d, count: 4}\n");
        bool live[3] = {true, true, true};
        int ops = 6 + (int)(floor_rand(&seed) % 10);
        for (int k = 0; k < ops; k++) {
            int kind = (int)(floor_rand(&seed) % 10);
            int bi = (int)(floor_rand(&seed) % 3);
            char B = (char)('a' + bi);
            if (!live[bi]) {   /* a freed buffer comes back */
                len += snprintf(yaml + len, sizeof yaml - (size_t)len,
                                "  - alloc: {buf: %c, count: 16}\n", B);
                live[bi] = true;
                continue;
            }
            for (int v = 0; v < 4; v++) {
                const char *f = slice[floor_rand(&seed) % ML_ARRAY_LEN(slice)];
                char C = (char)('a' + (bi + 1 + v % 2) % 3);   /* another buffer */
                snprintf(view[v], sizeof view[v], "%.*s%c%s", 0, f, v < 2 ? B : C, f + 1);
            }
            const char *fmt[] = {
                "  - scale: {buf: '%1$s', by: 2}\n",
                "  - scale: {buf: %5$c, by: 2}\n",
                "  - compute: {reads: ['%1$s', '%3$s'], writes: ['%2$s']}\n",
                "  - compute: {reads: [%5$c, '%3$s']}\n",
                "  - all_gather: {send: d, recv: %5$c}\n",
                "  - all_gather: {send: '%5$c[rank*4 : 4]', recv: %5$c}\n",
                "  - reduce_scatter: {send: %5$c, recv: d}\n",
                "  - copy: {src: '%1$s', dst: '%3$s'}\n",
                "  - all_reduce: {buf: '%1$s'}\n",
                "  - broadcast: {buf: %5$c, root: 1}\n",
            };
            len += snprintf(yaml + len, sizeof yaml - (size_t)len, fmt[kind], view[0], view[1],
                            view[2], view[3], B);
            int extra = (int)(floor_rand(&seed) % 8);
            if (extra == 0) {
                len += snprintf(yaml + len, sizeof yaml - (size_t)len, "  - free: %c\n", B);
                live[bi] = false;
            } else if (extra == 1) {   /* refused: 16 floats do not scatter into 4 ranks of 16 */
                len += snprintf(yaml + len, sizeof yaml - (size_t)len,
                                "  - expect_error: {name: e%d, error: size_mismatch,\n"
                                "                   step: {reduce_scatter: {send: %c, recv: "
                                "'%c[0 : 16]'}}}\n",
                                k, B, (char)('a' + (bi + 1) % 3));
            }
        }
        for (int bi = 0; bi < 4; bi++)   /* most end freed: the live ones are needed whole */
            if ((bi == 3 || live[bi]) && floor_rand(&seed) % 4)
                len += snprintf(yaml + len, sizeof yaml - (size_t)len, "  - free: %c\n",
                                (char)('a' + bi));
        assert_true(len > 0 && (size_t)len < sizeof yaml);
        short_ranks += floor_compare(yaml, NULL);
    }
    /* 1200 today; 162 where no window opens (every diverged set falls back) */
    print_message("%u of 1200 ranks took the short way\n", short_ranks);
    assert_true(short_ranks >= 1100);
}

/* The first collectives leave out the op an expect_error refuses (NCCL never sees it): in the
 * case refused_first_collective the reduce_scatter after the marker is refused, the all_reduce
 * is the one collective issued; plan_compact_with takes that from a pass's plan_colls_acc, and
 * from the ops again where the pass did not see them all. */
static void first_colls_leave_out_the_refused(void **state) {
    (void)state;
    const compact_case *c = &cases[5];
    assert_string_equal(c->name, "refused_first_collective");
    pt_run r;
    pt_load(&r, c->yaml, 0);
    ml_coll order[COLL_COUNT];
    assert_int_equal(plan_first_colls(&r.plans[0], order), 1);
    assert_int_equal(order[0], COLL_ALL_REDUCE);
    plan_colls_acc acc = {0};
    for (size_t i = 0; i < r.plans[0].n_ops; i++)
        plan_first_colls_add(&acc, &r.plans[0].ops[i]);
    assert_int_equal(acc.n, 1);
    assert_int_equal(acc.order[0], COLL_ALL_REDUCE);
    size_t keep[] = {0};
    plan_compact_with(&r.plans[0], keep, 1, &acc, NULL);
    assert_int_equal(plan_first_colls(&r.plans[0], order), 1);
    assert_int_equal(order[0], COLL_ALL_REDUCE);
    plan_colls_acc partial = {0};   /* not every op: the ops answer */
    plan_first_colls_add(&partial, &r.plans[1].ops[0]);
    plan_compact_with(&r.plans[1], keep, 1, &partial, NULL);
    assert_int_equal(plan_first_colls(&r.plans[1], order), 1);
    assert_int_equal(order[0], COLL_ALL_REDUCE);
    pt_free(&r);
}

/* plan_compact: the big arrays go to the spare once, the kept ops are the ones named (repeats
 * and indices past the end dropped), and plan_expand writes the next rank into the spare. */
static void compact_and_recycle(void **state) {
    (void)state;
    pt_run r;
    pt_load(&r, "world: 2\nsteps:\n  - alloc: {buf: x, count: 8 * (rank + 1)}\n"
                "  - all_reduce: {buf: x}\n  - compute: {reads: [x], writes: [x]}\n  - free: x\n",
            0);
    assert_int_equal(r.plans[0].n_ops, 4);
    const plan_op *big = r.plans[0].ops;
    const plan_view *views = r.plans[0].extra_views;
    assert_non_null(views);
    plan_op third = r.plans[0].ops[2];
    plan_recycle spare = {0};
    size_t keep[] = {2, 99, 0, 2};
    plan_compact(&r.plans[0], keep, ML_ARRAY_LEN(keep), true, &spare);
    assert_ptr_equal(spare.ops, big);
    assert_ptr_equal(spare.extra, views);
    assert_int_equal(r.plans[0].n_kept, 2);
    assert_int_equal(r.plans[0].kept_at[0], 0);
    assert_int_equal(r.plans[0].kept_at[1], 2);
    assert_int_equal(r.plans[0].n_ops, 4);
    assert_memory_equal(plan_op_at(&r.plans[0], 2), &third, sizeof third);
    assert_int_equal(plan_op_at(&r.plans[0], 0)->kind, OP_ALLOC);
    assert_int_equal(r.plans[0].n_first_colls, 1);
    assert_int_equal(r.plans[0].first_colls[0], COLL_ALL_REDUCE);

    rank_plan next = {0};
    plan_limits lim = {.recycle = &spare};
    sched_params p = {0};
    assert_int_equal(plan_expand(r.s, 0, &p, 2, 1, &lim, &next, &r.d), 0);
    assert_ptr_equal(next.ops, big);     /* written into the recycled array */
    assert_null(spare.ops);
    assert_int_equal(next.n_ops, 4);
    assert_int_equal(next.ops[0].u.alloc.count, 16);   /* rank 1's: 8 * (1 + 1) */
    plan_free(&next);
    pt_free(&r);
}

/* The case of cases[] named `name`. */
static const compact_case *case_named(const char *name) {
    for (size_t k = 0; k < ML_ARRAY_LEN(cases); k++)
        if (!strcmp(cases[k].name, name))
            return &cases[k];
    fail_msg("no case %s", name);
    return NULL;
}

/* plan_shapes_new on rank 0's expansion: each rank's shape as its least rank of the same
 * `when:` truth values (worked out by hand from the case's `when:`s), or NULL where the
 * pipeline must go rank by rank. */
static void shapes_of_ranks(void **state) {
    (void)state;
    const struct {
        const char *name, *yaml;   /* a case of cases[], or yaml */
        int first[4];              /* {-1}: NULL */
    } sc[] = {
        {"when_rank_0_mix", NULL, {0, 1, 1, 1}},
        {"when_rank_odd_interleaved", NULL, {0, 1, 0, 1}},
        {"when_rank_below_last", NULL, {0, 0, 0, 3}},   /* two trees, one truth list each */
        {"when_rank_in_repeats", NULL, {0, 1, 2, 2}},  /* rank == 1, rank > 1 */
        {"when_rank_true_everywhere", NULL, {0, 0, 0, 0}},
        {"when_rank_in_expect_error", NULL, {0, 0, 2, 2}},
        {"when_index_and_rank", NULL, {-1}},           /* j == rank */
        {"when_fails_unreached", NULL, {-1}},          /* 4 / (rank - 2) on rank 2 */
        {"offsets_through_let", NULL, {-1}},           /* a let of rank */
        /* a send that a `when:` leaves to rank 2 */
        {"send", "world: 4\nsteps:\n  - alloc: {buf: a, count: 8}\n"
                 "  - when: rank == 2\n    send: {buf: a, peer: 3}\n  - free: a\n",
         {-1}},
        /* the truth value decides, not the value: `rank` and `rank + 1 > 1` agree */
        {"truth", "world: 4\nsteps:\n  - alloc: {buf: a, count: 8}\n"
                  "  - when: rank\n    scale: {buf: a, by: 2}\n"
                  "  - when: rank + 1 > 1\n    scale: {buf: a, by: 3}\n  - free: a\n",
         {0, 1, 1, 1}},
    };
    for (size_t c = 0; c < ML_ARRAY_LEN(sc); c++) {
        print_message("shapes case %s\n", sc[c].name);
        pt_run r;
        pt_load(&r, sc[c].yaml ? sc[c].yaml : case_named(sc[c].name)->yaml, 0);
        assert_int_equal(r.world, 4);
        sched_params params = {0};
        plan_shapes *sh = plan_shapes_new(&r.plans[0], &params);
        if (sc[c].first[0] < 0) {
            assert_null(sh);
        } else {
            assert_non_null(sh);
            for (int k = 0; k < 4; k++)
                assert_int_equal(plan_shape(sh, k), sc[c].first[k]);
        }
        plan_shapes_free(sh);
        pt_free(&r);
    }
}

/* A shape is a 64-bit mask: 64 distinct `when:` trees of rank are shapes, 65 are refused (per
 * rank). `when: rank != k` for k < n: rank r < n is false at k = r alone, so ranks 0-3 have
 * shapes of their own. */
static void shapes_up_to_64_whens(void **state) {
    (void)state;
    for (int n = 64; n <= 65; n++) {
        char yaml[8192];
        int len = snprintf(yaml, sizeof yaml, "world: 4\nsteps:\n  - alloc: {buf: a, count: 8}\n");
        for (int k = 0; k < n; k++)
            len += snprintf(yaml + len, sizeof yaml - (size_t)len,
                            "  - when: rank != %d\n    scale: {buf: a, by: 2}\n", k);
        snprintf(yaml + len, sizeof yaml - (size_t)len, "  - free: a\n");
        assert_true((size_t)len < sizeof yaml - 16);
        pt_run r;
        pt_load(&r, yaml, 0);
        sched_params params = {0};
        plan_shapes *sh = plan_shapes_new(&r.plans[0], &params);
        if (n == 64) {
            assert_non_null(sh);
            for (int k = 0; k < 4; k++)
                assert_int_equal(plan_shape(sh, k), k);
        } else {
            assert_null(sh);
        }
        plan_shapes_free(sh);
        pt_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compact_path_changes_nothing),
        cmocka_unit_test(compact_and_recycle),
        cmocka_unit_test(floor_short_way),
        cmocka_unit_test(floor_short_way_generated),
        cmocka_unit_test(first_colls_leave_out_the_refused),
        cmocka_unit_test(shapes_of_ranks),
        cmocka_unit_test(shapes_up_to_64_whens),
        cmocka_unit_test(subset_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
