/* SPDX-License-Identifier: MIT */
/* report_common.c — the helpers every report writer shares (report_int.h): names, size cells,
 * peaks, rank sets, the grid. Below the writers; report.c (the format table) sits above them. */
#include "report/report_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void report_schedule_name(const sched *s, int plan_index, char *buf, size_t len) {
    const char *plan = s->plans && plan_index >= 0 && (uint32_t)plan_index < s->n_plans
                           ? s->plans[plan_index].name
                           : "";
    if (plan && plan[0])
        snprintf(buf, len, "%s/%s", s->name, plan);
    else
        snprintf(buf, len, "%s", s->name);
}

void report_expect_text(const expect_row *e, char *buf, size_t len) {
    char want[80], got[80];
    report_size_cell(e->expected < 0 ? 0 : (uint64_t)e->expected, want, sizeof want);
    report_size_cell(e->got < 0 ? 0 : (uint64_t)e->got, got, sizeof got);
    snprintf(buf, len, "expected %s %s %s on rank %d, predicted %s", ml_mem_view_names[e->view],
             e->is_peak ? "peak" : "steady", want, e->rank, got);
}

void report_size_cell(uint64_t bytes, char *buf, size_t len) {
    char mib[40];
    ml_format_mib((int64_t)bytes, mib, sizeof mib);
    if (bytes % ((uint64_t)1 << 20) == 0)
        snprintf(buf, len, "%s MiB", mib);
    else if (!strcmp(mib, "0"))
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);   /* "0 MiB" would hide it */
    else
        snprintf(buf, len, "%s MiB (%llu B)", mib, (unsigned long long)bytes);
}

const char *report_op_label(const rank_plan *p, size_t op) {
    return ml_measure_op_label(p, op);   /* the timeline's `op` names ops the same way */
}

void report_peak_at(const report_schedule *rs, int r, char *buf, size_t len) {
    size_t op = rs->pred[r].peak_op[VIEW_REQUESTED];
    const rank_plan *p = &rs->plans[r];
    if (op >= p->n_ops) {
        snprintf(buf, len, "-");
        return;
    }
    ml_mark m = plan_op_mark(&p->ops[op]);
    snprintf(buf, len, "%u:%u %s", m.line, m.col, report_op_label(p, op));
}

void report_live_names(const report_schedule *rs, int r, const char *sep, ml_str *out) {
    const pred_rank *pr = &rs->pred[r];
    for (uint32_t k = 0; k < pr->n_peak_live[VIEW_REQUESTED]; k++) {
        const char *name = sched_sym_name(rs->s, SYM_BUFFER, pr->peak_live[VIEW_REQUESTED][k]);
        if (k)
            ml_str_append(out, sep, strlen(sep));
        ml_str_append(out, name, strlen(name));
    }
}

void report_ranks_text(const int *ranks, size_t n, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < n && used < len;) {
        size_t j = k;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        int w = j > k ? snprintf(buf + used, len - used, "%s%d-%d", k ? ", " : "", ranks[k], ranks[j])
                      : snprintf(buf + used, len - used, "%s%d", k ? ", " : "", ranks[k]);
        if (w < 0)
            break;
        used += (size_t)w;
        k = j + 1;
    }
}

bool report_has_measured(const report *r) {
    for (size_t k = 0; k < r->n; k++)
        if (r->items[k].measured)
            for (int rank = 0; rank < r->items[k].world; rank++)
                if (r->items[k].measured[rank].present)
                    return true;
    return false;
}

bool report_view_on(const report *r, ml_view_id v) {
    if (!ml_views[v].optional)
        return true;
    for (size_t k = 0; k < r->n; k++)
        for (int rank = 0; rank < r->items[k].world; rank++)
            if (r->items[k].pred[rank].on[v])
                return true;
    return false;
}

void report_measured_set(report_measured *m, ml_measure *rec) {
    memset(m, 0, sizeof *m);
    m->present = true;
    m->rec = *rec;
    memset(rec, 0, sizeof *rec);   /* m owns its arrays now */
    m->steady[VIEW_REQUESTED] = m->rec.steady;
    m->peak[VIEW_REQUESTED] = m->rec.peak;
    m->steady[VIEW_DEVICE] = m->rec.device_steady;
    m->peak[VIEW_DEVICE] = m->rec.device_peak;
}

void report_measured_free(report_measured *m) {
    ml_measure_free(&m->rec);
    m->present = false;
}

bool report_measured_has(const report_measured *m, ml_mem_view v) {
    return m && m->present && ml_views[ml_series[v].view].measured &&
           (v != VIEW_DEVICE || m->rec.has_device);   /* the host backend reads no device */
}

bool report_series_measured(const report *r, ml_mem_view v) {
    for (size_t k = 0; k < r->n; k++)
        for (int rank = 0; r->items[k].measured && rank < r->items[k].world; rank++)
            if (report_measured_has(&r->items[k].measured[rank], v))
                return true;
    return false;
}

const char *report_expect_status(const report_schedule *rs) {
    if (rs->expect_failures < 0)
        return "none";
    return rs->expect_failures ? "fail" : "pass";
}

/* ---- Grid -------------------------------------------------------------------------------------*/

/* The grid keeps copies of its headers and alignment: a document (doc.h) renders it after the
 * builder's arrays are gone. */
void report_grid_init(report_grid *g, size_t cols, const char *const *headers, const bool *right) {
    g->cols = cols;
    char **h = ml_xcalloc(cols ? cols : 1, sizeof *h);
    bool *r = ml_xcalloc(cols ? cols : 1, sizeof *r);
    for (size_t c = 0; c < cols; c++) {
        h[c] = ml_xstrdup(headers[c]);
        r[c] = right[c];
    }
    g->headers = (const char *const *)h;
    g->right = r;
    ml_vec_init(&g->cells, sizeof(char *));
}

void report_grid_add(report_grid *g, const char *text) {
    char *copy = ml_xstrdup(text ? text : "");
    *(char **)ml_vec_push(&g->cells) = copy;
}

void report_grid_free(report_grid *g) {
    for (size_t k = 0; k < g->cells.n; k++)
        free(ML_VEC_AT(&g->cells, char *, k));
    ml_vec_free(&g->cells);
    for (size_t c = 0; g->headers && c < g->cols; c++)
        free((char *)g->headers[c]);
    free((void *)g->headers);
    free((void *)g->right);
    g->headers = NULL;
    g->right = NULL;
}

/* Markdown cells may not hold a '|'; escape it so names never break the table. */
static void md_cell(ml_str *out, const char *text) {
    for (const char *c = text; *c; c++) {
        if (*c == '|')
            ml_str_append(out, "\\", 1);
        ml_str_append(out, c, 1);
    }
}

static void pad(ml_str *out, size_t n) {
    for (size_t k = 0; k < n; k++)
        ml_str_append(out, " ", 1);
}

void report_grid_render(const report_grid *g, bool markdown, const char *indent, ml_str *out) {
    size_t rows = g->cells.n / g->cols;
    size_t *width = ml_xcalloc(g->cols, sizeof *width);
    for (size_t c = 0; c < g->cols; c++) {
        width[c] = strlen(g->headers[c]);
        for (size_t r = 0; r < rows; r++) {
            size_t w = strlen(ML_VEC_AT(&g->cells, char *, r * g->cols + c));
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t r = 0; r <= rows; r++) {
        ml_str_append(out, indent, strlen(indent));
        for (size_t c = 0; c < g->cols; c++) {
            const char *text = r == 0 ? g->headers[c] : ML_VEC_AT(&g->cells, char *, (r - 1) * g->cols + c);
            size_t w = strlen(text);
            if (markdown) {
                ml_str_append(out, "| ", 2);
                md_cell(out, text);
                ml_str_append(out, " ", 1);
                continue;
            }
            bool last = c + 1 == g->cols;
            if (g->right[c])
                pad(out, width[c] - w);
            ml_str_append(out, text, w);
            if (!g->right[c] && !last)
                pad(out, width[c] - w);
            if (!last)
                ml_str_append(out, "  ", 2);
        }
        ml_str_append(out, markdown ? "|\n" : "\n", markdown ? 2 : 1);
        if (markdown && r == 0) {
            for (size_t c = 0; c < g->cols; c++)
                ml_str_printf(out, "| %s ", g->right[c] ? "---:" : "---");
            ml_str_append(out, "|\n", 2);
        }
    }
    free(width);
}

/* The one place every JSON writer ends (report_int.h); below the document (doc.c) and the
 * writers, which both end here. */
int report_json_append(json_t *root, size_t extra_flags, ml_str *out) {
    /* schema_version first, so a reader can check it before anything else (docs/json.md) */
    json_t *doc = json_object();
    json_object_set_new(doc, "schema_version", json_integer(ML_JSON_SCHEMA_VERSION));
    json_object_update(doc, root);
    json_decref(root);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | extra_flags);
    json_decref(doc);
    if (!text) {
        fprintf(stderr, "error: cannot render the json report\n");
        return -1;
    }
    ml_str_append(out, text, strlen(text));
    ml_str_append(out, "\n", 1);
    free(text);
    return 0;
}
