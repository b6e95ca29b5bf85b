#!/bin/sh
# CUDA programs in VMs on the GPU machine, beside the same programs as processes; one
# archive of results. From a folder made by tests/gpu/vm/pack.sh:
#   sh CARRY/run.sh CARRY OUT [MIXES] [REPEATS] [MODES]
# defaults: MIXES burn+stream-long, REPEATS 1, MODES serial,mps,kd-base,kd-kernelet,
# vm-base,vm-kernelet. Each mix runs in every mode (tests/gpu/tenants/kernelet-tenants):
# vm- modes put each program in a VM of its own (TCG; KERNELET_VM_ACCEL=kvm for KVM),
# every VM linked to one kerneletd --backend cuda. BACKEND=emu tries it without a GPU
# (programs at their small sizes). Writes OUT/vm.txt (the table and the log) and
# OUT/vm.tar.gz (CSV, plot, daemon logs, each program's output).
set -u
carry=$(cd "$1" && pwd); out=$2
mixes=${3:-burn+stream-long}; repeats=${4:-1}
modes=${5:-serial,mps,kd-base,kd-kernelet,vm-base,vm-kernelet}
backend=${BACKEND:-cuda}
work=$(mktemp -d /tmp/kernelet-vm.XXXXXX)
mkdir -p "$out" "$work/results"
export LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
    echo "== $(date -u +%FT%TZ) $(hostname) backend $backend"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -2
    ls -l /dev/kvm 2>&1; nproc
    # the harness's layout: bin/ lib/ calibration/ from the pack, bench/ and libcuda/ from
    # the guest image, so that processes and VMs run the same binaries
    for d in bin lib calibration; do ln -s "$carry/$d" "$work/$d"; done
    python3 -c "import sys; sys.path.insert(0, '$carry'); import vm_programs; \
vm_programs.extract_image('$carry/image/initramfs.cpio.gz', '$work')" || echo "extract failed"
    ls "$work/bench" "$work/libcuda" | tr '\n' ' '; echo
    small=""; [ "$backend" = cuda ] || small=--small
    python3 "$carry/kernelet-tenants" --carry "$work" --vm-dir "$carry" --backend "$backend" \
        --mix "$mixes" --repeats "$repeats" --modes "$modes" --out "$work/results" $small
    echo "kernelet-tenants exit $?"
    grep -h "co-scheduled\|pairs\|error" "$work"/results/kerneletd-*.log 2>/dev/null | tail -20
} > "$out/vm.txt" 2>&1
tar -czf "$out/vm.tar.gz" -C "$work" results 2>/dev/null
cat "$out/vm.txt"
rm -rf "$work"
