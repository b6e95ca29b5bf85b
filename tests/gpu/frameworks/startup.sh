#!/bin/sh
# Where a framework tenant's time goes before its first step (issue 14: torch_mlp took
# ~100 s through kerneletd), and what the transport's round trip costs with the daemon's
# features on and off (issue 13), from a folder made by pack.sh:
#   startup.sh CARRY_DIR OUT_DIR [WORKLOAD...]      (default: torch_mlp torch_matmul_fp32)
# 1. each workload natively and as an isolated tenant with KERNELET_STATS=1 (our libcuda
#    prints the requests it waited for, by opcode): wall-clock seconds of each run, the
#    table, and the worker's lines of the daemon's log               -> startup.md
# 2. kernelet-proto-bench through kerneletd with its defaults, --no-fence,
#    --kernel-time-limit 0 and --policy fifo, or TRANSPORT_VARIANTS (TRANSPORT=0 skips)
#                                                                     -> transport.md
# STARTUP=0 skips step 1. Everything lands in OUT_DIR/startup.tar.gz.
set -u
carry=$(cd "${1:?usage: startup.sh CARRY_DIR OUT_DIR [WORKLOAD...]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
shift 2
work=$out/startup
mkdir -p "$work"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
klib="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
sock=$work/kerneletd.sock
LD_LIBRARY_PATH="$klib" "$carry/bin/kerneletd" --socket "$sock" --backend cuda \
    --calibration "$carry/calibration" >"$work/kerneletd.log" 2>&1 &
kd=$!
trap 'kill "$kd" 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
secs() { python3 -c 'import time; print("%.1f" % time.monotonic())'; }
[ "${STARTUP:-1}" = 1 ] && {
    echo "| workload | native s | native result | through kerneletd s | result |"
    echo "|---|---|---|---|---|"
    for name in ${*:-torch_mlp torch_matmul_fp32}; do
        t0=$(secs)
        a=$(timeout 200 python3 "$carry/workloads.py" run "$name" 2>&1 | grep '^RESULT' | cut -c1-100)
        t1=$(secs)
        env LD_LIBRARY_PATH="$carry/libcuda" KERNELET_SOCKET="$sock" KERNELET_ISOLATE=1 \
            KERNELET_STATS=1 timeout 200 python3 "$carry/workloads.py" run "$name" \
            >"$work/$name.txt" 2>&1
        t2=$(secs)
        b=$(grep '^RESULT' "$work/$name.txt" | cut -c1-100)
        d() { python3 -c "print('%.1f' % ($2 - $1))"; }
        echo "| $name | $(d "$t0" "$t1") | $a | $(d "$t1" "$t2") | $b |"
    done
    for name in ${*:-torch_mlp torch_matmul_fp32}; do
        echo; echo "### $name through kerneletd: requests waited for"; echo; echo '```'
        sed -n '/requests to kerneletd/,$p' "$work/$name.txt" | head -n 40
        echo '```'
    done
} >"$work/startup.md" 2>&1
[ -f "$work/startup.md" ] && cat "$work/startup.md"
kill "$kd"; wait "$kd" 2>/dev/null
# TRANSPORT_VARIANTS: variants separated by ';', each kerneletd options and NAME=value
# settings for the daemon and the benchmark joined by '@' ("" = the defaults)
variants=${TRANSPORT_VARIANTS:-";--no-fence;--kernel-time-limit@0;--policy@fifo"}
[ "${TRANSPORT:-1}" = 1 ] && {
    echo "$variants" | tr ';' '\n' | while IFS= read -r v; do
        opts=; envs=
        for t in $(echo "$v" | tr '@' ' '); do
            case $t in [A-Z]*=*) envs="$envs $t" ;; *) opts="$opts $t" ;; esac
        done
        echo "### kerneletd ${opts:-(defaults)}${envs:+, environment$envs}"; echo; echo '```'
        # shellcheck disable=SC2086
        env $envs LD_LIBRARY_PATH="$klib" KERNELETD_ARGS="--calibration $carry/calibration $opts" \
            timeout 200 sh "$carry/run_proto_bench.sh" "$carry/bin/kerneletd" "$carry/libcuda" \
            "$carry/bin/kernelet-proto-bench" --repeat=7 2>&1 | grep -E '^RESULT|round trip|rate|64 MiB|lone launches'
        echo '```'
    done
} >"$work/transport.md"
[ -f "$work/transport.md" ] && cat "$work/transport.md"
tar -C "$out" -czf "$out/startup.tar.gz" startup && rm -rf "$work"
