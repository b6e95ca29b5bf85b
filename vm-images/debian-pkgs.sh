# Sourced by build-image.sh and guest-driver/kernel/build-module.sh: which Debian kernel
# the guest runs, and fetching Debian packages into the shared cache.
#
# Environment: KERNELET_DEB_CACHE (default ~/.cache/kernelet/debs), KERNELET_GUEST_KERNEL
# (a linux-image-* package; default: what linux-image-amd64 depends on now).

kernelet_deb_cache=${KERNELET_DEB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernelet/debs}

# Takes the cache lock (fd 9) for the rest of the calling script.
kernelet_lock_cache() {
    mkdir -p "$kernelet_deb_cache"
    exec 9>"$kernelet_deb_cache/lock"
    flock 9
}

# Prints the guest kernel's image package, e.g. linux-image-6.1.0-56-amd64.
kernelet_kernel_pkg() {
    local pkg=${KERNELET_GUEST_KERNEL:-$(apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)}
    [ -n "$pkg" ] || { echo "error: cannot resolve linux-image-amd64 (apt-get update?)" >&2; return 1; }
    echo "$pkg"
}

# Prints the version apt would install of package $1.
kernelet_candidate() {
    local ver
    ver=$(apt-cache policy "$1" | sed -n 's/^ *Candidate: //p')
    [ -n "$ver" ] && [ "$ver" != "(none)" ] || { echo "error: no candidate for $1" >&2; return 1; }
    echo "$ver"
}

# Downloads package $1 at version $2 (default: the candidate) once and prints the .deb's
# path; the file name carries the version, so a new version is a new download.
kernelet_fetch_deb() {
    local p=$1 ver=${2:-} file
    [ -n "$ver" ] || ver=$(kernelet_candidate "$p") || return 1
    file=$(ls "$kernelet_deb_cache/${p}_${ver//:/%3a}_"*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$file" ]; then
        echo "fetch: downloading $p $ver" >&2
        (cd "$kernelet_deb_cache" && apt-get download -q -o APT::Sandbox::User=root "$p=$ver" >/dev/null)
        file=$(ls "$kernelet_deb_cache/${p}_${ver//:/%3a}_"*.deb | head -n1)
    fi
    echo "$file"
}
