/* SPDX-License-Identifier: MIT */
/* pickle_tool.c — a snapshot file in, a pickle or JSON out, through snapshot_load_file and
 * pickle_write: what tests/cli/pickle_python.sh checks against python3's pickle. Until memlife
 * has a command that reads snapshots, this is its stand-in.
 * Usage: pickle_tool pickle|json IN OUT   (IN: a pickle or JSON snapshot) */
#include <stdio.h>
#include <string.h>

#include "snapshot/pickle.h"

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "pickle") && strcmp(argv[1], "json"))) {
        fprintf(stderr, "usage: pickle_tool pickle|json IN OUT\n");
        return 2;
    }
    char err[1024];
    json_t *v = snapshot_load_file(argv[2], err, sizeof err);
    if (!v) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc;
    if (!strcmp(argv[1], "pickle")) {
        rc = snapshot_save_file(v, argv[3], err, sizeof err);
        if (rc)
            fprintf(stderr, "%s\n", err);
    } else {
        rc = json_dump_file(v, argv[3], JSON_ENCODE_ANY | JSON_COMPACT);
        if (rc)
            fprintf(stderr, "%s: error: cannot write\n", argv[3]);
    }
    json_decref(v);
    return rc ? 1 : 0;
}
