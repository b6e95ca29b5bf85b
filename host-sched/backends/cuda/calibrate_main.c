/* kernelet-cuda-calibrate: writes the calibration file kerneletd reads for this GPU model
 * (calibration.h). It reads model-mem-probe's output (L0, a0; docs/MODEL.md,
 * "Calibration") on standard input, measures the launch overhead through the cuda backend,
 * checks that both describe the same device and writes <dir>/<device>.calib, or the text to
 * standard output without --dir:
 *
 *   model-mem-probe 3350 | kernelet-cuda-calibrate [--device N] [--dir DIR]
 *
 * Exit status: 0 written, 1 failure (message on standard error), 2 usage, 77 no GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_backend.h"

static int usage(void)
{
    fprintf(stderr, "usage: model-mem-probe PEAK_GBS | kernelet-cuda-calibrate [--device N] "
                    "[--dir DIR]\n");
    return 2;
}

static int read_stdin(char *buf, size_t cap, size_t *len)
{
    *len = fread(buf, 1, cap, stdin);
    return ferror(stdin) || *len == cap;
}

static int write_file(const char *dir, const kcuda_calibration *c, const char *text)
{
    char name[128], path[4096];
    kbackend_error e = {0};
    if (kcuda_calibration_file_name(c->device, name, sizeof(name), &e)) {
        fprintf(stderr, "kernelet-cuda-calibrate: %s\n", e.msg);
        return 1;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) == EOF || fclose(f)) {
        fprintf(stderr, "kernelet-cuda-calibrate: cannot write %s\n", path);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}

/* The probe's figures, the measured overhead, and the checks that they fit together. */
static int calibrate(int device, kcuda_calibration *c)
{
    static char probe[KCUDA_CALIBRATION_MAX_BYTES + 1];
    size_t len;
    kbackend_error e = {0};
    if (read_stdin(probe, sizeof(probe), &len) || kcuda_calibration_parse(probe, len, c, &e)) {
        fprintf(stderr, "kernelet-cuda-calibrate: probe output: %s\n",
                *e.msg ? e.msg : "unreadable or too long");
        return 1;
    }
    kcuda_config cfg;
    kcuda_config_default(&cfg);
    cfg.device = device;
    kcuda *kc;
    if (kcuda_new(&kc, &cfg, &e)) {
        fprintf(stderr, "kernelet-cuda-calibrate: %s\n", e.msg);
        return e.code == KBACKEND_EDEVICE ? 77 : 1;
    }
    kbackend be;
    kcuda_backend(kc, &be);
    kbackend_device_info info;
    be.ops->device_info(be.state, &info, &e);
    c->slice_overhead_ns = info.slice_overhead_ns;
    int bad = strcmp(info.name, c->device) != 0;
    if (bad)
        fprintf(stderr, "kernelet-cuda-calibrate: the probe measured '%s', device %d is '%s'\n",
                c->device, device, info.name);
    be.ops->destroy(be.state);
    return bad;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int device = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = atoi(argv[++i]);
        else
            return usage();
    }
    kcuda_calibration c;
    int rc = calibrate(device, &c);
    if (rc)
        return rc;
    char body[2048], text[2304];
    kcuda_calibration_format(&c, body, sizeof(body));
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
    snprintf(text, sizeof(text), "# kerneletd calibration, %s: model-mem-probe | "
             "kernelet-cuda-calibrate\n%s", date, body);
    if (!dir) {
        fputs(text, stdout);
        return 0;
    }
    return write_file(dir, &c, text);
}
