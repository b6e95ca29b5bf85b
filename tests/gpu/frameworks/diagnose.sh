#!/bin/sh
# Why a framework fails through kerneletd (issue 14): runs one failing workload at a time
# as an isolated tenant of a fencing kerneletd --backend cuda with every log the stack can
# give: our libcuda's (KERNELET_DEBUG=1: export tables asked for, entry points not found or
# refused), cuBLAS's and cuBLASLt's own (CUBLAS_LOGINFO_DBG, CUBLASLT_LOG_LEVEL), XLA's
# (TF_CPP_*: why StreamExecutor dropped the device), and the same natively for comparison.
#   diagnose.sh CARRY_DIR OUT_DIR [WORKLOAD...]   (default: torch_matmul_fp32 jax_matmul)
# CARRY_DIR is a folder made by pack.sh; everything lands in OUT_DIR/diagnose.tar.gz.
set -u
carry=$(cd "${1:?usage: diagnose.sh CARRY_DIR OUT_DIR [WORKLOAD...]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
shift 2
work=$out/diagnose
mkdir -p "$work"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
sock=$work/kerneletd.sock
LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64" \
    "$carry/bin/kerneletd" --socket "$sock" --backend cuda --log-errors --calibration "$carry/calibration" \
    >"$work/kerneletd.log" 2>&1 &
kd=$!
trap 'kill "$kd" 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
logs() {    # the environment that makes each layer talk
    env CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=stderr CUBLASLT_LOG_LEVEL=5 \
        TORCH_SHOW_CPP_STACKTRACES=1 CUDA_LAUNCH_BLOCKING=1 \
        TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_MAX_VLOG_LEVEL=2 \
        TF_CPP_VMODULE=platform_util=1,cuda_executor=2,cuda_context=2,cuda_platform=2 "$@"
}
for name in ${*:-torch_matmul_fp32 jax_matmul}; do
    echo "== $name"
    logs timeout 120 python3 "$carry/workloads.py" run "$name" >"$work/$name.native.txt" 2>&1
    grep '^RESULT' "$work/$name.native.txt" | cut -c1-160
    logs env LD_LIBRARY_PATH="$carry/libcuda" KERNELET_SOCKET="$sock" KERNELET_ISOLATE=1 \
        KERNELET_DEBUG=1 timeout 120 python3 "$carry/workloads.py" run "$name" \
        >"$work/$name.kerneletd.txt" 2>&1
    grep '^RESULT' "$work/$name.kerneletd.txt" | cut -c1-160
    # what our library said, counted (the first lines of each kind)
    grep '^\[kernelet' "$work/$name.kerneletd.txt" | sed 's/0x[0-9a-f]*/0x?/g' | sort | uniq -c |
        sort -rn | head -n 25
    grep -iE 'error|fail|not found|unsupported|dropp|unable|raised from|line [0-9]' \
        "$work/$name.kerneletd.txt" | grep -v '^\[kernelet' | cut -c1-200 | head -n 40
done
# natively under the logging interposer (tests/gpu/libcuda/interposer): which export tables
# and which of their slots the frameworks' libraries use with the real driver
if [ -f "$carry/interposer/libcuda.so.1" ]; then
    for name in ${*:-torch_matmul_fp32 jax_matmul}; do
        echo "== interposer: $name"
        KSHIM_LOG="$work/$name.shim.log" LD_LIBRARY_PATH="$carry/interposer" timeout 120 \
            python3 "$carry/workloads.py" run "$name" 2>/dev/null | grep '^RESULT' | cut -c1-120
        grep '^exporttable ' "$work/$name.shim.log" | sort | uniq -c
        grep '^exporttable-layout' "$work/$name.shim.log" | sort -u | cut -c1-200
        grep '^count .*\[' "$work/$name.shim.log" | awk '{n[$2]+=$3} END {for (k in n) print k, n[k]}' | sort
    done
fi
# which step leaves an error in the CUDA runtime (probe_last_error.py), native and through
echo "== probe: native"
timeout 120 python3 "$carry/probe_last_error.py" 2>&1 | tee "$work/probe.native.txt" | grep '^STEP'
echo "== probe: through kerneletd"
env LD_LIBRARY_PATH="$carry/libcuda" KERNELET_SOCKET="$sock" KERNELET_ISOLATE=1 \
    KERNELET_DEBUG=1 timeout 120 python3 "$carry/probe_last_error.py" >"$work/probe.kerneletd.txt" 2>&1
grep '^STEP' "$work/probe.kerneletd.txt"
kill "$kd"; wait "$kd" 2>/dev/null
tar -C "$out" -czf "$out/diagnose.tar.gz" diagnose && rm -rf "$work"
