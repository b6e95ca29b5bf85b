/* Unit tests of kcuda_ptx_defines_variables and kcuda_cubin_defines_variables
 * (host-sched/backends/cuda/ptx_vars.h): which module texts and cubins define module-scope
 * .global or .const variables, and so are never shared. */
#include "ptx_vars.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "kernelet/fatbin.h"

#define HEAD ".version 7.5\n.target sm_75\n.address_size 64\n"
#define KERNEL ".visible .entry k(.param .u64 p)\n{\n    .reg .b32 %r<2>;\n" \
               "    .shared .align 4 .b8 buf[64];\n    .local .align 4 .b8 l[8];\n    ret;\n}\n"

static int defines(const char *text)
{
    return kcuda_ptx_defines_variables(text, strlen(text));
}

static void test_variables(void)
{
    g_assert_cmpint(defines(HEAD ".visible .global .align 4 .u32 counter;\n" KERNEL), ==, 1);
    g_assert_cmpint(defines(HEAD ".global .f32 v[2][3] = {{1.0,2.0,3.0},{4.0,5.0,6.0}};\n"), ==, 1);
    g_assert_cmpint(defines(HEAD ".const .align 8 .b8 table[16];\n" KERNEL), ==, 1);
    g_assert_cmpint(defines(HEAD ".weak .global .u64 w;\n"), ==, 1);
    /* after the kernel, too */
    g_assert_cmpint(defines(HEAD KERNEL ".visible .const .u32 late = 7;\n"), ==, 1);
}

static void test_no_variables(void)
{
    g_assert_cmpint(defines(HEAD KERNEL), ==, 0);   /* .shared and .local in a body */
    g_assert_cmpint(defines(HEAD ".extern .global .align 4 .u32 elsewhere;\n" KERNEL), ==, 0);
    g_assert_cmpint(defines(HEAD ".extern .shared .align 16 .b8 dyn[];\n" KERNEL), ==, 0);
    g_assert_cmpint(defines(HEAD ".visible .entry p(.param .u64 .ptr .global .align 4 q)\n"
                            "{\n    ret;\n}\n"), ==, 0);
    g_assert_cmpint(defines(HEAD "// .global .u32 in_a_comment;\n" KERNEL), ==, 0);
}

static void test_unreadable_is_private(void)
{
    g_assert_cmpint(defines(HEAD ".visible .entry broken(\n"), ==, 1);
    g_assert_cmpint(kcuda_ptx_defines_variables(NULL, 0), ==, 1);
}

/* A cubin is private when its symbol table names a variable, shared when it names none,
 * private when it cannot be read. */
static void test_cubins(void)
{
    const char *vars = g_getenv("KCUDA_CUBIN_VARS"), *none = g_getenv("KCUDA_FATBIN_NO_VARS");
    gchar *data = NULL;
    gsize size = 0;
    if (!vars || !none) {
        g_test_skip("no CUDA toolchain: no cubins");
        return;
    }
    g_assert_true(g_file_get_contents(vars, &data, &size, NULL));
    g_assert_cmpint(kcuda_cubin_defines_variables(data, size), ==, 1);
    g_free(data);
    kfatbin *fb = NULL;
    uint8_t *elf = NULL;
    size_t elf_size = 0;
    g_assert_cmpint(kfatbin_open_file(none, &fb, NULL), ==, 0);
    g_assert_cmpint(kfatbin_extract(fb, 0, &elf, &elf_size, NULL), ==, 0);
    g_assert_cmpint(kcuda_cubin_defines_variables(elf, elf_size), ==, 0);
    g_assert_cmpint(kcuda_cubin_defines_variables(elf, 40), ==, 1);   /* truncated */
    g_assert_cmpint(kcuda_cubin_defines_variables(NULL, 0), ==, 1);
    free(elf);
    kfatbin_free(fb);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/ptx-vars/variables", test_variables);
    g_test_add_func("/cuda/ptx-vars/no-variables", test_no_variables);
    g_test_add_func("/cuda/ptx-vars/unreadable-is-private", test_unreadable_is_private);
    g_test_add_func("/cuda/ptx-vars/cubins", test_cubins);
    return g_test_run();
}
