/* hc_parallel.h - when a loop is worth an OpenMP parallel region.
 *
 * Forking and joining threads costs microseconds; a tensor of a few thousand
 * elements is done faster by one thread (and small layers are common: norms,
 * routers, tests). Loops use `if (HC_PARALLEL(work))` on their pragma. */
#ifndef HC_PARALLEL_H
#define HC_PARALLEL_H

/* Elements (or element-sized steps) below which a loop stays serial. */
#define HC_PARALLEL_MIN_WORK 65536

#define HC_PARALLEL(work) ((int64_t)(work) >= HC_PARALLEL_MIN_WORK)

#endif
