/* SPDX-License-Identifier: MIT */
/* pickle_scan.c — which memo entries a pickle ever fetches (pickle_int.h).
 *
 * Python's pickler memoizes every container and most strings, but fetches an entry again (GET)
 * only where one object appears twice: in a snapshot, the shared filenames and little else. A
 * reader that keeps every memoized value alive keeps the whole tree alive, whatever its consumer
 * drops, and a memo slot per container besides. One pass over the opcodes, without building
 * anything, finds the entries that are fetched; the reader keeps only those. The scan trusts
 * nothing: on anything it does not understand (a truncation, an unknown opcode) it gives up, and
 * the reader keeps every entry and reports the error itself. */
#include <stdlib.h>
#include <string.h>

#include "pickle_int.h"

/* Bits set, without the libgcc call that __builtin_popcountll is where the target has no popcnt
 * instruction: a memo put asks once for each entry (perf: 1% of an import). */
static inline size_t popcount64(uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (size_t)((x * 0x0101010101010101ull) >> 56);
}

static uint64_t arg_le(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

static bool mark(pickle_fetched *f, uint64_t index) {
    size_t word = (size_t)(index / 64);
    if (word >= f->nwords) {
        size_t n = f->nwords ? f->nwords : 64;
        while (n <= word)
            n *= 2;
        uint64_t *b = realloc(f->bits, n * sizeof *b);
        if (!b)
            return false;
        memset(b + f->nwords, 0, (n - f->nwords) * sizeof *b);
        f->bits = b;
        f->nwords = n;
    }
    f->bits[word] |= (uint64_t)1 << (index % 64);
    return true;
}

/* The fixed size of an opcode's argument, -1 for a length-prefixed one (its prefix's size in
 * *prefix), -2 for a line, -3 for two lines, -4 for opcodes the scan does not know. */
static int arg_size(unsigned char op, size_t *prefix) {
    switch (op) {
    case OP_PROTO: case OP_BININT1: case OP_BINGET: case OP_BINPUT: case OP_EXT1: return 1;
    case OP_BININT2: case OP_EXT2: return 2;
    case OP_BININT: case OP_LONG_BINGET: case OP_LONG_BINPUT: case OP_EXT4: return 4;
    case OP_BINFLOAT: case OP_FRAME: return 8;
    case OP_LONG1: case OP_SHORT_BINUNICODE: case OP_SHORT_BINBYTES: case OP_SHORT_BINSTRING:
        *prefix = 1;
        return -1;
    case OP_LONG4: case OP_BINUNICODE: case OP_BINBYTES: case OP_BINSTRING:
        *prefix = 4;
        return -1;
    case OP_BINUNICODE8: case OP_BINBYTES8: case OP_BYTEARRAY8:
        *prefix = 8;
        return -1;
    case OP_INT: case OP_LONG: case OP_FLOAT: case OP_STRING: case OP_UNICODE: case OP_GET:
    case OP_PUT: case OP_PERSID:
        return -2;
    case OP_GLOBAL: case OP_INST: return -3;
    case OP_MARK: case OP_STOP: case OP_POP: case OP_POP_MARK: case OP_DUP: case OP_NONE:
    case OP_BINPERSID: case OP_REDUCE: case OP_APPEND: case OP_BUILD: case OP_DICT:
    case OP_EMPTY_DICT: case OP_APPENDS: case OP_LIST: case OP_EMPTY_LIST: case OP_OBJ:
    case OP_SETITEM: case OP_TUPLE: case OP_EMPTY_TUPLE: case OP_SETITEMS: case OP_NEWOBJ:
    case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3: case OP_NEWTRUE: case OP_NEWFALSE:
    case OP_EMPTY_SET: case OP_ADDITEMS: case OP_FROZENSET: case OP_NEWOBJ_EX:
    case OP_STACK_GLOBAL: case OP_MEMOIZE: case OP_NEXT_BUFFER: case OP_READONLY_BUFFER:
        return 0;
    default: return -4;
    }
}

/* GET's decimal index; false when it is not one (the reader then reports it). */
static bool line_index(const unsigned char *p, size_t n, uint64_t *out) {
    uint64_t v = 0;
    if (!n || n > 18)
        return false;
    for (size_t k = 0; k < n; k++) {
        if (p[k] < '0' || p[k] > '9')
            return false;
        v = v * 10 + (uint64_t)(p[k] - '0');
    }
    *out = v;
    return true;
}

bool pickle_scan_fetched(const unsigned char *d, size_t len, pickle_fetched *f) {
    memset(f, 0, sizeof *f);
    size_t pos = 0;
    while (pos < len) {
        unsigned char op = d[pos++];
        if (op == OP_STOP)
            break;
        size_t prefix = 0, n;
        int size = arg_size(op, &prefix);
        if (size == -4)
            goto give_up;
        if (size >= 0) {
            n = (size_t)size;
        } else if (size == -1) {
            if (len - pos < prefix)
                goto give_up;
            uint64_t body = arg_le(d + pos, prefix);
            if (body > len - pos - prefix)
                goto give_up;
            n = prefix + (size_t)body;
        } else {
            const unsigned char *nl = memchr(d + pos, '\n', len - pos);
            if (!nl)
                goto give_up;
            n = (size_t)(nl - (d + pos)) + 1;
            if (size == -3) {
                const unsigned char *nl2 = memchr(nl + 1, '\n', len - pos - n);
                if (!nl2)
                    goto give_up;
                n = (size_t)(nl2 - (d + pos)) + 1;
            }
        }
        if (len - pos < n)
            goto give_up;
        uint64_t index;
        if ((op == OP_BINGET || op == OP_LONG_BINGET) && !mark(f, arg_le(d + pos, n)))
            goto give_up;
        if (op == OP_GET && line_index(d + pos, n - 1, &index) && !mark(f, index))
            goto give_up;
        pos += n;
    }
    /* the rank of each word: the entries fetched before it, the dense memo's index base */
    f->rank = malloc((f->nwords ? f->nwords : 1) * sizeof *f->rank);
    if (!f->rank)
        goto give_up;
    size_t total = 0;
    for (size_t w = 0; w < f->nwords; w++) {
        f->rank[w] = total;
        total += popcount64(f->bits[w]);
    }
    f->count = total;
    f->ok = true;
    return true;
give_up:
    pickle_fetched_free(f);
    return false;
}

bool pickle_is_fetched(const pickle_fetched *f, uint64_t index, size_t *dense) {
    size_t word = (size_t)(index / 64);
    if (word >= f->nwords)
        return false;
    uint64_t bit = (uint64_t)1 << (index % 64);
    if (!(f->bits[word] & bit))
        return false;
    *dense = f->rank[word] + popcount64(f->bits[word] & (bit - 1));
    return true;
}

void pickle_fetched_free(pickle_fetched *f) {
    free(f->bits);
    free(f->rank);
    memset(f, 0, sizeof *f);
}
