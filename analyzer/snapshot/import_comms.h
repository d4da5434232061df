/* SPDX-License-Identifier: MIT */
/* import_comms.h — a capture's process groups (memlife_capture's `mesh` and `groups`, written by
 * python/memlife/_groups.py) as the schedule's communicators.
 *
 *   "mesh":   {"dims": ["dp", "tp"], "shape": [4, 2]}     the program's DeviceMesh, row-major
 *   "groups": {"3": {"ranks": [0, 1], "mesh_dims": ["tp"]},
 *              "7": {"ranks": [0, 4], "partition": [[0, 4], [1, 5], [2, 6], [3, 7]]},
 *              "9": {"ranks": [0, 7]}}
 *
 * Each group is the captured rank's group of a process group a collective ran on, its world
 * ranks in the group's order. It becomes, by the first that applies:
 * - `{mesh_dim: tp}` (a list for several dimensions: a flattened sub-mesh), named after its
 *   dimension (a flattened one by its `name`, the program's, else its dimensions' joined by
 *   '_'), with `mesh: {dp: 4, tp: 2}` written once;
 * - `{color: "rank / K"}` or `{color: "rank % M"}` (MPI_Comm_split's, key rank) where the
 *   partition its new_group calls made is the world in consecutive blocks of K, or in M strided
 *   groups, each in rank order; named rank_div_K, rank_mod_M;
 * - `{ranks: [...]}`: the captured rank's group only (named group1, group2, ...); its collectives
 *   get `when:` its members (a rank outside a group cannot issue them), and a comment says that
 *   the schedule is that rank's view of the process group.
 * Groups that come out the same are one communicator. Every group's ranks are checked against
 * its description (rank R's mesh coordinate, the partition's cover of the world). */
#ifndef MEMLIFE_SNAPSHOT_IMPORT_COMMS_H
#define MEMLIFE_SNAPSHOT_IMPORT_COMMS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/util.h"

typedef struct import_comms import_comms;

/* Reads capture's mesh and groups for rank `rank` of `world`. Returns the table (empty where
 * capture has no groups: every collective ran on the world), or NULL with a one-line reason in
 * err ("memlife_capture: groups['3']: ..."). */
import_comms *import_comms_read(const json_t *capture, int64_t world, int64_t rank, char *err,
                                size_t errlen);
void import_comms_free(import_comms *c);

/* The communicator of a collective on process group `group` ("world", or NULL: 0, the world),
 * or -1 where the groups do not describe it. */
int import_comms_find(const import_comms *c, const char *group);

/* Communicator k's name; the captured rank's rank within its group; that rank as an expression
 * of `rank` that holds at every rank of the world ("rank % 2", "rank / 2"), or NULL where only
 * the captured rank's group is known (a rank list). */
const char *import_comms_name(const import_comms *c, int k);
int64_t import_comms_local(const import_comms *c, int k);
const char *import_comms_local_expr(const import_comms *c, int k);
/* "rank == 0 || rank == 7": where communicator k's group is a rank list, the condition that a
 * rank is in it (only members issue its collectives); NULL where every rank is in a group. */
const char *import_comms_members(const import_comms *c, int k);

/* {"mesh": {"dp": 4, ...}, "comms": {"tp": {"mesh_dim": "tp"}, ...}}: the schedule's top-level
 * keys, in that order (an empty object when there are no communicators; the caller owns it);
 * and the header comment's lines for rank lists ("# ..."). */
json_t *import_comms_yaml(const import_comms *c);
void import_comms_comment(const import_comms *c, ml_str *out);

#endif
