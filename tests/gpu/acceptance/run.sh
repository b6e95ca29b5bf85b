#!/bin/sh
# One round of the scheduling acceptance on the GPU machine, from a folder made by pack.sh:
#   run.sh CARRY_DIR OUT_DIR [MIXES] [REPEATS]
# 1. machine, calibration, backend-check (the cuda backend, its trial and fault handling)
# 2. profile-kernels: the CUPTI profiler against Nsight Compute's table, with the metric
#    names this chip offers (metrics-offered.txt)
# 3. kernelet-tenants: the mixes as separate tenant processes: serial, separate, MPS,
#    kerneletd fifo/base/kernelet/opt (profiled online, no profile file)
# Everything lands in OUT_DIR/acceptance.tar.gz (the device tool brings back few files).
set -u
carry=$(cd "${1:?usage: run.sh CARRY_DIR OUT_DIR [MIXES] [REPEATS]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
mixes=${3:-burn+stream,tea+pc}
repeats=${4:-1}
work=$out/acceptance
mkdir -p "$work/calibration"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
# The tools' libraries, for the tools alone: the CUDA programs keep the machine's own.
klib="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
tool() { LD_LIBRARY_PATH="$klib" "$@"; }
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; date -u; } \
    >"$work/machine.txt" 2>&1
cat "$work/machine.txt"
stage() { echo "== $* ($(date -u +%T))"; }
# A tool with its libraries and a time limit, under gdb where the machine has it, so that a
# crash leaves its backtrace in the log (gdb itself keeps the machine's libraries).
traced() {
    if command -v gdb >/dev/null 2>&1; then
        timeout 300 gdb -q -batch -ex "set environment LD_LIBRARY_PATH $klib" -ex run -ex bt \
            -ex quit --args "$@"
    else
        LD_LIBRARY_PATH="$klib" timeout 300 "$@"
    fi
}

stage calibration
tool "$carry/bin/model-mem-probe" 3350 >"$work/calibration/probe.txt" 2>"$work/calibration/probe.err"
tool "$carry/bin/kernelet-cuda-calibrate" --dir "$work/calibration" <"$work/calibration/probe.txt" \
    >"$work/calibration/calibrate.txt" 2>&1
cat "$work"/calibration/*.calib 2>/dev/null | head -20

stage profile-kernels
KPROF_LIST_METRICS="$work/metrics-offered.txt" traced "$carry/bin/profile-kernels" \
    "$carry/bench/ptx" "$carry/bench_h100.tsv" "$work/profile-kernels.csv" \
    >"$work/profile-kernels.txt" 2>&1
echo "profile-kernels: exit $?"; cat "$work/profile-kernels.txt"

stage backend-check
traced "$carry/bin/backend-check" "$carry/bench/ptx" "$carry/h100-bench.profiles" "$work" \
    >"$work/backend-check.txt" 2>&1
echo "backend-check: exit $?"; tail -40 "$work/backend-check.txt"

stage kernelet-tenants "$mixes"
python3 "$carry/kernelet-tenants" --carry "$carry" --mix "$mixes" --repeats "$repeats" \
    --out "$work/tenants" >"$work/tenants.md" 2>"$work/tenants.log"
echo "kernelet-tenants: exit $?"; cat "$work/tenants.log" "$work/tenants.md"
stage done
tar -C "$out" -czf "$out/acceptance.tar.gz" acceptance && rm -rf "$work"
