/* Opening a file: read it whole, then open the bytes (the view keeps only its fatbins). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fatbin_internal.h"

static int io_fail(kptx_error *err, const char *what, const char *path)
{
    char buf[128];
    const char *why = strerror_r(errno, buf, sizeof(buf));
    return kfb_fail(err, KPTX_EIO, "cannot %s %s: %s", what, path, why);
}

/* Reads all of fd (a regular file of size bytes) into a malloc'd buffer. */
static int read_all(int fd, const char *path, size_t size, uint8_t **out, kptx_error *err)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return kfb_fail(err, KPTX_ENOMEM, "out of memory for %zu bytes of %s", size, path);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int rc = n < 0 ? io_fail(err, "read", path)
                           : kfb_fail(err, KPTX_EIO, "%s shrank while being read", path);
            free(buf);
            return rc;
        }
        got += (size_t)n;
    }
    *out = buf;
    return 0;
}

int kfatbin_open_file(const char *path, kfatbin **out, kptx_error *err)
{
    if (!path || !out)
        return kfb_fail(err, KPTX_EINVAL, "kfatbin_open_file: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_fail(err, "open", path);
    struct stat st;
    uint8_t *buf = NULL;
    int rc;
    if (fstat(fd, &st) != 0)
        rc = io_fail(err, "stat", path);
    else if (!S_ISREG(st.st_mode))
        rc = kfb_fail(err, KPTX_EIO, "%s is not a regular file", path);
    else if ((uint64_t)st.st_size > SIZE_MAX / 2)
        rc = kfb_fail(err, KPTX_ELIMIT, "%s is too large", path);
    else
        rc = read_all(fd, path, (size_t)st.st_size, &buf, err);
    close(fd);
    if (rc)
        return rc;
    rc = kfatbin_open(buf, (size_t)st.st_size, out, err);
    free(buf);
    return rc;
}
