/* Error codes and error messages of the scheduler library (kernelet-sched). */
#ifndef KERNELET_SCHED_ERROR_H
#define KERNELET_SCHED_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative); 0 is success. */
enum {
    KSCHED_OK = 0,
    KSCHED_EINVAL = -1,       /* bad argument or malformed input */
    KSCHED_ENOMEM = -2,       /* host memory exhausted */
    KSCHED_ENOTFOUND = -3,    /* unknown tenant, stream, event, module, function */
    KSCHED_EQUOTA = -4,       /* the tenant's memory quota would be exceeded */
    KSCHED_EAGAIN = -5,       /* the tenant has max_inflight launches queued: retry later */
    KSCHED_EBACKEND = -6,     /* the executor backend refused or failed (message says why) */
    KSCHED_ECANCELED = -7,    /* the operation was dropped (tenant removed, scheduler freed) */
    KSCHED_ESTATE = -8,       /* not possible now (tenant being removed, thread running) */
    KSCHED_EUNSUPPORTED = -9, /* the policy or call needs an op the backend lacks */
    KSCHED_EIO = -10,         /* a file could not be read */
    KSCHED_ELOST = -11,       /* the backend lost the device (KBACKEND_ELOST): every tenant's
                                 device state is gone; recreate scheduler and backend */
    KSCHED_ECONTEXTS = -12,   /* the tenant's client contexts already hold their most
                                 domains (ksched_config.max_contexts) */
};

/* Where a failing call describes what went wrong; every function taking one accepts NULL. */
typedef struct ksched_err {
    int code;
    char msg[256];
} ksched_err;

/* Static description of an error code. */
const char *ksched_strerror(int code);

/* Fills err (may be NULL) with code and a printf-style message; returns code. */
int ksched_fail(ksched_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
