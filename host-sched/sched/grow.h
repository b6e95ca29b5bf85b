/* Growing arrays (kernelet-sched internals). */
#ifndef KERNELET_SCHED_GROW_H
#define KERNELET_SCHED_GROW_H

#include <stddef.h>

/* Makes room for at least need elements of elem bytes in the array *arr of capacity *cap
 * (doubling, starting at 16). 0, or -1 when out of memory (the array is unchanged). */
int grow_array(void *arr, size_t *cap, size_t need, size_t elem);

#endif
