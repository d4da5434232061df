/* SPDX-License-Identifier: MIT */
/* expect.c — memory expectations against predictions (analyzer.h).
 *
 * A plan's own `expect` replaces the schedule's. Each expectation is evaluated for every rank it
 * names (all ranks when it names none), with that rank's slots, so `M/world` or an expression of
 * `rank` mean what they say on every rank. One row per rank per value given (steady, peak);
 * a row passes when prediction and expectation are equal to the byte. */
#include "predict/analyzer.h"

#include <stdlib.h>

static int eval_at(const sched *s, const expr *e, const int64_t *slots, ml_mark mark,
                   int64_t *out, ml_diags *d) {
    expr_error err;
    if (expr_eval(e, slots, out, &err) < 0) {
        ml_error(d, s->file, mark, "%s in '%s'", err.msg, expr_text(e));
        return -1;
    }
    return 0;
}

static void push_row(expect_row **rows, size_t *n_rows, const expect_row *row) {
    expect_row *r = ml_xrealloc(*rows, (*n_rows + 1) * sizeof *r);
    r[(*n_rows)++] = *row;
    *rows = r;
}

int expect_eval(const sched *s, int plan_index, const sched_params *p, int world,
                const pred_rank *ranks, expect_row **rows, size_t *n_rows, ml_diags *d) {
    const sched_plan *pl = &s->plans[plan_index];
    const sched_expect *ex = pl->n_expects ? pl->expects : s->expects;
    uint32_t n_ex = pl->n_expects ? pl->n_expects : s->n_expects;
    if (n_ex == 0)
        return 0;
    int64_t *slots = ml_xcalloc(EXPR_SLOT_FIRST_LET + s->n_lets, sizeof *slots);
    int failures = 0;
    for (int r = 0; r < world && failures >= 0; r++) {
        slots[EXPR_SLOT_WORLD] = world;
        slots[EXPR_SLOT_RANK] = r;
        if (sched_eval_lets(s, p, world, r, slots, d) < 0) {
            failures = -1;
            break;
        }
        for (uint32_t k = 0; k < n_ex && failures >= 0; k++) {
            const sched_expect *e = &ex[k];
            int64_t who;
            if (e->rank) {
                if (eval_at(s, e->rank, slots, e->mark, &who, d) < 0) {
                    failures = -1;
                    break;
                }
                if (who < 0 || who >= world) {
                    ml_error(d, s->file, e->mark,
                             "expectation for rank %lld, outside the world (%d ranks)",
                             (long long)who, world);
                    failures = -1;
                    break;
                }
                if (who != r)
                    continue;
            }
            const expr *what[2] = {e->steady, e->peak};
            for (int is_peak = 0; is_peak < 2; is_peak++) {
                if (!what[is_peak])
                    continue;
                expect_row row = {.view = e->view, .rank = r, .is_peak = is_peak, .mark = e->mark};
                if (eval_at(s, what[is_peak], slots, e->mark, &row.expected, d) < 0) {
                    failures = -1;
                    break;
                }
                uint64_t got = is_peak ? ranks[r].peak[e->view] : ranks[r].steady[e->view];
                row.got = (int64_t)got;
                row.pass = row.expected >= 0 && (uint64_t)row.expected == got;
                failures += !row.pass;
                push_row(rows, n_rows, &row);
            }
        }
    }
    free(slots);
    return failures;
}
