/* SPDX-License-Identifier: MIT */
/* inject.h — runtime fault injection: make a run fail on purpose, the three ways a real
 * run fails, to prove that every rank still ends within the deadline, with exit 3, a message that
 * says where each rank stood, and no result file.
 *
 *   fail-alloc=K      every rank's alloc K (0-based, counted per rank and schedule) fails
 *   fail-alloc=R@K    only rank R's
 *   kill=R@K          rank R dies with SIGKILL before op K (the plan's op index, as in the
 *                     measured timeline), as a crashed process does
 *   delay=R@K[:S]     rank R sleeps S seconds before op K; without S, --timeout + 10 s, so its
 *                     peers' waits pass their deadline
 *   delay=R@init[:S]  rank R sleeps before the backend sets its communicator up (cuda under
 *                     mpirun: before ncclCommInitRank, which waits for every rank, so its peers'
 *                     watchdog must end the job, watchdog.h; host: after MPI_Init, so its peers'
 *                     first bounded exchange does)
 *
 * Items are comma-separated ("kill=2@3,fail-alloc=1@0"); each kind at most once. `memlife run
 * --inject SPEC` and the environment variable MEMLIFE_INJECT (read when --inject is absent) take
 * this syntax. The executor calls the hooks below; they work on any backend, and the host backend
 * under Open MPI is where they are tested (tests/mpi/faults.sh). */
#ifndef MEMLIFE_INJECT_H
#define MEMLIFE_INJECT_H

#include "exec/rt.h"

/* Margin past the deadline of a delay without its own seconds. */
#define RT_INJECT_PAST_S 10.0

/* Parses SPEC into o's fault-injection fields (the others stay). Returns 0, or -1 with err
 * ("'kill=2' needs RANK@OP, e.g. kill=2@3"). */
int rt_inject_parse(const char *spec, rt_options *o, char *err, size_t len);

/* Whether o asks for any fault. */
bool rt_inject_any(const rt_options *o);

/* The items of o in SPEC syntax ("fail-alloc=1@1,kill=2@3"), "" when none. */
void rt_inject_text(const rt_options *o, char *buf, size_t len);

/* Checks the targets against the plans of the schedules to run (plans[i] has worlds[i] ranks):
 * every rank named is inside every world, and every fault is reached in at least one schedule
 * (rank R has an op K, or makes an alloc K). Returns 0, or -1 with err ("kill=2@300 is never
 * reached: rank 2 has at most 12 ops (0 to 11)"). */
int rt_inject_check(const rt_options *o, const rank_plan *const *plans, const int *worlds,
                    size_t n, char *err, size_t len);

/* Executor hooks. rt_inject_alloc_fails: whether this rank's alloc number k must fail (the reason
 * in err). rt_inject_before_op: before op r->pc runs, kills (never returns) or delays this rank
 * when asked, printing where it stands first. */
bool rt_inject_alloc_fails(const rt_rank *r, long k, char *err, size_t len);
void rt_inject_before_op(const rt_rank *r);
/* Before the communicator set-up of `rank` (what: "ncclCommInitRank"): delays it when asked
 * (delay=R@init), printing so first. */
void rt_inject_before_init(const rt_options *o, int rank, const char *what);

#endif
