/* TENANT_NOTE: one line in kerneletd's log from a tenant's library, naming what the
 * program called that is not supported, so that the operator sees why a tenant's program
 * failed without access to its output. The library sends each entry point once; a tenant
 * that sends more than KS_MAX_NOTES gets them answered and no longer logged. */
#include <stdio.h>

#include "server_internal.h"

#define KS_MAX_NOTES 64

void ks_tenant_note(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    const struct kernelet_note *n = &r->u.note.note;

    if (c->notes < KS_MAX_NOTES) {
        fprintf(stderr, "kerneletd: tenant %s (pid %u, context %u): %.*s: not supported\n",
                c->name, (unsigned)c->cred.pid, c->context, (int)n->text_len, r->u.note.text);
        if (++c->notes == KS_MAX_NOTES)
            fprintf(stderr, "kerneletd: tenant %s (pid %u): no more notes logged\n", c->name,
                    (unsigned)c->cred.pid);
    }
    ks_reply(c, KERNELET_OP_TENANT_NOTE, id, KERNELET_ST_OK, NULL, 0);
}
