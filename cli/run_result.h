/* SPDX-License-Identifier: MIT */
/* run_result.h — one rank's measurement compared with the prediction.
 *
 * The measurement travels as ir/measure.h's record (one wire format, one reader and writer);
 * rank 0 holds it in report_measured.rec and compares it here. */
#ifndef MEMLIFE_RUN_RESULT_H
#define MEMLIFE_RUN_RESULT_H

#include "report/report.h"

/* Sets m->match and m->mismatch: requested after every op exactly as predicted (and steady and
 * peak); device steady and peak when the backend read them (exact when the page model is exact,
 * else the peak within the model's bounds); under a caching allocator (the torch backend, the
 * record's pool_caches) the device reading after every op equals the allocator's reserved bytes
 * instead, and the torch view holds those to the allocator model. */
void run_result_compare(report_measured *m, const pred_rank *pred, const rank_plan *plan);

#endif
