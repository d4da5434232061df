/* SPDX-License-Identifier: MIT */
/* trace.c — Chrome trace-event JSON (trace.h), built with jansson. */
#include "visual/trace.h"
#include "predict/timemodel.h"
#include "report/report.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { HOST_TID = 0 };

static json_t *event(const char *ph, const char *name, const char *cat, int pid, int tid, double ts) {
    json_t *e = json_object();
    json_object_set_new(e, "ph", json_string(ph));
    json_object_set_new(e, "name", json_string(name));
    if (cat)
        json_object_set_new(e, "cat", json_string(cat));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(e, "tid", json_integer(tid));
    json_object_set_new(e, "ts", json_real(ts));
    return e;
}

/* Events are encoded one by one (each with jansson) into the document's traceEvents array, so a
 * plan of millions of ops never holds its whole trace as a JSON tree. */
typedef struct {
    ml_str *out;
    size_t n;
    int failed;
} emitter;

static void emit(emitter *em, json_t *e) {
    char *text = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    if (!text) {
        em->failed = 1;
        return;
    }
    ml_str_printf(em->out, "%s\n%s", em->n++ ? "," : "", text);
    free(text);
}

static void metadata(emitter *events, const char *what, int pid, int tid, const char *key, json_t *v) {
    json_t *e = json_object();
    json_object_set_new(e, "ph", json_string("M"));
    json_object_set_new(e, "name", json_string(what));
    json_object_set_new(e, "pid", json_integer(pid));
    json_object_set_new(e, "tid", json_integer(tid));
    json_t *args = json_object();
    json_object_set_new(args, key, v);
    json_object_set_new(e, "args", args);
    emit(events, e);
}

static json_t *coll_args(const rank_plan *p, const plan_op *op) {
    const ml_coll_info *ci = &ml_colls[op->u.coll.coll];
    json_t *a = json_object();
    uint64_t send = plan_view_bytes(&op->u.coll.send), recv = plan_view_bytes(&op->u.coll.recv);
    /* "bytes": the full payload, as nccl-tests counts it (AR/RS the send size, AG the recv). */
    json_object_set_new(a, "bytes", json_integer((json_int_t)(send > recv ? send : recv)));
    json_object_set_new(a, "send_bytes", json_integer((json_int_t)send));
    json_object_set_new(a, "recv_bytes", json_integer((json_int_t)recv));
    json_object_set_new(a, "count", json_integer((json_int_t)plan_coll_count(op)));
    json_object_set_new(a, "dtype", json_string(ml_dtypes[op->u.coll.send.dtype].name));
    if (ci->has_op)
        json_object_set_new(a, "op", json_string(ml_redops[op->u.coll.op].name));
    if (ci->has_root)
        json_object_set_new(a, "root", json_integer(op->u.coll.root));
    json_object_set_new(a, "stream", json_string(sched_sym_name(p->s, SYM_STREAM, op->u.coll.stream)));
    if (op->u.coll.comm) {   /* the communicator, its group's size and this rank's rank in it */
        json_object_set_new(a, "comm", json_string(p->s->comms[op->u.coll.comm].name));
        json_object_set_new(a, "comm_size", json_integer(plan_comm_size(
                                p->comms, p->world, op->u.coll.comm, p->rank)));
        json_object_set_new(a, "comm_rank", json_integer(plan_comm_rank(
                                p->comms, op->u.coll.comm, p->rank)));
    }
    json_object_set_new(a, "in_place", json_boolean(op->u.coll.in_place));
    json_object_set_new(a, "send", json_string(sched_sym_name(p->s, SYM_BUFFER, op->u.coll.send.buf)));
    json_object_set_new(a, "recv", json_string(sched_sym_name(p->s, SYM_BUFFER, op->u.coll.recv.buf)));
    json_object_set_new(a, "line", json_integer(plan_op_mark(op).line));
    return a;
}

static json_t *counter(const char *name, int pid, double ts, uint64_t pred, const uint64_t *meas) {
    json_t *e = event("C", name, "memory", pid, HOST_TID, ts);
    json_t *a = json_object();
    json_object_set_new(a, "predicted", json_integer((json_int_t)pred));
    if (meas)
        json_object_set_new(a, "measured", json_integer((json_int_t)*meas));
    json_object_set_new(e, "args", a);
    return e;
}

/* The lane (thread) of an op: its stream's, or the host's for what the host does; a
 * collective on a communicator other than the world a lane of its own beside its stream's
 * (1 + n_streams x comm + stream), so that the communicators' traffic reads apart. */
static int op_lane(const plan_op *op, uint32_t n_streams) {
    switch (op->kind) {
    case OP_COLL: return 1 + (int)(n_streams * op->u.coll.comm + op->u.coll.stream);
    case OP_COPY: return 1 + (int)op->u.copy.stream;
    case OP_SCALE: return 1 + (int)op->u.scale.stream;
    case OP_COMPUTE: return 1 + (int)op->u.compute.stream;
    case OP_RECORD:
    case OP_WAIT: return 1 + (int)op->u.event.stream;
    case OP_INIT: return op->u.init.src.count ? 1 + (int)SCHED_DEFAULT_STREAM : HOST_TID;
    default: return HOST_TID;
    }
}

/* One op's event: a span ("X") on its lane for every step that takes time or orders streams;
 * an instant for alloc, free and release; NULL for region markers (rank_events pairs them). */
static json_t *op_span(const rank_plan *p, const plan_op *op, int pid, double ts, double dur) {
    char label[160];
    series_op_label(p, op, label, sizeof label);
    int lane = op_lane(op, p->s->syms[SYM_STREAM].n);
    json_t *e = NULL, *a = NULL;
    switch (op->kind) {
    case OP_COLL:
        e = event("X", label, "collective", pid, lane, ts);
        json_object_set_new(e, "args", coll_args(p, op));
        break;
    case OP_ALLOC:
    case OP_FREE:
    case OP_RELEASE:
        e = event("i", label, "buffer", pid, HOST_TID, ts);
        json_object_set_new(e, "s", json_string("t"));
        a = json_object();
        json_object_set_new(a, "buffer", json_string(sched_sym_name(p->s, SYM_BUFFER, series_op_buffer(op))));
        if (op->kind == OP_ALLOC)
            json_object_set_new(a, "bytes", json_integer((json_int_t)op->u.alloc.bytes));
        json_object_set_new(a, "line", json_integer(plan_op_mark(op).line));
        json_object_set_new(e, "args", a);
        return e;
    case OP_REGION_BEGIN:
    case OP_REGION_END:
    case OP_EXPECT_BEGIN:
    case OP_KIND_COUNT:
        return NULL;
    case OP_RECORD:
    case OP_WAIT:
        snprintf(label, sizeof label, "%s %s", plan_op_names[op->kind],
                 sched_sym_name(p->s, SYM_EVENT, op->u.event.event));
        e = event("X", label, plan_op_names[op->kind], pid, lane, ts);
        break;
    default:
        e = event("X", label, plan_op_names[op->kind], pid, lane, ts);
        break;
    }
    json_object_set_new(e, "dur", json_real(dur));
    if (op->kind != OP_COLL) {
        a = json_object();
        json_object_set_new(a, "line", json_integer(plan_op_mark(op).line));
        json_object_set_new(e, "args", a);
    }
    return e;
}

/* The clock a rank's trace is drawn on, the first that applies: a run's measured times, the
 * recording's own (`time_us:` on the steps of an imported snapshot, where they do not go back in
 * op order), the time model's where it gives durations, else op k at k microseconds.
 * otherData.clock names it. */
typedef enum { CLOCK_MEASURED, CLOCK_SNAPSHOT, CLOCK_MODEL, CLOCK_OP_ORDER, CLOCK_COUNT } trace_clock;
static const char *const clock_names[CLOCK_COUNT] = {"measured", "snapshot", "model", "op-order"};

/* Apart by this much, events of one track never share a time (Perfetto orders equal times
 * arbitrarily): 1 ns, the display unit. */
#define TICK_US 0.001

/* The clock of rank r and each op's time on it (base[k], dur[k]; NAN where a snapshot's op has
 * no time of its own: it follows the op before), base[n] the end. */
static trace_clock rank_clock(const series *s, int r, bool measured, const double *t,
                              double *base, double *dur) {
    const rank_plan *p = &s->plans[r];
    size_t n = p->n_ops;
    if (measured) {   /* op k spans from the sample before it to its own */
        base[0] = 0;
        for (size_t k = 0; k < n; k++) {
            base[k + 1] = t[k] * 1e6;
            dur[k] = base[k + 1] - base[k];
        }
        return CLOCK_MEASURED;
    }
    if (s->s->n_times) {
        /* the recording's times, unless they go back in op order: steps reordered since (an
         * optimized import) no longer happen when the recording saw them */
        int64_t us, t0 = -1, last = -1;
        bool ordered = true;
        for (size_t k = 0; k < n && ordered; k++) {
            bool has = sched_step_time(s->s, p->ops[k].step, &us);
            if (has && t0 < 0)
                t0 = us;
            ordered = !has || us >= last;
            last = has ? us : last;
            base[k] = has ? (double)(us - t0) : NAN;
        }
        base[n] = NAN;
        if (ordered)
            return CLOCK_SNAPSHOT;
    }
    tm_link l;
    tm_link_default(&l);
    tm_result tm = {0};
    ml_diags quiet;   /* the schedule was linted and predicted: its link evaluates */
    ml_diags_init(&quiet);
    bool model = tm_link_from_sched(p, &l, &quiet) == 0 && tm_predict(p, &l, true, &tm, &quiet) == 0 &&
                 tm.step_us > 0;
    if (model) {
        memcpy(base, tm.start_us, n * sizeof *base);
        memcpy(dur, tm.dur_us, n * sizeof *dur);
        base[n] = tm.step_us;
    }
    ml_diags_free(&quiet);
    tm_result_free(&tm);
    if (model)
        return CLOCK_MODEL;
    for (size_t k = 0; k <= n; k++)
        base[k] = (double)k;
    return CLOCK_OP_ORDER;
}

/* t at or after want, and a tick after the track's last time (*last: -1 before the first). */
static double track_time(double want, double *last) {
    double t = *last >= 0 && (isnan(want) || want < *last + TICK_US) ? *last + TICK_US
                                                                    : (isnan(want) ? 0 : want);
    t = nearbyint(t * 1000) / 1000;   /* whole ticks (ns): 0.009, not 0.009000000000000001 */
    *last = t;
    return t;
}

/* Every event of one rank; returns its clock. Each track (a lane, a counter) gets its events in
 * op order at non-decreasing times, one time per op: the clock's time, moved a tick past the
 * track's previous event where the clock gives it an earlier or equal one (a schedule without
 * syncs has its host ops all at time 0 in the model while its streams run on). */
static trace_clock rank_events(emitter *events, const series *s, int r, int pid) {
    const rank_plan *p = &s->plans[r];
    size_t n = p->n_ops;
    uint64_t *pred[VIEW_COUNT], *meas[VIEW_COUNT];
    bool has_meas[VIEW_COUNT];
    double *t = ml_xcalloc(n + 1, sizeof *t), *base = ml_xcalloc(n + 1, sizeof *base);
    for (int v = 0; v < VIEW_COUNT; v++) {
        pred[v] = ml_xcalloc(n + 1, sizeof *pred[v]);
        meas[v] = ml_xcalloc(n + 1, sizeof *meas[v]);
        has_meas[v] = series_rank_values(s, r, (ml_mem_view)v, pred[v], meas[v], t);
    }
    double *dur = ml_xcalloc(n + 1, sizeof *dur);
    trace_clock clock = rank_clock(s, r, s->has_time && has_meas[VIEW_REQUESTED], t, base, dur);
    uint32_t n_streams = s->s->syms[SYM_STREAM].n;
    uint32_t n_comms = s->s->n_comms ? s->s->n_comms : 1;
    size_t n_lanes = 1 + (size_t)n_streams * n_comms;
    double *lane_last = ml_xcalloc(n_lanes, sizeof *lane_last), sample_last = -1;
    for (size_t k = 0; k < n_lanes; k++)
        lane_last[k] = -1;

    char name[256];
    snprintf(name, sizeof name, "%s rank %d", s->label, r);
    metadata(events, "process_name", pid, HOST_TID, "name", json_string(name));
    metadata(events, "process_sort_index", pid, HOST_TID, "sort_index", json_integer(pid));
    metadata(events, "thread_name", pid, HOST_TID, "name", json_string("host"));
    for (uint32_t st = 0; st < n_streams; st++) {
        snprintf(name, sizeof name, "stream %s", sched_sym_name(s->s, SYM_STREAM, st));
        metadata(events, "thread_name", pid, 1 + (int)st, "name", json_string(name));
    }
    if (n_comms > 1) {   /* the lanes of the communicators' collectives this rank issues */
        bool *named = ml_xcalloc(n_lanes, sizeof *named);
        for (size_t k = 0; k < n; k++) {
            const plan_op *op = &p->ops[k];
            if (op->kind != OP_COLL || !op->u.coll.comm)
                continue;
            int lane = op_lane(op, n_streams);
            if (named[lane])
                continue;
            named[lane] = true;
            snprintf(name, sizeof name, "stream %s, comm %s",
                     sched_sym_name(s->s, SYM_STREAM, op->u.coll.stream),
                     s->s->comms[op->u.coll.comm].name);
            metadata(events, "thread_name", pid, lane, "name", json_string(name));
        }
        free(named);
    }

    /* One counter per series of every view predicted for the rank (views.h's names), one sample
     * per op even where the value did not change: the k-th sample of a track is the value after
     * op k, so a trace can be compared op by op with a measurement whatever the times are. */
    bool on[VIEW_COUNT];
    for (int v = 0; v < VIEW_COUNT; v++)
        on[v] = s->pred[r].on[ml_series[v].view];
    size_t region_start[64], depth = 0;
    double region_end[64];   /* the latest end of an op inside each open region */
    double *at = ml_xcalloc(n + 1, sizeof *at);   /* op k's time on its lane */
    for (size_t k = 0; k < n; k++) {
        const plan_op *op = &p->ops[k];
        double sample = track_time(base[k], &sample_last);
        for (int v = 0; v < VIEW_COUNT; v++)
            if (on[v])
                emit(events, counter(ml_series[v].counter, pid, sample, pred[v][k],
                                     has_meas[v] ? &meas[v][k] : NULL));
        /* a snapshot's op without a time of its own is drawn with the one before */
        if (clock == CLOCK_SNAPSHOT && isnan(base[k]))
            base[k] = k ? base[k - 1] : 0;
        int lane = op_lane(op, n_streams);
        at[k] = track_time(base[k], &lane_last[lane < (int)n_lanes ? lane : 0]);
        double d_k = dur[k] > 0 ? dur[k] : 0;
        for (size_t j = 0; j < depth && j < ML_ARRAY_LEN(region_end); j++)
            if (at[k] + d_k > region_end[j])
                region_end[j] = at[k] + d_k;
        json_t *e = op_span(p, op, pid, at[k], d_k);
        if (op->kind == OP_REGION_BEGIN) {
            if (depth < ML_ARRAY_LEN(region_start)) {
                region_start[depth] = k;
                region_end[depth] = at[k];
            }
            depth++;
        } else if (op->kind == OP_REGION_END && depth > 0 &&
                   --depth < ML_ARRAY_LEN(region_start)) {
            const char *rname = sched_sym_name(p->s, SYM_REGION, op->u.region.region);
            double b = at[region_start[depth]];
            e = event("X", rname, "region", pid, HOST_TID, b);
            json_object_set_new(e, "dur", json_real(region_end[depth] - b));
            if (depth > 0 && region_end[depth] > region_end[depth - 1])
                region_end[depth - 1] = region_end[depth];
        }
        if (e)
            emit(events, e);
    }
    /* A last sample so that the tracks run to the end of the last op. */
    double end = n ? track_time(base[n], &sample_last) : 0;
    for (int v = 0; v < VIEW_COUNT && n; v++)
        if (on[v])
            emit(events, counter(ml_series[v].counter, pid, end, pred[v][n - 1],
                                 has_meas[v] ? &meas[v][n - 1] : NULL));
    for (int v = 0; v < VIEW_COUNT; v++) {
        free(pred[v]);
        free(meas[v]);
    }
    free(at);
    free(lane_last);
    free(t);
    free(base);
    free(dur);
    return clock;
}

bool trace_rank_chosen(const trace_options *o, int r) {
    if (!o || !o->n_ranks)
        return true;
    for (size_t k = 0; k < o->n_ranks; k++)
        if (o->ranks[k] == r)
            return true;
    return false;
}

uint64_t trace_estimate(const series *items, size_t n, const trace_options *o, uint64_t *events) {
    uint64_t ev = 0;
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < items[i].world; r++) {
            if (!trace_rank_chosen(o, r))
                continue;
            const rank_plan *p = &items[i].plans[r];
            uint64_t counters = 0;   /* one track per series of every view predicted here */
            for (int v = 0; v < VIEW_COUNT; v++)
                counters += items[i].pred[r].on[ml_series[v].view];
            /* metadata and the closing samples; then per op a span or instant and one sample of
             * every counter (trace_json writes one per op) */
            ev += 4 + items[i].s->syms[SYM_STREAM].n + counters;
            ev += (uint64_t)p->n_ops * (1 + counters);
        }
    *events = ev;
    return ev * TRACE_BYTES_PER_EVENT;
}

int trace_json(const series *items, size_t n, const trace_options *o, ml_str *out, ml_diags *d) {
    int pid = 0;
    unsigned clocks = 0;   /* bit c: a rank drawn on clock c */
    ml_str body = {0};
    emitter em = {&body, 0, 0};
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < items[i].world; r++) {
            if (!trace_rank_chosen(o, r)) {
                pid++;   /* a rank keeps its process id whichever ranks are chosen */
                continue;
            }
            clocks |= 1u << rank_events(&em, &items[i], r, pid++);
        }
    json_t *other = json_object();
    json_object_set_new(other, "schema_version", json_integer(ML_JSON_SCHEMA_VERSION));
    json_object_set_new(other, "generator", json_string("memlife trace " MEMLIFE_VERSION));
    /* which clock the ranks are drawn on (rank_clock): one name, or "mixed", and in words */
    static const char *const clock_words[CLOCK_COUNT] = {
        "measured (seconds since the baseline)",
        "the recording's: each step's time_us (an imported snapshot's event times), microseconds "
        "since its first",
        "predicted: the time model's start and duration of every op, microseconds",
        "op order: op k at k microseconds (the time model gives no durations)"};
    const char *clock = "mixed", *words = "per rank: measured where a run timed it, else "
                                          "predicted (the time model) or op order";
    for (int c = 0; c < CLOCK_COUNT; c++)
        if (clocks == 1u << c) {
            clock = clock_names[c];
            words = clock_words[c];
        }
    if (!clocks) {
        clock = clock_names[CLOCK_OP_ORDER];
        words = clock_words[CLOCK_OP_ORDER];
    }
    json_object_set_new(other, "time", json_string(words));
    json_object_set_new(other, "clock", json_string(clock));
    char *other_text = json_dumps(other, JSON_COMPACT);
    json_decref(other);
    if (em.failed || !other_text) {
        free(other_text);
        ml_str_free(&body);
        ml_error(d, "trace", ((ml_mark){0, 0}), "cannot encode the trace (out of memory)");
        return -1;
    }
    ml_str_printf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":%s,\"traceEvents\":[\n", other_text);
    if (body.n)
        ml_str_append(out, body.s, body.n);
    ml_str_printf(out, "\n]}\n");
    free(other_text);
    ml_str_free(&body);
    return 0;
}
