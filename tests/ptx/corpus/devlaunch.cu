// Dynamic parallelism: a kernel that launches another from the device (-rdc=true).
extern "C" __global__ void dl_child(unsigned *out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = blockIdx.x;
}

extern "C" __global__ void dl_parent(unsigned *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        dl_child<<<2, 32>>>(out);
}
