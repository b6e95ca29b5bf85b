#!/bin/sh
# Runs every benchmark program (--small) and every compat program under the logging
# interposer (tests/gpu/libcuda/interposer) against the real NVIDIA driver, one log per
# program, then prints a summary of what the CUDA runtime asked of the driver.
#   run_interposer.sh INTERPOSER_DIR BENCH_BUILD_DIR OUT_DIR
# Exits 77 (skip) without an NVIDIA GPU; 1 when a program fails under the interposer.
set -u
shim=${1:?usage: run_interposer.sh INTERPOSER_DIR BENCH_BUILD_DIR OUT_DIR}
bench=${2:?}
out=${3:?}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
mkdir -p "$out"
fail=0
run() { # name, program, args...
    name=$1; shift
    rm -f "$out/$name.log"
    KSHIM_LOG="$out/$name.log" LD_LIBRARY_PATH="$shim" "$@" >"$out/$name.out" 2>&1
    rc=$?
    echo "$name: exit $rc, $(grep -c . "$out/$name.log") log lines"
    [ $rc -eq 0 ] || { fail=1; tail -5 "$out/$name.out"; }
}
for p in pc sad spmv st mm mriq bs tea; do
    run "$p" "$bench/$p" --small
done
for p in vector_add driver_api streams_events grids pinned many_launches errors fault symbols; do
    run "compat-$p" "$bench/compat/$p"
done
{
    echo "== getproc requests (name version flags found), all programs"
    cat "$out"/*.log | grep '^getproc' | sed 's/ result=.*found=/ found=/' | sort | uniq -c | sort -k2
    echo "== export tables requested"
    cat "$out"/*.log | grep '^exporttable ' | sort | uniq -c
    echo "== export table layouts"
    cat "$out"/*.log | grep '^exporttable-\(layout\|slot\)' | sort -u
    echo "== export table slots called (total calls)"
    cat "$out"/*.log | grep '^count .*\[' | awk '{n[$2]+=$3} END {for (k in n) print k, n[k]}' | sort
    echo "== driver functions called (total calls)"
    cat "$out"/*.log | grep '^count ' | grep -v '\[' | awk '{n[$2]+=$3} END {for (k in n) print k, n[k]}' | sort
    echo "== integrity checks"
    cat "$out"/*.log | grep '^integrity' | sed 's/seconds=[0-9]* //; s/real=[0-9a-f]* recomputed=[0-9a-f]* //' | sort | uniq -c
} >"$out/summary.txt"
cat "$out/summary.txt"
exit $fail
