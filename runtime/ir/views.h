/* SPDX-License-Identifier: MIT */
/* views.h — the memory views, one row each: what a view is called in a schedule's `expect:`, in
 * every report, in plot and trace; which series it has; whether its model gives bounds; whether a
 * backend measures it. The predictor's models (analyzer/predict/view_model.h) are the other half
 * of a row: how alloc, free, chunk release and the allocator ops move each series.
 *
 * A series is one number per rank per op (a view has one or two: torch has allocated and
 * reserved). Every per-view array of the analyzer and the reports is indexed by series
 * (ml_mem_view) and every loop over views walks ml_views[] and its series. Adding a view: one row
 * here, one row in the model table, one file for the model. */
#ifndef MEMLIFE_VIEWS_H
#define MEMLIFE_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The series, in report order. */
typedef enum {
    VIEW_REQUESTED,        /* the requests' sum (PyTorch's requested_bytes) */
    VIEW_DEVICE,           /* cudaMemGetInfo by the page model */
    VIEW_TORCH_ALLOCATED,  /* torch.cuda.memory_allocated(): the caching allocator's blocks */
    VIEW_TORCH_RESERVED,   /* torch.cuda.memory_reserved(): its segments */
    VIEW_COUNT
} ml_mem_view;

/* The views. */
typedef enum { MV_REQUESTED, MV_DEVICE, MV_TORCH, MV_COUNT } ml_view_id;

#define ML_VIEW_MAX_SERIES 2

typedef struct {
    const char *name;          /* "torch": expect key, JSON key, `plot --view` value */
    uint8_t n_series;
    ml_mem_view series[ML_VIEW_MAX_SERIES];
    bool bounded;              /* its model may give [lo, hi] instead of one value (device) */
    bool measured;             /* a backend measures it (run compares it) */
    bool optional;             /* predicted only where configured (a `torch:` key, --torch-*):
                                  reports show it only then, so other outputs stay as they were */
    const char *peak_prefix;   /* JSON/CSV "peak_step"/"peak_live" key prefix ("", "device_");
                                  NULL: the view reports its peaks inside its own object */
} ml_view_info;

typedef struct {
    const char *name;          /* "requested", "torch allocated": messages, expectation rows */
    const char *key;           /* key inside its view's mapping ("allocated"), NULL if the view
                                  has one series and its mapping is the series' */
    const char *csv;           /* CSV column stem: "requested", "torch_allocated" */
    const char *column;        /* table header stem: "requested", "torch alloc" */
    const char *measured_column; /* "measured req", "measured dev" */
    const char *counter;       /* trace counter: "requested bytes" */
    ml_view_id view;
} ml_series_info;

extern const ml_view_info ml_views[MV_COUNT];
extern const ml_series_info ml_series[VIEW_COUNT];
extern const char *const ml_mem_view_names[VIEW_COUNT];   /* ml_series[v].name */

/* The view named text[0..len), or -1. */
int ml_view_lookup(const char *text, size_t len);

#endif
