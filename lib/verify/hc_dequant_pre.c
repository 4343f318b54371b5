/* hc_dequant_pre.c - a Humming-format (row-packed, spec 7.8) layer to float
 * weights, from the meaning of the tensors (spec 1.2, 1.3, 3):
 *   value = (code - zero) * scale * global
 * (global: the second scale, per expert or per output row)
 * with zero = 2^(b-1) for symmetric integer codes, the N-packed integer zero
 * point or the float zero point; float codes decoded exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hc_verify.h"
#include "hc_parallel.h"

/* Bits [pos, pos+b) of a little-endian bit stream of 32-bit words, where
 * word i of the stream is at base + i*stride (in words). */
static uint32_t stream_bits(const void *base, int64_t stride, int64_t pos, int b)
{
    int64_t w = pos / 32;
    int sh = (int)(pos % 32);
    uint32_t lo, hi = 0;
    memcpy(&lo, (const unsigned char *)base + (size_t)(w * stride) * 4, 4);
    uint64_t v = lo >> sh;
    if (sh + b > 32) {
        memcpy(&hi, (const unsigned char *)base + (size_t)((w + 1) * stride) * 4, 4);
        v |= (uint64_t)hi << (32 - sh);
    }
    return (uint32_t)v & ((1u << b) - 1);
}

static double elem_value(hc_dtype dt, hc_format_id fmt, const void *data, int64_t i)
{
    const unsigned char *p = data;
    switch (dt) {
    case HC_DT_F16: case HC_DT_BF16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return hc_format_decode(dt == HC_DT_F16 ? HC_FMT_F16 : HC_FMT_BF16, h);
    }
    case HC_DT_F32: {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    default:
        return hc_format_decode(fmt, p[i]);
    }
}

hc_status hc_dequant_pre_check(const hc_layer_config *cfg, const hc_layer_meta *m,
                               const hc_layer_tensors *pre, hc_error *err)
{
    const int64_t row_words = m->K * m->weight_bits / 32;
    const hc_tensor *s = &pre->weight_scale, *g = &pre->global_scale;
    (void)cfg;
    if (pre->weight.data == NULL || (int64_t)pre->weight.nbytes != m->E * m->N * row_words * 4)
        HC_FAIL(err, HC_ERR_FORMAT, "pre weight: expected %lld int32 words",
                (long long)(m->E * m->N * row_words));
    if (m->scale_type != HC_SCALE_TENSOR && s->data == NULL)
        HC_FAIL(err, HC_ERR_FORMAT, "pre weight_scale: missing");
    if ((m->scale_type == HC_SCALE_TENSOR || m->scale_type == HC_SCALE_GROUP_TENSOR) &&
        g->data == NULL && !m->use_fused_e8m0 && !m->use_int_weight_scale)
        HC_FAIL(err, HC_ERR_FORMAT, "pre global_scale: missing");
    return HC_OK;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Codes [k0, k1) of 2- or 4-bit codes, k0 at a word's start, 16 at a time
 * (their words by a permute, the codes by shifts, the values by a permute of
 * the table T): the floats group_by_table's loop stores. Returns the first
 * code not done. */
__attribute__((target("avx512f"))) static int64_t
codes16_avx512(const unsigned char *row, int b, const float *T, int64_t k0, int64_t k1,
               int64_t kb, float *out)
{
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i idx = _mm512_srli_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(b)), 5);
    const __m512i sh = _mm512_and_si512(_mm512_mullo_epi32(lane, _mm512_set1_epi32(b)),
                                        _mm512_set1_epi32(31));
    const __m512i mask = _mm512_set1_epi32((1 << b) - 1);
    const __m512 t = _mm512_maskz_loadu_ps((__mmask16)((1u << (1 << b)) - 1), T);
    const __mmask16 words = (__mmask16)((1u << (b / 2)) - 1); /* 16 codes: b / 2 words */
    int64_t k = k0;
    for (; k + 16 <= k1; k += 16) {
        const __m512i w = _mm512_maskz_loadu_epi32(words, row + (size_t)(k * b / 32) * 4);
        const __m512i code = _mm512_and_si512(
            _mm512_srlv_epi32(_mm512_permutexvar_epi32(idx, w), sh), mask);
        _mm512_storeu_ps(out + (k - kb), _mm512_permutexvar_ps(code, t));
    }
    return k;
}
#endif

/* Codes [k0, k1) of a row of b-bit codes (b divides 32: none straddles a
 * word) by a table of the 2^b values of the group, each computed as the
 * element loop of dequant_row computes it: the same floats; out[k - kb].
 * portable: the element loop only (else 2- and 4-bit codes 16 at a time
 * with AVX-512 where they start at a word). */
static void group_by_table(const unsigned char *row, int b, int is_float, const double *lut,
                           double zero, double sc, double glob, int64_t k0, int64_t k1,
                           int64_t kb, int portable, float *out)
{
    float T[256];
    const uint32_t mask = (1u << b) - 1;
    for (uint32_t c = 0; c <= mask; c++) {
        const double x = is_float ? lut[c] : (double)c - zero;
        T[c] = (float)(x * sc * glob);
    }
    int64_t k = k0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!portable && (b == 2 || b == 4) && k0 * b % 32 == 0 && __builtin_cpu_supports("avx512f"))
        k = codes16_avx512(row, b, T, k0, k1, kb, out);
#endif
    (void)portable;
    for (; k < k1; k++) {
        uint32_t w;
        memcpy(&w, row + (size_t)(k * b / 32) * 4, 4);
        out[k - kb] = T[(w >> (k * b % 32)) & mask];
    }
}

/* Columns [kb, ke) of row r = e * N + n into out (ke - kb floats); lut:
 * the float codes decoded. A group's table is taken where the whole group
 * is asked for: the floats do not depend on it. */
static void dequant_row(const hc_layer_config *cfg, const hc_layer_meta *m,
                        const hc_layer_tensors *pre, const double *lut, int64_t r, int64_t kb,
                        int64_t ke, int portable, float *out)
{
    const int b = m->weight_bits;
    const int is_float = hc_format_get(cfg->weight_format)->kind == HC_KIND_FLOAT;
    const int64_t N = m->N, K = m->K, row_words = K * b / 32, e = r / N, n = r % N;
    const int64_t gs = cfg->group_size > 0 ? cfg->group_size : K, G0 = K / gs;
    const hc_tensor *s = &pre->weight_scale, *z = &pre->zero_point, *g = &pre->global_scale;
    const int int_zp = z->data && !cfg->is_fp_zero_point;
    const int fp_zp = z->data && cfg->is_fp_zero_point;
    const unsigned char *row =
        (const unsigned char *)pre->weight.data + (size_t)(r * row_words) * 4;
    double glob = g->data == NULL ? 1.0
                  : cfg->scale_2_channel ? elem_value(g->dtype, cfg->param_format, g->data, r)
                  : elem_value(HC_DT_F32, HC_FMT_F32, g->data, g->shape[0] == 1 ? 0 : e);
    /* zero point and scale are constant over a group of gs along K */
    for (int64_t gk = kb / gs * gs; gk < ke; gk += gs) {
        const int64_t gi = gk / gs, k0 = gk > kb ? gk : kb;
        const int64_t k1 = gk + gs < ke ? gk + gs : ke;
        double zero = 0.0, sc = 1.0;
        if (int_zp) { /* (E, N*b/32, G0): stream along dim 1, stride G0 words */
            const unsigned char *zb = (const unsigned char *)z->data +
                                      (size_t)(e * (N * b / 32) * G0 + gi) * 4;
            zero = (double)stream_bits(zb, G0, n * b, b);
        } else if (fp_zp) {
            zero = elem_value(z->dtype, cfg->param_format, z->data, (e * N + n) * G0 + gi);
        } else if (!is_float) {
            zero = (double)(1u << (b - 1));
        }
        if (cfg->scale_type == HC_SCALE_BLOCK) {
            int64_t Rb = N / cfg->group_size_n, Cb = K / cfg->group_size;
            sc = elem_value(HC_DT_F32, HC_FMT_F32, s->data,
                            (e * Rb + n / cfg->group_size_n) * Cb + gk / cfg->group_size);
        } else if (cfg->scale_type != HC_SCALE_TENSOR) {
            sc = elem_value(s->dtype, cfg->scale_format, s->data, (e * N + n) * G0 + gi);
        }
        if (32 % b == 0 && (4 << b) <= k1 - k0) {
            group_by_table(row, b, is_float, lut, zero, sc, glob, k0, k1, kb, portable, out);
            continue;
        }
        for (int64_t k = k0; k < k1; k++) {
            uint32_t code = stream_bits(row, 1, k * b, b);
            double x = is_float ? lut[code] : (double)code - zero;
            out[k - kb] = (float)(x * sc * glob);
        }
    }
}

static void code_table(const hc_layer_config *cfg, int b, double *lut)
{
    const int is_float = hc_format_get(cfg->weight_format)->kind == HC_KIND_FLOAT;
    for (uint32_t c = 0; is_float && c < (1u << b); c++)
        lut[c] = hc_format_decode(cfg->weight_format, c);
}

void hc_dequant_pre_row(const hc_layer_config *cfg, const hc_layer_meta *m,
                        const hc_layer_tensors *pre, int64_t r, float *out)
{
    double lut[256];
    code_table(cfg, m->weight_bits, lut);
    dequant_row(cfg, m, pre, lut, r, 0, m->K, 0, out);
}

void hc_dequant_pre_row_part(const hc_layer_config *cfg, const hc_layer_meta *m,
                             const hc_layer_tensors *pre, int64_t r, int64_t k0, int64_t k1,
                             int portable, float *out)
{
    double lut[256];
    code_table(cfg, m->weight_bits, lut);
    dequant_row(cfg, m, pre, lut, r, k0, k1, portable, out);
}

void hc_dequant_pre_bias(const hc_layer_config *cfg, const hc_layer_meta *m,
                         const hc_layer_tensors *pre, float *bias)
{
    for (int64_t i = 0; pre->bias.data && i < m->E * m->N; i++)
        bias[i] = (float)elem_value(pre->bias.dtype, cfg->param_format, pre->bias.data, i);
}

hc_status hc_dequant_pre(const hc_layer_config *cfg, const hc_layer_meta *m,
                         const hc_layer_tensors *pre, float *W, float *bias, hc_error *err)
{
    HC_TRY(hc_dequant_pre_check(cfg, m, pre, err));
    double lut[256]; /* float codes decoded once, not per element */
    code_table(cfg, m->weight_bits, lut);
    const int64_t rows = m->E * m->N, K = m->K;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * K))
    for (int64_t r = 0; r < rows; r++) dequant_row(cfg, m, pre, lut, r, 0, K, 0, W + r * K);
    if (bias) hc_dequant_pre_bias(cfg, m, pre, bias);
    return HC_OK;
}

int hc_dequant_pre_lossless(const hc_layer_config *cfg, const hc_layer_meta *m,
                            const hc_layer_tensors *pre)
{
    if (m->use_int_weight_scale) return 0;
    if (!m->use_fused_e8m0) return 1;
    /* 0.1.19 fused e8m0: lossless iff no group needs shifting, i.e. the byte
     * range of each unit fits in Rmax (11 with fp8 activations, 3 with int8
     * ones). Units are rows when the second scale is per channel (always with
     * int8), else experts, whose padded rows add byte 127 (the K padding
     * repeats each row's largest byte: no new range). docs/layout.md, fused e8m0. */
    const int rmax = cfg->act_format == HC_FMT_INT8 ? 3 : 11;
    const int64_t total = (int64_t)pre->weight_scale.nbytes;
    const int64_t units = m->scale2_channel ? m->E * m->N : m->E, unit = total / units;
    const int padded = !m->scale2_channel && m->Np != m->N;
    const uint8_t *s = pre->weight_scale.data;
    for (int64_t u = 0; u < units; u++) {
        int hi = padded ? 127 : 0, lo = padded ? 127 : 255;
        for (int64_t i = 0; i < unit; i++) {
            const int v = s[u * unit + i];
            hi = v > hi ? v : hi;
            lo = v < lo ? v : lo;
        }
        if (hi - lo > rmax) return 0;
    }
    return 1;
}
