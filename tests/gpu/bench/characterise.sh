#!/bin/sh
# Characterises the eight benchmark kernels on the GPU at hand: the kernel time from CUDA
# events (the program's own RESULT line, its clocks untouched) and one profiled launch under
# Nsight Compute (ncu) for instructions, cycles, DRAM traffic, occupancy, registers and
# shared memory. Writes OUT/<kernel>.result, OUT/<kernel>.csv, OUT/metrics.txt and
# OUT/table.md (made by ncu_table.py). Needs ncu and permission to read GPU counters.
# NCU_CLOCK=none profiles at the clocks the GPU runs at on its own (ncu's default, base,
# locks the SM clock to its base frequency: memory-bound kernels then idle fewer cycles).
#   characterise.sh BENCH_BUILD_DIR OUT [program options, e.g. --small]
set -u
bin=${1:?usage: characterise.sh BENCH_BUILD_DIR OUT [options]}
out=${2:?usage: characterise.sh BENCH_BUILD_DIR OUT [options]}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
ncu=${NCU:-ncu}
mkdir -p "$out"

# Metrics wanted (see docs/perf/bench.md for how PUR and MUR are formed from them). Names
# that this ncu does not know for this GPU are dropped, with a note, rather than failing.
wanted="gpu__time_duration.sum
sm__cycles_elapsed.avg
sm__cycles_elapsed.avg.per_second
sm__cycles_active.avg
sm__inst_executed.sum
sm__inst_executed.avg.per_cycle_active
sm__inst_executed.avg.per_cycle_elapsed
sm__inst_executed.avg.peak_sustained
dram__sectors_read.sum
dram__sectors_write.sum
dram__bytes_read.sum
dram__bytes_write.sum
dram__bytes.sum.peak_sustained
dram__cycles_elapsed.avg.per_second
dram__throughput.avg.pct_of_peak_sustained_elapsed
sm__throughput.avg.pct_of_peak_sustained_elapsed
sm__warps_active.avg.pct_of_peak_sustained_active
sm__maximum_warps_per_active_cycle_pct
launch__registers_per_thread
launch__shared_mem_per_block_static
launch__shared_mem_per_block_dynamic
launch__grid_size
launch__block_size
launch__waves_per_multiprocessor
device__attribute_multiprocessor_count"

"$ncu" --query-metrics > "$out/query.txt" 2>&1 || true
metrics=""
: > "$out/metrics.txt"
for m in $wanted; do
    base=${m%%.*}
    if grep -q "^$base " "$out/query.txt"; then
        metrics="$metrics${metrics:+,}$m"
        echo "$m" >> "$out/metrics.txt"
    else
        # launch__* and device__* are not listed but the raw page reports them anyway.
        echo "note: --query-metrics does not list $base; not requested" >> "$out/metrics.txt"
    fi
done

status=0
for p in pc sad spmv st mm mriq bs tea; do
    case $p in
        pc) entry=pc_chase ;; sad) entry=sad_search ;; spmv) entry=spmv_csr ;;
        st) entry=st_stencil7 ;; mm) entry=mm_tiled ;; mriq) entry=mriq_computeq ;;
        bs) entry=bs_sweep ;; tea) entry=tea_encrypt ;;
    esac
    # Event timing first, without the profiler.
    "$bin/$p" "$@" > "$out/$p.result" 2> "$out/$p.err" || status=1
    cat "$out/$p.result"
    # One launch profiled: skip the warm-up launch, take the first timed one.
    "$ncu" --csv --page raw --print-units base --clock-control "${NCU_CLOCK:-base}" \
        --metrics "$metrics" -k "$entry" \
        --launch-skip 1 --launch-count 1 --log-file "$out/$p.csv" \
        "$bin/$p" "$@" --repeat=1 > /dev/null 2>> "$out/$p.err" || status=1
done
python3 "$here/ncu_table.py" "$out" > "$out/table.md" || status=1
cat "$out/table.md"
exit $status
