/* crc32_speed.c - GB/s of each hc_crc32_level (0 zlib, 1 PCLMULQDQ, 2
 * VPCLMULQDQ on 256-bit registers, 3 on 512-bit ones; a level the CPU lacks
 * runs the next one below) on an 8 KiB buffer (a packed row, in cache) and
 * a 64 MiB one (from memory), the best of 7 repetitions. Built and run by
 * make bench (build/crc32_speed). */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hc_crc32.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(void)
{
    const size_t big = (size_t)64 << 20, sizes[2] = {8192, big};
    unsigned char *b = malloc(big);
    if (!b) return 1;
    for (size_t i = 0; i < big; i++) b[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int s = 0; s < 2; s++)
        for (int level = 0; level <= 3; level++) {
            size_t n = sizes[s], reps = big / n;
            double best = 1e9;
            uint32_t c = 0;
            for (int r = 0; r < 7; r++) {
                double t = now();
                for (size_t i = 0; i < reps; i++) c ^= hc_crc32_level(level, c, b, n);
                t = now() - t;
                best = t < best ? t : best;
            }
            printf("%8zu bytes  level %d  %6.2f GB/s  (%08x)\n", n, level,
                   (double)(n * reps) / best / 1e9, c);
        }
    free(b);
    return 0;
}
