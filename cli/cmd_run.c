/* SPDX-License-Identifier: MIT */
/* cmd_run.c — `memlife run`: execute schedules on a backend, measure, compare with the prediction.
 *
 * Every rank is a memlife process (host, or cuda under mpirun) that loads the files itself,
 * expands and lints every rank's plan (so all ranks agree on rejecting bad input, exit 2, before
 * anything runs), predicts, executes its own plan, and sends its measurement to rank 0, which
 * writes the one result: the predict report plus `measured` per rank and the data-check rows.
 * With --gpus N (cuda) one process drives all N ranks and nothing travels.
 *
 * Without an MPI launcher in the environment, `--ranks N` (or the files' world) makes memlife
 * start mpirun on itself (runtime/launch.c), after checking the input once here. */
#include "cmd.h"
#include "analysis.h"
#include "place.h"
#include "report/measured.h"
#include "backends/host_streams.h"
#include "exec/inject.h"
#include "exec/job.h"
#include "exec/launch.h"
#include "exec/mpi_util.h"
#include "exec/provenance.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

const char cmd_run_usage[] =
    "usage: memlife run [OPTIONS] FILE...\n"
    "\n"
    "Executes each schedule for real and compares what was measured with the prediction: the\n"
    "requested bytes after every step exactly, the device view (cudaMemGetInfo) where the backend\n"
    "reads one. Data inits and checks run on every rank; the result adds, per rank, `measured`\n"
    "and, per schedule, the check rows.\n"
    "\n"
    "backends:\n"
    "  host   one Open MPI process per rank, buffers in host memory, MPI collectives. Streams\n"
    "         are serialized: every op completes before the next starts (--stream-order picks\n"
    "         another legal order). No device view.\n"
    "         MEMLIFE_HOST_MEM_LIMIT=BYTES makes allocations beyond it fail.\n"
    "  cuda   CUDA + NCCL: one GPU per rank under MPI (--ranks N), or one process driving\n"
    "         N GPUs (--gpus N).\n"
    "  torch  PyTorch: each rank (under mpirun, as host) drives a Python driver that holds\n"
    "         torch tensors and calls torch.distributed (NCCL on a GPU, gloo on CPUs; what\n"
    "         gloo lacks is emulated and the result says so). MEMLIFE_PYTHON picks the\n"
    "         interpreter (default: the first python3 that imports torch), MEMLIFE_TORCH_DRIVER\n"
    "         the driver.\n"
    "\n"
    "@options\n"
    "fault injection (--inject, or MEMLIFE_INJECT when --inject is absent; comma-separated):\n"
    "  fail-alloc=K          alloc K (0-based, counted on each rank) fails on every rank\n"
    "  fail-alloc=R@K        alloc K of rank R fails\n"
    "  kill=R@K              rank R dies (SIGKILL) before op K, the op index of the timeline\n"
    "  delay=R@K[:S]         rank R sleeps S seconds before op K (default --timeout + 10, past\n"
    "                        its peers' deadline)\n"
    "  delay=R@init[:S]      rank R sleeps before the communicator set-up (its peers wait past\n"
    "                        the deadline; cuda: in ncclCommInitRank, a watchdog ends the job)\n"
    "  Every rank ends within the deadline with exit 3, the failing rank's op, step and live\n"
    "  requested bytes, where the others waited, and no result file. E.g.\n"
    "    memlife run f.yaml --ranks 4 --timeout 5 --inject delay=3@4\n"
    "\n"
    "exit codes: 0 measured = predicted and every check passed, 1 a difference, a failed check\n"
    "            or expectation, 2 bad input (syntax, lint error or hazard), 3 runtime failure\n"
    "            (allocation, divergence, timeout, a rank that died); a failed run writes no\n"
    "            result file\n";

typedef struct {
    ml_vec no_lint;
    ml_vec inject;
    bool no_data, no_sequence_check;
    const char *stream_order;   /* host: program (NULL), reverse, shuffle[:SEED] */
} run_opts;

/* An interrupted run leaves no result behind: the report is written only at the end, through a
 * temp file and rename, and a signal during the write removes the temp file. The signals are
 * not held off while it is written: a launcher that follows its SIGTERM with SIGKILL (mpirun
 * does) would otherwise kill the rank with the temp file still there. */
static void on_signal(int sig) {
    ml_write_abandon();
    rt_mpi_wait_report(STDERR_FILENO);  /* a rank ended by the launcher says where it waited */
    _exit(128 + sig);
}

static void set_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* The analysis prints its diagnostics; on ranks other than 0 (and in the children of our own
 * launch, whose parent already printed them) they would repeat, so stderr goes to /dev/null. */
static int analyze_quietly(const ml_args *a, const pipeline_opts *o, ml_analysis *an,
                           bool quiet) {
    return ml_analyze_quietly(a, "run", o, an, quiet);
}


static int parse_no_lint(const run_opts *ro, lint_options *lo) {
    for (size_t k = 0; k < ro->no_lint.n; k++) {
        const char *w = ML_VEC_AT(&ro->no_lint, const char *, k);
        if (lint_options_disable(lo, w) != 0) {
            char names[400];
            lint_class_list(names, sizeof names);
            return ml_usage_error("run", "--no-lint takes one of %s, not '%s'", names, w);
        }
    }
    return 0;
}

/* The world every item agrees on, or -1 (the items' worlds differ). */
static int items_world(const ml_analysis *an) {
    int world = 0;
    for (size_t k = 0; k < an->res.items.n; k++) {
        int w = ML_VEC_AT(&an->res.items, pipeline_item, k).world;
        if (world && w != world)
            return -1;
        world = w;
    }
    return world;
}

/* Rank 0's part after one item ran: every rank's record (taken over) compared with the
 * prediction, its check rows appended to checks (names copied into names). */
static void collect(report_schedule *rs, const pipeline_item *it, ml_measure *recs,
                    ml_vec *checks, ml_arena *names) {
    rs->measured = ml_xcalloc((size_t)it->world, sizeof *rs->measured);
    for (int r = 0; r < it->world; r++) {
        for (size_t k = 0; k < recs[r].n_checks; k++) {
            const ml_measure_check *c = &recs[r].checks[k];
            report_check *row = ml_vec_push(checks);
            row->name = ml_arena_strndup(names, c->name, strlen(c->name));
            row->rank = r;
            row->pass = c->pass;
            snprintf(row->detail, sizeof row->detail, "%s", c->detail);
        }
        report_measured_set(&rs->measured[r], &recs[r]);
        report_measured_compare(&rs->measured[r], &it->pred[r], &it->plans[r]);
    }
}

/* Runs one item on this process's ranks and, on rank 0, fills rs. Returns 0 or an exit code. */
static int run_item(const rt_job *c, pipeline_item *it, report_schedule *rs, ml_vec *checks,
                    ml_arena *names) {
    rt_rank *ranks = ml_xcalloc((size_t)c->n_local, sizeof *ranks);
    int rc = rt_job_run(c, it->plans, ranks);
    if (rc != 0) {
        rc = rt_job_failed(c, ranks, NULL);
    } else {
        ml_measure *recs = ml_xcalloc((size_t)c->world, sizeof *recs);
        char err[300] = "";
        if (rt_job_gather(c, ranks, recs, err, sizeof err)) {
            ml_report(ML_DIAG_ERROR, it->s->file, "rank %d: gathering results: %s", c->rank,
                      err);
            rc = ML_EXIT_RUNTIME;
        } else if (c->rank == 0) {
            collect(rs, it, recs, checks, names);
        }
        for (int r = 0; r < c->world; r++)
            ml_measure_free(&recs[r]);
        free(recs);
    }
    rt_job_free_ranks(c, ranks);
    free(ranks);
    return rc;
}

/* Rank 0: 1 when a measurement differs, a check fails or an expectation fails. */
static int verdict(const report *rep) {
    for (size_t k = 0; k < rep->n; k++) {
        const report_schedule *rs = &rep->items[k];
        if (rs->expect_failures > 0)
            return ML_EXIT_EXPECT;
        for (int r = 0; rs->measured && r < rs->world; r++)
            if (!rs->measured[r].match)
                return ML_EXIT_EXPECT;
        for (size_t j = 0; j < rs->n_checks; j++)
            if (!rs->checks[j].pass)
                return ML_EXIT_EXPECT;
    }
    return ML_EXIT_OK;
}

/* --inject (joined, repeatable) or MEMLIFE_INJECT into o. Returns 0 or a usage error. */
static int parse_inject(const run_opts *ro, rt_options *o) {
    ml_str spec = {0};
    for (size_t k = 0; k < ro->inject.n; k++)
        ml_str_printf(&spec, "%s%s", k ? "," : "", ML_VEC_AT(&ro->inject, const char *, k));
    const char *from = "--inject", *env = getenv("MEMLIFE_INJECT");
    if (!ro->inject.n && env && *env) {
        ml_str_printf(&spec, "%s", env);
        from = "MEMLIFE_INJECT";
    }
    char err[300];
    int rc = 0;
    if (spec.n && rt_inject_parse(spec.s, o, err, sizeof err) != 0)
        rc = ml_usage_error("run", "%s: %s", from, err);
    ml_str_free(&spec);
    return rc;
}

/* Every fault must name a rank of the world and be reached (an op or alloc that exists), else the
 * run would pass without the failure it was asked for: exit 2 before anything runs. */
static int check_inject(const rt_options *o, const ml_analysis *an, bool print) {
    if (!rt_inject_any(o))
        return 0;
    size_t n = an->res.items.n;
    const rank_plan **plans = ml_xcalloc(n ? n : 1, sizeof *plans);
    int *worlds = ml_xcalloc(n ? n : 1, sizeof *worlds);
    for (size_t k = 0; k < n; k++) {
        plans[k] = ML_VEC_AT(&an->res.items, pipeline_item, k).plans;
        worlds[k] = ML_VEC_AT(&an->res.items, pipeline_item, k).world;
    }
    char err[300];
    int rc = rt_inject_check(o, plans, worlds, n, err, sizeof err);
    free(plans);
    free(worlds);
    if (rc == 0)
        return 0;
    if (print)
        ml_report(ML_DIAG_ERROR, NULL, "--inject %s", err);
    return ML_EXIT_INPUT;
}

/* What the backend cannot run is refused here, before any rank starts (exit 2, like bad input):
 * every rank's plan of every item (a shared expansion is the same ops for every rank). */
static int check_backend(const rt_backend_ops *be, ml_analysis *an, bool print) {
    for (size_t k = 0; k < an->res.items.n; k++) {
        const pipeline_item *it = &ML_VEC_AT(&an->res.items, pipeline_item, k);
        for (int r = 0; r < (it->shared ? 1 : it->world); r++) {
            ml_diags d;
            ml_diags_init(&d);
            int rc = rt_backend_check(be, &it->plans[r], &d);
            if (rc != 0 && print)
                ml_diags_print(&d, stderr);
            ml_diags_free(&d);
            if (rc != 0)
                return ML_EXIT_INPUT;
        }
    }
    return 0;
}

/* The input checked once before our own mpirun starts the ranks (ml_place_or_launch): errors
 * print once, exit 2 before any rank starts; the world is --ranks, --world or the files'. */
typedef struct {
    ml_args *a;
    const pipeline_opts *ao;
} run_input;

static int check_before_launch(void *ctx, rt_job *c) {
    run_input *in = ctx;
    if (c->world && !in->a->world)
        in->a->world = c->world;
    ml_analysis an;
    int rc = analyze_quietly(in->a, in->ao, &an, false);
    int world = rc == 0 ? items_world(&an) : 0;
    if (rc == 0)
        rc = check_inject(&c->opt, &an, true);
    if (rc == 0)
        rc = check_backend(c->be, &an, true);
    ml_analysis_free(&an);
    if (rc != 0)
        return rc;
    if (!c->world)
        c->world = world;
    if (c->world <= 0)
        return ml_usage_error("run", "the files' worlds differ: say --ranks N");
    return 0;
}

static int run_all(rt_job *c, ml_args *a, const pipeline_opts *ao) {
    bool rank0 = c->rank == 0;
    ml_analysis an;
    int rc = analyze_quietly(a, ao, &an, !rank0 || launch_is_child());
    if (rc == 0)        /* every rank reaches the same verdict; rank 0 says it */
        rc = check_inject(&c->opt, &an, rank0 && !launch_is_child());
    if (rc == 0)
        rc = check_backend(c->be, &an, rank0 && !launch_is_child());
    if (rc != 0) {
        ml_analysis_free(&an);
        return rc;
    }
    sched_params params = ml_args_params(a);
    c->opt.params = &params;
    c->opt.world_split_share = an.res.items.n > 0;
    for (size_t k = 0; k < an.res.items.n; k++)
        c->opt.world_split_share &= rt_sched_splits_share(ML_VEC_AT(&an.res.items, pipeline_item, k).s);
    if (rt_job_start(c) != 0) {
        ml_analysis_free(&an);
        return ML_EXIT_RUNTIME;
    }
    /* Every rank takes part (the host names are gathered); rank 0 reports it. */
    char *prov = ml_provenance_collect(c->be, c->world);
    ml_vec *checks = ml_xcalloc(an.res.items.n ? an.res.items.n : 1, sizeof *checks);
    ml_arena *names = ml_arena_new();
    for (size_t k = 0; k < an.res.items.n && rc == 0; k++) {
        ml_vec_init(&checks[k], sizeof(report_check));
        rc = run_item(c, &ML_VEC_AT(&an.res.items, pipeline_item, k), &an.report_items[k], &checks[k],
                      names);
        /* The runtime's rows replace lint's: they are the evidence of this run. */
        an.report_items[k].checks = checks[k].items;
        an.report_items[k].n_checks = checks[k].n;
    }
    char provenance[8192] = "";
    if (rc == 0 && rank0) {
        snprintf(provenance, sizeof provenance, "%s", prov);
        if (rt_inject_any(&c->opt)) {
            char spec[200];
            size_t at = strlen(provenance);
            rt_inject_text(&c->opt, spec, sizeof spec);
            snprintf(provenance + at, sizeof provenance - at, "inject=%s\n", spec);
        }
        an.rep.provenance = provenance;
        if ((!a->quiet || a->output) && report_emit(&an.rep, a->format, a->output) != 0)
            rc = ML_EXIT_RUNTIME;
        if (rc == 0)
            rc = verdict(&an.rep);
    }
    c->be->finalize();
    free(prov);
    for (size_t k = 0; k < an.res.items.n; k++) {
        report_schedule *rs = &an.report_items[k];
        for (int r = 0; rs->measured && r < rs->world; r++)
            report_measured_free(&rs->measured[r]);
        free(rs->measured);
        rs->measured = NULL;
        rs->checks = NULL;       /* owned by checks[k] */
        rs->n_checks = 0;
        ml_vec_free(&checks[k]);
    }
    free(checks);
    ml_arena_free(names);
    ml_analysis_free(&an);
    return rc;
}

/* --stream-order's words (shuffle also takes :SEED) and --no-lint's classes (the lint table),
 * for completion. */
static const char *const stream_orders[] = {"program", "reverse", "shuffle", NULL};
static const char *lint_names[33];

int cmd_run(int argc, char **argv) {
    for (size_t k = 0; k < lint_class_count && k + 1 < ML_ARRAY_LEN(lint_names); k++)
        lint_names[k] = lint_classes[k].name;
    run_opts ro = {0};
    ml_vec_init(&ro.no_lint, sizeof(const char *));
    ml_vec_init(&ro.inject, sizeof(const char *));
    const ml_opt extra[] = {
        {"--no-lint", NULL, OPT_LIST, &ro.no_lint, 0, 0, lint_names,
         "CLASS",
             "let a class of lint errors through to test the runtime's own checks; "
             "repeatable: cross-rank, hazards, use-after-free, double-free, double-alloc, "
             "double-release, inplace-offsets, races"},
        {"--no-data", NULL, OPT_FLAG, &ro.no_data, 0, 0, NULL,
         NULL, "skip data inits, scales and checks (memory only)"},
        {"--no-sequence-check", NULL, OPT_FLAG, &ro.no_sequence_check, 0, 0, NULL,
         NULL,
             "do not exchange collective descriptors before each collective (a divergence then "
             "ends at the deadline)"},
        {"--inject", NULL, OPT_LIST, &ro.inject, 0, 0, NULL,
         "FAULTS", "make the run fail on purpose (below); repeatable"},
        {"--stream-order", NULL, OPT_STRING, &ro.stream_order, 0, 0, stream_orders, "ORDER",
         "host: run the streams' collectives and copies in program order (default), reverse "
         "(latest-queued stream first) or shuffle[:SEED], always respecting record/wait and host "
         "syncs: with --no-lint races a race shows as a failed data check"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--world", "world size; must equal the number of ranks"),
        ML_OPT_DOC("--output", "write the result to FILE (atomically) instead of stdout"),
    };
    ml_args a;
    int rc;
    if (!ml_args_begin(&a, "run", cmd_run_usage, argc, argv, extra, ML_ARRAY_LEN(extra), false,
                       &rc)) {
        ml_vec_free(&ro.no_lint);
        ml_vec_free(&ro.inject);
        return rc;
    }
    rt_job c = {0};
    pipeline_opts ao;
    pipeline_opts_default(&ao);
    rc = parse_no_lint(&ro, &ao.lint);
    if (rc == 0)
        rc = ml_backend_opts_check("run", &a.backend, true, &c.be);
    if (rc == 0 && ro.stream_order) {
        hs_order order;
        char why[160];
        if (!c.be->orders_streams)
            rc = ml_usage_error("run", "--stream-order is for the host backend (a GPU runs its "
                                "streams in its own order)");
        else if (hs_parse(ro.stream_order, &order, why, sizeof why))
            rc = ml_usage_error("run", "%s", why);
    }
    if (rc == 0) {
        rt_options_default(&c.opt);
        ml_backend_opts_apply(&a.backend, c.be, &c.opt);
        c.opt.data = !ro.no_data;
        c.opt.verify_sequence = !ro.no_sequence_check;
        c.opt.stream_order = ro.stream_order;
        set_signals();
        rc = parse_inject(&ro, &c.opt);
    }
    bool launched = false;
    if (rc == 0)
        rc = ml_place_or_launch("run", &a, &c, argc, argv, check_before_launch,
                                &(run_input){&a, &ao}, &launched);
    if (rc == 0 && !launched) {
        a.world = c.world;
        rc = run_all(&c, &a, &ao);
    }
    ml_vec_free(&ro.no_lint);
    ml_vec_free(&ro.inject);
    ml_args_free(&a);
    return rc;
}
