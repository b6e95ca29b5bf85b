#!/bin/sh
# One round of acceptance checks on the GPU machine, from a folder made by pack.sh, each
# step's table in OUT_DIR/round.txt and everything it left in OUT_DIR/round.tar.gz (the
# device tool brings back at most 8 files):
#   round.sh CARRY_DIR OUT_DIR STEP...
# Steps: contain (contain.sh, limit 2 s), fence (fence.sh: the bench programs natively,
# fenced and unfenced), pairs:MIXES:REPEATS:MODES (pairs.sh with SWEEP=0; MODES uses ','
# as pairs.sh does), streams:OPTS;OPTS... (compat/streams_concurrent natively, with 32
# hardware queues, and through a kerneletd started with each set of options),
# proto:OPTS;OPTS... (kernelet-proto-bench natively and through kerneletd with each),
# bench:OPTS (kernelet-bench on the backend, real data, every output checked, with OPTS,
# e.g. "bench:--instances 50 --workload all --policy fifo,base,kernelet"), driver (the
# driver's own cost of the calls the cuda backend makes per launch: driver-rates), stack
# (what stacksave reads at each depth of a recursion: stack-probe), compat:OPTS (every
# compatibility program natively and through a kerneletd started with OPTS, each with
# what it printed last).
# BACKEND=emu tries the round without a GPU.
set -u
carry=$(cd "${1:?usage: round.sh CARRY_DIR OUT_DIR STEP...}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
shift 2
work=$out/round
mkdir -p "$work"
backend=${BACKEND:-cuda}
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# through OPTS PROGRAM ARGS...: PROGRAM as a tenant of a fresh kerneletd started with OPTS
through() {
    opts=$1; shift
    sock=$work/t.sock; rm -f "$sock"
    # shellcheck disable=SC2086
    "$carry/bin/kerneletd" --socket "$sock" --backend "$backend" \
        --calibration "$carry/calibration" $opts >>"$work/kerneletd-through.log" 2>&1 &
    kd=$!
    i=0; while [ ! -S "$sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    KERNELET_SOCKET=$sock LD_LIBRARY_PATH="$carry/libcuda" timeout 120 "$@"
    kill "$kd"; wait "$kd" 2>/dev/null
}

streams_step() {
    echo "| way | result |"; echo "|---|---|"
    if [ "$backend" = cuda ]; then
        echo "| native | $("$carry/compat/streams_concurrent" | grep RESULT) |"
        echo "| native, 32 queues | $(CUDA_DEVICE_MAX_CONNECTIONS=32 "$carry/compat/streams_concurrent" | grep RESULT) |"
    fi
    echo "$1" | tr ';' '\n' | while read -r opts; do
        echo "| kerneletd $opts | $(through "$opts" "$carry/compat/streams_concurrent" | grep RESULT) |"
    done
}

# A program's verdict: its PASS/FAIL/UNSUPPORTED/SASS-ONLY line, else its last line.
verdict() {
    out=$("$@" 2>&1)
    line=$(printf '%s\n' "$out" | grep -E '^(PASS|FAIL|UNSUPPORTED|SASS-ONLY)' | head -1)
    printf '%s\n' "${line:-$(printf '%s\n' "$out" | tail -1)}" | cut -c1-80
}

# Every compatibility program but contain.sh's attacks and probe (a partner, no end natively, arguments).
compat_step() {
    echo "| program | native | kerneletd $1 |"; echo "|---|---|---|"
    for prog in "$carry"/compat/*; do
        name=${prog##*/}
        case $name in runaway|steal|smash|smem_probe|residue) continue ;; esac
        native=-
        [ "$backend" = cuda ] && native=$(verdict timeout 60 "$prog")
        echo "| $name | $native | $(verdict through "$1" "$prog") |"
    done
}

proto_step() {
    echo "$1" | tr ';' '\n' | while read -r opts; do
        echo "| kerneletd $opts |"
        KERNELETD_ARGS="--calibration $carry/calibration $opts" sh "$carry/run_proto_bench.sh" \
            "$carry/bin/kerneletd" "$carry/libcuda" "$carry/bin/kernelet-proto-bench" \
            --repeat=5 | grep -E 'RESULT|round trip|rate'
    done
}
for step in "$@"; do
    echo "== $step ($(date -u +%T))" | tee -a "$out/round.txt"
    case $step in
    contain) timeout 300 sh "$carry/contain.sh" "$carry" "$work" 2 ;;
    fence) timeout 400 sh "$carry/fence.sh" "$carry" "$work" ;;
    pairs:*)
        rest=${step#pairs:}; mixes=${rest%%:*}; rest=${rest#*:}; repeats=${rest%%:*}
        modes=${rest#*:}
        SWEEP=0 timeout 500 sh "$carry/pairs.sh" "$carry" "$work" "$mixes" "$repeats" "$modes" ;;
    streams:*) streams_step "${step#streams:}" ;;
    proto:*) proto_step "${step#proto:}" ;;
    compat:*) compat_step "${step#compat:}" ;;
    bench:*)
        # shellcheck disable=SC2086
        LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64" \
            timeout 500 "$carry/bin/kernelet-bench" --backend "$backend" \
            --ptx-dir "$carry/bench/ptx" --out "$work/bench" --quiet ${step#bench:}
        echo "kernelet-bench exit $?" ;;
    driver) timeout 300 "$carry/bin/driver-rates" ;;
    stack) timeout 60 "$carry/bin/stack-probe" | sed 's/^/| /' ;;
    *) echo "round.sh: unknown step $step" ;;
    esac 2>&1 | tee -a "$out/round.txt" |
        grep -E '^\||^==|failed|passed|RESULT|round trip|rate|^(fifo|base|kernelet|opt) |outputs|kernelet-bench' || true
done
pkill -9 kerneletd 2>/dev/null
tar -C "$out" -czf "$out/round.tar.gz" round && rm -rf "$work"
