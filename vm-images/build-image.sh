#!/usr/bin/env bash
# Builds the guest kernel and initramfs of the Kernelet test VM from Debian packages.
#
#   build-image.sh INIT VMLINUZ_OUT INITRAMFS_OUT [SRC=DEST ...]
#
# Each SRC=DEST copies a host file into the image at the absolute path DEST (for later
# components: the guest driver module, libcuda.so.1, benchmark programs). Kernel modules
# placed in /lib/modules/extra/ are loaded by init after the virtio ones, in name order.
#
# The kernel is Debian's (linux-image-amd64's current dependency unless
# KERNELET_GUEST_KERNEL names a package), busybox comes from busybox-static and the C/C++
# runtime from libc6, libstdc++6 and libgcc-s1. Packages are fetched with `apt-get
# download` into KERNELET_DEB_CACHE (default ~/.cache/kernelet/debs) and unpacked with
# dpkg -x; no root file system is installed. The cpio archive is built with sorted names,
# fixed owners and timestamps and `gzip -n`, so equal inputs give equal bytes.
set -euo pipefail

init_script=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out_kernel=$2
out_initrd=$3
shift 3
extras=("$@")

. "$(dirname "$0")/debian-pkgs.sh"
kernelet_lock_cache

say() { echo "build-image: $*"; }

kernel_pkg=$(kernelet_kernel_pkg)
kver=${kernel_pkg#linux-image-}
pkgs=("$kernel_pkg" busybox-static libc6 libstdc++6 libgcc-s1)

debs=()
for p in "${pkgs[@]}"; do
    deb=$(kernelet_fetch_deb "$p")
    debs+=("$deb")
done

work=$(mktemp -d "${TMPDIR:-/tmp}/kernelet-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
for f in "${debs[@]}"; do
    dpkg -x "$f" "$work/pkgs"
done
pk="$work/pkgs"
root="$work/root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,lib/modules,lib64,usr/bin,usr/lib}

# busybox and its applets (links made here, so the image needs no --install at boot).
cp "$pk/bin/busybox" "$root/bin/busybox"
for applet in $("$pk/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done

# C and C++ runtime: the loader, libc's libraries, libstdc++ and libgcc_s.
mkdir -p "$root/lib/x86_64-linux-gnu" "$root/usr/lib/x86_64-linux-gnu"
cp -a "$pk"/lib/x86_64-linux-gnu/*.so* "$root/lib/x86_64-linux-gnu/"
cp -a "$pk"/usr/lib/x86_64-linux-gnu/libstdc++.so.6* "$root/usr/lib/x86_64-linux-gnu/"
ln -sf ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"

# virtio-pci modules in load order, from the kernel's own modules.dep (Debian builds
# virtio as modules: virtio, virtio_ring, virtio_pci_*_dev, virtio_pci).
moddir="$pk/lib/modules/$kver"
depmod -b "$pk" "$kver"  # the package ships no modules.dep; its postinst makes it
order=$(modprobe -d "$pk" -S "$kver" --show-depends virtio_pci |
    sed -n "s|^insmod $moddir/||p" | sed 's/ *$//')
[ -n "$order" ] || { say "error: no virtio_pci module in $kernel_pkg" >&2; exit 1; }
: >"$root/etc/kernelet-modules"
for m in $order; do
    mkdir -p "$root/lib/modules/$(dirname "$m")"
    cp "$moddir/$m" "$root/lib/modules/$m"
    echo "$m" >>"$root/etc/kernelet-modules"
done
say "kernel $kver, modules: $(echo $order | tr '\n' ' ')"

for pair in ${extras[@]+"${extras[@]}"}; do
    src=${pair%%=*} dest=${pair#*=}
    case "$dest" in /*) ;; *) say "error: '$pair': DEST must be an absolute path" >&2; exit 1 ;; esac
    [ -f "$src" ] || { say "error: '$pair': no such file $src" >&2; exit 1; }
    mkdir -p "$root$(dirname "$dest")"
    cp "$src" "$root$dest"
    say "added $dest"
done

cp "$init_script" "$root/init"
chmod 0755 "$root/init"

# Reproducible archive: fixed timestamps, sorted names, root-owned.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
    cpio --null --create --format=newc --owner=0:0 --reproducible --quiet) |
    gzip -n -9 >"$out_initrd.tmp"
mv "$out_initrd.tmp" "$out_initrd"
cp "$pk/boot/vmlinuz-$kver" "$out_kernel"
say "done: $out_kernel, $out_initrd ($(du -h "$out_initrd" | cut -f1))"
