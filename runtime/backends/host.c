/* SPDX-License-Identifier: MIT */
/* backend_host.c — the host backend: one Open MPI process per rank, buffers in host memory.
 *
 * What the schedule's terms mean here:
 *  - Buffers are host memory (page-aligned). A chunked buffer (`chunks: N`) is one anonymous
 *    mapping of the whole range; `release` unmaps every page that lies outside the kept chunk, the
 *    host's version of cuMemUnmap + cuMemRelease of the chunks not owned.
 *  - Collectives are MPI's blocking collectives on MPI_COMM_WORLD, or with `comm:` on the
 *    rank's group of that communicator (below), each completed before the next op starts, under the run's deadline (rt_mpi_call_begin/end: a watchdog thread):
 *    MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast, MPI_Reduce. The
 *    nonblocking forms polled to the deadline cost more: Open MPI's MPI_Iallreduce copies an
 *    in-place buffer into a temporary of its full size, and a 256 MiB in-place AllReduce at 2
 *    ranks took 1.23-1.32x the wall time of a minimal MPI program (tests/bench/host_mpi.sh).
 *    In-place ops follow NCCL's rules, which differ from MPI's for ReduceScatter (see coll_rs).
 *  - Streams and events: by default every op has completed when the next one starts, so all
 *    streams are serialized in program order; sync, record and wait are ordering no-ops that
 *    still appear in the measured timeline. A lifetime hazard between streams therefore cannot
 *    show on this backend; lint reports it from the schedule. --stream-order reverse|shuffle
 *    runs the streams' work in another order that respects record/wait (host_streams.h, the
 *    wrappers at the end of this file), so a race lint let through shows in the data.
 *  - Memory views: the host has no device view (mem_read says has_device = false); the requested
 *    view is the executor's own count.
 *  - MEMLIFE_HOST_MEM_LIMIT (bytes, units allowed: "2GiB"): allocations that would take the
 *    backend's live bytes past it fail, as a device would when full. Without it a huge request
 *    fails only when the kernel refuses it (Linux overcommits; 1 TiB on this machine is refused).
 *  - float16 / bfloat16 travel as 16-bit words; MPI has no 16-bit float type, so their reductions
 *    are MPI user ops over two tagged 16-bit datatypes that call data_combine: each operation is
 *    widened to float32, computed, and rounded to nearest even in the dtype, which for one sum or
 *    product of two 16-bit values is the correctly rounded result, the same as NCCL's __hadd /
 *    __hmul. What can differ from NCCL is the association order: NCCL's ring adds the ranks'
 *    values in ring order from a chunk's start rank (tree and NVLS algorithms in others), MPI in
 *    its own; floating-point sums of more than two values then may differ in the last bits, as
 *    for float32. Checks between such results need rtol, or integer data.
 *  - Communicators (`comms:`): at the rank's set-up, one MPI communicator per schedule
 *    communicator, MPI_Comm_split of MPI_COMM_WORLD with the rank's group as color (MPI_UNDEFINED
 *    where it is in none) and its rank within the group as key, so MPI's ranks in it are the
 *    group-local ranks the schedule writes (roots, peers, in-place offsets); freed when the rank
 *    ends. The splits are collectives over the world under the run's deadline, like any other.
 *  - send / recv are MPI_Isend / MPI_Irecv (a tag of their own), completed before the next step,
 *    or, inside a group, all at the group's end; every wait has the run's deadline.
 *  - avg (ncclAvg) is emulated as NCCL computes it (data.h): floats are multiplied by 1/world in
 *    the dtype into a temporary before an MPI sum, integers summed and then divided, truncating. */
#include "exec/rt.h"
#include "exec/inject.h"
#include "exec/mpi_util.h"
#include "exec/env.h"
#include "backends/host_streams.h"
#include "ir/data.h"

#include <string.h>

#ifdef MEMLIFE_HAVE_MPI

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    bool mapped;           /* chunked: one mmap; else posix_memalign */
    size_t map_bytes;      /* length of the mapping (page-rounded) */
    uint64_t keep_lo, keep_hi; /* byte range still mapped after release (page-rounded) */
    bool released;
} host_mem;

static struct {
    bool in_group;         /* between group_begin and group_end: send/recv are only posted */
    MPI_Request *group_reqs;
    size_t n_group, cap_group;
    double timeout_s;
    uint64_t mem_limit;    /* 0: none */
    uint64_t live_bytes;   /* what this backend holds now (its own number, for the limit) */
    int world, rank;
    /* The rank's MPI communicator per schedule communicator (comms.h), [0] MPI_COMM_WORLD;
     * MPI_COMM_NULL where the rank is in no group of it. NULL: the world is the only one. */
    MPI_Comm *comms;
    uint32_t n_comms;
} host;

static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}


static int h_init(const rt_options *o, int world, int first_rank, int local_ranks, char *err,
                  size_t len) {
    if (local_ranks != 1) {
        snprintf(err, len, "the host backend drives one rank per process (use --ranks N)");
        return -1;
    }
    memset(&host, 0, sizeof host);
    hs_order order;
    if (hs_parse(o->stream_order ? o->stream_order : "program", &order, err, len))
        return -1;
    hs_begin(&order);
    host.timeout_s = o->timeout_s;
    host.world = world;
    host.rank = first_rank;
    /* Checked before anything started (exec/env.h); read again here, where it applies. */
    if (ml_env_host_mem_limit(&host.mem_limit, err, len) != 0)
        return -1;
    if (rt_mpi_init(world, first_rank, o->timeout_s, err, len) != 0)
        return -1;
    /* MPI_COMM_WORLD is this backend's communicator: a rank delayed here leaves its peers in
     * their first exchange, whose deadline ends the job (delay=R@init). */
    rt_inject_before_init(o, first_rank, "its first exchange with its peers");
    return 0;
}

static void free16(void);
static void free_comms(void);
static void h_finalize(void) {
    free_comms();
    free16();
    free(host.group_reqs);
    host.group_reqs = NULL;
    host.cap_group = host.n_group = 0;
    rt_mpi_finalize();
}

/* What a deadline message says the rank waited in while its communicators were made. */
#define IN_SPLIT "in MPI_Comm_split, making the schedule's communicators"

static void free_comms(void) {
    for (uint32_t k = 1; k < host.n_comms; k++)
        if (host.comms[k] != MPI_COMM_NULL)
            MPI_Comm_free(&host.comms[k]);
    free(host.comms);
    host.comms = NULL;
    host.n_comms = 0;
}

/* Every rank splits the world once per communicator, in the schedule's order, so the splits
 * pair up across ranks; a rank in no group of one still takes part (MPI_UNDEFINED). */
static int h_rank_init(rt_rank *r, char *err, size_t len) {
    const ml_comms *cs = r->plan->comms;
    free_comms();
    if (!cs)
        return 0;
    host.n_comms = ml_comms_count(cs);
    host.comms = ml_xcalloc(host.n_comms, sizeof *host.comms);
    host.comms[0] = MPI_COMM_WORLD;
    for (uint32_t k = 1; k < host.n_comms; k++) {
        int group = ml_comms_group(cs, k, r->rank);
        int key = ml_comms_local(cs, k, r->rank);
        rt_mpi_call_begin(r, IN_SPLIT);
        int rc = MPI_Comm_split(MPI_COMM_WORLD, group < 0 ? MPI_UNDEFINED : group,
                                key < 0 ? 0 : key, &host.comms[k]);
        rt_mpi_call_end(r, rc, IN_SPLIT);
        int size = 0;
        if (group >= 0 && (host.comms[k] == MPI_COMM_NULL ||
                           MPI_Comm_size(host.comms[k], &size) != MPI_SUCCESS ||
                           size != ml_comms_size(cs, k, r->rank))) {
            snprintf(err, len, "communicator '%s': MPI made a group of %d ranks, the schedule's "
                     "has %d", ml_comms_name(cs, k), size, ml_comms_size(cs, k, r->rank));
            return -1;
        }
    }
    return 0;
}

static void h_rank_finalize(rt_rank *r) { free_comms(); }

/* The MPI communicator of a collective's group (the executor refused a rank in none). */
static MPI_Comm comm_of(const rt_coll_args *a) {
    return a->comm && a->comm < host.n_comms ? host.comms[a->comm] : MPI_COMM_WORLD;
}

static int h_alloc(rt_rank *r, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err,
                   size_t len) {
    memset(out, 0, sizeof *out);
    if (host.mem_limit && bytes > host.mem_limit - (host.live_bytes < host.mem_limit
                                                        ? host.live_bytes : host.mem_limit)) {
        snprintf(err, len,
                 "host memory limit: %" PRIu64 " bytes asked, %" PRIu64 " held, limit %" PRIu64
                 " (MEMLIFE_HOST_MEM_LIMIT)",
                 bytes, host.live_bytes, host.mem_limit);
        return -1;
    }
    if (bytes > (uint64_t)SIZE_MAX / 2) {
        snprintf(err, len, "%" PRIu64 " bytes do not fit this address space", bytes);
        return -1;
    }
    host_mem *h = ml_xcalloc(1, sizeof *h);
    size_t pg = page_size();
    size_t want = bytes ? (size_t)bytes : 1;   /* a zero-byte buffer still has an address */
    if (chunks > 1) {
        h->mapped = true;
        h->map_bytes = (want + pg - 1) / pg * pg;
        void *p = mmap(NULL, h->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED) {
            snprintf(err, len, "mmap of %zu bytes: %s", h->map_bytes, strerror(errno));
            free(h);
            return -1;
        }
        out->ptr = p;
        out->chunks = chunks;
        out->chunk_bytes = rt_chunk_bytes(bytes, chunks, 0);
        out->live_chunks = chunks;
        h->keep_hi = h->map_bytes;
    } else {
        void *p = NULL;
        int e = posix_memalign(&p, pg, want);
        if (e) {
            snprintf(err, len, "posix_memalign: %s", strerror(e));
            free(h);
            return -1;
        }
        out->ptr = p;
        out->chunks = 1;
        out->live_chunks = 1;
        h->keep_hi = want;
    }
    out->bytes = bytes;
    out->impl = h;
    host.live_bytes += bytes;
    return 0;
}

static int h_free(rt_rank *r, rt_mem *m, char *err, size_t len) {
    host_mem *h = m->impl;
    if (!h) {
        snprintf(err, len, "free of a buffer the host backend did not allocate");
        return -1;
    }
    if (h->mapped) {
        if (h->keep_hi > h->keep_lo)
            munmap((char *)m->ptr + h->keep_lo, h->keep_hi - h->keep_lo);
    } else {
        free(m->ptr);
    }
    uint64_t held = h->released ? rt_chunk_bytes(m->bytes, m->chunks, 0) : m->bytes;
    host.live_bytes -= held <= host.live_bytes ? held : host.live_bytes;
    free(h);
    memset(m, 0, sizeof *m);
    return 0;
}

/* Unmaps every page outside chunk `keep`. Pages shared with the kept chunk stay (munmap takes
 * whole pages); the executor's accounting counts logical chunk bytes, not pages. */
static int h_release(rt_rank *r, rt_mem *m, uint32_t keep, char *err, size_t len) {
    host_mem *h = m->impl;
    if (!h || !h->mapped || m->chunks < 2) {
        snprintf(err, len, "release of a buffer without chunks");
        return -1;
    }
    if (h->released) {
        snprintf(err, len, "buffer already released");
        return -1;
    }
    if (keep >= m->chunks) {
        snprintf(err, len, "chunk %u does not exist (the buffer has %u)", keep, m->chunks);
        return -1;
    }
    size_t pg = page_size();
    uint64_t lo = 0;
    for (uint32_t k = 0; k < keep; k++)
        lo += rt_chunk_bytes(m->bytes, m->chunks, k);
    uint64_t hi = lo + rt_chunk_bytes(m->bytes, m->chunks, keep);
    uint64_t keep_lo = lo / pg * pg, keep_hi = (hi + pg - 1) / pg * pg;
    if (keep_hi > h->map_bytes)
        keep_hi = h->map_bytes;
    if (keep_lo > 0 && munmap(m->ptr, keep_lo) != 0) {
        snprintf(err, len, "munmap of %" PRIu64 " bytes failed: %s", keep_lo, strerror(errno));
        return -1;
    }
    if (keep_hi < h->map_bytes &&
        munmap((char *)m->ptr + keep_hi, h->map_bytes - keep_hi) != 0) {
        snprintf(err, len, "munmap of %" PRIu64 " bytes failed: %s", h->map_bytes - keep_hi,
                 strerror(errno));
        return -1;
    }
    h->keep_lo = keep_lo;
    h->keep_hi = keep_hi;
    h->released = true;
    m->live_chunks = 1;
    uint64_t dropped = m->bytes - rt_chunk_bytes(m->bytes, m->chunks, keep);
    host.live_bytes -= dropped <= host.live_bytes ? dropped : host.live_bytes;
    return 0;
}

/* Whether [off, off+bytes) of m is mapped memory. */
static bool range_ok(const rt_mem *m, uint64_t off, uint64_t bytes) {
    const host_mem *h = m->impl;
    if (!m->ptr || !h || off > m->bytes || bytes > m->bytes - off)
        return false;
    return bytes == 0 || (off >= h->keep_lo && off + bytes <= h->keep_hi);
}

/* 16-bit floats: one derived datatype per dtype (so that a user op knows which it reduces) and
 * one user op per reduction, created at the first 16-bit reduction and freed at finalize. */
static MPI_Datatype dt16[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};   /* float16, bfloat16 */
static MPI_Op op16[RED_COUNT];
static bool have16;

static ml_dtype dtype16(const MPI_Datatype *t) { return *t == dt16[0] ? DT_FLOAT16 : DT_BFLOAT16; }
#define USER_OP(name, red)                                                                   \
    static void name(void *in, void *inout, int *n, MPI_Datatype *t) {                     \
        data_combine(dtype16(t), red, inout, in, (uint64_t)*n);                            \
    }
USER_OP(op16_sum, RED_SUM)
USER_OP(op16_prod, RED_PROD)
USER_OP(op16_max, RED_MAX)
USER_OP(op16_min, RED_MIN)

static MPI_Datatype mpi_type(ml_dtype dt) {
    switch (dt) {
    case DT_INT8: return MPI_INT8_T;
    case DT_UINT8: return MPI_UINT8_T;
    case DT_INT32: return MPI_INT32_T;
    case DT_UINT32: return MPI_UINT32_T;
    case DT_INT64: return MPI_INT64_T;
    case DT_UINT64: return MPI_UINT64_T;
    case DT_FLOAT32: return MPI_FLOAT;
    case DT_FLOAT64: return MPI_DOUBLE;
    case DT_FLOAT16: return have16 ? dt16[0] : MPI_UINT16_T;
    case DT_BFLOAT16: return have16 ? dt16[1] : MPI_UINT16_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static int make16(void) {
    if (have16)
        return 0;
    MPI_User_function *fns[RED_COUNT] = {[RED_SUM] = op16_sum, [RED_PROD] = op16_prod,
                                         [RED_MAX] = op16_max, [RED_MIN] = op16_min,
                                         [RED_AVG] = op16_sum};
    for (int k = 0; k < 2; k++)
        if (MPI_Type_contiguous(1, MPI_UINT16_T, &dt16[k]) != MPI_SUCCESS || MPI_Type_commit(&dt16[k]) != MPI_SUCCESS)
            return -1;
    for (int k = 0; k < RED_COUNT; k++)
        if (MPI_Op_create(fns[k], 1, &op16[k]) != MPI_SUCCESS)
            return -1;
    have16 = true;
    return 0;
}

static void free16(void) {
    if (!have16)
        return;
    for (int k = 0; k < 2; k++)
        MPI_Type_free(&dt16[k]);
    for (int k = 0; k < RED_COUNT; k++)
        MPI_Op_free(&op16[k]);
    have16 = false;
}

static bool is16(ml_dtype dt) { return dt == DT_FLOAT16 || dt == DT_BFLOAT16; }

static MPI_Op mpi_op(ml_dtype dt, ml_redop op) {
    if (is16(dt))
        return op16[op];
    switch (op) {
    case RED_SUM: case RED_AVG: return MPI_SUM;   /* avg: data_avg_premul / postdiv around it */
    case RED_PROD: return MPI_PROD;
    case RED_MAX: return MPI_MAX;
    case RED_MIN: return MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

/* What a collective's deadline message says the rank waited in. */
#define IN_COLL "in the collective"

/* NCCL's in-place ReduceScatter leaves the result at send + rank*count and the rest of the send
 * buffer as it was. MPI_IN_PLACE for MPI_Reduce_scatter_block instead puts the result at the
 * start of the buffer, overwriting shard 0's input. So the reduction goes into a temporary of
 * one shard, copied to rank*count afterwards: the send buffer is read only, as in NCCL. */
static int coll_rs(rt_rank *r, const rt_coll_args *a, char *send, char *recv, MPI_Datatype dt,
                   char *err, size_t len) {
    size_t bytes = a->count * ml_dtypes[a->dtype].size;
    char *out = recv;
    char *tmp = NULL;
    if (a->in_place) {
        tmp = malloc(bytes ? bytes : 1);
        if (!tmp) {
            snprintf(err, len, "host temporary of %zu bytes for an in-place reduce_scatter", bytes);
            return -1;
        }
        out = tmp;
    }
    rt_mpi_call_begin(r, IN_COLL);
    int rc = MPI_Reduce_scatter_block(send, out, (int)a->count, dt, mpi_op(a->dtype, a->op), comm_of(a));
    rt_mpi_call_end(r, rc, IN_COLL);
    if (tmp)
        memcpy(recv, tmp, bytes);
    free(tmp);
    return 0;
}

/* ---- Collectives: one launcher per row of coll.h's table ------------------------------------
 * Each makes its blocking MPI call under the deadline (rt_mpi_call_begin/end; a failed call
 * ends the job there, as a failed wait did). A NULL row is a collective the host backend
 * cannot run; rt_rank_init refuses it by name before running. */
typedef int (*host_launch_fn)(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                              MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len);

static int launch_all_reduce(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                             MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len) {
    rt_mpi_call_begin(r, IN_COLL);
    int rc = MPI_Allreduce(a->in_place ? MPI_IN_PLACE : send, recv, (int)a->count, dt,
                           mpi_op(a->dtype, a->op), comm_of(a));
    rt_mpi_call_end(r, rc, IN_COLL);
    return 0;
}

static int launch_reduce_scatter(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                                 MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len) {
    return coll_rs(r, a, send, recv, dt, err, len);
}

static int launch_all_gather(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                             MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len) {
    /* MPI's in-place AllGather takes this rank's input at recv + rank*count: NCCL's rule. */
    int count = (int)a->count;
    rt_mpi_call_begin(r, IN_COLL);
    int rc = a->in_place ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, count, dt,
                                         comm_of(a))
                         : MPI_Allgather(send, count, dt, recv, count, dt, comm_of(a));
    rt_mpi_call_end(r, rc, IN_COLL);
    return 0;
}

static int launch_broadcast(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                            MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len) {
    /* MPI broadcasts one buffer; NCCL's out-of-place form reads send on the root only. */
    if (!a->in_place && rt_coll_group_rank(a, r->rank) == a->root)
        memmove(recv, send, (size_t)recv_bytes);
    rt_mpi_call_begin(r, IN_COLL);
    int rc = MPI_Bcast(recv, (int)a->count, dt, a->root, comm_of(a));
    rt_mpi_call_end(r, rc, IN_COLL);
    return 0;
}

static int launch_reduce(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                         MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len) {
    /* MPI_IN_PLACE is the root's only; the other ranks pass their buffer as input. */
    bool root = rt_coll_group_rank(a, r->rank) == a->root;
    rt_mpi_call_begin(r, IN_COLL);
    int rc = MPI_Reduce(a->in_place && root ? MPI_IN_PLACE : send, recv, (int)a->count, dt,
                        mpi_op(a->dtype, a->op), a->root, comm_of(a));
    rt_mpi_call_end(r, rc, IN_COLL);
    return 0;
}

static int launch_all_to_all(rt_rank *r, const rt_coll_args *a, char *send, char *recv,
                             MPI_Datatype dt, uint64_t recv_bytes, char *err, size_t len) {
    /* never in place (coll.h): send and recv are apart, count/world elements to each rank */
    int block = (int)(a->count / (uint64_t)rt_coll_group_size(a, r->world));
    rt_mpi_call_begin(r, IN_COLL);
    int rc = MPI_Alltoall(send, block, dt, recv, block, dt, comm_of(a));
    rt_mpi_call_end(r, rc, IN_COLL);
    return 0;
}

/* Point-to-point messages have a tag of their own (the result exchanges use another), so a
 * send/recv pair never matches memlife's own traffic; MPI keeps one sender's messages with one
 * tag in order, which is NCCL's pairing too (the k-th send from r to p, the k-th recv there). */
#define P2P_TAG 0x7032

static int h_p2p(rt_rank *r, const rt_coll_args *a, char *buf, char *err, size_t len) {
    MPI_Request req;
    MPI_Datatype dt = mpi_type(a->dtype);
    int rc = ml_colls[a->coll].p2p == P2P_SEND
                 ? MPI_Isend(buf, (int)a->count, dt, a->root, P2P_TAG, comm_of(a), &req)
                 : MPI_Irecv(buf, (int)a->count, dt, a->root, P2P_TAG, comm_of(a), &req);
    if (rc != MPI_SUCCESS) {
        snprintf(err, len, "MPI_I%s to/from rank %d failed (code %d)", ml_colls[a->coll].name, a->root, rc);
        return -1;
    }
    if (!host.in_group) {   /* outside a group: the op completes before the next, as in NCCL */
        rt_mpi_wait(r, &req, ml_colls[a->coll].p2p == P2P_SEND ? "in a send" : "in a recv");
        return 0;
    }
    if (host.n_group == host.cap_group) {
        host.cap_group = host.cap_group ? 2 * host.cap_group : 16;
        host.group_reqs = ml_xrealloc(host.group_reqs, host.cap_group * sizeof *host.group_reqs);
    }
    host.group_reqs[host.n_group++] = req;
    return 0;
}

static int h_group_begin(rt_rank *r, char *err, size_t len) {
    if (host.in_group) {
        snprintf(err, len, "a group inside a group");
        return -1;
    }
    host.in_group = true;
    host.n_group = 0;
    return 0;
}

/* Every posted send and recv of the group completes here, each bounded by the run's deadline. */
static int h_group_end(rt_rank *r, char *err, size_t len) {
    for (size_t k = 0; k < host.n_group; k++)
        rt_mpi_wait(r, &host.group_reqs[k], "in a group of sends and receives");
    host.in_group = false;
    host.n_group = 0;
    return 0;
}

/* Asked before the launch (rt_backend_check): every dtype and op runs here (16-bit floats and
 * avg are emulated); what MPI cannot express is a count beyond its int. */
static int h_refuse_op(const plan_op *op, int world, char *err, size_t len) {
    if (op->kind == OP_COLL && plan_coll_count(op) > (uint64_t)INT_MAX) {
        snprintf(err, len, "%s of %" PRIu64 " elements exceeds MPI's int count (%d)",
                 ml_colls[op->u.coll.coll].name, plan_coll_count(op), INT_MAX);
        return -1;
    }
    return 0;
}

/* send and recv: one view (send == recv), the peer in root. */
static int launch_p2p(rt_rank *r, const rt_coll_args *a, char *send, char *recv, MPI_Datatype dt,
                      uint64_t recv_bytes, char *err, size_t len) {
    return h_p2p(r, a, send, err, len);
}

static const host_launch_fn host_launch[COLL_COUNT] = {
    [COLL_ALL_REDUCE] = launch_all_reduce,
    [COLL_REDUCE_SCATTER] = launch_reduce_scatter,
    [COLL_ALL_GATHER] = launch_all_gather,
    [COLL_BROADCAST] = launch_broadcast,
    [COLL_REDUCE] = launch_reduce,
    [COLL_SEND] = launch_p2p,
    [COLL_RECV] = launch_p2p,
    [COLL_ALL_TO_ALL] = launch_all_to_all,
};

static int h_collective(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    rt_rank *r = ranks[0];
    const rt_coll_args *a = &args[0];
    const char *name = ml_colls[a->coll].name;
    if (n != 1) {
        snprintf(err, len, "the host backend issues collectives for one rank per process");
        return -1;
    }
    if (a->count > (uint64_t)INT_MAX) {
        snprintf(err, len, "%s of %" PRIu64 " elements exceeds MPI's int count on the host backend",
                 name, a->count);
        return -1;
    }
    if (is16(a->dtype) && make16() != 0) {
        snprintf(err, len, "MPI could not create the 16-bit float reductions");
        return -1;
    }
    int group = rt_coll_group_size(a, r->world);   /* NCCL's nranks: the world or a group's */
    uint64_t send_bytes = ml_coll_send_count(a->coll, a->count, group) * ml_dtypes[a->dtype].size;
    uint64_t recv_bytes = ml_coll_recv_count(a->coll, a->count, group) * ml_dtypes[a->dtype].size;
    if (!range_ok(a->send, a->send_off_bytes, send_bytes) ||
        !range_ok(a->recv, a->recv_off_bytes, recv_bytes)) {
        snprintf(err, len, "%s touches memory outside its live buffers", name);
        return -1;
    }
    char *send = (char *)a->send->ptr + a->send_off_bytes;
    char *recv = (char *)a->recv->ptr + a->recv_off_bytes;
    host_launch_fn launch = host_launch[a->coll];
    MPI_Datatype dt = mpi_type(a->dtype);
    bool avg = ml_colls[a->coll].has_op && a->op == RED_AVG;
    if (avg && data_avg_divides_after(a->dtype)) {
        /* Integer avg: NCCL sums, then divides the result by world, truncating. */
        if (launch(r, a, send, recv, dt, recv_bytes, err, len) != 0)
            return -1;
        if (!ml_colls[a->coll].flow.root_only || rt_coll_group_rank(a, r->rank) == a->root)
            data_avg_postdiv(a->dtype, recv, ml_coll_recv_count(a->coll, a->count, group), group);
        return 0;
    }
    if (!avg)
        return launch(r, a, send, recv, dt, recv_bytes, err, len);
    /* Floating-point avg: NCCL multiplies every input by 1/world before it sums; the send side is
     * read only, so the products go to a temporary that the sum then reads out of place. */
    char *pre = ml_xmalloc(send_bytes ? (size_t)send_bytes : 1);
    memcpy(pre, send, (size_t)send_bytes);
    data_avg_premul(a->dtype, pre, send_bytes / ml_dtypes[a->dtype].size, group);
    rt_coll_args out_of_place = *a;
    out_of_place.in_place = false;
    int rc = launch(r, &out_of_place, pre, recv, dt, recv_bytes, err, len);
    free(pre);
    return rc;
}

static bool h_launches(ml_coll c) { return (unsigned)c < COLL_COUNT && host_launch[c]; }

/* Every op completes before the next starts, so ordering is already what sync/record/wait ask. */
static int h_sync(rt_rank *r, sched_sync_kind kind, uint32_t stream, uint32_t event, char *err,
                  size_t len) { return 0; }
static int h_record(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) { return 0; }
static int h_wait(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) { return 0; }

static int h_write(rt_rank *r, rt_mem *m, uint64_t off, const void *src, uint64_t bytes, char *err,
                   size_t len) {
    if (!range_ok(m, off, bytes)) {
        snprintf(err, len, "write of %" PRIu64 " bytes at %" PRIu64 " is outside live memory",
                 bytes, off);
        return -1;
    }
    memcpy((char *)m->ptr + off, src, (size_t)bytes);
    return 0;
}

static int h_read(rt_rank *r, const rt_mem *m, uint64_t off, void *dst, uint64_t bytes, char *err,
                  size_t len) {
    if (!range_ok(m, off, bytes)) {
        snprintf(err, len, "read of %" PRIu64 " bytes at %" PRIu64 " is outside live memory",
                 bytes, off);
        return -1;
    }
    memcpy(dst, (const char *)m->ptr + off, (size_t)bytes);
    return 0;
}

static int h_copy(rt_rank *r, rt_mem *dst, uint64_t dst_off, const rt_mem *src, uint64_t src_off,
                  uint64_t bytes, uint32_t stream, char *err, size_t len) {
    if (!range_ok(dst, dst_off, bytes) || !range_ok(src, src_off, bytes)) {
        snprintf(err, len, "copy of %" PRIu64 " bytes touches memory outside live buffers", bytes);
        return -1;
    }
    memmove((char *)dst->ptr + dst_off, (const char *)src->ptr + src_off, (size_t)bytes);
    return 0;
}

static int h_mem_read(rt_rank *r, rt_mem_reading *out) {
    memset(out, 0, sizeof *out);   /* no device view on the host */
    return 0;
}

static int h_warmup(rt_rank **ranks, int n, const bool used[COLL_COUNT], char *err, size_t len) {
    return 0;   /* MPI connects at MPI_Init; nothing outside the views to absorb */
}

static void h_provenance(char *buf, size_t len) {
    char v[256];
    rt_mpi_library_version(v, sizeof v);
    size_t n = strlen(buf);
    snprintf(buf + n, len > n ? len - n : 0,
             "backend=host\nmpi=%s\nranks=%d\nhost_mem_limit=%" PRIu64 "\n", v, host.world,
             host.mem_limit);
}

/* Bench timing (rt.h's optional entries): every host op has completed when its call returns, so
 * a span is the monotonic clock around the MPI calls; there is no device to line the ranks up on,
 * so `align` changes nothing. One rank per process. */
static double h_span_start;

static int h_time_begin(rt_rank **ranks, int n, bool align, char *err, size_t len) {
    h_span_start = ml_now_seconds();
    return 0;
}

static int h_time_end(rt_rank **ranks, int n, double *seconds, char *err, size_t len) {
    seconds[0] = ml_now_seconds() - h_span_start;
    return 0;
}

/* ---- Stream order (--stream-order, host_streams.h) ------------------------------------------
 * Under reverse or shuffle, collectives and copies are queued per stream and run at the next
 * point where the host must see memory: a sync, a host read or write (inits, scales, checks), a
 * free or release, a timed span's ends, the rank's end. record and wait become the queues'
 * ordering. Under program order (the default) every wrapper calls straight through. A queued op
 * that fails reports at the op that ran the queue. */
typedef struct {
    rt_rank *r;
    rt_coll_args a;
} host_coll_item;

typedef struct {
    rt_rank *r;
    rt_mem *dst;
    const rt_mem *src;
    uint64_t dst_off, src_off, bytes;
    uint32_t stream;
} host_copy_item;

static int run_coll_item(void *p, char *err, size_t len) {
    host_coll_item *it = p;
    return h_collective(&it->r, &it->a, 1, err, len);
}

static int run_copy_item(void *p, char *err, size_t len) {
    host_copy_item *it = p;
    return h_copy(it->r, it->dst, it->dst_off, it->src, it->src_off, it->bytes, it->stream, err,
                  len);
}

static int ho_collective(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    if (!hs_deferring() || n != 1 || host.in_group)   /* a group's sends/recvs post at once */
        return h_collective(ranks, args, n, err, len);
    host_coll_item it = {ranks[0], args[0]};
    hs_push(args[0].stream, run_coll_item, &it, sizeof it);
    return 0;
}

static int ho_copy(rt_rank *r, rt_mem *dst, uint64_t dst_off, const rt_mem *src, uint64_t src_off,
                   uint64_t bytes, uint32_t stream, char *err, size_t len) {
    if (!hs_deferring())
        return h_copy(r, dst, dst_off, src, src_off, bytes, stream, err, len);
    host_copy_item it = {r, dst, src, dst_off, src_off, bytes, stream};
    hs_push(stream, run_copy_item, &it, sizeof it);
    return 0;
}

static int ho_sync(rt_rank *r, sched_sync_kind kind, uint32_t stream, uint32_t event, char *err,
                   size_t len) {
    /* all queues, more than a stream sync asks, which is still a legal order */
    return hs_flush(err, len) ? -1 : h_sync(r, kind, stream, event, err, len);
}

static int ho_record(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    hs_record(event, stream);
    return h_record(r, event, stream, err, len);
}

static int ho_wait(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    hs_wait(event, stream);
    return h_wait(r, event, stream, err, len);
}

static int ho_write(rt_rank *r, rt_mem *m, uint64_t off, const void *src, uint64_t bytes,
                    char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_write(r, m, off, src, bytes, err, len);
}

static int ho_read(rt_rank *r, const rt_mem *m, uint64_t off, void *dst, uint64_t bytes,
                   char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_read(r, m, off, dst, bytes, err, len);
}

static int ho_free(rt_rank *r, rt_mem *m, char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_free(r, m, err, len);
}

static int ho_release(rt_rank *r, rt_mem *m, uint32_t keep, char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_release(r, m, keep, err, len);
}

static int ho_time_begin(rt_rank **ranks, int n, bool align, char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_time_begin(ranks, n, align, err, len);
}

static int ho_time_end(rt_rank **ranks, int n, double *seconds, char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_time_end(ranks, n, seconds, err, len);
}

/* A send/recv group runs as written: what the streams queued before it runs first. */
static int ho_group_begin(rt_rank *r, char *err, size_t len) {
    return hs_flush(err, len) ? -1 : h_group_begin(r, err, len);
}

static void ho_rank_finalize(rt_rank *r) {
    char err[256];
    if (hs_flush(err, sizeof err))
        fprintf(stderr, "error: rank %d: at the end of the run: %s\n", r->rank, err);
    hs_end();
    h_rank_finalize(r);
}

const rt_backend_ops rt_backend_host = {
    .name = "host",
    .available = true,
    .how_to_get = NULL,
    .init = h_init,
    .finalize = h_finalize,
    .rank_init = h_rank_init,
    .rank_finalize = ho_rank_finalize,
    .alloc = h_alloc,
    .free = ho_free,
    .release = ho_release,
    .collective = ho_collective,
    .launches = h_launches,
    .sync = ho_sync,
    .record = ho_record,
    .wait = ho_wait,
    .write = ho_write,
    .read = ho_read,
    .copy = ho_copy,
    .mem_read = h_mem_read,
    .allgather_blob = rt_mpi_allgather_blob,
    .warmup = h_warmup,
    .provenance = h_provenance,
    .gatherv_blob = rt_mpi_gatherv_blob,
    .abort = rt_mpi_abort,
    .time_begin = ho_time_begin,
    .time_end = ho_time_end,
    /* One MPI call and its deadline wait is already the bare call on the host. */
    .collective_bare = h_collective,
    .no_kernels_why = "runs no GPU kernels",
    /* no device to line the ranks up on: the spans follow the barrier */
    .spans_unaligned = true,
    .orders_streams = true,
    .refuse_op = h_refuse_op,
    .group_begin = ho_group_begin,
    .group_end = h_group_end,
};

#else

const rt_backend_ops rt_backend_host = {
    .name = "host",
    .available = false,
    .how_to_get = "build with Open MPI: apt-get install openmpi-bin libopenmpi-dev, then make",
};

#endif
