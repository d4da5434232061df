/* SPDX-License-Identifier: MIT */
/* bench_report.h — the results of `memlife bench` in every report format.
 *
 * One table per timing (memlife, i.e. eager launches through the executor; CUDA graph replays)
 * in the chapter's layout: size | mode | median us | P95 us | CV | payload GB/s | busbw GB/s |
 * ratio, where mode is the plan and ratio is median / median of the first plan at the same size,
 * stated only when both CVs are at most cv_max (else "unstable", the raw numbers kept), plus the
 * bare calls' median and memlife / bare, and the host's issue time of each (median, memlife /
 * bare) with the difference; graph rows say how many back-to-back replays a timed run held.
 * Then the kernels counted inside each region.
 *
 * JSON names (stable; tools/gpu_bench.sh and CI read them): `command` "bench", `schedule`,
 * `file`, `backend`, `launch`, `align`, `world`, `warmup`, `cycles`, `cv_max_percent`, `sweep_let`,
 * `sizes`: [{`sweep_value`, `payload_bytes`, `plans`: [{`plan`, `payload_bytes`, `bus_bytes`,
 * `collectives` (calls per rank in the timed part), `check_failures`, `memlife` | `bare` | `graph`: {`n`, `median_us`, `p95_us`, `mean_us`,
 * `cv_percent`, `min_us`, `max_us`, `payload_gbps`, `busbw_gbps`, `samples_us`: [...],
 * and for memlife and graph `ratio` (null unless stable), `ratio_status` ("reference" |
 * "stable" | "unstable"), for memlife and bare `issue_median_us`, `issue_samples_us`: [...],
 * for graph `replays`}, `overhead`: {`ratio`, `extra_us`, `per_cycle`: {`ratio`, `ci95_low`,
 * `ci95_high`, `coverage`}} (memlife / bare of the spans; per cycle: the median of the cycles'
 * ratios and its distribution-free 95% interval, null below 6 cycles), `issue_overhead`:
 * {`memlife_us`, `bare_us`, `extra_us`, `per_cycle`: {`extra_us`, `ci95_low`, `ci95_high`,
 * `coverage`, `per_collective_us`}} (medians of the host's issue times; per cycle: the median of
 * the cycles' differences, and that over the plan's collectives),
 * `kernels`: [{`region` (null: the whole timed part), `total`, `by_collective`: {name: n},
 * `names`: [{`name`, `count`}]}]}]}], `kernels`: {`requested`, `available`, `note`},
 * `provenance`: {key: value}. Times are microseconds; a value that is not defined is null. */
#ifndef MEMLIFE_BENCH_REPORT_H
#define MEMLIFE_BENCH_REPORT_H

#include "report/report.h"
#include "bench/bench.h"

typedef struct {
    const char *name;                /* the plan */
    uint64_t payload_bytes;          /* bench_plan_bytes */
    double bus_bytes;
    size_t collectives;              /* bench_plan_collectives: calls per rank in the timed part */
    const bench_plan_result *res;
} bench_report_plan;

typedef struct {
    int64_t sweep_value;             /* the sweep let's value here; -1 without a sweep */
    bench_report_plan *plans;
    size_t n_plans;
} bench_report_size;

typedef struct {
    const char *schedule, *about, *file;
    const char *sweep_let;           /* NULL: the file has no sweep */
    const char *backend, *launch;    /* launch: "mpi" (one process per rank) or "single" */
    int world, warmup, cycles;
    double cv_max;                   /* percent */
    bool kernels_requested;
    const char *kernels_note;        /* why there is no kernel evidence; NULL when there is */
    const bench_report_size *sizes;
    size_t n_sizes;
    const char *provenance;          /* "key=value\n" lines, or NULL */
    bool align;                      /* memlife and bare spans started aligned on the device */
} bench_report;

/* Appends the whole report in fmt to out. Returns 0 or -1. */
int bench_report_render(const bench_report *r, report_format fmt, ml_str *out);
/* Renders and writes to path atomically, or to stdout when path is NULL or "-". Returns 0, or
 * -1 with a message on stderr. */
int bench_report_emit(const bench_report *r, report_format fmt, const char *path);

#endif
