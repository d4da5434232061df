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

/* Collects the provenance of this run (malloc'd text). be may be NULL (no backend ran). Under
 * MPI (rt_mpi_active) every rank must call it: the host names are gathered from all ranks with a
 * deadline (rt_options timeout); otherwise hosts is this host. world is the run's world size. */
char *ml_provenance_collect(const rt_backend_ops *be, int world);

/* The value of key in provenance text, copied into buf ("" when absent). Returns buf. */
const char *ml_provenance_get(const char *prov, const char *key, char *buf, size_t len);

/* One line for the top of table and Markdown reports:
 * "memlife 0.1.0 (abc123) | host | Open MPI v4.1.4 | world 4 | hosts h1 | 2025-01-01T00:00:00Z",
 * with NCCL, CUDA and GPUs when the backend gave them, and the NCCL_* variables set. */
void ml_provenance_summary(const char *prov, char *buf, size_t len);

#endif
