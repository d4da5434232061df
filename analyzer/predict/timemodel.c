/* SPDX-License-Identifier: MIT */
/* timemodel.c — predicted durations and the overlapped schedule (timemodel.h). */
#include "predict/timemodel.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 2 x H200 nccl-tests, 64 MiB float, alpha 10 us: busbw = factor * bytes / (t - alpha). */
#define TM_ALPHA_US 10.0
#define TM_H200_64MIB 67108864.0

/* The measured bus bandwidths coll.h's busbw_ref names: 2 x H200, 64 MiB, at N = 2 the
 * AllReduce factor 1 (250 us), the ReduceScatter / AllGather factor 1/2 (161 / 158 us). */
static double measured_busbw_gbps(ml_busbw_ref ref) {
    static const double factor_2[BUSBW_COUNT] = {
        [BUSBW_ALL_REDUCE] = 1.0, [BUSBW_REDUCE_SCATTER] = 0.5, [BUSBW_ALL_GATHER] = 0.5};
    static const double us[BUSBW_COUNT] = {
        [BUSBW_ALL_REDUCE] = 250.0, [BUSBW_REDUCE_SCATTER] = 161.0, [BUSBW_ALL_GATHER] = 158.0};
    if (ref <= BUSBW_UNDECLARED || ref >= BUSBW_COUNT)
        ml_internal_error("bus-bandwidth reference %d has no measurement (timemodel.c)", (int)ref);
    return factor_2[ref] * TM_H200_64MIB / (us[ref] - TM_ALPHA_US) / 1e3;
}

void tm_link_default(tm_link *l) {
    l->alpha_us = TM_ALPHA_US;
    for (int c = 0; c < COLL_COUNT; c++)
        l->busbw_gbps[c] = measured_busbw_gbps(ml_colls[c].busbw_ref);
    l->tflops = 790.0;
    l->copy_gbps = 4300.0;
}

static void set_busbw(tm_link *l, double gbps) {
    for (int c = 0; c < COLL_COUNT; c++)
        l->busbw_gbps[c] = gbps;
}

/* Evaluates e (p's slots) into *out, which must be at least min (0 or 1). */
static int eval_at_least(const rank_plan *p, const expr *e, const char *what, int64_t min,
                         ml_mark m, int64_t *out, ml_diags *d) {
    expr_error ee;
    if (expr_eval(e, p->slots, out, &ee) != 0) {
        ml_error(d, p->s->file, m, "%s: %s", what, ee.msg);
        return -1;
    }
    if (*out < min) {
        ml_error(d, p->s->file, m, "%s must be %s, not %lld", what,
                 min ? "positive" : "0 or more", (long long)*out);
        return -1;
    }
    return 0;
}

int tm_link_from_sched(const rank_plan *p, tm_link *l, ml_diags *d) {
    const sched *s = p->s;
    int64_t v;
    if (s->link_alpha_us) {
        if (eval_at_least(p, s->link_alpha_us, "link alpha_us", 0, s->link_mark, &v, d))
            return -1;
        l->alpha_us = (double)v;
    }
    if (s->link_busbw_gbps) {
        if (eval_at_least(p, s->link_busbw_gbps, "link busbw_gbps", 1, s->link_mark, &v, d))
            return -1;
        set_busbw(l, (double)v);
    }
    return 0;
}

int tm_link_parse(const char *text, tm_link *l, char *err, size_t len) {
    const char *at = text;
    while (*at) {
        const char *eq = strchr(at, '=');
        const char *end = strchr(at, ',');
        if (!end)
            end = at + strlen(at);
        if (!eq || eq > end) {
            snprintf(err, len, "--link takes alpha_us=US,busbw_gbps=GBPS, not '%s'", text);
            return -1;
        }
        char num[64];
        size_t n = (size_t)(end - eq - 1);
        if (n == 0 || n >= sizeof num) {
            snprintf(err, len, "--link: no value for '%.*s'", (int)(eq - at), at);
            return -1;
        }
        memcpy(num, eq + 1, n);
        num[n] = '\0';
        char *stop;
        errno = 0;
        double v = strtod(num, &stop);
        if (errno || *stop || !(v >= 0) || !isfinite(v)) {
            snprintf(err, len, "--link: '%s' is not a number >= 0", num);
            return -1;
        }
        size_t klen = (size_t)(eq - at);
        if (klen == 8 && !strncmp(at, "alpha_us", 8))
            l->alpha_us = v;
        else if (klen == 10 && !strncmp(at, "busbw_gbps", 10) && v > 0)
            set_busbw(l, v);
        else if (klen == 10 && !strncmp(at, "busbw_gbps", 10)) {
            snprintf(err, len, "--link: busbw_gbps must be positive");
            return -1;
        }
        else {
            snprintf(err, len, "--link: unknown key '%.*s' (alpha_us, busbw_gbps)", (int)klen, at);
            return -1;
        }
        at = *end ? end + 1 : end;
    }
    return 0;
}

/* Bytes moved by a copy-like op, read + write, over the copy bandwidth. */
static double copy_us(const plan_view *v, const tm_link *l) {
    return 2.0 * (double)plan_view_bytes(v) / (l->copy_gbps * 1e3);
}

double tm_op_duration(const rank_plan *p, const plan_op *op, const tm_link *l, bool *comm) {
    *comm = false;
    switch (op->kind) {
    case OP_COLL: {
        ml_coll c = op->u.coll.coll;
        /* a communicator's collective moves its group's bytes over its group's ring */
        int n = plan_comm_size(p->comms, p->world, op->u.coll.comm, p->rank);
        uint64_t send = ml_coll_send_count(c, plan_coll_count(op), n);
        uint64_t recv = ml_coll_recv_count(c, plan_coll_count(op), n);
        double bytes = (double)(send > recv ? send : recv) * ml_dtypes[op->u.coll.send.dtype].size;
        *comm = true;
        double factor = n > 1 ? ml_colls[c].busbw_factor(n) : 0.0;
        return l->alpha_us + factor * bytes / (l->busbw_gbps[c] * 1e3);
    }
    case OP_COPY:
        return copy_us(&op->u.copy.dst, l);
    case OP_SCALE:
        return copy_us(&op->u.scale.buf, l);
    case OP_INIT:
        return op->u.init.src.count ? copy_us(&op->u.init.dst, l) : 0.0;
    default:
        return 0.0;
    }
}

typedef struct {
    double lo, hi;
} tm_iv;

static int iv_cmp(const void *a, const void *b) {
    const tm_iv *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorts and merges v in place into disjoint intervals; returns how many. */
static size_t iv_union(tm_iv *v, size_t n) {
    if (!n)
        return 0;
    bool sorted = true;   /* one stream's intervals come in order: no sort needed */
    for (size_t j = 1; j < n && sorted; j++)
        sorted = v[j - 1].lo <= v[j].lo;
    if (!sorted)
        qsort(v, n, sizeof *v, iv_cmp);
    size_t k = 0;
    for (size_t j = 1; j < n; j++) {
        if (v[j].lo <= v[k].hi) {
            if (v[j].hi > v[k].hi)
                v[k].hi = v[j].hi;
        } else {
            v[++k] = v[j];
        }
    }
    return k + 1;
}

typedef struct {
    tm_iv *v;
    size_t n, cap;
} tm_ivs;

/* An interval that overlaps or touches the last one pushed joins it: iv_union merges both
 * criteria alike, so the union (and every sum over it) is the same, and back-to-back ops of a
 * stream, the common case, leave one interval instead of one per op. */
static void iv_push(tm_ivs *s, double lo, double hi) {
    if (hi <= lo)
        return;
    if (s->n) {
        tm_iv *last = &s->v[s->n - 1];
        if (lo <= last->hi && hi >= last->lo) {
            last->lo = fmin(last->lo, lo);
            last->hi = fmax(last->hi, hi);
            return;
        }
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = ml_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = (tm_iv){lo, hi};
}

static void *zalloc(size_t n, size_t size) { return ml_xcalloc(n ? n : 1, size); }

int tm_op_stream(const plan_op *op) {
    switch (op->kind) {
    case OP_COLL: return (int)op->u.coll.stream;
    case OP_COPY: return (int)op->u.copy.stream;
    case OP_SCALE: return (int)op->u.scale.stream;
    case OP_COMPUTE: return (int)op->u.compute.stream;
    default: return -1;
    }
}

static double max_of(const double *v, size_t n, double m) {
    for (size_t k = 0; k < n; k++)
        if (v[k] > m)
            m = v[k];
    return m;
}

/* An op that holds its stream: starts when the stream is free and the host enqueued it. */
static int stream_op(const rank_plan *p, const plan_op *op, const tm_link *l, double *ready,
                     size_t n_streams, double host, tm_ivs *comm, tm_ivs *work, double *start,
                     double *dur, ml_diags *d) {
    int sv = tm_op_stream(op);   /* a copy-init: -1, the default stream */
    uint32_t st = sv < 0 || (size_t)sv >= n_streams ? SCHED_DEFAULT_STREAM : (uint32_t)sv;
    bool is_comm = false;
    *dur = tm_op_duration(p, op, l, &is_comm);
    if (op->kind == OP_COMPUTE) {
        int64_t v;
        const sched_step *step = op->step;
        if (step->u.compute.time_us) {
            if (eval_at_least(p, step->u.compute.time_us, "compute time", 0, step->mark, &v, d))
                return -1;
            *dur = (double)v;
        } else if (step->u.compute.flops) {
            if (eval_at_least(p, step->u.compute.flops, "compute flops", 0, step->mark, &v, d))
                return -1;
            *dur = (double)v / (l->tflops * 1e6);
        }
    }
    *start = fmax(ready[st], host);
    ready[st] = *start + *dur;
    iv_push(is_comm ? comm : work, *start, *start + *dur);
    return 0;
}

/* How many ops ahead tm_predict asks for a compute's step: a few ops' work covers a miss. */
enum { TM_AHEAD = 16 };

/* stream_op reads a compute's time from its step: the steps live in the loader's arena, apart
 * from the ops, so at a million ops each such read is a cache miss. Asked for early, the line
 * arrives while the ops before it are timed (a hint: it changes no result). */
static void prefetch_compute_step(const plan_op *op) {
    if (op->kind != OP_COMPUTE)
        return;
    __builtin_prefetch(&op->step->u.compute.time_us);
    __builtin_prefetch(&op->step->u.compute.flops);
}

int tm_predict(const rank_plan *p, const tm_link *l, bool spans, tm_result *out, ml_diags *d) {
    memset(out, 0, sizeof *out);
    const sched *s = p->s;
    size_t n_streams = s->syms[SYM_STREAM].n ? s->syms[SYM_STREAM].n : 1;
    size_t n_events = s->syms[SYM_EVENT].n;
    double *ready = zalloc(n_streams, sizeof *ready);
    double *event = zalloc(n_events, sizeof *event);
    double host = 0;
    tm_ivs comm = {0}, work = {0};
    if (spans) {
        out->start_us = zalloc(p->n_ops, sizeof *out->start_us);
        out->dur_us = zalloc(p->n_ops, sizeof *out->dur_us);
    }
    int rc = 0;
    for (size_t i = 0; i < p->n_ops && rc == 0; i++) {
        const plan_op *op = &p->ops[i];
        if (i + TM_AHEAD < p->n_ops)
            prefetch_compute_step(&p->ops[i + TM_AHEAD]);
        double start = host, dur = 0;
        switch (op->kind) {
        case OP_SYNC: {   /* the span is the host's wait */
            double before = host;
            if (op->u.sync.kind == SYNC_DEVICE)
                host = max_of(ready, n_streams, host);
            else if (op->u.sync.kind == SYNC_STREAM && op->u.sync.stream < n_streams)
                host = fmax(host, ready[op->u.sync.stream]);
            else if (op->u.sync.kind == SYNC_EVENT && op->u.sync.event < n_events)
                host = fmax(host, event[op->u.sync.event]);
            start = before;
            dur = host - before;
            break;
        }
        case OP_RECORD:   /* at the stream's position: when its work so far is done */
            if (op->u.event.event < n_events && op->u.event.stream < n_streams) {
                start = fmax(ready[op->u.event.stream], host);
                event[op->u.event.event] = start;
            }
            break;
        case OP_WAIT:     /* the span is the stream's idle time until the event */
            if (op->u.event.event < n_events && op->u.event.stream < n_streams) {
                double *r = &ready[op->u.event.stream];
                start = fmax(*r, host);
                *r = fmax(*r, event[op->u.event.event]);
                dur = *r > start ? *r - start : 0;
            }
            break;
        case OP_CHECK:
            host = max_of(ready, n_streams, host);   /* waits for the device, reads */
            start = host;
            break;
        case OP_INIT:
            if (!op->u.init.src.count) {            /* a pattern: host write after a wait */
                host = max_of(ready, n_streams, host);
                start = host;
                break;
            }
            rc = stream_op(p, op, l, ready, n_streams, host, &comm, &work, &start, &dur, d);
            break;   /* a copy-init is a copy on the default stream */
        case OP_COLL:
        case OP_COPY:
        case OP_SCALE:
        case OP_COMPUTE:
            rc = stream_op(p, op, l, ready, n_streams, host, &comm, &work, &start, &dur, d);
            break;
        default:
            break;
        }
        if (spans) {
            out->start_us[i] = start;
            out->dur_us[i] = dur;
        }
    }
    out->step_us = max_of(ready, n_streams, host);
    size_t nc = iv_union(comm.v, comm.n), nw = iv_union(work.v, work.n);
    /* exposed = |comm \ work|: walk both sorted unions */
    size_t w = 0;
    for (size_t c = 0; c < nc; c++) {
        double lo = comm.v[c].lo, hi = comm.v[c].hi;
        out->comm_us += hi - lo;
        double covered = 0;
        while (w < nw && work.v[w].hi <= lo)
            w++;
        for (size_t k = w; k < nw && work.v[k].lo < hi; k++)
            covered += fmin(hi, work.v[k].hi) - fmax(lo, work.v[k].lo);
        out->exposed_comm_us += (hi - lo) - covered;
    }
    free(comm.v);
    free(work.v);
    free(ready);
    free(event);
    if (rc)
        tm_result_free(out);
    return rc;
}

void tm_result_free(tm_result *r) {
    free(r->start_us);
    free(r->dur_us);
    r->start_us = r->dur_us = NULL;
}
