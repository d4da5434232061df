/* SPDX-License-Identifier: MIT */
/* pickle_write.c — a jansson tree as a protocol 4 pickle.
 *
 * The output must open in torch/utils/viz/MemoryViz.js, whose unpickler knows a fixed subset of
 * opcodes and accepts PROTO 2 to 4 only. So: PROTO 4, FRAME, EMPTY_DICT/EMPTY_LIST,
 * MARK/SETITEMS/APPENDS and SETITEM/APPEND, SHORT_BINUNICODE/BINUNICODE, MEMOIZE, BINGET/
 * LONG_BINGET, BININT1/BININT2/BININT/LONG1, BINFLOAT, NEWTRUE/NEWFALSE/NONE, STOP — all of them
 * in its list. Like Python's pickler, lists and dicts go out in batches of 1000 (MemoryViz spreads
 * a batch into a JavaScript call's arguments, which cannot take millions).
 *
 * Memo: every string is memoized by content, so a snapshot's filenames and keys are written once
 * each and fetched with a 2- or 5-byte GET afterwards. A container that jansson says is shared
 * (refcount above one, as pickle_read makes for a memo GET) is memoized by address, so a DAG stays
 * a DAG instead of growing into its expansion.
 *
 * The walk is iterative, with an explicit stack bounded by PICKLE_MAX_DEPTH. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "pickle_int.h"

#define FRAME_TARGET (64 * 1024) /* Python's _FRAME_SIZE_TARGET */
#define BATCH 1000                /* Python's _BATCHSIZE */

/* A memoized value: a string by content, or a container by address (len SHARED_CONTAINER). */
typedef struct {
    const void *key;
    size_t len;
    uint64_t hash;
    uint32_t index;
} memo_entry;

#define SHARED_CONTAINER SIZE_MAX

/* A container being written: where its items are, and the batch in progress. */
typedef struct {
    const json_t *container;
    size_t next;        /* array: index of the next item */
    void *iter;         /* object: iterator at the next pair */
    size_t remaining;   /* items not yet written */
    size_t batch_left;  /* items left in the current batch; 0 between batches */
    size_t batch_size;
} open_container;

typedef struct {
    pickle_sink sink;
    void *ctx;
    char *err;
    size_t errlen;
    bool failed;

    unsigned char *frame; /* the frame being filled */
    size_t frame_len, frame_cap;

    memo_entry *memo;     /* open addressing, power-of-two size, key NULL where free */
    size_t memo_cap, memo_used;
    uint32_t memo_count;

    open_container stack[PICKLE_MAX_DEPTH];
    size_t depth;
} writer;

static int fail(writer *w, const char *msg) {
    if (!w->failed && w->err && w->errlen)
        snprintf(w->err, w->errlen, "error: %s", msg);
    w->failed = true;
    return -1;
}

/* --- output ----------------------------------------------------------------------------------- */

static int commit_frame(writer *w) {
    if (!w->frame_len)
        return 0;
    unsigned char header[9] = {OP_FRAME};
    for (int i = 0; i < 8; i++)
        header[1 + i] = (unsigned char)((uint64_t)w->frame_len >> (8 * i));
    if (w->sink(w->ctx, header, sizeof header) || w->sink(w->ctx, w->frame, w->frame_len))
        return fail(w, "cannot write the pickle");
    w->frame_len = 0;
    return 0;
}

/* Appends n bytes to the frame. */
static int put(writer *w, const void *bytes, size_t n) {
    if (w->frame_cap - w->frame_len < n) {
        size_t cap = w->frame_cap ? w->frame_cap : FRAME_TARGET + 256;
        while (cap - w->frame_len < n)
            cap *= 2;
        unsigned char *p = realloc(w->frame, cap);
        if (!p)
            return fail(w, "out of memory");
        w->frame = p;
        w->frame_cap = cap;
    }
    memcpy(w->frame + w->frame_len, bytes, n);
    w->frame_len += n;
    return 0;
}

/* Starts an opcode: frames end only between opcodes, as Python's do. */
static int opcode(writer *w, unsigned char op) {
    if (w->frame_len >= FRAME_TARGET && commit_frame(w))
        return -1;
    return put(w, &op, 1);
}

static int opcode_u32(writer *w, unsigned char op, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return opcode(w, op) || put(w, b, 4) ? -1 : 0;
}

/* --- memo ------------------------------------------------------------------------------------- */

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15u ^ n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t k;
        memcpy(&k, p, 8);
        h = (h ^ k) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    for (; n; p++, n--)
        h = (h ^ *p) * 0x100000001b3u;
    return h ^ h >> 29;
}

static bool same_key(const memo_entry *e, const void *key, size_t len, uint64_t hash) {
    if (e->hash != hash || e->len != len)
        return false;
    return len == SHARED_CONTAINER ? e->key == key : memcmp(e->key, key, len) == 0;
}

/* The memo slot for key: its entry, or the free slot where it would go. */
static memo_entry *memo_find(writer *w, const void *key, size_t len, uint64_t hash) {
    size_t mask = w->memo_cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask)
        if (!w->memo[i].key || same_key(&w->memo[i], key, len, hash))
            return &w->memo[i];
}

static int memo_grow(writer *w) {
    size_t cap = w->memo_cap ? w->memo_cap * 2 : 1024;
    memo_entry *old = w->memo;
    size_t old_cap = w->memo_cap;
    w->memo = calloc(cap, sizeof *w->memo);
    if (!w->memo) {
        w->memo = old;
        return fail(w, "out of memory");
    }
    w->memo_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].key)
            *memo_find(w, old[i].key, old[i].len, old[i].hash) = old[i];
    free(old);
    return 0;
}

/* Writes a GET when key is memoized (returns 1); otherwise returns 0 with *slot where to record it
 * after the value is written. */
static int memo_lookup(writer *w, const void *key, size_t len, uint64_t hash, memo_entry **slot) {
    if (w->memo_used * 2 >= w->memo_cap && memo_grow(w))
        return -1;
    memo_entry *e = memo_find(w, key, len, hash);
    if (e->key) {
        if (e->index < 256) {
            unsigned char b = (unsigned char)e->index;
            return opcode(w, OP_BINGET) || put(w, &b, 1) ? -1 : 1;
        }
        return opcode_u32(w, OP_LONG_BINGET, e->index) ? -1 : 1;
    }
    *slot = e;
    return 0;
}

/* MEMOIZEs the value just written under key, into the slot memo_lookup gave. */
static int memoize(writer *w, memo_entry *slot, const void *key, size_t len, uint64_t hash) {
    if (w->memo_count == UINT32_MAX)
        return fail(w, "more than 2^32 memoized values");
    *slot = (memo_entry){key, len, hash, w->memo_count++};
    w->memo_used++;
    return opcode(w, OP_MEMOIZE);
}

/* --- values ----------------------------------------------------------------------------------- */

static int write_str(writer *w, const char *s, size_t n) {
    uint64_t hash = hash_bytes((const unsigned char *)s, n);
    memo_entry *slot;
    int found = memo_lookup(w, s, n, hash, &slot);
    if (found)
        return found < 0 ? -1 : 0;
    if (n < 256) {
        unsigned char len = (unsigned char)n;
        if (opcode(w, OP_SHORT_BINUNICODE) || put(w, &len, 1))
            return -1;
    } else if (n <= UINT32_MAX) {
        if (opcode_u32(w, OP_BINUNICODE, (uint32_t)n))
            return -1;
    } else {
        return fail(w, "a string of 4 GiB or more (MemoryViz reads no BINUNICODE8)");
    }
    return put(w, s, n) || memoize(w, slot, s, n, hash) ? -1 : 0;
}

static int write_int(writer *w, json_int_t v) {
    if (v >= 0 && v <= 0xff) {
        unsigned char b = (unsigned char)v;
        return opcode(w, OP_BININT1) || put(w, &b, 1) ? -1 : 0;
    }
    if (v >= 0 && v <= 0xffff) {
        unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
        return opcode(w, OP_BININT2) || put(w, b, 2) ? -1 : 0;
    }
    if (v >= INT32_MIN && v <= INT32_MAX)
        return opcode_u32(w, OP_BININT, (uint32_t)(int32_t)v);
    /* LONG1: the shortest little-endian two's complement, as Python's encode_long */
    uint64_t u = (uint64_t)v;
    unsigned char b[9];
    b[0] = 8;
    for (int i = 0; i < 8; i++)
        b[1 + i] = (unsigned char)(u >> (8 * i));
    while (b[0] > 1) {
        unsigned char top = b[b[0]], next = b[b[0] - 1];
        if (!((top == 0x00 && !(next & 0x80)) || (top == 0xff && (next & 0x80))))
            break;
        b[0]--;
    }
    return opcode(w, OP_LONG1) || put(w, b, 1 + (size_t)b[0]) ? -1 : 0;
}

static int write_real(writer *w, double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    unsigned char b[8];
    for (int i = 0; i < 8; i++) /* big-endian */
        b[i] = (unsigned char)(bits >> (56 - 8 * i));
    return opcode(w, OP_BINFLOAT) || put(w, b, 8) ? -1 : 0;
}

/* Writes a scalar, a GET of a shared container already written, or a container's opening
 * (pushed on the stack for write_tree to fill). */
static int write_value(writer *w, const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_STRING: return write_str(w, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: return write_int(w, json_integer_value(v));
    case JSON_REAL: return write_real(w, json_real_value(v));
    case JSON_TRUE: return opcode(w, OP_NEWTRUE);
    case JSON_FALSE: return opcode(w, OP_NEWFALSE);
    case JSON_NULL: return opcode(w, OP_NONE);
    case JSON_ARRAY:
    case JSON_OBJECT: break;
    default: return fail(w, "a value of unknown jansson type");
    }
    bool shared = v->refcount > 1;
    memo_entry *slot = NULL;
    uint64_t hash = hash_bytes((const unsigned char *)&v, sizeof v);
    if (shared) {
        int found = memo_lookup(w, v, SHARED_CONTAINER, hash, &slot);
        if (found)
            return found < 0 ? -1 : 0;
    }
    if (w->depth == PICKLE_MAX_DEPTH)
        return fail(w, "containers nest deeper than the pickle limit (PICKLE_MAX_DEPTH)");
    bool is_array = json_is_array(v);
    if (opcode(w, is_array ? OP_EMPTY_LIST : OP_EMPTY_DICT))
        return -1;
    if (shared && memoize(w, slot, v, SHARED_CONTAINER, hash))
        return -1;
    w->stack[w->depth++] = (open_container){
        .container = v,
        .iter = is_array ? NULL : json_object_iter((json_t *)v),
        .remaining = is_array ? json_array_size(v) : json_object_size(v),
    };
    return 0;
}

/* Ends an item of the innermost container: closes its batch when the batch is full. */
static int item_done(writer *w) {
    open_container *c = &w->stack[w->depth - 1];
    c->remaining--;
    if (--c->batch_left)
        return 0;
    bool is_array = json_is_array(c->container);
    if (c->batch_size == 1)
        return opcode(w, is_array ? OP_APPEND : OP_SETITEM);
    return opcode(w, is_array ? OP_APPENDS : OP_SETITEMS);
}

/* Writes the tree under root: one item at a time from the innermost open container. */
static int write_tree(writer *w, const json_t *root) {
    size_t floor_depth = w->depth;
    if (write_value(w, root))
        return -1;
    while (w->depth > floor_depth) {
        open_container *c = &w->stack[w->depth - 1];
        if (!c->batch_left) {
            if (!c->remaining) {
                w->depth--;
                if (w->depth > floor_depth && item_done(w))
                    return -1;
                continue;
            }
            c->batch_size = c->batch_left = c->remaining < BATCH ? c->remaining : BATCH;
            if (c->batch_size > 1 && opcode(w, OP_MARK))
                return -1;
        }
        const json_t *item;
        if (json_is_array(c->container)) {
            item = json_array_get(c->container, c->next++);
        } else {
            void *it = c->iter;
            if (write_str(w, json_object_iter_key(it), json_object_iter_key_len(it)))
                return -1;
            item = json_object_iter_value(it);
            c->iter = json_object_iter_next((json_t *)c->container, it);
        }
        size_t before = w->depth;
        if (write_value(w, item))
            return -1;
        /* a container item is done when its own stack entry closes, above */
        if (w->depth == before && item_done(w))
            return -1;
    }
    return 0;
}

int pickle_write(const json_t *v, pickle_sink sink, void *ctx, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = 0;
    writer *w = calloc(1, sizeof *w);
    if (!w) {
        if (err && errlen)
            snprintf(err, errlen, "error: out of memory");
        return -1;
    }
    *w = (writer){.sink = sink, .ctx = ctx, .err = err, .errlen = errlen};
    static const unsigned char proto[2] = {OP_PROTO, 4};
    int rc = -1;
    if (!v)
        fail(w, "no value to write");
    else if (sink(ctx, proto, sizeof proto))
        fail(w, "cannot write the pickle");
    else if (!write_tree(w, v) && !opcode(w, OP_STOP) && !commit_frame(w))
        rc = 0;
    free(w->frame);
    free(w->memo);
    free(w);
    return rc;
}

typedef struct {
    unsigned char *data;
    size_t len, cap;
} byte_buffer;

static int buffer_sink(void *ctx, const void *bytes, size_t n) {
    byte_buffer *b = ctx;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n)
            cap *= 2;
        unsigned char *p = realloc(b->data, cap);
        if (!p)
            return -1;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    return 0;
}

unsigned char *pickle_write_buffer(const json_t *v, size_t *len, char *err, size_t errlen) {
    byte_buffer b = {0};
    if (pickle_write(v, buffer_sink, &b, err, errlen)) {
        free(b.data);
        return NULL;
    }
    *len = b.len;
    return b.data;
}
