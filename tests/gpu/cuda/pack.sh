#!/bin/sh
# Copies what the GPU checks of the CUDA side need into one folder to carry to the GPU
# machine (docs/perf/cuda-backend.md):
#   tests/gpu/cuda/pack.sh [BUILD_DIR] [DEST]      (defaults: build, .carry/cuda)
# The programs need only libc, libm, libcuda.so.1 and CUPTI (libcupti.so.13) there.
set -eu
build=${1:-build}
dest=${2:-.carry/cuda}
rm -rf "$dest"
mkdir -p "$dest/bench"
for f in tests/gpu/cuda/backend-check tests/gpu/cuda/profile-kernels \
         host-sched/backends/cuda/kernelet-cuda-calibrate model/model-mem-probe; do
    if [ ! -x "$build/$f" ]; then
        echo "pack.sh: $build/$f is missing: meson compile -C $build" >&2
        exit 1
    fi
    cp "$build/$f" "$dest/"
done
cp "$build"/bench/*.ptx "$dest/bench/"
cp tests/gpu/cuda/bench_h100.tsv host-sched/profiles/h100-bench.profiles "$dest/"
du -sh "$dest"
