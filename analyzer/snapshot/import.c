/* SPDX-License-Identifier: MIT */
/* import.c — a memory snapshot as a schedule (import.h says what becomes what).
 *
 * Two passes. The first reads the device's trace and final segments, walks the trace back to the
 * state when recording began, and builds the step list (a compact array), counting requested
 * bytes as it goes; the second writes the document through libyaml's emitter, expectations first
 * (the loader wants them before the steps), so the numbers must be known before any step is
 * written.
 *
 * The state before recording, per segment (not expandable): PyTorch's allocator splits a free
 * block from its start, and best fit has only one candidate when one free block is in the pool.
 * So (A) every initial segment is created by one placeholder of its size (two of 1 MiB for a
 * small 2 MiB segment: a request of 1 MiB or less goes to the small pool), in descending address
 * order, each at its recorded address (`torch: {addresses:}` gives the model the snapshot's);
 * (B) one segment at a time, its placeholders are freed and its blocks and the gaps between them
 * are allocated in address order, each landing at its recorded offset; (C) the gaps are freed.
 * A live block longer than its rounded request (the allocator did not split off a tail of 1 MiB
 * or less) is first held by a placeholder of its full size and re-allocated at its requested size
 * in (C), when its hole is the pool's only free block and the same no-split rule gives it the
 * tail again. For a moment every initial segment is held whole, so the requested peak counts it
 * (import.h). Expandable segments grow by mapping pages, which this cannot tile: their blocks are
 * allocated in address order and the import says the prelude is approximate. */
#include "snapshot/import.h"
#include "base/util.h"
#include "ir/coll.h"
#include "snapshot/import_comms.h"
#include "snapshot/limit.h"
#include "torch/torchalloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define MIB ((int64_t)1 << 20)
#define SMALL_SEGMENT (2 * MIB)   /* kSmallBuffer: every small-pool segment */
#define SMALL_REQUEST MIB         /* kSmallSize: requests up to this go to the small pool */
#define NAME_MAX_BASE 100         /* schedule names are at most 128 bytes */
#define CAPTURE_MAX_DEPTH 32      /* a capture's regions nest at most this deep */

/* ---- trace events ------------------------------------------------------------------------------ */

typedef enum { A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_ALLOC, A_SEG_FREE, A_SEG_MAP, A_SEG_UNMAP,
               A_OOM, A_OTHER, A_MEMLIFE } act;

/* Every action PyTorch 2.x writes (torch/csrc/cuda/Module.cpp, action_to_str). "snapshot" and
 * "user_defined" mark a moment and change no block; "oom" reports a failed malloc, whose
 * releases are segment_free events of their own and whose request was never allocated (it has
 * `device_free`, not `addr`). Any other name is refused: what it does to the blocks is unknown,
 * and dropping it could change every number after it. */
static const struct {
    const char *name;
    act a;
} ACTIONS[] = {
    {"alloc", A_ALLOC},           {"free_requested", A_FREE_REQ}, {"free_completed", A_FREE_DONE},
    {"segment_alloc", A_SEG_ALLOC}, {"segment_free", A_SEG_FREE}, {"segment_map", A_SEG_MAP},
    {"segment_unmap", A_SEG_UNMAP}, {"oom", A_OOM},                {"snapshot", A_OTHER},
    {"user_defined", A_OTHER},      {"memlife_step", A_MEMLIFE},
};

typedef struct {
    act a;
    uint64_t addr;
    int64_t size;
    uint32_t stream;
    int64_t time_us;        /* when PyTorch recorded it (its clock); -1: the entry has none */
    const json_t *frames;   /* A_MEMLIFE: the entry's "step" */
    const char *name;       /* an alloc's memlife_name (a capture's), or NULL */
    const char *base;       /* an alloc taken by the digest: its frames' name base ("": none) */
} tev;

typedef struct {
    uint64_t addr;
    int64_t size, requested;
    uint32_t stream;
    const json_t *frames;
    const char *pending;   /* a final block freed but waiting for a stream: where, for errors */
} blk;

typedef struct {
    uint64_t addr;
    int64_t size;
    uint32_t stream;
    bool small, expandable;
} seg;

/* ---- an address -> index map (open addressing, backward-shift deletion) ------------------------- */

typedef struct {
    uint64_t *key;
    uint32_t *val;
    bool *used;
    size_t cap, n;
} amap;

static size_t amap_slot(uint64_t k, size_t cap) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static void amap_put(amap *m, uint64_t k, uint32_t v);

static void amap_grow(amap *m) {
    amap old = *m;
    m->cap = old.cap ? old.cap * 2 : 1024;
    m->n = 0;
    m->key = ml_xcalloc(m->cap, sizeof *m->key);
    m->val = ml_xcalloc(m->cap, sizeof *m->val);
    m->used = ml_xcalloc(m->cap, sizeof *m->used);
    for (size_t i = 0; i < old.cap; i++)
        if (old.used[i])
            amap_put(m, old.key[i], old.val[i]);
    free(old.key);
    free(old.val);
    free(old.used);
}

static long amap_find(const amap *m, uint64_t k) {
    if (!m->cap)
        return -1;
    for (size_t i = amap_slot(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return -1;
        if (m->key[i] == k)
            return (long)i;
    }
}

static void amap_put(amap *m, uint64_t k, uint32_t v) {
    long at = amap_find(m, k);
    if (at >= 0) {
        m->val[at] = v;
        return;
    }
    if ((m->n + 1) * 2 > m->cap)
        amap_grow(m);
    size_t i = amap_slot(k, m->cap);
    while (m->used[i])
        i = (i + 1) & (m->cap - 1);
    m->used[i] = true;
    m->key[i] = k;
    m->val[i] = v;
    m->n++;
}

/* Removes k; returns its value, or UINT32_MAX when absent. */
static uint32_t amap_take(amap *m, uint64_t k) {
    long at = amap_find(m, k);
    if (at < 0)
        return UINT32_MAX;
    uint32_t v = m->val[at];
    size_t hole = (size_t)at, mask = m->cap - 1;
    m->used[hole] = false;
    m->n--;
    for (size_t i = (hole + 1) & mask; m->used[i]; i = (i + 1) & mask) {
        size_t home = amap_slot(m->key[i], m->cap);
        /* the entry at i may move into the hole iff its home is not cyclically in (hole, i] */
        bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (stays)
            continue;
        m->key[hole] = m->key[i];
        m->val[hole] = m->val[i];
        m->used[hole] = true;
        m->used[i] = false;
        hole = i;
    }
    return v;
}

static void amap_free(amap *m) {
    free(m->key);
    free(m->val);
    free(m->used);
}

/* ---- steps ------------------------------------------------------------------------------------- */

typedef enum { S_ALLOC, S_FREE, S_RECORD_STREAM, S_COMPUTE, S_RECORD, S_SYNC_EVENT,
               S_EMPTY_CACHE, S_COLLECTIVE, S_REGION_BEGIN, S_REGION_END, S_WAIT, S_SYNC_STREAM,
               S_SYNC_DEVICE } step_kind;

typedef struct {
    step_kind kind;
    uint32_t buf, stream, event;   /* S_COLLECTIVE: event indexes colls; S_REGION_*: names */
    uint32_t at;   /* the trace entry it stands for; UINT32_MAX: the prelude */
} step;

/* A captured collective (capture.h): its operands are views of live buffers, in bytes. */
typedef struct {
    ml_coll coll;       /* a row of runtime/ir/coll.h's table */
    const char *op;     /* reduction, or NULL */
    int comm;           /* import_comms' communicator; 0: the world */
    int64_t root;       /* a rooted collective's root, its rank within the group */
    uint32_t buf[2];    /* send, recv */
    int64_t offset[2], bytes[2];
} capture_coll;

typedef struct {
    const char *name;
    int64_t bytes;
    uint32_t stream;
} buffer;

typedef struct {
    const char *name;   /* NULL: empty slot */
    unsigned next;      /* the next suffix to try for this base */
} name_entry;

typedef struct {
    const import_opts *o;
    char *err;
    size_t errlen;
    ml_arena *arena;
    ml_vec steps;     /* of step */
    ml_vec bufs;      /* of buffer */
    /* unique names: open addressing over arena strings */
    name_entry *names;
    size_t names_cap, names_n;
    /* raw cudaStream_t values, [0] = 0 (the default stream) */
    ml_vec streams;   /* of int64_t */
    uint32_t recorded_stream;   /* UINT32_MAX until a deferred free needs it */
    uint32_t n_events;      /* events of the schedule: deferred frees' and a capture's */
    uint32_t n_deferred;    /* frees that waited for another stream */
    int64_t requested, requested_peak;
    bool overflow;
    size_t ooms;        /* oom events of the trace */
    bool no_settings;   /* the snapshot has no allocator_settings */
    int n_devices;      /* of device_traces */
    torchalloc_conf conf;   /* allocator_settings' PYTORCH_CUDA_ALLOC_CONF, parsed */
    uint32_t cur_at;        /* the trace entry being turned into steps; UINT32_MAX: prelude */
    const tev *ev;          /* the trace's entries, for their times (write_step) */
    ml_vec facts;           /* of limit_fact: every segment_alloc, for the constant's interval */
    size_t n_partial;       /* segment_free runs that release fewer than all cached segments */
    size_t first_partial;   /* the first one's trace entry */
    /* the constant written into torch: when there are partial runs (limit.h) */
    bool is_limit;          /* limit (garbage_collection_threshold set), else capacity */
    uint64_t constant;
    limit_interval iv;
    ml_vec seg_addrs;       /* of uint64_t: the cudaMalloc segments' addresses, in creation order */
    /* a capture's (memlife_capture at the top: capture.h) */
    const json_t *capture;  /* NULL: a plain snapshot */
    int64_t world, rank;
    bool on_fake;           /* recorded on the virtual device: no segments, no truth of the torch view */
    ml_vec colls;           /* of capture_coll */
    import_comms *comms;    /* the process groups' communicators (import_comms.h) */
    ml_vec regions;         /* of const char *: region names */
    int region_depth;       /* regions begun and not ended */
    amap capture_events;    /* the program's event ids -> schedule events (f<k>) */
} importer;

static int fail(importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(importer *im, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->err, im->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static uint64_t text_hash(const char *t) {
    uint64_t h = 1469598103934665603ull;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ull;
    return h;
}

/* The slot of name s in the table, or of the empty slot where it would go. */
static size_t name_slot(const importer *im, const char *s) {
    size_t i = text_hash(s) & (im->names_cap - 1);
    while (im->names[i].name && strcmp(im->names[i].name, s))
        i = (i + 1) & (im->names_cap - 1);
    return i;
}

static name_entry *name_add(importer *im, const char *s) {
    if ((im->names_n + 1) * 2 > im->names_cap) {
        size_t old_cap = im->names_cap;
        name_entry *old = im->names;
        im->names_cap = old_cap ? old_cap * 2 : 4096;
        im->names = ml_xcalloc(im->names_cap, sizeof *im->names);
        for (size_t k = 0; k < old_cap; k++)
            if (old[k].name)
                im->names[name_slot(im, old[k].name)] = old[k];
        free(old);
    }
    name_entry *e = &im->names[name_slot(im, s)];
    e->name = s;
    e->next = 2;
    im->names_n++;
    return e;
}

/* base, else base_2, base_3, ...: every buffer of the schedule has a name of its own. Each base
 * remembers the next suffix to try, so a line allocating a million times costs no search. */
static const char *unique(importer *im, const char *base) {
    name_entry *e = im->names_cap ? &im->names[name_slot(im, base)] : NULL;
    if (!e || !e->name)
        return name_add(im, ml_arena_strndup(im->arena, base, strlen(base)))->name;
    char cand[160];
    for (;;) {
        snprintf(cand, sizeof cand, "%s_%u", base, e->next++);
        if (!im->names[name_slot(im, cand)].name)
            break;
    }
    const char *s = ml_arena_strndup(im->arena, cand, strlen(cand));
    name_add(im, s);
    return s;
}

/* PyTorch's own frames (torch/, C++ sources) and Python's standard library are not the user's
 * code; the first frame that is names the buffer. */
static bool user_frame(const char *fn) {
    static const char *const cxx[] = {".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp"};
    if (!fn || !*fn || fn[0] == '<' || strstr(fn, "??"))
        return false;
    if (strstr(fn, "/torch/") || !strncmp(fn, "torch/", 6))
        return false;
    if (strstr(fn, "/lib/python") && !strstr(fn, "-packages/"))
        return false;
    size_t n = strlen(fn);
    for (size_t k = 0; k < ML_ARRAY_LEN(cxx); k++) {
        size_t m = strlen(cxx[k]);
        if (n > m && !strcmp(fn + n - m, cxx[k]))
            return false;
    }
    return true;
}

/* A capture's name for the block (module path and role, capture.h), kept to the characters
 * of schedule names; "" when it has none. */
static void given_name(const char *given, char *base, size_t cap) {
    size_t n = 0;
    base[0] = 0;
    if (!given)
        return;
    if (!((given[0] >= 'a' && given[0] <= 'z') || (given[0] >= 'A' && given[0] <= 'Z')))
        base[n++] = 't';
    for (; *given && n < NAME_MAX_BASE && n + 1 < cap; given++) {
        char c = *given;
        bool okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-' || c == '/';
        base[n++] = okc ? c : '_';
    }
    base[n] = 0;
}

/* "train.py-42" from the first user frame (schedule names allow letters, digits, _ - . /), or
 * "" when no frame is the user's. */
static void frames_base(const json_t *frames, char *base, size_t cap) {
    base[0] = 0;
    if (json_is_array(frames)) {
        size_t k;
        const json_t *f;
        json_array_foreach(frames, k, f) {
            const char *fn = json_string_value(json_object_get(f, "filename"));
            if (!user_frame(fn))
                continue;
            const char *b = strrchr(fn, '/');
            b = b ? b + 1 : fn;
            size_t n = 0;
            if (!((b[0] >= 'a' && b[0] <= 'z') || (b[0] >= 'A' && b[0] <= 'Z')))
                base[n++] = 'f';   /* a name that YAML could read as a number stays a name */
            for (; *b && n < NAME_MAX_BASE; b++) {
                char c = *b;
                bool okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
                base[n++] = okc ? c : '_';
            }
            base[n] = 0;
            json_t *line = json_object_get(f, "line");
            if (json_is_integer(line))
                snprintf(base + n, cap - n, "-%" JSON_INTEGER_FORMAT, json_integer_value(line));
            break;
        }
    }
}

/* The capture's name, else the frames' base (fbase, when the digest worked it out already),
 * else "a<hex address>". */
static const char *buffer_name(importer *im, const json_t *frames, const char *fbase,
                               uint64_t addr, const char *given) {
    char base[NAME_MAX_BASE + 32];
    given_name(given, base, sizeof base);
    if (!base[0] && im->o->names == IMPORT_NAMES_FRAMES) {
        if (fbase)
            snprintf(base, sizeof base, "%s", fbase);
        else
            frames_base(frames, base, sizeof base);
    }
    if (!base[0])
        snprintf(base, sizeof base, "a%" PRIx64, addr);
    return unique(im, base);
}

static uint32_t new_buffer(importer *im, const char *name, int64_t bytes, uint32_t stream) {
    buffer *b = ml_vec_push(&im->bufs);
    b->name = name;
    b->bytes = bytes;
    b->stream = stream;
    return (uint32_t)(im->bufs.n - 1);
}

static void push(importer *im, step_kind kind, uint32_t buf, uint32_t stream, uint32_t event) {
    step *s = ml_vec_push(&im->steps);
    s->kind = kind;
    s->buf = buf;
    s->stream = stream;
    s->event = event;
    s->at = im->cur_at;
    if (kind == S_ALLOC) {
        const buffer *b = &ML_VEC_AT(&im->bufs, buffer, buf);
        if (__builtin_add_overflow(im->requested, b->bytes, &im->requested))
            im->overflow = true;
        if (im->requested > im->requested_peak)
            im->requested_peak = im->requested;
    } else if (kind == S_FREE) {
        im->requested -= ML_VEC_AT(&im->bufs, buffer, buf).bytes;
    }
}

static uint32_t alloc_step(importer *im, const char *name, int64_t bytes, uint32_t stream) {
    uint32_t b = new_buffer(im, name, bytes, stream);
    push(im, S_ALLOC, b, 0, 0);
    return b;
}

/* ---- reading the snapshot ---------------------------------------------------------------------- */

static uint32_t stream_index(importer *im, int64_t raw) {
    for (size_t k = 0; k < im->streams.n; k++)
        if (ML_VEC_AT(&im->streams, int64_t, k) == raw)
            return (uint32_t)k;
    *(int64_t *)ml_vec_push(&im->streams) = raw;
    return (uint32_t)(im->streams.n - 1);
}

/* A non-negative integer field; the pickle reader maps Python ints to json integers. */
static int get_u(importer *im, const json_t *obj, const char *key, const char *where, int64_t dflt,
                 int64_t *v) {
    const json_t *j = json_object_get(obj, key);
    if (!j && dflt >= 0) {
        *v = dflt;
        return 0;
    }
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return fail(im, "%s: '%s' is %s", where, key,
                    j ? "not a non-negative integer" : "missing");
    *v = json_integer_value(j);
    return 0;
}

static int get_stream(importer *im, const json_t *obj, const char *where, uint32_t *s) {
    const json_t *j = json_object_get(obj, "stream");
    if (j && !json_is_integer(j))
        return fail(im, "%s: 'stream' is not an integer", where);
    *s = stream_index(im, j ? json_integer_value(j) : 0);
    return 0;
}

/* ---- the digest: trace entries taken as the pickle is read (import.h) ------------------------- */

/* An entry the digest took: what read_trace reads from it, with the stream still raw so that
 * streams are numbered in trace order there. */
typedef struct {
    uint64_t addr;
    int64_t size, time_us, stream;
    const char *base, *name;   /* the digest's copies; base only for allocs */
    uint8_t a;                 /* act; A_OTHER: nothing taken at this index */
} dtev;

typedef struct {
    const json_t *list;
    ml_vec ev;   /* of dtev, by index in the list */
} dlist;

struct import_digest {
    ml_vec lists;   /* of dlist */
    ml_arena *arena;
};

import_digest *import_digest_new(void) {
    import_digest *d = ml_xcalloc(1, sizeof *d);
    ml_vec_init(&d->lists, sizeof(dlist));
    d->arena = ml_arena_new();
    return d;
}

void import_digest_free(import_digest *d) {
    if (!d)
        return;
    for (size_t k = 0; k < d->lists.n; k++)
        ml_vec_free(&ML_VEC_AT(&d->lists, dlist, k).ev);
    ml_vec_free(&d->lists);
    ml_arena_free(d->arena);
    free(d);
}

/* An optional field: absent, or an integer (>= 0 when nonneg). */
static bool opt_int(const json_t *e, const char *key, bool nonneg, int64_t dflt, int64_t *v) {
    const json_t *j = json_object_get(e, key);
    *v = j ? json_integer_value(j) : dflt;
    return !j || (json_is_integer(j) && (!nonneg || *v >= 0));
}

/* A block or segment event that read_trace would take without complaint: a dict with such an
 * action, addr and size >= 0, and stream, time_us, frames and memlife_name absent or as
 * read_trace wants them. Anything else stays in the tree for read_trace to read or refuse. */
static int digest_item(void *user, const json_t *list, size_t index, const json_t *e) {
    import_digest *d = user;
    const char *action = json_string_value(json_object_get(e, "action"));
    if (!action)
        return 0;
    size_t k = 0;
    while (k < ML_ARRAY_LEN(ACTIONS) && strcmp(action, ACTIONS[k].name))
        k++;
    if (k == ML_ARRAY_LEN(ACTIONS) || ACTIONS[k].a == A_OTHER || ACTIONS[k].a == A_OOM ||
        ACTIONS[k].a == A_MEMLIFE)
        return 0;
    dtev t = {.a = (uint8_t)ACTIONS[k].a};
    int64_t addr;
    const json_t *frames = json_object_get(e, "frames"), *name = json_object_get(e, "memlife_name");
    if (!opt_int(e, "addr", true, -1, &addr) || addr < 0 || !opt_int(e, "size", true, -1, &t.size) ||
        t.size < 0 || !opt_int(e, "time_us", true, -1, &t.time_us) ||
        !opt_int(e, "stream", false, 0, &t.stream) || (name && !json_is_string(name)))
        return 0;
    t.addr = (uint64_t)addr;
    if (name)
        t.name = ml_arena_strndup(d->arena, json_string_value(name), json_string_length(name));
    if (t.a == A_ALLOC) {
        char base[NAME_MAX_BASE + 32];
        frames_base(frames, base, sizeof base);
        t.base = ml_arena_strndup(d->arena, base, strlen(base));
    }
    dlist *l = d->lists.n ? &ML_VEC_AT(&d->lists, dlist, d->lists.n - 1) : NULL;
    if (!l || l->list != list) {
        l = ml_vec_push(&d->lists);
        l->list = list;
        ml_vec_init(&l->ev, sizeof(dtev));
    }
    while (l->ev.n < index)   /* the entries before it that stayed in the tree */
        ((dtev *)ml_vec_push(&l->ev))->a = A_OTHER;
    *(dtev *)ml_vec_push(&l->ev) = t;
    return 1;
}

pickle_hooks import_digest_hooks(import_digest *d) { return (pickle_hooks){d, digest_item}; }

/* The digest's entries of this list, or NULL. The last run of entries under its address: a list
 * freed while reading (POP) may have had the address before. A pickle that fills two lists by
 * turns leaves some taken entries in an earlier run; read_trace then meets their None and
 * refuses it, as it refuses any entry that is not a dict. */
static const ml_vec *digested(const importer *im, const json_t *trace) {
    const import_digest *d = im->o->digest;
    for (size_t k = d ? d->lists.n : 0; k-- > 0;)
        if (ML_VEC_AT(&d->lists, dlist, k).list == trace)
            return &ML_VEC_AT(&d->lists, dlist, k).ev;
    return NULL;
}

static int read_trace(importer *im, const json_t *trace, int dev, tev **out, size_t *n_out) {
    size_t n = json_array_size(trace);
    tev *ev = ml_xcalloc(n ? n : 1, sizeof *ev);
    char where[96];
    const ml_vec *dg = digested(im, trace);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(trace, i);
        if (dg && i < dg->n && ML_VEC_AT(dg, dtev, i).a != A_OTHER) {
            const dtev *t = &ML_VEC_AT(dg, dtev, i);
            ev[i] = (tev){(act)t->a, t->addr, t->size, stream_index(im, t->stream), t->time_us,
                          NULL, t->name, t->base};
            continue;
        }
        snprintf(where, sizeof where, "device_traces[%d][%zu]", dev, i);
        if (!json_is_object(e)) {
            free(ev);
            return fail(im, "%s: an event is a dict", where);
        }
        const char *a = json_string_value(json_object_get(e, "action"));
        if (!a) {
            free(ev);
            return fail(im, "%s: 'action' is missing or not a string", where);
        }
        size_t k = 0;
        while (k < ML_ARRAY_LEN(ACTIONS) && strcmp(a, ACTIONS[k].name))
            k++;
        if (k == ML_ARRAY_LEN(ACTIONS)) {
            free(ev);
            return fail(im, "%s: action '%.40s' is not one PyTorch 2.x writes (alloc, "
                        "free_requested, free_completed, segment_alloc, segment_free, segment_map, "
                        "segment_unmap, oom, snapshot, user_defined): what it does to the blocks "
                        "is unknown", where, a);
        }
        ev[i].a = ACTIONS[k].a;
        if (ev[i].a == A_MEMLIFE) {
            ev[i].frames = json_object_get(e, "step");
            ev[i].time_us = -1;
            if (!im->capture || !json_is_object(ev[i].frames)) {
                free(ev);
                return fail(im, "%s: a memlife_step %s", where, im->capture
                            ? "without its 'step' dict" : "outside a capture (no memlife_capture)");
            }
            continue;
        }
        /* time_us: every entry PyTorch 2.x writes has it; the schedule keeps it for the trace */
        if (get_u(im, e, "time_us", where, INT64_MAX, &ev[i].time_us)) {
            free(ev);
            return -1;
        }
        if (ev[i].time_us == INT64_MAX)
            ev[i].time_us = -1;
        if (ev[i].a == A_OTHER || ev[i].a == A_OOM) {
            im->ooms += ev[i].a == A_OOM;
            continue;
        }
        int64_t addr;
        if (get_u(im, e, "addr", where, -1, &addr) || get_u(im, e, "size", where, -1, &ev[i].size) ||
            get_stream(im, e, where, &ev[i].stream)) {
            free(ev);
            return -1;
        }
        ev[i].addr = (uint64_t)addr;
        ev[i].frames = json_object_get(e, "frames");
        ev[i].name = json_string_value(json_object_get(e, "memlife_name"));
    }
    *out = ev;
    *n_out = n;
    return 0;
}

/* The device's final segments, and their blocks that are still allocated (pending frees too:
 * memory_viz counts a block as existing until free_completed). */
static int read_segments(importer *im, const json_t *segs, int dev, ml_vec *out_segs,
                         ml_vec *live, int64_t *reserved, int64_t *allocated) {
    char where[96];
    size_t k;
    const json_t *s;
    *reserved = *allocated = 0;
    json_array_foreach(segs, k, s) {
        snprintf(where, sizeof where, "segments[%zu]", k);
        if (!json_is_object(s))
            return fail(im, "%s: a segment is a dict", where);
        int64_t device, addr, size;
        /* PyTorch writes every segment's device; without it, only a one-device snapshot says
         * whose segment it is */
        if (get_u(im, s, "device", where, im->n_devices == 1 ? 0 : -1, &device))
            return -1;
        if (device != dev)
            continue;
        seg *g = ml_vec_push(out_segs);
        if (get_u(im, s, "address", where, -1, &addr) ||
            get_u(im, s, "total_size", where, -1, &size) || get_stream(im, s, where, &g->stream))
            return -1;
        g->addr = (uint64_t)addr;
        g->size = size;
        const json_t *tj = json_object_get(s, "segment_type");
        const char *type = json_string_value(tj);
        if (tj && (!type || (strcmp(type, "small") && strcmp(type, "large"))))
            return fail(im, "%s: 'segment_type' is not 'small' or 'large'", where);
        g->small = type ? !strcmp(type, "small") : size == SMALL_SEGMENT;
        g->expandable = json_is_true(json_object_get(s, "is_expandable"));
        /* owner_private_pool_id: (0, 0) is the allocator's own pools; another belongs to a CUDA
         * graph or a torch.cuda.MemPool, whose blocks best fit never offers to other requests */
        const json_t *pool = json_object_get(s, "segment_pool_id");
        if (pool) {
            const json_t *p0 = json_array_get(pool, 0), *p1 = json_array_get(pool, 1);
            if (json_array_size(pool) != 2 || !json_is_integer(p0) || !json_is_integer(p1))
                return fail(im, "%s: 'segment_pool_id' is not a pair of integers", where);
            if (json_integer_value(p0) || json_integer_value(p1))
                return fail(im, "%s: in the private pool (%" JSON_INTEGER_FORMAT ", %"
                            JSON_INTEGER_FORMAT ") of a CUDA graph or torch.cuda.MemPool, which "
                            "the torch view does not model", where, json_integer_value(p0),
                            json_integer_value(p1));
        }
        if (__builtin_add_overflow(*reserved, size, reserved))
            return fail(im, "%s: the segments' sizes overflow 64 bits", where);
        const json_t *blocks = json_object_get(s, "blocks");
        if (blocks && !json_is_array(blocks))
            return fail(im, "%s: 'blocks' is not a list", where);
        size_t j;
        const json_t *b;
        json_array_foreach(blocks, j, b) {
            char bw[128];
            snprintf(bw, sizeof bw, "segments[%zu].blocks[%zu]", k, j);
            if (!json_is_object(b))
                return fail(im, "%s: a block is a dict", bw);
            const char *state = json_string_value(json_object_get(b, "state"));
            if (!state)
                return fail(im, "%s: 'state' is missing or not a string", bw);
            if (!strcmp(state, "inactive"))
                continue;
            bool pending = !strcmp(state, "active_pending_free");
            if (!pending && strcmp(state, "active_allocated"))
                return fail(im, "%s: state '%.40s' is not active_allocated, active_pending_free "
                            "or inactive", bw, state);
            blk *x = ml_vec_push(live);
            x->pending = pending ? ml_arena_strndup(im->arena, bw, strlen(bw)) : NULL;
            int64_t baddr;
            if (get_u(im, b, "address", bw, -1, &baddr) || get_u(im, b, "size", bw, -1, &x->size) ||
                get_u(im, b, "requested_size", bw, x->size, &x->requested))
                return -1;
            x->addr = (uint64_t)baddr;
            x->stream = g->stream;
            x->frames = json_object_get(b, "frames");
            if (!strcmp(state, "active_allocated") &&
                __builtin_add_overflow(*allocated, x->size, allocated))
                return fail(im, "%s: the blocks' sizes overflow 64 bits", bw);
        }
    }
    return 0;
}

/* A final block that waits for a stream (active_pending_free) must have its free_requested in the
 * trace, the last event at its address: else it was freed before recording began, and the
 * rebuilt state would hold it allocated (memory_allocated counts it; PyTorch's does not). */
static int check_pending(importer *im, const tev *ev, size_t n, const ml_vec *live) {
    amap last = {0};
    for (size_t i = 0; i < n; i++)
        if (ev[i].a == A_ALLOC || ev[i].a == A_FREE_REQ || ev[i].a == A_FREE_DONE)
            amap_put(&last, ev[i].addr, (uint32_t)i);
    int rc = 0;
    for (size_t k = 0; k < live->n && !rc; k++) {
        const blk *x = &ML_VEC_AT(live, blk, k);
        if (!x->pending)
            continue;
        long at = amap_find(&last, x->addr);
        if (at < 0 || ev[last.val[at]].a != A_FREE_REQ)
            rc = fail(im, "%s: freed and waiting for a stream, but its free_requested is not the "
                      "trace's last event at 0x%" PRIx64 " (freed before recording began?): the "
                      "rebuilt state would count it allocated", x->pending, x->addr);
    }
    amap_free(&last);
    return rc;
}

/* allocator_settings (Module.cpp): PYTORCH_CUDA_ALLOC_CONF is the last configuration string
 * parsed (the environment's, or the last torch.cuda.memory._set_allocator_settings), the other
 * keys the allocator's state when the snapshot was taken. The schedule's torch view runs the
 * string, so it must parse and agree with that state and with the segments; else the settings
 * changed while the program ran, at a point the snapshot does not say. */
static int check_settings(importer *im, const json_t *snap, const ml_vec *segs) {
    const json_t *set = json_object_get(snap, "allocator_settings");
    im->no_settings = !set;   /* before PyTorch 2.1: the defaults are assumed, and said */
    if (set && !json_is_object(set))
        return fail(im, "allocator_settings: not a dict");
    const json_t *cj = json_object_get(set, "PYTORCH_CUDA_ALLOC_CONF");
    if (cj && !json_is_string(cj))
        return fail(im, "allocator_settings: 'PYTORCH_CUDA_ALLOC_CONF' is not a string");
    const char *text = cj ? json_string_value(cj) : "";
    torchalloc_conf c;
    size_t at = 0;
    char msg[200];
    if (torchalloc_conf_parse(text, &c, &at, msg, sizeof msg))
        return fail(im, "allocator_settings: PYTORCH_CUDA_ALLOC_CONF '%.80s', byte %zu: %s", text,
                    at, msg);
    im->conf = c;
    const json_t *ex = json_object_get(set, "expandable_segments");
    if (ex && (!json_is_boolean(ex) || json_is_true(ex) != (c.expandable_segments != 0)))
        return fail(im, "allocator_settings: expandable_segments is %s, but "
                    "PYTORCH_CUDA_ALLOC_CONF '%.80s' gives %s (the settings changed while the "
                    "program ran?)", json_is_boolean(ex) ? (json_is_true(ex) ? "True" : "False")
                    : "not a bool", text, c.expandable_segments ? "True" : "False");
    /* max_split_size: int64_t of the size_t, so "unlimited" (SIZE_MAX) reads -1 */
    const json_t *ms = json_object_get(set, "max_split_size");
    if (ms) {
        json_int_t v = json_integer_value(ms);
        bool same = json_is_integer(ms) && (c.max_split_size == TORCHALLOC_UNLIMITED
                                                ? v == -1 : v == (json_int_t)c.max_split_size);
        if (!same)
            return fail(im, "allocator_settings: max_split_size is %" JSON_INTEGER_FORMAT ", but "
                        "PYTORCH_CUDA_ALLOC_CONF '%.80s' gives %" PRId64 " (the settings changed "
                        "while the program ran?)", v, text, c.max_split_size == TORCHALLOC_UNLIMITED
                        ? (int64_t)-1 : (int64_t)c.max_split_size);
    }
    const json_t *gc = json_object_get(set, "garbage_collection_threshold");
    if (gc && (!json_is_number(gc) || json_number_value(gc) != c.garbage_collection_threshold))
        return fail(im, "allocator_settings: garbage_collection_threshold is %g, but "
                    "PYTORCH_CUDA_ALLOC_CONF '%.80s' gives %g (the settings changed while the "
                    "program ran?)", json_number_value(gc), text, c.garbage_collection_threshold);
    /* roundup_power2_divisions: {"1": d, "2": d, "4": d, ...}, keyed by the interval's lower
     * bound in MiB; 0 and 1 both mean plain 512-byte rounding */
    const json_t *rd = json_object_get(set, "roundup_power2_divisions");
    if (rd && !json_is_object(rd))
        return fail(im, "allocator_settings: 'roundup_power2_divisions' is not a dict");
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)rd, key, val) {
        char *end;
        unsigned long long mib = strtoull(key, &end, 10);
        int k = 0;
        while (k < TORCHALLOC_NDIV && (1ull << k) != mib)
            k++;
        if (*end || k == TORCHALLOC_NDIV || !json_is_integer(val))
            return fail(im, "allocator_settings: roundup_power2_divisions['%.20s'] is not an "
                        "interval (1, 2, 4, ... 32768 MiB) with an integer", key);
        json_int_t d = json_integer_value(val);
        uint64_t want = c.roundup_power2_divisions[k];
        if ((d > 1 || want > 1) && (uint64_t)d != want)
            return fail(im, "allocator_settings: roundup_power2_divisions['%s'] is %"
                        JSON_INTEGER_FORMAT ", but PYTORCH_CUDA_ALLOC_CONF '%.80s' gives %" PRIu64
                        " (the settings changed while the program ran?)", key, d, text, want);
    }
    for (size_t k = 0; k < segs->n; k++) {
        const seg *g = &ML_VEC_AT(segs, seg, k);
        if (g->expandable != (c.expandable_segments != 0) && !set)
            return fail(im, "segments: the segment at 0x%" PRIx64 " is expandable, but the "
                        "snapshot has no allocator_settings to say so", g->addr);
        if (g->expandable != (c.expandable_segments != 0))
            return fail(im, "segments: the segment at 0x%" PRIx64 " is %s, but "
                        "PYTORCH_CUDA_ALLOC_CONF '%.80s' makes %s ones (the settings changed "
                        "while the program ran?)", g->addr, g->expandable ? "expandable" :
                        "not expandable", text, c.expandable_segments ? "expandable" : "fixed");
    }
    return 0;
}

/* ---- the state before recording ---------------------------------------------------------------- */

static int cmp_seg_desc(const void *a, const void *b) {
    uint64_t x = ((const seg *)a)->addr, y = ((const seg *)b)->addr;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int cmp_blk_addr(const void *a, const void *b) {
    uint64_t x = ((const blk *)a)->addr, y = ((const blk *)b)->addr;
    return x < y ? -1 : x > y ? 1 : 0;
}

static int64_t round512(int64_t n) { return (n + 511) / 512 * 512; }

typedef struct {
    int64_t size;
    long blk;       /* index into the initial blocks, -1 for a gap */
} piece;

/* The pieces of segment g in address order: its blocks and the gaps between them. In the large
 * pool a gap of 1 MiB or less cannot be a block of its own (the allocator splits only when more
 * than that remains), so it is the tail of the block before it. */
static size_t segment_pieces(const seg *g, const blk *b, size_t nb, piece *p) {
    size_t n = 0;
    uint64_t cur = g->addr, end = g->addr + (uint64_t)g->size;
    for (size_t k = 0; k <= nb; k++) {
        uint64_t next = k < nb ? b[k].addr : end;
        if (next > cur) {
            int64_t gap = (int64_t)(next - cur);
            if (!g->small && gap <= SMALL_REQUEST && n && p[n - 1].blk >= 0)
                p[n - 1].size += gap;
            else
                p[n++] = (piece){gap, -1};
        }
        if (k < nb) {
            p[n++] = (piece){b[k].size, (long)k};
            cur = b[k].addr + (uint64_t)b[k].size;
        }
    }
    return n;
}

typedef struct {
    uint32_t fill;      /* the placeholder */
    size_t blk;         /* the block it stands for */
} swap;

static void prelude(importer *im, seg *segs, size_t ns, blk *blocks, size_t nb, amap *live,
                    import_stats *st) {
    if (ns)   /* qsort's array must not be NULL, even for no elements */
        qsort(segs, ns, sizeof *segs, cmp_seg_desc);
    if (nb)
        qsort(blocks, nb, sizeof *blocks, cmp_blk_addr);
    char nm[64];
    uint32_t *holder = ml_xcalloc(2 * ns + 1, sizeof *holder);
    size_t *first = ml_xcalloc(ns + 1, sizeof *first);   /* blocks of segment k: [first, last) */
    size_t *last = ml_xcalloc(ns + 1, sizeof *last);
    bool *placed = ml_xcalloc(nb + 1, sizeof *placed);
    ml_vec gaps, swaps;
    ml_vec_init(&gaps, sizeof(uint32_t));
    ml_vec_init(&swaps, sizeof(swap));

    /* which blocks lie in which segment (blocks sorted ascending, segments descending) */
    for (size_t k = 0; k < ns; k++) {
        size_t lo = 0, hi = nb;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (blocks[mid].addr < segs[k].addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        first[k] = last[k] = lo;
        while (last[k] < nb && blocks[last[k]].addr + (uint64_t)blocks[last[k]].size <=
                                   segs[k].addr + (uint64_t)segs[k].size)
            placed[last[k]++] = true;
    }

    /* (A) the segments, highest address first */
    for (size_t k = 0; k < ns; k++) {
        if (segs[k].expandable) {
            st->exact_prelude = 0;
            continue;
        }
        if (segs[k].small) {
            snprintf(nm, sizeof nm, "pre.seg%zu.a", k);
            holder[2 * k] = alloc_step(im, unique(im, nm), SMALL_REQUEST, segs[k].stream);
            snprintf(nm, sizeof nm, "pre.seg%zu.b", k);
            holder[2 * k + 1] = alloc_step(im, unique(im, nm), SMALL_SEGMENT - SMALL_REQUEST,
                                           segs[k].stream);
            if (segs[k].size != SMALL_SEGMENT)
                st->exact_prelude = 0;
        } else {
            snprintf(nm, sizeof nm, "pre.seg%zu", k);
            holder[2 * k] = alloc_step(im, unique(im, nm), segs[k].size, segs[k].stream);
        }
    }
    /* (B) each segment's blocks and gaps at their offsets */
    piece *pc = ml_xcalloc(2 * nb + ns + 2, sizeof *pc);
    for (size_t k = 0; k < ns; k++) {
        const blk *b = blocks + first[k];
        size_t nbk = last[k] - first[k];
        if (segs[k].expandable) {
            for (size_t j = 0; j < nbk; j++) {
                uint32_t id = alloc_step(im, buffer_name(im, b[j].frames, NULL, b[j].addr, NULL),
                                         b[j].requested, b[j].stream);
                amap_put(live, b[j].addr, id);
            }
            continue;
        }
        push(im, S_FREE, holder[2 * k], 0, 0);
        if (segs[k].small)
            push(im, S_FREE, holder[2 * k + 1], 0, 0);
        size_t np = segment_pieces(&segs[k], b, nbk, pc);
        for (size_t j = 0; j < np; j++) {
            if (pc[j].blk < 0) {
                /* a gap: in the small pool, requests of at most 1 MiB keep it there */
                for (int64_t left = pc[j].size; left > 0;) {
                    int64_t part = segs[k].small && left > SMALL_REQUEST ? SMALL_REQUEST : left;
                    snprintf(nm, sizeof nm, "pre.gap%zu", gaps.n);
                    *(uint32_t *)ml_vec_push(&gaps) =
                        alloc_step(im, unique(im, nm), part, segs[k].stream);
                    left -= part;
                }
                continue;
            }
            const blk *x = &b[pc[j].blk];
            if (round512(x->requested) == pc[j].size) {
                uint32_t id = alloc_step(im, buffer_name(im, x->frames, NULL, x->addr, NULL), x->requested,
                                         x->stream);
                amap_put(live, x->addr, id);
            } else {
                snprintf(nm, sizeof nm, "pre.fill%zu", swaps.n);
                swap *w = ml_vec_push(&swaps);
                w->fill = alloc_step(im, unique(im, nm), pc[j].size, segs[k].stream);
                w->blk = first[k] + (size_t)pc[j].blk;
            }
        }
    }
    free(pc);
    /* (C) blocks with a tail take their hole back at their requested size; the gaps go */
    for (size_t k = 0; k < swaps.n; k++) {
        const swap *w = &ML_VEC_AT(&swaps, swap, k);
        const blk *x = &blocks[w->blk];
        push(im, S_FREE, w->fill, 0, 0);
        uint32_t id = alloc_step(im, buffer_name(im, x->frames, NULL, x->addr, NULL), x->requested, x->stream);
        amap_put(live, x->addr, id);
    }
    for (size_t k = 0; k < gaps.n; k++)
        push(im, S_FREE, ML_VEC_AT(&gaps, uint32_t, k), 0, 0);
    /* blocks in no segment we know of (an inconsistent snapshot): at least they exist */
    for (size_t k = 0; k < nb; k++)
        if (!placed[k]) {
            st->exact_prelude = 0;
            uint32_t id = alloc_step(im, buffer_name(im, blocks[k].frames, NULL, blocks[k].addr, NULL),
                                     blocks[k].requested, blocks[k].stream);
            amap_put(live, blocks[k].addr, id);
        }
    ml_vec_free(&gaps);
    ml_vec_free(&swaps);
    free(holder);
    free(first);
    free(last);
    free(placed);
}

/* ---- the trace --------------------------------------------------------------------------------- */

static bool is_seg_release(act a) { return a == A_SEG_FREE || a == A_SEG_UNMAP; }

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The blocks' addresses of a map, appended to v (of uint64_t). */
static void map_keys(const amap *m, ml_vec *v) {
    for (size_t k = 0; k < m->cap; k++)
        if (m->used[k])
            *(uint64_t *)ml_vec_push(v) = m->key[k];
}

/* The cudaMalloc segments that hold no block (allocated or waiting for a stream): *empty of
 * them, *large of those in the large pool (a small-pool segment is 2 MiB, a large one at least
 * 10 MiB: get_allocation_size). Expandable segments unmap pages, not segments: not counted. */
static void count_empty(const ml_vec *segs, const amap *live, const amap *pending, size_t *empty,
                        size_t *large) {
    ml_vec addrs;
    ml_vec_init(&addrs, sizeof(uint64_t));
    map_keys(live, &addrs);
    map_keys(pending, &addrs);
    if (addrs.n)
        qsort(addrs.items, addrs.n, sizeof(uint64_t), cmp_u64);
    *empty = *large = 0;
    for (size_t k = 0; k < segs->n; k++) {
        const seg *g = &ML_VEC_AT(segs, seg, k);
        size_t lo = 0, hi = addrs.n;   /* the first block at or above the segment's start */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (ML_VEC_AT(&addrs, uint64_t, mid) < g->addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        bool none = !g->expandable && (lo == addrs.n || ML_VEC_AT(&addrs, uint64_t, lo) >=
                                                            g->addr + (uint64_t)g->size);
        *empty += none;
        *large += none && g->size != SMALL_SEGMENT;
    }
    ml_vec_free(&addrs);
}

/* A run of segment_free events that releases every cudaMalloc segment holding no block is one
 * empty_cache (the user's, or release_cached_blocks before PyTorch's last retry: the same
 * segments). One that releases fewer is garbage collection or release_available_cached_blocks
 * (limit.h): it gets no step, the malloc after it makes it in the model under the constant the
 * import then infers, so it must come right before a segment_alloc, as in PyTorch's malloc. */
typedef struct {
    int64_t start;     /* reserved before the run; -1: no run just before */
    int64_t bytes;     /* released so far */
    bool partial;
    size_t large_before;   /* large cached segments before it */
} release_run;

/* The collective a capture names (capture.h), by its schedule name: a row of coll.h's table
 * with a send and a recv view (send/recv's one view and peer are not captured); -1 else. */
static int capture_coll_lookup(const char *kind) {
    int c = kind ? ml_coll_lookup(kind, strlen(kind)) : -1;
    return c >= 0 && !ml_colls[c].p2p ? c : -1;
}

/* "all_reduce, reduce_scatter, ...": the collectives a capture may name, for the message. */
static void capture_coll_list(char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (int c = 0; c < COLL_COUNT && at < len; c++)
        if (!ml_colls[c].p2p)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", ml_colls[c].name);
}

/* One operand of a captured collective: {"addr": A, "offset": O, "bytes": B}, a view of the
 * live buffer allocated at A. */
static int capture_operand(importer *im, const json_t *o, const char *side, const char *where,
                           const amap *live, capture_coll *c, int k) {
    int64_t addr, off, bytes;
    if (!json_is_object(o))
        return fail(im, "%s: the collective's '%s' is not a dict", where, side);
    if (get_u(im, o, "addr", where, -1, &addr) || get_u(im, o, "offset", where, -1, &off) ||
        get_u(im, o, "bytes", where, -1, &bytes))
        return -1;
    long id = amap_find(live, (uint64_t)addr);
    if (id < 0)
        return fail(im, "%s: the collective's %s buffer (0x%" PRIx64 ") is not allocated here",
                    where, side, (uint64_t)addr);
    uint32_t b = live->val[id];
    int64_t have = ML_VEC_AT(&im->bufs, buffer, b).bytes, end;
    if (__builtin_add_overflow(off, bytes, &end) || end > have)
        return fail(im, "%s: the collective's %s view [%" PRId64 ", +%" PRId64 ") is outside its "
                    "buffer of %" PRId64 " bytes", where, side, off, bytes, have);
    c->buf[k] = b;
    c->offset[k] = off;
    c->bytes[k] = bytes;
    return 0;
}

/* A capture's step (capture.h): a collective on live buffers, or a region's start or end. */
static int capture_step(importer *im, const json_t *st, size_t i, int dev, const amap *live) {
    char where[96];
    snprintf(where, sizeof where, "device_traces[%d][%zu]", dev, i);
    const char *region = json_string_value(json_object_get(st, "region"));
    if (region) {
        char name[NAME_MAX_BASE + 32];
        given_name(region, name, sizeof name);
        bool begin = json_is_true(json_object_get(st, "begin"));
        if (begin && im->region_depth == CAPTURE_MAX_DEPTH)
            return fail(im, "%s: region '%s' nests deeper than %d", where, name, CAPTURE_MAX_DEPTH);
        if (!begin && im->region_depth == 0)
            return fail(im, "%s: region '%s' ends, but none is open", where, name);
        im->region_depth += begin ? 1 : -1;
        *(const char **)ml_vec_push(&im->regions) = ml_arena_strndup(im->arena, name, strlen(name));
        push(im, begin ? S_REGION_BEGIN : S_REGION_END, 0, 0, (uint32_t)(im->regions.n - 1));
        return 0;
    }
    const json_t *rec = json_object_get(st, "record"), *wait = json_object_get(st, "wait");
    const json_t *sync = json_object_get(st, "sync");
    if (json_object_get(st, "compute")) {   /* a collective schedules cannot say: work on a stream */
        uint32_t stream;
        if (get_stream(im, st, where, &stream))
            return -1;
        push(im, S_COMPUTE, 0, stream, 0);
        return 0;
    }
    if (rec || wait) {   /* an event recorded on a stream, or a stream waiting for one */
        int64_t id;
        uint32_t stream;
        if (get_u(im, st, rec ? "record" : "wait", where, -1, &id) || get_stream(im, st, where, &stream))
            return -1;
        long at = amap_find(&im->capture_events, (uint64_t)id);
        if (at < 0 && wait)
            return fail(im, "%s: a wait for an event never recorded", where);
        if (at < 0) {
            amap_put(&im->capture_events, (uint64_t)id, im->n_events++);
            at = amap_find(&im->capture_events, (uint64_t)id);
        }
        push(im, rec ? S_RECORD : S_WAIT, 0, stream, im->capture_events.val[at]);
        return 0;
    }
    if (sync) {   /* the host waits: for the device, a stream or an event */
        const char *what = json_string_value(sync);
        if (what && !strcmp(what, "device")) {
            push(im, S_SYNC_DEVICE, 0, 0, 0);
            return 0;
        }
        int64_t id;
        uint32_t stream;
        if (what && !strcmp(what, "stream")) {
            if (get_stream(im, st, where, &stream))
                return -1;
            push(im, S_SYNC_STREAM, 0, stream, 0);
            return 0;
        }
        if (!what || strcmp(what, "event") || get_u(im, st, "event", where, -1, &id))
            return fail(im, "%s: a sync that is not of the device, a stream or an event", where);
        long at = amap_find(&im->capture_events, (uint64_t)id);
        if (at >= 0)   /* an event never recorded is complete: nothing to wait for */
            push(im, S_SYNC_EVENT, 0, 0, im->capture_events.val[at]);
        return 0;
    }
    const char *kind = json_string_value(json_object_get(st, "collective"));
    int k = capture_coll_lookup(kind);
    if (k < 0) {
        char names[256];
        capture_coll_list(names, sizeof names);
        return fail(im, "%s: a memlife_step that is neither a region nor a collective memlife "
                    "captures (%s)", where, names);
    }
    const char *group = json_string_value(json_object_get(st, "group"));
    int comm = import_comms_find(im->comms, group);
    if (comm < 0)
        return fail(im, "%s: a %s on process group '%.40s', which memlife_capture's groups do "
                    "not describe", where, kind, group);
    capture_coll c = {.coll = (ml_coll)k, .comm = comm};
    /* a recording without roots had PyTorch's default, 0 */
    if (ml_colls[k].has_root && get_u(im, st, "root", where, 0, &c.root))
        return -1;
    if (capture_operand(im, json_object_get(st, "send"), "send", where, live, &c, 0) ||
        capture_operand(im, json_object_get(st, "recv"), "recv", where, live, &c, 1))
        return -1;
    const char *op = json_string_value(json_object_get(st, "op"));
    if (ml_colls[k].has_op)
        c.op = ml_arena_strndup(im->arena, op ? op : "sum", strlen(op ? op : "sum"));
    uint32_t stream;
    if (get_stream(im, st, where, &stream))
        return -1;
    *(capture_coll *)ml_vec_push(&im->colls) = c;
    push(im, S_COLLECTIVE, 0, stream, (uint32_t)(im->colls.n - 1));
    return 0;
}

static int replay_trace(importer *im, const tev *ev, size_t n, int dev, amap *live,
                        const ml_vec *init_segs, int64_t reserved0) {
    amap pending = {0};   /* addr -> event of a deferred free */
    ml_vec segs;          /* the segments now, for count_empty */
    ml_vec_init(&segs, sizeof(seg));
    for (size_t k = 0; k < init_segs->n; k++)
        *(seg *)ml_vec_push(&segs) = ML_VEC_AT(init_segs, seg, k);
    int rc = 0;
    int64_t r = reserved0;   /* the snapshot's reserved before ev[i] */
    release_run run = {.start = -1};
    /* garbage collection acts under a fraction only; the facts about cached large segments are
     * needed (and counted, a walk of the segments each) only when it is configured */
    bool gc = im->conf.garbage_collection_threshold > 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const tev *e = &ev[i];
        im->cur_at = (uint32_t)i;
        if (!is_seg_release(e->a) && e->a != A_SEG_ALLOC)
            run.start = -1;   /* the run (a whole one: empty_cache) is over */
        switch (e->a) {
        case A_MEMLIFE:
            rc = capture_step(im, e->frames, i, dev, live);
            break;
        case A_ALLOC: {
            if (amap_find(live, e->addr) >= 0) {
                rc = fail(im, "device_traces[%d][%zu]: alloc at 0x%" PRIx64 ", which is allocated "
                          "already (an incomplete trace?)", dev, i, e->addr);
                break;
            }
            uint32_t id = alloc_step(im, buffer_name(im, e->frames, e->base, e->addr, e->name), e->size,
                                     e->stream);
            amap_put(live, e->addr, id);
            break;
        }
        case A_FREE_REQ: {
            uint32_t id = amap_take(live, e->addr);
            if (id == UINT32_MAX) {
                rc = fail(im, "device_traces[%d][%zu]: free_requested of 0x%" PRIx64 ", which is "
                          "not allocated", dev, i, e->addr);
                break;
            }
            bool deferred = !(i + 1 < n && ev[i + 1].a == A_FREE_DONE && ev[i + 1].addr == e->addr);
            if (!deferred) {
                push(im, S_FREE, id, 0, 0);
                break;
            }
            /* The block was used on a stream whose work had not finished (record_stream): the
             * allocator holds it until an event recorded at the free completes. */
            if (im->recorded_stream == UINT32_MAX)
                im->recorded_stream = stream_index(im, -1);   /* no cudaStream_t is -1 */
            push(im, S_RECORD_STREAM, id, im->recorded_stream, 0);
            push(im, S_COMPUTE, 0, im->recorded_stream, 0);
            push(im, S_FREE, id, 0, 0);
            push(im, S_RECORD, 0, im->recorded_stream, im->n_events);
            amap_put(&pending, e->addr, im->n_events++);
            im->n_deferred++;
            break;
        }
        case A_FREE_DONE: {
            uint32_t evk = amap_take(&pending, e->addr);
            if (evk != UINT32_MAX) {
                push(im, S_SYNC_EVENT, 0, 0, evk);
            } else if (!(i > 0 && ev[i - 1].a == A_FREE_REQ && ev[i - 1].addr == e->addr)) {
                /* the free waited for a stream from before recording began: the block was
                 * pending then, which the state rebuilt from the final segments cannot know */
                rc = fail(im, "device_traces[%d][%zu]: free_completed of 0x%" PRIx64 " without "
                          "its free_requested in the trace (freed before recording began, "
                          "waiting for a stream): the block's state then is unknown", dev, i,
                          e->addr);
            }
            break;
        }
        case A_SEG_ALLOC: {
            limit_fact *f = ml_vec_push(&im->facts);
            *f = (limit_fact){.at = i, .reserved = r, .size = e->size, .run_start = run.start,
                              .run_bytes = run.bytes, .run_partial = run.partial};
            size_t empty = 0, large = 0;
            if (gc)
                count_empty(&segs, live, &pending, &empty, &large);
            f->large_cached_before = run.start >= 0 ? run.large_before > 0 : large > 0;
            f->large_cached_after = large > 0;
            run.start = -1;
            *(uint64_t *)ml_vec_push(&im->seg_addrs) = e->addr;
            *(seg *)ml_vec_push(&segs) = (seg){e->addr, e->size, e->stream, false, false};
            break;
        }
        case A_SEG_FREE:
        case A_SEG_UNMAP:
            if (!(i > 0 && is_seg_release(ev[i - 1].a))) {
                size_t frees = 0, j = i, empty, large;
                for (; j < n && is_seg_release(ev[j].a); j++)
                    frees += ev[j].a == A_SEG_FREE;
                count_empty(&segs, live, &pending, &empty, &large);
                run = (release_run){.start = r, .partial = frees && frees != empty,
                                    .large_before = large};
                if (!run.partial) {
                    push(im, S_EMPTY_CACHE, 0, 0, 0);
                } else if (frees > empty) {
                    rc = fail(im, "device_traces[%d][%zu]: these segment_free events release %zu "
                              "segment%s, but %zu hold%s no block: a segment with a block in it "
                              "was freed (an incomplete trace?)", dev, i, frees,
                              frees == 1 ? "" : "s", empty, empty == 1 ? "s" : "");
                } else if (j == n || ev[j].a != A_SEG_ALLOC) {
                    rc = fail(im, "device_traces[%d][%zu]: these segment_free events release %zu "
                              "of the %zu segments that hold no block and no segment_alloc "
                              "follows: neither empty_cache nor a release PyTorch's malloc "
                              "makes before a new segment (garbage collection, the oversize "
                              "blocks before a retry)", dev, i, frees, empty);
                } else if (im->n_partial++ == 0) {
                    im->first_partial = i;
                }
            }
            run.bytes += e->a == A_SEG_FREE ? e->size : 0;
            for (size_t k = 0; e->a == A_SEG_FREE && k < segs.n; k++)
                if (ML_VEC_AT(&segs, seg, k).addr == e->addr) {
                    ML_VEC_AT(&segs, seg, k) = ML_VEC_AT(&segs, seg, segs.n - 1);
                    segs.n--;
                    break;
                }
            break;
        default:
            break;
        }
        if (e->a == A_SEG_ALLOC || e->a == A_SEG_MAP)
            r += e->size;
        else if (is_seg_release(e->a))
            r -= e->size;
    }
    if (!rc && im->region_depth)
        rc = fail(im, "device_traces[%d]: %d region%s begun and never ended", dev,
                  im->region_depth, im->region_depth == 1 ? "" : "s");
    amap_free(&pending);
    ml_vec_free(&segs);
    return rc;
}

/* ---- the constant behind partial releases ----------------------------------------------------- */

/* Which constant: with garbage_collection_threshold set, a limit, since GC acts only under a
 * memory fraction (set_fraction) and GC is what gives back segments without a failed cudaMalloc.
 * Without it the releases come from release_available_cached_blocks after alloc_block failed,
 * which a fraction's check and a full device fail alike (reserved + size past the constant,
 * limit.h): then a capacity, which claims less (the snapshot does not say the program set a
 * fraction) and enables nothing else. */
static const char *constant_name(const importer *im) { return im->is_limit ? "limit" : "capacity"; }

/* The imported steps as the torch view runs them, with the snapshot's reserved after each: after
 * the entry a step stands for (an empty_cache: after its whole run), reserved0 after the prelude. */
static limit_step *verify_steps(const importer *im, const tev *ev, size_t n, int64_t reserved0,
                                size_t prelude_steps) {
    int64_t *after = ml_xmalloc((n ? n : 1) * sizeof *after);
    int64_t r = reserved0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].a == A_SEG_ALLOC || ev[i].a == A_SEG_MAP)
            r += ev[i].size;
        else if (is_seg_release(ev[i].a))
            r -= ev[i].size;
        after[i] = r;
    }
    static const limit_op ops[] = {
        [S_ALLOC] = LIMIT_ALLOC, [S_FREE] = LIMIT_FREE, [S_RECORD_STREAM] = LIMIT_RECORD_STREAM,
        [S_COMPUTE] = LIMIT_SUBMIT, [S_RECORD] = LIMIT_RECORD, [S_SYNC_EVENT] = LIMIT_SYNC_EVENT,
        [S_EMPTY_CACHE] = LIMIT_EMPTY_CACHE, [S_COLLECTIVE] = LIMIT_SUBMIT,
        [S_REGION_BEGIN] = LIMIT_SUBMIT, [S_REGION_END] = LIMIT_SUBMIT, [S_WAIT] = LIMIT_SUBMIT,
        [S_SYNC_STREAM] = LIMIT_SUBMIT, [S_SYNC_DEVICE] = LIMIT_SUBMIT};
    limit_step *ls = ml_xmalloc((im->steps.n ? im->steps.n : 1) * sizeof *ls);
    for (size_t k = 0; k < im->steps.n; k++) {
        const step *s = &ML_VEC_AT(&im->steps, step, k);
        limit_step *l = &ls[k];
        *l = (limit_step){.op = ops[s->kind], .buf = s->buf, .stream = s->stream,
                          .event = s->event, .want = -1, .at = SIZE_MAX};
        if (s->kind == S_ALLOC) {
            const buffer *b = &ML_VEC_AT(&im->bufs, buffer, s->buf);
            l->bytes = b->bytes;
            l->stream = b->stream;
        }
        if (s->at != UINT32_MAX) {
            size_t j = l->at = s->at;
            while (s->kind == S_EMPTY_CACHE && j + 1 < n && is_seg_release(ev[j + 1].a))
                j++;
            l->want = after[j];
        }
    }
    if (prelude_steps)
        ls[prelude_steps - 1].want = reserved0;
    free(after);
    return ls;
}

/* One kind of constant (im->is_limit): the interval the trace admits, then its middle and its
 * ends replayed through the model; 0, or -1 naming the entry where none reproduces the trace. */
static int try_constant(importer *im, const limit_step *ls, int dev) {
    bool max_split = im->conf.max_split_size != TORCHALLOC_UNLIMITED;
    size_t at;
    if (limit_interval_find(im->facts.items, im->facts.n,
                            im->is_limit ? im->conf.garbage_collection_threshold : 0, max_split,
                            &im->iv, &at))
        return fail(im, "device_traces[%d][%zu]: no %s reproduces the releases: this "
                    "segment_alloc needs one of at least %" PRIu64 " bytes, the release before "
                    "entry %zu one of at most %" PRIu64 " (the device's free memory changed under "
                    "the program?)", dev, at, constant_name(im), im->iv.lo, im->iv.hi_at,
                    im->iv.hi);
    /* the middle first (farthest from both bounds' rounding), then the bounds themselves */
    uint64_t cand[3] = {im->iv.lo + (im->iv.hi - im->iv.lo) / 2, im->iv.lo, im->iv.hi};
    size_t best = 0, bad = 0;
    int64_t got = 0, best_got = 0;
    uint64_t best_v = cand[0];
    for (int k = 0; k < 3; k++) {
        bad = limit_verify(&im->conf, im->is_limit, cand[k], im->seg_addrs.items, im->seg_addrs.n,
                           ls, im->steps.n, (uint32_t)im->bufs.n, im->n_events, &got);
        if (bad == SIZE_MAX) {
            im->constant = cand[k];
            return 0;
        }
        if (bad > best || k == 0) {
            best = bad;
            best_got = got;
            best_v = cand[k];
        }
    }
    char where[64], what[160];
    if (ls[best].at == SIZE_MAX)
        snprintf(where, sizeof where, "the state before recording");
    else
        snprintf(where, sizeof where, "device_traces[%d][%zu]", dev, ls[best].at);
    if (best_got < 0)
        snprintf(what, sizeof what, "the torch model runs out of memory here");
    else
        snprintf(what, sizeof what, "the torch model's reserved after it is %" PRId64 " bytes, "
                 "the snapshot's %" PRId64, best_got, ls[best].want);
    return fail(im, "%s: no %s reproduces the trace: the segment events admit %" PRIu64 "..%"
                PRIu64 " bytes, and with %" PRIu64 " %s (the device's free memory changed under "
                "the program?)", where, constant_name(im), im->iv.lo, im->iv.hi, best_v, what);
}

/* Partial releases (replay_trace): a limit when garbage_collection_threshold is set
 * (constant_name says why), else a capacity. With both the threshold and max_split_size the
 * releases may be the oversize release alone in a program that set no fraction (the threshold
 * then does nothing): a capacity is tried when no limit reproduces the trace, and the limit's
 * reason is the one given when neither does. */
static int infer_constant(importer *im, const tev *ev, size_t n, int dev, int64_t reserved0,
                          size_t prelude_steps) {
    limit_step *ls = verify_steps(im, ev, n, reserved0, prelude_steps);
    im->is_limit = im->conf.garbage_collection_threshold > 0;
    int rc = try_constant(im, ls, dev);
    if (rc && im->is_limit && im->conf.max_split_size != TORCHALLOC_UNLIMITED) {
        char *first = ml_xstrdup(im->err);
        im->is_limit = false;
        rc = try_constant(im, ls, dev);
        if (rc) {
            im->is_limit = true;
            snprintf(im->err, im->errlen, "%s", first);
        }
        free(first);
    }
    free(ls);
    return rc;
}

/* ---- writing ----------------------------------------------------------------------------------- */

typedef struct {
    yaml_emitter_t em;
    int ok;
} writer;

static int sink_write(void *data, unsigned char *buf, size_t size) {
    ml_str_append(data, (const char *)buf, size);
    return 1;
}

static void emit(writer *w, yaml_event_t *ev, int made) {
    if (w->ok && !(made && yaml_emitter_emit(&w->em, ev)))
        w->ok = 0;
}

static void scalar(writer *w, const char *s) {
    yaml_event_t ev;
    emit(w, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s),
                                              1, 1, YAML_ANY_SCALAR_STYLE));
}

static void integer(writer *w, int64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%" PRId64, v);
    scalar(w, b);
}

/* A mapping's and a sequence's start and end events differ only in libyaml's initializer and
 * style, so one function makes each and the four names below say which. */
static void collection_start(writer *w, bool seq, bool flow) {
    yaml_event_t ev;
    emit(w, &ev,
         seq ? yaml_sequence_start_event_initialize(
                   &ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE)
             : yaml_mapping_start_event_initialize(
                   &ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

static void collection_end(writer *w, bool seq) {
    yaml_event_t ev;
    emit(w, &ev,
         seq ? yaml_sequence_end_event_initialize(&ev) : yaml_mapping_end_event_initialize(&ev));
}

static void map_start(writer *w, bool flow) { collection_start(w, false, flow); }
static void map_end(writer *w) { collection_end(w, false); }
static void seq_start(writer *w, bool flow) { collection_start(w, true, flow); }
static void seq_end(writer *w) { collection_end(w, true); }

/* A JSON value as YAML: a mapping or sequence in block style at the top (flow: false), in flow
 * style inside. */
static void emit_json(writer *w, const json_t *v, bool flow) {
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_object(v)) {
        map_start(w, flow);
        json_object_foreach((json_t *)v, k, x) {
            scalar(w, k);
            emit_json(w, x, true);
        }
        map_end(w);
    } else if (json_is_array(v)) {
        seq_start(w, flow);
        json_array_foreach(v, i, x)
            emit_json(w, x, true);
        seq_end(w);
    } else if (json_is_integer(v)) {
        integer(w, json_integer_value(v));
    } else {
        scalar(w, json_string_value(v) ? json_string_value(v) : "");
    }
}

static const char *stream_name(const importer *im, uint32_t s, char *buf, size_t len) {
    if (s == 0)
        return "default";
    if (s == im->recorded_stream)
        return "recorded";
    snprintf(buf, len, "s%u", s);
    return buf;
}

/* {steady: S, peak: P} or {steady: S}. */
static void series(writer *w, const char *key, int64_t steady, int64_t peak) {
    scalar(w, key);
    map_start(w, true);
    scalar(w, "steady");
    integer(w, steady);
    if (peak >= 0) {
        scalar(w, "peak");
        integer(w, peak);
    }
    map_end(w);
}

/* A size of step `index` as written: the number, or what o->size_text makes of it (a
 * parametric capture's expression). A number's digits go to tmp. */
static const char *size_text(const importer *im, size_t index, const char *buf, const char *what,
                             int64_t v, char *tmp, size_t len) {
    const char *t = NULL;
    if (im->o->size_text) {
        import_size at = {.value = v, .step = index, .buf = buf, .what = what};
        t = im->o->size_text(im->o->size_ctx, &at);
    }
    if (!t) {
        snprintf(tmp, len, "%" PRId64, v);
        t = tmp;
    }
    return t;
}

static bool is_number(const char *t) { return *t && strspn(t, "0123456789") == strlen(t); }

/* A captured collective's operand: the whole buffer, `name[rank*B : B]` where the view stands
 * at this rank's slot (an in-place collective, the same for every rank), else the view as
 * recorded (bytes: the schedule's dtype is uint8). On a communicator the slot is the rank's
 * within its group (NCCL's in-place offset), written as an expression of rank where the
 * communicator has one for every rank ("(rank % 2)*B"), else as rank R's number. */
static void write_operand(const importer *im, const capture_coll *c, int k, size_t index,
                          ml_str *out) {
    const buffer *b = &ML_VEC_AT(&im->bufs, buffer, c->buf[k]);
    char t1[32], t2[32];
    const char *local = import_comms_local_expr(im->comms, c->comm);
    if (c->offset[k] == 0 && c->bytes[k] == b->bytes) {
        ml_str_printf(out, "%s", b->name);
    } else if (local && c->bytes[k] > 0 &&
               c->offset[k] == import_comms_local(im->comms, c->comm) * c->bytes[k]) {
        const char *len = size_text(im, index, b->name, "length", c->bytes[k], t1, sizeof t1);
        bool plain = is_number(len), bare = !strcmp(local, "rank");
        ml_str_printf(out, "\"%s[%s%s%s*%s%s%s : %s]\"", b->name, bare ? "" : "(", local,
                      bare ? "" : ")", plain ? "" : "(", len, plain ? "" : ")", len);
    } else {
        const char *off = size_text(im, index, b->name, "offset", c->offset[k], t1, sizeof t1);
        const char *len = size_text(im, index, b->name, "length", c->bytes[k], t2, sizeof t2);
        ml_str_printf(out, "\"%s[%s : %s]\"", b->name, off, len);
    }
}

static void write_collective(const importer *im, const step *s, size_t index, const char *pad,
                             ml_str *out) {
    char sb[32];
    const capture_coll *c = &ML_VEC_AT(&im->colls, capture_coll, s->event);
    bool same = c->buf[0] == c->buf[1] && c->offset[0] == c->offset[1] && c->bytes[0] == c->bytes[1];
    const ml_coll_info *ci = &ml_colls[c->coll];
    ml_str_printf(out, "%s- %s: {", pad, ci->name);
    if (same && ci->inplace == INPLACE_SAME) {   /* in place on one view: `buf:` */
        ml_str_printf(out, "buf: ");
        write_operand(im, c, 0, index, out);
    } else {
        ml_str_printf(out, "send: ");
        write_operand(im, c, 0, index, out);
        ml_str_printf(out, ", recv: ");
        write_operand(im, c, 1, index, out);
    }
    if (c->op)
        ml_str_printf(out, ", op: %s", c->op);
    if (ci->has_root)
        ml_str_printf(out, ", root: %" PRId64, c->root);
    if (c->comm)
        ml_str_printf(out, ", comm: %s", import_comms_name(im->comms, c->comm));
    if (s->stream)
        ml_str_printf(out, ", stream: %s", stream_name(im, s->stream, sb, sizeof sb));
    ml_str_printf(out, "}\n");
    /* a rank outside a rank list's group cannot issue the collective (torch makes it a no-op) */
    const char *when = import_comms_members(im->comms, c->comm);
    if (when)
        ml_str_printf(out, "%s  when: \"%s\"\n", pad, when);
}

/* One step, as one line (a region: its head, with the steps inside indented by the caller).
 * Its scalars are names made here from letters, digits, '_', '-', '.', '/' (starting with a
 * letter) and decimal integers: plain YAML in any context, as emit_yaml.h's fast path also
 * writes them, so the million lines need no emitter round trip each. */
static void write_step(const importer *im, const step *s, size_t index, const char *pad,
                       ml_str *out) {
    char sb[32], nb[32];
    if (s->kind == S_COLLECTIVE) {
        write_collective(im, s, index, pad, out);
        return;
    }
    ml_str_printf(out, "%s", pad);
    const buffer *b = s->kind == S_ALLOC || s->kind == S_FREE || s->kind == S_RECORD_STREAM
                          ? &ML_VEC_AT(&im->bufs, buffer, s->buf) : NULL;
    switch (s->kind) {
    case S_ALLOC: {
        /* an expression is quoted: a comma in one (max(a, b)) would end the flow mapping's value */
        const char *bytes = size_text(im, index, b->name, "bytes", b->bytes, nb, sizeof nb);
        const char *q = is_number(bytes) ? "" : "\"";
        ml_str_printf(out, "- alloc: {buf: %s, bytes: %s%s%s", b->name, q, bytes, q);
        if (b->stream)
            ml_str_printf(out, ", stream: %s", stream_name(im, b->stream, sb, sizeof sb));
        ml_str_printf(out, "}\n");
        break;
    }
    case S_FREE:
        ml_str_printf(out, "- free: %s\n", b->name);
        break;
    case S_RECORD_STREAM:
        ml_str_printf(out, "- record_stream: {buf: %s, stream: %s}\n", b->name,
                      stream_name(im, s->stream, sb, sizeof sb));
        break;
    case S_COMPUTE:
        ml_str_printf(out, "- compute: {stream: %s}\n", stream_name(im, s->stream, sb, sizeof sb));
        break;
    case S_RECORD:
    case S_WAIT:
        ml_str_printf(out, "- %s: {event: f%u, stream: %s}\n", s->kind == S_RECORD ? "record" : "wait",
                      s->event, stream_name(im, s->stream, sb, sizeof sb));
        break;
    case S_SYNC_EVENT:
        ml_str_printf(out, "- sync: {event: f%u}\n", s->event);
        break;
    case S_EMPTY_CACHE:
        ml_str_printf(out, "- empty_cache: {}\n");
        break;
    case S_SYNC_STREAM:
        ml_str_printf(out, "- sync: {stream: %s}\n", stream_name(im, s->stream, sb, sizeof sb));
        break;
    case S_SYNC_DEVICE:
        ml_str_printf(out, "- sync: device\n");
        break;
    case S_REGION_BEGIN:
        ml_str_printf(out, "- region:\n%s    name: %s\n%s    steps:\n", pad,
                      ML_VEC_AT(&im->regions, const char *, s->event), pad);
        break;
    case S_COLLECTIVE:
    case S_REGION_END:   /* write_collective; write_steps */
        break;
    }
    /* the trace entry's time, beside the step's key: `memlife trace` draws the step at it */
    if (s->kind != S_REGION_BEGIN && s->at != UINT32_MAX && im->ev && im->ev[s->at].time_us >= 0)
        ml_str_printf(out, "%s  time_us: %" PRId64 "\n", pad, im->ev[s->at].time_us);
}

/* The steps, regions nested: a region's steps are indented under its head; an empty one
 * says `steps: []`. */
static void write_steps(const importer *im, ml_str *out) {
    char pad[4 * CAPTURE_MAX_DEPTH + 1] = "";
    size_t depth = 0, index = 0;
    for (size_t k = 0; k < im->steps.n; k++) {
        const step *s = &ML_VEC_AT(&im->steps, step, k);
        if (s->kind == S_REGION_END) {
            const step *prev = &ML_VEC_AT(&im->steps, step, k - 1);
            if (prev->kind == S_REGION_BEGIN) {   /* "steps:\n" becomes "steps: []\n" */
                out->n--;
                ml_str_printf(out, " []\n");
            }
            depth--;
            pad[4 * depth] = 0;
            continue;
        }
        write_step(im, s, index++, pad, out);
        if (s->kind == S_REGION_BEGIN) {
            depth++;
            memset(pad, ' ', 4 * depth);
            pad[4 * depth] = 0;
        }
    }
}

static bool is_varied(const importer *im, const char *let) {
    for (size_t k = 0; k < im->o->n_lets; k++)
        if (!strcmp(im->o->lets[k], let))
            return true;
    return false;
}

/* "memlife capture of gpt.py (MBS=4, S=2048): rank 0 of world 64, fake (h100-80gb), torch
 * 2.13.0, 2026-12-07" from the capture's header; a parametric one's varied lets without their
 * values, which differ from capture to capture: "(MODE=\"fsdp\"; MBS, S varied)". */
static void capture_about(const importer *im, char *buf, size_t len) {
    const json_t *c = im->capture;
    ml_str lets = {0};
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(c, "lets"), k, v) {
        if (is_varied(im, k))
            continue;
        char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        ml_str_printf(&lets, "%s%s=%s", lets.n ? ", " : "", k, text ? text : "?");
        free(text);
    }
    for (size_t j = 0; j < im->o->n_lets; j++)
        ml_str_printf(&lets, "%s%s%s", j ? ", " : lets.n ? "; " : "", im->o->lets[j],
                      j + 1 == im->o->n_lets ? " varied" : "");
    const char *prog = json_string_value(json_object_get(c, "program"));
    const char *gpu = json_string_value(json_object_get(c, "gpu"));
    const char *torch = json_string_value(json_object_get(c, "torch"));
    const char *date = json_string_value(json_object_get(c, "date"));
    /* a parametric capture's runs may straddle midnight: its about: has no date, so that the
     * captures' documents are alike but for the sizes */
    bool param = im->o->n_lets || im->o->world_varied;
    char world[48];
    if (im->o->world_varied)
        snprintf(world, sizeof world, ", world varied");
    else
        snprintf(world, sizeof world, " of world %" PRId64, im->world);
    snprintf(buf, len, "memlife capture of %s%s%s%s: rank %" PRId64 "%s, %s (%s), torch %s%s%s",
             prog ? prog : "a program", lets.n ? " (" : "", lets.n ? lets.s : "",
             lets.n ? ")" : "", im->rank, world,
             im->on_fake ? "on the virtual device" : "on", gpu ? gpu : "?", torch ? torch : "?",
             param ? "" : ", ", param ? "" : date ? date : "?");
    ml_str_free(&lets);
}

static int write_doc(importer *im, const json_t *snap, const import_stats *st, ml_str *out) {
    writer w = {.ok = 1};
    char buf[512];
    /* the parametric capture writes its own comment */
    bool vary = im->o->n_lets > 0 || im->o->world_varied;
    snprintf(buf, sizeof buf,
             "# memlife import of %s, device %d: %zu trace events as %zu steps; the first %zu\n"
             "# rebuild the allocator's state when recording began (%zu segments, %zu blocks)%s.\n",
             im->o->source ? im->o->source : "a snapshot", im->o->device, st->events, st->steps,
             st->prelude_steps, st->initial_segments, st->initial_blocks,
             st->exact_prelude ? "" : ", approximately (expandable segments)");
    if (!vary)
        ml_str_append(out, buf, strlen(buf));
    import_comms_comment(im->comms, out);
    if (im->no_settings)
        ml_str_printf(out, "# The snapshot has no allocator_settings (PyTorch before 2.1?): "
                      "PyTorch's defaults are assumed.\n");
    if (im->n_partial) {
        bool max_split = im->conf.max_split_size != TORCHALLOC_UNLIMITED;
        ml_str_printf(out, "# %zu time%s (first at device_traces[%d][%zu]) the allocator gave back "
                      "only some cached\n# segments: %s.\n# No step says so: the torch model does it "
                      "under %s %" PRIu64 ", one of %" PRIu64 "..%" PRIu64 " bytes,\n# the "
                      "constants the segment events admit (entry %zu bounds them from below, "
                      "entry %zu from\n# above); checked: its reserved equals the snapshot's "
                      "after every event.\n", im->n_partial, im->n_partial == 1 ? "" : "s",
                      im->o->device, im->first_partial,
                      !im->is_limit ? "the oversize blocks freed before a retry "
                                      "(release_available_cached_blocks)"
                      : max_split ? "garbage collection under a memory fraction, or the oversize "
                                    "blocks freed before a retry"
                                  : "garbage collection under a memory fraction",
                      constant_name(im), im->constant, im->iv.lo, im->iv.hi, im->iv.lo_at,
                      im->iv.hi_at);
    }
    if (im->ooms) {   /* the failed mallocs allocated nothing; their releases are empty_caches */
        snprintf(buf, sizeof buf, "# %zu oom event%s: PyTorch raised OutOfMemoryError and the "
                 "program went on; %s.\n", im->ooms, im->ooms == 1 ? "" : "s", im->n_partial ?
                 "the failed requests are no steps,\n# and under the constant the torch view "
                 "predicts no out-of-memory at any step (checked)" :
                 "no limit here, so the torch view predicts none");
        ml_str_append(out, buf, strlen(buf));
    }
    if (!yaml_emitter_initialize(&w.em))
        return fail(im, "out of memory");
    yaml_emitter_set_output(&w.em, sink_write, out);
    yaml_emitter_set_unicode(&w.em, 1);
    yaml_emitter_set_width(&w.em, -1);
    yaml_event_t ev;
    emit(&w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    emit(&w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
    map_start(&w, false);
    if (im->o->name) {
        scalar(&w, "name");
        scalar(&w, im->o->name);
    }
    scalar(&w, "about");
    if (im->capture)
        capture_about(im, buf, sizeof buf);
    else
        snprintf(buf, sizeof buf, "PyTorch memory snapshot %s, device %d",
                 im->o->source ? im->o->source : "", im->o->device);
    scalar(&w, buf);
    scalar(&w, "world");
    integer(&w, im->capture ? im->world : 1);
    if (im->o->n_lets) {
        scalar(&w, "let");
        map_start(&w, true);
        for (size_t k = 0; k < im->o->n_lets; k++) {
            scalar(&w, im->o->lets[k]);
            integer(&w, im->o->let_defaults[k]);
        }
        map_end(&w);
    }
    /* the process groups' communicators: mesh: {dp: 4, tp: 2}, comms: {tp: {mesh_dim: tp}} */
    json_t *comms = import_comms_yaml(im->comms);
    const char *key;
    const json_t *val;
    json_object_foreach(comms, key, val) {
        scalar(&w, key);
        emit_json(&w, val, strcmp(key, "comms") != 0);
    }
    json_decref(comms);
    scalar(&w, "dtype");
    scalar(&w, "uint8");
    if (im->streams.n > 1) {
        scalar(&w, "streams");
        seq_start(&w, true);
        for (uint32_t k = 1; k < im->streams.n; k++)
            scalar(&w, stream_name(im, k, buf, sizeof buf));
        seq_end(&w);
    }
    if (im->n_events) {
        scalar(&w, "events");
        seq_start(&w, true);
        for (uint32_t k = 0; k < im->n_events; k++) {
            snprintf(buf, sizeof buf, "f%u", k);
            scalar(&w, buf);
        }
        seq_end(&w);
    }
    /* the allocator's settings as the process had them */
    const json_t *set = json_object_get(snap, "allocator_settings");
    const char *conf = json_string_value(json_object_get(set, "PYTORCH_CUDA_ALLOC_CONF"));
    scalar(&w, "torch");
    map_start(&w, true);
    if (conf && *conf) {
        scalar(&w, "conf");
        scalar(&w, conf);
    }
    if (im->n_partial) {
        scalar(&w, constant_name(im));
        integer(&w, (int64_t)im->constant);
    }
    if (im->seg_addrs.n) {
        /* which of two equal free blocks in different segments best fit takes is decided by
         * their addresses: the driver's, which the snapshot has, not the model's guess
         * (torchalloc_set_segment_addresses) */
        scalar(&w, "addresses");
        seq_start(&w, true);
        for (size_t k = 0; k < im->seg_addrs.n; k++)
            integer(&w, (int64_t)ML_VEC_AT(&im->seg_addrs, uint64_t, k));
        seq_end(&w);
    }
    map_end(&w);
    if (!vary) {
        scalar(&w, "expect");
        map_start(&w, false);
        series(&w, "requested", st->requested_final, st->requested_peak);
        if (!im->on_fake) {   /* on the virtual device nothing measured the allocator */
            scalar(&w, "torch");
            map_start(&w, true);
            series(&w, "allocated", st->allocated_final, -1);
            series(&w, "reserved", st->reserved_final, st->reserved_peak);
            map_end(&w);
        }
        map_end(&w);
    }
    /* the top-level mapping ends here for the emitter; `steps:` continues it in the text */
    map_end(&w);
    emit(&w, &ev, yaml_document_end_event_initialize(&ev, 1));
    emit(&w, &ev, yaml_stream_end_event_initialize(&ev));
    int ok = w.ok && yaml_emitter_flush(&w.em);
    const char *problem = w.em.problem ? w.em.problem : "?";
    yaml_emitter_delete(&w.em);
    if (!ok)
        return fail(im, "the YAML emitter failed: %s", problem);
    ml_str_printf(out, "steps:\n");
    write_steps(im, out);
    return 0;
}

/* ---- the whole import -------------------------------------------------------------------------- */

int snapshot_import(const json_t *snap, const import_opts *o, char **yaml, size_t *len,
                    import_stats *st, char *err, size_t errlen) {
    importer im = {.o = o, .err = err, .errlen = errlen, .recorded_stream = UINT32_MAX,
                   .cur_at = UINT32_MAX};
    *st = (import_stats){.exact_prelude = 1};
    *yaml = NULL;
    *len = 0;
    if (!json_is_object(snap))
        return snprintf(err, errlen, "the snapshot is not a dict (torch.cuda.memory._snapshot())"), -1;
    const json_t *traces = json_object_get(snap, "device_traces");
    const json_t *segments = json_object_get(snap, "segments");
    if (!json_is_array(traces))
        return snprintf(err, errlen, "'device_traces' is %s (was the snapshot recorded with "
                        "_record_memory_history?)", traces ? "not a list" : "missing"), -1;
    if (segments && !json_is_array(segments))
        return snprintf(err, errlen, "'segments' is not a list"), -1;
    if (o->device < 0 || (size_t)o->device >= json_array_size(traces))
        return snprintf(err, errlen, "device %d: the snapshot has traces of %zu device%s",
                        o->device, json_array_size(traces),
                        json_array_size(traces) == 1 ? "" : "s"), -1;
    const json_t *trace = json_array_get(traces, (size_t)o->device);
    if (!json_is_array(trace))
        return snprintf(err, errlen, "device_traces[%d] is not a list", o->device), -1;

    im.capture = json_object_get(snap, "memlife_capture");
    if (im.capture) {
        const json_t *cw = json_object_get(im.capture, "world"), *cr = json_object_get(im.capture, "rank");
        const char *on = json_string_value(json_object_get(im.capture, "on"));
        if (!json_is_object(im.capture) || !json_is_integer(cw) || !json_is_integer(cr) || !on ||
            (strcmp(on, "fake") && strcmp(on, "cuda")))
            return snprintf(err, errlen, "'memlife_capture' is not a dict with an integer world "
                            "and rank and 'on' fake or cuda"), -1;
        im.world = json_integer_value(cw);
        im.rank = json_integer_value(cr);
        if (im.world < 1 || im.world > (1 << 20) || im.rank < 0 || im.rank >= im.world)
            return snprintf(err, errlen, "memlife_capture: rank %" PRId64 " of world %" PRId64
                            " is not a rank of a world of 1 to 1048576", im.rank, im.world), -1;
        im.on_fake = !strcmp(on, "fake");
    }
    /* a plain snapshot has no groups: every collective a memlife_step names is the world's */
    im.comms = import_comms_read(im.capture, im.capture ? im.world : 1, im.rank, err, errlen);
    if (!im.comms)
        return -1;
    im.arena = ml_arena_new();
    ml_vec_init(&im.colls, sizeof(capture_coll));
    ml_vec_init(&im.regions, sizeof(const char *));
    ml_vec_init(&im.steps, sizeof(step));
    ml_vec_init(&im.bufs, sizeof(buffer));
    ml_vec_init(&im.streams, sizeof(int64_t));
    ml_vec_init(&im.facts, sizeof(limit_fact));
    ml_vec_init(&im.seg_addrs, sizeof(uint64_t));
    *(int64_t *)ml_vec_push(&im.streams) = 0;
    ml_vec segs, live_blocks;
    ml_vec_init(&segs, sizeof(seg));
    ml_vec_init(&live_blocks, sizeof(blk));
    tev *ev = NULL;
    size_t n = 0;
    amap seg_at = {0}, blk_at = {0}, live = {0};
    ml_vec init_segs, init_blocks;
    ml_vec_init(&init_segs, sizeof(seg));
    ml_vec_init(&init_blocks, sizeof(blk));
    int64_t reserved_final, allocated_final;
    im.n_devices = (int)json_array_size(traces);
    int rc = read_trace(&im, trace, o->device, &ev, &n);
    im.ev = rc ? NULL : ev;
    if (!rc)
        rc = read_segments(&im, segments, o->device, &segs, &live_blocks, &reserved_final,
                           &allocated_final);
    if (!rc)
        rc = check_settings(&im, snap, &segs);
    if (!rc)
        rc = check_pending(&im, ev, n, &live_blocks);
    if (!rc && (segs.n > UINT32_MAX / 2 || live_blocks.n + n > UINT32_MAX / 2))
        rc = fail(&im, "too many events or blocks");
    if (rc)
        goto out;

    /* Walk the trace back from the final state (memory_viz's reconstruction): an alloc did not
     * exist before it, a freed block that the trace never allocated did; a segment_alloc did
     * not exist before it, a segment_free'd one did. What is left existed when recording
     * began. The segment events' sizes give reserved along the way. */
    for (size_t k = 0; k < segs.n; k++)
        amap_put(&seg_at, ML_VEC_AT(&segs, seg, k).addr, (uint32_t)k);
    for (size_t k = 0; k < live_blocks.n; k++)
        amap_put(&blk_at, ML_VEC_AT(&live_blocks, blk, k).addr, (uint32_t)k);
    int64_t delta = 0;
    for (size_t i = n; i-- > 0;) {
        const tev *e = &ev[i];
        switch (e->a) {
        case A_ALLOC: amap_take(&blk_at, e->addr); break;
        case A_FREE_REQ:
            if (amap_find(&blk_at, e->addr) < 0) {
                blk *x = ml_vec_push(&live_blocks);
                *x = (blk){e->addr, round512(e->size), e->size, e->stream, NULL, NULL};
                amap_put(&blk_at, e->addr, (uint32_t)(live_blocks.n - 1));
            }
            break;
        case A_SEG_ALLOC: amap_take(&seg_at, e->addr); break;
        case A_SEG_FREE:
            if (amap_find(&seg_at, e->addr) < 0) {
                seg *g = ml_vec_push(&segs);
                *g = (seg){e->addr, e->size, e->stream, e->size == SMALL_SEGMENT, false};
                amap_put(&seg_at, e->addr, (uint32_t)(segs.n - 1));
            }
            break;
        default: break;
        }
        if (e->a == A_SEG_ALLOC || e->a == A_SEG_MAP)
            delta += e->size;
        else if (e->a == A_SEG_FREE || e->a == A_SEG_UNMAP)
            delta -= e->size;
    }
    int64_t reserved0 = reserved_final - delta;
    if (reserved0 < 0) {
        rc = fail(&im, "device %d: the trace's segment events add %" PRId64 " bytes, more than "
                  "the %" PRId64 " bytes of the final segments (an incomplete snapshot?)",
                  o->device, delta, reserved_final);
        goto out;
    }
    for (size_t k = 0; k < blk_at.cap; k++)
        if (blk_at.used[k])
            *(blk *)ml_vec_push(&init_blocks) = ML_VEC_AT(&live_blocks, blk, blk_at.val[k]);
    /* An expandable segment is created empty and grows by segment_map: one that the trace never
     * allocated existed before recording only if it held memory then (one of the blocks). */
    for (size_t k = 0; k < seg_at.cap; k++) {
        if (!seg_at.used[k])
            continue;
        const seg *g = &ML_VEC_AT(&segs, seg, seg_at.val[k]);
        bool holds = !g->expandable;
        for (size_t j = 0; j < init_blocks.n && !holds; j++) {
            uint64_t a = ML_VEC_AT(&init_blocks, blk, j).addr;
            holds = a >= g->addr && a < g->addr + (uint64_t)g->size;
        }
        if (holds)
            *(seg *)ml_vec_push(&init_segs) = *g;
    }
    st->initial_segments = init_segs.n;
    st->initial_blocks = init_blocks.n;
    prelude(&im, init_segs.items, init_segs.n, init_blocks.items, init_blocks.n, &live, st);
    st->prelude_steps = im.steps.n;
    /* the prelude makes the initial segments highest address first, one cudaMalloc each */
    for (size_t k = 0; k < init_segs.n; k++)
        if (!ML_VEC_AT(&init_segs, seg, k).expandable)
            *(uint64_t *)ml_vec_push(&im.seg_addrs) = ML_VEC_AT(&init_segs, seg, k).addr;
    rc = replay_trace(&im, ev, n, o->device, &live, &init_segs, reserved0);
    if (!rc && im.n_partial && im.capture)
        rc = fail(&im, "device_traces[%d][%zu]: the allocator gave back only some cached "
                  "segments during the capture (memory pressure): capture with more free memory",
                  o->device, im.first_partial);
    if (!rc && im.n_partial)
        rc = infer_constant(&im, ev, n, o->device, reserved0, st->prelude_steps);
    if (rc)
        goto out;
    if (im.overflow) {
        rc = fail(&im, "the requested bytes overflow 64 bits");
        goto out;
    }

    /* the snapshot's reserved over the trace, from the state before recording */
    int64_t r = reserved0;
    st->reserved_peak = r;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].a == A_SEG_ALLOC || ev[i].a == A_SEG_MAP)
            r += ev[i].size;
        else if (ev[i].a == A_SEG_FREE || ev[i].a == A_SEG_UNMAP)
            r -= ev[i].size;
        if (r > st->reserved_peak)
            st->reserved_peak = r;
    }
    st->events = n;
    st->steps = im.steps.n;
    st->reserved_final = reserved_final;
    st->allocated_final = allocated_final;
    st->requested_peak = im.requested_peak;
    st->requested_final = im.requested;
    st->deferred_frees = im.n_deferred;

    ml_str doc = {0};
    rc = write_doc(&im, snap, st, &doc);
    if (rc)
        ml_str_free(&doc);
    else {
        *yaml = doc.s;
        *len = doc.n;
    }
out:
    free(ev);
    amap_free(&seg_at);
    amap_free(&blk_at);
    amap_free(&live);
    amap_free(&im.capture_events);
    ml_vec_free(&segs);
    ml_vec_free(&live_blocks);
    ml_vec_free(&init_segs);
    ml_vec_free(&init_blocks);
    ml_vec_free(&im.steps);
    ml_vec_free(&im.bufs);
    ml_vec_free(&im.streams);
    ml_vec_free(&im.facts);
    ml_vec_free(&im.seg_addrs);
    ml_vec_free(&im.colls);
    ml_vec_free(&im.regions);
    import_comms_free(im.comms);
    free(im.names);
    ml_arena_free(im.arena);
    return rc;
}
