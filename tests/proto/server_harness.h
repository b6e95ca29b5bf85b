/* A kerneletd server in the test process (sim backend, scheduler thread, server thread) and
 * a raw protocol client that can send anything: well-formed requests and hostile ones. */
#ifndef SERVER_HARNESS_H
#define SERVER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"
#include "kernelet/protocol.h"

struct harness;

/* Starts a server on a fresh socket in a temporary directory. The sim knows the kernels
 * "k_add" and "k_spin" (names of the test PTX). */
struct harness *harness_start(void);
/* The server's default kernel time limit (kserver_config.default_kernel_time_limit_ns). */
#define HARNESS_TIME_LIMIT_MS 120000u
/* The largest quota the operator may give a tenant (its address window, as kerneletd). */
#define HARNESS_MAX_QUOTA (1ull << 30)
/* The same with the server's HELLO timeout in ms (0: the default). */
struct harness *harness_start_hello(unsigned hello_timeout_ms);
/* With launch_attrs, the device says it runs cluster and cooperative launches (the sim
 * counts them in ksim_stats.attr_launches). */
struct harness *harness_start_opts(unsigned hello_timeout_ms, bool launch_attrs);
/* The same with the sim's ops replaced before the scheduler is made: wrap may point
 * backend->ops at ops of the test's (which may call the sim's with backend->state). */
struct harness *harness_start_wrapped(void (*wrap)(kbackend *backend));
/* The same with kernels not fenced (kserver_config.no_fence): VMM requests and
 * SHM_MAP_DEVICE are served (where the backend can). */
struct harness *harness_start_wrapped_unfenced(void (*wrap)(kbackend *backend));
/* Launches with clusters or cooperative the harness's sim has run. */
uint64_t harness_attr_launches(struct harness *h);
void harness_stop(struct harness *h);
const char *harness_socket(const struct harness *h);
unsigned harness_connections(struct harness *h);
/* While held, the scheduler runs nothing: submitted work stays queued (the server goes on
 * answering what needs no completion). */
void harness_hold(struct harness *h, bool hold);
/* From now on launches of entry fail on the (simulated) device when fail. */
void harness_fail_kernel(struct harness *h, const char *entry, bool fail);

/* A client connection. */
struct client {
    int fd;
    uint64_t next_id;
    uint32_t status;            /* of the last answer */
    uint32_t cuda;              /* KERNELET_ST_CUDA: the CUresult */
    uint32_t index;             /* KERNELET_ST_CUDA: the failing record */
    uint8_t answer[KERNELET_MAX_REQUEST];
    size_t answer_len;          /* payload bytes */
    uint64_t tenant;
    uint32_t context;           /* stamped on each request's header (0: a host client) */
    uint16_t answer_op;         /* opcode and request id of the last answer */
    uint64_t answer_id;
};

/* Connects and says HELLO as a tenant named name (admin: as an administrator). */
bool client_open(struct client *c, struct harness *h, const char *name, bool admin);
/* Connects without HELLO. */
bool client_connect(struct client *c, struct harness *h);
/* The same two on the socket of a kerneletd started elsewhere. */
bool client_open_path(struct client *c, const char *socket, const char *name, bool admin);
/* The same with the HELLO's flags (KERNELET_HELLO_*) given. */
bool client_open_flags(struct client *c, const char *socket, const char *name, uint32_t flags);
bool client_connect_path(struct client *c, const char *socket);
void client_close(struct client *c);

/* Sends a request (payload of n bytes; fd passed along when >= 0) and reads its answer.
 * Returns the status (-1 when the connection broke); the payload is in c->answer. */
int client_call(struct client *c, uint16_t op, const void *payload, size_t n, int fd);
/* The two halves of client_call, for requests whose answers come later: send returns the
 * request id (0 when the connection broke); recv reads the next answer and asserts that
 * it is the one of (op, id) -- any answer when op is 0 (see answer_op, answer_id). */
uint64_t client_send(struct client *c, uint16_t op, const void *payload, size_t n, int fd);
int client_recv(struct client *c, uint16_t op, uint64_t id);
/* Sends raw bytes (anything). */
bool client_send_raw(struct client *c, const void *data, size_t n);
/* Whether an answer is waiting on c within ms (without reading it). */
bool client_answer_waiting(struct client *c, int ms);
/* Whether the server has closed the connection (reads until EOF or timeout_ms). */
bool client_closed_by_server(struct client *c, int timeout_ms);

/* Convenience requests; they assert success unless said otherwise. */
uint64_t client_alloc(struct client *c, uint64_t size);
int client_free(struct client *c, uint64_t dptr);
/* A sealed memfd region of size bytes attached to the session; *base maps it here. */
uint32_t client_region(struct client *c, size_t size, void **base);
/* One-record batches: returns the status; c->cuda/index on failure. */
int client_copy(struct client *c, uint32_t kind, uint32_t region, uint64_t dst, uint64_t src,
                uint64_t bytes, const void *inline_data, uint64_t stream, bool complete);
int client_sync(struct client *c);
/* ADMIN_STATUS on an administrator's connection: the row of tenant id (fails the test when
 * it is not listed). */
struct kernelet_tenant_status client_tenant_row(struct client *admin, uint64_t id);
uint64_t client_module_ptx(struct client *c, const char *ptx);
/* FUNCTION_GET: the handle (0 on failure, c->cuda says why), *f and its parameters. */
uint64_t client_function(struct client *c, uint64_t module, const char *name,
                         struct kernelet_function *f, struct kernelet_param *params);
/* A batch of n launches of fn (8 blocks of `threads`, parameter block params of pbytes);
 * the status (complete: answered once they ran). */
int client_launches(struct client *c, uint64_t fn, const void *params, uint32_t pbytes,
                    unsigned n, uint32_t threads, bool complete);
/* The same on a stream (handle). */
int client_launches_on(struct client *c, uint64_t stream, uint64_t fn, const void *params,
                       uint32_t pbytes, unsigned n, uint32_t threads, bool complete);

/* The test PTX: k_add(u64 p, u32 n, u32 v) adds v to n words at p (the sim only times it). */
extern const char harness_ptx[];

#endif
