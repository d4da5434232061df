/* SPDX-License-Identifier: MIT */
/* cmd_check.c — `memlife check`: predict, then gate on the expectations. The CI regression gate:
 * exit 1 and one "file:line:col: error: expected ..." line per failed expectation (or failed
 * contract row); exit 0 and one summary line per schedule otherwise. */
#include "cmd.h"
#include "analysis.h"
#include "report/gate.h"
#include "base/human.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_check_usage[] =
    "usage: memlife check [OPTIONS] FILE...\n"
    "\n"
    "Everything 'memlife predict' does, then compares the predictions with each schedule's\n"
    "'expect:' block (requested and device views, steady and peak, per rank). Use it as a CI\n"
    "gate against peak-memory regressions.\n"
    "\n"
    "With --baseline OLD.json (what 'memlife check --format json -o OLD.json' wrote before a\n"
    "change) every predicted steady and peak of every view and rank must also stay within\n"
    "--tolerance of the baseline's: a growth beyond it is an error at the op that now reaches\n"
    "the peak, naming the old and new bytes and the buffers newly live there. Schedules and\n"
    "plans the baseline lacks are noted (with --strict: failed); a plan whose old name is gone\n"
    "from the file is named as such (\"plan 'X' is gone; 'Y' is new\").\n"
    "\n"
    "@options\n"
    "exit codes: 0 every expectation holds, 1 an expectation or contract failed (or the baseline\n"
    "            grew, or --strict found a schedule without expectations or one the\n"
    "            baseline lacks),\n"
    "            2 bad input (syntax, lint error or hazard)\n";

/* Failed expectations and contract rows as compiler-style errors, in file order. */
typedef struct {
    ml_diags *d;
    const char *file;
} failure_ctx;

static void failure_error(void *ctx, ml_mark at, const char *text) {
    const failure_ctx *c = ctx;
    ml_error(c->d, c->file, at, "%s", text);
}

static size_t report_failures(const report_schedule *rs, ml_diags *d) {
    failure_ctx fc = {d, rs->s->file};
    size_t failures = report_expect_failures(rs, failure_error, &fc);
    for (size_t k = 0; k < rs->n_checks; k++) {
        const report_check *c = &rs->checks[k];
        if (c->pass)
            continue;
        ml_error(d, rs->s->file, rs->s->plans[rs->plan_index].mark,
                 "contract '%s' failed on rank %d: %s", c->name, c->rank, c->detail);
        failures++;
    }
    return failures;
}

/* One line per schedule, aligned: "pass  NAME  world N  requested S / P  device S / P  (K
 * expectations)", one "SERIES S / P" per series of every view the report shows (views.h), with
 * the largest steady and peak over the ranks, so one line says what the schedule costs. */
enum { SUM_RESULT, SUM_NAME, SUM_WORLD, SUM_NOTE, SUM_FIRST_SERIES,
       SUM_COLS = SUM_FIRST_SERIES + 2 * VIEW_COUNT };

static void summary_cells(const report_schedule *rs, size_t failures, size_t grown, bool unbased,
                          char cells[SUM_COLS][256]) {
    uint64_t steady[VIEW_COUNT] = {0}, peak[VIEW_COUNT] = {0};
    for (int r = 0; r < rs->world; r++)
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (rs->pred[r].steady[v] > steady[v])
                steady[v] = rs->pred[r].steady[v];
            if (rs->pred[r].peak[v] > peak[v])
                peak[v] = rs->pred[r].peak[v];
        }
    snprintf(cells[SUM_RESULT], 256, "%s", failures || grown || unbased ? "FAIL" : "pass");
    report_schedule_name(rs->s, rs->plan_index, cells[SUM_NAME], 256);
    snprintf(cells[SUM_WORLD], 256, "world %d", rs->world);
    for (int v = 0; v < VIEW_COUNT; v++) {
        ml_human_size(steady[v], cells[SUM_FIRST_SERIES + 2 * v], 256);
        ml_human_size(peak[v], cells[SUM_FIRST_SERIES + 2 * v + 1], 256);
    }
    size_t total = rs->n_expects + rs->n_checks;
    char rows[64] = "";
    if (rs->n_checks)
        snprintf(rows, sizeof rows, ", %zu contract row%s", rs->n_checks,
                 rs->n_checks == 1 ? "" : "s");
    char above[64] = "";
    if (grown)
        snprintf(above, sizeof above, "%s%zu above the baseline", failures ? ", " : "", grown);
    if (unbased)
        snprintf(cells[SUM_NOTE], 256, "not in the baseline (--strict)");
    else if (grown && !failures)
        snprintf(cells[SUM_NOTE], 256, "%s", above);
    else if (total == 0)
        snprintf(cells[SUM_NOTE], 256, "no expectations%s", failures ? " (--strict)" : "");
    else if (failures)
        snprintf(cells[SUM_NOTE], 256, "%zu of %zu failed%s", failures, total, above);
    else
        snprintf(cells[SUM_NOTE], 256, "%zu expectations%s", rs->n_expects, rows);
}

/* What a narrow terminal drops from the summary lines first (the text tables' rule,
 * report_int.h): the expectations note, the other views' series, the world; the result, the
 * name and the requested series always stay. */
enum { SUM_PRIO_WORLD = 1, SUM_PRIO_SERIES = 2, SUM_PRIO_NOTE = 3 };

static unsigned summary_prio(int c) {
    if (c == SUM_WORLD)
        return SUM_PRIO_WORLD;
    if (c == SUM_NOTE)
        return SUM_PRIO_NOTE;
    if (c >= SUM_FIRST_SERIES)
        return ml_series[(c - SUM_FIRST_SERIES) / 2].view == MV_REQUESTED ? 0 : SUM_PRIO_SERIES;
    return 0;
}

/* The width of a summary line with the fields in shown (the series' pair counts once, with its
 * name and " / "). */
static size_t summary_width(const int *width, const bool *shown) {
    size_t w = (size_t)width[SUM_RESULT] + 2 + (size_t)width[SUM_NAME];
    if (shown[SUM_WORLD])
        w += 2 + (size_t)width[SUM_WORLD];
    for (int v = 0; v < VIEW_COUNT; v++) {
        int c = SUM_FIRST_SERIES + 2 * v;
        if (shown[c])
            w += 2 + strlen(ml_series[v].name) + 1 + (size_t)width[c] + 3 + (size_t)width[c + 1];
    }
    if (shown[SUM_NOTE])
        w += 2 + 2 + (size_t)width[SUM_NOTE];
    return w;
}

static void print_summaries(const report *r, const size_t *failures, const size_t *grown,
                            const bool *unbased) {
    char (*cells)[SUM_COLS][256] = ml_xcalloc(r->n ? r->n : 1, sizeof *cells);
    int width[SUM_COLS] = {0};
    for (size_t k = 0; k < r->n; k++) {
        summary_cells(&r->items[k], failures[k], grown[k], unbased[k], cells[k]);
        for (int c = 0; c < SUM_COLS; c++)
            if ((int)strlen(cells[k][c]) > width[c])
                width[c] = (int)strlen(cells[k][c]);
    }
    bool shown[SUM_COLS];
    for (int c = 0; c < SUM_COLS; c++)
        shown[c] = c < SUM_FIRST_SERIES ||
                   report_view_on(r, ml_series[(c - SUM_FIRST_SERIES) / 2].view);
    /* fit the terminal: drop the fields of the highest priority until the lines fit; the
     * summary is on stdout even where -o FILE took the report */
    ml_term_set_target(STDOUT_FILENO);
    size_t max = ml_term_width();
    ml_str dropped = {0};
    ml_str_append(&dropped, "", 0);
    while (max && summary_width(width, shown) > max) {
        unsigned top = 0;
        for (int c = 0; c < SUM_COLS; c++)
            if (shown[c] && summary_prio(c) > top)
                top = summary_prio(c);
        if (!top)
            break;
        for (int c = 0; c < SUM_COLS; c++)
            if (shown[c] && summary_prio(c) == top && !(c > SUM_FIRST_SERIES && (c - SUM_FIRST_SERIES) % 2)) {
                shown[c] = false;
                if (c >= SUM_FIRST_SERIES)
                    shown[c + 1] = false;
                ml_str_printf(&dropped, "%s%s", dropped.n ? ", " : "",
                              c == SUM_WORLD ? "world" : c == SUM_NOTE ? "expectations"
                                                                       : ml_series[(c - SUM_FIRST_SERIES) / 2].name);
            }
    }
    for (size_t k = 0; k < r->n; k++) {
        char (*c)[256] = cells[k];
        bool fail = !strcmp(c[SUM_RESULT], "FAIL");
        printf("%s%s%s  %-*s", ml_color(fail ? ML_HUE_FAIL : ML_HUE_OK, 1), c[SUM_RESULT],
               ml_color_end(1), width[SUM_NAME], c[SUM_NAME]);
        if (shown[SUM_WORLD])
            printf("  %-*s", width[SUM_WORLD], c[SUM_WORLD]);
        for (int v = 0; v < VIEW_COUNT; v++) {
            int s = SUM_FIRST_SERIES + 2 * v;
            if (shown[s])
                printf("  %s %*s / %*s", ml_series[v].name, width[s], c[s], width[s + 1], c[s + 1]);
        }
        if (shown[SUM_NOTE])
            printf("  (%s)", c[SUM_NOTE]);
        printf("\n");
    }
    if (dropped.n)
        printf("(not shown to fit %zu columns: %s; --wide shows them)\n", max, dropped.s);
    ml_str_free(&dropped);
    free(cells);
}

/* GitHub Actions workflow commands, one per error: the message's '%', CR and LF escaped as the
 * runner expects (%25, %0D, %0A). On stdout, where the runner reads them. */
static void annotate_github(const ml_diags *d) {
    for (size_t k = 0; k < d->items.n; k++) {
        const ml_diag *e = &ML_VEC_AT(&d->items, ml_diag, k);
        if (e->level != ML_DIAG_ERROR)
            continue;
        printf("::error file=%s,line=%u,col=%u::", e->file ? e->file : "", e->mark.line,
               e->mark.col);
        for (const char *p = e->text; *p; p++) {
            if (*p == '%')
                fputs("%25", stdout);
            else if (*p == '\r')
                fputs("%0D", stdout);
            else if (*p == '\n')
                fputs("%0A", stdout);
            else
                putchar(*p);
        }
        if (e->rank >= 0)
            printf(" [rank %d]", e->rank);
        putchar('\n');
    }
}

/* The failures and notes on stderr, the exit code they give, and the report: to -o, to stdout
 * with --format, else the one-line summaries (unless --quiet). */
static int verdict_and_report(const ml_args *a, ml_analysis *an, ml_diags *fails,
                              ml_diags *notes, const size_t *per, const size_t *grown,
                              const bool *unbased, bool annotate) {
    int rc = ML_EXIT_OK;
    ml_diags_print(fails, stderr);
    ml_diags_print(notes, stderr);
    if (annotate)
        annotate_github(fails);
    if (fails->errors)
        rc = ML_EXIT_EXPECT;
    if (a->output && report_emit(&an->rep, a->format, a->output) != 0)
        rc = ML_EXIT_RUNTIME;
    if (a->format_set && !a->output) {
        if (!a->quiet && report_emit(&an->rep, a->format, NULL) != 0)
            rc = ML_EXIT_RUNTIME;
    } else if (!a->quiet) {
        print_summaries(&an->rep, per, grown, unbased);
    }
    return rc;
}

int cmd_check(int argc, char **argv) {
    ml_args a;
    int rc;
    const char *baseline = NULL, *tolerance = "0";
    bool strict = false;
    int annotate = -1;
    static const char *const annotate_names[] = {"github", NULL};
    const ml_opt extra[] = {
        {"--baseline", NULL, OPT_STRING, &baseline, 0, 0, NULL, "FILE",
         "also fail when a predicted steady or peak grew beyond the JSON result FILE"},
        {"--tolerance", NULL, OPT_STRING, &tolerance, 0, 0, NULL, "T",
         "with --baseline: growth that still passes, PCT% of the baseline's bytes or BYTES "
         "(4096, 64KiB, 1MiB; default 0)"},
        {"--strict", NULL, OPT_FLAG, &strict, 0, 0, NULL, NULL,
         "fail a schedule that has no expectations (no 'expect:' and no contract rows), and "
         "with --baseline one the baseline lacks"},
        {"--annotate", NULL, OPT_CHOICE, &annotate, 0, 0, annotate_names, "KIND",
         "also print every error as a CI annotation on stdout: github "
         "('::error file=F,line=L,col=C::message')"},
        /* documentation rows: what the common option means here */
        ML_OPT_DOC("--format",
            "print the full report in FMT (table, json, csv, md) instead of the one-line "
            "summaries"),
        ML_OPT_DOC("--output",
            "also write the report to FILE (atomically), in FMT (default table)"),
        ML_OPT_DOC("--quiet", "print nothing on success"),
    };
    if (!ml_args_begin(&a, "check", cmd_check_usage, argc, argv, extra,
                       ML_ARRAY_LEN(extra), false, &rc))
        return rc;
    gate_tolerance tol;
    if (gate_parse_tolerance(tolerance, &tol) != 0) {
        ml_args_free(&a);
        return ml_usage_error("check", "option '--tolerance' needs PCT%% or BYTES (e.g. 5%%, "
                              "4096, 1MiB), not '%s'", tolerance);
    }
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.timeline = false;   /* the gate reads peaks and steady values, no timeline */
    o.keep_plans = false; /* nor any op but its peaks' (pipeline_opts) */
    ml_analysis an;
    rc = ml_analyze(&a, "check", &o, &an);
    if (annotate >= 0)
        annotate_github(&an.res.diags);
    if (rc == ML_EXIT_OK) {
        ml_diags fails, notes;
        ml_diags_init(&fails);
        ml_diags_init(&notes);
        size_t *per = ml_xcalloc(an.rep.n ? an.rep.n : 1, sizeof *per);
        size_t *grown = ml_xcalloc(an.rep.n ? an.rep.n : 1, sizeof *grown);
        /* --strict: the items the baseline lacks, which fail */
        bool *unbased = ml_xcalloc(an.rep.n ? an.rep.n : 1, sizeof *unbased);
        for (size_t k = 0; k < an.rep.n; k++) {
            per[k] = report_failures(&an.rep.items[k], &fails);
            const report_schedule *rs = &an.rep.items[k];
            if (strict && rs->n_expects == 0 && rs->n_checks == 0) {
                ml_error(&fails, rs->s->file, rs->s->plans[rs->plan_index].mark,
                         "no expectations (--strict): add an 'expect:' block");
                per[k]++;
            }
        }
        if (baseline && gate_compare(&an.rep, baseline, &tol, strict, &fails, &notes, grown,
                                     strict ? unbased : NULL) < 0) {
            /* a baseline that cannot be compared: its errors and the failures so far, no report */
            ml_diags_print(&fails, stderr);
            if (annotate >= 0)
                annotate_github(&fails);
            rc = ML_EXIT_INPUT;
        } else {
            rc = verdict_and_report(&a, &an, &fails, &notes, per, grown, unbased, annotate >= 0);
        }
        free(unbased);
        free(grown);
        free(per);
        ml_diags_free(&fails);
        ml_diags_free(&notes);
    }
    ml_analysis_free(&an);
    ml_args_free(&a);
    return rc;
}
