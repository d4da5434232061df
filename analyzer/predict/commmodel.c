/* SPDX-License-Identifier: MIT */
/* commmodel.c — NCCL's device memory by its rules (commmodel.h says which, and what was
 * measured). One table of constants, one function that names every term it adds. */
#include "predict/commmodel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

/* What NCCL 2.28.3 and the H200 fix; each from the source file or measurement named (the
 * library's constant, per GPU kind: commmodel_gpus; H200: 580 - 4 - 64 x 6 MiB = 192 MiB at world
 * 1, and 208 - 4 - 2 x 6 = 192 with NCCL_MAX_NCHANNELS=2). */
static const struct {
    uint64_t granule;          /* cuMemGetAllocationGranularity, minimum: 2 MiB (alloc.h) */
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

const char *const commmodel_gpu_names[] = {"h100-80gb", "h200", "a100-80gb", "a100-40gb", NULL};

/* The per-process constant and the CUDA context by kind (driver 580.159.04, CUDA 13.0): H100
 * 80GB HBM3 586 - 4 - 64 x 6 = 198 MiB (tests/gpu/fixtures/nccl_split_h100.jsonl, stage "init
 * world"; 214 - 4 - 2 x 6 at NCCL_MAX_NCHANNELS=2); its context is the stage "context" less the
 * 64 MiB buffer the probe allocates before it (619511808 - 67108864 = 552402944 B, the H200's
 * to the byte); H200 as K.library said before the kinds. The A100s have not been measured. */
const commmodel_gpu commmodel_gpus[] = {
    {true, 198 * MiB, 619511808 - 67108864, "H100 80GB"},
    {true, 192 * MiB, COMMMODEL_CUDA_CONTEXT_BYTES, "H200"},
    {false, 0, 0, "A100 80GB"},
    {false, 0, 0, "A100 40GB"},
};
_Static_assert(ML_ARRAY_LEN(commmodel_gpus) + 1 == ML_ARRAY_LEN(commmodel_gpu_names),
               "a row per GPU kind");

int commmodel_gpu_find(const char *name) {
    for (int k = 0; commmodel_gpu_names[k]; k++)
        if (!strcmp(commmodel_gpu_names[k], name))
            return k;
    return -1;
}

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
    v = env_num(get, "NCCL_COMM_SPLIT_SHARE_RESOURCES");
    e->split_share = v < 0 ? -1 : v != 0;
}

static void term(commmodel_out *o, int comm, int stage, const char *name, uint64_t bytes,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void term(commmodel_out *o, int comm, int stage, const char *name, uint64_t bytes,
                 const char *fmt, ...) {
    if (o->n_terms == o->cap_terms) {
        o->cap_terms = o->cap_terms ? 2 * o->cap_terms : 16;
        o->terms = ml_xrealloc(o->terms, (size_t)o->cap_terms * sizeof *o->terms);
    }
    commmodel_term *t = &o->terms[o->n_terms++];
    t->name = name;
    t->comm = comm;
    t->stage = stage;
    t->bytes = bytes;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->detail, sizeof t->detail, fmt, ap);
    va_end(ap);
    o->comms[comm].stage_bytes[stage] += bytes;
    o->comms[comm].total += bytes;
    o->total += bytes;
}

/* Bytes of one ring's connections on one channel: a receive from prev and a send to next. */
static uint64_t ring_bytes(uint64_t ll, uint64_t ll128, uint64_t simple, bool read,
                           uint64_t *recv, uint64_t *send) {
    *recv = granules(K.conn_header + ll + ll128 + (read ? 0 : simple));
    *send = granules(K.conn_header + (read ? simple : 0));
    return *recv + *send;
}

/* The collective channels of a communicator of n ranks: MAXCHANNELS alone, the search's answer
 * over NVLink otherwise, within NCCL_MIN/MAX_NCHANNELS. */
static int channels(const commmodel_env *e, int n) {
    int ch = n == 1 ? K.max_channels : K.channels_multi;
    if (e->min_nchannels > 0 && ch < e->min_nchannels)
        ch = e->min_nchannels;
    if (e->max_nchannels > 0 && ch > e->max_nchannels)
        ch = e->max_nchannels;
    return ch;
}

static const char *check_input(const commmodel_in *in) {
    if (in->world < 1 || in->world > (1 << 20))
        return "world outside 1 .. 2^20";
    if (in->gpus_per_node != in->world)
        return "only one node (every rank's GPU over NVLink) is modelled";
    if (in->gpu < 0 || in->gpu >= (int)ML_ARRAY_LEN(commmodel_gpus))
        return "unknown GPU kind";
    if (!commmodel_gpus[in->gpu].measured)
        return "NCCL's memory on this GPU kind is not measured (measured: h100-80gb, h200)";
    if (in->n_comms < 1 || !in->comms)
        return "no world communicator";
    for (int c = 0; c < in->n_comms; c++)
        if (in->comms[c].size < 1 || in->comms[c].size > in->world || (c == 0 && in->comms[c].size != in->world))
            return "a communicator's group outside 1 .. the world (the first: the world)";
    for (int k = 0; k < in->n_uses; k++)
        if (in->uses[k].comm >= in->n_comms || in->uses[k].coll >= COLL_COUNT)
            return "a first use of a communicator or collective not in the list";
    return NULL;
}

int commmodel_predict(const commmodel_in *in, commmodel_out *o, const char **why) {
    memset(o, 0, sizeof *o);
    o->gpu = in->gpu;
    if ((*why = check_input(in)))
        return -1;
    const commmodel_env *e = &in->env;
    uint64_t ll = e->ll_buffsize >= 0 ? (uint64_t)e->ll_buffsize : K.ll;
    uint64_t ll128 = e->ll128_buffsize >= 0 ? (uint64_t)e->ll128_buffsize : K.ll128;
    uint64_t simple = e->buffsize >= 0 ? (uint64_t)e->buffsize : K.simple;
    bool read = e->p2p_read != 0;     /* default: on over NVLink on sm80 and later (p2p.cc) */
    bool lazy = e->runtime_connect != 0;
    uint64_t recv, send, ring = ring_bytes(ll, ll128, simple, read, &recv, &send);
    const commmodel_gpu *g = &commmodel_gpus[in->gpu];

    o->n_comms = in->n_comms;
    o->comms = ml_xcalloc((size_t)in->n_comms, sizeof *o->comms);
    term(o, 0, 0, "library", g->library, "NCCL's kernels and runtime state, once per process "
         "(measured on %s)", g->label);
    bool unshared_split = false, kernel = false;
    for (int c = 0; c < in->n_comms; c++) {
        commmodel_comm_out *co = &o->comms[c];
        int n = in->comms[c].size, ch = channels(e, n);
        /* the environment's NCCL_COMM_SPLIT_SHARE_RESOURCES wins over the config (init.cc) */
        bool shares = c > 0 && (e->split_share >= 0 ? e->split_share == 1 : in->comms[c].share);
        co->name = in->comms[c].name;
        co->size = n;
        co->share = shares;
        co->channels = ch;
        co->n_stages = 1;
        co->stage_name[0] = "init";
        term(o, c, 0, "device comm", granules(23648) + granules(4 * (uint64_t)n),
             "devComm + channel table, rankToLocalRank: a 2 MiB granule each");
        /* With splitShare the channel's shared devPeers are the parent's (channel.cc). */
        uint64_t per_channel = (shares ? 0 : granules(K.dev_peer_bytes * (uint64_t)n)) +
                               granules(8 * ((uint64_t)n + 1)) + granules(4 * (uint64_t)n);
        term(o, c, 0, "channels", ch * per_channel, "%d channels x (%sdevPeers + ring userRanks), "
             "%llu MiB each", ch, shares ? "" : "shared devPeers + ",
             (unsigned long long)(per_channel / MiB));
        if (c > 0 && !shares && !unshared_split) {
            unshared_split = true;
            term(o, c, 0, "first unshared split", K.granule,
                 "one granule at the first split without splitShare, once per process (measured)");
        }
        if (c == 0)
            term(o, c, 0, "work fifo", 0, "%lld B of pinned host memory, none on the device",
                 (long long)(e->work_fifo_bytes >= 0 ? e->work_fifo_bytes : 1 << 20));
        if (lazy)
            continue;
        if (!shares) {   /* a sharing split uses the parent's proxy and its buffer */
            /* p2p channels: pow2Up(min(nChannels, 64)) (graph/paths.cc); chunk over NVLink capped
             * at Simple / NCCL_STEPS (init.cc computeBuffSizes). */
            int p2p = 1;
            while (p2p < ch)
                p2p *= 2;
            uint64_t chunk = K.p2p_chunk_nvl < simple / 8 ? K.p2p_chunk_nvl : simple / 8;
            term(o, c, 0, "proxy shared p2p", granules((uint64_t)p2p * K.shared_steps * chunk),
                 "%d p2p channels x %llu steps x %llu KiB (NCCL_RUNTIME_CONNECT=0)", p2p,
                 (unsigned long long)K.shared_steps, (unsigned long long)(chunk / KiB));
        }
        if (n > 1) {
            term(o, c, 0, "rings", ch * ring, "%d channels x (recv %llu + send %llu MiB)%s", ch,
                 (unsigned long long)(recv / MiB), (unsigned long long)(send / MiB),
                 c ? "; a split's: not measured" : "");
            if (!kernel)
                term(o, c, 0, "first kernel", K.first_kernel, "local memory of NCCL's first kernel");
            kernel = true;
        }
    }
    /* Lazy: a communicator's first collective connects its rings (every collective of the table
     * runs on them at one node), the process's first one launches the first kernel; the later
     * ones add nothing (measured at world 2: ReduceScatter and AllGather after AllReduce). At a
     * group of 1 none does: a one-rank collective is a copy or nothing (measured: 0 bytes at
     * each, on the world and on splits). */
    for (int k = 0; k < in->n_uses; k++) {
        int c = in->uses[k].comm;
        commmodel_comm_out *co = &o->comms[c];
        if (co->n_stages == COMMMODEL_MAX_STAGES) {
            *why = "a collective's first use twice on one communicator";
            return -1;
        }
        int st = co->n_stages++;
        co->stage_name[st] = ml_colls[in->uses[k].coll].name;
        if (!lazy || co->size == 1 || st != 1)
            continue;
        term(o, c, st, "rings", co->channels * ring, "%d channels x (recv %llu + send %llu MiB)%s",
             co->channels, (unsigned long long)(recv / MiB), (unsigned long long)(send / MiB),
             c ? "; a split's: not measured" : "");
        if (!kernel)
            term(o, c, st, "first kernel", K.first_kernel, "local memory of NCCL's first kernel");
        kernel = true;
    }
    return 0;
}

void commmodel_out_free(commmodel_out *o) {
    free(o->comms);
    free(o->terms);
    memset(o, 0, sizeof *o);
}

static const char *env_get(const char *name) { return getenv(name); }

int commmodel_for_plan(const rank_plan *p, int gpu, commmodel_out *out, const char **why) {
    uint32_t n_sched = p->comms ? ml_comms_count(p->comms) : 1;
    commmodel_comm *cs = ml_xcalloc(n_sched, sizeof *cs);
    int *at = ml_xcalloc(n_sched, sizeof *at);   /* a schedule communicator's index in cs */
    cs[0] = (commmodel_comm){"world", p->world, false};
    int n = 1;
    for (uint32_t c = 1; c < n_sched; c++) {
        int size = ml_comms_size(p->comms, c, p->rank);
        at[c] = size > 0 ? n : -1;   /* NCCL_SPLIT_NOCOLOR: no communicator, no memory */
        if (size > 0)
            cs[n++] = (commmodel_comm){ml_comms_name(p->comms, c), size,
                                       ml_comms_def(p->comms, c)->share};
    }
    plan_comm_use *uses;
    uint32_t nu = plan_comm_first_uses(p, &uses), m = 0;
    for (uint32_t k = 0; k < nu; k++)   /* lint reports a collective of a rank in no group */
        if (uses[k].comm < n_sched && at[uses[k].comm] >= 0)
            uses[m++] = (plan_comm_use){(uint16_t)at[uses[k].comm], uses[k].coll};
    commmodel_in in = {.world = p->world, .gpus_per_node = p->world, .gpu = gpu, .comms = cs,
                       .n_comms = n, .uses = uses, .n_uses = (int)m};
    commmodel_env_read(&in.env, env_get);
    int rc = commmodel_predict(&in, out, why);
    free(uses);
    free(at);
    free(cs);
    return rc;
}
