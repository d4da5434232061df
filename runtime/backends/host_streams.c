/* SPDX-License-Identifier: MIT */
/* host_streams.c — queues of stream work for the host backend's --stream-order (host_streams.h).
 *
 * Each stream is a FIFO of entries: work (a function and a copy of its arguments) or a barrier,
 * written by `wait`: "stream s must have run n entries first", where n is how many entries s had
 * when the event was recorded. Because the recorded count includes s's own earlier barriers, an
 * event carries everything s waited for (transitive order, as CUDA events do). Counts only grow,
 * so an event recorded before a flush is already satisfied after it.
 *
 * hs_flush repeatedly pops satisfied barriers (until none moves) and runs the head of one stream
 * among those whose head is work: program takes the one queued first, reverse the one queued last, shuffle one at
 * random (splitmix64 of the seed). Program order is always a legal sequence, so some head is
 * runnable until all queues are empty. */
#include "backends/host_streams.h"
#include "base/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    hs_run_fn run;        /* NULL: a barrier */
    void *item;
    uint64_t order;       /* global push number: program order */
    uint32_t dep_stream;  /* barrier: this stream must have run dep_count entries */
    uint64_t dep_count;
} hs_entry;

typedef struct {
    hs_entry *q;
    size_t head, n, cap;  /* entries [head, n) are queued */
    uint64_t pushed, done;   /* entries ever queued / run, never reset */
} hs_stream;

typedef struct {
    bool recorded;
    uint32_t stream;
    uint64_t count;
} hs_event;

static struct {
    hs_order o;
    uint64_t rng, next_order;
    hs_stream *streams;
    uint32_t n_streams;
    hs_event *events;
    uint32_t n_events;
} hs;

int hs_parse(const char *text, hs_order *out, char *err, size_t len) {
    *out = (hs_order){.kind = HS_PROGRAM, .seed = 1};
    if (!strcmp(text, "program"))
        return 0;
    if (!strcmp(text, "reverse")) {
        out->kind = HS_REVERSE;
        return 0;
    }
    if (!strncmp(text, "shuffle", 7) && (text[7] == '\0' || text[7] == ':')) {
        out->kind = HS_SHUFFLE;
        if (text[7] == ':') {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(text + 8, &end, 10);
            if (errno || end == text + 8 || *end || text[8] == '-') {
                snprintf(err, len, "--stream-order shuffle:SEED takes a decimal seed, not '%s'",
                         text + 8);
                return -1;
            }
            out->seed = v;
        }
        return 0;
    }
    snprintf(err, len, "--stream-order takes program, reverse or shuffle[:SEED], not '%s'", text);
    return -1;
}

static void *grow(void *p, size_t *cap, size_t want, size_t size) {
    if (want <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < want)
        c *= 2;
    p = ml_xrealloc(p, c * size);
    memset((char *)p + *cap * size, 0, (c - *cap) * size);
    *cap = c;
    return p;
}

/* Element `at` of a table that grows on demand (streams and events are symbols, small). */
static void *table_at(void **items, uint32_t *n, uint32_t at, size_t size) {
    if (at >= *n) {
        size_t cap = *n;
        *items = grow(*items, &cap, (size_t)at + 1, size);
        *n = (uint32_t)cap;
    }
    return (char *)*items + (size_t)at * size;
}

static hs_stream *stream_at(uint32_t s) {
    return table_at((void **)&hs.streams, &hs.n_streams, s, sizeof *hs.streams);
}

static hs_event *event_at(uint32_t e) {
    return table_at((void **)&hs.events, &hs.n_events, e, sizeof *hs.events);
}

void hs_begin(const hs_order *o) {
    hs_end();
    hs.o = *o;
    hs.rng = o->seed;
}

bool hs_deferring(void) { return hs.o.kind != HS_PROGRAM; }

static hs_entry *push_entry(uint32_t stream) {
    hs_stream *st = stream_at(stream);
    st->q = grow(st->q, &st->cap, st->n + 1, sizeof *st->q);
    hs_entry *e = &st->q[st->n++];
    st->pushed++;
    *e = (hs_entry){.order = hs.next_order++};
    return e;
}

void hs_push(uint32_t stream, hs_run_fn run, const void *item, size_t size) {
    void *copy = ml_xmalloc(size ? size : 1);
    memcpy(copy, item, size);
    hs_entry *e = push_entry(stream);
    e->run = run;
    e->item = copy;
}

void hs_record(uint32_t event, uint32_t stream) {
    hs_event *ev = event_at(event);
    *ev = (hs_event){.recorded = true, .stream = stream, .count = stream_at(stream)->pushed};
}

void hs_wait(uint32_t event, uint32_t stream) {
    hs_event *ev = event_at(event);
    if (!ev->recorded || ev->stream == stream)
        return;   /* nothing to wait for, or program order already */
    hs_entry *e = push_entry(stream);
    e->dep_stream = ev->stream;
    e->dep_count = ev->count;
}

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Pops the satisfied barriers at the head of st (setting *popped); true when its head is then
 * work to run. */
static bool runnable(hs_stream *st, bool *popped) {
    while (st->head < st->n && !st->q[st->head].run) {
        const hs_entry *b = &st->q[st->head];
        if (b->dep_stream < hs.n_streams && hs.streams[b->dep_stream].done < b->dep_count)
            return false;
        st->head++;
        st->done++;
        *popped = true;
    }
    return st->head < st->n;
}

static void drop_queued(void) {
    for (uint32_t s = 0; s < hs.n_streams; s++) {
        hs_stream *st = &hs.streams[s];
        for (size_t k = st->head; k < st->n; k++)
            free(st->q[k].item);
        st->done += st->n - st->head;
        st->head = st->n = 0;
    }
}

int hs_flush(char *err, size_t len) {
    for (;;) {
        /* pop barriers until none moves (one freed may free another), then pick among heads */
        bool popped;
        do {
            popped = false;
            for (uint32_t s = 0; s < hs.n_streams; s++)
                runnable(&hs.streams[s], &popped);
        } while (popped);
        uint32_t pick = UINT32_MAX, n_ready = 0;
        uint32_t ready[64];
        for (uint32_t s = 0; s < hs.n_streams; s++) {
            hs_stream *st = &hs.streams[s];
            if (st->head == st->n || !st->q[st->head].run)
                continue;
            uint64_t o = st->q[st->head].order;
            if (pick == UINT32_MAX ||
                (hs.o.kind == HS_REVERSE ? o > hs.streams[pick].q[hs.streams[pick].head].order
                                         : o < hs.streams[pick].q[hs.streams[pick].head].order))
                pick = s;
            if (n_ready < 64)
                ready[n_ready++] = s;
        }
        if (pick == UINT32_MAX)
            break;
        if (hs.o.kind == HS_SHUFFLE)
            pick = ready[splitmix64(&hs.rng) % n_ready];
        hs_stream *st = &hs.streams[pick];
        hs_entry e = st->q[st->head++];
        st->done++;
        int rc = e.run(e.item, err, len);
        free(e.item);
        if (rc) {
            drop_queued();
            return -1;
        }
    }
    /* Nothing can be left: the earliest-queued entry not run waits only for entries queued
     * before it, all run, so the popping above frees it; so every queue is empty here. */
    for (uint32_t s = 0; s < hs.n_streams; s++) {
        hs.streams[s].done = hs.streams[s].pushed;
        hs.streams[s].head = hs.streams[s].n = 0;
    }
    return 0;
}

void hs_end(void) {
    drop_queued();
    for (uint32_t s = 0; s < hs.n_streams; s++)
        free(hs.streams[s].q);
    free(hs.streams);
    free(hs.events);
    memset(&hs, 0, sizeof hs);
}
