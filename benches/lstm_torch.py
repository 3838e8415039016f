#!/usr/bin/env python3
# The PyTorch twin of benches/lstm_bench: one training step (forward,
# backward, Adam) of nn.LSTM (28 steps of 28 features, hidden 128) with a
# dense layer to 10 classes and cross-entropy, on the CPU. Prints one line
# `result: {json}` with the median milliseconds of the timed steps.
#   lstm_torch.py [--threads N] [--batch N] [--hidden N] [--steps N] [--warmup N]
import argparse
import json
import statistics
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(0)

    lstm = torch.nn.LSTM(input_size=28, hidden_size=args.hidden)  # [time, batch, feature]
    dense = torch.nn.Linear(args.hidden, 10)
    params = list(lstm.parameters()) + list(dense.parameters())
    adam = torch.optim.Adam(params, lr=0.001)
    x = torch.rand(28, args.batch, 28)
    labels = torch.randint(0, 10, (args.batch,))

    def step():
        adam.zero_grad(set_to_none=True)
        out, _ = lstm(x)
        loss = torch.nn.functional.cross_entropy(dense(out[-1]), labels)
        loss.backward()
        adam.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    print("result: " + json.dumps({
        "impl": f"torch nn.LSTM {torch.__version__}", "threads": args.threads,
        "batch": args.batch, "hidden": args.hidden, "steps": args.steps,
        "median_ms": round(statistics.median(times), 3),
    }))


if __name__ == "__main__":
    main()
