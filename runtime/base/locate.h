/* SPDX-License-Identifier: MIT */
/* locate.h — finding memlife's Python parts: the interpreter (the first python3 that has
 * torch) and files shipped beside the binary (the torch driver, the memlife Python package), in
 * the repository layout and in an install's share/memlife. */
#ifndef MEMLIFE_BASE_LOCATE_H
#define MEMLIFE_BASE_LOCATE_H

#include <stddef.h>

/* The interpreters to try, in order, NUL-separated into list: MEMLIFE_PYTHON alone when set,
 * else every python3 on PATH, then /usr/bin/python3, each once. Returns how many. */
size_t ml_python_candidates(char *list, size_t cap);

/* The first of the paths rel[] (each relative to the memlife binary's folder, "/../x") that can
 * be read, into out; the environment variable env_name, when set, names it instead. Returns 0,
 * or -1 with the reason in err ("set ENV_NAME" included). */
int ml_find_beside_binary(const char *env_name, const char *const rel[], size_t n, char *out,
                          size_t len, char *err, size_t errlen);

#endif
