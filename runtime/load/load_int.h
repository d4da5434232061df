/* SPDX-License-Identifier: MIT */
/* load_int.h — the loader's files above the cursor, bottom to top: load_names.c (names, symbols,
 * ops and dtypes, expressions), load_data.c (views, data patterns, operands, expectations),
 * load_steps.c (steps), load.c (the top level). A file calls only the files below it; mutual
 * recursion (steps inside repeat) stays inside one file. */
#ifndef MEMLIFE_LOAD_INT_H
#define MEMLIFE_LOAD_INT_H

#include "load/cursor.h"

/* load_names.c */
extern const char *const ld_sym_kind_names[SYM_KIND_COUNT];   /* "buffer", "stream", ... */
ml_mark ld_text_mark(loader *l);         /* where the current scalar's text starts */
/* Records that part `part` of st is the current scalar (sched_part_mark), at its text. */
void ld_at(loader *l, const sched_step *st, sched_at_part part);
/* Where byte `offset` of the current scalar's value is in the source (line breaks, folds, quotes
 * and escapes taken into account). */
ml_mark ld_scalar_mark(loader *l, size_t offset);
bool ld_text_linear(const loader *l);   /* the current scalar's value is its source, on one line */
/* ld_text_linear and ASCII: byte k of the value is then at column start->col + k of the line
 * (start: ld_text_mark), with no count of characters per mark asked. */
bool ld_text_ascii(const loader *l, ml_mark *start);
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

/* load_comms.c: `mesh:`, `comms:` and a collective's `comm:` (a declared name, else an error
 * that lists them); ld_comms_finish gives the schedule its table, the world first. */
int ld_mesh(loader *l);
int ld_comms(loader *l);
int ld_comm_ref(loader *l, uint16_t *out);
void ld_comms_finish(loader *l);

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

/* load_torch.c: the `torch:` top-level value (key: the key's mark) and the allocator steps. */
int ld_torch(loader *l, ml_mark key);
int ld_record_stream(loader *l, sched_step *st);
int ld_empty_cache(loader *l, sched_step *st);

#endif
