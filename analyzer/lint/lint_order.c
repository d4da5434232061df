/* SPDX-License-Identifier: MIT */
/* lint_order.c — the order of collectives across communicators (lint_int.h: lint_order).
 *
 * A collective completes when every member of its group has reached it, and until then each
 * member waits in it. Ranks that take part in several communicators must therefore issue their
 * collectives on them in an order that lets every group meet: NCCL's documentation asks for one
 * order on every rank, else rank 0 in an all_reduce on tp may wait for rank 1, which waits in an
 * all_reduce on dp for rank 3, which waits ... for rank 0. The check plays the ranks forward
 * over their sequences of collectives (each one's communicator) and reports such a cycle.
 *
 * Sequences are kept once per distinct sequence (most ranks of a schedule issue the same one),
 * and where there is only one there is nothing to play: with every rank at its i-th collective,
 * all on one communicator, every group meets and all move to the i+1-th. */
#include "lint/lint_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One collective of a rank's sequence: what a message names, and its communicator. */
typedef struct {
    const sched_step *step;
    uint16_t comm;
    uint8_t coll;
} order_entry;

typedef struct {
    order_entry *e;
    size_t n;
    uint64_t hash;
} order_seq;

struct lint_order {
    const ml_comms *c;
    int world;
    ml_vec cur;               /* order_entry: the rank being walked */
    order_seq *seqs;          /* the distinct sequences */
    size_t n_seqs, cap_seqs;
    uint32_t *seq_of;         /* [world]: each rank's, once walked */
};

lint_order *lint_order_new(const ml_comms *c, int world) {
    lint_order *o = ml_xcalloc(1, sizeof *o);
    o->c = c;
    o->world = world;
    ml_vec_init(&o->cur, sizeof(order_entry));
    o->seq_of = ml_xcalloc((size_t)world, sizeof *o->seq_of);
    return o;
}

void lint_order_free(lint_order *o) {
    if (!o)
        return;
    for (size_t k = 0; k < o->n_seqs; k++)
        free(o->seqs[k].e);
    free(o->seqs);
    free(o->seq_of);
    ml_vec_free(&o->cur);
    free(o);
}

void lint_order_begin(lint_order *o) { o->cur.n = 0; }

void lint_order_push(lint_order *o, const plan_op *op, int rank) {
    if (op->u.coll.comm && ml_comms_size(o->c, op->u.coll.comm, rank) == 0)
        return;   /* a collective it cannot issue: the contract's error */
    order_entry *e = ml_vec_push(&o->cur);
    e->step = op->step;
    e->comm = op->u.coll.comm;
    e->coll = (uint8_t)op->u.coll.coll;
}

static bool entries_same(const order_entry *a, const order_entry *b, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (a[k].step != b[k].step || a[k].comm != b[k].comm || a[k].coll != b[k].coll)
            return false;
    return true;
}

void lint_order_end(lint_order *o, int rank) {
    const order_entry *e = o->cur.items;
    size_t n = o->cur.n;
    uint64_t h = 1469598103934665603ull;   /* FNV-1a over the fields */
    for (size_t k = 0; k < n; k++) {
        h = (h ^ (uint64_t)(uintptr_t)e[k].step) * 1099511628211ull;
        h = (h ^ ((uint64_t)e[k].comm << 8 | e[k].coll)) * 1099511628211ull;
    }
    for (size_t k = 0; k < o->n_seqs; k++)
        if (o->seqs[k].hash == h && o->seqs[k].n == n && entries_same(o->seqs[k].e, e, n)) {
            o->seq_of[rank] = (uint32_t)k;
            return;
        }
    if (o->n_seqs == o->cap_seqs) {
        o->cap_seqs = o->cap_seqs ? 2 * o->cap_seqs : 4;
        o->seqs = ml_xrealloc(o->seqs, o->cap_seqs * sizeof *o->seqs);
    }
    order_seq *q = &o->seqs[o->n_seqs];
    q->e = ml_xmalloc((n ? n : 1) * sizeof *q->e);
    if (n)
        memcpy(q->e, e, n * sizeof *q->e);
    q->n = n;
    q->hash = h;
    o->seq_of[rank] = (uint32_t)o->n_seqs++;
}

/* The play's state: each rank's position, and per communicator and group how many of its
 * members are at a collective on it (a group meets when all of its members are). */
typedef struct {
    const lint_order *o;
    size_t *pos;
    uint32_t **arrived;       /* [comm][group] */
    int *stack;               /* ranks to look at again, each once (on_stack) */
    size_t n_stack;
    bool *on_stack;
} play_state;

static const order_entry *at_entry(const play_state *p, int r) {
    const order_seq *q = &p->o->seqs[p->o->seq_of[r]];
    return p->pos[r] < q->n ? &q->e[p->pos[r]] : NULL;
}

static int group_of(const lint_order *o, uint32_t comm, int r) {
    return comm ? ml_comms_group(o->c, comm, r) : 0;
}

static int size_of(const lint_order *o, uint32_t comm, int r) {
    return comm ? ml_comms_size(o->c, comm, r) : o->world;
}

static int member(const lint_order *o, uint32_t comm, int r, int j) {
    return comm ? ml_comms_global(o->c, comm, r, j) : j;
}

/* r has reached its next collective (if any): count it arrived at its group. */
static void arrive(play_state *p, int r) {
    const order_entry *e = at_entry(p, r);
    if (e && size_of(p->o, e->comm, r) > 0)
        p->arrived[e->comm][group_of(p->o, e->comm, r)]++;
    if (!p->on_stack[r]) {
        p->on_stack[r] = true;
        p->stack[p->n_stack++] = r;
    }
}

/* The member of r's group (of the collective r is at) that r waits for: the first not at a
 * collective on that communicator. */
static int waits_for(const play_state *p, int r) {
    const order_entry *e = at_entry(p, r);
    for (int j = 0, n = size_of(p->o, e->comm, r); j < n; j++) {
        int m = member(p->o, e->comm, r, j);
        const order_entry *f = at_entry(p, m);
        if (!f || f->comm != e->comm)
            return m;
    }
    return r;
}

/* "rank 0 at all_reduce on 'tp'" */
static void at_text(const play_state *p, int r, char *buf, size_t len) {
    const order_entry *e = at_entry(p, r);
    snprintf(buf, len, "rank %d at %s on '%s'", r, ml_colls[e->coll].name,
             e->comm ? ml_comms_name(p->o->c, e->comm) : "world");
}

size_t lint_order_check(const lint_order *o, const sched *s, ml_diags *d) {
    if (!o || o->n_seqs < 2)
        return 0;
    int world = o->world;
    play_state p = {.o = o};
    p.pos = ml_xcalloc((size_t)world, sizeof *p.pos);
    p.stack = ml_xcalloc((size_t)world, sizeof *p.stack);
    p.on_stack = ml_xcalloc((size_t)world, sizeof *p.on_stack);
    uint32_t n_comms = ml_comms_count(o->c);
    p.arrived = ml_xcalloc(n_comms, sizeof *p.arrived);
    for (uint32_t k = 0; k < n_comms; k++) {
        uint32_t g = k ? ml_comms_groups(o->c, k) : 1;
        p.arrived[k] = ml_xcalloc(g ? g : 1, sizeof **p.arrived);
    }
    for (int r = world - 1; r >= 0; r--)
        arrive(&p, r);
    /* A rank looked at again whose group has all arrived runs the collective: every member
     * moves on and arrives at its next one (and is looked at again). The last member to arrive
     * at a meeting is looked at after it arrives, so no meeting is missed. */
    while (p.n_stack) {
        int r = p.stack[--p.n_stack];
        p.on_stack[r] = false;
        const order_entry *e = at_entry(&p, r);
        if (!e)
            continue;
        int n = size_of(o, e->comm, r);
        uint32_t *count = n ? &p.arrived[e->comm][group_of(o, e->comm, r)] : NULL;
        if (!count || *count != (uint32_t)n)
            continue;
        *count = 0;
        uint32_t comm = e->comm;
        for (int j = 0; j < n; j++) {
            int m = member(o, comm, r, j);
            p.pos[m]++;
            arrive(&p, m);
        }
    }
    size_t errors = 0;
    int start = 0;
    while (start < world && !at_entry(&p, start))
        start++;
    if (start < world) {
        /* the rank each rank left waits for, then those waits from the first one to a cycle */
        int *waits = ml_xcalloc((size_t)world, sizeof *waits);
        char *seen = ml_xcalloc((size_t)world, 1);
        for (int r = 0; r < world; r++)
            waits[r] = at_entry(&p, r) ? waits_for(&p, r) : r;
        int r = start;
        while (!seen[r] && at_entry(&p, r)) {
            seen[r] = 1;
            r = waits[r];
        }
        if (at_entry(&p, r)) {   /* a rank that ended would be a divergence, reported as one */
            char ring[300], part[160];
            lint_ring_text(r, waits, ring, sizeof ring);
            ml_diag_add(d, ML_DIAG_ERROR, s->file, at_entry(&p, r)->step->mark, r, "deadlock",
                        "deadlock: a cycle of collectives on different communicators (%s): a "
                        "collective waits for every member of its group; issue them in one order "
                        "on every rank", ring);
            int c = r;
            do {
                at_text(&p, c, part, sizeof part);
                ml_diag_add(d, ML_DIAG_NOTE, s->file, at_entry(&p, c)->step->mark, c, "deadlock",
                            "%s waits for rank %d", part, waits[c]);
                c = waits[c];
            } while (c != r);
            errors++;
        }
        free(seen);
        free(waits);
    }
    for (uint32_t k = 0; k < n_comms; k++)
        free(p.arrived[k]);
    free(p.arrived);
    free(p.pos);
    free(p.stack);
    free(p.on_stack);
    return errors;
}
