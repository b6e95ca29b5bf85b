#!/usr/bin/env bash
# Builds qemu-system-x86_64 with the virtio-kernelet device.
#
#   build-qemu.sh SOURCE_ROOT OUTPUT
#
# 1. fetches QEMU 10.0.2's source from Debian (deb-src of bookworm-backports, set up by
#    scripts/bootstrap) into a cache outside the build directory, checked by sha256;
# 2. unpacks it once (one tree for all checkouts on the machine) and patches four spots of
#    QEMU's tree (the Kconfig symbol, a meson subdir, the virtio name table, the -device
#    short form) and the edk2 pitfall (see below);
# 3. grafts hw-virtio-kernelet/ into hw/virtio/kernelet/, copying only files that changed,
#    so ninja recompiles only those;
# 4. configures a lean x86_64 system emulator once (again only if its flags change) and
#    builds qemu-system-x86_64 with ninja, whose [n/N] lines show progress;
# 5. copies the binary to OUTPUT.
#
# Environment: KERNELET_QEMU_CACHE (default ~/.cache/kernelet/qemu), KERNELET_QEMU_JOBS
# (default 2: this machine's cores are shared).
set -euo pipefail

src_root=$(cd "$1" && pwd)
output=$2

qemu_version=10.0.2
debian_version="1:10.0.2+ds-2+deb13u1~bpo12+1"
tarball="qemu_${qemu_version}+ds.orig.tar.xz"
tarball_sha256=0901da33844a331bf8b3602b9c1fbd178e60b737c8e3ade678255bd090c9b9f1

cache=${KERNELET_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet/qemu}
jobs=${KERNELET_QEMU_JOBS:-2}
# One tree and build for every checkout on this machine, used under a lock: each run
# grafts its own device sources (and removes files it does not have), so a checkout with
# other sources costs a recompile of those few files, not a whole QEMU build.
work="$cache/qemu-$qemu_version"
tree="$work/src"
build="$work/build"

say() { echo "build-qemu: $*"; }

mkdir -p "$cache/dl" "$work"
exec 9>"$work/lock"
flock 9

fetch() {
    [ -f "$cache/dl/$tarball" ] && return 0
    say "fetching QEMU $qemu_version source from Debian (apt-get source)"
    # The .dsc and debian.tar.xz of this backport may 404; the orig tarball is all we need,
    # so apt-get's exit status is judged by the tarball, not taken as is.
    (cd "$cache/dl" && apt-get source --download-only "qemu=$debian_version" >/dev/null 2>&1) || true
    if [ ! -f "$cache/dl/$tarball" ]; then
        # That revision may have left the mirror; any later 10.0.2+ds revision in
        # bookworm-backports ships the same orig tarball (the sha256 check below says so).
        say "qemu=$debian_version not found; trying qemu from bookworm-backports"
        (cd "$cache/dl" && apt-get source --download-only qemu/bookworm-backports >/dev/null 2>&1) || true
    fi
    if [ ! -f "$cache/dl/$tarball" ]; then
        say "error: apt-get source did not deliver $tarball (is deb-src for bookworm-backports" \
            "configured? run scripts/bootstrap)" >&2
        exit 1
    fi
}

verify() {
    local sum
    sum=$(sha256sum "$cache/dl/$tarball" | cut -d' ' -f1)
    if [ "$sum" != "$tarball_sha256" ]; then
        say "error: $tarball has sha256 $sum, expected $tarball_sha256" >&2
        mv "$cache/dl/$tarball" "$cache/dl/$tarball.bad"
        exit 1
    fi
}

# Inserts line `new` after the first line matching `anchor` in `file`, once: `marker` is a
# string whose presence says the patch is already there.
insert_after() {
    local file=$1 anchor=$2 new=$3 marker=$4
    grep -qF -- "$marker" "$file" && return 0
    grep -qF -- "$anchor" "$file" || { say "error: anchor '$anchor' not in $file" >&2; exit 1; }
    ANCHOR=$anchor NEW=$new python3 - "$file" <<'PY'
import os, sys
path = sys.argv[1]
text = open(path).read()
anchor, new = os.environ["ANCHOR"], os.environ["NEW"]
i = text.index(anchor)
j = text.index("\n", i) + 1
open(path, "w").write(text[:j] + new + "\n" + text[j:])
PY
}

# Replaces the whole line `old` by `new` in `file`, only where it is still there: files
# that are already patched keep their mtime, so neither meson nor ninja redo work.
replace_line() {
    local file=$1 old=$2 new=$3
    grep -qxF -- "$old" "$file" || return 0
    OLD=$old NEW=$new python3 - "$file" <<'PY'
import os, sys
path = sys.argv[1]
lines = open(path).read().split("\n")
lines = [os.environ["NEW"] if l == os.environ["OLD"] else l for l in lines]
open(path, "w").write("\n".join(lines))
PY
}

patch_tree() {
    # Kconfig symbol, on by default wherever virtio is.
    grep -q VIRTIO_KERNELET "$tree/hw/virtio/Kconfig" ||
        printf '\nconfig VIRTIO_KERNELET\n    bool\n    default y\n    depends on VIRTIO\n' \
            >>"$tree/hw/virtio/Kconfig"
    # Our meson.build adds to the source sets, so it must come after both are declared.
    insert_after "$tree/hw/virtio/meson.build" "virtio_pci_ss.add(when: 'CONFIG_VIRTIO_NSM'" \
        "subdir('kernelet')" "subdir('kernelet')"
    # virtio_init() asserts that the device id has a name in this table.
    insert_after "$tree/hw/virtio/virtio.c" '#include "hw/virtio/virtio.h"' \
        '#include "kernelet/virtio_kernelet.h"' 'kernelet/virtio_kernelet.h'
    replace_line "$tree/hw/virtio/virtio.c" '    [VIRTIO_ID_GPIO] = "virtio-gpio"' \
        '    [VIRTIO_ID_GPIO] = "virtio-gpio",'
    insert_after "$tree/hw/virtio/virtio.c" '[VIRTIO_ID_GPIO] = "virtio-gpio",' \
        '    [KERNELET_VIRTIO_ID] = "virtio-kernelet",' '[KERNELET_VIRTIO_ID]'
    # -device virtio-kernelet as the short form of virtio-kernelet-pci, like virtio-rng.
    insert_after "$tree/system/qdev-monitor.c" '{ "virtio-rng-pci", "virtio-rng", QEMU_ARCH_VIRTIO_PCI },' \
        '    { "virtio-kernelet-pci", "virtio-kernelet", QEMU_ARCH_VIRTIO_PCI },' '"virtio-kernelet-pci"'
    # Debian's +ds tarball has no firmware blobs, but pc-bios/meson.build unpacks the edk2
    # ones whenever bzip2 is installed and then fails on the missing files. Firmware comes
    # from Debian's seabios and qemu-system-data instead (see --firmwarepath).
    replace_line "$tree/pc-bios/meson.build" 'if unpack_edk2_blobs' \
        "if unpack_edk2_blobs and fs.exists('edk2-x86_64-code.fd.bz2')"
}

unpack() {
    [ -f "$tree/.kernelet-unpacked" ] && return 0
    say "unpacking $tarball into $tree"
    rm -rf "$tree" "$work/src.tmp"
    mkdir -p "$work/src.tmp"
    tar -C "$work/src.tmp" -xf "$cache/dl/$tarball" --strip-components=1
    mv "$work/src.tmp" "$tree"
    touch "$tree/.kernelet-unpacked"
}

# Copies src to dst only when the content differs, so unchanged files keep their mtime.
graft_file() {
    local src=$1 dst=$2
    mkdir -p "$(dirname "$dst")"
    if ! cmp -s "$src" "$dst"; then
        cp "$src" "$dst"
        say "grafted ${dst#"$tree"/}"
    fi
}

graft() {
    local dev="$src_root/hw-virtio-kernelet"
    graft_file "$src_root/include/kernelet/virtio_kernelet.h" "$tree/include/kernelet/virtio_kernelet.h"
    graft_file "$dev/kdev_request.c" "$tree/hw/virtio/kernelet/kdev_request.c"
    graft_file "$dev/kdev_request.h" "$tree/hw/virtio/kernelet/kdev_request.h"
    graft_file "$src_root/include/kernelet/protocol.h" "$tree/include/kernelet/protocol.h"
    graft_file "$dev/kdev_relay.c" "$tree/hw/virtio/kernelet/kdev_relay.c"
    graft_file "$dev/kdev_relay.h" "$tree/hw/virtio/kernelet/kdev_relay.h"
    # libkernelet-proto, whole: the device reads headers and frames batches with it, asks
    # its opcode table what to answer, forward or refuse, and uses its socket helpers for
    # the handshake and administration calls.
    for f in "$src_root"/protocol/proto_*.[ch]; do
        graft_file "$f" "$tree/hw/virtio/kernelet/$(basename "$f")"
    done
    for f in "$dev"/qemu/*; do
        graft_file "$f" "$tree/hw/virtio/kernelet/$(basename "$f")"
    done
    # Files another checkout grafted that this one does not have.
    for f in "$tree"/hw/virtio/kernelet/*; do
        local name
        name=$(basename "$f")
        case "$name" in kdev_request.[ch]|kdev_relay.[ch]) continue ;;
            proto_*.[ch]) [ -e "$src_root/protocol/$name" ] && continue ;; esac
        if [ ! -e "$dev/qemu/$name" ]; then
            rm -f "$f"
            say "removed hw/virtio/kernelet/$name"
        fi
    done
}

configure_flags=(
    --python=/usr/bin/python3
    --target-list=x86_64-softmmu
    --without-default-features
    --enable-tcg --enable-kvm
    --disable-docs --disable-user
    --disable-install-blobs
    --firmwarepath=/usr/share/qemu:/usr/share/seabios
)

configure() {
    local want have=""
    want=$(printf '%s\n' "${configure_flags[@]}")
    [ -f "$build/kernelet-configure-flags" ] && have=$(cat "$build/kernelet-configure-flags")
    if [ -f "$build/build.ninja" ] && [ "$want" = "$have" ]; then
        return 0
    fi
    say "configuring (log: $build/configure.log)"
    rm -rf "$build"
    mkdir -p "$build"
    if ! (cd "$build" && "$tree/configure" "${configure_flags[@]}") >"$build/configure.log" 2>&1; then
        tail -n 30 "$build/configure.log" >&2
        say "error: configure failed; see $build/configure.log" >&2
        exit 1
    fi
    printf '%s\n' "$want" >"$build/kernelet-configure-flags"
}

fetch
verify
unpack
patch_tree
graft
configure
say "building qemu-system-x86_64 with ninja -j$jobs"
ninja -C "$build" -j"$jobs" qemu-system-x86_64
cmp -s "$build/qemu-system-x86_64" "$output" 2>/dev/null || cp "$build/qemu-system-x86_64" "$output"
say "done: $output"
