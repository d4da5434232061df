/* SPDX-License-Identifier: MIT */
/* export.c — a plan's replay through the caching allocator model as a memory snapshot
 * (export.h). */
#include "snapshot/export.h"
#include "base/util.h"
#include "predict/view_model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    const rank_plan *p;
    const plan_op *op;        /* the op being replayed: the frame of its events */
    json_t *trace;            /* device_traces[0] */
    json_t *frames_at;        /* "addr" -> the frames of the alloc that made the block there */
    uint64_t time_us;         /* the op index: memory_viz orders by it */
} exporter;

/* The schedule's step as the one frame of an event: filename, line, and what the step is. */
static json_t *step_frames(const exporter *x) {
    if (!x->op)
        return json_array();
    ml_mark m = plan_op_mark(x->op);
    char name[200];
    const char *what = plan_op_names[x->op->kind];
    if (x->op->kind == OP_ALLOC || x->op->kind == OP_FREE) {
        uint32_t buf = x->op->kind == OP_ALLOC ? x->op->u.alloc.buf : x->op->u.free.buf;
        snprintf(name, sizeof name, "%s '%s' (col %u)", what,
                 sched_sym_name(x->p->s, SYM_BUFFER, buf), m.col);
    } else {
        snprintf(name, sizeof name, "%s (col %u)", what, m.col);
    }
    return json_pack("[{s:s, s:i, s:s}]", "filename", x->p->s->file, "line", (int)m.line, "name",
                     name);
}

static void on_event(void *user, torchalloc_action action, uint64_t addr, uint64_t size,
                     uint32_t stream) {
    exporter *x = user;
    if (action == TORCHALLOC_EV_OOM)
        return;   /* the replay stops there with an error */
    json_t *frames = step_frames(x);
    if (action == TORCHALLOC_EV_ALLOC) {
        char key[32];
        snprintf(key, sizeof key, "%" PRIx64, addr);
        json_object_set(x->frames_at, key, frames);
    }
    json_array_append_new(x->trace,
                          json_pack("{s:s, s:I, s:I, s:i, s:I, s:o, s:s, s:s}", "action",
                                    torchalloc_action_name(action), "addr", (json_int_t)addr,
                                    "size", (json_int_t)size, "stream", (int)stream, "time_us",
                                    (json_int_t)x->time_us, "frames", frames, "compile_context",
                                    "N/A", "user_metadata", ""));
}

typedef struct {
    json_t *segments, *cur;
    json_t *frames_at;
} walk_state;

static int on_segment(void *user, const torchalloc_segment_info *s) {
    walk_state *w = user;
    w->cur = json_pack("{s:i, s:I, s:I, s:I, s:I, s:I, s:i, s:s, s:[ii], s:b, s:[], s:[]}",
                       "device", 0, "address", (json_int_t)s->addr, "total_size",
                       (json_int_t)s->size, "allocated_size", (json_int_t)s->allocated_size,
                       "active_size", (json_int_t)s->active_size, "requested_size",
                       (json_int_t)s->requested_size, "stream", (int)s->stream, "segment_type",
                       s->pool == TORCHALLOC_POOL_SMALL ? "small" : "large", "segment_pool_id",
                       0, 0, "is_expandable", s->expandable, "frames", "blocks");
    json_array_append_new(w->segments, w->cur);
    return 0;
}

static int on_block(void *user, const torchalloc_segment_info *s, const torchalloc_block_info *b) {
    walk_state *w = user;
    static const char *const states[] = {"inactive", "active_allocated", "active_pending_free"};
    char key[32];
    snprintf(key, sizeof key, "%" PRIx64, b->addr);
    json_t *known = b->state != TORCHALLOC_BLOCK_INACTIVE ? json_object_get(w->frames_at, key) : NULL;
    json_t *frames = known ? json_incref(known) : json_array();
    json_array_append_new(json_object_get(w->cur, "blocks"),
                          json_pack("{s:I, s:I, s:I, s:s, s:o}", "address", (json_int_t)b->addr,
                                    "size", (json_int_t)b->size, "requested_size",
                                    (json_int_t)b->requested, "state", states[b->state], "frames",
                                    frames));
    return 0;
}

json_t *snapshot_export(const rank_plan *p, char *err, size_t errlen) {
    ml_diags d;
    ml_diags_init(&d);
    void *st = pred_view_torch.open(p, &d);
    torchalloc *ta = st ? pred_torch_model(st) : NULL;
    exporter x = {.p = p, .trace = json_array(), .frames_at = json_object()};
    if (ta)
        torchalloc_set_hook(ta, on_event, &x);
    int rc = st ? 0 : -1;
    uint64_t live[VIEW_COUNT] = {0};
    for (size_t i = 0; i < p->n_ops && rc == 0; i++) {
        x.op = &p->ops[i];
        x.time_us = i;
        rc = pred_view_torch.apply(st, p, i, live, &d);   /* the torch view's own replay */
    }
    if (rc != 0) {
        const ml_diag *g = ml_diags_first_error(&d);
        if (g)
            ml_diag_format(g, err, errlen);
        else
            snprintf(err, errlen, "%s: error: the torch view could not replay the plan", p->s->file);
    }
    torchalloc_conf conf;
    torchalloc_conf_default(&conf, TORCHALLOC_V2_11);
    size_t at;
    char msg[64];
    if (rc == 0 && p->torch.conf)
        torchalloc_conf_parse(p->torch.conf, &conf, &at, msg, sizeof msg);   /* open parsed it */
    json_t *snap = NULL;
    if (rc == 0) {
        walk_state w = {.segments = json_array(), .frames_at = x.frames_at};
        torchalloc_walker wk = {on_segment, on_block, &w};
        torchalloc_walk(ta, &wk);
        snap = json_pack("{s:o, s:[o], s:{s:s, s:b}, s:[]}", "segments", w.segments,
                         "device_traces", x.trace, "allocator_settings",
                         "PYTORCH_CUDA_ALLOC_CONF", p->torch.conf ? p->torch.conf : "",
                         "expandable_segments", conf.expandable_segments, "external_annotations");
        x.trace = NULL;
    }
    json_decref(x.trace);
    json_decref(x.frames_at);
    if (st)
        pred_view_torch.close(st);
    ml_diags_free(&d);
    return snap;
}
