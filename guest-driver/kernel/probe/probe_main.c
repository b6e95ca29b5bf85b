/*
 * kernelet-guest-probe: exercises /dev/kerneletN from inside the guest.
 *
 *   kernelet-guest-probe [-d /dev/kerneletN] COMMAND [ARGS]
 *
 * Commands: config, hello, echo [BYTES [CHUNK]], parallel [PROCS [BYTES]], contexts,
 * request [TAG], errors, hold [MS [BYTES]], signal [MS], killtest [N [MS [BYTES]]],
 * flood [N [MS]].
 * Output: one line per result, "WORD key=value ...", for the VM tests (tests/vm/).
 */
#include <stdio.h>
#include <string.h>

#include "probe.h"

static const struct {
    const char *name;
    int (*run)(const char *dev, int argc, char **argv);
} commands[] = {
    { "config", probe_cmd_config },     { "hello", probe_cmd_hello },
    { "echo", probe_cmd_echo },         { "parallel", probe_cmd_parallel },
    { "contexts", probe_cmd_contexts }, { "request", probe_cmd_request },
    { "errors", probe_cmd_errors },     { "hold", probe_cmd_hold },
    { "signal", probe_cmd_signal },     { "killtest", probe_cmd_killtest },
    { "flood", probe_cmd_flood },
};

int main(int argc, char **argv)
{
    const char *dev = "/dev/kernelet0";
    int i = 1;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 2 && strcmp(argv[1], "-d") == 0) {
        dev = argv[2];
        i = 3;
    }
    if (i < argc) {
        for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++)
            if (strcmp(argv[i], commands[c].name) == 0)
                return commands[c].run(dev, argc - i - 1, argv + i + 1);
    }
    fprintf(stderr, "usage: kernelet-guest-probe [-d /dev/kerneletN] COMMAND [ARGS]\n"
                    "commands: config hello echo parallel contexts request errors hold "
                    "signal killtest flood\n");
    return 2;
}
