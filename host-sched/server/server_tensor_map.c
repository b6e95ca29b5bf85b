/* TENSOR_MAP_ENCODE (protocol.h): CUDA's tensor maps, the opaque descriptors through which
 * Hopper's tensor memory accelerator (TMA) copies tiles; XLA's and Triton's kernels take
 * them as parameters. Only the driver can encode one, so the tenant asks. TMA reads and
 * writes memory the fence does not see, so only tenants whose kernels are not fenced (a
 * worker of the isolation tier, a daemon that does not fence) may have one; the fencing
 * pass refuses kernels that use TMA, so a forged map gains a fenced tenant nothing. */
#include "server_internal.h"

void ks_tensor_map_encode(struct ks_conn *c, uint64_t id, const struct kproto_request *r)
{
    struct kernelet_tensor_map_ans ans;
    ksched_err err;
    int rc = ks_kernels_unconfined(c)
                 ? ksched_tensor_map_encode(c->srv->cfg.sched, &r->u.tensor_map, ans.map, &err)
                 : ksched_fail(&err, KSCHED_EUNSUPPORTED, "kernels are fenced here");

    if (rc) {
        ks_reply_cuda(c, KERNELET_OP_TENSOR_MAP_ENCODE, id, ks_cuda_of(rc, err.msg), 0);
        return;
    }
    ks_reply(c, KERNELET_OP_TENSOR_MAP_ENCODE, id, KERNELET_ST_OK, &ans, sizeof(ans));
}
