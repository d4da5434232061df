#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lint with communicators (`mesh:`, `comms:`, `comm:`; tests/cli/comms/*.yaml): counts, roots,
# peers and in-place offsets in terms of the rank's group, a rank outside the communicator,
# divergence within a group (and none across groups), send/recv paired per communicator. Each
# error case is `memlife check`'s exact first diagnostic (and the next line where it has one),
# exit 2; each clean case passes with nothing on stderr. Every schedule's comment says where its
# numbers come from; the mesh is dp 2 x tp 2 at world 4 unless a case says otherwise (row-major:
# tp groups {0,1} {2,3}, dp groups {0,2} {1,3}).
. "$(dirname "$0")/lib.bash"

C=tests/cli/comms

# clean NAME FILE: check passes, exit 0, nothing on stderr.
clean() {
    run check "$2"
    if [ "$RC" -eq 0 ] && [ ! -s "$TMP/err" ] && grep -q '^pass ' "$TMP/out"; then ok "$1"
    else not_ok "$1" "exit $RC: $(head -2 "$TMP/err")"; fi
}

# refused NAME FILE LINE1 [LINE2]: check exits 2 with LINE1 first on stderr (and LINE2 next).
refused() {
    local name=$1 file=$2 want1=$3 want2=${4:-} why=""
    run check "$file"
    [ "$RC" -eq 2 ] || why="exit $RC, want 2"
    [ -s "$TMP/out" ] && why="${why:+$why; }stdout not empty"
    local got1 got2
    got1=$(sed -n 1p "$TMP/err")
    got2=$(sed -n 2p "$TMP/err")
    [ "$got1" = "$want1" ] || why="${why:+$why; }first line differs:
  want: $want1
  got:  $got1"
    if [ -n "$want2" ] && [ "$got2" != "$want2" ]; then why="${why:+$why; }second line differs:
  want: $want2
  got:  $got2"; fi
    if [ -z "$why" ]; then ok "$name"; else not_ok "$name" "$why"; fi
}

# RS + AG of 16 elements on tp (size 2: shards of 8), AR on dp; `expect:` 96 B requested
# (x 64 B + y 32 B), which check compares.
clean "mesh: RS + AG on tp, AR on dp lint clean and check passes" $C/mesh_ok.yaml

# tp's size is 2, not the world's 4: RS send = 2 x recv 4 = 8, and 16 is refused at the send view.
refused "reduce_scatter counts in tp's size (2), not the world's (4)" $C/rs_count.yaml \
    "$C/rs_count.yaml:10:28: error: reduce_scatter send count 16 is not tp's size (2) × recv count 4 (8)"

# root is a rank within tp's group (0 or 1): 3 is outside, at `root:`.
refused "broadcast root 3 outside tp (2 ranks)" $C/root_outside.yaml \
    "$C/root_outside.yaml:9:31: error: broadcast root 3 is outside communicator 'tp' (2 ranks)"

# ranks 0 and 2 are in no group of 'pair' (ranks 3, 1 in that order): an error each, at the step.
refused "rank outside a rank list: error at the step, members in their order" $C/not_member.yaml \
    "$C/not_member.yaml:7:5: error: rank 0 is not in communicator 'pair' (ranks 3, 1) [rank 0]" \
    "$C/not_member.yaml:7:5: error: rank 2 is not in communicator 'pair' (ranks 3, 1) [rank 2]"

# color -1 for ranks 0 and 1: no group; key -rank orders 'upper' as ranks 3, 2.
refused "negative color: the rank is in no group; members by key" $C/color_not_member.yaml \
    "$C/color_not_member.yaml:8:5: error: rank 0 is not in communicator 'upper' (ranks 3, 2) [rank 0]"

# peer 0 on 'pair' is world rank 3, the sender itself.
refused "send peer equal to the rank's own rank in the group" $C/peer_self.yaml \
    "$C/peer_self.yaml:8:26: error: send peer 0 is the rank itself (rank 3 is 0 in 'pair') [rank 3]"

refused "send peer outside the group (2 members)" $C/peer_outside.yaml \
    "$C/peer_outside.yaml:8:26: error: send peer 2 is outside communicator 'pair' (2 ranks) [rank 3]"

# in-place all-gather on tp: member 0 runs in place at recv - send = 0 (world rank 2 too, as
# member 0: the world rank's offset would be 8); the other member's slot overlaps elsewhere.
refused "in-place offset is the rank within tp" $C/inplace_wrong.yaml \
    "$C/inplace_wrong.yaml:10:57: error: all_gather send [4:4] and recv [0:8] overlap in one buffer, but nccl runs in place only at recv - send = 0 elements on rank 0 (0 in 'tp') [rank 0]"
run check $C/inplace_wrong.yaml
if grep -qF "recv - send = 0 elements on rank 2 (0 in 'tp') [rank 2]" "$TMP/err"; then
    ok "in-place offset of world rank 2 is member 0's"
else not_ok "in-place offset of world rank 2 is member 0's" "$(grep 'rank 2\]' "$TMP/err")"; fi

# tp group {0,1}: 256 vs 512 elements; group {2,3}: 768 vs 1024. One error per group, each
# naming the group's reference (its least member) and members.
refused "divergence inside a tp group" $C/diverge_in_group.yaml \
    "$C/diverge_in_group.yaml:9:24: error: rank 1 issues all_reduce (count 512) where rank 0 issues all_reduce (count 256) in their group of communicator 'tp' (ranks 0, 1) [rank 1]" \
    "$C/diverge_in_group.yaml:9:24: note: rank 0 issues all_reduce (count 256) here [rank 1]"
run check $C/diverge_in_group.yaml
if [ "$(grep -c ': error: ' "$TMP/err")" -eq 2 ] &&
    grep -qF "rank 3 issues all_reduce (count 1024) where rank 2 issues all_reduce (count 768) in their group of communicator 'tp' (ranks 2, 3) [rank 3]" "$TMP/err"
then ok "divergence: two errors, one per tp group"
else not_ok "divergence: two errors, one per tp group" "$(grep -c ': error: ' "$TMP/err") errors"; fi

# {0,1} reduce 256 elements, {2,3} 512: each group agrees inside.
clean "counts that differ across tp groups are not an error" $C/diverge_across_groups.yaml

refused "a member ends before its group's reference" $C/ends_early.yaml \
    "$C/ends_early.yaml:10:5: error: rank 0 ends after 1 collectives on communicator 'tp' while rank 1 issues all_reduce here (their group: ranks 0, 1) [rank 1]"

# rank 3 -> member 1 of 'pair' (world rank 1), which receives from member 0 (world rank 3).
clean "send/recv pair through a rank list's local ranks" $C/p2p_pair_ok.yaml

# a send on 'pair' and a recv on the world never pair (one communicator, one order).
refused "send on 'pair' does not pair with a recv on the world" $C/p2p_other_comm.yaml \
    "$C/p2p_other_comm.yaml:9:26: error: send to rank 1 on 'pair' has no matching recv: rank 1 posts fewer than 1 recvs from rank 3 on 'pair' [rank 3]" \
    "$C/p2p_other_comm.yaml:11:26: error: recv from rank 3 has no matching send: rank 3 sends fewer than 1 to rank 1 [rank 1]"

# peer 1 - rank % 2 on tp: world ranks 0 <-> 1 (and 2 <-> 3), each sending first outside a group.
refused "deadlock through tp's local peers" $C/p2p_deadlock.yaml \
    "$C/p2p_deadlock.yaml:10:5: error: deadlock: a cycle of blocking waits (rank 0 -> 1 -> 0): a send or recv outside a group blocks until its peer's partner runs: put the pair's ops in one group [rank 0]" \
    "$C/p2p_deadlock.yaml:10:5: note: rank 0 send to rank 1 waits for rank 1 [rank 0]"

# expect_error sees the group's contract: 'e' (16 into 4 on tp, 2 x 4 = 8) is met and reports
# nothing; 'f' (16 into 8, 2 x 8 = 16: right on tp) is not.
refused "expect_error with the group's contract" $C/expect_error.yaml \
    "$C/expect_error.yaml:13:58: error: expect_error 'f' expected size_mismatch but reduce_scatter raised no error" \
    "$C/expect_error.yaml:13:36: note: expect_error 'f' expects size_mismatch here"

# ranks 0 and 3 all-reduce on tp then dp, ranks 1 and 2 on dp then tp: every group agrees on its
# own collectives, yet 0 waits on tp for 1, 1 on dp for 3, 3 on tp for 2, 2 on dp for 0.
refused "collectives on tp and dp in orders that wait in a cycle" $C/order_deadlock.yaml \
    "$C/order_deadlock.yaml:13:5: error: deadlock: a cycle of collectives on different communicators (rank 0 -> 1 -> 3 -> 2 -> 0): a collective waits for every member of its group; issue them in one order on every rank [rank 0]" \
    "$C/order_deadlock.yaml:13:5: note: rank 0 at all_reduce on 'tp' waits for rank 1 [rank 0]"

# {0,1} issue one more tp all-reduce than {2,3}: the sequences differ, every group still meets.
clean "sequences that differ across groups but meet in turn" $C/order_ok.yaml
