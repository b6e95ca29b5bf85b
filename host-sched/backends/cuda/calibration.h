/* Per-GPU calibration file of kerneletd (host-sched/backends/cuda/, plain C, no Driver API).
 *
 * The model's memory latency L0 and bandwidth factor a0 (docs/MODEL.md, "Calibration"),
 * and the backend's launch overhead, are measured once per GPU model and kept in a small
 * text file that the daemon reads at start: <dir>/<device name with every run of characters
 * other than letters and digits turned into one '_'>.calib, for instance
 * NVIDIA_H100_80GB_HBM3.calib. The format is what model-mem-probe prints, one key=value per
 * line, '#' starting a comment line:
 *
 *   device=NVIDIA H100 80GB HBM3      the name cuDeviceGetName reports (required)
 *   dram_latency_cycles=418.4         L0, SM cycles (required)
 *   a0=0.917                          measured / peak bandwidth, (0, 1] (required)
 *   sms=132  clock_mhz=1980  l2_hit_latency_cycles=285  read_bandwidth_gbs=3070
 *   peak_bandwidth_gbs=3350           informative (optional)
 *   slice_overhead_ns=3000            launch overhead in a busy lane (optional; 0 = measure)
 *
 * Every value is range-checked; a bad line or a key given twice fails the whole file with
 * its line number; keys this version does not know are ignored (newer probes add some).
 */
#ifndef KERNELET_CUDA_CALIBRATION_H
#define KERNELET_CUDA_CALIBRATION_H

#include <stddef.h>
#include <stdint.h>

#include "kernelet/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest calibration file read (bytes). */
#define KCUDA_CALIBRATION_MAX_BYTES 65536

typedef struct kcuda_calibration {
    char device[64];
    double l0_cycles;           /* dram_latency_cycles */
    double a0;
    unsigned sms;               /* 0 = not given (and so below) */
    double clock_mhz;
    double l2_latency_cycles;
    double read_bandwidth_gbs;
    double peak_bandwidth_gbs;
    uint64_t slice_overhead_ns;
} kcuda_calibration;

/* Parses len bytes of file text. KBACKEND_EINVAL names the line and what is wrong with it. */
int kcuda_calibration_parse(const char *text, size_t len, kcuda_calibration *out,
                            kbackend_error *err);

/* The file text of c (one key per line, given fields only) into buf; returns the length
 * snprintf would have written (>= buflen means truncated), or -1 for a NULL c. */
int kcuda_calibration_format(const kcuda_calibration *c, char *buf, size_t buflen);

/* The file name for a device name into buf; KBACKEND_EINVAL when the name has no letter or
 * digit or buf is too small. */
int kcuda_calibration_file_name(const char *device, char *buf, size_t buflen,
                                kbackend_error *err);

/* Reads <dir>/<file name of device>: KBACKEND_ENOTFOUND when there is no such file,
 * KBACKEND_EINVAL when it is malformed or names another device. */
int kcuda_calibration_load(const char *dir, const char *device, kcuda_calibration *out,
                           kbackend_error *err);

#ifdef __cplusplus
}
#endif

#endif
