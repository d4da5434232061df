/* SPDX-License-Identifier: MIT */
/* exec.c — the executor: walks a rank plan and drives a backend (rt.h).
 *
 * Before any collective (or copy) reaches the backend, the executor checks it with its own code:
 * views inside live buffers, the same dtype on both sides, the count contract of the collective
 * table (ReduceScatter send = world x recv, AllGather recv = world x send, the others equal), a
 * reduction valid for the dtype, and overlap only at NCCL's in-place offset. This is deliberately
 * not lint's code: lint predicts from the plan, the executor refuses at run time, and an
 * `expect_error` contract passes only when the runtime itself refuses. Such a step is then never
 * issued, on any rank.
 *
 * Requested bytes are counted through rt_account_* only, with the bytes the executor asked for;
 * a sample follows every op (one per op, in op order, after the baseline), so the measured
 * timeline lines up with the prediction op by op. */
#include "exec/rt.h"
#include "ir/data.h"
#include "exec/inject.h"
#include "exec/watch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Bytes moved through host memory per block in inits, scales and checks. Each rank has two such
 * blocks, allocated once and reused by every init and check (no malloc, no fresh pages per op);
 * 256 KiB stays in a core's L2 while the backend copies it out. */
#define EXEC_BLOCK_BYTES ((uint64_t)256 << 10)

typedef struct {
    ml_dtype *buf_dtype;     /* per buffer symbol, from its latest alloc */
    uint32_t *kept_chunk;    /* per buffer symbol: UINT32_MAX, or the chunk a release kept */
    uint64_t *recorded;      /* per buffer symbol: streams record_stream named (bit k: stream k;
                                bit 63: stream 63 or above), synchronized before its free */
    uint32_t *chunks;        /* per buffer symbol: its latest alloc's `chunks:` (0 when absent) */
    int64_t *slots;          /* this rank's slots, scratch (i is overwritten) */
    size_t n_slots;
    int64_t **rank_slots;    /* [world] every rank's slots, for reduce-over-ranks; lazily */
    long n_allocs;           /* allocs issued by this rank (fault injection) */
    size_t inject_next;      /* first op not yet offered to rt_inject_before_op */
    void *failure_table;     /* seq_desc[world] of the verdict that ended the run, or NULL */
    void *block[2];          /* EXEC_BLOCK_BYTES each, lazily: reused by every init and check */
} exec_state;

void rt_options_default(rt_options *o) {
    memset(o, 0, sizeof *o);
    o->backend = "host";
    o->allocator = "cuda";
    o->timeout_s = 60.0;
    o->verify_sequence = true;
    o->data = true;
    o->fail_alloc_k = -1;
    o->fail_alloc_rank = -1;
    o->kill_rank = o->kill_step = -1;
    o->delay_rank = o->delay_step = -1;
    o->delay_at_init = false;
}

bool rt_sched_splits_share(const sched *s) {
    bool all = s->n_comms > 1;
    for (uint32_t c = 1; c < s->n_comms && all; c++)
        all = s->comms[c].share;
    return all;
}

uint64_t rt_chunk_bytes(uint64_t bytes, uint32_t chunks, uint32_t k) {
    if (chunks <= 1)
        return k == 0 ? bytes : 0;
    uint64_t each = bytes / chunks + (bytes % chunks != 0);
    uint64_t start = each * k;
    if (start >= bytes)
        return 0;
    return bytes - start < each ? bytes - start : each;
}


static const char *file_of(const rt_rank *r) { return r->plan->s->file; }

static const char *buf_name(const rt_rank *r, uint32_t buf) {
    const char *n = buf == SCHED_NO_SYM ? NULL : sched_sym_name(r->plan->s, SYM_BUFFER, buf);
    return n ? n : "?";
}

/* Records a runtime failure at op: "file:line:col: error: text". Returns -1. */
static int fail(rt_rank *r, const plan_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(rt_rank *r, const plan_op *op, const char *fmt, ...) {
    char text[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ml_mark m = op ? plan_op_mark(op) : (ml_mark){0, 0};
    if (op)
        snprintf(r->error, sizeof r->error, "%s:%u:%u: error: %s", file_of(r), m.line, m.col, text);
    else
        snprintf(r->error, sizeof r->error, "%s: error: %s", file_of(r), text);
    r->failed = ML_EXIT_RUNTIME;
    r->error_print_here = true;
    r->failure_known_to_all = false;
    return -1;
}

/* ---- Rank set-up ------------------------------------------------------------------------------ */

int rt_rank_init(rt_rank *r, const rt_backend_ops *be, const rt_options *o, const rank_plan *p,
                 int local_index) {
    memset(r, 0, sizeof *r);
    r->be = be;
    r->opt = o;
    r->plan = p;
    r->rank = p->rank;
    r->world = p->world;
    r->local_index = local_index;
    r->n_mems = p->s->syms[SYM_BUFFER].n;
    r->mems = ml_xcalloc(r->n_mems ? r->n_mems : 1, sizeof *r->mems);
    exec_state *x = ml_xcalloc(1, sizeof *x);
    x->buf_dtype = ml_xcalloc(r->n_mems ? r->n_mems : 1, sizeof *x->buf_dtype);
    x->kept_chunk = ml_xcalloc(r->n_mems ? r->n_mems : 1, sizeof *x->kept_chunk);
    x->recorded = ml_xcalloc(r->n_mems ? r->n_mems : 1, sizeof *x->recorded);
    x->chunks = ml_xcalloc(r->n_mems ? r->n_mems : 1, sizeof *x->chunks);
    x->n_slots = sched_n_slots(p->s);
    x->slots = ml_xcalloc(x->n_slots, sizeof *x->slots);
    for (uint32_t k = 0; k < r->n_mems; k++)
        x->kept_chunk[k] = UINT32_MAX;
    if (p->slots)
        memcpy(x->slots, p->slots, x->n_slots * sizeof *x->slots);
    x->slots[EXPR_SLOT_WORLD] = p->world;
    x->slots[EXPR_SLOT_RANK] = p->rank;
    r->exec = x;
    ml_vec_init(&r->checks, sizeof(rt_check_row));
    ml_vec_init(&r->acct.samples, sizeof(rt_sample));
    /* Refused before anything runs: a collective this backend has no launcher for. The op an
     * expect_error wraps is never issued, so it needs none. */
    for (size_t i = 0; i < p->n_ops; i++) {
        const plan_op *op = &p->ops[i];
        if (op->kind == OP_EXPECT_BEGIN)
            i++;
        else if (op->kind == OP_COLL && !(be->launches && be->launches(op->u.coll.coll)))
            return fail(r, op, "backend '%s' has no launcher for '%s'", be->name,
                        ml_colls[op->u.coll.coll].name);
    }
    char err[400] = "";
    if (be->rank_init && be->rank_init(r, err, sizeof err) != 0)
        return fail(r, NULL, "backend '%s' could not set up rank %d: %s", be->name, r->rank, err);
    return 0;
}

/* Frees what the schedule left live (its steady state) so the next schedule starts empty; not
 * counted: the measurement ended with the last op. */
void rt_rank_free(rt_rank *r) {
    exec_state *x = r->exec;
    char err[400];
    for (uint32_t k = 0; k < r->n_mems; k++)
        if (r->mems && r->mems[k].ptr && r->be->free)
            r->be->free(r, &r->mems[k], err, sizeof err);
    if (r->be && r->be->rank_finalize)
        r->be->rank_finalize(r);
    if (x) {
        if (x->rank_slots)
            for (int k = 0; k < r->world; k++)
                free(x->rank_slots[k]);
        free(x->rank_slots);
        free(x->buf_dtype);
        free(x->kept_chunk);
        free(x->recorded);
        free(x->chunks);
        free(x->slots);
        free(x->failure_table);
        free(x->block[0]);
        free(x->block[1]);
        free(x);
    }
    free(r->mems);
    ml_vec_free(&r->checks);
    rt_account_free_all(&r->acct);
    r->exec = NULL;
    r->mems = NULL;
}

/* ---- Validation (the runtime's own, independent of lint) --------------------------------------*/

typedef struct {
    sched_error_code code;   /* ERR_NONE when valid */
    char detail[240];
} verdict;

static sched_error_code refuse(verdict *v, sched_error_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static sched_error_code refuse(verdict *v, sched_error_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->detail, sizeof v->detail, fmt, ap);
    va_end(ap);
    v->code = code;
    return code;
}

static void view_text(const rt_rank *r, const plan_view *pv, char *buf, size_t len) {
    if (pv->whole)
        snprintf(buf, len, "'%s'", buf_name(r, pv->buf));
    else
        snprintf(buf, len, "'%s[%" PRIu64 " : %" PRIu64 "]'", buf_name(r, pv->buf), pv->offset,
                 pv->count);
}

/* Byte range of chunk `keep` in a buffer of `bytes` split in `chunks`. */
static void chunk_range(uint64_t bytes, uint32_t chunks, uint32_t keep, uint64_t *lo,
                        uint64_t *hi) {
    *lo = 0;
    for (uint32_t k = 0; k < keep; k++)
        *lo += rt_chunk_bytes(bytes, chunks, k);
    *hi = *lo + rt_chunk_bytes(bytes, chunks, keep);
}

/* A view must name a live buffer and lie inside it (inside the kept chunk after a release).
 * The view's text is made only for a refusal: this runs twice before every collective, between
 * two timed ones in bench, and two snprintf calls there cost more than the rest of the check. */
static sched_error_code check_view(const rt_rank *r, const plan_view *pv, const char *role,
                                   verdict *v) {
    const exec_state *x = r->exec;
    char vt[200];
    if (pv->buf == SCHED_NO_SYM || pv->buf >= r->n_mems || !r->mems[pv->buf].ptr) {
        view_text(r, pv, vt, sizeof vt);
        return refuse(v, ERR_OUT_OF_BOUNDS, "%s %s is not a live buffer", role, vt);
    }
    const rt_mem *m = &r->mems[pv->buf];
    uint64_t size = ml_dtypes[pv->dtype].size;
    uint64_t elems = m->bytes / size;
    if (pv->offset > elems || pv->count > elems - pv->offset) {
        view_text(r, pv, vt, sizeof vt);
        return refuse(v, ERR_OUT_OF_BOUNDS,
                      "%s %s ends at element %" PRIu64 ", past the buffer's %" PRIu64 " elements",
                      role, vt, pv->offset + pv->count, elems);
    }
    uint32_t keep = x->kept_chunk[pv->buf];
    if (keep != UINT32_MAX && pv->count) {
        uint64_t lo, hi;
        chunk_range(m->bytes, m->chunks, keep, &lo, &hi);
        if (pv->offset * size < lo || (pv->offset + pv->count) * size > hi) {
            view_text(r, pv, vt, sizeof vt);
            return refuse(v, ERR_OUT_OF_BOUNDS,
                          "%s %s reaches outside chunk %u, the only one left after the release",
                          role, vt, keep);
        }
    }
    return ERR_NONE;
}

static bool views_overlap(const plan_view *a, const plan_view *b) {
    if (a->buf != b->buf || !a->count || !b->count)
        return false;
    uint64_t sa = ml_dtypes[a->dtype].size, sb = ml_dtypes[b->dtype].size;
    uint64_t a0 = a->offset * sa, a1 = a0 + a->count * sa, b0 = b->offset * sb,
             b1 = b0 + b->count * sb;
    return a0 < b1 && b0 < a1;
}

/* Checks a collective and fills the backend's arguments. The count is derived from the views
 * (RS: recv's, else send's), then both views must match the table's formulas. */
static sched_error_code validate_coll(const rt_rank *r, const plan_op *op, rt_coll_args *a,
                                      verdict *v) {
    const ml_coll_info *ci = &ml_colls[op->u.coll.coll];
    const plan_view *send = &op->u.coll.send, *recv = &op->u.coll.recv;
    /* With `comm:` the counts, root, peer and in-place offset are the rank's group's (comms.h):
     * `world` and `me` below are the group's size and the rank's rank in it. */
    uint32_t comm = op->u.coll.comm;
    int world = plan_comm_size(r->plan->comms, r->world, comm, r->rank);
    int me = plan_comm_rank(r->plan->comms, comm, r->rank);
    const char *scope = comm ? "group" : "world";
    v->code = ERR_NONE;
    if (world <= 0 || me < 0)
        return refuse(v, ERR_OUT_OF_BOUNDS, "%s on communicator '%s': rank %d is in none of its "
                      "groups", ci->name, ml_comms_name(r->plan->comms, comm), r->rank);
    if (check_view(r, send, "send", v) || check_view(r, recv, "recv", v))
        return v->code;
    if (send->dtype != recv->dtype)
        return refuse(v, ERR_DTYPE_MISMATCH, "%s: send is %s, recv is %s", ci->name,
                      ml_dtypes[send->dtype].name, ml_dtypes[recv->dtype].name);
    uint64_t count = ml_coll_count_of(op->u.coll.coll, send->count, recv->count);
    uint64_t want_send = ml_coll_send_count(op->u.coll.coll, count, world);
    uint64_t want_recv = ml_coll_recv_count(op->u.coll.coll, count, world);
    if (send->count != want_send)
        return refuse(v, ERR_SIZE_MISMATCH,
                      "%s needs send = %s%" PRIu64 " elements, got %" PRIu64, ci->name,
                      ci->send_n != CNT_WORLD_X_COUNT ? "recv = " : comm ? "group x recv = "
                                                                      : "world x recv = ",
                      want_send, send->count);
    if (recv->count != want_recv)
        return refuse(v, ERR_SIZE_MISMATCH,
                      "%s needs recv = %s%" PRIu64 " elements, got %" PRIu64, ci->name,
                      ci->recv_n != CNT_WORLD_X_COUNT ? "send = " : comm ? "group x send = "
                                                                      : "world x send = ",
                      want_recv, recv->count);
    if (ci->count_per_rank && count % (uint64_t)world)
        return refuse(v, ERR_SIZE_MISMATCH,
                      "%s needs a count that divides by the %s (%d), got %" PRIu64, ci->name,
                      scope, world, count);
    if (ci->has_op && !data_redop_valid(send->dtype, op->u.coll.op))
        return refuse(v, ERR_BAD_OP, "%s with op %s is not defined for %s", ci->name,
                      ml_redops[op->u.coll.op].name, ml_dtypes[send->dtype].name);
    if (ci->has_root && (op->u.coll.root < 0 || op->u.coll.root >= world))
        return refuse(v, ERR_OUT_OF_BOUNDS, "%s root %d is outside the %s of %d ranks",
                      ci->name, op->u.coll.root, scope, world);
    if (ci->p2p && (op->u.coll.root < 0 || op->u.coll.root >= world || op->u.coll.root == me))
        return refuse(v, ERR_OUT_OF_BOUNDS, "%s peer %d is %s%s", ci->name, op->u.coll.root,
                      op->u.coll.root == me ? "the rank itself" : "outside the ", 
                      op->u.coll.root == me ? "" : scope);
    bool in_place = false;
    if (views_overlap(send, recv)) {
        int64_t want;
        int64_t got = (int64_t)recv->offset - (int64_t)send->offset;
        if (!ml_coll_inplace_at(op->u.coll.coll, count, me, &want))
            return refuse(v, ERR_BAD_INPLACE,
                          "%s: send and recv overlap in '%s', but it never runs in place",
                          ci->name, buf_name(r, send->buf));
        if (got != want)
            return refuse(v, ERR_BAD_INPLACE,
                          "%s: send and recv overlap in '%s' but recv is at element offset %" PRId64
                          " from send, not NCCL's in-place offset %" PRId64,
                          ci->name, buf_name(r, send->buf), got, want);
        in_place = true;
    }
    uint64_t size = ml_dtypes[send->dtype].size;
    *a = (rt_coll_args){
        .coll = op->u.coll.coll,
        .send = &r->mems[send->buf],
        .recv = &r->mems[recv->buf],
        .send_off_bytes = send->offset * size,
        .recv_off_bytes = recv->offset * size,
        .count = count,
        .dtype = send->dtype,
        .op = op->u.coll.op,
        .root = op->u.coll.root,
        .stream = op->u.coll.stream,
        .in_place = in_place,
        .comm = (uint16_t)comm,
        .comm_size = world,
        .comm_rank = me,
    };
    return ERR_NONE;
}

static sched_error_code validate_copy(const rt_rank *r, const plan_view *src, const plan_view *dst,
                                      verdict *v) {
    v->code = ERR_NONE;
    if (check_view(r, src, "src", v) || check_view(r, dst, "dst", v))
        return v->code;
    if (src->dtype != dst->dtype)
        return refuse(v, ERR_DTYPE_MISMATCH, "copy: src is %s, dst is %s",
                      ml_dtypes[src->dtype].name, ml_dtypes[dst->dtype].name);
    if (src->count != dst->count)
        return refuse(v, ERR_SIZE_MISMATCH, "copy: src has %" PRIu64 " elements, dst %" PRIu64,
                      src->count, dst->count);
    if (views_overlap(src, dst) && src->offset != dst->offset)
        return refuse(v, ERR_BAD_INPLACE, "copy: src and dst overlap in '%s'",
                      buf_name(r, src->buf));
    return ERR_NONE;
}

/* The runtime's verdict on any op that expect_error may wrap. */
static sched_error_code validate_op(const rt_rank *r, const plan_op *op, verdict *v) {
    rt_coll_args a;
    v->code = ERR_NONE;
    v->detail[0] = '\0';
    switch (op->kind) {
    case OP_COLL: return validate_coll(r, op, &a, v);
    case OP_COPY: return validate_copy(r, &op->u.copy.src, &op->u.copy.dst, v);
    case OP_INIT: return check_view(r, &op->u.init.dst, "buffer", v);
    case OP_SCALE: return check_view(r, &op->u.scale.buf, "buffer", v);
    default: return ERR_NONE;
    }
}

/* ---- Check rows ------------------------------------------------------------------------------- */

/* Adds a row, or folds it into the row of the same contract name on this rank: a contract checked
 * several ways (direct result, RS+AG result, closed form) is one row that passes when all do. */
static void add_row(rt_rank *r, const char *name, bool pass, const char *detail,
                    const sched_step *step) {
    for (size_t k = 0; k < r->checks.n; k++) {
        rt_check_row *row = &ML_VEC_AT(&r->checks, rt_check_row, k);
        if (!strcmp(row->name, name)) {
            size_t n = strlen(row->detail);
            if (row->pass && !pass) {     /* lead with the failure */
                char old[sizeof row->detail];
                memcpy(old, row->detail, sizeof old);
                ml_put(row->detail, sizeof row->detail, "%s; %s", detail, old);
            } else if (n + 2 < sizeof row->detail) {
                snprintf(row->detail + n, sizeof row->detail - n, "; %s", detail);
            }
            row->pass = row->pass && pass;
            return;
        }
    }
    rt_check_row *row = ml_vec_push(&r->checks);
    row->name = name;
    row->rank = r->rank;
    row->pass = pass;
    row->step = step;
    snprintf(row->detail, sizeof row->detail, "%s", detail);
}

/* ---- Data ops ----------------------------------------------------------------------------------*/

static int read_view(rt_rank *r, const plan_view *pv, uint64_t first, uint64_t count, void *dst,
                     char *err, size_t len) {
    uint64_t size = ml_dtypes[pv->dtype].size;
    return r->be->read(r, &r->mems[pv->buf], (pv->offset + first) * size, dst, count * size, err,
                       len);
}

static int write_view(rt_rank *r, const plan_view *pv, uint64_t first, uint64_t count,
                      const void *src, char *err, size_t len) {
    uint64_t size = ml_dtypes[pv->dtype].size;
    return r->be->write(r, &r->mems[pv->buf], (pv->offset + first) * size, src, count * size, err,
                        len);
}

/* Block buffer `which` (0 or 1) of the rank, EXEC_BLOCK_BYTES; allocated once, so a reset
 * before a timed span makes no malloc (nor the page faults of a fresh mapping). */
static void *block_buffer(rt_rank *r, int which) {
    exec_state *x = r->exec;
    if (!x->block[which])
        x->block[which] = ml_xmalloc(EXEC_BLOCK_BYTES);
    return x->block[which];
}

/* Elements of a block for these element sizes: the whole view when it fits. */
static uint64_t block_elems(uint64_t count, uint64_t elem_size) {
    uint64_t fit = EXEC_BLOCK_BYTES / elem_size;
    return count < fit ? count : fit;
}

static int do_copy(rt_rank *r, const plan_op *op, const plan_view *src, const plan_view *dst,
                   uint32_t stream) {
    verdict v;
    if (validate_copy(r, src, dst, &v) != ERR_NONE)
        return fail(r, op, "%s", v.detail);
    char err[400];
    uint64_t size = ml_dtypes[src->dtype].size;
    if (r->be->copy(r, &r->mems[dst->buf], dst->offset * size, &r->mems[src->buf],
                    src->offset * size, src->count * size, stream, err, sizeof err) != 0)
        return fail(r, op, "copy failed: %s", err);
    return 0;
}

/* Produces one block of new values for a view: elements [first, first+n) into tmp. */
typedef int (*block_fn)(rt_rank *r, const plan_op *op, ml_dtype dt, void *tmp, uint64_t first,
                        uint64_t n, char *err, size_t len);

static const sched_init *init_of(const plan_op *op) {
    return op->step->kind == ST_ALLOC ? &op->step->u.alloc.init : &op->step->u.init.init;
}

static int fill_block(rt_rank *r, const plan_op *op, ml_dtype dt, void *tmp, uint64_t first,
                      uint64_t n, char *err, size_t len) {
    exec_state *x = r->exec;
    return data_fill(tmp, dt, n, first, init_of(op), x->slots, err, len);
}

static int scale_block(rt_rank *r, const plan_op *op, ml_dtype dt, void *tmp, uint64_t first,
                       uint64_t n, char *err, size_t len) {
    data_scale(dt, tmp, n, op->u.scale.factor, op->u.scale.den);
    return 0;
}

/* Rewrites a view block by block through host memory (bounded memory whatever the buffer's
 * size): read the old values when the new ones depend on them, compute, write back. */
static int rewrite_view(rt_rank *r, const plan_op *op, const plan_view *pv, const char *what,
                        bool read_first, block_fn fn) {
    verdict v;
    if (check_view(r, pv, what, &v) != ERR_NONE)
        return fail(r, op, "%s", v.detail);
    uint64_t block = block_elems(pv->count, ml_dtypes[pv->dtype].size);
    void *tmp = block_buffer(r, 0);
    char err[400] = "";
    int rc = 0;
    for (uint64_t first = 0; first < pv->count && rc == 0; first += block) {
        uint64_t n = pv->count - first < block ? pv->count - first : block;
        if ((read_first && read_view(r, pv, first, n, tmp, err, sizeof err) != 0) ||
            fn(r, op, pv->dtype, tmp, first, n, err, sizeof err) != 0 ||
            write_view(r, pv, first, n, tmp, err, sizeof err) != 0)
            rc = fail(r, op, "%s '%s' failed: %s", what, buf_name(r, pv->buf), err);
    }
    return rc;
}

static int do_init(rt_rank *r, const plan_op *op) {
    const sched_init *init = init_of(op);
    if (init->kind == INIT_NONE)
        return 0;
    if (init->kind == INIT_COPY)
        return do_copy(r, op, &op->u.init.src, &op->u.init.dst, SCHED_DEFAULT_STREAM);
    return rewrite_view(r, op, &op->u.init.dst, "init of", false, fill_block);
}

static int do_scale(rt_rank *r, const plan_op *op) {
    return rewrite_view(r, op, &op->u.scale.buf, "scale of", true, scale_block);
}

/* Every rank's slots (lets evaluated for that rank), for patterns reduced over ranks. */
static int64_t *const *rank_slots(rt_rank *r, char *err, size_t len) {
    exec_state *x = r->exec;
    if (x->rank_slots)
        return x->rank_slots;
    x->rank_slots = ml_xcalloc((size_t)r->world, sizeof *x->rank_slots);
    ml_diags d;
    ml_diags_init(&d);
    int rc = 0;
    for (int k = 0; k < r->world && rc == 0; k++) {
        x->rank_slots[k] = ml_xcalloc(x->n_slots, sizeof(int64_t));
        rc = sched_eval_lets(r->plan->s, r->opt->params, r->world, k, x->rank_slots[k], &d);
        x->rank_slots[k][EXPR_SLOT_WORLD] = r->world;
        x->rank_slots[k][EXPR_SLOT_RANK] = k;
    }
    if (rc != 0) {
        const ml_diag *g = ml_diags_first_error(&d);
        snprintf(err, len, "let-values of another rank: %s", g ? g->text : "evaluation failed");
    }
    ml_diags_free(&d);
    return rc == 0 ? x->rank_slots : NULL;
}

/* One side of a check, produced block by block. */
typedef struct {
    const sched_operand *src;
    const plan_op *op;           /* the check */
    const plan_view *view;       /* OPD_VIEW */
    int64_t roll;
    bool rolled;
    /* The ranks it is over: the world, or with `comm:` the rank's group of that communicator
     * (group: the members' world ranks in their order within it; size of them). */
    int size;
    int *group;
    ml_dtype dtype;
    uint64_t count;
    void *buf;
} operand;

/* Elements [first, first+n) of an operand into o->buf. A rolled view reads from the rolled
 * position; callers keep a block inside one shard, where the source is contiguous. */
static int operand_block(rt_rank *r, operand *o, uint64_t first, uint64_t n, char *err,
                         size_t len) {
    exec_state *x = r->exec;
    switch (o->src->kind) {
    case OPD_VIEW: {
        uint64_t from = o->rolled ? data_roll_source(o->count, o->size, o->roll, first) : first;
        return read_view(r, o->view, from, n, o->buf, err, len);
    }
    case OPD_EXPR: {
        sched_init closed = {.kind = INIT_EXPR, .value = o->src->value};
        return data_fill(o->buf, o->dtype, n, first, &closed, x->slots, err, len);
    }
    case OPD_REDUCED_PATTERN: {
        int64_t *const *slots = rank_slots(r, err, len);
        if (!slots)
            return -1;
        for (int k = 0; k < r->world; k++)   /* the check's repeat indices, alike on every rank */
            plan_op_slots(r->plan, o->op, slots[k]);
        if (!o->group)
            return data_fill_reduced(o->buf, o->dtype, n, first, &o->src->pattern, o->src->op,
                                     r->world, slots, err, len);
        /* The group's members, in their order within it, each with its own world rank's
         * values (rank_iota's 100*rank is the member's world rank). */
        int64_t **members = ml_xcalloc((size_t)o->size, sizeof *members);
        for (int k = 0; k < o->size; k++)
            members[k] = slots[o->group[k]];
        int rc = data_fill_reduced(o->buf, o->dtype, n, first, &o->src->pattern, o->src->op,
                                   o->size, members, err, len);
        free(members);
        return rc;
    }
    default:
        snprintf(err, len, "unknown check operand");
        return -1;
    }
}

/* The ranks an operand is over (operand.size, .group): the world without `comm:`; else the
 * rank's group of the communicator, or false with the reason where the rank is in none. */
static bool operand_group(const rt_rank *r, operand *o, char *detail, size_t len) {
    const ml_comms *cs = r->plan->comms;
    uint32_t comm = o->src->comm;
    o->size = plan_comm_size(cs, r->world, comm, r->rank);
    o->group = NULL;
    if (o->size <= 0) {
        snprintf(detail, len, "rank %d is in no group of communicator '%s'", r->rank,
                 cs ? ml_comms_name(cs, comm) : "?");
        return false;
    }
    if (!comm || !cs)
        return true;
    o->group = ml_xcalloc((size_t)o->size, sizeof *o->group);
    for (int k = 0; k < o->size; k++)
        o->group[k] = ml_comms_global(cs, comm, r->rank, k);
    return true;
}

static int check_rows(rt_rank *r, const plan_op *op, operand o[2]);

/* Runs a data check and records its row (a failed comparison is a failing row, not a runtime
 * failure; a check that cannot be evaluated is a failing row with the reason). */
static int do_check(rt_rank *r, const plan_op *op) {
    const sched_check *c = op->step->u.check;
    operand o[2] = {{.src = &c->a, .op = op, .view = &op->u.check.a, .roll = op->u.check.roll_a},
                    {.src = &c->b, .op = op, .view = &op->u.check.b, .roll = op->u.check.roll_b}};
    char detail[240];
    int rc = 0;
    if (!operand_group(r, &o[0], detail, sizeof detail) ||
        !operand_group(r, &o[1], detail, sizeof detail))
        add_row(r, c->name ? c->name : "check", false, detail, op->step);
    else
        rc = check_rows(r, op, o);
    free(o[0].group);
    free(o[1].group);
    return rc;
}

static int check_rows(rt_rank *r, const plan_op *op, operand o[2]) {
    const sched_check *c = op->step->u.check;
    const char *name = c->name ? c->name : "check";
    const operand *shape = NULL;
    char detail[240], err[400] = "";
    verdict v;
    for (int k = 0; k < 2; k++) {
        o[k].rolled = o[k].src->kind == OPD_VIEW && o[k].src->roll_shards != NULL;
        if (o[k].src->kind != OPD_VIEW)
            continue;
        if (check_view(r, o[k].view, "check operand", &v) != ERR_NONE)
            return fail(r, op, "%s", v.detail);
        o[k].dtype = o[k].view->dtype;
        o[k].count = o[k].view->count;
        if (!shape)
            shape = &o[k];
    }
    if (!shape) {
        add_row(r, name, false, "no buffer operand: nothing to compare", op->step);
        return 0;
    }
    for (int k = 0; k < 2; k++)
        if (o[k].src->kind != OPD_VIEW) {
            o[k].dtype = shape->dtype;
            o[k].count = shape->count;
        }
    if (o[0].count != o[1].count) {
        snprintf(detail, sizeof detail, "operands differ in length: %" PRIu64 " vs %" PRIu64
                 " elements", o[0].count, o[1].count);
        add_row(r, name, false, detail, op->step);
        return 0;
    }
    uint64_t n = o[0].count, shard = n;
    for (int k = 0; k < 2; k++)
        if (o[k].rolled) {
            if (n % (uint64_t)o[k].size) {
                snprintf(detail, sizeof detail,
                         "roll_shards: %" PRIu64 " elements do not split into %d equal shards", n,
                         o[k].size);
                add_row(r, name, false, detail, op->step);
                return 0;
            }
            /* both rolled over groups of other sizes: blocks inside a shard of each */
            for (uint64_t a = n / (uint64_t)o[k].size, t; a; t = shard % a, shard = a, a = t)
                ;
        }
    uint64_t widest = ml_dtypes[o[0].dtype].size > ml_dtypes[o[1].dtype].size
                          ? ml_dtypes[o[0].dtype].size : ml_dtypes[o[1].dtype].size;
    uint64_t block = block_elems(n, widest);
    o[0].buf = block_buffer(r, 0);
    o[1].buf = block_buffer(r, 1);
    data_diff diff;
    data_diff_init(&diff);
    int rc = 0;
    for (uint64_t first = 0; first < n && rc == 0;) {
        uint64_t len = n - first < block ? n - first : block;
        if (shard && first / shard != (first + len - 1) / shard)   /* stay inside one shard */
            len = (first / shard + 1) * shard - first;
        if (operand_block(r, &o[0], first, len, err, sizeof err) != 0 ||
            operand_block(r, &o[1], first, len, err, sizeof err) != 0)
            rc = -1;
        else
            data_compare(o[0].buf, o[0].dtype, o[1].buf, o[1].dtype, len, first, c->rtol, c->atol,
                         &diff);
        first += len;
    }
    if (rc != 0) {
        snprintf(detail, sizeof detail, "could not evaluate: %s", err);
        add_row(r, name, false, detail, op->step);
        return 0;
    }
    bool pass = data_check_verdict(c->kind == CHECK_EQUAL, &diff, c->rtol, c->atol, detail,
                                   sizeof detail);
    add_row(r, name, pass, detail, op->step);
    return 0;
}

/* ---- Memory ops --------------------------------------------------------------------------------*/

/* Bytes of a live buffer still held (after a release, only the kept chunk's). */
static uint64_t held_bytes(const rt_rank *r, uint32_t buf) {
    const exec_state *x = r->exec;
    const rt_mem *m = &r->mems[buf];
    uint32_t keep = x->kept_chunk[buf];
    return keep == UINT32_MAX ? m->bytes : rt_chunk_bytes(m->bytes, m->chunks, keep);
}

static int do_alloc(rt_rank *r, const plan_op *op) {
    exec_state *x = r->exec;
    uint32_t buf = op->u.alloc.buf;
    const char *name = buf_name(r, buf);
    if (buf >= r->n_mems)
        return fail(r, op, "alloc of unknown buffer symbol %u", buf);
    if (r->mems[buf].ptr)
        return fail(r, op, "alloc of '%s', which is still live", name);
    char err[400] = "";
    long k = x->n_allocs++;
    int rc;
    if (rt_inject_alloc_fails(r, k, err, sizeof err)) {
        rc = -1;
    } else {
        rc = r->be->alloc(r, op->u.alloc.bytes, op->u.alloc.chunks, &r->mems[buf], err,
                          sizeof err);
    }
    if (rc != 0) {
        memset(&r->mems[buf], 0, sizeof r->mems[buf]);
        return fail(r, op, "alloc of '%s' (%" PRIu64 " bytes) failed: %s; live requested bytes %"
                    PRIu64, name, op->u.alloc.bytes, err, r->acct.live);
    }
    if (!r->mems[buf].ptr)
        return fail(r, op, "backend '%s' returned no address for '%s'", r->be->name, name);
    r->mems[buf].bytes = op->u.alloc.bytes;
    x->buf_dtype[buf] = op->u.alloc.dtype;
    x->kept_chunk[buf] = UINT32_MAX;
    x->recorded[buf] = 0;
    x->chunks[buf] = op->u.alloc.chunks;
    rt_account_alloc(&r->acct, op->u.alloc.bytes);
    return 0;
}

static int do_free(rt_rank *r, const plan_op *op) {
    uint32_t buf = op->u.free.buf;
    if (buf >= r->n_mems || !r->mems[buf].ptr)
        return fail(r, op, "free of '%s', which is not live", buf_name(r, buf));
    uint64_t held = held_bytes(r, buf);
    char err[400] = "";
    /* PyTorch's allocator defers the reuse of a record_stream'ed block until the use-stream's
     * work is done; memlife's backends free at once, so they wait for that work first. */
    exec_state *x = r->exec;
    uint64_t rec = x->recorded[buf];
    for (uint32_t st = 0; rec && st < 63; st++, rec >>= 1)
        if ((rec & 1) && r->be->sync(r, SYNC_STREAM, st, SCHED_NO_SYM, err, sizeof err))
            return fail(r, op, "sync before the free of '%s' failed: %s", buf_name(r, buf), err);
    if (rec && r->be->sync(r, SYNC_DEVICE, SCHED_DEFAULT_STREAM, SCHED_NO_SYM, err, sizeof err))
        return fail(r, op, "sync before the free of '%s' failed: %s", buf_name(r, buf), err);
    x->recorded[buf] = 0;
    if (r->be->free(r, &r->mems[buf], err, sizeof err) != 0)
        return fail(r, op, "free of '%s' failed: %s", buf_name(r, buf), err);
    memset(&r->mems[buf], 0, sizeof r->mems[buf]);
    rt_account_free(&r->acct, held);
    return 0;
}

static int do_release(rt_rank *r, const plan_op *op) {
    exec_state *x = r->exec;
    uint32_t buf = op->u.release.buf, keep = op->u.release.keep;
    const char *name = buf_name(r, buf);
    if (buf >= r->n_mems || !r->mems[buf].ptr)
        return fail(r, op, "release of '%s', which is not live", name);
    rt_mem *m = &r->mems[buf];
    /* `chunks: 1` (say `chunks: world` at world 1) is a chunked buffer of one chunk: releasing
     * all but chunk 0 releases nothing, and no backend call is needed (nor possible: a backend
     * may have made it one plain allocation). Only a buffer without `chunks:` is refused. */
    if (x->chunks[buf] == 0)
        return fail(r, op, "release of '%s', which was not allocated in chunks", name);
    if (x->kept_chunk[buf] != UINT32_MAX)
        return fail(r, op, "'%s' was already released", name);
    if (keep >= x->chunks[buf])
        return fail(r, op, "release of '%s' keeps chunk %u, but it has %u chunks", name, keep,
                    x->chunks[buf]);
    if (x->chunks[buf] == 1) {
        x->kept_chunk[buf] = keep;
        return 0;
    }
    if (m->chunks < 2)
        return fail(r, op, "release of '%s': backend '%s' made it one allocation, not %u chunks",
                    name, r->be->name, x->chunks[buf]);
    char err[400] = "";
    if (r->be->release(r, m, keep, err, sizeof err) != 0)
        return fail(r, op, "release of '%s' failed: %s", name, err);
    rt_account_free(&r->acct, m->bytes - rt_chunk_bytes(m->bytes, m->chunks, keep));
    x->kept_chunk[buf] = keep;
    return 0;
}

/* ---- Ops ---------------------------------------------------------------------------------------*/

static void sample(rt_rank *r, size_t op) {
    rt_mem_reading now;
    memset(&now, 0, sizeof now);
    if (r->skip_device_reading) {
        rt_account_sample(&r->acct, op, NULL);
        return;
    }
    if (r->be->mem_read)
        r->be->mem_read(r, &now);
    rt_account_sample(&r->acct, op, &now);
}

/* expect_error: the op after OP_EXPECT_BEGIN must be refused with the named error. It is never
 * executed: refused as expected, it would have failed; accepted, issuing it on some ranks and not
 * others would break the collective sequence. Both ops get their sample. */
static void do_expect(rt_rank *r, const plan_op *op) {
    const char *name = op->step->u.expect_error.name ? op->step->u.expect_error.name
                                                    : "expect_error";
    sched_error_code want = op->u.expect.error;
    char detail[240];
    bool pass = false;
    if (r->pc + 1 >= r->plan->n_ops) {
        snprintf(detail, sizeof detail, "the step expected to fail with %s is not on this rank",
                 sched_error_names[want]);
    } else {
        const plan_op *next = &r->plan->ops[r->pc + 1];
        verdict v;
        sched_error_code got = validate_op(r, next, &v);
        const char *what = next->kind == OP_COLL ? "refused before any collective"
                                                 : "refused before the step ran";
        if (got == want) {
            pass = true;
            snprintf(detail, sizeof detail, "%s: %s: %s", what, sched_error_names[got], v.detail);
        } else if (got == ERR_NONE) {
            snprintf(detail, sizeof detail, "expected %s, but the runtime accepted the %s",
                     sched_error_names[want], plan_op_names[next->kind]);
        } else {
            snprintf(detail, sizeof detail, "expected %s, got %s: %s", sched_error_names[want],
                     sched_error_names[got], v.detail);
        }
    }
    add_row(r, name, pass, detail, op->step);
}

/* A send or recv: issued by this rank alone (its peer issues the partner in its own program
 * order), so no sequence exchange; inside a group the backend only posts it (group_end waits). */
static int do_p2p(rt_rank *r, const plan_op *op) {
    rt_coll_args a;
    verdict v;
    char err[400] = "";
    if (validate_coll(r, op, &a, &v) != ERR_NONE)
        return fail(r, op, "%s refused: %s: %s", ml_colls[op->u.coll.coll].name,
                    sched_error_names[v.code], v.detail);
    if (r->be->collective(&r, &a, 1, err, sizeof err) != 0)
        return fail(r, op, "%s failed: %s", ml_colls[op->u.coll.coll].name, err);
    return 0;
}

static int do_group(rt_rank *r, const plan_op *op) {
    char err[400] = "";
    int (*fn)(rt_rank *, char *, size_t) = op->kind == OP_GROUP_BEGIN ? r->be->group_begin : r->be->group_end;
    if (!fn)
        return fail(r, op, "the %s backend has no groups of send and recv", r->be->name);
    if (fn(r, err, sizeof err) != 0)
        return fail(r, op, "%s failed: %s", plan_op_names[op->kind], err);
    return 0;
}

/* Executes the op at pc (not a collective). Returns 0 or -1. */
static int exec_op(rt_rank *r, const plan_op *op) {
    char err[400] = "";
    bool data = r->opt->data;
    plan_op_slots(r->plan, op, ((exec_state *)r->exec)->slots);   /* the repeat indices the op was expanded with */
    switch (op->kind) {
    case OP_ALLOC: return do_alloc(r, op);
    case OP_FREE: return do_free(r, op);
    case OP_RELEASE: return do_release(r, op);
    case OP_INIT: return data ? do_init(r, op) : 0;
    case OP_COLL: return do_p2p(r, op);   /* rt_rank_advance stops at the other collectives */
    case OP_GROUP_BEGIN:
    case OP_GROUP_END: return do_group(r, op);
    case OP_SCALE: return data ? do_scale(r, op) : 0;
    case OP_CHECK: return data ? do_check(r, op) : 0;
    case OP_COPY: return do_copy(r, op, &op->u.copy.src, &op->u.copy.dst, op->u.copy.stream);
    case OP_SYNC:
        if (r->be->sync(r, op->u.sync.kind, op->u.sync.stream, op->u.sync.event, err, sizeof err))
            return fail(r, op, "sync failed: %s", err);
        return 0;
    case OP_RECORD:
        if (r->be->record(r, op->u.event.event, op->u.event.stream, err, sizeof err))
            return fail(r, op, "record failed: %s", err);
        return 0;
    case OP_WAIT:
        if (r->be->wait(r, op->u.event.event, op->u.event.stream, err, sizeof err))
            return fail(r, op, "wait failed: %s", err);
        return 0;
    case OP_COMPUTE: {
        /* No data effect; its views must still be usable (a compute on a freed buffer is the
         * lifetime bug this tool exists to catch). */
        uint32_t nr, nw;
        const plan_view *views = plan_compute_views(r->plan, op, &nr, &nw);
        for (uint32_t k = 0; k < nr + nw; k++) {
            verdict v;
            if (check_view(r, &views[k], k < nr ? "compute reads" : "compute writes", &v))
                return fail(r, op, "%s", v.detail);
        }
        return 0;
    }
    case OP_RECORD_STREAM: {
        /* PyTorch's allocator's bookkeeping: memlife's backends free at once, so the free
         * synchronizes the recorded streams first (do_free); the buffer must be live. */
        uint32_t buf = op->u.record_stream.buf;
        if (buf >= r->n_mems || !r->mems[buf].ptr)
            return fail(r, op, "record_stream of '%s', which is not live", buf_name(r, buf));
        uint32_t st = op->u.record_stream.stream;
        ((exec_state *)r->exec)->recorded[buf] |= (uint64_t)1 << (st < 63 ? st : 63);
        /* A backend with a caching allocator (torch) does what PyTorch's record_stream does. */
        char why[256] = "";
        if (r->be->record_stream && r->be->record_stream(r, &r->mems[buf], st, why, sizeof why))
            return fail(r, op, "record_stream of '%s': %s", buf_name(r, buf), why);
        return 0;
    }
    case OP_EMPTY_CACHE: {
        /* host and cuda keep no cache of their own; the torch backend empties PyTorch's */
        char why[256] = "";
        if (r->be->empty_cache && r->be->empty_cache(r, why, sizeof why))
            return fail(r, op, "empty_cache: %s", why);
        return 0;
    }
    case OP_REGION_BEGIN:
    case OP_REGION_END:
        return 0;
    case OP_EXPECT_BEGIN:
        do_expect(r, op);
        return 0;
    default:
        return fail(r, op, "op kind %d cannot be executed", (int)op->kind);
    }
}

/* Fault injection sees every op once, when the rank reaches it (a collective before its sequence
 * exchange; the op under expect_error too, though it is not executed). */
static void inject_at(rt_rank *r) {
    exec_state *x = r->exec;
    if (r->pc < x->inject_next)
        return;
    x->inject_next = r->pc + 1;
    rt_inject_before_op(r);
}

int rt_rank_advance(rt_rank *r) {
    if (r->failed)
        return -1;
    const rank_plan *p = r->plan;
    while (r->pc < p->n_ops) {
        const plan_op *op = &p->ops[r->pc];
        rt_watch_parent();   /* rate-limited: one clock read per op (watch.h) */
        inject_at(r);
        if (op->kind == OP_COLL && !ml_colls[op->u.coll.coll].p2p)
            return 1;
        if (exec_op(r, op) != 0)
            return -1;
        sample(r, r->pc);
        if (op->kind == OP_EXPECT_BEGIN && r->pc + 1 < p->n_ops) {
            r->pc++;                      /* the wrapped op: never executed, still sampled */
            inject_at(r);
            sample(r, r->pc);
        }
        r->pc++;
    }
    return 0;
}

int rt_issue_collective(rt_rank **ranks, int n) {
    /* No allocation on the common path: this sits between two timed collectives in bench. */
    rt_coll_args local_args[8];
    rt_coll_args *args = n <= 8 ? local_args : ml_xcalloc((size_t)n, sizeof *args);
    memset(args, 0, (size_t)n * sizeof *args);
    int bad = -1;
    for (int k = 0; k < n; k++) {
        rt_rank *r = ranks[k];
        const plan_op *op = &r->plan->ops[r->pc];
        verdict v;
        if (op->kind != OP_COLL) {
            fail(r, op, "internal: no collective at op %zu", r->pc);
            bad = k;
        } else if (validate_coll(r, op, &args[k], &v) != ERR_NONE) {
            fail(r, op, "%s refused: %s: %s", ml_colls[op->u.coll.coll].name,
                 sched_error_names[v.code], v.detail);
            bad = k;
        }
    }
    int rc = 0;
    if (bad >= 0) {
        /* Issuing for some local ranks and not others would leave the group waiting. */
        for (int k = 0; k < n; k++)
            if (!ranks[k]->failed) {
                fail(ranks[k], &ranks[k]->plan->ops[ranks[k]->pc],
                     "collective not issued: rank %d refused it", ranks[bad]->rank);
                ranks[k]->error_print_here = false;
            }
        rc = -1;
    } else {
        char err[400] = "";
        rt_rank *r0 = ranks[0];
        if (r0->be->collective(ranks, args, n, err, sizeof err) != 0) {
            for (int k = 0; k < n; k++) {
                fail(ranks[k], &ranks[k]->plan->ops[ranks[k]->pc], "%s failed: %s",
                     ml_colls[args[k].coll].name, err);
                ranks[k]->error_print_here = k == 0;
            }
            rc = -1;
        } else {
            for (int k = 0; k < n; k++) {
                rt_rank *r = ranks[k];
                sample(r, r->pc);
                r->pc++;
                r->n_collectives++;
            }
        }
    }
    if (args != local_args)
        free(args);
    return rc;
}

/* ---- Sequence verification ---------------------------------------------------------------------
 * Before each collective every rank shares a small descriptor of it; at the end, END; after a
 * failure, FAILED. All ranks see the same table and reach the same verdict, so a divergence or a
 * peer's failure ends every rank together and at once, instead of a hang until the deadline. */

enum { SEQ_COLL = 1, SEQ_END = 2, SEQ_FAILED = 3 };

typedef struct {
    int32_t state, coll, dtype, op, root;
    uint32_t line, col, kind;    /* kind: plan_op_kind at pc, or OP_KIND_COUNT at the end */
    uint32_t comm;               /* the collective's communicator (0: the world) */
    uint64_t count, index;
    uint64_t pc, live;           /* where the rank stands and what it holds (failure notes) */
} seq_desc;

static void seq_describe(const rt_rank *r, int status, seq_desc *d) {
    memset(d, 0, sizeof *d);
    d->index = r->n_collectives;
    d->state = status < 0 || r->failed ? SEQ_FAILED : status == 0 ? SEQ_END : SEQ_COLL;
    d->pc = r->pc;
    d->live = r->acct.live;
    d->kind = OP_KIND_COUNT;
    const plan_op *op = r->pc < r->plan->n_ops ? &r->plan->ops[r->pc] : NULL;
    if (op) {
        d->line = plan_op_mark(op).line;
        d->col = plan_op_mark(op).col;
        d->kind = (uint32_t)op->kind;
        if (op->kind == OP_COLL)
            d->coll = (int32_t)op->u.coll.coll;
    }
    if (d->state != SEQ_COLL)
        return;
    const ml_coll_info *ci = &ml_colls[op->u.coll.coll];
    const plan_view *send = &op->u.coll.send, *recv = &op->u.coll.recv;
    d->comm = op->u.coll.comm;
    d->count = ml_coll_count_of(op->u.coll.coll, send->count, recv->count);
    d->dtype = (int32_t)send->dtype;
    d->op = ci->has_op ? (int32_t)op->u.coll.op : -1;
    d->root = ci->has_root ? op->u.coll.root : -1;
}

/* Whether member m of a group may issue the collective of its first member f with it: the same
 * collective on the same communicator with the same arguments. Groups are independent: each
 * group's arguments are its own (a group of another size has other counts). */
static bool seq_fits(const seq_desc *m, const seq_desc *f) {
    return m->state == SEQ_COLL && m->coll == f->coll && m->comm == f->comm &&
           m->count == f->count && m->dtype == f->dtype && m->op == f->op && m->root == f->root;
}

static void seq_text(const seq_desc *d, int rank, const ml_comms *comms, const char *file,
                     char *buf, size_t len) {
    if (d->state == SEQ_END) {
        snprintf(buf, len, "rank %d has ended after %" PRIu64 " collective%s", rank, d->index,
                 d->index == 1 ? "" : "s");
        return;
    }
    if (d->state == SEQ_FAILED) {
        snprintf(buf, len, "rank %d failed at %s:%u:%u", rank, file, d->line, d->col);
        return;
    }
    char extra[80] = "";
    if (d->op >= 0)
        snprintf(extra, sizeof extra, ", %s", ml_redops[d->op].name);
    if (d->root >= 0)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", root %d", d->root);
    if (d->comm && comms)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", comm %s",
                 ml_comms_name(comms, d->comm));
    snprintf(buf, len, "rank %d issues %s (count %" PRIu64 ", %s%s) at %s:%u:%u", rank,
             ml_colls[d->coll].name, d->count, ml_dtypes[d->dtype].name, extra, file, d->line,
             d->col);
}

static void keep_table(rt_rank *r, const seq_desc *all, int world) {
    exec_state *x = r->exec;
    free(x->failure_table);
    x->failure_table = ml_xmalloc((size_t)world * sizeof *all);
    memcpy(x->failure_table, all, (size_t)world * sizeof *all);
}

/* Marks ready[] the ranks whose group is whole at one collective: every member of the group of
 * the collective's communicator (the world, or the rank's group of it) is at that collective
 * with the same arguments. Each group is judged once, by its first member, so a round costs one
 * pass over the world. Returns how many ranks are ready. */
static int seq_ready(const rt_rank *r, const seq_desc *all, int world, bool *ready) {
    const ml_comms *cs = r->plan->comms;
    int n_ready = 0;
    for (int k = 0; k < world; k++) {
        const seq_desc *f = &all[k];
        if (f->state != SEQ_COLL || plan_comm_rank(cs, f->comm, k) != 0)
            continue;
        int size = plan_comm_size(cs, world, f->comm, k), m = 0;
        for (; m < size; m++) {
            int g = plan_comm_global(cs, f->comm, k, m);
            if (g < 0 || g >= world || !seq_fits(&all[g], f))
                break;
        }
        if (m < size)
            continue;
        for (m = 0; m < size; m++)
            ready[plan_comm_global(cs, f->comm, k, m)] = true;
        n_ready += size;
    }
    return n_ready;
}

/* Judges the table of all ranks' descriptors for rank r. A collective is issued by the members
 * of a group together once all of them are at it; groups of other communicators issue theirs
 * in the same round, and a rank whose group is not whole yet waits for the next round (its
 * peers are then at collectives of other groups that complete without it). Returns 1 when r
 * issues its collective now, 2 when it waits, 0 when all have ended, -1 when r must stop
 * (r->failed and r->error set): a rank failed, or no group can go on (a divergence: a member
 * of the first waiting rank's group is elsewhere). */
static int seq_judge(rt_rank *r, const seq_desc *all, int world) {
    const char *file = file_of(r);
    const ml_comms *cs = r->plan->comms;
    int failed = -1;
    bool ended = true;
    for (int k = 0; k < world; k++) {
        if (all[k].state == SEQ_FAILED && failed < 0)
            failed = k;
        ended &= all[k].state == SEQ_END;
    }
    if (failed >= 0) {
        keep_table(r, all, world);
        r->failure_known_to_all = true;
        if (r->failed)           /* a failing rank keeps and prints its own message */
            return -1;
        char t[200];
        seq_text(&all[failed], failed, cs, file, t, sizeof t);
        snprintf(r->error, sizeof r->error, "%s: error: %s; ending every rank", file, t);
        r->failed = ML_EXIT_RUNTIME;
        r->error_print_here = false;
        return -1;
    }
    if (ended)
        return 0;
    bool *ready = ml_xcalloc((size_t)world, sizeof *ready);
    int n_ready = seq_ready(r, all, world, ready);
    bool mine = ready[r->rank];
    free(ready);
    if (n_ready > 0)
        return mine ? 1 : 2;
    /* Named from the first rank at a collective (one is: none failed, not all ended), against
     * the members of its group that are elsewhere. */
    keep_table(r, all, world);
    int ref = 0;
    while (ref < world - 1 && all[ref].state != SEQ_COLL)
        ref++;
    int size = plan_comm_size(cs, world, all[ref].comm, ref), differ = -1, n_differ = 0;
    for (int m = 0; m < size; m++) {
        int g = plan_comm_global(cs, all[ref].comm, ref, m);
        if (g >= 0 && g < world && g != ref && !seq_fits(&all[g], &all[ref]) && n_differ++ == 0)
            differ = g;
    }
    if (differ < 0)
        differ = ref;
    char a[200], b[200], where[300];
    seq_text(&all[ref], ref, cs, file, a, sizeof a);
    seq_text(&all[differ], differ, cs, file, b, sizeof b);
    snprintf(where, sizeof where, "%s:%u:%u", file, all[ref].line, all[ref].col);
    char more[64] = "";
    if (n_differ > 1)
        snprintf(more, sizeof more, " (and more ranks differ from rank %d)", ref);
    ml_put(r->error, sizeof r->error,
             "%s: error: collective sequence diverges at collective %" PRIu64 ": %s, %s%s", where,
             (all[ref].index < all[differ].index ? all[ref].index : all[differ].index) + 1, a, b,
             more);
    r->failed = ML_EXIT_RUNTIME;
    r->failure_known_to_all = true;
    r->error_print_here = r->rank == 0;
    return -1;
}

/* "FILE:L:C: note: rank R failed at op K (alloc); live requested bytes X" and its kin. */
static void state_line(ml_str *o, const char *file, int rank, const seq_desc *d) {
    const char *name = d->kind == OP_COLL ? ml_colls[d->coll].name
                       : d->kind < OP_KIND_COUNT ? plan_op_names[d->kind] : "end";
    if (d->state == SEQ_END)
        ml_str_printf(o, "%s: note: rank %d had ended its plan (%" PRIu64 " ops, %" PRIu64
                      " collectives)", file, rank, d->pc, d->index);
    else
        ml_str_printf(o, "%s:%u:%u: note: rank %d %s at op %" PRIu64 " (%s)%s", file, d->line,
                      d->col, rank, d->state == SEQ_FAILED ? "failed" : "was", d->pc, name,
                      d->state == SEQ_FAILED ? "" : ", in the sequence check before it");
    ml_str_printf(o, "; live requested bytes %" PRIu64 "\n", d->live);
}

char *rt_failure_state(const rt_rank *r, int max_lines) {
    const exec_state *x = r->exec;
    const seq_desc *all = x ? x->failure_table : NULL;
    ml_str o = {0};
    if (!all) {
        if (!x || !r->failed)
            return NULL;
        seq_desc mine;
        seq_describe(r, -1, &mine);
        state_line(&o, file_of(r), r->rank, &mine);
        return o.s;
    }
    for (int k = 0; k < r->world; k++) {
        if (k == max_lines) {
            ml_str_printf(&o, "%s: note: and %d more ranks\n", file_of(r), r->world - k);
            break;
        }
        state_line(&o, file_of(r), k, &all[k]);
    }
    return o.s;
}

/* Exchanges descriptors over the backend (one rank per process). */
static int seq_exchange(rt_rank *r, int status) {
    seq_desc mine, *all = ml_xcalloc((size_t)r->world, sizeof *all);
    seq_describe(r, status, &mine);
    char err[400] = "";
    int rc;
    if (r->be->allgather_blob(r, &mine, sizeof mine, all, err, sizeof err) != 0) {
        if (!r->failed)
            fail(r, r->pc < r->plan->n_ops ? &r->plan->ops[r->pc] : NULL,
                 "collective sequence check failed: %s", err);
        rc = -1;
    } else {
        rc = seq_judge(r, all, r->world);
    }
    free(all);
    return rc;
}

/* ---- Driver ------------------------------------------------------------------------------------*/

static int baseline(rt_rank **ranks, int n) {
    bool used[COLL_COUNT] = {false};
    for (int k = 0; k < n; k++)
        for (size_t i = 0; i < ranks[k]->plan->n_ops; i++)
            if (ranks[k]->plan->ops[i].kind == OP_COLL &&
                !ml_colls[ranks[k]->plan->ops[i].u.coll.coll].p2p)   /* a send needs its peer */
                used[ranks[k]->plan->ops[i].u.coll.coll] = true;
    const rt_backend_ops *be = ranks[0]->be;
    char err[400] = "";
    if (be->warmup && be->warmup(ranks, n, used, err, sizeof err) != 0) {
        for (int k = 0; k < n; k++)
            fail(ranks[k], NULL, "warm-up before the baseline failed: %s", err);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        rt_mem_reading now;
        memset(&now, 0, sizeof now);
        if (be->mem_read)
            be->mem_read(ranks[k], &now);
        rt_account_free_all(&ranks[k]->acct);
        rt_account_init(&ranks[k]->acct, &now);
    }
    return 0;
}

/* A collective this rank must refuse (a view outside its kept chunk, a bad in-place overlap) is
 * refused before the sequence exchange, so that the exchange tells every peer: refused after it,
 * the peers would be inside the collective while this rank waits to tell them, until the
 * deadline. Returns 0 or -1 (r failed). */
static int refuse_early(rt_rank *r) {
    const plan_op *op = &r->plan->ops[r->pc];
    rt_coll_args args;
    verdict v;
    memset(&args, 0, sizeof args);
    if (op->kind != OP_COLL || validate_coll(r, op, &args, &v) == ERR_NONE)
        return 0;
    return fail(r, op, "%s refused: %s: %s", ml_colls[op->u.coll.coll].name,
                sched_error_names[v.code], v.detail);
}

int rt_run(rt_rank **ranks, int n) {
    if (n < 1)
        return -1;
    for (int k = 0; k < n; k++)
        if (ranks[k]->failed)
            return -1;
    if (baseline(ranks, n) != 0)
        return -1;
    int world = ranks[0]->world;
    bool exchange = n == 1 && world > 1 && ranks[0]->opt->verify_sequence;
    int *status = ml_xcalloc((size_t)n, sizeof *status);
    int *verdicts = ml_xcalloc((size_t)n, sizeof *verdicts);
    rt_rank **issue = ml_xcalloc((size_t)n, sizeof *issue);
    seq_desc *local = ml_xcalloc((size_t)n, sizeof *local);
    int rc = 0;
    for (;;) {
        bool any_failed = false, all_ended = true;
        for (int k = 0; k < n; k++) {
            status[k] = rt_rank_advance(ranks[k]);
            if (status[k] == 1 && refuse_early(ranks[k]) != 0)
                status[k] = -1;
            any_failed |= status[k] < 0;
            all_ended &= status[k] == 0;
        }
        /* verdicts[k]: 1 issue, 2 wait a round (its group is not whole yet), 0 all ended, -1 stop */
        int n_issue = 0;
        bool stop = any_failed, ended = true;
        if (exchange) {
            verdicts[0] = seq_exchange(ranks[0], status[0]);
        } else if (n > 1) {
            /* Every rank is here: judge locally, each rank the same table. */
            for (int k = 0; k < n; k++)
                seq_describe(ranks[k], status[k], &local[k]);
            for (int k = 0; k < n; k++)
                verdicts[k] = seq_judge(ranks[k], local, n);
        } else {
            verdicts[0] = any_failed ? -1 : all_ended ? 0 : 1;
        }
        for (int k = 0; k < n; k++) {
            stop |= verdicts[k] < 0;
            ended &= verdicts[k] == 0;
            if (verdicts[k] == 1)
                issue[n_issue++] = ranks[k];
        }
        if (stop) {
            rc = -1;
            break;
        }
        if (ended)
            break;
        if (n_issue && rt_issue_collective(issue, n_issue) != 0 && !exchange) {
            rc = -1;
            break;
        }
        /* With the exchange, a failed issue goes round once more so peers hear FAILED. */
    }
    free(status);
    free(verdicts);
    free(issue);
    free(local);
    return rc;
}

int rt_gather_blobs(rt_rank *r, const void *mine, size_t len, int root, void **all, size_t *lens,
                    char *err, size_t elen) {
    const rt_backend_ops *be = r->be;
    if (r->world == 1) {
        /* One rank holds every blob already, whoever launched it: `mpirun -np 1` at world 1
         * has a launcher but the cuda backend then drives its one GPU without MPI, so asking
         * the backend would fail ("not used with one process driving every GPU"). */
        *all = malloc(len ? len : 1);
        if (!*all) {
            snprintf(err, elen, "out of host memory (%zu bytes)", len);
            return -1;
        }
        memcpy(*all, mine, len);
        lens[0] = len;
        return 0;
    }
    if (be->gatherv_blob)
        return be->gatherv_blob(r, mine, len, root, all, lens, err, elen);
    /* Two allgather rounds: the sizes, then every blob padded to the largest. */
    int world = r->world;
    uint64_t my_len = len, *sizes = ml_xcalloc((size_t)world, sizeof *sizes);
    *all = NULL;
    if (be->allgather_blob(r, &my_len, sizeof my_len, sizes, err, elen) != 0) {
        free(sizes);
        return -1;
    }
    uint64_t max = 0, total = 0;
    for (int k = 0; k < world; k++) {
        max = sizes[k] > max ? sizes[k] : max;
        total += sizes[k];
    }
    char *padded = ml_xcalloc(max ? max : 1, 1), *every = ml_xcalloc((size_t)(max ? max : 1), (size_t)world);
    memcpy(padded, mine, len);
    int rc = be->allgather_blob(r, padded, (size_t)max, every, err, elen);
    if (rc == 0 && r->rank == root) {
        char *out = ml_xmalloc(total ? total : 1);
        size_t at = 0;
        for (int k = 0; k < world; k++) {
            memcpy(out + at, every + (size_t)k * max, sizes[k]);
            lens[k] = sizes[k];
            at += sizes[k];
        }
        *all = out;
    }
    free(padded);
    free(every);
    free(sizes);
    return rc;
}
