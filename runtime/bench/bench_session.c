/* SPDX-License-Identifier: MIT */
/* bench_session.c — a benchmark session: every plan of one size set up on this process's ranks,
 * run part by part (bench_int.h). */
#include "bench/bench_int.h"
#include "base/nvtx.h"

#include <stdlib.h>
#include <string.h>

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

int bs_sync(session *ss, size_t p) {
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
        if (bs_sync(ss, p) != 0)
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

int bs_run_timed(session *ss, size_t p) {
    bplan *bp = &ss->plans[p];
    for (int k = 0; k < ss->b->n_local; k++)
        bp->ranks[k].skip_device_reading = true;
    int rc = run_part(ss, p, bp->first, bp->end);
    for (int k = 0; k < ss->b->n_local; k++)
        bp->ranks[k].skip_device_reading = false;
    return rc;
}

/* Copies, taken when the setup is done, of every buffer the setup wrote (its inits, copies,
 * scales, computes): the inputs, as the setup left them. Each timed run starts from fresh copies
 * of them, as the chapter's base.clone() before each collective: the input is written on the
 * device right before the span, whether or not the timed part writes it (a variant restoring only
 * what the timed part writes read 1.016-1.039 for decomposed at 16 MiB in two noisy 2 x H200
 * runs, docs/evidence bench-7/-8; too few to blame it, so the chapter's semantics stay). Why not
 * run the inits again: an init goes through host memory (fill blocks, then a host-to-device
 * copy), and for large tensors that leaves the next span's host path cold. Measured on 2 x H200
 * (docs/evidence/2026-11-30-h200x2-reset-probe.log, 16 MiB): after such a reset the bare
 * ncclAllReduce call took 19.5 us to issue and memlife's code around it 3.8 us; with no host
 * reset (and spinning waits) 8.1 us and 0.7 us. The slower issue reached the GPU span and made
 * memlife/bare 1.03-1.05. A device-side copy costs the host nothing. */
static int take_snapshots(session *ss, size_t p) {
    bench *b = ss->b;
    bplan *bp = &ss->plans[p];
    int rc = 0;
    for (int k = 0; k < b->n_local && rc == 0; k++) {
        rt_rank *r = &bp->ranks[k];
        uint32_t n = r->n_mems;
        bool *setup = ml_xcalloc(n ? n : 1, sizeof *setup);
        ml_vec dyn;
        ml_vec_init(&dyn, sizeof(plan_access));
        for (size_t i = 0; i < bp->first[k]; i++) {
            plan_access fixed[PLAN_FIXED_ACCESSES];
            const plan_access *acc;
            size_t na = plan_op_accesses(r->plan, &r->plan->ops[i], fixed, &acc, &dyn);
            for (size_t j = 0; j < na; j++)
                if (acc[j].write && acc[j].v->buf < n)
                    setup[acc[j].v->buf] = true;
        }
        ml_vec_free(&dyn);
        for (uint32_t buf = 0; buf < n && rc == 0; buf++) {
            const rt_mem *m = &r->mems[buf];
            if (!setup[buf] || !m->ptr || m->bytes == 0)
                continue;
            bench_snap *sn = ml_vec_push(&bp->snaps[k]);
            *sn = (bench_snap){.buf = buf, .bytes = m->bytes, .ptr = m->ptr};
            if (b->real->alloc(r, sn->bytes, 0, &sn->mem, ss->err, ss->elen) != 0) {
                bp->snaps[k].n--;
                rc = -1;
            } else {
                rc = b->real->copy(r, &sn->mem, 0, m, 0, sn->bytes, SCHED_DEFAULT_STREAM,
                                   ss->err, ss->elen);
            }
        }
        free(setup);
    }
    return rc == 0 ? bs_sync(ss, p) : -1;
}

/* The inputs as the setup left them: each snapshot copied back on the device. The timed part can
 * neither allocate, free nor release (bench_span refuses it), so the buffer is the one the
 * snapshot was taken of; a mismatch is a bug here, said as one. */
int bs_reset(session *ss, size_t p) {
    bench *b = ss->b;
    bplan *bp = &ss->plans[p];
    for (int k = 0; k < b->n_local; k++) {
        rt_rank *r = &bp->ranks[k];
        for (size_t j = 0; j < bp->snaps[k].n; j++) {
            bench_snap *sn = &ML_VEC_AT(&bp->snaps[k], bench_snap, j);
            rt_mem *m = &r->mems[sn->buf];
            if (m->ptr != sn->ptr) {
                snprintf(ss->err, ss->elen, "internal: buffer %u of plan '%s' changed between "
                         "timed runs", sn->buf, bp->name);
                return -1;
            }
            if (b->real->copy(r, m, 0, &sn->mem, 0, sn->bytes, SCHED_DEFAULT_STREAM, ss->err,
                              ss->elen) != 0)
                return -1;
        }
    }
    return 0;
}

/* Every rank of the job here before anyone starts a timed span (a host barrier; nothing to do
 * when this process holds every rank). */
int bs_line_up(session *ss, size_t p) {
    bench *b = ss->b;
    if (b->world == b->n_local)
        return 0;
    unsigned char mine = 1, *all = ml_xcalloc((size_t)b->world, 1);
    int rc = b->real->allgather_blob(ss->plans[p].ptrs[0], &mine, 1, all, ss->err, ss->elen);
    free(all);
    return rc;
}

static int open_plan(session *ss, size_t p, const rank_plan *const *plans) {
    bench *b = ss->b;
    bplan *bp = &ss->plans[p];
    int n = b->n_local;
    bp->ranks = ml_xcalloc((size_t)n, sizeof *bp->ranks);
    bp->ptrs = ml_xcalloc((size_t)n, sizeof *bp->ptrs);
    bp->first = ml_xcalloc((size_t)n, sizeof *bp->first);
    bp->end = ml_xcalloc((size_t)n, sizeof *bp->end);
    bp->snaps = ml_xcalloc((size_t)n, sizeof *bp->snaps);
    bp->graphs = ml_xcalloc((size_t)n, sizeof *bp->graphs);
    size_t *zero = ml_xcalloc((size_t)n, sizeof *zero);
    ml_vec_init(&bp->calls, sizeof(rt_coll_args));
    int rc = 0;
    for (int k = 0; k < n; k++) {
        const rank_plan *rp = plans[p * (size_t)n + (size_t)k];
        bp->ptrs[k] = &bp->ranks[k];
        ml_vec_init(&bp->snaps[k], sizeof(bench_snap));
        if (rt_rank_init(&bp->ranks[k], &b->ops, b->opt, rp, k) != 0)
            rc = -1;
        if (bench_span(rp, &bp->first[k], &bp->end[k]) != 0) {
            snprintf(ss->err, ss->elen, "%s: error: plan '%s' has no collective to time",
                     rp->s->file, bs_plan_label(rp));
            rc = -1;
        }
    }
    bp->name = bs_plan_label(plans[p * (size_t)n]);
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
    if (rc == 0)
        rc = take_snapshots(ss, p);
    free(zero);
    return rc;
}

/* One graph per rank from `copies` runs of the timed part (the capture records, nothing runs):
 * replayed, the copies run back to back on the GPU with no host in between, so a launch gap of
 * the graph is shared by all of them. */
int bs_capture(session *ss, size_t p, int copies) {
    bplan *bp = &ss->plans[p];
    const rt_backend_ops *be = ss->b->real;
    if (be->graph_begin(bp->ptrs, ss->b->n_local, ss->err, ss->elen) != 0)
        return -1;
    int rc = 0;
    for (int j = 0; j < copies && rc == 0; j++)
        rc = bs_run_timed(ss, p);
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
    size_t *to = ml_xcalloc((size_t)n, sizeof *to);
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
    char ignored[400];   /* a failed free must not overwrite the error that ended the session */
    for (size_t p = 0; p < ss->n_plans; p++) {
        bplan *bp = &ss->plans[p];
        for (int k = 0; bp->ranks && k < b->n_local; k++) {
            if (bp->graphs[k] && b->real->graph_drop)
                b->real->graph_drop(&bp->ranks[k], bp->graphs[k]);
            for (size_t j = 0; bp->snaps && j < bp->snaps[k].n; j++)
                b->real->free(&bp->ranks[k], &ML_VEC_AT(&bp->snaps[k], bench_snap, j).mem,
                              ignored, sizeof ignored);
            if (bp->snaps)
                ml_vec_free(&bp->snaps[k]);
            rt_rank_free(&bp->ranks[k]);
        }
        ml_vec_free(&bp->calls);
        free(bp->ranks);
        free(bp->ptrs);
        free(bp->first);
        free(bp->end);
        free(bp->snaps);
        free(bp->graphs);
    }
    free(ss->plans);
    ml_vec_free(&ss->intervals);
}

int bs_open(session *ss, bench *b, const rank_plan *const *plans, size_t n_plans, char *err,
            size_t len) {
    memset(ss, 0, sizeof *ss);
    ss->b = b;
    ss->n_plans = n_plans;
    ss->err = err;
    ss->elen = len;
    ss->plans = ml_xcalloc(n_plans ? n_plans : 1, sizeof *ss->plans);
    ml_vec_init(&ss->intervals, sizeof(interval));
    for (size_t p = 0; p < n_plans; p++)
        if (open_plan(ss, p, plans) != 0)
            return -1;
    return 0;
}

/* v[0..count) combined over every rank of the job, on every process: the largest (the critical
 * rank's time) or the sum (failed check rows). In one process v is complete already. */
int bs_over_ranks(session *ss, double *v, size_t count, bool sum) {
    bench *b = ss->b;
    if (b->world == b->n_local)
        return 0;
    double *all = ml_xcalloc(count * (size_t)b->world, sizeof *all);
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

/* Teardown, the failed check rows of every rank counted into out, and the session freed. */
int bs_finish(session *ss, bench_plan_result *out, int rc) {
    size_t *mine = ml_xcalloc(ss->n_plans ? ss->n_plans : 1, sizeof *mine);
    double *fails = ml_xcalloc(ss->n_plans ? ss->n_plans : 1, sizeof *fails);
    if (rc == 0)
        rc = teardown(ss, mine, out);
    for (size_t p = 0; p < ss->n_plans; p++)
        fails[p] = (double)mine[p];
    if (rc == 0)
        rc = bs_over_ranks(ss, fails, ss->n_plans, true);
    for (size_t p = 0; rc == 0 && p < ss->n_plans; p++)
        out[p].check_failures = (size_t)fails[p];
    free_session(ss);
    free(fails);
    free(mine);
    return rc;
}

