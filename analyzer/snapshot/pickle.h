/* SPDX-License-Identifier: MIT */
/* pickle.h — PyTorch memory snapshots as jansson trees: a pickle reader that never runs code, a
 * pickle writer that PyTorch's memory_viz opens, and a loader that takes pickle or JSON.
 *
 * torch.cuda.memory._dump_snapshot() pickles a plain dict (segments, device_traces,
 * allocator_settings, external_annotations). Unpickling with Python executes whatever GLOBAL and
 * REDUCE opcodes a file carries, so an untrusted snapshot must not go through pickle.load. The
 * reader here is a stack machine for the data opcodes only; every opcode that imports or calls
 * (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, PERSID, BINPERSID, EXT1/2/4,
 * NEXT_BUFFER, READONLY_BUFFER) is refused at its byte offset.
 *
 * Mapping: dict -> object (str keys only), list/tuple/set/frozenset -> array, str -> string,
 * bytes/bytearray -> string when valid UTF-8, int -> integer (int64), float -> real (finite),
 * True/False -> true/false, None -> null.
 *
 * Sharing: a memoized value fetched again (GET) is the same json_t, with one more reference, as
 * Python shares the object. Treat a returned tree as read-only, or json_deep_copy it first.
 *
 * Depends on libc and jansson only. */
#ifndef MEMLIFE_SNAPSHOT_PICKLE_H
#define MEMLIFE_SNAPSHOT_PICKLE_H

#include <stddef.h>

#include <jansson.h>

/* Containers nest at most this deep (a scalar is depth 0, [] is 1). jansson frees, compares
 * and dumps trees recursively, so the bound protects every later consumer's C stack. A real
 * snapshot nests 6 deep. */
#define PICKLE_MAX_DEPTH 512

/* A pickle may share one container many times (a list of a list of ... each fetched twice is 2^N
 * nodes from N opcodes). The tree, counted with every share expanded, may hold at most this many
 * nodes per input byte (plus PICKLE_MAX_EXPANSION_BASE), so walking it stays linear in the input. */
#define PICKLE_MAX_EXPANSION 1024
#define PICKLE_MAX_EXPANSION_BASE ((size_t)1 << 20)

/* Reads the pickle data[0..len) (protocols 0 to 5, data opcodes only). Returns a new reference,
 * or NULL with a one-line diagnostic in err: "FILE: byte N: error: ...", N being the offending
 * opcode's offset (file NULL reads as "<pickle>"). The whole input must be one pickle: bytes after
 * its STOP are an error. */
json_t *pickle_read(const unsigned char *data, size_t len, const char *file, char *err,
                    size_t errlen);

/* Where pickle_write puts its bytes: called with successive pieces; returns 0, or -1 to stop the
 * write (pickle_write then fails with "cannot write the pickle"). */
typedef int (*pickle_sink)(void *ctx, const void *bytes, size_t n);

/* A consumer that digests parts of the tree as they are read, so that they never all live at
 * once: item() sees each value as it goes into a list (the list, the value's index there, the
 * value); returning nonzero says it took what it needs, and None takes the value's place. The
 * reader keeps no other reference to a value that no GET fetches later, so a dropped value is
 * freed at once. */
typedef struct {
    void *user;
    int (*item)(void *user, const json_t *list, size_t index, const json_t *value);
} pickle_hooks;
json_t *pickle_read_hooked(const unsigned char *data, size_t len, const char *file,
                           const pickle_hooks *hooks, char *err, size_t errlen);

/* Writes v as a protocol 4 pickle, framed in 64 KiB FRAMEs as Python does, using only opcodes
 * that torch/utils/viz/MemoryViz.js reads. Every string is memoized, so a filename repeated a
 * million times is written once. Object keys and strings go out as str, integers as
 * BININT1/BININT2/BININT/LONG1, reals as BINFLOAT. Returns 0, or -1 with err set (nesting deeper
 * than PICKLE_MAX_DEPTH, a sink failure, out of memory). */
int pickle_write(const json_t *v, pickle_sink sink, void *ctx, char *err, size_t errlen);

/* pickle_write into a malloc'd buffer (free it); *len gets its size. NULL with err on failure. */
unsigned char *pickle_write_buffer(const json_t *v, size_t *len, char *err, size_t errlen);

/* Reads a snapshot file: a pickle when its first byte is 0x80 (PROTO, protocol 2 and up) or one
 * that starts a protocol 0/1 pickle ('(', '}', ']'), JSON otherwise. Returns a new reference, or NULL with "FILE: ..." in err. */
json_t *snapshot_load_file(const char *path, char *err, size_t errlen);
/* The same, a pickle read with hooks (a JSON file is read whole, without them). */
json_t *snapshot_load_file_hooked(const char *path, const pickle_hooks *hooks, char *err,
                                  size_t errlen);

/* Writes v to path as a protocol 4 pickle (memory_viz opens it). 0, or -1 with err set. */
int snapshot_save_file(const json_t *v, const char *path, char *err, size_t errlen);

#endif
