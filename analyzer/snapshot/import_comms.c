/* SPDX-License-Identifier: MIT */
/* import_comms.c — a capture's process groups as communicators (import_comms.h says which
 * becomes what). Everything here is checked against the ranks the recorder saw: a description
 * that does not produce the group's own ranks is refused, not written. */
#include "snapshot/import_comms.h"
#include "ir/sched.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define IC_NAME 64    /* a communicator's or a mesh dimension's name, with its NUL */

typedef enum { IC_MESH, IC_COLOR, IC_RANKS } ic_kind;

typedef struct {
    char name[IC_NAME];
    ic_kind kind;
    unsigned dims;            /* IC_MESH: a bit per mesh dimension */
    int64_t div, mod;         /* IC_COLOR: color rank / div (div > 0), else rank % mod */
    const int64_t *ranks;     /* the captured rank's group, in the group's order */
    size_t n_ranks;
    int64_t local;            /* the captured rank's index in ranks */
    const char *expr;         /* local as an expression of rank; NULL for IC_RANKS */
    const char *members;      /* IC_RANKS: the condition that a rank is in the group */
} ic_comm;

typedef struct {
    const char *group;        /* the process group's name in the capture */
    int comm;
} ic_group;

struct import_comms {
    size_t n_dims;
    char dim_name[SCHED_MAX_MESH_DIMS][IC_NAME];
    int64_t dim_size[SCHED_MAX_MESH_DIMS], stride[SCHED_MAX_MESH_DIMS];
    ml_vec comms;             /* of ic_comm; index + 1 is the communicator (0: the world) */
    ml_vec groups;            /* of ic_group */
    ml_arena *a;
    int64_t world, rank;
    unsigned n_lists;         /* rank-list communicators so far, for their names */
    char *err;
    size_t errlen;
};

static int fail(import_comms *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(import_comms *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(c->err, c->errlen, "memlife_capture: ");
    vsnprintf(c->err + n, c->errlen > (size_t)n ? c->errlen - (size_t)n : 0, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *arena_text(import_comms *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *arena_text(import_comms *c, const char *fmt, ...) {
    ml_str t = {0};
    va_list ap;
    va_start(ap, fmt);
    ml_str_vprintf(&t, fmt, ap);
    va_end(ap);
    const char *out = ml_arena_strndup(c->a, t.s, t.n);
    ml_str_free(&t);
    return out;
}

/* A schedule name a mesh dimension may have: a letter, then letters, digits, '_', '-', '.'. */
static bool good_name(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= IC_NAME - 8 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return false;
    for (size_t k = 0; k < n; k++) {
        char ch = s[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return false;
    }
    return strcmp(s, "world") != 0;
}

static int read_mesh(import_comms *c, const json_t *mesh) {
    const json_t *dims = json_object_get(mesh, "dims"), *shape = json_object_get(mesh, "shape");
    size_t n = json_array_size(dims);
    if (!json_is_object(mesh) || !json_is_array(dims) || !json_is_array(shape) || n == 0 ||
        n != json_array_size(shape) || n > SCHED_MAX_MESH_DIMS)
        return fail(c, "'mesh' is not {\"dims\": [NAME, ...], \"shape\": [SIZE, ...]} of 1 to %u "
                    "dimensions", SCHED_MAX_MESH_DIMS);
    int64_t product = 1;
    for (size_t k = 0; k < n; k++) {
        const char *name = json_string_value(json_array_get(dims, k));
        const json_t *size = json_array_get(shape, k);
        if (!good_name(name))
            return fail(c, "mesh dimension %zu: '%.40s' is no schedule name (a letter, then "
                        "letters, digits, '_', '-', '.'; not 'world')", k, name ? name : "?");
        for (size_t j = 0; j < k; j++)
            if (!strcmp(c->dim_name[j], name))
                return fail(c, "mesh dimension '%s' named twice", name);
        if (!json_is_integer(size) || json_integer_value(size) < 1 ||
            __builtin_mul_overflow(product, json_integer_value(size), &product) || product > c->world)
            return fail(c, "mesh dimension '%s': its size is not a positive integer whose "
                        "product with the others is at most the world, %" PRId64, name, c->world);
        snprintf(c->dim_name[k], IC_NAME, "%s", name);
        c->dim_size[k] = json_integer_value(size);
    }
    if (product != c->world)
        return fail(c, "the mesh's sizes multiply to %" PRId64 ", not the world, %" PRId64,
                    product, c->world);
    c->n_dims = n;
    for (size_t k = n; k-- > 0;)
        c->stride[k] = k + 1 == n ? 1 : c->stride[k + 1] * c->dim_size[k + 1];
    return 0;
}

/* The group's ranks: distinct world ranks, the captured rank among them (*local its index). */
static int read_ranks(import_comms *c, const char *g, const json_t *list, int64_t **out,
                      size_t *n_out, int64_t *local) {
    size_t n = json_array_size(list);
    *out = NULL;
    *n_out = 0;
    if (!json_is_array(list) || n == 0 || n > (size_t)c->world)
        return fail(c, "groups['%.40s']: 'ranks' is not a list of 1 to %" PRId64 " ranks", g,
                    c->world);
    int64_t *r = ml_arena_alloc(c->a, n * sizeof *r);
    unsigned char *seen = ml_xcalloc((size_t)c->world, 1);
    *local = -1;
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        const json_t *v = json_array_get(list, k);
        r[k] = json_is_integer(v) ? json_integer_value(v) : -1;
        if (r[k] < 0 || r[k] >= c->world || seen[r[k]])
            rc = fail(c, "groups['%.40s']: ranks[%zu] is not a rank of the world of %" PRId64
                      " that the group holds once", g, k, c->world);
        else
            seen[r[k]] = 1;
        if (r[k] == c->rank)
            *local = (int64_t)k;
    }
    free(seen);
    if (!rc && *local < 0)
        rc = fail(c, "groups['%.40s']: rank %" PRId64 " (the captured one) is not in the group",
                  g, c->rank);
    *out = r;
    *n_out = n;
    return rc;
}

/* "rank / 2 % 4" and so on: the captured rank's coordinates along dims, row-major, as the
 * index in that sub-mesh; checks that the group is that sub-mesh's through the captured rank. */
static int mesh_comm(import_comms *c, const char *g, const json_t *desc, ic_comm *m) {
    const json_t *names = json_object_get(desc, "mesh_dims");
    size_t n = json_array_size(names);
    if (!json_is_array(names) || n == 0)
        return fail(c, "groups['%.40s']: 'mesh_dims' is not a list of mesh dimensions", g);
    if (!c->n_dims)
        return fail(c, "groups['%.40s']: 'mesh_dims' without a 'mesh'", g);
    for (size_t k = 0; k < n; k++) {
        const char *name = json_string_value(json_array_get(names, k));
        size_t d = 0;
        while (d < c->n_dims && !(name && !strcmp(name, c->dim_name[d])))
            d++;
        if (d == c->n_dims || (m->dims >> d & 1u))
            return fail(c, "groups['%.40s']: mesh_dims[%zu] is not a mesh dimension named once",
                        g, k);
        m->dims |= 1u << d;
    }
    /* the sub-mesh through the captured rank, in row-major order over its dimensions */
    int64_t size = 1, base = 0;
    for (size_t d = 0; d < c->n_dims; d++) {
        if (m->dims >> d & 1u)
            size *= c->dim_size[d];
        else
            base += c->rank / c->stride[d] % c->dim_size[d] * c->stride[d];
    }
    bool same = (size_t)size == m->n_ranks;
    for (int64_t k = 0; same && k < size; k++) {
        int64_t r = base, rest = k;
        for (size_t d = c->n_dims; d-- > 0;)
            if (m->dims >> d & 1u) {
                r += rest % c->dim_size[d] * c->stride[d];
                rest /= c->dim_size[d];
            }
        same = m->ranks[k] == r;
    }
    if (!same)
        return fail(c, "groups['%.40s']: its ranks are not those of rank %" PRId64 "'s sub-mesh "
                    "over its mesh_dims, in row-major order", g, c->rank);
    m->kind = IC_MESH;
    /* the index in the sub-mesh, outermost dimension first: "(rank / 4) * 2 + rank / 2 % 2"
     * (the outermost dimension's coordinate needs no modulo; a dimension of 1 adds nothing) */
    ml_str e = {0};
    int64_t mult = size;
    for (size_t d = 0; d < c->n_dims; d++) {
        if (!(m->dims >> d & 1u))
            continue;
        mult /= c->dim_size[d];
        if (c->dim_size[d] == 1)
            continue;
        ml_str_printf(&e, "%s%s", e.n ? " + " : "", mult > 1 ? "(" : "");
        if (c->stride[d] == 1)
            ml_str_printf(&e, "rank");
        else
            ml_str_printf(&e, "rank / %" PRId64, c->stride[d]);
        if (d > 0)
            ml_str_printf(&e, " %% %" PRId64, c->dim_size[d]);
        if (mult > 1)
            ml_str_printf(&e, ") * %" PRId64, mult);
    }
    m->expr = e.n ? ml_arena_strndup(c->a, e.s, e.n) : "0";
    ml_str_free(&e);
    /* the program's name for a flattened sub-mesh (DeviceMesh._flatten("dp")), else its
     * dimensions' names joined by '_' (where that is too long, its dimensions' bits) */
    const char *given = json_string_value(json_object_get(desc, "name"));
    if (given && !good_name(given))
        return fail(c, "groups['%.40s']: name '%.40s' is no schedule name", g, given);
    ml_str name = {0};
    for (size_t d = 0; d < c->n_dims && !given; d++)
        if (m->dims >> d & 1u)
            ml_str_printf(&name, "%s%s", name.n ? "_" : "", c->dim_name[d]);
    if (given)
        snprintf(m->name, IC_NAME, "%s", given);
    else if (name.n < IC_NAME - 8)
        snprintf(m->name, IC_NAME, "%s", name.s);
    else
        snprintf(m->name, IC_NAME, "mesh_dims_%x", m->dims);
    ml_str_free(&name);
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The partition's groups as MPI_Comm_split's colors with key rank: consecutive blocks of K
 * (color rank / K) or M strided groups (color rank % M), each group in rank order. Leaves m a
 * rank list where neither makes them. */
static int partition_comm(import_comms *c, const char *g, const json_t *part, ic_comm *m) {
    size_t n = json_array_size(part);
    if (!json_is_array(part) || n == 0)
        return fail(c, "groups['%.40s']: 'partition' is not a list of groups", g);
    unsigned char *seen = ml_xcalloc((size_t)c->world, 1);
    int64_t covered = 0, k0 = (int64_t)json_array_size(json_array_get(part, 0));
    bool blocks = true, strided = true, mine = false;
    int rc = 0;
    for (size_t j = 0; j < n && !rc; j++) {
        const json_t *grp = json_array_get(part, j);
        size_t len = json_array_size(grp);
        if (!json_is_array(grp) || len == 0) {
            rc = fail(c, "groups['%.40s']: partition[%zu] is not a list of ranks", g, j);
            break;
        }
        blocks &= (int64_t)len == k0;
        strided &= (int64_t)len * (int64_t)n == c->world;
        bool has_mine = false;
        int64_t first = json_integer_value(json_array_get(grp, 0));
        for (size_t k = 0; k < len; k++) {
            const json_t *v = json_array_get(grp, k);
            int64_t r = json_is_integer(v) ? json_integer_value(v) : -1;
            if (r < 0 || r >= c->world || seen[r]) {
                rc = fail(c, "groups['%.40s']: partition[%zu][%zu] is not a rank of the world "
                          "that no other group of the partition holds", g, j, k);
                break;
            }
            seen[r] = 1;
            covered++;
            has_mine |= r == c->rank;
            blocks &= r == first + (int64_t)k && first % k0 == 0;
            strided &= r == first + (int64_t)k * (int64_t)n && first < (int64_t)n;
        }
        if (has_mine && !rc) {   /* the captured rank's group of the partition: this group */
            /* the calls list a group as they named it; the set is what must agree, and the
             * group's own order decides the key */
            bool eq = len == m->n_ranks;
            int64_t *ours = ml_xmalloc(m->n_ranks * sizeof *ours);
            int64_t *theirs = ml_xmalloc(len * sizeof *theirs);
            memcpy(ours, m->ranks, m->n_ranks * sizeof *ours);
            for (size_t k = 0; k < len; k++)
                theirs[k] = json_integer_value(json_array_get(grp, k));
            qsort(ours, m->n_ranks, sizeof *ours, cmp_i64);
            qsort(theirs, len, sizeof *theirs, cmp_i64);
            eq = eq && !memcmp(theirs, ours, len * sizeof *ours);
            free(ours);
            free(theirs);
            if (!eq)
                rc = fail(c, "groups['%.40s']: its partition's group of rank %" PRId64 " holds "
                          "other ranks than the group", g, c->rank);
            mine = true;
        }
    }
    free(seen);
    if (rc)
        return rc;
    if (covered != c->world || !mine)
        return fail(c, "groups['%.40s']: the partition does not hold every rank of the world "
                    "once", g);
    bool ascending = true;
    for (size_t k = 1; k < m->n_ranks; k++)
        ascending &= m->ranks[k] > m->ranks[k - 1];
    if (!ascending || !(blocks || strided))
        return 0;
    m->kind = IC_COLOR;
    if (blocks) {
        m->div = k0;
        snprintf(m->name, IC_NAME, "rank_div_%" PRId64, k0);
        m->expr = arena_text(c, "rank %% %" PRId64, k0);
    } else {
        m->mod = (int64_t)n;
        snprintf(m->name, IC_NAME, "rank_mod_%zu", n);
        m->expr = arena_text(c, "rank / %zu", n);
    }
    return 0;
}

/* "rank == 0 || rank == 7", or "rank >= 2 && rank <= 5" for a run of consecutive ranks. */
static const char *members_text(import_comms *c, const ic_comm *m) {
    int64_t lo = m->ranks[0], hi = m->ranks[0];
    bool run = true;
    for (size_t k = 1; k < m->n_ranks; k++) {
        run &= m->ranks[k] == m->ranks[k - 1] + 1;
        lo = m->ranks[k] < lo ? m->ranks[k] : lo;
        hi = m->ranks[k] > hi ? m->ranks[k] : hi;
    }
    ml_str t = {0};
    if (run && m->n_ranks > 2)
        ml_str_printf(&t, "rank >= %" PRId64 " && rank <= %" PRId64, lo, hi);
    else
        for (size_t k = 0; k < m->n_ranks; k++)
            ml_str_printf(&t, "%srank == %" PRId64, k ? " || " : "", m->ranks[k]);
    const char *out = ml_arena_strndup(c->a, t.s, t.n);
    ml_str_free(&t);
    return out;
}

static bool same_comm(const ic_comm *x, const ic_comm *y) {
    if (x->kind != y->kind)
        return false;
    if (x->kind == IC_MESH)
        return x->dims == y->dims;
    if (x->kind == IC_COLOR)
        return x->div == y->div && x->mod == y->mod;
    return x->n_ranks == y->n_ranks && !memcmp(x->ranks, y->ranks, x->n_ranks * sizeof *x->ranks);
}

static int add_group(import_comms *c, const char *g, const json_t *desc) {
    if (!json_is_object(desc))
        return fail(c, "groups['%.40s'] is not a dict", g);
    ic_comm m = {.kind = IC_RANKS};
    int64_t *ranks;
    if (read_ranks(c, g, json_object_get(desc, "ranks"), &ranks, &m.n_ranks, &m.local))
        return -1;
    m.ranks = ranks;
    const json_t *dims = json_object_get(desc, "mesh_dims"), *part = json_object_get(desc, "partition");
    if (dims ? mesh_comm(c, g, desc, &m) : part ? partition_comm(c, g, part, &m) : 0)
        return -1;
    int at = -1;
    for (size_t k = 0; k < c->comms.n && at < 0; k++)
        if (same_comm(&ML_VEC_AT(&c->comms, ic_comm, k), &m))
            at = (int)k;
    if (at < 0) {
        if (c->comms.n + 1 >= SCHED_MAX_COMMS)
            return fail(c, "more than %u communicators", SCHED_MAX_COMMS - 1);
        if (m.kind == IC_RANKS) {
            snprintf(m.name, IC_NAME, "group%u", ++c->n_lists);
            m.members = members_text(c, &m);
        }
        /* a name another communicator has already (a mesh dimension called rank_div_2) */
        char base[IC_NAME];
        snprintf(base, sizeof base, "%s", m.name);
        for (unsigned sfx = 2, k = 0; k < c->comms.n; k++)
            if (!strcmp(ML_VEC_AT(&c->comms, ic_comm, k).name, m.name)) {
                snprintf(m.name, IC_NAME, "%.50s_%u", base, sfx++);
                k = (unsigned)-1;
            }
        *(ic_comm *)ml_vec_push(&c->comms) = m;
        at = (int)c->comms.n - 1;
    }
    *(ic_group *)ml_vec_push(&c->groups) = (ic_group){ml_arena_strndup(c->a, g, strlen(g)), at + 1};
    return 0;
}

import_comms *import_comms_read(const json_t *capture, int64_t world, int64_t rank, char *err,
                                size_t errlen) {
    import_comms *c = ml_xcalloc(1, sizeof *c);
    c->a = ml_arena_new();
    c->world = world;
    c->rank = rank;
    c->err = err;
    c->errlen = errlen;
    ml_vec_init(&c->comms, sizeof(ic_comm));
    ml_vec_init(&c->groups, sizeof(ic_group));
    const json_t *mesh = json_object_get(capture, "mesh"), *groups = json_object_get(capture, "groups");
    int rc = mesh ? read_mesh(c, mesh) : 0;
    if (!rc && groups && !json_is_object(groups))
        rc = fail(c, "'groups' is not a dict of process groups");
    const char *g;
    const json_t *desc;
    json_object_foreach((json_t *)groups, g, desc) {
        if (rc)
            break;
        if (!strcmp(g, "world"))
            rc = fail(c, "groups['world']: the world is no group to describe");
        else
            rc = add_group(c, g, desc);
    }
    if (rc) {
        import_comms_free(c);
        return NULL;
    }
    return c;
}

void import_comms_free(import_comms *c) {
    if (!c)
        return;
    ml_vec_free(&c->comms);
    ml_vec_free(&c->groups);
    ml_arena_free(c->a);
    free(c);
}

int import_comms_find(const import_comms *c, const char *group) {
    if (!group || !strcmp(group, "world"))
        return 0;
    for (size_t k = 0; k < c->groups.n; k++)
        if (!strcmp(ML_VEC_AT(&c->groups, ic_group, k).group, group))
            return ML_VEC_AT(&c->groups, ic_group, k).comm;
    return -1;
}

static const ic_comm *comm_at(const import_comms *c, int k) {
    return &ML_VEC_AT(&c->comms, ic_comm, (size_t)k - 1);
}

const char *import_comms_name(const import_comms *c, int k) { return k ? comm_at(c, k)->name : "world"; }

int64_t import_comms_local(const import_comms *c, int k) { return k ? comm_at(c, k)->local : c->rank; }

const char *import_comms_local_expr(const import_comms *c, int k) {
    if (!k)
        return "rank";
    return comm_at(c, k)->kind == IC_RANKS ? NULL : comm_at(c, k)->expr;
}

json_t *import_comms_yaml(const import_comms *c) {
    json_t *doc = json_object();
    if (!c->comms.n)
        return doc;
    bool mesh = false;
    for (size_t k = 0; k < c->comms.n; k++)
        mesh |= ML_VEC_AT(&c->comms, ic_comm, k).kind == IC_MESH;
    if (mesh) {
        json_t *m = json_object();
        for (size_t d = 0; d < c->n_dims; d++)
            json_object_set_new(m, c->dim_name[d], json_integer(c->dim_size[d]));
        json_object_set_new(doc, "mesh", m);
    }
    json_t *comms = json_object();
    for (size_t k = 0; k < c->comms.n; k++) {
        const ic_comm *m = &ML_VEC_AT(&c->comms, ic_comm, k);
        json_t *def = json_object();
        if (m->kind == IC_MESH) {
            json_t *dims = json_array();
            for (size_t d = 0; d < c->n_dims; d++)
                if (m->dims >> d & 1u)
                    json_array_append_new(dims, json_string(c->dim_name[d]));
            json_object_set_new(def, "mesh_dim", json_array_size(dims) == 1
                                                     ? json_incref(json_array_get(dims, 0)) : dims);
            if (json_array_size(dims) == 1)
                json_decref(dims);
        } else if (m->kind == IC_COLOR) {
            char color[48];
            if (m->div)
                snprintf(color, sizeof color, "rank / %" PRId64, m->div);
            else
                snprintf(color, sizeof color, "rank %% %" PRId64, m->mod);
            json_object_set_new(def, "color", json_string(color));
        } else {
            json_t *ranks = json_array();
            for (size_t r = 0; r < m->n_ranks; r++)
                json_array_append_new(ranks, json_integer(m->ranks[r]));
            json_object_set_new(def, "ranks", ranks);
        }
        json_object_set_new(comms, m->name, def);
    }
    json_object_set_new(doc, "comms", comms);
    return doc;
}

const char *import_comms_members(const import_comms *c, int k) {
    return k ? comm_at(c, k)->members : NULL;
}

void import_comms_comment(const import_comms *c, ml_str *out) {
    for (size_t k = 0; k < c->comms.n; k++) {
        const ic_comm *m = &ML_VEC_AT(&c->comms, ic_comm, k);
        if (m->kind == IC_RANKS)
            ml_str_printf(out, "# Communicator %s is rank %" PRId64 "'s group of a process group "
                          "that no mesh or color makes:\n# only its ranks issue its collectives "
                          "(when:); what other ranks do on other groups of it\n# is not in this "
                          "capture (rank %" PRId64 "'s view).\n", m->name, c->rank, c->rank);
    }
}
