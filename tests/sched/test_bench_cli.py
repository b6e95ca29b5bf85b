#!/usr/bin/env python3
"""kernelet-bench end to end on the sim: a small run of every workload and policy writes
its tables, CSV files and (when gnuplot is present) plots; bad options are refused.
With the bench PTX folder it also runs on the emulator (real data, outputs checked).
Usage: test_bench_cli.py KERNELET_BENCH SCRATCH_DIR [BENCH_PTX_DIR]. Prints TAP."""
import csv
import os
import shutil
import subprocess
import sys

bench, scratch = sys.argv[1], sys.argv[2]
results = []


def check(name, ok, why=""):
    results.append((name, ok, why))


def run(*args):
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=300)


out = os.path.join(scratch, "bench-cli")
shutil.rmtree(out, ignore_errors=True)
p = run("--instances", "20", "--mc-runs", "2", "--out", out, "--quiet")
check("small run exits 0", p.returncode == 0, p.stderr[-2000:])
for wl in ("CI", "MI", "MIX", "ALL"):
    check(f"table for {wl}", f"== {wl} (" in p.stdout)
rows = []
summary = os.path.join(out, "summary.csv")
if os.path.exists(summary):
    with open(summary) as f:
        rows = list(csv.DictReader(f))
check("summary.csv has 4 workloads x (4 policies + 2 mc runs)", len(rows) == 24, str(len(rows)))
check("every run completed every kernel with every block once",
      all(r["failed"] == "0" and r["block_errors"] == "0" for r in rows))
check("kernel counts", all(int(r["kernels"]) == 20 * (8 if r["workload"] == "ALL" else 4)
                           for r in rows))
base = {r["workload"]: float(r["total_ms"]) for r in rows if r["policy"] == "base"}
check("improvement over base is base / total - 1",
      all(abs(float(r["impr_base_pct"]) - (base[r["workload"]] / float(r["total_ms"]) - 1) * 100)
          < 1e-3 for r in rows if r["policy"] != "mc"))
sd_path = os.path.join(out, "slowdown.csv")
check("slowdown.csv written", os.path.exists(sd_path))
sd = list(csv.DictReader(open(sd_path))) if os.path.exists(sd_path) else []
check("the worst instance's slowdown is at least the mean, and at least 1",
      sd and all(float(r["slowdown_max"]) >= float(r["slowdown"]) >= 1 for r in sd))
if shutil.which("gnuplot"):
    for png in ("total_time.png", "slowdown.png"):
        path = os.path.join(out, png)
        ok = os.path.exists(path) and open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        check(f"{png} is a PNG", ok)

p = run("--instances", "5", "--policy", "kernelet,base", "--workload", "MIX", "--no-plots",
        "--quiet", "--out", out)
lines = p.stdout.splitlines()
check("policy and workload subsets", p.returncode == 0 and "== CI" not in p.stdout
      and any(x.startswith("kernelet ") for x in lines)
      and not any(x.startswith("fifo ") for x in lines), p.stderr[-500:])
p = run("--instances", "5", "--policy", "base", "--workload", "ALL", "--no-plots", "--quiet",
        "--out", out)
check("ALL is the mix of all eight kernels, not every mix", p.returncode == 0
      and "== ALL" in p.stdout and "== CI" not in p.stdout, p.stdout[-500:])
p = run("--instances", "5", "--workload", "MIX", "--policy", "base", "--no-plots", "--out", out)
check("progress lines on a non-terminal stderr", "progress 100%" in p.stderr, p.stderr[-500:])
p = run("--instances", "5", "--workload", "MI", "--policy", "kernelet", "--aging", "0",
        "--no-plots", "--quiet", "--out", out)
check("--aging 0 (no bound) runs", p.returncode == 0 and "slowdown of the worst" in p.stdout,
      p.stderr[-500:])
for bad in (["--policy", "lottery"], ["--instances", "0"], ["--load", "-1"], ["--frobnicate"],
            ["--aging", "-1"], ["--aging", "x"],
            ["--workload", "CI,XX"], ["--gpu", "K80"], ["--seed"]):
    p = run(*bad)
    check(f"refuses {' '.join(bad)}", p.returncode == 2 and "usage" in p.stderr)
p = run("--backend", "nosuch", "--instances", "5", "--no-plots", "--out", out)
check("unknown backend fails with a message",
      p.returncode == 1 and "not built into kernelet-bench" in p.stderr, p.stderr[-500:])
# cuda on a machine without NVIDIA's driver or GPU: a clear message, no crash (on a GPU
# machine it runs: tests/gpu)
if not os.path.exists("/dev/nvidiactl"):
    p = run("--backend", "cuda", "--instances", "1", "--no-plots", "--out", out)
    check("cuda without a GPU fails with a message",
          p.returncode == 1 and ("cuda:" in p.stderr or "not built into" in p.stderr),
          p.stderr[-500:])
# emu computes: every kernel's output is checked against the CPU's (test_bench_cli.py
# gets the bench PTX folder as its third argument where the emulator is built).
ptx_dir = sys.argv[3] if len(sys.argv) > 3 else None
if ptx_dir:
    emu = ["--backend", "emu", "--small", "--instances", "2", "--workload", "MIX", "--policy",
           "base,kernelet", "--no-plots", "--quiet", "--ptx-dir"]
    p = run(*emu, ptx_dir, "--out", out)
    check("emu: real data, every output equal to the CPU's",
          p.returncode == 0 and "8 kernels' outputs checked in 2 runs, 0 differ" in p.stdout,
          p.stdout[-300:] + p.stderr[-500:])
    # the same with tea's PTX changed (one xor made an or): its outputs must differ
    wrong = os.path.join(scratch, "bench-cli-wrong-ptx")
    shutil.rmtree(wrong, ignore_errors=True)
    os.makedirs(wrong)
    for f in os.listdir(ptx_dir):
        if f.endswith(".ptx"):
            text = open(os.path.join(ptx_dir, f)).read()
            if f == "tea.ptx":
                text = text.replace("xor.b32", "or.b32", 1)
            open(os.path.join(wrong, f), "w").write(text)
    p = run(*emu, wrong, "--out", out)
    check("emu: a kernel computing something else is caught",
          p.returncode == 1 and "tea: output differs from the CPU's" in p.stderr,
          p.stderr[-500:])
    p = run(*emu, "/nonexistent", "--out", out)
    check("emu: a missing PTX folder fails with a message",
          p.returncode == 1 and "cannot read /nonexistent/" in p.stderr, p.stderr[-300:])
p = run("--profiles", "/nonexistent.profiles")
check("missing profile file", p.returncode == 2 and "nonexistent" in p.stderr)

print(f"1..{len(results)}")
for i, (name, ok, why) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} {name}")
    if not ok and why:
        for line in why.splitlines()[-10:]:
            print(f"# {line}")
sys.exit(0 if all(ok for _, ok, _ in results) else 1)
