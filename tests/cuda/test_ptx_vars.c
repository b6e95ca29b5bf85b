/* Unit tests of kcuda_ptx_defines_variables (host-sched/backends/cuda/ptx_vars.h): which module
 * texts define module-scope .global or .const variables, and so are never shared. */
#include "ptx_vars.h"

#include <glib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cuda/ptx-vars/variables", test_variables);
    g_test_add_func("/cuda/ptx-vars/no-variables", test_no_variables);
    g_test_add_func("/cuda/ptx-vars/unreadable-is-private", test_unreadable_is_private);
    return g_test_run();
}
