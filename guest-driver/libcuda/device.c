/* Devices: what kerneletd reports about its GPU (DEVICE_GET), answered locally. */
#include <stdio.h>
#include <string.h>

#include "libcuda_internal.h"

#define DEVICE_OR_FAIL(d, dev)                                                              \
    struct kcu_device *d;                                                                   \
    do {                                                                                    \
        CUresult init_ = kcu_initialized();                                                 \
        if (init_ != CUDA_SUCCESS)                                                          \
            return init_;                                                                   \
        if (!(d = kcu_device_at(dev)))                                                      \
            return CUDA_ERROR_INVALID_DEVICE;                                               \
    } while (0)

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    CUresult r = kcu_initialized();

    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    *count = kcu.n_devices;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = kcu_initialized();

    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (ordinal < 0 || ordinal >= kcu.n_devices)
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    snprintf(name, (size_t)len, "%s", d->props.name);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    *bytes = (size_t)d->props.total_mem;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    if (attrib < 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX || (unsigned)attrib >= d->props.n_attrs)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = d->props.attrs[attrib];
    return CUDA_SUCCESS;
}

/* cuda.h maps cuDeviceGetUuid to its _v2; both symbols are defined here. */
#undef cuDeviceGetUuid
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    memcpy(uuid->bytes, d->props.uuid, sizeof(uuid->bytes));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    *major = d->props.attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
    *minor = d->props.attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    const int32_t *a = d->props.attrs;
    memset(prop, 0, sizeof(*prop));
    prop->maxThreadsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    prop->maxThreadsDim[0] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
    prop->maxThreadsDim[1] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
    prop->maxThreadsDim[2] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
    prop->maxGridSize[0] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
    prop->maxGridSize[1] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
    prop->maxGridSize[2] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
    prop->sharedMemPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
    prop->totalConstantMemory = a[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
    prop->SIMDWidth = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
    prop->memPitch = a[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
    prop->regsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
    prop->clockRate = a[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
    prop->textureAlign = a[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
    return CUDA_SUCCESS;
}

/* "0000:01:00.0" style, from the PCI attributes. */
CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    snprintf(pciBusId, (size_t)len, "%08x:%02x:%02x.0",
             (unsigned)d->props.attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
             (unsigned)d->props.attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
             (unsigned)d->props.attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    CUresult r = kcu_initialized();
    unsigned dom = 0, bus = 0, slot = 0, fn = 0;

    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if (sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
        dom = 0;
        if (sscanf(pciBusId, "%x:%x.%x", &bus, &slot, &fn) != 3)
            return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < kcu.n_devices; i++) {
        const int32_t *a = kcu.dev[i].props.attrs;
        if ((unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] == dom &&
            (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] == bus &&
            (unsigned)a[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] == slot) {
            *dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    (void)d;
    if (!kcu_device_at(peerDev))
        return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements,
                                                    CUarray_format format, unsigned numChannels,
                                                    CUdevice dev)
{
    if (!maxWidthInElements)
        return CUDA_ERROR_INVALID_VALUE;
    DEVICE_OR_FAIL(d, dev);
    (void)format;
    (void)numChannels;
    *maxWidthInElements = (size_t)d->props.attrs[CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH];
    return CUDA_SUCCESS;
}
