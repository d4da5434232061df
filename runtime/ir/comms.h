/* SPDX-License-Identifier: MIT */
/* comms.h — a schedule's communicators resolved at one world: which ranks form each group of
 * each communicator, and each rank's rank within its group (sched.h says how `comms:` names
 * them). What NCCL calls a communicator's nranks and rank, MPI a split communicator's size and
 * rank: the counts, roots, peers and in-place offsets of a collective with `comm:` are in
 * these terms.
 *
 * Mesh dimensions are closed forms (no table: a world of a million ranks costs nothing);
 * a color or a rank list is a table of the world's ranks, built once per world and kept with
 * the schedule (sched_comms). */
#ifndef MEMLIFE_COMMS_H
#define MEMLIFE_COMMS_H

#include "ir/sched.h"

typedef struct ml_comms ml_comms;

/* s's communicators at world (params: the --set values the lets and colors see). The answer is
 * kept in s for the next call with the same world and params (s owns it; sched_free frees it).
 * NULL with a diagnostic where they cannot be: a mesh whose sizes do not multiply to the world,
 * a rank list with a rank outside the world or twice, an expression that fails. */
const ml_comms *sched_comms(const sched *s, const sched_params *p, int world, ml_diags *d);
void ml_comms_free(ml_comms *c);
/* The schedule's store of them (sched.comms_cache): made by the loader, freed by sched_free. */
sched_comms_cache *sched_comms_cache_new(void);
void sched_comms_cache_free(sched_comms_cache *cache);

uint32_t ml_comms_count(const ml_comms *c);          /* the world included */
const char *ml_comms_name(const ml_comms *c, uint32_t comm);
/* True when the only communicator is the world: every rank's group is the world. */
bool ml_comms_world_only(const ml_comms *c);
/* The size of rank's group of comm; 0 where rank is in none of its groups. */
int ml_comms_size(const ml_comms *c, uint32_t comm, int rank);
/* rank's rank within its group of comm; -1 where it is in none. */
int ml_comms_local(const ml_comms *c, uint32_t comm, int rank);
/* The world rank of member `local` of rank's group of comm; -1 where rank is in none or local
 * is outside the group. */
int ml_comms_global(const ml_comms *c, uint32_t comm, int rank, int local);
/* How many groups comm has, and which one rank is in (0 .. n-1 in the order of their least
 * member; -1 where none). */
uint32_t ml_comms_groups(const ml_comms *c, uint32_t comm);
int ml_comms_group(const ml_comms *c, uint32_t comm, int rank);
/* The communicator's definition (sched.comms[comm]). */
const sched_comm *ml_comms_def(const ml_comms *c, uint32_t comm);

#endif
