/* SPDX-License-Identifier: MIT */
/* mpi_util.c — MPI start-up, deadline waits, blob exchanges and abort (mpi_util.h). */
#include "exec/mpi_util.h"
#include "exec/launch.h"
#include "exec/watch.h"
#include "base/watchdog.h"

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef MEMLIFE_HAVE_MPI

static bool mpi_started, mpi_ended;
/* The run's --timeout and this process's rank, for waits that have no rank state to take them
 * from (provenance, start-up exchanges). */
static double mpi_timeout_s = 60.0;
static int mpi_rank = -1;

int rt_mpi_init(int world, int rank, double timeout_s, char *err, size_t len) {
    if (timeout_s > 0)
        mpi_timeout_s = timeout_s;
    mpi_rank = rank;
    if (mpi_started)
        return 0;
    int provided, size = 0, me = -1;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        snprintf(err, len, "MPI_Init failed");
        return -1;
    }
    mpi_started = true;
    /* Errors come back as codes (and become messages here) rather than killing the job. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (size != world || me != rank) {
        snprintf(err, len, "the MPI launcher says rank %d of %d, the environment said rank %d of %d",
                 me, size, rank, world);
        return -1;
    }
    launch_rank_started(rank);   /* from here on, ending before MPI_Finalize is a crash */
    return 0;
}

void rt_mpi_finalize(void) {
    if (mpi_started && !mpi_ended) {
        mpi_ended = true;
        MPI_Finalize();
        launch_rank_finished();
    }
}

bool rt_mpi_active(void) { return mpi_started && !mpi_ended; }

void rt_mpi_abort(int code) {
    fflush(stdout);
    fflush(stderr);
    if (rt_mpi_active()) {
        launch_notify_abort();   /* memlife's deadline on mpirun starts now (launch.h) */
        /* MPI_Abort asks mpirun to end the job; one that mpirun cannot hear (a network
         * partition between hosts) would keep this rank alive for good. */
        rt_exit_after(RT_ABORT_GRACE_S, mpi_rank, "MPI_Abort", code);
        MPI_Abort(MPI_COMM_WORLD, code);
    }
    exit(code);
}

/* ---- Where a wait stands --------------------------------------------------------------------
 * A waiting rank can name the op it waits at, and, in an exchange made of one receive per peer,
 * the peers that have not sent yet. The same text serves the deadline's error and, through
 * rt_mpi_wait_report, a note from a signal handler when the launcher ends the job during the wait
 * (a peer crashed): the text is prepared here, outside the handler, in one of two buffers, and the
 * handler only reads the one published in note_active. */

enum { MAX_NAMED_PEERS = 16 };

typedef struct {
    char head[400];           /* "FILE:L:C: note: rank R had waited " */
    char tail[800];           /* " s at ... when the job was ended; live requested bytes X\n" */
    struct timespec t0;
} wait_note;

static wait_note notes[2];
static volatile sig_atomic_t note_active = -1;

/* "FILE:L:C" and "at all_gather (14:5), op 7" for r's op, or the end of its plan. */
static void where(const rt_rank *r, char *loc, size_t llen, char *at, size_t alen) {
    const rank_plan *p = r ? r->plan : NULL;
    if (p && r->pc < p->n_ops) {
        const plan_op *op = &p->ops[r->pc];
        ml_mark m = plan_op_mark(op);
        snprintf(loc, llen, "%s:%u:%u", p->s->file, m.line, m.col);
        snprintf(at, alen, "at %s (%u:%u), op %zu, ", plan_op_name(op), m.line, m.col, r->pc);
    } else if (p) {
        snprintf(loc, llen, "%s", p->s->file);
        snprintf(at, alen, "at the end of its plan (%zu ops), ", p->n_ops);
    } else {
        snprintf(loc, llen, "memlife");
        at[0] = '\0';
    }
}

/* "for ranks [1, 3]": the peers whose receive is still pending; "for its peers" when unknown. */
static void missing_peers(const MPI_Request *reqs, const int *peer, int n, char *buf, size_t len) {
    int named = 0, more = 0;
    size_t at = (size_t)snprintf(buf, len, "for ranks [");
    for (int k = 0; peer && k < n; k++) {
        if (peer[k] < 0 || reqs[k] == MPI_REQUEST_NULL)
            continue;
        if (named == MAX_NAMED_PEERS) {
            more++;
            continue;
        }
        if (at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%d", named ? ", " : "", peer[k]);
        named++;
    }
    if (!named)
        snprintf(buf, len, "for its peers");
    else if (at < len)
        snprintf(buf + at, len - at, more ? ", and %d more]" : "]", more);
}

/* "rank R waited|had waited" ... pieces: the scene ("at X (L:C), op K, for ranks [..]") and the
 * live bytes, as both messages say them. */
static void scene(const rt_rank *r, const MPI_Request *reqs, const int *peer, int n, char *loc,
                  size_t llen, char *buf, size_t len, char *live, size_t live_len) {
    char at[300], who[200];
    where(r, loc, llen, at, sizeof at);
    missing_peers(reqs, peer, n, who, sizeof who);
    snprintf(buf, len, "%s%s", at, who);
    if (r && r->plan)
        snprintf(live, live_len, "; live requested bytes %" PRIu64, r->acct.live);
    else
        live[0] = '\0';
}

static void note_publish(const rt_rank *r, const MPI_Request *reqs, const int *peer, int n,
                         const char *what, const struct timespec *t0) {
    int next = note_active == 0 ? 1 : 0;
    wait_note *w = &notes[next];
    char loc[300], sc[600], live[64];
    scene(r, reqs, peer, n, loc, sizeof loc, sc, sizeof sc, live, sizeof live);
    snprintf(w->head, sizeof w->head, "%s: note: rank %d had waited ", loc, r ? r->rank : mpi_rank);
    snprintf(w->tail, sizeof w->tail, " s %s (%s) when the job was ended%s\n", sc, what, live);
    w->t0 = *t0;
    note_active = next;
}

static void note_clear(void) { note_active = -1; }

/* The two ways a wait on the peers ends the job, said the same whether the wait polls
 * (wait_all) or a watchdog guards a blocking call (rt_mpi_call_begin). */
static void fail_mpi(const rt_rank *r, const MPI_Request *reqs, const int *peer, int n,
                     const char *what, int rc) {
    /* E.g. ranks in different collectives (a divergence let through): the data is wrong and
     * peers may wait forever, so this ends the job as a timeout would. */
    char loc[300], sc[600], live[64];
    note_clear();
    char text[MPI_MAX_ERROR_STRING] = "";
    int tn = 0;
    MPI_Error_string(rc, text, &tn);
    scene(r, reqs, peer, n, loc, sizeof loc, sc, sizeof sc, live, sizeof live);
    fprintf(stderr, "%s: error: rank %d: MPI failed %s (%s): %s%s; ending every rank\n", loc,
            r ? r->rank : mpi_rank, sc, what, text, live);
    rt_mpi_abort(ML_EXIT_RUNTIME);
}

static void fail_deadline(const rt_rank *r, const MPI_Request *reqs, const int *peer, int n,
                          const char *what, double waited, double timeout) {
    char loc[300], sc[600], live[64];
    note_clear();
    scene(r, reqs, peer, n, loc, sizeof loc, sc, sizeof sc, live, sizeof live);
    fprintf(stderr,
            "%s: error: rank %d waited %.1f s %s (%s; deadline %g s, --timeout)%s; "
            "ending every rank\n",
            loc, r ? r->rank : mpi_rank, waited, sc, what, timeout, live);
    rt_mpi_abort(ML_EXIT_RUNTIME);
}

static double deadline_of(const rt_rank *r) {
    return r && r->opt && r->opt->timeout_s > 0 ? r->opt->timeout_s : mpi_timeout_s;
}

/* Async-signal-safe: write(2) and clock_gettime only. */
void rt_mpi_wait_report(int fd) {
    int k = note_active;
    if (k < 0)
        return;
    const wait_note *w = &notes[k];
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long tenths = (long)(now.tv_sec - w->t0.tv_sec) * 10 + (now.tv_nsec - w->t0.tv_nsec) / 100000000;
    if (tenths < 0)
        tenths = 0;
    char num[32], *p = num + sizeof num;
    *--p = (char)('0' + tenths % 10);
    *--p = '.';
    long whole = tenths / 10;
    do {
        *--p = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole && p > num);
    ssize_t ignored = write(fd, w->head, strlen(w->head));
    ignored = write(fd, p, (size_t)(num + sizeof num - p));
    ignored = write(fd, w->tail, strlen(w->tail));
    (void)ignored;
}

/* Completes reqs[0..n) by polling MPI_Testsome until the deadline r->opt->timeout_s. peer[k] is
 * the rank reqs[k] receives from (-1 for a send), or peer is NULL when the wait cannot tell peers
 * apart (a collective). Tests often at first (a collective between ranks on one host completes in
 * microseconds), then sleeps between tests so that oversubscribed ranks (more ranks than cores)
 * leave the CPU to the peers they are waiting for. MPI progresses inside MPI_Testsome, so the
 * sleep stays short. The note for a signal is prepared only once the wait starts sleeping: a wait
 * that completes at once (almost all of them) costs no formatting. */
static void wait_all(rt_rank *r, MPI_Request *reqs, const int *peer, int n, const char *what) {
    double timeout = deadline_of(r);
    double t0 = ml_now_seconds();
    struct timespec ts0;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    int few[16], *done_idx = n <= 16 ? few : ml_xcalloc((size_t)n, sizeof *done_idx);
    long sleep_ns = 0;
    int left = n;
    bool published = false;
    for (unsigned spins = 0; left > 0; spins++) {
        int out = 0;
        int rc = MPI_Testsome(n, reqs, &out, done_idx, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            fail_mpi(r, reqs, peer, n, what, rc);
        if (out == MPI_UNDEFINED)
            break;
        if (out > 0) {
            left -= out;
            if (left > 0 && peer && published)
                note_publish(r, reqs, peer, n, what, &ts0);
            continue;
        }
        double waited = ml_now_seconds() - t0;
        if (waited > timeout)
            fail_deadline(r, reqs, peer, n, what, waited, timeout);
        if (spins < 200)
            continue;
        rt_watch_parent();   /* a wait ends with the memlife that launched the job (watch.h) */
        if (!published) {
            note_publish(r, reqs, peer, n, what, &ts0);
            published = true;
        }
        sleep_ns = sleep_ns < 200000 ? sleep_ns + 2000 : 200000;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
    }
    note_clear();
    if (done_idx != few)
        free(done_idx);
}

void rt_mpi_wait(rt_rank *r, MPI_Request *req, const char *what) { wait_all(r, req, NULL, 1, what); }

/* ---- A blocking call under the deadline -----------------------------------------------------
 * One watchdog thread per process, started at the first call and never stopped: every tick it
 * looks at the call in progress, if any, under a lock; arming and disarming take that lock
 * and nothing else (no thread to create or wake per call, no system call while uncontended).
 * Past the deadline it says what the polling wait says and ends the job (MPI_Abort from this
 * thread: the rank's own thread is inside MPI and cannot). After NOTE_AFTER_S in a call it
 * publishes the note a signal handler prints when the launcher ends the job, as wait_all does
 * once it starts sleeping; the lock keeps a note from outliving its call. */

#define NOTE_AFTER_S 0.001
#define TICK_MAX_S 0.01

static struct {
    pthread_mutex_t lock;
    bool started, armed, published;
    const rt_rank *r;
    const char *what;
    double t0, timeout;
    struct timespec ts0;
} cw = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *call_watch(void *arg) {
    (void)arg;
    for (;;) {
        double tick = TICK_MAX_S;
        pthread_mutex_lock(&cw.lock);
        if (cw.armed) {
            double waited = ml_now_seconds() - cw.t0;
            if (waited > cw.timeout)
                fail_deadline(cw.r, NULL, NULL, 0, cw.what, waited, cw.timeout); /* no return */
            if (!cw.published && waited > NOTE_AFTER_S) {
                note_publish(cw.r, NULL, NULL, 0, cw.what, &cw.ts0);
                cw.published = true;
            }
            if (cw.timeout / 20 < tick) /* the deadline's text has tenths of a second */
                tick = cw.timeout / 20;
        }
        pthread_mutex_unlock(&cw.lock);
        struct timespec ts = {0, (long)(tick * 1e9)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void rt_mpi_call_begin(const rt_rank *r, const char *what) {
    pthread_mutex_lock(&cw.lock);
    if (!cw.started) {
        pthread_t t;
        /* Without the thread the call would have no deadline: like any other start-up
         * failure of the runtime, that ends the run rather than risking a hang. */
        if (pthread_create(&t, NULL, call_watch, NULL) != 0) {
            fprintf(stderr, "memlife: error: rank %d: cannot start the deadline's watchdog "
                    "thread; ending every rank\n", r ? r->rank : mpi_rank);
            rt_mpi_abort(ML_EXIT_RUNTIME);
        }
        pthread_detach(t);
        cw.started = true;
    }
    cw.r = r;
    cw.what = what;
    cw.timeout = deadline_of(r);
    cw.t0 = ml_now_seconds();
    clock_gettime(CLOCK_MONOTONIC, &cw.ts0);
    cw.published = false;
    cw.armed = true;
    pthread_mutex_unlock(&cw.lock);
}

void rt_mpi_call_end(const rt_rank *r, int rc, const char *what) {
    pthread_mutex_lock(&cw.lock);
    cw.armed = false;
    if (cw.published)
        note_clear();
    pthread_mutex_unlock(&cw.lock);
    if (rc != MPI_SUCCESS)
        fail_mpi(r, NULL, NULL, 0, what, rc);
}

/* Tag of the exchange's point-to-point messages. MPI keeps messages of one sender, tag and
 * communicator in order, so successive exchanges never mix. */
#define EXCHANGE_TAG 0x6d6c

/* One receive and one send per peer rather than MPI_Iallgather: the same bytes for a few ranks,
 * and a wait that expires can name the ranks that never sent. */
int rt_mpi_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err,
                          size_t elen) {
    if (len > (size_t)INT32_MAX) {
        snprintf(err, elen, "allgather of %zu bytes exceeds MPI's int count", len);
        return -1;
    }
    int world = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    memcpy((char *)all + (size_t)me * len, mine, len);
    MPI_Request *reqs = ml_xcalloc(2 * (size_t)world, sizeof *reqs);
    int *peer = ml_xcalloc(2 * (size_t)world, sizeof *peer);
    int n = 0, rc = MPI_SUCCESS;
    for (int k = 0; k < world && rc == MPI_SUCCESS; k++)
        if (k != me) {
            peer[n] = k;
            rc = MPI_Irecv((char *)all + (size_t)k * len, (int)len, MPI_BYTE, k, EXCHANGE_TAG,
                           MPI_COMM_WORLD, &reqs[n++]);
        }
    for (int k = 0; k < world && rc == MPI_SUCCESS; k++)
        if (k != me) {
            peer[n] = -1;
            rc = MPI_Isend(mine, (int)len, MPI_BYTE, k, EXCHANGE_TAG, MPI_COMM_WORLD, &reqs[n++]);
        }
    if (rc == MPI_SUCCESS)
        wait_all(r, reqs, peer, n, "in an exchange with every rank");
    else
        snprintf(err, elen, "posting an exchange of %zu bytes with every rank failed", len);
    free(reqs);
    free(peer);
    return rc == MPI_SUCCESS ? 0 : -1;
}

int rt_mpi_gatherv_blob(rt_rank *r, const void *mine, size_t len, int root, void **all,
                        size_t *lens, char *err, size_t elen) {
    int world = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    *all = NULL;
    if (len > (size_t)INT32_MAX) {
        snprintf(err, elen, "gather of %zu bytes exceeds MPI's int count", len);
        return -1;
    }
    /* Sizes first, so the root can place every rank's blob. */
    int my_len = (int)len;
    int *counts = NULL, *displs = NULL;
    if (me == root) {
        counts = ml_xcalloc((size_t)world, sizeof *counts);
        displs = ml_xcalloc((size_t)world, sizeof *displs);
    }
    MPI_Request req;
    MPI_Igather(&my_len, 1, MPI_INT, counts, 1, MPI_INT, root, MPI_COMM_WORLD, &req);
    rt_mpi_wait(r, &req, "gathering result sizes");
    size_t total = 0;
    if (me == root) {
        for (int k = 0; k < world; k++) {
            displs[k] = (int)total;
            lens[k] = (size_t)counts[k];
            total += (size_t)counts[k];
        }
        if (total > (size_t)INT32_MAX) {
            /* Every rank must still take part in the gather it is waiting in; refuse after. */
            snprintf(err, elen, "gathered results of %zu bytes exceed MPI's int count", total);
        }
        *all = ml_xmalloc(total ? total : 1);
    }
    MPI_Igatherv(mine, my_len, MPI_BYTE, *all, counts, displs, MPI_BYTE, root, MPI_COMM_WORLD,
                 &req);
    rt_mpi_wait(r, &req, "gathering results");
    free(counts);
    free(displs);
    if (me == root && total > (size_t)INT32_MAX) {
        free(*all);
        *all = NULL;
        return -1;
    }
    return 0;
}

void rt_mpi_library_version(char *buf, size_t len) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    v[n < (int)sizeof v ? n : (int)sizeof v - 1] = '\0';
    char *nl = strpbrk(v, "\r\n,");
    if (nl)
        *nl = '\0';
    snprintf(buf, len, "%s", v);
}

#else /* no MPI at build time */

int rt_mpi_init(int world, int rank, double timeout_s, char *err, size_t len) {
    (void)timeout_s;
    snprintf(err, len, "memlife was built without Open MPI");
    return -1;
}
void rt_mpi_finalize(void) {}
bool rt_mpi_active(void) { return false; }
void rt_mpi_abort(int code) { exit(code); }
int rt_mpi_allgather_blob(rt_rank *r, const void *mine, size_t len, void *all, char *err,
                          size_t elen) {
    snprintf(err, elen, "memlife was built without Open MPI");
    return -1;
}
int rt_mpi_gatherv_blob(rt_rank *r, const void *mine, size_t len, int root, void **all,
                        size_t *lens, char *err, size_t elen) {
    snprintf(err, elen, "memlife was built without Open MPI");
    return -1;
}
void rt_mpi_library_version(char *buf, size_t len) { snprintf(buf, len, "%s", ""); }
void rt_mpi_wait_report(int fd) {}

#endif

/* One wire format for a rank's measurement: ml_measure_encode's text, whichever way
 * rt_gather_blobs moves it (the backend's gatherv, or two allgather rounds). */
int rt_gather_measures(rt_rank *r, const ml_measure *mine, int root, ml_measure *out, char *err,
                       size_t elen) {
    char *text = ml_measure_encode(mine, r->plan);
    void *all = NULL;
    size_t *lens = ml_xcalloc((size_t)r->world, sizeof *lens);
    int rc = rt_gather_blobs(r, text, strlen(text), root, &all, lens, err, elen);
    free(text);
    size_t at = 0;
    for (int k = 0; rc == 0 && all && k < r->world; k++) {
        char why[300];
        if (ml_measure_decode((const char *)all + at, lens[k], &out[k], why, sizeof why) != 0) {
            snprintf(err, elen, "rank %d's measurement: %s", k, why);
            rc = -1;
        } else if (out[k].rank != k) {
            snprintf(err, elen, "the measurement gathered from rank %d says rank %d", k,
                     out[k].rank);
            rc = -1;
        }
        at += lens[k];
    }
    if (rc != 0)
        for (int k = 0; k < r->world; k++)
            ml_measure_free(&out[k]);
    free(all);
    free(lens);
    return rc;
}
