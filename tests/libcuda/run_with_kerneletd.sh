#!/bin/sh
# Runs CUDA programs, unmodified, against a private kerneletd through our libcuda.
#   run_with_kerneletd.sh KERNELETD LIBCUDA_DIR BACKEND PATTERN PROGRAM [ARGS...]
#       one program; passes when it exits 0 (EXPECT_EXIT when set) and prints a line
#       matching PATTERN (grep -E)
#   run_with_kerneletd.sh KERNELETD LIBCUDA_DIR BACKEND --pair P1 PATTERN1 P2 PATTERN2 [ARGS...]
#       two programs at once (two tenants), both with ARGS (P1 also with PAIR_ARGS_1, P2
#       with PAIR_ARGS_2: their own size options); both must pass. With KERNELET_CTL set,
#       the daemon's status is printed after them; with EXPECT_COSCHEDULE=1 as well, the
#       scheduler must have paired kernels.
# Exits 77 (skip) when kerneletd was built without BACKEND. Extra kerneletd options may
# come in KERNELETD_ARGS (e.g. --profiles FILE); with EXPECT_DAEMON_LOG set (grep -E), the
# daemon's log must have a matching line once the program has passed; with CHECK_OUTPUT
# set, that command must accept the program's output (a file, its last argument).
set -u
kd=${1:?usage}; lib=${2:?}; backend=${3:?}; shift 3
if [ "$backend" = cuda ] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; }; then
    echo "no NVIDIA GPU: skipping"
    exit 77
fi
dir=$(mktemp -d)
sock="$dir/kerneletd.sock"
cleanup() {
    [ -n "${kdpid:-}" ] && kill "$kdpid" 2>/dev/null && wait "$kdpid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
# shellcheck disable=SC2086
"$kd" --socket "$sock" --backend "$backend" ${KERNELETD_ARGS:-} >"$dir/kerneletd.log" 2>&1 &
kdpid=$!
i=0
while [ ! -S "$sock" ]; do
    if ! kill -0 "$kdpid" 2>/dev/null; then
        cat "$dir/kerneletd.log"
        if grep -q "not built into this kerneletd" "$dir/kerneletd.log"; then exit 77; fi
        exit 1
    fi
    i=$((i + 1)); [ $i -gt 200 ] && { echo "kerneletd did not start"; exit 1; }
    sleep 0.05
done

# run NAME PATTERN PROGRAM ARGS...: writes $dir/NAME.out and $dir/NAME.rc
run() {
    name=$1; pattern=$2; shift 2
    KERNELET_SOCKET="$sock" LD_LIBRARY_PATH="$lib" "$@" >"$dir/$name.out" 2>&1
    echo $? >"$dir/$name.rc"
}
check() {
    name=$1; pattern=$2
    cat "$dir/$name.out"
    rc=$(cat "$dir/$name.rc")
    if [ "$rc" -ne "${EXPECT_EXIT:-0}" ] || ! grep -Eq "$pattern" "$dir/$name.out"; then
        echo "FAILED: $name (exit $rc, want ${EXPECT_EXIT:-0} and a line matching '$pattern')"
        return 1
    fi
}

if [ "$1" = "--pair" ]; then
    p1=$2; pat1=$3; p2=$4; pat2=$5; shift 5
    # shellcheck disable=SC2086
    run a "$pat1" "$p1" "$@" ${PAIR_ARGS_1:-} &
    a=$!
    # shellcheck disable=SC2086
    run b "$pat2" "$p2" "$@" ${PAIR_ARGS_2:-}
    wait $a
    status=0
    check a "$pat1" || status=1
    check b "$pat2" || status=1
    if [ -n "${KERNELET_CTL:-}" ]; then
        "$KERNELET_CTL" --socket "$sock" status | tee "$dir/status"
        if [ "${EXPECT_COSCHEDULE:-0}" = 1 ] &&
           ! grep -Eq ' [1-9][0-9]* co-scheduled pairs' "$dir/status"; then
            echo "FAILED: the scheduler paired no kernels of the two tenants"
            status=1
        fi
    fi
    exit $status
fi
pattern=$1; shift
run prog "$pattern" "$@"
check prog "$pattern" || exit 1
# shellcheck disable=SC2086
if [ -n "${CHECK_OUTPUT:-}" ] && ! $CHECK_OUTPUT "$dir/prog.out"; then
    echo "FAILED: $CHECK_OUTPUT rejected the output"
    exit 1
fi
if [ -n "${EXPECT_DAEMON_LOG:-}" ] && ! grep -Eq "$EXPECT_DAEMON_LOG" "$dir/kerneletd.log"; then
    cat "$dir/kerneletd.log"
    echo "FAILED: kerneletd's log has no line matching '$EXPECT_DAEMON_LOG'"
    exit 1
fi
