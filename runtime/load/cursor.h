/* SPDX-License-Identifier: MIT */
/* cursor.h — the bottom of the loader: the loader's state, libyaml's event cursor, marks, the
 * first-error report, string tables and fixed-key map iteration (cursor.c).
 *
 * The loader pulls libyaml events one at a time and builds the IR directly into the schedule's
 * arena: no document tree, so memory stays proportional to the IR and every node keeps the mark
 * of the event it came from. Convention: a parse function starts with l->ev the first event of
 * the value it reads and returns with l->ev the last event it consumed (the scalar, or the
 * collection's end). The first error stops the load (it is reported, everything is freed). */
#ifndef MEMLIFE_LOAD_CURSOR_H
#define MEMLIFE_LOAD_CURSOR_H

#include <string.h>
#include <yaml.h>

#include "ir/sched.h"

/* Open-addressing string table: name -> value (a symbol, a let index, a cached expression).
 * Hash, length, key and value in one 24-byte entry: a hit reads one entry and the key. Measured
 * against 8-byte slots (hash, entry index) over entries in put order, on gen's million training
 * steps (200 k buffers, 524 k slots): as many D1 misses in ld_hash_find (cachegrind: 535 k vs
 * 531 k), 0.09% more instructions, the loader no faster; the split was not kept. */
typedef struct {
    const char *key;      /* arena copy, not NUL-terminated as far as the table cares */
    uint32_t len, hash;
    uintptr_t val;
} ld_entry;
/* A direct-mapped memo in front of the table: the slot of the last name found or put under each
 * (length, first byte, last byte) index, checked before hashing. A step names what the steps
 * around it name (`record: {event: grads}` then `wait: {event: grads}`), and a schedule's
 * expressions are a few texts ("P", "A / world", "40"): one probe and one compare find them, no
 * hash over the name. It replaced four recent slots compared in turn, which cost 110
 * instructions a lookup on gen's training steps (callgrind, 100 k steps: 24.2 M in
 * ld_hash_find for 220 k lookups). Earlier rounds measured no faster and did not keep: a
 * fingerprint of each recent name compared for all four without a branch each, a control byte
 * per slot probed before the entry, hashing first without the recent slots, 8-byte slots. */
#define LD_MEMO 64
/* The memo index of a name: its length and its first and last bytes, which tell apart the names
 * that steps near each other use (p0, act0, gr0, sh0; p0 and p1; alloc, free, compute). The
 * weights were picked so that the step keys, gen's names (buffers, events, expressions) and
 * short names like x, y, s1, e1 mostly differ: 2 pairs of the 25 step keys share an index
 * (broadcast and reduce, all_to_all and expect_error), where 13 * len + first + 7 * last gave
 * five groups. A shared index costs the slower lookup, never a wrong answer. */
static inline uint32_t ld_memo_index(const char *key, size_t len) {
    if (!len)
        return 0;
    return ((uint32_t)len * 3u + (uint8_t)key[0] + (uint8_t)key[len - 1] * 9u) & (LD_MEMO - 1);
}
typedef struct {
    ld_entry *e;
    uint32_t cap, n;
    uint32_t memo[LD_MEMO];   /* slot + 1; 0: none */
} ld_hash;

/* Which names an expression may use. */
typedef enum {
    CTX_CONST,            /* no names: `world:` */
    CTX_LET,              /* world, rank and the lets defined so far */
    CTX_PLAIN,            /* world, rank, every let */
    CTX_INDEX,            /* world, rank, every let and i (data patterns, closed forms) */
    CTX_COUNT_
} ld_ctx;

#define LD_MAX_KEYS 16
#define LD_STEP_FORMS 32   /* load_steps.c: its rows, for step_key_lens */

typedef struct {
    /* The current event; YAML_NO_EVENT: none. First: its address is the loader's, so ld_next keeps
     * one register across its calls, not two (the second's save and restore, and the stack
     * alignment that came with it, were 6 instructions an event). */
    yaml_event_t ev;
    yaml_parser_t yp;
    const char *data;     /* the input, for the position of reader errors */
    size_t len;
    const char *file;
    sched *s;
    ml_arena *a;
    ml_diags *d;
    ml_diags_mark diags_at;           /* d before this file's load (ld_flow_syntax_error) */
    sched_load_limits lim;
    size_t yaml_depth, yaml_max_depth, step_depth;
    ld_hash syms[SYM_KIND_COUNT];
    ld_hash lets;                     /* let name -> index */
    ld_hash mesh_dims, comms;         /* mesh dimension / communicator name -> index */
    ml_vec mesh_v, comm_v;            /* of sched_mesh_dim, sched_comm, while loading */
    ml_vec let_v;                     /* of sched_let, while loading */
    ld_hash cache[CTX_COUNT_];        /* expression text -> expr, per context (not CTX_LET) */
    ml_vec buf_allocated;             /* of uint8_t per buffer symbol: some alloc creates it */
    ml_vec *owned;                    /* of void*: step arrays (malloc'd, freed by sched_free) */
    ml_vec scratch;                   /* of ld_named, reused by list parsers that do not nest */
    ml_vec views;                     /* of sched_view, reused by ld_views (views do not nest) */
    ml_mark end;                      /* where the input ends: marks past it are clamped to it */
    size_t cursor_index, cursor_byte; /* ld_index_byte's place: a yaml index and its byte */
    ml_vec indices;                   /* of ld_index: the repeat indices in scope, outermost first */
    ml_vec ats;                       /* of sched_at: the steps' parts, in source order */
    ml_vec times;                     /* of sched_time: the steps' `time_us:`, in source order */
    size_t ats_populated;             /* ats' slots below this have their pages (pages.h) */
    uint32_t step_memo[LD_MEMO];      /* load_steps.c: a step key's length << 16 | its row + 1 */
    /* load_steps.c: the lengths of each step form's keys (ld_schema.lens), found at the form's
     * first step; bit r of step_key_lens_set: row r's are. */
    uint16_t step_key_lens[LD_STEP_FORMS][LD_MAX_KEYS];
    uint32_t step_key_lens_set;
} loader;

typedef struct {
    uint32_t sym;
    ml_mark mark;
} ld_named;

/* A repeat index in scope: its name and where it is defined (for a shadowing error). */
typedef struct {
    const char *name;
    size_t len;
    ml_mark mark;
} ld_index;

/* Map iteration with a fixed key set: unknown and duplicate keys are errors. */
typedef struct {
    const char *what;                 /* "alloc", for messages */
    const char *const *keys;
    uint32_t n;
    /* NULL, or strlen of each key: with them a key compares as its length and a few words
     * (ld_same_bytes), not a walk to its NUL (the steps' mappings, 2 of every 10 events). */
    const uint16_t *lens;
} ld_schema;
#define LD_SCHEMA(what, keys) {what, keys, (uint32_t)ML_ARRAY_LEN(keys), NULL}
typedef struct {
    uint32_t seen;                    /* bit k: keys[k] was given */
    ml_mark key[LD_MAX_KEYS];         /* where each given key is */
    ml_mark map;                      /* the mapping's start */
} ld_keys;
typedef int (*ld_value_fn)(loader *l, int key, void *obj);

#define LD_HAS(k, i) (((k)->seen >> (i)) & 1u)

static inline uint32_t ld_load32(const char *p) {
    uint32_t w;
    memcpy(&w, p, 4);   /* one unaligned load */
    return w;
}

/* a[0..len) == b[0..len). Names and keys are a few bytes: inline compares beat memcmp's call and
 * dispatch. From 4 to 8 bytes, two 4-byte words that overlap cover them, read inside them;
 * shorter and longer ones go byte by byte. The byte loop was half of ld_hash_find's
 * instructions (callgrind, 100 k training steps). */
static inline bool ld_same_bytes(const char *a, const char *b, size_t len) {
    if (len - 4 <= 4)   /* 4 <= len <= 8 */
        return ((ld_load32(a) ^ ld_load32(b)) | (ld_load32(a + len - 4) ^ ld_load32(b + len - 4))) == 0;
    for (size_t k = 0; k < len; k++)
        if (a[k] != b[k])
            return false;
    return true;
}

/* ml_vec_push without its call and memset where v has room (the slot is then not zeroed): for
 * the vectors that grow by one a step or a view, where that call was 40 instructions and a
 * store of the item's known size a few. */
#define LD_PUSH(v, type) ((v)->n < (v)->cap ? (type *)(v)->items + (v)->n++ : (type *)ml_vec_push(v))

/* String tables. */
/* The slot index of key, or UINT32_MAX; *val (when val is not NULL) set when found. The memo's
 * probe is inline: a call per lookup was a fifth of ld_hash_find's instructions. */
uint32_t ld_hash_probe(ld_hash *h, const char *key, size_t len, uintptr_t *val);   /* the table */
/* The memo alone: key's slot when the memo holds it, else UINT32_MAX (key may still be there). */
static inline uint32_t ld_hash_memo(const ld_hash *h, const char *key, size_t len, uintptr_t *val) {
    uint32_t m = h->memo[ld_memo_index(key, len)];
    if (m) {   /* a slot + 1: the table has one */
        const ld_entry *e = &h->e[m - 1];
        if (e->len == len && ld_same_bytes(e->key, key, len)) {
            if (val)
                *val = e->val;
            return m - 1;
        }
    }
    return UINT32_MAX;
}
static inline uint32_t ld_hash_find(ld_hash *h, const char *key, size_t len, uintptr_t *val) {
    uint32_t k = ld_hash_memo(h, key, len, val);
    return k != UINT32_MAX ? k : ld_hash_probe(h, key, len, val);
}
void ld_hash_put(ld_hash *h, const char *key, size_t len, uintptr_t val);
void ld_hash_free(ld_hash *h);
bool ld_key_is(const char *key, const char *text, size_t len);
/* key (NUL-terminated) is exactly text[0..len), where text may be part of a scalar (a name in an
 * expression); a NUL inside text never matches. */
static inline bool ld_key_eq(const char *key, const char *text, size_t len) {
    for (size_t k = 0; k < len; k++)
        if (key[k] != text[k] || !key[k])
            return false;
    return key[len] == '\0';
}

/* Events and marks. */
int ld_next(loader *l);
void ld_release_event(loader *l);   /* frees what the current event owns */
/* After an error while the scanner is inside a flow collection: whether the rest of the file is
 * not YAML, the error then an artifact of it (an unclosed `{` makes the lines after it part of
 * its last scalar, `count: 8 - free`). When it is not, the load's diagnostics give way to the
 * YAML error (the missing `}`) and it returns 1; else 0, nothing changed. */
int ld_flow_syntax_error(loader *l);
/* A libyaml mark as line:col. At the end of a file without a final newline, libyaml's mark is on
 * the line after the last: it points at the end of the last line instead, where the text is. */
static inline ml_mark ld_mark_in_input(const loader *l, yaml_mark_t m) {
    ml_mark at = {(uint32_t)m.line + 1, (uint32_t)m.column + 1};
    return at.line > l->end.line ? l->end : at;
}
/* The current event's start. Inline, as are the event tests below: every event asks them, and
 * their calls were 22 M of the 172 M instructions the loader added to libyaml's own at 100 k
 * training steps (callgrind). */
static inline ml_mark ld_mark(const loader *l) { return ld_mark_in_input(l, l->ev.start_mark); }
size_t ld_break_len(const uint8_t *p, size_t k, size_t end);   /* a line break at p[k]: its bytes */
size_t ld_index_byte(loader *l, size_t index);                 /* a yaml mark's index -> byte */
ml_mark ld_offset_mark(const loader *l, size_t offset);         /* a byte offset -> line:col */
int ld_fail(loader *l, ml_mark m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "unknown WHAT 'TEXT' [in WHERE]: expected one of A, B, C" (NULL names are skipped): every
 * enumerated value's error lists the valid ones. */
int ld_fail_choice(loader *l, ml_mark m, const char *what, const char *text, size_t len,
                   const char *const *names, size_t n, const char *where);
static inline bool ld_is(const loader *l, yaml_event_type_t t) { return l->ev.type == t; }
static inline const char *ld_text(const loader *l, size_t *len) {
    *len = l->ev.data.scalar.length;
    return (const char *)l->ev.data.scalar.value;
}
int ld_not_scalar(loader *l, const char *what);                   /* "'WHAT' must be a scalar" */
int ld_not_a(loader *l, yaml_event_type_t t, const char *what);   /* "... must be a mapping" */
static inline int ld_want_scalar(loader *l, const char *what) {
    return ld_is(l, YAML_SCALAR_EVENT) ? 0 : ld_not_scalar(l, what);
}
static inline int ld_want(loader *l, yaml_event_type_t t, const char *what) {
    return ld_is(l, t) ? 0 : ld_not_a(l, t, what);
}
int ld_map(loader *l, const ld_schema *sc, ld_value_fn fn, void *obj, ld_keys *k);

#endif
