#!/bin/sh
# A lost device on the GPU (issue: tenant isolation), from a folder made by pack.sh:
#   recover.sh CARRY_DIR OUT_DIR
# One kerneletd --backend cuda --no-fence (unfenced, a wild store really faults): a tenant
# runs bench/compat/fault (an illegal address), which loses the shared context; a bystander
# connected before sees its connection end; then vector_add, grids and a bench program must
# run and verify on the fresh context the daemon makes. Prints what each saw and the
# daemon's log; everything lands in OUT_DIR/recover.tar.gz.
set -u
carry=$(cd "${1:?usage: recover.sh CARRY_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
work=$out/recover
mkdir -p "$work"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
backend=${BACKEND:-cuda}
if [ "$backend" = cuda ] && ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
sock=$work/k.sock
"$carry/bin/kerneletd" --socket "$sock" --backend "$backend" --no-fence \
    --calibration "$carry/calibration" >"$work/kerneletd.log" 2>&1 &
kd=$!
i=0
while [ ! -S "$sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
tenant() { KERNELET_SOCKET=$sock LD_LIBRARY_PATH="$carry/libcuda" timeout 120 "$@"; }
status=0
tenant "$carry/compat/vector_add" >"$work/before.txt" 2>&1
rc=$?
[ $rc = 0 ] || status=1
echo "before the fault: vector_add exit $rc"
# a bystander that keeps its connection open across the fault
tenant "$carry/bench/burn" --launches=4000 >"$work/bystander.txt" 2>&1 &
by=$!
sleep 1
tenant "$carry/compat/fault" >"$work/fault.txt" 2>&1
echo "faulting tenant: exit $? ($(tail -1 "$work/fault.txt"))"
wait "$by"; echo "bystander across the fault: exit $? ($(tail -1 "$work/bystander.txt"))"
# the daemon serves again in-process or after executing itself anew: wait for that
t0=$(date +%s.%N)
i=0
while [ "$(grep -c '^kerneletd: serving' "$work/kerneletd.log")" -lt 2 ] && [ $i -lt 400 ]; do
    sleep 0.05; i=$((i + 1))
done
echo "serving again after $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"
for p in compat/vector_add compat/grids bench/tea; do
    tenant "$carry/$p" >"$work/after-$(basename "$p").txt" 2>&1
    rc=$?
    [ $rc = 0 ] || status=1
    echo "after: $p exit $rc ($(tail -1 "$work/after-$(basename "$p").txt"))"
done
kill -0 "$kd" 2>/dev/null && echo "kerneletd still running" || { echo "kerneletd ENDED"; status=1; }
kill "$kd"; wait "$kd"; echo "kerneletd stopped: exit $?"
cat "$work/kerneletd.log"
tar -C "$out" -czf "$out/recover.tar.gz" recover && rm -rf "$work"
exit $status
