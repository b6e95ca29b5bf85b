/* What kerneletd prints when it crashes: the signal and the call stack, so that an
 * operator's log says where (a crash inside NVIDIA's libraries looks different from one in
 * ours). The addresses are module+offset: `addr2line -e MODULE OFFSET` names the line. */
#ifndef KERNELETD_CRASH_REPORT_H
#define KERNELETD_CRASH_REPORT_H

/* Installs the report for SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT; after printing it
 * the signal takes its default action (core dump, exit status), as without the report. */
void kd_crash_report_install(void);

#endif
