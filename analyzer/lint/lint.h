/* SPDX-License-Identifier: MIT */
/* lint.h — lint: the static checks of a schedule's rank plans, and their options.
 *
 * Like the predictor, lint works from the IR (sched.h) and expanded rank plans (plan.h) alone.
 * lint_int.h is the internal header its files share. */
#ifndef MEMLIFE_LINT_H
#define MEMLIFE_LINT_H

#include "ir/plan.h"

/* Use before alloc, use after free, double free, alloc of a live name, free of a never-allocated
 * name; views inside their buffer; collective size contracts (coll.h); same dtype on both sides;
 * reductions valid for the dtype; in-place offsets exactly NCCL's (overlap elsewhere is an error);
 * cross-rank consistency (same collectives in the same order with the same counts, dtypes, ops
 * and roots, else the first diverging step on each rank; on a communicator other than the world,
 * within each of its groups, whose sizes and ranks the contracts read too, and a rank in none of
 * its groups may not issue one; collectives on several communicators in an order that lets
 * every group meet); lifetime hazards (a free of a buffer
 * that an unsynchronized op on another stream may still use); races (two accesses of
 * overlapping elements on different streams, one a write, unordered by stream order,
 * record/wait and host syncs: lint_race.c). expect_error steps: the wrapped op
 * must raise the named error on every rank; that is then a passing contract row, not an error. */
typedef struct {
    uint32_t off;          /* bit k: lint_classes[k] is let through (`--no-lint NAME`); default 0 */
} lint_options;

/* What `--no-lint NAME` lets through to the runtime, so that the runtime's own checks can be
 * exercised: one row per class, naming the diagnostic codes it silences (lint_classes.c). Every
 * class but cross-rank and hazards is one the host runtime refuses itself, at the step. */
typedef struct {
    const char *name;              /* "double-free" */
    const char *const *codes;      /* NULL-terminated diagnostic codes: "double_free" */
    const char *about;             /* for usage texts */
} lint_class;
extern const lint_class lint_classes[];
extern const size_t lint_class_count;
/* Lets class `name` through. Returns 0, or -1 when there is no such class. */
int lint_options_disable(lint_options *o, const char *name);
/* False when a disabled class silences diagnostic code `code`. */
bool lint_code_on(const lint_options *o, const char *code);
/* "cross-rank, hazards, use-after-free, ..." into buf. */
void lint_class_list(char *buf, size_t len);

typedef struct {
    const char *name;      /* contract name */
    int rank;
    bool pass;
    char detail[240];
    const sched_step *step;
} lint_contract_row;

typedef struct {
    lint_contract_row *rows;   /* one per expect_error step per rank */
    size_t n_rows;
} lint_result;

void lint_options_default(lint_options *o);
/* plans[0..world) are the expanded plans of every rank. Returns the number of errors added. */
size_t lint_plans(const rank_plan *plans, int world, const lint_options *o, lint_result *r,
                  ml_diags *d);
void lint_result_free(lint_result *r);
/* lint_plans one rank at a time, for a caller that holds one rank's plan at a time (the
 * pipeline's compact path): lint_walk_new, then lint_walk_rank for ranks 0, 1, ... world - 1 in
 * that order, each plan needed only during its call; then lint_walk_end with every rank's plan
 * (cross-rank messages read rank 0's ops, where lint_walk_needs_rank0; send/recv pairing every
 * rank's ops, where any rank_plan.has_p2p: a caller that compacted them expands them again). cross: compare
 * the ranks' collective sequences (lint_plans leaves it out for ranks sharing one op array).
 * lint_walk_end frees w and returns the errors added to d. */
typedef struct lint_walk lint_walk;
lint_walk *lint_walk_new(const sched *s, int world, const lint_options *o, lint_result *r);
void lint_walk_rank(lint_walk *w, const rank_plan *p);
/* lint_walk_rank of a rank r whose ops are, in the very array the last lint_walk_rank walked
 * (rank b < r's: rank 0, or a group's first rank), b's but for the views' offsets and in-place
 * flags of ops moved_ops[0..n) (plan_offsets_apply; plan_offsets_ops): the same findings, rows
 * and collective sequence, where b's walk reported nothing, by checking only the buffers those
 * views name (lint.c says why that is exact); otherwise, or where unsure, the whole walk (the
 * base stays b). */
void lint_walk_rank_moved(lint_walk *w, const rank_plan *p, const size_t *moved_ops, size_t n);
/* How many of w's lint_walk_rank_moved calls took the short way to the end (for tests). */
int lint_walk_moved_ranks(const lint_walk *w);
size_t lint_walk_end(lint_walk *w, const rank_plan *plans, bool cross, ml_diags *d);
void lint_walk_free(lint_walk *w);   /* without reporting (lint_walk_end frees it too) */
/* True when lint_walk_end's cross-rank messages will read rank 0's ops (a rank diverges). */
bool lint_walk_needs_rank0(const lint_walk *w);

/* The first error a single collective op raises by the count/dtype/op/in-place contracts, or
 * ERR_NONE; detail gets the message text. Shared by lint and by expect_error handling. */
/* Where a broken contract is, for the diagnostic's mark: a view of the call, its root (or peer),
 * or its op (where the collective does not reduce; LINT_AT_STEP: the op, else the step's key). */
/* LINT_AT_KEY: the step's key (a rank outside the collective's communicator). comms: the plan's
 * (rank_plan.comms; NULL: the world is the only communicator). */
typedef enum { LINT_AT_SEND, LINT_AT_RECV, LINT_AT_ROOT, LINT_AT_STEP, LINT_AT_KEY } lint_contract_at;
sched_error_code lint_coll_contract(const plan_op *op, const ml_comms *comms, int world, int rank,
                                    char *detail, size_t len, lint_contract_at *at);

#endif
