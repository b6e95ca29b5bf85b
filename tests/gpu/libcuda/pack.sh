#!/bin/sh
# Copies what the GPU acceptance of the guest libcuda needs into one folder to carry to the
# GPU machine (docs/perf/transport.md):
#   tests/gpu/libcuda/pack.sh [BUILD_DIR] [DEST]      (defaults: build, .carry/libcuda)
# The daemon's shared libraries that a CUDA machine may lack (GSL, LZ4, ZSTD) go in lib/;
# the rest needs libc, NVIDIA's libcuda.so.1 and CUPTI there.
set -eu
build=${1:-build}
dest=${2:-.carry/libcuda}
need() { [ -e "$build/$1" ] || { echo "pack.sh: $build/$1 is missing: meson compile -C $build" >&2; exit 1; }; }
for f in host-sched/daemon/kerneletd host-sched/daemon/kerneletd-cuda.so \
         host-sched/daemon/kernelet-ctl guest-driver/libcuda/libcuda.so.1 \
         guest-driver/libcuda/kernelet-proto-bench tests/gpu/libcuda/interposer/libcuda.so.1; do
    need "$f"
done
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/libcuda" "$dest/interposer" "$dest/bench/compat"
cp "$build/host-sched/daemon/kerneletd" "$build/host-sched/daemon/kerneletd-cuda.so" \
   "$build/host-sched/daemon/kernelet-ctl" "$build/guest-driver/libcuda/kernelet-proto-bench" \
   "$dest/bin/"
cp "$build/guest-driver/libcuda/libcuda.so.1" "$dest/libcuda/"
cp "$build/tests/gpu/libcuda/interposer/libcuda.so.1" "$dest/interposer/"
for p in pc sad spmv st mm mriq bs tea; do need "bench/$p"; cp "$build/bench/$p" "$dest/bench/"; done
for p in vector_add driver_api streams_events grids pinned many_launches errors fault symbols sass_module; do
    need "bench/compat/$p"
    cp "$build/bench/compat/$p" "$dest/bench/compat/"
done
ldd "$build/host-sched/daemon/kerneletd" | awk '/gsl|lz4|zstd/ {print $3}' | while read -r lib; do
    cp -L "$lib" "$dest/lib/"
done
cp -r host-sched/backends/cuda/calibration "$dest/calibration"
cp host-sched/profiles/h100-bench.profiles "$dest/"
cp tests/libcuda/run_with_kerneletd.sh tests/gpu/libcuda/run_interposer.sh \
   tests/gpu/libcuda/run_proto_bench.sh tests/gpu/libcuda/run.sh "$dest/"
du -sh "$dest"
