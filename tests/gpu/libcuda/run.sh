#!/bin/sh
# The GPU acceptance of the guest libcuda and kerneletd, from a folder made by pack.sh:
#   run.sh CARRY_DIR OUT_DIR
# 1. interposer: what cudart asks of NVIDIA's driver        -> OUT/kshim/ (summary.txt)
# 2. every bench and compat program natively                -> OUT/native.txt
# 3. the same, unmodified, through our libcuda and kerneletd --backend cuda -> OUT/kernelet.txt
# 4. two programs at once (tea, pc): two tenants, co-scheduled -> OUT/two-tenants.txt
# 5. kernelet-proto-bench natively and through kerneletd    -> OUT/proto-bench.txt
# Exit status 0 when 2-4 all passed (1 otherwise), 77 without a GPU.
set -u
carry=$(cd "${1:?usage: run.sh CARRY_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
# The daemon's libraries (GSL, LZ4, ZSTD) and CUPTI; never a libcuda: the daemon must get
# NVIDIA's, the programs get ours through run_with_kerneletd.sh.
export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
export KERNELETD_ARGS="--calibration $carry/calibration --profiles $carry/h100-bench.profiles"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv; date -u; } >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
status=0
progs="pc sad spmv st mm mriq bs tea"
compat="vector_add driver_api streams_events grids pinned many_launches errors fault symbols sass_module"

echo "== 1. interposer"
sh "$carry/run_interposer.sh" "$carry/interposer" "$carry/bench" "$out/kshim" >"$out/interposer.txt" 2>&1
echo "exit $?; logs in $out/kshim"

echo "== 2. native"
: >"$out/native.txt"
for p in $progs; do "$carry/bench/$p" >>"$out/native.txt" 2>&1; done
for p in $compat; do "$carry/bench/compat/$p" >>"$out/native.txt" 2>&1; done
grep -E '^(RESULT|PASS|FAIL)' "$out/native.txt"

echo "== 3. through kerneletd --backend cuda"
: >"$out/kernelet.txt"
for p in $progs; do
    if sh "$carry/run_with_kerneletd.sh" "$carry/bin/kerneletd" "$carry/libcuda" cuda \
           "^RESULT name=$p verified=yes" "$carry/bench/$p" >>"$out/kernelet.txt" 2>&1; then
        echo "ok   $p"
    else
        echo "FAIL $p"; status=1
    fi
done
for p in $compat; do
    if sh "$carry/run_with_kerneletd.sh" "$carry/bin/kerneletd" "$carry/libcuda" cuda \
           "^PASS $p" "$carry/bench/compat/$p" >>"$out/kernelet.txt" 2>&1; then
        echo "ok   compat/$p"
    else
        echo "FAIL compat/$p"
        status=1
    fi
done

echo "== 4. two tenants"
KERNELET_CTL="$carry/bin/kernelet-ctl" EXPECT_COSCHEDULE=1 \
    sh "$carry/run_with_kerneletd.sh" "$carry/bin/kerneletd" "$carry/libcuda" cuda --pair \
    "$carry/bench/tea" '^RESULT name=tea verified=yes' "$carry/bench/pc" '^RESULT name=pc verified=yes' \
    --repeat=20 >"$out/two-tenants.txt" 2>&1 || status=1
cat "$out/two-tenants.txt"

echo "== 5. kernelet-proto-bench"
sh "$carry/run_proto_bench.sh" "$carry/bin/kerneletd" "$carry/libcuda" "$carry/bin/kernelet-proto-bench" \
    >"$out/proto-bench.txt" 2>&1
cat "$out/proto-bench.txt"
exit $status
