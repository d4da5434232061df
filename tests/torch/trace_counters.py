# SPDX-License-Identifier: MIT
"""trace_counters.py — the predicted value of a `memlife trace` counter after every op.

A trace has one sample per op on each counter track (analyzer/visual/trace.c), then one closing
sample at the end of the last op: the k-th sample of a track is the value after op k, whatever
the predicted times are (several ops can start at the same time). Shared by the torch test
scripts that compare a trace op by op with a measurement or a snapshot."""


def per_op(trace_events, name):
    """The `predicted` values of counter NAME, one per op in op order (the closing sample dropped
    when there is one per op and one more)."""
    return [e["args"]["predicted"] for e in trace_events
            if e.get("ph") == "C" and e.get("name") == name]


def value_after(values, k):
    """Value after op k (0 before any sample: an empty plan)."""
    return values[k] if 0 <= k < len(values) else (values[-1] if values else 0)
