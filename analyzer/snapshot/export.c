/* SPDX-License-Identifier: MIT */
/* export.c — a plan's replay through the caching allocator model as a memory snapshot
 * (export.h). */
#include "snapshot/export.h"
#include "base/util.h"

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

json_t *snapshot_export(const rank_plan *p, const torchalloc_conf *conf, const char *conf_text,
                        uint64_t limit_bytes, char *err, size_t errlen) {
    torchalloc_conf dflt;
    if (!conf) {
        torchalloc_conf_default(&dflt, TORCHALLOC_V2_11);
        conf = &dflt;
    }
    torchalloc *ta = torchalloc_new(conf, limit_bytes);
    if (!ta)
        ml_out_of_memory(0);
    exporter x = {.p = p, .trace = json_array(), .frames_at = json_object()};
    torchalloc_set_hook(ta, on_event, &x);
    uint32_t n_bufs = p->s->syms[SYM_BUFFER].n, n_events = p->s->syms[SYM_EVENT].n;
    int64_t *block = ml_xcalloc(n_bufs ? n_bufs : 1, sizeof *block);
    uint32_t *ev_stream = ml_xcalloc(n_events ? n_events : 1, sizeof *ev_stream);
    uint64_t *ev_upto = ml_xcalloc(n_events ? n_events : 1, sizeof *ev_upto);
    for (uint32_t k = 0; k < n_bufs; k++)
        block[k] = -1;
    for (uint32_t k = 0; k < n_events; k++)
        ev_stream[k] = UINT32_MAX;
    int rc = 0;
    for (size_t i = 0; i < p->n_ops && rc == 0; i++) {
        const plan_op *op = &p->ops[i];
        x.op = op;
        x.time_us = i;
        switch (op->kind) {
        case OP_ALLOC: {
            uint32_t b = op->u.alloc.buf;
            if (block[b] >= 0)
                torchalloc_free(ta, block[b]);   /* lint reports an alloc of a live name */
            torchalloc_oom oom;
            block[b] = torchalloc_malloc(ta, op->u.alloc.bytes, SCHED_DEFAULT_STREAM, &oom);
            if (block[b] < 0) {
                ml_mark m = plan_op_mark(op);
                snprintf(err, errlen, "%s:%u:%u: the caching allocator model runs out of memory "
                         "at alloc '%s' (%" PRIu64 " bytes; reserved %" PRIu64 ", limit %" PRIu64
                         ")", p->s->file, m.line, m.col, sched_sym_name(p->s, SYM_BUFFER, b),
                         op->u.alloc.bytes, oom.reserved, oom.limit);
                rc = -1;
            }
            break;
        }
        case OP_FREE:
            if (block[op->u.free.buf] >= 0)
                torchalloc_free(ta, block[op->u.free.buf]);
            block[op->u.free.buf] = -1;
            break;
        case OP_COLL: torchalloc_stream_submit(ta, op->u.coll.stream); break;
        case OP_COPY: torchalloc_stream_submit(ta, op->u.copy.stream); break;
        case OP_SCALE: torchalloc_stream_submit(ta, op->u.scale.stream); break;
        case OP_COMPUTE: torchalloc_stream_submit(ta, op->u.compute.stream); break;
        case OP_INIT: torchalloc_stream_submit(ta, SCHED_DEFAULT_STREAM); break;
        case OP_RECORD:
            if (op->u.event.event < n_events) {
                ev_stream[op->u.event.event] = op->u.event.stream;
                ev_upto[op->u.event.event] = torchalloc_stream_submitted(ta, op->u.event.stream);
            }
            break;
        case OP_SYNC:
            if (op->u.sync.kind == SYNC_DEVICE)
                torchalloc_device_synchronize(ta);
            else if (op->u.sync.kind == SYNC_STREAM)
                torchalloc_stream_complete(ta, op->u.sync.stream);
            else if (op->u.sync.event < n_events && ev_stream[op->u.sync.event] != UINT32_MAX)
                torchalloc_stream_complete_upto(ta, ev_stream[op->u.sync.event],
                                                ev_upto[op->u.sync.event]);
            break;
        default:
            break;   /* release (no chunks in this allocator), wait, check, regions */
        }
    }
    json_t *snap = NULL;
    if (rc == 0) {
        walk_state w = {.segments = json_array(), .frames_at = x.frames_at};
        torchalloc_walker wk = {on_segment, on_block, &w};
        torchalloc_walk(ta, &wk);
        snap = json_pack("{s:o, s:[o], s:{s:s, s:b}, s:[]}", "segments", w.segments,
                         "device_traces", x.trace, "allocator_settings",
                         "PYTORCH_CUDA_ALLOC_CONF", conf_text ? conf_text : "",
                         "expandable_segments", conf->expandable_segments, "external_annotations");
        x.trace = NULL;
    }
    json_decref(x.trace);
    json_decref(x.frames_at);
    torchalloc_destroy(ta);
    free(block);
    free(ev_stream);
    free(ev_upto);
    return snap;
}
