/* hc_ckpt_simd.h - vector helpers shared by the readers' word-level paths
 * (x86-64 AVX2, chosen at run time; each caller keeps its portable loop). */
#ifndef HC_CKPT_SIMD_H
#define HC_CKPT_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HC_CKPT_X86 1
#define HC_CKPT_AVX2 __attribute__((target("avx2")))

/* 1 where the CPU runs AVX2. */
static inline int hc_ckpt_have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/* 8 x 8 transpose of 32-bit words: r[x] lane y -> r[y] lane x. */
HC_CKPT_AVX2 static inline void hc_ckpt_transpose8x8(__m256i r[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; h++) {
            u[i + h] = _mm256_unpacklo_epi64(t[i + h], t[i + 2 + h]);
            u[i + 2 + h] = _mm256_unpackhi_epi64(t[i + h], t[i + 2 + h]);
        }
    for (int i = 0; i < 4; i++) {
        /* u[0..3]: rows 0-3, u[4..7]: rows 4-7; lanes 0-3 in the low half */
        static const int order[4] = {0, 2, 1, 3};
        int q = order[i];
        r[i] = _mm256_permute2x128_si256(u[q], u[4 + q], 0x20);
        r[i + 4] = _mm256_permute2x128_si256(u[q], u[4 + q], 0x31);
    }
}

#else
#define HC_CKPT_X86 0
static inline int hc_ckpt_have_avx2(void) { return 0; }
#endif

#endif
