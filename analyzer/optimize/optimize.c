/* SPDX-License-Identifier: MIT */
/* optimize.c — the optimizer's driver (optimize.h): stages, verification, the rewritten text.
 *
 * State between stages is a schedule in memory: the last kept stage's steps (its tree made into
 * sched_step arrays) in place of its plan's, everything else shared with the schedule before,
 * plus per plan the note and original line of every step in pre-order. A stage builds the tree
 * of one plan, lets a transformation rewrite it, makes it a schedule, then expands, lints and
 * predicts every rank, and keeps it when lint finds nothing new, the expect_error contract rows
 * are the same, and memory is lower (optimize.h). Each stage used to write its text and load it
 * back (two thirds of optimize's CPU time at 100k steps); the steps a stage builds are
 * the loader's kind (the expressions parsed by opt_expr, the names the schedule's), and the
 * rewritten file is checked by loading it (tests/cli/optimize_patch.sh: it loads, and predicts
 * what optimize predicted, on every rank). */
#include "optimize/optimize_int.h"
#include "optimize/emit_yaml.h"
#include "optimize/patch_text.h"
#include "pipeline/pipeline.h"
#include "base/input.h"

#include <stdlib.h>
#include <string.h>

const char *const opt_kind_names[OPT_KIND_COUNT] = {"lifetimes", "inplace", "chunked", "reorder"};

int opt_kind_lookup(const char *name, size_t len) {
    for (int k = 0; k < OPT_KIND_COUNT; k++)
        if (strlen(opt_kind_names[k]) == len && !memcmp(opt_kind_names[k], name, len))
            return k;
    return -1;
}

void opt_options_default(opt_options *o) {
    memset(o, 0, sizeof *o);
    for (int k = 0; k < OPT_KIND_COUNT; k++)
        o->allow[k] = true;
}

/* ---- evaluation of one plan ------------------------------------------------------------------ */

typedef struct {
    opt_mem *mem;           /* [world] */
    uint64_t *floor;        /* [world] */
    ml_diags diags;         /* lint's findings */
    bool *rows_pass;        /* expect_error contract rows, in order */
    size_t n_rows;
    double step_us;         /* the time model's step time, the slowest rank (timemodel.h) */
} evaluation;

static void eval_free(evaluation *e) {
    free(e->mem);
    free(e->floor);
    free(e->rows_pass);
    ml_diags_free(&e->diags);
    memset(e, 0, sizeof *e);
}

/* Expands, lints and predicts plan k of s on every rank (the pipeline): lint findings go to
 * e->diags and do not stop the prediction, since candidates are compared by them. Expansion and
 * prediction errors go to d (-1). */
static int evaluate(const sched *s, int k, const sched_params *p, int world, evaluation *e,
                    ml_diags *d) {
    memset(e, 0, sizeof *e);
    ml_diags_init(&e->diags);
    e->mem = ml_xcalloc((size_t)world, sizeof *e->mem);
    e->floor = ml_xcalloc((size_t)world, sizeof *e->floor);
    pipeline_opts o;
    pipeline_opts_default(&o);
    o.expect = false;
    o.lint_diags = &e->diags;
    pipeline_item it = {0};
    int rc = pipeline_plan(s, k, p, world, &o, &it, d);
    if (rc == 0) {
        e->n_rows = it.lint.n_rows;
        e->rows_pass = ml_xcalloc(it.lint.n_rows + 1, sizeof *e->rows_pass);
        for (size_t j = 0; j < it.lint.n_rows; j++)
            e->rows_pass[j] = it.lint.rows[j].pass;
        for (int r = 0; r < world; r++) {
            memcpy(e->mem[r].steady, it.pred[r].steady, sizeof it.pred[r].steady);
            memcpy(e->mem[r].peak, it.pred[r].peak, sizeof it.pred[r].peak);
            memcpy(e->mem[r].on, it.pred[r].on, sizeof it.pred[r].on);
            e->floor[r] = it.pred[r].floor;
            if (it.pred[r].step_us > e->step_us)   /* the time model's, the slowest rank */
                e->step_us = it.pred[r].step_us;
        }
    }
    pipeline_item_free(&it);
    return rc;
}

/* The first lint finding of cand that base does not have as often (by level and code). */
static const ml_diag *new_finding(const evaluation *base, const evaluation *cand) {
    for (size_t k = 0; k < cand->diags.items.n; k++) {
        const ml_diag *g = &ML_VEC_AT(&cand->diags.items, ml_diag, k);
        size_t in_cand = 0, in_base = 0;
        for (size_t j = 0; j < cand->diags.items.n; j++) {
            const ml_diag *h = &ML_VEC_AT(&cand->diags.items, ml_diag, j);
            in_cand += h->level == g->level && !strcmp(h->code ? h->code : "", g->code ? g->code : "");
        }
        for (size_t j = 0; j < base->diags.items.n; j++) {
            const ml_diag *h = &ML_VEC_AT(&base->diags.items, ml_diag, j);
            in_base += h->level == g->level && !strcmp(h->code ? h->code : "", g->code ? g->code : "");
        }
        if (in_cand > in_base)
            return g;
    }
    return NULL;
}

/* Lower memory: no rank's peak rises in any series of the views predicted (views.h), and some
 * rank is lower by its peaks in series order (requested, device, torch allocated, torch
 * reserved), then by requested steady. */
static bool lower(const evaluation *base, const evaluation *cand, int world) {
    bool better = false;
    for (int r = 0; r < world; r++) {
        const opt_mem *a = &base->mem[r], *b = &cand->mem[r];
        int differs = -1;
        for (int v = 0; v < VIEW_COUNT; v++) {
            if (!a->on[ml_series[v].view])
                continue;
            if (b->peak[v] > a->peak[v])
                return false;
            if (differs < 0 && b->peak[v] != a->peak[v])
                differs = v;
        }
        if (differs >= 0)
            better |= b->peak[differs] < a->peak[differs];
        else
            better |= b->steady[VIEW_REQUESTED] < a->steady[VIEW_REQUESTED];
    }
    return better;
}

/* ---- writing a state out --------------------------------------------------------------------- */

typedef struct {
    const sched_step *step;
    const char *note;
} note_pair;

typedef struct {
    const sched *s;            /* the current schedule */
    const char ***notes;       /* [plan][pre-order] */
    uint32_t **lines;          /* [plan][pre-order] */
    size_t *n_pre;             /* [plan] */
    /* For the final write only: the original file's comment above (and at the end of) each
     * line, by line number, so that the user's comments stay with their steps. */
    const char **comments;
    size_t n_comments;
    uint32_t header_line;      /* the first line that is not a comment: its block heads the file */
} state;

/* The user's comments of the file at path, by the line of the step they belong to: the block
 * of comment lines right above it (no blank line between) and a comment at the end of it.
 * Texts are without '#', in the arena; lines without a comment are NULL. */
static void read_comments(ml_arena *a, const char *path, state *st) {
    if (ml_input_once(path))
        return;   /* read already; a FIFO's open would wait for a writer */
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    ml_vec lines;
    ml_vec_init(&lines, sizeof(const char *));
    *(const char **)ml_vec_push(&lines) = NULL;   /* line 0 */
    ml_str block = {0};
    char buf[4096];
    while (fgets(buf, sizeof buf, f)) {
        size_t n = strcspn(buf, "\n");
        buf[n] = '\0';
        const char *t = buf + strspn(buf, " \t");
        const char **slot = ml_vec_push(&lines);
        if (*t == '#') {   /* a comment line: part of the block above the next step */
            const char *c = t + 1 + (t[1] == ' ');
            ml_str_printf(&block, "%s%s", block.n ? "\n" : "", c);
            continue;
        }
        /* an end-of-line comment: ' #' outside quotes */
        const char *end = NULL;
        char q = 0;
        for (const char *p = t; *p && !end; p++) {
            if (q)
                q = *p == q ? 0 : q;
            else if (*p == '\'' || *p == '"')
                q = *p;
            else if (*p == '#' && p > t && (p[-1] == ' ' || p[-1] == '\t'))
                end = p + 1 + (p[1] == ' ');
        }
        if (end)
            ml_str_printf(&block, "%s%s", block.n ? "\n" : "", end);
        if (*t && block.n)
            *slot = ml_arena_strndup(a, block.s, block.n);
        if (*t && !st->header_line)
            st->header_line = (uint32_t)(lines.n - 1);   /* the file's first key */
        block.n = 0;   /* a blank line ends a block that no step follows */
    }
    fclose(f);
    ml_str_free(&block);
    st->n_comments = lines.n;
    st->comments = ml_arena_alloc(a, (lines.n + 1) * sizeof *st->comments);
    memcpy(st->comments, lines.items, lines.n * sizeof *st->comments);
    ml_vec_free(&lines);
}

static int cmp_pair(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const note_pair *)a)->step, y = (uintptr_t)((const note_pair *)b)->step;
    return x < y ? -1 : x > y;
}

typedef struct {
    note_pair *pairs;
    size_t n;
} note_index;

static const char *note_of(void *ctx, const sched_step *st) {
    const note_index *ix = ctx;
    if (!ix->n) /* no notes: the pairs are NULL, which bsearch must not be given */
        return NULL;
    note_pair key = {st, NULL};
    const note_pair *p = bsearch(&key, ix->pairs, ix->n, sizeof key, cmp_pair);
    return p ? p->note : NULL;
}

/* Writes the state st: the emitter's whole file, or with patch the original's text with the
 * steps spliced in (patch_text.h): its result (1: the emitter must write it), the plans'
 * top-level steps and lines filled in. Each step's note (and, from read_comments, the user's
 * comment above its original line) by its pre-order index in st. */
static int write_state(opt_ctx *c, const state *st, const emit_yaml_opts *base, patch_in *patch,
                       patch_stats *ps, ml_str *out, ml_diags *d) {
    const sched *s = st->s;
    ml_vec pairs;
    ml_vec_init(&pairs, sizeof(note_pair));
    for (uint32_t k = 0; k < s->n_plans; k++) {
        const sched_step *steps = s->plans[k].steps;
        uint32_t n = s->plans[k].n;
        uint32_t *top = patch ? ml_arena_alloc(c->arena, (n + 1) * sizeof *top) : NULL;
        const char *const *notes = st->notes[k];
        const uint32_t *lines = st->lines[k];   /* NULL: a plan no stage kept, its marks' */
        size_t at = 0;
        struct frame { const sched_step *v; uint32_t n, i; } fr[128];
        int depth = 0;
        fr[0] = (struct frame){steps, n, 0};
        while (depth >= 0) {
            struct frame *f = &fr[depth];
            if (f->i == f->n) {
                depth--;
                continue;
            }
            const sched_step *x = &f->v[f->i++];
            const char *note = notes ? notes[at] : NULL;
            uint32_t line = lines ? lines[at] : x->mark.line;
            at++;
            if (top && depth == 0)
                top[f->i - 1] = line;
            const char *user = st->comments && line < st->n_comments ? st->comments[line] : NULL;
            if (user) {   /* the user's comment first, then what the optimizer says */
                ml_str both = {0};
                ml_str_printf(&both, "%s%s%s", user, note ? "\n" : "", note ? note : "");
                note = ml_arena_strndup(c->arena, both.s, both.n);
                ml_str_free(&both);
            }
            if (note)
                *(note_pair *)ml_vec_push(&pairs) = (note_pair){x, note};
            if (depth + 1 < (int)ML_ARRAY_LEN(fr) && x->kind == ST_REPEAT)
                fr[++depth] = (struct frame){x->u.repeat.steps, x->u.repeat.n, 0};
            else if (depth + 1 < (int)ML_ARRAY_LEN(fr) && x->kind == ST_REGION)
                fr[++depth] = (struct frame){x->u.region.steps, x->u.region.n, 0};
        }
        if (patch)
            ((patch_plan *)patch->plans)[k] = (patch_plan){steps, n, top};
    }
    /* by step address for note_of's bsearch. The walk meets the steps in pre-order, which is
     * address order where the arrays were allocated in that order (a flat plan: one array),
     * so the sort (7% of optimize's instructions at 100k steps) runs only where it is not. */
    bool sorted = true;
    for (size_t j = 1; j < pairs.n && sorted; j++)
        sorted = cmp_pair(&ML_VEC_AT(&pairs, note_pair, j - 1), &ML_VEC_AT(&pairs, note_pair, j)) < 0;
    if (!sorted) /* an unchanged rewrite has no notes, and qsort's base must not be NULL */
        qsort(pairs.items, pairs.n, sizeof(note_pair), cmp_pair);
    note_index ix = {pairs.items, pairs.n};
    emit_yaml_opts o = *base;
    o.step_comment = note_of;
    o.ctx = &ix;
    int rc;
    if (patch) {
        patch->emit = &o;
        rc = patch_text(patch, out, ps, d);
    } else {
        rc = emit_yaml(s, &o, out, d);
    }
    ml_vec_free(&pairs);
    return rc;
}

/* ---- stages ----------------------------------------------------------------------------------- */

typedef void (*transform_fn)(opt_ctx *c, opt_block *b);
static const transform_fn transforms[OPT_KIND_COUNT] = {
    [OPT_LIFETIMES] = opt_lifetimes,
    [OPT_INPLACE] = opt_inplace,
    [OPT_CHUNKED] = opt_chunked,
    [OPT_REORDER] = opt_reorder,
};

typedef struct {
    const opt_options *o;
    int world;
    ml_arena *arena;
    ml_vec kept;               /* ml_arena *: each kept stage's (its steps are the state's) */
    const sched *original;     /* the caller's: it outlives the rewrites, and its marks are the file's */
    state st;
    int64_t **slots;
    size_t n_slots;
    ml_diags *d;
} driver;

static int load_slots(driver *dv) {
    const sched *s = dv->st.s;
    for (int r = 0; r < dv->world; r++) {
        dv->slots[r] = ml_arena_alloc(dv->arena, (sched_n_slots(s) + 1) * sizeof(int64_t));
        if (sched_eval_lets(s, &dv->o->params, dv->world, r, dv->slots[r], dv->d) != 0)
            return -1;
    }
    return 0;
}

static void stage_record(opt_stage *sg, opt_kind kind, const evaluation *e, int world) {
    sg->kind = kind;
    sg->after = ml_xcalloc((size_t)world, sizeof *sg->after);
    memcpy(sg->after, e->mem, (size_t)world * sizeof *sg->after);
}

/* A sync a stage added guards the free or release right after it; a later rewrite (in place)
 * can remove that free, and then the sync guards nothing: it goes too. */
static void prune_added_syncs(opt_ctx *c, opt_block *b) {
    opt_block out = {0};
    for (size_t k = 0; k < b->n; k++) {
        opt_node *n = &b->v[k];
        if (n->body.n)
            prune_added_syncs(c, &n->body);
        bool added = n->st.kind == ST_SYNC && !n->orig_line;
        size_t j = k + 1;
        while (added && j < b->n && b->v[j].st.kind == ST_SYNC && !b->v[j].orig_line)
            j++;
        if (added && (j == b->n || (b->v[j].st.kind != ST_FREE && b->v[j].st.kind != ST_RELEASE))) {
            c->changes++;
            continue;
        }
        opt_block_push(c, &out, n);
    }
    *b = out;
}

/* Steps as written (repeat and region bodies once), as the loader counts n_steps_total. */
static uint64_t count_written(const sched_step *st, uint32_t n) {
    uint64_t c = n;
    for (uint32_t k = 0; k < n; k++)
        if (st[k].kind == ST_REPEAT)
            c += count_written(st[k].u.repeat.steps, st[k].u.repeat.n);
        else if (st[k].kind == ST_REGION)
            c += count_written(st[k].u.region.steps, st[k].u.region.n);
    return c;
}

/* The schedule of a stage's rewrite: s with plan k's steps replaced and the events the stage
 * records declared after s's own (the symbols opt_stream_event gave them), in c's arena;
 * everything else is s's. */
static sched *stage_sched(opt_ctx *c, const sched *s, int k, sched_step *steps, uint32_t n) {
    sched *s2 = ml_arena_alloc(c->arena, sizeof *s2);
    *s2 = *s;
    s2->arena = NULL;   /* never freed as a loaded schedule: its memory is the stage's arena */
    s2->plans = ml_arena_alloc(c->arena, (s->n_plans + 1) * sizeof *s2->plans);
    memcpy(s2->plans, s->plans, s->n_plans * sizeof *s2->plans);
    s2->n_steps_total = s->n_steps_total - count_written(s->plans[k].steps, s->plans[k].n) +
                        count_written(steps, n);
    s2->plans[k].steps = steps;
    s2->plans[k].n = n;
    if (c->n_new_events) {
        const sched_symtab *o = &s->syms[SYM_EVENT];
        sched_symtab *t = &s2->syms[SYM_EVENT];
        uint32_t m = o->n + c->n_new_events;
        t->names = ml_arena_alloc(c->arena, (m + 1) * sizeof *t->names);
        t->first_mark = ml_arena_alloc(c->arena, (m + 1) * sizeof *t->first_mark);
        if (o->n) {
            memcpy(t->names, o->names, o->n * sizeof *t->names);
            memcpy(t->first_mark, o->first_mark, o->n * sizeof *t->first_mark);
        }
        for (uint32_t j = 0; j < c->n_new_events; j++)
            t->names[o->n + j] = c->new_events[j];   /* first_mark: none, as a stage adds it */
        t->n = t->cap = m;
    }
    return s2;
}

/* One stage on plan k. base is the evaluation of the current state, replaced when kept.
 * early: lifetimes' early frees with record/wait (run_stage tries them first).
 * The stage's tree, steps, notes and lines live in an arena of its own: kept with the stage (its
 * steps are the new state's), else released before the next stage. */
static int run_stage_as(driver *dv, int k, opt_kind kind, evaluation *base, opt_stage *sg,
                        bool early) {
    ml_arena *stage_arena = ml_arena_new();
    opt_ctx c = {.s = dv->st.s, .arena = stage_arena, .scratch = ml_arena_new(),
                 .world = dv->world, .slots = dv->slots,
                 .stage = opt_kind_names[kind],
                 .allow_lifetimes = dv->o->allow[OPT_LIFETIMES],
                 .allow_host_syncs = dv->o->allow_host_syncs, .early_waits = early};
    /* The transformation rewrites the tree just built: nothing else reads it (a copy kept
     * beside it shared the steps' data anyway, and cost a second tree). */
    opt_block cand;
    size_t pre = 0;
    const sched_plan *pl = &dv->st.s->plans[k];
    opt_tree_build(&c, &cand, pl->steps, pl->n, dv->st.notes[k], dv->st.lines[k], &pre);
    transforms[kind](&c, &cand);
    if (c.changes)
        prune_added_syncs(&c, &cand);
    stage_record(sg, kind, base, dv->world);
    sg->changes = c.changes;
    if (!c.changes) {
        snprintf(sg->why, sizeof sg->why, "nothing to do%s%s%s", c.skipped[0] ? " (" : "",
                 c.skipped, c.skipped[0] ? ")" : "");
        ml_arena_free(c.scratch);
        ml_arena_free(stage_arena);
        return 0;
    }
    ml_vec notes, lines;
    ml_vec_init(&notes, sizeof(const char *));
    ml_vec_init(&lines, sizeof(uint32_t));
    uint32_t n_steps = 0;
    sched_step *steps = opt_tree_steps(&c, &cand, &n_steps, &notes, &lines);
    ml_arena_free(c.scratch);   /* the tree goes before the evaluation takes its memory */
    c.scratch = NULL;
    sched *s2 = stage_sched(&c, dv->st.s, k, steps, n_steps);
    ml_diags d2;
    ml_diags_init(&d2);
    evaluation e2 = {0};
    bool evaluated = evaluate(s2, k, &dv->o->params, dv->world, &e2, &d2) == 0;
    const ml_diag *fresh = evaluated ? new_finding(base, &e2) : NULL;
    bool same_rows = evaluated && e2.n_rows == base->n_rows &&
                     !memcmp(e2.rows_pass, base->rows_pass, base->n_rows * sizeof(bool));
    bool kept = false;
    if (!evaluated) {
        const ml_diag *g = ml_diags_first_error(&d2);
        snprintf(sg->why, sizeof sg->why, "not kept: the rewrite does not expand (%s)",
                 g ? g->text : "?");
    } else if (fresh) {
        snprintf(sg->why, sizeof sg->why, "not kept: lint finds %s%s%s", fresh->text,
                 fresh->code ? " " : "", fresh->code ? fresh->code : "");
    } else if (!same_rows) {
        snprintf(sg->why, sizeof sg->why, "not kept: an expect_error contract row changes");
    } else if (e2.step_us > base->step_us * (1 + 1e-9) + 1e-6) {
        /* the rewrite may not cost time: it must not serialize what the input overlapped */
        snprintf(sg->why, sizeof sg->why,
                 "not kept: predicted step time %.1f -> %.1f us (%u step%s changed)",
                 base->step_us, e2.step_us, c.changes, c.changes == 1 ? "" : "s");
    } else if (!lower(base, &e2, dv->world)) {
        snprintf(sg->why, sizeof sg->why, "not kept: no saving (%u step%s changed)", c.changes,
                 c.changes == 1 ? "" : "s");
    } else {
        kept = sg->kept = true;
        snprintf(sg->why, sizeof sg->why, "%u step%s changed%s%s", c.changes,
                 c.changes == 1 ? "" : "s", c.renamed[0] ? "; " : "", c.renamed);
        memcpy(sg->after, e2.mem, (size_t)dv->world * sizeof *sg->after);
        /* the state: this stage's schedule, its steps, notes and lines in its arena */
        *(ml_arena **)ml_vec_push(&dv->kept) = stage_arena;
        dv->st.s = s2;
        size_t n = notes.n;
        dv->st.notes[k] = ml_arena_alloc(stage_arena, (n + 1) * sizeof(const char *));
        dv->st.lines[k] = ml_arena_alloc(stage_arena, (n + 1) * sizeof(uint32_t));
        if (n) {
            memcpy(dv->st.notes[k], notes.items, n * sizeof(const char *));
            memcpy(dv->st.lines[k], lines.items, n * sizeof(uint32_t));
        }
        dv->st.n_pre[k] = n;
        eval_free(base);
        *base = e2;
        memset(&e2, 0, sizeof e2);
    }
    /* lint's findings about a rewrite name the original file (s2 shares its name) */
    if (!kept)
        ml_arena_free(stage_arena);
    int rc = load_slots(dv);
    eval_free(&e2);
    ml_diags_free(&d2);
    ml_vec_free(&notes);
    ml_vec_free(&lines);
    return rc;
}

/* Sync steps as written (a repeat's body once). */
static int count_syncs(const sched_step *st, uint32_t n) {
    int c = 0;
    for (uint32_t k = 0; k < n; k++) {
        c += st[k].kind == ST_SYNC;
        if (st[k].kind == ST_REPEAT)
            c += count_syncs(st[k].u.repeat.steps, st[k].u.repeat.n);
        else if (st[k].kind == ST_REGION)
            c += count_syncs(st[k].u.region.steps, st[k].u.region.n);
    }
    return c;
}

/* Lifetimes without host syncs has two ways to complete another stream's use before a free:
 * early, with an added record/wait (the least memory, but the default stream may wait), or at a
 * point the program already orders it (no new wait, the memory lives longer). The early form is
 * kept when it costs no time; else the other is tried. */
static int run_stage(driver *dv, int k, opt_kind kind, evaluation *base, opt_stage *sg) {
    bool two = kind == OPT_LIFETIMES && !dv->o->allow_host_syncs;
    int rc = run_stage_as(dv, k, kind, base, sg, two);
    /* Not when the early form found nothing to do: a free it leaves in place is already right
     * after its completion point, which the later form cannot move it before either (and the
     * allocs move alike in both); the second try cost 7% of optimize's time at 100k steps. */
    if (rc == 0 && two && !sg->kept && sg->changes) {
        free(sg->after);
        memset(sg, 0, sizeof *sg);
        rc = run_stage_as(dv, k, kind, base, sg, false);
    }
    return rc;
}

static int optimize_plan(driver *dv, int k, opt_plan_result *pr) {
    evaluation base;
    /* Plan k is still the original's here, but after a kept stage on an earlier plan the current
     * schedule is a rewrite: its marks are the rewrite's lines, and it is freed before the caller
     * prints what is reported. So the plan is evaluated, and refused, in the original. */
    if (evaluate(dv->original, k, &dv->o->params, dv->world, &base, dv->d) != 0)
        return -1;
    if (base.diags.errors) {
        for (size_t j = 0; j < base.diags.items.n; j++) {
            const ml_diag *g = &ML_VEC_AT(&base.diags.items, ml_diag, j);
            ml_diag_add(dv->d, g->level, g->file, g->mark, g->rank, g->code, "%s", g->text);
        }
        eval_free(&base);
        return -1;
    }
    pr->before = ml_xcalloc((size_t)dv->world, sizeof *pr->before);
    pr->floor = ml_xcalloc((size_t)dv->world, sizeof *pr->floor);
    pr->stages = ml_xcalloc(OPT_KIND_COUNT + 1, sizeof *pr->stages);
    memcpy(pr->before, base.mem, (size_t)dv->world * sizeof *pr->before);
    memcpy(pr->floor, base.floor, (size_t)dv->world * sizeof *pr->floor);
    pr->step_before_us = base.step_us;
    static const opt_kind order[] = {OPT_LIFETIMES, OPT_INPLACE, OPT_CHUNKED, OPT_REORDER,
                                     OPT_LIFETIMES};
    int rc = 0;
    for (size_t j = 0; j < ML_ARRAY_LEN(order) && rc == 0; j++) {
        opt_kind kind = order[j];
        if (!dv->o->allow[kind])
            continue;
        bool again = j == ML_ARRAY_LEN(order) - 1;
        opt_stage *sg = &pr->stages[pr->n_stages];
        rc = run_stage(dv, k, kind, &base, sg);
        if (again && !sg->kept) {   /* the second lifetimes pass shows only when it helps */
            free(sg->after);
            memset(sg, 0, sizeof *sg);
            continue;
        }
        pr->n_stages++;
        pr->any_kept |= sg->kept;
    }
    pr->step_after_us = base.step_us;
    const sched_plan *before = &dv->original->plans[k], *after = &dv->st.s->plans[k];
    pr->host_syncs_added = count_syncs(after->steps, after->n) - count_syncs(before->steps, before->n);
    eval_free(&base);
    return rc;
}

/* The first send, recv or group step of a list (nested bodies included), or NULL. Rewrites move
 * and rename steps one at a time; a send/recv pair spans two ranks' steps, which none of them
 * reasons about yet, so such schedules are refused rather than rewritten wrongly. */
static const sched_step *first_p2p(const sched_step *st, uint32_t n) {
    for (uint32_t k = 0; k < n; k++) {
        const sched_step *x = &st[k], *in = NULL;
        if (x->kind == ST_GROUP || (x->kind == ST_COLL && ml_colls[x->u.coll.coll].p2p))
            return x;
        if (x->kind == ST_REPEAT)
            in = first_p2p(x->u.repeat.steps, x->u.repeat.n);
        else if (x->kind == ST_REGION)
            in = first_p2p(x->u.region.steps, x->u.region.n);
        if (in)
            return in;
    }
    return NULL;
}

/* The expectations of plan k (its own, else the schedule's) that the rewrite's prediction no
 * longer meets, as comments above their lines: the user's budget stays as written (optimize
 * does not edit it), the comment gives the new prediction (docs/optimize.md). */
static void expect_comments(const opt_ctx *c, const sched *s, int k, const opt_mem *after,
                            ml_vec *out) {
    const sched_plan *pl = &s->plans[k];
    const sched_expect *ex = pl->n_expects ? pl->expects : s->expects;
    uint32_t n = pl->n_expects ? pl->n_expects : s->n_expects;
    for (uint32_t j = 0; j < n; j++) {
        const sched_expect *e = &ex[j];
        ml_str t = {0};
        const expr *want[2] = {e->steady, e->peak};
        static const char *const what[2] = {"steady", "peak"};
        for (int x = 0; x < 2; x++) {
            /* the prediction on each rank the expectation names, once when they agree */
            bool wrong = false, same = true;
            uint64_t first = 0;
            int n_ranks = 0;
            for (int r = 0; r < c->world && want[x]; r++) {
                int64_t v;
                if (e->rank && (opt_eval(c, e->rank, r, &v) != 0 || v != r))
                    continue;
                uint64_t got = x ? after[r].peak[e->view] : after[r].steady[e->view];
                wrong |= opt_eval(c, want[x], r, &v) != 0 || v < 0 || (uint64_t)v != got;
                same &= !n_ranks++ || got == first;
                first = n_ranks == 1 ? got : first;
            }
            for (int r = 0; r < c->world && wrong; r++) {
                int64_t v;
                if (e->rank && (opt_eval(c, e->rank, r, &v) != 0 || v != r))
                    continue;
                char b[32];
                ml_format_bytes(x ? after[r].peak[e->view] : after[r].steady[e->view], b, sizeof b);
                if (same)
                    ml_str_printf(&t, "%s %s %s", t.n ? "," : "", what[x], b);
                else
                    ml_str_printf(&t, "%s %s %s on rank %d", t.n ? "," : "", what[x], b, r);
                if (same)
                    break;
            }
        }
        if (t.n) {
            patch_comment *pc = ml_vec_push(out);
            ml_str line = {0};
            ml_str_printf(&line, "memlife optimize: this %s expectation%s%s is the original plan's; "
                          "the rewrite predicts%s", ml_mem_view_names[e->view],
                          s->n_plans > 1 ? " of plan " : "", s->n_plans > 1 ? pl->name : "", t.s);
            *pc = (patch_comment){e->mark.line, ml_arena_strndup(c->arena, line.s, line.n)};
            ml_str_free(&line);
        }
        ml_str_free(&t);
    }
}

/* The rewrite as an edit of the original text (patch_text.h). Returns 1 when it cannot be (the
 * file cannot be read again, or a layout the patch does not edit: r->patch.why). */
static int write_patched(driver *dv, opt_ctx *c, opt_result *r) {
    const sched *s = dv->original;
    ml_input src = {0};
    char err[200];
    bool once = ml_input_once(s->file);
    if (once || ml_input_read(s->file, &src, err, sizeof err) != 0) {
        snprintf(r->patch.why, sizeof r->patch.why, "%s",
                 !once                   ? "the input cannot be read again"
                 : strcmp(s->file, "-") ? "a FIFO cannot be read again"
                                         : "standard input cannot be read again");
        ml_input_free(&src);
        return 1;
    }
    ml_vec comments;
    ml_vec_init(&comments, sizeof(patch_comment));
    for (size_t k = 0; k < r->n_plans; k++) {
        const opt_plan_result *p = &r->plans[k];
        if (p->optimized && p->any_kept && p->n_stages)
            expect_comments(c, s, (int)k, p->stages[p->n_stages - 1].after, &comments);
    }
    ml_str header = {0};
    ml_str_printf(&header, "memlife optimize: rewritten from %s, verified at %s; each edit has a "
                  "'memlife optimize' comment", s->file, r->verified);
    patch_in pin = {.text = src.data, .len = src.len, .original = s, .rewrite = dv->st.s,
                    .plans = ml_arena_alloc(dv->arena, (s->n_plans + 1) * sizeof(patch_plan)),
                    .world = dv->world, .header = header.s,
                    .comments = comments.items, .n_comments = comments.n};
    emit_yaml_opts eo = {0};
    ml_str text = {0};
    int rc = write_state(c, &dv->st, &eo, &pin, &r->patch, &text, dv->d);
    if (rc == 0) {
        ml_str_free(&r->yaml);
        r->yaml = text;
    } else {
        ml_str_free(&text);
    }
    ml_str_free(&header);
    ml_vec_free(&comments);
    ml_input_free(&src);
    return rc;
}

/* The whole rewrite by the emitter, the user's comments above their steps (read_comments). */
static int write_emitted(driver *dv, opt_ctx *c, opt_result *r) {
    const sched *s = dv->original;
    r->emitted_whole = true;
    ml_str header = {0}, expect_note = {0};
    read_comments(dv->arena, s->file, &dv->st);
    const char *user_header = dv->st.header_line < dv->st.n_comments
                                  ? dv->st.comments[dv->st.header_line] : NULL;
    if (user_header)   /* the user's own header first */
        ml_str_printf(&header, "%s\n\n", user_header);
    ml_str_printf(&header,
                  "Rewritten by memlife optimize from %s (verified at %s).\n"
                  "Each changed step has a comment above it.",
                  s->file, r->verified);
    ml_str_printf(&expect_note,
                  "expect: left out: the original's memory expectations describe the original\n"
                  "plan; 'memlife predict' gives this one's.");
    /* the world it was verified at, so that predict and run without --world use it */
    emit_yaml_opts eo = {.header = header.s, .expect_note = expect_note.s, .world = dv->world};
    int rc = write_state(c, &dv->st, &eo, NULL, NULL, &r->yaml, dv->d);
    ml_str_free(&header);
    ml_str_free(&expect_note);
    return rc;
}

int optimize_sched(const sched *s, const opt_options *o, opt_result *r, ml_diags *d) {
    memset(r, 0, sizeof *r);
    r->original = s;
    for (uint32_t k = 0; k < s->n_plans; k++) {
        const sched_step *p2p = first_p2p(s->plans[k].steps, s->plans[k].n);
        if (p2p) {
            ml_error(d, s->file, p2p->mark, "optimize does not rewrite schedules with send, recv or "
                     "group steps yet");
            return -1;
        }
    }
    int world = sched_world(s, &o->params, d);
    if (world <= 0)
        return -1;
    r->world = world;
    driver dv = {.o = o, .world = world, .arena = ml_arena_new(), .d = d, .original = s};
    ml_vec_init(&dv.kept, sizeof(ml_arena *));
    dv.st.s = s;
    dv.st.notes = ml_arena_alloc(dv.arena, (s->n_plans + 1) * sizeof *dv.st.notes);
    dv.st.lines = ml_arena_alloc(dv.arena, (s->n_plans + 1) * sizeof *dv.st.lines);
    dv.st.n_pre = ml_arena_alloc(dv.arena, (s->n_plans + 1) * sizeof *dv.st.n_pre);
    dv.slots = ml_arena_alloc(dv.arena, (size_t)world * sizeof *dv.slots);
    r->n_plans = s->n_plans;
    r->plans = ml_xcalloc(s->n_plans + 1, sizeof *r->plans);
    int rc = load_slots(&dv);
    for (uint32_t k = 0; k < s->n_plans && rc == 0; k++) {
        r->plans[k].plan_index = (int)k;
        if (o->plan && s->plans[k].name[0] && strcmp(o->plan, s->plans[k].name))
            continue;
        r->plans[k].optimized = true;
        rc = optimize_plan(&dv, (int)k, &r->plans[k]);
    }
    if (rc == 0) {
        char sets[200] = "";
        for (size_t j = 0; j < o->params.n_set; j++) {
            strncat(sets, ", --set ", sizeof sets - strlen(sets) - 1);
            strncat(sets, o->params.set[j], sizeof sets - strlen(sets) - 1);
        }
        snprintf(r->verified, sizeof r->verified, "world %d%s", world, sets);
        opt_ctx c = {.s = dv.st.s, .arena = dv.arena, .world = world, .slots = dv.slots};
        rc = write_patched(&dv, &c, r);
        if (rc == 1)   /* a layout the patch does not edit: the emitter writes the whole file */
            rc = write_emitted(&dv, &c, r);
    }
    for (size_t k = 0; k < dv.kept.n; k++)
        ml_arena_free(ML_VEC_AT(&dv.kept, ml_arena *, k));
    ml_vec_free(&dv.kept);
    ml_arena_free(dv.arena);
    if (rc != 0)
        opt_result_free(r);
    return rc;
}

void opt_result_free(opt_result *r) {
    for (size_t k = 0; k < r->n_plans; k++) {
        opt_plan_result *p = &r->plans[k];
        for (size_t j = 0; j < p->n_stages; j++)
            free(p->stages[j].after);
        free(p->stages);
        free(p->before);
        free(p->floor);
    }
    free(r->plans);
    ml_str_free(&r->yaml);
    memset(r, 0, sizeof *r);
}
