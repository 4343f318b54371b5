/* hc_st_direct.c - staged O_DIRECT writing of a file (hc_st_direct.h). */
#include "hc_st_direct.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hc_st_direct_open(hc_st_direct *d, const char *path, int fd)
{
    memset(d, 0, sizeof *d);
    d->dfd = -1;
    d->fd = fd;
    if (posix_memalign((void **)&d->buf, HC_ST_DIRECT_ALIGN, HC_ST_DIRECT_STAGE) != 0) {
        d->buf = NULL;
        return 0;
    }
#ifdef O_DIRECT
    d->dfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
#else
    (void)path;
#endif
    return 1;
}

/* len bytes of buf at file offset off through descriptor fd. */
static int write_at(int fd, const unsigned char *p, size_t len, uint64_t off)
{
    while (len > 0) {
        ssize_t k = pwrite(fd, p, len, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return -1;
        }
        p += k;
        len -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* Writes the stage's first len bytes (len aligned for a direct write, or
 * the file's tail). A direct write the file system refuses (EINVAL) is
 * written through the ordinary descriptor, and so is everything after. */
static hc_status write_stage(hc_st_direct *d, size_t len, hc_error *err)
{
    if (d->dfd >= 0 && write_at(d->dfd, d->buf, len, d->off) == 0) return HC_OK;
    if (d->dfd >= 0 && errno != EINVAL)
        HC_FAIL(err, HC_ERR_IO, "write failed: %s", strerror(errno));
    if (d->dfd >= 0) {
        close(d->dfd);
        d->dfd = -1;
    }
    if (write_at(d->fd, d->buf, len, d->off) != 0)
        HC_FAIL(err, HC_ERR_IO, "write failed: %s", strerror(errno));
    return HC_OK;
}

hc_status hc_st_direct_put(hc_st_direct *d, const void *p, size_t len, hc_error *err)
{
    const unsigned char *s = p;
    while (len > 0) {
        size_t n = HC_ST_DIRECT_STAGE - d->fill < len ? HC_ST_DIRECT_STAGE - d->fill : len;
        memcpy(d->buf + d->fill, s, n);
        d->fill += n;
        s += n;
        len -= n;
        if (d->fill == HC_ST_DIRECT_STAGE) {
            HC_TRY(write_stage(d, HC_ST_DIRECT_STAGE, err));
            d->off += HC_ST_DIRECT_STAGE;
            d->fill = 0;
        }
    }
    return HC_OK;
}

hc_status hc_st_direct_finish(hc_st_direct *d, hc_error *err)
{
    if (d->fill == 0) return HC_OK;
    const size_t fill = d->fill;
    size_t len = fill;
    if (d->dfd >= 0) { /* whole blocks: the padding is cut off below */
        len = (fill + HC_ST_DIRECT_ALIGN - 1) / HC_ST_DIRECT_ALIGN * HC_ST_DIRECT_ALIGN;
        memset(d->buf + fill, 0, len - fill);
    }
    HC_TRY(write_stage(d, len, err));
    d->off += fill;
    d->fill = 0;
    if (len != fill && ftruncate(d->fd, (off_t)d->off) != 0)
        HC_FAIL(err, HC_ERR_IO, "truncate failed: %s", strerror(errno));
    return HC_OK;
}

void hc_st_direct_close(hc_st_direct *d)
{
    if (d->buf && d->dfd >= 0) close(d->dfd); /* no buffer: never opened */
    free(d->buf);
    memset(d, 0, sizeof *d);
    d->dfd = -1;
}
