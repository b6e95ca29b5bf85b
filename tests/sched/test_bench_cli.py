#!/usr/bin/env python3
"""kernelet-bench end to end on the sim: a small run of every workload and policy writes
its tables, CSV files and (when gnuplot is present) plots; bad options are refused;
--rounds runs every policy several times, interleaved in rotated order, and reports the
medians of the CSV's runs. With the bench PTX folder it also runs on the emulator (real
data, outputs checked), once with rounds.
Usage: test_bench_cli.py KERNELET_BENCH SCRATCH_DIR [BENCH_PTX_DIR]. Prints TAP."""
import csv
import os
import shutil
import statistics
import subprocess
import sys

bench, scratch = sys.argv[1], sys.argv[2]
results = []


def check(name, ok, why=""):
    results.append((name, ok, why))


def run(*args):
    return subprocess.run([bench, *args], capture_output=True, text=True, timeout=300)


OLD_SUMMARY = ("workload,policy,seed,kernels,total_ms,kernels_per_s,impr_base_pct,impr_fifo_pct,"
               "dist_opt_pct,decisions,decision_mean_us,decision_max_us,coschedules,slices,"
               "widenings,failed,block_errors,aged,pairs_precomputed,precompute_us").split(",")


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def median_table(stdout, wl):
    """The rows of workload wl's medians table: policy -> its columns."""
    rows, lines = {}, stdout.splitlines()
    start = next((i for i, x in enumerate(lines) if x.startswith(f"== {wl} (")), None)
    if start is None or not lines[start + 1].split()[:3] == ["policy", "rounds", "median"]:
        return rows
    for line in lines[start + 2:]:
        if line.startswith("slowdown"):
            break
        cols = line.split()
        rows[cols[0]] = cols
    return rows


def check_rounds(tag, p, out, wl, policies, rounds, mc_runs=0):
    """A run of --rounds on workload wl: every policy rounds times (mc mc_runs times in
    each), the policies in their order rotated left by the round, and the report's medians
    the medians, over the rounds, of the CSV's totals (a round's: the mean over its runs)."""
    check(f"{tag}: exits 0", p.returncode == 0, p.stderr[-1000:])
    rows = read_csv(os.path.join(out, "summary.csv"))
    check(f"{tag}: summary.csv keeps the old columns first, round, order, started_ms and "
          "the tuning counts after them", rows and list(rows[0])[:len(OLD_SUMMARY)] == OLD_SUMMARY
          and list(rows[0])[len(OLD_SUMMARY):] == ["round", "order", "started_ms",
                                                   "pairs_tuned", "pairs_not_gaining"],
          str(list(rows[0]) if rows else "no rows"))
    per = {pol: rounds * (mc_runs if pol == "mc" else 1) for pol in policies}
    got = {pol: sum(r["policy"] == pol for r in rows) for pol in policies}
    check(f"{tag}: runs per policy {per}", got == per and len(rows) == sum(per.values()),
          str(got))
    rows.sort(key=lambda r: int(r["order"]))
    check(f"{tag}: order numbers the runs 0..n-1, started_ms grows with it",
          [int(r["order"]) for r in rows] == list(range(len(rows)))
          and all(float(a["started_ms"]) <= float(b["started_ms"])
                  for a, b in zip(rows, rows[1:])))
    check(f"{tag}: the rounds one after the other",
          [int(r["round"]) for r in rows] == sorted(int(r["round"]) for r in rows))
    for rnd in range(rounds):
        seq = [r["policy"] for r in rows if int(r["round"]) == rnd]
        seq = [x for i, x in enumerate(seq) if i == 0 or seq[i - 1] != x]  # mc's seeds
        want = [policies[(i + rnd) % len(policies)] for i in range(len(policies))]
        check(f"{tag}: round {rnd} runs {','.join(want)}", seq == want, str(seq))
    medians = {}
    for pol in policies:
        by_round = {}
        for r in rows:
            if r["policy"] == pol:
                by_round.setdefault(int(r["round"]), []).append(float(r["total_ms"]))
        means = [statistics.mean(v) for v in by_round.values()]
        medians[pol] = (statistics.median(means), min(means), max(means))
    table = median_table(p.stdout, wl)
    ok, why = bool(table), []
    for pol, (med, lo, hi) in medians.items():
        cols = table.get(pol)
        good = cols is not None and int(cols[1]) == rounds and all(
            abs(float(c) - v) <= 0.0015 for c, v in zip(cols[2:5], (med, lo, hi)))
        if cols and "base" in medians:
            vb = (medians["base"][0] / med - 1) * 100
            good = good and abs(float(cols[7].rstrip("%")) - vb) <= 0.051
        ok = ok and good
        why.append(f"{pol}: csv {med:.4f} [{lo:.4f}, {hi:.4f}], table {cols}")
    check(f"{tag}: the table's median, min, max and vs base are the CSV's", ok,
          "\n".join(why))
    mrows = {r["policy"]: r for r in read_csv(os.path.join(out, "medians.csv"))
             if r["workload"] == wl}
    check(f"{tag}: medians.csv holds the same medians",
          set(mrows) == set(policies) and all(
              abs(float(mrows[pol]["median_ms"]) - medians[pol][0]) < 1e-5
              and int(mrows[pol]["rounds"]) == rounds for pol in policies), str(mrows)[-500:])
    return medians


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

# --pair-tune: kernelet tries plans for the pairs it forms (summary.csv counts the pairs whose
# tuning ended); without it nothing is tuned
tuned = {}
for flag in ([], ["--pair-tune"]):
    p = run("--instances", "100", "--workload", "MIX", "--policy", "kernelet", *flag,
            "--no-plots", "--quiet", "--out", out)
    rows = read_csv(os.path.join(out, "summary.csv"))
    tuned[bool(flag)] = int(rows[0]["pairs_tuned"]) if p.returncode == 0 and rows else -1
check("--pair-tune tunes pairs, and only with it", tuned[True] > 0 and tuned[False] == 0,
      str(tuned))

# rounds on the sim: mc's two seeds in mc's place of each of three rounds
p = run("--instances", "10", "--workload", "MIX", "--policy", "fifo,base,kernelet,mc",
        "--mc-runs", "2", "--rounds", "3", "--no-plots", "--quiet", "--out", out)
med = check_rounds("sim --rounds 3", p, out, "MIX", ["fifo", "base", "kernelet", "mc"], 3, 2)
plot = {}
if os.path.exists(os.path.join(out, "plot_total.dat")):
    lines = [x.split() for x in open(os.path.join(out, "plot_total.dat"))]
    plot = dict(zip(lines[0][1:], lines[1][1:])) if len(lines) == 2 else {}
check("sim --rounds 3: plot_total.dat is the medians relative to base's",
      plot and all(abs(float(plot[pol]) - med[pol][0] / med["base"][0]) < 1e-4 for pol in med)
      and plot.get("opt") == "NaN", str(plot))
sd = read_csv(os.path.join(out, "slowdown.csv"))
check("sim --rounds 3: slowdown.csv has every run's rows with their round",
      len(sd) == 4 * 15 and sorted({r["round"] for r in sd}) == ["0", "1", "2"])
p1 = run("--instances", "10", "--workload", "MIX", "--policy", "base,kernelet", "--rounds",
         "1", "--no-plots", "--quiet", "--out", out)
p0 = run("--instances", "10", "--workload", "MIX", "--policy", "base,kernelet", "--no-plots",
         "--quiet", "--out", out)
cut = [[line.split()[:5] for line in q.stdout.splitlines()] for q in (p0, p1)]
check("--rounds 1 prints what no --rounds does (the per-run table)",
      p1.returncode == 0 and cut[0] == cut[1] and "policy    run   total ms" in p1.stdout
      and "policy    rounds" not in p1.stdout, p1.stdout[-800:])
p = run("--instances", "5", "--workload", "MIX", "--policy", "base", "--rounds", "4",
        "--no-plots", "--out", out)
prog = [x.split() for x in p.stderr.splitlines() if x.startswith("progress")]
check("the progress counts every round: 100% comes with the last",
      p.returncode == 0 and prog and prog[-1][1] == "100%" and prog[-1][-1] == "r4/4"
      and all(x[-1] != "r4/4" for x in prog if int(x[1].rstrip("%")) < 75)
      and all(x[-1] == "r1/4" for x in prog if int(x[1].rstrip("%")) <= 20), p.stderr[-800:])
for bad in (["--policy", "lottery"], ["--instances", "0"], ["--load", "-1"], ["--frobnicate"],
            ["--aging", "-1"], ["--aging", "x"], ["--rounds", "0"], ["--rounds", "101"],
            ["--rounds", "99999999999999999999999"], ["--rounds", "x"], ["--rounds", "3x"],
            ["--rounds", "-1"], ["--rounds", ""], ["--rounds"],
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
    p = run(*emu, ptx_dir, "--rounds", "3", "--out", out)
    check_rounds("emu --rounds 3", p, out, "MIX", ["base", "kernelet"], 3)
    check("emu --rounds 3: every output checked in every run",
          "24 kernels' outputs checked in 6 runs, 0 differ" in p.stdout, p.stdout[-300:])
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
