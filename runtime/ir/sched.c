/* SPDX-License-Identifier: MIT */
/* sched.c — questions asked of a loaded schedule: symbol names, the world size of a run, and the
 * values of the let-names for one (world, rank) with `--set` overrides. */
#include "ir/sched.h"

#include <stdlib.h>
#include <string.h>

static bool mark_before(ml_mark a, ml_mark b) {
    return a.line < b.line || (a.line == b.line && a.col < b.col);
}

static const sched_at *part_of(const sched *s, const sched_step *st, sched_at_part part) {
    size_t lo = 0, hi = s->n_ats;
    while (lo < hi) {   /* the first part not before the step's key */
        size_t mid = lo + (hi - lo) / 2;
        if (mark_before(s->ats[mid].at, st->mark))
            lo = mid + 1;
        else
            hi = mid;
    }
    /* `when:` may come before the step key: its part is the one just before */
    if (part == SCHED_AT_WHEN && lo > 0 && s->ats[lo - 1].part == SCHED_AT_WHEN &&
        s->ats[lo - 1].step.line == st->mark.line && s->ats[lo - 1].step.col == st->mark.col)
        return &s->ats[lo - 1];
    for (size_t k = lo; k < s->n_ats; k++)
        if (s->ats[k].part == (uint32_t)part && s->ats[k].step.line == st->mark.line &&
            s->ats[k].step.col == st->mark.col)
            return &s->ats[k];
    return NULL;
}

ml_mark sched_part_mark(const sched *s, const sched_step *st, sched_at_part part) {
    const sched_at *a = part_of(s, st, part);
    return a ? a->at : st->mark;
}

/* m advanced over text[0..offset): columns count characters (text is the source there). */
static ml_mark text_mark(ml_mark m, const char *text, size_t offset) {
    for (size_t k = 0; k < offset && text[k]; k++)
        m.col += ((unsigned char)text[k] & 0xC0) != 0x80;
    return m;
}

ml_mark sched_part_offset_mark(const sched *s, const sched_step *st, sched_at_part part,
                               const char *text, size_t offset) {
    const sched_at *a = part_of(s, st, part);
    if (!a)
        return st->mark;
    return a->linear ? text_mark(a->at, text, offset) : a->at;
}

ml_mark sched_view_expr_mark(const sched_view *v, bool count, size_t offset) {
    const expr *e = count ? v->count : v->offset;
    uint16_t col = count ? v->count_col : v->offset_col;
    if (!e || !col)
        return v->mark;
    const char *text = expr_text(e);
    if (offset == SCHED_FIRST_TOKEN)
        for (offset = 0; text[offset] == ' ' || text[offset] == '\t'; offset++)
            ;
    return text_mark((ml_mark){v->mark.line, v->mark.col + col}, text, offset);
}

const char *sched_sym_name(const sched *s, sched_sym_kind kind, uint32_t sym) {
    if ((unsigned)kind >= SYM_KIND_COUNT || sym >= s->syms[kind].n)
        return "?";
    return s->syms[kind].names[sym];
}

static int check_requires(const sched *s, const sched_params *p, int world, ml_diags *d) {
    if (!s->requires_world)
        return world;
    int64_t *slots = ml_xcalloc(EXPR_SLOT_FIRST_LET + s->n_lets, sizeof *slots);
    int64_t holds = 0;
    expr_error err = {0};
    int rc = sched_eval_lets(s, p, world, 0, slots, d);
    if (rc == 0 && expr_eval(s->requires_world, slots, &holds, &err) != 0) {
        ml_mark m = s->requires_mark;
        m.col += (uint32_t)err.offset;
        ml_error(d, s->file, m, "%s in 'requires'", err.msg);
        rc = -1;
    }
    free(slots);
    if (rc != 0)
        return -1;
    if (!holds) {
        ml_error(d, s->file, s->requires_mark, "schedule needs %s (world is %d)",
                 expr_text(s->requires_world), world);
        return -1;
    }
    return world;
}

int sched_world(const sched *s, const sched_params *p, ml_diags *d) {
    if (p && p->world > 0)
        return check_requires(s, p, p->world, d);
    if (s->world > 0)
        return check_requires(s, p, s->world, d);
    ml_error(d, s->file, ((ml_mark){0, 0}), "no world size: the schedule sets no 'world' and none was given");
    return -1;
}

/* Overrides see world, rank and the lets defined before the one they replace. */
typedef struct {
    const sched *s;
    uint32_t n_visible;
} override_ctx;

static int resolve_override(void *vctx, const char *name, size_t len) {
    const override_ctx *c = vctx;
    if (len == 5 && memcmp(name, "world", 5) == 0)
        return EXPR_SLOT_WORLD;
    if (len == 4 && memcmp(name, "rank", 4) == 0)
        return EXPR_SLOT_RANK;
    for (uint32_t k = 0; k < c->n_visible; k++)
        if (strlen(c->s->lets[k].name) == len && memcmp(c->s->lets[k].name, name, len) == 0)
            return EXPR_SLOT_FIRST_LET + (int)k;
    return -1;
}

static int let_index(const sched *s, const char *name, size_t len) {
    for (uint32_t k = 0; k < s->n_lets; k++)
        if (strlen(s->lets[k].name) == len && memcmp(s->lets[k].name, name, len) == 0)
            return (int)k;
    return -1;
}

/* values[k]: the text of the last `--set` for let k, or NULL. Every override must name a let. */
static int collect_overrides(const sched *s, const sched_params *p, const char **values, ml_diags *d) {
    for (size_t j = 0; p && j < p->n_set; j++) {
        const char *item = p->set[j];
        const char *eq = strchr(item, '=');
        if (!eq) {
            ml_error(d, NULL, ((ml_mark){0, 0}), "--set needs NAME=VALUE, got '%s'", item);
            return -1;
        }
        const char *name = item, *end = eq;
        while (*name == ' ')
            name++;
        while (end > name && end[-1] == ' ')
            end--;
        int idx = let_index(s, name, (size_t)(end - name));
        if (idx < 0) {
            ml_error(d, NULL, ((ml_mark){0, 0}), "unknown let '%.*s' in --set", (int)(end - name), name);
            return -1;
        }
        values[idx] = eq + 1;
    }
    return 0;
}

int sched_eval_lets(const sched *s, const sched_params *p, int world, int rank, int64_t *slots,
                    ml_diags *d) {
    slots[EXPR_SLOT_WORLD] = world;
    slots[EXPR_SLOT_RANK] = rank;
    slots[EXPR_SLOT_INDEX] = 0;
    const char **values = NULL;
    if (p && p->n_set) {
        values = ml_xcalloc(s->n_lets ? s->n_lets : 1, sizeof *values);
        if (collect_overrides(s, p, values, d) != 0) {
            free(values);
            return -1;
        }
    }
    int rc = 0;
    ml_arena *tmp = NULL;
    for (uint32_t k = 0; k < s->n_lets && rc == 0; k++) {
        const sched_let *let = &s->lets[k];
        const char *value = values ? values[k] : NULL;
        expr_error err = {0};
        int64_t *out = &slots[EXPR_SLOT_FIRST_LET + k];
        if (!value) {
            if (expr_eval(let->value, slots, out, &err) != 0) {
                ml_mark m = let->mark;
                m.col += (uint32_t)err.offset;
                ml_error(d, s->file, m, "%s in let '%s'", err.msg, let->name);
                rc = -1;
            }
            continue;
        }
        if (!tmp)
            tmp = ml_arena_new();
        override_ctx c = {s, k};
        expr *e = expr_parse(tmp, value, strlen(value), resolve_override, &c, &err);
        if (!e || expr_eval(e, slots, out, &err) != 0) {
            ml_error(d, NULL, ((ml_mark){0, 0}), "--set %s=%s: %s", let->name, value, err.msg);
            rc = -1;
        }
    }
    ml_arena_free(tmp);
    free(values);
    return rc;
}

int sched_plan_named(const sched *s, const char *name, ml_diags *d) {
    if (s->n_plans == 0 || !s->plans[0].name[0]) {
        ml_error(d, s->file, ((ml_mark){0, 0}),
                 "no plan '%s': this schedule has no 'plans:', only one list of 'steps:'", name);
        return -1;
    }
    for (uint32_t k = 0; k < s->n_plans; k++)
        if (!strcmp(s->plans[k].name, name))
            return (int)k;
    ml_str names = {0};
    for (uint32_t k = 0; k < s->n_plans; k++)
        ml_str_printf(&names, "%s%s", k ? ", " : "", s->plans[k].name);
    ml_error(d, s->file, s->plans[0].mark, "no plan '%s' in this schedule (plans: %s)", name,
             names.s);
    ml_str_free(&names);
    return -1;
}

bool sched_step_time(const sched *s, const sched_step *st, int64_t *us) {
    size_t lo = 0, hi = s->n_times;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        ml_mark m = s->times[mid].step;
        if (m.line == st->mark.line && m.col == st->mark.col) {
            *us = s->times[mid].us;
            return true;
        }
        if (m.line < st->mark.line || (m.line == st->mark.line && m.col < st->mark.col))
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}
