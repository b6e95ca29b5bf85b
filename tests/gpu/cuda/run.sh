#!/bin/sh
# The GPU checks of the CUDA side of kerneletd, from a folder made by pack.sh:
#   tests/gpu/cuda/run.sh CARRY_DIR OUT_DIR
# 1. calibration: model-mem-probe | kernelet-cuda-calibrate -> OUT_DIR/calibration/*.calib
# 2. backend-check (the cuda executor backend)      -> OUT_DIR/backend-check.{txt,csv}
# 3. profile-kernels (CUPTI against Nsight Compute)  -> OUT_DIR/profile-kernels.{txt,csv}
# Exit status: backend-check's (0 ok, 1 failed checks), 77 without a GPU.
set -u
carry=$1
out=$2
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
mkdir -p "$out/calibration"
# CUPTI lives in lib64 or in extras/CUPTI/lib64 depending on how CUDA was installed.
if ! ldd "$carry/backend-check" | grep -q 'libcupti.so.13 => /'; then
    export LD_LIBRARY_PATH="/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,clocks.max.mem --format=csv; date -u; } \
    > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

echo "== calibration"
start=$(date +%s)
"$carry/model-mem-probe" 3350 > "$out/calibration/probe.txt" 2> "$out/calibration/probe.err"
cat "$out/calibration/probe.txt" "$out/calibration/probe.err"
"$carry/kernelet-cuda-calibrate" --dir "$out/calibration" < "$out/calibration/probe.txt"
cat "$out"/calibration/*.calib
echo "calibration: $(( $(date +%s) - start )) s"

echo "== backend-check"
start=$(date +%s)
timeout 300 "$carry/backend-check" "$carry/bench" "$carry/h100-bench.profiles" "$out" \
    > "$out/backend-check.txt" 2>&1
rc=$?
cat "$out/backend-check.txt"
echo "backend-check: $(( $(date +%s) - start )) s"

echo "== profile-kernels"
timeout 300 "$carry/profile-kernels" "$carry/bench" "$carry/bench_h100.tsv" \
    "$out/profile-kernels.csv" > "$out/profile-kernels.txt" 2>&1
echo "profile-kernels: exit $?"
cat "$out/profile-kernels.txt"
exit $rc
