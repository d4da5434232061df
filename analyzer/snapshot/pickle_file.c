/* SPDX-License-Identifier: MIT */
/* pickle_file.c — snapshot files: _dump_snapshot's pickle, or the same dict as JSON. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "base/input.h"
#include "base/util.h"

json_t *snapshot_load_file(const char *path, char *err, size_t errlen) {
    return snapshot_load_file_hooked(path, NULL, err, errlen);
}

json_t *snapshot_load_file_hooked(const char *path, const pickle_hooks *hooks, char *err,
                                  size_t errlen) {
    /* The whole file in memory (pickle_read wants it all: the memo can point anywhere back),
     * bounded and from regular files or standard input only (base/input.h). */
    ml_input in;
    char why[512];
    if (ml_input_read(path, &in, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: error: %s", path, why);
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)in.data;
    size_t len = in.len;
    json_t *v;
    /* PROTO starts every pickle of protocol 2 and later; a protocol 0 or 1 dict starts with MARK
     * or EMPTY_DICT, a list with EMPTY_LIST; no JSON text starts with any of them */
    if (len > 0 && (data[0] == 0x80 || data[0] == '(' || data[0] == '}' || data[0] == ']')) {
        v = pickle_read_hooked(data, len, path, hooks, err, errlen);
    } else {
        json_error_t je;
        v = json_loadb((const char *)data, len, JSON_ALLOW_NUL, &je);
        if (!v)
            snprintf(err, errlen, "%s:%d:%d: error: %s (neither a pickle, which starts with byte "
                     "0x80, nor JSON)", path, je.line, je.column, je.text);
    }
    ml_input_free(&in);
    return v;
}

int snapshot_save_file(const json_t *v, const char *path, char *err, size_t errlen) {
    size_t len;
    char why[256];
    unsigned char *bytes = pickle_write_buffer(v, &len, why, sizeof why);
    if (!bytes) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    /* atomically, as every output: no partial pickle where the write fails */
    int rc = ml_write_file_atomic(path, (const char *)bytes, len);
    if (rc)
        snprintf(err, errlen, "%s: error: cannot write: %s", path, strerror(errno));
    free(bytes);
    return rc;
}
