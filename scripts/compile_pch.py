#!/usr/bin/env python3
"""Compiles a precompiled header with the flags of one compilation in the build.

GCC uses a precompiled header only where it was made with the same
code-generation options and macros as the compilation that loads it, so the
flags are taken from compile_commands.json (the compilation of REFERENCE)
rather than written a second time.

usage: compile_pch.py COMPILE_COMMANDS REFERENCE HEADER HEADER_COPY GCH DEPFILE
"""
import json
import shlex
import shutil
import subprocess
import sys


def main(argv):
    commands_path, reference, header, header_copy, gch, depfile = argv[1:]
    with open(commands_path) as f:
        commands = json.load(f)
    matches = [c for c in commands if c["file"].endswith(reference)]
    if len(matches) != 1:
        sys.exit(f"compile_pch.py: {len(matches)} compilations of {reference} "
                 f"in {commands_path}, expected 1")
    args = shlex.split(matches[0]["command"])
    # Drop the reference's source, output, dependency file and any header it
    # is told to include (this one, where the reference uses it).
    flags = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg in ("-o", "-MQ", "-MF", "-include"):
            skip_next = True
        elif arg not in ("-c", "-MD") and not arg.endswith(reference):
            flags.append(arg)
    # The copy lies beside the precompiled header, where an -include of it
    # finds that; compiling the original keeps the copy out of the
    # dependency file, whose outputs include it.
    shutil.copyfile(header, header_copy)
    subprocess.run(flags + ["-x", "c++-header", header, "-o", gch,
                            "-MD", "-MQ", gch, "-MF", depfile],
                   cwd=matches[0]["directory"], check=True)


if __name__ == "__main__":
    main(sys.argv)
