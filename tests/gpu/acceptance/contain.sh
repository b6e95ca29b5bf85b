#!/bin/sh
# Fault and hang containment on the GPU (issue: tenant isolation), from a folder made by
# pack.sh:
#   contain.sh CARRY_DIR OUT_DIR [LIMIT_S]
# One kerneletd --backend cuda, fenced (the default), with a kernel time limit of LIMIT_S
# seconds (default 2). While a bystander (bench/burn) runs:
#   1. runaway: a kernel that never ends must end with cudaErrorLaunchTimeout soon after the
#      limit (the watchdog raises the tenant's cancel word, the kernel's loop polls it),
#      once spinning on a flag (a counting poll), once in a counted loop (strip-mined) and
#      once in such a loop inside a device function that is not inlined, once in a
#      recursion with no loop (2^30 calls a thread, polled where it is entered); a recursion
#      without end must fail (cudaErrorLaunchFailure, as natively; or the limit's timeout
#      where its profiled first launch outlasts the limit), stopped by the stack guard
#      before the thread's stack overflows, which would lose the context; and, under a
#      second daemon without a limit, one whose limit the operator lowers while it runs;
#   2. device_assert: a device assert must give cudaErrorAssert (the fencing pass turned it
#      into a fault word and an exit);
#   3. printf: device printf on the tenant's stdout, checked by check_printf.py;
#   4. steal: a tenant's kernel given another tenant's device address (two processes)
#      must get none of its words and change none, also with the address 2 bytes off
#      (every word access misaligned: natively a sticky error, fenced it is aligned), and
#      1 GiB off (fenced into a part of the thief's window that holds no allocation);
#   5. smash: a tenant's kernel that writes 1 MiB past its block's __shared__ array, 2 bytes
#      into its word (misaligned), or past it through a generic pointer or through cp.async
#      (natively each a sticky error that ends the context) must complete and find its array
#      as the fence's clamp leaves it (bench/compat/smash.cu), while tea runs beside it and
#      verifies, and the context must survive it;
#   6. residue: one tenant's kernel leaves a secret in its blocks' shared memory, local
#      memory and registers; another tenant's kernel must find none of it in the shared
#      and local memory it reads without writing, nor below its frame (the fence zeroes a
#      block's shared memory and a function's local variables before the tenant's code
#      runs, and clamps local addresses into the thread's frames), nor in the whole of its
#      frame (spill slots PTX does not name: the fence zeroes an entry's frame), and a local
#      store 1 MiB out of bounds must complete; registers are reported, not judged, as is
#      what the GPU leaves natively (one process: plant then read; the words below a
#      thread's stack; a local access 1 MiB out of bounds; the reader's frame)
#      (bench/compat/residue.cu);
#   7. smem_probe (natively, on the cuda backend): what the GPU says about a block's shared
#      memory (%total_smem_size, %dynamic_smem_size, %reserved_smem_offset_begin/end/cap,
#      the offsets of a static and of the dynamic array, the fence's limit), and whether
#      shared offset 0 and the word below the user's shared memory are the block's, as the
#      clamp assumes (docs/SECURITY.md);
# then the bystander must verify, vector_add and tea must run and verify afterwards, and
# the daemon must never have lost its context (one "serving" line in its log: no restart).
# Prints a table of what each saw; everything lands in OUT_DIR/contain.tar.gz.
set -u
carry=$(cd "${1:?usage: contain.sh CARRY_DIR OUT_DIR [LIMIT_S]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
limit=${3:-2}
work=$out/contain
mkdir -p "$work"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
backend=${BACKEND:-cuda}
small=; [ "$backend" = cuda ] || small=--small
if [ "$backend" = cuda ] && ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
sock=$work/k.sock
"$carry/bin/kerneletd" --socket "$sock" --backend "$backend" --kernel-time-limit "$limit" \
    --calibration "$carry/calibration" >"$work/kerneletd.log" 2>&1 &
kd=$!
trap 'kill "$kd" 2>/dev/null' EXIT    # never leave a daemon (and its kernels) behind
i=0
while [ ! -S "$sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
tenant() { KERNELET_SOCKET=$sock LD_LIBRARY_PATH="$carry/libcuda" timeout 120 "$@"; }
# the daemon's view every 2 s, for a run that goes wrong
(while kill -0 "$kd" 2>/dev/null; do
     date -u +%T; "$carry/bin/kernelet-ctl" --socket "$sock" status 2>&1 | tail -n +3
     [ "$backend" = cuda ] && nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader
     sleep 2
 done) >"$work/status.txt" 2>&1 &
fails=0
row() { # name, pass (0/1), what it saw
    echo "| $1 | $([ "$2" = 0 ] && echo yes || echo NO) | $3 |"
    [ "$2" = 0 ] || fails=$((fails + 1))
}
info() { # name, what it saw: a finding, not a check
    echo "| $1 | (seen) | $2 |"
}
result() { grep '^RESULT' "$1" || tail -1 "$1"; }
echo "| check | passed | what it saw |"
echo "|---|---|---|"
# burn takes about 1 ms a launch at its default size, fenced: ~8 s, across both runaways
launches=8000; [ "$backend" = cuda ] || launches=40
KERNELET_DEBUG=1 tenant "$carry/bench/burn" --launches=$launches $small >"$work/bystander.txt" 2>&1 &
by=$!
sleep 0.5
blocks=528; [ "$backend" = cuda ] || blocks=2
tenant "$carry/compat/runaway" $blocks >"$work/runaway.txt" 2>&1
row runaway $? "$(grep '^RESULT' "$work/runaway.txt" || tail -1 "$work/runaway.txt")"
tenant "$carry/compat/runaway" $blocks counted >"$work/runaway-counted.txt" 2>&1
row "runaway, counted loop" $? "$(grep '^RESULT' "$work/runaway-counted.txt" || tail -1 "$work/runaway-counted.txt")"
tenant "$carry/compat/runaway" $blocks function >"$work/runaway-function.txt" 2>&1
row "runaway, in a device function" $? "$(grep '^RESULT' "$work/runaway-function.txt" || tail -1 "$work/runaway-function.txt")"
tenant "$carry/compat/runaway" $blocks recursion >"$work/runaway-recursion.txt" 2>&1
row "runaway, a recursion with no loop" $? "$(grep '^RESULT' "$work/runaway-recursion.txt" || tail -1 "$work/runaway-recursion.txt")"
# the launch fails (its first launch, profiled under CUPTI's kernel replay, may instead
# run into the time limit: 2.4 s on the H100); the last row checks the context was kept
tenant "$carry/compat/runaway" $blocks deep >"$work/runaway-deep.txt" 2>&1
# and the log says which: the stack guard's fault, or the time limit
{ grep -q '^RESULT .*status=cudaErrorLaunchFailure ' "$work/runaway-deep.txt" &&
      grep -q 'deep_spin.*device stack overflow' "$work/kerneletd.log"; } ||
    { grep -q '^RESULT .*status=cudaErrorLaunchTimeout ' "$work/runaway-deep.txt" &&
      grep -q 'deep_spin.*time limit' "$work/kerneletd.log"; }
row "runaway, a recursion past the stack" $? "$(grep '^RESULT' "$work/runaway-deep.txt" || tail -1 "$work/runaway-deep.txt")"
# a limit lowered while the kernel runs: a second daemon with no limit, whose runaway
# tenant the operator then gives 0.5 s (kernelet-ctl set); it must end soon after
lsock=$work/l.sock
"$carry/bin/kerneletd" --socket "$lsock" --backend "$backend" --kernel-time-limit 0 \
    --calibration "$carry/calibration" >"$work/kerneletd-lowered.log" 2>&1 &
lkd=$!
i=0; while [ ! -S "$lsock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
KERNELET_SOCKET=$lsock LD_LIBRARY_PATH="$carry/libcuda" timeout 60 \
    "$carry/compat/runaway" $blocks counted >"$work/runaway-lowered.txt" 2>&1 &
rp=$!
sleep 2
id=$("$carry/bin/kernelet-ctl" --socket "$lsock" --json status | python3 -c '
import json, sys
print([t["id"] for t in json.load(sys.stdin)["tenants"] if t["name"].startswith("runaway")][0])')
lowered=$(date +%s.%N)
"$carry/bin/kernelet-ctl" --socket "$lsock" set "$id" time-limit=0.5
wait "$rp"; rc=$?
after=$(python3 -c "import time; print('%.2f' % (time.time() - $lowered))")
row "limit lowered while running" $rc "$(grep '^RESULT' "$work/runaway-lowered.txt" || tail -1 "$work/runaway-lowered.txt"); ended ${after} s after the limit was lowered"
kill "$lkd"; wait "$lkd" 2>/dev/null
tenant "$carry/compat/device_assert" >"$work/device_assert.txt" 2>&1
row device_assert $? "$(grep -v '^PASS' "$work/device_assert.txt" | tail -1)"
tenant "$carry/compat/printf" >"$work/printf.txt" 2>&1
rc=$?
python3 "$carry/check_printf.py" "$work/printf.txt" >"$work/printf-check.txt" 2>&1
[ $rc = 0 ] && rc=$?
row printf $rc "$(wc -l <"$work/printf.txt") lines; check: $(tail -1 "$work/printf-check.txt")"
# steal LABEL N [OFFSET]: a victim and a thief given the victim's address plus OFFSET
steal() {
    addr=$work/victim-address-$2
    tenant "$carry/compat/steal" victim "$addr" >"$work/victim-$2.txt" 2>&1 &
    vi=$!
    tenant "$carry/compat/steal" thief "$addr" ${3:-} >"$work/thief-$2.txt" 2>&1
    row "$1: thief" $? "$(grep '^RESULT' "$work/thief-$2.txt" || tail -1 "$work/thief-$2.txt")"
    wait "$vi"
    row "$1: victim" $? "$(grep '^RESULT' "$work/victim-$2.txt" || tail -1 "$work/victim-$2.txt")"
}
steal steal 1
# every word access misaligned (natively a sticky misaligned-address error): the fence
# aligns it into the thief's own window
steal "steal, misaligned" 2 2
# 1 GiB past it: fenced into the thief's window, past its allocations (a hole there was an
# illegal address that lost the shared context; now the window's sink is there)
steal "steal, into a hole of its window" 3 0x40000000
# shared memory: writes past the block's array or misaligned in it, clamped into the
# block's own shared memory, with a tenant beside it that must verify
tenant "$carry/bench/tea" $small >"$work/tea-beside-smash.txt" 2>&1 &
tp=$!
for m in past misaligned generic cp_async; do
    tenant "$carry/compat/smash" $m $blocks >"$work/smash-$m.txt" 2>&1
    row "smash, shared $m" $? "$(grep '^RESULT' "$work/smash-$m.txt" || tail -1 "$work/smash-$m.txt")"
done
wait "$tp"
grep -q 'verified=yes' "$work/tea-beside-smash.txt"
row "tea beside smash" $? "$(grep -o 'verified=[a-z]* kernel_ms=[0-9.]*' "$work/tea-beside-smash.txt")"
serving=$(grep -c '^kerneletd: serving' "$work/kerneletd.log")
[ "$serving" = 1 ]
row "no lost context after smash" $? "$serving serving line(s)"
# residue: a secret left by one tenant, looked for by another (separate processes)
tenant "$carry/compat/residue" plant $blocks >"$work/residue-plant.txt" 2>&1
row "residue: planter" $? "$(result "$work/residue-plant.txt")"
tenant "$carry/compat/residue" read $blocks >"$work/residue-read.txt" 2>&1
row "residue: no secret in the reader's shared and local memory" $? "$(result "$work/residue-read.txt")"
# local addresses below the reader's frame (natively every word of a deeper stack left
# there) and 1 MiB past its array (natively an illegal address, which would end the shared
# context): clamped into the thread's own frames
tenant "$carry/compat/residue" both-below $blocks >"$work/residue-below.txt" 2>&1
row "residue: nothing below the reader's frame" $? "$(result "$work/residue-below.txt")"
tenant "$carry/compat/residue" local-past $blocks >"$work/residue-past.txt" 2>&1
row "residue: a local store 1 MiB out of bounds completes" $? "$(result "$work/residue-past.txt")"
# the reader's whole frame, from its stack pointer to the local top, read before it writes
# any of it: ptxas's spill slots, which PTX does not name (the fenced entry zeroes its frame)
tenant "$carry/compat/residue" plant $blocks >"$work/residue-plant-frame.txt" 2>&1
row "residue: planter (frame)" $? "$(result "$work/residue-plant-frame.txt")"
tenant "$carry/compat/residue" frame $blocks >"$work/residue-frame.txt" 2>&1
row "residue: no secret in the reader's frame (spill slots)" $? "$(result "$work/residue-frame.txt")"
if [ "$backend" = cuda ]; then
    # natively, alone in a context of its own (a fault ends only that one)
    timeout 60 "$carry/compat/smem_probe" >"$work/smem-probe.txt" 2>&1
    rc=$?
    grep '^SMEM' "$work/smem-probe.txt" | while read -r line; do row "smem_probe" 0 "$line"; done
    [ $rc = 0 ] || row "smem_probe" $rc "$(tail -1 "$work/smem-probe.txt")"
    first=$(grep -o 'static_var=0x[0-9a-f]*' "$work/smem-probe.txt" | head -1 | cut -d= -f2)
    for off in 0 $([ -n "$first" ] && [ $((first)) -ge 4 ] && echo $((first - 4))); do
        timeout 60 "$carry/compat/smem_probe" touch "$off" >"$work/smem-touch-$off.txt" 2>&1
        row "shared offset $off is the block's (natively)" $? "$(tail -1 "$work/smem-touch-$off.txt")"
    done
    for m in both both-below local-past both-frame; do
        timeout 60 "$carry/compat/residue" $m >"$work/residue-native-$m.txt" 2>&1
        info "residue $m, natively" "$(result "$work/residue-native-$m.txt")"
    done
    for m in past cp_async; do
        timeout 60 "$carry/compat/smash" $m >"$work/smash-native-$m.txt" 2>&1
        grep -q 'status=cudaErrorIllegalAddress' "$work/smash-native-$m.txt"
        row "smash $m natively faults (what the fence prevents)" $? "$(grep '^RESULT' "$work/smash-native-$m.txt" || tail -1 "$work/smash-native-$m.txt")"
    done
fi
wait "$by"
row bystander $? "$(grep -o 'verified=[a-z]*' "$work/bystander.txt" | tail -1) $(grep -v '^\[kernelet' "$work/bystander.txt" | tail -1 | cut -c1-80)"
grep -E 'lost|protocol|malformed|failed' "$work/bystander.txt" | head -5
tenant "$carry/compat/vector_add" >"$work/after-vector_add.txt" 2>&1
row "vector_add after" $? "$(tail -1 "$work/after-vector_add.txt")"
tenant "$carry/bench/tea" $small >"$work/after-tea.txt" 2>&1
grep -q 'verified=yes' "$work/after-tea.txt"
row "tea after" $? "$(grep -o 'verified=[a-z]* kernel_ms=[0-9.]*' "$work/after-tea.txt")"
serving=$(grep -c '^kerneletd: serving' "$work/kerneletd.log")
[ "$serving" = 1 ]
row "no lost context" $? "$serving serving line(s); $(grep -c 'lost' "$work/kerneletd.log") 'lost' line(s)"
t0=$(date +%s.%N)
kill "$kd"; wait "$kd"
echo "kerneletd stopped (SIGTERM) in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
echo "kerneletd's log:"; grep -v '^kerneletd: serving' "$work/kerneletd.log" | tail -20
tar -C "$out" -czf "$out/contain.tar.gz" contain && rm -rf "$work"
echo "$fails failed"
[ $fails = 0 ]
