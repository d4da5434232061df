# SPDX-License-Identifier: MIT
"""docs_commands.py WORKDIR DOC.md... — every memlife command the docs show, run, its
shown output and exit code compared (tests/cli/docs_commands.sh runs it in `make test`).

What counts as a command:
  - in a ```console block, a line starting with "$ " (its output: the lines up to the next "$ "
    or the block's end; a command with no lines shown has its output not compared);
  - in a ```sh block (or one without a language), a line whose command is memlife ("memlife",
    "./memlife", or after "cd DIR &&"); no output is shown there, so only the exit code counts.
A line ending in a backslash goes on with the next. "# ..." after a command is a comment.

Each block runs in one bash, in WORKDIR (the repository's folders linked there, ./memlife and
memlife on PATH the binary under test), so `cd`, files a command writes and `$?` carry from one
command to the next as they would in a reader's terminal.

Comparison, line by line after trailing blanks are dropped: a shown line "..." stands for any
number of lines (0 or more); what differs from run to run is masked on both sides (the
provenance line's version, commit, date, host and MPI). Every command exits 0 unless the block
says otherwise (or shows the code itself with `echo $?`).

The doc source says what the test cannot do, in an HTML comment right above the block's fence
(Markdown shows nothing of it):
  <!-- docs-test: skip REASON -->   the block is listed as skipped, with the reason (a GPU, a
                                    long run);
  <!-- docs-test: exit N -->        the block's last command exits N.
"""
import os
import re
import subprocess
import sys

FENCE = re.compile(r"^```(\w*)\s*$")
MARK = re.compile(r"^<!-- docs-test: (skip|exit) ?(.*?) ?-->$")
# "memlife CMD ..." (not an output line such as "memlife diff: A = ...")
SH_CMD = re.compile(r"^(cd \S+ && *)?(\./)?memlife(\s+[a-z][a-z-]*(\s|$)|\s*$)")

# What varies from run to run, masked on both sides before comparing.
MASKS = [
    (re.compile(r"memlife \d+\.\d+\.\d+ \([0-9a-f]{7,40}(-dirty)?\)"), "memlife VERSION (COMMIT)"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "DATE"),
    (re.compile(r"\bhosts \S+"), "hosts HOST"),
    (re.compile(r"Open MPI v[\d.]+"), "Open MPI VERSION"),
]


def blocks(path):
    """(line of the fence, language, marks, [(line, command, shown lines or None)])"""
    lines = open(path).read().split("\n")
    out, k = [], 0
    while k < len(lines):
        m = FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        lang, start = m.group(1), k + 1
        marks, j = {}, k - 1
        while j >= 0 and MARK.match(lines[j]):
            mm = MARK.match(lines[j])
            marks[mm.group(1)] = mm.group(2)
            j -= 1
        body = []
        k += 1
        while k < len(lines) and not FENCE.match(lines[k]):
            body.append((k + 1, lines[k]))
            k += 1
        k += 1
        cmds = commands(lang, body)
        if cmds:
            out.append((start, lang, marks, cmds))
    return out


def joined(body, i):
    """The command starting at body[i], its continuation lines joined; and the next index."""
    text = body[i][1]
    while text.endswith("\\") and i + 1 < len(body):
        i += 1
        text = text[:-1] + " " + body[i][1].strip()
    return text, i + 1


def strip_comment(cmd):
    # "cmd   # what it shows": a comment after two or more spaces (not a '#' inside an argument)
    return re.sub(r"\s{2,}#.*$", "", cmd).rstrip()


def commands(lang, body):
    cmds, i = [], 0
    if lang == "console":
        while i < len(body):
            line_no, text = body[i]
            if not text.startswith("$ "):
                i += 1
                continue
            text, i = joined(body, i)
            shown = []
            while i < len(body) and not body[i][1].startswith("$ "):
                shown.append(body[i][1])
                i += 1
            cmds.append((line_no, strip_comment(text[2:]), shown or None))
    elif lang in ("sh", "bash", ""):
        while i < len(body):
            line_no, text = body[i]
            if not SH_CMD.match(text):
                i += 1
                continue
            text, i = joined(body, i)
            cmds.append((line_no, strip_comment(text), None))
    return cmds


def masked(lines):
    out = []
    for line in lines:
        line = line.rstrip()
        for rx, rep in MASKS:
            line = rx.sub(rep, line)
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


def matches(shown, got):
    """shown (with "..." lines) against got, both masked."""
    def at(s, g):
        if s == len(shown):
            return g == len(got)
        if shown[s].strip() == "...":
            return any(at(s + 1, h) for h in range(g, len(got) + 1))
        return g < len(got) and shown[s] == got[g] and at(s + 1, g + 1)
    return at(0, 0)


def first_difference(shown, got):
    for k, (a, b) in enumerate(zip(shown, got)):
        if a != b and a.strip() != "...":
            return "line %d: shown %r, got %r" % (k + 1, a, b)
    return "shown %d lines, got %d" % (len(shown), len(got))


def run_block(workdir, cmds, tmp):
    """Runs the commands in one bash: their outputs and exit codes."""
    script = ["prev=0"]
    for n, (_, cmd, _) in enumerate(cmds):
        # `( exit $prev )` gives `echo $?` the previous command's code
        script.append("( exit $prev ); eval %s >%s/out%d 2>&1; prev=$?; echo $prev >%s/rc%d"
                      % (sh_quote(cmd), tmp, n, tmp, n))
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=workdir, env=os.environ,
                   timeout=600)
    res = []
    for n in range(len(cmds)):
        try:
            out = open("%s/out%d" % (tmp, n), errors="replace").read().split("\n")
            rc = int(open("%s/rc%d" % (tmp, n)).read())
        except (OSError, ValueError):
            out, rc = [], -1
        res.append((out, rc))
    return res


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    workdir, docs = sys.argv[1], sys.argv[2:]
    tmp = os.path.join(workdir, ".docs-test")
    os.makedirs(tmp, exist_ok=True)
    for doc in docs:
        for start, lang, marks, cmds in blocks(doc):
            name = "%s:%d" % (doc, start)
            first = cmds[0][1] if len(cmds[0][1]) < 70 else cmds[0][1][:67] + "..."
            if "skip" in marks:
                print("skip - docs %s (%s): %s" % (name, first, marks["skip"]))
                continue
            last_rc = int(marks.get("exit") or 0)
            try:
                res = run_block(workdir, cmds, tmp)
            except subprocess.TimeoutExpired:
                print("not ok - docs %s (%s): over 600 s (mark it <!-- docs-test: skip ... -->)"
                      % (name, first))
                continue
            bad = []
            for n, ((line_no, cmd, shown), (out, rc)) in enumerate(zip(cmds, res)):
                want_rc = last_rc if n == len(cmds) - 1 else 0
                # a command followed by `echo $?` has its code shown there, and checked there
                told = n + 1 < len(cmds) and cmds[n + 1][1].startswith("echo $?")
                if rc != want_rc and not told:
                    bad.append("line %d '%s': exit %d, want %d: %s" % (
                        line_no, cmd[:60], rc, want_rc, " | ".join(out[:2])[:200]))
                elif shown is not None:
                    s, g = masked(shown), masked(out)
                    if not matches(s, g):
                        bad.append("line %d '%s': output differs, %s" % (
                            line_no, cmd[:60], first_difference(s, g)))
            if bad:
                print("not ok - docs %s (%s): %s" % (name, first, "; ".join(bad)))
            else:
                print("ok - docs %s (%s): %d command%s as shown" % (
                    name, first, len(cmds), "" if len(cmds) == 1 else "s"))


if __name__ == "__main__":
    main()
