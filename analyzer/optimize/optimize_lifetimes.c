/* SPDX-License-Identifier: MIT */
/* optimize_lifetimes.c — frees as early and allocs as late as the data allows.
 *
 * Within each block (the plan's steps, every repeat and region body on its own; nothing moves
 * into or out of a body):
 *   - a free of b (a free of several names is split) moves to just after the last step that
 *     names b, once that step's asynchronous work on b has completed: after an existing host
 *     synchronization that completes it (sync: device, sync: {stream: S} of its stream, or
 *     sync: {event: E} with E recorded on that stream after the use), if waiting for it does not
 *     keep the free behind an alloc; else a `sync: {stream: S}` is added right after the last
 *     use, for each stream S still running work on b (the narrowest host wait: one stream, not
 *     the device). Work on the default stream counts too: lint would accept a free right after
 *     it (cudaFree synchronizes, cudaFreeAsync is stream-ordered), but the executor's async
 *     allocator measures frees where the schedule synchronized, as the chapter's plan does.
 *     Inits and checks are host-synchronous: done when the step returns.
 *     A free whose buffer was allocated outside the block, or whose uses cannot be shown
 *     complete without crossing an alloc, stays.
 *   - a buffer whose data is dead before a step that overwrites all of it (a collective's
 *     recv, an init's or a copy's destination, the whole buffer, on every rank, by a step that
 *     reads nothing else of it) after earlier uses is split in two lifetimes: a free and a fresh
 *     alloc (same size, no init) are added before the overwrite, and the free then moves up
 *     like any other. This is the FSDP pattern: the backward gathers the parameters again into
 *     the buffer the forward gathered them into, so the buffer need not live in between. A split
 *     with no allocation between its free and its new alloc once placed saves nothing and is
 *     undone.
 *     (reduce is not an overwrite: its recv is written on the root only.)
 *   - an alloc of b without `init: {copy: ...}` moves to just before the first step that names
 *     b (an alloc that copies from another buffer stays: moving it past a write of its source
 *     would change what it copies). An alloc never used before its free stays, with its free
 *     right after it.
 * At one point, frees come before allocs. */
#include "optimize/optimize_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
    opt_node n;
    struct slot *next;
} slot;

typedef struct {
    slot *head, *tail;
} slot_list;

static void list_add(opt_ctx *c, slot_list *l, const opt_node *n) {
    slot *s = ml_arena_alloc(opt_scratch(c), sizeof *s);
    s->n = *n;
    if (l->tail)
        l->tail->next = s;
    else
        l->head = s;
    l->tail = s;
}

static const char *node_what(const opt_node *n) {
    return n->st.kind == ST_COLL ? ml_colls[n->st.u.coll.coll].name : sched_step_names[n->st.kind];
}

/* "the reduce_scatter at line 22" / "the reduce_scatter" for a step a stage added. */
static void where(const opt_node *n, char *buf, size_t len) {
    if (n->orig_line)
        snprintf(buf, len, "the %s at line %u", node_what(n), n->orig_line);
    else
        snprintf(buf, len, "the %s", node_what(n));
}

/* Does node k complete asynchronous work enqueued on stream u before node `after`? */
static bool completes(const opt_block *b, size_t k, uint32_t u, size_t after) {
    const sched_step *st = &b->v[k].st;
    /* a wait of the default stream on an event whose latest record is on u after the use: the
     * default stream, where frees are ordered (cudaFreeAsync), is then past that work */
    if (st->kind == ST_WAIT && st->u.event.stream == SCHED_DEFAULT_STREAM) {
        for (size_t r = k; r-- > after + 1;) {
            const sched_step *rs = &b->v[r].st;
            if (rs->kind == ST_RECORD && rs->u.event.event == st->u.event.event)
                return rs->u.event.stream == u;
        }
        return false;
    }
    if (st->kind != ST_SYNC)
        return false;
    if (st->u.sync.kind == SYNC_DEVICE)
        return true;
    if (st->u.sync.kind == SYNC_STREAM)
        return st->u.sync.stream == u;
    /* sync on an event: complete if its latest record before k is on u and after the use */
    for (size_t r = k; r-- > after + 1;) {
        const sched_step *rs = &b->v[r].st;
        if (rs->kind == ST_RECORD && rs->u.event.event == st->u.sync.event)
            return rs->u.event.stream == u;
    }
    return false;
}

size_t opt_completion_point(const opt_block *b, size_t from, size_t last, size_t limit,
                            uint32_t buf, const bool *alloc_gap, unsigned how,
                            uint64_t *need) {
    *need = 0;
    uint64_t used = 0;
    size_t last_on[64];
    for (size_t k = from; k <= last; k++) {
        uint64_t s = opt_async_streams(&b->v[k], buf);
        if (how & OPT_DEFAULT_ORDERED)   /* the free is stream-ordered after default's work */
            s &= ~(1ull << SCHED_DEFAULT_STREAM);
        for (uint32_t u = 0; u < 64 && (s >> u); u++)
            if (s >> u & 1) {
                used |= 1ull << u;
                last_on[u] = k;
            }
    }
    size_t point = last;
    bool all_found = true;
    uint64_t late = 0;   /* streams completed only after node last */
    for (uint32_t u = 0; u < 64 && (used >> u); u++) {
        if (!(used >> u & 1))
            continue;
        size_t k = last_on[u] + 1;
        while (k < limit && !completes(b, k, u, last_on[u]))
            k++;
        if (k >= limit) {
            all_found = false;
            late |= 1ull << u;
            continue;
        }
        if (k > last) {
            late |= 1ull << u;
            point = k > point ? k : point;
        }
    }
    /* Allocations a free placed after node `point` would still come after (it goes before
     * whatever is placed ahead of node point + 1), or, staying, those before node limit. */
    size_t end = all_found ? point : limit;
    bool alloc_between = false;
    for (size_t k = last + 1; k <= end && k <= limit && !alloc_between; k++)
        alloc_between = alloc_gap ? alloc_gap[k] : (k < limit && opt_is_alloc_like(&b->v[k]));
    if (!alloc_between)
        return all_found ? point : limit;
    /* Keeping the overlap: where the program already orders the uses (a host sync, a wait of
     * default) the free goes there, even past an allocation, rather than adding a wait that
     * would hold the default stream behind another stream's work sooner than the program does. */
    if ((how & OPT_PREFER_EXISTING) && all_found)
        return point;
    *need = late;
    return last;
}

/* The last node in [from, last] whose asynchronous work on stream u uses buf. */
static size_t last_use_on(const opt_block *b, size_t from, size_t last, uint32_t buf, uint32_t u) {
    size_t at = last;
    for (size_t k = from; k <= last; k++)
        if (opt_async_streams(&b->v[k], buf) >> u & 1)
            at = k;
    return at;
}

/* ---- the pass ---------------------------------------------------------------------------------*/

#define NONE SIZE_MAX

typedef struct {
    size_t *at;       /* by buffer */
    size_t k;
    bool backward;    /* keep the first reference at or after k (else the last up to k) */
} ref_index;

static void mark_ref(void *ctx, uint32_t buf, int stream) {
    (void)stream;
    ref_index *r = ctx;
    r->at[buf] = r->k;
}

void opt_split_frees(opt_ctx *c, opt_block *b) {
    opt_block out = {0};
    for (size_t k = 0; k < b->n; k++) {
        opt_node *n = &b->v[k];
        if (n->st.kind != ST_FREE || n->st.u.free.n == 1) {
            opt_block_push(c, &out, n);
            continue;
        }
        for (uint32_t j = 0; j < n->st.u.free.n; j++) {
            opt_node one = *n;
            one.st.u.free.bufs = &n->st.u.free.bufs[j];
            one.st.u.free.marks = &n->st.u.free.marks[j];
            one.st.u.free.n = 1;
            opt_block_push(c, &out, &one);
        }
    }
    *b = out;
}

/* ---- split at an overwrite ------------------------------------------------------------------- */

typedef struct {
    uint32_t buf;
    unsigned n;        /* views of buf in the step */
} view_count;

static void count_view(void *ctx, sched_view *v) {
    view_count *vc = ctx;
    vc->n += v->buf == vc->buf;
}

static bool whole(const sched_view *v) { return !v->offset && !v->count; }

/* The buffer a step overwrites entirely, on every rank, reading nothing else of it; or
 * SCHED_NO_SYM. */
static uint32_t overwritten(const opt_node *n) {
    const sched_step *st = &n->st;
    const sched_view *dst = NULL;
    if (st->when || n->body.n)
        return SCHED_NO_SYM;
    if (st->kind == ST_COLL && !ml_colls[st->u.coll.coll].flow.root_only)
        dst = &st->u.coll.recv;
    else if (st->kind == ST_INIT)
        dst = &st->u.init.dst;
    else if (st->kind == ST_COPY)
        dst = &st->u.copy.dst;
    if (!dst || !whole(dst))
        return SCHED_NO_SYM;
    view_count vc = {.buf = dst->buf};
    opt_each_view((sched_step *)st, count_view, &vc);
    return vc.n == 1 ? dst->buf : SCHED_NO_SYM;
}

typedef struct {
    bool *used;        /* by buffer: named since its alloc in this block */
} use_marks;

static void mark_used(void *ctx, uint32_t buf, int stream) {
    (void)stream;
    use_marks *u = ctx;
    u->used[buf] = true;
}

/* Adds `free: b` and a fresh `alloc` of b before every step that overwrites all of b after b
 * was used since its alloc in this block (the free moves up in the placement below). */
static void split_at_overwrites(opt_ctx *c, opt_block *b) {
    uint32_t n_bufs = c->s->syms[SYM_BUFFER].n;
    const opt_node **alloc_of = ml_xcalloc(n_bufs + 1, sizeof *alloc_of);
    use_marks um = {.used = ml_xcalloc(n_bufs + 1, sizeof(bool))};
    opt_block out = {0};
    for (size_t k = 0; k < b->n; k++) {
        opt_node *nd = &b->v[k];
        uint32_t x = overwritten(nd);
        if (x < n_bufs && alloc_of[x] && um.used[x]) {
            const opt_node *a = alloc_of[x];
            char w[160];
            where(nd, w, sizeof w);
            opt_node f = {.st = {.kind = ST_FREE, .mark = nd->st.mark}};
            f.st.u.free.bufs = ml_arena_alloc(c->arena, sizeof(uint32_t));
            f.st.u.free.marks = ml_arena_alloc(c->arena, sizeof(ml_mark));
            f.st.u.free.bufs[0] = x;
            f.st.u.free.marks[0] = nd->st.mark;
            f.st.u.free.n = 1;
            opt_node r = {.st = a->st};
            r.st.u.alloc.init = (sched_init){.kind = INIT_NONE};
            opt_note(c, &r, "'%s' allocated again for %s, which overwrites all of it: its earlier "
                     "data is dead, so it is freed after its last use before", opt_buf_name(c, x), w);
            opt_block_push(c, &out, &f);
            opt_block_push(c, &out, &r);
            um.used[x] = false;   /* counted as changes when kept (drop_idle_splits) */
        }
        opt_block_push(c, &out, nd);
        /* nd stays valid (b->v is replaced only at the end) */
        if (nd->st.kind == ST_ALLOC && nd->st.u.alloc.buf < n_bufs) {
            bool plain = !nd->st.when && !nd->st.u.alloc.chunks;
            alloc_of[nd->st.u.alloc.buf] = plain ? nd : NULL;
            um.used[nd->st.u.alloc.buf] = false;
        } else if (nd->st.kind == ST_FREE || nd->st.kind == ST_RELEASE) {
            uint32_t y = nd->st.kind == ST_FREE ? nd->st.u.free.bufs[0] : nd->st.u.release.buf;
            if (y < n_bufs)
                alloc_of[y] = NULL;
        } else {
            opt_each_ref(nd, mark_used, &um);
        }
    }
    *b = out;
    free(alloc_of);
    free(um.used);
}

typedef struct {
    slot_list *before, *after, *syncs;
    slot_list *early;      /* before `before`: a stream-ordered free and its wait, ahead of the
                              allocation that may reuse the memory */
    uint64_t *synced;      /* streams with a sync (or record) added after node k */
    uint64_t *waited;      /* streams default waits for in early[k] */
    bool *moved, *alloc_gap;
} placement;

/* Allocs: just before the first step after them that names their buffer (backward scan). */
static void place_allocs(opt_ctx *c, opt_block *b, placement *pl, size_t *ref) {
    size_t n = b->n;
    uint32_t n_bufs = c->s->syms[SYM_BUFFER].n;
    size_t *first_ref = ml_xmalloc((n + 1) * sizeof *first_ref);
    for (uint32_t x = 0; x < n_bufs; x++)
        ref[x] = NONE;
    ref_index ri = {.at = ref};
    for (size_t k = n; k-- > 0;) {
        opt_node *nd = &b->v[k];
        if (nd->st.kind == ST_ALLOC)
            first_ref[k] = ref[nd->st.u.alloc.buf];
        ri.k = k;
        opt_each_ref(nd, mark_ref, &ri);
    }
    for (size_t k = 0; k < n; k++) {
        opt_node *nd = &b->v[k];
        if (nd->st.kind != ST_ALLOC)
            continue;
        size_t f = first_ref[k] == NONE ? n : first_ref[k];
        /* A pattern init is written by the host after waiting for the device (docs/runtime.md):
         * moved in among steps of several streams it would stop their overlap, so with streams
         * it stays (a copy-init stays anyway: its source could change). */
        bool host_init = nd->st.u.alloc.init.kind != INIT_NONE && c->s->syms[SYM_STREAM].n > 1;
        bool stays = nd->st.u.alloc.init.kind == INIT_COPY || host_init || f == k + 1 ||
                     (f < n && b->v[f].st.kind == ST_FREE);   /* never used: its free follows */
        if (stays) {
            pl->alloc_gap[k] = true;
            continue;
        }
        pl->moved[k] = true;
        pl->alloc_gap[f] = true;
        opt_node m = *nd;
        if (f < n) {
            char w[160];
            where(&b->v[f], w, sizeof w);
            opt_note(c, &m, "alloc of '%s' moved down from line %u to just before its first use, %s",
                     opt_buf_name(c, nd->st.u.alloc.buf), nd->orig_line, w);
        } else {
            opt_note(c, &m, "alloc of '%s' moved down from line %u: nothing uses it before the end",
                     opt_buf_name(c, nd->st.u.alloc.buf), nd->orig_line);
        }
        list_add(c, &pl->before[f], &m);
        c->changes++;
    }
    for (size_t k = 0; k < n; k++)
        if (!pl->moved[k] && b->v[k].st.kind != ST_ALLOC && opt_is_alloc_like(&b->v[k]))
            pl->alloc_gap[k] = true;
    free(first_ref);
}

static void place_free(opt_ctx *c, opt_block *b, placement *pl, size_t k, size_t from,
                       size_t last) {
    opt_node *nd = &b->v[k];
    uint32_t x = nd->st.u.free.bufs[0];
    uint64_t need;
    /* A free split_at_overwrites added is followed by its buffer's new alloc: it may not stay
     * where it is unless a sync before it completes the uses (else a sync is added). */
    if (!nd->orig_line)
        pl->alloc_gap[k] = true;
    unsigned mode = c->allow_host_syncs ? 0
                    : OPT_DEFAULT_ORDERED | (c->early_waits ? 0 : OPT_PREFER_EXISTING);
    size_t p = opt_completion_point(b, from, last, k, x, pl->alloc_gap, mode, &need);
    if (p + 1 >= k && !need) {
        if (!nd->orig_line)
            opt_note(c, nd, "free of '%s' added: the sync above completes its last use", opt_buf_name(c, x));
        return;
    }
    pl->moved[k] = true;
    opt_node m = *nd;
    char w[160];
    where(&b->v[last], w, sizeof w);
    /* What completes the last use before the free (need: streams it ran on, past node p):
     *  - the default stream: nothing. The free is host-side after it in program order; under
     *    cudaFreeAsync on the default stream it is stream-ordered after that work, under plain
     *    cudaFree the driver synchronizes (the lint's free hazard agrees);
     *  - another stream S, unless --allow-host-syncs: a record on S right after the last use,
     *    and a wait of default on it right before the allocation the freed memory is for, with
     *    the free: the streams keep running in between (a host sync would stop them all);
     *  - with --allow-host-syncs: `sync: {stream: S}` after the last use, as before. */
    uint64_t waits = 0;
    for (uint32_t u = 0; u < 64 && (need >> u); u++) {
        if (!(need >> u & 1) || (!c->allow_host_syncs && u == SCHED_DEFAULT_STREAM))
            continue;
        waits |= c->allow_host_syncs ? 0 : 1ull << u;
        /* the record goes right after the last use on u, so that waiting for it does not wait
         * for u's later work (the next prefetch); a host sync goes after the last use overall */
        size_t at = c->allow_host_syncs ? p : last_use_on(b, from, last, x, u);
        if (pl->synced[at] >> u & 1)
            continue;
        char wu[160], why[300];
        where(&b->v[last_use_on(b, from, last, x, u)], wu, sizeof wu);
        snprintf(why, sizeof why,
                 "'%s' is freed below and its last use on stream '%s', %s, must complete first",
                 opt_buf_name(c, x), opt_stream_name(c, u), wu);
        opt_node s = c->allow_host_syncs
                         ? opt_sync_node(c, u, why)
                         : opt_event_node(c, ST_RECORD, opt_stream_event(c, u), u, why);
        list_add(c, &pl->syncs[at], &s);
        pl->synced[at] |= 1ull << u;
    }
    const char *how = !need ? "" : waits ? ", ordered after it by the wait added above"
                      : c->allow_host_syncs ? ", completed by the sync added above"
                                            : ", after it on the default stream";
    if (nd->orig_line)
        opt_note(c, &m, "free of '%s' (line %u) moved to right after its last use, %s%s",
                 opt_buf_name(c, x), nd->orig_line, w, how);
    else
        opt_note(c, &m, "free of '%s' added right after its last use before it is overwritten, %s%s",
                 opt_buf_name(c, x), w, how);
    if (!waits) {
        list_add(c, &pl->after[p], &m);
    } else {
        size_t q = p + 1;   /* the first allocation placed after the last use */
        while (q < b->n && !pl->alloc_gap[q])
            q++;
        for (uint32_t u = 0; u < 64 && (waits >> u); u++) {
            if (!(waits >> u & 1) || (pl->waited[q] >> u & 1))
                continue;
            char why[300];
            snprintf(why, sizeof why,
                     "default waits for stream '%s' before '%s' is freed and its memory reused",
                     opt_stream_name(c, u), opt_buf_name(c, x));
            opt_node wn = opt_event_node(c, ST_WAIT, opt_stream_event(c, u),
                                         SCHED_DEFAULT_STREAM, why);
            list_add(c, &pl->early[q], &wn);
            pl->waited[q] |= 1ull << u;
        }
        if (nd->orig_line)
            opt_note(c, &m, "placed just before the allocation that can reuse its memory");
        list_add(c, &pl->early[q], &m);
    }
    c->changes += nd->orig_line != 0;   /* an added free counts once, when kept */
}

/* A split whose free and new alloc ended up with no allocation between them saves nothing (the
 * memory is not used for anything else meanwhile) and costs a host wait: both go, with the syncs
 * added right before the free when they guard nothing else. A kept split counts two changes. */
static void drop_idle_splits(opt_ctx *c, opt_block *b) {
    bool *drop = ml_xcalloc(b->n + 1, sizeof *drop);
    for (size_t k = 0; k < b->n; k++) {
        const opt_node *a = &b->v[k];
        if (a->st.kind != ST_ALLOC || a->orig_line)
            continue;
        size_t j = k;
        while (j-- > 0) {
            const opt_node *f = &b->v[j];
            if ((f->st.kind == ST_FREE && !f->orig_line && f->st.u.free.bufs[0] == a->st.u.alloc.buf) ||
                opt_is_alloc_like(f))
                break;
        }
        if (j == SIZE_MAX || b->v[j].st.kind != ST_FREE) {
            c->changes += 2;
            continue;
        }
        drop[j] = drop[k] = true;
        bool alone = j + 1 < b->n && b->v[j + 1].st.kind != ST_FREE && b->v[j + 1].st.kind != ST_RELEASE;
        for (size_t g = j; alone && g-- > 0 && (b->v[g].st.kind == ST_SYNC || b->v[g].st.kind == ST_WAIT) &&
                           !b->v[g].orig_line;) {
            drop[g] = true;
            c->changes--;   /* opt_sync_node / opt_event_node counted it */
        }
    }
    opt_block out = {0};
    for (size_t k = 0; k < b->n; k++)
        if (!drop[k])
            opt_block_push(c, &out, &b->v[k]);
    *b = out;
    free(drop);
}

static void lifetimes_block(opt_ctx *c, opt_block *b) {
    for (size_t k = 0; k < b->n; k++)
        if (b->v[k].body.n)
            lifetimes_block(c, &b->v[k].body);
    opt_split_frees(c, b);
    split_at_overwrites(c, b);
    size_t n = b->n;
    uint32_t n_bufs = c->s->syms[SYM_BUFFER].n;
    placement pl = {
        .before = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(slot_list)),
        .after = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(slot_list)),
        .syncs = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(slot_list)),
        .early = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(slot_list)),
        .synced = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(uint64_t)),
        .waited = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(uint64_t)),
        .moved = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(bool)),
        .alloc_gap = ml_arena_alloc(opt_scratch(c), (n + 1) * sizeof(bool)),
    };
    size_t *ref = ml_xmalloc((n_bufs + 1) * sizeof *ref);
    size_t *alloc_at = ml_xmalloc((n_bufs + 1) * sizeof *alloc_at);
    place_allocs(c, b, &pl, ref);

    /* Frees: a forward scan keeps the alloc and the last reference of every buffer. */
    for (uint32_t x = 0; x < n_bufs; x++)
        ref[x] = alloc_at[x] = NONE;
    ref_index ri = {.at = ref};
    for (size_t k = 0; k < n; k++) {
        opt_node *nd = &b->v[k];
        if (nd->st.kind == ST_FREE) {
            uint32_t x = nd->st.u.free.bufs[0];
            if (x < n_bufs && ref[x] != NONE && alloc_at[x] != NONE)
                place_free(c, b, &pl, k, alloc_at[x], ref[x]);
            if (x < n_bufs)
                ref[x] = alloc_at[x] = NONE;
            continue;
        }
        if (nd->st.kind == ST_ALLOC && nd->st.u.alloc.buf < n_bufs)
            alloc_at[nd->st.u.alloc.buf] = k;
        ri.k = k;
        opt_each_ref(nd, mark_ref, &ri);
    }

    opt_block out = {0};
    for (size_t k = 0; k <= n; k++) {
        for (slot *s = pl.early[k].head; s; s = s->next)
            opt_block_push(c, &out, &s->n);
        for (slot *s = pl.before[k].head; s; s = s->next)
            opt_block_push(c, &out, &s->n);
        if (k == n)
            break;
        if (!pl.moved[k])
            opt_block_push(c, &out, &b->v[k]);
        for (slot *s = pl.syncs[k].head; s; s = s->next)
            opt_block_push(c, &out, &s->n);
        for (slot *s = pl.after[k].head; s; s = s->next)
            opt_block_push(c, &out, &s->n);
    }
    *b = out;
    free(ref);
    free(alloc_at);
    drop_idle_splits(c, b);
}

void opt_lifetimes(opt_ctx *c, opt_block *b) { lifetimes_block(c, b); }
