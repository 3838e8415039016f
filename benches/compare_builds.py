#!/usr/bin/env python3
"""Times the same benchmarks from two builds, runs alternated, medians compared.

    benches/compare_builds.py BEFORE_DIR AFTER_DIR [--rounds N] [--min-time S]
        [BINARY:FILTER ...]

BEFORE_DIR and AFTER_DIR hold benchmark binaries (a build's benches/, or a
copy of it). Each round runs every BINARY:FILTER once from each directory,
in alternating order, so that a slow spell of a shared machine falls on
both. Prints, per benchmark, the median real time of each build and their
ratio (after / before).
"""
import argparse
import json
import statistics
import subprocess
import sys
from collections import defaultdict

DEFAULT = [
    "executor_bench:BM_SessionChain",
    "training_bench:BM_Mlp",
    "cluster_bench:BM_(Local|Cluster|RpcEcho)",
    "partition_bench:BM_(Regression|Chain|Transfer)",
]


def run(directory, binary, pattern, min_time):
    out = subprocess.run(
        [f"{directory}/{binary}", f"--benchmark_filter={pattern}",
         f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    times = {}
    for bench in json.loads(out)["benchmarks"]:
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[bench["time_unit"]]
        times[bench["name"]] = bench["real_time"] * scale
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("benches", nargs="*", default=DEFAULT)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", default="0.3")
    args = parser.parse_args()
    samples = defaultdict(lambda: {"before": [], "after": []})
    order = []
    for r in range(args.rounds):
        sides = [("before", args.before), ("after", args.after)]
        if r % 2:
            sides.reverse()
        for spec in args.benches:
            binary, pattern = spec.split(":", 1)
            for side, directory in sides:
                for name, micros in run(directory, binary, pattern, args.min_time).items():
                    if name not in samples:
                        order.append(name)
                    samples[name][side].append(micros)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'benchmark':58} {'before us':>11} {'after us':>11} {'after/before':>13}")
    for name in order:
        before = statistics.median(samples[name]["before"])
        after = statistics.median(samples[name]["after"])
        print(f"{name:58} {before:11.2f} {after:11.2f} {after / before:13.3f}")


if __name__ == "__main__":
    main()
