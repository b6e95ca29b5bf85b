#!/bin/sh
# kernelet-proto-bench on the GPU, natively (NVIDIA's driver) and through our libcuda and
# kerneletd --backend cuda; prints both RESULT lines and the ratios the issue sets targets
# for (sync launch <= 20 us, async >= 200000/s, 64 MiB copies >= 80% of native pageable).
#   run_proto_bench.sh KERNELETD LIBCUDA_DIR PROTO_BENCH [bench options]
# Exits 77 without an NVIDIA GPU or when kerneletd has no cuda backend.
set -u
kd=${1:?usage: run_proto_bench.sh KERNELETD LIBCUDA_DIR PROTO_BENCH [options]}
lib=${2:?}; bench=${3:?}; shift 3
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
dir=$(mktemp -d)
trap 'kill "$kdpid" 2>/dev/null; rm -rf "$dir"' EXIT
native=$("$bench" --label=native "$@") || exit 1
echo "$native"
# shellcheck disable=SC2086
"$kd" --socket "$dir/k.sock" --backend cuda ${KERNELETD_ARGS:-} >"$dir/kd.log" 2>&1 &
kdpid=$!
while [ ! -S "$dir/k.sock" ]; do
    kill -0 "$kdpid" 2>/dev/null || { cat "$dir/kd.log"; grep -q "not built" "$dir/kd.log" && exit 77; exit 1; }
    sleep 0.05
done
ours=$(KERNELET_SOCKET="$dir/k.sock" LD_LIBRARY_PATH="$lib" "$bench" --label=kernelet "$@") || exit 1
echo "$ours"
# with KERNELET_LATENCY=1 the daemon logs where lone launches' time went
kill "$kdpid"; wait "$kdpid" 2>/dev/null
grep 'lone launches' "$dir/kd.log"
python3 - "$native" "$ours" <<'PY'
import sys
def parse(text):
    line = [l for l in text.splitlines() if l.startswith("RESULT")][0]
    return {k: float(v) for k, v in (kv.split("=") for kv in line.split()[1:]) if k != "label"}
n, k = parse(sys.argv[1]), parse(sys.argv[2])
print("sync launch round trip: %.2f us (native %.2f us; target <= 20 us)"
      % (k["sync_launch_us"], n["sync_launch_us"]))
print("async launch rate: %.0f /s (native %.0f /s; target >= 200000 /s)"
      % (k["async_launches_per_s"], n["async_launches_per_s"]))
for d in ("h2d", "d2h"):
    print("64 MiB %s: %.2f GB/s pageable, %.2f pinned = %.0f%% of native pageable %.2f GB/s (target >= 80%%)"
          % (d.upper(), k[d + "_pageable_gbs"], k[d + "_pinned_gbs"],
             100 * k[d + "_pageable_gbs"] / n[d + "_pageable_gbs"], n[d + "_pageable_gbs"]))
PY
