/* Choosing the entry to run on a given SM architecture (rules in fatbin.h). */
#include "fatbin_internal.h"

#define ALL_IMAGES UINT32_MAX

/* Whether entry e runs on an SM of architecture target (arch = major * 10 + minor). */
static bool runs_on(const kfatbin_entry *e, unsigned target)
{
    if (e->relocatable || e->arch > target)
        return false;
    if (e->flags & KFATBIN_FLAG_ARCH_SPECIFIC)
        return e->arch == target;
    bool same_major = e->arch / 10 == target / 10;
    if (e->kind == KFATBIN_ELF)
        return same_major;
    if (e->kind == KFATBIN_PTX)
        return !(e->flags & KFATBIN_FLAG_FAMILY_SPECIFIC) || same_major;
    return false;
}

/* The index of the highest-architecture entry of kind that runs on target, or -1. */
static long best_of_kind(const kfatbin *fb, unsigned image, kfatbin_kind kind, unsigned target)
{
    long best = -1;
    for (unsigned i = 0; i < fb->n_entries; i++) {
        const kfatbin_entry *e = &fb->entries[i].pub;
        if (e->kind != kind || (image != ALL_IMAGES && e->fatbin_index != image) ||
            !runs_on(e, target))
            continue;
        if (best < 0 || e->arch > fb->entries[best].pub.arch)
            best = i;
    }
    return best;
}

int kfatbin_select_in(const kfatbin *fb, unsigned fatbin_index, unsigned target_arch,
                      bool prefer_ptx, unsigned *index, kptx_error *err)
{
    if (!fb || !index)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_select: NULL argument");
    if (fatbin_index != ALL_IMAGES && fatbin_index >= fb->n_images)
        return kfb_fail(err, KPTX_EINVAL, "no fatbin %u (the view has %u)", fatbin_index,
                        fb->n_images);
    kfatbin_kind first = prefer_ptx ? KFATBIN_PTX : KFATBIN_ELF;
    kfatbin_kind second = prefer_ptx ? KFATBIN_ELF : KFATBIN_PTX;
    long best = best_of_kind(fb, fatbin_index, first, target_arch);
    if (best < 0)
        best = best_of_kind(fb, fatbin_index, second, target_arch);
    if (best < 0)
        return kfb_fail(err, KPTX_ENOTFOUND, "no entry runs on sm_%u", target_arch);
    *index = (unsigned)best;
    return kfb_ok(err);
}

int kfatbin_select(const kfatbin *fb, unsigned target_arch, bool prefer_ptx, unsigned *index,
                   kptx_error *err)
{
    return kfatbin_select_in(fb, ALL_IMAGES, target_arch, prefer_ptx, index, err);
}
