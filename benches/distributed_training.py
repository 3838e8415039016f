#!/usr/bin/env python3
"""Between-graph training (async, sync, bounded staleness) beside one process, same run.

    benches/distributed_training.py [--build DIR] [--rounds N] [--models mlp,cnn]
        [--mlp_examples N] [--cnn_examples N] [--modes one,async,sync,staleness2,async+bf16]

For each model (the Fashion-MNIST MLP 784-128-10 and the CNN conv 32 - conv 64 -
fc 1024, both Adam, batch 64) every round trains the same number of examples
in each configuration, in an order that alternates from round to round:

  one         examples/fashion_mnist_mlp in one process
  async       examples/distributed_mnist on 1 ps + 2 workers, --issync 0
  sync        the same with --issync 1 (each step: the mean of both workers'
              gradients, so half as many global steps)
  staleness2  --issync 0 --staleness 2
  torch       benches/torch_rpc_ps.py: PyTorch's RPC parameter server, 1 ps + 2 workers,
              asynchronous, Adam (MLP only; Debian's python3-torch, run by /usr/bin/python3)

A cluster mode may carry options after '+': bf16 or fp16 (--gradient_compression),
ipc or tcp (--transport; the default is shared memory), e.g. async+bf16, sync+fp16+ipc.

It prints examples/s (examples applied over the slower worker's training
time: all workers together) and the test accuracy of each run, then the
medians over the rounds and each rate as a multiple of one process.
"""
import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile

BATCH = 64


def result(output):
    line = [l for l in output.splitlines() if l.startswith("result: ")][-1]
    return json.loads(line[len("result: "):])


def free_ports(count):
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def one_process(build, model, examples):
    steps = examples // BATCH
    out = subprocess.run([f"{build}/examples/fashion_mnist_mlp", "--model", model,
                          "--steps", str(steps), "--batch", str(BATCH)],
                         check=True, capture_output=True, text=True).stdout
    r = result(out)
    return r["steps"] * BATCH / r["train_seconds"], r["test_accuracy"]


def torch_twin(model, examples):
    if model != "mlp":
        sys.exit("the torch mode trains the MLP only")
    script = f"{sys.path[0]}/torch_rpc_ps.py"
    out = subprocess.run(["/usr/bin/python3", script, "--workers=2", f"--steps={examples // BATCH}",
                          f"--batch={BATCH}"],
                         check=True, capture_output=True, text=True).stdout
    r = result(out)
    return r["steps_per_second"] * BATCH, r["test_accuracy"]


def cluster(build, model, examples, mode):
    base, *options = mode.split("+")
    # Examples per global step: a synchronous step applies both workers' batches.
    per_step = 2 * BATCH if base == "sync" else BATCH
    extra = {"async": ["--issync=0"], "sync": ["--issync=1"],
             "staleness2": ["--issync=0", "--staleness=2"]}[base]
    for option in options:
        extra.append({"bf16": "--gradient_compression=bf16", "fp16": "--gradient_compression=fp16",
                      "ipc": "--transport=ipc", "tcp": "--transport=tcp"}[option])
    steps = examples // per_step
    ps, w0, w1 = free_ports(3)
    with tempfile.TemporaryDirectory() as logdir:
        flags = [f"--ps_hosts=127.0.0.1:{ps}",
                 f"--worker_hosts=127.0.0.1:{w0},127.0.0.1:{w1}", *extra,
                 f"--model={model}", f"--batch_size={BATCH}",
                 f"--logdir={logdir}", f"--train_steps={steps}", f"--log_every={steps}",
                 f"--validate_every={steps * 10}"]
        binary = f"{build}/examples/distributed_mnist"
        ps_proc = subprocess.Popen([binary, *flags, "--job_name=ps", "--task_index=0"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            workers = [subprocess.Popen([binary, *flags, "--job_name=worker", f"--task_index={i}"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True) for i in (1, 0)]
            results = []
            for w in workers:
                out, _ = w.communicate(timeout=1800)
                if w.returncode != 0:
                    sys.exit(f"a worker failed:\n{out}")
                results.append(result(out))
        finally:
            ps_proc.terminate()
            ps_proc.wait()
    chief = [r for r in results if r["task"] == 0][0]
    seconds = max(r["train_seconds"] for r in results)
    return chief["global_step"] * per_step / seconds, chief["test_accuracy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--modes", default="one,async,sync,staleness2")
    parser.add_argument("--mlp_examples", type=int, default=256000)
    parser.add_argument("--cnn_examples", type=int, default=25600)
    args = parser.parse_args()
    modes = args.modes.split(",")
    for model in args.models.split(","):
        examples = args.mlp_examples if model == "mlp" else args.cnn_examples
        rates = {m: [] for m in modes}
        accuracies = {m: [] for m in modes}
        for round_index in range(args.rounds):
            order = modes if round_index % 2 == 0 else list(reversed(modes))
            for mode in order:
                if mode == "one":
                    rate, accuracy = one_process(args.build, model, examples)
                elif mode == "torch":
                    rate, accuracy = torch_twin(model, examples)
                else:
                    rate, accuracy = cluster(args.build, model, examples, mode)
                rates[mode].append(rate)
                accuracies[mode].append(accuracy)
                print(f"{model} round {round_index + 1}: {mode:10} {rate:9.0f} examples/s, "
                      f"test accuracy {accuracy:.4f}", flush=True)
        base = statistics.median(rates["one"]) if "one" in rates else None
        print(f"{model}, {examples} examples, medians of {args.rounds} rounds:")
        print(f"| {'mode':10} | {'examples/s':>10} | {'x one process':>13} | {'test accuracy':>13} "
              f"| {'mean accuracy':>13} |")
        for mode in modes:
            rate = statistics.median(rates[mode])
            ratio = f"{rate / base:.2f}" if base else "-"
            print(f"| {mode:10} | {rate:10.0f} | {ratio:>13} | "
                  f"{statistics.median(accuracies[mode]):13.4f} | "
                  f"{statistics.mean(accuracies[mode]):13.4f} |", flush=True)


if __name__ == "__main__":
    main()
