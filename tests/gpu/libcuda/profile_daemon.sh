#!/bin/sh
# Where kerneletd's CPU time goes while kernelet-proto-bench runs through it (the sync
# round trip and the async launch rate, issue 13), from a folder made with
#   scripts/device-pack DEST build/host-sched/daemon/kerneletd \
#       build/host-sched/daemon/kerneletd-cuda.so build/guest-driver/libcuda/kernelet-proto-bench /usr/bin/perf
# plus DEST/libcuda/libcuda.so.1 and DEST/calibration (the GPU machine has no perf):
#   profile_daemon.sh CARRY_DIR OUT_DIR [PHASE]     PHASE: sync | async (default both)
# KERNELETD_ARGS adds options to the daemon (e.g. "--policy fifo --cpus 0-7").
# perf samples user-space cycles of the daemon's threads (cpu-clock, no kernel: the
# machine allows no more); the flat profile by symbol, and by thread, lands in
# OUT_DIR/profile.txt, the proto-bench lines in the same file.
set -u
# shellcheck disable=SC2086
carry=$(cd "${1:?usage: profile_daemon.sh CARRY_DIR OUT_DIR [PHASE]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
export LD_LIBRARY_PATH="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64"
work=$(mktemp -d)
sock=$work/k.sock
"$carry/bin/perf" record -e cpu-clock:u -F 9999 -o "$work/perf.data" -- \
    "$carry/bin/kerneletd" --socket "$sock" --backend cuda --calibration "$carry/calibration" \
    ${KERNELETD_ARGS:-} >"$work/kd.log" 2>&1 &
pp=$!
i=0; while [ ! -S "$sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
args="--repeat=3"
case ${3:-both} in
    sync) args="$args --iterations=20000 --launches=1" ;;
    async) args="$args --iterations=1 --launches=200000" ;;
esac
# shellcheck disable=SC2086
KERNELET_SOCKET=$sock LD_LIBRARY_PATH="$carry/libcuda" "$carry/bin/kernelet-proto-bench" \
    --label=kernelet $args >"$work/bench.txt" 2>&1
pkill -INT -f "bin/kerneletd --socket $sock"
wait "$pp"
{
    cat "$work/bench.txt"
    echo "== by symbol"
    "$carry/bin/perf" report -i "$work/perf.data" --stdio --sort dso,sym 2>/dev/null | grep -v '^#' | head -70
    echo "== by thread"
    "$carry/bin/perf" report -i "$work/perf.data" --stdio --sort pid 2>&1 | grep -v '^#' | grep . | head -30
    # the three busiest threads, each by symbol
    for t in $("$carry/bin/perf" report -i "$work/perf.data" --stdio --sort pid 2>/dev/null |
               grep -v '^#' | grep . | head -3 | sed -n 's/^ *[0-9.]*% *\([0-9][0-9]*\):.*/\1/p'); do
        echo "== thread $t"
        "$carry/bin/perf" report -i "$work/perf.data" --stdio --tid "$t" --sort dso 2>/dev/null |
            grep -v '^#' | grep . | head -8
        "$carry/bin/perf" report -i "$work/perf.data" --stdio --tid "$t" --sort dso,sym 2>/dev/null |
            grep -v '^#' | grep . | head -25
    done
    echo "== daemon log"
    tail -20 "$work/kd.log"
} >"$out/profile.txt" 2>&1
cat "$out/profile.txt" | head -150
rm -rf "$work"
