#!/usr/bin/env python3
"""Framework workloads for the GPU acceptance of issue 14 (tests/gpu/frameworks/run.sh).

  workloads.py list                 the workload names
  workloads.py run NAME             runs one; prints one line
                                    RESULT name=NAME ok=1 value=V ms_per_step=T
                                    (ok=0 and a reason on failure; exit 0 either way)
  workloads.py compare NATIVE KD    table of the two RESULT files: values must agree
                                    (relative tolerance per workload), time through
                                    kerneletd against native; exit 1 when any differs

Every workload is deterministic (fixed seeds) so that the value computed through kerneletd
can be compared with the native one.
"""
import sys
import time
import traceback

STEPS = 20


def timed(fn, steps=STEPS, sync=None):
    fn()                                    # warm-up (compilation, autotuning, caches)
    if sync:
        sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        out = fn()
    if sync:
        sync()
    return out, (time.perf_counter() - t0) * 1e3 / steps


def torch_env():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def torch_tensor():
    torch = torch_env()
    x = torch.arange(1 << 20, device="cuda", dtype=torch.float32) / (1 << 20)
    out, ms = timed(lambda: ((x * 3 + 1).sin() * x).sum(), sync=torch.cuda.synchronize)
    return float(out), ms


def torch_randn():
    torch = torch_env()
    out, ms = timed(lambda: torch.randn(1 << 20, device="cuda").abs().sum(),
                    sync=torch.cuda.synchronize)
    return float(out), ms


def torch_matmul(dtype_name):
    torch = torch_env()
    dtype = getattr(torch, dtype_name)
    a = torch.randn(1024, 1024, device="cuda").to(dtype)
    b = torch.randn(1024, 1024, device="cuda").to(dtype)
    out, ms = timed(lambda: a @ b, sync=torch.cuda.synchronize)
    return float(out.float().abs().sum()), ms


def torch_conv():
    torch = torch_env()
    conv = torch.nn.Conv2d(16, 32, 3, padding=1).cuda()
    x = torch.randn(8, 16, 64, 64, device="cuda")
    with torch.no_grad():
        out, ms = timed(lambda: conv(x), sync=torch.cuda.synchronize)
    return float(out.abs().sum()), ms


def torch_mlp():
    torch = torch_env()
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x = torch.randn(512, 256, device="cuda")
    y = torch.randint(0, 10, (512,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    out, ms = timed(step, steps=50, sync=torch.cuda.synchronize)
    return float(out), ms


def torch_compile():
    torch = torch_env()
    f = torch.compile(lambda a, b: torch.nn.functional.gelu(a * b + 1.0).sum(dim=1))
    a = torch.randn(2048, 512, device="cuda")
    b = torch.randn(2048, 512, device="cuda")
    out, ms = timed(lambda: f(a, b), sync=torch.cuda.synchronize)
    return float(out.abs().sum()), ms


def torch_graph():
    torch = torch_env()
    a = torch.randn(1024, 1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            b = (a @ a).relu()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        b = (a @ a).relu()
    out, ms = timed(lambda: g.replay(), sync=torch.cuda.synchronize)
    return float(b.abs().sum()), ms


def torch_fft():
    """cuFFT (its fatbin, plans and kernels) through torch.fft."""
    torch = torch_env()
    t = torch.arange(1 << 16, device="cuda", dtype=torch.float32) / (1 << 16)
    x = (t * 440.0 * 6.283185307).sin() + 0.5 * (t * 1000.0 * 6.283185307).cos()
    out, ms = timed(lambda: torch.fft.rfft(x).abs(), sync=torch.cuda.synchronize)
    return float(out.sum()), ms


def torch_nccl():
    """NCCL's single-GPU path: a process group of one rank, all_reduce and broadcast."""
    import os
    import tempfile
    import torch.distributed as dist
    torch = torch_env()
    store = os.path.join(tempfile.mkdtemp(prefix="kernelet-nccl-"), "store")
    dist.init_process_group("nccl", init_method=f"file://{store}", rank=0, world_size=1)
    try:
        x = torch.arange(1 << 16, device="cuda", dtype=torch.float32)

        def step():
            y = x.clone()
            dist.all_reduce(y)
            dist.broadcast(y, src=0)
            return y
        out, ms = timed(step, sync=torch.cuda.synchronize)
        return float(out.sum()), ms
    finally:
        dist.destroy_process_group()
        if os.path.exists(store):      # the store may remove its file itself
            os.unlink(store)
        os.rmdir(os.path.dirname(store))


def cupy_elementwise():
    import cupy as cp
    x = cp.arange(1 << 20, dtype=cp.float32) / (1 << 20)
    out, ms = timed(lambda: cp.sin(x * 3 + 1) * x, sync=cp.cuda.Device().synchronize)
    return float(out.sum()), ms


def cupy_reduce():
    import cupy as cp
    x = cp.arange(1 << 22, dtype=cp.float64) / (1 << 22)
    out, ms = timed(lambda: (x * x).sum(), sync=cp.cuda.Device().synchronize)
    return float(out), ms


def cupy_rawkernel():
    import cupy as cp
    k = cp.RawKernel(r'''
extern "C" __global__ void axpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}''', "axpy")
    n = 1 << 20
    x = cp.arange(n, dtype=cp.float32) / n
    y = cp.ones(n, dtype=cp.float32)

    def step():
        k(((n + 255) // 256,), (256,), (x, y, cp.float32(0.5), cp.int32(n)))
        return y
    out, ms = timed(step, sync=cp.cuda.Device().synchronize)
    return float(out.sum()), ms


def jax_matmul():
    import jax
    import jax.numpy as jnp
    if jax.devices()[0].platform != "gpu":
        raise RuntimeError(f"jax runs on {jax.devices()[0].platform}")
    a = jax.random.normal(jax.random.PRNGKey(0), (1024, 1024))
    f = jax.jit(lambda a: (a @ a).sum())
    out, ms = timed(lambda: f(a).block_until_ready())
    return float(out), ms


def jax_grad():
    import jax
    import jax.numpy as jnp
    if jax.devices()[0].platform != "gpu":
        raise RuntimeError(f"jax runs on {jax.devices()[0].platform}")
    w = jax.random.normal(jax.random.PRNGKey(1), (256, 10))
    x = jax.random.normal(jax.random.PRNGKey(2), (512, 256))
    g = jax.jit(jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2)))
    out, ms = timed(lambda: g(w).block_until_ready())
    return float(jnp.abs(out).sum()), ms


WORKLOADS = {
    "torch_tensor": (torch_tensor, 1e-5),
    "torch_randn": (torch_randn, 1e-4),
    "torch_matmul_fp32": (lambda: torch_matmul("float32"), 1e-4),
    "torch_matmul_bf16": (lambda: torch_matmul("bfloat16"), 1e-2),
    "torch_conv": (torch_conv, 1e-3),
    "torch_mlp": (torch_mlp, 1e-4),
    "torch_compile": (torch_compile, 1e-4),
    "torch_graph": (torch_graph, 1e-4),
    "torch_fft": (torch_fft, 1e-4),
    "torch_nccl": (torch_nccl, 1e-6),
    "cupy_elementwise": (cupy_elementwise, 1e-5),
    "cupy_reduce": (cupy_reduce, 1e-9),
    "cupy_rawkernel": (cupy_rawkernel, 1e-6),
    "jax_matmul": (jax_matmul, 1e-3),
    "jax_grad": (jax_grad, 1e-4),
}


def run(name):
    try:
        value, ms = WORKLOADS[name][0]()
        print(f"RESULT name={name} ok=1 value={value!r} ms_per_step={ms:.4f}", flush=True)
    except Exception as e:  # the reason goes into the table; the run goes on
        traceback.print_exc(file=sys.stderr)    # the whole story, for diagnose.sh
        reason = " ".join(f"{type(e).__name__}: {e}".split())[:300]
        print(f"RESULT name={name} ok=0 reason={reason}", flush=True)


def parse(path):
    rows = {}
    for line in open(path, errors="replace"):
        if not line.startswith("RESULT "):
            continue
        head, _, reason = line.partition(" reason=")
        kv = dict(p.split("=", 1) for p in head.split()[1:] if "=" in p)
        kv["reason"] = reason.strip()
        rows[kv["name"]] = kv
    return rows


def compare(native_path, kd_path):
    native, kd = parse(native_path), parse(kd_path)
    bad = 0
    print("| workload | native ms/step | kerneletd ms/step | ratio | result |")
    print("|---|---|---|---|---|")
    for name, (_, tol) in WORKLOADS.items():
        n, k = native.get(name), kd.get(name)
        if not n or n.get("ok") != "1":
            print(f"| {name} | - | - | - | not run natively: {n['reason'] if n else 'no result'} |")
            continue
        if not k or k.get("ok") != "1":
            bad += 1
            print(f"| {name} | {float(n['ms_per_step']):.3f} | - | - | FAILED: "
                  f"{k['reason'] if k else 'no result (crash or timeout)'} |")
            continue
        vn, vk = float(n["value"]), float(k["value"])
        same = abs(vn - vk) <= tol * max(1.0, abs(vn))
        bad += not same
        tn, tk = float(n["ms_per_step"]), float(k["ms_per_step"])
        print(f"| {name} | {tn:.3f} | {tk:.3f} | {tk / tn:.2f} | "
              f"{'same result' if same else f'DIFFERS: {vn!r} vs {vk!r}'} |")
    return 1 if bad else 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "list":
        print(" ".join(WORKLOADS))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "run" and sys.argv[2] in WORKLOADS:
        run(sys.argv[2])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
