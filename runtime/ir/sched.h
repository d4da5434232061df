/* SPDX-License-Identifier: MIT */
/* sched.h — the schedule IR: what the loader builds from YAML and every other module reads.
 *
 * The IR keeps the schedule as written: steps with unevaluated expressions (they may depend on
 * world, rank and let-names) and the 1-based line:col of every node. plan.h turns it into one flat
 * list of concrete operations per rank. Everything lives in the schedule's arena.
 * docs/schedule.md is the language reference; this header is its data model. */
#ifndef MEMLIFE_SCHED_H
#define MEMLIFE_SCHED_H

#include "base/util.h"
#include "ir/expr.h"
#include "ir/coll.h"
#include "ir/views.h"

/* Names (buffers, streams, events, regions) are interned per kind: a symbol is an index into
 * sched.names[kind]. Stream 0 is always "default". */
typedef enum { SYM_BUFFER, SYM_STREAM, SYM_EVENT, SYM_REGION, SYM_PLAN_RESULT, SYM_KIND_COUNT } sched_sym_kind;
#define SCHED_DEFAULT_STREAM 0u
#define SCHED_NO_SYM UINT32_MAX

typedef struct {
    const char **names;   /* arena strings */
    ml_mark *first_mark;  /* where each name first appears (declaration for streams/events) */
    uint32_t n, cap;
} sched_symtab;

/* A view of a buffer: `buf`, or `buf[offset : count]` (elements of the buffer's dtype). */
typedef struct {
    uint32_t buf;         /* SYM_BUFFER symbol */
    /* Where the offset and count texts start (the byte after '[' and after ':'), in columns
     * after mark, for errors at their tokens (sched_view_expr_mark); 0: not known (the text is
     * not the source character for character, or is on another line), errors go to mark. In the
     * padding after buf: a view stays 32 bytes. */
    uint16_t offset_col, count_col;
    expr *offset;         /* NULL: 0 */
    expr *count;          /* NULL: to the end of the buffer */
    ml_mark mark;
} sched_view;

/* Data written into a buffer at alloc (`init:`) or by an `init` step. */
typedef enum {
    INIT_NONE,            /* contents undefined (the runtime may poison them) */
    INIT_RANK_IOTA,       /* x[i] = 100*rank + i, the chapter's pattern */
    INIT_CONST,           /* x[i] = value */
    INIT_EXPR,            /* x[i] = expression of i, rank, world, lets */
    INIT_COPY,            /* copy of another view (element count must match) */
    INIT_RANDOM,          /* seeded: same (seed, rank, i) gives the same value on every backend */
    INIT_IDENTITY         /* the reduction op's identity: SUM 0, PROD 1, MAX dtype min, MIN dtype max */
} sched_init_kind;

typedef struct {
    sched_init_kind kind;
    ml_redop op;          /* IDENTITY (next to kind: no padding) */
    expr *value;          /* CONST value, EXPR body, RANDOM seed */
    /* COPY: the source view, an arena object of its own; NULL for every other kind. By pointer:
     * inline, its 32 bytes made alloc the biggest member of a step (every step 120 bytes, not
     * 112), for the copies that few inits are. Unlike init by pointer (tried before: an arena
     * object per alloc with any init), only a copy pays an allocation. */
    sched_view *src;
    ml_mark mark;
} sched_init;

/* One side of a data check. */
typedef enum {
    OPD_VIEW,             /* a buffer view, optionally with its rank-major shards rolled */
    OPD_EXPR,             /* closed form: element i equals expression of i (rank, world, lets) */
    OPD_REDUCED_PATTERN   /* init pattern reduced over all ranks with op, computed independently */
} sched_operand_kind;

typedef struct {
    sched_operand_kind kind;
    sched_view view;      /* OPD_VIEW */
    expr *roll_shards;    /* OPD_VIEW: NULL or k: shards of size n/world rolled by k (torch.roll dims=0) */
    expr *value;          /* OPD_EXPR */
    sched_init pattern;   /* OPD_REDUCED_PATTERN (RANK_IOTA, CONST, EXPR, RANDOM) */
    ml_redop op;          /* OPD_REDUCED_PATTERN */
    uint16_t comm;        /* `comm:`: the pattern is reduced over the members of the rank's
                             group, the shards rolled are 1/size of it; SCHED_WORLD_COMM */
    ml_mark mark;
} sched_operand;

typedef enum { CHECK_EQUAL, CHECK_NOT_EQUAL } sched_check_kind;

typedef struct {
    const char *name;     /* contract name shown in results: "exact-sum-equivalence" */
    sched_check_kind kind;
    sched_operand a, b;
    double rtol, atol;    /* floats: |a-b| <= atol + rtol*|b|; both 0 means bitwise */
} sched_check;

/* Named errors a step can be expected to raise (expect_error). */
typedef enum {
    ERR_NONE,
    ERR_SIZE_MISMATCH,    /* collective count contract broken (e.g. RS send != world * recv) */
    ERR_DTYPE_MISMATCH,
    ERR_BAD_OP,           /* reduction not valid for the dtype */
    ERR_OUT_OF_BOUNDS,    /* view outside its buffer */
    ERR_BAD_INPLACE,      /* buffers overlap but not at NCCL's in-place offset */
    ERR_COUNT_
} sched_error_code;
extern const char *const sched_error_names[ERR_COUNT_];   /* "size_mismatch", ... */

typedef enum {
    ST_ALLOC, ST_FREE, ST_RELEASE, ST_COLL, ST_SYNC, ST_RECORD, ST_WAIT, ST_REPEAT, ST_REGION,
    ST_INIT, ST_COPY, ST_SCALE, ST_COMPUTE, ST_CHECK, ST_EXPECT_ERROR, ST_GROUP,
    ST_RECORD_STREAM, ST_EMPTY_CACHE,   /* PyTorch's allocator ops: no-ops for the other views */
    ST_KIND_COUNT
} sched_step_kind;
extern const char *const sched_step_names[ST_KIND_COUNT];  /* schedule keys: "alloc", ... */

typedef enum { SYNC_DEVICE, SYNC_STREAM, SYNC_EVENT } sched_sync_kind;

_Static_assert(COLL_COUNT <= UINT8_MAX && RED_COUNT <= UINT8_MAX,
               "a step's collective and reduction op are a byte each (sched_step.u.coll)");

/* Communicators. The world is communicator 0, always there; `comms:` names others, each a
 * partition of the ranks into groups (MPI_Comm_split, ncclCommSplit, torch's new_group and
 * DeviceMesh): by dimensions of the `mesh:` (the ranks that differ only along them), by a color
 * expression (the ranks with one color form a group, ordered by key then rank; a negative color
 * is no group), or by an explicit list of ranks (one group, in the order given). A collective's
 * `comm:` names the communicator its counts, roots, peers and in-place offsets refer to: sizes
 * are the group's, ranks are ranks within the group (NCCL's convention). */
#define SCHED_WORLD_COMM 0u
#define SCHED_MAX_COMMS 256u       /* named communicators, the world included */
#define SCHED_MAX_MESH_DIMS 8u

typedef struct sched_comms_cache sched_comms_cache;

typedef struct {
    const char *name;
    expr *size;           /* over world and the lets; not rank */
    ml_mark mark;
} sched_mesh_dim;

typedef enum { COMM_WORLD, COMM_MESH, COMM_COLOR, COMM_RANKS } sched_comm_kind;

typedef struct {
    const char *name;     /* "world" for communicator 0 */
    sched_comm_kind kind;
    uint32_t dims;        /* COMM_MESH: bit k: mesh dimension k is along the group */
    expr *color, *key;    /* COMM_COLOR: over world, rank and the lets; key NULL: rank */
    expr **ranks;         /* COMM_RANKS: the members in order (world and the lets) */
    uint32_t n_ranks;
    bool share;           /* `share: true`: split with the parent's resources shared (NCCL's
                             splitShare); the memory views count it once */
    ml_mark mark;         /* the name's */
} sched_comm;

typedef struct sched_step sched_step;
struct sched_step {
    sched_step_kind kind;
    ml_mark mark;         /* the step's key (e.g. the 'alloc' of `- alloc: {...}`) */
    expr *when;           /* NULL: every rank; else runs where the expression is non-zero */
    union {
        /* Fields ordered so that no padding is between them: the biggest member sets every
         * step's size (a million-step schedule is a million steps). */
        struct {
            uint32_t buf;
            ml_dtype dtype;       /* the schedule's dtype unless given */
            expr *bytes;          /* exactly one of bytes / count is set */
            expr *count;          /* elements of dtype */
            expr *chunks;         /* NULL: one allocation; else N physical chunks (VMM) */
            /* Inline (32 bytes: a copy's source view is by pointer). By pointer, with the kind
             * kept beside it, a million training steps took 4.9 MB less RSS but loaded 0.7-0.9%
             * slower (one arena object per alloc with init, its pages faulted one by one). */
            sched_init init;
            uint32_t stream;      /* the current stream at the allocation: PyTorch's allocator
                                     keeps a pool per stream (the torch view); default 0 */
        } alloc;
        struct {
            uint32_t *bufs;
            uint32_t n;
            ml_mark *marks;       /* one per name */
        } free;
        struct {
            uint32_t buf;
            expr *keep;           /* index of the chunk to keep; all others are released */
        } release;
        struct {
            uint32_t buf;         /* tensor.record_stream(stream) */
            uint32_t stream;
        } record_stream;
        struct {
            /* An ml_coll and an ml_redop in a byte each, the communicator in two, so that stream
             * fits beside them: 80
             * bytes, not 88, and with the copy source by pointer (sched_init.src) no member is
             * bigger, so every step is 104 bytes, not 112. */
            uint8_t coll;             /* ml_coll */
            uint8_t op;               /* ml_redop: has_op collectives; default sum */
            uint16_t comm;            /* communicator (sched.comms), SCHED_WORLD_COMM */
            uint32_t stream;
            sched_view send, recv;    /* `buf:` sets both to the same view (always for p2p) */
            expr *root;               /* has_root collectives; send/recv: the peer */
        } coll;
        struct {
            sched_sync_kind kind;
            uint32_t stream;      /* SYNC_STREAM */
            uint32_t event;       /* SYNC_EVENT */
        } sync;
        struct {
            uint32_t event, stream;
        } event;                  /* ST_RECORD and ST_WAIT */
        struct {
            expr *count;
            sched_step *steps;
            uint32_t n;
            int32_t index_slot;   /* the slot of `index:` (sched_n_slots), -1 without one */
            const char *index;    /* the index's name, NULL without one */
            ml_mark index_mark;
        } repeat;
        struct {
            uint32_t name;        /* SYM_REGION */
            sched_step *steps;
            uint32_t n;
        } region;
        struct {
            sched_step *steps;    /* send and recv steps: ncclGroupStart ... ncclGroupEnd */
            uint32_t n;
        } group;
        struct {
            sched_view dst;
            sched_init init;
        } init;
        struct {
            sched_view src, dst;
            uint32_t stream;
        } copy;
        struct {
            sched_view buf;
            expr *factor;         /* multiply every element by factor/den (a transformation
                                     between phases); `by: A/B` is the exact fraction A/B */
            expr *den;            /* NULL: 1 */
            const char *by;       /* `by:` as written (a decimal has no expression text) */
            ml_mark by_mark;      /* where its text starts, for errors of its value */
            uint32_t stream;
        } scale;
        struct {
            sched_view *reads, *writes;   /* stands for user computation: uses buffers */
            uint32_t n_reads, n_writes;
            uint32_t stream;
            expr *time_us;        /* NULL or its duration in microseconds (the time model) */
            expr *flops;          /* NULL or its floating-point operations (time = flops / rate) */
        } compute;
        sched_check *check;       /* by pointer: inline it would make every step about 300
                                     bytes, not 104 (a 1M-step schedule is 1M steps) */
        struct {
            sched_error_code error;
            sched_step *step;     /* exactly one step, which must fail with `error` */
            const char *name;     /* contract name for the result rows */
        } expect_error;
    } u;
};


/* Where the parts of a step are written, for diagnostics at the offending character: the buffer
 * name of an alloc, release or record_stream, and the text of its expressions. Views and free
 * names keep their own marks (sched_view.mark, free.marks). A side table in source order, not a
 * field of every step: steps stay 104 bytes and the table, 20 bytes a part, is read only when a
 * diagnostic is made (sched_part_mark). */
typedef enum {
    SCHED_AT_BUF,         /* alloc / release / record_stream: the buffer's name */
    SCHED_AT_SIZE,        /* alloc: the bytes or count expression */
    SCHED_AT_CHUNKS,      /* alloc: chunks */
    SCHED_AT_KEEP,        /* release: keep */
    SCHED_AT_ROOT,        /* collectives: root; send, recv: peer */
    SCHED_AT_WHEN,        /* any step: when */
    SCHED_AT_COUNT,       /* repeat: count */
    SCHED_AT_EVENT,       /* record, wait, sync: the event's name */
    SCHED_AT_OP,          /* collectives: the reduction op */
    SCHED_AT_ERROR,       /* expect_error: the expected error's name */
    SCHED_AT_PART_COUNT_
} sched_at_part;

typedef struct {
    ml_mark step;         /* the step's mark (its key): steps move while the loader grows them */
    ml_mark at;           /* where the part's text starts */
    uint16_t part;        /* sched_at_part */
    bool linear;          /* the text is the source, character for character, on one line (no
                             fold, escape or ''): byte k of it is k characters after `at` */
} sched_at;

typedef struct {
    ml_mem_view view;
    expr *rank;           /* NULL: every rank */
    expr *steady, *peak;  /* either may be NULL */
    ml_mark mark;
} sched_expect;

typedef struct {
    const char *name;
    expr *value;
    ml_mark mark;
} sched_let;

typedef struct {
    const char *name;     /* "" for a schedule with top-level steps */
    sched_step *steps;
    uint32_t n;
    sched_expect *expects;    /* plan-level expectations, if any, else the schedule's apply */
    uint32_t n_expects;
    ml_mark mark;
} sched_plan;

/* `torch: {conf: "expandable_segments:True,...", limit: BYTES}`. The conf is checked by the
 * caller's checker (sched_load_limits.torch_conf_check: the loader does not know the allocator). */
typedef struct {
    bool present;
    const char *conf;     /* PYTORCH_CUDA_ALLOC_CONF syntax; NULL: not given */
    ml_mark conf_mark;    /* where the string's text starts */
    expr *limit;          /* NULL: no limit */
    expr *capacity;       /* NULL: the device's memory is unlimited (what cudaMalloc can give) */
    uint64_t *addresses;  /* where the cudaMalloc segments lie, in the order made; NULL: none */
    size_t n_addresses;
    ml_mark mark;         /* the `torch` key */
} sched_torch;

/* `time_us: N` beside a step's key: when a recording saw the step, in microseconds on the
 * recording's clock (memlife import writes a memory snapshot's event times there); the trace
 * draws the step at it. Nothing else reads it. */
typedef struct {
    ml_mark step;         /* the step's mark (sched_step.mark) */
    int64_t us;
} sched_time;

/* The largest world a schedule may have, from `world:` or --world alike (1M ranks predict in
 * about a second where the ranks share one shape). */
#define SCHED_WORLD_MAX (1 << 20)

typedef struct {
    const char *file;
    const char *name;
    const char *about;
    int world;            /* default world size (`world:`); 0 when the file sets none */
    ml_mark world_mark;
    expr *requires_world; /* `requires: {world: EXPR}`: non-zero for the worlds the file needs; or NULL */
    ml_mark requires_mark;
    ml_dtype dtype;       /* default dtype (float32 unless given) */
    sched_let *lets;
    uint32_t n_lets;
    sched_expect *expects;
    uint32_t n_expects;
    sched_plan *plans;    /* one plan named "" unless the file has `plans:` */
    uint32_t n_plans;
    int sweep_let;        /* index into lets, -1 when no sweep */
    expr **sweep_values;
    uint32_t n_sweep;
    sched_torch torch;    /* the `torch:` key: PyTorch's caching allocator (the torch view) */
    sched_mesh_dim *mesh; /* `mesh:`, outermost dimension first (ranks are row-major over it) */
    uint32_t n_mesh;
    ml_mark mesh_mark;
    sched_comm *comms;    /* comms[0] is the world; n_comms >= 1 */
    uint32_t n_comms;
    struct sched_comms_cache *comms_cache;   /* ir/comms.c's resolutions, by world (owned) */
    /* `link: {alpha_us:, busbw_gbps:}`: the time model's link (analyzer/predict/timemodel.h);
     * NULL: its default. Expressions over the lets (world, rank allowed). */
    expr *link_alpha_us, *link_busbw_gbps;
    ml_mark link_mark;
    sched_symtab syms[SYM_KIND_COUNT];
    sched_at *ats;        /* the parts' marks (sched_at_part), in source order */
    size_t n_ats;
    sched_time *times;    /* the steps' `time_us:`, in source order (so by step mark) */
    size_t n_times;
    uint64_t n_steps_total;   /* steps as written (repeat bodies counted once) */
    uint32_t n_index;     /* deepest nesting of repeats with `index:`: slots after the lets */
    ml_arena *arena;
} sched;

/* Loader (runtime/load.c). Reads a file (or a memory buffer, for tests and the fuzzer), appends
 * diagnostics to d. Returns NULL when any error was found; nothing is half-built then. */
typedef struct {
    size_t max_depth;         /* nesting of repeat/region/expect_error; default 64 */
    size_t max_name_len;      /* default 128 */
    size_t max_steps;         /* written steps; default 20,000,000 */
    /* Checks `torch: {conf:}`: 0, or -1 with *offset the byte in text of the offending key or
     * value and msg the error. NULL: not checked at load (the predictor checks it again). */
    int (*torch_conf_check)(const char *text, size_t *offset, char *msg, size_t len);
    int dtype;                /* --dtype T: ml_dtype + 1 replaces the file's `dtype:` (the
                                 default of every alloc without its own); 0: the file's */
} sched_load_limits;

sched *sched_load_file(const char *path, const sched_load_limits *limits, ml_diags *d);
/* The torch_conf_check of loads whose limits give none (the CLI sets the allocator's parser
 * once, so that every command's loads check `torch: {conf:}` at its own column). */
void sched_load_set_torch_conf_check(int (*check)(const char *text, size_t *offset, char *msg,
                                                   size_t len));
sched *sched_load_buffer(const char *name, const char *data, size_t len,
                         const sched_load_limits *limits, ml_diags *d);
void sched_free(sched *s);

const char *sched_sym_name(const sched *s, sched_sym_kind kind, uint32_t sym);

/* Where part `part` of step st is written; st->mark when the step has no such part. A binary
 * search for the first part after the step's key, then a forward scan: a step's own parts come
 * after its key, those of a repeat's body in between. */
ml_mark sched_part_mark(const sched *s, const sched_step *st, sched_at_part part);
/* Where byte `offset` of the part's text (text: the part as parsed, expr_text) is: exact for a
 * linear part (sched_at), else the part's start. For an evaluation error at its token. */
ml_mark sched_part_offset_mark(const sched *s, const sched_step *st, sched_at_part part,
                               const char *text, size_t offset);

/* Where byte `offset` of a view's offset (count false) or count (count true) expression text
 * is, exact when the loader knew the columns (sched_view.offset_col), else the view's mark.
 * offset SCHED_FIRST_TOKEN: the text's first character that is not a space, for an error of
 * the whole value (negative, outside the buffer). */
#define SCHED_FIRST_TOKEN ((size_t)-1)
ml_mark sched_view_expr_mark(const sched_view *v, bool count, size_t offset);

/* Let-values for one (world, rank): evaluates lets in order into slots[EXPR_SLOT_FIRST_LET + k].
 * overrides: `--set NAME=VALUE` strings, parsed as expressions over world, rank and earlier lets.
 * Unknown override names are errors. slots must hold EXPR_SLOT_FIRST_LET + n_lets values. */
typedef struct {
    const char **set;      /* "NAME=VALUE" */
    size_t n_set;
    int world;             /* > 0 overrides the file's world */
    const char *torch_conf;   /* --torch-conf: replaces `torch: {conf:}`; NULL: the file's */
    bool has_torch_limit;     /* --torch-limit given: replaces `torch: {limit:}` */
    uint64_t torch_limit;
    bool has_torch_capacity;  /* --torch-capacity given: replaces `torch: {capacity:}` */
    uint64_t torch_capacity;
    int dtype;             /* --dtype: ml_dtype + 1 overrides the file's default dtype; 0: none */
} sched_params;
/* How a file is loaded for these params: the default limits, with --dtype. */
static inline sched_load_limits sched_load_with(const sched_params *p) {
    sched_load_limits lim = {0};
    lim.dtype = p ? p->dtype : 0;
    return lim;
}
int sched_eval_lets(const sched *s, const sched_params *p, int world, int rank, int64_t *slots,
                    ml_diags *d);
/* Slots an expression of s may read: world, rank, i, the lets, then one per nesting level of
 * repeat indices (a repeat's index_slot). Every slots array handed to expr_eval for a step's
 * expression holds this many. */
static inline size_t sched_n_slots(const sched *s) {
    return EXPR_SLOT_FIRST_LET + (size_t)s->n_lets + s->n_index;
}
/* True with *us where st has a `time_us:` (a binary search of s->times). */
bool sched_step_time(const sched *s, const sched_step *st, int64_t *us);

/* The world a run uses: p->world, else the file's, else an error; an error too where the file's
 * `requires: {world: EXPR}` is 0 at that world ("schedule needs world >= 2 (world is 1)"). */
int sched_world(const sched *s, const sched_params *p, ml_diags *d);

/* --plan NAME: the index of the plan of s called name. Returns it, or -1 with a diagnostic that
 * lists the plans: "no plan 'x' in this schedule (plans: direct, naive)", or, for a file without
 * `plans:`, "no plan 'x': this schedule has no 'plans:', only one list of 'steps:'". */
int sched_plan_named(const sched *s, const char *name, ml_diags *d);

#endif
