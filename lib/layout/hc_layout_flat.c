/* hc_layout_flat.c - the weight and scale arrangements humming-kernels 0.1.19
 * adds to the tile repack (transform_humming_weight, the packed-K store of
 * weight_repack_nk in include/humming/kernel/process.cuh, and
 * pack_e8m0_scale_for_fp16 and the UMMA / MXMMA branches of
 * transform_humming_weight_scale in humming/transform.py). */
#include "hc_layout_ops.h"
#include "hc_parallel.h"

void hc_flat_weight(const uint32_t *in, uint32_t *out, int64_t E, int64_t N, int64_t K, int b,
                    uint32_t xor_mask)
{
    const int64_t row_words = K * b / 32, C = K * b / 128, NB = N / 64;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * row_words))
    for (int64_t e = 0; e < E; e++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t nb = 0; nb < NB; nb++)
                for (int64_t r = 0; r < 64; r++) {
                    /* source: row nb*64 + r, words 4c .. 4c+3 */
                    const uint32_t *src = in + (e * N + nb * 64 + r) * row_words + 4 * c;
                    uint32_t *dst = out + e * N * row_words + ((c * NB + nb) * 64 + r) * 4;
                    for (int w = 0; w < 4; w++) dst[w] = src[w] ^ xor_mask;
                }
}

void hc_packed_k_permute(const uint32_t *in, uint32_t *out, int64_t E, int64_t N, int64_t K,
                         int b)
{
    const int hb = b / 2;
    const int64_t rows = K / 64, in_row = N * b, out_row = 2 * N * b, NB = N / 64;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * K * N))
    for (int64_t e = 0; e < E; e++)
        for (int64_t r = 0; r < rows; r++)
            for (int i = 0; i < 2; i++) {
                /* tiled row 2r+i: per 64-row n block, 2 chunks of 32 lanes of b words */
                const uint32_t *src = in + (e * 2 * rows + 2 * r + i) * in_row;
                uint32_t *dst = out + (e * rows + r) * out_row;
                for (int64_t nb = 0; nb < NB; nb++)
                    for (int j = 0; j < 2; j++)
                        for (int lane = 0; lane < 32; lane++)
                            for (int k = 0; k < b; k++) {
                                int64_t region = nb * 4 + j * 2 + k / hb;
                                dst[region * 32 * b + lane * b + i * hb + k % hb] =
                                    src[nb * 64 * b + j * 32 * b + lane * b + k];
                            }
            }
}

void hc_e8m0_as_e5m0(uint8_t *s, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        int x = (int)s[i] - (127 - 15);
        s[i] = (uint8_t)((x < 0 ? 0 : x > 30 ? 30 : x) << 3);
    }
}

void hc_raw_weight(const uint32_t *in, uint32_t *out, int64_t count, uint32_t xor_mask)
{
#pragma omp parallel for schedule(static) if (HC_PARALLEL(count))
    for (int64_t i = 0; i < count; i++) out[i] = in[i] ^ xor_mask;
}

void hc_umma_scales(const uint8_t *in, uint8_t *out, int64_t E, int64_t N, int64_t G)
{
    /* scales (n, g) seen as (N/128, 4, 32, G/4, 4) stored as (G/4, N/128, 32, 4, 4):
     * the word at (q, 128 nb + 4 j + i) holds groups 4q..4q+3 of row 128 nb + 32 i + j */
    for (int64_t e = 0; e < E; e++)
        for (int64_t q = 0; q < G / 4; q++)
            for (int64_t nb = 0; nb < N / 128; nb++)
                for (int j = 0; j < 32; j++)
                    for (int i = 0; i < 4; i++)
                        for (int t = 0; t < 4; t++)
                            out[((e * (G / 4) + q) * N + 128 * nb + 4 * j + i) * 4 + t] =
                                in[(e * N + 128 * nb + 32 * i + j) * G + 4 * q + t];
}

void hc_mxmma_scales(const uint8_t *in, uint8_t *out, int64_t E, int64_t N, int64_t G)
{
    /* scales (n, g) seen as (N/16, 2, 8, G/2, 2) stored as (G/2, N/16, 8, 2, 2):
     * the word at (q, 8 nb + j) holds groups 2q, 2q+1 of rows 16 nb + j and 16 nb + 8 + j */
    for (int64_t e = 0; e < E; e++)
        for (int64_t q = 0; q < G / 2; q++)
            for (int64_t nb = 0; nb < N / 16; nb++)
                for (int j = 0; j < 8; j++)
                    for (int i = 0; i < 2; i++)
                        for (int t = 0; t < 2; t++)
                            out[((e * (G / 2) + q) * (N / 2) + 8 * nb + j) * 4 + 2 * i + t] =
                                in[(e * N + 16 * nb + 8 * i + j) * G + 2 * q + t];
}
