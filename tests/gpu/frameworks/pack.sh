#!/bin/sh
# Packs the framework acceptance round (run.sh) into one folder to carry to the GPU machine:
#   tests/gpu/frameworks/pack.sh [BUILD_DIR] [DEST]      (defaults: build, .carry/frameworks)
# Programs go through scripts/device-pack (their libraries into lib/: the GPU machine has
# no GSL, GLib, LZ4 or ZSTD).
set -eu
build=${1:-build}
dest=${2:-.carry/frameworks}
for f in host-sched/daemon/kerneletd host-sched/daemon/kerneletd-cuda.so \
         host-sched/daemon/kernelet-ctl guest-driver/libcuda/libcuda.so.1; do
    [ -e "$build/$f" ] || { echo "pack.sh: $build/$f is missing" >&2; exit 1; }
done
rm -rf "$dest"
scripts/device-pack "$dest" "$build/host-sched/daemon/kerneletd" \
    "$build/host-sched/daemon/kerneletd-cuda.so" "$build/host-sched/daemon/kernelet-ctl" >/dev/null
mkdir -p "$dest/libcuda" "$dest/compat"
cp "$build/guest-driver/libcuda/libcuda.so.1" "$dest/libcuda/"
for p in "$build"/bench/compat/*; do
    [ -f "$p" ] && [ -x "$p" ] && cp "$p" "$dest/compat/"
done
cp -r host-sched/backends/cuda/calibration "$dest/calibration"
# the logging interposer over the real driver, for diagnose.sh (when it was built)
if [ -f "$build/tests/gpu/libcuda/interposer/libcuda.so.1" ]; then
    mkdir -p "$dest/interposer"
    cp "$build/tests/gpu/libcuda/interposer/libcuda.so.1" "$dest/interposer/"
fi
# the transport benchmark (it needs no library of ours: the driver it runs on is the one
# on LD_LIBRARY_PATH, NVIDIA's or ours)
if [ -x "$build/guest-driver/libcuda/kernelet-proto-bench" ]; then
    cp "$build/guest-driver/libcuda/kernelet-proto-bench" "$dest/bin/"
    cp tests/gpu/libcuda/run_proto_bench.sh "$dest/"
fi
cp tests/gpu/frameworks/workloads.py tests/gpu/frameworks/run.sh tests/gpu/frameworks/diagnose.sh \
   tests/gpu/frameworks/startup.sh tests/gpu/frameworks/probe_last_error.py \
   tests/gpu/frameworks/alone.sh "$dest/"
# the containment round too (tests/gpu/acceptance/contain.sh: its bystanders and checker)
mkdir -p "$dest/bench"
cp "$build/bench/burn" "$dest/bench/"
# and the paper's eight bench programs, each alone (alone.sh)
for p in pc sad spmv st mm mriq bs tea; do cp "$build/bench/$p" "$dest/bench/"; done
cp tests/gpu/acceptance/contain.sh tests/libcuda/check_printf.py "$dest/"
# native results of an earlier round, for NATIVE=0 (tests/gpu/frameworks/native-h100.txt)
[ -f tests/gpu/frameworks/native-h100.txt ] && cp tests/gpu/frameworks/native-h100.txt "$dest/native.txt"
scripts/device-strip "$dest"
du -sh "$dest"
