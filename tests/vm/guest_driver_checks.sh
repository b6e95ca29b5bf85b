# Runs inside the guest (busybox sh), started by vm_guest_driver_test.py with two devices,
# kl0 and kl1: exercises virtio_kernelet.ko through kernelet-guest-probe and prints what
# it sees; the test on the host checks it. "ask" requests an action over QMP from the
# test and waits for its acknowledgement on the console.
P=/usr/bin/kernelet-guest-probe
dmesg -n 1            # kernel messages stay off the console; all of dmesg is printed last
stty -echo 2>/dev/null
ask() { echo "KERNELET-ASK $*"; while read -r a b; do [ "$a" = ACK ] && break; done; }
sys() { cat "/sys/class/misc/$1/$2" 2>/dev/null || echo none; }
modp() { cat "/sys/module/virtio_kernelet/parameters/$1" 2>/dev/null || echo none; }
# wait_for DEV ATTR VALUE: polls a sysfs attribute for up to 20 s
wait_for() {
    i=0
    while [ "$(sys "$1" "$2")" != "$3" ] && [ $i -lt 2000 ]; do usleep 10000; i=$((i + 1)); done
}
devs() { ls /dev | grep '^kernelet' | tr '\n' ' '; }

echo "DEVS $(devs)"
for n in kernelet0 kernelet1; do
    echo "SYSFS $n name=$(sys $n gpu_name | tr ' ' _) sms=$(sys $n gpu_sm_count)" \
         "mem=$(sys $n gpu_mem_bytes) cc=$(sys $n gpu_cc) version=$(sys $n proto_version)" \
         "max_bulk=$(sys $n max_bulk) generation=$(sys $n config_generation)"
done
$P config
$P -d /dev/kernelet1 config
$P hello
$P echo 8388608 1048576
$P parallel 3 1048576
$P contexts
$P errors
$P signal 1500
$P killtest 8 2500
$P flood 300 1500

# A policy change over QMP reaches the guest through a configuration-change interrupt.
gen=$(sys kernelet0 config_generation)
ask qom-set kl0 mem-quota 268435456
wait_for kernelet0 gpu_mem_bytes 268435456
echo "CONFIGCHANGE mem=$(sys kernelet0 gpu_mem_bytes) gen_before=$gen" \
     "gen_after=$(sys kernelet0 config_generation)"

# A misbehaving device: each fault hits one answer (EIO), the next one is fine.
for f in short-used long-used wrong-id bad-length; do
    ask fault kl0 $f
    $P request $f
    $P request after-$f
done
echo "FAILED-COUNTER $(sys kernelet0 failed)"

# A device that declares itself broken while it holds a request: both that request and
# the one that found it broken fail with EIO, the driver resets the device, and the
# next request works.
$P hold 8000 > /tmp/hold-reset.out &
wait_for kernelet0 inflight 1
ask fault kl0 broken
$P request broken
wait
sed 's/^/RESET-/' /tmp/hold-reset.out
$P request after-broken
echo "RESETS resets=$(sys kernelet0 resets) inflight=$(sys kernelet0 inflight)" \
     "pinned=$(sys kernelet0 pinned_pages)"

# Unload refused while a file is open; then unload, reload, and everything is back.
exec 3</dev/kernelet0
rmmod virtio_kernelet 2>/dev/null
echo "RMMOD-BUSY rc=$?"
exec 3<&-
rmmod virtio_kernelet
echo "RMMOD rc=$? devs=$(devs)"
insmod /lib/modules/extra/virtio_kernelet.ko
echo "INSMOD rc=$? devs=$(devs)"
$P -d /dev/kernelet1 config
$P hello

# Hot-unplug of kl1 while a process waits on it: ENODEV for that process, nothing pinned
# left, kernelet0 unaffected; then plugged back in.
$P -d /dev/kernelet1 hold 10000 > /tmp/hold-del.out &
wait_for kernelet1 inflight 1
ask device_del kl1
wait
sed 's/^/DEL-/' /tmp/hold-del.out
echo "AFTER-DEL devs=$(devs) pinned=$(modp pinned_pages) inflight=$(modp inflight)"
$P echo 1048576 1048576
ask device_add kl1
i=0; while [ ! -e /dev/kernelet1 ] && [ $i -lt 2000 ]; do usleep 10000; i=$((i + 1)); done
$P -d /dev/kernelet1 config

dmesg | sed 's/^/KERNELET-DMESG /'
