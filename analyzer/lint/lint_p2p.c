/* SPDX-License-Identifier: MIT */
/* lint_p2p.c — point-to-point sends and receives across ranks (lint_int.h): pairing, then a
 * deadlock search by playing the ranks forward.
 *
 * NCCL matches the sends from rank r to rank p with the receives on p from r in the order each
 * rank issues them, and a send or receive outside ncclGroupStart/End blocks the stream until its
 * partner runs: two ranks that each send to the other first, outside a group, wait forever (the
 * reason NCCL's documentation groups concurrent send/recv). A collective takes every rank of
 * the world.
 *
 * With `comm:` the peer is a rank within the group (NCCL's peer on a split communicator): it is
 * taken to its world rank here, and the k-th send from r to p pairs with the k-th recv on p from
 * r on the same communicator (each communicator has its own channels, its own order). A
 * collective on a communicator takes the members of the rank's group. */
#include "lint/lint_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* One send or recv of one rank. */
typedef struct {
    const plan_op *op;
    int rank, peer;           /* world ranks */
    uint32_t comm;
    uint32_t unit;            /* index of its unit in the rank's unit list */
    uint64_t k;               /* its order among the rank's ops to (send) or from (recv) peer */
    int partner_rank;         /* after pairing: the matching op's rank and index in p2p[] */
    size_t partner;
} p2p_op;

/* What a rank waits on, in program order: one blocking send/recv, a group, or a collective. */
typedef enum { UNIT_ONE, UNIT_GROUP, UNIT_COLL } unit_kind;
typedef struct {
    unit_kind kind;
    size_t first, n;          /* UNIT_ONE / UNIT_GROUP: its ops in the rank's p2p list */
    const plan_op *op;        /* the first op, for messages */
} unit;

typedef struct {
    p2p_op *ops;
    size_t n, cap;
    unit *units;
    size_t n_units, cap_units;
} rank_p2p;

static void *grow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    p = ml_xrealloc(p, c * size);
    *cap = c;
    return p;
}

static unit *push_unit(rank_p2p *q, unit_kind kind, const plan_op *op) {
    q->units = grow(q->units, &q->cap_units, q->n_units + 1, sizeof *q->units);
    unit *u = &q->units[q->n_units++];
    *u = (unit){kind, q->n, 0, op};
    return u;
}

/* plan_expand notes whether it emitted a send or recv (rank_plan.has_p2p, kept by plan_share,
 * plan_copy and plan_compact): asked instead of a pass over every op of every rank, which at a
 * million ops is milliseconds for the usual answer, no. */
static bool any_p2p(const rank_plan *plans, int world) {
    for (int r = 0; r < world; r++)
        if (plans[r].has_p2p)
            return true;
    return false;
}

/* Rank r's sends, receives and units. count_to/count_from: scratch of world counters per
 * communicator (comm * world + peer), zero on entry and on return. */
static void collect(const rank_plan *p, int r, rank_p2p *q, uint64_t *count_to, uint64_t *count_from) {
    unit *group = NULL;
    for (size_t i = 0; i < p->n_ops; i++) {
        const plan_op *op = &p->ops[i];
        if (op->kind == OP_EXPECT_BEGIN) {   /* the wrapped op is refused, not issued */
            i++;
            continue;
        }
        if (op->kind == OP_GROUP_BEGIN) {
            group = push_unit(q, UNIT_GROUP, op);
            continue;
        }
        if (op->kind == OP_GROUP_END) {
            group = NULL;
            continue;
        }
        if (op->kind != OP_COLL)
            continue;
        ml_p2p kind = ml_colls[op->u.coll.coll].p2p;
        uint32_t comm = p->comms ? op->u.coll.comm : 0;
        if (comm && ml_comms_size(p->comms, comm, r) == 0)
            continue;   /* outside the communicator: the contract reports it (lint.c) */
        if (!kind) {
            push_unit(q, UNIT_COLL, op);
            continue;
        }
        int peer = op->u.coll.root;
        if (comm)
            peer = ml_comms_global(p->comms, comm, r, peer);   /* -1 outside the group */
        if (peer < 0 || peer >= p->world || peer == r)
            continue;   /* the contract reports it (lint.c) */
        unit *u = group ? group : push_unit(q, UNIT_ONE, op);
        if (!u->n)
            u->op = op;
        u->n++;
        q->ops = grow(q->ops, &q->cap, q->n + 1, sizeof *q->ops);
        uint64_t *count = kind == P2P_SEND ? count_to : count_from;
        size_t at = (size_t)comm * (size_t)p->world + (size_t)peer;
        q->ops[q->n++] = (p2p_op){op, r, peer, comm, (uint32_t)(u - q->units), count[at]++, -1, 0};
    }
    for (size_t k = 0; k < q->n; k++) {
        size_t at = (size_t)q->ops[k].comm * (size_t)p->world + (size_t)q->ops[k].peer;
        count_to[at] = count_from[at] = 0;
    }
}

static const char *elem_text(const plan_op *op, char *buf, size_t len) {
    snprintf(buf, len, "%llu %s", (ull)plan_coll_count(op), ml_dtypes[op->u.coll.send.dtype].name);
    return buf;
}

/* Where a send's or recv's `peer:` is written. */
static ml_mark peer_mark(const sched *s, const plan_op *op) {
    return sched_part_mark(s, op->step, SCHED_AT_ROOT);
}

/* " on 'pair'" after a message about an op on a communicator; nothing on the world. */
static const char *on_comm(const rank_plan *p, uint32_t comm, char *buf, size_t len) {
    if (comm)
        snprintf(buf, len, " on '%s'", ml_comms_name(p->comms, comm));
    else if (len)
        buf[0] = '\0';
    return buf;
}

/* Pairs every send with its recv (partner fields). Returns the errors added. */
static size_t pair(const rank_plan *plans, int world, rank_p2p *q, ml_diags *d) {
    size_t errors = 0;
    for (int r = 0; r < world && errors < 16; r++)
        for (size_t k = 0; k < q[r].n && errors < 16; k++) {
            p2p_op *s = &q[r].ops[k];
            if (ml_colls[s->op->u.coll.coll].p2p != P2P_SEND)
                continue;
            /* the k-th recv on the peer from r */
            rank_p2p *pq = &q[s->peer];
            p2p_op *m = NULL;
            for (size_t j = 0; j < pq->n && !m; j++) {
                p2p_op *c = &pq->ops[j];
                if (ml_colls[c->op->u.coll.coll].p2p == P2P_RECV && c->peer == r &&
                    c->comm == s->comm && c->k == s->k)
                    m = c;
            }
            char on[80];
            on_comm(&plans[r], s->comm, on, sizeof on);
            if (!m) {
                /* at the peer, which names the rank that lacks the recv (docs/schedule.md) */
                ml_diag_add(d, ML_DIAG_ERROR, plans[r].s->file, peer_mark(plans[r].s, s->op), r,
                            "p2p", "send to rank %d%s has no matching recv: rank %d posts fewer than %llu "
                            "recvs from rank %d%s", s->peer, on, s->peer, (ull)s->k + 1, r, on);
                errors++;
                continue;
            }
            const plan_op *a = s->op, *b = m->op;
            if (plan_coll_count(a) != plan_coll_count(b) || a->u.coll.send.dtype != b->u.coll.send.dtype) {
                /* at the send's view (its size), the note at the recv's (two places) */
                char e1[64], e2[64];
                const sched *sc = plans[r].s;
                ml_diag_add(d, ML_DIAG_ERROR, sc->file, plan_view_mark(sc, a, 0), r, "p2p",
                            "send of %s to rank %d%s pairs with a recv of %s on rank %d",
                            elem_text(a, e1, sizeof e1), s->peer, on, elem_text(b, e2, sizeof e2),
                            s->peer);
                ml_diag_add(d, ML_DIAG_NOTE, sc->file, plan_view_mark(sc, b, 0), r, "p2p",
                            "rank %d's recv of %s is here", s->peer, e2);
                errors++;
            }
            s->partner_rank = m->rank;
            s->partner = (size_t)(m - pq->ops);
            m->partner_rank = r;
            m->partner = k;
        }
    for (int r = 0; r < world && errors < 16; r++)
        for (size_t k = 0; k < q[r].n && errors < 16; k++) {
            const p2p_op *c = &q[r].ops[k];
            if (ml_colls[c->op->u.coll.coll].p2p == P2P_RECV && c->partner_rank < 0) {
                char on[80];
                on_comm(&plans[r], c->comm, on, sizeof on);
                ml_diag_add(d, ML_DIAG_ERROR, plans[r].s->file, peer_mark(plans[r].s, c->op), r,
                            "p2p", "recv from rank %d%s has no matching send: rank %d sends fewer than %llu "
                            "to rank %d%s", c->peer, on, c->peer, (ull)c->k + 1, r, on);
                errors++;
            }
        }
    return errors;
}

/* Whether rank o is at a collective on comm (at any collective where the world is the only
 * communicator: comms NULL). */
static bool at_coll(const rank_p2p *q, const size_t *at, int o, const ml_comms *comms,
                    uint32_t comm) {
    if (at[o] >= q[o].n_units || q[o].units[at[o]].kind != UNIT_COLL)
        return false;
    return !comms || q[o].units[at[o]].op->u.coll.comm == comm;
}

/* Whether rank r's current unit can complete now, given every rank's position. *waits: the rank
 * it waits on when it cannot. A collective waits for the members of r's group of its
 * communicator (comms: the plans'; NULL: the world is the only one). */
static bool ready(const rank_p2p *q, const size_t *at, int world, int r, const ml_comms *comms,
                  int *waits) {
    const unit *u = &q[r].units[at[r]];
    if (u->kind == UNIT_COLL) {
        uint32_t comm = comms ? u->op->u.coll.comm : 0;
        int n = comm ? ml_comms_size(comms, comm, r) : world;
        for (int j = 0; j < n; j++) {
            int o = comm ? ml_comms_global(comms, comm, r, j) : j;
            if (!at_coll(q, at, o, comms, comm)) {
                *waits = o;
                return false;
            }
        }
        return true;
    }
    for (size_t k = u->first; k < u->first + u->n; k++) {
        const p2p_op *op = &q[r].ops[k];
        int pr = op->partner_rank;
        uint32_t pu = q[pr].ops[op->partner].unit;
        if (at[pr] != pu) {
            *waits = pr;
            return false;
        }
    }
    return true;
}

/* What rank r's blocked unit is: "rank 0 send to rank 1"; its place is the diagnostic's own. */
static void describe_unit(const rank_p2p *q, int r, size_t at, char *buf, size_t len) {
    const unit *u = &q[r].units[at];
    if (u->kind == UNIT_COLL) {
        snprintf(buf, len, "rank %d at %s", r, ml_colls[u->op->u.coll.coll].name);
        return;
    }
    const p2p_op *o = &q[r].ops[u->first];
    snprintf(buf, len, "rank %d %s %s rank %d%s", r, ml_colls[o->op->u.coll.coll].name,
             ml_colls[o->op->u.coll.coll].p2p == P2P_SEND ? "to" : "from", o->peer,
             u->kind == UNIT_GROUP ? " in a group" : "");
}

void lint_ring_text(int r, const int *waits, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "rank %d", r);
    for (int c = waits[r];; c = waits[c]) {
        if (n + 16 >= len) {
            snprintf(buf + n, len - n, " -> ...");
            break;
        }
        n += (size_t)snprintf(buf + n, len - n, " -> %d", c);
        if (c == r)
            break;
    }
}

/* Plays the ranks forward; on a deadlock reports the cycle of waits: the error at the first
 * rank of the cycle, then one note per rank of it at the op where that rank waits, in the order
 * of the waits, so each participant is named at its own line:col. */
static size_t play(const rank_plan *plans, int world, const rank_p2p *q, ml_diags *d) {
    size_t *at = ml_xcalloc((size_t)world, sizeof *at);
    bool *go = ml_xcalloc((size_t)world, sizeof *go);
    int *waits = ml_xcalloc((size_t)world, sizeof *waits);
    size_t errors = 0;
    for (;;) {
        bool done = true, moved = false;
        for (int r = 0; r < world; r++) {
            go[r] = at[r] < q[r].n_units && ready(q, at, world, r, plans[0].comms, &waits[r]);
            done &= at[r] >= q[r].n_units;
        }
        for (int r = 0; r < world; r++)
            if (go[r]) {
                at[r]++;
                moved = true;
            }
        if (done)
            break;
        if (moved)
            continue;
        /* Nobody can move: follow the waits from the first blocked rank to a cycle. */
        int start = 0;
        while (at[start] >= q[start].n_units)
            start++;
        char *seen = ml_xcalloc((size_t)world, 1);
        int r = start;
        while (!seen[r] && at[r] < q[r].n_units) {
            seen[r] = 1;
            r = waits[r];
        }
        free(seen);
        char part[200];
        if (at[r] >= q[r].n_units) {   /* waits end at a rank that has finished */
            describe_unit(q, start, at[start], part, sizeof part);
            ml_diag_add(d, ML_DIAG_ERROR, plans[start].s->file,
                        plan_op_mark(q[start].units[at[start]].op), start, "deadlock",
                        "deadlock: %s waits for rank %d, which has no more sends, receives or "
                        "collectives", part, waits[start]);
            errors++;
            break;
        }
        char ring[300];
        lint_ring_text(r, waits, ring, sizeof ring);
        ml_diag_add(d, ML_DIAG_ERROR, plans[r].s->file, plan_op_mark(q[r].units[at[r]].op), r,
                    "deadlock", "deadlock: a cycle of blocking waits (%s): a send or recv outside "
                    "a group blocks until its peer's partner runs: put the pair's ops in one group",
                    ring);
        int c = r;
        do {
            describe_unit(q, c, at[c], part, sizeof part);
            ml_diag_add(d, ML_DIAG_NOTE, plans[c].s->file, plan_op_mark(q[c].units[at[c]].op), c,
                        "deadlock", "%s waits for rank %d", part, waits[c]);
            c = waits[c];
        } while (c != r);
        errors++;
        break;
    }
    free(at);
    free(go);
    free(waits);
    return errors;
}

size_t lint_p2p(const rank_plan *plans, int world, ml_diags *d) {
    if (world < 2 || !any_p2p(plans, world))
        return 0;
    rank_p2p *q = ml_xcalloc((size_t)world, sizeof *q);
    size_t n_counts = (size_t)world * (plans[0].comms ? ml_comms_count(plans[0].comms) : 1);
    uint64_t *to = ml_xcalloc(n_counts, sizeof *to), *from = ml_xcalloc(n_counts, sizeof *from);
    for (int r = 0; r < world; r++)
        collect(&plans[r], r, &q[r], to, from);
    size_t errors = pair(plans, world, q, d);
    if (errors == 0)
        errors = play(plans, world, q, d);
    for (int r = 0; r < world; r++) {
        free(q[r].ops);
        free(q[r].units);
    }
    free(q);
    free(to);
    free(from);
    return errors;
}
