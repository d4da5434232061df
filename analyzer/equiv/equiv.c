/* SPDX-License-Identifier: MIT */
/* equiv.c — the four rows of `memlife equiv` (equiv.h): result buffers, the per-rank facts of
 * rows 2 and 3, the state of row 4, and row 1's verdict from data or from the data flow. */
#include "equiv/equiv.h"
#include "report/report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const equiv_row_keys[EQ_ROW_COUNT] = {"output", "communication", "structure", "state"};
const char *const equiv_row_names[EQ_ROW_COUNT] = {
    "1 output semantics", "2 communication", "3 execution structure", "4 state"};

/* ---- Result buffers ---------------------------------------------------------------------------*/

/* Live at the end of p: allocated and not freed afterwards. */
static bool live_at_end(const rank_plan *p, uint32_t buf) {
    bool live = false;
    for (size_t k = 0; k < p->n_ops; k++) {
        if (p->ops[k].kind == OP_ALLOC && p->ops[k].u.alloc.buf == buf)
            live = true;
        else if (p->ops[k].kind == OP_FREE && p->ops[k].u.free.buf == buf)
            live = false;
    }
    return live;
}

static bool live_everywhere(const series *s, uint32_t buf) {
    for (int r = 0; r < s->world; r++)
        if (!live_at_end(&s->plans[r], buf))
            return false;
    return true;
}

static int find_buffer(const series *s, const char *name, uint32_t *out) {
    const sched_symtab *t = &s->s->syms[SYM_BUFFER];
    for (uint32_t k = 0; k < t->n; k++)
        if (!strcmp(t->names[k], name)) {
            *out = k;
            return 0;
        }
    return -1;
}

/* The buffers live at the end of every rank of s, in symbol order. */
static uint32_t end_buffers(const series *s, uint32_t *bufs, uint32_t max) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < s->s->syms[SYM_BUFFER].n && n < max; k++)
        if (live_everywhere(s, k))
            bufs[n++] = k;
    return n;
}

int equiv_pick_results(const series *a, const series *b, const char *name_a, const char *name_b,
                       uint32_t out[2], ml_diags *d) {
    const series *side[2] = {a, b};
    static const ml_mark none = {0, 0};
    if (name_a) {
        const char *names[2] = {name_a, name_b ? name_b : name_a};
        for (int k = 0; k < 2; k++) {
            if (find_buffer(side[k], names[k], &out[k]) != 0) {
                ml_error(d, side[k]->s->file, none, "no buffer '%s' in plan '%s'", names[k],
                         side[k]->label);
                return -1;
            }
            if (!live_everywhere(side[k], out[k])) {
                ml_error(d, side[k]->s->file, none,
                         "result buffer '%s' is not live at the end of plan '%s' on every rank "
                         "(a freed buffer cannot be read after the run)", names[k],
                         side[k]->label);
                return -1;
            }
        }
        return 0;
    }
    uint32_t ea[64], eb[64], na = end_buffers(a, ea, 64), nb = end_buffers(b, eb, 64);
    uint32_t common = 0;
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++)
            if (!strcmp(sched_sym_name(a->s, SYM_BUFFER, ea[i]),
                        sched_sym_name(b->s, SYM_BUFFER, eb[j]))) {
                if (common++ == 0) {
                    out[0] = ea[i];
                    out[1] = eb[j];
                }
            }
    if (common == 1)
        return 0;
    if (common == 0 && na == 1 && nb == 1) {
        out[0] = ea[0];
        out[1] = eb[0];
        return 0;
    }
    if (na == 0 || nb == 0) {
        const series *s = na == 0 ? a : b;
        ml_error(d, s->s->file, none,
                 "plan '%s' frees every buffer before it ends: keep the result live, or name it "
                 "with --result NAME[=NAME_B]", s->label);
    } else {
        ml_error(d, a->s->file, none,
                 "cannot tell which buffers are the results (%u live at the end of '%s', %u of "
                 "'%s', %u names in common): say --result NAME[=NAME_B]", na, a->label, nb,
                 b->label, common);
    }
    return -1;
}

/* ---- Rows 2 and 3: facts per rank -------------------------------------------------------------*/

static void facts_of(const rank_plan *p, equiv_facts *f) {
    memset(f, 0, sizeof *f);
    uint64_t *alloc_bytes = ml_xcalloc(p->s->syms[SYM_BUFFER].n + 1, sizeof *alloc_bytes);
    bool in_group = false, group_has[COLL_COUNT] = {false};   /* kernel families of the group */
    for (size_t k = 0; k < p->n_ops; k++) {
        const plan_op *op = &p->ops[k];
        switch (op->kind) {
        case OP_COLL: {
            ml_coll c = op->u.coll.coll;
            const ml_coll_info *ci = &ml_colls[c];
            /* the ring is the rank's group of the collective's communicator (`comm:`); a rank
             * in none of its groups issues nothing (lint refuses it) */
            int n = plan_comm_size(p->comms, p->world, op->u.coll.comm, p->rank);
            if (n == 0)
                break;
            uint64_t send = ml_coll_send_count(c, plan_coll_count(op), n);
            uint64_t recv = ml_coll_recv_count(c, plan_coll_count(op), n);
            /* The full payload: AllReduce/ReduceScatter the send size, AllGather the recv size. */
            double full = (double)(send > recv ? send : recv) * ml_dtypes[op->u.coll.send.dtype].size;
            int steps = ci->ring_steps(n);
            double bytes = ci->link_bytes(full, n);
            f->calls[c]++;
            f->n_calls++;
            ml_coll fam = ml_coll_kernel_family(c);
            if (!ci->p2p || !in_group || !group_has[fam]) {
                f->kernels[fam]++;
                f->n_kernels++;
            }
            group_has[fam] |= in_group && ci->p2p;
            f->ring_steps += steps;
            f->steps_by[c] += steps;
            f->link_bytes += bytes;
            f->bytes_by[c] += bytes;
            break;
        }
        case OP_GROUP_BEGIN:
            in_group = true;
            memset(group_has, 0, sizeof group_has);
            break;
        case OP_GROUP_END: in_group = false; break;
        case OP_SYNC: f->syncs++; break;
        case OP_WAIT: f->waits++; break;
        case OP_ALLOC: alloc_bytes[op->u.alloc.buf] = op->u.alloc.bytes; break;
        case OP_FREE: {
            const char *name = sched_sym_name(p->s, SYM_BUFFER, op->u.free.buf);
            f->n_intermediate++;
            f->intermediate_bytes += alloc_bytes[op->u.free.buf];
            size_t n = strlen(f->intermediates);
            if (!strstr(f->intermediates, name) || n == 0)
                snprintf(f->intermediates + n, sizeof f->intermediates - n, "%s%s", n ? ", " : "",
                         name);
            break;
        }
        default: break;
        }
    }
    free(alloc_bytes);
}

static bool same_call_sequence(const rank_plan *a, const rank_plan *b) {
    size_t i = 0, j = 0;
    for (;;) {
        while (i < a->n_ops && a->ops[i].kind != OP_COLL)
            i++;
        while (j < b->n_ops && b->ops[j].kind != OP_COLL)
            j++;
        if (i == a->n_ops || j == b->n_ops)
            return i == a->n_ops && j == b->n_ops;
        if (a->ops[i].u.coll.coll != b->ops[j].u.coll.coll)
            return false;
        i++;
        j++;
    }
}

static int64_t rounded(double bytes) { return llround(bytes); }

static void size_text(double bytes, char *buf, size_t len) {
    report_size_cell((uint64_t)rounded(bytes), buf, len);
}

/* "reduce_scatter 3 + all_gather 3 = 6 steps, 192 MiB + 192 MiB = 384 MiB" */
static void comm_text(const equiv_facts *f, char *buf, size_t len) {
    ml_str steps = {0}, bytes = {0};
    int parts = 0;
    for (int c = 0; c < COLL_COUNT; c++) {
        if (!f->calls[c])
            continue;
        char sz[72];
        size_text(f->bytes_by[c], sz, sizeof sz);
        ml_str_printf(&steps, "%s%s %lld", parts ? " + " : "", ml_colls[c].name,
                      (long long)f->steps_by[c]);
        ml_str_printf(&bytes, "%s%s", parts ? " + " : "", sz);
        parts++;
    }
    char total[72];
    size_text(f->link_bytes, total, sizeof total);
    if (parts == 0)
        snprintf(buf, len, "no collectives: 0 steps, 0 B");
    else if (parts == 1)
        snprintf(buf, len, "%s steps, %s", steps.s, total);
    else
        snprintf(buf, len, "%s = %lld steps, %s = %s", steps.s, (long long)f->ring_steps, bytes.s,
                 total);
    ml_str_free(&steps);
    ml_str_free(&bytes);
}

/* "2 calls (reduce_scatter 1, all_gather 1), 2 kernels, 1 sync, 0 waits, 2 intermediates
 * (full, shard: 320 MiB)" */
static void structure_text(const equiv_facts *f, char *buf, size_t len) {
    ml_str o = {0};
    ml_str_printf(&o, "%u call%s (", f->n_calls, f->n_calls == 1 ? "" : "s");
    int parts = 0;
    for (int c = 0; c < COLL_COUNT; c++)
        if (f->calls[c])
            ml_str_printf(&o, "%s%s %u", parts++ ? ", " : "", ml_colls[c].name, f->calls[c]);
    char sz[72];
    report_size_cell(f->intermediate_bytes, sz, sizeof sz);
    ml_str_printf(&o, "%s), %u kernel%s, %u sync%s, %u wait%s, %u intermediate%s",
                  parts ? "" : "none", f->n_kernels, f->n_kernels == 1 ? "" : "s", f->syncs,
                  f->syncs == 1 ? "" : "s", f->waits, f->waits == 1 ? "" : "s", f->n_intermediate,
                  f->n_intermediate == 1 ? "" : "s");
    if (f->n_intermediate)
        ml_str_printf(&o, " (%s: %s)", f->intermediates, sz);
    snprintf(buf, len, "%s", o.s);
    ml_str_free(&o);
}

static bool facts_uniform(const equiv_facts *f, int world) {
    for (int r = 1; r < world; r++)
        if (memcmp(&f[r], &f[0], sizeof *f) != 0)
            return false;
    return true;
}

/* Side text: rank 0's, saying so when other ranks differ. */
static void side_text(const equiv_facts *f, int world, void (*fn)(const equiv_facts *, char *, size_t),
                      char *buf, size_t len) {
    char t[300];
    fn(&f[0], t, sizeof t);
    snprintf(buf, len, "%s%s", facts_uniform(f, world) ? "" : "rank 0: ", t);
}

static void row_comm(equiv_result *r) {
    const equiv_facts *a = r->facts[0], *b = r->facts[1];
    side_text(a, r->world, comm_text, r->rows[EQ_COMM].a, sizeof r->rows[EQ_COMM].a);
    side_text(b, r->world, comm_text, r->rows[EQ_COMM].b, sizeof r->rows[EQ_COMM].b);
    for (int k = 0; k < r->world; k++) {
        if (a[k].ring_steps != b[k].ring_steps || rounded(a[k].link_bytes) != rounded(b[k].link_bytes)) {
            char x[72], y[72];
            size_text(a[k].link_bytes, x, sizeof x);
            size_text(b[k].link_bytes, y, sizeof y);
            r->rows[EQ_COMM].verdict = EQV_FAILS;
            snprintf(r->rows[EQ_COMM].detail, sizeof r->rows[EQ_COMM].detail,
                     "rank %d: %lld vs %lld ring steps, %s vs %s over its link", k,
                     (long long)a[k].ring_steps, (long long)b[k].ring_steps, x, y);
            return;
        }
    }
    char x[72];
    size_text(a[0].link_bytes, x, sizeof x);
    r->rows[EQ_COMM].verdict = EQV_HOLDS;
    snprintf(r->rows[EQ_COMM].detail, sizeof r->rows[EQ_COMM].detail,
             "equal on every rank: %lld ring steps, %s over each rank's link (world %d)",
             (long long)a[0].ring_steps, x, r->world);
}

static void row_structure(equiv_result *r) {
    const equiv_facts *a = r->facts[0], *b = r->facts[1];
    side_text(a, r->world, structure_text, r->rows[EQ_STRUCTURE].a, sizeof r->rows[EQ_STRUCTURE].a);
    side_text(b, r->world, structure_text, r->rows[EQ_STRUCTURE].b, sizeof r->rows[EQ_STRUCTURE].b);
    ml_str o = {0};
    int rank = -1;
    for (int k = 0; k < r->world && rank < 0; k++) {
        const equiv_facts *x = &a[k], *y = &b[k];
        bool calls = same_call_sequence(&r->side[0]->plans[k], &r->side[1]->plans[k]);
        if (calls && x->syncs == y->syncs && x->waits == y->waits &&
            x->n_intermediate == y->n_intermediate)
            continue;
        rank = k;
        if (!calls)
            ml_str_printf(&o, "public API calls %u vs %u per rank, kernels %u vs %u per rank "
                              "(%u vs %u over %d ranks)%s", x->n_calls, y->n_calls, x->n_kernels,
                          y->n_kernels, x->n_kernels * (uint32_t)r->world,
                          y->n_kernels * (uint32_t)r->world, r->world,
                          x->n_calls == y->n_calls ? " in another order or of other collectives" : "");
        if (x->syncs != y->syncs)
            ml_str_printf(&o, "%ssyncs %u vs %u", o.n ? "; " : "", x->syncs, y->syncs);
        if (x->waits != y->waits)
            ml_str_printf(&o, "%swaits %u vs %u", o.n ? "; " : "", x->waits, y->waits);
        if (x->n_intermediate != y->n_intermediate)
            ml_str_printf(&o, "%sintermediate buffers %u vs %u", o.n ? "; " : "", x->n_intermediate,
                          y->n_intermediate);
        if (r->world > 1 && !(facts_uniform(a, r->world) && facts_uniform(b, r->world)))
            ml_str_printf(&o, " (rank %d)", k);
    }
    r->rows[EQ_STRUCTURE].verdict = rank < 0 ? EQV_HOLDS : EQV_FAILS;
    if (rank < 0)
        ml_str_printf(&o, "same collectives in the same order, %u kernel%s per rank, same "
                          "synchronization boundaries and intermediate buffers",
                      a[0].n_kernels, a[0].n_kernels == 1 ? "" : "s");
    snprintf(r->rows[EQ_STRUCTURE].detail, sizeof r->rows[EQ_STRUCTURE].detail, "%s", o.s);
    ml_str_free(&o);
}

/* ---- Row 4: state -----------------------------------------------------------------------------*/

static void live_names(const series *s, int rank, ml_mem_view v, ml_str *o) {
    const pred_rank *p = &s->pred[rank];
    for (uint32_t k = 0; k < p->n_peak_live[v]; k++)
        ml_str_printf(o, "%s%s", k ? ", " : "", sched_sym_name(s->s, SYM_BUFFER, p->peak_live[v][k]));
}

/* "requested steady S, peak P (live: ...); device steady S, peak P": every series of every
 * view the rank predicted (views.h); the buffers live at the requested peak. */
static void state_text(const series *s, int rank, char *buf, size_t len) {
    const pred_rank *p = &s->pred[rank];
    ml_str o = {0};
    for (int v = 0; v < VIEW_COUNT; v++) {
        if (!p->on[ml_series[v].view])
            continue;
        char st[72], pk[72];
        report_size_cell(p->steady[v], st, sizeof st);
        report_size_cell(p->peak[v], pk, sizeof pk);
        ml_str_printf(&o, "%s%s steady %s, peak %s", o.n ? "; " : "", ml_series[v].name, st, pk);
        if (v == VIEW_REQUESTED) {
            ml_str_printf(&o, " (live: ");
            live_names(s, rank, VIEW_REQUESTED, &o);
            ml_str_printf(&o, ")");
        }
    }
    snprintf(buf, len, "%s", o.n ? o.s : "");
    ml_str_free(&o);
}

static bool state_equal(const pred_rank *a, const pred_rank *b) {
    for (int v = 0; v < VIEW_COUNT; v++)
        if (a->steady[v] != b->steady[v] || a->peak[v] != b->peak[v])
            return false;
    return true;
}

static void row_state(equiv_result *r) {
    const series *a = r->side[0], *b = r->side[1];
    bool uniform = true;
    for (int k = 1; k < r->world; k++)
        uniform = uniform && state_equal(&a->pred[k], &a->pred[0]) &&
                  state_equal(&b->pred[k], &b->pred[0]);
    char t[300];
    state_text(a, 0, t, sizeof t);
    snprintf(r->rows[EQ_STATE].a, sizeof r->rows[EQ_STATE].a, "%s%s", uniform ? "" : "rank 0: ", t);
    state_text(b, 0, t, sizeof t);
    snprintf(r->rows[EQ_STATE].b, sizeof r->rows[EQ_STATE].b, "%s%s", uniform ? "" : "rank 0: ", t);
    r->rows[EQ_STATE].verdict = EQV_HOLDS;
    for (int k = 0; k < r->world; k++) {
        const pred_rank *x = &a->pred[k], *y = &b->pred[k];
        if (state_equal(x, y))
            continue;
        ml_str o = {0};
        for (int v = 0; v < VIEW_COUNT; v++) {
            char p[72], q[72];
            if (x->steady[v] != y->steady[v]) {
                report_size_cell(x->steady[v], p, sizeof p);
                report_size_cell(y->steady[v], q, sizeof q);
                ml_str_printf(&o, "%s%s steady %s vs %s", o.n ? "; " : "", ml_mem_view_names[v], p, q);
            }
            if (x->peak[v] != y->peak[v]) {
                report_size_cell(x->peak[v], p, sizeof p);
                report_size_cell(y->peak[v], q, sizeof q);
                ml_str_printf(&o, "%s%s peak %s vs %s", o.n ? "; " : "", ml_mem_view_names[v], p, q);
            }
        }
        ml_str_printf(&o, uniform ? " on every rank" : " on rank %d", k);
        r->rows[EQ_STATE].verdict = EQV_FAILS;
        snprintf(r->rows[EQ_STATE].detail, sizeof r->rows[EQ_STATE].detail, "%s", o.s);
        ml_str_free(&o);
        return;
    }
    snprintf(r->rows[EQ_STATE].detail, sizeof r->rows[EQ_STATE].detail,
             "same steady and peak in both views on every rank");
}

/* ---- Row 1 ------------------------------------------------------------------------------------*/

void equiv_default_tolerance(ml_dtype dt, double *rtol, double *atol) {
    switch (dt) {
    case DT_FLOAT32: *rtol = 1.3e-6; *atol = 1e-5; break;
    case DT_FLOAT64: *rtol = 1e-7; *atol = 1e-7; break;
    case DT_FLOAT16: *rtol = 1e-3; *atol = 1e-5; break;
    case DT_BFLOAT16: *rtol = 1.6e-2; *atol = 1e-5; break;
    default: *rtol = 0; *atol = 0; break;
    }
}

void equiv_result_shape(const rank_plan *p, uint32_t buf, uint64_t *count, ml_dtype *dt) {
    *count = 0;
    *dt = p->s->dtype;
    for (size_t k = 0; k < p->n_ops; k++)
        if (p->ops[k].kind == OP_ALLOC && p->ops[k].u.alloc.buf == buf) {
            *count = p->ops[k].u.alloc.count;
            *dt = p->ops[k].u.alloc.dtype;
        }
}

static void result_text(const series *s, uint32_t buf, char *out, size_t len) {
    uint64_t count;
    ml_dtype dt;
    equiv_result_shape(&s->plans[0], buf, &count, &dt);
    snprintf(out, len, "'%s': %llu %s per rank", sched_sym_name(s->s, SYM_BUFFER, buf),
             (unsigned long long)count, ml_dtypes[dt].name);
}

static const equiv_cause *first_cause(const equiv_result *r) {
    return r->n_causes ? &r->causes[0] : NULL;
}

/* Row 1 from the data of every rank. */
static void judge_data(equiv_result *r, char *detail, size_t len) {
    uint64_t compared = 0, bits = 0, tol = 0;
    double max_abs = 0, max_rel = 0;
    int first_rank = -1, count_rank = -1, dtype_rank = -1;
    for (int k = 0; k < r->world; k++) {
        const equiv_data_rank *d = &r->data[k];
        compared += d->compared;
        bits += d->differ_bits;
        tol += d->differ_tol;
        max_abs = d->max_abs > max_abs ? d->max_abs : max_abs;
        max_rel = d->max_rel > max_rel ? d->max_rel : max_rel;
        if (first_rank < 0 && (d->differ_tol || d->differ_bits))
            first_rank = k;
        if (count_rank < 0 && d->count[0] != d->count[1])
            count_rank = k;
        if (dtype_rank < 0 && d->dtype[0] != d->dtype[1])
            dtype_rank = k;
    }
    const equiv_data_rank *d0 = &r->data[0];
    bool is_float = ml_dtypes[d0->dtype[0]].kind == DTK_FLOAT || ml_dtypes[d0->dtype[1]].kind == DTK_FLOAT;
    bool holds = tol == 0 && count_rank < 0 && dtype_rank < 0;
    r->rows[EQ_OUTPUT].verdict = holds ? EQV_HOLDS : EQV_FAILS;
    ml_str o = {0};
    if (count_rank >= 0)
        ml_str_printf(&o, "element counts differ (rank %d: %llu vs %llu); ", count_rank,
                      (unsigned long long)r->data[count_rank].count[0],
                      (unsigned long long)r->data[count_rank].count[1]);
    if (dtype_rank >= 0)
        ml_str_printf(&o, "dtypes differ (%s vs %s); ", ml_dtypes[r->data[dtype_rank].dtype[0]].name,
                      ml_dtypes[r->data[dtype_rank].dtype[1]].name);
    if (!is_float) {
        if (tol == 0 && (count_rank >= 0 || dtype_rank >= 0))
            ml_str_printf(&o, "the %llu elements compared are equal", (unsigned long long)compared);
        else if (tol == 0)
            ml_str_printf(&o, "equal on %d ranks: %llu of %llu elements (exact)", r->world,
                          (unsigned long long)compared, (unsigned long long)compared);
        else
            ml_str_printf(&o, "%llu of %llu elements differ; first on rank %d, %s", 
                          (unsigned long long)tol, (unsigned long long)compared, first_rank,
                          r->data[first_rank].first);
    } else {
        if (bits == 0)
            ml_str_printf(&o, "bitwise equal on %d ranks (%llu elements)", r->world,
                          (unsigned long long)compared);
        else
            ml_str_printf(&o, "not bitwise equal: %llu of %llu elements differ (first on rank %d, "
                              "%s); max abs %.3g, max rel %.3g; %s rtol %.3g, atol %.3g%s",
                          (unsigned long long)bits, (unsigned long long)compared, first_rank,
                          r->data[first_rank].first, max_abs, max_rel,
                          tol ? "outside" : "within", r->rtol, r->atol,
                          tol ? "" : " (float addition is not associative: another reduction "
                                     "order)");
        if (tol && bits)
            ml_str_printf(&o, " (%llu elements outside)", (unsigned long long)tol);
    }
    const equiv_cause *c = first_cause(r);
    if (!holds && c)
        ml_str_printf(&o, "; cause: %s", equiv_causes[c->kind].checklist);
    else if (holds && r->n_causes)
        ml_str_printf(&o, "; the data flow notes: %s", equiv_causes[c->kind].checklist);
    snprintf(detail, len, "%s", o.s);
    ml_str_free(&o);
}

void equiv_judge_output(equiv_result *r) {
    result_text(r->side[0], r->result[0], r->rows[EQ_OUTPUT].a, sizeof r->rows[EQ_OUTPUT].a);
    result_text(r->side[1], r->result[1], r->rows[EQ_OUTPUT].b, sizeof r->rows[EQ_OUTPUT].b);
    char *detail = r->rows[EQ_OUTPUT].detail;
    size_t len = sizeof r->rows[EQ_OUTPUT].detail;
    if (r->flow_uninit) {
        /* Comparing whatever uninitialized memory held proves nothing either way. */
        r->rows[EQ_OUTPUT].verdict = EQV_UNKNOWN;
        snprintf(detail, len, "the results come from buffers never initialized (no init:): give "
                              "the inputs data, e.g. init: rank_iota");
        return;
    }
    if (r->data) {
        judge_data(r, detail, len);
        return;
    }
    const equiv_cause *c = first_cause(r);
    if (c) {
        r->rows[EQ_OUTPUT].verdict = EQV_FAILS;
        snprintf(detail, len, "not run; the data flow finds: %s", equiv_causes[c->kind].checklist);
    } else if (r->flow_known && r->flow_equal) {
        r->rows[EQ_OUTPUT].verdict = EQV_HOLDS;
        snprintf(detail, len, "not run; the data flow proves every element equal on every rank "
                              "(same inputs, reductions and layout)");
    } else {
        r->rows[EQ_OUTPUT].verdict = EQV_UNKNOWN;
        snprintf(detail, len, "not run, and the data flow cannot decide (a compute step or a "
                              "value it does not model is on the path)");
    }
}

int equiv_analyze(const series *a, const series *b, const uint32_t result[2],
                  const bool sequence_ok[2], const char *const seq_text[2],
                  const ml_mark seq_mark[2], equiv_result *out, ml_diags *d) {
    memset(out, 0, sizeof *out);
    if (a->world != b->world) {
        ml_error(d, b->s->file, ((ml_mark){0, 0}), "the plans run at different worlds (%d and %d)",
                 a->world, b->world);
        return -1;
    }
    out->side[0] = a;
    out->side[1] = b;
    out->world = a->world;
    out->result[0] = result[0];
    out->result[1] = result[1];
    for (int s = 0; s < 2; s++) {
        out->sequence_ok[s] = sequence_ok[s];
        out->facts[s] = ml_xcalloc((size_t)out->world, sizeof *out->facts[s]);
        for (int k = 0; k < out->world; k++)
            facts_of(&out->side[s]->plans[k], &out->facts[s][k]);
        if (!sequence_ok[s]) {
            equiv_add_cause(out, CAUSE_SEQUENCE, s, -1, NULL, "%s", seq_text[s] ? seq_text[s] : "");
            out->causes[out->n_causes - 1].mark = seq_mark[s];
        }
    }
    row_comm(out);
    row_structure(out);
    row_state(out);
    equiv_flow(out);
    equiv_judge_output(out);
    return 0;
}

int equiv_exit_code(const equiv_result *r) {
    for (int k = 0; k < EQ_ROW_COUNT; k++)
        if (r->rows[k].verdict != EQV_HOLDS)
            return ML_EXIT_EXPECT;
    return ML_EXIT_OK;
}

void equiv_result_free(equiv_result *r) {
    free(r->facts[0]);
    free(r->facts[1]);
    free(r->causes);
    free(r->data);
    free(r->kernels[0]);
    free(r->kernels[1]);
    memset(r, 0, sizeof *r);
}
