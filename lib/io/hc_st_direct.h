/* hc_st_direct.h - a file's bytes written in order through a staging buffer
 * and O_DIRECT (hc_safetensors_write.c's output path).
 *
 * Buffered writes cost the writer the copy into the page cache, the page
 * cache's allocation and the file system's delayed allocation, and the
 * kernel its writeback: about a third of a `--verify off` run's time on the
 * 2-core machine (docs/performance.md). Direct writes of 1 MiB stages go from
 * the buffer to the device; the final fsync still makes them durable (the
 * device's cache) with the file's size. Where the file system refuses
 * O_DIRECT (tmpfs, some network file systems), the same stages are written
 * through the ordinary descriptor instead. */
#ifndef HC_ST_DIRECT_H
#define HC_ST_DIRECT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hc_error.h"

typedef struct {
    int dfd;             /* the O_DIRECT descriptor, -1: the ordinary one writes */
    int fd;              /* the ordinary descriptor (not owned) */
    unsigned char *buf[2]; /* two stages of HC_ST_DIRECT_STAGE bytes, aligned to
                              HC_ST_DIRECT_ALIGN: one filled while the other is written */
    int cur;             /* the stage being filled */
    size_t fill;         /* bytes staged in it */
    uint64_t off;        /* its file offset */
    /* the flusher thread, which writes a full stage while the next fills (a
     * direct write waits for the device: without it the device would idle
     * while the stage is filled). Not started: the caller's thread writes. */
    pthread_t th;
    int started, stop, has_job, err; /* err: errno of the first failed write */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t job_len;
    uint64_t job_off;
    const unsigned char *job;
} hc_st_direct;

#define HC_ST_DIRECT_ALIGN 4096
#define HC_ST_DIRECT_STAGE ((size_t)1 << 20)

/* Sets d up to write path (already open as fd, empty) from offset 0: an
 * O_DIRECT descriptor where the file system takes one, and the flusher
 * thread where one can be started. 0 when the staging buffers cannot be had
 * (then d is unused: the caller writes as before). */
int hc_st_direct_open(hc_st_direct *d, const char *path, int fd);
/* Appends len bytes; every full stage is written. HC_ERR_IO on a failed write. */
hc_status hc_st_direct_put(hc_st_direct *d, const void *p, size_t len, hc_error *err);
/* Room in the current stage (*room bytes, at least 1) for a caller that
 * fills it in place, then commits what it put there. */
unsigned char *hc_st_direct_room(hc_st_direct *d, size_t *room);
hc_status hc_st_direct_commit(hc_st_direct *d, size_t n, hc_error *err);
/* Writes what is staged (a direct write's last block zero-padded, the file
 * then truncated to its size) and waits for every write. Not durable yet:
 * the caller fsyncs fd. */
hc_status hc_st_direct_finish(hc_st_direct *d, hc_error *err);
/* Stops the flusher thread once the stage it holds is written (none
 * started: nothing): later stages are written by the caller's thread, as
 * where no thread could be started. A first write error is kept. */
void hc_st_direct_stop_flusher(hc_st_direct *d);
/* Stops the flusher, closes the O_DIRECT descriptor and frees the buffers;
 * d zeroed may be given. */
void hc_st_direct_close(hc_st_direct *d);

#endif
