/* bench.c — the timed loop driver of `memlife bench` (bench.h, docs/bench.md).
 *
 * The driver walks each local rank's plan itself, part by part (setup, timed part, teardown), and
 * hands the executor only what the executor does: runs of plain ops (through a view of the plan
 * that holds just them) and collectives (rt_issue_collective, for every local rank at once). It
 * keeps the region markers for itself: NVTX ranges, and the kernel pass's windows. The executor
 * sees a copy of the backend's table with two changes: no memory reading (a cudaMemGetInfo after
 * every op would sit between the launches being timed; the bench measures no memory) and a spy
 * on `collective` that records, once per plan and size, the calls the bare mode replays. */
#include "bench.h"
#include "nvtx.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_mode_names[BENCH_MODE_COUNT] = {"memlife", "bare", "graph"};

void bench_options_default(bench_options *o) {
    memset(o, 0, sizeof *o);
    o->warmup = 3;
    o->cycles = 10;
    o->bare = true;
}

struct bench {
    const rt_backend_ops *real;
    rt_backend_ops ops;        /* what the executor drives: real, spied, without mem_read */
    const rt_options *opt;
    bench_options bo;
    int world, n_local;
};

/* ---- The spy ----------------------------------------------------------------------------------
 * While `recording` is set, every collective the executor issues is copied there (one rt_coll_args
 * per local rank and call) on its way to the backend. One bench runs at a time in a process. */
static struct {
    const rt_backend_ops *real;
    ml_vec *recording;
} spy;

static int spy_collective(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    if (spy.recording)
        for (int k = 0; k < n; k++)
            *(rt_coll_args *)ml_vec_push(spy.recording) = args[k];
    return spy.real->collective(ranks, args, n, err, len);
}

bench *bench_new(const rt_backend_ops *be, const rt_options *o, const bench_options *bo, int world,
                 int n_local) {
    bench *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->real = be;
    b->ops = *be;
    b->ops.mem_read = NULL;
    b->ops.collective = spy_collective;
    b->opt = o;
    b->bo = *bo;
    b->world = world;
    b->n_local = n_local;
    spy.real = be;
    spy.recording = NULL;
    return b;
}

void bench_free(bench *b) { free(b); }

/* ---- What a plan times ------------------------------------------------------------------------- */

int bench_span(const rank_plan *p, size_t *first, size_t *end) {
    size_t region_first = SIZE_MAX, region_end = 0, coll_first = SIZE_MAX, coll_end = 0;
    int depth = 0;
    for (size_t i = 0; i < p->n_ops; i++) {
        switch (p->ops[i].kind) {
        case OP_EXPECT_BEGIN:
            i++;                  /* the op it wraps is refused, never issued */
            break;
        case OP_REGION_BEGIN:
            if (depth++ == 0 && region_first == SIZE_MAX)
                region_first = i;
            break;
        case OP_REGION_END:
            if (--depth == 0)
                region_end = i + 1;
            break;
        case OP_COLL:
            if (coll_first == SIZE_MAX)
                coll_first = i;
            coll_end = i + 1;
            break;
        default:
            break;
        }
    }
    *first = region_first != SIZE_MAX ? region_first : coll_first;
    *end = region_first != SIZE_MAX ? region_end : coll_end;
    return *first == SIZE_MAX ? -1 : 0;
}

static const char *plan_label(const rank_plan *p) {
    const char *n = p->s->plans[p->plan_index].name;
    return n && *n ? n : p->s->name;
}

static bool timed_kind(plan_op_kind k) {
    return k == OP_COLL || k == OP_COPY || k == OP_RECORD || k == OP_WAIT || k == OP_COMPUTE ||
           k == OP_REGION_BEGIN || k == OP_REGION_END;
}

int bench_check_plan(const rank_plan *p, ml_diags *d) {
    const char *file = p->s->file;
    size_t first, end;
    if (bench_span(p, &first, &end) != 0) {
        ml_diag_add(d, ML_DIAG_ERROR, file, p->s->plans[p->plan_index].mark, p->rank, "bench_span",
                    "plan '%s' has no collective to time", plan_label(p));
        return -1;
    }
    bool coll = false;
    for (size_t i = first; i < end; i++) {
        const plan_op *op = &p->ops[i];
        if (!timed_kind(op->kind)) {
            ml_diag_add(d, ML_DIAG_ERROR, file, plan_op_mark(op), p->rank, "bench_span",
                        "'%s' inside the timed part of plan '%s': bench times only collectives, "
                        "copies, record, wait and compute there; allocate, initialize, sync and "
                        "check outside the regions", plan_op_names[op->kind], plan_label(p));
            return -1;
        }
        coll |= op->kind == OP_COLL;
    }
    if (!coll) {
        ml_diag_add(d, ML_DIAG_ERROR, file, plan_op_mark(&p->ops[first]), p->rank, "bench_span",
                    "the timed part of plan '%s' (its regions) holds no collective",
                    plan_label(p));
        return -1;
    }
    return 0;
}

void bench_plan_bytes(const rank_plan *p, uint64_t *payload, double *bus_bytes) {
    size_t first, end;
    *payload = 0;
    *bus_bytes = 0;
    if (bench_span(p, &first, &end) != 0)
        return;
    for (size_t i = first; i < end; i++) {
        const plan_op *op = &p->ops[i];
        if (op->kind != OP_COLL)
            continue;
        ml_coll c = op->u.coll.coll;
        uint64_t send = ml_coll_send_count(c, op->u.coll.count, p->world);
        uint64_t recv = ml_coll_recv_count(c, op->u.coll.count, p->world);
        uint64_t full = (send > recv ? send : recv) * ml_dtypes[op->u.coll.send.dtype].size;
        *payload = full > *payload ? full : *payload;
        *bus_bytes += (double)full * ml_colls[c].busbw_factor(p->world);
    }
}

void bench_plan_result_free(bench_plan_result *r) {
    for (int m = 0; m < BENCH_MODE_COUNT; m++)
        free(r->seconds[m]);
    for (size_t k = 0; k < r->n_windows; k++) {
        free(r->windows[k].label);
        kn_tally_free(&r->windows[k].tally);
    }
    free(r->windows);
    memset(r, 0, sizeof *r);
}

/* ---- A session: every plan of one size, set up on this process's ranks ---------------------------*/

typedef struct {
    const char *name;
    rt_rank *ranks;            /* [n_local] */
    rt_rank **ptrs;
    size_t *first, *end;       /* the timed part of each local rank's plan */
    ml_vec *inits;             /* per local rank: size_t indices of the setup's init ops */
    ml_vec calls;              /* rt_coll_args, n_local per recorded call (bare mode) */
    bool recorded;
    void **graphs;             /* [n_local] (graph mode) */
} bplan;

typedef struct {
    size_t plan;
    const char *label;
    uint64_t t0, t1;
} interval;

typedef struct {
    bench *b;
    bplan *plans;
    size_t n_plans;
    bool windows;              /* kernel pass: sync and read CUPTI's clock at region markers */
    ml_vec intervals;          /* interval */
    struct {
        const char *label;
        uint64_t t0;
    } open[64];
    int depth;
    size_t plan_now;
    char *err;
    size_t elen;
} session;

/* The first failing rank's message into ss->err (else keeps what a backend call put there). */
static int failed(session *ss) {
    for (size_t p = 0; p < ss->n_plans; p++)
        for (int k = 0; ss->plans[p].ranks && k < ss->b->n_local; k++)
            if (ss->plans[p].ranks[k].failed && ss->plans[p].ranks[k].error[0]) {
                snprintf(ss->err, ss->elen, "%s", ss->plans[p].ranks[k].error);
                return -1;
            }
    return -1;
}

/* Plain ops [from, to) of r through the executor, as a plan that holds only them. */
static int exec_plain(rt_rank *r, size_t from, size_t to) {
    if (from >= to)
        return 0;
    const rank_plan *whole = r->plan;
    rank_plan part = *whole;
    part.ops = whole->ops + from;
    part.n_ops = to - from;
    r->plan = &part;
    r->pc = 0;
    int rc = rt_rank_advance(r);
    r->pc += from;
    r->plan = whole;
    return rc < 0 ? -1 : 0;
}

/* Where r must stop at or after pc, before end: a collective or a region marker. */
static size_t next_stop(const rank_plan *p, size_t pc, size_t end) {
    for (size_t i = pc; i < end; i++) {
        plan_op_kind k = p->ops[i].kind;
        if (k == OP_EXPECT_BEGIN)
            i++;
        else if (k == OP_COLL || k == OP_REGION_BEGIN || k == OP_REGION_END)
            return i;
    }
    return end;
}

static int sync_all(session *ss, size_t p) {
    bplan *bp = &ss->plans[p];
    for (int k = 0; k < ss->b->n_local; k++)
        if (ss->b->real->sync(bp->ptrs[k], SYNC_DEVICE, 0, 0, ss->err, ss->elen) != 0)
            return -1;
    return 0;
}

/* A region marker of local rank 0: NVTX always; in the kernel pass, a window boundary with every
 * local GPU idle, so that no kernel straddles it. */
static int region_marker(session *ss, size_t p, const plan_op *op) {
    const char *name = sched_sym_name(ss->plans[p].ranks[0].plan->s, SYM_REGION,
                                      op->u.region.region);
    bool begin = op->kind == OP_REGION_BEGIN;
    if (begin)
        rt_nvtx_push(name ? name : "region");
    if (ss->windows) {
        if (sync_all(ss, p) != 0)
            return -1;
        if (begin && ss->depth < (int)ML_ARRAY_LEN(ss->open)) {
            ss->open[ss->depth].label = name ? name : "";
            ss->open[ss->depth++].t0 = kn_now();
        } else if (!begin && ss->depth > 0) {
            ss->depth--;
            *(interval *)ml_vec_push(&ss->intervals) =
                (interval){p, ss->open[ss->depth].label, ss->open[ss->depth].t0, kn_now()};
        }
    }
    if (!begin)
        rt_nvtx_pop();
    return 0;
}

/* Local rank k on to its next collective (1), the end of its part (0), or a failure (-1). */
static int advance(session *ss, size_t p, int k, size_t end) {
    rt_rank *r = &ss->plans[p].ranks[k];
    while (r->pc < end) {
        size_t stop = next_stop(r->plan, r->pc, end);
        if (exec_plain(r, r->pc, stop) != 0)
            return -1;
        r->pc = stop;
        if (stop == end)
            break;
        const plan_op *op = &r->plan->ops[stop];
        if (op->kind == OP_COLL)
            return 1;
        if (k == 0 && region_marker(ss, p, op) != 0)
            return -1;
        r->pc++;
    }
    return 0;
}

/* Runs ops [from[k], to[k]) of plan p on every local rank, collectives together. */
static int run_part(session *ss, size_t p, const size_t *from, const size_t *to) {
    bplan *bp = &ss->plans[p];
    int n = ss->b->n_local;
    for (int k = 0; k < n; k++)
        bp->ranks[k].pc = from[k];
    for (;;) {
        int at_coll = 0, ended = 0;
        for (int k = 0; k < n; k++) {
            int s = advance(ss, p, k, to[k]);
            if (s < 0)
                return failed(ss);
            at_coll += s == 1;
            ended += s == 0;
        }
        if (ended == n)
            return 0;
        if (at_coll != n) {
            snprintf(ss->err, ss->elen, "%s: error: plan '%s': the local ranks' parts hold "
                     "different numbers of collectives", bp->ranks[0].plan->s->file, bp->name);
            return -1;
        }
        if (rt_issue_collective(bp->ptrs, n) != 0)
            return failed(ss);
    }
}

static int run_timed_part(session *ss, size_t p) {
    return run_part(ss, p, ss->plans[p].first, ss->plans[p].end);
}

/* The inputs as the setup left them: its init ops once more. */
static int reset_inputs(session *ss, size_t p) {
    bplan *bp = &ss->plans[p];
    for (int k = 0; k < ss->b->n_local; k++)
        for (size_t j = 0; j < bp->inits[k].n; j++) {
            size_t i = ML_VEC_AT(&bp->inits[k], size_t, j);
            if (exec_plain(&bp->ranks[k], i, i + 1) != 0)
                return failed(ss);
        }
    return 0;
}

/* Every rank of the job here before anyone starts a timed span (a host barrier; nothing to do
 * when this process holds every rank). */
static int line_up(session *ss, size_t p) {
    bench *b = ss->b;
    if (b->world == b->n_local)
        return 0;
    unsigned char mine = 1, *all = calloc((size_t)b->world, 1);
    if (!all)
        abort();
    int rc = b->real->allgather_blob(ss->plans[p].ptrs[0], &mine, 1, all, ss->err, ss->elen);
    free(all);
    return rc;
}

static int open_plan(session *ss, size_t p, const rank_plan *const *plans) {
    bench *b = ss->b;
    bplan *bp = &ss->plans[p];
    int n = b->n_local;
    bp->ranks = calloc((size_t)n, sizeof *bp->ranks);
    bp->ptrs = calloc((size_t)n, sizeof *bp->ptrs);
    bp->first = calloc((size_t)n, sizeof *bp->first);
    bp->end = calloc((size_t)n, sizeof *bp->end);
    bp->inits = calloc((size_t)n, sizeof *bp->inits);
    bp->graphs = calloc((size_t)n, sizeof *bp->graphs);
    size_t *zero = calloc((size_t)n, sizeof *zero);
    if (!bp->ranks || !bp->ptrs || !bp->first || !bp->end || !bp->inits || !bp->graphs || !zero)
        abort();
    ml_vec_init(&bp->calls, sizeof(rt_coll_args));
    int rc = 0;
    for (int k = 0; k < n; k++) {
        const rank_plan *rp = plans[p * (size_t)n + (size_t)k];
        bp->ptrs[k] = &bp->ranks[k];
        ml_vec_init(&bp->inits[k], sizeof(size_t));
        if (rt_rank_init(&bp->ranks[k], &b->ops, b->opt, rp, k) != 0)
            rc = -1;
        if (bench_span(rp, &bp->first[k], &bp->end[k]) != 0) {
            snprintf(ss->err, ss->elen, "%s: error: plan '%s' has no collective to time",
                     rp->s->file, plan_label(rp));
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < bp->first[k]; i++)
            if (rp->ops[i].kind == OP_INIT)
                *(size_t *)ml_vec_push(&bp->inits[k]) = i;
    }
    bp->name = plan_label(plans[p * (size_t)n]);
    if (rc != 0) {
        free(zero);
        return failed(ss);
    }
    /* As `run` does: NCCL connects lazily, and the plan's streams must exist before timing. */
    bool used[COLL_COUNT] = {false};
    if (b->real->warmup && b->real->warmup(bp->ptrs, n, used, ss->err, ss->elen) != 0)
        rc = -1;
    if (rc == 0)
        rc = run_part(ss, p, zero, bp->first);
    free(zero);
    return rc;
}

/* One graph per rank from the timed part (the capture records, nothing runs). */
static int capture(session *ss, size_t p) {
    bplan *bp = &ss->plans[p];
    const rt_backend_ops *be = ss->b->real;
    if (be->graph_begin(bp->ptrs, ss->b->n_local, ss->err, ss->elen) != 0)
        return -1;
    int rc = run_timed_part(ss, p);
    char end_err[400] = "";
    int end = be->graph_end(bp->ptrs, ss->b->n_local, bp->graphs, end_err, sizeof end_err);
    if (rc == 0 && end != 0) {
        snprintf(ss->err, ss->elen, "%s: error: plan '%s': %s", bp->ranks[0].plan->s->file,
                 bp->name, end_err);
        rc = -1;
    }
    return rc;
}

/* Every plan's teardown (data checks, frees); failed check rows counted per plan, the first
 * one of each plan described in out. */
static int teardown(session *ss, size_t *check_failures, bench_plan_result *out) {
    int n = ss->b->n_local, rc = 0;
    size_t *to = calloc((size_t)n, sizeof *to);
    if (!to)
        abort();
    for (size_t p = 0; p < ss->n_plans && rc == 0; p++) {
        bplan *bp = &ss->plans[p];
        for (int k = 0; k < n; k++)
            to[k] = bp->ranks[k].plan->n_ops;
        rc = run_part(ss, p, bp->end, to);
        for (int k = 0; k < n; k++)
            for (size_t j = 0; j < bp->ranks[k].checks.n; j++) {
                const rt_check_row *row = &ML_VEC_AT(&bp->ranks[k].checks, rt_check_row, j);
                if (row->pass)
                    continue;
                if (!check_failures[p]++)
                    snprintf(out[p].check_failure, sizeof out[p].check_failure,
                             "%s:%u:%u: error: check '%s' failed on rank %d after the timed "
                             "part of plan '%s': %s", bp->ranks[k].plan->s->file,
                             row->step->mark.line, row->step->mark.col, row->name, row->rank,
                             bp->name, row->detail);
            }
    }
    free(to);
    return rc;
}

static void free_session(session *ss) {
    bench *b = ss->b;
    for (size_t p = 0; p < ss->n_plans; p++) {
        bplan *bp = &ss->plans[p];
        for (int k = 0; bp->ranks && k < b->n_local; k++) {
            if (bp->graphs[k] && b->real->graph_drop)
                b->real->graph_drop(&bp->ranks[k], bp->graphs[k]);
            rt_rank_free(&bp->ranks[k]);
            ml_vec_free(&bp->inits[k]);
        }
        ml_vec_free(&bp->calls);
        free(bp->ranks);
        free(bp->ptrs);
        free(bp->first);
        free(bp->end);
        free(bp->inits);
        free(bp->graphs);
    }
    free(ss->plans);
    ml_vec_free(&ss->intervals);
}

static int open_session(session *ss, bench *b, const rank_plan *const *plans, size_t n_plans,
                        char *err, size_t len) {
    memset(ss, 0, sizeof *ss);
    ss->b = b;
    ss->n_plans = n_plans;
    ss->err = err;
    ss->elen = len;
    ss->plans = calloc(n_plans ? n_plans : 1, sizeof *ss->plans);
    if (!ss->plans)
        abort();
    ml_vec_init(&ss->intervals, sizeof(interval));
    for (size_t p = 0; p < n_plans; p++)
        if (open_plan(ss, p, plans) != 0)
            return -1;
    return 0;
}

/* ---- Timing ------------------------------------------------------------------------------------ */

/* One timed run of plan p in mode m: reset, wait, line up, then the span; secs[k] per local rank. */
static int timed_run(session *ss, size_t p, bench_mode m, double *secs) {
    bench *b = ss->b;
    bplan *bp = &ss->plans[p];
    int n = b->n_local;
    if (reset_inputs(ss, p) != 0 || sync_all(ss, p) != 0 || line_up(ss, p) != 0)
        return -1;
    char range[160];
    snprintf(range, sizeof range, m == BENCH_MEMLIFE ? "%s" : "%s (%s)", bp->name,
             bench_mode_names[m]);
    rt_nvtx_push(range);
    int rc = b->real->time_begin(bp->ptrs, n, m == BENCH_GRAPH, ss->err, ss->elen);
    if (rc == 0 && m == BENCH_MEMLIFE) {
        spy.recording = bp->recorded ? NULL : &bp->calls;
        rc = run_timed_part(ss, p);
        spy.recording = NULL;
        bp->recorded = rc == 0;
    } else if (rc == 0 && m == BENCH_BARE) {
        const rt_coll_args *args = bp->calls.items;
        for (size_t j = 0; rc == 0 && j < bp->calls.n; j += (size_t)n)
            rc = b->real->collective_bare(bp->ptrs, args + j, n, ss->err, ss->elen);
    } else if (rc == 0) {
        rc = b->real->graph_launch(bp->ptrs, n, bp->graphs, ss->err, ss->elen);
    }
    if (rc == 0)
        rc = b->real->time_end(bp->ptrs, n, secs, ss->err, ss->elen);
    rt_nvtx_pop();
    return rc;
}

/* v[0..count) combined over every rank of the job, on every process: the largest (the critical
 * rank's time) or the sum (failed check rows). In one process v is complete already. */
static int over_ranks(session *ss, double *v, size_t count, bool sum) {
    bench *b = ss->b;
    if (b->world == b->n_local)
        return 0;
    double *all = calloc(count * (size_t)b->world, sizeof *all);
    if (!all)
        abort();
    int rc = b->real->allgather_blob(ss->plans[0].ptrs[0], v, count * sizeof *v, all, ss->err,
                                     ss->elen);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        v[i] = sum ? 0 : v[i];
        for (int r = 0; r < b->world; r++) {
            double x = all[(size_t)r * count + i];
            v[i] = sum ? v[i] + x : x > v[i] ? x : v[i];
        }
    }
    free(all);
    return rc;
}

static int cycles_run(session *ss, bench_plan_result *out) {
    bench *b = ss->b;
    size_t n_plans = ss->n_plans, cycles = (size_t)b->bo.cycles;
    bool on[BENCH_MODE_COUNT] = {true, b->bo.bare, b->bo.graph};
    size_t count = n_plans * BENCH_MODE_COUNT * cycles;
    double *crit = calloc(count ? count : 1, sizeof *crit);
    double *secs = calloc((size_t)b->n_local, sizeof *secs);
    if (!crit || !secs)
        abort();
    /* The entries of a cycle, in the forward order: each plan, each of its modes. */
    size_t n_entries = 0, (*entries)[2] = calloc(n_plans * BENCH_MODE_COUNT, sizeof *entries);
    if (!entries)
        abort();
    for (size_t p = 0; p < n_plans; p++)
        for (int m = 0; m < BENCH_MODE_COUNT; m++)
            if (on[m]) {
                entries[n_entries][0] = p;
                entries[n_entries++][1] = (size_t)m;
            }
    int rc = 0;
    size_t total = (size_t)b->bo.warmup + cycles;
    for (size_t c = 0; c < total && rc == 0; c++) {
        bool measured = c >= (size_t)b->bo.warmup;
        size_t mc = measured ? c - (size_t)b->bo.warmup : 0;
        bool reverse = measured && mc % 2 == 1;
        for (size_t j = 0; j < n_entries && rc == 0; j++) {
            size_t e = reverse ? n_entries - 1 - j : j;
            size_t p = entries[e][0], m = entries[e][1];
            rc = timed_run(ss, p, (bench_mode)m, secs);
            if (rc != 0 || !measured)
                continue;
            double worst = 0;
            for (int k = 0; k < b->n_local; k++)
                worst = secs[k] > worst ? secs[k] : worst;
            crit[(p * BENCH_MODE_COUNT + m) * cycles + mc] = worst;
        }
    }
    if (rc == 0)
        rc = over_ranks(ss, crit, count, false);
    for (size_t p = 0; rc == 0 && p < n_plans; p++)
        for (int m = 0; m < BENCH_MODE_COUNT; m++) {
            if (!on[m])
                continue;
            out[p].seconds[m] = calloc(cycles, sizeof(double));
            if (!out[p].seconds[m])
                abort();
            memcpy(out[p].seconds[m], crit + (p * BENCH_MODE_COUNT + (size_t)m) * cycles,
                   cycles * sizeof(double));
        }
    free(crit);
    free(secs);
    free(entries);
    return rc;
}

/* Teardown, the failed check rows of every rank counted into out, and the session freed. */
static int finish(session *ss, bench_plan_result *out, int rc) {
    size_t *mine = calloc(ss->n_plans ? ss->n_plans : 1, sizeof *mine);
    double *fails = calloc(ss->n_plans ? ss->n_plans : 1, sizeof *fails);
    if (!fails || !mine)
        abort();
    if (rc == 0)
        rc = teardown(ss, mine, out);
    for (size_t p = 0; p < ss->n_plans; p++)
        fails[p] = (double)mine[p];
    if (rc == 0)
        rc = over_ranks(ss, fails, ss->n_plans, true);
    for (size_t p = 0; rc == 0 && p < ss->n_plans; p++)
        out[p].check_failures = (size_t)fails[p];
    free_session(ss);
    free(fails);
    free(mine);
    return rc;
}

int bench_time(bench *b, const rank_plan *const *plans, size_t n_plans, bench_plan_result *out,
               char *err, size_t len) {
    session ss;
    memset(out, 0, n_plans * sizeof *out);
    int rc = open_session(&ss, b, plans, n_plans, err, len);
    for (size_t p = 0; rc == 0 && b->bo.graph && p < n_plans; p++)
        rc = capture(&ss, p);
    if (rc == 0)
        rc = cycles_run(&ss, out);
    return finish(&ss, out, rc);
}

/* ---- Kernel pass --------------------------------------------------------------------------------- */

static bench_window *window_get(bench_plan_result *r, const char *label) {
    for (size_t k = 0; k < r->n_windows; k++)
        if (!strcmp(r->windows[k].label, label))
            return &r->windows[k];
    r->windows = realloc(r->windows, (r->n_windows + 1) * sizeof *r->windows);
    if (!r->windows)
        abort();
    bench_window *w = &r->windows[r->n_windows++];
    memset(w, 0, sizeof *w);
    w->label = strdup(label);
    if (!w->label)
        abort();
    return w;
}

/* Plan p's timed part once, eagerly, windows at its boundaries and at each region's. */
static int kernel_run(session *ss, size_t p) {
    if (reset_inputs(ss, p) != 0 || sync_all(ss, p) != 0 || line_up(ss, p) != 0)
        return -1;
    ss->windows = true;
    ss->depth = 0;
    uint64_t t0 = kn_now();
    rt_nvtx_push(ss->plans[p].name);
    int rc = run_timed_part(ss, p);
    if (rc == 0)
        rc = sync_all(ss, p);
    rt_nvtx_pop();
    ss->windows = false;
    if (rc == 0)
        *(interval *)ml_vec_push(&ss->intervals) = (interval){p, "", t0, kn_now()};
    return rc;
}

/* This process's windows, whole part first, then regions in the order they first opened. */
static void attribute(session *ss, const kn_kernel *ks, size_t n, bench_plan_result *local) {
    for (size_t p = 0; p < ss->n_plans; p++)
        window_get(&local[p], "");
    for (size_t j = 0; j < ss->intervals.n; j++) {
        const interval *iv = &ML_VEC_AT(&ss->intervals, interval, j);
        kn_tally_window(&window_get(&local[iv->plan], iv->label)->tally, ks, n, iv->t0, iv->t1);
    }
}

/* Lines "plan TAB label TAB count TAB name" ('*' for the whole part's empty label; a window
 * without kernels is one line of count 0), for the gather to rank 0. */
static char *windows_text(const bench_plan_result *local, size_t n_plans) {
    ml_str o = {0};
    for (size_t p = 0; p < n_plans; p++)
        for (size_t k = 0; k < local[p].n_windows; k++) {
            const bench_window *w = &local[p].windows[k];
            const char *label = w->label[0] ? w->label : "*";
            if (!w->tally.n_names)
                ml_str_printf(&o, "%zu\t%s\t0\t\n", p, label);
            for (size_t j = 0; j < w->tally.n_names; j++)
                ml_str_printf(&o, "%zu\t%s\t%" PRIu64 "\t%s\n", p, label,
                              w->tally.names[j].count, w->tally.names[j].name);
        }
    if (!o.s)
        ml_str_append(&o, "", 0);
    return o.s;
}

static void merge_text(const char *text, size_t len, bench_plan_result *out, size_t n_plans) {
    const char *at = text, *stop = text + len;
    while (at < stop) {
        const char *nl = memchr(at, '\n', (size_t)(stop - at));
        size_t n = nl ? (size_t)(nl - at) : (size_t)(stop - at);
        char line[1400];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), at);
        at += n + 1;
        char *f[4] = {line, NULL, NULL, NULL};
        for (int k = 1; k < 4 && f[k - 1]; k++) {
            char *tab = strchr(f[k - 1], '\t');
            f[k] = tab ? tab + 1 : NULL;
            if (tab)
                *tab = '\0';
        }
        size_t p = (size_t)strtoull(f[0], NULL, 10);
        if (!f[3] || p >= n_plans)
            continue;
        bench_window *w = window_get(&out[p], strcmp(f[1], "*") ? f[1] : "");
        uint64_t count = strtoull(f[2], NULL, 10);
        if (count)
            kn_tally_add(&w->tally, f[3], count);
    }
}

/* Every rank's windows summed on global rank 0 (in one process: this process's are all). */
static int gather_windows(session *ss, bench_plan_result *local, bench_plan_result *out) {
    bench *b = ss->b;
    char *text = windows_text(local, ss->n_plans);
    int rc = 0;
    if (b->world == b->n_local) {
        merge_text(text, strlen(text), out, ss->n_plans);
    } else {
        void *all = NULL;
        size_t *lens = calloc((size_t)b->world, sizeof *lens);
        if (!lens)
            abort();
        rc = rt_gather_blobs(ss->plans[0].ptrs[0], text, strlen(text), 0, &all, lens, ss->err,
                             ss->elen);
        size_t at = 0;
        for (int r = 0; rc == 0 && all && r < b->world; r++) {
            merge_text((const char *)all + at, lens[r], out, ss->n_plans);
            at += lens[r];
        }
        free(all);
        free(lens);
    }
    free(text);
    for (size_t p = 0; p < ss->n_plans; p++)
        out[p].kernels_done = rc == 0;
    return rc;
}

/* Whether every rank collects kernels; why says which cannot and why. */
static int agree_on_cupti(session *ss, bool mine_ok, char *why, size_t len) {
    bench *b = ss->b;
    if (b->world == b->n_local)
        return mine_ok ? 0 : 1;
    unsigned char mine = mine_ok, *all = calloc((size_t)b->world, 1);
    if (!all)
        abort();
    int rc = b->real->allgather_blob(ss->plans[0].ptrs[0], &mine, 1, all, ss->err, ss->elen);
    for (int r = 0; rc == 0 && r < b->world; r++)
        if (!all[r]) {
            if (mine_ok)
                snprintf(why, len, "rank %d cannot collect kernel records (CUPTI)", r);
            rc = 1;
            break;
        }
    free(all);
    return rc;
}

int bench_kernels(bench *b, const rank_plan *const *plans, size_t n_plans, bench_plan_result *out,
                  char *err, size_t len) {
    session ss;
    int rc = open_session(&ss, b, plans, n_plans, err, len);
    char why[400] = "";
    bool began = false;
    if (rc == 0) {
        began = kn_begin(why, sizeof why) == 0;
        rc = agree_on_cupti(&ss, began, why, sizeof why);
    }
    int unavailable = rc == 1;
    if (unavailable) {
        snprintf(err, len, "%s", why);
        rc = 0;
    }
    for (size_t p = 0; rc == 0 && !unavailable && p < n_plans; p++)
        rc = kernel_run(&ss, p);
    kn_kernel *ks = NULL;
    size_t nk = 0;
    uint64_t dropped = 0;
    if (began && kn_end(&ks, &nk, &dropped, why, sizeof why) != 0 && rc == 0) {
        snprintf(err, len, "%s", why);
        rc = -1;
    }
    if (rc == 0 && !unavailable) {
        bench_plan_result *local = calloc(n_plans ? n_plans : 1, sizeof *local);
        if (!local)
            abort();
        attribute(&ss, ks, nk, local);
        rc = gather_windows(&ss, local, out);
        for (size_t p = 0; p < n_plans; p++)
            bench_plan_result_free(&local[p]);
        free(local);
    }
    kn_kernels_free(ks, nk);
    bench_plan_result *ignored = calloc(n_plans ? n_plans : 1, sizeof *ignored);
    if (!ignored)
        abort();
    rc = finish(&ss, ignored, rc);
    for (size_t p = 0; p < n_plans; p++)
        bench_plan_result_free(&ignored[p]);
    free(ignored);
    return rc != 0 ? -1 : unavailable;
}
