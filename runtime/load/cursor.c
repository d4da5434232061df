/* SPDX-License-Identifier: MIT */
/* cursor.c — the bottom of the loader: libyaml's event cursor (one event at a time, aliases,
 * anchors and nesting refused as they stream by), marks in the source, the first-error report,
 * string tables, and the map iteration with a fixed key set that every mapping reader uses.
 * Nothing here knows a schedule key: the files above (names, data, steps, load.c) do. */
#include "load/cursor.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- String tables ---------------------------------------------------------------------------- */

static uint32_t hash_bytes(const char *s, size_t len) {
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (size_t k = 0; k < len; k++)
        h = (h ^ (uint8_t)s[k]) * 16777619u;
    return h | 1u;              /* 0 marks an empty slot */
}

/* The table's lookup, after the memo (ld_hash_find) missed. */
uint32_t ld_hash_probe(ld_hash *h, const char *key, size_t len, uintptr_t *val) {
    if (!h->cap)
        return UINT32_MAX;
    uint32_t *memo = &h->memo[ld_memo_index(key, len)];
    uint32_t hv = hash_bytes(key, len), mask = h->cap - 1;
    for (uint32_t k = hv & mask;; k = (k + 1) & mask) {
        const ld_entry *e = &h->e[k];
        if (!e->hash)
            return UINT32_MAX;
        if (e->hash == hv && e->len == len && ld_same_bytes(e->key, key, len)) {
            if (val)
                *val = e->val;
            *memo = k + 1;
            return k;
        }
    }
}

static uint32_t hash_insert(ld_hash *h, const ld_entry *in) {
    uint32_t mask = h->cap - 1;
    uint32_t k = in->hash & mask;
    while (h->e[k].hash)
        k = (k + 1) & mask;
    h->e[k] = *in;
    return k;
}

/* key must outlive the table (an arena copy). Keys are not replaced: callers find first. */
void ld_hash_put(ld_hash *h, const char *key, size_t len, uintptr_t val) {
    if ((h->n + 1) * 2 > h->cap) {
        ld_hash bigger = {.cap = h->cap ? h->cap * 2 : 64};
        bigger.e = ml_xcalloc(bigger.cap, sizeof(ld_entry));
        for (uint32_t k = 0; k < h->cap; k++)
            if (h->e[k].hash)
                hash_insert(&bigger, &h->e[k]);
        bigger.n = h->n;   /* and an empty memo: every slot moved */
        free(h->e);
        *h = bigger;
    }
    ld_entry e = {key, (uint32_t)len, hash_bytes(key, len), val};
    h->memo[ld_memo_index(key, len)] = hash_insert(h, &e) + 1;
    h->n++;
}

void ld_hash_free(ld_hash *h) {
    free(h->e);
    *h = (ld_hash){0};
}

/* ---- Enumerated values ---------------------------------------------------------------------- */

int ld_fail_choice(loader *l, ml_mark m, const char *what, const char *text, size_t len,
                   const char *const *names, size_t n, const char *where) {
    char list[400];
    size_t at = 0;
    for (size_t k = 0; k < n && at < sizeof list; k++)
        if (names[k])
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", names[k]);
    return ld_fail(l, m, "unknown %s '%.*s'%s%s: expected one of %s", what, len > 64 ? 64 : (int)len, text,
                   where ? " in " : "", where ? where : "", list);
}

/* ---- Events ----------------------------------------------------------------------------------- */


int ld_fail(loader *l, ml_mark m, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ml_diag_add(l->d, ML_DIAG_ERROR, l->file, m, -1, NULL, "%s", text);
    return -1;
}

/* The length of the line break at p[k] (before end), 0 when there is none. Lines are counted as
 * libyaml counts them: CR LF, CR, LF, NEL, LS, PS. */
size_t ld_break_len(const uint8_t *p, size_t k, size_t end) {
    if (k >= end)
        return 0;
    if (p[k] == '\r' && k + 1 < end && p[k + 1] == '\n')
        return 2;
    if (p[k] == '\r' || p[k] == '\n')
        return 1;
    if (p[k] == 0xC2 && k + 1 < end && p[k + 1] == 0x85)
        return 2;
    if (p[k] == 0xE2 && k + 2 < end && p[k + 1] == 0x80 && (p[k + 2] == 0xA8 || p[k + 2] == 0xA9))
        return 3;
    return 0;
}

/* Reader errors (bad UTF-8, control characters) carry a byte offset, not a mark. Columns are
 * counted in characters. */
ml_mark ld_offset_mark(const loader *l, size_t offset) {
    ml_mark m = {1, 1};
    const uint8_t *p = (const uint8_t *)l->data;
    size_t end = offset < l->len ? offset : l->len;
    for (size_t k = 0; k < end; k++) {
        size_t brk = ld_break_len(p, k, end);
        if (brk) {
            m.line++;
            m.col = 1;
            k += brk - 1;
        } else if ((p[k] & 0xC0) != 0x80) {
            m.col++;
        }
    }
    return m;
}

/* libyaml counts a mark's index in characters after any byte order mark (CR LF counts 2), not
 * in bytes. Marks are asked for in input order, so one forward cursor converts them all: O(input)
 * for the whole load. */
size_t ld_index_byte(loader *l, size_t index) {
    const uint8_t *p = (const uint8_t *)l->data;
    if (index < l->cursor_index || (!l->cursor_index && !l->cursor_byte)) {
        bool bom = l->len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF;
        l->cursor_index = 0;
        l->cursor_byte = bom ? 3 : 0;
    }
    while (l->cursor_index < index && l->cursor_byte < l->len) {
        l->cursor_byte++;
        while (l->cursor_byte < l->len && (p[l->cursor_byte] & 0xC0) == 0x80)
            l->cursor_byte++;
        l->cursor_index++;
    }
    return l->cursor_byte;
}


static int yaml_error(loader *l) {
    const yaml_parser_t *p = &l->yp;
    if (p->error == YAML_MEMORY_ERROR)
        return ld_fail(l, (ml_mark){1, 1}, "out of memory while parsing yaml");
    const char *problem = p->problem ? p->problem : "invalid yaml";
    char value[16] = "";
    if (p->error == YAML_READER_ERROR && p->problem_value != -1)
        snprintf(value, sizeof value, " #%02X", (unsigned)p->problem_value);
    ml_mark m = p->error == YAML_READER_ERROR ? ld_offset_mark(l, p->problem_offset)
                                              : ld_mark_in_input(l, p->problem_mark);
    if (p->context)
        return ld_fail(l, m, "%s%s (%s)", problem, value, p->context);
    return ld_fail(l, m, "%s%s", problem, value);
}

/* Frees what the current event owns, as yaml_event_delete does (libyaml allocates with malloc
 * and frees with free), without the rest of that call: it then zeroes the whole event, 104 bytes
 * by `rep stos`, slow to start on these CPUs, although yaml_parser_parse zeroes the event again
 * before it writes the next. Under perf that call was 493 of the 8199 samples of loading gen's
 * million training steps, near as many as the loop's own (530). Events that own a list (the
 * document start's directives) or are refused (alias) go through yaml_event_delete as before.
 *
 * Types are told apart by a scalar test and then bit masks, not a switch or an if chain that the
 * compiler turns into one: perf put a quarter of ld_next's samples on the jump table's indirect
 * jumps, which mispredict on the mix of types. A collection start's anchor and tag are read
 * through mapping_start for both kinds: they open both structs of the union (asserted below). */
#define EV_BIT(t) (1u << (t))
#define EV_STARTS (EV_BIT(YAML_MAPPING_START_EVENT) | EV_BIT(YAML_SEQUENCE_START_EVENT))
#define EV_ENDS (EV_BIT(YAML_MAPPING_END_EVENT) | EV_BIT(YAML_SEQUENCE_END_EVENT))
#define EV_DELETE (EV_BIT(YAML_DOCUMENT_START_EVENT) | EV_BIT(YAML_ALIAS_EVENT))
_Static_assert(offsetof(yaml_event_t, data.mapping_start.anchor) ==
                   offsetof(yaml_event_t, data.sequence_start.anchor) &&
               offsetof(yaml_event_t, data.mapping_start.tag) == offsetof(yaml_event_t, data.sequence_start.tag),
               "a collection start's anchor and tag are read through mapping_start");

/* A scalar's tag and anchor are mostly NULL: one test for both, no call. */
static inline void release_event(yaml_event_t *ev) {
    if (ev->type == YAML_SCALAR_EVENT) {
        free(ev->data.scalar.value);
        if ((uintptr_t)ev->data.scalar.tag | (uintptr_t)ev->data.scalar.anchor) {
            free(ev->data.scalar.tag);
            free(ev->data.scalar.anchor);
        }
    } else if (EV_BIT(ev->type) & EV_STARTS) {
        if ((uintptr_t)ev->data.mapping_start.tag | (uintptr_t)ev->data.mapping_start.anchor) {
            free(ev->data.mapping_start.tag);
            free(ev->data.mapping_start.anchor);
        }
    } else if (EV_BIT(ev->type) & EV_DELETE) {
        yaml_event_delete(ev);
    }   /* the others own nothing, YAML_NO_EVENT included (before the first, after a failed parse) */
}

static int anchor_refused(loader *l) { return ld_fail(l, ld_mark(l), "yaml anchors are not supported"); }

/* Everything but a plain scalar's arrival, out of line: with its error paths in ld_next the
 * compiler saved three registers and a stack frame on every event (callgrind: ld_next was 42
 * instructions an event at 100 k training steps). A tail call from ld_next. */
static __attribute__((noinline)) int next_checked(loader *l) {
    const yaml_event_t *ev = &l->ev;
    if (ev->type == YAML_SCALAR_EVENT)   /* with an anchor */
        return anchor_refused(l);
    uint32_t bit = EV_BIT(ev->type);
    if (bit & EV_ENDS) {
        l->yaml_depth--;
        return 0;
    }
    if (bit & EV_STARTS) {
        if (++l->yaml_depth > l->yaml_max_depth)
            return ld_fail(l, ld_mark(l), "nesting deeper than %zu levels", l->lim.max_depth);
        return ev->data.mapping_start.anchor ? anchor_refused(l) : 0;
    }
    if (ev->type == YAML_ALIAS_EVENT)
        return ld_fail(l, ld_mark(l), "yaml aliases are not supported");
    return 0;
}

static __attribute__((noinline)) int parse_failed(loader *l) { return yaml_error(l); }

/* Advances to the next event. Aliases and anchors are refused here, once for the whole file, and
 * collection nesting is bounded before anything recurses on it. The current event is released
 * first: yaml_parser_parse zeroes the event before anything else, so after a failed parse (and
 * before the first) its type is YAML_NO_EVENT, which owns nothing. */
int ld_next(loader *l) {
    yaml_event_t *ev = &l->ev;
    release_event(ev);
    if (!yaml_parser_parse(&l->yp, ev))
        return parse_failed(l);
    if (ev->type == YAML_SCALAR_EVENT && !ev->data.scalar.anchor)   /* most events */
        return 0;
    return next_checked(l);
}

void ld_release_event(loader *l) { release_event(&l->ev); }

int ld_flow_syntax_error(loader *l) {
    if (l->yp.error != YAML_NO_ERROR || l->yp.flow_level == 0)
        return 0;
    /* the rest of the events, nothing built: linear, and at most the file */
    for (;;) {
        release_event(&l->ev);
        if (!yaml_parser_parse(&l->yp, &l->ev))
            break;
        if (l->ev.type == YAML_STREAM_END_EVENT)
            return 0;
    }
    ml_diags_rewind(l->d, l->diags_at);
    yaml_error(l);
    return 1;
}

int ld_not_scalar(loader *l, const char *what) {
    return ld_fail(l, ld_mark(l), "'%s' must be a scalar", what);
}

int ld_not_a(loader *l, yaml_event_type_t t, const char *what) {
    return ld_fail(l, ld_mark(l), "'%s' must be a %s", what,
                   t == YAML_MAPPING_START_EVENT ? "mapping" : t == YAML_SEQUENCE_START_EVENT ? "list" : "scalar");
}

bool ld_key_is(const char *key, const char *text, size_t len) { return ld_key_eq(key, text, len); }

int ld_map(loader *l, const ld_schema *sc, ld_value_fn fn, void *obj, ld_keys *k) {
    /* Only `seen` is cleared: a key's mark is read only where its bit says it was given, and
     * every step's mapping zeroed all 16 marks (140 bytes) for the two or three it has. */
    k->seen = 0;
    if (ld_want(l, YAML_MAPPING_START_EVENT, sc->what))
        return -1;
    const uint16_t *lens = sc->lens;
    k->map = ld_mark(l);
    uint32_t next = 0;   /* where the key search starts */
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_MAPPING_END_EVENT))
            return 0;
        if (!ld_is(l, YAML_SCALAR_EVENT))
            return ld_fail(l, ld_mark(l), "keys of '%s' must be scalars", sc->what);
        size_t len;
        const char *text = ld_text(l, &len);
        /* Mappings of one kind give their keys in one order (`{buf: .., bytes: ..}` on every
         * alloc): the search starts after the key before, so it mostly hits at once. Keys are
         * distinct, so where it starts does not change what it finds. */
        uint32_t key = next, tried = 0;
        while (tried < sc->n && !(lens ? lens[key] == len && ld_same_bytes(sc->keys[key], text, len)
                                       : ld_key_eq(sc->keys[key], text, len))) {
            key = key + 1 < sc->n ? key + 1 : 0;
            tried++;
        }
        if (tried == sc->n)
            return ld_fail_choice(l, ld_mark(l), "key", text, len, sc->keys, sc->n, sc->what);
        next = key + 1 < sc->n ? key + 1 : 0;
        if (LD_HAS(k, key))
            return ld_fail(l, ld_mark(l), "duplicate key '%s' in %s", sc->keys[key], sc->what);
        k->seen |= 1u << key;
        k->key[key] = ld_mark(l);
        if (ld_next(l) || fn(l, (int)key, obj))
            return -1;
    }
}

