/* SPDX-License-Identifier: MIT */
/* cmd_equiv.c — `memlife equiv A B`: the chapter's four meanings of "AllReduce = ReduceScatter +
 * AllGather" for any two plans (analyzer/equiv.h).
 *
 * Every process loads both plans and works out rows 2-4 and the data flow itself; row 1 runs
 * both plans on a backend with data (cli/equiv_run.c) — memlife starts mpirun on itself for the
 * host backend as `run` does — and every rank ends with the same verdict; rank 0 writes. */
#include "cmd.h"
#include "args.h"
#include "equiv_run.h"
#include "place.h"
#include "exec/launch.h"
#include "exec/provenance.h"

#include <stdlib.h>
#include <string.h>

const char cmd_equiv_usage[] =
    "usage: memlife equiv [OPTIONS] A B\n"
    "       memlife equiv FILE.yaml          (a file with exactly two plans)\n"
    "\n"
    "A and B are schedules, or FILE.yaml:PLAN for a named plan. Checks the four meanings of\n"
    "\"AllReduce = ReduceScatter + AllGather\" (course chapter 07) for the two plans:\n"
    "  1 output semantics    both plans run on a backend from their inputs; the result buffers\n"
    "                        are compared on every rank: integers exactly; floats bitwise, with\n"
    "                        max abs and max rel difference, and pass/fail under --rtol/--atol\n"
    "                        (default torch's: float32 1.3e-6 / 1e-5)\n"
    "  2 communication       ring steps and link bytes per rank from the collective table\n"
    "  3 execution structure public API calls, kernels expected (and measured, --kernels),\n"
    "                        syncs and waits, intermediate buffers per rank\n"
    "  4 state               steady and peak per rank and view, buffers live at each peak\n"
    "Where the outputs differ, the plans' data flow names the step and the cause from the\n"
    "chapter's checklist (input count, padding identity, trim, shard owner, gather order,\n"
    "reduction op, dtype, scaling, a shard changed between phases, collective sequences).\n"
    "\n"
    "@options\n"
    "exit codes: 0 all four hold, 1 one does not (or row 1 is undecided), 2 bad input,\n"
    "            3 runtime failure\n";

typedef struct {
    const char *result;
    double rtol, atol;
    bool no_data, kernels;
} equiv_opts;

typedef struct {
    ml_vec sides;              /* series */
    bool seq_ok[2];
    char seq_text[2][512];
    ml_mark seq_mark[2];
} equiv_inputs;

/* Expands, lints and predicts one plan (the pipeline, lint findings kept apart). A plan whose only lint errors are
 * cross-rank ones is an answer here, not bad input: its collective sequences are inconsistent
 * across ranks (row 1's cause); the other rows are still worked out per rank. */
static int load_plan(sched *s, int plan, int world, const sched_params *p, series *out,
                     bool *seq_ok, char *seq_text, size_t seq_len, ml_mark *seq_mark, ml_diags *d) {
    ml_diags lint;
    ml_diags_init(&lint);
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.predict = o.expect = false;
    o.lint_diags = &lint;
    int rc = series_from_plan(s, plan, world, p, &o, out, d);
    const ml_diag *first = ml_diags_first_error(&lint);
    bool cross_only = rc == 0 && first;
    for (size_t k = 0; k < lint.items.n; k++) {
        const ml_diag *g = &ML_VEC_AT(&lint.items, ml_diag, k);
        if (g->level == ML_DIAG_ERROR && (!g->code || strcmp(g->code, "cross_rank") != 0))
            cross_only = false;
    }
    if (rc == 0 && (!first || cross_only)) {
        rc = pipeline_predict(&out->item, p, &o, d);
        out->pred = out->item.pred;
    } else if (rc == 0) {
        rc = -1;               /* lint errors other than cross-rank ones: bad input */
    }
    if (rc == 0 && cross_only) {
        *seq_ok = false;
        *seq_mark = first->mark;
        snprintf(seq_text, seq_len, first->rank >= 0 ? "%s [rank %d]" : "%s", first->text,
                 first->rank);
    } else {
        for (size_t k = 0; k < lint.items.n; k++) {
            const ml_diag *g = &ML_VEC_AT(&lint.items, ml_diag, k);
            ml_diag_add(d, g->level, g->file, g->mark, g->rank, g->code, "%s", g->text);
        }
    }
    ml_diags_free(&lint);
    return rc;
}

/* One input word: FILE.yaml (its every plan) or FILE.yaml:PLAN. Its diagnostics are printed
 * here (when print is set), before they go: they point at the path here and at the schedule's
 * own name, and a schedule no side keeps is freed on the way out. */
static int load_word(const char *word, const sched_params *p, equiv_inputs *in, bool print) {
    ml_diags diags, *d = &diags;
    ml_diags_init(d);
    char path[4096];
    const char *plan;
    sched *s = NULL;
    sched_load_limits lim = sched_load_with(p);
    if (pipeline_split_word(word, path, sizeof path, &plan) != 0)
        ml_error(d, word, ((ml_mark){0, 0}), "input name too long");
    else
        s = sched_load_file(path, &lim, d);
    int world = s ? sched_world(s, p, d) : 0;
    bool owned = false, failed = false;
    for (uint32_t k = 0; world > 0 && !failed && k < s->n_plans; k++) {
        if (plan && strcmp(s->plans[k].name, plan) != 0)
            continue;
        size_t i = in->sides.n;
        if (i >= 2) {
            ml_error(d, path, ((ml_mark){0, 0}), "equiv compares two plans; the inputs give more "
                                                 "(name one plan of a file as FILE.yaml:PLAN)");
            break;
        }
        series *sr = ml_vec_push(&in->sides);
        sr->source = strdup(word);
        sr->owns_sched = !owned;
        owned = true;
        if (load_plan(s, (int)k, world, p, sr, &in->seq_ok[i], in->seq_text[i],
                      sizeof in->seq_text[i], &in->seq_mark[i], d) < 0)
            failed = true;
    }
    if (s && plan && !owned)
        sched_plan_named(s, plan, d);   /* says which plans there are */
    if (print)
        ml_diags_print(d, stderr);
    int rc = failed || d->errors ? -1 : 0;
    ml_diags_free(d);
    if (!owned)
        sched_free(s);
    return rc;
}

static int load_inputs(const ml_args *a, equiv_inputs *in, bool print) {
    sched_params p = ml_args_params(a);
    ml_vec_init(&in->sides, sizeof(series));
    in->seq_ok[0] = in->seq_ok[1] = true;
    int rc = ML_EXIT_OK;
    for (size_t k = 0; k < a->files.n && rc == ML_EXIT_OK; k++)
        if (load_word(ML_VEC_AT(&a->files, const char *, k), &p, in, print) < 0)
            rc = ML_EXIT_INPUT;
    if (rc == ML_EXIT_OK && in->sides.n != 2) {
        ml_report(ML_DIAG_ERROR, NULL, "equiv compares two plans; the inputs give %zu (name one "
                  "plan of a file as FILE.yaml:PLAN)", in->sides.n);
        rc = ML_EXIT_INPUT;
    }
    return rc;
}

/* --result NAME or NAME=NAME_B into the two names (pointers into buf). */
static void split_result(const char *spec, char *buf, size_t len, const char **a, const char **b) {
    *a = *b = NULL;
    if (!spec)
        return;
    snprintf(buf, len, "%s", spec);
    char *eq = strchr(buf, '=');
    if (eq)
        *eq = '\0';
    *a = buf;
    *b = eq ? eq + 1 : NULL;
}

/* Where the ranks come from (ml_place_ranks; nothing with --no-data, which runs no rank):
 * returns 0 with c set and *launch_now when this process is to start mpirun itself, once the
 * inputs are checked, or an exit code. */
static int place(const equiv_opts *o, ml_args *a, equiv_run_ctx *c, bool *launch_now) {
    *launch_now = false;
    if (o->no_data)
        return 0;
    int rc = ml_place_job("equiv", a, &c->job, launch_now);
    if (rc != 0)
        return rc;
    if (!*launch_now)
        a->world = c->job.world;
    else if (a->backend.ranks && !a->world)
        a->world = a->backend.ranks;
    return 0;
}

static int equiv_main(equiv_opts *o, ml_args *a, int argc, char **argv) {
    equiv_run_ctx c = {0};
    int rc = ml_backend_opts_check("equiv", &a->backend, !o->no_data, &c.job.be);
    if (rc != 0)
        return rc;
    bool launch_now;
    rc = place(o, a, &c, &launch_now);
    if (rc != 0)
        return rc;
    bool rank0 = c.job.rank == 0;
    equiv_inputs in;
    memset(&in, 0, sizeof in);
    rc = load_inputs(a, &in, rank0 && !launch_is_child());
    char knote[512] = "";
    if (o->kernels && o->no_data)
        snprintf(knote, sizeof knote,
            "kernel evidence needs the cuda backend with CUPTI: --no-data "
                 "runs neither plan; row 3 shows the kernels expected only");
    else if (o->kernels && c.job.be->no_kernels_why)
        snprintf(knote, sizeof knote, "kernel evidence needs the cuda backend with CUPTI: backend "
                 "'%s' %s; row 3 shows the kernels expected only", c.job.be->name,
                 c.job.be->no_kernels_why);
    if (rc == 0 && knote[0] && rank0 && !launch_is_child())
        fprintf(stderr, "note: --kernels: %s\n", knote);
    const series *side[2] = {NULL, NULL};
    uint32_t result[2];
    char names[512];
    const char *na, *nb;
    split_result(o->result, names, sizeof names, &na, &nb);
    if (rc == 0) {
        side[0] = &ML_VEC_AT(&in.sides, series, 0);
        side[1] = &ML_VEC_AT(&in.sides, series, 1);
        ml_diags d;
        ml_diags_init(&d);
        if (equiv_pick_results(side[0], side[1], na, nb, result, &d) != 0 ||
            side[0]->world != side[1]->world) {
            if (side[0]->world != side[1]->world)
                ml_error(&d, side[1]->s->file, ((ml_mark){0, 0}),
                         "the plans run at different worlds (%d and %d): say --world N",
                         side[0]->world, side[1]->world);
            if (rank0 && !launch_is_child())
                ml_diags_print(&d, stderr);
            rc = ML_EXIT_INPUT;
        }
        ml_diags_free(&d);
    }
    if (rc == 0 && launch_now) {
        rc = ml_launch_job(a->backend.ranks ? a->backend.ranks : side[0]->world, argc, argv, a);
        series_vec_free(&in.sides);
        return rc;
    }
    equiv_result r;
    memset(&r, 0, sizeof r);
    const char *seq_text[2] = {in.seq_text[0], in.seq_text[1]};
    if (rc == 0) {
        ml_diags d;
        ml_diags_init(&d);
        if (equiv_analyze(side[0], side[1], result, in.seq_ok, seq_text, in.seq_mark, &r, &d) != 0) {
            ml_diags_print(&d, stderr);
            rc = ML_EXIT_INPUT;
        }
        ml_diags_free(&d);
    }
    char *prov = NULL;
    if (rc == 0) {
        uint64_t count;
        ml_dtype dt;
        equiv_result_shape(&side[0]->plans[0], result[0], &count, &dt);
        equiv_default_tolerance(dt, &r.rtol, &r.atol);
        if (o->rtol >= 0)
            r.rtol = o->rtol;
        if (o->atol >= 0)
            r.atol = o->atol;
    }
    if (rc == 0 && !o->no_data && (!in.seq_ok[0] || !in.seq_ok[1])) {
        /* A divergent plan would only end at the runtime's sequence check: row 1 is the cause. */
        prov = ml_provenance_collect(NULL, r.world);
        if (o->kernels && !knote[0])
            snprintf(knote, sizeof knote, "no kernels measured: the plans did not run (their "
                     "collective sequences differ across ranks)");
    } else if (rc == 0 && !o->no_data) {
        sched_params params = ml_args_params(a);
        rt_options_default(&c.job.opt);
        ml_backend_opts_apply(&a->backend, c.job.be, &c.job.opt);
        c.job.opt.params = &params;
        c.job.opt.world_split_share = rt_sched_splits_share(side[0]->plans[0].s) &&
                                      rt_sched_splits_share(side[1]->plans[0].s);
        c.kernels = o->kernels && !knote[0];
        equiv_run_kernels kr;
        rc = equiv_run_data(&c, side, result, r.rtol, r.atol, &r.data, &kr, &prov);
        if (rc == 0)
            equiv_judge_output(&r);
        if (rc == 0 && kr.per[0]) {
            r.kernels[0] = kr.per[0];
            r.kernels[1] = kr.per[1];
            equiv_judge_kernels(&r);
        } else if (rc == 0 && c.kernels) {
            snprintf(knote, sizeof knote, "%s; row 3 shows the kernels expected only", kr.why);
            if (rank0)
                fprintf(stderr, "note: --kernels: %s\n", knote);
        }
    } else if (rc == 0) {
        prov = ml_provenance_collect(NULL, r.world);
    }
    snprintf(r.kernels_note, sizeof r.kernels_note, "%s", knote);
    if (rc == 0) {
        if (rank0 && (!a->quiet || a->output)) {
            ml_str text = {0};
            equiv_write(&r, a->format, prov, &text);
            if (!a->output || !strcmp(a->output, "-")) {
                fwrite(text.s, 1, text.n, stdout);
            } else if (ml_write_file_atomic(a->output, text.s, text.n) != 0) {
                ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s'", a->output);
                rc = ML_EXIT_RUNTIME;
            }
            ml_str_free(&text);
        }
        /* Rank 0 alone says the verdict: a peer's exit 1 would make mpirun end the job while
         * rank 0 still writes. */
        if (rc == 0 && rank0)
            rc = equiv_exit_code(&r);
    }
    free(prov);
    equiv_result_free(&r);
    series_vec_free(&in.sides);
    return rc;
}

int cmd_equiv(int argc, char **argv) {
    equiv_opts o = {.rtol = -1, .atol = -1};
    const ml_opt extra[] = {
        {"--rtol", NULL, OPT_DOUBLE, &o.rtol, 0, 0, NULL, "X",
         "relative float tolerance: |b - a| <= atol + rtol * |a|"},
        {"--atol", NULL, OPT_DOUBLE, &o.atol, 0, 0, NULL, "Y",
         "absolute float tolerance (with --rtol)"},
        {"--result", NULL, OPT_STRING, &o.result, 0, 0, NULL,
         "NAME[=NAME_B]",
             "the result buffers (live at the end of each plan); default: the one name live at "
             "the end of both, or the one buffer each plan leaves live"},
        {"--no-data", NULL, OPT_FLAG, &o.no_data, 0, 0, NULL,
         NULL, "do not run: row 1 from the data flow alone"},
        {"--kernels", NULL, OPT_FLAG, &o.kernels, 0, 0, NULL,
         NULL,
             "cuda: count each plan's GPU kernels with CUPTI while it runs and check row 3's "
             "kernels expected per rank against them"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--world", "world size for both plans"),
        ML_OPT_DOC("--set", "override a 'let:' value in both; repeatable"),
        ML_OPT_DOC("--format", "table (default), json or md"),
        ML_OPT_DOC("--output", "write to FILE (atomically) instead of stdout"),
    };
    ml_args a;
    int rc;
    if (!ml_args_begin(&a, "equiv", cmd_equiv_usage, argc, argv, extra, ML_ARRAY_LEN(extra), false,
                       &rc))
        return rc;
    char names[128];
    report_format_names(equiv_formats(), ", ", " or ", names, sizeof names);
    if (!(equiv_formats() & (1u << a.format)))   /* the formats its document has */
        rc = ml_usage_error("equiv", "'equiv' writes %s, not %s", names, report_formats[a.format].name);
    else if (o.rtol < 0 && o.rtol != -1)
        rc = ml_usage_error("equiv", "--rtol must be 0 or more");
    else if (o.atol < 0 && o.atol != -1)
        rc = ml_usage_error("equiv", "--atol must be 0 or more");
    else
        rc = equiv_main(&o, &a, argc, argv);
    ml_args_free(&a);
    return rc;
}
