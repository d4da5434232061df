/* SPDX-License-Identifier: MIT */
/* optimize_tree.c — the optimizer's tree of steps (optimize_int.h): building it from a loaded
 * schedule, copying it, turning it back into sched_step arrays for the writer, and the questions
 * every transformation asks of a step (which buffers it names, on which streams it uses them). */
#include "optimize/optimize_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void opt_block_push(opt_ctx *c, opt_block *b, const opt_node *n) {
    if (b->n == b->cap) { /* in place where the arena can: a plan's block is its whole length */
        size_t cap = b->cap ? 2 * b->cap : 8;
        b->v = ml_arena_grow(opt_scratch(c), b->v, b->n * sizeof *b->v, cap * sizeof *b->v);
        b->cap = cap;
    }
    b->v[b->n++] = *n;
}

void opt_tree_build(opt_ctx *c, opt_block *out, const sched_step *steps, uint32_t n,
                    const char *const *notes, const uint32_t *lines, size_t *pre) {
    memset(out, 0, sizeof *out);
    for (uint32_t k = 0; k < n; k++) {
        opt_node node = {.st = steps[k]};
        node.note = notes ? notes[*pre] : NULL;
        node.orig_line = lines ? lines[*pre] : steps[k].mark.line;
        (*pre)++;
        if (steps[k].kind == ST_REPEAT)
            opt_tree_build(c, &node.body, steps[k].u.repeat.steps, steps[k].u.repeat.n, notes,
                           lines, pre);
        else if (steps[k].kind == ST_REGION)
            opt_tree_build(c, &node.body, steps[k].u.region.steps, steps[k].u.region.n, notes,
                           lines, pre);
        opt_block_push(c, out, &node);
    }
}

sched_step *opt_tree_steps(opt_ctx *c, const opt_block *b, uint32_t *n, ml_vec *notes,
                           ml_vec *lines) {
    sched_step *steps = ml_arena_alloc(c->arena, (b->n ? b->n : 1) * sizeof *steps);
    for (size_t k = 0; k < b->n; k++) {
        const opt_node *node = &b->v[k];
        steps[k] = node->st;
        *(const char **)ml_vec_push(notes) = node->note;
        *(uint32_t *)ml_vec_push(lines) = node->orig_line;
        uint32_t m;
        if (node->st.kind == ST_REPEAT) {
            steps[k].u.repeat.steps = opt_tree_steps(c, &node->body, &m, notes, lines);
            steps[k].u.repeat.n = m;
        } else if (node->st.kind == ST_REGION) {
            steps[k].u.region.steps = opt_tree_steps(c, &node->body, &m, notes, lines);
            steps[k].u.region.n = m;
        }
    }
    *n = (uint32_t)b->n;
    return steps;
}

void opt_note(opt_ctx *c, opt_node *n, const char *fmt, ...) {
    char text[440];
    /* the rewrite's name first: a note in the file says which stage did it */
    int at = c->stage ? snprintf(text, sizeof text, "%s: ", c->stage) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text + at, sizeof text - (size_t)at, fmt, ap);
    va_end(ap);
    size_t old = n->note ? strlen(n->note) : 0, add = strlen(text);
    char *s = ml_arena_alloc(c->arena, old + add + 3);
    if (old) {
        memcpy(s, n->note, old);
        memcpy(s + old, "; ", 2);
        old += 2;
    }
    memcpy(s + old, text, add + 1);
    n->note = s;
}

/* ---- views and references ------------------------------------------------------------------- */

static void operand_view(sched_operand *o, opt_view_fn fn, void *ctx) {
    if (o->kind == OPD_VIEW)
        fn(ctx, &o->view);
}

void opt_each_view(sched_step *st, opt_view_fn fn, void *ctx) {
    switch (st->kind) {
    case ST_ALLOC:
        if (st->u.alloc.init.kind == INIT_COPY)
            fn(ctx, st->u.alloc.init.src);
        break;
    case ST_COLL:
        fn(ctx, &st->u.coll.send);
        fn(ctx, &st->u.coll.recv);
        break;
    case ST_INIT:
        fn(ctx, &st->u.init.dst);
        if (st->u.init.init.kind == INIT_COPY)
            fn(ctx, st->u.init.init.src);
        break;
    case ST_COPY:
        fn(ctx, &st->u.copy.src);
        fn(ctx, &st->u.copy.dst);
        break;
    case ST_SCALE:
        fn(ctx, &st->u.scale.buf);
        break;
    case ST_COMPUTE:
        for (uint32_t k = 0; k < st->u.compute.n_reads; k++)
            fn(ctx, &st->u.compute.reads[k]);
        for (uint32_t k = 0; k < st->u.compute.n_writes; k++)
            fn(ctx, &st->u.compute.writes[k]);
        break;
    case ST_CHECK:
        operand_view(&st->u.check->a, fn, ctx);
        operand_view(&st->u.check->b, fn, ctx);
        break;
    default:
        break;
    }
}

void opt_unshare(opt_ctx *c, opt_node *n) {
    sched_step *st = &n->st;
    if (st->kind == ST_CHECK) {
        sched_check *k = ml_arena_alloc(c->arena, sizeof *k);
        *k = *st->u.check;
        st->u.check = k;
    } else if (st->kind == ST_COMPUTE) {
        uint32_t nr = st->u.compute.n_reads, nw = st->u.compute.n_writes;
        sched_view *r = ml_arena_alloc(c->arena, (nr + 1) * sizeof *r);
        sched_view *w = ml_arena_alloc(c->arena, (nw + 1) * sizeof *w);
        if (nr)
            memcpy(r, st->u.compute.reads, nr * sizeof *r);
        if (nw)
            memcpy(w, st->u.compute.writes, nw * sizeof *w);
        st->u.compute.reads = r;
        st->u.compute.writes = w;
    } else if ((st->kind == ST_ALLOC || st->kind == ST_INIT) &&
               (st->kind == ST_ALLOC ? st->u.alloc.init.kind : st->u.init.init.kind) == INIT_COPY) {
        /* a copy's source view is by pointer (sched_init.src): a rewrite must not reach the
         * steps this one was copied from */
        sched_view **src = st->kind == ST_ALLOC ? &st->u.alloc.init.src : &st->u.init.init.src;
        sched_view *v = ml_arena_alloc(c->arena, sizeof *v);
        *v = **src;
        *src = v;
    }
}

/* The stream an asynchronous step runs on, or -1 for host-side and memory steps. */
static int step_stream(const sched_step *st) {
    switch (st->kind) {
    case ST_COLL: return (int)st->u.coll.stream;
    case ST_COPY: return (int)st->u.copy.stream;
    case ST_SCALE: return (int)st->u.scale.stream;
    case ST_COMPUTE: return (int)st->u.compute.stream;
    default: return -1;
    }
}

/* Every buffer a step names, with the stream of its asynchronous use (-1: none). */
typedef struct {
    opt_ref_fn fn;
    void *ctx;
    int stream;
} ref_walk;

static void walk_view(void *ctx, sched_view *v) {
    ref_walk *w = ctx;
    w->fn(w->ctx, v->buf, w->stream);
}

static void walk_step(const sched_step *st, ref_walk *w) {
    switch (st->kind) {
    case ST_ALLOC: w->fn(w->ctx, st->u.alloc.buf, -1); break;
    case ST_RELEASE: w->fn(w->ctx, st->u.release.buf, -1); break;
    case ST_FREE:
        for (uint32_t k = 0; k < st->u.free.n; k++)
            w->fn(w->ctx, st->u.free.bufs[k], -1);
        break;
    case ST_EXPECT_ERROR: walk_step(st->u.expect_error.step, w); return;
    default: break;
    }
    w->stream = step_stream(st);
    opt_each_view((sched_step *)st, walk_view, w);   /* walk_view only reads the view */
}

static void walk_node(const opt_node *n, ref_walk *w) {
    walk_step(&n->st, w);
    for (size_t k = 0; k < n->body.n; k++)
        walk_node(&n->body.v[k], w);
}

void opt_each_ref(const opt_node *n, opt_ref_fn fn, void *ctx) {
    ref_walk w = {fn, ctx, -1};
    walk_node(n, &w);
}

typedef struct {
    uint32_t buf;
    bool found;
    uint64_t streams;
} ref_probe;

static void probe(void *ctx, uint32_t buf, int stream) {
    ref_probe *p = ctx;
    if (buf != p->buf)
        return;
    p->found = true;
    if (stream >= 0)
        p->streams |= 1ull << (stream < 63 ? stream : 63);
}

bool opt_refs(const opt_node *n, uint32_t b) {
    ref_probe p = {.buf = b};
    opt_each_ref(n, probe, &p);
    return p.found;
}

uint64_t opt_async_streams(const opt_node *n, uint32_t b) {
    ref_probe p = {.buf = b};
    opt_each_ref(n, probe, &p);
    return p.streams;
}

bool opt_is_alloc_like(const opt_node *n) {
    if (n->st.kind == ST_ALLOC)
        return true;
    for (size_t k = 0; k < n->body.n; k++)
        if (opt_is_alloc_like(&n->body.v[k]))
            return true;
    return false;
}

/* ---- expressions ------------------------------------------------------------------------------ */

static int resolve(void *ctx, const char *name, size_t len) {
    const sched *s = ctx;
    if (len == 5 && !memcmp(name, "world", 5))
        return EXPR_SLOT_WORLD;
    if (len == 4 && !memcmp(name, "rank", 4))
        return EXPR_SLOT_RANK;
    for (uint32_t k = 0; k < s->n_lets; k++)
        if (strlen(s->lets[k].name) == len && !memcmp(s->lets[k].name, name, len))
            return EXPR_SLOT_FIRST_LET + (int)k;
    return -1;
}

expr *opt_expr(opt_ctx *c, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    expr_error err;
    expr *e = expr_parse(c->arena, text, strlen(text), resolve, (void *)c->s, &err);
    if (!e)
        ml_internal_error("optimize: the expression '%s' it wrote does not parse: %s", text,
                          err.msg);
    return e;
}

const char *opt_paren(opt_ctx *c, const char *text) {
    while (*text == ' ')
        text++;
    size_t n = strlen(text);
    while (n && text[n - 1] == ' ')
        n--;
    bool simple = n > 0;
    for (size_t k = 0; k < n; k++)
        simple &= (text[k] >= 'a' && text[k] <= 'z') || (text[k] >= 'A' && text[k] <= 'Z') ||
                  (text[k] >= '0' && text[k] <= '9') || text[k] == '_';
    char *s = ml_arena_alloc(c->arena, n + 3);
    if (simple)
        memcpy(s, text, n);
    else
        snprintf(s, n + 3, "(%.*s)", (int)n, text);
    return s;
}

int opt_eval(const opt_ctx *c, const expr *e, int rank, int64_t *out) {
    expr_error err;
    return expr_eval(e, c->slots[rank], out, &err);
}

int64_t opt_alloc_count(const opt_ctx *c, const sched_step *alloc, int rank) {
    int64_t v;
    const expr *e = alloc->u.alloc.count ? alloc->u.alloc.count : alloc->u.alloc.bytes;
    if (opt_eval(c, e, rank, &v) != 0 || v < 0)
        return -1;
    return alloc->u.alloc.count ? v : v / ml_dtypes[alloc->u.alloc.dtype].size;
}

const char *opt_alloc_count_text(opt_ctx *c, const sched_step *alloc) {
    if (alloc->u.alloc.count)
        return expr_text(alloc->u.alloc.count);
    const char *b = opt_paren(c, expr_text(alloc->u.alloc.bytes));
    size_t n = strlen(b) + 16;
    char *s = ml_arena_alloc(c->arena, n);
    snprintf(s, n, "%s / %u", b, ml_dtypes[alloc->u.alloc.dtype].size);
    return s;
}

int opt_view_range(const opt_ctx *c, const sched_view *v, const sched_step *alloc, int rank,
                   int64_t *off, int64_t *count) {
    if (!v->offset) {
        *off = 0;
        *count = alloc ? opt_alloc_count(c, alloc, rank) : -1;
        return *count < 0 ? -1 : 0;
    }
    if (opt_eval(c, v->offset, rank, off) != 0 || opt_eval(c, v->count, rank, count) != 0)
        return -1;
    return 0;
}

const char *opt_buf_name(const opt_ctx *c, uint32_t b) { return sched_sym_name(c->s, SYM_BUFFER, b); }
const char *opt_stream_name(const opt_ctx *c, uint32_t s) { return sched_sym_name(c->s, SYM_STREAM, s); }

uint32_t opt_stream_event(opt_ctx *c, uint32_t stream) {
    const sched_symtab *t = &c->s->syms[SYM_EVENT];
    const char *sn = opt_stream_name(c, stream);
    char name[200];
    for (unsigned k = 0;; k++) {
        if (k)
            snprintf(name, sizeof name, "%s_done%u", sn, k);
        else
            snprintf(name, sizeof name, "%s_done", sn);
        bool taken = false;
        for (uint32_t e = 0; e < t->n && !taken; e++)
            taken = !strcmp(t->names[e], name);
        for (uint32_t j = 0; j < c->n_new_events && !taken; j++)
            if (!strcmp(c->new_events[j], name))
                return t->n + j;   /* this stage declared it already */
        if (!taken)
            break;
    }
    if (c->n_new_events == ML_ARRAY_LEN(c->new_events))   /* streams past 63 share bit 63 */
        ml_internal_error("optimize: more than %zu streams need an event",
                          ML_ARRAY_LEN(c->new_events));
    c->new_events[c->n_new_events] = ml_arena_strndup(c->arena, name, strlen(name));
    return t->n + c->n_new_events++;
}

opt_node opt_event_node(opt_ctx *c, sched_step_kind kind, uint32_t event, uint32_t stream,
                        const char *why) {
    opt_node n = {0};
    n.st.kind = kind;
    n.st.u.event.event = event;
    n.st.u.event.stream = stream;
    opt_note(c, &n, "added: %s", why);
    c->changes++;
    return n;
}

opt_node opt_sync_node(opt_ctx *c, uint32_t stream, const char *why) {
    opt_node n = {0};
    n.st.kind = ST_SYNC;
    n.st.u.sync.kind = SYNC_STREAM;
    n.st.u.sync.stream = stream;
    n.st.u.sync.event = SCHED_NO_SYM;
    opt_note(c, &n, "added: %s", why);
    c->changes++;
    return n;
}
