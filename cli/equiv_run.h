/* equiv_run.h — row 1 of `memlife equiv` on a backend: both plans run one after the other in the
 * same job (one backend init, one communicator), each rank reads its result buffer back after
 * each plan, compares them, and the per-rank rows travel to every rank. */
#ifndef MEMLIFE_EQUIV_RUN_H
#define MEMLIFE_EQUIV_RUN_H

#include "../analyzer/equiv.h"
#include "../runtime/rt.h"

typedef struct {
    const rt_backend_ops *be;
    rt_options opt;
    bool mpi;                  /* one rank per process under an MPI launcher */
    int world, rank, n_local;  /* rank: this process's rank under MPI */
} equiv_run_ctx;

/* Starts the backend, collects the provenance (*prov, malloc'd; every rank), runs side[0] then
 * side[1] and compares their result buffers (result[k], symbols of side[k]) on each rank with
 * rtol/atol. On success every rank holds data[world] (malloc'd). Returns 0, or ML_EXIT_RUNTIME
 * after printing what failed (a failure known to one rank only ends the job). */
int equiv_run_data(const equiv_run_ctx *c, const series *const side[2], const uint32_t result[2],
                   double rtol, double atol, equiv_data_rank **data, char **prov);

#endif
