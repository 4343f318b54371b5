/* hc_bufpool.h - large buffers kept for reuse between the tensors of a run:
 * a tensor's output buffer, freed once written, serves the next tensor of
 * the same size, instead of fresh pages faulted in, zeroed and unmapped
 * every time. A new buffer of 8 MiB or more from a pool is aligned to and
 * advised onto transparent huge pages (fewer faults). Thread-safe (the
 * writer's thread gives buffers back while the main thread takes them). */
#ifndef HC_BUFPOOL_H
#define HC_BUFPOOL_H

#include <stddef.h>

#include "hc_error.h"

typedef struct hc_bufpool hc_bufpool;

/* A pool that keeps at most `keep` buffers. Caller frees with hc_bufpool_free. */
hc_status hc_bufpool_new(size_t keep, hc_bufpool **out, hc_error *err);
/* Frees the pool and every buffer it keeps; NULL is allowed. */
void hc_bufpool_free(hc_bufpool *p);
/* len zeroed bytes (as calloc): a kept buffer of exactly len bytes when there
 * is one, else a new one; NULL when out of memory. The caller owns it and
 * may release it with free() or hc_bufpool_put. p NULL: calloc. */
void *hc_bufpool_calloc(hc_bufpool *p, size_t len);
/* len bytes of unspecified contents, for a caller that writes every byte: a
 * kept buffer of exactly len bytes when there is one (not zeroed), else a new
 * one; NULL when out of memory. Ownership as hc_bufpool_calloc. */
void *hc_bufpool_take(hc_bufpool *p, size_t len);
/* Gives buf (len bytes, from malloc / calloc / this pool) to the pool to
 * keep, or frees it when the pool is full (the oldest kept goes first). p
 * NULL: free. */
void hc_bufpool_put(hc_bufpool *p, void *buf, size_t len);

#endif
