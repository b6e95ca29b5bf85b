# Runs inside the guest (busybox sh): reads virtio-kernelet's configuration space through
# its PCI BAR, as a driver would see it. Debian's kernel has IO_STRICT_DEVMEM, so virtio-pci
# is unbound first; the BAR stays assigned and memory decoding on.
d=$(grep -l 0x1079 /sys/bus/pci/devices/*/device | head -n1); d=${d%/device}
echo ${d##*/} > /sys/bus/pci/drivers/virtio-pci/unbind
cfg=$d/config
b() { od -An -tu1 -j$1 -N1 $cfg | tr -d ' '; }
ptr=$(b 52); off=
while [ "$ptr" -ne 0 ]; do
  if [ "$(b $ptr)" -eq 9 ] && [ "$(b $((ptr+3)))" -eq 4 ]; then
    bar=$(b $((ptr+4))); off=$(od -An -tu4 -j$((ptr+8)) -N4 $cfg | tr -d ' '); break
  fi
  ptr=$(b $((ptr+1)))
done
base=$(sed -n "$((bar+1))p" $d/resource | cut -d' ' -f1)
a=$((base + off))
echo "KERNELET-CFG version $(devmem $a 32) flags $(devmem $((a+4)) 32) maxreq $(devmem $((a+8)) 32) sms $(devmem $((a+24)) 32)"
