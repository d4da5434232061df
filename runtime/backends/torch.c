/* SPDX-License-Identifier: MIT */
/* torch.c — the torch backend: buffers are torch tensors, collectives torch.distributed calls,
 * in a Python process that each memlife rank starts and drives op by op
 * (runtime/backends/torch/driver.py; its head says why the data side stays here).
 *
 * Launch: memlife's ranks run under mpirun as on the host backend (memlife starts it, or an
 * outside launcher did); each starts its driver with RANK / WORLD_SIZE from the MPI world,
 * MASTER_ADDR / MASTER_PORT from rank 0 (shared over MPI), and the driver calls
 * init_process_group: ProcessGroupNCCL on a GPU, gloo on CPUs. The interpreter is
 * MEMLIFE_PYTHON, else the first python3 on PATH that imports torch, else /usr/bin/python3 (the
 * driver exits 9 when torch does not import, and the next is tried); the driver is
 * MEMLIFE_TORCH_DRIVER, else found from the memlife binary (the repository layout, or an install's
 * share/memlife/torch_driver.py).
 *
 * Every request waits for its reply against the run's deadline (--timeout, plus 10 s so that the
 * driver's own process-group timeout, which is --timeout, speaks first); past it the driver's
 * process group is killed and the op fails (exit 3, the others end as on the host backend). The
 * driver dies with memlife (PR_SET_PDEATHSIG), so no process outlives it.
 *
 * Views measured: requested is the executor's count, as everywhere; on a GPU the device view is
 * mem_get_info, and memory_allocated / memory_reserved after every op travel as the reading's
 * pool. The caching allocator keeps what is freed, so mem_get_info follows memory_reserved and
 * not the page model of cudaFree: the run then holds the device reading to the reserved one
 * (pool_caches), and the torch view holds both to the allocator model. On CPUs there is no
 * device view. */
#include "exec/rt.h"
#include "exec/mpi_util.h"
#include "base/locate.h"

#include <string.h>

#ifdef MEMLIFE_HAVE_MPI

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GRACE_S 10.0           /* past the driver's own timeout, memlife ends it */
#define START_S 120.0          /* import torch + init_process_group, on top of --timeout */

static struct {
    pid_t pid;                 /* the driver; 0 when none */
    int to, from;              /* its stdin, its stdout */
    char buf[65536];           /* unread reply bytes */
    size_t n;
    double timeout_s;
    int rank, world;
    uint32_t next_id;
    char python[PATH_MAX], driver[PATH_MAX];
    char hello[512];           /* "VERSION BACKEND DEVICE EMULATED" */
    bool dead;
    char gone[400];            /* how the driver ended, for every later request */
} tb;


/* src into dst[cap], cut at cap - 1 bytes (a reply field, a path). */
static void copy_str(char *dst, size_t cap, const char *src) {
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Reaps the driver, which is ending: no wait without a deadline. One that has not
 * ended DRIVER_END_S after it closed its pipe, or was told to quit, is killed with its process
 * group; a SIGKILLed one is reaped for as long as the kernel takes. */
#define DRIVER_END_S 5
static void reap_driver(pid_t pid, int *st) {
    double until = ml_now_seconds() + DRIVER_END_S;
    for (;;) {
        pid_t w = waitpid(pid, st, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            return;
        if (ml_now_seconds() > until)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
    }
}

/* Ends the driver (its whole process group) and says how it ended. */
static void end_driver(const char *why, char *err, size_t len) {
    if (!tb.pid)
        return;
    kill(-tb.pid, SIGKILL);
    int st = 0;
    reap_driver(tb.pid, &st);
    close(tb.to);
    close(tb.from);
    tb.pid = 0;
    tb.dead = true;
    if (why)
        copy_str(tb.gone, sizeof tb.gone, why);
    if (err && why)
        ml_put(err, len, "%s", why);
}

/* The driver ended by itself (EOF on its stdout): its exit status, in words. */
static void driver_gone(char *err, size_t len) {
    int st = 0;
    pid_t p = tb.pid;
    reap_driver(p, &st);
    close(tb.to);
    close(tb.from);
    tb.pid = 0;
    tb.dead = true;
    if (WIFSIGNALED(st))
        ml_put(err, len, "the torch driver (pid %d) was ended by signal %d (%s)", (int)p,
            WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        ml_put(err, len, "the torch driver (pid %d) exited with status %d", (int)p,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    copy_str(tb.gone, sizeof tb.gone, err);
}

/* One write to the driver (out) or read from it into buf, of up to n bytes, once its pipe is
 * ready and before the deadline, for write_all and fill: the bytes moved (0 after a signal:
 * call again), or -1 after ending the driver at the deadline with `late` as the reason, or
 * with driver_gone's reason when the pipe is closed or fails. A write only reads buf, so
 * write_all's const bytes pass through it. */
static ssize_t io_by(bool out, void *buf, size_t n, double deadline, const char *late, char *err,
                     size_t len) {
    int fd = out ? tb.to : tb.from;
    double left = deadline - ml_now_seconds();
    struct pollfd pf = {fd, out ? POLLOUT : POLLIN, 0};
    int rc = left > 0 ? poll(&pf, 1, (int)(left * 1000) + 1) : 0;
    if (rc == 0) {
        end_driver(late, err, len);
        return -1;
    }
    if (rc < 0 && errno == EINTR)
        return 0;
    ssize_t moved = out ? write(fd, buf, n) : read(fd, buf, n);
    if (moved < 0 && errno == EINTR)
        return 0;
    if (moved <= 0) {
        driver_gone(err, len);
        return -1;
    }
    return moved;
}

static int write_all(const void *p, size_t n, double deadline, char *err, size_t len) {
    const char *c = p;
    while (n) {
        ssize_t w = io_by(true, (void *)c, n, deadline,
                          "the torch driver did not take its request before the deadline "
                          "(--timeout); it was ended", err, len);
        if (w < 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* At least `want` bytes in tb.buf (or a full line when want == 0), before the deadline. */
static int fill(size_t want, double deadline, char *err, size_t len) {
    for (;;) {
        if (want ? tb.n >= want : memchr(tb.buf, '\n', tb.n) != NULL)
            return 0;
        if (tb.n == sizeof tb.buf) {
            end_driver("the torch driver sent a line longer than 64 KiB; it was ended", err, len);
            return -1;
        }
        ssize_t r = io_by(false, tb.buf + tb.n, sizeof tb.buf - tb.n, deadline,
                          "no reply from the torch driver before the deadline (--timeout); it "
                          "was ended", err, len);
        if (r < 0)
            return -1;
        tb.n += (size_t)r;
    }
}

static void consume(size_t n) {
    memmove(tb.buf, tb.buf + n, tb.n - n);
    tb.n -= n;
}

/* One line of reply into line (NUL-terminated, without '\n'). */
static int read_line(char *line, size_t cap, double deadline, char *err, size_t len) {
    if (fill(0, deadline, err, len) != 0)
        return -1;
    size_t n = (size_t)((char *)memchr(tb.buf, '\n', tb.n) - tb.buf);
    snprintf(line, cap, "%.*s", (int)n, tb.buf);
    consume(n + 1);
    return 0;
}

/* Sends request (and payload), reads the reply: "ok REST" gives 0 with REST in reply; "err MSG"
 * gives -1 with MSG in err; with in != NULL the "ok N" reply is followed by N bytes into in,
 * which must be exactly in_len. */
static int rpc(const char *request, const void *payload, size_t plen, char *reply, size_t rlen,
               void *in, size_t in_len, double wait_s, char *err, size_t len) {
    if (!tb.pid) {
        ml_put(err, len, "%s", tb.gone[0] ? tb.gone : "the torch driver is not running");
        return -1;
    }
    double deadline = ml_now_seconds() + wait_s;
    char line[1024];
    if (write_all(request, strlen(request), deadline, err, len) != 0 ||
        (plen && write_all(payload, plen, deadline, err, len) != 0) ||
        read_line(line, sizeof line, deadline, err, len) != 0)
        return -1;
    if (!strncmp(line, "err ", 4)) {
        ml_put(err, len, "torch: %s", line + 4);
        return -1;
    }
    if (strncmp(line, "ok", 2) != 0) {
        ml_put(err, len, "the torch driver replied '%.200s'", line);
        return -1;
    }
    if (reply)
        copy_str(reply, rlen, line[2] ? line + 3 : "");
    if (in) {
        unsigned long long n = strtoull(line + 3, NULL, 10);
        if (n != in_len) {
            ml_put(err, len, "the torch driver sent %llu bytes for a read of %zu", n, in_len);
            return -1;
        }
        for (size_t done = 0; done < in_len;) {
            size_t part = in_len - done < sizeof tb.buf ? in_len - done : sizeof tb.buf;
            if (fill(part, deadline, err, len) != 0)
                return -1;
            memcpy((char *)in + done, tb.buf, part);
            consume(part);
            done += part;
        }
    }
    return 0;
}

static double wait_s(void) { return tb.timeout_s + GRACE_S; }

/* ---- finding and starting the driver ----------------------------------------------------------- */

static int find_driver(char *err, size_t len) {
    /* build/memlife in the repository; an install's bin/memlife with share/memlife; a copy of the
     * binary with the driver beside it */
    static const char *const rel[] = {"/../runtime/backends/torch/driver.py",
                                      "/runtime/backends/torch/driver.py",
                                      "/../share/memlife/torch_driver.py", "/torch_driver.py"};
    return ml_find_beside_binary("MEMLIFE_TORCH_DRIVER", rel, ML_ARRAY_LEN(rel), tb.driver,
                                 sizeof tb.driver, err, len);
}

/* Starts python on the driver; 0 with the hello line read, 1 when this python lacks torch (exit
 * 9), -1 on another failure. */
static int start(const char *python, const char *addr, int port, char *err, size_t len) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        ml_put(err, len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        ml_put(err, len, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);   /* the driver never outlives its memlife */
        if (getppid() != parent)
            _exit(3);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        char v[32];
        snprintf(v, sizeof v, "%d", tb.rank);
        setenv("RANK", v, 1);
        snprintf(v, sizeof v, "%d", tb.world);
        setenv("WORLD_SIZE", v, 1);
        snprintf(v, sizeof v, "%d", port);
        setenv("MASTER_PORT", v, 1);
        setenv("MASTER_ADDR", addr, 1);
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        setenv("LOCAL_RANK", local ? local : "0", 1);
        snprintf(v, sizeof v, "%g", tb.timeout_s);
        setenv("MEMLIFE_TIMEOUT", v, 1);
        execl(python, python, "-u", tb.driver, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    tb.pid = pid;
    tb.to = in[1];
    tb.from = out[0];
    tb.n = 0;
    tb.dead = false;
    signal(SIGPIPE, SIG_IGN);   /* a dead driver is an EPIPE here, not the end of memlife */
    char line[1024];
    if (read_line(line, sizeof line, ml_now_seconds() + tb.timeout_s + START_S, err, len) != 0) {
        return strstr(err, "exited with status 9") ? 1 : -1;
    }
    if (!strncmp(line, "err ", 4)) {
        ml_put(err, len, "the torch driver could not start: %s", line + 4);
        end_driver(NULL, NULL, 0);
        return -1;
    }
    if (strncmp(line, "hello ", 6) != 0) {
        ml_put(err, len, "the torch driver said '%.200s' instead of hello", line);
        end_driver(NULL, NULL, 0);
        return -1;
    }
    copy_str(tb.hello, sizeof tb.hello, line + 6);
    copy_str(tb.python, sizeof tb.python, python);
    return 0;
}

/* A free TCP port on this host for rank 0's rendezvous (bound, read, closed: another process may
 * take it in between, which then fails init_process_group with a message, not a hang). */
static int free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t l = sizeof a;
    int port = -1;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static int t_init(const rt_options *o, int world, int first_rank, int local_ranks, char *err,
                  size_t len) {
    if (local_ranks != 1) {
        ml_put(err, len, "the torch backend runs one rank per process (no --gpus)");
        return -1;
    }
    tb.timeout_s = o->timeout_s > 0 ? o->timeout_s : 60;
    tb.rank = first_rank;
    tb.world = world;
    if (rt_mpi_init(world, first_rank, o->timeout_s, err, len) != 0 || find_driver(err, len) != 0)
        return -1;
    /* rank 0's host and port, to every rank */
    char mine[128] = "", *all = ml_xcalloc((size_t)world, sizeof mine);
    if (first_rank == 0) {
        char host[64] = "127.0.0.1";
        if (world > 1)
            gethostname(host, sizeof host);
        snprintf(mine, sizeof mine, "%s %d", host, free_port());
    }
    if (rt_mpi_allgather_blob(NULL, mine, sizeof mine, all, err, len) != 0) {
        free(all);
        return -1;
    }
    char addr[64];
    int port = -1;
    if (sscanf(all, "%63s %d", addr, &port) != 2 || port <= 0) {
        free(all);
        ml_put(err, len, "rank 0 found no free TCP port for torch.distributed's rendezvous");
        return -1;
    }
    free(all);
    char list[8192], tried[1024] = "";
    size_t n = ml_python_candidates(list, sizeof list);
    const char *p = list;
    for (size_t k = 0; k < n; k++, p += strlen(p) + 1) {
        int rc = start(p, addr, port, err, len);
        if (rc == 0)
            return 0;
        if (rc < 0)
            return -1;
        size_t at = strlen(tried);
        snprintf(tried + at, sizeof tried - at, "%s%s", at ? ", " : "", p);
    }
    const char *env = getenv("MEMLIFE_PYTHON");
    if (env && *env)
        ml_put(err, len, "MEMLIFE_PYTHON=%s cannot import torch", env);
    else
        ml_put(err, len,
               "no python3 with torch: %s (set MEMLIFE_PYTHON; on Debian: apt-get install "
               "python3-torch)", n ? tried : "none on PATH or in /usr/bin");
    return -1;
}

static void t_finalize(void) {
    if (tb.pid) {
        char err[200];
        if (rpc("quit\n", NULL, 0, NULL, 0, NULL, 0, wait_s(), err, sizeof err) == 0) {
            int st;
            reap_driver(tb.pid, &st);
            close(tb.to);
            close(tb.from);
            tb.pid = 0;
        } else {
            end_driver(NULL, NULL, 0);
        }
    }
    rt_mpi_finalize();
}

/* The schedule's communicators as torch groups: every group of every communicator, members in
 * their group's order, asked of the driver by every rank in the same order (new_group is
 * collective over the world, members or not). */
static int make_groups(const rank_plan *p, char *err, size_t len) {
    const ml_comms *c = p->comms;
    uint32_t n_comms = c ? ml_comms_count(c) : 1;
    size_t cap = 64 + (size_t)p->world * 12;
    char *req = ml_xmalloc(cap);
    int rc = 0;
    for (uint32_t comm = 1; comm < n_comms && rc == 0; comm++) {
        int next = 0;   /* groups are numbered in the order of their least member */
        for (int r = 0; r < p->world && rc == 0; r++) {
            if (ml_comms_group(c, comm, r) != next)
                continue;
            size_t at = (size_t)snprintf(req, cap, "group %u %d", comm, next++);
            for (int local = 0; local < ml_comms_size(c, comm, r); local++)
                at += (size_t)snprintf(req + at, cap - at, " %d", ml_comms_global(c, comm, r, local));
            snprintf(req + at, cap - at, "\n");
            rc = rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
        }
    }
    free(req);
    return rc;
}

static int t_rank_init(rt_rank *r, char *err, size_t len) {
    if (tb.dead || !tb.pid) {
        ml_put(err, len, "%s", tb.gone[0] ? tb.gone : "the torch driver is not running");
        return -1;
    }
    if (make_groups(r->plan, err, len) != 0)
        return -1;
    /* Every stream of the schedule exists before the baseline: creating a CUDA stream costs
     * device memory outside the caching allocator (70 MiB on the H200 at the first alloc on
     * FSDP2's second stream, b_fsdp2's line 431), which belongs to neither view. */
    char sreq[64];
    snprintf(sreq, sizeof sreq, "open_streams %u\n", r->plan->s->syms[SYM_STREAM].n);
    if (rpc(sreq, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len) != 0)
        return -1;
    /* The schedule's `torch: {conf:}` before the first allocation, so the driver's allocator
     * runs with the settings the torch view predicts with ("-": PyTorch's defaults). */
    const char *conf = r->plan->s->torch.conf;
    if (conf && strpbrk(conf, "\n\r")) {
        ml_put(err, len, "torch conf holds a line break");
        return -1;
    }
    size_t need = strlen("conf \n") + (conf && *conf ? strlen(conf) : 1) + 1;
    char *creq = ml_xmalloc(need);
    snprintf(creq, need, "conf %s\n", conf && *conf ? conf : "-");
    int rc = rpc(creq, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
    free(creq);
    if (rc != 0)
        return -1;
    /* `torch: {limit:}`: the run's allocator gets the same allowed maximum as the view (the
     * driver sets the memory fraction whose product with the device's memory is this limit), so
     * garbage collection and the releases before a retry happen where the view predicts them. */
    uint64_t bound = r->plan->torch.limit;
    /* `torch: {capacity:}`: the device's memory cannot be made smaller, but a fraction at the
     * capacity fails alloc_block's same comparison (reserved + size past it) where cudaMalloc
     * would, through the same retries. Only garbage collection tells the two apart (it acts
     * under a fraction, never under a capacity): with the threshold, or a limit as well, the run
     * would be another allocator than the view's, so it is refused. */
    if (r->plan->torch.capacity) {
        if (bound || (conf && strstr(conf, "garbage_collection_threshold"))) {
            ml_put(err, len, "torch capacity with %s: a device's memory can be bounded only by a "
                   "memory fraction, which %s", bound ? "a limit" : "garbage_collection_threshold",
                   bound ? "is the limit already" : "turns garbage collection on");
            return -1;
        }
        bound = r->plan->torch.capacity;
    }
    if (bound) {
        char lreq[48];
        snprintf(lreq, sizeof lreq, "limit %" PRIu64 "\n", bound);
        if (rpc(lreq, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len) != 0)
            return -1;
    }
    return 0;
}

static uint32_t mem_id(const rt_mem *m) { return (uint32_t)(uintptr_t)m->impl; }

/* Asked of every op before the launch (rt_backend_check): what the caching allocator and torch
 * cannot express is refused by name before any rank starts. */
static int t_refuse_op(const plan_op *op, int world, char *err, size_t len) {
    if (op->kind == OP_ALLOC && op->u.alloc.chunks > 1) {
        ml_put(err, len,
               "chunked buffers (chunks: %u): the caching allocator hands out whole blocks",
               op->u.alloc.chunks);
        return -1;
    }
    if (op->kind == OP_RELEASE) {
        ml_put(err, len, "release: the caching allocator has no chunks to release");
        return -1;
    }
    if (op->kind == OP_COLL && (op->u.coll.send.dtype == DT_UINT32 ||
                                op->u.coll.send.dtype == DT_UINT64) &&
        (op->u.coll.op == RED_MAX || op->u.coll.op == RED_MIN)) {
        ml_put(err, len,
               "%s of %s: torch has no unsigned 32/64-bit type, and the signed one orders "
               "values differently",
               ml_redops[op->u.coll.op].name, ml_dtypes[op->u.coll.send.dtype].name);
        return -1;
    }
    return 0;
}

static int t_alloc(rt_rank *r, uint64_t bytes, uint32_t chunks, rt_mem *out, char *err,
                   size_t len) {
    if (chunks > 1) {
        ml_put(err, len,
               "the torch backend has no chunked buffers (the caching allocator hands out "
               "whole blocks); run chunked schedules on host or cuda");
        return -1;
    }
    const plan_op *op = &r->plan->ops[r->pc];   /* the alloc being executed: its dtype, count */
    ml_dtype dt = op->kind == OP_ALLOC ? op->u.alloc.dtype : DT_UINT8;
    uint64_t count = op->kind == OP_ALLOC ? op->u.alloc.count : bytes;
    uint32_t id = ++tb.next_id;
    char req[256];
    /* on the alloc's stream: PyTorch's allocator keeps a pool per stream */
    uint32_t stream = op->kind == OP_ALLOC ? op->step->u.alloc.stream : 0;
    snprintf(req, sizeof req, "alloc %u %" PRIu64 " %" PRIu64 " %s %u\n", id, bytes, count,
             ml_dtypes[dt].name, stream);
    if (rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len) != 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->ptr = (void *)(uintptr_t)(4096u + (uintptr_t)id * 16u);   /* a handle, never touched */
    out->bytes = bytes;
    out->impl = (void *)(uintptr_t)id;
    return 0;
}

static int t_free(rt_rank *r, rt_mem *m, char *err, size_t len) {
    char req[64];
    snprintf(req, sizeof req, "free %u\n", mem_id(m));
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_release(rt_rank *r, rt_mem *m, uint32_t keep, char *err, size_t len) {
    ml_put(err, len, "the torch backend has no chunked buffers to release");
    return -1;
}

/* The driver's request per collective (driver.py's Driver.coll has one branch for each); an
 * empty slot is a collective the driver cannot run, refused by name before anything runs. The
 * request carries both sides' element counts (coll.h), so the driver derives none by name. */
static const char *const torch_call[COLL_COUNT] = {
    [COLL_ALL_REDUCE] = "all_reduce",
    [COLL_REDUCE_SCATTER] = "reduce_scatter",
    [COLL_ALL_GATHER] = "all_gather",
    [COLL_BROADCAST] = "broadcast",
    [COLL_REDUCE] = "reduce",
    [COLL_ALL_TO_ALL] = "all_to_all",
};

static bool t_launches(ml_coll c) { return (unsigned)c < COLL_COUNT && torch_call[c]; }

static int t_collective(rt_rank **ranks, const rt_coll_args *args, int n, char *err, size_t len) {
    const rt_coll_args *a = &args[0];
    int group = rt_coll_group_size(a, ranks[0]->world);   /* counts and root in its terms */
    char req[512];
    snprintf(req, sizeof req,
             "coll %s %u %" PRIu64 " %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %s %s %d %u %d %u\n",
             torch_call[a->coll], mem_id(a->send), a->send_off_bytes, mem_id(a->recv),
             a->recv_off_bytes, ml_coll_send_count(a->coll, a->count, group),
             ml_coll_recv_count(a->coll, a->count, group), ml_dtypes[a->dtype].name,
             ml_redops[a->op].name, a->root, a->stream, a->in_place ? 1 : 0, a->comm);
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_sync(rt_rank *r, sched_sync_kind kind, uint32_t stream, uint32_t event, char *err,
                  size_t len) {
    static const char *const kinds[] = {[SYNC_DEVICE] = "device", [SYNC_STREAM] = "stream",
                                        [SYNC_EVENT] = "event"};
    char req[96];
    snprintf(req, sizeof req, "sync %s %u %u\n", kinds[kind], stream, event);
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_record(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    char req[64];
    snprintf(req, sizeof req, "record %u %u\n", event, stream);
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_wait(rt_rank *r, uint32_t event, uint32_t stream, char *err, size_t len) {
    char req[64];
    snprintf(req, sizeof req, "wait %u %u\n", event, stream);
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_write(rt_rank *r, rt_mem *m, uint64_t off, const void *src, uint64_t bytes,
                   char *err, size_t len) {
    char req[128];
    snprintf(req, sizeof req, "write %u %" PRIu64 " %" PRIu64 "\n", mem_id(m), off, bytes);
    return rpc(req, src, bytes, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_read(rt_rank *r, const rt_mem *m, uint64_t off, void *dst, uint64_t bytes, char *err,
                  size_t len) {
    char req[128];
    snprintf(req, sizeof req, "read %u %" PRIu64 " %" PRIu64 "\n", mem_id(m), off, bytes);
    return rpc(req, NULL, 0, NULL, 0, dst, bytes, wait_s(), err, len);
}

static int t_copy(rt_rank *r, rt_mem *dst, uint64_t dst_off, const rt_mem *src, uint64_t src_off,
                  uint64_t bytes, uint32_t stream, char *err, size_t len) {
    char req[160];
    snprintf(req, sizeof req, "copy %u %" PRIu64 " %u %" PRIu64 " %" PRIu64 " %u\n", mem_id(dst),
             dst_off, mem_id(src), src_off, bytes, stream);
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_record_stream(rt_rank *r, rt_mem *m, uint32_t stream, char *err, size_t len) {
    char req[64];
    snprintf(req, sizeof req, "record_stream %u %u\n", mem_id(m), stream);
    return rpc(req, NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_empty_cache(rt_rank *r, char *err, size_t len) {
    return rpc("empty_cache\n", NULL, 0, NULL, 0, NULL, 0, wait_s(), err, len);
}

static int t_mem_read(rt_rank *r, rt_mem_reading *out) {
    memset(out, 0, sizeof *out);
    char reply[256], err[300];
    unsigned long long v[7];
    if (rpc("mem\n", NULL, 0, reply, sizeof reply, NULL, 0, wait_s(), err, sizeof err) != 0 ||
        sscanf(reply, "%llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &v[6]) != 7)
        return -1;
    if (v[0]) {
        out->has_device = true;
        out->device_used = v[1];
        /* the caching allocator is the pool here: memory_allocated / memory_reserved */
        out->has_pool = true;
        out->pool_used_current = v[2];
        out->pool_used_high = v[3];
        out->pool_reserved_current = v[4];
        out->pool_reserved_high = v[5];
        out->pool_caches = true;
    }
    return 0;
}

/* The collectives the plans use, each on its communicator ("C:name"; the world's bare), in the
 * communicators' order: the members of a group use the same ones (lint holds a group to one
 * sequence), and one order for every rank cannot deadlock. With communicators, used (the kinds
 * on any of them) would warm the world with a collective that only a group's members issue. */
static int t_warmup(rt_rank **ranks, int n, const bool used[COLL_COUNT], char *err, size_t len) {
    const rank_plan *p = ranks[0]->plan;
    plan_comm_use *uses;
    uint32_t nu = plan_comm_first_uses(p, &uses);
    uint32_t n_comms = p->comms ? ml_comms_count(p->comms) : 1;
    size_t cap = 32 + ((size_t)COLL_COUNT + nu) * 24;
    char *req = ml_xmalloc(cap), reply[64];
    size_t at = (size_t)snprintf(req, cap, "warmup");
    for (int c = 0; c < COLL_COUNT && !p->comms; c++)
        if (used[c] && torch_call[c])
            at += (size_t)snprintf(req + at, cap - at, " %s", torch_call[c]);
    for (uint32_t k = 0; k < nu && p->comms; k++)
        if (uses[k].comm == 0 && torch_call[uses[k].coll])
            at += (size_t)snprintf(req + at, cap - at, " %s", torch_call[uses[k].coll]);
    for (uint32_t comm = 1; comm < n_comms; comm++)
        for (uint32_t k = 0; k < nu; k++)
            if (uses[k].comm == comm && torch_call[uses[k].coll])
                at += (size_t)snprintf(req + at, cap - at, " %u:%s", comm, torch_call[uses[k].coll]);
    snprintf(req + at, cap - at, "\n");
    free(uses);
    int rc = rpc(req, NULL, 0, reply, sizeof reply, NULL, 0, wait_s(), err, len);
    free(req);
    if (rc != 0)
        return -1;
    for (int k = 0; k < n; k++)
        ranks[k]->communicator_bytes = strtoull(reply, NULL, 10);
    return 0;
}

/* Bench timing (rt.h's optional entries), measured by the driver (driver.py's time_begin and
 * time_end): CUDA events on every stream on a GPU, the monotonic clock on CPUs, where each op
 * has ended before its reply. The align all_reduce runs in the driver before the mark. */
static int t_time_begin(rt_rank **ranks, int n, bool align, char *err, size_t len) {
    return rpc(align ? "time_begin 1\n" : "time_begin 0\n", NULL, 0, NULL, 0, NULL, 0, wait_s(),
               err, len);
}

static int t_time_end(rt_rank **ranks, int n, double *seconds, char *err, size_t len) {
    char reply[64], *end;
    if (rpc("time_end\n", NULL, 0, reply, sizeof reply, NULL, 0, wait_s(), err, len) != 0)
        return -1;
    double s = strtod(reply, &end);
    if (end == reply || *end || !(s >= 0)) {
        ml_put(err, len, "the torch driver gave '%.60s' as a span's seconds", reply);
        return -1;
    }
    seconds[0] = s;
    return 0;
}

static void t_provenance(char *buf, size_t len) {
    char version[64] = "", pg[16] = "", device[32] = "", emulated[256] = "";
    sscanf(tb.hello, "%63s %15s %31s %255s", version, pg, device, emulated);
    size_t n = strlen(buf);
    snprintf(buf + n, len > n ? len - n : 0,
             "backend=torch\ntorch=%s\ntorch_process_group=%s\ntorch_device=%s\n"
             "torch_emulated=%s\npython=%s\ntorch_driver=%s\nranks=%d\n",
             version, pg, device, !strcmp(emulated, "-") ? "none" : emulated, tb.python,
             tb.driver, tb.world);
}

const rt_backend_ops rt_backend_torch = {
    .name = "torch",
    .available = true,
    .init = t_init,
    .finalize = t_finalize,
    .rank_init = t_rank_init,
    .alloc = t_alloc,
    .free = t_free,
    .release = t_release,
    .collective = t_collective,
    .launches = t_launches,
    .sync = t_sync,
    .record = t_record,
    .wait = t_wait,
    .write = t_write,
    .read = t_read,
    .copy = t_copy,
    .mem_read = t_mem_read,
    .allgather_blob = rt_mpi_allgather_blob,
    .warmup = t_warmup,
    .provenance = t_provenance,
    .gatherv_blob = rt_mpi_gatherv_blob,
    .abort = rt_mpi_abort,
    .refuse_op = t_refuse_op,
    .time_begin = t_time_begin,
    .time_end = t_time_end,
    /* bench's yardstick: the same driver request without the executor around it */
    .collective_bare = t_collective,
    /* each op of a timed part is its own request to the driver, so there is no one stretch of
     * CUDA work to capture (and gloo on CPUs has no graphs at all) */
    .no_graphs_why = "runs each op as its own driver request and captures none",
    .no_kernels_why = "does not count the kernels torch launches",
    .record_stream = t_record_stream,
    .empty_cache = t_empty_cache,
};

#else

const rt_backend_ops rt_backend_torch = {
    .name = "torch",
    .available = false,
    .how_to_get = "build with Open MPI (memlife starts the torch ranks under mpirun): apt-get "
                  "install openmpi-bin libopenmpi-dev python3-torch, then make",
};

#endif
