#!/usr/bin/env python3
"""Runs the shell blocks of README.md against the build, as a new user would.

readme_test.py README BUILD_DIR: every ```sh block runs with bash (-e, -o
pipefail) in a fresh directory, unless the line before its fence says why
it cannot (`<!-- not run by the tests: REASON -->`: another machine, root,
the test command itself). What a block expects is written in it: a comment
line right after a command (`# w: float32 [1] = [0.1]`) is a line of
output, `...` inside it matches anything and `# ...` alone any number of
lines; each must appear in the block's output (stdout and stderr), in
order. A comment at the end of a command's line (`cmd  # why`) is
commentary.

The paths a reader types from the repository root are rewritten for the
test: `build/` names BUILD_DIR, `../shared/testdata` RILL_TESTDATA, `/tmp/`
the block's directory; each 127.0.0.1 port is replaced by a free one, and
`rill` alone (not on PATH before `meson install`) fails the block.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile

SKIP = re.compile(r"<!-- not run by the tests: (.+) -->")
TIMEOUT_S = 300


class Block:
    def __init__(self, line, text, skip):
        self.line = line  # Of the opening fence, 1-based.
        self.text = text
        self.skip = skip


def blocks_of(readme):
    lines = readme.split("\n")
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        before = next((l for l in reversed(lines[:i]) if l.strip()), "")
        skip = SKIP.search(before)
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            sys.exit(f"README.md:{i + 1}: a ```sh block that never ends")
        found.append(Block(i + 1, "\n".join(lines[i + 1:end]), skip.group(1) if skip else None))
        i = end + 1
    return found


def expected_output(text):
    """The output lines a block names, in order (None: any lines)."""
    expected = []
    after_command = False
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            after_command = False
        elif stripped.startswith("#"):
            if after_command:
                body = stripped[1:].strip()
                expected.append(None if body == "..." else body)
        else:
            after_command = True
    return expected


def pattern_of(line):
    """`...` matches anything, a run of spaces any run of spaces."""
    parts = [r"\s+".join(re.escape(word) for word in part.split()) for part in line.split("...")]
    return re.compile(r"\s*" + r".*".join(parts) + r"\s*$")


def check_output(expected, output):
    """The first expected line not found in order in `output`, or None."""
    lines = output.split("\n")
    at = 0
    for line in expected:
        if line is None:
            continue
        pattern = pattern_of(line)
        while at < len(lines) and not pattern.match(lines[at]):
            at += 1
        if at == len(lines):
            return line
        at += 1
    return None


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def rewrite(text, build_dir, testdata, work):
    text = re.sub(r"(?<![\w.-])/tmp/", work + "/tmp/", text)
    text = re.sub(r"(?<![\w./-])build/", build_dir + "/", text)
    text = text.replace("../shared/testdata", testdata)
    ports = sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", text)))
    for port, free in zip(ports, free_ports(len(ports))):
        text = re.sub(r"127\.0\.0\.1:%s\b" % port, "127.0.0.1:%d" % free, text)
    return text


def run_block(block, build_dir, testdata):
    with tempfile.TemporaryDirectory(prefix="readme-") as work:
        os.makedirs(os.path.join(work, "tmp"))
        bin_dir = os.path.join(work, ".bin")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "rill"), "w") as shim:
            shim.write("#!/bin/sh\necho 'rill is not on PATH before meson install:"
                       " write build/cli/rill' >&2\nexit 127\n")
        os.chmod(os.path.join(bin_dir, "rill"), 0o755)
        env = dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"])
        text = rewrite(block.text, build_dir, testdata, work)
        script = "set -eo pipefail\n" + text
        # Output to a file, not a pipe: what the block leaves running keeps
        # its end open.
        with open(os.path.join(work, ".output"), "w+") as out:
            process = subprocess.Popen(["bash", "-c", script], cwd=work, env=env, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                status = process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                status = None
            # What the block left running (a ps task serves until killed).
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            out.seek(0)
            output = out.read()
        return status, output, expected_output(text)


def main():
    readme_path, build_dir = sys.argv[1], os.path.realpath(sys.argv[2])
    testdata = os.path.realpath(os.environ["RILL_TESTDATA"])
    with open(readme_path) as f:
        blocks = blocks_of(f.read())
    failures = 0
    for block in blocks:
        where = f"README.md:{block.line}"
        if block.skip:
            print(f"{where}: not run ({block.skip})")
            continue
        status, output, expected = run_block(block, build_dir, testdata)
        missing = check_output(expected, output)
        if status == 0 and missing is None:
            print(f"{where}: ok")
            continue
        failures += 1
        why = (f"timed out after {TIMEOUT_S} s" if status is None else
               f"exit status {status}" if status != 0 else f"no output line matches '{missing}'")
        print(f"{where}: FAIL: {why}\n--- block\n{block.text}\n--- output\n{output}---")
    print(f"{len(blocks)} blocks, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
