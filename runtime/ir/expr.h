/* SPDX-License-Identifier: MIT */
/* expr.h — integer expressions of the schedule language.
 *
 * Grammar (lowest to highest precedence):
 *   expr   := or
 *   or     := and ('||' and)*
 *   and    := cmp ('&&' cmp)*
 *   cmp    := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
 *   sum    := term (('+'|'-') term)*
 *   term   := unary (('*'|'/'|'%') unary)*
 *   unary  := ('-'|'!') unary | atom
 *   atom   := NUMBER UNIT? | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
 *   UNIT   := B | KiB | MiB | GiB | TiB | KB | MB | GB | TB   (binary units are powers of 1024,
 *             KB/MB/GB/TB powers of 1000; a space between number and unit is allowed)
 *   functions: ceil_div(a, b), min(a, b, ...), max(a, b, ...), align_up(a, b)
 * Values are int64. Overflow of 64 bits, division or modulo by zero are errors, never a wrap.
 * '/' and '%' truncate toward zero (C semantics). Comparisons and logic give 0 or 1.
 *
 * Names are resolved when parsing, through a resolver that maps a name to a slot index; evaluation
 * reads slots from an array. Fixed slots: world, rank, i (the element index in data patterns and
 * closed-form checks); let-names follow in the order they are defined. */
#ifndef MEMLIFE_EXPR_H
#define MEMLIFE_EXPR_H

#include "base/util.h"

enum {
    EXPR_SLOT_WORLD = 0,
    EXPR_SLOT_RANK = 1,
    EXPR_SLOT_INDEX = 2,   /* 'i' */
    EXPR_SLOT_FIRST_LET = 3
};

typedef struct expr expr;

typedef struct {
    size_t offset;    /* byte offset into the expression text where the problem starts */
    char msg[200];    /* lowercase, subject quoted: "undefined name 'q'" */
} expr_error;

/* Returns the slot of a name (>= 0), or -1 when it is not defined here. */
typedef int (*expr_resolver)(void *ctx, const char *name, size_t len);

/* Parses text[0..len). Nodes live in the arena. On error returns NULL and fills err. */
expr *expr_parse(ml_arena *a, const char *text, size_t len, expr_resolver resolve, void *ctx,
                 expr_error *err);

/* Evaluates with slots[k] the value of slot k. Returns 0, or -1 with err (overflow, division by
 * zero, negative size where the caller asked none). err->offset points into the parsed text. */
int expr_eval(const expr *e, const int64_t *slots, int64_t *out, expr_error *err);

/* True when the value depends on slot (directly or through no other slot: lets are already
 * values by the time an expression is evaluated). Used to find rank-independent schedules. */
bool expr_uses_slot(const expr *e, int slot);

/* True when the text writes a number with a unit ("64MiB", "2 * 1 GiB"): the value is a size,
 * which reports print as one. A let that is a size only through other lets (`W: L * P`) is not
 * seen. */
bool expr_has_unit(const expr *e);

/* True and *value set when the expression is a constant (no names). */
bool expr_const_value(const expr *e, int64_t *value);

/* True, with its two sides, when the outermost operation of e is '/' (`1/world`, `(2*M)/world`):
 * a scale factor is then their exact fraction, not the truncated quotient. */
bool expr_split_div(const expr *e, const expr **num, const expr **den);

/* The source text the expression was parsed from (arena copy, NUL-terminated). */
const char *expr_text(const expr *e);

/* Unit names and factors, for help text and the tests. */
typedef struct {
    const char *name;
    int64_t factor;
} expr_unit;
extern const expr_unit expr_units[];
extern const size_t expr_unit_count;

/* True for names that may not be used as let-names (units, fixed slots, function names). */
bool expr_reserved_name(const char *name, size_t len);

#endif
