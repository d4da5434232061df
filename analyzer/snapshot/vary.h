/* SPDX-License-Identifier: MIT */
/* vary.h — one schedule from captures of one program at several values of its lets: every size
 * of the steps an expression of the lets, fitted to the captures.
 *
 * The captures form a grid (every combination of the lets' values). Each is imported
 * (import.h) with its sizes written as placeholders; the documents must then be equal, line for
 * line: the same steps, names, streams and events at every value. Each size is fitted as a
 * multi-affine form of the lets (a + b*MBS; a + b*MBS + c*S + d*MBS*S for two) through the
 * grid's corner of the first two values of each let, with integer coefficients, and checked at
 * every point of the grid. The schedule is the first capture's document with the fitted
 * expressions for sizes, `let:` holding the first values; so `memlife predict --set` at a
 * captured point replays exactly that capture's sizes, in the same order, and gives its numbers
 * in every view. */
#ifndef MEMLIFE_SNAPSHOT_VARY_H
#define MEMLIFE_SNAPSHOT_VARY_H

#include "base/util.h"
#include "snapshot/import.h"

#include <stdbool.h>

#define VARY_MAX_LETS 4

typedef struct {
    const char *name;       /* a let-name of the program (an identifier) */
    const int64_t *values;  /* the captured values, distinct; the first is let:'s default */
    size_t n;               /* at least 2 */
} vary_let;

/* The number of grid points, or 0 past max_points (or with a let of fewer than 2 values). */
size_t vary_grid_points(const vary_let *lets, size_t n_lets, size_t max_points);

/* The value index of let k at grid point g (mixed radix, the last let fastest). */
size_t vary_grid_index(const vary_let *lets, size_t n_lets, size_t g, size_t k);

/* "MBS=2, S=512": grid point g's values. */
void vary_point_text(const vary_let *lets, size_t n_lets, size_t g, char *buf, size_t len);

/* Fits n_lets-variable multi-affine integer coefficients to y[g] over the grid: coef[mask]
 * multiplies the product of the lets in mask (bit k: let k). Returns 0; 1 when no integer form
 * passes through the corner, or when one does but misses a grid point (*bad_point, and
 * *fitted the form's value there; -1 when the corner has none); 2 on 64-bit overflow. */
int vary_fit(const vary_let *lets, size_t n_lets, const int64_t *y,
             int64_t coef[1 << VARY_MAX_LETS], size_t *bad_point, int64_t *fitted);

/* The form as an expression: "1024 + 512*MBS", "262144*MBS*S", "0". */
void vary_expr_text(const vary_let *lets, size_t n_lets, const int64_t *coef, ml_str *out);

/* Writes the schedule from snaps[g], the capture at grid point g; o gives the import's device,
 * names, name and source (its parametric fields are set here); st[g] gets each capture's
 * statistics. Returns 0 with *yaml (malloc'd, *len its length), or -1 with a one-line reason
 * in err: *bad_input set when the captures do not line up or a size is of no fitted form (the
 * reason names the step, its buffer and the sizes at each point), clear when a capture does not
 * import. */
int snapshot_vary(json_t *const *snaps, const vary_let *lets, size_t n_lets,
                  const import_opts *o, char **yaml, size_t *len, import_stats *st,
                  bool *bad_input, char *err, size_t errlen);

/* ---- one schedule from captures at several worlds (capture --worlds) ----
 * FSDP2 pads dim 0 of every parameter to a multiple of the world: a rank's shard of c rows of
 * b bytes is b*ceil_div(c, world), the all-gathered buffer b*ceil_div(c, world)*world; the rest
 * is constant in the world. Each size is fitted, by the first that passes through every
 * captured world, as a constant, then as b*ceil_div(c, world), then as
 * b*ceil_div(c, world)*world (a = 0; a constant term is not tried), with b the largest divisor
 * of the sizes' gcd that admits a c (at most VARY_WORLD_TRIES divisors from the top) and c the
 * largest in the range that passes (never under-predicting a shard of that b). */
#define VARY_WORLD_TRIES 4096
#define VARY_WORLD_STAKE_MAX 1024   /* the worlds an ambiguity's bytes are reckoned over */

typedef enum { WORLD_CONSTANT, WORLD_SHARD, WORLD_PADDED } world_kind;

typedef struct {
    world_kind kind;
    int64_t a, b, c;        /* a (WORLD_CONSTANT); b*ceil_div(c, world) [*world] + a */
    bool gathered;          /* world times that: a buffer a collective gathers into or
                             * scatters from, world times its other operand */
    int64_t alternatives;   /* other forms (kind, b, c) through every point: 0 when exact */
    int64_t stake;          /* the most bytes any differs by at a world of 1..STAKE_MAX */
} world_form;

/* Fits y[i], the size at worlds[i] (n >= 2 distinct, each >= 1); gathered: y[i] is the size
 * divided by worlds[i], and every form is world times its own. Returns 0, or 1 when no form
 * passes through every point (a size <= 0 that is not constant included). */
int vary_world_fit(const int64_t *worlds, size_t n, const int64_t *y, bool gathered,
                   world_form *f);

/* The form's value at world; false on 64-bit overflow. */
bool vary_world_eval(const world_form *f, int64_t world, int64_t *out);

/* "16384", "2048*ceil_div(1000, world)", "2048*ceil_div(1000, world)*world"; gathered, with
 * "*world" after. */
void vary_world_text(const world_form *f, ml_str *out);

/* As snapshot_vary, with snaps[i] captured at worlds[i] (the same rank and lets): the schedule
 * is the first capture's document, `world:` its world, sizes the fitted forms, except that the
 * buffer an all_gather gathers into (a reduce_scatter scatters from) is world times its other
 * operand's form, so that the collective holds at every world; the header's
 * comment lists each capture's requested steady and peak and how many sizes fit more than one
 * form at the captured worlds (and the most bytes they may be off by elsewhere). */
int snapshot_worlds(json_t *const *snaps, const int64_t *worlds, size_t n_worlds,
                    const import_opts *o, char **yaml, size_t *len, import_stats *st,
                    bool *bad_input, char *err, size_t errlen);

#endif
