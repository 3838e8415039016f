#!/usr/bin/env python3
"""gpu_check.sh's helpers: its JSON results read (gpu_bench's, Google Benchmark's format, and the
PyTorch twin's), and free ports.

  gpu_check_util.py bench-summary GPU_BENCH_JSON   "ok|errors|nogpu<TAB>key" of the gpu_bench step
  gpu_check_util.py torch-key TORCH_JSON GPU_BENCH_JSON   the torch step's key figure
  gpu_check_util.py compare GPU_BENCH_JSON TORCH_JSON   rill beside PyTorch, a Markdown table;
                                                        exits 1 when either side has nothing
  gpu_check_util.py free-ports N   N free TCP ports of 127.0.0.1, on one line
"""
import json
import socket
import sys


def bench_summary(gpu_bench_json):
    try:
        runs = json.load(open(gpu_bench_json))["benchmarks"]
    except Exception as e:
        print(f"errors\tno JSON: {e}"); return
    med = {b["run_name"]: b for b in runs if b.get("aggregate_name") == "median"}
    errs = [b for b in runs if b.get("error_occurred")]
    nogpu = bool(errs) and all("no GPU" in b.get("error_message", "") for b in errs)
    def us(name):
        b = med.get(name + "/real_time")
        return f"{b['real_time']:.0f}" if b else "?"
    def tf(name):
        b = med.get(name + "/real_time")
        return f"{b['TFLOPS']:.1f}" if b and "TFLOPS" in b else "?"
    if nogpu:
        print(f"nogpu\t{len(errs)} of {len(runs)} skipped: {errs[0]['error_message'][:70]}")
        return
    key = (f"us: mlp64 gpu {us('BM_MlpStepGpu/batch:64')} cpu {us('BM_MlpStepCpu/batch:64')}, "
           f"mlp1024 gpu {us('BM_MlpStepGpu/batch:1024')}, cnn64 gpu {us('BM_CnnStepGpu/batch:64')}; "
           f"gemm4096 {tf('BM_SessionMatMul/m:4096/k:4096/n:4096')}/"
           f"{tf('BM_CublasSgemm/m:4096/k:4096/n:4096')} TFLOPS (cuBLAS)")
    if errs:
        key = f"{len(errs)} of {len(runs)} failed ({errs[0]['name']}); " + key
    print(("errors" if errs else "ok") + "\t" + key)


def torch_key(torch_json, gpu_bench_json):
    t = json.load(open(torch_json))
    if "skipped" in t:
        print("skipped: " + t["skipped"][:90]); return
    rill = {}
    try:
        for b in json.load(open(gpu_bench_json))["benchmarks"]:
            if b.get("aggregate_name") == "median" and not b.get("error_occurred"):
                rill[b["run_name"]] = b
    except Exception:
        pass
    def r(name):
        b = rill.get(name + "/real_time")
        return f" (rill {b['real_time']:.0f})" if b else ""
    d = t["device"]
    parts = [f"us: mlp64 {t.get(f'mlp_step_{d}_b64_us', float('nan')):.0f}"
             + r("BM_MlpStepGpu/batch:64" if d == "cuda" else "BM_MlpStepCpu/batch:64"),
             f"cnn64 {t.get(f'cnn_step_{d}_b64_us', float('nan')):.0f}"
             + (r("BM_CnnStepGpu/batch:64") if d == "cuda" else "")]
    if "mlp_test_accuracy" in t:
        parts.append(f"acc mlp {t['mlp_test_accuracy']:.4f} cnn {t.get('cnn_test_accuracy', float('nan')):.4f}")
    if "errors" in t:
        parts.insert(0, f"{len(t['errors'])} errors ({next(iter(t['errors']))})")
    print(", ".join(parts))


def compare(gpu_bench_json, torch_json):
    rill = {b["run_name"].replace("/real_time", ""): b for b in json.load(open(gpu_bench_json))["benchmarks"]
            if b.get("aggregate_name") == "median" and not b.get("error_occurred")}
    t = json.load(open(torch_json))
    if "skipped" in t or not rill:
        sys.exit(1)
    d = t["device"]
    rows = [("GEMM 4096^3", "BM_SessionMatMul/m:4096/k:4096/n:4096", "BM_CublasSgemm/m:4096/k:4096/n:4096", "matmul_4096x4096x4096_us"),
            ("GEMM 1024x784x128", "BM_SessionMatMul/m:1024/k:784/n:128", "BM_CublasSgemm/m:1024/k:784/n:128", "matmul_1024x784x128_us"),
            ("GEMM 1024x128x10", "BM_SessionMatMul/m:1024/k:128/n:10", "BM_CublasSgemm/m:1024/k:128/n:10", "matmul_1024x128x10_us"),
            ("GEMM 64x784x128", "BM_SessionMatMul/m:64/k:784/n:128", "BM_CublasSgemm/m:64/k:784/n:128", "matmul_64x784x128_us"),
            ("GEMM 16^3 (a step's fixed cost)", "BM_SessionMatMul/m:16/k:16/n:16", "BM_CublasSgemm/m:16/k:16/n:16", None),
            ("Conv2D 32x56x56x64 3x3", "BM_SessionConv2D", "BM_CudnnConvolutionForwardFastest", "conv_32x56x56x64_3x3_us"),
            ("Conv2D backprop input", "BM_SessionConv2DBackpropInput", "BM_CudnnConvolutionBackwardDataFastest", "conv_32x56x56x64_3x3_backprop_input_us"),
            ("Conv2D backprop filter", "BM_SessionConv2DBackpropFilter", "BM_CudnnConvolutionBackwardFilterFastest", "conv_32x56x56x64_3x3_backprop_filter_us"),
            ("MLP step b64, GPU", "BM_MlpStepGpu/batch:64", None, "mlp_step_cuda_b64_us"),
            ("MLP step b1024, GPU", "BM_MlpStepGpu/batch:1024", None, "mlp_step_cuda_b1024_us"),
            ("MLP step b64, CPU", "BM_MlpStepCpu/batch:64", None, "mlp_step_cpu_b64_us"),
            ("MLP step b1024, CPU", "BM_MlpStepCpu/batch:1024", None, "mlp_step_cpu_b1024_us"),
            ("CNN step b64, GPU", "BM_CnnStepGpu/batch:64", None, "cnn_step_cuda_b64_us")]
    print(f"rill beside PyTorch {t['torch']} (torch on {d}; medians, microseconds; ratio = rill / PyTorch)\n")
    print("| work | rill | cuBLAS/cuDNN | PyTorch | rill / PyTorch |")
    print("|---|---|---|---|---|")
    fmt = lambda v: f"{v:.1f}" if v is not None else "-"
    for label, ours, raw, key in rows:
        a = rill.get(ours, {}).get("real_time")
        b = rill.get(raw, {}).get("real_time") if raw else None
        c = t.get(key) if key else None
        if a is None and c is None:
            continue
        ratio = f"{a / c:.2f}" if a and c else "-"
        print(f"| {label} | {fmt(a)} | {fmt(b)} | {fmt(c)} | {ratio} |")


def free_ports(count):
    sockets = [socket.socket() for _ in range(int(count))]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    print(" ".join(str(s.getsockname()[1]) for s in sockets))


COMMANDS = {"bench-summary": (bench_summary, 1), "torch-key": (torch_key, 2), "compare": (compare, 2),
            "free-ports": (free_ports, 1)}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS or len(sys.argv) != COMMANDS[sys.argv[1]][1] + 2:
        sys.exit(__doc__)
    command, _ = COMMANDS[sys.argv[1]]
    command(*sys.argv[2:])
