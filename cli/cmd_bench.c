/* SPDX-License-Identifier: MIT */
/* cmd_bench.c — `memlife bench`: the chapter's performance experiment, done by memlife itself.
 *
 * Every rank is a memlife process (host, or cuda under mpirun) or one process drives every GPU
 * (--gpus N). Each loads the file, and for each size of the sweep expands and lints every rank's
 * plans (all processes reach the same verdict on bad input, exit 2, before anything runs), then
 * runs the timed loop (runtime/bench.c) on its own ranks; every process ends with the same
 * critical-rank times, and rank 0 writes the report (analyzer/bench_report.c). With --kernels a
 * kernel pass per size follows all timing, so CUPTI never runs during a timed cycle. */
#include "cmd.h"
#include "args.h"
#include "place.h"
#include "pipeline/pipeline.h"
#include "report/bench_report.h"
#include "report/stats.h"
#include "bench/bench.h"
#include "exec/job.h"
#include "exec/launch.h"
#include "base/human.h"

#include <stdlib.h>
#include <string.h>

const char cmd_bench_usage[] =
    "usage: memlife bench [OPTIONS] FILE\n"
    "\n"
    "Times the plans of a schedule against each other, the chapter's way. For each size of the\n"
    "file's sweep, every plan's buffers are allocated and initialized once; then warm-up cycles\n"
    "and measured cycles, each timing every plan once, in order on even cycles and in reverse on\n"
    "odd ones (A then B, B then A). Before each timed run the inputs are reset (copied back on\n"
    "the device from a snapshot of what the setup left), the device is idle and the ranks are\n"
    "lined up (cuda: on the device, by a one-element AllReduce before the start event); the\n"
    "timed part is the plan's regions (without regions: its collectives), timed on each rank\n"
    "with CUDA events (host: the monotonic clock), and a cycle keeps the slowest rank. Per size\n"
    "and plan: median, P95, CV, payload GB/s (the full tensor over the median), bus GB/s\n"
    "(nccl-tests factors) and the ratio to the first plan, stated only where both CVs are at\n"
    "most --cv-max, else 'unstable'. The same collectives are also timed bare (direct NCCL / MPI\n"
    "calls on the same buffers and streams): memlife/bare is memlife's own overhead on the GPU;\n"
    "the host's issue time of each (first collective call to the return of the last) is the\n"
    "overhead the alignment hides. The method is in docs/bench.md.\n"
    "\n"
    "@options\n"
    "exit codes: 0 done, 1 a data check after a timed part failed, 2 bad input (syntax, lint\n"
    "            error, a timed part holding allocs, inits or syncs), 3 runtime failure\n";

typedef struct {
    const char *sizes, *json;
    int warmup, cycles, graph_replays;
    double cv_max;
    bool graph, kernels, no_align;
} bench_opts;

typedef struct {
    rt_job job;
    const sched *s;
    int *plan_index;           /* the plans timed */
    size_t n_plans;
    ml_vec sizes;              /* const char *: the sweep let's value text per size; NULL: none */
    ml_vec owned;              /* char *: strings to free */
    ml_args *a;
    bool speak;                /* rank 0 and not a child of our own launch: prints diagnostics */
    bool rank0;                /* prints progress and notes (unless --quiet) */
} bench_ctx;

/* ---- Input ----------------------------------------------------------------------------------- */

/* The sizes: --sizes, else the sweep's values, else one run with the file's lets. */
static int collect_sizes(bench_ctx *c, const bench_opts *o) {
    const sched *s = c->s;
    if (o->sizes && s->sweep_let < 0)
        return ml_usage_error("bench", "--sizes needs a schedule with 'sweep:' (it names the let "
                              "the sizes go to)");
    if (o->sizes) {
        char *copy = ml_xstrdup(o->sizes);
        *(char **)ml_vec_push(&c->owned) = copy;
        for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ","))
            *(const char **)ml_vec_push(&c->sizes) = tok;
        if (!c->sizes.n)
            return ml_usage_error("bench", "--sizes needs at least one value");
        return 0;
    }
    if (s->sweep_let >= 0)
        for (uint32_t k = 0; k < s->n_sweep; k++)
            *(const char **)ml_vec_push(&c->sizes) = expr_text(s->sweep_values[k]);
    else
        *(const char **)ml_vec_push(&c->sizes) = NULL;
    return 0;
}

/* The run's parameters at size i: the user's --set, then LET=VALUE (the last one wins). */
static sched_params size_params(bench_ctx *c, size_t i, ml_vec *set) {
    ml_vec_init(set, sizeof(const char *));
    for (size_t k = 0; k < c->a->set.n; k++)
        *(const char **)ml_vec_push(set) = ML_VEC_AT(&c->a->set, const char *, k);
    const char *value = ML_VEC_AT(&c->sizes, const char *, i);
    if (value) {
        ml_str kv = {0};
        ml_str_printf(&kv, "%s=%s", c->s->lets[c->s->sweep_let].name, value);
        *(char **)ml_vec_push(&c->owned) = kv.s;
        *(const char **)ml_vec_push(set) = kv.s;
    }
    return (sched_params){.set = set->items, .n_set = set->n, .world = c->job.world};
}

/* Every timed plan at size i (items[p], every rank), expanded and linted by the pipeline,
 * timed parts checked. Returns 0, or ML_EXIT_INPUT with the diagnostics printed where this
 * process speaks. */
static int expand_size(bench_ctx *c, size_t i, pipeline_item *items, bool warnings) {
    ml_vec set;
    sched_params p = size_params(c, i, &set);
    ml_diags d;
    ml_diags_init(&d);
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.predict = o.expect = false;
    int rc = 0;
    for (size_t k = 0; k < c->n_plans && rc == 0; k++) {
        rc = pipeline_plan(c->s, c->plan_index[k], &p, c->job.world, &o, &items[k], &d);
        for (int r = 0; r < c->job.world && rc == 0; r++)
            rc = bench_check_plan(&items[k].plans[r], &d);
    }
    if (c->speak && (rc != 0 || warnings))
        ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    ml_vec_free(&set);
    return rc == 0 ? 0 : ML_EXIT_INPUT;
}

static void free_plans(const bench_ctx *c, pipeline_item *items) {
    for (size_t k = 0; k < c->n_plans; k++)
        pipeline_item_free(&items[k]);
}

/* Loads the file and picks its plans; then every size must expand and lint cleanly. */
static int load_input(bench_ctx *c, const bench_opts *o) {
    ml_diags d;
    ml_diags_init(&d);
    const char *path = ML_VEC_AT(&c->a->files, const char *, 0);
    sched_params p = ml_args_params(c->a);
    sched_load_limits lim = sched_load_with(&p);
    sched *s = sched_load_file(path, &lim, &d);
    int world = s ? sched_world(s, &p, &d) : 0;
    if (c->speak)
        ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    if (!s || world <= 0) {
        sched_free(s);
        return ML_EXIT_INPUT;
    }
    c->s = s;
    if (c->a->plan) {   /* the same error as predict's, listing the plans */
        ml_diags_init(&d);
        int named = sched_plan_named(s, c->a->plan, &d);
        if (c->speak)
            ml_diags_print(&d, stderr);
        ml_diags_free(&d);
        if (named < 0)
            return ML_EXIT_INPUT;
    }
    if (!c->job.world)
        c->job.world = world;
    c->plan_index = ml_xcalloc(s->n_plans, sizeof *c->plan_index);
    for (uint32_t k = 0; k < s->n_plans; k++)
        if (!c->a->plan || !strcmp(s->plans[k].name, c->a->plan))
            c->plan_index[c->n_plans++] = (int)k;
    if (!c->n_plans)
        return ml_usage_error("bench", "no plan '%s' in '%s'", c->a->plan, path);
    int rc = collect_sizes(c, o);
    pipeline_item *items = ml_xcalloc(c->n_plans, sizeof *items);
    for (size_t i = 0; i < c->sizes.n && rc == 0; i++) {
        rc = expand_size(c, i, items, i == 0);
        free_plans(c, items);
    }
    free(items);
    return rc;
}

/* ---- Ranks ----------------------------------------------------------------------------------- */

/* The input checked once before our own mpirun starts the ranks (ml_place_or_launch), so that
 * its errors print once. */
typedef struct {
    bench_ctx *c;
    const bench_opts *o;
} bench_input;

static int check_before_launch(void *ctx, rt_job *j) {
    const bench_input *in = ctx;
    return load_input(in->c, in->o);   /* it takes the file's world where none was given */
}

/* ---- Running --------------------------------------------------------------------------------- */

/* A failure on one rank ends every rank: its peers may wait inside a collective. */
static int runtime_failure(const bench_ctx *c, const char *err) {
    const char *word = strstr(err, "error:");
    if (word)   /* err is a whole diagnostic ("FILE:L:C: error: ..."): its word coloured */
        fprintf(stderr, "%.*s%serror%s%s\n", (int)(word - err), err, ml_color(ML_HUE_ERROR, 2),
                ml_color_end(2), word + strlen("error"));
    else if (err[0])
        ml_report(ML_DIAG_ERROR, NULL, "%s", err);
    return rt_job_end_alone(&c->job);
}

static void progress(const bench_ctx *c, size_t i, const bench_report_size *z, double secs,
                     int cycles) {
    char size[64];
    ml_format_bytes(z->n_plans ? z->plans[0].payload_bytes : 0, size, sizeof size);
    fprintf(stderr, "bench: %s (%zu/%zu):", size, i + 1, c->sizes.n);
    for (size_t k = 0; k < z->n_plans; k++) {
        const double *sec = z->plans[k].res->seconds[BENCH_MEMLIFE];
        double *us = ml_xcalloc((size_t)cycles, sizeof *us);
        for (int j = 0; j < cycles; j++)
            us[j] = sec[j] * 1e6;
        st_summary st;
        if (st_summarize(us, (size_t)cycles, &st) == 0)
            fprintf(stderr, "%s %s %.3f us (CV %.2f%%)", k ? "," : "", z->plans[k].name,
                    st.median, st.cv * 100);
        free(us);
    }
    fprintf(stderr, " [%.1f s]\n", secs);
}

/* This process's plans at size i: local[p * n_local + k] for plan p of local rank k. */
static void local_plans(const bench_ctx *c, pipeline_item *items, const rank_plan **local) {
    for (size_t p = 0; p < c->n_plans; p++)
        for (int k = 0; k < c->job.n_local; k++)
            local[p * (size_t)c->job.n_local + (size_t)k] =
                &items[p].plans[c->job.mpi ? c->job.rank : k];
}

/* The timed loop (or, with kernels, the kernel pass) over every size. */
static int run_sizes(bench_ctx *c, bench *b, const bench_opts *o, bench_report_size *sizes,
                     bool kernels, char *note, size_t note_len) {
    pipeline_item *items = ml_xcalloc(c->n_plans, sizeof *items);
    const rank_plan **local = ml_xcalloc(c->n_plans * (size_t)c->job.n_local, sizeof *local);
    int rc = 0;
    for (size_t i = 0; i < c->sizes.n && rc == 0; i++) {
        bench_report_size *z = &sizes[i];
        if ((rc = expand_size(c, i, items, false)) != 0)
            break;
        local_plans(c, items, local);
        double t0 = ml_now_seconds();
        bench_plan_result *res = ml_xcalloc(c->n_plans, sizeof *res);
        if (!kernels) {
            z->n_plans = c->n_plans;
            z->plans = ml_xcalloc(c->n_plans, sizeof *z->plans);
            z->sweep_value = c->s->sweep_let >= 0
                                 ? items[0].plans[0].slots[EXPR_SLOT_FIRST_LET + c->s->sweep_let]
                                 : -1;
        }
        char err[700] = "";
        int got = kernels ? bench_kernels(b, local, c->n_plans, res, err, sizeof err)
                          : bench_time(b, local, c->n_plans, res, err, sizeof err);
        for (size_t p = 0; p < c->n_plans; p++) {
            bench_report_plan *rp = &z->plans[p];
            bench_plan_result *kept = (bench_plan_result *)rp->res;
            if (!kernels) {
                const char *plan = c->s->plans[c->plan_index[p]].name;
                rp->name = plan[0] ? plan : c->s->name;
                bench_plan_bytes(&items[p].plans[0], &rp->payload_bytes, &rp->bus_bytes);
                rp->collectives = bench_plan_collectives(&items[p].plans[0]);
                kept = ml_xcalloc(1, sizeof *kept);
                *kept = res[p];
                rp->res = kept;
            } else {
                kept->windows = res[p].windows;
                kept->n_windows = res[p].n_windows;
                kept->kernels_done = res[p].kernels_done;
                res[p].windows = NULL;
                res[p].n_windows = 0;
                bench_plan_result_free(&res[p]);
            }
        }
        for (size_t p = 0; p < c->n_plans && !kernels; p++)
            if (z->plans[p].res->check_failure[0])
                fprintf(stderr, "%s\n", z->plans[p].res->check_failure);
        free(res);
        free_plans(c, items);
        if (got < 0)
            rc = runtime_failure(c, err);
        else if (got == 1) {
            snprintf(note, note_len, "%s", err);
            break;
        } else if (c->rank0 && !c->a->quiet && !kernels)
            progress(c, i, z, ml_now_seconds() - t0, o->cycles);
    }
    free(items);
    free(local);
    return rc;
}

static int report_and_verdict(const bench_ctx *c, const bench_opts *o, bench_report_size *sizes,
                              const char *note) {
    char provenance[2048];
    snprintf(provenance, sizeof provenance, "memlife=%s\ncommit=%s\n", MEMLIFE_VERSION,
             MEMLIFE_COMMIT);
    if (c->job.be->provenance)
        c->job.be->provenance(provenance, sizeof provenance);
    bench_report rep = {
        .schedule = c->s->name,
        .about = c->s->about,
        .file = c->s->file,
        .sweep_let = c->s->sweep_let >= 0 ? c->s->lets[c->s->sweep_let].name : NULL,
        .backend = c->job.be->name,
        .launch = c->job.mpi ? "mpi" : "single",
        .world = c->job.world,
        .warmup = o->warmup,
        .cycles = o->cycles,
        .cv_max = o->cv_max,
        .align = !o->no_align && !c->job.be->spans_unaligned,
        .kernels_requested = o->kernels,
        .kernels_note = note[0] ? note : NULL,
        .sizes = sizes,
        .n_sizes = c->sizes.n,
        .provenance = provenance,
    };
    int rc = 0;
    if ((!c->a->quiet || c->a->output) && bench_report_emit(&rep, c->a->format, c->a->output))
        rc = ML_EXIT_RUNTIME;
    if (rc == 0 && o->json && bench_report_emit(&rep, FMT_JSON, o->json))
        rc = ML_EXIT_RUNTIME;
    for (size_t i = 0; rc == 0 && i < c->sizes.n; i++)
        for (size_t p = 0; p < sizes[i].n_plans; p++)
            if (sizes[i].plans[p].res->check_failures)
                rc = ML_EXIT_EXPECT;
    return rc;
}

static int bench_all(bench_ctx *c, const bench_opts *o) {
    if (!c->s) {
        int rc = load_input(c, o);
        if (rc != 0)
            return rc;
    }
    sched_params params = ml_args_params(c->a);
    c->job.opt.params = &params;
    c->job.opt.world_split_share = rt_sched_splits_share(c->s);
    if (rt_job_start(&c->job) != 0)
        return ML_EXIT_RUNTIME;
    bench_options bo;
    bench_options_default(&bo);
    bo.warmup = o->warmup;
    bo.cycles = o->cycles;
    bo.graph = o->graph;
    bo.align = !o->no_align;
    bo.graph_replays = o->graph_replays;
    bo.bare = c->job.be->collective_bare != NULL;
    bench *b = bench_new(c->job.be, &c->job.opt, &bo, c->job.world, c->job.n_local);
    bench_report_size *sizes = ml_xcalloc(c->sizes.n, sizeof *sizes);
    char note[400] = "";
    int rc = run_sizes(c, b, o, sizes, false, note, sizeof note);
    if (rc == 0 && o->kernels) {
        if (c->job.be->no_kernels_why)
            snprintf(note, sizeof note, "kernel evidence needs the cuda backend: backend '%s' "
                     "%s", c->job.be->name, c->job.be->no_kernels_why);
        else
            rc = run_sizes(c, b, o, sizes, true, note, sizeof note);
        if (rc == 0 && note[0] && c->rank0 && !c->a->quiet)
            fprintf(stderr, "note: %s; the timings stand\n", note);
    }
    c->job.be->finalize();
    if (rc == 0 && (!c->job.mpi || c->job.rank == 0))
        rc = report_and_verdict(c, o, sizes, note);
    for (size_t i = 0; i < c->sizes.n; i++) {
        for (size_t p = 0; p < sizes[i].n_plans; p++) {
            bench_plan_result *res = (bench_plan_result *)sizes[i].plans[p].res;
            if (res)
                bench_plan_result_free(res);
            free(res);
        }
        free(sizes[i].plans);
    }
    free(sizes);
    bench_free(b);
    return rc;
}

/* Refusals that need no schedule: the backend and what it can do. */
static int check_backend(bench_ctx *c, const bench_opts *o) {
    int rc = ml_backend_opts_check("bench", &c->a->backend, true, &c->job.be);
    if (rc != 0)
        return rc;
    const rt_backend_ops *be = c->job.be;
    if (!be->time_begin || !be->time_end)
        return ml_usage_error("bench", "backend '%s' cannot time spans of work", be->name);
    if (o->graph && !be->graph_begin)
        return ml_usage_error("bench", "--graph needs CUDA graphs: backend '%s' %s (use "
                              "--backend cuda)", be->name,
                              be->no_graphs_why ? be->no_graphs_why : "has none");
    if (c->a->files.n != 1)
        return ml_usage_error("bench", "bench takes one schedule file, not %zu", c->a->files.n);
    return 0;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o = {.warmup = 3, .cycles = 10, .cv_max = 5.0};
    const ml_opt extra[] = {
        {"--warmup", NULL, OPT_INT, &o.warmup, 0, 1000000, NULL,
         "N", "warm-up cycles per size, not reported (default 3)"},
        {"--cycles", NULL, OPT_INT, &o.cycles, 1, 1000000, NULL,
         "N", "measured cycles per size (default 10)"},
        {"--cv-max", NULL, OPT_DOUBLE, &o.cv_max, 1, 0, NULL,
         "PCT", "largest CV, in percent, at which a ratio is stated (default 5)"},
        {"--graph", NULL, OPT_FLAG, &o.graph, 0, 0, NULL,
         NULL,
             "cuda: also capture each plan's timed part as a CUDA graph and time its replays, "
             "reported separately (no launch gaps, no host skew)"},
        {"--graph-replays", NULL, OPT_INT, &o.graph_replays, 1, 1000000, NULL,
         "N",
             "capture N back-to-back runs of the timed part in each graph; a replay's span "
             "divided by N (default: 20 below 16 MiB, else 1)"},
        {"--no-align", NULL, OPT_FLAG, &o.no_align, 0, 0, NULL,
         NULL,
             "cuda: start memlife and bare spans after the host barrier only, not after the "
             "aligning AllReduce (the spans then hold host skew and launch gaps; graph replays "
             "stay aligned)"},
        {"--kernels", NULL, OPT_FLAG, &o.kernels, 0, 0, NULL,
         NULL,
             "cuda: count the GPU kernels inside each region with CUPTI (one more run of each "
             "plan per size, after all timing); NVTX ranges name the plans and regions for Nsight"},
        {"--sizes", NULL, OPT_STRING, &o.sizes, 0, 0, NULL,
         "A,B,...", "values for the sweep's let instead of the file's (1KiB,64KiB)"},
        {"--json", NULL, OPT_STRING, &o.json, 0, 0, NULL,
         "FILE", "also write the JSON report to FILE"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--world", "world size; must equal the number of ranks"),
        ML_OPT_DOC("--plan", "time only this plan"),
        ML_OPT_DOC("--format", "table (default), json, csv (timings only) or md"),
        ML_OPT_DOC("--quiet", "no progress on stderr, nothing on stdout"),
    };
    ml_args a;
    int rc;
    if (!ml_args_begin(&a, "bench", cmd_bench_usage, argc, argv, extra, ML_ARRAY_LEN(extra), false,
                       &rc))
        return rc;
    bench_ctx c;
    memset(&c, 0, sizeof c);
    c.a = &a;
    ml_vec_init(&c.sizes, sizeof(const char *));
    ml_vec_init(&c.owned, sizeof(char *));
    rc = check_backend(&c, &o);
    if (rc == 0) {
        rt_options_default(&c.job.opt);
        ml_backend_opts_apply(&a.backend, c.job.be, &c.job.opt);
        c.job.opt.verify_sequence = false;   /* lint checked the order; nothing rides on the spans */
        c.speak = !launch_is_child();
        bool launched = false;
        rc = ml_place_or_launch("bench", &a, &c.job, argc, argv, check_before_launch,
                                &(bench_input){&c, &o}, &launched);
        if (rc == 0 && !launched) {
            c.speak = c.speak && c.job.rank == 0;
            c.rank0 = c.job.rank == 0;
            a.world = c.job.world;
            rc = bench_all(&c, &o);
        }
    }
    for (size_t k = 0; k < c.owned.n; k++)
        free(ML_VEC_AT(&c.owned, char *, k));
    ml_vec_free(&c.owned);
    ml_vec_free(&c.sizes);
    free(c.plan_index);
    sched_free((sched *)c.s);
    ml_args_free(&a);
    return rc;
}
