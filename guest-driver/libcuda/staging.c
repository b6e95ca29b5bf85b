/* Staging memory for copies between pageable host memory and the device: one shared
 * region (KERNELET_STAGING_MB, default 64 MiB) cut into 8 MiB slots. A copy fills a slot
 * (host to device) or has the daemon fill it (device to host); a slot comes back when the
 * batch using it has completed, so several chunks of one large copy are in flight at once:
 * the daemon moves one while the library fills the next. */
#include <stdlib.h>
#include <string.h>

#include "libcuda_internal.h"

#define MAX_SLOTS 64

static struct {
    pthread_mutex_t lock;
    pthread_once_t once;
    CUresult init_result;
    struct kcu_region region;
    unsigned n_slots;
    bool busy[MAX_SLOTS];
} stg = {.lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

static void stage_init(void)
{
    const char *env = getenv("KERNELET_STAGING_MB");
    long mb = env ? strtol(env, NULL, 10) : 64;
    size_t slots;

    if (mb < 8)
        mb = 8;
    slots = ((size_t)mb << 20) / KCU_STAGE_SLOT_SIZE;
    if (slots > MAX_SLOTS)
        slots = MAX_SLOTS;
    stg.init_result = kcu_region_create(kcu.client, slots * KCU_STAGE_SLOT_SIZE, &stg.region);
    stg.n_slots = stg.init_result == CUDA_SUCCESS ? (unsigned)slots : 0;
}

static int take_free_slot(void)
{
    for (unsigned i = 0; i < stg.n_slots; i++)
        if (!stg.busy[i]) {
            stg.busy[i] = true;
            return (int)i;
        }
    return -1;
}

CUresult kcu_stage_acquire(struct kcu_stage *st)
{
    int slot;
    CUresult r;

    pthread_once(&stg.once, stage_init);
    if (stg.init_result != CUDA_SUCCESS)
        return stg.init_result;
    for (;;) {
        pthread_mutex_lock(&stg.lock);
        slot = take_free_slot();
        pthread_mutex_unlock(&stg.lock);
        if (slot >= 0)
            break;
        /* Every slot is in flight: wait for answers (one frees a slot). */
        if ((r = kcu_progress(kcu.client)) != CUDA_SUCCESS)
            return r;
    }
    st->slot = (unsigned)slot;
    st->region = stg.region.id;
    st->offset = (uint64_t)slot * KCU_STAGE_SLOT_SIZE;
    st->ptr = (char *)stg.region.base + st->offset;
    st->size = KCU_STAGE_SLOT_SIZE;
    return CUDA_SUCCESS;
}

void kcu_stage_release(const struct kcu_stage *st)
{
    pthread_mutex_lock(&stg.lock);
    stg.busy[st->slot] = false;
    pthread_mutex_unlock(&stg.lock);
}

static void release_cb(void *arg, CUresult r)
{
    (void)r;
    pthread_mutex_lock(&stg.lock);
    stg.busy[(uintptr_t)arg] = false;
    pthread_mutex_unlock(&stg.lock);
}

struct kcu_completion kcu_stage_completion(const struct kcu_stage *st)
{
    return (struct kcu_completion){release_cb, (void *)(uintptr_t)st->slot};
}
