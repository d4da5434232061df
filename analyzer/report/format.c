/* SPDX-License-Identifier: MIT */
/* format.c — the format table (format.h). */
#include "report/doc.h"

#include <string.h>

const report_format_info report_formats[FMT_COUNT] = {
    [FMT_TABLE] = {"table", report_doc_render_table},
    [FMT_JSON] = {"json", report_doc_render_json},
    [FMT_CSV] = {"csv", report_doc_render_csv},
    [FMT_MD] = {"md", report_doc_render_md},
};

void report_format_names(unsigned mask, const char *sep, const char *last, char *buf, size_t len) {
    size_t n = 0, seen = 0, total = 0;
    for (int k = 0; k < FMT_COUNT; k++)
        total += (mask >> k) & 1u;
    buf[0] = '\0';
    for (int k = 0; k < FMT_COUNT && n < len; k++) {
        if (!((mask >> k) & 1u))
            continue;
        const char *join = seen == 0 ? "" : seen + 1 == total ? last : sep;
        int w = snprintf(buf + n, len - n, "%s%s", join, report_formats[k].name);
        if (w < 0)
            break;
        n += (size_t)w;
        seen++;
    }
}

int report_format_lookup(const char *name) {
    for (int k = 0; k < FMT_COUNT; k++)
        if (!strcmp(report_formats[k].name, name))
            return k;
    return -1;
}

/* The dispatch from a format to its renderer, and a family's document built for one format:
 * here, above the document (doc.c) and the table, so that neither uses the other. */
int report_doc_render(const report_doc *d, report_format fmt, ml_str *out) {
    if ((unsigned)fmt >= FMT_COUNT)
        return -1;
    return report_formats[fmt].render(d, out);
}

int report_family_render(const report_family *f, const void *ctx, report_format fmt, ml_str *out) {
    if (!(report_family_formats(f) & DOC_FMT(fmt)))
        return -1;
    report_doc *d = report_doc_new();
    if (fmt == FMT_TABLE || fmt == FMT_MD)
        f->human(ctx, fmt == FMT_MD, d);
    else if (fmt == FMT_JSON)
        f->json(ctx, d);
    else
        f->csv(ctx, d);
    int rc = report_doc_render(d, fmt, out);
    report_doc_free(d);
    return rc;
}

unsigned report_family_formats(const report_family *f) {
    return DOC_HUMAN | (f->json ? DOC_FMT(FMT_JSON) : 0) | (f->csv ? DOC_FMT(FMT_CSV) : 0);
}
