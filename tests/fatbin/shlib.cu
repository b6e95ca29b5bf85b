// The test shared object: its .nv_fatbin holds this unit's fatbin.
extern "C" __global__ void shlib_kernel(int *a, int v)
{
    a[blockIdx.x] = v;
}

extern "C" void shlib_launch(int *p, int v)
{
    shlib_kernel<<<4, 1>>>(p, v);
}
