#!/usr/bin/env python3
"""Turns characterise.sh's output folder into the markdown table of docs/perf/bench.md.

    ncu_table.py OUT            (reads OUT/<kernel>.csv and OUT/<kernel>.result)

PUR = warp instructions executed / (SM cycles elapsed x SMs x peak IPC per SM)
MUR = DRAM bytes read and written / (kernel time x peak DRAM bandwidth)
      (the paper's DRAM requests / (time x clock x peak requests per cycle), with 32-byte
       sectors as requests; peak bandwidth is ncu's dram__bytes.sum.peak_sustained times
       the DRAM clock)
Standard library only (the GPU machine has plain python3).
"""
import csv
import os
import re
import sys

KERNELS = ["pc", "sad", "spmv", "st", "mm", "mriq", "bs", "tea"]
CLASS_IN_PAPER = {"pc": "MI", "sad": "MI", "spmv": "MI", "st": "MI",
                  "mm": "CI", "mriq": "CI", "bs": "CI", "tea": "CI"}
PEAK_IPC_DEFAULT = 4.0  # four warp schedulers per SM, one instruction each per cycle

SCALE = {"": 1, "byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9,
         "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1,
         "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1,
         "cycle": 1, "inst": 1, "sector": 1, "warp": 1, "register/thread": 1,
         "byte/block": 1, "%": 1, "block": 1, "thread": 1, "hz": 1, "khz": 1e3,
         "mhz": 1e6, "ghz": 1e9, "cycle/second": 1, "cycle/usecond": 1e6,
         "cycle/nsecond": 1e9, "byte/second": 1, "byte/cycle": 1,
         "inst/cycle": 1, "warp/cycle": 1}


def number(text, unit):
    """A metric value in base units, or None."""
    text = text.strip().replace(",", "")
    try:
        v = float(text)
    except ValueError:
        return None
    return v * SCALE.get(unit.strip().lower(), 1)


def read_csv(path):
    """{metric: value} of the first profiled kernel in an ncu --csv --page raw log."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith("=="))]
    for i, row in enumerate(rows):
        if "Kernel Name" in row and i + 2 < len(rows):
            head, units, data = row, rows[i + 1], rows[i + 2]
            out = {}
            for name, unit, val in zip(head, units, data):
                v = number(val, unit)
                out[name] = v if v is not None else val
            return out
    raise ValueError(f"{path}: no ncu data row")


def read_result(path):
    """The key=value fields of a program's RESULT line."""
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    return {}


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def row(name, m, r):
    get = lambda k: m.get(k) if isinstance(m.get(k), float) else None
    sms = get("device__attribute_multiprocessor_count")
    peak_ipc = get("sm__inst_executed.avg.peak_sustained") or PEAK_IPC_DEFAULT
    inst, cyc = get("sm__inst_executed.sum"), get("sm__cycles_elapsed.avg")
    pur = inst / (cyc * sms * peak_ipc) if inst and cyc and sms else None
    t = get("gpu__time_duration.sum")
    rd, wr = get("dram__bytes_read.sum"), get("dram__bytes_write.sum")
    peak_bw = None
    if get("dram__bytes.sum.peak_sustained") and get("dram__cycles_elapsed.avg.per_second"):
        peak_bw = get("dram__bytes.sum.peak_sustained") * get("dram__cycles_elapsed.avg.per_second")
    if t and peak_bw and rd is not None and wr is not None:
        mur = (rd + wr) / (t * peak_bw)
    elif get("dram__throughput.avg.pct_of_peak_sustained_elapsed") is not None:
        mur = get("dram__throughput.avg.pct_of_peak_sustained_elapsed") / 100
    else:
        mur = None
    bound = "n/a" if pur is None or mur is None else ("memory" if mur > pur else "compute")
    smem = (get("launch__shared_mem_per_block_static") or 0) + \
        (get("launch__shared_mem_per_block_dynamic") or 0)
    gbs = (rd + wr) / t / 1e9 if t and rd is not None and wr is not None else None
    return "| {} | {} x {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0f} | {} ({}) |".format(
        name, r.get("block", "?"), r.get("grid", "?"), fmt(get("launch__waves_per_multiprocessor"), ".1f"),
        r.get("kernel_ms", "n/a"),
        fmt(t * 1e3 if t else None, ".3f"),
        fmt(get("sm__inst_executed.avg.per_cycle_active"), ".2f"),
        fmt(pur, ".3f"), fmt(mur, ".3f"), fmt(gbs, ".0f"),
        fmt(get("sm__warps_active.avg.pct_of_peak_sustained_active"), ".1f"),
        fmt(get("sm__maximum_warps_per_active_cycle_pct"), ".1f"),
        fmt(get("launch__registers_per_thread"), ".0f"), smem, bound, CLASS_IN_PAPER[name])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    print("| kernel | block x grid | waves | time ms (events) | time ms (ncu) | IPC | PUR | MUR "
          "| DRAM GB/s | achieved occ. % | theoretical occ. % | regs/thread "
          "| smem B/block | bound here (paper) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    status = 0
    for k in KERNELS:
        csv_path, res_path = os.path.join(d, k + ".csv"), os.path.join(d, k + ".result")
        try:
            m = read_csv(csv_path)
        except (OSError, ValueError) as e:
            print(f"| {k} | {e} |")
            status = 1
            continue
        r = read_result(res_path) if os.path.exists(res_path) else {}
        if r.get("verified") != "yes":
            status = 1
        print(row(k, m, r))
    return status


if __name__ == "__main__":
    sys.exit(main())
