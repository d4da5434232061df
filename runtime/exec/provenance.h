/* SPDX-License-Identifier: MIT */
/* provenance.h — where a result came from, as the chapter's "sources and versions" section
 * records it: memlife version and commit, the backend's facts (NCCL version, CUDA runtime and
 * driver, GPU names and count, topology; Open MPI version for host), the NCCL_* environment in
 * force, the MPI library, world size, hosts and the date.
 *
 * The text is "key=value\n" lines (the form rt_backend_ops.provenance appends and report.provenance
 * carries), so every result format prints the same facts. */
#ifndef MEMLIFE_PROVENANCE_H
#define MEMLIFE_PROVENANCE_H

#include "exec/rt.h"
#include "ir/measure.h"

/* Collects the provenance of this run (malloc'd text). be may be NULL (no backend ran). Under
 * MPI (rt_mpi_active) every rank must call it: the host names are gathered from all ranks with a
 * deadline (rt_options timeout); otherwise hosts is this host. world is the run's world size. */
char *ml_provenance_collect(const rt_backend_ops *be, int world);

/* Reading the text (ml_provenance_get, ml_provenance_summary) is in ir/measure.h, below the
 * analyzer that prints it. */

#endif
