/* The device tenants see (DEVICE_GET): the backend's figures, and for the attributes a
 * backend does not report, the values of a CUDA device of the same compute capability
 * (numbers are CUdevice_attribute values of cuda.h; tests/libcuda checks them against it). */
#include <stdio.h>
#include <string.h>

#include "server_internal.h"

enum {
    A_MAX_THREADS_PER_BLOCK = 1, A_MAX_BLOCK_X = 2, A_MAX_BLOCK_Y = 3, A_MAX_BLOCK_Z = 4,
    A_MAX_GRID_X = 5, A_MAX_GRID_Y = 6, A_MAX_GRID_Z = 7, A_SHARED_PER_BLOCK = 8,
    A_CONSTANT_MEMORY = 9, A_WARP_SIZE = 10, A_MAX_PITCH = 11, A_REGS_PER_BLOCK = 12,
    A_CLOCK_RATE = 13, A_TEXTURE_ALIGNMENT = 14, A_GPU_OVERLAP = 15, A_SM_COUNT = 16,
    A_CAN_MAP_HOST = 19, A_CONCURRENT_KERNELS = 31, A_PCI_BUS = 33, A_PCI_DEVICE = 34,
    A_MEMORY_CLOCK = 36, A_BUS_WIDTH = 37, A_L2_SIZE = 38, A_THREADS_PER_SM = 39,
    A_ASYNC_ENGINES = 40, A_UNIFIED_ADDRESSING = 41, A_PCI_DOMAIN = 50,
    A_TEXTURE_PITCH_ALIGNMENT = 51, A_TEX1D_LINEAR_WIDTH = 69, A_CC_MAJOR = 75, A_CC_MINOR = 76,
    A_STREAM_PRIORITIES = 78, A_GLOBAL_L1 = 79, A_LOCAL_L1 = 80, A_SHARED_PER_SM = 81,
    A_REGS_PER_SM = 82, A_MANAGED_MEMORY = 83, A_SINGLE_TO_DOUBLE = 87,
    A_PREEMPTION = 90, A_COOPERATIVE = 95, A_SHARED_OPTIN = 97, A_HOST_REGISTER = 99,
    A_MAX_BLOCKS_PER_SM = 106, A_PERSISTING_L2 = 108, A_ACCESS_WINDOW = 109,
    A_RESERVED_SHARED = 111, A_MEMORY_POOLS = 115, A_CLUSTER_LAUNCH = 120,
};

/* A Hopper-class device (compute capability 9.0); what the backend reports overrides it. */
static const struct {
    int attr;
    int32_t value;
} defaults[] = {
    {A_MAX_THREADS_PER_BLOCK, 1024}, {A_MAX_BLOCK_X, 1024}, {A_MAX_BLOCK_Y, 1024},
    {A_MAX_BLOCK_Z, 64}, {A_MAX_GRID_X, 2147483647}, {A_MAX_GRID_Y, 65535},
    {A_MAX_GRID_Z, 65535}, {A_SHARED_PER_BLOCK, 49152}, {A_CONSTANT_MEMORY, 65536},
    {A_WARP_SIZE, 32}, {A_MAX_PITCH, 2147483647}, {A_REGS_PER_BLOCK, 65536},
    {A_CLOCK_RATE, 1980000}, {A_TEXTURE_ALIGNMENT, 512}, {A_GPU_OVERLAP, 1}, {A_SM_COUNT, 132},
    {A_CAN_MAP_HOST, 1}, {A_CONCURRENT_KERNELS, 1}, {A_PCI_BUS, 0}, {A_PCI_DEVICE, 0},
    {A_MEMORY_CLOCK, 2619000}, {A_BUS_WIDTH, 5120}, {A_L2_SIZE, 52428800},
    {A_THREADS_PER_SM, 2048}, {A_ASYNC_ENGINES, 3}, {A_UNIFIED_ADDRESSING, 1},
    {A_PCI_DOMAIN, 0}, {A_TEXTURE_PITCH_ALIGNMENT, 32}, {A_TEX1D_LINEAR_WIDTH, 268435456},
    {A_CC_MAJOR, 9}, {A_CC_MINOR, 0}, {A_STREAM_PRIORITIES, 1}, {A_GLOBAL_L1, 1},
    {A_LOCAL_L1, 1}, {A_SHARED_PER_SM, 233472}, {A_REGS_PER_SM, 65536},
    {A_MANAGED_MEMORY, 0}, {A_SINGLE_TO_DOUBLE, 2}, {A_PREEMPTION, 1}, {A_COOPERATIVE, 0},
    {A_SHARED_OPTIN, 232448}, {A_HOST_REGISTER, 1}, {A_MAX_BLOCKS_PER_SM, 32},
    {A_PERSISTING_L2, 0}, {A_ACCESS_WINDOW, 0}, {A_RESERVED_SHARED, 1024},
    {A_MEMORY_POOLS, 0}, {A_CLUSTER_LAUNCH, 0},
};

static void set(struct kernelet_device *d, int attr, uint64_t v)
{
    if (v)
        d->attrs[attr] = v > INT32_MAX ? INT32_MAX : (int32_t)v;
}

/* A stable UUID for the device: a hash of its name (the same in every tenant). */
static void uuid_from_name(const char *name, uint8_t uuid[16])
{
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;

    for (const char *p = name; *p; p++) {
        h1 = (h1 ^ (uint8_t)*p) * 0x100000001b3ull;
        h2 = (h2 ^ (uint8_t)*p) * 0x100000001b3ull + 1;
    }
    memcpy(uuid, &h1, 8);
    memcpy(uuid + 8, &h2, 8);
    uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 layout */
    uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

void ks_device_describe(const kbackend_device_info *info, struct kernelet_device *d)
{
    memset(d, 0, sizeof(*d));
    for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
        d->attrs[defaults[i].attr] = defaults[i].value;
    snprintf(d->name, sizeof(d->name), "%s", info->name[0] ? info->name : "Kernelet GPU");
    uuid_from_name(d->name, d->uuid);
    d->total_mem = info->total_mem ? info->total_mem : (16ull << 30);
    d->driver_version = 13000;
    d->n_attrs = KERNELET_DEVICE_ATTRS;
    if (info->cc_major) {
        d->attrs[A_CC_MAJOR] = info->cc_major;
        d->attrs[A_CC_MINOR] = info->cc_minor;
    }
    set(d, A_SM_COUNT, info->sms);
    set(d, A_MAX_THREADS_PER_BLOCK, info->max_threads_per_block);
    set(d, A_MAX_BLOCK_X, info->max_threads_per_block);
    set(d, A_MAX_BLOCK_Y, info->max_threads_per_block);
    set(d, A_THREADS_PER_SM, (uint64_t)info->max_warps_per_sm * 32);
    set(d, A_MAX_BLOCKS_PER_SM, info->max_blocks_per_sm);
    set(d, A_REGS_PER_SM, info->regs_per_sm);
    set(d, A_REGS_PER_BLOCK, info->regs_per_sm);
    set(d, A_SHARED_PER_SM, info->smem_per_sm);
    set(d, A_SHARED_OPTIN, info->max_smem_per_block);
    set(d, A_CLOCK_RATE, (uint64_t)(info->clock_mhz * 1000.0));
    if (info->pci_known) {  /* the real GPU's place: NVML on the host finds it there */
        d->attrs[A_PCI_DOMAIN] = (int32_t)(info->pci_domain & 0x7fffffff);
        d->attrs[A_PCI_BUS] = (int32_t)(info->pci_bus & 0xff);
        d->attrs[A_PCI_DEVICE] = (int32_t)(info->pci_device & 0x1f);
    }
    /* what the backend runs: cuBLASLt picks cluster kernels only where the device says so */
    d->attrs[A_COOPERATIVE] = d->attrs[A_CLUSTER_LAUNCH] = info->launch_attrs ? 1 : 0;
}
