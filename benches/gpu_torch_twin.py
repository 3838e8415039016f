#!/usr/bin/env python3
"""PyTorch twin of gpu_bench (benches/gpu_bench.cc): the same work in PyTorch, for comparison in the
same run on the same machine. Prints one JSON object on stdout (progress goes to stderr).

  benches/gpu_torch_twin.py [--device cuda|cpu] [--data DIR] [--train-steps N] [--quick]
                            [--repetitions R] [--min-time S] [--host-memory plain|pinned]
                            [--adam default|foreach|fused|single] [--nchw] [--no-cpu-steps]
                            [--out FILE]

What it times (medians of R repetitions, each of as many iterations as fill --min-time seconds,
after a warm-up; every iteration ends with a host sync, as gpu_bench's do):
- GEMM [m, k] x [k, n] for 4096^3 and the MLP's layers (1024x784x128, 1024x128x10, 64x784x128):
  torch.mm on device tensors, then one element copied to the host (gpu_bench: BM_CublasSgemm and
  BM_SessionMatMul);
- Conv2D NHWC [32, 56, 56, 64] by 3x3x64x64, stride 1, SAME (channels_last tensors), forward and
  both backprops (aten.convolution_backward with one output each), then one element to the host
  (gpu_bench: BM_CudnnConvolutionForward, BM_SessionConv2D);
- one Adam step (lr 0.001, betas 0.9/0.999, eps 1e-8) of the Fashion-MNIST MLP 784-128(relu)-10 at
  batch 64 and 1024 and of the CNN (conv 5x5x32 relu + 2x2 max pool, conv 5x5x64 relu + 2x2 max
  pool, dense 1024 relu, dense 10) at batch 64: a random host batch (plain or pinned memory)
  copied to the device each step, softmax cross-entropy with integer labels (int64, which
  PyTorch requires; rill's are int32), loss.item() as the step's one host sync (gpu_bench:
  BM_MlpStepGpu, BM_MlpStepCpu, BM_CnnStepGpu). `*_epoch_*_s` is the time of 60,000 images.
  With --device cuda the MLP steps are also timed on the CPU (as BM_MlpStepCpu), unless
  --no-cpu-steps.
- with --data DIR (Fashion-MNIST IDX files, .gz or raw, as examples/fashion_mnist_mlp reads), each
  model trained for --train-steps steps (default one epoch) of shuffled batches of 64 fed from the
  host, then its accuracy on the 10,000 test images: a check that the twin learns as rill does.

Models as examples/fashion_mlp_model.cc builds them: Glorot-uniform weights (for a 5x5 conv, fan in
25 * in channels and fan out 25 * out channels), zero biases. Differences that do not change the
work: PyTorch's random numbers (so the initial weights differ), and its Adam puts epsilon after
the bias correction where TensorFlow's (and rill's) puts it before (a smaller effective epsilon
early on). TF32 is off for matmuls and cuDNN (as rill's kernels ask for full float32).

The keys match /work/shared/gpu-runs/2026-11-27/torch.json where they exist; "device" says where
the matmul_* and conv_* figures were taken. Exit 0 with {"skipped": REASON} when torch cannot be
imported or --device cuda has no CUDA device; exit 1 (the JSON still printed, with "errors") when a
benchmark failed. --quick: tiny repetition counts and smaller problems, for a smoke test on a CPU.
"""

import argparse
import gzip
import json
import os
import statistics
import struct
import sys
import time

EPOCH_IMAGES = 60000


def log(message):
    print(f"gpu_torch_twin: {message}", file=sys.stderr, flush=True)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="where the GEMM, conv and model steps run (default cuda)")
    p.add_argument("--data", default=None,
                   help="Fashion-MNIST directory: also train each model and report test accuracy")
    p.add_argument("--train-steps", type=int, default=0,
                   help="steps of the accuracy runs (default: one epoch, 938 steps; with "
                        "--quick 200 for the MLP and 30 for the CNN)")
    p.add_argument("--repetitions", type=int, default=None, help="timed repetitions (default 5)")
    p.add_argument("--min-time", type=float, default=None,
                   help="seconds per repetition (default 0.2)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up iterations (default 10)")
    p.add_argument("--host-memory", choices=["plain", "pinned"], default="plain",
                   help="host batches in pageable (default) or pinned memory")
    p.add_argument("--adam", choices=["default", "foreach", "fused", "single"], default="default",
                   help="torch.optim.Adam's implementation (default: PyTorch's choice)")
    p.add_argument("--nchw", action="store_true",
                   help="the CNN in NCHW instead of channels_last (NHWC, as rill)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="let cuDNN time its algorithms (default: its heuristics, as gpu_bench)")
    p.add_argument("--no-cpu-steps", action="store_true",
                   help="with --device cuda, skip the MLP steps on the CPU")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: 2 repetitions of ~0.02 s, GEMM 1024^3, conv batch 4, "
                        "short accuracy runs")
    p.add_argument("--out", default=None, help="also write the JSON to this file")
    args = p.parse_args()
    if args.repetitions is None:
        args.repetitions = 2 if args.quick else 5
    if args.min_time is None:
        args.min_time = 0.02 if args.quick else 0.2
    if args.warmup is None:
        args.warmup = 2 if args.quick else 10
    if args.train_steps > 0:
        args.steps_of = {"mlp": args.train_steps, "cnn": args.train_steps}
    elif args.quick:
        args.steps_of = {"mlp": 200, "cnn": 30}
    else:
        epoch = (EPOCH_IMAGES + 63) // 64
        args.steps_of = {"mlp": epoch, "cnn": epoch}
    return args


def emit(result, args):
    text = json.dumps(result, indent=1)
    print(text, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


def timed(fn, args, cap_iters=100000):
    """Median seconds per call of fn (which ends with a host sync) and the spread."""
    for _ in range(args.warmup):
        fn()
    start = time.perf_counter()
    fn()
    one = max(time.perf_counter() - start, 1e-7)
    iters = max(1, min(cap_iters, int(args.min_time / one)))
    per_call = []
    for _ in range(args.repetitions):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        per_call.append((time.perf_counter() - start) / iters)
    return statistics.median(per_call), {
        "repetitions": args.repetitions, "iterations": iters,
        "min_us": min(per_call) * 1e6, "max_us": max(per_call) * 1e6}


def main():
    args = parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # ImportError, or a broken install's OSError
        emit({"skipped": f"torch not importable: {type(e).__name__}: {e}"}, args)
        return 0

    if args.device == "cuda" and not torch.cuda.is_available():
        emit({"skipped": f"no CUDA device for torch {torch.__version__} "
                         f"(built for CUDA {torch.version.cuda}); --device cpu runs on the CPU",
              "torch": torch.__version__}, args)
        return 0

    # Full float32, as rill's cuBLAS and cuDNN calls ask for.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    torch.manual_seed(0)

    dev = torch.device(args.device)
    result = {"torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
              "device": args.device,
              "cuda": torch.version.cuda,
              "cudnn": torch.backends.cudnn.version() if args.device == "cuda" else None,
              "tf32": False,
              "cudnn_benchmark": args.cudnn_benchmark,
              "torch_threads": torch.get_num_threads(),
              "host_memory": args.host_memory,
              "adam": args.adam,
              "cnn_layout": "nchw" if args.nchw else "channels_last",
              "quick": args.quick}
    detail = {}
    errors = {}

    def run(name, fn):
        log(name)
        try:
            fn()
        except Exception as e:  # keep going: one failing benchmark should not hide the rest
            errors[name] = f"{type(e).__name__}: {e}"
            log(f"{name} failed: {errors[name]}")
            if args.device == "cuda":
                torch.cuda.empty_cache()

    # ---- GEMM ----------------------------------------------------------------------------------
    big = 1024 if args.quick else 4096
    for m, k, n in ((big, big, big), (1024, 784, 128), (1024, 128, 10), (64, 784, 128)):
        def gemm(m=m, k=k, n=n):
            a = torch.rand(m, k, device=dev)
            b = torch.rand(k, n, device=dev)
            seconds, d = timed(lambda: torch.mm(a, b)[0, 0].item(), args)
            key = f"matmul_{m}x{k}x{n}"
            result[f"{key}_us"] = seconds * 1e6
            result[f"{key}_tflops"] = 2.0 * m * k * n / seconds / 1e12
            detail[key] = d
        run(f"matmul {m}x{k}x{n}", gemm)

    # ---- Conv2D, NHWC (channels_last), 3x3 SAME --------------------------------------------------
    batch = 4 if args.quick else 32
    side, depth, window = 56, 64, 3
    conv_flops = 2.0 * batch * side * side * depth * depth * window * window
    shape = f"{batch}x{side}x{side}x{depth}_{window}x{window}"

    def conv():
        x = torch.rand(batch, depth, side, side, device=dev).to(memory_format=torch.channels_last)
        w = torch.rand(depth, depth, window, window, device=dev).to(
            memory_format=torch.channels_last)
        pad = window // 2
        seconds, d = timed(lambda: F.conv2d(x, w, padding=pad)[0, 0, 0, 0].item(), args)
        result[f"conv_{shape}_us"] = seconds * 1e6
        result["conv_tflops"] = conv_flops / seconds / 1e12
        detail["conv"] = d
        dy = torch.rand_like(F.conv2d(x, w, padding=pad)).contiguous(
            memory_format=torch.channels_last)
        backward = getattr(torch.ops.aten, "convolution_backward", None)
        for which, mask in (("backprop_input", [True, False, False]),
                            ("backprop_filter", [False, True, False])):
            index = 0 if mask[0] else 1
            if backward is not None:
                def step(mask=mask, index=index):
                    out = backward(dy, x, w, None, [1, 1], [pad, pad], [1, 1], False, [0, 0], 1,
                                   mask)[index]
                    return out.reshape(-1)[0].item()
            elif mask[0]:
                def step():
                    return torch.nn.grad.conv2d_input(x.shape, w, dy, padding=pad).reshape(
                        -1)[0].item()
            else:
                def step():
                    return torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=pad).reshape(
                        -1)[0].item()
            seconds, d = timed(step, args)
            result[f"conv_{shape}_{which}_us"] = seconds * 1e6
            result[f"conv_{which}_tflops"] = conv_flops / seconds / 1e12
            detail[f"conv_{which}"] = d
    run("conv2d", conv)

    # ---- The Fashion-MNIST models --------------------------------------------------------------
    class Cnn(torch.nn.Module):
        def __init__(self, channels_last):
            super().__init__()
            self.channels_last = channels_last
            self.conv1 = torch.nn.Conv2d(1, 32, 5, padding=2)
            self.conv2 = torch.nn.Conv2d(32, 64, 5, padding=2)
            self.hidden = torch.nn.Linear(7 * 7 * 64, 1024)
            self.logits = torch.nn.Linear(1024, 10)

        def forward(self, x):
            x = x.view(-1, 1, 28, 28)
            if self.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            # Flattened in NHWC order, as rill's Reshape of its NHWC tensor.
            x = x.permute(0, 2, 3, 1).reshape(x.shape[0], -1)
            return self.logits(F.relu(self.hidden(x)))

    def make_model(kind, device):
        if kind == "mlp":
            model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                        torch.nn.Linear(128, 10))
        else:
            model = Cnn(channels_last=not args.nchw)
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
                torch.nn.init.xavier_uniform_(module.weight)
                torch.nn.init.zeros_(module.bias)
        model = model.to(device)
        if kind == "cnn" and not args.nchw:
            model = model.to(memory_format=torch.channels_last)
        options = {}
        if args.adam == "foreach":
            options["foreach"] = True
        elif args.adam == "single":
            options["foreach"] = False
        elif args.adam == "fused":
            options["fused"] = True
        optimizer = torch.optim.Adam(model.parameters(), lr=0.001, betas=(0.9, 0.999), eps=1e-8,
                                     **options)
        return model, optimizer

    def make_step(model, optimizer, device):
        non_blocking = args.host_memory == "pinned" and device.type == "cuda"

        def step(hx, hy):
            x = hx.to(device, non_blocking=non_blocking)
            y = hy.to(device, non_blocking=non_blocking)
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss.item()
        return step

    def host_batches(batch, count=8):
        pin = args.host_memory == "pinned" and args.device == "cuda"
        out = []
        for _ in range(count):
            x, y = torch.rand(batch, 784), torch.randint(0, 10, (batch,), dtype=torch.int64)
            out.append((x.pin_memory(), y.pin_memory()) if pin else (x, y))
        return out

    def model_step(kind, batch, device):
        name = f"{kind}_step_{device.type}_b{batch}"

        def bench():
            model, optimizer = make_model(kind, device)
            step = make_step(model, optimizer, device)
            batches = host_batches(batch)
            counter = [0]

            def one():
                hx, hy = batches[counter[0] % len(batches)]
                counter[0] += 1
                return step(hx, hy)
            seconds, d = timed(one, args)
            result[f"{name}_us"] = seconds * 1e6
            result[f"{kind}_epoch_{device.type}_b{batch}_s"] = seconds * EPOCH_IMAGES / batch
            detail[name] = d
        run(name, bench)

    model_step("mlp", 64, dev)
    model_step("mlp", 1024, dev)
    if args.device == "cuda" and not args.no_cpu_steps:
        model_step("mlp", 64, torch.device("cpu"))
        model_step("mlp", 1024, torch.device("cpu"))
    model_step("cnn", 64, dev)

    # ---- Training to accuracy on Fashion-MNIST -------------------------------------------------
    if args.data:
        def read_idx(stem):
            for path in (os.path.join(args.data, stem + ".gz"), os.path.join(args.data, stem)):
                if os.path.exists(path):
                    opener = gzip.open if path.endswith(".gz") else open
                    with opener(path, "rb") as f:
                        raw = f.read()
                    break
            else:
                raise FileNotFoundError(f"{args.data}/{stem}[.gz]")
            if raw[0:2] != b"\0\0" or raw[2] != 0x08:
                raise ValueError(f"{stem}: not an IDX file of uint8")
            rank = raw[3]
            dims = struct.unpack(">" + "I" * rank, raw[4:4 + 4 * rank])
            data = torch.frombuffer(bytearray(raw[4 + 4 * rank:]), dtype=torch.uint8)
            return data.reshape(dims)

        loaded = {}

        def load(split):
            if split in loaded:
                return loaded[split]
            images = read_idx(f"{split}-images-idx3-ubyte")
            labels = read_idx(f"{split}-labels-idx1-ubyte")
            loaded[split] = (images.reshape(images.shape[0], -1).float() / 255.0,
                             labels.to(torch.int64))
            return loaded[split]

        def train(kind):
            train_x, train_y = load("train")
            test_x, test_y = load("t10k")
            torch.manual_seed(42)
            model, optimizer = make_model(kind, dev)
            step = make_step(model, optimizer, dev)
            generator = torch.Generator().manual_seed(42)
            order = torch.randperm(train_x.shape[0], generator=generator)
            position = 0
            losses = []
            start = time.perf_counter()
            steps = args.steps_of[kind]
            for _ in range(steps):
                if position >= order.numel():
                    order = torch.randperm(train_x.shape[0], generator=generator)
                    position = 0
                idx = order[position:position + 64]
                position += 64
                losses.append(step(train_x[idx], train_y[idx]))
            seconds = time.perf_counter() - start
            correct = 0
            with torch.no_grad():
                for i in range(0, test_x.shape[0], 1000):
                    logits = model(test_x[i:i + 1000].to(dev))
                    correct += int((logits.argmax(1).cpu() == test_y[i:i + 1000]).sum())
            result[f"{kind}_test_accuracy"] = correct / test_x.shape[0]
            result[f"{kind}_train_steps"] = steps
            result[f"{kind}_train_seconds"] = seconds
            result[f"{kind}_train_examples_per_s"] = steps * 64 / seconds
            result[f"{kind}_final_loss"] = statistics.mean(losses[-50:])

        run("train mlp", lambda: train("mlp"))
        run("train cnn", lambda: train("cnn"))

    result["detail"] = detail
    if errors:
        result["errors"] = errors
    emit(result, args)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
