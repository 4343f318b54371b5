/* hc_st_direct.c - staged O_DIRECT writing of a file (hc_st_direct.h). */
#include "hc_st_direct.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* len bytes of p at file offset off through descriptor fd; 0 or an errno. */
static int write_at(int fd, const unsigned char *p, size_t len, uint64_t off)
{
    while (len > 0) {
        ssize_t k = pwrite(fd, p, len, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return k == 0 ? EIO : errno;
        p += k;
        len -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* One stage's len bytes (aligned for a direct write, or the file's tail) at
 * off; 0 or an errno. A direct write the file system refuses (EINVAL) is
 * written through the ordinary descriptor, and so is everything after. */
static int write_stage(hc_st_direct *d, const unsigned char *p, size_t len, uint64_t off)
{
    if (d->dfd >= 0) {
        int e = write_at(d->dfd, p, len, off);
        if (e != EINVAL) return e;
        close(d->dfd);
        d->dfd = -1;
    }
    return write_at(d->fd, p, len, off);
}

static void *flusher(void *arg)
{
    hc_st_direct *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->has_job && !d->stop) pthread_cond_wait(&d->cv, &d->mu);
        if (!d->has_job) break;
        const unsigned char *p = d->job;
        size_t len = d->job_len;
        uint64_t off = d->job_off;
        int skip = d->err != 0;
        pthread_mutex_unlock(&d->mu);
        int e = skip ? 0 : write_stage(d, p, len, off);
        pthread_mutex_lock(&d->mu);
        if (e && !d->err) d->err = e;
        d->has_job = 0;
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static void start_flusher(hc_st_direct *d)
{
    if (pthread_mutex_init(&d->mu, NULL) != 0) return;
    if (pthread_cond_init(&d->cv, NULL) != 0) {
        pthread_mutex_destroy(&d->mu);
        return;
    }
    if (pthread_create(&d->th, NULL, flusher, d) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        return;
    }
    d->started = 1;
}

int hc_st_direct_open(hc_st_direct *d, const char *path, int fd)
{
    memset(d, 0, sizeof *d);
    d->dfd = -1;
    d->fd = fd;
    for (int i = 0; i < 2; i++)
        if (posix_memalign((void **)&d->buf[i], HC_ST_DIRECT_ALIGN, HC_ST_DIRECT_STAGE) != 0) {
            d->buf[i] = NULL;
            free(d->buf[0]);
            d->buf[0] = NULL;
            return 0;
        }
#ifdef O_DIRECT
    d->dfd = open(path, O_WRONLY | O_DIRECT | O_CLOEXEC);
#else
    (void)path;
#endif
    start_flusher(d);
    return 1;
}

/* Waits until the flusher holds no stage; its first error (an errno) or 0. */
static int drain(hc_st_direct *d)
{
    if (!d->started) return d->err;
    pthread_mutex_lock(&d->mu);
    while (d->has_job) pthread_cond_wait(&d->cv, &d->mu);
    int e = d->err;
    pthread_mutex_unlock(&d->mu);
    return e;
}

/* The full current stage to the flusher (or written here without one); the
 * other stage, whose write is done, becomes current. */
static hc_status submit(hc_st_direct *d, hc_error *err)
{
    int e = drain(d);
    if (e == 0 && !d->started) e = d->err = write_stage(d, d->buf[d->cur], d->fill, d->off);
    if (e != 0) HC_FAIL(err, HC_ERR_IO, "write failed: %s", strerror(e));
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->job = d->buf[d->cur];
        d->job_len = d->fill;
        d->job_off = d->off;
        d->has_job = 1;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        d->cur ^= 1;
    }
    d->off += d->fill;
    d->fill = 0;
    return HC_OK;
}

hc_status hc_st_direct_put(hc_st_direct *d, const void *p, size_t len, hc_error *err)
{
    const unsigned char *s = p;
    while (len > 0) {
        size_t n = HC_ST_DIRECT_STAGE - d->fill < len ? HC_ST_DIRECT_STAGE - d->fill : len;
        memcpy(d->buf[d->cur] + d->fill, s, n);
        d->fill += n;
        s += n;
        len -= n;
        if (d->fill == HC_ST_DIRECT_STAGE) HC_TRY(submit(d, err));
    }
    return HC_OK;
}

unsigned char *hc_st_direct_room(hc_st_direct *d, size_t *room)
{
    *room = HC_ST_DIRECT_STAGE - d->fill;
    return d->buf[d->cur] + d->fill;
}

hc_status hc_st_direct_commit(hc_st_direct *d, size_t n, hc_error *err)
{
    d->fill += n;
    if (d->fill == HC_ST_DIRECT_STAGE) HC_TRY(submit(d, err));
    return HC_OK;
}

hc_status hc_st_direct_finish(hc_st_direct *d, hc_error *err)
{
    int e = drain(d); /* after it, only this thread touches dfd */
    if (e != 0) HC_FAIL(err, HC_ERR_IO, "write failed: %s", strerror(e));
    if (d->fill == 0) return HC_OK;
    const size_t fill = d->fill;
    size_t len = fill;
    if (d->dfd >= 0) { /* whole blocks: the padding is cut off below */
        len = (fill + HC_ST_DIRECT_ALIGN - 1) / HC_ST_DIRECT_ALIGN * HC_ST_DIRECT_ALIGN;
        memset(d->buf[d->cur] + fill, 0, len - fill);
    }
    e = write_stage(d, d->buf[d->cur], len, d->off);
    if (e != 0) HC_FAIL(err, HC_ERR_IO, "write failed: %s", strerror(e));
    d->off += fill;
    d->fill = 0;
    if (len != fill && ftruncate(d->fd, (off_t)d->off) != 0)
        HC_FAIL(err, HC_ERR_IO, "truncate failed: %s", strerror(errno));
    return HC_OK;
}

void hc_st_direct_stop_flusher(hc_st_direct *d)
{
    if (!d->started) return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->th, NULL); /* after the stage it holds, if any */
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    d->started = 0;
    d->stop = 0;
}

void hc_st_direct_close(hc_st_direct *d)
{
    hc_st_direct_stop_flusher(d);
    if (d->buf[0] && d->dfd >= 0) close(d->dfd); /* no buffers: never opened */
    free(d->buf[0]);
    free(d->buf[1]);
    memset(d, 0, sizeof *d);
    d->dfd = -1;
}
