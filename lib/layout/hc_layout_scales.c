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
static uint32_t zp_code(const uint32_t *zp_e, int64_t G, int64_t n, int64_t g, int b,
                        int truncated)
{
    int64_t bit = n * b, w = bit / 32;
    int off = (int)(bit % 32);
    uint32_t v = zp_e[w * G + g] >> off;
    if (!truncated && off + b > 32) v |= zp_e[(w + 1) * G + g] << (32 - off);
    return v & ((1u << b) - 1u);
}

void hc_zp_unpack(const uint32_t *in, uint8_t *codes, int64_t E, int64_t N, int64_t G, int b,
                  int truncated)
{
    int64_t words = N * b / 32;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * G))
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                codes[(e * N + n) * G + g] =
                    (uint8_t)zp_code(in + e * words * G, G, n, g, b, truncated);
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

float hc_scale_value(hc_format_id f, const void *data, int64_t i)
{
    const hc_format_info *fi = hc_format_get(f);
    if (fi == NULL || !(hc_format_role(f).roles & HC_FROLE_SCALE)) return NAN;
    const uint8_t *b8 = data;
    uint32_t code = b8[i];
    uint16_t half;
    if (fi->bits == 32) {
        memcpy(&code, b8 + 4 * i, 4);
    } else if (fi->bits == 16) {
        memcpy(&half, b8 + 2 * i, 2);
        code = half;
    }
    return (float)hc_format_decode(f, code); /* exact: every scale value fits a float */
}

void hc_scales_to_half(hc_format_id from, const void *in, hc_format_id to, uint16_t *out,
                       int64_t count)
{
#pragma omp parallel for schedule(static) if (HC_PARALLEL(count))
    for (int64_t i = 0; i < count; i++) {
        float v = hc_scale_value(from, in, i);
        out[i] = to == HC_FMT_F16 ? hc_f32_to_f16(v) : hc_f32_to_bf16(v);
    }
}

static float half_value(hc_format_id fmt, uint16_t h)
{
    return fmt == HC_FMT_F16 ? hc_f16_to_f32(h) : hc_bf16_to_f32(h);
}

float hc_int_weight_scales(uint16_t *ws, int64_t count, hc_format_id fmt, const float *gs_in,
                           float *gs_out, int64_t n_gs)
{
    float mx = 0.0f;
    for (int64_t i = 0; i < count; i++) {
        float a = fabsf(half_value(fmt, ws[i]));
        if (a > mx) mx = a;
    }
    float f = mx / 1024.0f;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(count))
    for (int64_t i = 0; i < count; i++) {
        /* all-zero scales: f = 0 would give NaN; every q is 0 then */
        float q = f > 0.0f ? nearbyintf(half_value(fmt, ws[i]) / f) : 0.0f;
        ws[i] = (uint16_t)(int16_t)q;
    }
    for (int64_t e = 0; e < n_gs; e++) gs_out[e] = (gs_in ? gs_in[e] : 1.0f) * f;
    return f;
}
