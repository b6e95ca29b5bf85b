/* The crash report (crash_report.h). Only async-signal-safe calls run in the handler:
 * write(2) and backtrace_symbols_fd; backtrace() is called once at install time so that
 * its first use, which loads libgcc's unwinder, does not happen inside the handler. */
#include "crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define MAX_FRAMES 64

static void say(const char *s)
{
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w;
}

static void on_crash(int sig)
{
    void *frames[MAX_FRAMES];
    int n = backtrace(frames, MAX_FRAMES);

    say("kerneletd: fatal signal ");
    say(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
        : sig == SIGFPE ? "SIGFPE" : "SIGABRT");
    say("; call stack (module(+offset)):\n");
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    signal(sig, SIG_DFL); /* installed with SA_RESETHAND too: the re-raise is the default */
    raise(sig);
}

void kd_crash_report_install(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    struct sigaction sa;
    void *warm[1];

    (void)backtrace(warm, 1);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
}
