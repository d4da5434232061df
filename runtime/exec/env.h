/* SPDX-License-Identifier: MIT */
/* env.h — every environment variable memlife reads, checked in one place before anything runs.
 *
 * A bad value must not surface late (MEMLIFE_HOST_MEM_LIMIT=lots used to be reported by the
 * ranks, after mpirun had started, exit 3): cli/main.c calls ml_env_check before any command, so a
 * bad value is exit 2 with the variable's name and value, before a file is read or a process
 * started. The table in env.c lists each variable, who reads it and what it must be; a new getenv
 * in memlife belongs there. */
#ifndef MEMLIFE_ENV_H
#define MEMLIFE_ENV_H

#include <stddef.h>
#include <stdint.h>

/* Returns 0, or -1 with err: "environment variable MEMLIFE_HOST_MEM_LIMIT='lots' is not a byte
 * count (an expression such as 2GiB)". Unset variables are fine; set ones must be valid. */
int ml_env_check(char *err, size_t len);

/* MEMLIFE_HOST_MEM_LIMIT as the host backend reads it: a schedule expression of bytes (2GiB,
 * "1 MiB + 1"), >= 0. *out is 0 when unset. Returns 0 or -1 with err. */
int ml_env_host_mem_limit(uint64_t *out, char *err, size_t len);

/* The k-th variable a user may set (the table's rows with a description), for the man page's
 * ENVIRONMENT: its description (troff) and *name, or NULL past the last. */
const char *ml_env_doc(size_t k, const char **name);

#endif
