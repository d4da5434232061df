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

/* What differs between --vary and --worlds: the points' names, the form a size is fitted to,
 * the header's comment. The captures' import and comparison are the same. */
typedef struct fitter fitter;
struct fitter {
    size_t n_points;
    bool world_varies;   /* the documents' `world:` differs from capture to capture */
    void (*point)(const fitter *f, size_t g, char *buf, size_t len);
    /* 0 with the expression in *expr; else -1 with the rest of the message after the size's
     * values (": not ...") in *why */
    int (*fit)(fitter *f, const int64_t *y, ml_str *expr, ml_str *why);
    /* after every size is fitted: may rewrite exprs (of sites, in the arena) from the first
     * capture's document with placeholders and every capture's values; NULL: none */
    void (*relate)(fitter *f, const char *doc, const ml_vec *sites, const ml_vec *values,
                   const char **exprs, ml_arena *arena);
    /* the lines before the document (st: each capture's statistics) */
    void (*header)(const fitter *f, const import_opts *o, const import_stats *st, ml_str *out);
};

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

/* A collective's view at the rank's slot writes its length twice, "name[rank*($) : $]": the
 * first is no size of its own. */
static bool slot_copy(const char *q) { return q[-1] == '(' && q[-2] == '*'; }

/* How many sizes the document writes before p: its placeholders from `steps:` on (the header
 * writes none, and its free text may hold a '$'). */
static size_t sizes_before(const char *doc, const char *p) {
    const char *at = strstr(doc, "\nsteps:\n");
    size_t n = 0;
    for (const char *q = at; q && q < p; q++)
        n += *q == '$' && !slot_copy(q);
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
            k += !slot_copy(p + i + (quoted ? 1 : 0));
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

/* "step 3, alloc 'x': its bytes are 4 at MBS=1, 16 at MBS=2": where a size is and its values at
 * every point, the head of the message for a size that fits no form. */
static void misfit_head(const fitter *f, const site *s, const int64_t *y, ml_str *m) {
    char pt[256];
    if (!strcmp(s->what, "bytes"))
        ml_str_printf(m, "step %zu, alloc '%s': its bytes are", s->step, s->buf);
    else
        ml_str_printf(m, "step %zu, a collective's view of '%s': its %s is", s->step, s->buf,
                      s->what);
    for (size_t g = 0; g < f->n_points; g++) {
        f->point(f, g, pt, sizeof pt);
        ml_str_printf(m, "%s %" PRId64 " at %s", g ? "," : "", y[g], pt);
    }
}

/* docs[g] with its `world:` line's number as docs[0]'s (the header is written by the importer
 * before `steps:`, and names no buffer), for the comparison. */
static char *same_world(const char *doc0, char *doc) {
    const char *w0 = strstr(doc0, "\nworld: "), *w = strstr(doc, "\nworld: ");
    if (!w0 || !w)
        return doc;
    w0 += 8;
    w += 8;
    size_t n0 = strspn(w0, "0123456789"), n = strspn(w, "0123456789");
    ml_str out = {0};
    ml_str_append(&out, doc, (size_t)(w - doc));
    ml_str_append(&out, w0, n0);
    ml_str_printf(&out, "%s", w + n);
    free(doc);
    return out.s;
}

/* Imports every capture with placeholders, checks that the documents line up, fits each size
 * (f->fit) and imports the first capture again with the expressions: vary.h's snapshot_vary. */
static int parametric(json_t *const *snaps, fitter *f, const import_opts *io_in, char **yaml,
                      size_t *len, import_stats *st, bool *bad_input, char *err, size_t errlen) {
    size_t n_points = f->n_points;
    import_opts io = *io_in;
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
        f->point(f, g, pt, sizeof pt);
        if (snapshot_import(snaps[g], &io, &docs[g], &n, &st[g], ierr, sizeof ierr) != 0) {
            rc = fail(err, errlen, "the capture at %s does not import: %s", pt, ierr);
            break;
        }
        if (g == 0)
            continue;
        if (f->world_varies)
            docs[g] = same_world(docs[0], docs[g]);
        if (strcmp(docs[0], docs[g])) {
            size_t step, na, nb;
            size_t line = first_difference(docs[0], docs[g], &step);
            const char *la = line_at(docs[0], line, &na), *lb = line_at(docs[g], line, &nb);
            char qa[200], qb[200], where[64];
            quote_line(docs[0], la, na, &values[0], qa, sizeof qa);
            quote_line(docs[g], lb, nb, &values[g], qb, sizeof qb);
            f->point(f, 0, pt2, sizeof pt2);
            if (step != SIZE_MAX)
                snprintf(where, sizeof where, "step %zu", step);
            else
                snprintf(where, sizeof where, "line %zu of the schedule", line + 1);
            *bad_input = true;
            rc = fail(err, errlen, "the captures do not line up: %s is '%s' at %s but '%s' at "
                      "%s (an op or a name that only some %s have: every capture must "
                      "make the same steps)", where, qa, pt2, qb, pt,
                      f->world_varies ? "worlds" : "values");
        }
    }
    size_t n_sizes = sites.n;
    if (!rc) {
        exprs = ml_xcalloc(n_sizes ? n_sizes : 1, sizeof *exprs);
        for (size_t j = 0; j < n_sizes && !rc; j++) {
            for (size_t g = 0; g < n_points; g++)
                y[g] = ML_VEC_AT(&values[g], int64_t, j);
            ml_str e = {0}, why = {0};
            if (f->fit(f, y, &e, &why) != 0) {
                ml_str m = {0};
                misfit_head(f, &ML_VEC_AT(&sites, site, j), y, &m);
                snprintf(err, errlen, "%s%s", m.s, why.s ? why.s : "");
                ml_str_free(&m);
                *bad_input = true;
                rc = -1;
            } else {
                exprs[j] = ml_arena_strndup(arena, e.s, e.n);
            }
            ml_str_free(&e);
            ml_str_free(&why);
        }
    }
    if (!rc && f->relate)
        f->relate(f, docs[0], &sites, values, exprs, arena);
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
            f->header(f, io_in, st, &out);
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

/* ---- --vary: multi-affine forms of the lets ---------------------------------------------------- */

typedef struct {
    fitter f;   /* first: the callbacks get &lets_fitter.f */
    const vary_let *lets;
    size_t n_lets;
} lets_fitter;

static void lets_point(const fitter *f, size_t g, char *buf, size_t len) {
    const lets_fitter *l = (const lets_fitter *)f;
    vary_point_text(l->lets, l->n_lets, g, buf, len);
}

static int lets_fit(fitter *f, const int64_t *y, ml_str *expr, ml_str *why) {
    const lets_fitter *l = (const lets_fitter *)f;
    int64_t coef[1 << VARY_MAX_LETS];
    size_t bad;
    int64_t fitted;
    char form[160], pt[256];
    int r = vary_fit(l->lets, l->n_lets, y, coef, &bad, &fitted);
    if (r == 0) {
        vary_expr_text(l->lets, l->n_lets, coef, expr);
        return 0;
    }
    form_text(l->lets, l->n_lets, form, sizeof form);
    ml_str_printf(why, ": not %s", form);
    if (r == 2) {
        ml_str_printf(why, " (its coefficients overflow 64 bits)");
    } else if (bad != SIZE_MAX) {
        ml_str exprs = {0};
        vary_expr_text(l->lets, l->n_lets, coef, &exprs);
        vary_point_text(l->lets, l->n_lets, bad, pt, sizeof pt);
        ml_str_printf(why, " (the form through the first two values of each let, %s, gives %"
                      PRId64 " at %s)", exprs.s, fitted, pt);
        ml_str_free(&exprs);
    } else {
        ml_str_printf(why, " (no integer slope between the first two values)");
    }
    return -1;
}

static void lets_header(const fitter *f, const import_opts *o, const import_stats *st,
                        ml_str *out) {
    const lets_fitter *l = (const lets_fitter *)f;
    char pt[256];
    ml_str_printf(out, "# memlife capture of %s at %zu points: %zu steps whose sizes are "
                  "expressions\n# of ", o->source ? o->source : "a program", f->n_points,
                  st[0].steps);
    for (size_t k = 0; k < l->n_lets; k++)
        ml_str_printf(out, "%s%s", k ? (k + 1 == l->n_lets ? " and " : ", ") : "",
                      l->lets[k].name);
    ml_str_printf(out, ", fitted to the captures (affine in each); at a captured point, --set "
                  "gives\n# that capture's sizes exactly. Captured (requested bytes):\n");
    for (size_t g = 0; g < f->n_points; g++) {
        vary_point_text(l->lets, l->n_lets, g, pt, sizeof pt);
        ml_str_printf(out, "#   %s: steady %" PRId64 ", peak %" PRId64 "\n", pt,
                      st[g].requested_final, st[g].requested_peak);
    }
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
    lets_fitter l = {{n_points, false, lets_point, lets_fit, NULL, lets_header}, lets, n_lets};
    return parametric(snaps, &l.f, &io, yaml, len, st, bad_input, err, errlen);
}

/* ---- --worlds: FSDP2's padded shards -------------------------------------------------------- */

/* ceil(c / w) for c, w >= 1, without c + w - 1 overflowing */
static int64_t ceil_div(int64_t c, int64_t w) { return (c - 1) / w + 1; }

bool vary_world_eval(const world_form *f, int64_t world, int64_t *out) {
    int64_t v = f->kind == WORLD_CONSTANT ? f->a : f->b;
    if (f->kind != WORLD_CONSTANT &&
        (__builtin_mul_overflow(v, ceil_div(f->c, world), &v) ||
         (f->kind == WORLD_PADDED && __builtin_mul_overflow(v, world, &v)) ||
         __builtin_add_overflow(v, f->a, &v)))
        return false;
    if (f->gathered && __builtin_mul_overflow(v, world, &v))
        return false;
    *out = v;
    return true;
}

/* The c of kind with slope b through every (worlds[i], y[i]) (a = 0): q = y/b is ceil(c/W)
 * (WORLD_PADDED: ceil(c/W)*W), so c lies in ((q-1)*W, q*W]; *lo..*hi the intersection. */
static bool c_range(world_kind kind, const int64_t *worlds, size_t n, const int64_t *y, int64_t b,
                    int64_t *lo, int64_t *hi) {
    *lo = 1;
    *hi = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t w = worlds[i], q = y[i] / b, top;
        if (y[i] % b)
            return false;
        if (kind == WORLD_PADDED) {
            if (q % w)
                return false;
            q /= w;
        }
        if (q < 1)
            return false;
        if (__builtin_mul_overflow(q - 1, w, &top) || top >= *hi)
            return false;
        if (top + 1 > *lo)
            *lo = top + 1;
        if (!__builtin_mul_overflow(q, w, &top) && top < *hi)
            *hi = top;
        if (*lo > *hi)
            return false;
    }
    return true;
}

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The most bytes g differs from f by at any world of 1 to VARY_WORLD_STAKE_MAX. */
static int64_t stake(const world_form *f, const world_form *g) {
    int64_t most = 0;
    for (int64_t w = 1; w <= VARY_WORLD_STAKE_MAX; w++) {
        int64_t u, v, d;
        if (!vary_world_eval(f, w, &u) || !vary_world_eval(g, w, &v) ||
            __builtin_sub_overflow(u, v, &d) || d == INT64_MIN)
            return INT64_MAX;
        if (d < 0)
            d = -d;
        if (d > most)
            most = d;
    }
    return most;
}

int vary_world_fit(const int64_t *worlds, size_t n, const int64_t *y, bool gathered,
                   world_form *f) {
    *f = (world_form){.kind = WORLD_CONSTANT, .a = y[0], .gathered = gathered};
    bool constant = true, positive = true;
    int64_t g = 0;
    for (size_t i = 0; i < n; i++) {
        constant = constant && y[i] == y[0];
        positive = positive && y[i] > 0;
        g = gcd64(g, y[i]);
    }
    if (constant)
        return 0;
    if (!positive)
        return 1;
    /* the divisors of g from the largest down are g/k for k = 1, 2, ... that divide g; the
     * first (kind, b) through every point is the form, with the largest c it admits; every
     * other c and (kind, b) through every point is an alternative the captures cannot rule out */
    bool found = false;
    for (world_kind kind = WORLD_SHARD; kind <= WORLD_PADDED; kind++) {
        for (int64_t k = 1; k <= VARY_WORLD_TRIES && k <= g; k++) {
            int64_t lo, hi, b = g / k;
            if (g % k || !c_range(kind, worlds, n, y, b, &lo, &hi))
                continue;
            bool chosen = !found;
            if (chosen)
                *f = (world_form){.kind = kind, .b = b, .c = hi, .gathered = gathered};
            found = true;
            /* the others of this (kind, b): every c of lo..hi; each form is monotone in c, so
             * the ends of the range bound what they may be off by */
            int64_t more = hi - lo + (chosen ? 0 : 1);
            if (__builtin_add_overflow(f->alternatives, more, &f->alternatives))
                f->alternatives = INT64_MAX;
            world_form ends[2] = {{.kind = kind, .b = b, .c = lo, .gathered = gathered},
                                  {.kind = kind, .b = b, .c = hi, .gathered = gathered}};
            for (int e = 0; e < 2 && more; e++) {
                int64_t s = stake(f, &ends[e]);
                if (s > f->stake)
                    f->stake = s;
            }
        }
    }
    return found ? 0 : 1;
}

void vary_world_text(const world_form *f, ml_str *out) {
    if (f->kind == WORLD_CONSTANT) {
        ml_str_printf(out, "%" PRId64 "%s", f->a, f->gathered ? "*world" : "");
        return;
    }
    if (f->a && f->gathered)
        ml_str_printf(out, "(");
    if (f->b != 1)
        ml_str_printf(out, "%" PRId64 "*", f->b);
    ml_str_printf(out, "ceil_div(%" PRId64 ", world)%s", f->c,
                  f->kind == WORLD_PADDED ? "*world" : "");
    if (f->a)
        ml_str_printf(out, " + %" PRId64 "%s", f->a, f->gathered ? ")" : "");
    if (f->gathered)
        ml_str_printf(out, "*world");
}

typedef struct {
    fitter f;
    const int64_t *worlds;
    ml_vec forms;            /* of world_form: each size's, in order */
} worlds_fitter;

static void worlds_point(const fitter *f, size_t g, char *buf, size_t len) {
    snprintf(buf, len, "world %" PRId64, ((const worlds_fitter *)f)->worlds[g]);
}

static int worlds_fit(fitter *f, const int64_t *y, ml_str *expr, ml_str *why) {
    worlds_fitter *w = (worlds_fitter *)f;
    world_form form;
    if (vary_world_fit(w->worlds, f->n_points, y, false, &form) != 0) {
        ml_str_printf(why, ": not constant, b*ceil_div(c, world) nor b*ceil_div(c, world)*world "
                      "with integers b, c >= 1 (FSDP2's padded shard and unsharded sizes)");
        return -1;
    }
    *(world_form *)ml_vec_push(&w->forms) = form;
    vary_world_text(&form, expr);
    return 0;
}

/* The size an operand of a collective at p (after "send: ", "recv: ") writes: a view's length
 * (its last placeholder), or the whole buffer's: the last alloc of that name before the line
 * (before, the sizes up to it). SIZE_MAX where none; *whole says which. */
static size_t operand_size(const char *doc, const char *p, const ml_vec *sites, size_t before,
                           bool *whole) {
    *whole = *p != '"';
    if (!*whole) {
        const char *q = strchr(p + 1, '"'), *last = NULL;
        for (const char *r = p + 1; q && r < q; r++)
            last = *r == '$' ? r : last;
        return last ? sizes_before(doc, last) : SIZE_MAX;
    }
    size_t n = strcspn(p, ",}\n");
    for (size_t j = before; j-- > 0;) {
        const site *s = &ML_VEC_AT(sites, site, j);
        if (!strcmp(s->what, "bytes") && strlen(s->buf) == n && !memcmp(s->buf, p, n))
            return j;
    }
    return SIZE_MAX;
}

/* An all_gather's recv (a reduce_scatter's send) is world times its other operand at every
 * world, but fitted alone it may take another form through the captured worlds (a constant,
 * where every captured world divides the dims): it is written as world times the other's form,
 * fitted again with the alternatives that brings, so that the collective holds at any world. */
static void worlds_relate(fitter *f, const char *doc, const ml_vec *sites, const ml_vec *values,
                          const char **exprs, ml_arena *arena) {
    worlds_fitter *w = (worlds_fitter *)f;
    const char *p = strstr(doc, "\nsteps:\n");
    int64_t *y = ml_xcalloc(f->n_points, sizeof *y);
    for (; p; p = strchr(p + 1, '\n')) {
        const char *t = p + 1 + strspn(p + 1, " ");
        bool gather = !strncmp(t, "- all_gather: {", 15);
        if (!gather && strncmp(t, "- reduce_scatter: {", 19))
            continue;
        const char *e = strchr(t, '\n'), *send = strstr(t, "send: "), *recv = strstr(t, "recv: ");
        if (!send || !recv || (e && (send > e || recv > e)))
            continue;   /* in place on one buffer (buf:): nothing to relate */
        size_t before = sizes_before(doc, t);
        bool whole_big, whole_small;
        size_t big = operand_size(doc, (gather ? recv : send) + 6, sites, before, &whole_big);
        size_t small = operand_size(doc, (gather ? send : recv) + 6, sites, before, &whole_small);
        if (!whole_big || big == SIZE_MAX || small == SIZE_MAX)
            continue;
        bool times = true;
        for (size_t g = 0; g < f->n_points && times; g++) {
            int64_t vb = ML_VEC_AT(&values[g], int64_t, big);
            y[g] = ML_VEC_AT(&values[g], int64_t, small);
            times = vb % w->worlds[g] == 0 && vb / w->worlds[g] == y[g];
        }
        world_form form;
        if (!times || vary_world_fit(w->worlds, f->n_points, y, true, &form) != 0)
            continue;
        ML_VEC_AT(&w->forms, world_form, big) = form;
        ml_str text = {0};
        vary_world_text(&form, &text);
        exprs[big] = ml_arena_strndup(arena, text.s, text.n);
        ml_str_free(&text);
    }
    free(y);
}

static void worlds_header(const fitter *f, const import_opts *o, const import_stats *st,
                          ml_str *out) {
    const worlds_fitter *w = (const worlds_fitter *)f;
    size_t ambiguous = 0;
    int64_t most = 0;
    for (size_t j = 0; j < w->forms.n; j++) {
        const world_form *form = &ML_VEC_AT(&w->forms, world_form, j);
        if (form->alternatives) {
            ambiguous++;
            most = form->stake > most ? form->stake : most;
        }
    }
    ml_str_printf(out, "# memlife capture of %s at worlds ", o->source ? o->source : "a program");
    for (size_t g = 0; g < f->n_points; g++)
        ml_str_printf(out, "%s%" PRId64, g ? ", " : "", w->worlds[g]);
    ml_str_printf(out, ": %zu steps whose sizes are constants,\n# b*ceil_div(c, world) (a "
                  "padded shard) or b*ceil_div(c, world)*world (its unsharded size),\n# fitted "
                  "to the captures; at a captured world, --world gives that capture's sizes "
                  "exactly.\n# Captured (requested bytes):\n", st[0].steps);
    for (size_t g = 0; g < f->n_points; g++)
        ml_str_printf(out, "#   world %" PRId64 ": steady %" PRId64 ", peak %" PRId64 "\n",
                      w->worlds[g], st[g].requested_final, st[g].requested_peak);
    if (ambiguous)
        ml_str_printf(out, "# %zu size%s fit other forms too at the captured worlds (the largest "
                      "c, then the largest b,\n# is written): at a world of 1 to %d they may "
                      "be off by up to %" PRId64 " bytes each. More worlds\n# (1, and one that "
                      "does not divide the dims) tell them apart.\n", ambiguous,
                      ambiguous == 1 ? "" : "s", VARY_WORLD_STAKE_MAX, most);
}

int snapshot_worlds(json_t *const *snaps, const int64_t *worlds, size_t n_worlds,
                    const import_opts *o, char **yaml, size_t *len, import_stats *st,
                    bool *bad_input, char *err, size_t errlen) {
    *yaml = NULL;
    *len = 0;
    *bad_input = false;
    if (n_worlds < 2)
        return fail(err, errlen, "at least two worlds");
    import_opts io = *o;
    io.world_varied = true;
    worlds_fitter w = {{n_worlds, true, worlds_point, worlds_fit, worlds_relate, worlds_header},
                       worlds, {0}};
    ml_vec_init(&w.forms, sizeof(world_form));
    int rc = parametric(snaps, &w.f, &io, yaml, len, st, bad_input, err, errlen);
    ml_vec_free(&w.forms);
    return rc;
}
