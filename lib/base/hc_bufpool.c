/* hc_bufpool.c - reuse of large buffers between tensors (hc_bufpool.h). */
#include "hc_bufpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
    void *buf;
    size_t len;
} kept;

struct hc_bufpool {
    pthread_mutex_t mu;
    kept *slots; /* oldest first */
    size_t n, keep;
};

hc_status hc_bufpool_new(size_t keep, hc_bufpool **out, hc_error *err)
{
    *out = NULL;
    hc_bufpool *p = calloc(1, sizeof *p);
    HC_CHECK_ALLOC(err, p, "buffer pool");
    p->slots = calloc(keep ? keep : 1, sizeof *p->slots);
    if (p->slots == NULL || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->slots);
        free(p);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory creating the buffer pool");
    }
    p->keep = keep;
    *out = p;
    return HC_OK;
}

void hc_bufpool_free(hc_bufpool *p)
{
    if (p == NULL) return;
    for (size_t i = 0; i < p->n; i++) free(p->slots[i].buf);
    pthread_mutex_destroy(&p->mu);
    free(p->slots);
    free(p);
}

/* The kept buffer of exactly len bytes, taken out of the pool, or NULL. */
static void *take_kept(hc_bufpool *p, size_t len)
{
    void *buf = NULL;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n && !buf; i++)
        if (p->slots[i].len == len) {
            buf = p->slots[i].buf;
            memmove(&p->slots[i], &p->slots[i + 1], (p->n - i - 1) * sizeof *p->slots);
            p->n--;
        }
    pthread_mutex_unlock(&p->mu);
    return buf;
}

enum { HUGE_PAGE = 2 << 20, HUGE_MIN = 8 << 20 };

/* A new buffer of len bytes, uninitialized. A large one is aligned to and
 * advised onto transparent huge pages: its first writes then fault once per
 * 2 MiB instead of once per 4 KiB (the faults of a fresh 32 MiB output
 * buffer were ~10% of a conversion where THP is "madvise" only). */
static void *fresh(size_t len)
{
#ifdef MADV_HUGEPAGE
    void *buf;
    if (len >= HUGE_MIN) {
        if (posix_memalign(&buf, HUGE_PAGE, len) != 0) return NULL;
        (void)madvise(buf, len & ~(size_t)(HUGE_PAGE - 1), MADV_HUGEPAGE); /* a hint only */
        return buf;
    }
#endif
    return malloc(len ? len : 1);
}

void *hc_bufpool_calloc(hc_bufpool *p, size_t len)
{
    void *buf = p ? take_kept(p, len) : NULL;
    if (buf == NULL && (p == NULL || len < HUGE_MIN)) return calloc(len ? len : 1, 1);
    if (buf == NULL && (buf = fresh(len)) == NULL) return NULL;
    memset(buf, 0, len); /* resident already, or faulted by huge pages */
    return buf;
}

void *hc_bufpool_take(hc_bufpool *p, size_t len)
{
    void *buf = p ? take_kept(p, len) : NULL;
    return buf ? buf : p ? fresh(len) : malloc(len ? len : 1);
}

void hc_bufpool_put(hc_bufpool *p, void *buf, size_t len)
{
    if (p == NULL || p->keep == 0 || buf == NULL) {
        free(buf);
        return;
    }
    void *drop = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->n == p->keep) {
        drop = p->slots[0].buf;
        memmove(&p->slots[0], &p->slots[1], (p->n - 1) * sizeof *p->slots);
        p->n--;
    }
    p->slots[p->n++] = (kept){buf, len};
    pthread_mutex_unlock(&p->mu);
    free(drop);
}
