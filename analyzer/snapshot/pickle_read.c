/* SPDX-License-Identifier: MIT */
/* pickle_read.c — the pickle machine for plain data: a value stack, a mark stack and a memo, no
 * imports and no calls. pickletools.py documents each opcode; Python's _pickle.c is the reference
 * for what a pickler writes.
 *
 * Safety, beyond refusing the code opcodes:
 *  - the loop is iterative; nothing an input controls recurses;
 *  - every declared length is checked against the bytes that remain before it is used, so a
 *    length can never make us allocate more than the input's size;
 *  - cycles cannot form (jansson would leak them and recurse forever on them): a container takes
 *    children only while it is "open", and it closes for good when it is put into another. A
 *    cycle needs some container to be put into something it (transitively) holds, and whatever it
 *    holds went in closed, so it would have to be an ancestor that is still open: impossible;
 *  - every container knows its depth and its node count with shares expanded, bounded by
 *    PICKLE_MAX_DEPTH and PICKLE_MAX_EXPANSION.
 * The container bookkeeping lives beside the json_t (a record per container, named by index
 * from the stack and the memo), since jansson values carry no room for it. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "pickle_int.h"

enum value_kind { KIND_SCALAR, KIND_LIST, KIND_DICT, KIND_SET, KIND_TUPLE };

/* One container's bookkeeping. Record 0 stands for every scalar. */
typedef struct {
    uint64_t nodes;  /* this container and everything under it, shares counted each time */
    uint32_t depth;  /* 1 for an empty container */
    uint8_t kind;    /* enum value_kind */
    uint8_t open;    /* may still take children: not yet inside another container */
    uint8_t shared;  /* the memo or a second stack slot holds it too */
} container_record;

typedef struct {
    json_t *value;   /* owned reference; NULL once moved into a container */
    uint32_t record;
    size_t at;       /* byte offset of the opcode that pushed it, for diagnostics */
} stack_slot;

typedef struct {
    json_t *value;   /* owned reference, NULL where unset */
    uint32_t record;
} memo_slot;

typedef struct {
    const unsigned char *data;
    size_t len, pos;
    size_t op_at;        /* offset of the opcode being run */
    unsigned char op;
    const char *file;
    char *err;
    size_t errlen;

    stack_slot *stack;
    size_t depth, stack_cap;
    size_t *marks;       /* stack depth at each MARK */
    size_t nmarks, marks_cap;
    memo_slot *memo;
    size_t memo_cap, memo_count;
    container_record *records;
    size_t nrecords, records_cap;
    uint32_t free_records;   /* records to reuse, linked through nodes; 0: none */
    uint64_t max_nodes;
    /* With the scan (pickle_scan.c): memo[] holds only the fetched entries, densely, and `set`
     * has a bit per index put so far, which MEMOIZE's numbering needs. */
    pickle_fetched fetched;
    uint64_t *set;
    size_t set_words;
    const pickle_hooks *hooks;
} reader;

static const char *const opcode_names[256] = {
    [OP_MARK] = "MARK", [OP_STOP] = "STOP", [OP_POP] = "POP", [OP_POP_MARK] = "POP_MARK",
    [OP_DUP] = "DUP", [OP_FLOAT] = "FLOAT", [OP_INT] = "INT", [OP_BININT] = "BININT",
    [OP_BININT1] = "BININT1", [OP_LONG] = "LONG", [OP_BININT2] = "BININT2", [OP_NONE] = "NONE",
    [OP_PERSID] = "PERSID", [OP_BINPERSID] = "BINPERSID", [OP_REDUCE] = "REDUCE",
    [OP_STRING] = "STRING", [OP_BINSTRING] = "BINSTRING", [OP_SHORT_BINSTRING] = "SHORT_BINSTRING",
    [OP_UNICODE] = "UNICODE", [OP_BINUNICODE] = "BINUNICODE", [OP_APPEND] = "APPEND",
    [OP_BUILD] = "BUILD", [OP_GLOBAL] = "GLOBAL", [OP_DICT] = "DICT", [OP_EMPTY_DICT] = "EMPTY_DICT",
    [OP_APPENDS] = "APPENDS", [OP_GET] = "GET", [OP_BINGET] = "BINGET", [OP_INST] = "INST",
    [OP_LONG_BINGET] = "LONG_BINGET", [OP_LIST] = "LIST", [OP_EMPTY_LIST] = "EMPTY_LIST",
    [OP_OBJ] = "OBJ", [OP_PUT] = "PUT", [OP_BINPUT] = "BINPUT", [OP_LONG_BINPUT] = "LONG_BINPUT",
    [OP_SETITEM] = "SETITEM", [OP_TUPLE] = "TUPLE", [OP_EMPTY_TUPLE] = "EMPTY_TUPLE",
    [OP_SETITEMS] = "SETITEMS", [OP_BINFLOAT] = "BINFLOAT", [OP_PROTO] = "PROTO",
    [OP_NEWOBJ] = "NEWOBJ", [OP_EXT1] = "EXT1", [OP_EXT2] = "EXT2", [OP_EXT4] = "EXT4",
    [OP_TUPLE1] = "TUPLE1", [OP_TUPLE2] = "TUPLE2", [OP_TUPLE3] = "TUPLE3",
    [OP_NEWTRUE] = "NEWTRUE", [OP_NEWFALSE] = "NEWFALSE", [OP_LONG1] = "LONG1",
    [OP_LONG4] = "LONG4", [OP_BINBYTES] = "BINBYTES", [OP_SHORT_BINBYTES] = "SHORT_BINBYTES",
    [OP_SHORT_BINUNICODE] = "SHORT_BINUNICODE", [OP_BINUNICODE8] = "BINUNICODE8",
    [OP_BINBYTES8] = "BINBYTES8", [OP_EMPTY_SET] = "EMPTY_SET", [OP_ADDITEMS] = "ADDITEMS",
    [OP_FROZENSET] = "FROZENSET", [OP_NEWOBJ_EX] = "NEWOBJ_EX", [OP_STACK_GLOBAL] = "STACK_GLOBAL",
    [OP_MEMOIZE] = "MEMOIZE", [OP_FRAME] = "FRAME", [OP_BYTEARRAY8] = "BYTEARRAY8",
    [OP_NEXT_BUFFER] = "NEXT_BUFFER", [OP_READONLY_BUFFER] = "READONLY_BUFFER",
};

/* --- diagnostics ------------------------------------------------------------------------------ */

__attribute__((format(printf, 3, 4)))
static int fail_at(reader *r, size_t at, const char *fmt, ...) {
    if (r->err && r->errlen) {
        int n = snprintf(r->err, r->errlen, "%s: byte %zu: error: ", r->file, at);
        if (n >= 0 && (size_t)n < r->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* The running opcode as "NAME (0xNN)", for messages about it. */
#define OPFMT "pickle opcode %s (0x%02x)"
#define OPARGS(r) opcode_names[(r)->op], (unsigned)(r)->op

static int fail_memory(reader *r) {
    return fail_at(r, r->op_at, "out of memory");
}

/* A slot's Python type with its article, as a message names it ("an int"). */
static const char *type_name(const reader *r, const stack_slot *s) {
    static const char *const kinds[] = {"", "a list", "a dict", "a set", "a tuple"};
    if (s->record)
        return kinds[r->records[s->record].kind];
    switch (json_typeof(s->value)) {
    case JSON_STRING: return "a str";
    case JSON_INTEGER: return "an int";
    case JSON_REAL: return "a float";
    case JSON_TRUE:
    case JSON_FALSE: return "a bool";
    case JSON_NULL: return "None";
    default: return "a container";
    }
}

/* --- input ------------------------------------------------------------------------------------ */

/* The opcode's fixed-size argument: n more bytes must be there. */
static int need(reader *r, size_t n) {
    if (r->len - r->pos < n)
        return fail_at(r, r->op_at, "truncated pickle: " OPFMT " needs %zu bytes of argument, %zu remain",
                       OPARGS(r), n, r->len - r->pos);
    return 0;
}

/* A length the input declares: more than what is left is a lie (and must not reach malloc). */
static int declared(reader *r, uint64_t n) {
    if (n > r->len - r->pos)
        return fail_at(r, r->op_at, OPFMT " declares %llu bytes, more than the %zu that remain",
                       OPARGS(r), (unsigned long long)n, r->len - r->pos);
    return 0;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) {
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* An n-byte little-endian unsigned argument (n = 1, 2, 4 or 8), consumed: the memo indices,
 * BININT*'s values and the lengths all come this way. */
static int read_uint(reader *r, size_t n, uint64_t *out) {
    if (need(r, n))
        return -1;
    const unsigned char *p = r->data + r->pos;
    *out = n == 1 ? p[0] : n == 2 ? (uint64_t)(p[0] | p[1] << 8) : n == 4 ? le32(p) : le64(p);
    r->pos += n;
    return 0;
}

/* An n-byte little-endian length argument (n = 1, 4 or 8), checked against the input. */
static int read_length(reader *r, size_t n, size_t *out) {
    uint64_t v;
    if (read_uint(r, n, &v) || declared(r, v))
        return -1;
    *out = (size_t)v;
    return 0;
}

/* The text protocol's argument: everything up to the next newline, which is consumed. */
static int read_line(reader *r, const char **line, size_t *n) {
    const unsigned char *start = r->data + r->pos;
    const unsigned char *nl = memchr(start, '\n', r->len - r->pos);
    if (!nl)
        return fail_at(r, r->op_at, "truncated pickle: " OPFMT " needs a line ending in a newline",
                       OPARGS(r));
    *line = (const char *)start;
    *n = (size_t)(nl - start);
    r->pos += *n + 1;
    return 0;
}

static int fail_malformed(reader *r, const char *line, size_t n) {
    char shown[48];
    size_t k = 0;
    for (; k < n && k < sizeof shown - 4; k++)
        shown[k] = line[k] >= 0x20 && line[k] < 0x7f ? line[k] : '?';
    if (k < n)
        memcpy(shown + k, "...", 3), k += 3;
    shown[k] = 0;
    return fail_at(r, r->op_at, OPFMT " has a malformed argument '%s'", OPARGS(r), shown);
}

/* A decimal int64 of the text protocol: [-+]digits, with LONG's optional trailing 'L'. */
static int parse_decimal(reader *r, const char *line, size_t n, bool allow_l, int64_t *out) {
    size_t i = 0, end = n;
    if (allow_l && end > 0 && line[end - 1] == 'L')
        end--;
    bool negative = false;
    if (i < end && (line[i] == '-' || line[i] == '+'))
        negative = line[i++] == '-';
    if (i == end)
        return fail_malformed(r, line, n);
    uint64_t v = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < end; i++) {
        if (line[i] < '0' || line[i] > '9')
            return fail_malformed(r, line, n);
        unsigned digit = (unsigned)(line[i] - '0');
        if (v > (limit - digit) / 10)
            return fail_at(r, r->op_at, "int does not fit in int64 (JSON integers are 64-bit)");
        v = v * 10 + digit;
    }
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* LONG1/LONG4's little-endian two's complement of n bytes; longer than 8 only when the extra
 * bytes merely extend the sign. */
static int decode_long(reader *r, const unsigned char *p, size_t n, int64_t *out) {
    if (n == 0) {
        *out = 0;
        return 0;
    }
    unsigned char sign = p[n - 1] & 0x80 ? 0xff : 0x00;
    if (n > 8) {
        for (size_t i = 8; i < n; i++)
            if (p[i] != sign)
                return fail_at(r, r->op_at, "int does not fit in int64 (a %zu-byte " OPFMT ")", n,
                               OPARGS(r));
        if ((p[7] & 0x80) != (sign & 0x80))
            return fail_at(r, r->op_at, "int does not fit in int64 (a %zu-byte " OPFMT ")", n,
                           OPARGS(r));
        n = 8;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    if (n < 8 && sign)
        v |= ~(uint64_t)0 << (8 * n);
    memcpy(out, &v, sizeof v);
    return 0;
}

/* --- stack, marks, memo, records ---------------------------------------------------------------- */

static int grow(reader *r, void **array, size_t *cap, size_t elem) {
    size_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*array, n * elem);
    if (!p)
        return fail_memory(r);
    *array = p;
    *cap = n;
    return 0;
}

/* Pushes an owned reference (NULL from a failed constructor reads as out of memory). */
static inline int push(reader *r, json_t *v, uint32_t record) {
    if (!v)
        return fail_memory(r);
    if (r->depth == r->stack_cap && grow(r, (void **)&r->stack, &r->stack_cap, sizeof *r->stack)) {
        json_decref(v);
        return -1;
    }
    r->stack[r->depth++] = (stack_slot){v, record, r->op_at};
    return 0;
}

/* A new container record; its index, or 0 when out of memory (0 is never a container). */
static uint32_t new_record(reader *r, enum value_kind kind, bool open) {
    if (r->free_records) {
        uint32_t i = r->free_records;
        r->free_records = (uint32_t)r->records[i].nodes;
        r->records[i] = (container_record){1, 1, (uint8_t)kind, open, 0};
        return i;
    }
    if (r->nrecords == r->records_cap &&
        grow(r, (void **)&r->records, &r->records_cap, sizeof *r->records))
        return 0;
    if (r->nrecords > UINT32_MAX) {
        fail_at(r, r->op_at, "pickle holds more than %u containers", (unsigned)UINT32_MAX);
        return 0;
    }
    r->records[r->nrecords] = (container_record){1, 1, (uint8_t)kind, open, 0};
    return (uint32_t)r->nrecords++;
}

static int push_container(reader *r, json_t *v, enum value_kind kind, bool open) {
    if (!v)
        return fail_memory(r);
    uint32_t rec = new_record(r, kind, open);
    if (!rec) {
        json_decref(v);
        return -1;
    }
    return push(r, v, rec);
}

/* Values above the innermost mark: what an opcode may pop. */
static inline size_t above_mark(const reader *r) {
    return r->depth - (r->nmarks ? r->marks[r->nmarks - 1] : 0);
}

static int underflow(reader *r, size_t want) {
    return fail_at(r, r->op_at, OPFMT " needs %zu value%s on the stack%s, %zu there", OPARGS(r), want,
                   want == 1 ? "" : "s", r->nmarks ? " above its MARK" : "", above_mark(r));
}

/* Pops the innermost mark; its stack depth into *at. */
static int pop_mark(reader *r, size_t *at) {
    if (!r->nmarks)
        return fail_at(r, r->op_at, OPFMT " needs a MARK before it, and there is none", OPARGS(r));
    *at = r->marks[--r->nmarks];
    return 0;
}

/* Accounts for child going into the container of record parent: the child closes, the parent's
 * depth and node count grow. Refuses what would break the safety rules (header comment). */
static int adopt(reader *r, uint32_t parent, const stack_slot *child) {
    uint32_t depth = 1;
    uint64_t nodes = 1;
    if (child->record) {
        if (child->record == parent)
            return fail_at(r, child->at, "%s cannot contain itself", type_name(r, child));
        container_record *c = &r->records[child->record];
        c->open = 0;
        depth = c->depth + 1;
        nodes = c->nodes;
        /* Nothing else names an unshared container's record once it is inside another (its
         * stack slot is being cleared): reuse it, so that records, like the values a consumer
         * drops (pickle_read_hooked), do not pile up. Without the scan every container is in
         * the memo, shared. */
        if (!c->shared) {
            c->nodes = r->free_records;
            r->free_records = child->record;
        }
    }
    container_record *p = &r->records[parent];
    if (depth > p->depth) {
        if (depth > PICKLE_MAX_DEPTH)
            return fail_at(r, r->op_at, "containers nest deeper than %d levels", PICKLE_MAX_DEPTH);
        p->depth = depth;
    }
    p->nodes += nodes;
    if (p->nodes > r->max_nodes)
        return fail_at(r, r->op_at,
                       "shared values expand to more than %llu nodes (%d per input byte)",
                       (unsigned long long)r->max_nodes, PICKLE_MAX_EXPANSION);
    return 0;
}

/* The container an opcode fills must be of `kind` and still open. */
static int check_target(reader *r, const stack_slot *target, enum value_kind kind, const char *what) {
    if (!target->record || r->records[target->record].kind != kind)
        return fail_at(r, r->op_at, OPFMT " needs a %s to fill, not %s", OPARGS(r), what,
                       type_name(r, target));
    if (!r->records[target->record].open)
        return fail_at(r, r->op_at,
                       OPFMT " changes a %s that is already inside another container",
                       OPARGS(r), what);
    return 0;
}

/* Moves stack[from..depth) into the array of record rec, in order. Each slot moved is cleared
 * at once, so an error midway leaves nothing owned twice. */
static int move_items(reader *r, json_t *array, uint32_t rec, size_t from) {
    bool hook = r->hooks && r->hooks->item && r->records[rec].kind == KIND_LIST;
    for (size_t i = from; i < r->depth; i++) {
        stack_slot *s = &r->stack[i];
        if (adopt(r, rec, s))
            return -1;
        json_t *v = s->value;
        s->value = NULL;
        if (hook && r->hooks->item(r->hooks->user, array, json_array_size(array), v)) {
            json_decref(v);   /* the hook took what it needs: None stands in its place */
            v = json_null();
        }
        if (json_array_append_new(array, v))
            return fail_memory(r);
    }
    r->depth = from;
    return 0;
}

/* Moves key/value pairs stack[from..depth) into the object of record rec. */
static int move_pairs(reader *r, json_t *object, uint32_t rec, size_t from) {
    if ((r->depth - from) % 2)
        return fail_at(r, r->op_at, OPFMT " needs key/value pairs, and has an odd %zu values",
                       OPARGS(r), r->depth - from);
    for (size_t i = from; i < r->depth; i += 2) {
        stack_slot *key = &r->stack[i], *value = &r->stack[i + 1];
        if (!json_is_string(key->value))
            return fail_at(r, key->at, "dict key is %s, not a str (JSON object keys are strings)",
                           type_name(r, key));
        if (adopt(r, rec, value))
            return -1;
        json_t *v = value->value;
        value->value = NULL;
        /* _nocheck: the key is a jansson string already, so it is valid UTF-8 */
        int rc = json_object_setn_new_nocheck(object, json_string_value(key->value),
                                              json_string_length(key->value), v);
        json_decref(key->value);
        key->value = NULL;
        if (rc)
            return fail_memory(r);
    }
    r->depth = from;
    return 0;
}

/* A new list/tuple/set/dict from the values above the innermost mark (LIST, TUPLE, FROZENSET,
 * DICT). */
static int build_from_mark(reader *r, enum value_kind kind) {
    size_t from = 0;
    if (pop_mark(r, &from))
        return -1;
    json_t *c = kind == KIND_DICT ? json_object() : json_array();
    if (!c)
        return fail_memory(r);
    uint32_t rec = new_record(r, kind, kind == KIND_LIST || kind == KIND_DICT);
    int rc = !rec ? -1 : kind == KIND_DICT ? move_pairs(r, c, rec, from) : move_items(r, c, rec, from);
    if (rc) {
        json_decref(c);
        return -1;
    }
    return push(r, c, rec);
}

/* TUPLE1/2/3: a tuple of the top n values. */
static int build_tuple(reader *r, size_t n) {
    if (above_mark(r) < n)
        return underflow(r, n);
    json_t *c = json_array();
    if (!c)
        return fail_memory(r);
    uint32_t rec = new_record(r, KIND_TUPLE, false);
    if (!rec || move_items(r, c, rec, r->depth - n)) {
        json_decref(c);
        return -1;
    }
    return push(r, c, rec);
}

/* APPENDS, SETITEMS, ADDITEMS: the values above the mark go into the container below it. */
static int fill_from_mark(reader *r, enum value_kind kind, const char *what) {
    size_t from = 0;
    if (pop_mark(r, &from))
        return -1;
    size_t base = r->nmarks ? r->marks[r->nmarks - 1] : 0;
    if (from == 0 || from - 1 < base)
        return fail_at(r, r->op_at, OPFMT " needs a %s below its MARK, and there is none", OPARGS(r),
                       what);
    stack_slot *target = &r->stack[from - 1];
    if (check_target(r, target, kind, what))
        return -1;
    return kind == KIND_DICT ? move_pairs(r, target->value, target->record, from)
                             : move_items(r, target->value, target->record, from);
}

/* APPEND and SETITEM: the top one or two values go into the container under them. */
static int fill_from_top(reader *r, enum value_kind kind, const char *what, size_t n) {
    if (above_mark(r) < n + 1)
        return underflow(r, n + 1);
    stack_slot *target = &r->stack[r->depth - n - 1];
    if (check_target(r, target, kind, what))
        return -1;
    return kind == KIND_DICT ? move_pairs(r, target->value, target->record, r->depth - n)
                             : move_items(r, target->value, target->record, r->depth - n);
}

/* With the scan: the entry is counted as set, and kept only if some GET fetches it. */
static int memo_put_fetched(reader *r, uint64_t index) {
    size_t word = (size_t)(index / 64);
    if (word >= r->set_words) {
        size_t old = r->set_words;
        while (word >= r->set_words)
            if (grow(r, (void **)&r->set, &r->set_words, sizeof *r->set))
                return -1;
        memset(r->set + old, 0, (r->set_words - old) * sizeof *r->set);
    }
    uint64_t bit = (uint64_t)1 << (index % 64);
    if (!(r->set[word] & bit)) {
        r->set[word] |= bit;
        r->memo_count++;
    }
    size_t dense;
    if (!pickle_is_fetched(&r->fetched, index, &dense))
        return 0;
    const stack_slot *top = &r->stack[r->depth - 1];
    r->records[top->record].shared = 1;
    memo_slot *m = &r->memo[dense];
    json_decref(m->value);
    *m = (memo_slot){json_incref(top->value), top->record};
    return 0;
}

static int memo_put(reader *r, uint64_t index) {
    if (!above_mark(r))
        return underflow(r, 1);
    /* A pickler numbers its memo from 0, one entry per value, so an index past the input's
     * length cannot come from one; refusing it bounds the memo by the input. */
    if (index >= r->len)
        return fail_at(r, r->op_at, "memo index %llu is out of range for a %zu-byte pickle",
                       (unsigned long long)index, r->len);
    if (r->fetched.ok)
        return memo_put_fetched(r, index);
    while (index >= r->memo_cap) {
        size_t old = r->memo_cap;
        if (grow(r, (void **)&r->memo, &r->memo_cap, sizeof *r->memo))
            return -1;
        memset(r->memo + old, 0, (r->memo_cap - old) * sizeof *r->memo);
    }
    const stack_slot *top = &r->stack[r->depth - 1];
    r->records[top->record].shared = 1;
    memo_slot *m = &r->memo[index];
    if (m->value)
        json_decref(m->value);
    else
        r->memo_count++;
    *m = (memo_slot){json_incref(top->value), top->record};
    return 0;
}

static int memo_get(reader *r, uint64_t index) {
    size_t dense;
    if (r->fetched.ok) {
        if (!pickle_is_fetched(&r->fetched, index, &dense) || !r->memo[dense].value)
            return fail_at(r, r->op_at, "memo index %llu is not set", (unsigned long long)index);
        return push(r, json_incref(r->memo[dense].value), r->memo[dense].record);
    }
    if (index >= r->memo_cap || !r->memo[index].value)
        return fail_at(r, r->op_at, "memo index %llu is not set", (unsigned long long)index);
    const memo_slot *m = &r->memo[index];
    return push(r, json_incref(m->value), m->record);
}

/* --- strings ---------------------------------------------------------------------------------- */

/* A str or bytes payload as a jansson string; jansson checks the UTF-8. */
static int push_text(reader *r, const unsigned char *p, size_t n, bool is_bytes) {
    json_t *s = json_stringn((const char *)p, n);
    if (!s)
        return fail_at(r, r->op_at,
                       is_bytes ? "bytes are not valid UTF-8, and JSON strings must be"
                                : "str is not valid UTF-8 (a lone surrogate?)");
    return push(r, s, 0);
}

static size_t put_utf8(unsigned char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xc0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xe0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

static int hex_digits(const char *p, size_t n, uint32_t *out) {
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d == 16)
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* UNICODE's raw-unicode-escape: bytes are Latin-1, except \uXXXX and \UXXXXXXXX. Python 3 writes
 * every backslash as \u005c, so a backslash before anything else is itself. */
static int push_raw_unicode_escape(reader *r, const char *line, size_t n) {
    unsigned char *out = malloc(n * 2 + 1); /* Latin-1 byte -> 2, 6-byte \u -> 3, 10-byte \U -> 4 */
    if (!out)
        return fail_memory(r);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        size_t digits = 0;
        if (c == '\\' && i + 1 < n)
            digits = line[i + 1] == 'u' ? 4 : line[i + 1] == 'U' ? 8 : 0;
        uint32_t cp = c;
        if (digits) {
            if (i + 2 + digits > n || hex_digits(line + i + 2, digits, &cp) || cp > 0x10ffff) {
                free(out);
                return fail_malformed(r, line, n);
            }
            i += 1 + digits;
        }
        k += put_utf8(out + k, cp);
    }
    int rc = push_text(r, out, k, false);
    free(out);
    return rc;
}

/* STRING's Python 2 repr: quoted, with backslash escapes. */
static int push_quoted_string(reader *r, const char *line, size_t n) {
    if (n < 2 || (line[0] != '\'' && line[0] != '"') || line[n - 1] != line[0])
        return fail_malformed(r, line, n);
    unsigned char *out = malloc(n);
    if (!out)
        return fail_memory(r);
    size_t k = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = line[i];
        if (c != '\\' || i + 2 >= n) {
            out[k++] = (unsigned char)c;
            continue;
        }
        char e = line[++i];
        uint32_t v;
        switch (e) {
        case 'n': out[k++] = '\n'; break;
        case 't': out[k++] = '\t'; break;
        case 'r': out[k++] = '\r'; break;
        case 'a': out[k++] = '\a'; break;
        case 'b': out[k++] = '\b'; break;
        case 'f': out[k++] = '\f'; break;
        case 'v': out[k++] = '\v'; break;
        case '\\': case '\'': case '"': out[k++] = (unsigned char)e; break;
        case 'x':
            if (i + 3 > n - 1 || hex_digits(line + i + 1, 2, &v)) {
                free(out);
                return fail_malformed(r, line, n);
            }
            out[k++] = (unsigned char)v;
            i += 2;
            break;
        default:
            if (e >= '0' && e <= '7') {
                v = 0;
                size_t d = 0;
                for (; d < 3 && i + d < n - 1 && line[i + d] >= '0' && line[i + d] <= '7'; d++)
                    v = v * 8 + (uint32_t)(line[i + d] - '0');
                out[k++] = (unsigned char)v;
                i += d - 1;
            } else {
                out[k++] = '\\';
                out[k++] = (unsigned char)e;
            }
        }
    }
    int rc = push_text(r, out, k, true);
    free(out);
    return rc;
}

/* --- the machine ------------------------------------------------------------------------------ */

static int refuse(reader *r) {
    return fail_at(r, r->op_at,
                   OPFMT " is not allowed: memlife reads only plain data and never runs code",
                   OPARGS(r));
}

/* Runs opcodes until STOP; 1 there, -1 on error. */
static int step(reader *r) {
    const unsigned char *d = r->data;
    const char *line;
    size_t n;
    int64_t iv;
    uint64_t u;

    r->op_at = r->pos;
    r->op = d[r->pos++];
    switch (r->op) {
    /* containers */
    case OP_EMPTY_DICT: return push_container(r, json_object(), KIND_DICT, true);
    case OP_EMPTY_LIST: return push_container(r, json_array(), KIND_LIST, true);
    case OP_EMPTY_SET: return push_container(r, json_array(), KIND_SET, true);
    case OP_EMPTY_TUPLE: return push_container(r, json_array(), KIND_TUPLE, false);
    case OP_MARK:
        if (r->nmarks == r->marks_cap && grow(r, (void **)&r->marks, &r->marks_cap, sizeof *r->marks))
            return -1;
        r->marks[r->nmarks++] = r->depth;
        return 0;
    case OP_SETITEMS: return fill_from_mark(r, KIND_DICT, "dict");
    case OP_APPENDS: return fill_from_mark(r, KIND_LIST, "list");
    case OP_ADDITEMS: return fill_from_mark(r, KIND_SET, "set");
    case OP_SETITEM: return fill_from_top(r, KIND_DICT, "dict", 2);
    case OP_APPEND: return fill_from_top(r, KIND_LIST, "list", 1);
    case OP_DICT: return build_from_mark(r, KIND_DICT);
    case OP_LIST: return build_from_mark(r, KIND_LIST);
    case OP_TUPLE: return build_from_mark(r, KIND_TUPLE);
    case OP_FROZENSET: return build_from_mark(r, KIND_SET);
    case OP_TUPLE1: return build_tuple(r, 1);
    case OP_TUPLE2: return build_tuple(r, 2);
    case OP_TUPLE3: return build_tuple(r, 3);

    /* memo */
    case OP_MEMOIZE: return memo_put(r, r->memo_count);
    case OP_BINPUT:
    case OP_LONG_BINPUT:
        return read_uint(r, r->op == OP_BINPUT ? 1 : 4, &u) ? -1 : memo_put(r, u);
    case OP_BINGET:
    case OP_LONG_BINGET:
        return read_uint(r, r->op == OP_BINGET ? 1 : 4, &u) ? -1 : memo_get(r, u);
    case OP_PUT:
    case OP_GET:
        if (read_line(r, &line, &n) || parse_decimal(r, line, n, false, &iv))
            return -1;
        if (iv < 0)
            return fail_malformed(r, line, n);
        return r->op == OP_PUT ? memo_put(r, (uint64_t)iv) : memo_get(r, (uint64_t)iv);

    /* strings */
    case OP_SHORT_BINUNICODE:
    case OP_BINUNICODE:
    case OP_BINUNICODE8:
    case OP_SHORT_BINBYTES:
    case OP_BINBYTES:
    case OP_BINBYTES8:
    case OP_BYTEARRAY8:
    case OP_SHORT_BINSTRING:
    case OP_BINSTRING: {
        size_t width = r->op == OP_SHORT_BINUNICODE || r->op == OP_SHORT_BINBYTES ||
                       r->op == OP_SHORT_BINSTRING ? 1
                     : r->op == OP_BINUNICODE || r->op == OP_BINBYTES || r->op == OP_BINSTRING ? 4 : 8;
        /* BINSTRING's length is signed; a negative one reads as huge and is refused as such */
        if (read_length(r, width, &n))
            return -1;
        r->pos += n;
        bool is_bytes = r->op != OP_SHORT_BINUNICODE && r->op != OP_BINUNICODE &&
                        r->op != OP_BINUNICODE8;
        return push_text(r, d + r->pos - n, n, is_bytes);
    }
    case OP_UNICODE:
        return read_line(r, &line, &n) ? -1 : push_raw_unicode_escape(r, line, n);
    case OP_STRING:
        return read_line(r, &line, &n) ? -1 : push_quoted_string(r, line, n);

    /* numbers */
    case OP_BININT1:
    case OP_BININT2:   /* unsigned, 1 and 2 bytes */
        if (read_uint(r, r->op == OP_BININT1 ? 1 : 2, &u))
            return -1;
        return push(r, json_integer((json_int_t)u), 0);
    case OP_BININT:    /* signed, 4 bytes */
        return read_uint(r, 4, &u) ? -1 : push(r, json_integer((int32_t)(uint32_t)u), 0);
    case OP_LONG1:
    case OP_LONG4:
        if (read_length(r, r->op == OP_LONG1 ? 1 : 4, &n))
            return -1;
        r->pos += n;
        if (decode_long(r, d + r->pos - n, n, &iv))
            return -1;
        return push(r, json_integer(iv), 0);
    case OP_INT:
        if (read_line(r, &line, &n))
            return -1;
        /* protocol 0 spells the booleans as INT 01 and INT 00 */
        if (n == 2 && line[0] == '0' && (line[1] == '0' || line[1] == '1'))
            return push(r, line[1] == '1' ? json_true() : json_false(), 0);
        return parse_decimal(r, line, n, false, &iv) ? -1 : push(r, json_integer(iv), 0);
    case OP_LONG:
        if (read_line(r, &line, &n) || parse_decimal(r, line, n, true, &iv))
            return -1;
        return push(r, json_integer(iv), 0);
    case OP_BINFLOAT: {
        if (need(r, 8))
            return -1;
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++) /* big-endian */
            bits = bits << 8 | d[r->pos + i];
        r->pos += 8;
        double x;
        memcpy(&x, &bits, sizeof x);
        json_t *v = json_real(x);
        if (!v) /* jansson refuses NaN and infinities */
            return fail_at(r, r->op_at, "float %g is not finite, and JSON cannot hold it", x);
        return push(r, v, 0);
    }
    case OP_FLOAT: {
        if (read_line(r, &line, &n))
            return -1;
        char buf[64];
        if (n == 0 || n >= sizeof buf)
            return fail_malformed(r, line, n);
        memcpy(buf, line, n);
        buf[n] = 0;
        char *end;
        double x = strtod(buf, &end);
        if (*end)
            return fail_malformed(r, line, n);
        json_t *v = json_real(x);
        if (!v)
            return fail_at(r, r->op_at, "float '%s' is not finite, and JSON cannot hold it", buf);
        return push(r, v, 0);
    }

    /* constants */
    case OP_NONE: return push(r, json_null(), 0);
    case OP_NEWTRUE: return push(r, json_true(), 0);
    case OP_NEWFALSE: return push(r, json_false(), 0);

    /* stack */
    case OP_POP:
        if (above_mark(r)) {
            json_decref(r->stack[--r->depth].value);
            return 0;
        }
        if (r->nmarks) { /* Python's POP drops the mark when nothing is above it */
            r->nmarks--;
            return 0;
        }
        return underflow(r, 1);
    case OP_POP_MARK: {
        size_t from = 0;
        if (pop_mark(r, &from))
            return -1;
        while (r->depth > from)
            json_decref(r->stack[--r->depth].value);
        return 0;
    }
    case OP_DUP: {
        if (!above_mark(r))
            return underflow(r, 1);
        stack_slot top = r->stack[r->depth - 1];
        r->records[top.record].shared = 1;
        return push(r, json_incref(top.value), top.record);
    }

    /* framing */
    case OP_PROTO:
        if (need(r, 1))
            return -1;
        if (d[r->pos] > 5)
            return fail_at(r, r->op_at, "pickle protocol %u is newer than 5, the last one known",
                           d[r->pos]);
        r->pos += 1;
        return 0;
    case OP_FRAME:
        /* frames only help a streaming reader; the length must fit, the rest is ignored */
        return read_length(r, 8, &n);
    case OP_STOP:
        if (r->nmarks)
            return fail_at(r, r->op_at, "pickle stops with %zu MARK%s still open", r->nmarks,
                           r->nmarks == 1 ? "" : "s");
        if (r->depth != 1)
            return fail_at(r, r->op_at, "pickle stops with %zu values on the stack, not one",
                           r->depth);
        return 1;

    /* code: imports, calls, object construction, external references */
    case OP_GLOBAL:
    case OP_STACK_GLOBAL:
    case OP_REDUCE:
    case OP_BUILD:
    case OP_INST:
    case OP_OBJ:
    case OP_NEWOBJ:
    case OP_NEWOBJ_EX:
    case OP_PERSID:
    case OP_BINPERSID:
    case OP_EXT1:
    case OP_EXT2:
    case OP_EXT4:
    case OP_NEXT_BUFFER:
    case OP_READONLY_BUFFER:
        return refuse(r);
    default:
        return fail_at(r, r->op_at, "unknown pickle opcode 0x%02x", (unsigned)r->op);
    }
}

static void reader_free(reader *r) {
    for (size_t i = 0; i < r->depth; i++)
        json_decref(r->stack[i].value);
    for (size_t i = 0; i < r->memo_cap; i++)
        json_decref(r->memo[i].value);
    free(r->stack);
    free(r->marks);
    free(r->memo);
    free(r->records);
    free(r->set);
    pickle_fetched_free(&r->fetched);
}

json_t *pickle_read(const unsigned char *data, size_t len, const char *file, char *err,
                    size_t errlen) {
    return pickle_read_hooked(data, len, file, NULL, err, errlen);
}

json_t *pickle_read_hooked(const unsigned char *data, size_t len, const char *file,
                           const pickle_hooks *hooks, char *err, size_t errlen) {
    reader r = {.data = data, .len = len, .file = file ? file : "<pickle>", .err = err,
                .errlen = errlen, .hooks = hooks};
    if (pickle_scan_fetched(data, len, &r.fetched)) {
        r.memo_cap = r.fetched.count;
        r.memo = calloc(r.memo_cap ? r.memo_cap : 1, sizeof *r.memo);
        if (!r.memo) {
            pickle_fetched_free(&r.fetched);
            r.memo_cap = 0;
        }
    }
    if (err && errlen)
        err[0] = 0;
    r.max_nodes = (uint64_t)len * PICKLE_MAX_EXPANSION + PICKLE_MAX_EXPANSION_BASE;
    /* record 0: every scalar */
    if (grow(&r, (void **)&r.records, &r.records_cap, sizeof *r.records))
        return NULL;
    r.records[0] = (container_record){1, 0, KIND_SCALAR, 0, 0};
    r.nrecords = 1;

    int rc = 0;
    while (rc == 0) {
        if (r.pos >= r.len) {
            rc = fail_at(&r, r.len, "truncated pickle: it ends before its STOP opcode");
            break;
        }
        rc = step(&r);
    }
    json_t *result = NULL;
    if (rc == 1 && r.pos != r.len)
        fail_at(&r, r.pos, "%zu bytes after the pickle's STOP opcode", r.len - r.pos);
    else if (rc == 1)
        result = r.stack[--r.depth].value;
    reader_free(&r);
    return result;
}
