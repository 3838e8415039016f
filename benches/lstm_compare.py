#!/usr/bin/env python3
# One LSTM training step (batch 64, 28 steps, hidden 128, forward, backward
# and Adam) timed in rill with the cell in a while loop and unrolled, and in
# PyTorch's nn.LSTM, at 1 and 2 threads: each round runs every variant once,
# in a rotated order, and the table gives the median over rounds of each
# run's median step time.
# PyTorch runs with its BLAS and OpenMP at the same thread count (OpenMP
# threads wait passively); Debian's
# python3-torch calls whatever libblas.so.3 the system has (the reference
# BLAS unless an optimized one is installed): --torch_blas DIR puts DIR
# (e.g. the openblas-pthread folder of libopenblas0-pthread) first on its
# library path.
#   benches/lstm_compare.py [--build build | --bench PATH] [--rounds 5] [--steps 30]
#       [--threads 1,2] [--torch_blas DIR]
import argparse
import json
import os
import statistics
import subprocess
import sys


def torch_python():
    """An interpreter that imports torch (the Debian package's, when the one
    running this script has none), or None."""
    for python in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
            return python
    return None


def result(command, env=None):
    run = subprocess.run(command, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({run.returncode}): {run.stderr.strip()}")
    line = [l for l in run.stdout.splitlines() if l.startswith("result: ")][-1]
    return json.loads(line[len("result: "):])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default="build")
    parser.add_argument("--bench", help="the lstm_bench binary (default: BUILD/benches/lstm_bench)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--torch_blas", help="a folder holding the libblas.so.3 PyTorch loads")
    args = parser.parse_args()

    bench = args.bench or os.path.join(args.build, "benches", "lstm_bench")
    torch_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lstm_torch.py")
    python = torch_python()
    if python is None:
        print("no PyTorch (apt-get install python3-torch): timing rill alone", file=sys.stderr)
    common = ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    variants = {}  # name -> (command, environment)
    for threads in [int(t) for t in args.threads.split(",")]:
        for loop in ("while", "unrolled"):
            variants[f"rill {loop}, {threads} thread(s)"] = (
                [bench, "--loop", loop, "--threads", str(threads)] + common, None)
        if python:
            # Passive: OpenMP threads that spin between parallel regions
            # starve each other on a machine with other work (2 threads on 2
            # busy cores ran 20 to 40 times slower).
            env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                       OPENBLAS_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
            if args.torch_blas:
                env["LD_LIBRARY_PATH"] = os.pathsep.join(
                    p for p in (args.torch_blas, env.get("LD_LIBRARY_PATH")) if p)
            variants[f"torch nn.LSTM, {threads} thread(s)"] = (
                [python, torch_script, "--threads", str(threads)] + common, env)

    names = list(variants)
    times = {name: [] for name in names}
    for round_index in range(args.rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(result(*variants[name])["median_ms"])
        print(f"round {round_index + 1}/{args.rounds}: " +
              ", ".join(f"{n} {times[n][-1]:.1f}" for n in names), file=sys.stderr)

    medians = {name: statistics.median(values) for name, values in times.items()}
    blas = f" (libblas from {args.torch_blas})" if args.torch_blas else ""
    print(f"torch{blas}; rill: {bench}")
    print(f"| variant (median of {args.rounds} rounds, each the median of {args.steps} steps) "
          "| ms/step | min | max |")
    print("|---|---|---|---|")
    for name in names:
        print(f"| {name} | {medians[name]:.1f} | {min(times[name]):.1f} | {max(times[name]):.1f} |")
    for threads in [int(t) for t in args.threads.split(",")]:
        loop = medians[f"rill while, {threads} thread(s)"]
        unrolled = medians[f"rill unrolled, {threads} thread(s)"]
        line = f"{threads} thread(s): while / unrolled {loop / unrolled:.2f}"
        if python:
            torch = medians[f"torch nn.LSTM, {threads} thread(s)"]
            line += f", while / torch {loop / torch:.2f}, unrolled / torch {unrolled / torch:.2f}"
        print(line)


if __name__ == "__main__":
    main()
