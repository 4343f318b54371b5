/* hc_crc32.c - CRC-32 by carry-less multiplication where the CPU has it,
 * zlib's crc32 otherwise (hc_crc32.h). The folding follows Intel's "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ" (Gopal et al., 2009)
 * for the reflected polynomial 0x104C11DB7: the constants are x^(4*128+32),
 * x^(4*128-32) mod P (fold by four lanes), x^(128+32), x^(128-32) mod P (fold
 * by one), x^64 mod P, and P' = x^64 / P with P itself for the Barrett step,
 * all bit-reflected. */
#include "hc_crc32.h"

#include <zlib.h>

uint32_t hc_crc32_zlib(uint32_t crc, const void *p, size_t len)
{
    const unsigned char *b = p;
    while (len > 0) { /* zlib's length is a uInt */
        uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, b, n);
        b += n;
        len -= n;
    }
    return crc;
}

uint32_t hc_crc32_concat(const uint32_t *piece_crc, int64_t n, uint64_t piece_bytes)
{
    if (n <= 0) return 0;
    /* one operator for the fixed length, then one multiplication per piece */
    uLong op = crc32_combine_gen((z_off_t)piece_bytes), crc = piece_crc[0];
    for (int64_t i = 1; i < n; i++) crc = crc32_combine_op(crc, piece_crc[i], op);
    return (uint32_t)crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define HC_CLMUL __attribute__((target("pclmul,sse4.1")))

/* a's two 64-bit halves each multiplied by k's and summed with next. */
HC_CLMUL static __m128i fold(__m128i a, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(a, k, 0x00), hi = _mm_clmulepi64_si128(a, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The four 128-bit lanes x1..x4 (64 bytes folded so far) continued over len
 * more bytes (a multiple of 16), reduced to the raw CRC state. */
HC_CLMUL static uint32_t fold_tail(__m128i x1, __m128i x2, __m128i x3, __m128i x4,
                                   const unsigned char *p, size_t len)
{
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5k0 = _mm_set_epi64x(0, 0x0163cd6124);
    const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    for (; len >= 64; p += 64, len -= 64) {
        x1 = fold(x1, k1k2, _mm_loadu_si128((const __m128i *)p));
        x2 = fold(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = fold(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = fold(x4, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    x1 = fold(fold(fold(x1, k3k4, x2), k3k4, x3), k3k4, x4);
    for (; len >= 16; p += 16, len -= 16) x1 = fold(x1, k3k4, _mm_loadu_si128((const __m128i *)p));
    /* 128 -> 64 bits, then 64 -> 32 by Barrett reduction */
    x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), k5k0, 0x00), x2);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), poly, 0x10);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, low32), poly, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x1, x2), 1);
}

/* The raw (not inverted) CRC state over len bytes, len >= 64 and a multiple of 16. */
HC_CLMUL static uint32_t fold_crc(uint32_t crc, const unsigned char *p, size_t len)
{
    __m128i x1 = _mm_loadu_si128((const __m128i *)p), x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32)), x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    return fold_tail(x1, x2, x3, x4, p + 64, len - 64);
}

#define HC_YCLMUL __attribute__((target("vpclmulqdq,avx2,pclmul,sse4.1")))

/* fold for the two 128-bit lanes of a 256-bit register at once. */
HC_YCLMUL static __m256i fold256(__m256i a, __m256i k, __m256i next)
{
    __m256i lo = _mm256_clmulepi64_epi128(a, k, 0x00), hi = _mm256_clmulepi64_epi128(a, k, 0x11);
    return _mm256_xor_si256(_mm256_xor_si256(lo, hi), next);
}

/* fold_crc with VPCLMULQDQ on 256-bit registers (CPUs without AVX-512),
 * len >= 256: eight registers (sixteen lanes, eight independent chains to
 * hide the multiplier's latency) folded by 2048 bits as fold_crc512; then
 * register pairs (64 bytes each) folded one into the next by 512 bits, the
 * last pair's four lanes being fold_crc's x1..x4: the rest is fold_tail. */
HC_YCLMUL static uint32_t fold_crc256(uint32_t crc, const unsigned char *p, size_t len)
{
    const __m256i k2048 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x01322d1430, 0x011542778a));
    const __m256i k512 = _mm256_broadcastsi128_si256(_mm_set_epi64x(0x01c6e41596, 0x0154442bd4));
    __m256i x[8];
    for (int i = 0; i < 8; i++) x[i] = _mm256_loadu_si256((const __m256i *)(p + 32 * i));
    x[0] = _mm256_xor_si256(x[0], _mm256_zextsi128_si256(_mm_cvtsi32_si128((int)crc)));
    for (p += 256, len -= 256; len >= 256; p += 256, len -= 256)
        for (int i = 0; i < 8; i++)
            x[i] = fold256(x[i], k2048, _mm256_loadu_si256((const __m256i *)(p + 32 * i)));
    for (int i = 2; i < 8; i++) x[i] = fold256(x[i - 2], k512, x[i]);
    return fold_tail(_mm256_castsi256_si128(x[6]), _mm256_extracti128_si256(x[6], 1),
                     _mm256_castsi256_si128(x[7]), _mm256_extracti128_si256(x[7], 1), p, len);
}

#define HC_VCLMUL __attribute__((target("vpclmulqdq,avx512f,avx512vl,pclmul,sse4.1")))

/* fold for the four 128-bit lanes of a 512-bit register at once. */
HC_VCLMUL static __m512i fold512(__m512i a, __m512i k, __m512i next)
{
    __m512i lo = _mm512_clmulepi64_epi128(a, k, 0x00), hi = _mm512_clmulepi64_epi128(a, k, 0x11);
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

/* fold_crc with VPCLMULQDQ, len >= 256: four 512-bit registers (sixteen
 * lanes) folded by 2048 bits (x^(2048+32), x^(2048-32) mod P, reflected),
 * then folded into one by 512 bits (fold_crc's k1k2), whose four lanes are
 * fold_crc's x1..x4: the rest is fold_tail. */
HC_VCLMUL static uint32_t fold_crc512(uint32_t crc, const unsigned char *p, size_t len)
{
    const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x01322d1430, 0x011542778a));
    const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x01c6e41596, 0x0154442bd4));
    __m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64);
    __m512i x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
    x0 = _mm512_xor_si512(x0, _mm512_inserti32x4(_mm512_setzero_si512(),
                                                  _mm_cvtsi32_si128((int)crc), 0));
    for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
        x0 = fold512(x0, k2048, _mm512_loadu_si512(p));
        x1 = fold512(x1, k2048, _mm512_loadu_si512(p + 64));
        x2 = fold512(x2, k2048, _mm512_loadu_si512(p + 128));
        x3 = fold512(x3, k2048, _mm512_loadu_si512(p + 192));
    }
    x0 = fold512(fold512(fold512(x0, k512, x1), k512, x2), k512, x3);
    return fold_tail(_mm512_extracti32x4_epi32(x0, 0), _mm512_extracti32x4_epi32(x0, 1),
                     _mm512_extracti32x4_epi32(x0, 2), _mm512_extracti32x4_epi32(x0, 3), p, len);
}

/* 3: VPCLMULQDQ on 512-bit registers (AVX-512), 2: on 256-bit ones (AVX2),
 * 1: PCLMULQDQ, 0: none of them (zlib). */
static int clmul_level(void)
{
    if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1")) return 0;
    if (!__builtin_cpu_supports("vpclmulqdq")) return 1;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return 3;
    return __builtin_cpu_supports("avx2") ? 2 : 1;
}

/* The raw CRC state over the len bytes at b (len >= 64, a multiple of 16). */
static uint32_t fold_level(int level, uint32_t crc, const unsigned char *b, size_t len)
{
    if (level == 3 && len >= 256) return fold_crc512(crc, b, len);
    if (level == 2 && len >= 256) return fold_crc256(crc, b, len);
    return fold_crc(crc, b, len);
}

uint32_t hc_crc32_level(int level, uint32_t crc, const void *p, size_t len)
{
    const unsigned char *b = p;
    int have = clmul_level();
    level = level < have ? level : have;
    if (len >= 64 && level > 0) {
        size_t bulk = len & ~(size_t)15;
        crc = ~fold_level(level, ~crc, b, bulk);
        b += bulk;
        len -= bulk;
    }
    return hc_crc32_zlib(crc, b, len);
}

uint32_t hc_crc32(uint32_t crc, const void *p, size_t len)
{
    return hc_crc32_level(3, crc, p, len);
}
#else
uint32_t hc_crc32_level(int level, uint32_t crc, const void *p, size_t len)
{
    (void)level;
    return hc_crc32_zlib(crc, p, len);
}

uint32_t hc_crc32(uint32_t crc, const void *p, size_t len) { return hc_crc32_zlib(crc, p, len); }
#endif
