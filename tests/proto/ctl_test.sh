#!/bin/sh
# kerneletd and kernelet-ctl as an operator uses them: the daemon starts on a socket,
# status lists the daemon and a tenant, set changes that tenant's policy (visible in the
# next status) and refuses bad input, and SIGTERM stops the daemon cleanly.
#   ctl_test.sh KERNELETD KERNELET_CTL TENANT_PROGRAM
set -u
kd=${1:?}; ctl=${2:?}; tenant=${3:?}
dir=$(mktemp -d)
sock="$dir/k.sock"
fail() { echo "FAIL: $*"; cat "$dir/kd.log" 2>/dev/null; exit 1; }
"$kd" --socket "$sock" --backend sim >"$dir/kd.log" 2>&1 &
kdpid=$!
trap 'kill $kdpid 2>/dev/null; kill $tpid 2>/dev/null; rm -rf "$dir"' EXIT
i=0; while [ ! -S "$sock" ]; do i=$((i+1)); [ $i -gt 200 ] && fail "no socket"; sleep 0.05; done

"$ctl" --socket "$sock" status >"$dir/s0" || fail "status exit $?"
grep -q "backend sim, policy kernelet" "$dir/s0" || fail "status header: $(cat "$dir/s0")"
grep -q "0 tenant(s)" "$dir/s0" || fail "tenants before: $(cat "$dir/s0")"

# A tenant that stays connected while we look: the tenant program holds its connection
# until its stdin closes.
mkfifo "$dir/hold"
"$tenant" "$sock" <"$dir/hold" >"$dir/tenant.out" 2>&1 &
tpid=$!
exec 3>"$dir/hold"
i=0; while ! "$ctl" --socket "$sock" status | grep -q "1 tenant(s)"; do
    i=$((i+1)); [ $i -gt 200 ] && fail "tenant never showed up"; sleep 0.05
done
id=$("$ctl" --socket "$sock" status | awk '$2 == "ctl-tenant" {print $1}')
[ -n "$id" ] || fail "no row for the tenant: $("$ctl" --socket "$sock" status)"
"$ctl" --socket "$sock" set "$id" weight=300 priority=2 quota=64M max-inflight=16 slicing=off \
    || fail "set exit $?"
row=$("$ctl" --socket "$sock" status | awk -v id="$id" '$1 == id')
echo "$row"
# ID NAME KIND PID UTIL MEMORY/QUOTA QUEUED LAUNCHED DONE PAIRED ERRORS GPU-S COPIED WEIGHT
# PRIO INFLIGHT FLAGS
policy=$(echo "$row" | awk '{print $3, $6, $14, $15, $16}')
[ "$policy" = "process 0B/64.0MiB 300 2 16" ] || fail "policy not applied: $row"
echo "$row" | grep -q "slicing" && fail "slicing still on: $row"

"$ctl" --socket "$sock" set "$id" weight=0 && fail "weight 0 accepted"
"$ctl" --socket "$sock" set 999999 weight=10 && fail "unknown tenant accepted"
"$ctl" --socket "$sock" set "$id" color=blue; [ $? -eq 2 ] || fail "bad key not a usage error"
"$ctl" --socket "$sock" frobnicate; [ $? -eq 2 ] || fail "bad command not a usage error"
"$ctl" --socket "$dir/none.sock" status && fail "status without a daemon succeeded"

exec 3>&-
wait $tpid || fail "tenant program failed: $(cat "$dir/tenant.out")"
kill -TERM $kdpid
wait $kdpid || fail "kerneletd exit status $? after SIGTERM"
[ -e "$sock" ] && fail "socket left behind"
echo "PASS"
