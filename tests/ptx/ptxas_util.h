/* Helpers for the corpus test: running ptxas and comparing what it produces. */
#ifndef PTX_TEST_PTXAS_UTIL_H
#define PTX_TEST_PTXAS_UTIL_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

/* Assembles ptx (len bytes) for arch ("sm_75") with ptxas; extra_c adds -c (relocatable,
 * for modules calling external functions). On success *cubin (g_free) and, with -v, the
 * tool's report in *log (g_free). Returns false and sets *log to the error output when
 * ptxas fails. */
bool ptxas_run(const char *ptxas, const char *ptx, size_t len, const char *arch, bool extra_c,
               bool verbose, GBytes **cubin, char **log);

/* The path after --ptxas among a test's arguments, or NULL. */
const char *ptxas_arg(int argc, char **argv);

/* Fails the test with ptxas's errors and the text unless ptx (len bytes) assembles for
 * arch (extra_c: as ptxas_run). */
void ptxas_assert_assembles(const char *ptxas, const char *ptx, size_t len, const char *arch,
                            bool extra_c);

/* Compares two cubins. Without line information they must be identical. With it, ptxas
 * embeds the PTX text (.nv_debug_ptx_txt) and maps SASS to PTX line numbers
 * (.nv_debug_line_sass): those two sections are allowed to differ, every other section
 * must be identical in name, type, flags and bytes. Fills why on a mismatch. */
bool cubin_equal(GBytes *a, GBytes *b, char *why, size_t why_len);

/* Registers used by entry `name` in a ptxas -v report, -1 when not found. */
int ptxas_registers(const char *log, const char *name);

#endif
