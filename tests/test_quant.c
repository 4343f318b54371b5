/* test_quant.c - the quantizer: spec worked examples, packing, error bounds
 * for every format x scale format x zero-point mode, MX / NVFP4 scale rules,
 * adversarial inputs, NaN/Inf rejection and MSE <= RTN. */
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
    hc_quant_desc d = {w, s, gs, 0, zp, global, HC_QUANTIZER_RTN};
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

/* ---- spec 2.9 worked examples and packing --------------------------------- */

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
    assert_true(s == (float)(1.0 / 8.499)); /* positive: the negative side dominates */
    assert_true(fabsf(s - 0.1176609f) < 1e-7f);
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

/* MXFP4 amax 5: Humming stores byte 126 and code 0x7 (dequantizes to 3.0);
 * the OCP rule stores 2^0 (byte 127) and 5 rounds to even 4 (code 0x6). */
static void test_worked_mxfp4(void **state)
{
    (void)state;
    const hc_format_info *f = hc_format_get(HC_FMT_F4E2M1);
    assert_int_equal(hc_quant_float_code_humming(f, 5.0f * 1.2f), 0x7);
    assert_int_equal(hc_e8m0_encode_trunc(5.0f / 6.0f), 126);
    float w[32] = {5.0f};
    hc_quant_desc d = mk(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, HC_ZP_NONE, 0);
    hc_quant_result r;
    float *out = quant_roundtrip(&d, w, 1, 1, 32, &r);
    assert_int_equal(r.scales[0], 127);
    assert_int_equal(r.codes[0] & 0xF, 0x6);
    assert_true(out[0] == 4.0f);
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
    int mx, eff, humming, tensor;
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
    b->eff = !b->tensor && r->desc.global_scale &&
             (r->desc.scale_format == HC_FMT_F8E4M3 || r->desc.scale_format == HC_FMT_F8E5M2);
    b->humming = !b->mx && !b->eff;
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

/* Worst ratio |deq - x| / bound over all elements (must be <= 1). */
static double check_bounds(const hc_quant_result *r, const float *w, const float *deq)
{
    bound_ctx b;
    bound_init(&b, r);
    double worst = 0.0, D = b.wf->kind == HC_KIND_FLOAT ? b.wf->max_value : ldexp(1, r->bits);
    int64_t rows_per = r->n / r->group_rows;
    for (int64_t i = 0; i < r->experts * r->n * r->k; i++) {
        int64_t e = i / (r->n * r->k), row = i / r->k % r->n / rows_per, g = i % r->k / r->group_cols;
        double gs = r->global_scale ? r->global_scale[e] : 1.0;
        double sst = b.tensor ? 1.0 : hc_quant_scale_value(r->desc.scale_format,
                     scale_bits(r, (e * r->group_rows + row) * r->groups + g));
        double val = sst * gs, z = zp_of(r, e, row, g), x = w[i];
        double y = val != 0 ? x / val : 0.0, bound;
        if (b.humming) {
            double slop = D * (b.eps * fabs(sst) + b.subhalf) * fabs(gs) * 1.01;
            if (r->zero_points_f) slop += fabs(z) * 0x1p-8 * fabs(val);
            bound = half_spacing(&b, fmin(D, 1.2 * fabs(y) + 1e-300)) * fabs(val) * (1 + b.eps) + slop;
        } else {
            double ex = clip_excess(&b, r->desc.zero_point ? y + z : y);
            assert_true(!b.mx || r->desc.zero_point || ex == 0.0); /* MX: nothing saturates */
            if (b.eff && !(ex <= D * b.eps * 1.01 + 1e-9))
                print_error("%s zp%d: y=%g z=%g excess %g\n", b.wf->name, r->desc.zero_point, y, z, ex);
            if (b.eff) assert_true(ex <= D * b.eps * 1.01 + 1e-9);
            bound = (half_spacing(&b, fmin(fabs(y), D)) + ex) * fabs(val);
        }
        bound += 1e-6 * fabs(x) + 1e-37;
        double ratio = fabs((double)deq[i] - x) / bound;
        if (!(ratio <= 1.0))
            print_error("elem %lld x=%g deq=%g val=%g z=%g bound=%g\n", (long long)i, x,
                        (double)deq[i], val, z, bound);
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
                for (int cfg = 0; cfg < 4; cfg++) {
                    int gsz = cfg & 1 ? 32 : 0, global = cfg >> 1;
                    hc_quant_desc d = mk(weight_fmts[fi], scale_fmts[si], gsz, (hc_zp_mode)zp, global);
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
    assert_true(ran > 200);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
