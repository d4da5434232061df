# SPDX-License-Identifier: MIT
"""python -m memlife capture ...: what `memlife capture` runs (memlife._capture.main).
Exits 9 when this interpreter has no torch, so that memlife tries the next python3."""
import importlib.util
import os
import sys

if importlib.util.find_spec("torch") is None:
    sys.exit(9)   # memlife says which it tried

from ._capture import main  # noqa: E402

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "capture":
        print("usage: python -m memlife capture FILE.py[:FUNC] --world N ... -o OUT.json",
              file=sys.stderr)
        sys.exit(2)
    rc = main(args[1:])
    # The result is written (atomically) by now. Ending without the interpreter's teardown:
    # torch's C++ objects (a process group's threads) destroyed at exit can end the process
    # with std::terminate (exit 134) once in a while, after the work is done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
