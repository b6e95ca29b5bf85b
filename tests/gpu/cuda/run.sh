#!/bin/sh
# The GPU checks of the CUDA side of kerneletd, from a folder made by pack.sh (or by
# tests/gpu/acceptance/pack.sh, which packs the same programs the same way):
#   run.sh CARRY_DIR OUT_DIR
# 1. calibration: model-mem-probe | kernelet-cuda-calibrate -> OUT_DIR/calibration/*.calib
# 2. backend-check (the cuda executor backend)      -> OUT_DIR/backend-check.{txt,csv}
# 3. profile-kernels (CUPTI against Nsight Compute)  -> OUT_DIR/profile-kernels.{txt,csv},
#    and every metric name the chip offers           -> OUT_DIR/metrics-offered.txt
# Exit status: backend-check's (0 ok, 1 failed checks), 77 without a GPU.
set -u
carry=$(cd "${1:?usage: run.sh CARRY_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
mkdir -p "$out/calibration"
# The carried libraries, for these programs alone; CUPTI lives in lib64 or in
# extras/CUPTI/lib64 depending on how CUDA was installed.
klib="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
tool() { LD_LIBRARY_PATH="$klib" "$@"; }
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm,clocks.max.mem --format=csv; date -u; } \
    > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

echo "== calibration"
start=$(date +%s)
tool "$carry/bin/model-mem-probe" 3350 > "$out/calibration/probe.txt" 2> "$out/calibration/probe.err"
cat "$out/calibration/probe.txt" "$out/calibration/probe.err"
tool "$carry/bin/kernelet-cuda-calibrate" --dir "$out/calibration" < "$out/calibration/probe.txt"
cat "$out"/calibration/*.calib
echo "calibration: $(( $(date +%s) - start )) s"

echo "== backend-check"
start=$(date +%s)
tool timeout 300 "$carry/bin/backend-check" "$carry/bench/ptx" "$carry/h100-bench.profiles" "$out" \
    > "$out/backend-check.txt" 2>&1
rc=$?
cat "$out/backend-check.txt"
echo "backend-check: $(( $(date +%s) - start )) s"

echo "== profile-kernels"
KPROF_LIST_METRICS="$out/metrics-offered.txt" tool timeout 300 "$carry/bin/profile-kernels" \
    "$carry/bench/ptx" "$carry/bench_h100.tsv" \
    "$out/profile-kernels.csv" > "$out/profile-kernels.txt" 2>&1
echo "profile-kernels: exit $?"
cat "$out/profile-kernels.txt"
exit $rc
