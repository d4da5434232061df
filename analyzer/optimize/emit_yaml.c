/* SPDX-License-Identifier: MIT */
/* emit_yaml.c — a schedule IR back to YAML (emit_yaml.h).
 *
 * Scalars are rendered by libyaml's emitter in their context and cached by text (a big schedule
 * repeats the same few expressions on every step); the layout and the comments are written here.
 * Names made only of letters, digits, '_' and '.' that start with a letter, a digit or '_' are
 * plain in every YAML context, so they skip libyaml: that is most scalars of a schedule. */
#include "optimize/emit_yaml.h"

#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <yaml.h>

/* ---- scalars ---------------------------------------------------------------------------------- */

typedef struct {
    char *out;
    size_t n, cap;
} sink;

static int sink_write(void *data, unsigned char *buffer, size_t size) {
    sink *k = data;
    if (k->n + size + 1 > k->cap) {
        size_t cap = k->cap ? k->cap : 64;
        while (cap < k->n + size + 1)
            cap *= 2;
        char *p = realloc(k->out, cap);
        if (!p)
            return 0;   /* libyaml's convention: 0 is failure */
        k->out = p;
        k->cap = cap;
    }
    memcpy(k->out + k->n, buffer, size);
    k->n += size;
    k->out[k->n] = '\0';
    return 1;
}

static bool always_plain(const char *t) {
    if (!t[0] || t[0] == '.' || t[0] == '-')
        return false;
    for (const char *p = t; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.'))
            return false;
    return true;
}

/* libyaml renders `[TEXT]` (flow) or `k: TEXT` (block); the scalar is what stands between. */
static int libyaml_scalar(const char *text, bool flow, ml_str *out) {
    yaml_emitter_t em;
    yaml_event_t ev;
    sink k = {0};
    if (!yaml_emitter_initialize(&em))
        return -1;
    yaml_emitter_set_output(&em, sink_write, &k);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    int ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
             yaml_emitter_emit(&em, &ev) &&
             yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
             yaml_emitter_emit(&em, &ev);
    if (ok && flow)
        ok = yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE) &&
             yaml_emitter_emit(&em, &ev);
    if (ok && !flow)
        ok = yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) &&
             yaml_emitter_emit(&em, &ev) &&
             yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)"k", 1, 1, 1,
                                          YAML_PLAIN_SCALAR_STYLE) &&
             yaml_emitter_emit(&em, &ev);
    ok = ok &&
         yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), 1,
                                      1, YAML_ANY_SCALAR_STYLE) &&
         yaml_emitter_emit(&em, &ev);
    if (ok && flow)
        ok = yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev);
    if (ok && !flow)
        ok = yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev);
    ok = ok && yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
         yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev);
    yaml_emitter_delete(&em);
    int rc = -1;
    if (ok && k.out) {
        size_t n = k.n;
        while (n && (k.out[n - 1] == '\n' || k.out[n - 1] == ' '))
            n--;
        const char *start = k.out + (flow ? 1 : 3);   /* after "[" or "k: " */
        size_t end = flow ? n - 1 : n;                /* before "]" */
        if ((flow && n >= 2 && k.out[0] == '[' && k.out[n - 1] == ']') ||
            (!flow && n >= 3 && !memcmp(k.out, "k: ", 3))) {
            ml_str_append(out, start, end - (size_t)(start - k.out));
            rc = 0;
        }
    }
    free(k.out);
    return rc;
}

int emit_yaml_scalar(const char *text, bool flow, ml_str *out) {
    if (always_plain(text)) {
        ml_str_append(out, text, strlen(text));
        return 0;
    }
    return libyaml_scalar(text, flow, out);
}

/* ---- the writer ------------------------------------------------------------------------------- */

/* Rendered scalars by (text, context): open addressing, grows at half full. */
typedef struct {
    char *text;           /* owned copy */
    bool flow;
    char *rendered;
} cache_entry;

typedef struct {
    const sched *s;
    const emit_yaml_opts *o;
    ml_str *out;
    ml_diags *d;
    int failed;
    cache_entry *cache;
    size_t cache_cap, cache_n;
    const sched_step *no_note;   /* emit_yaml_step's step: its caller writes its comment */
} writer;

static uint64_t text_hash(const char *t, bool flow) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)flow;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ull;
    return h;
}

static void cache_grow(writer *w) {
    size_t cap = w->cache_cap ? 2 * w->cache_cap : 256;
    cache_entry *c = ml_xcalloc(cap, sizeof *c);
    for (size_t k = 0; k < w->cache_cap; k++) {
        cache_entry *e = &w->cache[k];
        if (!e->text)
            continue;
        size_t at = text_hash(e->text, e->flow) & (cap - 1);
        while (c[at].text)
            at = (at + 1) & (cap - 1);
        c[at] = *e;
    }
    free(w->cache);
    w->cache = c;
    w->cache_cap = cap;
}

static void cache_free(writer *w) {
    for (size_t k = 0; k < w->cache_cap; k++) {
        free(w->cache[k].text);
        free(w->cache[k].rendered);
    }
    free(w->cache);
    w->cache = NULL;
    w->cache_cap = w->cache_n = 0;
}

static void scalar(writer *w, const char *text, bool flow) {
    if (always_plain(text)) {
        ml_str_append(w->out, text, strlen(text));
        return;
    }
    if (2 * (w->cache_n + 1) > w->cache_cap)
        cache_grow(w);
    size_t at = text_hash(text, flow) & (w->cache_cap - 1);
    for (; w->cache[at].text; at = (at + 1) & (w->cache_cap - 1))
        if (w->cache[at].flow == flow && !strcmp(w->cache[at].text, text)) {
            ml_str_append(w->out, w->cache[at].rendered, strlen(w->cache[at].rendered));
            return;
        }
    ml_str r = {0};
    if (libyaml_scalar(text, flow, &r) != 0) {
        if (!w->failed)
            ml_error(w->d, w->s->file, ((ml_mark){0, 0}), "cannot write the scalar '%s' as YAML",
                     text);
        w->failed = 1;
        ml_str_free(&r);
        return;
    }
    ml_str_append(&r, "", 0);
    char *key = ml_xstrdup(text);   /* text may be a temporary (a view's "name[off : count]") */
    w->cache[at] = (cache_entry){.text = key, .flow = flow, .rendered = r.s};
    w->cache_n++;
    ml_str_append(w->out, r.s, r.n);
}

static void lit(writer *w, const char *t) { ml_str_append(w->out, t, strlen(t)); }

static void indent(writer *w, int n) {
    for (int k = 0; k < n; k++)
        ml_str_append(w->out, " ", 1);
}

/* Comment lines at indentation n: "# " + each '\n'-separated line of text. */
static void comment(writer *w, int n, const char *text) {
    while (text && *text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text) : strlen(text);
        indent(w, n);
        lit(w, len ? "# " : "#");
        ml_str_append(w->out, text, len);
        lit(w, "\n");
        text = nl ? nl + 1 : NULL;
    }
}

static const char *ex(const expr *e) { return expr_text(e); }

/* The schedule key of a step: a collective's name ("reduce_scatter"), else the step kind's. */
static const char *step_key(const sched_step *st) {
    return st->kind == ST_COLL ? ml_colls[st->u.coll.coll].name : sched_step_names[st->kind];
}

/* Expression text without the spaces a view's parts keep from `name[off : count]`. */
static void trimmed(ml_str *t, const expr *e) {
    const char *s = e ? ex(e) : "0";
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    ml_str_append(t, s, n);
}
/* A symbol's name. */
static const char *sym(writer *w, sched_sym_kind k, uint32_t s) {
    return sched_sym_name(w->s, k, s);
}

/* "key: value" inside a flow mapping; first is false after the first pair. */
static void pair(writer *w, bool *first, const char *key, const char *value) {
    if (!*first)
        lit(w, ", ");
    *first = false;
    lit(w, key);
    lit(w, ": ");
    scalar(w, value, true);
}

static void key(writer *w, bool *first, const char *k) {
    if (!*first)
        lit(w, ", ");
    *first = false;
    lit(w, k);
    lit(w, ": ");
}

/* `name` or `name[offset : count]`, as one scalar. */
static void view(writer *w, const sched_view *v, bool flow) {
    const char *name = sym(w, SYM_BUFFER, v->buf);
    if (!v->offset && !v->count) {
        scalar(w, name, flow);
        return;
    }
    ml_str t = {0};
    ml_str_printf(&t, "%s[", name);
    trimmed(&t, v->offset);
    ml_str_append(&t, " : ", 3);
    trimmed(&t, v->count);
    ml_str_append(&t, "]", 1);
    scalar(w, t.s, flow);
    ml_str_free(&t);
}

static bool same_expr(const expr *a, const expr *b) {
    return a == b || (a && b && !strcmp(expr_text(a), expr_text(b)));
}

/* `buf:` form: send and recv are one view (as written, or as rewritten with equal text). */
static bool same_view(const sched_view *a, const sched_view *b) {
    return a->buf == b->buf && same_expr(a->offset, b->offset) && same_expr(a->count, b->count);
}

static void view_pair(writer *w, bool *first, const char *k, const sched_view *v) {
    key(w, first, k);
    view(w, v, true);
}

static void stream_pair(writer *w, bool *first, uint32_t stream) {
    if (stream != SCHED_DEFAULT_STREAM)
        pair(w, first, "stream", sym(w, SYM_STREAM, stream));
}

/* The INIT pattern keys of a mapping (`const: 0`), after any keys already written. */
static void init_keys(writer *w, bool *first, const sched_init *in) {
    switch (in->kind) {
    case INIT_NONE: break;
    case INIT_RANK_IOTA: pair(w, first, "pattern", "rank_iota"); break;
    case INIT_CONST: pair(w, first, "const", ex(in->value)); break;
    case INIT_EXPR: pair(w, first, "expr", ex(in->value)); break;
    case INIT_COPY: view_pair(w, first, "copy", in->src); break;
    case INIT_RANDOM: pair(w, first, "random", ex(in->value)); break;
    case INIT_IDENTITY: pair(w, first, "identity", ml_redops[in->op].name); break;
    }
}

/* An INIT value: `rank_iota` or `{const: 0}`. */
static void init_value(writer *w, const sched_init *in) {
    if (in->kind == INIT_RANK_IOTA) {
        lit(w, "rank_iota");
        return;
    }
    bool first = true;
    lit(w, "{");
    init_keys(w, &first, in);
    lit(w, "}");
}

static void operand(writer *w, const sched_operand *o) {
    bool first = true;
    switch (o->kind) {
    case OPD_VIEW:
        if (!o->roll_shards) {
            view(w, &o->view, true);
            return;
        }
        lit(w, "{");
        view_pair(w, &first, "buf", &o->view);
        pair(w, &first, "roll_shards", ex(o->roll_shards));
        if (o->comm)
            pair(w, &first, "comm", w->s->comms[o->comm].name);
        lit(w, "}");
        return;
    case OPD_EXPR:
        lit(w, "{");
        pair(w, &first, "expr", ex(o->value));
        lit(w, "}");
        return;
    case OPD_REDUCED_PATTERN:
        lit(w, "{");
        key(w, &first, "reduce");
        init_value(w, &o->pattern);
        pair(w, &first, "op", ml_redops[o->op].name);
        if (o->comm)
            pair(w, &first, "comm", w->s->comms[o->comm].name);
        lit(w, "}");
        return;
    }
}

static void views_list(writer *w, bool *first, const char *k, const sched_view *v, uint32_t n) {
    key(w, first, k);
    lit(w, "[");
    for (uint32_t j = 0; j < n; j++) {
        if (j)
            lit(w, ", ");
        view(w, &v[j], true);
    }
    lit(w, "]");
}

static void tolerance(writer *w, bool *first, const char *k, double v) {
    if (v == 0)
        return;
    char t[40];
    snprintf(t, sizeof t, "%.17g", v);
    pair(w, first, k, t);
}

/* The flow-mapping value of a simple step (everything but repeat, region, expect_error). */
static void step_value(writer *w, const sched_step *st) {
    bool first = true;
    switch (st->kind) {
    case ST_ALLOC: {
        __typeof__(st->u.alloc) const *a = &st->u.alloc;
        lit(w, "{");
        pair(w, &first, "buf", sym(w, SYM_BUFFER, a->buf));
        pair(w, &first, a->bytes ? "bytes" : "count", ex(a->bytes ? a->bytes : a->count));
        if (a->dtype != w->s->dtype)
            pair(w, &first, "dtype", ml_dtypes[a->dtype].name);
        if (a->chunks)
            pair(w, &first, "chunks", ex(a->chunks));
        if (a->init.kind != INIT_NONE) {
            key(w, &first, "init");
            init_value(w, &a->init);
        }
        stream_pair(w, &first, a->stream);
        lit(w, "}");
        return;
    }
    case ST_FREE:
        if (st->u.free.n == 1) {
            scalar(w, sym(w, SYM_BUFFER, st->u.free.bufs[0]), false);
            return;
        }
        lit(w, "[");
        for (uint32_t k = 0; k < st->u.free.n; k++) {
            if (k)
                lit(w, ", ");
            scalar(w, sym(w, SYM_BUFFER, st->u.free.bufs[k]), true);
        }
        lit(w, "]");
        return;
    case ST_RELEASE:
        lit(w, "{");
        pair(w, &first, "buf", sym(w, SYM_BUFFER, st->u.release.buf));
        pair(w, &first, "keep", ex(st->u.release.keep));
        lit(w, "}");
        return;
    case ST_COLL: {
        __typeof__(st->u.coll) const *c = &st->u.coll;
        const ml_coll_info *ci = &ml_colls[c->coll];
        lit(w, "{");
        if (ci->p2p) {
            view_pair(w, &first, "buf", &c->send);
            pair(w, &first, "peer", ex(c->root));
            stream_pair(w, &first, c->stream);
            if (c->comm)
                pair(w, &first, "comm", w->s->comms[c->comm].name);
            lit(w, "}");
            return;
        }
        if (same_view(&c->send, &c->recv)) {
            view_pair(w, &first, "buf", &c->send);
        } else {
            view_pair(w, &first, "send", &c->send);
            view_pair(w, &first, "recv", &c->recv);
        }
        if (ci->has_op)
            pair(w, &first, "op", ml_redops[c->op].name);
        if (ci->has_root)
            pair(w, &first, "root", ex(c->root));
        stream_pair(w, &first, c->stream);
        if (c->comm)
            pair(w, &first, "comm", w->s->comms[c->comm].name);
        lit(w, "}");
        return;
    }
    case ST_SYNC:
        if (st->u.sync.kind == SYNC_DEVICE) {
            lit(w, "device");
            return;
        }
        lit(w, "{");
        if (st->u.sync.kind == SYNC_STREAM)
            pair(w, &first, "stream", sym(w, SYM_STREAM, st->u.sync.stream));
        else
            pair(w, &first, "event", sym(w, SYM_EVENT, st->u.sync.event));
        lit(w, "}");
        return;
    case ST_RECORD:
    case ST_WAIT:
        lit(w, "{");
        pair(w, &first, "event", sym(w, SYM_EVENT, st->u.event.event));
        stream_pair(w, &first, st->u.event.stream);
        lit(w, "}");
        return;
    case ST_INIT:
        lit(w, "{");
        view_pair(w, &first, "buf", &st->u.init.dst);
        init_keys(w, &first, &st->u.init.init);
        lit(w, "}");
        return;
    case ST_COPY:
        lit(w, "{");
        view_pair(w, &first, "src", &st->u.copy.src);
        view_pair(w, &first, "dst", &st->u.copy.dst);
        stream_pair(w, &first, st->u.copy.stream);
        lit(w, "}");
        return;
    case ST_SCALE:
        lit(w, "{");
        view_pair(w, &first, "buf", &st->u.scale.buf);
        pair(w, &first, "by", st->u.scale.by ? st->u.scale.by : ex(st->u.scale.factor));
        stream_pair(w, &first, st->u.scale.stream);
        lit(w, "}");
        return;
    case ST_RECORD_STREAM:
        lit(w, "{");
        pair(w, &first, "buf", sym(w, SYM_BUFFER, st->u.record_stream.buf));
        pair(w, &first, "stream", sym(w, SYM_STREAM, st->u.record_stream.stream));
        lit(w, "}");
        return;
    case ST_EMPTY_CACHE:
        lit(w, "{}");
        return;
    case ST_COMPUTE: {
        __typeof__(st->u.compute) const *c = &st->u.compute;
        lit(w, "{");
        if (c->n_reads || !c->n_writes)
            views_list(w, &first, "reads", c->reads, c->n_reads);
        if (c->n_writes)
            views_list(w, &first, "writes", c->writes, c->n_writes);
        stream_pair(w, &first, c->stream);
        if (c->time_us)   /* the time model's duration (timemodel.h) */
            pair(w, &first, "time", ex(c->time_us));
        if (c->flops)
            pair(w, &first, "flops", ex(c->flops));
        lit(w, "}");
        return;
    }
    case ST_CHECK: {
        const sched_check *c = st->u.check;
        lit(w, "{");
        pair(w, &first, "name", c->name);
        key(w, &first, c->kind == CHECK_EQUAL ? "equal" : "not_equal");
        lit(w, "[");
        operand(w, &c->a);
        lit(w, ", ");
        operand(w, &c->b);
        lit(w, "]");
        tolerance(w, &first, "rtol", c->rtol);
        tolerance(w, &first, "atol", c->atol);
        lit(w, "}");
        return;
    }
    case ST_REPEAT:
    case ST_REGION:
    case ST_EXPECT_ERROR:
    case ST_GROUP:   /* optimize refuses files with groups (optimize.c) */
    case ST_KIND_COUNT:
        break;
    }
}

static void steps(writer *w, const sched_step *st, uint32_t n, int ind);

/* One step as a list item at indentation ind ("- " at ind). */
static void step(writer *w, const sched_step *st, int ind) {
    const char *note = w->o && w->o->step_comment && st != w->no_note
                           ? w->o->step_comment(w->o->ctx, st) : NULL;
    comment(w, ind, note);
    indent(w, ind);
    lit(w, "- ");
    lit(w, step_key(st));
    lit(w, ":");
    switch (st->kind) {
    case ST_REPEAT:
        lit(w, "\n");
        indent(w, ind + 4);
        lit(w, "count: ");
        scalar(w, ex(st->u.repeat.count), false);
        lit(w, "\n");
        if (st->u.repeat.index) {   /* before steps: the body's expressions name it */
            indent(w, ind + 4);
            lit(w, "index: ");
            scalar(w, st->u.repeat.index, false);
            lit(w, "\n");
        }
        indent(w, ind + 4);
        lit(w, "steps:\n");
        steps(w, st->u.repeat.steps, st->u.repeat.n, ind + 6);
        break;
    case ST_REGION:
        lit(w, "\n");
        indent(w, ind + 4);
        lit(w, "name: ");
        scalar(w, sym(w, SYM_REGION, st->u.region.name), false);
        lit(w, "\n");
        indent(w, ind + 4);
        lit(w, "steps:\n");
        steps(w, st->u.region.steps, st->u.region.n, ind + 6);
        break;
    case ST_EXPECT_ERROR: {
        const sched_step *in = st->u.expect_error.step;
        lit(w, "\n");
        indent(w, ind + 4);
        lit(w, "name: ");
        scalar(w, st->u.expect_error.name, false);
        lit(w, "\n");
        indent(w, ind + 4);
        lit(w, "error: ");
        lit(w, sched_error_names[st->u.expect_error.error]);
        lit(w, "\n");
        indent(w, ind + 4);
        lit(w, "step:\n");
        indent(w, ind + 6);
        lit(w, step_key(in));
        lit(w, ": ");
        step_value(w, in);
        lit(w, "\n");
        if (in->when) {
            indent(w, ind + 6);
            lit(w, "when: ");
            scalar(w, ex(in->when), false);
            lit(w, "\n");
        }
        break;
    }
    default:
        lit(w, " ");
        step_value(w, st);
        lit(w, "\n");
        break;
    }
    if (st->when) {
        indent(w, ind + 2);
        lit(w, "when: ");
        scalar(w, ex(st->when), false);
        lit(w, "\n");
    }
}

static void steps(writer *w, const sched_step *st, uint32_t n, int ind) {
    if (!n) {
        indent(w, ind);
        lit(w, "[]\n");   /* an empty body: `steps: []` reads the same */
        return;
    }
    for (uint32_t k = 0; k < n; k++)
        step(w, &st[k], ind);
}

/* Expectations: the mapping form when every item is for every rank and each view appears once,
 * else a list with one item per expectation. */
static void bound(writer *w, const sched_expect *e) {
    bool first = true;
    const ml_series_info *si = &ml_series[e->view];
    lit(w, ml_views[si->view].name);   /* a series of a view of several: `torch: {allocated: ` */
    lit(w, ": {");
    if (si->key) {
        lit(w, si->key);
        lit(w, ": {");
    }
    if (e->steady)
        pair(w, &first, "steady", ex(e->steady));
    if (e->peak)
        pair(w, &first, "peak", ex(e->peak));
    lit(w, si->key ? "}}" : "}");
}

static void expects(writer *w, const sched_expect *e, uint32_t n, int ind) {
    if (!n)
        return;
    if (w->o && w->o->expect_note) {
        comment(w, ind, w->o->expect_note);
        return;
    }
    bool mapping = true;
    for (uint32_t k = 0; k < n; k++)
        for (uint32_t j = 0; j < k; j++)
            mapping &= !e[k].rank && e[j].view != e[k].view;
    for (uint32_t k = 0; k < n && mapping; k++)
        mapping &= !e[k].rank && !ml_series[e[k].view].key;   /* one item per series of torch */
    indent(w, ind);
    lit(w, "expect:\n");
    for (uint32_t k = 0; k < n; k++) {
        indent(w, ind + 2);
        if (mapping) {
            bound(w, &e[k]);
        } else {
            lit(w, "- {");
            if (e[k].rank) {
                lit(w, "rank: ");
                scalar(w, ex(e[k].rank), true);
                lit(w, ", ");
            }
            bound(w, &e[k]);
            lit(w, "}");
        }
        lit(w, "\n");
    }
}

static void top(writer *w, const char *k, const char *value) {
    lit(w, k);
    lit(w, ": ");
    scalar(w, value, false);
    lit(w, "\n");
}

static void decls(writer *w, const char *k, sched_sym_kind kind, uint32_t first) {
    const sched_symtab *t = &w->s->syms[kind];
    if (t->n <= first)
        return;
    lit(w, k);
    lit(w, ": [");
    for (uint32_t s = first; s < t->n; s++) {
        if (s > first)
            lit(w, ", ");
        scalar(w, t->names[s], true);
    }
    lit(w, "]\n");
}

static const sched_step *plan_steps(writer *w, uint32_t k, uint32_t *n) {
    *n = w->s->plans[k].n;
    return w->s->plans[k].steps;
}

/* `mesh:` and `comms:` as the file gave them (the world, communicator 0, is implicit). */
static void comms_keys(writer *w, const sched *s) {
    if (s->n_mesh) {
        bool first = true;
        lit(w, "mesh: {");
        for (uint32_t k = 0; k < s->n_mesh; k++)
            pair(w, &first, s->mesh[k].name, ex(s->mesh[k].size));
        lit(w, "}\n");
    }
    if (s->n_comms <= 1)
        return;
    lit(w, "comms:\n");
    for (uint32_t k = 1; k < s->n_comms; k++) {
        const sched_comm *c = &s->comms[k];
        bool first = true;
        indent(w, 2);
        scalar(w, c->name, false);
        lit(w, ": {");
        switch (c->kind) {
        case COMM_MESH: {
            key(w, &first, "mesh_dim");
            lit(w, "[");
            bool one = true;
            for (uint32_t d = 0; d < s->n_mesh; d++)
                if (c->dims >> d & 1u) {
                    lit(w, one ? "" : ", ");
                    scalar(w, s->mesh[d].name, false);
                    one = false;
                }
            lit(w, "]");
            break;
        }
        case COMM_COLOR:
            pair(w, &first, "color", ex(c->color));
            if (c->key)
                pair(w, &first, "key", ex(c->key));
            break;
        case COMM_RANKS:
            key(w, &first, "ranks");
            lit(w, "[");
            for (uint32_t j = 0; j < c->n_ranks; j++) {
                lit(w, j ? ", " : "");
                scalar(w, ex(c->ranks[j]), true);
            }
            lit(w, "]");
            break;
        case COMM_WORLD: break;
        }
        if (c->share)
            pair(w, &first, "share", "true");
        lit(w, "}\n");
    }
}

/* `torch: {conf: "...", limit: EXPR}` as the file gave it. */
static void torch_key(writer *w, const sched *s) {
    if (!s->torch.present)
        return;
    bool first = true;
    lit(w, "torch: {");
    if (s->torch.conf) {
        key(w, &first, "conf");
        scalar(w, s->torch.conf, true);
    }
    if (s->torch.limit)
        pair(w, &first, "limit", ex(s->torch.limit));
    if (s->torch.capacity)
        pair(w, &first, "capacity", ex(s->torch.capacity));
    if (s->torch.n_addresses) {
        key(w, &first, "addresses");
        lit(w, "[");
        for (size_t k = 0; k < s->torch.n_addresses; k++) {
            char b[32];
            snprintf(b, sizeof b, "%s%" PRIu64, k ? ", " : "", s->torch.addresses[k]);
            lit(w, b);
        }
        lit(w, "]");
    }
    lit(w, "}\n");
}

int emit_yaml(const sched *s, const emit_yaml_opts *o, ml_str *out, ml_diags *d) {
    writer w = {.s = s, .o = o, .out = out, .d = d};
    if (o && o->header)
        comment(&w, 0, o->header);
    top(&w, "name", o && o->name ? o->name : s->name);
    if (s->about)
        top(&w, "about", s->about);
    int world = o && o->world > 0 ? o->world : s->world;
    if (world > 0) {
        char t[24];
        snprintf(t, sizeof t, "%d", world);
        top(&w, "world", t);
    }
    top(&w, "dtype", ml_dtypes[s->dtype].name);
    if (s->n_lets) {
        lit(&w, "let:\n");
        for (uint32_t k = 0; k < s->n_lets; k++) {
            indent(&w, 2);
            lit(&w, s->lets[k].name);
            lit(&w, ": ");
            scalar(&w, ex(s->lets[k].value), false);
            lit(&w, "\n");
        }
    }
    decls(&w, "streams", SYM_STREAM, 1);
    decls(&w, "events", SYM_EVENT, 0);
    comms_keys(&w, s);
    torch_key(&w, s);
    expects(&w, s->expects, s->n_expects, 0);
    bool named = s->n_plans > 1 || (s->n_plans == 1 && s->plans[0].name[0]);
    if (!named) {
        uint32_t n = 0;
        const sched_step *st = s->n_plans ? plan_steps(&w, 0, &n) : NULL;
        lit(&w, "steps:\n");
        steps(&w, st, n, 2);
    } else {
        lit(&w, "plans:\n");
        for (uint32_t k = 0; k < s->n_plans; k++) {
            uint32_t n;
            const sched_step *st = plan_steps(&w, k, &n);
            indent(&w, 2);
            scalar(&w, s->plans[k].name, false);
            lit(&w, ":\n");
            expects(&w, s->plans[k].expects, s->plans[k].n_expects, 4);
            indent(&w, 4);
            lit(&w, "steps:\n");
            steps(&w, st, n, 6);
        }
    }
    if (s->sweep_let >= 0 && s->n_sweep) {
        lit(&w, "sweep: {let: ");
        lit(&w, s->lets[s->sweep_let].name);
        lit(&w, ", values: [");
        for (uint32_t k = 0; k < s->n_sweep; k++) {
            if (k)
                lit(&w, ", ");
            scalar(&w, ex(s->sweep_values[k]), true);
        }
        lit(&w, "]}\n");
    }
    int rc = w.failed ? -1 : 0;
    cache_free(&w);
    return rc;
}

struct emit_yaml_writer {
    writer w;
};

emit_yaml_writer *emit_yaml_writer_new(const sched *s, const emit_yaml_opts *o, ml_diags *d) {
    emit_yaml_writer *x = ml_xcalloc(1, sizeof *x);
    x->w = (writer){.s = s, .o = o, .d = d};
    return x;
}

int emit_yaml_step(emit_yaml_writer *x, const sched_step *st, int ind, ml_str *out) {
    writer *w = &x->w;
    w->out = out;
    w->no_note = st;
    step(w, st, ind);
    w->out = NULL;
    return w->failed ? -1 : 0;
}

void emit_yaml_writer_free(emit_yaml_writer *x) {
    if (!x)
        return;
    cache_free(&x->w);
    free(x);
}
