#!/bin/sh
# Copies what the GPU checks of the CUDA side need into one folder to carry to the GPU
# machine (docs/perf/cuda-backend.md):
#   tests/gpu/cuda/pack.sh [BUILD_DIR] [DEST]      (defaults: build, .carry/cuda)
# Programs go to bin/ with their shared libraries in lib/ (scripts/device-pack: the GPU
# machine has no GSL); the bench PTX to bench/ptx/. NVIDIA's driver and CUPTI are the
# machine's own.
set -eu
build=${1:-build}
dest=${2:-.carry/cuda}
progs="tests/gpu/cuda/backend-check tests/gpu/cuda/profile-kernels
       host-sched/backends/cuda/kernelet-cuda-calibrate model/model-mem-probe"
for f in $progs; do
    if [ ! -x "$build/$f" ]; then
        echo "pack.sh: $build/$f is missing: meson compile -C $build" >&2
        exit 1
    fi
done
rm -rf "$dest"
# shellcheck disable=SC2086
scripts/device-pack "$dest" $(for f in $progs; do echo "$build/$f"; done) >/dev/null
mkdir -p "$dest/bench/ptx"
cp "$build"/bench/*.ptx "$dest/bench/ptx/"
cp tests/gpu/cuda/bench_h100.tsv host-sched/profiles/h100-bench.profiles tests/gpu/cuda/run.sh \
   "$dest/"
du -sh "$dest"
