#!/usr/bin/env bash
# Builds qemu-system-x86_64 with the virtio-kernelet device.
#
#   build-qemu.sh SOURCE_ROOT OUTPUT
#
# 1. fetches QEMU 10.0.2's source from Debian (deb-src of bookworm-backports, set up by
#    scripts/bootstrap) into a cache outside the build directory, checked by sha256;
# 2. unpacks it once (one tree for all checkouts on the machine);
# 3. applies the patch series hw-virtio-kernelet/patches (QEMU's changes, in the form QEMU
#    takes upstream; its first patch, the device's files, generated now from this
#    checkout by qemu-series.py) to pristine copies of the files it touches, strictly, and
#    copies into the shared tree only files whose content changed, so ninja recompiles
#    only those;
# 4. configures a lean x86_64 system emulator once (again only if its flags change) and
#    builds qemu-system-x86_64 with ninja, whose [n/N] lines show progress;
# 5. copies the binary to OUTPUT.
#
# Environment: KERNELET_QEMU_CACHE (default ~/.cache/kernelet/qemu), KERNELET_QEMU_JOBS
# (default 2: this machine's cores are shared).
set -euo pipefail

src_root=$(cd "$1" && pwd)
output=$2

# shellcheck source=qemu-source.env
. "$src_root/hw-virtio-kernelet/qemu-source.env"

cache=${KERNELET_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet/qemu}
jobs=${KERNELET_QEMU_JOBS:-2}
# One tree and build for every checkout on this machine, used under a lock: each run
# applies its own series (and takes back what it does not have), so a checkout with
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

unpack() {
    [ -f "$tree/.kernelet-unpacked" ] && return 0
    say "unpacking $tarball into $tree"
    rm -rf "$tree" "$work/src.tmp"
    mkdir -p "$work/src.tmp"
    tar -C "$work/src.tmp" -xf "$cache/dl/$tarball" --strip-components=1
    mv "$work/src.tmp" "$tree"
    touch "$tree/.kernelet-unpacked"
}

# Copies src to dst only when the content differs, so unchanged files keep their mtime
# and ninja recompiles only what changed.
sync_file() {
    local src=$1 dst=$2
    mkdir -p "$(dirname "$dst")"
    if ! cmp -s "$src" "$dst"; then
        cp "$src" "$dst"
        say "updated ${dst#"$tree"/}"
    fi
}

# Pristine copies of the QEMU files the series modifies, taken from the tarball once:
# patches are applied to these, never to the shared tree that another checkout changed.
ensure_pristine() {
    local missing=() p
    for p in "$@"; do
        [ -f "$work/pristine/$p" ] || missing+=("qemu-$qemu_version/$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    mkdir -p "$work/pristine"
    tar -C "$work/pristine" -xJf "$cache/dl/$tarball" --strip-components=1 "${missing[@]}"
}

# Applies the series (hw-virtio-kernelet/patches, its first patch generated now from this
# checkout's device files) to pristine copies in a staging tree, strictly (no fuzz), and
# then copies into the shared tree only the files whose content differs. Files the last
# run's series touched and this one does not are restored or removed, and so are device
# files another checkout added.
# Runs qemu-series.py, its output lines into the array named $1 (mapfile alone would
# not notice the script failing).
series_tool() {
    local -n into=$1
    local out
    shift
    out=$(python3 "$src_root/hw-virtio-kernelet/qemu-series.py" "$@") ||
        { say "error: qemu-series.py $* failed" >&2; exit 1; }
    mapfile -t into <<<"$out"
}

apply_series() {
    local stage="$work/stage" p f
    local touched patches
    series_tool touched touched
    ensure_pristine "${touched[@]}"
    rm -rf "$stage"
    mkdir -p "$stage/tree"
    for p in "${touched[@]}"; do
        mkdir -p "$stage/tree/$(dirname "$p")"
        cp "$work/pristine/$p" "$stage/tree/$p"
    done
    series_tool patches export "$stage/patches"
    for p in "${patches[@]}"; do
        if ! patch -d "$stage/tree" -p1 --fuzz=0 --batch --silent -i "$p"; then
            say "error: $(basename "$p") does not apply to QEMU $qemu_version" >&2
            exit 1
        fi
    done
    (cd "$stage/tree" && find . -type f | sed 's|^\./||' | sort) >"$work/series-files.new"
    while read -r f; do
        sync_file "$stage/tree/$f" "$tree/$f"
    done <"$work/series-files.new"
    forget_files "$work/series-files.new"
    mv "$work/series-files.new" "$work/series-files"
}

# Puts back what the previous series changed and the new one (list in $1) does not.
forget_files() {
    local now=$1 f
    {
        [ -f "$work/series-files" ] && cat "$work/series-files"
        (cd "$tree" && find hw/virtio/kernelet include/kernelet -type f 2>/dev/null)
    } | sort -u | while read -r f; do
        grep -qxF -- "$f" "$now" && continue
        if [ -f "$work/pristine/$f" ]; then
            sync_file "$work/pristine/$f" "$tree/$f"
        elif [ -e "$tree/$f" ]; then
            rm -f "$tree/$f"
            say "removed $f"
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
apply_series
configure
say "building qemu-system-x86_64 with ninja -j$jobs"
ninja -C "$build" -j"$jobs" qemu-system-x86_64
cmp -s "$build/qemu-system-x86_64" "$output" 2>/dev/null || cp "$build/qemu-system-x86_64" "$output"
say "done: $output"
