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

#ifdef _OPENMP
#include <omp.h>
#endif

/* The calling OpenMP thread's number, the team size a parallel region gets,
 * and the nesting level of parallel regions; one thread at level 0 in builds
 * without OpenMP (the fuzz targets). */
static inline int hc_thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int hc_thread_count(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline int hc_thread_nesting(void)
{
#ifdef _OPENMP
    return omp_get_level();
#else
    return 0;
#endif
}

#endif
