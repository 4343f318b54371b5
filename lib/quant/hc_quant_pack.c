/* hc_quant_pack.c - row packing of b-bit codes into little-endian 32-bit words
 * (Humming's pack_weight layout, spec section 3). */
#include <string.h>

#include "hc_parallel.h"
#include "hc_quant_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 4-bit codes, 64 at a time: byte b of the output is c[2b] | c[2b+1] << 4,
 * formed by one multiply-add of each byte pair by (1, 16). Returns how many
 * codes were packed. */
__attribute__((target("avx2"))) static int64_t pack4_avx2(const uint8_t *c, int64_t len,
                                                          uint32_t *w)
{
    const __m256i nib = _mm256_set1_epi8(15), mul = _mm256_set1_epi16(0x1001);
    int64_t i = 0;
    for (; i + 64 <= len; i += 64) {
        __m256i a = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(c + i)), nib);
        __m256i b = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(c + i + 32)), nib);
        __m256i v = _mm256_packus_epi16(_mm256_maddubs_epi16(a, mul), _mm256_maddubs_epi16(b, mul));
        _mm256_storeu_si256((__m256i *)(w + i / 8), _mm256_permute4x64_epi64(v, 0xD8));
    }
    return i;
}
#endif

static void pack_row_generic(const uint8_t *c, int64_t len, int bits, uint32_t *w)
{
    int64_t words = len * bits / 32;
    uint32_t mask = (1u << bits) - 1u;
    if (bits == 4) { /* whole codes per word, constant shifts */
        for (int64_t j = 0; j < words; j++) {
            const uint8_t *q = c + 8 * j;
            w[j] = (q[0] & 15u) | (q[1] & 15u) << 4 | (q[2] & 15u) << 8 | (q[3] & 15u) << 12 |
                   (q[4] & 15u) << 16 | (q[5] & 15u) << 20 | (q[6] & 15u) << 24 |
                   (uint32_t)(q[7] & 15u) << 28;
        }
        return;
    }
    if (bits == 8) {
        for (int64_t j = 0; j < words; j++)
            w[j] = c[4 * j] | (uint32_t)c[4 * j + 1] << 8 | (uint32_t)c[4 * j + 2] << 16 |
                   (uint32_t)c[4 * j + 3] << 24;
        return;
    }
    memset(w, 0, (size_t)words * sizeof *w);
    for (int64_t i = 0; i < len; i++) {
        uint64_t bit = (uint64_t)i * (uint64_t)bits;
        uint32_t v = c[i] & mask;
        unsigned off = (unsigned)(bit & 31u);
        w[bit >> 5] |= v << off;
        if (off + (unsigned)bits > 32u) w[(bit >> 5) + 1] |= v >> (32u - off);
    }
}

void hq_pack_row_isa(int isa, const uint8_t *c, int64_t len, int bits, uint32_t *w)
{
    int64_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (isa >= HQ_ISA_AVX2 && bits == 4) done = pack4_avx2(c, len, w);
#endif
    (void)isa;
    pack_row_generic(c + done, len - done, bits, w + done * bits / 32);
}

void hc_pack_row(const uint8_t *c, int64_t len, int bits, uint32_t *w)
{
    hq_pack_row_isa(hq_isa_detect(), c, len, bits, w);
}

void hc_pack_rows(const uint8_t *codes, int64_t rows, int64_t len, int bits, uint32_t *out)
{
    int64_t words = len * bits / 32;
    int isa = hq_isa_detect();
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * len))
    for (int64_t r = 0; r < rows; r++)
        hq_pack_row_isa(isa, codes + r * len, len, bits, out + r * words);
}

void hc_unpack_rows(const uint32_t *words, int64_t rows, int64_t len, int bits, uint8_t *out)
{
    int64_t nw = len * bits / 32;
    uint32_t mask = (1u << bits) - 1u;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * len))
    for (int64_t r = 0; r < rows; r++) {
        const uint32_t *w = words + r * nw;
        for (int64_t i = 0; i < len; i++) {
            uint64_t bit = (uint64_t)i * (uint64_t)bits;
            unsigned off = (unsigned)(bit & 31u);
            uint64_t pair = w[bit >> 5];
            if (off + (unsigned)bits > 32u) pair |= (uint64_t)w[(bit >> 5) + 1] << 32;
            out[r * len + i] = (uint8_t)((pair >> off) & mask);
        }
    }
}
