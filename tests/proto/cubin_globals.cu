/* A cubin whose module variable takes 4 MiB of device memory (test_kerneletd_resources:
 * /kerneletd/module-variables-quota counts it against the tenant's quota). */
__device__ char big_table[4 << 20];

__global__ void touch(int i)
{
    big_table[i] = 1;
}
