/* Which transport the library uses: the environment decides once, at cuInit.
 *
 * KERNELET_TRANSPORT=socket|virtio forces one. Otherwise a VM's device wins when it is
 * there (/dev/kernelet0) and no socket was named (KERNELET_SOCKET), so that an unmodified
 * program in a guest needs no setting at all. KERNELET_DEVICE names another device file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libcuda_internal.h"

#define DEFAULT_DEVICE "/dev/kernelet0"

int kcu_transport_open(const struct kcu_transport_ops **ops, void **t)
{
    const char *which = getenv("KERNELET_TRANSPORT");
    const char *sock = getenv("KERNELET_SOCKET");
    const char *dev = getenv("KERNELET_DEVICE");
    bool virtio;

    if (!dev || !*dev)
        dev = DEFAULT_DEVICE;
    if (which && *which) {
        if (strcmp(which, "virtio") != 0 && strcmp(which, "socket") != 0) {
            kcu_log("KERNELET_TRANSPORT=%s: expected socket or virtio", which);
            return -EINVAL;
        }
        virtio = strcmp(which, "virtio") == 0;
    } else {
        virtio = (!sock || !*sock) && access(dev, F_OK) == 0;
    }
    return virtio ? kcu_transport_virtio_open(dev, ops, t)
                  : kcu_transport_socket_open(sock, ops, t);
}
