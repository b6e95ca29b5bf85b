// One of two translation units of the test executable: each gets a fatbin of its own.
extern "C" __global__ void tu_a_kernel(float *a)
{
    a[threadIdx.x] *= 2.0f;
}

void launch_tu_a(float *p)
{
    tu_a_kernel<<<1, 32>>>(p);
}
