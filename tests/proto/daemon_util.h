/* Helpers of the tests that run kerneletd as its own process and attack it as tenants
 * would: starting and stopping the daemon, raw idle connections, a well-behaved tenant
 * whose output is checked, and running a function as another user. */
#ifndef DAEMON_UTIL_H
#define DAEMON_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct daemon {
    pid_t pid;
    char dir[256];
    char socket[300];
    char log[300];
};

/* Starts kerneletd (path) with --socket in a fresh directory, --backend emu (or
 * $KERNELET_TEST_BACKEND) and the extra options (NULL-terminated); returns once its socket
 * listens. */
void daemon_start(struct daemon *d, const char *path, const char *const *extra);
/* SIGTERM, then waits up to limit_s: the wait status, or -1 when it did not exit (it is
 * then killed). *seconds: how long it took. Removes the directory. */
int daemon_stop(struct daemon *d, double limit_s, double *seconds);
/* Whether the daemon still runs. */
bool daemon_alive(const struct daemon *d);
/* Runs kerneletd (path) with --backend emu and option opt=value and returns its exit
 * status (-1 when it did not exit normally): how a test checks that a bad value is
 * refused before the daemon starts serving. */
int daemon_option_status(const char *path, const char *opt, const char *value);

/* A connection that sends nothing; -1 when connect fails. */
int idle_connect(const char *socket);
/* Whether the peer closed fd within timeout_ms. */
bool closed_within(int fd, int timeout_ms);

/* A tenant's whole round trip on the emulator: HELLO, allocation, copy in, the k_add
 * kernel, copy out, and its output checked against the CPU. False when HELLO fails (the
 * daemon refused the connection); anything else that fails aborts the test. */
bool tenant_round_trip(const char *socket, const char *name);
/* The same with the HELLO's flags given (KERNELET_HELLO_ISOLATE). */
bool tenant_round_trip_flags(const char *socket, const char *name, uint32_t hello_flags);
struct client;
/* The round trip's work (allocation, copy, k_add, copy back, checked) on an open tenant. */
void tenant_check_kernel(struct client *c);
/* The same with the k_add kernel of ptx called entry. */
void tenant_check_entry(struct client *c, const char *ptx, const char *entry);

/* g_test_init for a test of kerneletd run as KERNELETD --tap: the daemon's path (argv[1]);
 * SIGPIPE ignored, so that a daemon that closes a connection ends no test. */
const char *daemon_test_init(int *argc, char ***argv);

struct client;
/* Test kernels, one thread per word of p: k_forever(u64 p) never ends; k_loop(u64 p,
 * u32 n) counts to n and stores n. */
extern const char spin_ptx[];
/* Loads spin_ptx into c and returns the function entry's handle. */
uint64_t spin_function(struct client *c, const char *entry);
/* One launch of fn over grid blocks of 32 threads, parameter p (and n for k_loop), on the
 * legacy stream; complete: answered once it ran. The status. */
int launch_spin(struct client *c, uint64_t fn, uint64_t p, int n, unsigned grid, bool complete);

/* Runs fn(arg) in a child process as uid (root needed); its exit status is fn's result
 * (0 = success). Returns the child's pid. */
pid_t run_as(uid_t uid, int (*fn)(void *), void *arg);
/* The uid of user name; false when there is no such user. */
bool user_uid(const char *name, uid_t *uid);
/* Waits for the child: true when it exited 0. */
bool child_ok(pid_t pid);

/* Monotonic seconds. */
double now_s(void);

#endif
