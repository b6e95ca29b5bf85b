#!/usr/bin/env bash
# Builds virtio_kernelet.ko out of tree for the guest kernel of the VM image.
#
#   build-module.sh SOURCE_ROOT OUTPUT
#
# The guest runs Debian's kernel (vm-images/debian-pkgs.sh says which). Its build tree is
# Debian's linux-headers-<kver> + linux-headers-<kver-common> + linux-kbuild-<major>,
# fetched with `apt-get download` at the kernel's own version and unpacked once into a
# cache (the flavour Makefile names the common tree by absolute path; it is pointed at
# the unpacked copy). The kernel was built with Debian's gcc-12, which the headers'
# Makefile asks for by name; bookworm's gcc-12 is that compiler.
#
# Environment: KERNELET_KHEADERS_CACHE (default ~/.cache/kernelet/kheaders), and those of
# vm-images/debian-pkgs.sh.
set -euo pipefail

src_root=$(cd "$1" && pwd)
output=$2
moddir="$src_root/guest-driver/kernel"
say() { echo "build-module: $*"; }

command -v gcc-12 >/dev/null || { say "error: gcc-12 not found (the guest kernel was built with it)" >&2; exit 1; }

. "$src_root/vm-images/debian-pkgs.sh"
kernelet_lock_cache

kernel_pkg=$(kernelet_kernel_pkg)
kver=${kernel_pkg#linux-image-}
kpkg_ver=$(kernelet_candidate "$kernel_pkg")
# linux-headers-<kver> depends on the common headers and the kbuild tools it needs.
deps=$(apt-cache depends "linux-headers-$kver" | sed -n 's/^ *Depends: \(linux-\(headers-.*-common\|kbuild-.*\)\)$/\1/p')
[ "$(echo "$deps" | wc -w)" = 2 ] || { say "error: unexpected dependencies of linux-headers-$kver: $deps" >&2; exit 1; }

hcache=${KERNELET_KHEADERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet/kheaders}
htree="$hcache/${kver}_$kpkg_ver"
if [ ! -f "$htree/.kernelet-unpacked" ]; then
    say "unpacking headers for $kver ($kpkg_ver) into $htree"
    rm -rf "$htree" "$htree.tmp"
    mkdir -p "$htree.tmp"
    for p in "linux-headers-$kver" $deps; do
        deb=$(kernelet_fetch_deb "$p" "$kpkg_ver")
        dpkg -x "$deb" "$htree.tmp"
    done
    sed -i "s|^include /usr/src/|include $htree/usr/src/|" "$htree.tmp/usr/src/linux-headers-$kver/Makefile"
    mv "$htree.tmp" "$htree"
    touch "$htree/.kernelet-unpacked"
fi
kbuild_dir="$htree/usr/src/linux-headers-$kver"

# Kbuild builds external modules in their source folder: build a copy next to OUTPUT.
work="$(cd "$(dirname "$output")" && pwd)/virtio_kernelet.build"
mkdir -p "$work"
for f in "$moddir"/Kbuild "$moddir"/*.c "$moddir"/*.h; do
    cmp -s "$f" "$work/$(basename "$f")" || cp "$f" "$work/"
done
make -s -C "$kbuild_dir" M="$work" KERNELET_INCLUDE="$src_root/include" W=1 modules

vermagic=$(modinfo -F vermagic "$work/virtio_kernelet.ko")
case "$vermagic" in
    "$kver "*) ;;
    *) say "error: module vermagic '$vermagic' does not match kernel $kver" >&2; exit 1 ;;
esac
cp "$work/virtio_kernelet.ko" "$output"
say "done: $output (for $kver)"
