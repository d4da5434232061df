/* SPDX-License-Identifier: MIT */
/* measure.h — what one rank measured, in one record with one wire format and one reader/writer.
 *
 * The executor fills the record (runtime/exec/account.c: rt_measure_fill), each rank encodes it
 * (ml_measure_encode) and the gather ships that text to rank 0 (runtime/exec/mpi_util.c), which
 * decodes it (ml_measure_decode); run's result JSON writes the record's `measured` object with the
 * same writer (ml_measure_json, analyzer/report/report_json.c), and plot, trace and diff read a
 * saved result's `measured` object with the same reader (ml_measure_from_json,
 * analyzer/report/series.c). The record lives below both the executor and the analyzer, so the
 * analyzer never includes the executor's headers.
 *
 * The `measured` object (docs/json.md, schemas/result.schema.json): {`requested`: {`steady`,
 * `peak`}, `device`: {`steady`, `peak`} or null (the backend read no device), `communicator_bytes`,
 * `communicator_stages`: [{`stage`, `bytes`}], `pool`: {`used_current`, `used_high`,
 * `reserved_current`, `reserved_high`, `caches`} when the backend has a pool, `timeline`: [{`op`,
 * `index`, `line`, `requested`, `device`, `t`, and with a pool `pool_used`, `pool_reserved`}]}.
 * The wire text is {`rank`, `measured`: that object, `checks`: [{`name`, `rank`, `status`,
 * `detail`}]}, compact. Byte values are exact integers; `t` is a double written with 17
 * significant digits, so it reads back bit for bit. */
#ifndef MEMLIFE_MEASURE_H
#define MEMLIFE_MEASURE_H

#include "ir/plan.h"

/* Stages of the communicator's memory: init, streams, one per collective, copies. */
#define ML_MEASURE_STAGES (3 + COLL_COUNT)

/* One sample: the rank's state after op `op` (SIZE_MAX: the baseline, before the first op). */
typedef struct {
    size_t op;
    uint64_t requested;        /* live requested bytes after the op */
    int64_t device;            /* device bytes after the op minus the baseline's; 0 unread */
    double t;                  /* seconds since the baseline */
    /* The backend's pool after the op, absolute (not a delta): with has_pool, torch's
     * memory_allocated and memory_reserved (the torch backend), cudaMemPool's used and reserved
     * (the async allocator). The torch view is absolute from an empty allocator, and the torch
     * backend empties the cache before the baseline. */
    bool has_pool;
    uint64_t pool_used, pool_reserved;
} ml_sample;

typedef struct {
    char name[24];             /* "init", "streams", "all_reduce", ..., "copies" */
    uint64_t bytes;
} ml_comm_stage;

/* A data check's row as the rank judged it. */
typedef struct {
    char *name;                /* malloc'd */
    bool pass;
    char detail[240];
} ml_measure_check;

typedef struct {
    int rank;
    uint64_t steady, peak;                 /* requested: live at the end, highest */
    bool has_device;                       /* the backend read device memory */
    uint64_t device_steady, device_peak;   /* above the baseline; a negative delta reads as 0 */
    uint64_t communicator_bytes;           /* NCCL's device bytes before the baseline */
    ml_comm_stage stages[ML_MEASURE_STAGES];   /* communicator_bytes in the order it grew */
    uint32_t n_stages;
    /* The pool at the end (has_pool): current and high-water used and reserved bytes.
     * pool_caches: the pool is PyTorch's caching allocator (the torch backend), so the samples'
     * pool_used / pool_reserved are memory_allocated / memory_reserved. */
    bool has_pool, pool_caches;
    uint64_t pool_used_current, pool_used_high, pool_reserved_current, pool_reserved_high;
    ml_sample *samples;                    /* the baseline, then one after every op (malloc'd) */
    size_t n_samples;
    ml_measure_check *checks;              /* malloc'd */
    size_t n_checks;
} ml_measure;

void ml_measure_free(ml_measure *m);
/* Appends a sample or a check row (the arrays grow; out of memory ends the process). */
ml_sample *ml_measure_push_sample(ml_measure *m);
ml_measure_check *ml_measure_push_check(ml_measure *m, const char *name);

/* What op k of a plan is, for people: the collective's name ("all_gather") or the op kind;
 * "-" when there is no such op. The timeline's `op` key. */
const char *ml_measure_op_label(const rank_plan *p, size_t op);

/* The `measured` object of m (a jansson json_t *, new reference); p names each sample's op and
 * line (NULL: "-" and 0). */
struct json_t;
struct json_t *ml_measure_json(const ml_measure *m, const rank_plan *p);
/* Reads a `measured` object into m (zeroed first; m->rank is left 0). Every key the writer
 * writes is required with its type, except `communicator_stages`, `pool` and its `caches` (absent
 * in results written before it: false) and a sample's pool pair (both or neither). Returns 0, or -1 with err naming the key ("measured.timeline[3].t: not
 * a number"); m holds nothing then. */
int ml_measure_from_json(const struct json_t *o, ml_measure *m, char *err, size_t elen);

/* The wire: m as compact JSON text (malloc'd, NUL-terminated), and back. A text that is not JSON
 * (truncated, garbled) is refused with jansson's line, column and reason. */
char *ml_measure_encode(const ml_measure *m, const rank_plan *p);
int ml_measure_decode(const char *text, size_t len, ml_measure *m, char *err, size_t elen);

/* Provenance text ("key=value\n" lines, runtime/exec/provenance.h collects it): the value of key
 * copied into buf ("" when absent; returns buf), and the one line for the top of table and
 * Markdown reports: "memlife 0.1.0 (abc123) | host | Open MPI v4.1.4 | world 4 | hosts h1 |
 * 2025-01-01T00:00:00Z", with NCCL, CUDA and GPUs when the backend gave them, and the NCCL_*
 * variables set. */
const char *ml_provenance_get(const char *prov, const char *key, char *buf, size_t len);
void ml_provenance_summary(const char *prov, char *buf, size_t len);

#endif
