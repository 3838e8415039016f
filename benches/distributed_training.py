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
topkF or topkFwW (--gradient_compression=topk:F[:W], e.g. topk0.01, or topk0.25w500 to warm up
over 500 steps; with bf16 or fp16, the values in it), ipc or tcp (--transport; the default is
shared memory), ps2 (two ps tasks), fixedN
(--partitioner=fixed:N: the weights in N parts), greedy (--ps_strategy=greedy), e.g.
async+bf16, sync+fp16+ipc, async+ps2+fixed2+greedy+tcp. Over tcp, it also prints the
bytes each ps task received and sent per global step (from the kernel's counters of
its connections, `ss -ti`, read as the run goes).

It prints examples/s (examples applied over the slower worker's training
time: all workers together) and the test accuracy of each run, then the
medians over the rounds and each rate as a multiple of one process.
"""
import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading

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


class PsTraffic:
    """Bytes each ps process's tcp connections carried, polled with `ss -tip`.

    A connection's counters vanish when it closes, so each is read every
    0.2 s and its last reading kept; what moved in the last interval before
    a close is missed, the same for every ps task.
    """

    def __init__(self):
        self.pids = []
        self.seen = {}  # (pid, local, peer) -> (received, acked)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.done.wait(0.2):
            out = subprocess.run(["ss", "-tinpH", "state", "established"],
                                 capture_output=True, text=True).stdout
            # Each connection: a line naming it and its process, then a line
            # of tcp_info.
            lines = out.splitlines()
            for name, info in zip(lines[0::2], lines[1::2]):
                owner = re.search(r"pid=(\d+)", name)
                if not owner or int(owner.group(1)) not in self.pids:
                    continue
                fields = name.split()
                received = re.search(r"bytes_received:(\d+)", info)
                acked = re.search(r"bytes_acked:(\d+)", info)
                self.seen[(int(owner.group(1)), fields[2], fields[3])] = (
                    int(received.group(1)) if received else 0, int(acked.group(1)) if acked else 0)

    def stop(self):
        """(received, sent) per ps, in the order of self.pids."""
        self.done.set()
        self.thread.join()
        return [(sum(r for (p, _, _), (r, _) in self.seen.items() if p == pid),
                 sum(a for (p, _, _), (_, a) in self.seen.items() if p == pid))
                for pid in self.pids]


def cluster(build, model, examples, mode):
    base, *options = mode.split("+")
    # Examples per global step: a synchronous step applies both workers' batches.
    per_step = 2 * BATCH if base == "sync" else BATCH
    extra = {"async": ["--issync=0"], "sync": ["--issync=1"],
             "staleness2": ["--issync=0", "--staleness=2"]}[base]
    num_ps = 1
    compression = []  # topk:F and a 16-bit type join into one flag: topk:0.01+bf16.
    for option in options:
        if option == "ps2":
            num_ps = 2
        elif option.startswith("fixed"):
            extra.append(f"--partitioner=fixed:{int(option[len('fixed'):])}")
        elif option.startswith("topk"):
            fraction, _, warmup = option[len("topk"):].partition("w")
            compression.insert(0, f"topk:{float(fraction)}" + (f":{int(warmup)}" if warmup else ""))
        elif option in ("bf16", "fp16"):
            compression.append(option)
        else:
            extra.append({"ipc": "--transport=ipc", "tcp": "--transport=tcp",
                          "greedy": "--ps_strategy=greedy"}[option])
    if compression:
        extra.append("--gradient_compression=" + "+".join(compression))
    steps = examples // per_step
    *ps_ports, w0, w1 = free_ports(num_ps + 2)
    traffic = PsTraffic() if "tcp" in options else None
    with tempfile.TemporaryDirectory() as logdir:
        ps_hosts = ",".join(f"127.0.0.1:{p}" for p in ps_ports)
        flags = [f"--ps_hosts={ps_hosts}",
                 f"--worker_hosts=127.0.0.1:{w0},127.0.0.1:{w1}", *extra,
                 f"--model={model}", f"--batch_size={BATCH}",
                 f"--logdir={logdir}", f"--train_steps={steps}", f"--log_every={steps}",
                 f"--validate_every={steps * 10}"]
        binary = f"{build}/examples/distributed_mnist"
        ps_procs = [subprocess.Popen([binary, *flags, "--job_name=ps", f"--task_index={i}"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    for i in range(num_ps)]
        if traffic:
            traffic.pids = [p.pid for p in ps_procs]
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
            for ps_proc in ps_procs:
                ps_proc.terminate()
                ps_proc.wait()
    chief = [r for r in results if r["task"] == 0][0]
    if traffic:
        moved = traffic.stop()
        steps_done = chief["global_step"]
        ps_bytes = [(received + sent) / steps_done for received, sent in moved]
        print(f"  {mode}: bytes per global step through each ps (in + out): "
              + ", ".join(f"ps {i}: {b:,.0f} ({r / steps_done:,.0f} in, {s / steps_done:,.0f} out)"
                          for i, (b, (r, s)) in enumerate(zip(ps_bytes, moved)))
              + (f"; largest / smallest {max(ps_bytes) / min(ps_bytes):.3f}"
                 if len(ps_bytes) > 1 else ""), flush=True)
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
    if "torch" in modes and subprocess.run(["/usr/bin/python3", "-c", "import numpy, torch"],
                                           capture_output=True).returncode != 0:
        sys.exit("the torch mode needs Debian's PyTorch for /usr/bin/python3: "
                 "scripts/setup.sh torch installs it")
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
