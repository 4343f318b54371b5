/* test_quant.c - the quantizer: worked examples of humming-kernels 0.1.19's
 * rules, packing, error bounds for every format x scale format x zero-point
 * mode x second scale, MX / NVFP4 / channel second-scale rules, adversarial
 * inputs, NaN/Inf rejection and MSE <= RTN. Bit-exactness against Humming
 * itself is tested by test_quant_golden0119 and tests/py/test_quant_oracle.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_quant.h"
#include "hc_quant_internal.h"

/* ---- helpers ------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

static float nrand(void) /* roughly normal: sum of 4 uniforms */
{
    return (float)((urand() + urand() + urand() + urand() - 2.0) * 1.7320508);
}

static hc_quant_desc mk(hc_format_id w, hc_format_id s, int gs, hc_zp_mode zp, int global)
{
    hc_quant_desc d = {.weight_format = w, .scale_format = s, .group_size = gs,
                       .zero_point = zp, .global_scale = global, .quantizer = HC_QUANTIZER_RTN};
    return d;
}

static float *quant_roundtrip(const hc_quant_desc *d, const float *w, int64_t e, int64_t n,
                              int64_t k, hc_quant_result *r)
{
    hc_error err = {0};
    hc_status st = hc_quantize(d, w, e, n, k, r, &err);
    if (st != HC_OK) print_error("quantize: %s\n", err.msg);
    assert_int_equal(st, HC_OK);
    float *out = malloc((size_t)(e * n * k) * sizeof *out);
    assert_non_null(out);
    assert_int_equal(hc_dequantize(r, out, &err), HC_OK);
    return out;
}

static uint32_t scale_bits(const hc_quant_result *r, int64_t idx)
{
    uint32_t v = 0;
    for (int b = r->scale_bytes - 1; b >= 0; b--) v = (v << 8) | r->scales[idx * r->scale_bytes + b];
    return v;
}

/* ---- worked examples and packing ------------------------------------------ */

static void test_worked_uint4(void **state)
{
    (void)state;
    float w[8] = {0.5f, -1.0f, 0.25f, 0.1f, 0, 0, 0, 0};
    hc_quant_desc d = mk(HC_FMT_UINT4, HC_FMT_F32, 4, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, 1, 8, &r);
    uint32_t word = r.codes[0];
    assert_int_equal(word & 0xFFFF, 12 | 0 << 4 | 10 << 8 | 9 << 12);
    float s;
    uint32_t sb = scale_bits(&r, 0);
    memcpy(&s, &sb, 4);
    /* max(amax / (D+1), amin / D) = max(1/8, 0.5/7); positive: the negative side dominates */
    assert_true(s == 0.125f);
    sb = scale_bits(&r, 1); /* all-zero group: the +-1e-30 floor, amin/D wins */
    memcpy(&s, &sb, 4);
    assert_true(s == (float)(1e-30f / 7.0));
    free(out);
    hc_quant_result_free(&r);
}

static void test_worked_fp4(void **state)
{
    (void)state;
    float w[8] = {6, -3, 0.26f, -0.1f, 0.75f, 0, 0, 0};
    hc_quant_desc d = mk(HC_FMT_F4E2M1, HC_FMT_F32, 8, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, 1, 8, &r);
    assert_int_equal(r.codes[0], 0x7u | 0xDu << 4 | 0x1u << 8 | 0x8u << 12 | 0x1u << 16);
    assert_int_equal(scale_bits(&r, 0), 0x3F800000u); /* scale exactly 1 */
    assert_true(signbit(out[3]) && out[3] == 0.0f);  /* -0.1 -> negative zero */
    free(out);
    hc_quant_result_free(&r);
}

/* MXFP4: the scale f32(amax / 6) rounded up to a power of two, codes from
 * the rounded scale with Humming's float rounding (ties toward zero). */
static void test_worked_mxfp4(void **state)
{
    (void)state;
    float w[64] = {5.0f, 1.2f, -2.5f};
    hc_quant_desc d = mk(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, 1, 64, &r);
    assert_int_equal(r.scales[0], 127); /* 5/6 -> 2^0 */
    assert_int_equal(r.codes[0] & 0xF, 0x6);        /* 5: tie of 4 and 6 -> 4 */
    assert_int_equal((r.codes[0] >> 4) & 0xF, 0x2); /* 1.2 -> 1 */
    assert_int_equal((r.codes[0] >> 8) & 0xF, 0xC); /* -2.5: tie of -2 and -3 -> -2 */
    assert_int_equal(r.scales[1], 25); /* all zero: 1e-30 / 6 -> 2^-102 */
    assert_int_equal(r.codes[4], 0);
    assert_true(out[0] == 4.0f && out[1] == 1.0f && out[2] == -2.0f && out[32] == 0.0f);
    free(out);
    hc_quant_result_free(&r);
}

static void test_pack_b3(void **state)
{
    (void)state;
    uint8_t c[32], back[32];
    uint32_t w[3];
    for (int i = 0; i < 32; i++) c[i] = (uint8_t)(i % 8);
    hc_pack_rows(c, 1, 32, 3, w);
    uint32_t w0 = 0;
    for (int i = 0; i < 10; i++) w0 |= (uint32_t)c[i] << (3 * i);
    w0 |= (uint32_t)(c[10] & 3) << 30;
    assert_int_equal(w[0], w0);
    assert_int_equal(w[1] & 0xF, (c[10] >> 2) | (c[11] << 1));
    hc_unpack_rows(w, 1, 32, 3, back);
    assert_memory_equal(c, back, 32);
}

/* ---- error bounds for every format x scale x zero point ------------------- */

typedef struct {
    const hc_quant_result *r;
    const hc_format_info *wf, *sf;
    int mx, tensor;
    double eps, subhalf; /* relative rounding and half the smallest step of the scale format */
    double pos[128];     /* positive grid of a float weight format */
    int npos;
} bound_ctx;

static void bound_init(bound_ctx *b, const hc_quant_result *r)
{
    memset(b, 0, sizeof *b);
    b->r = r;
    b->wf = hc_format_get(r->desc.weight_format);
    b->sf = hc_format_get(r->desc.scale_format);
    b->tensor = r->desc.group_size == HC_QUANT_GROUP_TENSOR;
    b->mx = !b->tensor && r->desc.scale_format == HC_FMT_F8E8M0;
    if (!b->tensor) {
        b->eps = ldexp(1.0, -(b->sf->man_bits + 1));
        b->subhalf = b->sf->min_subnormal / 2;
    }
    if (b->wf->kind == HC_KIND_FLOAT)
        for (uint32_t c = 0; c < (1u << (b->wf->bits - 1)); c++)
            b->pos[b->npos++] = hc_format_decode(r->desc.weight_format, c);
}

static double half_spacing(const bound_ctx *b, double y)
{
    if (b->wf->kind != HC_KIND_FLOAT) return 0.5;
    for (int i = 0; i + 1 < b->npos; i++)
        if (y <= b->pos[i + 1]) return (b->pos[i + 1] - b->pos[i]) / 2;
    return (b->pos[b->npos - 1] - b->pos[b->npos - 2]) / 2;
}

/* Amount by which y (in steps, zero point added) lies outside the code range. */
static double clip_excess(const bound_ctx *b, double y)
{
    const hc_quant_result *r = b->r;
    double lo, hi;
    if (b->wf->kind == HC_KIND_FLOAT) { lo = -b->wf->max_value; hi = b->wf->max_value; }
    else if (r->desc.zero_point == HC_ZP_NONE) { lo = -ldexp(1, r->bits - 1); hi = -lo - 1; }
    else { lo = 0; hi = ldexp(1, r->bits) - 1; }
    double h = b->wf->kind == HC_KIND_FLOAT ? 0.0 : 0.5; /* rounds back into range */
    return y > hi + h ? y - hi - h : (y < lo - h ? lo - h - y : 0.0);
}

static double zp_of(const hc_quant_result *r, int64_t e, int64_t row, int64_t g)
{
    int64_t gi = (e * r->group_rows + row) * r->groups + g;
    if (r->zero_points_f) {
        uint16_t h = r->zero_points_f[gi];
        return r->zp_float_format == HC_FMT_F16 ? hc_f16_to_f32(h) : hc_bf16_to_f32(h);
    }
    if (!r->zero_points) return 0.0;
    int64_t wpc = r->group_rows * r->bits / 32;
    uint64_t bit = (uint64_t)row * (uint64_t)r->bits;
    const uint32_t *col = r->zero_points + e * wpc * r->groups + g;
    uint64_t pair = col[(bit >> 5) * r->groups];
    if ((bit & 31) + (uint64_t)r->bits > 32) pair |= (uint64_t)col[((bit >> 5) + 1) * r->groups] << 32;
    return (double)((pair >> (bit & 31)) & ((1u << r->bits) - 1));
}

/* Second scale over element row `row` (a scale row) of expert e. */
static double second_of(const hc_quant_result *r, int64_t e, int64_t row)
{
    if (r->scale_2) return hc_quant_scale_value(r->desc.scale_2_format, r->scale_2[e * r->n + row]);
    return r->global_scale ? r->global_scale[e] : 1.0;
}

/* Bound of one element. Codes come from the float32 scale and dequantize
 * with the stored one: half a step plus the scale's storage rounding (and
 * the second scale's, and a float zero point's). e8m0 scales are the code
 * scale itself; there an integer code may clip by half a step (a
 * positive-dominant group whose scale lost its sign; a zero point at the top
 * of the range). */
static double elem_bound(const bound_ctx *b, double x, double sst, double gs, double z)
{
    const hc_quant_result *r = b->r;
    double D = b->wf->kind == HC_KIND_FLOAT ? b->wf->max_value : ldexp(1, r->bits);
    double val = sst * gs, y = val != 0 ? x / val : 0.0;
    double slop = r->zero_points_f ? fabs(z) * 0x1p-8 * fabs(val) : 0.0;
    if (r->scale_2) slop += D * 0x1p-8 * fabs(val);
    if (b->mx) {
        double ex = clip_excess(b, r->desc.zero_point ? y + z : y);
        assert_true(ex <= (b->wf->kind == HC_KIND_FLOAT ? 0.0 : 0.5));
        return (half_spacing(b, fmin(fabs(y), D)) + ex) * fabs(val) + slop;
    }
    slop += D * (b->eps * fabs(sst) + b->subhalf) * fabs(gs) * 1.01;
    return half_spacing(b, fmin(D, 1.2 * fabs(y) + 1e-300)) * fabs(val) * (1 + b->eps) + slop;
}

/* Worst ratio |deq - x| / bound over all elements (must be <= 1). */
static double check_bounds(const hc_quant_result *r, const float *w, const float *deq)
{
    bound_ctx b;
    bound_init(&b, r);
    double worst = 0.0;
    int64_t rows_per = r->n / r->group_rows;
    for (int64_t i = 0; i < r->experts * r->n * r->k; i++) {
        int64_t e = i / (r->n * r->k), row = i / r->k % r->n / rows_per, g = i % r->k / r->group_cols;
        double gs = second_of(r, e, row);
        double sst = b.tensor ? 1.0 : hc_quant_scale_value(r->desc.scale_format,
                     scale_bits(r, (e * r->group_rows + row) * r->groups + g));
        double x = w[i], z = zp_of(r, e, row, g);
        double bound = elem_bound(&b, x, sst, gs, z) + 1e-6 * fabs(x) + 1e-37;
        double ratio = fabs((double)deq[i] - x) / bound;
        if (!(ratio <= 1.0))
            print_error("elem %lld x=%g deq=%g val=%g z=%g bound=%g\n", (long long)i, x,
                        (double)deq[i], sst * gs, z, bound);
        assert_true(ratio <= 1.0);
        if (ratio > worst) worst = ratio;
    }
    return worst;
}

static void fill_random(float *w, int64_t n, int64_t k, int64_t e)
{
    for (int64_t row = 0; row < e * n; row++) {
        double mag = 0.5 + 20.0 * urand(), shift = urand() < 0.3 ? mag * 0.8 : 0.0;
        for (int64_t i = 0; i < k; i++) w[row * k + i] = (float)(nrand() * mag + shift);
    }
}

static const hc_format_id weight_fmts[] = {
    HC_FMT_UINT1, HC_FMT_UINT2, HC_FMT_UINT3, HC_FMT_UINT4, HC_FMT_UINT5, HC_FMT_UINT6,
    HC_FMT_UINT7, HC_FMT_UINT8, HC_FMT_INT2, HC_FMT_INT4, HC_FMT_INT8, HC_FMT_F3E1M1,
    HC_FMT_F4E2M1, HC_FMT_F4E1M2, HC_FMT_F5E2M2, HC_FMT_F6E2M3, HC_FMT_F6E3M2,
    HC_FMT_F7E3M3, HC_FMT_F8E4M3, HC_FMT_F8E5M2,
};
static const hc_format_id scale_fmts[] = {HC_FMT_F16, HC_FMT_BF16, HC_FMT_F8E4M3,
                                          HC_FMT_F8E5M2, HC_FMT_F8E8M0, HC_FMT_F32};

/* Quantizes and dequantizes; NULL when the configuration is unsupported or a
 * scale does not fit its fp8 format. */
static float *try_roundtrip(const hc_quant_desc *d, const float *w, int64_t e, int64_t n,
                            int64_t k, hc_quant_result *r)
{
    hc_error err = {0};
    if (hc_quant_check(d, e, n, k, &err) != HC_OK) return NULL;
    hc_status st = hc_quantize(d, w, e, n, k, r, &err);
    if (st == HC_ERR_UNSUPPORTED && strstr(err.msg, "does not fit")) return NULL;
    if (st != HC_OK) print_error("%s: %s\n", hc_format_get(d->weight_format)->name, err.msg);
    assert_int_equal(st, HC_OK);
    float *deq = malloc((size_t)(e * n * k) * sizeof *deq);
    assert_non_null(deq);
    assert_int_equal(hc_dequantize(r, deq, &err), HC_OK);
    return deq;
}

/* Squared error of every (row, K-group) of a dequantized tensor. */
static void group_sqerr(const float *w, const float *deq, int64_t rows, int64_t k, int64_t gk,
                        double *out)
{
    for (int64_t i = 0; i < rows * (k / gk); i++) out[i] = 0.0;
    for (int64_t i = 0; i < rows * k; i++) {
        double d = (double)deq[i] - w[i];
        out[i / gk] += d * d;
    }
}

/* RTN within the element bounds; MSE (which clips on purpose) never worse
 * than RTN on any group. Returns 1 if the configuration ran. */
static int run_config(const hc_quant_desc *d, const float *w, int64_t e, int64_t n, int64_t k)
{
    hc_quant_result r, m;
    hc_quant_desc dm = *d;
    dm.quantizer = HC_QUANTIZER_MSE;
    float *deq = try_roundtrip(d, w, e, n, k, &r);
    if (!deq) return 0;
    check_bounds(&r, w, deq);
    float *dmse = try_roundtrip(&dm, w, e, n, k, &m);
    assert_non_null(dmse);
    int64_t gk = d->group_size > 0 ? d->group_size : k, ng = e * n * (k / gk);
    if (d->group_size_n > 0 || d->group_size == HC_QUANT_GROUP_TENSOR) gk = k, ng = e * n;
    double *er = malloc((size_t)ng * sizeof *er), *em = malloc((size_t)ng * sizeof *em);
    assert_true(er && em);
    group_sqerr(w, deq, e * n, k, gk, er);
    group_sqerr(w, dmse, e * n, k, gk, em);
    double sr = 0, sm = 0;
    for (int64_t i = 0; i < ng; i++) {
        sr += er[i];
        sm += em[i];
        if (d->group_size_n == 0 && d->group_size != HC_QUANT_GROUP_TENSOR)
            assert_true(em[i] <= er[i] * (1 + 1e-6) + 1e-30);
    }
    assert_true(sm <= sr * (1 + 1e-6) + 1e-30);
    free(er); free(em); free(deq); free(dmse);
    hc_quant_result_free(&r);
    hc_quant_result_free(&m);
    return 1;
}

static void test_bounds_all_formats(void **state)
{
    (void)state;
    enum { E = 2, N = 32, K = 128 };
    float *w = malloc(E * N * K * sizeof *w);
    assert_non_null(w);
    fill_random(w, N, K, E);
    int ran = 0, total = 0;
    for (size_t fi = 0; fi < sizeof weight_fmts / sizeof *weight_fmts; fi++)
        for (size_t si = 0; si < sizeof scale_fmts / sizeof *scale_fmts; si++)
            for (int zp = HC_ZP_NONE; zp <= HC_ZP_FLOAT; zp++)
                for (int cfg = 0; cfg < 6; cfg++) { /* 4, 5: channel second scale */
                    int gsz = cfg & 1 || cfg >= 4 ? 32 : 0, global = cfg == 2 || cfg == 3;
                    hc_quant_desc d = mk(weight_fmts[fi], scale_fmts[si], gsz, (hc_zp_mode)zp, global);
                    d.scale_2_channel = cfg >= 4;
                    d.scale_2_format = cfg == 4 ? HC_FMT_BF16 : HC_FMT_F16;
                    total++;
                    ran += run_config(&d, w, E, N, K);
                }
    hc_quant_desc blk = mk(HC_FMT_UINT4, HC_FMT_F32, 32, HC_ZP_FLOAT, 0);
    blk.group_size_n = 16;
    assert_true(run_config(&blk, w, E, N, K));
    hc_quant_desc ten = mk(HC_FMT_UINT4, HC_FMT_F16, HC_QUANT_GROUP_TENSOR, HC_ZP_NONE, 0);
    assert_true(run_config(&ten, w, E, N, K));
    ten.weight_format = HC_FMT_F4E2M1;
    assert_true(run_config(&ten, w, E, N, K));
    printf("  bounds: %d of %d configurations supported: rtn within bounds, mse <= rtn\n", ran, total);
    assert_true(ran > 400);
    free(w);
}

/* ---- MX, NVFP4 and channel second-scale rules ------------------------------- */

static uint8_t mx_byte_of(float amax)
{
    float w[32] = {0};
    w[5] = -amax;
    hc_quant_desc d = mk(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, 1, 32, &r);
    uint8_t b = r.scales[0];
    assert_true(fabsf(out[5] + amax) <= 1.0f * (float)ldexp(1.0, b - 127)); /* half step of 2 */
    free(out);
    hc_quant_result_free(&r);
    return b;
}

/* e8m0: f32(amax / D) rounded up to a power of two, sign dropped. */
static void test_mx_scale_rule(void **state)
{
    (void)state;
    assert_int_equal(mx_byte_of(5.0f), 127);      /* 5/6 -> 2^0 */
    assert_int_equal(mx_byte_of(6.0f), 127);      /* exactly 1 */
    assert_int_equal(mx_byte_of(7.0f), 128);      /* 7/6 -> 2 */
    assert_int_equal(mx_byte_of(0.75f), 124);     /* 0.125 exactly */
    assert_int_equal(mx_byte_of(0.0f), 25);       /* the 1e-30 floor: 1e-30/6 -> 2^-102 */
    assert_int_equal(mx_byte_of(1e-40f), 25);
    assert_int_equal(mx_byte_of(3e38f), 253);     /* 5e37 -> 2^126 */
    assert_int_equal(mx_byte_of(FLT_MAX), 253);
    /* int4: s = max(8/8, 7.5/7) = 1.07 -> 2; 7.5/2 = 3.75 -> 4 */
    float w[32] = {7.5f, -8.0f};
    hc_quant_desc d = mk(HC_FMT_INT4, HC_FMT_F8E8M0, 32, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, 1, 32, &r);
    assert_int_equal(r.scales[0], 128);
    assert_true(out[0] == 8.0f && out[1] == -8.0f);
    free(out);
    hc_quant_result_free(&r);
    /* positive-dominant int4: s = -max(8/8, 1/7) = -1, stored as 2^0 without
     * its sign, so 8 (code +8) clips to +7 as in Humming */
    w[0] = 8.0f;
    w[1] = -1.0f;
    out = quant_roundtrip(&d, w, 1, 1, 32, &r);
    assert_int_equal(r.scales[0], 127);
    assert_true(out[0] == 7.0f && out[1] == -1.0f);
    free(out);
    hc_quant_result_free(&r);
}

/* torch's mean of |v|: f32(sum) * f32(1/n), the sum correctly rounded. */
static float ref_mean_abs(const float *v, int64_t n)
{
    long double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += fabsl((long double)v[i]);
    return (float)sum * (1.0f / (float)n);
}

/* NVFP4 of 2 experts; expert 0 has an outlier of size big. Checks the
 * global-scale rule, scales e4m3(s / ts) and codes from the raw scale s. */
static void nvfp4_case(float big, int want_max)
{
    enum { E = 2, N = 32, K = 256, NG = N * K / 16 }; /* ts1 > ts2 needs > 448 groups */
    float *w = malloc(E * N * K * sizeof *w), *s = malloc(E * NG * sizeof *s), ts[E];
    assert_true(w && s);
    fill_random(w, N, K, E);
    w[3 * K + 7] = big;
    hc_quant_desc d = mk(HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, HC_ZP_NONE, 1);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, E, N, K, &r);
    int any_max = 0;
    for (int e = 0; e < E; e++) {
        float smax = 0;
        for (int g = 0; g < NG; g++) {
            float bmax = 1e-30f;
            for (int i = 0; i < 16; i++) bmax = fmaxf(bmax, fabsf(w[(e * NG + g) * 16 + i]));
            s[e * NG + g] = bmax / 6.0f;
            smax = fmaxf(smax, s[e * NG + g]);
        }
        ts[e] = ref_mean_abs(s + e * NG, NG);
        any_max |= smax * (1.0f / 448.0f) > ts[e];
    }
    assert_int_equal(any_max, want_max);
    const hc_format_info *f = hc_format_get(HC_FMT_F4E2M1);
    for (int e = 0; e < E; e++) {
        float smax = 0;
        for (int g = 0; g < NG; g++) smax = fmaxf(smax, s[e * NG + g]);
        if (any_max) ts[e] = smax * (1.0f / 448.0f);
        assert_true(r.global_scale[e] == ts[e]);
        for (int g = 0; g < NG; g++) {
            assert_int_equal(r.scales[e * NG + g], hc_format_encode(HC_FMT_F8E4M3, s[e * NG + g] / ts[e]));
            float inv = 1.0f / s[e * NG + g];
            for (int i = 0; i < 16; i++) {
                int64_t k = (e * NG + g) * 16 + i;
                uint32_t code = (r.codes[k / 8] >> (4 * (k % 8))) & 0xF;
                assert_int_equal(code, hc_quant_float_code_humming(f, w[k] * inv));
            }
        }
    }
    free(out);
    free(w);
    free(s);
    hc_quant_result_free(&r);
}

/* ts1 = max(s) / 448 when some expert's exceeds its ts2 = mean|s|, else ts2. */
static void test_nvfp4_rule(void **state)
{
    (void)state;
    nvfp4_case(90.0f, 0);
    nvfp4_case(1e7f, 1);
}

/* sum |v| as an integer count of units 2^-unit (every value a multiple of
 * it, the sum below 2^127), rounded to double by the compiler's __int128
 * conversion, then to float32 (each to nearest even): the oracle of
 * hq_abs_sum_exact, as tests/py/test_quant_oracle.py's math.fsum. */
static float int_abs_sum(const float *v, int64_t n, int unit)
{
    unsigned __int128 t = 0;
    for (int64_t i = 0; i < n; i++) t += (unsigned __int128)ldexpl(fabsl((long double)v[i]), unit);
    return (float)ldexp((double)t, -unit);
}

/* hq_abs_sum_exact (NVFP4's second scale) is the sum rounded to double, then
 * to float: 1 + 2^-24 + 2^-60 is 1 (the double holds 1 + 2^-24, a tie that
 * goes to 1; a single rounding would give 1 + 2^-23), 1 + 2^-24 + 2^-40 is
 * 1 + 2^-23 (exact in double), as is 1 + 2^-24 + 2^-53 + 2^-80; random values over 40 binades and over the
 * subnormals against an integer oracle, any thread count; Inf past float32
 * max; NaN / Inf and a zero maximum declined. */
static void test_abs_sum_exact(void **state)
{
    (void)state;
    float sum, mx;
    const float tie[3] = {1.0f, 0x1p-24f, -0x1p-60f}, up[3] = {1.0f, 0x1p-24f, 0x1p-40f};
    assert_int_equal(hq_abs_sum_exact(tie, 3, &sum, &mx), 0);
    assert_true(sum == 1.0f && mx == 1.0f);
    assert_int_equal(hq_abs_sum_exact(up, 3, &sum, &mx), 0);
    assert_true(sum == 1.0f + 0x1p-23f);
    /* the double's rounding sees the 2^-80 past its half (1 + 2^-24 + 2^-52) */
    const float sticky[4] = {1.0f, 0x1p-24f, 0x1p-53f, 0x1p-80f};
    assert_int_equal(hq_abs_sum_exact(sticky, 4, &sum, &mx), 0);
    assert_true(sum == 1.0f + 0x1p-23f);
    enum { n = 200000 };
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    uint32_t x = 12345;
    for (int kind = 0; kind < 2; kind++) {
        float want_mx = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            x = x * 1664525u + 1013904223u;
            const float m = (float)(x >> 8) * 0x1p-24f; /* [0, 1) */
            x = x * 1664525u + 1013904223u;
            v[i] = kind == 0 ? ldexpf(1.0f + m, (int)(x >> 27) % 40 - 20) : ldexpf(m, -126);
            if (x & 1u) v[i] = -v[i];
            want_mx = v[i] > want_mx ? v[i] : want_mx;
        }
        assert_int_equal(hq_abs_sum_exact(v, n, &sum, &mx), 0);
        assert_true(sum == int_abs_sum(v, n, kind == 0 ? 43 : 149));
        assert_true(mx == want_mx);
    }
    const float big[3] = {FLT_MAX, FLT_MAX, 1.0f};
    assert_int_equal(hq_abs_sum_exact(big, 3, &sum, &mx), 0);
    assert_true(isinf(sum) && mx == FLT_MAX);
    const float nan[2] = {1.0f, NAN}, zero[2] = {-0.0f, -1.0f};
    assert_int_equal(hq_abs_sum_exact(nan, 2, &sum, &mx), 1);
    assert_int_equal(hq_abs_sum_exact(zero, 2, &sum, &mx), 1);
    free(v);
}

/* Channel second scale: ws2 = mean|s| per row (fp16/bf16 scales), or
 * max(max|s| / 448, mean|s|) (e4m3 scales); stored in the model dtype; the
 * group scales are cast(s / ws2) with ws2 in float32. */
static void test_channel_scale_2(void **state)
{
    (void)state;
    enum { N = 8, K = 128, G = K / 32 };
    float w[N * K];
    fill_random(w, N, K, 1);
    const hc_format_id sfs[] = {HC_FMT_BF16, HC_FMT_F8E4M3};
    for (int si = 0; si < 2; si++) {
        hc_quant_desc d = mk(HC_FMT_UINT4, sfs[si], 32, HC_ZP_NONE, 0);
        d.scale_2_channel = 1;
        d.scale_2_format = HC_FMT_F16;
        hc_quant_result r;
        float *out = quant_roundtrip(&d, w, 1, N, K, &r);
        for (int row = 0; row < N; row++) {
            float s[G], smax = 0;
            for (int g = 0; g < G; g++) {
                float mx = 1e-30f, mn = -1e-30f;
                for (int i = 0; i < 32; i++) {
                    mx = fmaxf(mx, w[row * K + g * 32 + i]);
                    mn = fminf(mn, w[row * K + g * 32 + i]);
                }
                float amax = fmaxf(mx, -mn), amin = fminf(mx, -mn);
                s[g] = fmaxf((float)((double)amax / 8.0), (float)((double)amin / 7.0));
                s[g] = mx > -mn ? -s[g] : s[g];
                smax = fmaxf(smax, fabsf(s[g]));
            }
            float ws2 = ref_mean_abs(s, G);
            if (sfs[si] == HC_FMT_F8E4M3) ws2 = fmaxf(smax * (1.0f / 448.0f), ws2);
            assert_int_equal(r.scale_2[row], hc_f32_to_f16(ws2));
            for (int g = 0; g < G; g++)
                assert_int_equal(scale_bits(&r, row * G + g), sfs[si] == HC_FMT_BF16
                                 ? hc_f32_to_bf16(s[g] / ws2) : hc_format_encode(sfs[si], s[g] / ws2));
        }
        free(out);
        hc_quant_result_free(&r);
    }
}

/* Block scales: codes come back in natural (n, k) order (not Humming's
 * block-flattened order); each block's float32 scale is Humming's. */
static void test_block_natural_order(void **state)
{
    (void)state;
    enum { N = 4, K = 32 };
    float w[N * K];
    for (int i = 0; i < N * K; i++) w[i] = (float)(i % 13) - 6.0f + (float)(i / K);
    hc_quant_desc d = mk(HC_FMT_UINT8, HC_FMT_F32, 16, HC_ZP_NONE, 0);
    d.group_size_n = 2;
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, N, K, &r);
    assert_int_equal(r.group_rows, 2);
    assert_int_equal(r.groups, 2);
    for (int i = 0; i < N * K; i++) assert_true(fabsf(out[i] - w[i]) < 0.05f);
    free(out);
    hc_quant_result_free(&r);
}

static void test_tensor_granularity(void **state)
{
    (void)state;
    enum { E = 2, N = 8, K = 64 };
    float w[E * N * K];
    fill_random(w, N, K, E);
    hc_quant_desc d = mk(HC_FMT_UINT4, HC_FMT_F16, HC_QUANT_GROUP_TENSOR, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, E, N, K, &r);
    assert_null(r.scales);
    assert_non_null(r.global_scale);
    for (int e = 0; e < E; e++) {
        float mx = 1e-30f, mn = -1e-30f;
        for (int i = 0; i < N * K; i++) { mx = fmaxf(mx, w[e * N * K + i]); mn = fminf(mn, w[e * N * K + i]); }
        float amax = fmaxf(mx, -mn), amin = fminf(mx, -mn);
        float s = fmaxf((float)((double)amax / 8.0), (float)((double)amin / 7.0));
        assert_true(r.global_scale[e] == (mx > -mn ? -s : s));
    }
    free(out);
    hc_quant_result_free(&r);
}

/* ---- adversarial inputs ---------------------------------------------------- */

static void adversarial_fill(int kind, float *w, int n)
{
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: w[i] = 0.0f; break;
        case 1: w[i] = (float)((i & 1 ? -1e38 : 1e38) * (i % 7) / 6.0); break;
        case 2: w[i] = (i & 1 ? -1e-40f : 1e-40f) * (float)(i % 5); break;
        case 3: w[i] = i % 3 == 0 ? FLT_MAX : -FLT_MAX; break;
        case 4: w[i] = i == 17 ? 1e30f : nrand() * 1e-3f; break; /* one outlier */
        default: w[i] = (i % 4 == 0 ? -1.0f : 1.0f) * (float)ldexp(1.0, i % 60 - 30); break;
        }
    }
}

static void test_adversarial(void **state)
{
    (void)state;
    enum { N = 32, K = 64 };
    float w[N * K], out[N * K];
    int ran = 0, refused = 0;
    for (int kind = 0; kind < 6; kind++) {
        adversarial_fill(kind, w, N * K);
        for (size_t fi = 0; fi < sizeof weight_fmts / sizeof *weight_fmts; fi++)
            for (size_t si = 0; si < sizeof scale_fmts / sizeof *scale_fmts; si++)
                for (int zp = 0; zp < 3; zp++)
                    for (int cfg = 0; cfg < 8; cfg++) {
                        hc_quant_desc d = mk(weight_fmts[fi], scale_fmts[si], cfg & 1 ? 32 : 0,
                                             (hc_zp_mode)zp, (cfg >> 1) & 1);
                        d.quantizer = cfg & 4 ? HC_QUANTIZER_MSE : HC_QUANTIZER_RTN;
                        hc_quant_result r;
                        hc_error err = {0};
                        if (hc_quant_check(&d, 1, N, K, &err) != HC_OK) continue;
                        hc_status st = hc_quantize(&d, w, 1, N, K, &r, &err);
                        if (st != HC_OK) {
                            if (st != HC_ERR_UNSUPPORTED) print_error("kind %d: %s\n", kind, err.msg);
                            assert_int_equal(st, HC_ERR_UNSUPPORTED);
                            assert_non_null(strstr(err.msg, "does not fit"));
                            refused++;
                            continue;
                        }
                        assert_int_equal(hc_dequantize(&r, out, &err), HC_OK);
                        for (int i = 0; i < N * K; i++) {
                            assert_true(isfinite(out[i]));
                            if (w[i] == 0.0f && d.zero_point == HC_ZP_NONE) assert_true(out[i] == 0.0f);
                        }
                        hc_quant_result_free(&r);
                        ran++;
                    }
    }
    printf("  adversarial: %d runs finite, %d refused with a scale-range error\n", ran, refused);
}

static void test_nonfinite_rejected(void **state)
{
    (void)state;
    enum { E = 2, N = 4, K = 32 };
    float w[E * N * K];
    float bad[3] = {NAN, INFINITY, -INFINITY};
    for (int b = 0; b < 3; b++) {
        for (int i = 0; i < E * N * K; i++) w[i] = 0.5f;
        w[(1 * N + 2) * K + 5] = bad[b];
        w[(1 * N + 3) * K + 1] = bad[b]; /* a later one: the first is named */
        hc_quant_desc d = mk(HC_FMT_UINT4, HC_FMT_F16, 32, HC_ZP_NONE, 0);
        hc_quant_result r;
        hc_error err = {0};
        assert_int_equal(hc_quantize(&d, w, E, N, K, &r, &err), HC_ERR_FORMAT);
        assert_non_null(strstr(err.msg, "expert 1, row 2, column 5"));
        assert_null(r.codes);
    }
}

static void test_fp16_scale_overflow_is_an_error(void **state)
{
    (void)state;
    float w[32];
    for (int i = 0; i < 32; i++) w[i] = i == 3 ? 3e38f : 1.0f;
    hc_quant_desc d = mk(HC_FMT_UINT4, HC_FMT_F16, 32, HC_ZP_NONE, 0);
    hc_quant_result r;
    hc_error err = {0};
    assert_int_equal(hc_quantize(&d, w, 1, 1, 32, &r, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "float16"));
    d.scale_format = HC_FMT_BF16; /* fits bf16 */
    float out[32];
    assert_int_equal(hc_quantize(&d, w, 1, 1, 32, &r, &err), HC_OK);
    assert_int_equal(hc_dequantize(&r, out, &err), HC_OK);
    assert_true(fabsf(out[3] - 3e38f) < 3e38f * 0.1f);
    hc_quant_result_free(&r);
}

/* ---- MSE vs RTN on data with outliers --------------------------------------- */

static double total_sqerr(const hc_quant_desc *d, const float *w, int64_t e, int64_t n, int64_t k)
{
    hc_quant_result r;
    float *out = quant_roundtrip(d, w, e, n, k, &r);
    double s = 0;
    for (int64_t i = 0; i < e * n * k; i++) s += ((double)out[i] - w[i]) * ((double)out[i] - w[i]);
    free(out);
    hc_quant_result_free(&r);
    return s;
}

static void test_mse_improvement(void **state)
{
    (void)state;
    enum { E = 1, N = 128, K = 1024 };
    float *w = malloc(E * N * K * sizeof *w);
    assert_non_null(w);
    for (int i = 0; i < E * N * K; i++) w[i] = nrand() * 0.02f * (urand() < 0.003 ? 8.0f : 1.0f);
    struct { const char *name; hc_quant_desc d; } cases[] = {
        {"uint4 g128 fp16", mk(HC_FMT_UINT4, HC_FMT_F16, 128, HC_ZP_NONE, 0)},
        {"uint4 g128 fp16 int zp", mk(HC_FMT_UINT4, HC_FMT_F16, 128, HC_ZP_INT, 0)},
        {"uint3 g128 fp16", mk(HC_FMT_UINT3, HC_FMT_F16, 128, HC_ZP_NONE, 0)},
        {"float4e2m1 mx (e8m0 g32)", mk(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, HC_ZP_NONE, 0)},
        {"nvfp4 (e4m3 g16 + global)", mk(HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, HC_ZP_NONE, 1)},
        {"int8 channel bf16", mk(HC_FMT_INT8, HC_FMT_BF16, 0, HC_ZP_NONE, 0)},
        {"float8e4m3 channel bf16", mk(HC_FMT_F8E4M3, HC_FMT_BF16, 0, HC_ZP_NONE, 0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double rtn = total_sqerr(&cases[i].d, w, E, N, K);
        cases[i].d.quantizer = HC_QUANTIZER_MSE;
        double mse = total_sqerr(&cases[i].d, w, E, N, K);
        printf("  mse vs rtn: %-28s sq err %.4e -> %.4e (%.1f%% lower)\n", cases[i].name, rtn,
               mse, 100.0 * (1.0 - mse / rtn));
        assert_true(mse <= rtn * (1 + 1e-9));
    }
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worked_uint4),
        cmocka_unit_test(test_worked_fp4),
        cmocka_unit_test(test_worked_mxfp4),
        cmocka_unit_test(test_pack_b3),
        cmocka_unit_test(test_bounds_all_formats),
        cmocka_unit_test(test_mx_scale_rule),
        cmocka_unit_test(test_nvfp4_rule),
        cmocka_unit_test(test_abs_sum_exact),
        cmocka_unit_test(test_channel_scale_2),
        cmocka_unit_test(test_block_natural_order),
        cmocka_unit_test(test_tensor_granularity),
        cmocka_unit_test(test_adversarial),
        cmocka_unit_test(test_nonfinite_rejected),
        cmocka_unit_test(test_fp16_scale_overflow_is_an_error),
        cmocka_unit_test(test_mse_improvement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
