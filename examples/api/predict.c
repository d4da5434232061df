/* SPDX-License-Identifier: MIT */
/* predict.c — memlife's C API in a few lines: predict schedules and print each one's largest
 * requested and device peak over the ranks, then write the JSON report if asked.
 *
 *   cc predict.c $(pkg-config --cflags --libs memlife) -o predict
 *   ./predict schedules/seed/03_rs_ag_naive.yaml      # rs-ag-naive-lifetime world 4 ... 576 MiB */
#include <memlife.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCHEDULE... [--json OUT.json]\n", argv[0]);
        return 2;
    }
    const char *json = NULL;
    if (argc > 3 && !strcmp(argv[argc - 2], "--json")) {
        json = argv[argc - 1];
        argc -= 2;
    }
    memlife_options o = {0};
    memlife_result *r;
    if (memlife_predict((const char *const *)argv + 1, (size_t)argc - 1, &o, &r) != 0) {
        fputs(memlife_errors(r), stderr);
        memlife_free(r);
        return 2;
    }
    for (size_t k = 0; k < memlife_count(r); k++) {
        uint64_t req = 0, dev = 0;
        for (int rank = 0; rank < memlife_world(r, k); rank++) {
            if (memlife_peak(r, k, rank, MEMLIFE_REQUESTED) > req)
                req = memlife_peak(r, k, rank, MEMLIFE_REQUESTED);
            if (memlife_peak(r, k, rank, MEMLIFE_DEVICE) > dev)
                dev = memlife_peak(r, k, rank, MEMLIFE_DEVICE);
        }
        printf("%s world %d requested peak %" PRIu64 " device peak %" PRIu64 "\n",
               memlife_name(r, k), memlife_world(r, k), req, dev);
    }
    int rc = json && memlife_report(r, "json", json) != 0 ? 3 : 0;
    memlife_free(r);
    return rc;
}
