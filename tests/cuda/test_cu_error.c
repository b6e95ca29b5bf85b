/* Unit tests of Driver API results as executor errors (host-sched/backends/cuda/cu_error.h). */
#include "cu_error.h"

#include <glib.h>
#include <string.h>

static void test_codes(void)
{
    const struct { CUresult r; int code; } cases[] = {
        {CUDA_SUCCESS, KBACKEND_OK},
        {CUDA_ERROR_INVALID_VALUE, KBACKEND_EINVAL},
        {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, KBACKEND_EINVAL},
        {CUDA_ERROR_OUT_OF_MEMORY, KBACKEND_EDEVMEM},
        {CUDA_ERROR_NOT_FOUND, KBACKEND_ENOTFOUND},
        {CUDA_ERROR_INVALID_PTX, KBACKEND_EMODULE},
        {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, KBACKEND_EMODULE},
        {CUDA_ERROR_NO_BINARY_FOR_GPU, KBACKEND_EMODULE},
        {CUDA_ERROR_ILLEGAL_ADDRESS, KBACKEND_ELAUNCH},
        {CUDA_ERROR_LAUNCH_FAILED, KBACKEND_ELAUNCH},
        {CUDA_ERROR_MISALIGNED_ADDRESS, KBACKEND_ELAUNCH},
        {CUDA_ERROR_ASSERT, KBACKEND_ELAUNCH},
        {CUDA_ERROR_NOT_SUPPORTED, KBACKEND_EUNSUPPORTED},
        {CUDA_ERROR_NO_DEVICE, KBACKEND_EDEVICE},
        {CUDA_ERROR_ECC_UNCORRECTABLE, KBACKEND_EDEVICE},
        {CUDA_ERROR_UNKNOWN, KBACKEND_EDEVICE},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        g_assert_cmpint(kcuda_error_code(cases[i].r), ==, cases[i].code);
}

/* Device faults and lost hardware poison the context; refusals of a request do not. */
static void test_sticky(void)
{
    const CUresult sticky[] = {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED,
                               CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_HARDWARE_STACK_ERROR,
                               CUDA_ERROR_ECC_UNCORRECTABLE, CUDA_ERROR_LAUNCH_TIMEOUT};
    const CUresult not_sticky[] = {CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE,
                                   CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_PTX,
                                   CUDA_ERROR_NOT_FOUND, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                                   CUDA_ERROR_NOT_READY};
    for (size_t i = 0; i < G_N_ELEMENTS(sticky); i++)
        g_assert_true(kcuda_error_is_sticky(sticky[i]));
    for (size_t i = 0; i < G_N_ELEMENTS(not_sticky); i++)
        g_assert_false(kcuda_error_is_sticky(not_sticky[i]));
    g_assert_true(kcuda_error_is_kernel_fault(CUDA_ERROR_ILLEGAL_ADDRESS));
    g_assert_false(kcuda_error_is_kernel_fault(CUDA_ERROR_ECC_UNCORRECTABLE));
}

static void test_jit_summary(void)
{
    char out[80];
    const char log[] = "ptxas info    : 0 bytes gmem\n"
                       "ptxas application ptx input, line 12; error   : Unknown symbol 'x'\n"
                       "ptxas fatal   : Ptx assembly aborted due to errors\n";
    kcuda_jit_summary(log, sizeof(log), out, sizeof(out));
    g_assert_cmpstr(out, ==, "ptxas application ptx input, line 12; error : Unknown symbol 'x'");

    const char info_only[] = "\n  \n  ptxas info    :   Compiling entry\n";
    kcuda_jit_summary(info_only, sizeof(info_only), out, sizeof(out));
    g_assert_cmpstr(out, ==, "ptxas info : Compiling entry");

    kcuda_jit_summary("", 1, out, sizeof(out));
    g_assert_cmpstr(out, ==, "");
    kcuda_jit_summary(NULL, 0, out, sizeof(out));
    g_assert_cmpstr(out, ==, "");

    char small[10];
    kcuda_jit_summary(log, sizeof(log), small, sizeof(small));
    g_assert_cmpstr(small, ==, "ptxas app");

    /* the log buffer need not be NUL-terminated within its length */
    const char raw[] = {'e', 'r', 'r', 'o', 'r', ' ', 'x'};
    kcuda_jit_summary(raw, sizeof(raw), out, sizeof(out));
    g_assert_cmpstr(out, ==, "error x");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/cu-error/codes", test_codes);
    g_test_add_func("/cuda/cu-error/sticky", test_sticky);
    g_test_add_func("/cuda/cu-error/jit-summary", test_jit_summary);
    return g_test_run();
}
