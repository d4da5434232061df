#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in for runtime/backends/torch/driver.py that fails on purpose, for
tests/mpi/torch_backend.sh (no torch needed): it speaks the driver's protocol (every request
answered "ok", reads "ok N" + N zero bytes, mem "0 ..."), and at request FAKE_AT of rank
FAKE_RANK it FAKE_MODE=dies (SIGKILL, as a crash) or hangs (never answers)."""
import os
import signal
import sys
import time

rank = int(os.environ["RANK"])
mode, at, who = os.environ.get("FAKE_MODE", ""), int(os.environ.get("FAKE_AT", "0")), int(os.environ.get("FAKE_RANK", "0"))
inp, out = sys.stdin.buffer, sys.stdout.buffer
out.write(b"hello fake gloo cpu -\n")
out.flush()
n = 0
while True:
    line = inp.readline()
    if not line:
        sys.exit(0)
    words = line.decode().split()
    n += 1
    if rank == who and n == at:
        if mode == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "hang":
            time.sleep(3600)
    if words[0] == "quit":
        out.write(b"ok\n")
        out.flush()
        sys.exit(0)
    if words[0] == "write":
        inp.read(int(words[3]))
    if words[0] == "read":
        out.write(b"ok %d\n" % int(words[3]) + bytes(int(words[3])))
    elif words[0] == "mem":
        out.write(b"ok 0 0 0 0 0 0 0\n")
    elif words[0] == "warmup":
        out.write(b"ok 0\n")
    else:
        out.write(b"ok\n")
    out.flush()
