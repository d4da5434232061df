/* SPDX-License-Identifier: MIT */
/* load_names.c — the loader's names: symbol interning (buffers, streams, events, regions), name
 * rules, lookups of ops and dtypes, and expressions with their name resolution and cache. */
#include "load/load_int.h"
#include "base/pages.h"

#include <stdlib.h>
#include <string.h>

/* ---- Names and symbols ------------------------------------------------------------------------ */

static bool name_char(char c, bool ident, bool path) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (!ident && (c == '-' || c == '.' || (path && c == '/')));
}

/* Names of buffers, streams, events, regions and plans: letters, digits, '_', '-', '.', and but
 * in plan names '/' (a captured program's buffers read as module paths and roles,
 * `layers.3.mlp.fc1.weight/grad`; results name a plan `schedule/plan`); let names are
 * identifiers (they appear in expressions). */
int ld_check_name(loader *l, const char *text, size_t len, ml_mark m, const char *kind, bool ident) {
    bool path = strncmp(kind, "plan", 4) != 0;
    if (len == 0)
        return ld_fail(l, m, "empty %s name", kind);
    if (len > l->lim.max_name_len)
        return ld_fail(l, m, "%s name longer than %zu bytes", kind, l->lim.max_name_len);
    bool ok = !(ident && text[0] >= '0' && text[0] <= '9');
    for (size_t k = 0; ok && k < len; k++)
        ok = name_char(text[k], ident, path);
    if (!ok)
        return ld_fail(l, m, "invalid %s name '%.*s'", kind, (int)len, text);
    return 0;
}

const char *const ld_sym_kind_names[SYM_KIND_COUNT] = {"buffer", "stream", "event", "region",
                                                           "plan result"};

static void symtab_push(sched_symtab *t, const char *name, ml_mark m) {
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->names = ml_xrealloc(t->names, t->cap * sizeof *t->names);
        t->first_mark = ml_xrealloc(t->first_mark, t->cap * sizeof *t->first_mark);
    }
    t->names[t->n] = name;
    t->first_mark[t->n] = m;
    t->n++;
}

/* ld_intern past the memo: the table, and a new symbol. Out of line, so that a name the memo
 * holds (most) costs no frame: ld_intern's six saved registers were a third of its cost. */
static __attribute__((noinline)) int intern_slow(loader *l, sched_sym_kind kind, const char *text, size_t len,
                                                 ml_mark m, uint32_t *out) {
    uintptr_t v;
    if (ld_hash_probe(&l->syms[kind], text, len, &v) != UINT32_MAX) {
        *out = (uint32_t)v;
        return 0;
    }
    if (ld_check_name(l, text, len, m, ld_sym_kind_names[kind], false))
        return -1;
    sched_symtab *t = &l->s->syms[kind];
    const char *name = ml_arena_strndup(l->a, text, len);
    *out = t->n;
    symtab_push(t, name, m);
    ld_hash_put(&l->syms[kind], name, len, *out);
    if (kind == SYM_BUFFER)
        ml_vec_push(&l->buf_allocated);
    return 0;
}

int ld_intern(loader *l, sched_sym_kind kind, const char *text, size_t len, ml_mark m, uint32_t *out) {
    uintptr_t v;
    if (ld_hash_memo(&l->syms[kind], text, len, &v) == UINT32_MAX)
        return intern_slow(l, kind, text, len, m, out);
    *out = (uint32_t)v;
    return 0;
}

/* Buffers and regions come into being where they are first named. */
int ld_sym(loader *l, sched_sym_kind kind, const char *what, uint32_t *out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    return ld_intern(l, kind, text, len, ld_mark(l), out);
}

/* Streams and events must be declared in the top-level `streams:` / `events:` lists. */
static __attribute__((noinline)) int declared_slow(loader *l, sched_sym_kind kind, const char *what,
                                                   uint32_t *out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    uintptr_t v;
    if (ld_hash_probe(&l->syms[kind], text, len, &v) == UINT32_MAX)
        return ld_fail(l, ld_mark(l), "unknown %s '%.*s'", ld_sym_kind_names[kind], len > 64 ? 64 : (int)len,
                       text);
    *out = (uint32_t)v;
    return 0;
}

/* A name the memo holds without a frame, as ld_intern. */
int ld_sym_declared(loader *l, sched_sym_kind kind, const char *what, uint32_t *out) {
    uintptr_t v;
    if (!ld_is(l, YAML_SCALAR_EVENT) ||
        ld_hash_memo(&l->syms[kind], (const char *)l->ev.data.scalar.value, l->ev.data.scalar.length, &v) ==
            UINT32_MAX)
        return declared_slow(l, kind, what, out);
    *out = (uint32_t)v;
    return 0;
}

/* A free-text name (schedule, check, expect_error): only its length is bounded. */
int ld_name(loader *l, const char *what, const char **out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    if (len > l->lim.max_name_len)
        return ld_fail(l, ld_mark(l), "%s longer than %zu bytes", what, l->lim.max_name_len);
    *out = ml_arena_strndup(l->a, text, len);
    return 0;
}

int ld_redop(loader *l, ml_redop *out) {
    if (ld_want_scalar(l, "op"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    int k = ml_redop_lookup(text, len);
    if (k < 0)
        return ld_fail(l, ld_mark(l), "unknown op '%.*s': expected one of %s", len > 64 ? 64 : (int)len, text,
                       ml_redop_list());
    *out = (ml_redop)k;
    return 0;
}

int ld_dtype(loader *l, ml_dtype *out) {
    if (ld_want_scalar(l, "dtype"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    int k = ml_dtype_lookup(text, len);
    if (k < 0)
        return ld_fail(l, ld_mark(l), "unknown dtype '%.*s': expected one of %s", len > 64 ? 64 : (int)len, text,
                       ml_dtype_list());
    *out = (ml_dtype)k;
    return 0;
}

int ld_own(loader *l, void *p) {
    *(void **)ml_vec_push(l->owned) = p;
    return 0;
}

/* ---- Expressions ------------------------------------------------------------------------------ */

typedef struct {
    loader *l;
    ld_ctx ctx;
} resolve_ctx;

static int resolve(void *vctx, const char *name, size_t len) {
    const resolve_ctx *rc = vctx;
    if (rc->ctx == CTX_CONST)
        return -1;
    if (ld_key_is("world", name, len))
        return EXPR_SLOT_WORLD;
    if (ld_key_is("rank", name, len))
        return EXPR_SLOT_RANK;
    if (ld_key_is("i", name, len))
        return rc->ctx == CTX_INDEX ? EXPR_SLOT_INDEX : -1;
    uintptr_t v;
    if (ld_hash_find(&rc->l->lets, name, len, &v) != UINT32_MAX)
        return EXPR_SLOT_FIRST_LET + (int)v;
    /* Repeat indices: the one at nesting level d has the slot after the lets plus d. Lets come
     * before the steps, so their count is final here. No two in scope share a name. */
    const ml_vec *ix = &rc->l->indices;
    for (size_t d = 0; rc->ctx != CTX_LET && d < ix->n; d++) {
        const ld_index *x = &ML_VEC_AT(ix, ld_index, d);
        if (x->len == len && memcmp(x->name, name, len) == 0)
            return EXPR_SLOT_FIRST_LET + (int)rc->l->let_v.n + (int)d;
    }
    return -1;
}

/* Identical short expressions ("M", "M/world", "rank == 0") recur on most steps of a big
 * schedule: parse each once per context and share the (immutable) tree. */
#define EXPR_CACHE_MAX_LEN 64
/* Plain numbers of more digits than this are parsed each time, not cached: an imported trace's
 * byte counts and timestamps seldom repeat, and a table of a million of them, each probed and
 * put once, was a fifth of predict's time on tests/bench/import_bench.sh's schedule (perf: its
 * probes miss the cache), for no hit. Short ones ("40", "1024") do recur. */
#define EXPR_CACHE_MAX_DIGITS 4

static bool long_number(const char *text, size_t len) {
    if (len <= EXPR_CACHE_MAX_DIGITS)
        return false;
    for (size_t k = 0; k < len; k++)
        if (text[k] < '0' || text[k] > '9')
            return false;
    return true;
}

static __attribute__((noinline)) int expr_slow(loader *l, ld_ctx ctx, const char *text, size_t len, size_t at,
                                               expr **out) {
    bool cache = ctx != CTX_LET && len <= EXPR_CACHE_MAX_LEN && l->indices.n == 0 &&
                 !long_number(text, len);
    uintptr_t v;
    if (cache && ld_hash_probe(&l->cache[ctx], text, len, &v) != UINT32_MAX) {
        *out = (expr *)v;
        return 0;
    }
    resolve_ctx rc = {l, ctx};
    expr_error err = {0};
    expr *e = expr_parse(l->a, text, len, resolve, &rc, &err);
    if (!e)
        return ld_fail(l, ld_scalar_mark(l, at + err.offset), "%s", err.msg);
    if (cache)
        ld_hash_put(&l->cache[ctx], expr_text(e), len, (uintptr_t)e);
    *out = e;
    return 0;
}

/* An expression the cache's memo holds without a frame, as ld_intern; the rest in expr_slow.
 * Inside a repeat with an index the same text can name another slot (or, outside it, none): no
 * caching there. */
int ld_expr_at(loader *l, ld_ctx ctx, const char *text, size_t len, size_t at, expr **out) {
    bool cache = ctx != CTX_LET && len <= EXPR_CACHE_MAX_LEN && l->indices.n == 0;
    uintptr_t v;
    if (!cache || ld_hash_memo(&l->cache[ctx], text, len, &v) == UINT32_MAX)
        return expr_slow(l, ctx, text, len, at, out);
    *out = (expr *)v;
    return 0;
}

/* What a double-quoted scalar's escape at p[0] (the backslash; p[1] known to exist) spans in the
 * source (*src) and in the value (the return: the UTF-8 bytes of the character it stands for). */
static size_t escape_bytes(const uint8_t *p, size_t n, size_t *src) {
    size_t digits = p[1] == 'x' ? 2 : p[1] == 'u' ? 4 : p[1] == 'U' ? 8 : 0;
    *src = 2 + digits;
    if (!digits)
        return p[1] == 'N' || p[1] == '_' ? 2 : p[1] == 'L' || p[1] == 'P' ? 3 : 1;
    uint32_t cp = 0;
    for (size_t k = 2; k < 2 + digits && k < n; k++)
        cp = cp * 16 + (uint32_t)(p[k] <= '9' ? p[k] - '0' : (p[k] | 0x20) - 'a' + 10);
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Most scalars sit on one line without an escape or '': the value is then the source text
 * after the opening quote, character for character. libyaml's indexes count characters: a
 * one-line quoted scalar whose source is exactly two characters (its quotes) longer than its
 * value has no escape and no '' (each shortens). *at: the characters before byte offset. */
/* The scalar is plain or quoted (*quoted) on one line: the styles whose value may be its source. */
static inline bool one_line(const yaml_event_t *ev, bool *quoted) {
    yaml_scalar_style_t st = ev->data.scalar.style;
    *quoted = st == YAML_DOUBLE_QUOTED_SCALAR_STYLE || st == YAML_SINGLE_QUOTED_SCALAR_STYLE;
    return ev->start_mark.line == ev->end_mark.line && (st == YAML_PLAIN_SCALAR_STYLE || *quoted);
}

static bool value_is_source(const loader *l, size_t offset, size_t *at) {
    const yaml_event_t *ev = &l->ev;
    bool quoted;
    if (!one_line(ev, &quoted))
        return false;
    const uint8_t *v = ev->data.scalar.value;
    size_t len = ev->data.scalar.length, upto = offset < len ? offset : len;
    *at = 0;
    for (size_t j = 0; j < upto; j++)
        *at += (v[j] & 0xC0) != 0x80;
    if (!quoted)
        return true;   /* a plain one-line scalar is its source: no need to count the rest */
    size_t chars = *at;
    for (size_t j = upto; j < len; j++)
        chars += (v[j] & 0xC0) != 0x80;
    return ev->end_mark.index - ev->start_mark.index == chars + 2;
}

/* Where byte `offset` of the current scalar's value is in the source. The value is not the source
 * text: quotes, escapes and '' stand for fewer bytes, and a scalar over several lines folds each
 * run of blanks and line breaks (a block scalar's indentation too) into a space or newlines. So
 * walk the source from the scalar's start alongside the value: a fold matches the blanks and
 * newlines the value has there; an offset inside a fold lands on the text after it. Only the
 * scalar's own text is walked (ld_index_byte finds its start).
 * A function of its own, apart from scalar_mark's ways out that need no walk: in one function the
 * compiler kept the mark on the stack for all of them, and those ways out stored half of it and
 * reloaded it whole, a store-forwarding stall where perf put half of scalar_mark's samples. */
static __attribute__((noinline)) ml_mark scalar_walk(loader *l, size_t offset) {
    const yaml_event_t *ev = &l->ev;
    yaml_scalar_style_t st = ev->data.scalar.style;
    bool dq = st == YAML_DOUBLE_QUOTED_SCALAR_STYLE, sq = st == YAML_SINGLE_QUOTED_SCALAR_STYLE;
    const uint8_t *v = ev->data.scalar.value, *p = (const uint8_t *)l->data;
    size_t vlen = ev->data.scalar.length, n = l->len, i = 0;
    if (offset > vlen)
        offset = vlen;
    ml_mark m = ld_mark(l);
    size_t k = ld_index_byte(l, ev->start_mark.index);
    if (dq || sq) {
        k++;
        m.col++;
    } else if (st == YAML_LITERAL_SCALAR_STYLE || st == YAML_FOLDED_SCALAR_STYLE) {
        while (k < n && !ld_break_len(p, k, n))   /* the header line: its break starts a fold */
            m.col += (p[k++] & 0xC0) != 0x80;
    }
    /* A fold right at the offset is passed too (its value bytes are the offset's), unless the
     * value ends there: an error at the end stays on the scalar's last line. */
    while (k < n && (i < offset || (i == offset && i < vlen))) {
        size_t j = k;
        ml_mark at = m;
        bool fold = false;
        for (;;) {
            while (j < n && (p[j] == ' ' || p[j] == '\t')) {
                j++;
                at.col++;
            }
            size_t b = ld_break_len(p, j, n);
            if (!b && dq && j < n && p[j] == '\\' && (b = ld_break_len(p, j + 1, n)) > 0)
                b++;   /* an escaped line break */
            if (!b)
                break;
            j += b;
            at.line++;
            at.col = 1;
            fold = true;
        }
        if (fold) {
            k = j;
            m = at;
            while (i < vlen && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n'))
                i++;
            continue;
        }
        if (i == offset)
            break;
        size_t src = 1, val = 1;
        if (dq && p[k] == '\\' && k + 1 < n)
            val = escape_bytes(p + k, n - k, &src);
        else if (sq && p[k] == '\'' && k + 1 < n && p[k + 1] == '\'')
            src = 2;
        if (i + val > offset)   /* inside an escape: point at the escape */
            break;
        for (size_t e = 0; e < src && k < n; e++)
            m.col += (p[k++] & 0xC0) != 0x80;
        i += val;
    }
    return m;
}

/* Where byte `offset` of the current scalar's value is in the source (scalar_walk where the
 * value is not its source). *is_source: value_is_source's answer, which ld_at keeps too (one
 * count of the scalar's characters rather than two, for a part of every step). */
static __attribute__((noinline)) ml_mark scalar_mark_slow(loader *l, size_t offset, bool *is_source);
static inline ml_mark scalar_mark(loader *l, size_t offset, bool *is_source) {
    const yaml_event_t *ev = &l->ev;
    /* The start of a plain one-line scalar (most asks: a buffer's name, an expression) is its
     * mark: value_is_source's answer without its call; inline, the rest is not (a call per
     * step's part was 3 M instructions of 100 k training steps). */
    if (offset == 0 && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        ev->start_mark.line == ev->end_mark.line) {
        *is_source = true;
        return ld_mark(l);
    }
    return scalar_mark_slow(l, offset, is_source);
}

static ml_mark scalar_mark_slow(loader *l, size_t offset, bool *is_source) {
    const yaml_event_t *ev = &l->ev;
    yaml_scalar_style_t st = ev->data.scalar.style;
    /* Most scalars need no walk (value_is_source): every view takes its mark here, and the
     * walk's cursor over the input cost 8% of a million-step load. */
    size_t before;
    *is_source = value_is_source(l, offset, &before);
    if (!*is_source)
        return scalar_walk(l, offset);
    bool quoted = st == YAML_DOUBLE_QUOTED_SCALAR_STYLE || st == YAML_SINGLE_QUOTED_SCALAR_STYLE;
    ml_mark m = ld_mark(l);
    return (ml_mark){m.line, m.col + (uint32_t)(before + quoted)};
}

ml_mark ld_scalar_mark(loader *l, size_t offset) {
    bool is_source;
    return scalar_mark(l, offset, &is_source);
}

bool ld_text_ascii(const loader *l, ml_mark *start) {
    const yaml_event_t *ev = &l->ev;
    bool quoted;
    if (!one_line(ev, &quoted))
        return false;
    const uint8_t *v = ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    uint8_t any = 0;
    for (size_t j = 0; j < len; j++)
        any |= v[j];
    /* ASCII: a character a byte, so the source spans the value and its quotes exactly when
     * nothing was an escape or '' (value_is_source). */
    if (any & 0x80 || (quoted && ev->end_mark.index - ev->start_mark.index != len + 2))
        return false;
    ml_mark m = ld_mark(l);
    *start = (ml_mark){m.line, m.col + quoted};
    return true;
}

bool ld_text_linear(const loader *l) {
    size_t at;
    return value_is_source(l, 0, &at);
}

/* Where the text of the current scalar starts: after a quoted scalar's opening quote (its mark),
 * on a block scalar's first content line (not at its indicator, the mark). */
ml_mark ld_text_mark(loader *l) { return ld_scalar_mark(l, 0); }

static __attribute__((noinline)) void at_slow(loader *l, const sched_step *st, sched_at_part part) {
    bool is_source;
    ml_mark text = scalar_mark(l, 0, &is_source);
    size_t cap = l->ats.cap;
    sched_at *a = LD_PUSH(&l->ats, sched_at);   /* written whole below */
    /* A part for most steps: gen's million training steps have 850 k parts, 17 MB, a fault per
     * page one by one; its pages come a megabyte at a time instead (pages.h), as the steps' do. */
    if (l->ats.cap != cap)
        l->ats_populated = l->ats.n;
    if (l->ats.n >= l->ats_populated) {
        size_t ahead = ((size_t)1 << 20) / sizeof(sched_at), end = l->ats.n + ahead;
        if (end > l->ats.cap)
            end = l->ats.cap;
        ml_prefault(a + 1, (sched_at *)l->ats.items + end);
        l->ats_populated = end;
    }
    *a = (sched_at){st->mark, text, (uint16_t)part, is_source};
}

/* Most parts are plain one-line scalars (`bytes: P`, `event: grads`) into a populated slot: those
 * are written here without a frame (ld_at's, for its slow ways, was a third of its cost). */
void ld_at(loader *l, const sched_step *st, sched_at_part part) {
    const yaml_event_t *ev = &l->ev;
    if (ev->type != YAML_SCALAR_EVENT)
        return;   /* not a scalar: its reader reports that, at its own mark */
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && ev->start_mark.line == ev->end_mark.line &&
        l->ats.n + 1 < l->ats_populated) {   /* ats_populated <= ats.cap: there is room */
        sched_at *a = (sched_at *)l->ats.items + l->ats.n++;
        *a = (sched_at){st->mark, ld_mark(l), (uint16_t)part, true};   /* as scalar_mark's */
        return;
    }
    at_slow(l, st, part);
}

int ld_expr(loader *l, ld_ctx ctx, const char *what, expr **out) {
    if (ld_want_scalar(l, what))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    return ld_expr_at(l, ctx, text, len, 0, out);
}
