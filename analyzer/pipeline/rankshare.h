/* SPDX-License-Identifier: MIT */
/* rankshare.h — how the ranks of one plan share an expansion: the one interface of sharing.
 *
 * The reference pass expands every rank alone (plan_expand), lints it and predicts it. A
 * million-op expansion per rank is most of the cost and most schedules make ranks alike, so
 * the pipeline asks this module, from rank 0's expansion, how the ranks group (rankshare_new),
 * and then, rank by rank, whether a rank joins the group whose base (an expanded rank) is in
 * the op array now (rankshare_joins). A member gets the base's ops rewritten in place into its
 * own (rankshare_member_ops), the base's prediction with its own floor (predict_rank_shared,
 * from what rankshare_base_floor recorded) and lint on what moved (rankshare_moved); anything
 * else is a base, expanded as the reference expands it. Each kind is exact:
 *
 * - IDENTICAL: no evaluated expression names rank, lets and in-place flags agree
 *   (plan_rank_invariant): rank 0's ops are every rank's, so its lint and prediction are too.
 * - OFFSETS: rank only in views' offsets with a written count (plan_offsets_new): every rank is
 *   rank 0's ops with its offsets and in-place flags evaluated again. Nothing the prediction
 *   reads but the floor reads an offset (rankshare.c lists what it reads); the floor redoes the
 *   moved ops (the vary set) from the base's record and follows a buffer whose needed bytes
 *   they move until an op reads or overwrites all of it (floor.c's windows); lint checks again
 *   only the buffers the moved views touch, with a coarse race check that takes each access as
 *   the whole buffer to show the rest race-free (lint_moved.c).
 * - GROUPS (compact plans only): rank also in `when:`s of rank, world and lets
 *   (plan_shapes_new). A run of consecutive ranks whose `when:`s come out the same (a shape)
 *   is its first rank's ops with their own offsets, as OFFSETS. A rank whose shape is within
 *   the base's (its true `when:`s all true on the base) joins too where the steps it lacks are
 *   computes without an alloc, outside an expect_error or group (plan_shapes_absent: every
 *   later view resolves alike) and the timeline and torch view are off: those ops are
 *   OP_ABSENT in the array, so op indices stay the base's (the floor record, lint's verdicts)
 *   until they leave for the report (plan_own_index); they are in the floor's vary set and
 *   lint's moved buffers (one enqueue less keeps every other clock comparison), and the time
 *   model is redone unless none of them takes time (rankshare.c says why that holds).
 * - ALONE: anything else (sends and receives, rank in a size or a count, a `when:` the shapes
 *   cannot take): every rank a base of its own, the reference pass itself.
 *
 * MEMLIFE_NO_SHARE=1 makes every plan ALONE (read here only): the reference for comparisons
 * (tests/cli/rankshare_reference.sh, and the unit tests test_rankshare.c, test_compact.c,
 * test_lint_moved.c). */
#ifndef MEMLIFE_RANKSHARE_H
#define MEMLIFE_RANKSHARE_H

#include "predict/analyzer.h"

typedef enum {
    RANKSHARE_IDENTICAL,
    RANKSHARE_OFFSETS,
    RANKSHARE_GROUPS,
    RANKSHARE_ALONE,
} rankshare_kind;

typedef struct rankshare rankshare;

/* How the ranks of rank0's plan (rank 0's expansion at pw's world) group. offsets: OFFSETS may
 * apply; groups: GROUPS may too (compact plans: one rank's ops in memory at a time); timeline:
 * every op's live bytes are kept (then no rank lacks ops of its base). */
rankshare *rankshare_new(const rank_plan *rank0, const sched_params *pw, bool offsets,
                         bool groups, bool timeline);
rankshare_kind rankshare_kind_of(const rankshare *rs);
void rankshare_free(rankshare *rs);

/* ---- Whole plans (every rank's ops kept) ----------------------------------------------------*/
/* Rank r's whole plan into out from rank 0's: borrowed (IDENTICAL, plan_share), a copy with r's
 * offsets (OFFSETS, plan_copy); 1 where r is to be expanded alone; -1 for an offset that fails
 * on r (its expansion error, in d). */
int rankshare_whole_rank(const rankshare *rs, const rank_plan *rank0, int r, rank_plan *out,
                         ml_diags *d);
/* OFFSETS: a copy of the ops whose offsets or in-place flags differ (*n of them; never NULL),
 * the floor's vary set once rs is gone. Else NULL. */
size_t *rankshare_vary_dup(const rankshare *rs, size_t *n);

/* ---- Groups (compact plans: one op array, a base's ops, its members' rewritten in place) ---*/
/* Rank r, expanded into plan, is the base now; the last base's group is gone. */
void rankshare_base(rankshare *rs, rank_plan *plan, int r);
/* What the base's prediction records for its members' floors (predict_rank_forward's vary and
 * keep), both NULL where no later rank can join it. Call once, right before that prediction. */
void rankshare_base_floor(rankshare *rs, const floor_vary **vary, floor_forward ***keep);
/* The base's floor facts for its members (predict_rank_shared). */
const floor_forward *rankshare_base_facts(const rankshare *rs);
int rankshare_base_rank(const rankshare *rs);
/* The array holds the base's own ops again (restore; false after a member's error, where the
 * array is left as it is) and its group is over. */
void rankshare_base_done(rankshare *rs, bool restore, ml_diags *d);

/* True when rank r (after the base, in rank order) is a member of the base's group. */
bool rankshare_joins(rankshare *rs, int r);
/* The member r's ops into pl: the base's array rewritten in place into r's (its offsets, and
 * its absent ops where it lacks some). An offset that fails is r's expansion error (in d): -1.
 * Its op indices are then the array's (absent ops stay in place, OP_ABSENT, so the base's floor
 * record and lint verdicts line up) until they leave for its report: plan_own_index maps one
 * to the rank's own, and plan_compact keeps its ops in its own indices. */
int rankshare_member_ops(rankshare *rs, int r, rank_plan *pl, ml_diags *d);
/* True when the member lacks ops of its base (a subset member). */
bool rankshare_member_subset(const rankshare *rs);
/* The member's time model totals into pr where they are known (its base's, copied with the
 * prediction, or an earlier member's with the same absent ops): true. False: the caller runs the
 * time model on the member's ops and hands the outcome to rankshare_member_timed. */
bool rankshare_member_time(rankshare *rs, pred_rank *pr);
void rankshare_member_timed(rankshare *rs, const pred_rank *pr, bool ok);
/* The ops whose views moved from the base's (*n of them, increasing): lint_walk_rank_moved's. */
const size_t *rankshare_moved(const rankshare *rs, size_t *n);

#endif
