/* SPDX-License-Identifier: MIT */
/* bench.c — the timed loop driver of `memlife bench` (bench.h, docs/bench.md): the spy behind the
 * bare mode, and the cycles.
 *
 * The executor sees a copy of the backend's table with two changes: no memory reading (a
 * cudaMemGetInfo after every op would sit between the launches being timed; the bench measures no
 * memory) and a spy on `collective` that records, once per plan and size, the calls the bare mode
 * replays. What a plan times (its span, checks, bytes) is in bench_plan.c, below this file and
 * the sessions; sessions (setting plans up, running their parts) are in bench_session.c, the
 * kernel pass in bench_kernels.c. */
#include "bench/bench_int.h"
#include "base/nvtx.h"

#include <stdlib.h>
#include <string.h>

const char *const bench_mode_names[BENCH_MODE_COUNT] = {"memlife", "bare", "graph"};

void bench_options_default(bench_options *o) {
    memset(o, 0, sizeof *o);
    o->warmup = 3;
    o->cycles = 10;
    o->bare = true;
    o->align = true;
}

int bench_graph_replays(uint64_t payload) {
    return payload < BENCH_GRAPH_REPLAYS_BELOW ? BENCH_GRAPH_REPLAYS_SMALL : 1;
}

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
    bench *b = ml_xcalloc(1, sizeof *b);
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

void bench_plan_result_free(bench_plan_result *r) {
    for (int m = 0; m < BENCH_MODE_COUNT; m++) {
        free(r->seconds[m]);
        free(r->issue[m]);
    }
    for (size_t k = 0; k < r->n_windows; k++) {
        free(r->windows[k].label);
        kn_tally_free(&r->windows[k].tally);
    }
    free(r->windows);
    memset(r, 0, sizeof *r);
}

/* ---- Timing ---------------------------------------------------------------------------------- */

/* One timed run of plan p in mode m: reset, wait, line up, then the span; secs[k] per local rank
 * (graph: per copy of the timed part, the graph holding `replays` of them), *issue the host's
 * issue time of the timed part (from the first collective call to the return of the last; every
 * local rank is issued from this thread, so it covers them all). The aligning collective
 * belongs to time_begin, before the issue clock starts: the clock sees the timed part alone. */
static int timed_run(session *ss, size_t p, bench_mode m, int replays, double *secs,
                     double *issue) {
    bench *b = ss->b;
    bplan *bp = &ss->plans[p];
    int n = b->n_local;
    if (bs_reset(ss, p) != 0 || bs_sync(ss, p) != 0 || bs_line_up(ss, p) != 0)
        return -1;
    /* "plan:direct (bare)": the region ranges inside keep the regions' own names, so that
     * Nsight's nvtx_kern_sum counts ":direct" for the region alone, as in the chapter. */
    char range[160];
    snprintf(range, sizeof range, "plan:%s (%s)", bp->name, bench_mode_names[m]);
    rt_nvtx_push(range);
    int rc = b->real->time_begin(bp->ptrs, n, m == BENCH_GRAPH || b->bo.align, ss->err, ss->elen);
    double t0 = ml_now_seconds();
    if (rc == 0 && m == BENCH_MEMLIFE) {
        spy.recording = bp->recorded ? NULL : &bp->calls;
        rc = bs_run_timed(ss, p);
        spy.recording = NULL;
        bp->recorded = rc == 0;
    } else if (rc == 0 && m == BENCH_BARE) {
        const rt_coll_args *args = bp->calls.items;
        for (size_t j = 0; rc == 0 && j < bp->calls.n; j += (size_t)n)
            rc = b->real->collective_bare(bp->ptrs, args + j, n, ss->err, ss->elen);
    } else if (rc == 0) {
        /* One launch per rank; the graph holds `replays` copies of the timed part. */
        rc = b->real->graph_launch(bp->ptrs, n, bp->graphs, ss->err, ss->elen);
    }
    *issue = ml_now_seconds() - t0;
    if (rc == 0)
        rc = b->real->time_end(bp->ptrs, n, secs, ss->err, ss->elen);
    for (int k = 0; rc == 0 && m == BENCH_GRAPH && k < n; k++)
        secs[k] /= replays;
    rt_nvtx_pop();
    return rc;
}

void bench_cycle_order(size_t n_plans, size_t n_modes, long g, size_t *out) {
    bool plans_reversed = g % 2 != 0;
    long half = g >= 0 ? g / 2 : -((1 - g) / 2);       /* floor(g / 2) */
    long nm = (long)(n_modes ? n_modes : 1);
    size_t lead = (size_t)(((half % nm) + nm) % nm);
    size_t k = 0;
    for (size_t i = 0; i < n_plans; i++) {
        size_t p = plans_reversed ? n_plans - 1 - i : i;
        for (size_t j = 0; j < n_modes; j++)
            out[k++] = p * n_modes + (lead + j) % n_modes;
    }
}

/* Every measured cycle of every entry (plan x mode); out[p] gets the critical rank's times and
 * the largest issue times over the job. crit holds both: times first, then issue times. */
static int cycles_run(session *ss, int replays, bench_plan_result *out) {
    bench *b = ss->b;
    size_t n_plans = ss->n_plans, cycles = (size_t)b->bo.cycles;
    bool on[BENCH_MODE_COUNT] = {true, b->bo.bare, b->bo.graph};
    size_t count = n_plans * BENCH_MODE_COUNT * cycles;
    double *crit = ml_xcalloc(count ? 2 * count : 1, sizeof *crit);
    double *secs = ml_xcalloc((size_t)b->n_local, sizeof *secs);
    /* The modes in use, numbered for bench_cycle_order. */
    size_t n_modes = 0, modes[BENCH_MODE_COUNT];
    for (int m = 0; m < BENCH_MODE_COUNT; m++)
        if (on[m])
            modes[n_modes++] = (size_t)m;
    size_t n_entries = n_plans * n_modes, *order = ml_xcalloc(n_entries ? n_entries : 1, sizeof *order);
    int rc = 0;
    size_t total = (size_t)b->bo.warmup + cycles;
    for (size_t c = 0; c < total && rc == 0; c++) {
        bool measured = c >= (size_t)b->bo.warmup;
        size_t mc = measured ? c - (size_t)b->bo.warmup : 0;
        bench_cycle_order(n_plans, n_modes, (long)c - (long)b->bo.warmup, order);
        for (size_t j = 0; j < n_entries && rc == 0; j++) {
            size_t p = order[j] / n_modes, m = modes[order[j] % n_modes];
            double issue = 0;
            rc = timed_run(ss, p, (bench_mode)m, replays, secs, &issue);
            if (rc != 0 || !measured)
                continue;
            double worst = 0;
            for (int k = 0; k < b->n_local; k++)
                worst = secs[k] > worst ? secs[k] : worst;
            size_t at = (p * BENCH_MODE_COUNT + m) * cycles + mc;
            crit[at] = worst;
            crit[count + at] = issue;
        }
    }
    if (rc == 0)
        rc = bs_over_ranks(ss, crit, 2 * count, false);
    for (size_t p = 0; rc == 0 && p < n_plans; p++) {
        out[p].graph_replays = b->bo.graph ? replays : 0;
        for (int m = 0; m < BENCH_MODE_COUNT; m++) {
            if (!on[m])
                continue;
            size_t at = (p * BENCH_MODE_COUNT + (size_t)m) * cycles;
            out[p].seconds[m] = ml_xcalloc(cycles, sizeof(double));
            memcpy(out[p].seconds[m], crit + at, cycles * sizeof(double));
            if (m == BENCH_GRAPH)
                continue;   /* a graph's issue is its launches: nothing memlife does */
            out[p].issue[m] = ml_xcalloc(cycles, sizeof(double));
            memcpy(out[p].issue[m], crit + count + at, cycles * sizeof(double));
        }
    }
    free(crit);
    free(secs);
    free(order);
    return rc;
}

/* Copies of the timed part per graph at this size: the option, else by the largest payload. */
static int replays_at(const bench *b, const rank_plan *const *plans, size_t n_plans) {
    if (b->bo.graph_replays > 0)
        return b->bo.graph_replays;
    uint64_t largest = 0;
    for (size_t p = 0; p < n_plans; p++) {
        uint64_t payload;
        double bus;
        bench_plan_bytes(plans[p * (size_t)b->n_local], &payload, &bus);
        largest = payload > largest ? payload : largest;
    }
    return bench_graph_replays(largest);
}

int bench_time(bench *b, const rank_plan *const *plans, size_t n_plans, bench_plan_result *out,
               char *err, size_t len) {
    session ss;
    memset(out, 0, n_plans * sizeof *out);
    int replays = replays_at(b, plans, n_plans);
    int rc = bs_open(&ss, b, plans, n_plans, err, len);
    for (size_t p = 0; rc == 0 && b->bo.graph && p < n_plans; p++)
        rc = bs_capture(&ss, p, replays);
    if (rc == 0)
        rc = cycles_run(&ss, replays, out);
    /* The teardown's checks must see one run of each plan, and the last timed run of a plan may
     * have been a graph of several copies over the same buffers: reset and run it once more. */
    for (size_t p = 0; rc == 0 && b->bo.graph && replays > 1 && p < n_plans; p++)
        if (bs_reset(&ss, p) != 0 || bs_sync(&ss, p) != 0 || bs_line_up(&ss, p) != 0 ||
            bs_run_timed(&ss, p) != 0)
            rc = -1;
    return bs_finish(&ss, out, rc);
}

