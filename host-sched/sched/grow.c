/* Growing arrays by doubling. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

int grow_array(void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / elem)
        return -1;
    void *old;
    memcpy(&old, arr, sizeof(old));
    void *grown = realloc(old, n * elem);
    if (!grown)
        return -1;
    memcpy(arr, &grown, sizeof(grown));
    *cap = n;
    return 0;
}
