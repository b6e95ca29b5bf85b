/* libFuzzer target: arbitrary bytes as PTX into the emulator's loader, and every kernel
 * that loads is launched (small grid, zero parameters, an instruction budget). Nothing may
 * crash, hang or touch memory outside the emulator's own: faults are launch errors. */
#define _GNU_SOURCE   /* memmem */
#include <kernelet/emu.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static kemu_device *device(void)
{
    static kemu_device *dev;
    if (!dev) {
        kemu_device_config cfg = {.workers = 1, .memory_bytes = 64u << 20,
                                  .max_shared_bytes = 64u << 10, .max_local_bytes = 64u << 10};
        if (kemu_device_create(&cfg, &dev, NULL) != 0)
            abort();
    }
    return dev;
}

static void run_all(kemu_module *mod, const char *text, size_t len)
{
    /* Entry names come from the text: try every ".entry NAME" in it. */
    const char *p = text, *end = text + len;
    while ((p = memmem(p, (size_t)(end - p), ".entry", 6)) != NULL) {
        p += 6;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        char name[128];
        size_t n = 0;
        while (p < end && n + 1 < sizeof name && *p != '(' && *p != ' ' && *p != '\n')
            name[n++] = *p++;
        name[n] = '\0';
        kemu_function *fn;
        if (kemu_module_get_function(mod, name, &fn, NULL) != 0)
            continue;
        kemu_function_info info;
        kemu_function_info_get(fn, &info);
        uint8_t *params = calloc(1, info.param_bytes + 1);
        if (!params)
            return;
        kemu_launch_config cfg = {.grid = {2, 1, 1}, .block = {33, 1, 1}, .params = params,
                                  .params_bytes = info.param_bytes,
                                  .max_warp_instructions = 20000};
        kemu_launch(fn, &cfg, NULL);
        free(params);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kemu_module *mod;
    if (kemu_module_load(device(), (const char *)data, size, &mod, NULL) == 0) {
        run_all(mod, (const char *)data, size);
        kemu_module_unload(mod);
    }
    return 0;
}
