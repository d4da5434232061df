/* SPDX-License-Identifier: MIT */
/* vary.c — captures at several values of the lets as one schedule (vary.h says how).
 *
 * Every capture is imported once with each size written as "$" (its value kept), so that the
 * documents compare as text; the first is imported once more with the fitted expressions in
 * the placeholders' places. Both imports of the first capture write the same sizes in the same
 * order (the importer is deterministic), which the count of expressions used checks. */
#include "snapshot/vary.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLACEHOLDER "$"

/* ---- the grid ---------------------------------------------------------------------------------- */

size_t vary_grid_points(const vary_let *lets, size_t n_lets, size_t max_points) {
    size_t n = 1;
    if (n_lets == 0 || n_lets > VARY_MAX_LETS)
        return 0;
    for (size_t k = 0; k < n_lets; k++) {
        if (lets[k].n < 2 || __builtin_mul_overflow(n, lets[k].n, &n) || n > max_points)
            return 0;
    }
    return n;
}

size_t vary_grid_index(const vary_let *lets, size_t n_lets, size_t g, size_t k) {
    for (size_t j = n_lets; j-- > k + 1;)
        g /= lets[j].n;
    return g % lets[k].n;
}

void vary_point_text(const vary_let *lets, size_t n_lets, size_t g, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t k = 0; k < n_lets && at < len; k++) {
        int w = snprintf(buf + at, len - at, "%s%s=%" PRId64, k ? ", " : "", lets[k].name,
                         lets[k].values[vary_grid_index(lets, n_lets, g, k)]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* The grid point whose let k stands at value index bit k of corner c (0 or 1). */
static size_t corner_point(const vary_let *lets, size_t n_lets, unsigned c) {
    size_t g = 0;
    for (size_t k = 0; k < n_lets; k++)
        g = g * lets[k].n + ((c >> k) & 1);
    return g;
}

/* The form's value at grid point g; false on 64-bit overflow. */
static bool eval_form(const vary_let *lets, size_t n_lets, const int64_t *coef, size_t g,
                      int64_t *out) {
    int64_t sum = 0;
    for (unsigned m = 0; m < 1u << n_lets; m++) {
        int64_t t = coef[m];
        for (size_t k = 0; k < n_lets && t; k++)
            if ((m >> k) & 1 &&
                __builtin_mul_overflow(t, lets[k].values[vary_grid_index(lets, n_lets, g, k)], &t))
                return false;
        if (__builtin_add_overflow(sum, t, &sum))
            return false;
    }
    *out = sum;
    return true;
}

/* One let at a time, through the corner: between its first two values v0, v1 the form is
 * u + b*(x - v0) for the other lets fixed, so b = (w - u) / (v1 - v0) and the intercept
 * u - b*v0 replace u and w. After every let, slot m holds the coefficient of the product of the
 * lets in m. A form with integer coefficients has integer values at every stage, so a division
 * that leaves a remainder means there is none. */
int vary_fit(const vary_let *lets, size_t n_lets, const int64_t *y,
             int64_t coef[1 << VARY_MAX_LETS], size_t *bad_point, int64_t *fitted) {
    unsigned nc = 1u << n_lets;
    *bad_point = SIZE_MAX;
    *fitted = -1;
    for (unsigned c = 0; c < nc; c++)
        coef[c] = y[corner_point(lets, n_lets, c)];
    for (size_t k = 0; k < n_lets; k++) {
        int64_t v0 = lets[k].values[0], v1 = lets[k].values[1], dv, d, b, bv0;
        if (__builtin_sub_overflow(v1, v0, &dv))
            return 2;
        for (unsigned c = 0; c < nc; c++) {
            if ((c >> k) & 1)
                continue;
            int64_t u = coef[c], w = coef[c | 1u << k];
            if (__builtin_sub_overflow(w, u, &d))
                return 2;
            if (d % dv)
                return 1;
            b = d / dv;
            if (__builtin_mul_overflow(b, v0, &bv0) || __builtin_sub_overflow(u, bv0, &coef[c]))
                return 2;
            coef[c | 1u << k] = b;
        }
    }
    size_t n = vary_grid_points(lets, n_lets, SIZE_MAX);
    for (size_t g = 0; g < n; g++) {
        int64_t v;
        if (!eval_form(lets, n_lets, coef, g, &v))
            return 2;
        if (v != y[g]) {
            *bad_point = g;
            *fitted = v;
            return 1;
        }
    }
    return 0;
}

static int popcount(unsigned m) { return __builtin_popcount(m); }

void vary_expr_text(const vary_let *lets, size_t n_lets, const int64_t *coef, ml_str *out) {
    bool any = false;
    /* the constant, then the single lets, then their products: as one would write it */
    for (int deg = 0; deg <= (int)n_lets; deg++) {
        for (unsigned m = 0; m < 1u << n_lets; m++) {
            if (popcount(m) != deg || coef[m] == 0)
                continue;
            int64_t c = coef[m];
            /* |c| as unsigned: INT64_MIN has no positive int64 */
            uint64_t mag = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
            if (any)
                ml_str_printf(out, c < 0 ? " - " : " + ");
            else if (c < 0)
                ml_str_printf(out, "-");
            bool first = mag != 1 || m == 0;
            if (first)
                ml_str_printf(out, "%" PRIu64, mag);
            for (size_t k = 0; k < n_lets; k++)
                if ((m >> k) & 1) {
                    ml_str_printf(out, "%s%s", first ? "*" : "", lets[k].name);
                    first = true;
                }
            any = true;
        }
    }
    if (!any)
        ml_str_printf(out, "0");
}

/* "a + b*MBS", "a + b*MBS + c*S + d*MBS*S", else "multi-affine in MBS, S, W": for messages. */
static void form_text(const vary_let *lets, size_t n_lets, char *buf, size_t len) {
    if (n_lets == 1)
        snprintf(buf, len, "a + b*%s with integers a, b", lets[0].name);
    else if (n_lets == 2)
        snprintf(buf, len, "a + b*%s + c*%s + d*%s*%s with integers a, b, c, d", lets[0].name,
                 lets[1].name, lets[0].name, lets[1].name);
    else {
        size_t at = (size_t)snprintf(buf, len, "affine in each of");
        for (size_t k = 0; k < n_lets && at < len; k++)
            at += (size_t)snprintf(buf + at, len - at, "%s %s", k ? "," : "", lets[k].name);
        if (at < len)
            snprintf(buf + at, len - at, " with integer coefficients");
    }
}

/* ---- the imports ------------------------------------------------------------------------------- */

typedef struct {
    size_t step;
    const char *buf;   /* in the arena */
    const char *what;
} site;

typedef struct {
    ml_vec *values;          /* recording: of int64_t, this capture's sizes in order */
    ml_vec *sites;           /* recording the first capture: of site */
    ml_arena *arena;
    const char *const *exprs;   /* writing: the fitted expressions, in order */
    size_t next, n_exprs;
} sizes_ctx;

static const char *on_size(void *data, const import_size *at) {
    sizes_ctx *c = data;
    if (c->exprs) {
        /* past the end cannot happen for the capture the expressions came from; the count
         * is checked after the import */
        return c->next < c->n_exprs ? c->exprs[c->next++] : (c->next++, PLACEHOLDER);
    }
    *(int64_t *)ml_vec_push(c->values) = at->value;
    if (c->sites)
        *(site *)ml_vec_push(c->sites) =
            (site){at->step, ml_arena_strndup(c->arena, at->buf, strlen(at->buf)), at->what};
    return PLACEHOLDER;
}

/* Line `line` of text (from 0): its start, and its length without the newline. */
static const char *line_at(const char *text, size_t line, size_t *len) {
    const char *p = text;
    for (size_t k = 0; k < line && p; k++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p) {
        *len = 0;
        return "(the end)";
    }
    const char *e = strchr(p, '\n');
    *len = e ? (size_t)(e - p) : strlen(p);
    return p;
}

/* The first line where a and b differ (from 0); the step it belongs to in a (every "- " line
 * after "steps:", from 0), or SIZE_MAX in the header. */
static size_t first_difference(const char *a, const char *b, size_t *step) {
    size_t line = 0, steps = SIZE_MAX;
    for (;;) {
        const char *ea = strchr(a, '\n'), *eb = strchr(b, '\n');
        size_t na = ea ? (size_t)(ea - a) : strlen(a), nb = eb ? (size_t)(eb - b) : strlen(b);
        const char *t = a + strspn(a, " ");
        bool is_step = steps != SIZE_MAX && t[0] == '-' && t[1] == ' ';
        if (na != nb || memcmp(a, b, na) || !ea || !eb) {
            *step = is_step ? steps : SIZE_MAX;
            return line;
        }
        if (is_step)
            steps++;
        if (na == 6 && !memcmp(a, "steps:", 6))
            steps = 0;
        a = ea + 1;
        b = eb + 1;
        line++;
    }
}

/* How many sizes the document writes before p: its placeholders from `steps:` on (the header
 * writes none, and its free text may hold a '$'). */
static size_t sizes_before(const char *doc, const char *p) {
    const char *at = strstr(doc, "\nsteps:\n");
    size_t n = 0;
    for (const char *q = at; q && q < p; q++)
        n += *q == '$';
    return n;
}

/* A document's line for a message: without indentation and "- ", each size as its value in
 * that capture (values, of int64_t). */
static void quote_line(const char *doc, const char *p, size_t n, const ml_vec *values, char *buf,
                       size_t len) {
    size_t i = strspn(p, " "), o = 0, k = sizes_before(doc, p);
    if (i + 1 < n && p[i] == '-' && p[i + 1] == ' ')
        i += 2;
    while (i < n && o + 24 < len) {
        bool quoted = i + 2 < n && p[i] == '"' && p[i + 1] == '$' && p[i + 2] == '"';
        if (quoted || p[i] == '$') {
            int64_t v = k < values->n ? ML_VEC_AT(values, int64_t, k) : -1;
            k++;
            o += (size_t)snprintf(buf + o, len - o, "%" PRId64, v);
            i += quoted ? 3 : 1;
        } else {
            buf[o++] = p[i++];
        }
    }
    if (i < n)
        memcpy(buf + o, "...", 3), o += 3;
    buf[o] = 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The message for a size that fits no form: where it is, its values at every point, why. */
static void misfit(const vary_let *lets, size_t n_lets, const site *s, const int64_t *y,
                   size_t n_points, int why, size_t bad, int64_t fitted, char *err, size_t errlen) {
    ml_str m = {0};
    char pt[256], form[160];
    if (!strcmp(s->what, "bytes"))
        ml_str_printf(&m, "step %zu, alloc '%s': its bytes are", s->step, s->buf);
    else
        ml_str_printf(&m, "step %zu, a collective's view of '%s': its %s is", s->step, s->buf,
                      s->what);
    for (size_t g = 0; g < n_points; g++) {
        vary_point_text(lets, n_lets, g, pt, sizeof pt);
        ml_str_printf(&m, "%s %" PRId64 " at %s", g ? "," : "", y[g], pt);
    }
    form_text(lets, n_lets, form, sizeof form);
    ml_str_printf(&m, ": not %s", form);
    if (why == 2) {
        ml_str_printf(&m, " (its coefficients overflow 64 bits)");
    } else if (bad != SIZE_MAX) {
        ml_str exprs = {0};
        int64_t coef[1 << VARY_MAX_LETS];
        size_t b2;
        int64_t f2;
        vary_fit(lets, n_lets, y, coef, &b2, &f2);
        vary_expr_text(lets, n_lets, coef, &exprs);
        vary_point_text(lets, n_lets, bad, pt, sizeof pt);
        ml_str_printf(&m, " (the form through the first two values of each let, %s, gives %"
                      PRId64 " at %s)", exprs.s, fitted, pt);
        ml_str_free(&exprs);
    } else {
        ml_str_printf(&m, " (no integer slope between the first two values)");
    }
    snprintf(err, errlen, "%s", m.s);
    ml_str_free(&m);
}

int snapshot_vary(json_t *const *snaps, const vary_let *lets, size_t n_lets,
                  const import_opts *o, char **yaml, size_t *len, import_stats *st,
                  bool *bad_input, char *err, size_t errlen) {
    *yaml = NULL;
    *len = 0;
    *bad_input = false;
    size_t n_points = vary_grid_points(lets, n_lets, SIZE_MAX);
    if (n_points == 0)
        return fail(err, errlen, "no grid: 1 to %d lets of at least 2 values each",
                    VARY_MAX_LETS);
    const char *names[VARY_MAX_LETS];
    int64_t defaults[VARY_MAX_LETS];
    for (size_t k = 0; k < n_lets; k++) {
        names[k] = lets[k].name;
        defaults[k] = lets[k].values[0];
    }
    import_opts io = *o;
    io.lets = names;
    io.let_defaults = defaults;
    io.n_lets = n_lets;
    io.size_text = on_size;

    ml_arena *arena = ml_arena_new();
    ml_vec *values = ml_xcalloc(n_points, sizeof *values);
    ml_vec sites;
    ml_vec_init(&sites, sizeof(site));
    char **docs = ml_xcalloc(n_points, sizeof *docs);
    const char **exprs = NULL;
    int64_t *y = ml_xcalloc(n_points, sizeof *y);
    ml_str out = {0};
    int rc = 0;
    char pt[256], pt2[256], ierr[1024];

    for (size_t g = 0; g < n_points && !rc; g++) {
        ml_vec_init(&values[g], sizeof(int64_t));
        sizes_ctx c = {.values = &values[g], .sites = g == 0 ? &sites : NULL, .arena = arena};
        io.size_ctx = &c;
        size_t n;
        vary_point_text(lets, n_lets, g, pt, sizeof pt);
        if (snapshot_import(snaps[g], &io, &docs[g], &n, &st[g], ierr, sizeof ierr) != 0) {
            rc = fail(err, errlen, "the capture at %s does not import: %s", pt, ierr);
            break;
        }
        if (g == 0)
            continue;
        if (strcmp(docs[0], docs[g])) {
            size_t step, na, nb;
            size_t line = first_difference(docs[0], docs[g], &step);
            const char *la = line_at(docs[0], line, &na), *lb = line_at(docs[g], line, &nb);
            char qa[200], qb[200], where[64];
            quote_line(docs[0], la, na, &values[0], qa, sizeof qa);
            quote_line(docs[g], lb, nb, &values[g], qb, sizeof qb);
            vary_point_text(lets, n_lets, 0, pt2, sizeof pt2);
            if (step != SIZE_MAX)
                snprintf(where, sizeof where, "step %zu", step);
            else
                snprintf(where, sizeof where, "line %zu of the schedule", line + 1);
            *bad_input = true;
            rc = fail(err, errlen, "the captures do not line up: %s is '%s' at %s but '%s' at "
                      "%s (an op or a name that only some values have: every capture must "
                      "make the same steps)", where, qa, pt2, qb, pt);
        }
    }
    size_t n_sizes = sites.n;
    if (!rc) {
        exprs = ml_xcalloc(n_sizes ? n_sizes : 1, sizeof *exprs);
        for (size_t j = 0; j < n_sizes && !rc; j++) {
            for (size_t g = 0; g < n_points; g++)
                y[g] = ML_VEC_AT(&values[g], int64_t, j);
            int64_t coef[1 << VARY_MAX_LETS];
            size_t bad;
            int64_t fitted;
            int why = vary_fit(lets, n_lets, y, coef, &bad, &fitted);
            if (why) {
                misfit(lets, n_lets, &ML_VEC_AT(&sites, site, j), y, n_points, why, bad, fitted,
                       err, errlen);
                *bad_input = true;
                rc = -1;
                break;
            }
            ml_str e = {0};
            vary_expr_text(lets, n_lets, coef, &e);
            exprs[j] = ml_arena_strndup(arena, e.s, e.n);
            ml_str_free(&e);
        }
    }
    if (!rc) {
        sizes_ctx c = {.exprs = exprs, .n_exprs = n_sizes};
        io.size_ctx = &c;
        char *doc = NULL;
        size_t n;
        import_stats st0;
        if (snapshot_import(snaps[0], &io, &doc, &n, &st0, ierr, sizeof ierr) != 0)
            rc = fail(err, errlen, "the first capture does not import again: %s", ierr);
        else if (c.next != n_sizes)
            rc = fail(err, errlen, "the first capture's second import wrote %zu sizes, not %zu",
                      c.next, n_sizes);
        if (!rc) {
            ml_str_printf(&out, "# memlife capture of %s at %zu points: %zu steps whose sizes "
                          "are expressions\n# of ", o->source ? o->source : "a program",
                          n_points, st[0].steps);
            for (size_t k = 0; k < n_lets; k++)
                ml_str_printf(&out, "%s%s", k ? (k + 1 == n_lets ? " and " : ", ") : "",
                              lets[k].name);
            ml_str_printf(&out, ", fitted to the captures (affine in each); at a captured "
                          "point, --set gives\n# that capture's sizes exactly. Captured "
                          "(requested bytes):\n");
            for (size_t g = 0; g < n_points; g++) {
                vary_point_text(lets, n_lets, g, pt, sizeof pt);
                ml_str_printf(&out, "#   %s: steady %" PRId64 ", peak %" PRId64 "\n", pt,
                              st[g].requested_final, st[g].requested_peak);
            }
            ml_str_append(&out, doc, n);
        }
        free(doc);
    }
    if (!rc) {
        *yaml = out.s;
        *len = out.n;
    } else {
        ml_str_free(&out);
    }
    for (size_t g = 0; g < n_points; g++) {
        ml_vec_free(&values[g]);
        free(docs[g]);
    }
    free(values);
    free(docs);
    free(exprs);
    free(y);
    ml_vec_free(&sites);
    ml_arena_free(arena);
    return rc;
}
