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
