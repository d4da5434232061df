/* SPDX-License-Identifier: MIT */
/* run_result.h — one rank's measurement as it travels to rank 0, and its comparison with the
 * prediction.
 *
 * Each rank encodes what it measured (requested and device views, the timeline of one sample per
 * op, its data-check rows) as JSON text (jansson); rank 0 gathers the texts and decodes them into
 * the report's structures. The same path serves a single process driving several ranks (cuda
 * --gpus N), so there is one format and one decoder. */
#ifndef MEMLIFE_RUN_RESULT_H
#define MEMLIFE_RUN_RESULT_H

#include "report/report.h"
#include "exec/rt.h"

/* JSON text of r's measurement (malloc'd, NUL-terminated), after rt_run. */
char *run_result_encode(const rt_rank *r);

/* Decodes one rank's text into m (m->timeline malloc'd) and appends its check rows to checks
 * (report_check, names copied into names). Returns 0, or -1 with err. */
int run_result_decode(const char *text, size_t len, report_measured *m, ml_vec *checks,
                      ml_arena *names, char *err, size_t elen);

/* Sets m->match and m->mismatch: requested after every op exactly as predicted (and steady and
 * peak); device steady and peak when the backend read them (exact when the page model is exact,
 * else the peak within the model's bounds); under a caching allocator (the torch backend, the
 * record's pool_caches) the device reading after every op equals the allocator's reserved bytes
 * instead, and the torch view holds those to the allocator model. */
void run_result_compare(report_measured *m, const pred_rank *pred, const rank_plan *plan);

void run_measured_free(report_measured *m);

#endif
