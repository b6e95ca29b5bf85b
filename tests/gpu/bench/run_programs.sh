#!/bin/sh
# Runs the eight benchmark programs at their default sizes and the compatibility corpus on
# the GPU; every program must verify (exit 0). Exits 77 (skip) when there is no NVIDIA GPU.
#   run_programs.sh BENCH_BUILD_DIR [--small]
set -u
dir=${1:?usage: run_programs.sh BENCH_BUILD_DIR [--small]}
size=${2:-}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
fail=0
for p in pc sad spmv st mm mriq bs tea; do
    out=$("$dir/$p" $size 2>&1)
    rc=$?
    echo "$out"
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^RESULT name=$p verified=yes"; then
        echo "FAILED: $p (exit $rc)"
        fail=1
    fi
done
for p in vector_add driver_api streams_events grids pinned many_launches errors fault symbols sass_module; do
    out=$("$dir/compat/$p" 2>&1)
    rc=$?
    echo "$out"
    if [ $rc -ne 0 ] || ! echo "$out" | grep -q "^PASS $p"; then
        echo "FAILED: compat/$p (exit $rc)"
        fail=1
    fi
done
exit $fail
