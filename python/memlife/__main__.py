# SPDX-License-Identifier: MIT
"""python -m memlife capture ...: what `memlife capture` runs (memlife._capture.main)."""
import sys

from ._capture import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "capture":
        print("usage: python -m memlife capture FILE.py[:FUNC] --world N ... -o OUT.json",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(main(args[1:]))
