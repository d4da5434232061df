/* cmd_check.c — `memlife check`: predict, then gate on the expectations. The CI regression gate:
 * exit 1 and one "file:line:col: error: expected ..." line per failed expectation (or failed
 * contract row); exit 0 and one summary line per schedule otherwise. */
#include "cmd.h"
#include "analyze.h"

#include <inttypes.h>
#include <stdlib.h>

const char cmd_check_usage[] =
    "usage: memlife check FILE... [--world N] [--set NAME=VALUE]... [--plan NAME]\n"
    "                     [--format table|json|csv|md] [-o FILE] [--quiet]\n"
    "\n"
    "Everything 'memlife predict' does, then compares the predictions with each schedule's\n"
    "'expect:' block (requested and device views, steady and peak, per rank). Use it as a CI\n"
    "gate against peak-memory regressions.\n"
    "\n"
    "options:\n"
    "  -w, --world N         world size (default: the file's 'world:')\n"
    "      --set NAME=VALUE  override a 'let:' value (an expression); repeatable\n"
    "      --plan NAME       only this plan of files with 'plans:'\n"
    "  -f, --format FMT      print the full report in FMT (table, json, csv, md) instead of\n"
    "                        the one-line summaries\n"
    "  -o, --output FILE     also write the report to FILE (atomically), in FMT (default table)\n"
    "  -q, --quiet           print nothing on success\n"
    "  -h, --help            this text\n"
    "\n"
    "exit codes: 0 every expectation holds, 1 an expectation or contract failed,\n"
    "            2 bad input (syntax, lint error or hazard)\n";

/* Failed expectations and contract rows as compiler-style errors, in file order. */
static size_t report_failures(const report_schedule *rs, ml_diags *d) {
    size_t failures = 0;
    for (size_t k = 0; k < rs->n_expects; k++) {
        const expect_row *e = &rs->expects[k];
        if (e->pass)
            continue;
        char text[256];
        report_expect_text(e, text, sizeof text);
        ml_error(d, rs->s->file, e->mark, "%s", text);
        failures++;
    }
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

/* "pass  NAME  world N  requested S / P  device S / P  (K expectations)": the largest steady
 * and peak over the ranks, so one line says what the schedule costs. */
static void print_summary(const report_schedule *rs, size_t failures) {
    uint64_t steady[VIEW_COUNT] = {0}, peak[VIEW_COUNT] = {0};
    for (int r = 0; r < rs->world; r++)
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (rs->pred[r].steady[v] > steady[v])
                steady[v] = rs->pred[r].steady[v];
            if (rs->pred[r].peak[v] > peak[v])
                peak[v] = rs->pred[r].peak[v];
        }
    char name[256], rs_[48], rp[48], ds[48], dp[48];
    report_schedule_name(rs->s, rs->plan_index, name, sizeof name);
    ml_format_bytes(steady[VIEW_REQUESTED], rs_, sizeof rs_);
    ml_format_bytes(peak[VIEW_REQUESTED], rp, sizeof rp);
    ml_format_bytes(steady[VIEW_DEVICE], ds, sizeof ds);
    ml_format_bytes(peak[VIEW_DEVICE], dp, sizeof dp);
    size_t total = rs->n_expects + rs->n_checks;
    printf("%s  %s  world %d  requested %s / %s  device %s / %s  ", failures ? "FAIL" : "pass",
           name, rs->world, rs_, rp, ds, dp);
    if (total == 0)
        printf("(no expectations)\n");
    else if (failures)
        printf("(%zu of %zu failed)\n", failures, total);
    else
        printf("(%zu expectations%s)\n", total, rs->n_checks ? " and contract rows" : "");
}

int cmd_check(int argc, char **argv) {
    ml_args a;
    int rc;
    if (!ml_args_begin(&a, "check", cmd_check_usage, argc, argv, NULL, 0, false, &rc))
        return rc;
    ml_analysis_opts o;
    ml_analysis_opts_default(&o);
    ml_analysis an;
    rc = ml_analyze(&a, "check", &o, &an);
    if (rc == ML_EXIT_OK) {
        ml_diags fails;
        ml_diags_init(&fails);
        size_t *per = calloc(an.rep.n ? an.rep.n : 1, sizeof *per);
        if (!per)
            abort();
        for (size_t k = 0; k < an.rep.n; k++)
            per[k] = report_failures(&an.rep.items[k], &fails);
        ml_diags_print(&fails, stderr);
        if (fails.errors)
            rc = ML_EXIT_EXPECT;
        if (a.output && report_emit(&an.rep, a.format, a.output) != 0)
            rc = ML_EXIT_RUNTIME;
        if (a.format_set && !a.output) {
            if ((!a.quiet || rc) && report_emit(&an.rep, a.format, NULL) != 0)
                rc = ML_EXIT_RUNTIME;
        } else if (!a.quiet || rc) {
            for (size_t k = 0; k < an.rep.n; k++)
                print_summary(&an.rep.items[k], per[k]);
        }
        free(per);
        ml_diags_free(&fails);
    }
    ml_analysis_free(&an);
    ml_args_free(&a);
    return rc;
}
