/* SPDX-License-Identifier: MIT */
/* patch_text.c — splices a rewrite's steps into the original text (patch_text.h).
 *
 * The loader's marks say where each original step is; everything else works on lines, because
 * what must survive (comments, blank lines) is not in the IR. */
#include "optimize/patch_text.h"

#include <stdlib.h>
#include <string.h>

/* ---- lines ------------------------------------------------------------------------------------ */

typedef enum { LN_BLANK, LN_COMMENT, LN_CONTENT } line_kind;

typedef struct {
    const char *text;
    size_t len;
    size_t *start;            /* [n + 1]: byte offset of each line; start[n] = len */
    size_t n;
    bool crlf;                /* the file's line ends (its first line's) */
} lines;

static void lines_index(lines *ls, const char *text, size_t len) {
    ml_vec v;
    ml_vec_init(&v, sizeof(size_t));
    *(size_t *)ml_vec_push(&v) = 0;
    for (size_t k = 0; k < len; k++)
        if (text[k] == '\n' && k + 1 < len)
            *(size_t *)ml_vec_push(&v) = k + 1;
    ls->n = len ? v.n : 0;
    *(size_t *)ml_vec_push(&v) = len;
    ls->start = v.items;
    ls->text = text;
    ls->len = len;
    const char *nl = memchr(text, '\n', len);
    ls->crlf = nl && nl > text && nl[-1] == '\r';
}

static size_t line_indent(const lines *ls, size_t i) {
    size_t k = ls->start[i];
    while (k < ls->start[i + 1] && ls->text[k] == ' ')
        k++;
    return k - ls->start[i];
}

static line_kind kind_of(const lines *ls, size_t i) {
    size_t k = ls->start[i];
    while (k < ls->start[i + 1] && (ls->text[k] == ' ' || ls->text[k] == '\t'))
        k++;
    if (k == ls->start[i + 1] || ls->text[k] == '\r' || ls->text[k] == '\n')
        return LN_BLANK;
    return ls->text[k] == '#' ? LN_COMMENT : LN_CONTENT;
}

/* The line's text without its line end. */
static size_t line_len(const lines *ls, size_t i) {
    size_t a = ls->start[i], b = ls->start[i + 1];
    while (b > a && (ls->text[b - 1] == '\n' || ls->text[b - 1] == '\r'))
        b--;
    return b - a;
}

/* The comment of a content line (after " #", outside quotes), or NULL; *n its length. */
static const char *eol_comment(const lines *ls, size_t i, size_t *n) {
    const char *t = ls->text + ls->start[i], *end = t + line_len(ls, i);
    char q = 0;
    for (const char *p = t; p < end; p++) {
        if (q)
            q = *p == q ? 0 : q;
        else if (*p == '\'' || *p == '"')
            q = *p;
        else if (*p == '#' && p > t && (p[-1] == ' ' || p[-1] == '\t')) {
            *n = (size_t)(end - p);
            return p;
        }
    }
    return NULL;
}

/* ---- the original's layout -------------------------------------------------------------------- */

/* Found from the loader's marks and a scan of the top-level lines: the loader read this very
 * text, so its marks say where each step's key is, and a block mapping's top-level keys start
 * at column 1. (Parsing the text again with libyaml took 12% of optimize's CPU time at 100k
 * steps.) */
typedef struct {
    size_t key_line;          /* 0-based line of the `steps` key */
    size_t *item_line;        /* [n]: 0-based line of each item's '-' */
    size_t dash;              /* the column of the items' '-' */
    size_t n;
} seq_info;

typedef struct {
    bool bad;                 /* a layout this file does not edit */
    char why[160];
    seq_info *seqs;           /* [n_seqs], in plan order */
    size_t n_seqs;
    bool has_world;
    size_t world_at, world_end, world_line;   /* the value's bytes, its key's line */
    bool has_events, events_flow, events_empty;
    size_t events_line, events_close;         /* key line; a flow list's ']' */
    size_t events_last_line;                  /* a block list's last item */
    size_t body_line;         /* line of the `steps` or `plans` key */
} layout;

/* The end of a line's content: before its comment (" #" outside quotes) and trailing blanks. */
static size_t content_end(const lines *ls, size_t i) {
    size_t n = 0, len = line_len(ls, i);
    const char *t = ls->text + ls->start[i];
    const char *c = eol_comment(ls, i, &n);
    size_t e = c ? (size_t)(c - t) : len;
    while (e > 0 && (t[e - 1] == ' ' || t[e - 1] == '\t'))
        e--;
    return e;
}

/* Line i at column 1 is `key:`: the offset of what follows the ':' in the line, else 0. */
static size_t top_key(const lines *ls, size_t i, const char *key) {
    size_t n = strlen(key), len = line_len(ls, i);
    const char *t = ls->text + ls->start[i];
    return len > n && !memcmp(t, key, n) && t[n] == ':' ? n + 1 : 0;
}

static void read_top(layout *l, const lines *ls) {
    for (size_t i = 0; i < ls->n && !l->bad; i++) {
        const char *t = ls->text + ls->start[i];
        size_t v, end = content_end(ls, i);
        if ((v = top_key(ls, i, "steps")) || (v = top_key(ls, i, "plans"))) {
            l->body_line = i;
        } else if ((v = top_key(ls, i, "world"))) {
            while (v < end && t[v] == ' ')
                v++;
            l->has_world = v < end;
            l->world_line = i;
            l->world_at = ls->start[i] + v;
            l->world_end = ls->start[i] + end;
        } else if ((v = top_key(ls, i, "events"))) {
            while (v < end && t[v] == ' ')
                v++;
            l->has_events = true;
            l->events_line = i;
            const char *close = v < end ? memchr(t + v, ']', end - v) : NULL;
            if (v < end && t[v] == '[' && close && (size_t)(close - t) == end - 1) {
                l->events_flow = true;
                l->events_close = ls->start[i] + (size_t)(close - t);
                size_t k = v + 1;
                while (t + k < close && t[k] == ' ')
                    k++;
                l->events_empty = t + k == close;
            } else if (v < end) {
                l->bad = true;
                snprintf(l->why, sizeof l->why, "'events:' at line %zu is not a list on its line "
                         "or a block list", i + 1);
            } else {   /* a block list: its items are the more indented lines after it */
                l->events_empty = true;
                for (size_t k = i + 1; k < ls->n && (kind_of(ls, k) != LN_CONTENT ||
                                                      line_indent(ls, k) > 0); k++)
                    if (kind_of(ls, k) == LN_CONTENT) {
                        l->events_last_line = k;
                        l->events_empty = false;
                    }
            }
        }
    }
}

/* Plan k's steps: each item's '-' on its step's line, at one column, before the key (or the '{'
 * of a flow mapping item); the key line is the last content line before the first item. */
static void read_steps(layout *l, const lines *ls, const sched_plan *p, seq_info *q) {
    q->n = p->n;
    q->item_line = ml_xcalloc(p->n + 1, sizeof *q->item_line);
    for (uint32_t j = 0; j < p->n && !l->bad; j++) {
        const ml_mark m = p->steps[j].mark;
        size_t d = m.line - 1, col = m.col - 1, k = 0;
        bool ok = m.line >= 1 && m.col >= 1 && d < ls->n && col < line_len(ls, d) &&
                  (!j || d > q->item_line[j - 1]);
        const char *t = ok ? ls->text + ls->start[d] : "";
        while (ok && k < col && t[k] == ' ')
            k++;
        size_t dash = k;
        ok = ok && k + 1 < col && t[k] == '-' && t[k + 1] == ' ' && (!j || dash == q->dash);
        for (k += 2; ok && k < col && t[k] == ' '; k++)
            ;
        if (ok && k < col && t[k] == '{')   /* `- {alloc: ...}` */
            for (k++; k < col && t[k] == ' '; k++)
                ;
        if (!ok || k != col) {
            l->bad = true;
            if (j == 0)
                snprintf(l->why, sizeof l->why, "the steps at line %u are a flow sequence", m.line);
            else
                snprintf(l->why, sizeof l->why, "the step at line %u is not a '- ' item of its "
                         "list", m.line);
            return;
        }
        q->item_line[j] = d;
        q->dash = dash;
    }
    size_t key = q->item_line[0];
    while (key > 0 && kind_of(ls, key - 1) != LN_CONTENT)
        key--;
    if (key == 0) {
        l->bad = true;
        snprintf(l->why, sizeof l->why, "no 'steps:' line above line %zu", q->item_line[0] + 1);
    }
    q->key_line = key - 1;
}

static void read_layout(layout *l, const lines *ls, const sched *o) {
    read_top(l, ls);
    if (ls->n && ls->text[0] == '{') {
        l->bad = true;
        snprintf(l->why, sizeof l->why, "the file is one flow mapping");
    }
    l->seqs = ml_xcalloc(o->n_plans + 1, sizeof *l->seqs);
    for (uint32_t k = 0; k < o->n_plans && !l->bad; k++, l->n_seqs++) {
        if (!o->plans[k].n) {
            l->bad = true;
            snprintf(l->why, sizeof l->why, "a plan has no steps");
            break;
        }
        read_steps(l, ls, &o->plans[k], &l->seqs[k]);
    }
}

static void layout_free(layout *l) {
    for (size_t k = 0; k < l->n_seqs; k++)
        free(l->seqs[k].item_line);
    free(l->seqs);
}

/* After the item at line d whose '-' is at column dash: the line after its last content line
 * (its more-indented lines belong to it; comments and blank lines after it go with what follows). */
static size_t item_end(const lines *ls, size_t d, size_t dash) {
    size_t last = d;
    for (size_t i = d + 1; i < ls->n; i++) {
        line_kind k = kind_of(ls, i);
        if (k != LN_CONTENT)
            continue;
        if (line_indent(ls, i) <= dash)
            break;
        last = i;
    }
    return last + 1;
}

/* ---- writing ----------------------------------------------------------------------------------- */

/* text[0..n) with the file's line ends. */
static void put(ml_str *out, const lines *ls, const char *text, size_t n) {
    if (!ls->crlf) {
        ml_str_append(out, text, n);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        if (text[k] == '\n' && (k == 0 || text[k - 1] != '\r'))
            ml_str_append(out, "\r", 1);
        ml_str_append(out, text + k, 1);
    }
}

static void put_lines(ml_str *out, const lines *ls, size_t a, size_t b) {
    if (b > a)
        ml_str_append(out, ls->text + ls->start[a], ls->start[b] - ls->start[a]);
}

/* Comment lines at column ind: "# " + head on the first, each '\n'-separated line of text. */
static void comment(ml_str *out, const lines *ls, size_t ind, const char *head, const char *text,
                    size_t len) {
    static const char spaces[] = "                                ";
    const char *eol = ls->crlf ? "\r\n" : "\n";
    bool first = true;
    const char *end = text + len;
    do {   /* appended piece by piece: a 100k-step rewrite has a comment per step */
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        size_t n = nl ? (size_t)(nl - text) : (size_t)(end - text);
        for (size_t k = ind; k > 0;) {
            size_t m = k < sizeof spaces - 1 ? k : sizeof spaces - 1;
            ml_str_append(out, spaces, m);
            k -= m;
        }
        ml_str_append(out, "#", 1);
        if (first && head) {
            ml_str_append(out, " ", 1);
            ml_str_append(out, head, strlen(head));
        }
        if (n) {
            ml_str_append(out, " ", 1);
            ml_str_append(out, text, n);
        }
        ml_str_append(out, eol, strlen(eol));
        first = false;
        text = nl ? nl + 1 : end;
    } while (text < end);
}

/* The user's comments in lines [a, b) of a step the emitter replaces or that was removed, as
 * comment lines at column ind ('#' and the text as they were). */
static void keep_comments(ml_str *out, const lines *ls, size_t a, size_t b, size_t ind) {
    for (size_t i = a; i < b; i++) {
        size_t n = 0;
        const char *t = NULL;
        if (kind_of(ls, i) == LN_COMMENT) {
            t = ls->text + ls->start[i] + line_indent(ls, i);
            n = line_len(ls, i) - line_indent(ls, i);
        } else if (kind_of(ls, i) == LN_CONTENT) {
            t = eol_comment(ls, i, &n);
        }
        if (!t)
            continue;
        ml_str c = {0};
        ml_str_printf(&c, "%*s%.*s\n", (int)ind, "", (int)n, t);
        put(out, ls, c.s, c.n);
        ml_str_free(&c);
    }
}

typedef struct {
    size_t at, del;           /* bytes of the original replaced */
    ml_str text;
    size_t order;             /* insertion order, for edits at one offset */
} edit;

static int cmp_edit(const void *a, const void *b) {
    const edit *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static edit *new_edit(ml_vec *edits, size_t at, size_t del) {
    edit *e = ml_vec_push(edits);
    *e = (edit){.at = at, .del = del, .order = edits->n};
    return e;
}

/* ---- one step list ------------------------------------------------------------------------------ */

typedef struct {
    const patch_in *in;
    const lines *ls;
    emit_yaml_writer *wo, *wr;   /* the original's steps, the rewrite's */
    emit_yaml_opts body;         /* the rewrite's, with body_note */
    ml_vec notes;                /* of char *: body_note's texts, freed at the end */
    patch_stats *st;
    int failed;
} ctx;

/* A note on a step inside a block step the emitter writes: "memlife optimize: " first, as on
 * every comment the patch adds. */
static const char *body_note(void *p, const sched_step *s) {
    ctx *c = p;
    const emit_yaml_opts *o = c->in->emit;
    const char *note = o->step_comment ? o->step_comment(o->ctx, s) : NULL;
    if (!note)
        return NULL;
    ml_str t = {0};
    ml_str_printf(&t, "memlife optimize: %s", note);
    *(char **)ml_vec_push(&c->notes) = t.s;
    return t.s;
}

static bool block_step(const sched_step *s) {
    return s->kind == ST_REPEAT || s->kind == ST_REGION || s->kind == ST_EXPECT_ERROR;
}

/* Original steps k0, k0 + 1, ... up to the next one a rewrite step came from: none did, so
 * their comments stay, under a comment with what they were. */
static void removed_after(ctx *c, const seq_info *q, const size_t *from, const size_t *to,
                          const bool *used, size_t k0, ml_str *out) {
    const lines *ls = c->ls;
    size_t dash = q->dash;
    for (size_t i = k0; i < q->n && !used[i]; i++) {
        put_lines(out, ls, from[i], q->item_line[i]);
        size_t d = q->item_line[i];
        char head[160];
        snprintf(head, sizeof head, "memlife optimize (line %zu, removed):", d + 1);
        comment(out, ls, dash, head, ls->text + ls->start[d] + dash, line_len(ls, d) - dash);
        keep_comments(out, ls, d + 1, to[i], dash);
        c->st->edits++;
    }
}

/* The lines [q->key_line + 1, end of the last item) rewritten into e->text. */
static void patch_steps(ctx *c, const seq_info *q, const sched_plan *orig, const patch_plan *pp,
                        edit *e) {
    const lines *ls = c->ls;
    size_t n = q->n, dash = q->dash;
    size_t *from = ml_xcalloc(n + 1, sizeof *from), *to = ml_xcalloc(n + 1, sizeof *to);
    for (size_t k = 0; k < n; k++) {
        from[k] = k ? to[k - 1] : q->key_line + 1;
        to[k] = item_end(ls, q->item_line[k], dash);
    }
    /* each rewrite step's original: the item of its line, once */
    size_t *item_of_line = ml_xcalloc(ls->n + 2, sizeof *item_of_line);
    for (size_t k = 0; k < n; k++)
        item_of_line[q->item_line[k] + 1] = k + 1;
    bool *used = ml_xcalloc(n + 1, sizeof *used);
    size_t *match = ml_xcalloc(pp->n + 1, sizeof *match);   /* item + 1, 0: added */
    for (uint32_t j = 0; j < pp->n; j++) {
        uint32_t line = pp->lines[j];
        size_t m = line && line <= ls->n ? item_of_line[line] : 0;
        if (m && !used[m - 1]) {
            used[m - 1] = true;
            match[j] = m;
        }
    }
    ml_str *out = &e->text;
    ml_str t = {0}, o = {0};
    char head[160];
    removed_after(c, q, from, to, used, 0, out);
    for (uint32_t j = 0; j < pp->n && !c->failed; j++) {
        const sched_step *s = &pp->steps[j];
        const char *note = c->in->emit->step_comment ? c->in->emit->step_comment(c->in->emit->ctx, s) : NULL;
        t.n = 0;
        /* the original step byte for byte (moved by a stage, or left as it was): its own text,
         * with no emitting (a block step's body is rebuilt by every stage: it is compared by
         * the emitter's text, as a step a stage rewrote is) */
        bool same = match[j] && !memcmp(s, &orig->steps[match[j] - 1], sizeof *s) && !block_step(s);
        if (!same && emit_yaml_step(c->wr, s, (int)dash, &t) != 0) {
            c->failed = 1;
            break;
        }
        if (!match[j]) {   /* added by a stage */
            comment(out, ls, dash, "memlife optimize (added):", note ? note : "", note ? strlen(note) : 0);
            put(out, ls, t.s, t.n);
            c->st->edits++;
            continue;
        }
        size_t m = match[j] - 1, d = q->item_line[m];
        o.n = 0;
        if (!same && emit_yaml_step(c->wo, &orig->steps[m], (int)dash, &o) != 0) {
            c->failed = 1;
            break;
        }
        put_lines(out, ls, from[m], d);   /* the comments above it */
        if (same || (t.n == o.n && !memcmp(t.s, o.s, t.n))) {
            if (note) {
                snprintf(head, sizeof head, "memlife optimize (line %zu):", d + 1);
                comment(out, ls, dash, head, note, strlen(note));
                c->st->edits++;
            }
            put_lines(out, ls, d, to[m]);
        } else {
            bool whole = block_step(s);
            snprintf(head, sizeof head, "memlife optimize (line %zu, rewritten%s):", d + 1,
                     whole ? " by the emitter, the comments inside it moved up here" : "");
            comment(out, ls, dash, head, note ? note : "", note ? strlen(note) : 0);
            keep_comments(out, ls, d, to[m], dash);
            put(out, ls, t.s, t.n);
            c->st->edits++;
            c->st->emitted += whole;
        }
        removed_after(c, q, from, to, used, m + 1, out);
    }
    ml_str_free(&t);
    ml_str_free(&o);
    e->del = ls->start[to[n - 1]] - e->at;
    free(from);
    free(to);
    free(item_of_line);
    free(used);
    free(match);
}

/* ---- the file ------------------------------------------------------------------------------------- */

/* Where a top-level line is inserted before line k: above the comment lines right above it. */
static size_t above_comments(const lines *ls, size_t k) {
    while (k > 0 && kind_of(ls, k - 1) == LN_COMMENT)
        k--;
    return ls->start[k];
}

static void top_edits(const patch_in *in, const layout *l, const lines *ls, ml_vec *edits) {
    const sched *o = in->original, *r = in->rewrite;
    if (in->header) {
        edit *e = new_edit(edits, 0, 0);
        comment(&e->text, ls, 0, NULL, in->header, strlen(in->header));
    }
    if (in->world > 0 && in->world != o->world) {
        ml_str note = {0};
        if (l->has_world) {
            ml_str_printf(&note, "memlife optimize (line %zu): world %d, where the rewrite was "
                          "verified (was %d)", l->world_line + 1, in->world, o->world);
            comment(&new_edit(edits, ls->start[l->world_line], 0)->text, ls, 0, NULL, note.s, note.n);
            ml_str_printf(&new_edit(edits, l->world_at, l->world_end - l->world_at)->text, "%d",
                          in->world);
        } else {
            ml_str_printf(&note, "world: %d   # memlife optimize: where the rewrite was verified\n",
                          in->world);
            put(&new_edit(edits, above_comments(ls, l->body_line), 0)->text, ls, note.s, note.n);
        }
        ml_str_free(&note);
    }
    const sched_symtab *ev = &r->syms[SYM_EVENT];
    uint32_t first = o->syms[SYM_EVENT].n;
    if (ev->n > first) {
        ml_str names = {0};
        for (uint32_t k = first; k < ev->n; k++) {
            if (k > first)
                ml_str_append(&names, ", ", 2);
            emit_yaml_scalar(ev->names[k], true, &names);
        }
        ml_str note = {0};   /* a flow list's line is edited: the comment names it */
        char at[32] = "";
        if (l->has_events && l->events_flow)
            snprintf(at, sizeof at, " (line %zu)", l->events_line + 1);
        ml_str_printf(&note, "memlife optimize%s: %s added (recorded after a use on another "
                      "stream, waited for before the memory is reused)", at, names.s);
        if (l->has_events && l->events_flow) {
            comment(&new_edit(edits, ls->start[l->events_line], 0)->text, ls, 0, NULL, note.s, note.n);
            edit *e = new_edit(edits, l->events_close, 0);
            ml_str_printf(&e->text, "%s%s", l->events_empty ? "" : ", ", names.s);
        } else if (l->has_events && !l->events_empty) {
            size_t last = l->events_last_line, col = 0;
            while (ls->start[last] + col < ls->len && ls->text[ls->start[last] + col] == ' ')
                col++;
            edit *e = new_edit(edits, ls->start[item_end(ls, last, col)], 0);
            comment(&e->text, ls, col, NULL, note.s, note.n);
            for (uint32_t k = first; k < ev->n; k++) {
                ml_str x = {0};
                ml_str_printf(&x, "%*s- ", (int)col, "");
                emit_yaml_scalar(ev->names[k], false, &x);
                ml_str_append(&x, "\n", 1);
                put(&e->text, ls, x.s, x.n);
                ml_str_free(&x);
            }
        } else {   /* none (a bare `events:` is null: the loader would have refused it) */
            edit *e = new_edit(edits, above_comments(ls, l->body_line), 0);
            comment(&e->text, ls, 0, NULL, note.s, note.n);
            ml_str x = {0};
            ml_str_printf(&x, "events: [%s]\n", names.s);
            put(&e->text, ls, x.s, x.n);
            ml_str_free(&x);
        }
        ml_str_free(&note);
        ml_str_free(&names);
    }
    for (size_t k = 0; k < in->n_comments; k++) {
        size_t line = in->comments[k].line - 1;
        if (line >= ls->n)
            continue;
        edit *e = new_edit(edits, ls->start[line], 0);
        comment(&e->text, ls, line_indent(ls, line), NULL, in->comments[k].text,
                strlen(in->comments[k].text));
    }
}

int patch_text(const patch_in *in0, ml_str *out, patch_stats *st, ml_diags *d) {
    memset(st, 0, sizeof *st);
    /* A last line without its line end would run into a step moved after it: the text gets one
     * while it is edited, and loses it again at the end (if it is still the last byte). */
    patch_in copy = *in0;
    const patch_in *in = &copy;
    char *owned = NULL;
    bool no_end = in0->len && in0->text[in0->len - 1] != '\n';
    if (no_end) {
        owned = ml_xcalloc(in0->len + 2, 1);
        memcpy(owned, in0->text, in0->len);
        owned[in0->len] = '\n';
        copy.text = owned;
        copy.len = in0->len + 1;
    }
    size_t out_start = out->n;
    lines ls;
    lines_index(&ls, in->text, in->len);
    layout l = {0};
    read_layout(&l, &ls, in->original);
    int rc = 0;
    if (l.bad) {
        snprintf(st->why, sizeof st->why, "%s", l.why);
        rc = 1;
    } else if (in->rewrite->n_plans != in->original->n_plans) {
        snprintf(st->why, sizeof st->why, "the rewrite has another number of plans");
        rc = 1;
    }
    if (rc) {
        layout_free(&l);
        free(ls.start);
        free(owned);
        return rc;
    }
    ml_vec edits;
    ml_vec_init(&edits, sizeof(edit));
    top_edits(in, &l, &ls, &edits);
    ctx c = {.in = in, .ls = &ls, .st = st, .wo = emit_yaml_writer_new(in->original, NULL, d)};
    c.body = *in->emit;
    c.body.step_comment = body_note;
    c.body.ctx = &c;
    c.wr = emit_yaml_writer_new(in->rewrite, &c.body, d);
    ml_vec_init(&c.notes, sizeof(char *));
    for (size_t k = 0; k < l.n_seqs && !c.failed; k++) {
        new_edit(&edits, ls.start[l.seqs[k].key_line + 1], 0);
        patch_steps(&c, &l.seqs[k], &in->original->plans[k], &in->plans[k],
                    &ML_VEC_AT(&edits, edit, edits.n - 1));
    }
    emit_yaml_writer_free(c.wo);
    emit_yaml_writer_free(c.wr);
    for (size_t k = 0; k < c.notes.n; k++)
        free(ML_VEC_AT(&c.notes, char *, k));
    ml_vec_free(&c.notes);
    qsort(edits.items, edits.n, sizeof(edit), cmp_edit);
    size_t at = 0;
    for (size_t k = 0; k < edits.n && !c.failed; k++) {
        edit *e = &ML_VEC_AT(&edits, edit, k);
        ml_str_append(out, in->text + at, e->at - at);
        ml_str_append(out, e->text.s ? e->text.s : "", e->text.n);
        at = e->at + e->del;
    }
    if (!c.failed)
        ml_str_append(out, in->text + at, in->len - at);
    if (!c.failed && no_end && out->n > out_start && out->s[out->n - 1] == '\n')
        out->n--;
    free(owned);
    for (size_t k = 0; k < edits.n; k++)
        ml_str_free(&ML_VEC_AT(&edits, edit, k).text);
    ml_vec_free(&edits);
    layout_free(&l);
    free(ls.start);
    return c.failed ? -1 : 0;
}
