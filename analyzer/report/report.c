/* SPDX-License-Identifier: MIT */
/* report.c — predict/check/run's report family (its document's four parts, doc.h, built by
 * report_text/json/csv.c from the helpers of report_common.c below them) and atomic emission. */
#include "report/doc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* predict/check/run's document: all four parts, one file each. */
static void human_part(const void *ctx, bool md, report_doc *d) {
    if (md)
        report_doc_md(ctx, d);
    else
        report_doc_table(ctx, d);
}
static void json_part(const void *ctx, report_doc *d) { report_doc_json_tree(ctx, d); }
static void csv_part(const void *ctx, report_doc *d) { report_doc_csv_grid(ctx, d); }
static const report_family predict_family = {human_part, json_part, csv_part};

int report_render(const report *r, report_format fmt, ml_str *out) {
    if ((unsigned)fmt >= FMT_COUNT)
        return -1;
    return report_family_render(&predict_family, r, fmt, out);
}

int report_emit(const report *r, report_format fmt, const char *path) {
    if ((unsigned)fmt >= FMT_COUNT) {
        ml_report(ML_DIAG_ERROR, NULL, "unknown report format %d", (int)fmt);
        return -1;
    }
    ml_str out = {0};
    ml_str_append(&out, "", 0);   /* an empty report is still a valid (empty) string */
    int rc = report_render(r, fmt, &out);
    if (rc == 0) {
        if (!path || !strcmp(path, "-")) {
            if (out.n && fwrite(out.s, 1, out.n, stdout) != out.n)
                rc = -1;
            if (rc)
                ml_report(ML_DIAG_ERROR, NULL, "cannot write the report to stdout");
        } else if (ml_write_file_atomic(path, out.s, out.n) != 0) {
            ml_report(ML_DIAG_ERROR, NULL, "cannot write '%s': %s", path, strerror(errno));
            rc = -1;
        }
    }
    ml_str_free(&out);
    return rc;
}
