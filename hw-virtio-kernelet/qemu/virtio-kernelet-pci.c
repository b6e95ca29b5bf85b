/*
 * virtio-kernelet-pci: the PCI proxy of virtio-kernelet (-device virtio-kernelet-pci,
 * or -device virtio-kernelet on PCI machines).
 *
 * The run-time policy and statistics properties live on the virtio device; aliases make
 * them reachable on the proxy, which is the object an operator names in qom-set/qom-get.
 */
#include "qemu/osdep.h"

#include "hw/virtio/virtio-pci.h"
#include "virtio-kernelet.h"
#include "qapi/error.h"
#include "qemu/module.h"
#include "qom/object.h"

typedef struct VirtIOKerneletPCI VirtIOKerneletPCI;

#define TYPE_VIRTIO_KERNELET_PCI "virtio-kernelet-pci-base"
DECLARE_INSTANCE_CHECKER(VirtIOKerneletPCI, VIRTIO_KERNELET_PCI, TYPE_VIRTIO_KERNELET_PCI)

struct VirtIOKerneletPCI {
    VirtIOPCIProxy parent_obj;
    VirtIOKernelet vdev;
};

/* Properties of the virtio device that the proxy exposes under the same names. */
static const char *const kernelet_pci_aliases[] = {
    "weight", "priority", "mem-quota", "max-inflight", "slicing", "kernel-time-limit-ms",
    "kernels-launched", "gpu-time-ns", "bytes-copied", "mem-in-use", "errors", "requests",
    "quota-hits", "bulk-zero-copy", "bulk-staged",
    "x-fault",
};

static void virtio_kernelet_pci_realize(VirtIOPCIProxy *vpci_dev, Error **errp)
{
    VirtIOKerneletPCI *dev = VIRTIO_KERNELET_PCI(vpci_dev);
    DeviceState *vdev = DEVICE(&dev->vdev);

    /* Modern only: Linux binds ids above the transitional range through virtio 1.x. */
    virtio_pci_force_virtio_1(vpci_dev);
    qdev_realize(vdev, BUS(&vpci_dev->bus), errp);
}

static void virtio_kernelet_pci_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    VirtioPCIClass *k = VIRTIO_PCI_CLASS(klass);
    PCIDeviceClass *pcidev_k = PCI_DEVICE_CLASS(klass);

    k->realize = virtio_kernelet_pci_realize;
    pcidev_k->class_id = PCI_CLASS_PROCESSOR_CO;
    dc->desc = "Kernelet paravirtual GPU compute device";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static void virtio_kernelet_pci_instance_init(Object *obj)
{
    VirtIOKerneletPCI *dev = VIRTIO_KERNELET_PCI(obj);

    virtio_instance_init_common(obj, &dev->vdev, sizeof(dev->vdev), TYPE_VIRTIO_KERNELET);
    for (size_t i = 0; i < ARRAY_SIZE(kernelet_pci_aliases); i++) {
        object_property_add_alias(obj, kernelet_pci_aliases[i], OBJECT(&dev->vdev),
                                  kernelet_pci_aliases[i]);
    }
}

static const VirtioPCIDeviceTypeInfo virtio_kernelet_pci_info = {
    .base_name = TYPE_VIRTIO_KERNELET_PCI,
    .generic_name = "virtio-kernelet-pci",
    .instance_size = sizeof(VirtIOKerneletPCI),
    .instance_init = virtio_kernelet_pci_instance_init,
    .class_init = virtio_kernelet_pci_class_init,
};

static void virtio_kernelet_pci_register(void)
{
    virtio_pci_types_register(&virtio_kernelet_pci_info);
}

type_init(virtio_kernelet_pci_register)
