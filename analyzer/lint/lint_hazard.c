/* SPDX-License-Identifier: MIT */
/* lint_hazard.c — what the host and each stream know to be complete: vector clocks over
 * per-stream sequence numbers (lint_int.h).
 *
 * A free is host-side: under cudaFreeAsync on the default stream it is ordered after the default
 * stream's earlier work and whatever that stream waited on; under plain cudaFree the driver
 * synchronizes the device behind the program's back. So an op on another stream is safely done
 * only when the host waited for it (sync device / stream / event) or the default stream waited
 * on an event recorded after it. */
#include "lint/lint_int.h"

#include <stdlib.h>
#include <string.h>

static void *zalloc(size_t n, size_t size) {
    void *p = ml_xcalloc(n ? n : 1, size);
    return p;
}

void lint_clocks_init(lint_clocks *c, uint32_t n_streams, uint32_t n_events) {
    c->n_streams = n_streams ? n_streams : 1;
    c->n_events = n_events;
    size_t n = c->n_streams;
    c->seq = zalloc(n, sizeof *c->seq);
    c->clock = zalloc(n * n, sizeof *c->clock);
    c->event = zalloc((size_t)n_events * n, sizeof *c->event);
    c->recorded = zalloc(n_events, sizeof *c->recorded);
    c->host = zalloc(n, sizeof *c->host);
}

void lint_clocks_reset(lint_clocks *c) {
    size_t n = c->n_streams;
    memset(c->seq, 0, n * sizeof *c->seq);
    memset(c->clock, 0, n * n * sizeof *c->clock);
    memset(c->event, 0, (size_t)c->n_events * n * sizeof *c->event);
    memset(c->recorded, 0, c->n_events * sizeof *c->recorded);
    memset(c->host, 0, n * sizeof *c->host);
}

void lint_clocks_free(lint_clocks *c) {
    free(c->seq);
    free(c->clock);
    free(c->event);
    free(c->recorded);
    free(c->host);
    memset(c, 0, sizeof *c);
}



static void max_into(uint64_t *dst, const uint64_t *src, uint32_t n) {
    for (uint32_t u = 0; u < n; u++)
        if (src[u] > dst[u])
            dst[u] = src[u];
}


void lint_clocks_sync(lint_clocks *c, sched_sync_kind kind, uint32_t stream, uint32_t event) {
    switch (kind) {
    case SYNC_DEVICE:
        memcpy(c->host, c->seq, c->n_streams * sizeof *c->host);
        break;
    case SYNC_STREAM:
        if (stream >= c->n_streams)
            break;
        max_into(c->host, &c->clock[(size_t)stream * c->n_streams], c->n_streams);
        if (c->seq[stream] > c->host[stream])
            c->host[stream] = c->seq[stream];
        break;
    case SYNC_EVENT:
        if (event < c->n_events)
            max_into(c->host, &c->event[(size_t)event * c->n_streams], c->n_streams);
        break;
    }
}

