#!/bin/sh
# The cost of memory fencing on the GPU (issue: tenant isolation), from a folder made by
# pack.sh: each bench program alone, natively, then through kerneletd --backend cuda with
# every kernel fenced into its tenant's window (the default) and with --no-fence:
#   fence.sh CARRY_DIR OUT_DIR [PROGRAMS]     (WAYS="fenced": only the fenced daemon)
# Prints one table row per program (kernel_ms of each way, fenced over unfenced) and
# leaves the programs' output and the daemons' logs in OUT_DIR/fence.tar.gz.
set -u
carry=$(cd "${1:?usage: fence.sh CARRY_DIR OUT_DIR [PROGRAMS]}" && pwd)
mkdir -p "${2:?}"
out=$(cd "$2" && pwd)
progs=${3:-pc sad spmv st mm mriq bs tea}
work=$out/fence
mkdir -p "$work"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
backend=${BACKEND:-cuda}           # BACKEND=emu: a quick try of this script without a GPU
args=--repeat=100
if [ "$backend" = cuda ]; then
    if ! nvidia-smi -L >/dev/null 2>&1; then echo "no NVIDIA GPU: skipping"; exit 77; fi
else
    args="--small --repeat=2"
fi

kernel_ms() { [ -f "$1" ] && sed -n 's/^RESULT .*verified=yes kernel_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }

# run_way NAME [kerneletd options...]: every program once, alone, through a fresh daemon
# A daemon that dies during a program is named in the table's log with its exit status (a
# crash is a finding, not a missing figure) and started again for the next program.
start_daemon() {
    rm -f "$sock"
    "$carry/bin/kerneletd" --socket "$sock" --backend "$backend" --calibration "$carry/calibration" "$@" \
        >>"$work/kerneletd-$name.log" 2>&1 &
    pid=$!
    i=0
    while [ ! -S "$sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
}
run_way() {
    name=$1; shift
    sock=$work/$name.sock
    start_daemon "$@"
    for p in $progs; do
        KERNELET_SOCKET=$sock LD_LIBRARY_PATH="$carry/libcuda" timeout 120 \
            "$carry/bench/$p" $args >"$work/$p-$name.txt" 2>&1
        echo "  $p $name: $(kernel_ms "$work/$p-$name.txt") ms" >&2
        # a daemon that died stays a zombie until waited for: kill -0 would still find it
        if ! kill -0 "$pid" 2>/dev/null || [ "$(ps -o stat= -p "$pid" | cut -c1)" = Z ]; then
            wait "$pid"; st=$?
            echo "  kerneletd ($name) died during $p: exit status $st" | tee -a "$work/kerneletd-$name.log" >&2
            start_daemon "$@"
        fi
    done
    kill "$pid"; wait "$pid"; rm -f "$sock"
}

for p in $progs; do
    [ "$backend" = cuda ] && timeout 120 "$carry/bench/$p" $args >"$work/$p-native.txt" 2>&1
done
case " ${WAYS:-fenced unfenced} " in *" fenced "*) run_way fenced ;; esac
case " ${WAYS:-fenced unfenced} " in *" unfenced "*) run_way unfenced --no-fence ;; esac
echo "| program | native ms | fenced ms | unfenced ms | fenced / unfenced |"
echo "|---|---|---|---|---|"
for p in $progs; do
    n=$(kernel_ms "$work/$p-native.txt"); f=$(kernel_ms "$work/$p-fenced.txt")
    u=$(kernel_ms "$work/$p-unfenced.txt")
    r=$(awk -v f="${f:-0}" -v u="${u:-0}" 'BEGIN { if (f > 0 && u > 0) printf "%.3f", f / u; else print "n/a" }')
    echo "| $p | ${n:-failed} | ${f:-failed} | ${u:-failed} | $r |"
done
tar -C "$out" -czf "$out/fence.tar.gz" fence && rm -rf "$work"
