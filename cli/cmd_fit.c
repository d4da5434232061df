/* SPDX-License-Identifier: MIT */
/* cmd_fit.c — `memlife fit FILE --vary NAME --budget BYTES`: the largest integer value of a let
 * (micro-batch, sequence length, layers) whose predicted peak fits a device's memory on every
 * rank, after the memory that is not the schedule's: the NCCL communicator and the CUDA context.
 *
 * Each probe is the whole pipeline (expand, lint, predict; the file is loaded once) at --set
 * NAME=v, so a value that breaks the schedule (a shard that no longer divides, an overflow)
 * counts as not fitting and says why; where NAME reaches the ops only through allocs' sizes, the
 * quiet probes share one expansion and lint and only predict again (pipeline_sizes, exact). The search doubles from the file's own value until a value does not fit, then
 * bisects; it assumes the peak grows with the value (monotonic) and checks it where it answers:
 * v fits, v+1 does not. The reserves' defaults are measured facts of one machine (README's H200
 * table: NCCL 2.28's communicator after init and warm-up, 862 MiB at world >= 2, 580 MiB alone;
 * a CUDA 13 context about 500 MiB); other machines differ, hence --reserve and --context. */
#include "cmd.h"
#include "analysis.h"
#include "report/fit_report.h"
#include "predict/commmodel.h"
#include "base/human.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)
#define COMM_RESERVE_WORLD (862 * MIB)   /* NCCL 2.28 communicator, world >= 2, H200 */
#define COMM_RESERVE_ALONE (580 * MIB)   /* the same, world 1 */
#define CONTEXT_RESERVE (500 * MIB)      /* CUDA context */
#define FIT_MAX ((int64_t)1 << 40)       /* the search's ceiling */

const char cmd_fit_usage[] =
    "usage: memlife fit FILE --vary NAME --budget BYTES [--view device|requested]\n"
    "                   [--reserve BYTES] [--context BYTES] [--world N] [--set NAME=VALUE]...\n"
    "                   [--plan NAME] [--format table|json|csv|md] [--bytes]\n"
    "\n"
    "The largest integer value of the let NAME for which the predicted peak of every rank, plus\n"
    "the communicator reserve and the context reserve, fits in BYTES (e.g. 80GiB): 'the largest\n"
    "micro-batch that fits in 80 GiB at 8 GPUs'. Found by doubling from the file's value, then\n"
    "bisection; the peak is assumed to grow with NAME, and checked at the answer (it fits, the\n"
    "next value does not). Prints the value, its peak and the rank that binds, and the next\n"
    "value's peak. A file with plans must fit with every plan: the plan that binds is named\n"
    "(--plan NAME fits one).\n"
    "\n"
    "@options\n"
    "exit codes: 0 a value fits, 1 not even NAME=1 fits, 2 bad input\n";

typedef struct {
    bool ok;              /* loaded and predicted */
    bool fits;
    uint64_t peak;        /* the largest peak over ranks (and plans), in the view */
    uint64_t retries;     /* the torch view: the most allocator retries of a rank */
    bool model_failed;    /* --gpu: the communicators' model has no answer (said on stderr) */
    bool oom;             /* !ok because the torch view ran out of memory under the limit */
    int rank, world;      /* the rank that has it */
    int n_plans;          /* the plans predicted */
    char plan[128];       /* the plan that has it ("" without plans) */
    char why[300];        /* !ok: the first error */
} probe;

typedef struct {
    ml_args *a;
    const char *name;
    ml_mem_view view;
    uint64_t budget, reserve, context;
    bool reserve_set;
    bool let_is_size;     /* the file writes the let with a unit: its value prints as a size */
    sched *s;             /* the file, loaded once: every probe only sets the let again */
    int gpu;              /* --gpu KIND: commmodel_gpus' index; -1: not given */
    bool reserve_known;   /* with --gpu: the communicators' model has given the reserve */
    pipeline_sizes *sizes;   /* the quiet probes' one expansion and lint (NULL: none) */
    bool sizes_tried;
} fit_ctx;

static void probe_read(const fit_ctx *c, const pipeline_result *res, bool ok, probe *out);

/* With --gpu and no --reserve: the NCCL communicators' memory of the rank that has the most
 * (analyzer/predict/commmodel.h: every communicator the rank is in, their first uses, the
 * kind's per-process share), from an analysis of the file. The collectives and communicators do
 * not change with the let, so once. -1 with the model's reason where it has none. */
static int model_reserve(fit_ctx *c, const ml_analysis *an) {
    uint64_t most = 0;
    for (size_t k = 0; k < an->res.items.n; k++) {
        const pipeline_item *it = &ML_VEC_AT(&an->res.items, pipeline_item, k);
        int ranks = it->plans[0].comms ? it->world : 1;   /* world only: every rank alike */
        for (int r = 0; r < ranks; r++) {
            commmodel_out m;
            const char *why = NULL;
            int rc = commmodel_for_plan(&it->plans[r], c->gpu, &m, &why);
            uint64_t total = m.total;
            commmodel_out_free(&m);
            if (rc != 0) {
                ml_report(ML_DIAG_ERROR, NULL, "--gpu %s: no communicator model here: %s (give "
                          "--reserve)", commmodel_gpu_names[c->gpu], why ? why : "?");
                return -1;
            }
            if (total > most)
                most = total;
        }
    }
    c->reserve = most;
    c->reserve_known = true;
    return 0;
}

/* BYTES: a constant expression with units; a reserve may be 0 (a program on one GPU without
 * NCCL, or under a fake process group, has no communicator memory). */
static int parse_bytes(const char *opt, const char *text, bool zero_ok, uint64_t *out) {
    ml_arena *a = ml_arena_new();
    expr_error ee;
    int64_t v = 0;
    expr *e = expr_parse(a, text, strlen(text), NULL, NULL, &ee);
    int rc = e && expr_eval(e, NULL, &v, &ee) == 0 && (v > 0 || (zero_ok && v == 0)) ? 0 : -1;
    ml_arena_free(a);
    if (rc != 0)
        return ml_usage_error("fit", "%s needs a %s size such as 80GiB, not '%s'", opt,
                              zero_ok ? "non-negative" : "positive", text);
    *out = (uint64_t)v;
    return 0;
}

/* The analysis at NAME=v, its diagnostics printed only when loud. */
static void probe_at(fit_ctx *c, int64_t v, bool loud, probe *out) {
    memset(out, 0, sizeof *out);
    char set[200];
    snprintf(set, sizeof set, "%s=%" PRId64, c->name, v);
    *(const char **)ml_vec_push(&c->a->set) = set;   /* the last --set of a let wins */
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.timeline = false;   /* a probe reads the peaks, not the live bytes after every op, */
    o.details = false;    /* nor what lives at them */
    ml_analysis an;
    pipeline_input in = ml_args_pipeline(c->a, &o);
    const sched *loaded[1] = {c->s};
    in.loaded = loaded;
    if (c->gpu >= 0 && !c->reserve_set && !c->reserve_known) {
        /* the reserve first (the torch view's limit needs it): an analysis without a limit */
        int first = ml_analysis_run(&in, "fit", &an);
        int mr = first == ML_EXIT_OK ? model_reserve(c, &an) : 0;
        ml_analysis_free(&an);
        if (mr != 0) {
            c->a->set.n--;
            snprintf(out->why, sizeof out->why, "no communicator model for --gpu");
            out->model_failed = true;
            return;
        }
    }
    if (c->view == VIEW_TORCH_RESERVED) {
        /* PyTorch's allocator under set_per_process_memory_fraction: what the budget leaves
         * after the communicator and the context is its limit, so a value that needs more
         * frees the cache and retries (counted), or runs out of memory (does not fit). */
        uint64_t other = c->reserve + c->context;
        in.has_torch_limit = true;
        in.torch_limit = c->budget > other ? c->budget - other : 1;
    }
    /* A quiet probe reuses the file's expansion and lint where only sizes change with the let
     * (pipeline_sizes: the same result as the full run); a loud one prints what the full run
     * says, every warning included. */
    if (!loud && !c->sizes_tried) {
        c->sizes = pipeline_sizes_new(&in, c->name);
        c->sizes_tried = true;
    }
    const pipeline_result *res;
    int zr = !loud && c->sizes ? pipeline_sizes_run(c->sizes, &in, &res) : 1;
    if (zr != 1) {
        c->a->set.n--;
        probe_read(c, res, zr == 0, out);
        return;
    }
    int rc = ml_analysis_run(&in, "fit", &an);
    if (loud)
        ml_diags_print(&an.res.diags, stderr);
    c->a->set.n--;
    probe_read(c, &an.res, rc == ML_EXIT_OK, out);
    ml_analysis_free(&an);
}

/* A probe's outcome from a run's result (ok: the run succeeded). */
static void probe_read(const fit_ctx *c, const pipeline_result *res, bool ok, probe *out) {
    if (!ok) {
        const ml_diag *g = ml_diags_first_error(&res->diags);
        if (g)
            ml_diag_format(g, out->why, sizeof out->why);
        else
            snprintf(out->why, sizeof out->why, "the analysis failed");
        /* the torch view's out-of-memory (view_torch.c's message): the value does not fit,
         * which the file's own value may do too without being bad input */
        out->oom = g && strstr(out->why, "would run out of memory") != NULL;
        return;
    }
    out->ok = true;
    out->n_plans = (int)res->items.n;
    for (size_t k = 0; k < res->items.n; k++) {
        const pipeline_item *it = &ML_VEC_AT(&res->items, pipeline_item, k);
        for (int r = 0; r < it->world; r++) {
            if (it->pred[r].peak[c->view] > out->peak || (k == 0 && r == 0)) {
                out->peak = it->pred[r].peak[c->view];
                out->rank = r;
                snprintf(out->plan, sizeof out->plan, "%s", it->s->plans[it->plan_index].name);
            }
            if (it->pred[r].torch && it->pred[r].torch->alloc_retries > out->retries)
                out->retries = it->pred[r].torch->alloc_retries;
        }
        out->world = it->world;
    }
    out->fits = out->peak <= c->budget && c->budget - out->peak >= c->reserve + c->context;
}

/* The file's own value of NAME (at rank 0), as the search's start; 1 when it is below 1. */
static int start_value(fit_ctx *c, int64_t *out) {
    const char *path = ML_VEC_AT(&c->a->files, const char *, 0);
    ml_diags d;
    ml_diags_init(&d);
    sched_params p = ml_args_params(c->a);
    sched_load_limits lim = sched_load_with(&p);
    sched *s = sched_load_file(path, &lim, &d);
    int rc = -1;
    c->s = s;
    if (s) {
        int let = -1;
        for (uint32_t k = 0; k < s->n_lets; k++)
            if (!strcmp(s->lets[k].name, c->name))
                let = (int)k;
        int world = sched_world(s, &p, &d);
        int64_t *slots = ml_xcalloc(sched_n_slots(s), sizeof *slots);
        if (let < 0)
            ml_error(&d, path, ((ml_mark){0, 0}), "--vary %s: the file has no let '%s'", c->name, c->name);
        else if (world > 0 && sched_eval_lets(s, &p, world, 0, slots, &d) == 0) {
            *out = slots[EXPR_SLOT_FIRST_LET + let] < 1 ? 1 : slots[EXPR_SLOT_FIRST_LET + let];
            c->let_is_size = expr_has_unit(s->lets[let].value);
            if (!c->reserve_set && c->gpu < 0)
                c->reserve = world >= 2 ? COMM_RESERVE_WORLD : COMM_RESERVE_ALONE;
            if (c->view == VIEW_COUNT)   /* the default: the torch view where the file has one */
                c->view = s->torch.present || p.torch_conf || p.has_torch_limit ||
                                  p.has_torch_capacity
                              ? VIEW_TORCH_RESERVED
                              : VIEW_DEVICE;
            rc = 0;
        }
        free(slots);
    }
    ml_diags_print(&d, stderr);
    ml_diags_free(&d);
    return rc;
}

static void fit_ctx_free(fit_ctx *c) {
    pipeline_sizes_free(c->sizes);
    sched_free(c->s);
}

static void bytes_text(uint64_t b, char *buf, size_t len) { ml_human_size(b, buf, len); }

static fit_point point_of(const probe *p, int64_t v) {
    return (fit_point){.value = v, .predicted = p->ok, .fits = p->fits, .peak = p->peak,
                       .rank = p->rank, .plan = p->plan[0] ? p->plan : NULL,
                       .error = p->ok ? NULL : p->why, .retries = p->retries};
}

/* The answer in the format asked, onto stdout or atomically into -o FILE (no partial file where
 * a write fails half way). */
static int print_answer(const fit_ctx *c, int64_t v, const probe *at, int64_t next_v,
                        const probe *next) {
    fit_answer ans = {.file = ML_VEC_AT(&c->a->files, const char *, 0), .let = c->name,
                      .view = c->view == VIEW_TORCH_RESERVED ? "torch" : ml_mem_view_names[c->view],
                      .let_is_size = c->let_is_size,
                      .budget = c->budget, .reserve = c->reserve, .context = c->context,
                      .world = at->world, .n_plans = at->n_plans, .at = point_of(at, v),
                      .next = point_of(next, next_v)};
    return fit_report_emit(&ans, c->a->format, c->a->output) != 0 ? ML_EXIT_RUNTIME : ML_EXIT_OK;
}

int cmd_fit(int argc, char **argv) {
    ml_args a;
    int rc;
    const char *vary = NULL, *budget = NULL, *reserve = NULL, *context = NULL;
    int view = -1;
    static const char *const views[] = {"device", "requested", "torch", NULL};
    static const ml_mem_view view_series[] = {VIEW_DEVICE, VIEW_REQUESTED, VIEW_TORCH_RESERVED};
    const ml_opt extra[] = {
        {"--vary", NULL, OPT_STRING, &vary, 0, 0, NULL, "NAME",
         "the let to vary (an integer; must be a let of the file)"},
        {"--budget", NULL, OPT_STRING, &budget, 0, 0, NULL, "BYTES",
         "memory per device, an expression with units: 80GiB, 141 GB"},
        {"--view", NULL, OPT_CHOICE, &view, 0, 0, views, "V",
         "torch (the default for a file with a torch view: memory_reserved, the budget left after "
         "the reserves being the allocator's limit), device (the default otherwise: "
         "cudaMemGetInfo by the page model) or requested"},
        {"--reserve", NULL, OPT_STRING, &reserve, 0, 0, NULL, "BYTES",
         "communicator memory outside the views (default: with --gpu KIND, the communicator "
         "model's for the rank in the most communicators; else 862 MiB at world >= 2, 580 MiB "
         "at world 1, as NCCL 2.28 measured on H200)"},
        {"--context", NULL, OPT_STRING, &context, 0, 0, NULL, "BYTES",
         "CUDA context memory (default: with --gpu KIND, its measured context; else 500 MiB)"},
    };
    if (!ml_args_begin(&a, "fit", cmd_fit_usage, argc, argv, extra, ML_ARRAY_LEN(extra), false, &rc))
        return rc;
    fit_ctx c = {.a = &a, .name = vary, .view = view >= 0 ? view_series[view] : VIEW_COUNT,
                 .context = CONTEXT_RESERVE};
    rc = ML_EXIT_OK;
    if (a.files.n != 1)
        rc = ml_usage_error("fit", "fit takes one schedule file");
    else if (!vary)
        rc = ml_usage_error("fit", "--vary NAME is required");
    else if (!budget)
        rc = ml_usage_error("fit", "--budget BYTES is required");
    if (rc == ML_EXIT_OK && parse_bytes("--budget", budget, false, &c.budget) != 0)
        rc = ML_EXIT_INPUT;
    if (rc == ML_EXIT_OK && reserve && parse_bytes("--reserve", reserve, true, &c.reserve) != 0)
        rc = ML_EXIT_INPUT;
    if (rc == ML_EXIT_OK && context && parse_bytes("--context", context, true, &c.context) != 0)
        rc = ML_EXIT_INPUT;
    if (rc == ML_EXIT_OK && a.has_torch_limit && (view < 0 || view_series[view] == VIEW_TORCH_RESERVED))
        rc = ml_usage_error("fit", "--torch-limit: with the torch view the budget sets the "
                                   "allocator's limit (--view device or requested keep it)");
    c.reserve_set = reserve != NULL;
    c.gpu = a.gpu ? a.gpu - 1 : -1;
    if (rc == ML_EXIT_OK && c.gpu >= 0 && !context) {
        if (!commmodel_gpus[c.gpu].measured)
            rc = ml_usage_error("fit", "--gpu %s: its CUDA context has not been measured; give "
                                       "--context", commmodel_gpu_names[c.gpu]);
        else
            c.context = commmodel_gpus[c.gpu].cuda_context;
    }
    int64_t v0 = 1;
    if (rc == ML_EXIT_OK && start_value(&c, &v0) != 0)
        rc = ML_EXIT_INPUT;
    if (rc != ML_EXIT_OK) {
        fit_ctx_free(&c);
        ml_args_free(&a);
        return rc;
    }
    /* The file's own value must load and predict: its errors are input errors, shown. */
    probe p0, lo_p, hi_p;
    probe_at(&c, v0, c.view != VIEW_TORCH_RESERVED, &p0);
    if (!p0.ok && p0.oom)
        ;   /* does not fit at the file's value: the search goes down */
    else if (!p0.ok || p0.model_failed) {
        if (c.view == VIEW_TORCH_RESERVED && !p0.model_failed)
            probe_at(&c, v0, true, &p0);   /* quiet above: say why now */
        fit_ctx_free(&c);
        ml_args_free(&a);
        return ML_EXIT_INPUT;
    }
    int64_t lo, hi;   /* lo fits, hi does not */
    if (p0.fits) {
        lo = v0;
        lo_p = p0;
        for (hi = v0 * 2;; hi = hi * 2) {
            probe_at(&c, hi, false, &hi_p);
            if (!hi_p.fits || hi >= FIT_MAX)
                break;
            lo = hi;
            lo_p = hi_p;
        }
    } else {
        hi = v0;
        hi_p = p0;
        lo = 0;
        while (hi > 1) {
            int64_t mid = hi / 2;
            probe_at(&c, mid, false, &lo_p);
            if (lo_p.fits) {
                lo = mid;
                break;
            }
            hi = mid;
            hi_p = lo_p;
        }
        if (lo == 0) {
            char pk[64], b[64];
            bytes_text(hi_p.peak, pk, sizeof pk);
            bytes_text(c.budget, b, sizeof b);
            char rs[64], cx[64];
            bytes_text(c.reserve, rs, sizeof rs);
            bytes_text(c.context, cx, sizeof cx);
            if (c.budget <= c.reserve + c.context)
                ml_report(ML_DIAG_ERROR, NULL, "%s = 1 does not fit in %s: the communicators "
                          "take %s and the CUDA context %s before any tensor", c.name, b, rs, cx);
            else if (hi_p.oom)   /* under the torch view's limit: where it runs out */
                ml_report(ML_DIAG_ERROR, NULL, "%s = 1 does not fit in %s: %s", c.name, b,
                          hi_p.why);
            else
                ml_report(ML_DIAG_ERROR, NULL, "%s = 1 does not fit in %s: peak %s on rank %d%s%s, "
                          "plus reserves", c.name, b, pk, hi_p.rank,
                          hi_p.n_plans > 1 ? " of plan " : "", hi_p.n_plans > 1 ? hi_p.plan : "");
            fit_ctx_free(&c);
            ml_args_free(&a);
            return ML_EXIT_EXPECT;
        }
    }
    if (hi_p.fits) {   /* the ceiling: a peak that does not grow with NAME */
        ml_report(ML_DIAG_ERROR, NULL,
                  "%s = %" PRId64 " still fits: the peak does not grow with %s", c.name, hi,
                  c.name);
        fit_ctx_free(&c);
        ml_args_free(&a);
        return ML_EXIT_INPUT;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        probe q;
        probe_at(&c, mid, false, &q);
        if (q.fits) {
            lo = mid;
            lo_p = q;
        } else {
            hi = mid;
            hi_p = q;
        }
    }
    /* Monotonicity, checked where it matters: the answer fits and the next value does not. */
    probe check_lo, check_hi;
    probe_at(&c, lo, false, &check_lo);
    probe_at(&c, lo + 1, false, &check_hi);
    if (!check_lo.fits || check_hi.fits) {
        ml_report(ML_DIAG_ERROR, NULL, "the peak is not monotonic in %s near %" PRId64, c.name, lo);
        fit_ctx_free(&c);
        ml_args_free(&a);
        return ML_EXIT_INPUT;
    }
    rc = print_answer(&c, lo, &check_lo, lo + 1, &check_hi);
    fit_ctx_free(&c);
    ml_args_free(&a);
    return rc;
}
