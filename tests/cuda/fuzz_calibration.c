/* libFuzzer target: the calibration file parser (host-sched/backends/cuda/calibration.h) on any
 * bytes; a parsed calibration must format and parse back to the same figures. */
#include "calibration.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kcuda_calibration c, back;
    kbackend_error e;
    if (kcuda_calibration_parse((const char *)data, size, &c, &e))
        return 0;
    char buf[2048];
    int n = kcuda_calibration_format(&c, buf, sizeof(buf));
    if (n <= 0 || (size_t)n >= sizeof(buf) || kcuda_calibration_parse(buf, (size_t)n, &back, &e) ||
        strcmp(back.device, c.device) || back.sms != c.sms ||
        back.slice_overhead_ns != c.slice_overhead_ns)
        abort();
    return 0;
}
