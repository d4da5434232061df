/* SPDX-License-Identifier: MIT */
/* load_int.h — internals shared by the loader's files (load.c: events, map iteration, top level;
 * load_names.c: names, symbols, expressions; load_steps.c: steps; load_data.c: views, data
 * patterns, operands, expectations).
 *
 * The loader pulls libyaml events one at a time and builds the IR directly into the schedule's
 * arena: no document tree, so memory stays proportional to the IR and every node keeps the mark
 * of the event it came from. Convention: a parse function starts with l->ev the first event of
 * the value it reads and returns with l->ev the last event it consumed (the scalar, or the
 * collection's end). The first error stops the load (it is reported, everything is freed). */
#ifndef MEMLIFE_LOAD_INT_H
#define MEMLIFE_LOAD_INT_H

#include <yaml.h>

#include "ir/sched.h"

/* Open-addressing string table: name -> value (a symbol, a let index, a cached expression). */
typedef struct {
    const char *key;      /* arena copy, not NUL-terminated as far as the table cares */
    uint32_t len, hash;
    uintptr_t val;
} ld_entry;
typedef struct {
    ld_entry *e;
    uint32_t cap, n;
} ld_hash;

/* Which names an expression may use. */
typedef enum {
    CTX_CONST,            /* no names: `world:` */
    CTX_LET,              /* world, rank and the lets defined so far */
    CTX_PLAIN,            /* world, rank, every let */
    CTX_INDEX,            /* world, rank, every let and i (data patterns, closed forms) */
    CTX_COUNT_
} ld_ctx;

typedef struct {
    yaml_parser_t yp;
    yaml_event_t ev;
    bool have_ev;
    const char *data;     /* the input, for the position of reader errors */
    size_t len;
    const char *file;
    sched *s;
    ml_arena *a;
    ml_diags *d;
    sched_load_limits lim;
    size_t yaml_depth, yaml_max_depth, step_depth;
    ld_hash syms[SYM_KIND_COUNT];
    ld_hash lets;                     /* let name -> index */
    ml_vec let_v;                     /* of sched_let, while loading */
    ld_hash cache[CTX_COUNT_];        /* expression text -> expr, per context (not CTX_LET) */
    ml_vec buf_allocated;             /* of uint8_t per buffer symbol: some alloc creates it */
    ml_vec *owned;                    /* of void*: step arrays (malloc'd, freed by sched_free) */
    ml_vec scratch;                   /* of ld_named, reused by list parsers that do not nest */
    ml_mark end;                      /* where the input ends: marks past it are clamped to it */
    size_t cursor_index, cursor_byte; /* ld_index_byte's place: a yaml index and its byte */
} loader;

typedef struct {
    uint32_t sym;
    ml_mark mark;
} ld_named;

/* Map iteration with a fixed key set: unknown and duplicate keys are errors. */
typedef struct {
    const char *what;                 /* "alloc", for messages */
    const char *const *keys;
    uint32_t n;
} ld_schema;
#define LD_SCHEMA(what, keys) {what, keys, (uint32_t)ML_ARRAY_LEN(keys)}
#define LD_MAX_KEYS 16
typedef struct {
    uint32_t seen;                    /* bit k: keys[k] was given */
    ml_mark key[LD_MAX_KEYS];         /* where each given key is */
    ml_mark map;                      /* the mapping's start */
} ld_keys;
typedef int (*ld_value_fn)(loader *l, int key, void *obj);

#define LD_HAS(k, i) (((k)->seen >> (i)) & 1u)

/* load.c */
uint32_t ld_hash_find(const ld_hash *h, const char *key, size_t len, uintptr_t *val);
void ld_hash_put(ld_hash *h, const char *key, size_t len, uintptr_t val);
bool ld_key_is(const char *key, const char *text, size_t len);
int ld_next(loader *l);
ml_mark ld_mark(const loader *l);
size_t ld_break_len(const uint8_t *p, size_t k, size_t end);   /* a line break at p[k]: its bytes */
size_t ld_index_byte(loader *l, size_t index);                 /* a yaml mark's index -> byte */
int ld_fail(loader *l, ml_mark m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool ld_is(const loader *l, yaml_event_type_t t);
const char *ld_text(const loader *l, size_t *len);
int ld_want_scalar(loader *l, const char *what);
int ld_want(loader *l, yaml_event_type_t t, const char *what);
int ld_map(loader *l, const ld_schema *sc, ld_value_fn fn, void *obj, ld_keys *k);

/* load_names.c */
extern const char *const ld_sym_kind_names[SYM_KIND_COUNT];   /* "buffer", "stream", ... */
ml_mark ld_text_mark(loader *l);         /* where the current scalar's text starts */
/* Where byte `offset` of the current scalar's value is in the source (line breaks, folds, quotes
 * and escapes taken into account). */
ml_mark ld_scalar_mark(loader *l, size_t offset);
int ld_expr(loader *l, ld_ctx ctx, const char *what, expr **out);
/* text is bytes at..at+len of the current scalar's value (errors are marked from there). */
int ld_expr_at(loader *l, ld_ctx ctx, const char *text, size_t len, size_t at, expr **out);
int ld_name(loader *l, const char *what, const char **out);
int ld_sym(loader *l, sched_sym_kind kind, const char *what, uint32_t *out);
int ld_sym_declared(loader *l, sched_sym_kind kind, const char *what, uint32_t *out);
int ld_redop(loader *l, ml_redop *out);
int ld_dtype(loader *l, ml_dtype *out);
int ld_own(loader *l, void *p);
int ld_check_name(loader *l, const char *text, size_t len, ml_mark m, const char *kind, bool ident);
int ld_intern(loader *l, sched_sym_kind kind, const char *text, size_t len, ml_mark m, uint32_t *out);

/* load_data.c */
int ld_view(loader *l, const char *what, sched_view *v);
int ld_views(loader *l, const char *what, sched_view **out, uint32_t *n);
int ld_init_value(loader *l, sched_init *init);           /* `init:` of alloc */
extern const char *const ld_init_keys[];   /* const expr copy random identity pattern */
#define LD_INIT_KEY_COUNT 6
int ld_init_key(loader *l, int which, sched_init *init, ml_mark key_mark);
int ld_operand(loader *l, sched_operand *o);
int ld_expects(loader *l, sched_expect **out, uint32_t *n);

/* load_steps.c */
int ld_steps(loader *l, const char *what, sched_step **out, uint32_t *n);
int ld_step(loader *l, sched_step *st);

#endif
