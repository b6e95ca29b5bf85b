#!/usr/bin/env python3
"""TAP test of tests/gpu/bench/ncu_table.py on a trimmed ncu CSV from the H100 run.

    test_ncu_table.py NCU_TABLE_PY DATA_DIR

PUR and MUR are recomputed here by hand from the fixture's numbers and compared with the
table's; the same data with other units (us instead of ns) must give the same row; kernels
without data must make the script fail.
"""
import os
import shutil
import subprocess
import sys
import tempfile

script, data = sys.argv[1], sys.argv[2]
results = []


def check(name, cond):
    results.append((name, bool(cond)))


def run_table(folder):
    p = subprocess.run([sys.executable, script, folder], capture_output=True, text=True)
    rows = {}
    for line in p.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in ("pc", "sad", "spmv", "st", "mm", "mriq", "bs", "tea"):
            rows[cells[0]] = cells
    return p.returncode, rows


with tempfile.TemporaryDirectory() as tmp:
    shutil.copy(os.path.join(data, "ncu-tea-h100.csv"), os.path.join(tmp, "tea.csv"))
    shutil.copy(os.path.join(data, "ncu-tea-h100.result"), os.path.join(tmp, "tea.result"))
    rc, rows = run_table(tmp)
    tea = rows.get("tea")
    check("tea row present", tea is not None and len(tea) == 14)
    check("missing kernels make it fail", rc != 0 and "No such file" in " ".join(rows.get("pc", [])))
    # Numbers of the fixture: 44,826,624 warp instructions, 112,818.20 cycles per SM, 132 SMs,
    # peak 4 per cycle; 33,569,024 + 17,342,208 DRAM bytes in 70,432 ns, peak 1,280 B/cycle at
    # 2,616,901,408.45 Hz.
    pur = 44826624 / (112818.20 * 132 * 4)
    mur = (33569024 + 17342208) / (70432e-9 * 1280 * 2616901408.45)
    if tea:
        check("block x grid from RESULT", tea[1] == "128x1x1 x 32768x1x1")
        check("waves per SM", tea[2] == "15.5")
        check("event time from RESULT", tea[3] == "0.0620")
        check("ncu time in ms", tea[4] == "0.070")
        check("IPC", tea[5] == "3.12")
        check("PUR = %.3f" % pur, tea[6] == "%.3f" % pur)
        check("MUR = %.3f" % mur, tea[7] == "%.3f" % mur)
        check("DRAM GB/s", tea[8] == "%.0f" % ((33569024 + 17342208) / 70432e-9 / 1e9))
        check("registers", tea[11] == "16")
        check("class", tea[13] == "compute (CI)")
    # The same duration written in microseconds gives the same row.
    with open(os.path.join(tmp, "tea.csv")) as f:
        text = f.read()
    text = text.replace('"70,432"', '"70.432"').replace('"ns"', '"us"', 1)
    with open(os.path.join(tmp, "tea.csv"), "w") as f:
        f.write(text)
    _, rows2 = run_table(tmp)
    check("units are scaled", rows2.get("tea") == tea)

print("1..%d" % len(results))
for i, (name, ok) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", i, name))
sys.exit(0 if all(ok for _, ok in results) else 1)
