/* SPDX-License-Identifier: MIT */
/* format.h — the report formats, one row each (report.c): what --format accepts, what usage
 * text lists, and the renderer that draws a report family's document (doc.h) in it. */
#ifndef MEMLIFE_REPORT_FORMAT_H
#define MEMLIFE_REPORT_FORMAT_H

#include "base/util.h"

/* The report formats: one row each. Every family's document (doc.h) renders in any of them that
 * it has a part for (diff has no CSV grid). Option parsing and usage text take the names here. */
typedef enum { FMT_TABLE, FMT_JSON, FMT_CSV, FMT_MD, FMT_COUNT } report_format;
struct report_doc;
typedef struct {
    const char *name;
    /* Appends the document in this format to out; -1 when it has nothing for it. */
    int (*render)(const struct report_doc *d, ml_str *out);
} report_format_info;

extern const report_format_info report_formats[FMT_COUNT];
int report_format_lookup(const char *name);   /* -1 when unknown */
/* "table|json|csv|md" (sep "|") or "table, json, csv or md" (sep ", ", last " or "): the names
 * of the formats in mask (bits 1 << FMT_*), for usage text and messages. */
void report_format_names(unsigned mask, const char *sep, const char *last, char *buf, size_t len);

#endif
