/* SPDX-License-Identifier: MIT */
/* commmodel.c — NCCL's device memory by its rules (commmodel.h says which, and what was
 * measured). One table of constants, one function that names every term it adds. */
#include "predict/commmodel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

/* What NCCL 2.28.3 and the H200 fix; each from the source file or measurement named. */
static const struct {
    uint64_t granule;          /* cuMemGetAllocationGranularity, minimum: 2 MiB (alloc.h) */
    uint64_t library;          /* kernels + runtime state at init: 580 - 4 - 64 x 6 MiB = 192 MiB
                                * at world 1, and 208 - 4 - 2 x 6 = 192 with NCCL_MAX_NCHANNELS=2 */
    uint64_t first_kernel;     /* first NCCL kernel's local memory: 474 - 32 x 12 = 90 MiB (2 x H200) */
    uint64_t conn_header;      /* sizeof(struct ncclSendMem) = sizeof(struct ncclRecvMem) = MEM_ALIGN */
    uint64_t ll, ll128, simple;   /* DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE, DEFAULT_BUFFSIZE */
    uint64_t p2p_chunk_nvl;    /* NCCL_P2P_NVL_CHUNKSIZE default (init.cc) */
    uint64_t shared_steps;     /* NCCL_SHARED_STEPS (device.h) */
    uint64_t dev_peer_bytes;   /* sizeof(struct ncclDevChannelPeer): 608 B (ALLOC log, channel.cc:42) */
    int max_channels;          /* MAXCHANNELS: the channels of a one-GPU communicator (ALLOC log) */
    int channels_multi;        /* channels NCCL's search gives 2 x H200 over NVLink: (388 - 196) / 6 */
} K = {
    .granule = 2 * MiB,
    .library = 192 * MiB,
    .first_kernel = 90 * MiB,
    .conn_header = 4096,
    .ll = 8 * 512 * 8 * 16,           /* LL lines per thread x threads x NCCL_STEPS x 16 B */
    .ll128 = 120 * 640 * 8 * 8,       /* elements per thread x threads x NCCL_STEPS x 8 B */
    .simple = 4 * MiB,
    .p2p_chunk_nvl = 512 * KiB,
    .shared_steps = 16,
    .dev_peer_bytes = 608,
    .max_channels = 64,
    .channels_multi = 32,
};

static uint64_t granules(uint64_t bytes) { return (bytes + K.granule - 1) / K.granule * K.granule; }

static long long env_num(const char *(*get)(const char *), const char *name) {
    const char *v = get(name);
    if (!v || !*v)
        return -1;
    char *end;
    long long x = strtoll(v, &end, 0);
    return *end || x < 0 ? -1 : x;
}

void commmodel_env_read(commmodel_env *e, const char *(*get)(const char *)) {
    e->buffsize = env_num(get, "NCCL_BUFFSIZE");
    e->ll_buffsize = env_num(get, "NCCL_LL_BUFFSIZE");
    e->ll128_buffsize = env_num(get, "NCCL_LL128_BUFFSIZE");
    long long v = env_num(get, "NCCL_MIN_NCHANNELS");
    e->min_nchannels = v > 0 && v <= K.max_channels ? (int)v : -1;
    v = env_num(get, "NCCL_MAX_NCHANNELS");
    e->max_nchannels = v > 0 && v <= K.max_channels ? (int)v : -1;
    v = env_num(get, "NCCL_RUNTIME_CONNECT");
    e->runtime_connect = v < 0 ? -1 : v != 0;
    v = env_num(get, "NCCL_P2P_READ_ENABLE");
    e->p2p_read = v < 0 ? -1 : v != 0;
    e->work_fifo_bytes = env_num(get, "NCCL_WORK_FIFO_BYTES");
}

static void term(commmodel_out *o, int stage, const char *name, uint64_t bytes, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));
static void term(commmodel_out *o, int stage, const char *name, uint64_t bytes, const char *fmt,
                 ...) {
    if (o->n_terms >= COMMMODEL_MAX_TERMS)
        return;
    commmodel_term *t = &o->terms[o->n_terms++];
    t->name = name;
    t->stage = stage;
    t->bytes = bytes;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->detail, sizeof t->detail, fmt, ap);
    va_end(ap);
    o->stage_bytes[stage] += bytes;
    o->total += bytes;
}

/* Bytes of one ring's connections on one channel: a receive from prev and a send to next. */
static uint64_t ring_bytes(uint64_t ll, uint64_t ll128, uint64_t simple, bool read,
                           uint64_t *recv, uint64_t *send) {
    *recv = granules(K.conn_header + ll + ll128 + (read ? 0 : simple));
    *send = granules(K.conn_header + (read ? simple : 0));
    return *recv + *send;
}

int commmodel_predict(const commmodel_in *in, commmodel_out *o, const char **why) {
    memset(o, 0, sizeof *o);
    *why = NULL;
    if (in->world < 1 || in->world > (1 << 20)) {
        *why = "world outside 1 .. 2^20";
        return -1;
    }
    if (in->n_first_use < 0 || in->n_first_use > COLL_COUNT) {
        *why = "more first uses than collectives";
        return -1;
    }
    if (in->gpus_per_node != in->world) {
        *why = "only one node (every rank's GPU over NVLink) is modelled";
        return -1;
    }
    const commmodel_env *e = &in->env;
    int n = in->world;
    uint64_t ll = e->ll_buffsize >= 0 ? (uint64_t)e->ll_buffsize : K.ll;
    uint64_t ll128 = e->ll128_buffsize >= 0 ? (uint64_t)e->ll128_buffsize : K.ll128;
    uint64_t simple = e->buffsize >= 0 ? (uint64_t)e->buffsize : K.simple;
    bool read = e->p2p_read != 0;     /* default: on over NVLink on sm80 and later (p2p.cc) */
    bool lazy = e->runtime_connect != 0;

    int ch = n == 1 ? K.max_channels : K.channels_multi;
    if (e->min_nchannels > 0 && ch < e->min_nchannels)
        ch = e->min_nchannels;
    if (e->max_nchannels > 0 && ch > e->max_nchannels)
        ch = e->max_nchannels;
    o->channels = ch;
    o->n_stages = 1 + in->n_first_use;
    o->stage_name[0] = "init";
    for (int k = 0; k < in->n_first_use; k++)
        o->stage_name[1 + k] = ml_colls[in->first_use[k]].name;

    term(o, 0, "library", K.library, "NCCL's kernels and runtime state at init (measured)");
    term(o, 0, "device comm", granules(23648) + granules(4 * (uint64_t)n),
         "devComm + channel table, rankToLocalRank: a 2 MiB granule each");
    uint64_t per_channel = granules(K.dev_peer_bytes * (uint64_t)n) +
                           granules(8 * ((uint64_t)n + 1)) + granules(4 * (uint64_t)n);
    term(o, 0, "channels", ch * per_channel,
         "%d channels x (shared devPeers + devPeers + ring userRanks), %llu MiB each", ch,
         (unsigned long long)(per_channel / MiB));
    term(o, 0, "work fifo", 0, "%lld B of pinned host memory, none on the device",
          (long long)(e->work_fifo_bytes >= 0 ? e->work_fifo_bytes : 1 << 20));

    uint64_t recv, send, ring = ring_bytes(ll, ll128, simple, read, &recv, &send);
    if (!lazy) {
        /* p2p channels: pow2Up(min(nChannels, 64)) (graph/paths.cc); chunk over NVLink capped
         * at Simple / NCCL_STEPS (init.cc computeBuffSizes). */
        int p2p = 1;
        while (p2p < ch)
            p2p *= 2;
        uint64_t chunk = K.p2p_chunk_nvl < simple / 8 ? K.p2p_chunk_nvl : simple / 8;
        term(o, 0, "proxy shared p2p", granules((uint64_t)p2p * K.shared_steps * chunk),
             "%d p2p channels x %llu steps x %llu KiB (NCCL_RUNTIME_CONNECT=0)", p2p,
             (unsigned long long)K.shared_steps, (unsigned long long)(chunk / KiB));
        if (n > 1) {
            term(o, 0, "rings", ch * ring, "%d channels x (recv %llu + send %llu MiB)", ch,
                 (unsigned long long)(recv / MiB), (unsigned long long)(send / MiB));
            term(o, 0, "first kernel", K.first_kernel, "local memory of NCCL's first kernel");
        }
        return 0;
    }
    /* Lazy: the first collective connects the rings (every collective of the table runs on
     * them at one node) and launches the first kernel; the later ones add nothing (measured at
     * world 2: ReduceScatter and AllGather after AllReduce). At world 1 none does: a one-rank
     * collective is a copy or nothing (measured: 0 bytes at each). */
    if (n > 1 && in->n_first_use > 0) {
        term(o, 1, "rings", ch * ring, "%d channels x (recv %llu + send %llu MiB)", ch,
             (unsigned long long)(recv / MiB), (unsigned long long)(send / MiB));
        term(o, 1, "first kernel", K.first_kernel, "local memory of NCCL's first kernel");
    }
    return 0;
}

static const char *env_get(const char *name) { return getenv(name); }

int commmodel_for_plan(const rank_plan *p, commmodel_out *out, const char **why) {
    ml_coll order[COLL_COUNT];
    int n = (int)plan_first_colls(p, order);
    commmodel_in in = {.world = p->world, .gpus_per_node = p->world, .first_use = order,
                       .n_first_use = n};
    commmodel_env_read(&in.env, env_get);
    return commmodel_predict(&in, out, why);
}
