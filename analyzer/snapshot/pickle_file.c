/* SPDX-License-Identifier: MIT */
/* pickle_file.c — snapshot files: _dump_snapshot's pickle, or the same dict as JSON. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"

/* The whole file in memory (pickle_read wants it all: the memo can point anywhere back). */
static unsigned char *read_whole(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: error: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > 0)
            cap = (size_t)size + 1;
        rewind(f);
    }
    unsigned char *data = malloc(cap);
    while (data) {
        n += fread(data + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *p = realloc(data, cap * 2);
        if (!p) {
            free(data);
            data = NULL;
            break;
        }
        data = p;
        cap *= 2;
    }
    if (!data || ferror(f)) {
        snprintf(err, errlen, "%s: error: cannot read: %s", path, data ? strerror(errno) : "out of memory");
        free(data);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = n;
    return data;
}

json_t *snapshot_load_file(const char *path, char *err, size_t errlen) {
    size_t len;
    unsigned char *data = read_whole(path, &len, err, errlen);
    if (!data)
        return NULL;
    json_t *v;
    /* PROTO starts every pickle of protocol 2 and later; a protocol 0 or 1 dict starts with MARK
     * or EMPTY_DICT, a list with EMPTY_LIST; no JSON text starts with any of them */
    if (len > 0 && (data[0] == 0x80 || data[0] == '(' || data[0] == '}' || data[0] == ']')) {
        v = pickle_read(data, len, path, err, errlen);
    } else {
        json_error_t je;
        v = json_loadb((const char *)data, len, JSON_ALLOW_NUL, &je);
        if (!v)
            snprintf(err, errlen, "%s:%d:%d: error: %s (neither a pickle, which starts with byte "
                     "0x80, nor JSON)", path, je.line, je.column, je.text);
    }
    free(data);
    return v;
}

int snapshot_save_file(const json_t *v, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "%s: error: cannot create: %s", path, strerror(errno));
        return -1;
    }
    char why[256];
    int rc = pickle_write_file(v, f, why, sizeof why);
    if (fclose(f) && !rc) {
        snprintf(why, sizeof why, "error: cannot write: %s", strerror(errno));
        rc = -1;
    }
    if (rc)
        snprintf(err, errlen, "%s: %s", path, why);
    return rc;
}
