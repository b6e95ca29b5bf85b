#!/bin/sh
# Packs one round of the scheduling acceptance on the H100 (issue: Kernelet on the H100) into
# one folder to carry to the GPU machine:
#   tests/gpu/acceptance/pack.sh [BUILD_DIR] [DEST]      (defaults: build, .carry/acceptance)
# Programs go through scripts/device-pack, which copies every shared library they need
# except glibc's and NVIDIA's into lib/ (the GPU machine has no GSL, GLib, LZ4 or ZSTD).
set -eu
build=${1:-build}
dest=${2:-.carry/acceptance}
need() { [ -e "$build/$1" ] || { echo "pack.sh: $build/$1 is missing: meson compile -C $build" >&2; exit 1; }; }
progs="pc sad spmv st mm mriq bs tea"
for f in host-sched/daemon/kerneletd host-sched/daemon/kerneletd-cuda.so \
         host-sched/daemon/kernelet-ctl guest-driver/libcuda/libcuda.so.1 \
         tests/gpu/cuda/backend-check tests/gpu/cuda/profile-kernels tests/gpu/cuda/driver-rates tests/gpu/ptx/stack-probe \
         host-sched/backends/cuda/kernelet-cuda-calibrate model/model-mem-probe bench/burn bench/stream \
         guest-driver/libcuda/kernelet-proto-bench tests/gpu/ptx/ptx-slice-gpu; do
    need "$f"
done
for p in $progs; do need "bench/$p"; done
rm -rf "$dest"
scripts/device-pack "$dest" "$build/host-sched/daemon/kerneletd" \
    "$build/host-sched/daemon/kerneletd-cuda.so" "$build/host-sched/daemon/kernelet-ctl" \
    "$build/tests/gpu/cuda/backend-check" "$build/tests/gpu/cuda/profile-kernels" \
    "$build/host-sched/backends/cuda/kernelet-cuda-calibrate" "$build/model/model-mem-probe" \
    "$build/guest-driver/libcuda/kernelet-proto-bench" "$build/tests/gpu/ptx/ptx-slice-gpu" \
    "$build/host-sched/harness/kernelet-bench" "$build/tests/gpu/cuda/driver-rates" \
    "$build/tests/gpu/ptx/stack-probe" >/dev/null
mkdir -p "$dest/libcuda" "$dest/bench/ptx" "$dest/corpus"
cp "$build/guest-driver/libcuda/libcuda.so.1" "$dest/libcuda/"
for p in $progs burn stream; do cp "$build/bench/$p" "$dest/bench/"; done
cp "$build/tests/gpu/tenants/pair-sweep" "$build/tests/gpu/tenants/pair-probe" "$dest/bin/"
cp "$build"/tests/gpu/tenants/tenant-*-sliced.ptx "$dest/bench/ptx/"
cp "$build"/bench/*.ptx "$dest/bench/ptx/"
mkdir -p "$dest/compat"
# every compatibility program (bench/compat/meson.build), runaway and steal included
for f in "$build"/bench/compat/*; do
    [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$dest/compat/"
done
cp "$build"/tests/ptx/*.ptx "$dest/corpus/"
cp -r host-sched/backends/cuda/calibration "$dest/calibration"
cp tests/gpu/cuda/bench_h100.tsv host-sched/profiles/h100-bench.profiles "$dest/"
cp tests/gpu/cuda/run.sh "$dest/cuda-checks.sh"
cp tests/gpu/tenants/kernelet-tenants tests/gpu/tenants/timeline.py tests/gpu/acceptance/run.sh \
   tests/gpu/acceptance/figures.sh tests/gpu/acceptance/pairs.sh tests/gpu/acceptance/fence.sh \
   tests/gpu/acceptance/recover.sh tests/gpu/acceptance/contain.sh tests/gpu/acceptance/round.sh \
   tests/libcuda/check_printf.py \
   tests/gpu/libcuda/run_proto_bench.sh tests/gpu/libcuda/placement.sh \
   tests/gpu/bench/characterise.sh tests/gpu/bench/ncu_table.py "$dest/"
scripts/device-strip "$dest"
du -sh "$dest"
