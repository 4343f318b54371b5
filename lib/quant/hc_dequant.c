/* hc_dequant.c - the pre-repack form back to float32, from the meaning of the
 * formats (not from the quantizer's internals):
 *   symmetric integer  (code - 2^(b-1)) * scale
 *   integer zero point (code - z) * scale
 *   float zero point   (code - zf) * scale
 *   float element      decode(code) * scale
 * where scale = decode(stored scale) [* second scale: the global one of the
 * expert or the channel one of the row], or the global scale alone for
 * tensor granularity. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hc_parallel.h"
#include "hc_quant.h"

int hc_quant_scale_bytes(hc_format_id sf)
{
    return hc_format_role(sf).roles & HC_FROLE_SCALE ? hc_format_get(sf)->bits / 8 : 0;
}

double hc_quant_scale_value(hc_format_id sf, uint32_t bits)
{
    float f;
    switch (sf) {
    case HC_FMT_F16: return hc_f16_to_f32((uint16_t)bits);
    case HC_FMT_BF16: return hc_bf16_to_f32((uint16_t)bits);
    case HC_FMT_F32: memcpy(&f, &bits, sizeof f); return f;
    default: return hc_format_decode(sf, bits);
    }
}

static uint32_t read_le(const uint8_t *p, int nbytes)
{
    uint32_t v = 0;
    for (int i = nbytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Step of group (e, r, g); r is a scale row, which is the row itself when
 * there is a channel second scale (no block scales then). */
static double group_scale(const hc_quant_result *q, int64_t e, int64_t r, int64_t g)
{
    double gs = q->global_scale ? q->global_scale[e] : 1.0;
    if (q->scale_2) gs = hc_quant_scale_value(q->desc.scale_2_format, q->scale_2[e * q->n + r]);
    if (!q->scales) return gs;
    int64_t idx = (e * q->group_rows + r) * q->groups + g;
    uint32_t bits = read_le(q->scales + idx * q->scale_bytes, q->scale_bytes);
    return hc_quant_scale_value(q->desc.scale_format, bits) * gs;
}

/* Integer zero points unpacked to (E, NS, G); NULL result means no memory. */
static uint8_t *unpack_zero_points(const hc_quant_result *q)
{
    int64_t ns = q->group_rows, G = q->groups, wpc = ns * q->bits / 32;
    uint8_t *z = malloc((size_t)(q->experts * ns * G));
    uint32_t *col = malloc((size_t)wpc * sizeof *col);
    uint8_t *vals = malloc((size_t)ns);
    if (!z || !col || !vals) {
        free(z); free(col); free(vals);
        return NULL;
    }
    for (int64_t e = 0; e < q->experts; e++)
        for (int64_t g = 0; g < G; g++) {
            for (int64_t w = 0; w < wpc; w++) col[w] = q->zero_points[(e * wpc + w) * G + g];
            hc_unpack_rows(col, 1, ns, q->bits, vals);
            for (int64_t r = 0; r < ns; r++) z[(e * ns + r) * G + g] = vals[r];
        }
    free(col);
    free(vals);
    return z;
}

/* Zero point of group idx (0 when symmetric or for float elements). */
static double group_zp(const hc_quant_result *q, const uint8_t *zi, int64_t idx)
{
    if (q->zero_points_f) {
        uint16_t b = q->zero_points_f[idx];
        return q->zp_float_format == HC_FMT_F16 ? hc_f16_to_f32(b) : hc_bf16_to_f32(b);
    }
    if (zi) return zi[idx];
    return 0.0;
}

static void meaning_table(const hc_quant_result *q, double *lut)
{
    const hc_format_info *f = hc_format_get(q->desc.weight_format);
    for (uint32_t c = 0; c < (1u << q->bits); c++) {
        if (f->kind == HC_KIND_FLOAT) lut[c] = hc_format_decode(q->desc.weight_format, c);
        else if (q->desc.zero_point == HC_ZP_NONE) lut[c] = (double)c - (1u << (q->bits - 1));
        else lut[c] = c;
    }
}

static void dequant_rows(const hc_quant_result *q, const uint8_t *codes, const uint8_t *zi,
                         const double *lut, float *out)
{
    int64_t N = q->n, K = q->k, rows_per = N / q->group_rows;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(q->experts * N * K))
    for (int64_t row = 0; row < q->experts * N; row++) {
        int64_t e = row / N, r = (row % N) / rows_per;
        for (int64_t g = 0; g < q->groups; g++) {
            int64_t idx = (e * q->group_rows + r) * q->groups + g;
            double s = group_scale(q, e, r, g), z = group_zp(q, zi, idx);
            for (int64_t k = g * q->group_cols; k < (g + 1) * q->group_cols; k++)
                out[row * K + k] = (float)((lut[codes[row * K + k]] - z) * s);
        }
    }
}

hc_status hc_dequantize(const hc_quant_result *q, float *out, hc_error *err)
{
    if (!q || !q->codes || !out) HC_FAIL(err, HC_ERR_ARG, "dequantize: missing tensors");
    int64_t total = q->experts * q->n * q->k;
    uint8_t *codes = malloc((size_t)total);
    HC_CHECK_ALLOC(err, codes, "dequantize codes");
    hc_unpack_rows(q->codes, q->experts * q->n, q->k, q->bits, codes);
    uint8_t *zi = NULL;
    if (q->zero_points && !(zi = unpack_zero_points(q))) {
        free(codes);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating dequantize zero points");
    }
    double lut[256];
    meaning_table(q, lut);
    dequant_rows(q, codes, zi, lut, out);
    free(codes);
    free(zi);
    return HC_OK;
}
