/* SPDX-License-Identifier: MIT */
/* fuzz_pickle.c — libFuzzer harness for the snapshot pickle reader and writer. Any input must
 * read without a crash, leak or hang; one that reads must write, and what is written must read
 * back equal. Few mutated pickles stay valid, so an input that is not a pickle but is JSON
 * exercises the writer the same way (any jansson tree must round trip).
 * Seeds: tests/fuzz/corpus_pickle/ (pickles, refused ones, and a few JSON texts).
 *
 *   FUZZ_TARGETS=pickle FUZZ_SECONDS=300 make fuzz     (tests/fuzz.sh builds and runs it) */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    json_t *v = pickle_read(data, size, "fuzz", err, sizeof err);
    bool from_json = false;
    if (!v) {
        v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        from_json = true;
    }
    if (!v)
        return 0;
    size_t len;
    unsigned char *written = pickle_write_buffer(v, &len, err, sizeof err);
    /* jansson parses JSON 2048 deep; the pickle limit is PICKLE_MAX_DEPTH, and saying so is right.
     * What pickle_read made is never that deep, so for it any failure is a bug. */
    if (!written && from_json && strstr(err, "nest deeper")) {
        json_decref(v);
        return 0;
    }
    if (!written) {
        fprintf(stderr, "read, then cannot write: %s\n", err);
        abort();
    }
    json_t *back = pickle_read(written, len, "written", err, sizeof err);
    if (!back) {
        fprintf(stderr, "wrote what does not read: %s\n", err);
        abort();
    }
    /* json_equal compares object keys as C strings; a key with a NUL in it can make two equal
     * trees differ (or two different ones equal), so only a difference without such keys counts */
    if (!json_equal(v, back)) {
        char *a = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        char *b = json_dumps(back, JSON_ENCODE_ANY | JSON_COMPACT);
        if (a && b && strcmp(a, b) != 0) {
            fprintf(stderr, "round trip differs:\n%s\n%s\n", a, b);
            abort();
        }
        free(a);
        free(b);
    }
    json_decref(back);
    free(written);
    json_decref(v);
    return 0;
}
