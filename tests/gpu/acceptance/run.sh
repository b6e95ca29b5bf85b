#!/bin/sh
# One round of the scheduling acceptance on the GPU machine, from a folder made by pack.sh:
#   run.sh CARRY_DIR OUT_DIR [MIXES] [REPEATS]
# 1. tests/gpu/cuda/run.sh (packed as cuda-checks.sh): calibration, backend-check (the cuda
#    backend, its trial and fault handling), profile-kernels (CUPTI against Nsight
#    Compute's table, with the metric names this chip offers)
# 2. kernelet-tenants: the mixes as separate tenant processes: serial, separate, MPS,
#    kerneletd fifo/base/kernelet/opt (profiled online, no profile file)
# Everything lands in OUT_DIR/acceptance.tar.gz (the device tool brings back few files).
set -u
carry=$(cd "${1:?usage: run.sh CARRY_DIR OUT_DIR [MIXES] [REPEATS]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
mixes=${3:-burn+stream,tea+pc}
repeats=${4:-1}
work=$out/acceptance
mkdir -p "$work"
if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
stage() { echo "== $* ($(date -u +%T))"; }

stage "the cuda backend's checks (tests/gpu/cuda/run.sh)"
sh "$carry/cuda-checks.sh" "$carry" "$work" >"$work/cuda-checks.txt" 2>&1
echo "exit $?"; grep -E "^(calibration|backend-check|profile-kernels):|^FAILED|signal" \
    "$work/cuda-checks.txt"

stage kernelet-tenants "$mixes"
python3 "$carry/kernelet-tenants" --carry "$carry" --mix "$mixes" --repeats "$repeats" \
    --out "$work/tenants" >"$work/tenants.md" 2>"$work/tenants.log"
echo "kernelet-tenants: exit $?"; cat "$work/tenants.log" "$work/tenants.md"
stage done
tar -C "$out" -czf "$out/acceptance.tar.gz" acceptance && rm -rf "$work"
