/* SPDX-License-Identifier: MIT */
/* gate.h — the baseline gate of `memlife check --baseline OLD.json`: every predicted steady and
 * peak of every view and rank held to a previous result (the JSON that predict or check wrote
 * with --format json), with a tolerance. A regression is an error at the op that now reaches the
 * peak (for a steady: the plan's first line), naming the old and new bytes, where the peak was
 * and is, and the buffers live at the new peak that were not live at the old one (the same
 * "only at B's peak" reading as `memlife diff`, from the names the baseline recorded: the old
 * schedule itself is not at hand).
 *
 * Items are matched by name ("name" or "name/plan", the result's "name") and rank; an item that
 * the baseline lacks is a note (a new schedule has nothing to regress from), or an error with
 * strict (a CI gate that must hold every schedule to the baseline). A plan the baseline lacks
 * while the baseline's other plans of that schedule are gone from the file is reported as a
 * probable rename ("plan 'X' is gone; 'Y' is new"). A rank the baseline lacks (another world)
 * is skipped. */
#ifndef MEMLIFE_GATE_H
#define MEMLIFE_GATE_H

#include "report/report.h"

typedef struct {
    bool percent;              /* "5%": a growth of up to 5% of the baseline's bytes passes */
    double pct;
    uint64_t bytes;            /* "4096", "64KiB", "1MiB": up to that many bytes pass */
} gate_tolerance;

/* Parses PCT% or BYTES with an optional B/KiB/MiB/GiB suffix. Returns 0, or -1 when s is not
 * one of those. */
int gate_parse_tolerance(const char *s, gate_tolerance *t);

/* Compares r with the baseline at path. Regressions go to errors (one per view and
 * steady/peak, naming the ranks that grew alike: "on ranks 0-7") and are counted, one per rank,
 * into per_item[k] for r's item k (per_item may be NULL); items the baseline lacks set
 * missing[k] (missing may be NULL) and go to notes, or to errors when strict. Returns the number
 * of regressions (per rank) and, with strict, of items missing, or -1 when the
 * baseline cannot be read or is not a memlife result (the reason in errors, as
 * "path:line:col: error: ..."). */
int gate_compare(const report *r, const char *path, const gate_tolerance *t, bool strict,
                 ml_diags *errors, ml_diags *notes, size_t *per_item, bool *missing);

#endif
