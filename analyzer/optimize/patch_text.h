/* SPDX-License-Identifier: MIT */
/* patch_text.h — the rewritten schedule as an edit of the user's own text.
 *
 * Instead of writing the whole tree again (emit_yaml.h), the original file's bytes are copied
 * and only what a rewrite changed is spliced in: every line outside the edits is byte-identical
 * (comments, blank lines, key order, flow or block style, CRLF line ends, `expect:`). The
 * original's steps are found by the loader's marks (each step's key line and column); a step's
 * text is its `- ` line and every more-indented line after it, up to the last content line
 * before the next item, and the comment and blank lines above it go with it.
 *
 * Each step of the rewrite is matched to the original step of its line (opt_node.orig_line).
 * When the emitter writes both the same (the same step), the original text is copied, under a
 * `# memlife optimize (line N): NOTE` comment when a stage moved it; else the emitter's text
 * replaces it, under the note and the user's comments of the replaced lines. Steps a stage added
 * are the emitter's, indented like the list they are in; an original step no rewrite step came
 * from leaves a `removed` comment with its text. A repeat, region or expect_error whose body
 * changed is written by the emitter as a whole (the user's comments inside it go above it;
 * `emitted` counts them for the report). Top level: a header comment, `world:` where the verified world
 * differs from the file's, the events a rewrite records added to `events:`, and comments above
 * given lines (expectations the rewrite changed). */
#ifndef MEMLIFE_PATCH_TEXT_H
#define MEMLIFE_PATCH_TEXT_H

#include "optimize/emit_yaml.h"

typedef struct {
    uint32_t line;        /* the original's line (1-based) the comment goes above */
    const char *text;     /* without '#', lines separated by '\n' */
} patch_comment;

typedef struct {
    const sched_step *steps;  /* the plan's top-level steps in the rewrite */
    uint32_t n;
    const uint32_t *lines;    /* [n]: the original line each came from; 0: added by a stage */
} patch_plan;

typedef struct {
    const char *text;         /* the original file's bytes */
    size_t len;
    const sched *original;    /* loaded from text */
    const sched *rewrite;     /* the schedule the kept stages ended with */
    const emit_yaml_opts *emit;   /* step_comment: the stages' note on each step */
    const patch_plan *plans;  /* [rewrite->n_plans] */
    int world;                /* written as `world:` where the file's differs */
    const char *header;       /* comment at the top, '\n' between lines */
    const patch_comment *comments;
    size_t n_comments;
} patch_in;

typedef struct {
    uint32_t emitted;         /* block steps (repeat, region, expect_error) the emitter wrote */
    uint32_t edits;           /* steps moved, rewritten, added or removed */
    char why[160];            /* when patch_text returns 1: the layout it does not edit */
} patch_stats;

/* Appends the patched text to out: 0; 1 when the file's layout is one it does not edit (a flow
 * sequence of steps, marks that do not match the text; st->why says which), out unchanged;
 * -1 when the emitter fails (a diagnostic in d). */
int patch_text(const patch_in *in, ml_str *out, patch_stats *st, ml_diags *d);

#endif
