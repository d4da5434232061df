/* SPDX-License-Identifier: MIT */
/* equiv_cause.c — the causes `memlife equiv` can name (equiv.h) and the one way to add one to a
 * result. A file of its own because the rows (equiv.c) and the data flow (equiv_flow.c) both add
 * causes, and equiv.c runs the data flow: the causes sit below both. */
#include "equiv/equiv.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const equiv_cause_info equiv_causes[CAUSE_COUNT] = {
    [CAUSE_INPUT_COUNT] = {"input_count", "input count != shard x world"},
    [CAUSE_PADDING] = {"padding_identity", "padding not the op's identity"},
    [CAUSE_TRIM] = {"trim", "trim removes more than the tail padding"},
    [CAUSE_OWNER] = {"shard_owner", "shard owner not by communicator rank"},
    [CAUSE_GATHER_ORDER] = {"gather_order", "gather order not source-rank-major"},
    [CAUSE_OP] = {"reduction_op", "reduction op differs"},
    [CAUSE_DTYPE] = {"dtype", "dtype differs"},
    [CAUSE_SCALING] = {"scaling", "pre/post scaling differs"},
    [CAUSE_SHARD_CHANGED] = {"shard_changed", "the shard changed between phases"},
    [CAUSE_SEQUENCE] = {"collective_sequence", "collective sequences inconsistent across ranks"},
    [CAUSE_INPUTS] = {"inputs", "the plans start from different inputs"},
    [CAUSE_LAYOUT] = {"values", "values differ"},
};

void equiv_add_cause(equiv_result *r, equiv_cause_kind kind, int side, int rank,
                     const plan_op *op, const char *fmt, ...) {
    for (size_t k = 0; k < r->n_causes; k++)
        if (r->causes[k].kind == kind && r->causes[k].side == side)
            return;   /* one line per cause and plan: the first rank where it shows */
    r->causes = ml_xrealloc(r->causes, (r->n_causes + 1) * sizeof *r->causes);
    equiv_cause *c = &r->causes[r->n_causes++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->side = side;
    c->rank = rank;
    c->file = r->side[side]->s->file;
    if (op)
        c->mark = plan_op_mark(op);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->text, sizeof c->text, fmt, ap);
    va_end(ap);
}
