# SPDX-License-Identifier: MIT
"""Checks of optimize's patched output (tests/cli/optimize_patch.sh). Each prints "ok" or why not.

  edited IN OUT      only the edited lines differ: every line of IN that is not in OUT is a step
                     line quoted by a 'memlife optimize (line N, removed|rewritten...)' comment of
                     its own line N (or moved: in OUT as it was); every line of OUT that is not in
                     IN is a 'memlife optimize' comment, a comment line of IN's (a kept end-of-line
                     comment), or the line right under such a comment (the step it explains); a
                     step the emitter rewrote ('(line N, rewritten') covers its lines on both sides
  comments IN OUT    every comment of IN (whole-line or end-of-line) is in OUT byte for byte
  same REPORT PRED   `memlife predict --format json` of the rewrite gives optimize's predicted
                     'after' on every rank: requested and device, steady and peak, to the byte
"""
import difflib
import json
import re
import sys


def lines(path):
    with open(path, "rb") as f:
        return f.read().decode().splitlines()


def comment_of(line):
    """The comment of a line (from its '#', outside quotes), or None."""
    q = None
    for k, ch in enumerate(line):
        if q:
            q = None if ch == q else q
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (k == 0 or line[k - 1] in " \t" or not line[:k].strip()):
            return line[k:]
    return None


def indent(line):
    return len(line) - len(line.lstrip(" "))


def edited(a, b):
    sa, sb = set(a), set(b)
    user_comments = {comment_of(x) for x in a if comment_of(x)}
    # input lines a comment names: 'memlife optimize (line N...' names line N, and where N is a
    # step the emitter rewrote, the lines of that step (those more indented than its first)
    covered = set()
    for x in b:
        m = re.search(r"memlife optimize \(line (\d+)[,)]", x)
        if not m:
            continue
        n = int(m.group(1))
        covered.add(n)
        if "rewritten" in x and n <= len(a):
            ind = indent(a[n - 1])
            for k in range(n, len(a)):
                if a[k].strip() and not a[k].lstrip().startswith("#") and indent(a[k]) <= ind:
                    break
                covered.add(k + 1)
    # output lines under a 'rewritten' comment: the step, and its more indented lines
    under = set()
    for j, x in enumerate(b):
        if "memlife optimize (line" in x and "rewritten" in x:
            ind, step = indent(x), False
            for k in range(j + 1, len(b)):
                content = b[k].strip() and not b[k].lstrip().startswith("#")
                if content and indent(b[k]) <= ind:
                    if step:
                        break
                    step = True
                under.add(k)
    diff = difflib.SequenceMatcher(None, a, b, autojunk=False)
    bad = []
    for op, i1, i2, j1, j2 in diff.get_opcodes():
        if op == "equal":
            continue
        for i in range(i1, i2):
            n = i + 1
            if a[i] not in sb and n not in covered:
                bad.append("input line %d gone without a comment: %r" % (n, a[i]))
        for j in range(j1, j2):
            x = b[j]
            explained = lambda y: "# memlife optimize" in y or (
                y.lstrip().startswith("#") and y.strip() in user_comments)
            if x in sa or explained(x) or j in under:
                continue
            if j > 0 and explained(b[j - 1]):
                continue
            bad.append("output line %d unexplained: %r" % (j + 1, x))
    return bad


def comments(a, b):
    text = "\n".join(b)
    return ["comment of input line %d lost: %r" % (k + 1, comment_of(x))
            for k, x in enumerate(a) if comment_of(x) and comment_of(x) not in text]


def same(report, pred):
    r = json.load(open(report))
    p = json.load(open(pred))
    bad = []
    for plan, sched in zip(r["plans"], p["schedules"]):
        for want, got in zip(plan["ranks"], sched["ranks"]):
            for view in ("requested", "device"):
                for key in ("steady", "peak"):
                    if want["after"][view][key] != got[view][key]:
                        bad.append("rank %d %s %s: optimize %d, predict %d" % (
                            want["rank"], view, key, want["after"][view][key], got[view][key]))
        if len(plan["ranks"]) != len(sched["ranks"]):
            bad.append("ranks: %d vs %d" % (len(plan["ranks"]), len(sched["ranks"])))
    return bad


if __name__ == "__main__":
    cmd, x, y = sys.argv[1:4]
    bad = same(x, y) if cmd == "same" else (edited if cmd == "edited" else comments)(lines(x), lines(y))
    print("ok" if not bad else "; ".join(bad[:4]))
