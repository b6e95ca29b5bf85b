#!/bin/sh
# The GPU acceptance of real CUDA software as tenants (issue 14), from a folder made by
# pack.sh; everything lands in OUT_DIR/frameworks.tar.gz:
#   run.sh CARRY_DIR OUT_DIR
# 1. every compatibility program (bench/compat) natively and through our libcuda and
#    kerneletd --backend cuda, the fault program last and vector_add once more after it
#                                                                    -> compat.md
# 2. the framework workloads (workloads.py: PyTorch, CuPy, JAX) natively and through
#    kerneletd, results compared, time per step                      -> frameworks.md
# 3. each workload as two tenants at once through kerneletd (TWO=0 skips; TWO_WORKLOADS
#    names them), each result against the native one                 -> two-tenants.md
# 4. kernelet-proto-bench natively and through kerneletd             -> transport.txt
# Framework tenants ask for GPU contexts of their own (isolation tier) unless FENCE=0.
# The daemon's log is kept (kerneletd.log): unsupported entry points are named there.
set -u
carry=$(cd "${1:?usage: run.sh CARRY_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
work=$out/frameworks
mkdir -p "$work"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
stage() { echo "== $* ($(date -u +%T))"; }
{ nvidia-smi -L; date -u; python3 -c 'import torch; print("torch", torch.__version__)'; \
  python3 -c 'import cupy; print("cupy", cupy.__version__)'; \
  python3 -c 'import jax; print("jax", jax.__version__)'; } >"$work/machine.txt" 2>&1
cat "$work/machine.txt"

sock=$work/kerneletd.sock
# The frameworks' kernels are SASS-only (no PTX to fence), which a fencing kerneletd refuses
# in its shared context: their tenants ask for a context of their own (KERNELET_ISOLATE=1,
# the isolation tier, docs/SECURITY.md) from the default, fencing daemon. FENCE=0 runs them
# unfenced in the shared context instead (kerneletd --no-fence), as before the tier. The
# compatibility programs (PTX) run fenced in the shared context, as tenants get them by
# default; sass_module runs there (refused) and isolated (must pass).
fence_opt=; isolate=1
[ "${FENCE:-1}" = 0 ] && { fence_opt=--no-fence; isolate=0; }
start_kerneletd() {     # start_kerneletd [FENCE_OPTION]
    LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64" \
        "$carry/bin/kerneletd" --socket "$sock" --backend cuda "$@" \
        --calibration "$carry/calibration" >>"$work/kerneletd.log" 2>&1 &
    kd=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
    [ -S "$sock" ] || { echo "kerneletd did not start"; cat "$work/kerneletd.log"; exit 1; }
}
start_kerneletd
# After a tenant: when kerneletd has ended, $died says how and a new one starts.
check_daemon() {
    died=
    if kill -0 "$kd" 2>/dev/null && [ "$(ps -o stat= -p "$kd" | cut -c1)" != Z ]; then
        # a daemon that lost the device executes itself anew: wait for its socket
        for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
    fi
    wait "$kd"; died=" (kerneletd ended: exit $?)"
    echo "kerneletd$died" >>"$work/kerneletd.log"
    rm -f "$sock"; start_kerneletd
}
# One program natively, or as a tenant: our libcuda.so.1 ahead of NVIDIA's, the daemon's
# socket. NATIVE=0 skips the native runs (their results from an earlier round are used).
each() { timeout "${EACH_S:-150}" "$@" 2>&1 | tail -n 40; }   # torch_mlp took ~100 s through kerneletd
tenant() { each env LD_LIBRARY_PATH="$carry/libcuda" KERNELET_SOCKET="$sock" "$@"; }
fw_tenant() { tenant env KERNELET_ISOLATE=$isolate "$@"; }   # a framework's tenant
native() { [ "${NATIVE:-1}" = 1 ] && each "$@"; }

stage "1. compatibility programs"
# fault last, then vector_add again: does a device fault cost later tenants the GPU?
# COMPAT="a b" and WORKLOADS="x y" in the environment run only those.
# (runaway, steal, smash and smem_probe are no compatibility programs: contain.sh runs them)
progs=${COMPAT:-$(ls "$carry/compat" | grep -vx 'fault\|runaway\|steal\|smash\|smem_probe\|residue') fault vector_add}
{
    echo "| program | native | through kerneletd |"; echo "|---|---|---|"
    for n in $progs; do
        p=$carry/compat/$n
        a=$(native "$p" | grep -E '^(PASS|FAIL|SASS-ONLY|SASS-REFUSED|WAIVED|UNSUPPORTED)' | tail -n 1)
        b=$(tenant "$p" | grep -E '^(PASS|FAIL|SASS-ONLY|SASS-REFUSED|WAIVED|UNSUPPORTED)' | tail -n 1)
        check_daemon
        echo "| $n | ${a:-no verdict} | ${b:-no verdict}$died |"
    done
    # with a context of their own: SASS runs, kernels read mapped pinned memory, and
    # cooperative groups reach the driver's grid barrier (unfenced), and virtual memory
    # management is served
    for n in ${ISOLATED_COMPAT:-sass_module mapped_memory cooperative vmm tensor_map}; do
        b=$(tenant env KERNELET_ISOLATE=1 "$carry/compat/$n" | grep -E '^(PASS|FAIL|SASS-ONLY|UNSUPPORTED)' | tail -n 1)
        check_daemon
        echo "| $n, isolated (KERNELET_ISOLATE=1) | (above) | ${b:-no verdict}$died |"
    done
} >"$work/compat.md"
cat "$work/compat.md"

# The fault may have cost the daemon its context (issue 15): a fresh one for the rest.
kill "$kd"; wait "$kd" 2>/dev/null; rm -f "$sock"
start_kerneletd $fence_opt
stage "2. framework workloads"
w="$carry/workloads.py"
: >"$work/kerneletd.txt"
for name in ${WORKLOADS:-$(python3 "$w" list)}; do
    native python3 "$w" run "$name" >>"$work/native.txt"
    fw_tenant python3 "$w" run "$name" >>"$work/kerneletd.txt"
    grep "name=$name " "$work/kerneletd.txt" | tail -n 1
done
[ -s "$work/native.txt" ] || cp "$carry/native.txt" "$work/native.txt" 2>/dev/null
python3 "$w" compare "$work/native.txt" "$work/kerneletd.txt" >"$work/frameworks.md"
echo "compare: exit $?"; cat "$work/frameworks.md"

if [ "${TWO:-1}" = 1 ]; then
    stage "3. two tenants at once"
    # each workload as two processes at once (TWO_WORKLOADS, default the workloads above),
    # each result against the native one; the daemon's view while the first pair runs
    # (isolated: two workers)
    row() { python3 "$w" compare "$work/native.txt" "$1" | grep "^| $2 |" | cut -d'|' -f4,6; }
    {
        echo "| workload | tenant A: ms/step, result | tenant B: ms/step, result |"
        echo "|---|---|---|"
        for name in ${TWO_WORKLOADS:-${WORKLOADS:-$(python3 "$w" list)}}; do
            fw_tenant python3 "$w" run "$name" >"$work/two-a-$name.txt" &
            a=$!
            fw_tenant python3 "$w" run "$name" >"$work/two-b-$name.txt" &
            b=$!
            if [ ! -s "$work/status-two.txt" ]; then
                for _ in $(seq 60); do
                    LD_LIBRARY_PATH="$carry/lib" "$carry/bin/kernelet-ctl" --socket "$sock" \
                        status >"$work/status-two.txt" 2>&1
                    [ "$(grep -c python3 "$work/status-two.txt")" -ge 2 ] && break
                    sleep 1
                done
            fi
            wait "$a" "$b"
            check_daemon
            echo "| $name | $(row "$work/two-a-$name.txt" "$name") | $(row "$work/two-b-$name.txt" "$name")$died |"
        done
    } >"$work/two-tenants.md"
    cat "$work/two-tenants.md"
fi
LD_LIBRARY_PATH="$carry/lib" "$carry/bin/kernelet-ctl" --socket "$sock" status >"$work/status.txt" 2>&1
kill "$kd"; wait "$kd" 2>/dev/null
# 4. the transport (PROTO=0 skips): launch round trip and rate, 64 MiB copies pageable
#    and pinned, natively and through a fresh kerneletd (docs/perf/transport.md)
if [ "${PROTO:-1}" = 1 ] && [ -x "$carry/bin/kernelet-proto-bench" ]; then
    stage "4. transport"
    LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64" \
        KERNELETD_ARGS="--calibration $carry/calibration" \
        timeout 300 sh "$carry/run_proto_bench.sh" "$carry/bin/kerneletd" "$carry/libcuda" \
        "$carry/bin/kernelet-proto-bench" --repeat=11 >"$work/transport.txt" 2>&1
    cat "$work/transport.txt"
fi
grep -ciE "unsupported|not supported" "$work/kerneletd.log" | sed 's/^/log lines naming unsupported calls: /'
grep -iE "unsupported|not supported" "$work/kerneletd.log" | sort | uniq -c | sort -rn | head -n 30
stage done
tar -C "$out" -czf "$out/frameworks.tar.gz" frameworks && rm -rf "$work"
