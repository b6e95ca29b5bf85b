#!/usr/bin/env bash
# The guest image is reproducible: building it again from the same (cached) Debian
# packages gives byte-identical kernel and initramfs files.
#   image_reproducible_test.sh BUILD_IMAGE_SCRIPT INIT VMLINUZ INITRAMFS [SRC=DEST ...]
# (the SRC=DEST extras the image was built with)
set -euo pipefail
script=$1 init=$2 kernel=$3 initrd=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$script" "$init" "$tmp/vmlinuz" "$tmp/initramfs.cpio.gz" "$@" >/dev/null
status=0
for pair in "$kernel:$tmp/vmlinuz" "$initrd:$tmp/initramfs.cpio.gz"; do
    a=${pair%%:*} b=${pair#*:}
    if cmp -s "$a" "$b"; then
        echo "same: $(basename "$a") $(sha256sum "$a" | cut -c1-16)"
    else
        echo "DIFFERENT: $(basename "$a"): $(sha256sum "$a" | cut -c1-16) vs $(sha256sum "$b" | cut -c1-16)"
        status=1
    fi
done
exit $status
