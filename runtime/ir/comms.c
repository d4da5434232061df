/* SPDX-License-Identifier: MIT */
/* comms.c — communicators resolved at a world (comms.h). */
#include "ir/comms.h"
#include "base/checked.h"

#include <stdlib.h>
#include <string.h>

#define MESH_TABLE_MAX (1 << 16)

/* One communicator. A mesh one is its dimensions (closed forms); a color or rank-list one the
 * tables of its groups: members in group order, each group's first index, and per world rank
 * its group (-1: none) and its rank in it. */
typedef struct {
    const sched_comm *def;
    /* COMM_MESH */
    uint32_t dims;
    int size;                 /* the product of the group's dimensions */
    /* COMM_COLOR, COMM_RANKS */
    int32_t *group_of, *local_of, *members, *start;
    uint32_t n_groups;
} comm_res;

struct ml_comms {
    int world;
    char *set;                /* the cache's key, with world: the --set values, joined */
    uint32_t n;
    comm_res *c;
    int n_dims;
    int dim_size[SCHED_MAX_MESH_DIMS], stride[SCHED_MAX_MESH_DIMS];
};

void ml_comms_free(ml_comms *c) {
    if (!c)
        return;
    for (uint32_t k = 0; k < c->n; k++) {
        free(c->c[k].group_of);
        free(c->c[k].local_of);
        free(c->c[k].members);
        free(c->c[k].start);
    }
    free(c->c);
    free(c->set);
    free(c);
}

/* The --set values as one string ("A=1\nB=2\n"): what a resolution was made with. A sweep or a
 * fit asks again with other values in the same array, so the key is the text, not the array. */
static char *set_key(const sched_params *p) {
    size_t len = 1;
    for (size_t k = 0; p && k < p->n_set; k++)
        len += strlen(p->set[k]) + 1;
    char *key = ml_xmalloc(len), *at = key;
    for (size_t k = 0; p && k < p->n_set; k++) {
        size_t n = strlen(p->set[k]);
        memcpy(at, p->set[k], n);
        at[n] = '\n';
        at += n + 1;
    }
    *at = '\0';
    return key;
}

/* Lets at rank 0: what a mesh size or a rank list (neither names rank) is evaluated with. */
static int eval_at(const sched *s, const sched_params *p, int world, int64_t *slots,
                   const expr *e, ml_mark m, const char *what, int64_t *out, ml_diags *d) {
    expr_error err = {0};
    if (expr_eval(e, slots, out, &err) != 0) {
        m.col += (uint32_t)err.offset;
        ml_error(d, s->file, m, "%s in %s", err.msg, what);
        return -1;
    }
    (void)p;
    (void)world;
    return 0;
}

static int resolve_mesh(const sched *s, const sched_params *p, int world, int64_t *slots,
                        ml_comms *c, ml_diags *d) {
    int64_t prod = 1;
    c->n_dims = (int)s->n_mesh;
    for (uint32_t k = 0; k < s->n_mesh; k++) {
        int64_t v;
        if (eval_at(s, p, world, slots, s->mesh[k].size, s->mesh[k].mark, "mesh dimension size",
                    &v, d))
            return -1;
        if (v < 1 || v > world) {
            ml_error(d, s->file, s->mesh[k].mark,
                     "mesh dimension '%s' has size %lld at world %d (1 to the world)",
                     s->mesh[k].name, (long long)v, world);
            return -1;
        }
        c->dim_size[k] = (int)v;
        prod *= v;   /* each factor <= world <= 2^20, and the product is checked at each */
        if (prod > world)
            break;
    }
    if (prod != world) {
        char sizes[256] = "";
        size_t at = 0;
        for (uint32_t k = 0; k < s->n_mesh && at < sizeof sizes; k++)
            at += (size_t)snprintf(sizes + at, sizeof sizes - at, "%s%s %d", k ? " x " : "",
                                   s->mesh[k].name, c->dim_size[k]);
        ml_error(d, s->file, s->mesh_mark, "the mesh (%s) is not the world (%d ranks)", sizes,
                 world);
        return -1;
    }
    int stride = 1;
    for (int k = c->n_dims - 1; k >= 0; k--) {
        c->stride[k] = stride;
        stride *= c->dim_size[k];
    }
    return 0;
}

/* The groups of a color or rank-list communicator from each rank's (color, key); color < 0:
 * in no group. Sorted by (color, key, rank) as MPI_Comm_split orders them. */
typedef struct {
    int64_t color, key;
    int32_t rank;
} ck;

static int ck_cmp(const void *a, const void *b) {
    const ck *x = a, *y = b;
    if (x->color != y->color)
        return x->color < y->color ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static void build_groups(comm_res *r, ck *v, int world) {
    r->group_of = ml_xcalloc((size_t)world, sizeof *r->group_of);
    r->local_of = ml_xcalloc((size_t)world, sizeof *r->local_of);
    r->members = ml_xcalloc((size_t)world, sizeof *r->members);
    r->start = ml_xcalloc((size_t)world + 1, sizeof *r->start);
    for (int k = 0; k < world; k++)
        r->group_of[k] = r->local_of[k] = -1;
    qsort(v, (size_t)world, sizeof *v, ck_cmp);
    /* Groups in sorted-color order first, renumbered below by least member. */
    uint32_t g = 0;
    int n = 0;
    int32_t *tmp_start = ml_xcalloc((size_t)world + 1, sizeof *tmp_start);
    int32_t *least = ml_xcalloc((size_t)world + 1, sizeof *least);
    for (int k = 0; k < world; k++) {
        if (v[k].color < 0)
            continue;
        if (n == 0 || v[k].color != v[n - 1].color) {   /* v[0..n): the kept, compacted */
            tmp_start[g] = n;
            least[g] = v[k].rank;
            g++;
        }
        if (v[k].rank < least[g - 1])
            least[g - 1] = v[k].rank;
        v[n++] = v[k];
    }
    tmp_start[g] = n;
    /* Order the groups by least member (a stable answer whatever the colors' values). */
    uint32_t *order = ml_xcalloc(g ? g : 1, sizeof *order);
    for (uint32_t k = 0; k < g; k++)
        order[k] = k;
    for (uint32_t k = 1; k < g; k++)   /* insertion sort; groups are few or already in order */
        for (uint32_t j = k; j > 0 && least[order[j - 1]] > least[order[j]]; j--) {
            uint32_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int at = 0;
    for (uint32_t q = 0; q < g; q++) {
        uint32_t k = order[q];
        r->start[q] = at;
        for (int32_t i = tmp_start[k]; i < tmp_start[k + 1]; i++) {
            int32_t rank = v[i].rank;
            r->members[at] = rank;
            r->group_of[rank] = (int32_t)q;
            r->local_of[rank] = i - tmp_start[k];
            at++;
        }
    }
    r->start[g] = at;
    r->n_groups = g;
    free(order);
    free(tmp_start);
    free(least);
}

static int resolve_color(const sched *s, const sched_params *p, int world, comm_res *r,
                         ml_diags *d) {
    const sched_comm *def = r->def;
    ck *v = ml_xcalloc((size_t)world, sizeof *v);
    int64_t *slots = ml_xcalloc(sched_n_slots(s), sizeof *slots);
    int rc = 0;
    for (int rank = 0; rank < world && rc == 0; rank++) {
        if ((rc = sched_eval_lets(s, p, world, rank, slots, d)))
            break;
        v[rank].rank = rank;
        expr_error err = {0};
        if (expr_eval(def->color, slots, &v[rank].color, &err) != 0 ||
            (def->key && expr_eval(def->key, slots, &v[rank].key, &err) != 0)) {
            ml_error(d, s->file, def->mark, "%s in communicator '%s' at rank %d", err.msg,
                     def->name, rank);
            rc = -1;
        }
        if (!def->key)
            v[rank].key = rank;
    }
    if (rc == 0)
        build_groups(r, v, world);
    free(v);
    free(slots);
    return rc;
}

static int resolve_ranks(const sched *s, const sched_params *p, int world, int64_t *slots,
                         comm_res *r, ml_diags *d) {
    const sched_comm *def = r->def;
    ck *v = ml_xcalloc((size_t)world, sizeof *v);
    for (int k = 0; k < world; k++)
        v[k] = (ck){-1, 0, k};
    int rc = 0;
    for (uint32_t k = 0; k < def->n_ranks && rc == 0; k++) {
        int64_t m;
        if ((rc = eval_at(s, p, world, slots, def->ranks[k], def->mark, "a communicator's ranks",
                          &m, d)))
            break;
        if (m < 0 || m >= world) {
            ml_error(d, s->file, def->mark,
                     "communicator '%s': member %u is rank %lld, outside the world (0 to %d)",
                     def->name, k, (long long)m, world - 1);
            rc = -1;
        } else if (v[m].color == 0) {
            ml_error(d, s->file, def->mark, "communicator '%s': rank %lld is listed twice",
                     def->name, (long long)m);
            rc = -1;
        } else {
            v[m].color = 0;
            v[m].key = k;
        }
    }
    if (rc == 0)
        build_groups(r, v, world);
    free(v);
    return rc;
}

/* rank's coordinate along mesh dimension k. */
static inline int coord(const ml_comms *c, int rank, int k) {
    return rank / c->stride[k] % c->dim_size[k];
}

/* rank's rank in its group of a mesh communicator: row-major over the group's dimensions. */
static int mesh_local(const ml_comms *c, const comm_res *r, int rank) {
    int local = 0;
    for (int k = 0; k < c->n_dims; k++)
        if (r->dims >> k & 1u)
            local = local * c->dim_size[k] + coord(c, rank, k);
    return local;
}

static ml_comms *resolve(const sched *s, const sched_params *p, int world, ml_diags *d) {
    ml_comms *c = ml_xcalloc(1, sizeof *c);
    c->world = world;
    c->set = set_key(p);
    c->n = s->n_comms ? s->n_comms : 1;
    c->c = ml_xcalloc(c->n, sizeof *c->c);
    static const sched_comm world_def = {.name = "world", .kind = COMM_WORLD};
    int64_t *slots = ml_xcalloc(sched_n_slots(s), sizeof *slots);
    int rc = 0;
    if (s->n_mesh || s->n_comms > 1)
        rc = sched_eval_lets(s, p, world, 0, slots, d);
    if (rc == 0 && s->n_mesh)
        rc = resolve_mesh(s, p, world, slots, c, d);
    for (uint32_t k = 0; k < c->n && rc == 0; k++) {
        comm_res *r = &c->c[k];
        r->def = s->n_comms ? &s->comms[k] : &world_def;
        switch (r->def->kind) {
        case COMM_WORLD: r->size = world; break;
        case COMM_MESH:
            r->dims = r->def->dims;
            r->size = 1;
            for (int j = 0; j < c->n_dims; j++)
                if (r->dims >> j & 1u)
                    r->size *= c->dim_size[j];
            /* a rank's rank in its group is asked at every collective of every rank (the
             * in-place flags, the floor's shares): a table where the world is small enough
             * (256 KiB a communicator at most), the closed form beyond */
            if (world <= MESH_TABLE_MAX) {
                r->local_of = ml_xmalloc((size_t)world * sizeof *r->local_of);
                for (int q = 0; q < world; q++)
                    r->local_of[q] = mesh_local(c, r, q);
            }
            break;
        case COMM_COLOR: rc = resolve_color(s, p, world, r, d); break;
        case COMM_RANKS: rc = resolve_ranks(s, p, world, slots, r, d); break;
        }
    }
    free(slots);
    if (rc != 0) {
        ml_comms_free(c);
        return NULL;
    }
    return c;
}

/* The resolutions made for a schedule, one per (world, --set values) asked. Made at load and
 * freed with the schedule: the copies of a schedule that the optimizer makes (its stages) share
 * it, and add to it, without owning it. */
struct sched_comms_cache {
    ml_comms **v;
    size_t n;
};

sched_comms_cache *sched_comms_cache_new(void) { return ml_xcalloc(1, sizeof(sched_comms_cache)); }

void sched_comms_cache_free(sched_comms_cache *cache) {
    if (!cache)
        return;
    for (size_t k = 0; k < cache->n; k++)
        ml_comms_free(cache->v[k]);
    free(cache->v);
    free(cache);
}

const ml_comms *sched_comms(const sched *s, const sched_params *p, int world, ml_diags *d) {
    sched_comms_cache *cache = s->comms_cache;
    char *key = set_key(p);
    for (size_t k = 0; cache && k < cache->n; k++) {
        ml_comms *c = cache->v[k];
        if (c->world == world && strcmp(c->set, key) == 0) {
            free(key);
            return c;
        }
    }
    free(key);
    ml_comms *n = resolve(s, p, world, d);
    if (!n || !cache)   /* a schedule not made by the loader keeps nothing */
        return n;
    cache->v = ml_xrealloc(cache->v, (cache->n + 1) * sizeof *cache->v);
    cache->v[cache->n++] = n;
    return n;
}

uint32_t ml_comms_count(const ml_comms *c) { return c->n; }
const char *ml_comms_name(const ml_comms *c, uint32_t comm) { return c->c[comm].def->name; }
const sched_comm *ml_comms_def(const ml_comms *c, uint32_t comm) { return c->c[comm].def; }
bool ml_comms_world_only(const ml_comms *c) { return c->n == 1; }


int ml_comms_size(const ml_comms *c, uint32_t comm, int rank) {
    const comm_res *r = &c->c[comm];
    if (r->def->kind == COMM_WORLD || r->def->kind == COMM_MESH)
        return rank >= 0 && rank < c->world ? r->size : 0;
    if (rank < 0 || rank >= c->world || r->group_of[rank] < 0)
        return 0;
    int g = r->group_of[rank];
    return r->start[g + 1] - r->start[g];
}

int ml_comms_local(const ml_comms *c, uint32_t comm, int rank) {
    const comm_res *r = &c->c[comm];
    if (rank < 0 || rank >= c->world)
        return -1;
    if (r->def->kind == COMM_WORLD)
        return rank;
    if (r->local_of)   /* a color, a rank list, or a mesh of a small world */
        return r->local_of[rank];
    return mesh_local(c, r, rank);
}

int ml_comms_global(const ml_comms *c, uint32_t comm, int rank, int local) {
    const comm_res *r = &c->c[comm];
    int size = ml_comms_size(c, comm, rank);
    if (size == 0 || local < 0 || local >= size)
        return -1;
    if (r->def->kind == COMM_WORLD)
        return local;
    if (r->def->kind != COMM_MESH)
        return r->members[r->start[r->group_of[rank]] + local];
    int g = rank;
    for (int k = c->n_dims - 1; k >= 0; k--)
        if (r->dims >> k & 1u) {
            int want = local % c->dim_size[k];
            local /= c->dim_size[k];
            g += (want - coord(c, rank, k)) * c->stride[k];
        }
    return g;
}

uint32_t ml_comms_groups(const ml_comms *c, uint32_t comm) {
    const comm_res *r = &c->c[comm];
    if (r->def->kind == COMM_WORLD || r->def->kind == COMM_MESH)
        return (uint32_t)(c->world / r->size);
    return r->n_groups;
}

int ml_comms_group(const ml_comms *c, uint32_t comm, int rank) {
    const comm_res *r = &c->c[comm];
    if (rank < 0 || rank >= c->world)
        return -1;
    if (r->def->kind == COMM_WORLD)
        return 0;
    if (r->def->kind != COMM_MESH)
        return r->group_of[rank];
    int g = 0;
    for (int k = 0; k < c->n_dims; k++)   /* row-major over the other dimensions */
        if (!(r->dims >> k & 1u))
            g = g * c->dim_size[k] + coord(c, rank, k);
    return g;
}
