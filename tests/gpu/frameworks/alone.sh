#!/bin/sh
# One tenant alone (issue 13: at most 10% slower than native): each of the paper's eight
# bench programs at its default size natively and then through a kerneletd --backend cuda
# of its own, the median milliseconds per kernel as the program measures it (CUDA events
# around each launch, waited for one at a time) and the wall-clock span of its timed
# launches, from a folder made by pack.sh:
#   alone.sh CARRY_DIR OUT_DIR [PROGRAM...]      (default: the eight)
# KERNELETD_ARGS adds options to the daemon. Everything lands in OUT_DIR/alone.tar.gz.
set -u
carry=$(cd "${1:?usage: alone.sh CARRY_DIR OUT_DIR [PROGRAM...]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
shift 2
work=$out/alone
mkdir -p "$work"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
klib="$carry/lib:/usr/local/cuda/extras/CUPTI/lib64:/usr/local/cuda/lib64"
sock=$work/kerneletd.sock
# shellcheck disable=SC2086
LD_LIBRARY_PATH="$klib" "$carry/bin/kerneletd" --socket "$sock" --backend cuda \
    --calibration "$carry/calibration" ${KERNELETD_ARGS:-} >"$work/kerneletd.log" 2>&1 &
kd=$!
trap 'kill "$kd" 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
span_ms() { python3 -c "print('%.2f' % ((int('$2') - int('$1')) / 1e6))" 2>/dev/null; }
{
    echo "| program | native ms/kernel | through kerneletd | overhead | native span ms | through kerneletd | overhead | verified |"
    echo "|---|---|---|---|---|---|---|---|"
    for p in ${*:-pc sad spmv st mm mriq bs tea}; do
        a=$(timeout 300 "$carry/bench/$p" --repeat=50 2>&1 | grep '^RESULT')
        b=$(env LD_LIBRARY_PATH="$carry/libcuda" KERNELET_SOCKET="$sock" timeout 300 \
            "$carry/bench/$p" --repeat=50 2>&1 | grep '^RESULT')
        echo "$a" >>"$work/native.txt"; echo "$b" >>"$work/kerneletd.txt"
        ka=$(field "$a" kernel_ms); kb=$(field "$b" kernel_ms)
        sa=$(span_ms "$(field "$a" t0_ns)" "$(field "$a" t1_ns)")
        sb=$(span_ms "$(field "$b" t0_ns)" "$(field "$b" t1_ns)")
        pct() { [ -n "$1" ] && [ -n "$2" ] && python3 -c "print('%+.0f%%' % (100 * ($2 / $1 - 1)))" 2>/dev/null || echo -; }
        echo "| $p | $ka | $kb | $(pct "$ka" "$kb") | $sa | $sb | $(pct "$sa" "$sb") | $(field "$a" verified) / $(field "$b" verified) |"
    done
} >"$work/alone.md" 2>&1
cat "$work/alone.md"
kill "$kd"; wait "$kd" 2>/dev/null
tar -C "$out" -czf "$out/alone.tar.gz" alone && rm -rf "$work"
