/* SPDX-License-Identifier: MIT */
/* load_comms.c — `mesh:` and `comms:` (sched.h's communicators) and a collective's `comm:`.
 *
 *   mesh: {dp: 2, tp: "world / 2"}       dimensions, outermost first; their product is the world
 *   comms:
 *     tp:   {mesh_dim: tp}               the ranks that differ only in tp
 *     fsdp: {mesh_dim: [dp, cp]}         ... only in dp and cp (a flattened sub-mesh)
 *     half: {color: "rank / 4", key: rank}   MPI_Comm_split / ncclCommSplit: one group a color
 *     pair: {ranks: [0, 1]}              one group, those ranks in that order; others not in it
 *     ...   share: true                  NCCL's splitShare (resources shared with the world)
 *
 * What depends on the world (sizes, the product, membership) is checked where the world is
 * known (ir/comms.c); here the shape of the text. */
#include "load/load_int.h"

#include <string.h>

/* The world, communicator 0: registered on first need, so that a file without `comms:` has it
 * too and `comm: world` is always valid. */
static void world_comm(loader *l) {
    if (l->comm_v.n)
        return;
    sched_comm *w = ml_vec_push(&l->comm_v);
    w->name = "world";
    w->kind = COMM_WORLD;
    ld_hash_put(&l->comms, "world", 5, 0);
}

int ld_mesh(loader *l) {
    if (ld_want(l, YAML_MAPPING_START_EVENT, "mesh"))
        return -1;
    l->s->mesh_mark = ld_mark(l);
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_MAPPING_END_EVENT))
            break;
        if (ld_want_scalar(l, "mesh dimension"))
            return -1;
        size_t len;
        const char *text = ld_text(l, &len);
        ml_mark m = ld_mark(l);
        if (ld_check_name(l, text, len, m, "mesh dimension", false))
            return -1;
        if (ld_hash_find(&l->mesh_dims, text, len, NULL) != UINT32_MAX)
            return ld_fail(l, m, "duplicate mesh dimension '%.*s'", (int)len, text);
        if (l->mesh_v.n == SCHED_MAX_MESH_DIMS)
            return ld_fail(l, m, "a mesh has at most %u dimensions", SCHED_MAX_MESH_DIMS);
        sched_mesh_dim *d = ml_vec_push(&l->mesh_v);
        d->name = ml_arena_strndup(l->a, text, len);
        d->mark = m;
        ld_hash_put(&l->mesh_dims, d->name, len, l->mesh_v.n - 1);
        if (ld_next(l))
            return -1;
        ml_mark at = ld_is(l, YAML_SCALAR_EVENT) ? ld_text_mark(l) : ld_mark(l);
        if (ld_expr(l, CTX_PLAIN, "mesh dimension size", &d->size))
            return -1;
        if (expr_uses_slot(d->size, EXPR_SLOT_RANK))
            return ld_fail(l, at, "a mesh dimension's size is one for the whole run: it cannot "
                                  "depend on rank");
    }
    if (l->mesh_v.n == 0)
        return ld_fail(l, l->s->mesh_mark, "'mesh' must not be empty");
    l->s->n_mesh = (uint32_t)l->mesh_v.n;
    l->s->mesh = ml_arena_alloc(l->a, l->mesh_v.n * sizeof(sched_mesh_dim));
    memcpy(l->s->mesh, l->mesh_v.items, l->mesh_v.n * sizeof(sched_mesh_dim));
    return 0;
}

enum { CK_MESH_DIM, CK_COLOR, CK_KEY, CK_RANKS, CK_SHARE };
static const char *const comm_keys[] = {"mesh_dim", "color", "key", "ranks", "share"};
static const ld_schema comm_schema = LD_SCHEMA("communicator", comm_keys);

static int mesh_dim_ref(loader *l, sched_comm *c) {
    if (!l->s->n_mesh)
        return ld_fail(l, ld_mark(l), "'mesh_dim' needs a 'mesh:' above 'comms:'");
    size_t len;
    const char *text = ld_text(l, &len);
    uintptr_t v;
    if (ld_hash_find(&l->mesh_dims, text, len, &v) == UINT32_MAX) {
        const char *names[SCHED_MAX_MESH_DIMS];
        for (uint32_t k = 0; k < l->s->n_mesh; k++)
            names[k] = l->s->mesh[k].name;
        return ld_fail_choice(l, ld_mark(l), "mesh dimension", text, len, names, l->s->n_mesh,
                              NULL);
    }
    if (c->dims >> v & 1u)
        return ld_fail(l, ld_mark(l), "mesh dimension '%.*s' named twice", (int)len, text);
    c->dims |= 1u << v;
    return 0;
}

static int comm_value(loader *l, int key, void *obj) {
    sched_comm *c = obj;
    switch (key) {
    case CK_MESH_DIM:
        c->kind = COMM_MESH;
        if (ld_is(l, YAML_SCALAR_EVENT))
            return mesh_dim_ref(l, c);
        if (ld_want(l, YAML_SEQUENCE_START_EVENT, "mesh_dim"))
            return -1;
        for (;;) {
            if (ld_next(l))
                return -1;
            if (ld_is(l, YAML_SEQUENCE_END_EVENT))
                break;
            if (ld_want_scalar(l, "mesh dimension") || mesh_dim_ref(l, c))
                return -1;
        }
        return c->dims ? 0 : ld_fail(l, ld_mark(l), "'mesh_dim' must not be empty");
    case CK_COLOR:
        c->kind = COMM_COLOR;
        return ld_expr(l, CTX_PLAIN, "color", &c->color);
    case CK_KEY:
        return ld_expr(l, CTX_PLAIN, "key", &c->key);
    case CK_RANKS: {
        c->kind = COMM_RANKS;
        if (ld_want(l, YAML_SEQUENCE_START_EVENT, "ranks"))
            return -1;
        ml_mark start = ld_mark(l);
        ml_vec v;
        ml_vec_init(&v, sizeof(expr *));
        int rc = 0;
        while (rc == 0 && (rc = ld_next(l)) == 0 && !ld_is(l, YAML_SEQUENCE_END_EVENT)) {
            ml_mark at = ld_is(l, YAML_SCALAR_EVENT) ? ld_text_mark(l) : ld_mark(l);
            expr **e = ml_vec_push(&v);
            rc = ld_expr(l, CTX_PLAIN, "ranks", e);
            if (rc == 0 && expr_uses_slot(*e, EXPR_SLOT_RANK))
                rc = ld_fail(l, at, "a member of 'ranks' cannot depend on rank (every rank "
                                    "reads one list)");
        }
        if (rc == 0 && v.n == 0)
            rc = ld_fail(l, start, "'ranks' must not be empty");
        if (rc == 0) {
            c->n_ranks = (uint32_t)v.n;
            c->ranks = ml_arena_alloc(l->a, v.n * sizeof(expr *));
            memcpy(c->ranks, v.items, v.n * sizeof(expr *));
        }
        ml_vec_free(&v);
        return rc;
    }
    default: {
        if (ld_want_scalar(l, "share"))
            return -1;
        size_t len;
        const char *text = ld_text(l, &len);
        if (ld_key_eq("true", text, len))
            c->share = true;
        else if (!ld_key_eq("false", text, len))
            return ld_fail(l, ld_mark(l), "'share' is true or false, not '%.*s'",
                           len > 64 ? 64 : (int)len, text);
        return 0;
    }
    }
}

int ld_comms(loader *l) {
    world_comm(l);
    if (ld_want(l, YAML_MAPPING_START_EVENT, "comms"))
        return -1;
    ml_mark start = ld_mark(l);
    for (;;) {
        if (ld_next(l))
            return -1;
        if (ld_is(l, YAML_MAPPING_END_EVENT))
            break;
        if (ld_want_scalar(l, "communicator name"))
            return -1;
        size_t len;
        const char *text = ld_text(l, &len);
        ml_mark m = ld_mark(l);
        if (ld_check_name(l, text, len, m, "communicator", false))
            return -1;
        if (ld_hash_find(&l->comms, text, len, NULL) != UINT32_MAX)
            return ld_fail(l, m, ld_key_eq("world", text, len)
                                     ? "'world' is the communicator of every rank: it cannot be "
                                       "defined"
                                     : "duplicate communicator '%.*s'",
                           (int)len, text);
        if (l->comm_v.n == SCHED_MAX_COMMS)
            return ld_fail(l, m, "at most %u communicators (the world included)", SCHED_MAX_COMMS);
        sched_comm c = {.name = ml_arena_strndup(l->a, text, len), .mark = m};
        ld_keys k;
        if (ld_next(l) || ld_map(l, &comm_schema, comm_value, &c, &k))
            return -1;
        int how = LD_HAS(&k, CK_MESH_DIM) + LD_HAS(&k, CK_COLOR) + LD_HAS(&k, CK_RANKS);
        if (how != 1)
            return ld_fail(l, how ? k.map : m,
                           how ? "communicator '%s' is given by one of 'mesh_dim', 'color' and "
                                 "'ranks', not several"
                               : "communicator '%s' needs 'mesh_dim', 'color' or 'ranks'",
                           c.name);
        if (LD_HAS(&k, CK_KEY) && c.kind != COMM_COLOR)
            return ld_fail(l, k.key[CK_KEY], "'key' orders the ranks of a 'color' split only");
        *(sched_comm *)ml_vec_push(&l->comm_v) = c;
        ld_hash_put(&l->comms, c.name, len, l->comm_v.n - 1);
    }
    if (l->comm_v.n == 1)
        return ld_fail(l, start, "'comms' must not be empty");
    return 0;
}

int ld_comm_ref(loader *l, uint16_t *out) {
    world_comm(l);
    if (ld_want_scalar(l, "comm"))
        return -1;
    size_t len;
    const char *text = ld_text(l, &len);
    uintptr_t v;
    if (ld_hash_find(&l->comms, text, len, &v) == UINT32_MAX) {
        const char *names[SCHED_MAX_COMMS];
        size_t n = l->comm_v.n;
        for (size_t k = 0; k < n; k++)
            names[k] = ML_VEC_AT(&l->comm_v, sched_comm, k).name;
        return ld_fail_choice(l, ld_mark(l), "communicator", text, len, names, n, NULL);
    }
    *out = (uint16_t)v;
    return 0;
}

void ld_comms_finish(loader *l) {
    world_comm(l);
    l->s->n_comms = (uint32_t)l->comm_v.n;
    l->s->comms = ml_arena_alloc(l->a, l->comm_v.n * sizeof(sched_comm));
    memcpy(l->s->comms, l->comm_v.items, l->comm_v.n * sizeof(sched_comm));
}
