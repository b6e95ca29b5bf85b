#!/bin/sh
# The transport and slicing figures on the GPU machine, from a folder made by pack.sh:
#   figures.sh CARRY_DIR OUT_DIR
# 1. kernelet-proto-bench natively and through our libcuda and kerneletd --backend cuda:
#    sync launch round trip, async launches per second, copies (docs/perf/transport.md)
# 2. ptx-slice-gpu: sliced bench and corpus kernels bit-identical to whole launches, and
#    the slicing overhead per slice size (docs/perf/slicing.md)
# Everything lands in OUT_DIR/figures.tar.gz.
set -u
carry=$(cd "${1:?usage: figures.sh CARRY_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
work=$out/figures
mkdir -p "$work"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
klib="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; date -u; } \
    >"$work/machine.txt" 2>&1
echo "== transport ($(date -u +%T))"
# the daemon gets the carried libraries, the benchmark natively NVIDIA's driver and then ours
LD_LIBRARY_PATH="$klib" KERNELETD_ARGS="--calibration $carry/calibration" \
    sh "$carry/run_proto_bench.sh" "$carry/bin/kerneletd" "$carry/libcuda" \
    "$carry/bin/kernelet-proto-bench" >"$work/transport.txt" 2>&1
echo "exit $?"; cat "$work/transport.txt"
echo "== slicing ($(date -u +%T))"
LD_LIBRARY_PATH="$klib" timeout 500 "$carry/bin/ptx-slice-gpu" "$carry/bench/ptx" "$carry/corpus" \
    --csv "$work/ptx-slice-overhead.csv" >"$work/slicing.txt" 2>&1
echo "exit $?"; tail -40 "$work/slicing.txt"
tar -C "$out" -czf "$out/figures.tar.gz" figures && rm -rf "$work"
