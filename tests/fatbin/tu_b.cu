// The other translation unit of the test executable (never run: only its file is read).
extern "C" __global__ void tu_b_kernel(double *a)
{
    a[threadIdx.x] += 1.0;
}

void launch_tu_a(float *p);

int main()
{
    launch_tu_a(nullptr);
    tu_b_kernel<<<1, 32>>>(nullptr);
    return 0;
}
