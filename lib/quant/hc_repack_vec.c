/* hc_repack_vec.c - the byte-gather tile repack (hc_repack_internal.h).
 * AVX-512 VBMI: per 64 output bytes one gather of 8 row quadwords, one byte
 * permute (VPERMB), the code table (VPSHUFB on both nibbles) and the nibble
 * move inside each word. AVX2: the same 64 bytes as four 16-byte pieces (two
 * rows' quadwords each) broadcast to both lanes, each 32 output bytes the OR
 * of four byte shuffles (one per piece, the others' bytes zeroed), then the
 * same table and nibble move. Both give the bytes of the portable pair path
 * (tests/test_layout.c compares all three on every variant). */
#include "hc_repack_internal.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HC_HAVE_X86 1
#else
#define HC_HAVE_X86 0
#endif

int hc_tile_gather_available(void)
{
#if HC_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vbmi"))
        return 2;
    return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
    return 0;
#endif
}

#if HC_HAVE_X86
#define HC_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define HC_AVX2 __attribute__((target("avx2")))

/* ---- AVX-512 VBMI ------------------------------------------------------- */

/* Nibbles of each word from bytes [B0 B2 B1 B3] to l0 l1 l2 l3 h0 h1 h2 h3
 * (l, h: a byte's low and high code): D & F0F00F0F | D >> 12 & F0F0 |
 * D << 12 & 0F0F0000. */
HC_VBMI static inline __m512i nibble_swap(__m512i d)
{
    const __m512i keep = _mm512_set1_epi32((int)0xF0F00F0Fu);
    const __m512i down = _mm512_and_si512(_mm512_srli_epi32(d, 12), _mm512_set1_epi32(0xF0F0));
    const __m512i up = _mm512_and_si512(_mm512_slli_epi32(d, 12), _mm512_set1_epi32(0x0F0F0000));
    return _mm512_or_si512(_mm512_and_si512(d, keep), _mm512_or_si512(down, up));
}

/* The code table on both nibbles of every byte. */
HC_VBMI static inline __m512i nibble_lut(__m512i d, __m512i lut)
{
    const __m512i m = _mm512_set1_epi8(0x0F);
    const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(d, m));
    const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(d, 4), m));
    return _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
}

/* One tile: 8 blocks of 64 output bytes. */
HC_VBMI static inline void tile512(const __m512i *off, const __m512i *idx, __m512i lut, int plain,
                                   int swap, const uint32_t *src, uint32_t *dst)
{
    for (int a = 0; a < 8; a++) {
        __m512i v = _mm512_i64gather_epi64(off[a], src, 1);
        v = _mm512_permutexvar_epi8(idx[a], v);
        if (!plain) v = nibble_lut(v, lut);
        if (swap) v = nibble_swap(v);
        _mm512_storeu_si512(dst + 16 * a, v);
    }
}

/* n tiles in order within spans of 64 k blocks: the rows' 512-byte spans stay
 * in cache while their tiles are built, and the output is written in 512-byte
 * pieces (k block by k block through the rows, 2.5x slower, read each row's
 * lines with a stride the prefetchers miss). */
HC_VBMI static void rows512(const hc_tile_gather *g, const uint32_t *in_e, int64_t row_words,
                            int64_t nb0, int64_t nb1, int64_t kblocks, int64_t out_row,
                            uint32_t *out_e)
{
    __m512i off[8], idx[8];
    for (int a = 0; a < 8; a++) {
        int64_t o[8];
        for (int m = 0; m < 8; m++) o[m] = g->row[a][m] * row_words * 4;
        off[a] = _mm512_loadu_si512(o);
        idx[a] = _mm512_loadu_si512(g->idx[a]);
    }
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)g->lut));
    for (int64_t kc = 0; kc < kblocks; kc += 64)
        for (int64_t nb = nb0; nb < nb1; nb++)
            for (int64_t kb = kc; kb < kc + 64 && kb < kblocks; kb++)
                tile512(off, idx, lut, g->plain, g->swap, in_e + 64 * nb * row_words + 2 * kb,
                        out_e + kb * out_row + nb * 128);
}

/* ---- AVX2 ---------------------------------------------------------------- */

HC_AVX2 static inline __m256i nibble_swap256(__m256i d)
{
    const __m256i keep = _mm256_set1_epi32((int)0xF0F00F0Fu);
    const __m256i down = _mm256_and_si256(_mm256_srli_epi32(d, 12), _mm256_set1_epi32(0xF0F0));
    const __m256i up = _mm256_and_si256(_mm256_slli_epi32(d, 12), _mm256_set1_epi32(0x0F0F0000));
    return _mm256_or_si256(_mm256_and_si256(d, keep), _mm256_or_si256(down, up));
}

HC_AVX2 static inline __m256i nibble_lut256(__m256i d, __m256i lut)
{
    const __m256i m = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(d, m));
    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(d, 4), m));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
}

/* The shuffles of block a: output half h (32 bytes) from piece c (bytes
 * 16c..16c+15 of the 8 quadwords) takes byte idx % 16 where idx / 16 == c,
 * else zero (index bit 7). */
typedef struct {
    uint8_t sh[8][2][4][32];
} shuf_tables;

static void shuf_init(const hc_tile_gather *g, shuf_tables *t)
{
    for (int a = 0; a < 8; a++)
        for (int q = 0; q < 64; q++)
            for (int c = 0; c < 4; c++)
                t->sh[a][q / 32][c][q % 32] =
                    g->idx[a][q] / 16 == c ? (uint8_t)(g->idx[a][q] % 16) : 0x80;
}

HC_AVX2 static inline void tile256(const hc_tile_gather *g, const shuf_tables *t,
                                   const int64_t (*off)[8], __m256i lut, const uint32_t *src,
                                   uint32_t *dst)
{
    const unsigned char *s = (const unsigned char *)src;
    for (int a = 0; a < 8; a++) {
        __m256i piece[4];
        for (int c = 0; c < 4; c++) {
            long long q0, q1;
            memcpy(&q0, s + off[a][2 * c], 8);
            memcpy(&q1, s + off[a][2 * c + 1], 8);
            piece[c] = _mm256_broadcastsi128_si256(_mm_set_epi64x(q1, q0));
        }
        for (int h = 0; h < 2; h++) {
            __m256i v = _mm256_setzero_si256();
            for (int c = 0; c < 4; c++)
                v = _mm256_or_si256(v, _mm256_shuffle_epi8(piece[c], _mm256_loadu_si256(
                                                               (const __m256i *)t->sh[a][h][c])));
            if (!g->plain) v = nibble_lut256(v, lut);
            if (g->swap) v = nibble_swap256(v);
            _mm256_storeu_si256((__m256i *)(dst + 16 * a + 8 * h), v);
        }
    }
}

HC_AVX2 static void rows256(const hc_tile_gather *g, const uint32_t *in_e, int64_t row_words,
                            int64_t nb0, int64_t nb1, int64_t kblocks, int64_t out_row,
                            uint32_t *out_e)
{
    shuf_tables t;
    shuf_init(g, &t);
    int64_t off[8][8];
    for (int a = 0; a < 8; a++)
        for (int m = 0; m < 8; m++) off[a][m] = g->row[a][m] * row_words * 4;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)g->lut));
    for (int64_t kc = 0; kc < kblocks; kc += 64)
        for (int64_t nb = nb0; nb < nb1; nb++)
            for (int64_t kb = kc; kb < kc + 64 && kb < kblocks; kb++)
                tile256(g, &t, (const int64_t(*)[8])off, lut, in_e + 64 * nb * row_words + 2 * kb,
                        out_e + kb * out_row + nb * 128);
}

void hc_tile_gather_rows(const hc_tile_gather *g, int level, const uint32_t *in_e,
                         int64_t row_words, int64_t nb0, int64_t nb1, int64_t kblocks,
                         int64_t out_row, uint32_t *out_e)
{
    if (level >= 2) rows512(g, in_e, row_words, nb0, nb1, kblocks, out_row, out_e);
    else rows256(g, in_e, row_words, nb0, nb1, kblocks, out_row, out_e);
}
#else
void hc_tile_gather_rows(const hc_tile_gather *g, int level, const uint32_t *in_e,
                         int64_t row_words, int64_t nb0, int64_t nb1, int64_t kblocks,
                         int64_t out_row, uint32_t *out_e)
{
    (void)g, (void)level, (void)in_e, (void)row_words, (void)nb0, (void)nb1, (void)kblocks;
    (void)out_row, (void)out_e;
}
#endif
