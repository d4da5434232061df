/* SPDX-License-Identifier: MIT */
/* pickle_int.h — what pickle_read.c and pickle_write.c share: the opcode values (pickletools.py
 * names them; the numbers are the protocol) and their names for diagnostics. */
#ifndef MEMLIFE_SNAPSHOT_PICKLE_INT_H
#define MEMLIFE_SNAPSHOT_PICKLE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pickle_opcode {
    OP_MARK = '(', OP_STOP = '.', OP_POP = '0', OP_POP_MARK = '1', OP_DUP = '2',
    OP_FLOAT = 'F', OP_INT = 'I', OP_BININT = 'J', OP_BININT1 = 'K', OP_LONG = 'L',
    OP_BININT2 = 'M', OP_NONE = 'N', OP_PERSID = 'P', OP_BINPERSID = 'Q', OP_REDUCE = 'R',
    OP_STRING = 'S', OP_BINSTRING = 'T', OP_SHORT_BINSTRING = 'U', OP_UNICODE = 'V',
    OP_BINUNICODE = 'X', OP_APPEND = 'a', OP_BUILD = 'b', OP_GLOBAL = 'c', OP_DICT = 'd',
    OP_EMPTY_DICT = '}', OP_APPENDS = 'e', OP_GET = 'g', OP_BINGET = 'h', OP_INST = 'i',
    OP_LONG_BINGET = 'j', OP_LIST = 'l', OP_EMPTY_LIST = ']', OP_OBJ = 'o', OP_PUT = 'p',
    OP_BINPUT = 'q', OP_LONG_BINPUT = 'r', OP_SETITEM = 's', OP_TUPLE = 't',
    OP_EMPTY_TUPLE = ')', OP_SETITEMS = 'u', OP_BINFLOAT = 'G',
    /* protocol 2 */
    OP_PROTO = 0x80, OP_NEWOBJ = 0x81, OP_EXT1 = 0x82, OP_EXT2 = 0x83, OP_EXT4 = 0x84,
    OP_TUPLE1 = 0x85, OP_TUPLE2 = 0x86, OP_TUPLE3 = 0x87, OP_NEWTRUE = 0x88, OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a, OP_LONG4 = 0x8b,
    /* protocol 3 */
    OP_BINBYTES = 'B', OP_SHORT_BINBYTES = 'C',
    /* protocol 4 */
    OP_SHORT_BINUNICODE = 0x8c, OP_BINUNICODE8 = 0x8d, OP_BINBYTES8 = 0x8e, OP_EMPTY_SET = 0x8f,
    OP_ADDITEMS = 0x90, OP_FROZENSET = 0x91, OP_NEWOBJ_EX = 0x92, OP_STACK_GLOBAL = 0x93,
    OP_MEMOIZE = 0x94, OP_FRAME = 0x95,
    /* protocol 5 */
    OP_BYTEARRAY8 = 0x96, OP_NEXT_BUFFER = 0x97, OP_READONLY_BUFFER = 0x98,
};

/* pickle_scan.c: the memo indices some GET fetches, as a bitset with each word's rank, so that
 * the fetched entries live in a dense array (pickle_is_fetched gives the position). */
typedef struct {
    bool ok;          /* false: the scan gave up; keep every entry */
    uint64_t *bits;
    size_t *rank;
    size_t nwords, count;
} pickle_fetched;
bool pickle_scan_fetched(const unsigned char *data, size_t len, pickle_fetched *f);
bool pickle_is_fetched(const pickle_fetched *f, uint64_t index, size_t *dense);
void pickle_fetched_free(pickle_fetched *f);

#endif
