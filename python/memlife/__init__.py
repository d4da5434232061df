# SPDX-License-Identifier: MIT
"""memlife's Python side: capture a real PyTorch training step as a memlife schedule.

    import memlife
    snap = memlife.capture("train.py:build", world=64, rank=0, on="fake", lets={"MBS": 4})

returns the snapshot-shaped dict that `memlife import` turns into a schedule; the command
`memlife capture FILE.py[:FUNC] --world N -o OUT.yaml` does both (docs/capture.md).
"""
from . import _hooks

# Before torch: a PyTorch built without CUDA gets the virtual device's hooks now or never.
_hooks.install()

from ._capture import ProgramError, UsageError, capture  # noqa: E402

__all__ = ["capture", "ProgramError", "UsageError"]
