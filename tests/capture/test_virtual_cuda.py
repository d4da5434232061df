# SPDX-License-Identifier: MIT
"""pytest: the recorder and the virtual CUDA device (python/memlife), one storage at a time.
Run by tests/capture/pytest.sh in make test, on the CPU PyTorch of make deps."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import memlife  # noqa: E402,F401  (before torch: the virtual device's hooks)
import pytest  # noqa: E402
import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from memlife import _record, _virtual_cuda  # noqa: E402


@pytest.fixture
def rec():
    with _virtual_cuda.virtual_cuda():
        with FakeTensorMode(allow_non_fake_inputs=True):
            r = _record.Recorder(virtual=True)
            _virtual_cuda._state.listener = r.on_sync
            _virtual_cuda._state.on_record_stream = r.record_stream
            with r:
                yield r


def allocs(r):
    return [(k, o.nbytes, o.stream) for k, o in r.events if k in ("alloc", "free")]


def test_births_and_deaths_in_program_order(rec):
    a = torch.empty(1000, device="cuda")           # 4000 B
    b = torch.empty(10, dtype=torch.bfloat16, device="cuda")   # 20 B
    del a
    c = b.view(2, 5)                                # a view: no allocation
    del b, c
    assert allocs(rec) == [("alloc", 4000, 0), ("alloc", 20, 0), ("free", 4000, 0),
                           ("free", 20, 0)]


def test_allocation_belongs_to_the_current_stream(rec):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.empty(256, device="cuda")
    y = torch.empty(256, device="cuda")
    assert [e[2] for e in allocs(rec)] == [s.stream_id, 0]
    del x, y


def test_resize_is_a_new_block_then_the_old_freed(rec):
    x = torch.empty(100, device="cuda")             # 400 B
    x.untyped_storage().resize_(0)
    x.untyped_storage().resize_(800)
    assert allocs(rec) == [("alloc", 400, 0), ("free", 400, 0), ("alloc", 800, 0)]


def test_events_and_waits(rec):
    s = torch.cuda.Stream()
    e = torch.cuda.Event()
    e.record(s)
    torch.cuda.current_stream().wait_event(e)
    s.wait_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()
    steps = [o for k, o in rec.events if k == "step"]
    assert steps[0] == {"record": 1, "stream": s.stream_id}
    assert steps[1] == {"wait": 1, "stream": 0}
    assert steps[2] == {"record": 2, "stream": 0} and steps[3] == {"wait": 2, "stream": s.stream_id}
    assert steps[4] == {"sync": "device"}


def test_random_ops_allocate_their_outputs(rec):
    x = torch.randn(3, 5, device="cuda")            # 60 B
    x.uniform_()                                    # in place: nothing
    y = torch.nn.functional.dropout(x, 0.5)         # output 60 B and a bool mask 15 B
    assert [e[1] for e in allocs(rec) if e[0] == "alloc"] == [60, 60, 15]
    del x, y


def test_host_values_are_real(rec):
    t = torch.arange(4)                             # a host tensor: real, readable
    assert t.tolist() == [0, 1, 2, 3]
    assert allocs(rec) == []


def test_the_virtual_device_is_the_named_gpu():
    with _virtual_cuda.virtual_cuda("a100-80gb") as props:
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
        assert torch.cuda.get_device_properties(0).total_memory == props.total_memory == 85198045184
        assert torch.cuda.get_device_capability() == (8, 0)
    with pytest.raises(ValueError, match="unknown GPU"):
        with _virtual_cuda.virtual_cuda("nope"):
            pass
