#!/usr/bin/python3
"""PyTorch's RPC parameter server training the Fashion-MNIST MLP: the twin of distributed_mnist.

    /usr/bin/python3 benches/torch_rpc_ps.py [--workers 2] [--steps 2000] [--batch 64]
        [--optimizer adam|sgd] [--threads 1] [--data /usr/share/datasets/fashion-mnist]

One ps process and --workers worker processes on this machine (torch.distributed.rpc,
TensorPipe over loopback), as rill's 1 ps + N workers: the ps holds the 784-128-10 MLP's
parameters and its optimizer; each worker, every step, fetches the parameters, computes the
gradients of one batch and sends them, and the ps applies them as they come (asynchronous
training). The workers share --steps between them (a global step counter on the ps). Prints
one line "result: {json}" with the steps per second over the whole run and the test accuracy.
Needs Debian's python3-torch (with libopenblas0-pthread), hence /usr/bin/python3.
"""
import argparse
import gzip
import json
import os
import socket
import struct
import threading
import time

import numpy as np
import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


class ParameterServer:
    """The parameters and their optimizer; updates are applied one at a time, as they come."""

    def __init__(self, optimizer, steps):
        self.model = make_model()
        self.lock = threading.Lock()
        self.steps = steps
        self.global_step = 0
        self.first = self.last = None  # When the first and the last update were applied.
        params = self.model.parameters()
        self.optimizer = (torch.optim.Adam(params, lr=0.001) if optimizer == "adam"
                          else torch.optim.SGD(params, lr=0.1))

    def parameters(self):
        with self.lock:
            return [p.detach().clone() for p in self.model.parameters()]

    def apply(self, gradients):
        with self.lock:
            for p, g in zip(self.model.parameters(), gradients):
                p.grad = g
            self.optimizer.step()
            self.global_step += 1
            self.last = time.monotonic()
            if self.first is None:
                self.first = self.last
            return self.global_step


PS = None


def ps_parameters():
    return PS.parameters()


def ps_apply(gradients):
    return PS.apply(gradients)


def run_worker(rank, args, x, y):
    model = make_model()
    generator = torch.Generator().manual_seed(rank)
    loss_fn = torch.nn.CrossEntropyLoss()
    local_steps = 0
    while True:
        params = rpc.rpc_sync("ps", ps_parameters)
        with torch.no_grad():
            for p, v in zip(model.parameters(), params):
                p.copy_(v)
        index = torch.randint(0, x.shape[0], (args.batch,), generator=generator)
        model.zero_grad()
        loss_fn(model(x[index]), y[index]).backward()
        step = rpc.rpc_sync("ps", ps_apply, args=([p.grad for p in model.parameters()],))
        local_steps += 1
        if step >= args.steps:
            return local_steps


def process(rank, world, args, port):
    global PS
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    options = rpc.TensorPipeRpcBackendOptions(num_worker_threads=8, rpc_timeout=600)
    if rank == 0:
        PS = ParameterServer(args.optimizer, args.steps)
        rpc.init_rpc("ps", rank=0, world_size=world, rpc_backend_options=options)
        rpc.shutdown()  # Waits for the workers.
        # Between the first update and the last, as rill's train_seconds.
        seconds = PS.last - PS.first
        x_test, y_test = load(args.data, "test")
        with torch.no_grad():
            accuracy = (PS.model(x_test).argmax(1) == y_test).float().mean().item()
        print("result: " + json.dumps({"workers": world - 1, "global_step": PS.global_step,
                                       "seconds": round(seconds, 3),
                                       "steps_per_second": round((PS.global_step - 1) / seconds, 1),
                                       "test_accuracy": round(accuracy, 4)}), flush=True)
    else:
        x, y = load(args.data, "train")
        rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world, rpc_backend_options=options)
        run_worker(rank, args, x, y)
        rpc.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    world = args.workers + 1
    mp.spawn(process, args=(world, args, port), nprocs=world, join=True)


if __name__ == "__main__":
    main()
