# SPDX-License-Identifier: MIT
"""python -m memlife capture ...: what `memlife capture` runs (memlife._capture.main).
Exits 9 when this interpreter has no torch, so that memlife tries the next python3."""
import importlib.util
import sys

if importlib.util.find_spec("torch") is None:
    print("memlife: this python has no torch", file=sys.stderr)
    sys.exit(9)

from ._capture import main  # noqa: E402

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "capture":
        print("usage: python -m memlife capture FILE.py[:FUNC] --world N ... -o OUT.json",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(main(args[1:]))
