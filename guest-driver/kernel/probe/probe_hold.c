/*
 * kernelet-guest-probe: requests the device holds for a while (DIAG_ECHO_BULK with a
 * delay), and what happens to them: the device goes away (hold), a signal interrupts the
 * wait (signal), the process is killed (killtest). Pinned pages must stay pinned while the
 * device holds the chain and must all be released once it gives the chain back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

/* Prints the outcome of a held echo, then what the same file gets afterwards. */
int probe_cmd_hold(const char *dev, int argc, char **argv)
{
    uint32_t ms = argc > 0 ? (uint32_t)strtoul(argv[0], NULL, 0) : 5000;
    size_t len = argc > 1 ? strtoul(argv[1], NULL, 0) : 1u << 20;
    uint8_t *src = malloc(len), *dst = malloc(len);
    struct probe_req req = { .queue = KERNELET_VQ_REQUEST, .opcode = KERNELET_OP_GET_INFO };
    struct kernelet_ioc_config cfg;
    struct probe_result res;
    int fd = probe_open(dev);

    if (fd < 0 || !src || !dst)
        return 1;
    memset(src, 0x3c, len);
    printf("HOLD-START ms=%u bytes=%zu\n", ms, len);
    fflush(stdout);
    probe_echo(fd, src, dst, len, ms, 0, &res);
    printf("HOLD rc=%s status=%u\n", probe_errname(res.rc), res.status);
    probe_submit(fd, &req, &res);
    printf("HOLD-AFTER submit=%s config=%s\n", probe_errname(res.rc),
           probe_errname(probe_ioctl(fd, KERNELET_IOC_GET_CONFIG, &cfg)));
    fflush(stdout);
    close(fd);
    free(src);
    free(dst);
    return 0;
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* Arms SIGALRM (no SA_RESTART) to fire once after ms milliseconds. */
static void alarm_in(int ms)
{
    struct sigaction sa = { .sa_handler = on_alarm };
    struct itimerval it = { .it_value = { ms / 1000, (ms % 1000) * 1000 } };

    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &it, NULL);
}

int probe_cmd_signal(const char *dev, int argc, char **argv)
{
    int ms = argc > 0 ? atoi(argv[0]) : 2000;
    size_t len = 1u << 20;
    uint8_t *src = malloc(len), *dst = malloc(len);
    struct probe_result res;
    long pinned_during, orphans_during, pinned_after, inflight_after;
    int fd = probe_open(dev), interrupted_rc;

    if (fd < 0 || !src || !dst)
        return 1;
    probe_fill(src, len, 42);
    /* Interruptible (the default): the wait ends with EINTR, the device keeps the chain. */
    alarm_in(ms / 4);
    probe_echo(fd, src, dst, len, (uint32_t)ms, 0, &res);
    interrupted_rc = res.rc;
    pinned_during = probe_sysfs(dev, "pinned_pages");
    orphans_during = probe_sysfs(dev, "orphans");
    inflight_after = probe_wait_value(dev, "inflight", 0, ms * 3);
    pinned_after = probe_wait_value(dev, "pinned_pages", 0, 2000);
    printf("SIGNAL interrupted_rc=%s pinned_during=%ld orphans_during=%ld inflight_after=%ld "
           "pinned_after=%ld orphans_after=%ld\n", probe_errname(interrupted_rc),
           pinned_during, orphans_during, inflight_after, pinned_after,
           probe_sysfs(dev, "orphans"));
    /* Killable: the same signal does not end the wait; the answer arrives whole. */
    memset(dst, 0, len);
    alarm_in(ms / 4);
    uint64_t sum = probe_echo(fd, src, dst, len, (uint32_t)ms, KERNELET_SUBMIT_F_KILLABLE,
                              &res);
    printf("SIGNAL-KILLABLE rc=%s status=%u checksum=%s data=%s\n", probe_errname(res.rc),
           res.status, sum == probe_fnv1a64(0xcbf29ce484222325ull, src, len) ? "ok" : "BAD",
           memcmp(src, dst, len) ? "BAD" : "ok");
    fflush(stdout);
    close(fd);
    free(src);
    free(dst);
    return 0;
}

static long meminfo_kb(const char *key)
{
    char line[128];
    long v = -1;
    FILE *f = fopen("/proc/meminfo", "re");

    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':')
            v = strtol(line + strlen(key) + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* Child: opens the device and waits in a held echo until it is killed. */
static void killtest_child(const char *dev, uint32_t ms, size_t len)
{
    uint8_t *src = malloc(len), *dst = malloc(len);
    struct probe_result res;
    int fd = probe_open(dev);

    if (fd < 0 || !src || !dst)
        _exit(1);
    memset(src, 0x77, len);
    probe_echo(fd, src, dst, len, ms, 0, &res);
    _exit(2);  /* not reached when killed during the hold */
}

int probe_cmd_killtest(const char *dev, int argc, char **argv)
{
    int n = argc > 0 ? atoi(argv[0]) : 8;
    uint32_t ms = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 3000;
    size_t len = argc > 2 ? strtoul(argv[2], NULL, 0) : 1u << 20;
    long mem_before = meminfo_kb("MemFree"), pinned_during = 0, orphans_during;
    int killed = 0;

    for (int i = 0; i < n; i++) {
        long held = probe_sysfs(dev, "inflight");
        pid_t pid = fork();
        int st;

        if (pid == 0)
            killtest_child(dev, ms, len);
        /* Kill only once the device holds the child's chain. */
        for (int waited = 0; waited < 5000 && probe_sysfs(dev, "inflight") <= held; waited += 5)
            probe_sleep_ms(5);
        kill(pid, SIGKILL);
        if (waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
            killed++;
        long p = probe_sysfs(dev, "pinned_pages");
        pinned_during = p > pinned_during ? p : pinned_during;
    }
    orphans_during = probe_sysfs(dev, "orphans");
    long inflight_after = probe_wait_value(dev, "inflight", 0, (int)ms * 2 + 5000);
    long pinned_after = probe_wait_value(dev, "pinned_pages", 0, 2000);
    long orphans_after = probe_wait_value(dev, "orphans", 0, 2000);
    long contexts_after = probe_wait_value(dev, "contexts", 0, 2000);
    printf("KILLTEST n=%d killed=%d bytes=%zu pinned_during=%ld orphans_during=%ld "
           "inflight_after=%ld pinned_after=%ld orphans_after=%ld contexts_after=%ld "
           "memfree_before_kb=%ld memfree_after_kb=%ld\n", n, killed, len, pinned_during,
           orphans_during, inflight_after, pinned_after, orphans_after, contexts_after,
           mem_before, meminfo_kb("MemFree"));
    return 0;
}

/* More held requests than the ring has slots: the surplus waits for ring space (no
 * error), the device holds at most a ring's worth at a time, and all are answered. */
int probe_cmd_flood(const char *dev, int argc, char **argv)
{
    int n = argc > 0 ? atoi(argv[0]) : 300;
    uint32_t ms = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1500;
    long max_inflight = 0;
    int ok = 0, started = 0;

    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct probe_result res;
            int fd = probe_open(dev);

            if (fd < 0)
                _exit(1);
            probe_echo(fd, NULL, NULL, 0, ms, 0, &res);
            _exit(res.rc == 0 && res.status == 0 ? 0 : 1);
        }
        started += pid > 0;
    }
    for (int done = 0; done < started;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        long v = probe_sysfs(dev, "inflight");

        max_inflight = v > max_inflight ? v : max_inflight;
        if (pid > 0) {
            done++;
            ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
        } else {
            probe_sleep_ms(5);
        }
    }
    printf("FLOOD n=%d started=%d ok=%d max_inflight=%ld inflight_after=%ld\n", n, started, ok,
           max_inflight, probe_sysfs(dev, "inflight"));
    return ok != n;
}
