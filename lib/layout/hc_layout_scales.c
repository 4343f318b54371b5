/* hc_layout_scales.c - scale, zero-point and bias layouts (spec 5.4-5.7). */
#include <math.h>
#include <string.h>

#include "hc_layout_ops.h"
#include "hc_parallel.h"
#include "hc_repack.h"

int hc_scale_perm(int chunk, int j)
{
    static const int base32[8] = {0, 1, 8, 9, 16, 17, 24, 25};
    if (chunk == 64) return 8 * (j % 8) + j / 8;
    return base32[j % 8] + 2 * (j / 8);
}

void hc_scales_permute(const void *in, void *out, int64_t E, int64_t R, int64_t G,
                       size_t elem, int chunk)
{
    const unsigned char *src = in;
    unsigned char *dst = out;
    int perm[64];
    for (int j = 0; j < chunk; j++) perm[j] = hc_scale_perm(chunk, j);
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * G * R))
    for (int64_t e = 0; e < E; e++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t r = 0; r < R; r++) {
                int64_t from = (r / chunk) * chunk + perm[r % chunk];
                memcpy(dst + ((e * G + g) * R + r) * elem, src + ((e * R + from) * G + g) * elem,
                       elem);
            }
}

void hc_transpose_last2(const void *in, void *out, int64_t E, int64_t R, int64_t C,
                        size_t elem)
{
    const unsigned char *src = in;
    unsigned char *dst = out;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * C * R))
    for (int64_t e = 0; e < E; e++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < R; r++)
                memcpy(dst + ((e * C + c) * R + r) * elem, src + ((e * R + r) * C + c) * elem,
                       elem);
}

/* Code n of column g of one expert's (N*b/32, G) N-packed tensor. */
static uint32_t zp_code(const uint32_t *zp_e, int64_t G, int64_t n, int64_t g, int b)
{
    int64_t bit = n * b, w = bit / 32;
    int off = (int)(bit % 32);
    uint32_t v = zp_e[w * G + g] >> off;
    if (off + b > 32) v |= zp_e[(w + 1) * G + g] << (32 - off);
    return v & ((1u << b) - 1u);
}

void hc_zp_unpack(const uint32_t *in, uint8_t *codes, int64_t E, int64_t N, int64_t G, int b)
{
    int64_t words = N * b / 32;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * G))
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                codes[(e * N + n) * G + g] =
                    (uint8_t)zp_code(in + e * words * G, G, n, g, b);
}

void hc_zp_pack_bytes(const uint8_t *codes, uint8_t *out, int64_t count, int b)
{
    if (b > 4) {
        memcpy(out, codes, (size_t)count);
        return;
    }
    for (int64_t i = 0; i < count / 2; i++)
        out[i] = (uint8_t)((codes[2 * i] & 15) | (codes[2 * i + 1] & 15) << 4);
}
