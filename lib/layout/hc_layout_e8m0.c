/* hc_layout_e8m0.c - humming-kernels 0.1.19's fused-e8m0 path (MXFP4 weights
 * with fp8 e4m3 or int8 activations): the scale padding of
 * check_and_pad_tensors, process_fused_e8m0_scale (humming/transform.py) with
 * its weight kernel process_mxfp4_w4a8 (include/humming/kernel/
 * process_mxfp4.cuh), and the interleave mode 2 of humming_pack_weight
 * (process.cuh) for fp8 activations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hc_layout_ops.h"
#include "hc_parallel.h"

/* check_and_pad_tensors on fused-e8m0 scales (E, Np, G) padded from (E, N,
 * G_real) with 127: the K padding of the real rows repeats their largest
 * exponent (the padded rows stay 127). */
static void pad_k_with_max(uint8_t *s, int64_t E, int64_t Np, int64_t N, int64_t G_real, int64_t G)
{
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++) {
            uint8_t *row = s + (e * Np + n) * G, hi = 0;
            for (int64_t g = 0; g < G_real; g++) hi = row[g] > hi ? row[g] : hi;
            for (int64_t g = G_real; g < G; g++) row[g] = hi;
        }
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t u32_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* process_mxfp4_w4a8 on one fp4 code: the code as a float whose bits sit at
 * 22..24 (the fp4 grid times 2^-126), times 2^-d, rounded back to that grid
 * with ties away from zero. The float arithmetic is exact here (products of a
 * power of two and a 2-bit significand, subnormals kept), so plain C floats
 * give the kernel's bits. d <= 127 (wider shifts overflow the kernel's scale
 * factor; hc_fused_e8m0_step refuses them). */
uint32_t hc_fp4_fold(uint32_t code, int d)
{
    code &= 15u;
    if (code == 8u) code = 0u; /* negative zero becomes +0 first */
    if (d == 0) return code;
    float v = f32_of(((code & 8u) << 28) | ((code & 7u) << 22));
    v *= f32_of(0x3F800000u - ((uint32_t)d << 23));
    const uint32_t u = u32_of(v), mask = 0x81C00000u;
    const float rz = f32_of(u & mask), ru = f32_of((u + 0x00200000u) & mask);
    const uint32_t p = fabsf(v - rz) >= fabsf(v - ru) ? u32_of(ru) : u32_of(rz);
    return ((p & 0x80000000u) >> 28) | ((p & 0x01C00000u) >> 22);
}

/* One 32-code group (4 words) folded by d. */
static void fold_group(uint32_t *w, int d)
{
    for (int i = 0; i < 4; i++) {
        uint32_t out = 0;
        for (int t = 0; t < 8; t++) out |= hc_fp4_fold(w[i] >> (4 * t), d) << (4 * t);
        w[i] = out;
    }
}

/* max and min of n bytes */
static void byte_range(const uint8_t *s, int64_t n, int *hi, int *lo)
{
    *hi = 0, *lo = 255;
    for (int64_t i = 0; i < n; i++) {
        *hi = s[i] > *hi ? s[i] : *hi;
        *lo = s[i] < *lo ? s[i] : *lo;
    }
}

/* The largest code shift the folding of (E, N, G) scales needs, exponent
 * ranges taken over `unit` bytes and capped at max_range. */
static int max_shift(const uint8_t *s, int64_t count, int64_t unit, int max_range)
{
    int worst = 0;
    for (int64_t i = 0; i < count; i += unit) {
        int hi, lo;
        byte_range(s + i, unit, &hi, &lo);
        const int range = hi - lo < max_range ? hi - lo : max_range;
        worst = hi - range - lo > worst ? hi - range - lo : worst;
    }
    return worst;
}

/* process_fused_e8m0_scale on padded fp4 words (E, N, G*4) and scale bytes
 * (E, N, G), group size 32, in place, over `units` equal spans (experts, or
 * rows when the second scale is per channel); factor[u] = 2^(base - 127) / 2
 * of each span. */
static void fold(uint32_t *w, uint8_t *s, int64_t E, int64_t N, int64_t G, int64_t units,
                 int int8_act, float *factor)
{
    const int64_t unit = E * N * G / units;
    const int max_range = int8_act ? 3 : 11;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(E * N * G * 32))
    for (int64_t u = 0; u < units; u++) {
        uint8_t *su = s + u * unit;
        uint32_t *wu = w + u * unit * 4;
        int hi, lo;
        byte_range(su, unit, &hi, &lo);
        const int base = hi - (hi - lo < max_range ? hi - lo : max_range);
        for (int64_t i = 0; i < unit; i++) {
            const int x = su[i], xm = x > base ? x : base;
            fold_group(wu + 4 * i, xm - x);
            su[i] = (uint8_t)(xm - base + (int8_act ? 0 : 1));
        }
        /* 2 ** (base - 127) / 2 in float32: 2^-127 is subnormal, 2^128 inf */
        factor[u] = ldexpf(1.0f, base - 127) * 0.5f;
    }
}

void hc_split_sign_words(uint32_t *w, int64_t count)
{
    /* with 4-bit codes and 8-bit activations slot s of a word holds code
     * (s % 2) * 4 + s / 2 (interleave mode 3); mode 2 keeps that sign but
     * takes the magnitude of code s, which sits at slot (s % 4) * 2 + s / 4 */
#pragma omp parallel for schedule(static) if (HC_PARALLEL(count))
    for (int64_t i = 0; i < count; i++) {
        uint32_t out = w[i] & 0x88888888u;
        for (int sl = 0; sl < 8; sl++)
            out |= ((w[i] >> (4 * ((sl % 4) * 2 + sl / 4))) & 7u) << (4 * sl);
        w[i] = out;
    }
}

/* The second scale of a fused layer times its factors: per tensor, (E?)
 * float32 = input (or 1) x factor into gs_out; per channel, the padded
 * (E, 1, Np) working copy in the layer dtype (allocated as check_and_pad_tensors
 * does when absent: 1, and 0 on padded rows) scaled in place, rounded to the
 * layer dtype. */
static hc_status second_scale(const hc_layer_config *cfg, const hc_layer_meta *m,
                              const hc_tensor *gs_in, const float *factor, hc_tensor *s2,
                              hc_tensor *gs_out, hc_error *err)
{
    if (!m->scale2_channel) {
        int64_t n = m->is_moe ? m->E : 1;
        HC_TRY(hc_tensor_alloc(gs_out, HC_DT_F32, 1, &n, err));
        float *g = gs_out->data;
        const float *in = gs_in->data;
        for (int64_t e = 0; e < n; e++) g[e] = (in ? in[e] : 1.0f) * factor[e];
        return HC_OK;
    }
    const int bf16 = cfg->param_format == HC_FMT_BF16;
    const uint16_t one = bf16 ? hc_f32_to_bf16(1.0f) : hc_f32_to_f16(1.0f);
    if (s2->data == NULL) {
        int64_t shape[3] = {m->E, 1, m->Np};
        HC_TRY(hc_tensor_alloc(s2, hc_dtype_of_format(cfg->param_format), 3, shape, err));
        uint16_t *h = s2->data;
        for (int64_t e = 0; e < m->E; e++)
            for (int64_t n = 0; n < m->N; n++) h[e * m->Np + n] = one;
    }
    uint16_t *h = s2->data;
    for (int64_t i = 0; i < m->E * m->Np; i++) {
        const float v = (bf16 ? hc_bf16_to_f32(h[i]) : hc_f16_to_f32(h[i])) * factor[i];
        h[i] = bf16 ? hc_f32_to_bf16(v) : hc_f32_to_f16(v);
    }
    return HC_OK;
}

hc_status hc_fused_e8m0_step(const hc_layer_config *cfg, const hc_layer_meta *m,
                             const hc_tensor *gs_in, uint32_t *w, uint8_t *s, hc_tensor *s2,
                             hc_tensor *gs_out, hc_error *err)
{
    const int int8_act = cfg->act_format == HC_FMT_INT8;
    pad_k_with_max(s, m->E, m->Np, m->N, m->K / m->group_size, m->G);
    /* exponent ranges per row when the second scale is per channel
     * (weight_scale_2_type "channel": always with int8 activations) */
    const int64_t units = m->scale2_channel ? m->E * m->Np : m->E;
    const int shift = max_shift(s, m->E * m->Np * m->G, m->E * m->Np * m->G / units,
                                int8_act ? 3 : 11);
    if (shift > 127)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "weight_scale: e8m0 exponents %d apart: humming-kernels "
                "0.1.19's fused-e8m0 preprocessing (process_mxfp4_w4a8) overflows beyond 127",
                shift);
    float *factor = malloc((size_t)units * sizeof *factor);
    HC_CHECK_ALLOC(err, factor, "fused-e8m0 scale factors");
    fold(w, s, m->E, m->Np, m->G, units, int8_act, factor);
    hc_status st = second_scale(cfg, m, gs_in, factor, s2, gs_out, err);
    free(factor);
    return st;
}
