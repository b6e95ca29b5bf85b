#!/bin/sh
# Packs CUDA programs in VMs on the GPU machine into one folder to carry there:
#   tests/gpu/vm/pack.sh [BUILD_DIR] [DEST]      (defaults: build, .carry/vm)
# QEMU with virtio-kernelet (stripped), its libraries and firmware, the guest image (kernel
# and initramfs with the guest driver, our libcuda.so.1 and the bench and tenant
# programs), kerneletd and the tenants harness. The programs that also run natively and
# through kerneletd beside the VMs are taken out of the image there (vm_programs.py), so
# that every mode runs the same binaries and the folder stays under the 64 MiB a run
# may carry. Run it there with tests/gpu/vm/run.sh (copied in).
set -eu
build=${1:-build}
dest=${2:-.carry/vm}
for f in host-sched/daemon/kerneletd host-sched/daemon/kerneletd-cuda.so \
         host-sched/daemon/kernelet-ctl hw-virtio-kernelet/qemu-system-x86_64 \
         vm-images/vmlinuz vm-images/initramfs.cpio.gz; do
    [ -e "$build/$f" ] || { echo "pack.sh: $build/$f is missing: meson compile -C $build" >&2; exit 1; }
done
rm -rf "$dest"
scripts/device-pack "$dest" "$build/host-sched/daemon/kerneletd" \
    "$build/host-sched/daemon/kerneletd-cuda.so" "$build/host-sched/daemon/kernelet-ctl" \
    "$build/hw-virtio-kernelet/qemu-system-x86_64" >/dev/null
strip "$dest/bin/qemu-system-x86_64"
mkdir -p "$dest/image" "$dest/firmware"
cp "$build/vm-images/vmlinuz" "$build/vm-images/initramfs.cpio.gz" "$dest/image/"
# what -machine pc loads with -kernel (and kvmvapic.bin under KVM)
cp /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
   /usr/share/qemu/linuxboot.bin /usr/share/qemu/kvmvapic.bin "$dest/firmware/"
cp -r host-sched/backends/cuda/calibration "$dest/calibration"
cp tests/vm/guest_vm.py tests/gpu/tenants/kernelet-tenants tests/vm/vm_programs.py \
   tests/gpu/tenants/timeline.py tests/gpu/vm/run.sh "$dest/"
du -sh "$dest"
