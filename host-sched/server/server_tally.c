/* Co-scheduling statistics from the scheduler's trace: a slice that starts while a slice
 * of another tenant is running counts as co-scheduled for its tenant. The trace callback
 * runs in the dispatcher thread with the scheduler's lock held: it only touches this
 * table, under its own lock. */
#include <stdlib.h>

#include "server_internal.h"

#define TALLY_SLOTS 1024u

struct tally_slot {
    uint32_t tenant;
    bool used;
    uint32_t running;       /* its slices in flight */
    uint64_t coscheduled;
};

struct kserver_tally {
    pthread_mutex_t lock;
    uint32_t tenants_running;   /* tenants with slices in flight */
    struct tally_slot slots[TALLY_SLOTS];
};

int kserver_tally_new(struct kserver_tally **out)
{
    struct kserver_tally *t = calloc(1, sizeof(*t));

    if (!t)
        return -1;
    pthread_mutex_init(&t->lock, NULL);
    *out = t;
    return 0;
}

void kserver_tally_free(struct kserver_tally *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* The slot of tenant (created when create); NULL when the table is full. */
static struct tally_slot *slot_of(struct kserver_tally *t, uint32_t tenant, bool create)
{
    for (unsigned i = 0, j = tenant % TALLY_SLOTS; i < TALLY_SLOTS; i++, j = (j + 1) % TALLY_SLOTS) {
        struct tally_slot *s = &t->slots[j];
        if (s->used && s->tenant == tenant)
            return s;
        if (!s->used) {
            if (!create)
                return NULL;
            *s = (struct tally_slot){.tenant = tenant, .used = true};
            return s;
        }
    }
    return NULL;
}

void kserver_tally_trace(void *user, const ksched_trace *tr)
{
    struct kserver_tally *t = user;
    struct tally_slot *s;

    if (!t || (tr->kind != KSCHED_TRACE_SLICE && tr->kind != KSCHED_TRACE_SLICE_DONE))
        return;
    pthread_mutex_lock(&t->lock);
    if ((s = slot_of(t, tr->tenant, true))) {
        if (tr->kind == KSCHED_TRACE_SLICE) {
            if (t->tenants_running > (s->running ? 1u : 0u))
                s->coscheduled++;
            if (s->running++ == 0)
                t->tenants_running++;
        } else if (s->running && --s->running == 0) {
            t->tenants_running--;
        }
    }
    pthread_mutex_unlock(&t->lock);
}

uint64_t kserver_tally_coscheduled(struct kserver_tally *t, uint32_t tenant)
{
    struct tally_slot *s;
    uint64_t n = 0;

    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    if ((s = slot_of(t, tenant, false)))
        n = s->coscheduled;
    pthread_mutex_unlock(&t->lock);
    return n;
}
