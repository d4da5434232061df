# SPDX-License-Identifier: MIT
"""The collectives of a captured schedule's `step` region (the recorded step, the last region),
one a line: KIND COMM SEND_BYTES RECV_BYTES SEND [WHEN], with COMM `world` where the step has no
`comm:`, the sizes the views' lengths (a whole buffer: its alloc's bytes) and SEND the send
operand as written. Reads the schedule as memlife capture writes it (a step a line, `when:` on
the line below), so that tests/capture/comms.sh can state what it expects of each."""
import re
import sys

ALLOC = re.compile(r"\s*- alloc: \{buf: ([^,}]+), bytes: (\d+)")
COLL = re.compile(r"\s*- (all_gather|reduce_scatter|all_reduce|broadcast|all_to_all|reduce): "
                  r"\{(.*)\}$")
VIEW = re.compile(r'"?([^"\[]+)(?:\[(.*) : (\d+)\])?"?$')


def operand(text, sizes):
    m = VIEW.match(text)
    return int(m[3]) if m[3] else sizes[m[1]]


def fields(body):
    """{send: "a[x : 4]", recv: b, op: sum} -> dict (the views' quotes hold no comma)."""
    out = {}
    for part in re.split(r'(, (?=[a-z_]+: ))', body):
        if part.startswith(", "):
            continue
        k, _, v = part.partition(": ")
        out[k] = v
    return out


def main(path):
    sizes, in_step, rows = {}, False, []
    lines = open(path).read().splitlines()
    for i, line in enumerate(lines):
        m = ALLOC.match(line)
        if m:
            sizes[m[1]] = int(m[2])
        if re.match(r"^    name: step$", line):
            in_step = True
        m = COLL.match(line)
        if not (m and in_step):
            continue
        f = fields(m[2])
        send = f.get("send", f.get("buf"))
        recv = f.get("recv", f.get("buf"))
        when = ""
        if i + 1 < len(lines) and lines[i + 1].strip().startswith("when:"):
            when = " " + lines[i + 1].strip()
        rows.append(f"{m[1]} {f.get('comm', 'world')} {operand(send, sizes)} "
                    f"{operand(recv, sizes)} {send}{when}")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1])
