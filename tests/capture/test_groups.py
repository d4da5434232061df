# SPDX-License-Identifier: MIT
"""memlife._groups: what the recorder says of a process group, from its ranks, the program's
meshes and its new_group calls. The expected values are worked out by hand from row-major
meshes (rank = sum of coordinate x stride)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from memlife._groups import describe, mesh_dims_of, partition_of  # noqa: E402


def test_mesh_dims_of_2d():
    # mesh (dp 4, tp 2), strides (2, 1): rank 5 is (2, 1)
    assert mesh_dims_of((4, 2), [4, 5], 5) == [1]             # tp: ranks 4, 5
    assert mesh_dims_of((4, 2), [1, 3, 5, 7], 5) == [0]       # dp: tp coordinate 1
    assert mesh_dims_of((4, 2), list(range(8)), 5) == [0, 1]  # both: the whole mesh
    assert mesh_dims_of((4, 2), [5, 4], 5) is None            # not row-major order
    assert mesh_dims_of((4, 2), [5, 7], 5) is None            # no dimension's group


def test_mesh_dims_of_3d_flattened():
    # mesh (2, 2, 2), strides (4, 2, 1): rank 5 is (1, 0, 1); dims 0 and 1 vary: 1, 3, 5, 7
    assert mesh_dims_of((2, 2, 2), [1, 3, 5, 7], 5) == [0, 1]
    assert mesh_dims_of((2, 2, 2), [1, 5], 5) == [0]
    assert mesh_dims_of((2, 2, 2), [4, 5, 6, 7], 5) == [1, 2]


def test_mesh_dims_of_size_one():
    # a dimension of size 1 has a group of the rank alone: the first such dimension says it
    assert mesh_dims_of((8, 1), [3], 3) == [1]


def test_partition_of():
    blocks = [[0, 1], [2, 3], [4, 5], [6, 7]]
    strided = [[0, 2, 4, 6], [1, 3, 5, 7]]
    calls = blocks + strided + [[0, 7]]
    assert partition_of(calls, [2, 3], 8) == blocks
    assert partition_of(calls, [6, 4, 2, 0], 8) == strided    # the group's set, in any order
    assert partition_of(calls, [0, 7], 8) is None             # covers two ranks of eight
    # a run cut where a call overlaps it: [0, 1] then the world's strided halves
    assert partition_of([[0, 1]] + strided, [1, 3, 5, 7], 8) == strided


def test_describe():
    groups = {"3": [4, 5], "1": [1, 3, 5, 7], "9": [5, 7]}
    meshes = [(("dp",), (8,), list(range(8))),                # FSDP2's default 1-D world mesh
              (("dp", "tp"), (4, 2), list(range(8)))]
    calls = [[0, 2, 4, 6], [1, 3, 5, 7], [0, 1], [2, 3], [4, 5], [6, 7], [5, 7]]
    out = describe(groups, meshes, calls, 8, 5)
    assert out["mesh"] == {"dims": ["dp", "tp"], "shape": [4, 2]}
    assert out["groups"] == {"3": {"ranks": [4, 5], "mesh_dims": ["tp"]},
                             "1": {"ranks": [1, 3, 5, 7], "mesh_dims": ["dp"]},
                             "9": {"ranks": [5, 7]}}


def test_describe_flattened_name_and_unnamed_dims():
    meshes = [(None, (2, 2, 2), list(range(8)))]
    out = describe({"14": [1, 3, 5, 7]}, meshes, [], 8, 5, {"14": "fsdp"})
    assert out["mesh"] == {"dims": ["d0", "d1", "d2"], "shape": [2, 2, 2]}
    assert out["groups"]["14"] == {"ranks": [1, 3, 5, 7], "mesh_dims": ["d0", "d1"], "name": "fsdp"}


def test_describe_mesh_not_row_major():
    # a mesh of ranks in another order is none the schedule's mesh: can say: the calls decide
    meshes = [(("a", "b"), (2, 2), [0, 2, 1, 3])]
    out = describe({"5": [0, 1]}, meshes, [[0, 1], [2, 3]], 4, 0)
    assert "mesh" not in out
    assert out["groups"]["5"] == {"ranks": [0, 1], "partition": [[0, 1], [2, 3]]}


def test_describe_world_only():
    assert describe({"world": list(range(4))}, [], [], 4, 0) == {}
