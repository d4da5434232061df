/* SPDX-License-Identifier: MIT */
/* plan.h — one rank's schedule as a flat list of concrete operations.
 *
 * plan_expand evaluates every expression for one (world, rank), unrolls repeats, drops steps whose
 * `when:` is false and resolves views to element offsets and counts. Lint, the predictor and the
 * runtime's executor all walk this list, so they agree on what "step k" is; each op keeps a
 * pointer to the step it came from (for file:line:col) and its repeat iteration.
 *
 * Views are resolved against the most recent alloc of the buffer's name in program order; whether
 * that buffer is live at the op is lint's question, not expand's (a view of a name not allocated
 * before it gets count 0 unless written, and the schedule's dtype; lint reports it).
 * Repeats are unrolled; OP_EXPECT_BEGIN is followed by the op(s) of the step it wraps, or by none
 * when that step's `when:` dropped it on this rank. alloc.chunks is 0 when `chunks:` is absent. */
#ifndef MEMLIFE_PLAN_H
#define MEMLIFE_PLAN_H

#include "ir/sched.h"
#include "ir/comms.h"

typedef enum {
    OP_ALLOC, OP_FREE, OP_RELEASE, OP_COLL, OP_SYNC, OP_RECORD, OP_WAIT, OP_INIT, OP_COPY,
    OP_SCALE, OP_COMPUTE, OP_CHECK, OP_REGION_BEGIN, OP_REGION_END,
    OP_EXPECT_BEGIN,   /* the next op (a collective, copy...) must fail with step->u.expect_error.error */
    OP_RECORD_STREAM,  /* PyTorch's allocator: the buffer is used on a stream (u.record_stream) */
    OP_EMPTY_CACHE,    /* PyTorch's allocator: torch.cuda.empty_cache() */
    OP_GROUP_BEGIN, OP_GROUP_END,   /* around a group's send/recv ops (ncclGroupStart/End) */
    /* An op of a base that the rank being processed lacks (plan_absent_apply), in place so that
     * op indices stay the base's; it does nothing. Only subset members have one (analyzer/pipeline/rankshare.h). */
    OP_ABSENT,
    OP_KIND_COUNT
} plan_op_kind;
extern const char *const plan_op_names[OP_KIND_COUNT];

/* Field order and the narrow enums below keep a view at 24 bytes and an op at 88 (not 32 and
 * 120): a plan is a million ops per rank, written once and read by lint, the predictor, the
 * floor and the executor, so its size is most of their cost; for that a collective does not
 * store NCCL's count, which its views give (plan_coll_count). Read and write the fields as
 * usual; only their addresses cannot be taken. */
typedef struct {
    uint64_t offset;       /* elements */
    uint64_t count;        /* elements */
    uint32_t buf;          /* SYM_BUFFER; SCHED_NO_SYM for none */
    ml_dtype dtype : 8;    /* the buffer's dtype at its latest alloc */
    bool whole;            /* written without [offset : count] */
} plan_view;

/* The most chunks one alloc may ask for: a release keeps one per rank (at most 65536), and the
 * device view and the backends keep and walk one handle per chunk. */
#define PLAN_MAX_CHUNKS 65536u

typedef struct {
    plan_op_kind kind;
    const sched_step *step;   /* source step (mark, names, init, check...) */
    uint32_t iter;            /* innermost repeat iteration, 0 outside repeats */
    uint32_t region;          /* innermost enclosing region symbol, SCHED_NO_SYM if none */
    union {
        struct { uint32_t buf; uint64_t bytes; uint64_t count; ml_dtype dtype; uint32_t chunks; } alloc;
        struct { uint32_t buf; ml_mark mark; } free;          /* one op per freed name */
        struct { uint32_t buf; uint32_t keep; } release;
        struct { uint32_t buf; uint32_t stream; } record_stream;
        struct {
            plan_view send, recv;  /* NCCL's count is one of them: plan_coll_count */
            int root;              /* send/recv: the peer */
            uint32_t stream;
            ml_coll coll : 8;
            ml_redop op : 8;
            bool in_place;         /* send and recv in one buffer at NCCL's in-place offset */
            uint16_t comm;         /* communicator (sched.comms); root, peer and the in-place
                                      offset are ranks within its group (plan_comm_rank) */
        } coll;
        struct { sched_sync_kind kind; uint32_t stream, event; } sync;
        struct { uint32_t event, stream; } event;            /* OP_RECORD, OP_WAIT */
        struct { plan_view dst; plan_view src; } init;        /* step->u.init.init or alloc's init;
                                                                 src: the resolved INIT_COPY source */
        struct { plan_view src, dst; uint32_t stream; } copy;
        struct { plan_view buf; int64_t factor, den; uint32_t stream; } scale;   /* x factor/den, den > 0 */
        struct { uint32_t stream, first_view, n_reads, n_writes; } compute; /* views in extra_views */
        struct { plan_view a, b; int64_t roll_a, roll_b; } check;
        struct { uint32_t region; } region;
        struct { sched_error_code error; } expect;
    } u;
} plan_op;
/* NCCL's count of a collective or send/recv op (coll.h): the side that is not multiplied by
 * world, recv's for reduce_scatter, send's for the others. */
static inline uint64_t plan_coll_count(const plan_op *op) {
    return ml_coll_count_of(op->u.coll.coll, op->u.coll.send.count, op->u.coll.recv.count);
}
/* The size of the group of a collective's communicator that `rank` is in (the world's size
 * for the world; 0 where rank is in no group of it), and rank's rank in it (-1: none); its
 * member `local` as a world rank (-1: none). */
static inline int plan_comm_size(const ml_comms *c, int world, uint32_t comm, int rank) {
    return c && comm ? ml_comms_size(c, comm, rank) : world;
}
static inline int plan_comm_rank(const ml_comms *c, uint32_t comm, int rank) {
    return c && comm ? ml_comms_local(c, comm, rank) : rank;
}
static inline int plan_comm_global(const ml_comms *c, uint32_t comm, int rank, int local) {
    return c && comm ? ml_comms_global(c, comm, rank, local) : local;
}
/* The name of what an op does, for messages and labels: the collective's name for OP_COLL
 * ("reduce_scatter"), else the op kind's ("copy", "compute"). */
const char *plan_op_name(const plan_op *op);

/* The torch view's configuration for this rank: the schedule's `torch:` key with the command's
 * --torch-conf / --torch-limit over it. on: the torch view is predicted. */
typedef struct {
    bool on;
    const char *conf;         /* PYTORCH_CUDA_ALLOC_CONF text; NULL or "": the defaults */
    bool conf_from_file;      /* conf came from the schedule (conf_mark is where its text starts) */
    ml_mark conf_mark;
    uint64_t limit;           /* 0: none (set_per_process_memory_fraction times total memory) */
    uint64_t capacity;        /* 0: unlimited; what cudaMalloc can give (no garbage collection) */
    const uint64_t *addresses; /* the schedule's torch addresses (n_addresses; NULL: none) */
    size_t n_addresses;
} plan_torch;

/* Ops [lo, hi) of a plan, with how many absent ops come before lo (plan_absent_apply). */
typedef struct {
    size_t lo, hi, before;
} plan_range;

/* An occurrence of a step whose `when:` names rank and was true (plan_expand): the tree and
 * the ops [lo, hi) it expanded to; guarded: inside an expect_error or a group. */
typedef struct {
    const expr *when;
    size_t lo, hi;
    bool guarded;
} plan_when_at;

typedef struct {
    const sched *s;
    int plan_index;
    int world, rank;
    /* The schedule's communicators at this world (sched_comms; the schedule owns them); NULL
     * where the world is the only one. */
    const ml_comms *comms;
    plan_torch torch;
    int64_t *slots;           /* sched_n_slots values: lets evaluated (i and index slots 0) */
    int64_t *index_vals;      /* per op, s->n_index repeat-index values; NULL without indices */
    plan_op *ops;
    size_t n_ops;
    /* For compute steps: their views, resolved, in one array (ops point in by index). */
    plan_view *extra_views;
    size_t n_extra_views;
    bool borrowed;            /* ops and extra_views belong to another rank's plan (plan_share) */
    bool has_p2p;             /* a send or recv op is among the ops */
    size_t cap_ops, cap_extra_views;   /* capacities, for plan_compact's spare */
    /* A compact plan (plan_compact): ops holds only the ops kept_at[0..n_kept) names, in that
     * (increasing) order; n_ops is still the expansion's count. NULL: every op is in ops. */
    size_t *kept_at;
    size_t n_kept;
    /* What a compact plan still answers about all its ops (plan_first_colls, plan_timed_compute),
     * taken before the ops went. */
    ml_coll first_colls[COLL_COUNT];
    uint32_t n_first_colls;
    /* and with communicators (comms != NULL), plan_comm_first_uses' answer (owned) */
    struct plan_comm_use *comm_uses;
    uint32_t n_comm_uses;
    bool timed_compute;
    bool summary;             /* plan_compact took them */
    bool timed_known;         /* timed_compute is the expansion's (plan_expand set it) */
    /* The occurrences of `when:`s that name rank (plan_when_at, in op order; NULL: none), for
     * plan_shapes_absent; an array of the ops' owner. */
    plan_when_at *when_at;
    size_t n_when_at;
    /* A rank processed on another rank's ops with some absent (plan_absent_apply): their
     * ranges, increasing (the array is the plan_absent's), and how many ops they hold; NULL:
     * none. */
    const plan_range *absent;
    size_t n_absent, absent_ops;
} rank_plan;

/* An op array given back by plan_compact, for the next plan_expand to write into: at a million
 * ops it is ~100 MB whose pages are in, and a fresh one would fault every page again. */
typedef struct {
    plan_op *ops;
    size_t cap_ops;
    plan_view *extra;         /* and the compute views' array */
    size_t cap_extra;
} plan_recycle;

typedef struct {
    size_t max_ops;           /* unrolled ops per rank; default 50,000,000 */
    plan_recycle *recycle;    /* non-NULL with ops: expand into these (taken, *recycle zeroed) */
} plan_limits;

/* Expands plan plan_index of s for (world, rank). Errors (a failed expression, a negative size,
 * a repeat beyond max_ops) go to d with the step's mark. Returns 0 or -1. */
int plan_expand(const sched *s, int plan_index, const sched_params *p, int world, int rank,
                const plan_limits *limits, rank_plan *out, ml_diags *d);
void plan_free(rank_plan *p);

/* True when every rank of p->world would expand p's plan to exactly p's ops, so that one
 * expansion serves every rank (plan_share). p is an expansion with params (any rank). The test
 * is exact, not a guess: plan.c says why. False for world 1 (nothing to share). */
bool plan_rank_invariant(const rank_plan *p, const sched_params *params);
/* out becomes rank `rank`'s plan: src's ops and views, borrowed (out is usable while src is;
 * plan_free leaves borrowed arrays alone, so the two are freed in any order), with slots of its
 * own (slots[EXPR_SLOT_RANK] = rank, for what runs later: data patterns, checks). */
void plan_share(const rank_plan *src, int rank, rank_plan *out);

/* Ranks whose ops are p's but for views' offsets and in-place flags (plan.c says when that
 * holds): rank 0's expansion, the offsets evaluated again for each rank. */
typedef struct plan_offsets plan_offsets;
/* The views of p (a whole expansion with params, any rank; world > 1) whose offsets name rank,
 * and its same-buffer collectives; NULL where some other value of an op may depend on the rank
 * (then every rank expands on its own). */
plan_offsets *plan_offsets_new(const rank_plan *p, const sched_params *params);
/* Rewrites p's ops, the expansion o was made from or a plan_share of it, into `rank`'s: those
 * views' offsets evaluated with p's slots (a let has one value on every rank) and rank, and
 * the collectives' in-place flags. An offset that fails is the error rank's own plan_expand
 * reports (in d), and -1; p's ops are then part rewritten. Returns 0 or -1. */
int plan_offsets_apply(const plan_offsets *o, rank_plan *p, int rank, ml_diags *d);
/* The ops plan_offsets_apply rewrites (op indices, increasing, each once; *n of them): every op
 * whose views' offsets or in-place flag may differ across the ranks. The array is o's. */
const size_t *plan_offsets_ops(const plan_offsets *o, size_t *n);
void plan_offsets_free(plan_offsets *o);
/* Ranks that differ by `when:`s that name rank (and world and lets, no repeat index), besides
 * views' offsets and in-place flags: ranks of one shape (the truth values of those `when:`s)
 * expand to the same ops but for those values (plan.c says why). NULL where some other value of
 * an op may depend on the rank, a send or recv is among the steps, more than 64 distinct such
 * `when:`s are, or one fails to evaluate on some rank (then every rank expands on its own). p:
 * a whole expansion with params, any rank; world > 1. */
typedef struct plan_shapes plan_shapes;
plan_shapes *plan_shapes_new(const rank_plan *p, const sched_params *params);
/* The least rank of rank's shape: ranks r and q have one shape iff plan_shape(r) == plan_shape(q). */
int plan_shape(const plan_shapes *sh, int rank);
/* plan_offsets_new for base, a whole expansion of some rank with sh's params: the entries that
 * rewrite it into every rank of its shape. */
plan_offsets *plan_shapes_offsets(plan_shapes *sh, const rank_plan *base);
void plan_shapes_free(plan_shapes *sh);
/* The expansion at other values of one let, where the let reaches the ops only through allocs'
 * sizes (plan_shapes.c says when that holds and why it is exact): fit's probes expand and lint
 * once. NULL where some other value of an op, or of what is evaluated beside the plan, may
 * depend on the let (then each value expands on its own). p: a whole expansion with params;
 * let: the let's index in p->s. */
typedef struct plan_sizes plan_sizes;
plan_sizes *plan_sizes_new(const rank_plan *p, const sched_params *params, int let);
/* The sized allocs' bytes and counts at slots (sched_eval_lets' values for another value of
 * the let), evaluated on p (the expansion z was made from, or a copy of it), kept in z for
 * plan_sizes_apply. -1 where one fails to evaluate (plan_expand reports the error). */
int plan_sizes_eval(plan_sizes *z, const rank_plan *p, const int64_t *slots);
/* Rewrites p (the expansion z was made from, a plan_share or plan_copy of it, or one rewritten
 * before) into the expansion at slots, whose plan_sizes_eval succeeded: the lets' slots and the
 * sized allocs' bytes and counts. */
void plan_sizes_apply(const plan_sizes *z, rank_plan *p, const int64_t *slots);
/* How many allocs plan_sizes_apply rewrites (for tests). */
size_t plan_sizes_count(const plan_sizes *z);
void plan_sizes_free(plan_sizes *z);
/* Ranks of a subset shape. A rank r whose `when:`s that are true are all true on a base b
 * (mask(r) within mask(b)) expands to b's ops without those of the occurrences true on b and
 * false on r (plan_when_at), but for the offsets and in-place flags po rewrites; plan.c says
 * when that is exact and why. The absent ops (increasing ranges), for r, of b's expansion; NULL
 * where r is not of a subset shape (or of b's own), or the case is not the exact one: an
 * absent op that is not a compute, inside an expect_error or group, or among po's ops. */
typedef struct plan_absent plan_absent;
plan_absent *plan_shapes_absent(const plan_shapes *sh, const rank_plan *base,
                                const plan_offsets *po, int rank);
/* True when some op of a is a compute with a `time:` or `flops:` (else each takes no time). */
bool plan_absent_timed(const plan_absent *a);
/* True when rank's shape is a strict subset of base's (plan_shapes_absent may then apply). */
bool plan_shape_within(const plan_shapes *sh, int rank, int base);
/* True when a is plan_shapes_absent's answer for rank too (the same base, the same trees
 * absent). */
bool plan_absent_fits(const plan_absent *a, const plan_shapes *sh, int rank);
/* The ops of base's occurrences of `when:`s that name rank (plan_when_at: those some rank
 * may lack), merged with ops[0..n) (increasing) into a new array (*out_n of them, increasing;
 * free it). */
size_t *plan_when_ops(const rank_plan *base, const size_t *ops, size_t n, size_t *out_n);
/* Makes a's ops OP_ABSENT in p (b's ops or a plan_share of them) and gives p the ranges; _restore
 * makes them computes again (every absent op was one) and p's ranges NULL. */
void plan_absent_apply(const plan_absent *a, rank_plan *p);
void plan_absent_restore(const plan_absent *a, rank_plan *p);
void plan_absent_free(plan_absent *a);
/* The index op i of p (p->ops[i], not absent) has in the rank's own expansion: i less the
 * absent ops before it. SIZE_MAX stays SIZE_MAX. */
size_t plan_own_index(const rank_plan *p, size_t i);
/* out becomes a copy of src (whole, not compact) for `rank` with arrays of its own, for
 * plan_offsets_apply to rewrite: what a rank keeps whose plan is read or run later. */
void plan_copy(const rank_plan *src, int rank, rank_plan *out);

/* Keeps only ops keep[0..n_keep) of p (indices in any order, repeats and ones >= n_ops
 * ignored; with absent ops (plan_absent_apply) the array's indices, the kept ones then given
 * their own, plan_own_index, and n_ops the rank's own count): for a rank whose lint and
 * prediction are done and whose report names a few of its ops (the peaks' steps). The big
 * array goes to *spare when spare is non-NULL and empty, else it is freed (the compute views'
 * array with it); index values are dropped. A borrowed p (plan_share) leaves the arrays to
 * their owner and owns its kept ops from then on. Read a compact plan's ops with plan_op_at,
 * and nothing that runs or walks them. summary: take what plan_first_colls and
 * plan_timed_compute answer first (a pass over every op; a compact plan without it must not be
 * asked). */
void plan_compact(rank_plan *p, const size_t *keep, size_t n_keep, bool summary,
                  plan_recycle *spare);
const plan_op *plan_op_at_kept(const rank_plan *p, size_t i);
/* The collective kinds p issues, in the order of their first use (ops refused inside
 * expect_error left out: NCCL never sees them). Returns how many, into order. */
uint32_t plan_first_colls(const rank_plan *p, ml_coll order[COLL_COUNT]);
/* A collective kind's first use on one communicator. */
typedef struct plan_comm_use {
    uint16_t comm;
    uint8_t coll;              /* ml_coll */
} plan_comm_use;
/* plan_first_colls per communicator: the (communicator, collective) pairs p issues, in the
 * order of their first use (NCCL's memory per communicator depends on it: commmodel.h). Returns
 * how many into *out, an array the caller frees (NULL when none). */
uint32_t plan_comm_first_uses(const rank_plan *p, plan_comm_use **out);
/* The same answer gathered by a pass that walks the ops anyway (the prediction's): zero it,
 * then plan_first_colls_add every op in order; complete when ops == the plan's n_ops. */
typedef struct {
    ml_coll order[COLL_COUNT];
    uint32_t n;
    bool seen[COLL_COUNT];
    bool skip;                /* the op after an expect_error's marker */
    size_t ops;               /* ops added */
} plan_colls_acc;
static inline void plan_first_colls_add(plan_colls_acc *a, const plan_op *op) {
    a->ops++;
    if (a->skip) {   /* refused before NCCL sees it */
        a->skip = false;
        return;
    }
    if (op->kind == OP_EXPECT_BEGIN)
        a->skip = true;
    else if (op->kind == OP_COLL && !a->seen[op->u.coll.coll]) {
        a->seen[op->u.coll.coll] = true;
        a->order[a->n++] = op->u.coll.coll;
    }
}
/* plan_compact with its summary, taking the first collectives from colls where it is complete
 * for p (a pass over every op less), else from p's ops. */
void plan_compact_with(rank_plan *p, const size_t *keep, size_t n_keep,
                       const plan_colls_acc *colls, plan_recycle *spare);
/* True when a compute op of p has a time (`time:` or `flops:`). */
bool plan_timed_compute(const rank_plan *p);
/* Op i (< n_ops) of p, compact (only a kept op) or not. */
static inline const plan_op *plan_op_at(const rank_plan *p, size_t i) {
    return p->kept_at ? plan_op_at_kept(p, i) : &p->ops[i];
}

/* Writes the repeat-index values op was expanded with into slots (sched_n_slots of them), for
 * what is evaluated when the op runs: data patterns, closed forms of checks. */
void plan_op_slots(const rank_plan *p, const plan_op *op, int64_t *slots);

/* Views of a compute op: reads first, then writes. */
const plan_view *plan_compute_views(const rank_plan *p, const plan_op *op, uint32_t *n_reads,
                                    uint32_t *n_writes);

/* A view a data op touches. read: its old values matter (a send side, a copy's source, an
 * in-place receive side, a scale, a check's operands, a compute's reads). write: the op stores
 * into it. overwrite: it stores into the whole view whatever was there (a collective's receive
 * side, an init's and a copy's destination; a scale, whose old values it reads first). A
 * compute's writes are writes but not overwrites: compute stands for user work with no data
 * effect, which may accumulate (FSDP's gradient fold). */
typedef struct {
    const plan_view *v;
    bool read, write, overwrite;
} plan_access;
enum { PLAN_FIXED_ACCESSES = 2 };

/* The views op touches: a collective, copy, scale, init or check into fixed[0..2); a compute's
 * views into dyn (an ml_vec of plan_access, refilled). *out points at the ones filled. Returns
 * how many; 0 for ops that touch no data (alloc, free, sync, ...). */
size_t plan_op_accesses(const rank_plan *p, const plan_op *op,
                        plan_access fixed[PLAN_FIXED_ACCESSES], const plan_access **out,
                        ml_vec *dyn);
/* The accesses of a compute op whose views are v[0..n_reads + n_writes) (plan_compute_views),
 * as plan_op_accesses gives them, into dyn; *out points at them. Returns how many. */
size_t plan_compute_accesses(const plan_view *v, uint32_t n_reads, uint32_t n_writes,
                             const plan_access **out, ml_vec *dyn);

/* Bytes of a view and of the buffer it points into. */
static inline uint64_t plan_view_bytes(const plan_view *v) {
    return v->count * ml_dtypes[v->dtype].size;
}

/* Where an op came from, for messages: the step's mark. */
static inline ml_mark plan_op_mark(const plan_op *op) { return op->step->mark; }

/* Where the k-th view of op (plan_op_accesses' order) is written: the view's own mark, for a
 * diagnostic at the offending character; for the init of an alloc, the alloc's buffer name. */
ml_mark plan_view_mark(const sched *s, const plan_op *op, uint32_t k);

/* The k-th view of op as written (its offset and count expressions, for errors inside the
 * brackets: sched_view_expr_mark); NULL where it is not a written view (an alloc's own buffer,
 * a closed-form check operand). */
const sched_view *plan_sched_view(const plan_op *op, uint32_t k);

#endif
