/* SPDX-License-Identifier: MIT */
/* equiv_run.h — row 1 of `memlife equiv` on a backend: both plans run one after the other in the
 * same job (one backend init, one communicator), each rank reads its result buffer back after
 * each plan, compares them, and the per-rank rows travel to every rank. */
#ifndef MEMLIFE_EQUIV_RUN_H
#define MEMLIFE_EQUIV_RUN_H

#include "equiv/equiv.h"
#include "exec/job.h"

typedef struct {
    rt_job job;
    bool kernels;              /* --kernels: collect each plan's kernels with CUPTI */
} equiv_run_ctx;

/* --kernels' outcome: per[k] (malloc'd, [world], on every rank) the kernels of plan k on each
 * rank, both NULL when any rank could not collect them; then why says why not. */
typedef struct {
    equiv_kernels_rank *per[2];
    char why[400];
} equiv_run_kernels;

/* Starts the backend, collects the provenance (*prov, malloc'd; every rank), runs side[0] then
 * side[1] and compares their result buffers (result[k], symbols of side[k]) on each rank with
 * rtol/atol. On success every rank holds data[world] (malloc'd) and, with c->kernels, *kernels.
 * Returns 0, or ML_EXIT_RUNTIME after printing what failed (a failure known to one rank only ends
 * the job). A rank that cannot collect kernels is no failure: the run goes on without them.
 *
 * Each plan's kernel window opens after the backend's warm-up (rt_run's baseline; its warm-up
 * collectives are NCCL kernels too) with every local GPU idle, and closes after the plan with
 * every local GPU synchronized, so it holds that plan's kernels alone. With several GPUs in one
 * process (cuda --gpus N), local rank k drives device k: its kernels are device k's. */
int equiv_run_data(const equiv_run_ctx *c, const series *const side[2], const uint32_t result[2],
                   double rtol, double atol, equiv_data_rank **data, equiv_run_kernels *kernels,
                   char **prov);

#endif
