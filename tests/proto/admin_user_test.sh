#!/bin/sh
# kerneletd --admin-user: the daemon runs as one user (nobody) and lets a second one
# (daemon, standing for the user QEMU runs as) administer it; a third (bin) is refused.
# Needs root to switch users; exits 77 (skip) otherwise.
#   admin_user_test.sh KERNELETD KERNELET_CTL
set -u
kd=${1:?}; ctl=${2:?}
[ "$(id -u)" = 0 ] && command -v runuser >/dev/null || { echo "needs root and runuser"; exit 77; }
runuser -u nobody -- test -x "$kd" || { echo "nobody cannot run $kd"; exit 77; }
dir=$(mktemp -d)
chmod 0777 "$dir"
sock="$dir/k.sock"
fail() { echo "FAIL: $*"; cat "$dir/kd.log" 2>/dev/null; exit 1; }
runuser -u nobody -- "$kd" --socket "$sock" --backend sim --admin-user daemon >"$dir/kd.log" 2>&1 &
kdpid=$!
trap 'kill $kdpid 2>/dev/null; rm -rf "$dir"' EXIT
i=0; while [ ! -S "$sock" ]; do i=$((i+1)); [ $i -gt 200 ] && fail "no socket"; sleep 0.05; done

runuser -u daemon -- "$ctl" --socket "$sock" status >"$dir/ok" 2>&1 ||
    fail "the admin user was refused: $(cat "$dir/ok")"
grep -q "backend sim" "$dir/ok" || fail "status: $(cat "$dir/ok")"
runuser -u bin -- "$ctl" --socket "$sock" status >"$dir/no" 2>&1 &&
    fail "another user was let in: $(cat "$dir/no")"
grep -q "refused the administration connection" "$dir/no" || fail "refusal: $(cat "$dir/no")"
echo "PASS"
