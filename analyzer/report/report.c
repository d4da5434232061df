/* SPDX-License-Identifier: MIT */
/* report.c — the format table and atomic emission: the dispatch on top of the writers
 * (report_text/json/csv.c), which share the helpers of report_common.c below them. */
#include "report/report_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const report_format_info report_formats[FMT_COUNT] = {
    [FMT_TABLE] = {"table", report_write_table},
    [FMT_JSON] = {"json", report_write_json},
    [FMT_CSV] = {"csv", report_write_csv},
    [FMT_MD] = {"md", report_write_md},
};

int report_format_lookup(const char *name) {
    for (int k = 0; k < FMT_COUNT; k++)
        if (!strcmp(report_formats[k].name, name))
            return k;
    return -1;
}

int report_emit(const report *r, report_format fmt, const char *path) {
    if ((unsigned)fmt >= FMT_COUNT) {
        fprintf(stderr, "error: unknown report format %d\n", (int)fmt);
        return -1;
    }
    ml_str out = {0};
    ml_str_append(&out, "", 0);   /* an empty report is still a valid (empty) string */
    int rc = report_formats[fmt].write(r, &out);
    if (rc == 0) {
        if (!path || !strcmp(path, "-")) {
            if (out.n && fwrite(out.s, 1, out.n, stdout) != out.n)
                rc = -1;
            if (rc)
                fprintf(stderr, "error: cannot write the report to stdout\n");
        } else if (ml_write_file_atomic(path, out.s, out.n) != 0) {
            fprintf(stderr, "error: cannot write '%s': %s\n", path, strerror(errno));
            rc = -1;
        }
    }
    ml_str_free(&out);
    return rc;
}
