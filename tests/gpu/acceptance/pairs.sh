#!/bin/sh
# One round on the GPU machine for the pair plans (docs/perf/scheduling.md), from a folder
# made by pack.sh:
#   pairs.sh CARRY_DIR OUT_DIR [MIXES] [REPEATS] [MODES]
# 1. pair-sweep: what burn and stream give side by side with no scheduler (SWEEP=0: not),
#    and pair-probe: the same with kerneletd's own sliced kernels, JIT-compiled;
# 2. kernelet-tenants: the mixes as separate tenant processes in MODES (default: serial,
#    separate, MPS, kerneletd base and kernelet with one-wave pair slices, the paper's
#    equal-time slices and the hand-found 4:4 split), each with its GPU timeline.
# The GPU's clocks, power and throttle reasons are sampled all along (smi.csv): a pair that
# draws more power may run at lower clocks. Everything lands in OUT_DIR/pairs.tar.gz (the
# device tool brings back few files).
set -u
carry=$(cd "${1:?usage: pairs.sh CARRY_DIR OUT_DIR [MIXES] [REPEATS] [MODES]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
mixes=${3:-burn+stream,MIX}
repeats=${4:-2}
modes=${5:-serial,separate,mps,kd-base,kd-kernelet,kd-kernelet@--pair-waves=0,kd-kernelet@--pair-split=4:4}
backend=${BACKEND:-cuda}
work=$out/pairs
mkdir -p "$work"
stage() { echo "== $* ($(date -u +%T))"; }
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

smi=
if [ "$backend" = cuda ]; then
    if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_throttle_reasons.active \
        --format=csv -lms 100 >"$work/smi.csv" 2>&1 &
    smi=$!
fi
if [ "$backend" = cuda ] && [ "${SWEEP:-1}" = 1 ]; then
    stage pair-sweep
    timeout 120 "$carry/bin/pair-sweep" 20 >"$work/pair-sweep.md" 2>&1
    echo "pair-sweep: exit $?"; cat "$work/pair-sweep.md"
    stage pair-probe
    timeout 120 "$carry/bin/pair-probe" "$carry/bench/ptx/tenant-burn-sliced.ptx" \
        "$carry/bench/ptx/tenant-stream-sliced.ptx" 20 >"$work/pair-probe.md" 2>&1
    echo "pair-probe: exit $?"; cat "$work/pair-probe.md"
fi
small=; [ "$backend" = cuda ] || small=--small

stage kernelet-tenants "$mixes" "$modes"
python3 "$carry/kernelet-tenants" --carry "$carry" --mix "$mixes" --repeats "$repeats" \
    --modes "$modes" --backend "$backend" $small --out "$work/tenants" \
    >"$work/tenants.md" 2>"$work/tenants.log"
echo "kernelet-tenants: exit $?"; cat "$work/tenants.log" "$work/tenants.md"
stage done
[ -n "$smi" ] && kill "$smi"
tar -C "$out" -czf "$out/pairs.tar.gz" pairs && rm -rf "$work"
