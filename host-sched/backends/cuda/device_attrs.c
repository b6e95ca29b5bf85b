/* The device as the executor reports it (see device_attrs.h). */
#include "device_attrs.h"

typedef struct attr_need {
    CUdevice_attribute attr;
    const char *name;
} attr_need;

/* Order matters: fill() reads the values by these positions. */
enum {
    A_CC_MAJOR, A_CC_MINOR, A_SMS, A_THREADS_SM, A_BLOCKS_SM, A_THREADS_BLOCK, A_REGS_SM,
    A_SMEM_SM, A_SMEM_OPTIN, A_CLOCK, A_MEM_CLOCK, A_BUS, A_BX, A_BY, A_BZ, A_GX, A_GY, A_GZ,
    A_COUNT
};

static const attr_need needed[A_COUNT] = {
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major"},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor"},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count"},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per multiprocessor"},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "blocks per multiprocessor"},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block"},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per multiprocessor"},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per multiprocessor"},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block"},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate"},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate"},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width"},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "block x"},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, "block y"},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "block z"},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "grid x"},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "grid y"},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "grid z"},
};

/* Registers one thread may use: 255 since compute capability 3.5, 63 before. */
static unsigned max_regs_per_thread(int major, int minor)
{
    return major > 3 || (major == 3 && minor >= 5) ? 255 : 63;
}

static void fill(const int v[A_COUNT], kbackend_device_info *info, kcuda_limits *lim)
{
    info->cc_major = v[A_CC_MAJOR];
    info->cc_minor = v[A_CC_MINOR];
    info->sms = (unsigned)v[A_SMS];
    info->max_warps_per_sm = (unsigned)v[A_THREADS_SM] / 32;
    info->max_blocks_per_sm = (unsigned)v[A_BLOCKS_SM];
    info->max_threads_per_block = (unsigned)v[A_THREADS_BLOCK];
    info->regs_per_sm = (unsigned)v[A_REGS_SM];
    info->max_regs_per_thread = max_regs_per_thread(v[A_CC_MAJOR], v[A_CC_MINOR]);
    info->smem_per_sm = (unsigned)v[A_SMEM_SM];
    info->max_smem_per_block = (unsigned)v[A_SMEM_OPTIN];
    info->clock_mhz = v[A_CLOCK] / 1e3;
    /* kHz x 1e3 x 2 transfers per clock x bytes per transfer, in 1e9 bytes/s */
    info->mem_bandwidth_gbs = 2.0 * v[A_MEM_CLOCK] * 1e3 * (v[A_BUS] / 8.0) / 1e9;
    lim->max_threads_per_block = info->max_threads_per_block;
    for (int i = 0; i < 3; i++) {
        lim->max_block[i] = (unsigned)v[A_BX + i];
        lim->max_grid[i] = (unsigned)v[A_GX + i];
    }
}

/* Where the GPU sits on the PCI bus, when the driver says (0 is a valid bus and domain). */
static void pci_location(kcuda_attr_fn get, void *user, kbackend_device_info *info)
{
    int dom, bus, dev;
    info->pci_known = !get(user, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &dom) &&
                      !get(user, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &bus) &&
                      !get(user, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &dev) && dom >= 0 &&
                      bus >= 0 && dev >= 0;
    if (info->pci_known) {
        info->pci_domain = (unsigned)dom;
        info->pci_bus = (unsigned)bus;
        info->pci_device = (unsigned)dev;
    }
}

int kcuda_device_attrs(kcuda_attr_fn get, void *user, kbackend_device_info *info,
                       kcuda_limits *lim, kbackend_error *err)
{
    if (!get || !info || !lim)
        return kbackend_fail(err, KBACKEND_EINVAL, "NULL argument");
    int v[A_COUNT];
    for (int i = 0; i < A_COUNT; i++) {
        int bad = get(user, needed[i].attr, &v[i]);
        /* compute capability minor may be 0; everything else must be positive */
        if (bad || v[i] < 0 || (v[i] == 0 && i != A_CC_MINOR))
            return kbackend_fail(err, KBACKEND_EDEVICE, "device attribute '%s' %s", needed[i].name,
                              bad ? "unavailable" : "not positive");
    }
    fill(v, info, lim);
    pci_location(get, user, info);
    return 0;
}
