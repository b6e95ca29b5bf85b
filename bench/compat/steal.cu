/* A tenant that reaches for another tenant's memory through a kernel (not a compatibility
 * program: its two halves run as two processes, tests/gpu/acceptance/contain.sh):
 *   steal victim FILE   fills a buffer with a secret, writes its device address to FILE,
 *                       waits for FILE.done, checks its buffer is unchanged:
 *                       RESULT name=victim intact=yes|no
 *   steal thief FILE [OFFSET]
 *                       allocates a buffer of the same size, then runs a kernel given the
 *                       victim's address (plus OFFSET bytes: 2 makes every word access
 *                       misaligned) that copies the words it finds there into its own
 *                       buffer and overwrites them; counts the secret words it got:
 *                       RESULT name=thief stolen=N status=NAME, and creates FILE.done
 * Each exits 0 when the other tenant stayed out (intact, nothing stolen). Natively the
 * address means nothing in the thief's context (a fault); through kerneletd the fence
 * redirects it into the thief's own window. */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"

enum { WORDS = 1 << 18 };
#define SECRET 0x5ec2e700u

__global__ void grab(unsigned *victim, unsigned *mine)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    mine[i] = victim[i];
    victim[i] = 0xbadbadu;
}

static int victim(const char *file)
{
    unsigned *d, *h = (unsigned *)malloc(WORDS * sizeof(unsigned));
    char done[512];
    for (unsigned i = 0; i < WORDS; i++)
        h[i] = SECRET + i;
    CHECK(cudaMalloc((void **)&d, WORDS * sizeof(unsigned)));
    CHECK(cudaMemcpy(d, h, WORDS * sizeof(unsigned), cudaMemcpyHostToDevice));
    FILE *f = fopen(file, "w");
    EXPECT(f != NULL, "cannot write %s", file);
    fprintf(f, "%llx\n", (unsigned long long)(uintptr_t)d);
    fclose(f);
    snprintf(done, sizeof(done), "%s.done", file);
    for (int t = 0; t < 1200 && access(done, F_OK) != 0; t++)
        usleep(50000);
    CHECK(cudaMemcpy(h, d, WORDS * sizeof(unsigned), cudaMemcpyDeviceToHost));
    unsigned changed = 0;
    for (unsigned i = 0; i < WORDS; i++)
        changed += h[i] != SECRET + i;
    printf("RESULT name=victim intact=%s changed=%u\n", changed ? "no" : "yes", changed);
    return changed ? 1 : 0;
}

static int thief(const char *file, unsigned long long offset)
{
    unsigned long long addr = 0;
    unsigned *mine, *h = (unsigned *)calloc(WORDS, sizeof(unsigned));
    char done[512];
    for (int t = 0; t < 1200 && !addr; t++) {
        FILE *f = fopen(file, "r");
        if (!f || fscanf(f, "%llx", &addr) != 1)
            addr = 0;
        if (f)
            fclose(f);
        if (!addr)
            usleep(50000);
    }
    EXPECT(addr != 0, "no address in %s", file);
    CHECK(cudaMalloc((void **)&mine, WORDS * sizeof(unsigned)));
    CHECK(cudaMemset(mine, 0, WORDS * sizeof(unsigned)));
    grab<<<WORDS / 256, 256>>>((unsigned *)(uintptr_t)(addr + offset), mine);
    cudaError_t st = cudaDeviceSynchronize();
    unsigned stolen = 0;
    if (st == cudaSuccess && cudaMemcpy(h, mine, WORDS * sizeof(unsigned),
                                        cudaMemcpyDeviceToHost) == cudaSuccess)
        for (unsigned i = 0; i < WORDS; i++)
            stolen += h[i] == SECRET + i;
    printf("RESULT name=thief stolen=%u status=%s\n", stolen, cudaGetErrorName(st));
    snprintf(done, sizeof(done), "%s.done", file);
    FILE *f = fopen(done, "w");
    if (f)
        fclose(f);
    return stolen ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "victim"))
        return victim(argv[2]);
    if ((argc == 3 || argc == 4) && !strcmp(argv[1], "thief"))
        return thief(argv[2], argc == 4 ? strtoull(argv[3], NULL, 0) : 0);
    fprintf(stderr, "usage: steal victim FILE | steal thief FILE [OFFSET]\n");
    return 2;
}
