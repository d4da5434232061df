/* SPDX-License-Identifier: MIT */
/* emit_yaml.h — writes a schedule IR (sched.h) back as a readable YAML schedule that loads back.
 *
 * The layout follows the shipped schedules: top-level keys in the loader's define-before-use
 * order, lets in block style, one step per line as a flow mapping (`- alloc: {buf: x, count: n}`),
 * repeat / region / expect_error in block style. Expressions are written as their source text
 * (expr_text), so lets, `world` and `rank` survive and the file stays general.
 *
 * Quoting: every scalar goes through libyaml's emitter (yaml_emitter_*), in the context it will
 * appear in (a block mapping value or a flow collection), and is written exactly as libyaml
 * renders it; so `full[rank*q : q]` inside a flow mapping is quoted and `ceil_div(a, b)` in a
 * flow mapping too, while plain names stay plain. The structure around the scalars (indentation,
 * `- `, `{...}`) is written here, because libyaml's emitter cannot write comments and a rewritten
 * schedule says, above each changed step, what changed (`# memlife optimize: ...`).
 *
 * Round trip: load(emit(s)) has the same steps, views, expressions, lets, streams and events as
 * s, and emit(load(emit(s))) == emit(s) (tests/unit/test_optimize.c checks it for every shipped
 * schedule). Comments of the original file are not in the IR and are not written. */
#ifndef MEMLIFE_EMIT_YAML_H
#define MEMLIFE_EMIT_YAML_H

#include "ir/sched.h"

typedef struct {
    /* Comment lines written at the top (text without '#', lines separated by '\n'), or NULL. */
    const char *header;
    /* The comment above a step (one line per '\n'-separated part, without '#'), or NULL. */
    const char *(*step_comment)(void *ctx, const sched_step *st);
    void *ctx;
    /* Replaces `name:` when not NULL, `world:` when > 0. */
    const char *name;
    int world;
    /* Leaves the memory expectations (`expect:` of the schedule and of its plans) out and writes
     * this comment in their place when not NULL: a rewritten plan's memory differs from the
     * original's, so the original's expectations would fail on it. */
    const char *expect_note;
} emit_yaml_opts;

/* Appends the YAML text of s to out. Returns 0, or -1 (libyaml refused a scalar: out of memory)
 * with a diagnostic in d. */
int emit_yaml(const sched *s, const emit_yaml_opts *o, ml_str *out, ml_diags *d);

/* One step at a time, for a caller that splices steps into text of its own (patch_text.h): a
 * writer keeps its rendered scalars between steps. emit_yaml_step appends st as a list item
 * ("- " at column ind, lines ending in '\n') with the comments o->step_comment gives for the
 * steps of its body, not for st itself (the caller writes that one). Returns 0 or -1 (libyaml
 * refused a scalar: a diagnostic in the writer's d). */
typedef struct emit_yaml_writer emit_yaml_writer;
emit_yaml_writer *emit_yaml_writer_new(const sched *s, const emit_yaml_opts *o, ml_diags *d);
int emit_yaml_step(emit_yaml_writer *w, const sched_step *st, int ind, ml_str *out);
void emit_yaml_writer_free(emit_yaml_writer *w);

/* One scalar as libyaml would write it in a flow collection (flow = true) or as a block mapping
 * value: "world * q", "'full[rank*q : q]'". Appends to out. Returns 0 or -1. */
int emit_yaml_scalar(const char *text, bool flow, ml_str *out);

#endif
