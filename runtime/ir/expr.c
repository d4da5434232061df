/* SPDX-License-Identifier: MIT */
/* expr.c — integer expressions: a recursive-descent parser over the grammar in expr.h, constant
 * folding, and a checked evaluator (every overflow and division by zero is an error).
 *
 * Hostile input: recursion is bounded by EXPR_MAX_DEPTH, so `((((...` or `!!!!...` of any length
 * fails with a message instead of exhausting the stack. */
#include "ir/expr.h"

#include <string.h>

#define EXPR_MAX_DEPTH 200
#define EXPR_MAX_ARGS 64
/* `a+a+...+a` nests to the left without recursing in the parser, but evaluation recurses. */
#define EXPR_MAX_HEIGHT 1000

typedef enum { EN_NUM, EN_SLOT, EN_NEG, EN_NOT, EN_BIN, EN_CALL } expr_node_kind;

typedef enum {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR
} expr_binop;

typedef enum { FN_CEIL_DIV, FN_MIN, FN_MAX, FN_ALIGN_UP } expr_fn;

struct expr {
    uint8_t kind;         /* expr_node_kind */
    uint8_t op;           /* expr_binop or expr_fn */
    uint16_t height;      /* longest path to a leaf: bounds evaluation's recursion */
    uint32_t offset;      /* where this node's operator or atom starts, for error messages */
    const char *text;     /* the whole source text, shared by every node of one parse */
    union {
        int64_t value;    /* EN_NUM */
        int slot;         /* EN_SLOT */
        expr *arg;        /* EN_NEG, EN_NOT */
        struct { expr *a, *b; } bin;
        struct { expr **args; uint32_t n; } call;
    } u;
};

const expr_unit expr_units[] = {
    {"B", 1},
    {"KiB", (int64_t)1 << 10},
    {"MiB", (int64_t)1 << 20},
    {"GiB", (int64_t)1 << 30},
    {"TiB", (int64_t)1 << 40},
    {"KB", 1000},
    {"MB", 1000000},
    {"GB", 1000000000},
    {"TB", 1000000000000},
};
const size_t expr_unit_count = ML_ARRAY_LEN(expr_units);

static const struct {
    const char *name;
    expr_fn fn;
    uint32_t min_args, max_args;
} functions[] = {
    {"ceil_div", FN_CEIL_DIV, 2, 2},
    {"min", FN_MIN, 1, EXPR_MAX_ARGS},
    {"max", FN_MAX, 1, EXPR_MAX_ARGS},
    {"align_up", FN_ALIGN_UP, 2, 2},
};

static const char *const fixed_names[] = {"world", "rank", "i"};

static const char *const binop_text[] = {"+", "-", "*", "/", "%", "==", "!=",
                                         "<", "<=", ">", ">=", "&&", "||"};

static bool word_is(const char *word, const char *s, size_t len) {
    return strncmp(word, s, len) == 0 && word[len] == '\0';
}

static int unit_lookup(const char *s, size_t len) {
    for (size_t k = 0; k < expr_unit_count; k++)
        if (word_is(expr_units[k].name, s, len))
            return (int)k;
    return -1;
}

static int function_lookup(const char *s, size_t len) {
    for (size_t k = 0; k < ML_ARRAY_LEN(functions); k++)
        if (word_is(functions[k].name, s, len))
            return (int)k;
    return -1;
}

bool expr_reserved_name(const char *name, size_t len) {
    if (unit_lookup(name, len) >= 0 || function_lookup(name, len) >= 0)
        return true;
    for (size_t k = 0; k < ML_ARRAY_LEN(fixed_names); k++)
        if (word_is(fixed_names[k], name, len))
            return true;
    return false;
}

/* ---- Checked arithmetic (shared by folding and evaluation) ------------------------------------ */

static int set_err(expr_error *err, size_t offset, const char *msg) {
    if (err) {
        err->offset = offset;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return -1;
}

static int apply_binop(expr_binop op, int64_t a, int64_t b, int64_t *out, size_t offset,
                       expr_error *err) {
    bool ovf = false;
    switch (op) {
    case OP_ADD: ovf = __builtin_add_overflow(a, b, out); break;
    case OP_SUB: ovf = __builtin_sub_overflow(a, b, out); break;
    case OP_MUL: ovf = __builtin_mul_overflow(a, b, out); break;
    case OP_DIV:
    case OP_MOD:
        if (b == 0)
            return set_err(err, offset, op == OP_DIV ? "division by zero" : "modulo by zero");
        if (a == INT64_MIN && b == -1) {
            if (op == OP_DIV)
                return set_err(err, offset, "integer overflow");
            *out = 0;
            break;
        }
        *out = op == OP_DIV ? a / b : a % b;
        break;
    case OP_EQ: *out = a == b; break;
    case OP_NE: *out = a != b; break;
    case OP_LT: *out = a < b; break;
    case OP_LE: *out = a <= b; break;
    case OP_GT: *out = a > b; break;
    case OP_GE: *out = a >= b; break;
    case OP_AND: *out = a && b; break;
    case OP_OR: *out = a || b; break;
    }
    return ovf ? set_err(err, offset, "integer overflow") : 0;
}

static int apply_fn(expr_fn fn, const int64_t *v, uint32_t n, int64_t *out, size_t offset,
                    expr_error *err) {
    switch (fn) {
    case FN_MIN:
    case FN_MAX:
        *out = v[0];
        for (uint32_t k = 1; k < n; k++)
            if (fn == FN_MIN ? v[k] < *out : v[k] > *out)
                *out = v[k];
        return 0;
    case FN_CEIL_DIV:
    case FN_ALIGN_UP: {
        int64_t a = v[0], b = v[1];
        if (fn == FN_ALIGN_UP && b <= 0)
            return set_err(err, offset, "align_up to a non-positive multiple");
        if (b == 0)
            return set_err(err, offset, "division by zero");
        if (a == INT64_MIN && b == -1)
            return set_err(err, offset, "integer overflow");
        /* Round toward +infinity without computing a + b - 1 (which could overflow). */
        int64_t q = a / b + (a % b != 0 && ((a < 0) == (b < 0)));
        if (fn == FN_CEIL_DIV) {
            *out = q;
            return 0;
        }
        if (__builtin_mul_overflow(q, b, out))
            return set_err(err, offset, "integer overflow");
        return 0;
    }
    }
    return set_err(err, offset, "unknown function");
}

/* ---- Parser ----------------------------------------------------------------------------------- */

typedef struct {
    const char *s;        /* the caller's text (not NUL-terminated) */
    size_t len, pos;
    const char *text;     /* arena copy, stored in every node */
    ml_arena *arena;
    expr_resolver resolve;
    void *ctx;
    expr_error *err;
    int depth;
} parser;

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

static void skip_ws(parser *p) {
    while (p->pos < p->len &&
           (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static size_t ident_end(const parser *p, size_t at) {
    while (at < p->len && is_ident_char(p->s[at]))
        at++;
    return at;
}

/* "unexpected 'tok'" for the token at pos (a whole word or number, else one or two characters). */
static expr *fail_unexpected(parser *p) {
    if (p->pos >= p->len) {
        set_err(p->err, p->pos, "unexpected end of expression");
        return NULL;
    }
    size_t end = p->pos + 1;
    if (is_ident_char(p->s[p->pos]))
        end = ident_end(p, p->pos);
    else if (end < p->len && strchr("=<>&|!", p->s[p->pos]) && strchr("=&|", p->s[end]))
        end++;
    else if ((unsigned char)p->s[p->pos] >= 0xC0)
        /* A UTF-8 character is quoted whole: one byte of it would print as a broken glyph. */
        while (end < p->len && ((unsigned char)p->s[end] & 0xC0) == 0x80)
            end++;
    size_t n = end - p->pos;
    if (n > 40)
        n = 40;
    char msg[80];
    snprintf(msg, sizeof msg, "unexpected '%.*s'", (int)n, p->s + p->pos);
    set_err(p->err, p->pos, msg);
    return NULL;
}

static expr *fail_at(parser *p, size_t offset, const char *msg) {
    set_err(p->err, offset, msg);
    return NULL;
}

static expr *node(parser *p, expr_node_kind kind, size_t offset) {
    expr *e = ml_arena_alloc(p->arena, sizeof *e);
    e->kind = (uint8_t)kind;
    e->offset = (uint32_t)offset;
    e->text = p->text;
    return e;
}

static expr *num_node(parser *p, int64_t value, size_t offset) {
    expr *e = node(p, EN_NUM, offset);
    e->u.value = value;
    return e;
}

static expr *set_height(parser *p, expr *e, uint16_t child_height) {
    if (child_height >= EXPR_MAX_HEIGHT)
        return fail_at(p, e->offset, "expression nested too deeply");
    e->height = (uint16_t)(child_height + 1);
    return e;
}

/* Builds a binary node, folding it when both sides are constants. A constant subexpression that
 * overflows or divides by zero is an error at parse time: it would fail on every rank. */
static expr *binary(parser *p, expr_binop op, expr *a, expr *b, size_t offset) {
    if (a->kind == EN_NUM && b->kind == EN_NUM) {
        int64_t v;
        if (apply_binop(op, a->u.value, b->u.value, &v, offset, p->err) != 0)
            return NULL;
        return num_node(p, v, a->offset);
    }
    expr *e = node(p, EN_BIN, offset);
    e->op = (uint8_t)op;
    e->u.bin.a = a;
    e->u.bin.b = b;
    return set_height(p, e, a->height > b->height ? a->height : b->height);
}

static expr *parse_or(parser *p);

/* Matches the operator text at pos (after whitespace); advances past it. */
static bool accept(parser *p, const char *op) {
    skip_ws(p);
    size_t n = strlen(op);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, op, n) != 0)
        return false;
    /* '<' must not match the start of '<=', '!' not '!=', '=' alone is no operator. */
    if (n == 1 && p->pos + 1 < p->len && p->s[p->pos + 1] == '=' && strchr("<>!", op[0]))
        return false;
    if (n == 1 && p->pos + 1 < p->len && op[0] == p->s[p->pos + 1] && strchr("&|", op[0]))
        return false;
    p->pos += n;
    return true;
}

static expr *parse_number(parser *p) {
    size_t start = p->pos;
    int64_t v = 0;
    bool ovf = false;
    while (p->pos < p->len && is_digit(p->s[p->pos])) {
        ovf |= __builtin_mul_overflow(v, 10, &v);
        ovf |= __builtin_add_overflow(v, p->s[p->pos] - '0', &v);
        p->pos++;
    }
    if (p->pos < p->len && p->s[p->pos] == '.' && p->pos + 1 < p->len && is_digit(p->s[p->pos + 1]))
        return fail_at(p, start, "only integers are allowed");
    if (ovf)
        return fail_at(p, start, "number too large");
    /* Optional unit, with or without a space: "256MiB", "256 MiB". */
    size_t save = p->pos;
    skip_ws(p);
    if (p->pos < p->len && is_ident_start(p->s[p->pos])) {
        size_t end = ident_end(p, p->pos);
        int u = unit_lookup(p->s + p->pos, end - p->pos);
        if (u < 0) {
            char msg[80];
            snprintf(msg, sizeof msg, "unknown unit '%.*s'", (int)(end - p->pos > 40 ? 40 : end - p->pos),
                     p->s + p->pos);
            return fail_at(p, p->pos, msg);
        }
        if (__builtin_mul_overflow(v, expr_units[u].factor, &v))
            return fail_at(p, start, "integer overflow");
        p->pos = end;
    } else {
        p->pos = save;
    }
    return num_node(p, v, start);
}

static expr *parse_call(parser *p, int fn, size_t start) {
    expr *args[EXPR_MAX_ARGS];
    uint32_t n = 0;
    skip_ws(p);
    if (!(p->pos < p->len && p->s[p->pos] == ')')) {
        do {
            if (n == EXPR_MAX_ARGS)
                return fail_at(p, p->pos, "too many arguments");
            if (!(args[n++] = parse_or(p)))
                return NULL;
        } while (accept(p, ","));
    }
    if (!accept(p, ")"))
        return fail_unexpected(p);
    if (n < functions[fn].min_args || n > functions[fn].max_args) {
        char msg[96];
        if (functions[fn].min_args == functions[fn].max_args)
            snprintf(msg, sizeof msg, "%s takes %u arguments", functions[fn].name, functions[fn].min_args);
        else
            snprintf(msg, sizeof msg, "%s takes at least %u argument", functions[fn].name,
                     functions[fn].min_args);
        return fail_at(p, start, msg);
    }
    bool all_const = true;
    int64_t vals[EXPR_MAX_ARGS];
    for (uint32_t k = 0; k < n; k++) {
        all_const &= args[k]->kind == EN_NUM;
        vals[k] = args[k]->u.value;
    }
    if (all_const) {
        int64_t v;
        if (apply_fn(functions[fn].fn, vals, n, &v, start, p->err) != 0)
            return NULL;
        return num_node(p, v, start);
    }
    expr *e = node(p, EN_CALL, start);
    e->op = (uint8_t)functions[fn].fn;
    e->u.call.n = n;
    e->u.call.args = ml_arena_alloc(p->arena, n * sizeof(expr *));
    memcpy(e->u.call.args, args, n * sizeof(expr *));
    uint16_t h = 0;
    for (uint32_t k = 0; k < n; k++)
        h = args[k]->height > h ? args[k]->height : h;
    return set_height(p, e, h);
}

static expr *parse_name(parser *p) {
    size_t start = p->pos, end = ident_end(p, p->pos);
    const char *name = p->s + start;
    size_t len = end - start;
    int shown = len > 60 ? 60 : (int)len;
    char msg[160];
    p->pos = end;
    int fn = function_lookup(name, len);
    if (accept(p, "(")) {
        if (fn < 0) {
            snprintf(msg, sizeof msg, "unknown function '%.*s'", shown, name);
            return fail_at(p, start, msg);
        }
        return parse_call(p, fn, start);
    }
    if (fn >= 0) {
        snprintf(msg, sizeof msg, "function '%.*s' needs arguments in parentheses", shown, name);
        return fail_at(p, start, msg);
    }
    if (unit_lookup(name, len) >= 0) {
        snprintf(msg, sizeof msg, "unit '%.*s' must follow a number", shown, name);
        return fail_at(p, start, msg);
    }
    int slot = p->resolve ? p->resolve(p->ctx, name, len) : -1;
    if (slot < 0) {
        if (word_is("i", name, len))
            snprintf(msg, sizeof msg, "name 'i' is only defined in data patterns and checks");
        else
            snprintf(msg, sizeof msg, "undefined name '%.*s'", shown, name);
        return fail_at(p, start, msg);
    }
    expr *e = node(p, EN_SLOT, start);
    e->u.slot = slot;
    return e;
}

static expr *parse_atom(parser *p) {
    skip_ws(p);
    if (p->pos >= p->len)
        return fail_unexpected(p);
    char c = p->s[p->pos];
    if (is_digit(c))
        return parse_number(p);
    if (is_ident_start(c))
        return parse_name(p);
    if (c == '(') {
        p->pos++;
        expr *e = parse_or(p);
        if (!e)
            return NULL;
        if (!accept(p, ")"))
            return fail_unexpected(p);
        return e;
    }
    return fail_unexpected(p);
}

static expr *parse_unary(parser *p) {
    skip_ws(p);
    size_t start = p->pos;
    bool neg = accept(p, "-");
    bool not = !neg && accept(p, "!");
    if (!neg && !not)
        return parse_atom(p);
    if (++p->depth > EXPR_MAX_DEPTH)
        return fail_at(p, start, "expression nested too deeply");
    expr *arg = parse_unary(p);
    p->depth--;
    if (!arg)
        return NULL;
    if (arg->kind == EN_NUM) {
        int64_t v;
        if (not)
            return num_node(p, !arg->u.value, start);
        if (__builtin_sub_overflow((int64_t)0, arg->u.value, &v))
            return fail_at(p, start, "integer overflow");
        return num_node(p, v, start);
    }
    expr *e = node(p, neg ? EN_NEG : EN_NOT, start);
    e->u.arg = arg;
    return set_height(p, e, arg->height);
}

/* One left-associative level: operand (op operand)* with the operators of ops. */
typedef expr *(*parse_fn)(parser *p);
static expr *parse_level(parser *p, parse_fn operand, const expr_binop *ops, size_t n_ops,
                         bool chain) {
    expr *a = operand(p);
    while (a) {
        skip_ws(p);
        size_t at = p->pos;
        size_t k = 0;
        while (k < n_ops && !accept(p, binop_text[ops[k]]))
            k++;
        if (k == n_ops)
            return a;
        expr *b = operand(p);
        if (!b)
            return NULL;
        a = binary(p, ops[k], a, b, at);
        if (!chain)
            return a;   /* comparisons do not chain: `a < b < c` is an error at the second '<' */
    }
    return NULL;
}

static const expr_binop term_ops[] = {OP_MUL, OP_DIV, OP_MOD};
static const expr_binop sum_ops[] = {OP_ADD, OP_SUB};
/* Two-character operators first, so "<=" is not read as "<". */
static const expr_binop cmp_ops[] = {OP_EQ, OP_NE, OP_LE, OP_GE, OP_LT, OP_GT};
static const expr_binop and_ops[] = {OP_AND};
static const expr_binop or_ops[] = {OP_OR};

static expr *parse_term(parser *p) { return parse_level(p, parse_unary, term_ops, 3, true); }
static expr *parse_sum(parser *p) { return parse_level(p, parse_term, sum_ops, 2, true); }
static expr *parse_cmp(parser *p) { return parse_level(p, parse_sum, cmp_ops, 6, false); }
static expr *parse_and(parser *p) { return parse_level(p, parse_cmp, and_ops, 1, true); }

static expr *parse_or(parser *p) {
    if (++p->depth > EXPR_MAX_DEPTH)
        return fail_at(p, p->pos, "expression nested too deeply");
    expr *e = parse_level(p, parse_and, or_ops, 1, true);
    p->depth--;
    return e;
}

expr *expr_parse(ml_arena *a, const char *text, size_t len, expr_resolver resolve, void *ctx,
                 expr_error *err) {
    parser p = {.s = text, .len = len, .arena = a, .resolve = resolve, .ctx = ctx, .err = err};
    skip_ws(&p);
    if (p.pos == len) {
        set_err(err, p.pos, "empty expression");
        return NULL;
    }
    if (len > UINT32_MAX) {
        set_err(err, 0, "expression too long");
        return NULL;
    }
    p.text = ml_arena_strndup(a, text, len);
    expr *e = parse_or(&p);
    if (!e)
        return NULL;
    skip_ws(&p);
    if (p.pos < len)
        return fail_unexpected(&p);
    return e;
}

/* ---- Evaluation ------------------------------------------------------------------------------- */

int expr_eval(const expr *e, const int64_t *slots, int64_t *out, expr_error *err) {
    int64_t a, b;
    switch ((expr_node_kind)e->kind) {
    case EN_NUM:
        *out = e->u.value;
        return 0;
    case EN_SLOT:
        *out = slots[e->u.slot];
        return 0;
    case EN_NEG:
        if (expr_eval(e->u.arg, slots, &a, err) != 0)
            return -1;
        if (__builtin_sub_overflow((int64_t)0, a, out))
            return set_err(err, e->offset, "integer overflow");
        return 0;
    case EN_NOT:
        if (expr_eval(e->u.arg, slots, &a, err) != 0)
            return -1;
        *out = !a;
        return 0;
    case EN_BIN:
        if (expr_eval(e->u.bin.a, slots, &a, err) != 0)
            return -1;
        /* && and || short-circuit, so `b != 0 && a / b > 1` is safe. */
        if ((e->op == OP_AND && !a) || (e->op == OP_OR && a)) {
            *out = e->op == OP_OR;
            return 0;
        }
        if (expr_eval(e->u.bin.b, slots, &b, err) != 0)
            return -1;
        return apply_binop((expr_binop)e->op, a, b, out, e->offset, err);
    case EN_CALL: {
        int64_t vals[EXPR_MAX_ARGS];
        for (uint32_t k = 0; k < e->u.call.n; k++)
            if (expr_eval(e->u.call.args[k], slots, &vals[k], err) != 0)
                return -1;
        return apply_fn((expr_fn)e->op, vals, e->u.call.n, out, e->offset, err);
    }
    }
    return set_err(err, e->offset, "bad expression node");
}

bool expr_uses_slot(const expr *e, int slot) {
    switch ((expr_node_kind)e->kind) {
    case EN_NUM: return false;
    case EN_SLOT: return e->u.slot == slot;
    case EN_NEG:
    case EN_NOT: return expr_uses_slot(e->u.arg, slot);
    case EN_BIN: return expr_uses_slot(e->u.bin.a, slot) || expr_uses_slot(e->u.bin.b, slot);
    case EN_CALL:
        for (uint32_t k = 0; k < e->u.call.n; k++)
            if (expr_uses_slot(e->u.call.args[k], slot))
                return true;
        return false;
    }
    return false;
}

bool expr_const_value(const expr *e, int64_t *value) {
    if (e->kind != EN_NUM)
        return false;
    *value = e->u.value;
    return true;
}

const char *expr_text(const expr *e) { return e->text; }

bool expr_has_unit(const expr *e) {
    /* The text, not the tree: constant folding merges "64MiB * 2" into one number. A unit is a
     * word right after a number (the parser accepted it as one, so no further check). */
    const char *t = e->text;
    for (size_t k = 0; t[k]; k++) {
        if (!is_digit(t[k]) || (k > 0 && (is_ident_start(t[k - 1]) || is_digit(t[k - 1]))))
            continue;
        size_t j = k;
        while (is_digit(t[j]))
            j++;
        while (t[j] == ' ' || t[j] == '\t')
            j++;
        size_t end = j;
        while (is_ident_start(t[end]) || is_digit(t[end]))
            end++;
        if (end > j && unit_lookup(t + j, end - j) >= 0)
            return true;
    }
    return false;
}

bool expr_split_div(const expr *e, const expr **num, const expr **den) {
    if (!e || e->kind != EN_BIN || e->op != OP_DIV)
        return false;
    *num = e->u.bin.a;
    *den = e->u.bin.b;
    return true;
}
