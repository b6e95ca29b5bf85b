#!/bin/sh
# Where kerneletd's and a tenant's threads run, against the sync round trip: the same
# kernelet-proto-bench through fresh daemons with the daemon and the tenant free to run
# anywhere, on separate halves of the cores, and on the same half (taskset). The round trip
# is bimodal between runs (docs/perf/transport.md); this says whether placement decides it.
#   placement.sh CARRY OUT [RUNS] [VARIANTS]   (CARRY from tests/gpu/acceptance/pack.sh)
# VARIANTS (default "free split same"): free, split (daemon and tenant on either half),
# same (both on the first half), daemon (the daemon on the first half), tenant (the tenant
# on the second half), cpus=LIST (kerneletd --cpus LIST, the tenant free).
# Writes OUT/placement.txt (a table of every run) and OUT/placement.tar.gz (daemon logs).
set -u
carry=$(cd "$1" && pwd); out=$2; runs=${3:-4}; variants=${4:-free split same}
work=$(mktemp -d /tmp/kernelet-place.XXXXXX)
mkdir -p "$out"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
n=$(nproc); half=$((n / 2))
lo="0-$((half - 1))"; hi="$half-$((n - 1))"
bench="$carry/bin/kernelet-proto-bench"
args="--repeat=5 --launches=20000 --mib=1"

one() {    # one fresh daemon and one benchmark: VARIANT DAEMON_CPUS TENANT_CPUS [OPTIONS]
    sock=$work/k.sock; rm -f "$sock"; opts=${4:-}
    pin_d=""; pin_t=""
    [ -n "$2" ] && pin_d="taskset -c $2"; [ -n "$3" ] && pin_t="taskset -c $3"
    KERNELET_LATENCY=1 $pin_d "$carry/bin/kerneletd" --socket "$sock" --backend cuda \
        --calibration "$carry/calibration" $opts >>"$work/kd-$1.log" 2>&1 &
    kd=$!
    i=0; while [ ! -S "$sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
    res=$(KERNELET_SOCKET=$sock LD_LIBRARY_PATH="$carry/libcuda" $pin_t "$bench" --label="$1" $args | grep RESULT)
    kill "$kd"; wait "$kd" 2>/dev/null
    echo "$res" | awk -v v="$1" '{for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        printf "| %s | %s | %s | %s | %s |\n", v, f["sync_launch_us"], f["sync_launch_stream_us"], f["query_us"], f["async_launches_per_s"] }'
}

{
    echo "== $(date -u +%FT%TZ) $(hostname), $n CPUs"
    lscpu | grep -E "^(Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node[0-9]* CPU)" 
    lscpu -e=CPU,CORE,NODE 2>/dev/null | tr '\n' ';'; echo
    echo "$("$bench" --label=native $args | grep RESULT)"
    echo "| placement | sync µs | sync, own stream µs | query µs | async /s |"
    echo "|---|---|---|---|---|"
    r=0
    while [ $r -lt "$runs" ]; do
        for v in $variants; do
            case $v in
            free) one free "" "" ;;
            split) one "daemon $lo, tenant $hi" "$lo" "$hi" ;;
            same) one "both on $lo" "$lo" "$lo" ;;
            daemon) one "daemon on $lo, tenant free" "$lo" "" ;;
            tenant) one "daemon free, tenant on $hi" "" "$hi" ;;
            cpus=*) one "kerneletd --cpus ${v#cpus=}" "" "" "--cpus ${v#cpus=}" ;;
            esac
        done
        r=$((r + 1))
    done
} > "$out/placement.txt" 2>&1
tar -czf "$out/placement.tar.gz" -C "$work" . 2>/dev/null
cat "$out/placement.txt"
rm -rf "$work"
