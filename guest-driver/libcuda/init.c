/* cuInit, the driver version and the process-wide state: one connection to kerneletd
 * (this process is one tenant) and the devices it offers. */
#include <string.h>

#include "libcuda_internal.h"

struct kcu_state kcu = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
static bool init_called;

/* What this library offers whatever the GPU does: kernels read only pinned host memory
 * (cuMemHostAlloc's, memory.c) and only where the daemon says its kernels may (a tenant
 * of its own context on the host: CAN_MAP_HOST_MEMORY), never a guest's pages nor memory
 * registered with cuMemHostRegister, so programs that ask otherwise take the path for
 * devices without mapped memory; memory pools of its own (mempool.c), not shareable
 * between processes. */
static void library_limits(struct kernelet_device *d)
{
    d->attrs[CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED] = 1;
    d->attrs[CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES] = 0;
    if (!kcu_client_regions_shared(kcu.client))
        d->attrs[CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY] = 0;
    d->attrs[CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM] = 0;
}

static CUresult query_devices(void)
{
    unsigned n = kcu.session.device_count;

    if (n > KCU_MAX_DEVICES)
        n = KCU_MAX_DEVICES;
    for (unsigned i = 0; i < n; i++) {
        struct kernelet_device_get q = {.ordinal = i};
        CUresult r = kcu_call(kcu.client, KERNELET_OP_DEVICE_GET, &q, sizeof(q), NULL, 0,
                              &kcu.dev[i].props, sizeof(kcu.dev[i].props), NULL);
        if (r != CUDA_SUCCESS)
            return r;
        kcu.dev[i].props.name[sizeof(kcu.dev[i].props.name) - 1] = 0;
        library_limits(&kcu.dev[i].props);
    }
    kcu.n_devices = (int)n;
    return n ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

static void do_init(void)
{
    CUresult r = kcu_client_open(&kcu.client, &kcu.session);

    if (r == CUDA_SUCCESS)
        r = query_devices();
    if (r != CUDA_SUCCESS && kcu.client) {
        kcu_client_close(kcu.client);
        kcu.client = NULL;
    }
    kcu_log("cuInit: %d (%d devices)", (int)r, kcu.n_devices);
    init_result = r;
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&init_once, do_init);
    __atomic_store_n(&init_called, true, __ATOMIC_RELEASE);
    return init_result;
}

CUresult kcu_initialized(void)
{
    if (!__atomic_load_n(&init_called, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_NOT_INITIALIZED;
    return init_result;
}

CUresult kcu_ready(void)
{
    CUresult r = kcu_initialized();

    return r != CUDA_SUCCESS ? r : kcu_sticky_error(kcu.client);
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = KCU_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

struct kcu_device *kcu_device_at(CUdevice d)
{
    return (d >= 0 && d < kcu.n_devices) ? &kcu.dev[d] : NULL;
}

int kcu_attr(int device, CUdevice_attribute a)
{
    struct kcu_device *d = kcu_device_at(device);

    if (!d || a < 0 || (unsigned)a >= KERNELET_DEVICE_ATTRS)
        return 0;
    return d->props.attrs[a];
}
