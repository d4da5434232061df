/* SPDX-License-Identifier: MIT */
/* memlife.h — memlife's public C API: load schedules, predict every rank's steady and peak
 * memory, and write the report, as `memlife predict` does. Link with libmemlife (pkg-config
 * --cflags --libs memlife). Everything else in the tree is internal and may change; this header
 * changes only with MEMLIFE_API_VERSION.
 *
 *   memlife_options o = {0};                  // the files' own world and let: values
 *   memlife_result *r;
 *   if (memlife_predict(files, n, &o, &r) != 0) fputs(memlife_errors(r), stderr);
 *   for (size_t k = 0; k < memlife_count(r); k++)
 *       printf("%s peak %llu\n", memlife_name(r, k),
 *              (unsigned long long)memlife_peak(r, k, 0, MEMLIFE_REQUESTED));
 *   memlife_report(r, "json", "out.json");
 *   memlife_free(r);
 *
 * Sizes are bytes. Functions never exit the process or print, except that an allocation failure
 * ends it with exit 3 as the memlife command does. Not thread-safe across calls that share a
 * result. */
#ifndef MEMLIFE_H
#define MEMLIFE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMLIFE_API_VERSION 1

/* The two memory views: requested (the sum of live buffers, torch.cuda.memory_allocated) and
 * device (cudaMemGetInfo by the 2 MiB page model). */
typedef enum { MEMLIFE_REQUESTED = 0, MEMLIFE_DEVICE = 1 } memlife_view;

typedef struct {
    const char *const *set;   /* "NAME=VALUE" overrides of let: values, as --set; may be NULL */
    size_t n_set;
    int world;                /* 0: each file's own world: */
    const char *plan;         /* only this plan of files with plans:; NULL: every plan */
} memlife_options;

typedef struct memlife_result memlife_result;

/* "0.1.0" */
const char *memlife_version(void);

/* Loads, expands, lints and predicts files[0..n) ("-" reads standard input where the build
 * supports it). Returns 0, or -1 when any file failed to load, lint or predict: then
 * memlife_errors(*out) says why, "file:line:col: error: ..." per line, and memlife_count is 0.
 * *out is set either way and must be freed with memlife_free. */
int memlife_predict(const char *const *files, size_t n, const memlife_options *o,
                    memlife_result **out);

/* The diagnostics (errors, their notes, warnings), one per line; "" when there were none. */
const char *memlife_errors(const memlife_result *r);

/* Items: one per (file, plan). */
size_t memlife_count(const memlife_result *r);
const char *memlife_name(const memlife_result *r, size_t item);   /* "name" or "name/plan" */
const char *memlife_file(const memlife_result *r, size_t item);
int memlife_world(const memlife_result *r, size_t item);
/* Predicted bytes of a rank in a view; 0 for an item or rank out of range. */
uint64_t memlife_steady(const memlife_result *r, size_t item, int rank, memlife_view v);
uint64_t memlife_peak(const memlife_result *r, size_t item, int rank, memlife_view v);
/* Failed expectations of an item's expect: block; -1 when it has none. */
int memlife_expect_failures(const memlife_result *r, size_t item);

/* Writes the report as format "table", "json", "csv" or "md" (the JSON of docs/json.md) to path
 * atomically, or to standard output when path is NULL or "-". Returns 0 or -1 (an unknown
 * format, or the write failed: the reason on standard error). */
int memlife_report(const memlife_result *r, const char *format, const char *path);

void memlife_free(memlife_result *r);

#ifdef __cplusplus
}
#endif

#endif
