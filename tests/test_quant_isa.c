/* test_quant_isa.c - the quantizer's element loops (lib/quant/hc_quant_row.c) are
 * bit-identical in every implementation: the portable one against each one
 * this CPU runs (AVX2, AVX-512 on x86-64), on every kind of target, with ties on the
 * rounding boundaries, signed zeros, subnormals, constant and one-signed
 * groups, values near float32 max and NaN/Inf; row packing; and
 * hc_quantize_rows (the row-source pass) against hc_quantize. Skipped (SKIP[isa]) where the best
 * is the portable one: nothing to compare. */
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

#include "hc_quant_internal.h"

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

/* Group-sized runs of one kind of data each, over (E, N, K): magnitudes
 * 2^-20 .. 2^top, "near max" values of size big. */
static void fill(float *w, int64_t count, int64_t run, int top, float big)
{
    for (int64_t at = 0; at < count; at += run) {
        int kind = (int)(at / run % 9);
        float mag = (float)ldexp(1.0, (int)(urand() * (20 + top)) - 20);
        for (int64_t i = at; i < at + run && i < count; i++) {
            float u = (float)(urand() * 2.0 - 1.0);
            switch (kind) {
            case 0: w[i] = u * mag; break;
            case 1: w[i] = (float)((int)(u * 16.0f)) * 0.5f * mag; break; /* ties at .5 steps */
            case 2: w[i] = i % 3 ? 0.0f : -0.0f; break;
            case 3: w[i] = u * 1e-39f; break;                          /* subnormal */
            case 4: w[i] = 0.75f * mag; break;                         /* constant */
            case 5: w[i] = fabsf(u) * mag; break;                      /* one-signed */
            case 6: w[i] = u * big; break;                             /* near the scale's max */
            case 7: w[i] = (float)((int)(u * 15.0f)) * mag / 7.0f; break;
            default: w[i] = -fabsf(u) * mag + (i % 7 == 0 ? 8.0f * mag : 0.0f); break;
            }
        }
    }
}

static void same_bytes(const void *a, const void *b, size_t n, const char *what, const char *t)
{
    if ((a == NULL) != (b == NULL) || (a && memcmp(a, b, n) != 0)) {
        print_error("%s: %s differs between the implementations\n", t, what);
        fail();
    }
}

static void same_result(const hc_quant_result *a, const hc_quant_result *b, const char *t)
{
    int64_t E = a->experts, g = E * a->group_rows * a->groups;
    assert_int_equal(a->bits, b->bits);
    same_bytes(a->codes, b->codes, (size_t)(E * a->n * a->k * a->bits / 32) * 4, "codes", t);
    same_bytes(a->scales, b->scales, (size_t)(g * a->scale_bytes), "scales", t);
    same_bytes(a->zero_points, b->zero_points, (size_t)(g * a->bits / 32) * 4, "zero points", t);
    same_bytes(a->zero_points_f, b->zero_points_f, (size_t)g * 2, "float zero points", t);
    same_bytes(a->global_scale, b->global_scale, (size_t)E * 4, "global scales", t);
    same_bytes(a->scale_2, b->scale_2, (size_t)(E * a->n) * 2, "channel second scales", t);
}

typedef struct {
    const float *w;
    int64_t k;
} rows_ctx;

static const float *row_of(void *ctx, int64_t row, float *buf)
{
    const rows_ctx *c = ctx;
    memcpy(buf, c->w + row * c->k, (size_t)c->k * sizeof *buf);
    return buf;
}

/* Portable vs every vector implementation this CPU runs, and (where it
 * applies) the row source vs the array. */
static hc_status compare(const char *t, hc_quant_desc d, int64_t E, int64_t N, int64_t K,
                         const float *w)
{
    hc_quant_result a, b;
    hc_error ea = {0}, eb = {0};
    hc_status sa = hq_quantize_isa(&d, w, E, N, K, HQ_ISA_GENERIC, &a, &ea);
    for (int isa = HQ_ISA_AVX2; isa <= hq_isa_detect(); isa++) {
        hc_status sb = hq_quantize_isa(&d, w, E, N, K, isa, &b, &eb);
        if (sa != sb || strcmp(ea.msg, eb.msg) != 0) {
            print_error("%s (isa %d): status %d '%s' vs %d '%s'\n", t, isa, sa, ea.msg, sb,
                        eb.msg);
            fail();
        }
        if (sa == HC_OK) same_result(&a, &b, t);
        hc_quant_result_free(&b);
    }
    if (hc_quant_rows_ok(&d)) {
        rows_ctx rc = {w, K};
        hc_error er = {0};
        hc_status sr = hc_quantize_rows(&d, row_of, &rc, E, N, K, &b, &er);
        if (sr != sa || strcmp(ea.msg, er.msg) != 0) {
            print_error("%s rows: status %d '%s' vs %d '%s'\n", t, sa, ea.msg, sr, er.msg);
            fail();
        }
        if (sa == HC_OK) same_result(&a, &b, t);
        hc_quant_result_free(&b);
    }
    hc_quant_result_free(&a);
    return sa;
}

typedef struct {
    const char *name;
    hc_quant_desc d;
    int64_t N, K;
} isa_case;

#define Q(w, s, gs, ...) {.weight_format = w, .scale_format = s, .group_size = gs, __VA_ARGS__}
static const isa_case cases[] = {
    {"uint4 g128 f16", Q(HC_FMT_UINT4, HC_FMT_F16, 128), 16, 256},
    {"int4 g128 bf16", Q(HC_FMT_INT4, HC_FMT_BF16, 128), 16, 256},
    {"uint4 g128 int zp", Q(HC_FMT_UINT4, HC_FMT_F16, 128, .zero_point = HC_ZP_INT), 16, 256},
    {"uint4 g128 float zp", Q(HC_FMT_UINT4, HC_FMT_BF16, 128, .zero_point = HC_ZP_FLOAT), 16, 256},
    {"uint8 channel f32 (K % 8 = 4)", Q(HC_FMT_UINT8, HC_FMT_F32, HC_QUANT_GROUP_CHANNEL), 16, 260},
    {"uint2 g64 f16", Q(HC_FMT_UINT2, HC_FMT_F16, 64), 16, 256},
    {"uint3 g128 f32", Q(HC_FMT_UINT3, HC_FMT_F32, 128), 16, 256},
    {"uint1 g128 f32", Q(HC_FMT_UINT1, HC_FMT_F32, 128), 16, 256},
    {"int8 channel e8m0", Q(HC_FMT_INT8, HC_FMT_F8E8M0, HC_QUANT_GROUP_CHANNEL), 16, 256},
    {"nvfp4", Q(HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, .global_scale = 1), 16, 256},
    {"mxfp4", Q(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32), 16, 256},
    {"fp4 g32 f16", Q(HC_FMT_F4E2M1, HC_FMT_F16, 32), 16, 256},
    {"fp8 e4m3 channel bf16", Q(HC_FMT_F8E4M3, HC_FMT_BF16, HC_QUANT_GROUP_CHANNEL), 16, 256},
    {"fp8 e5m2 g128 f32", Q(HC_FMT_F8E5M2, HC_FMT_F32, 128), 16, 256},
    {"fp6 e3m2 g32 f32", Q(HC_FMT_F6E3M2, HC_FMT_F32, 32), 16, 256},
    {"uint4 g128 mse", Q(HC_FMT_UINT4, HC_FMT_F16, 128, .quantizer = HC_QUANTIZER_MSE), 16, 256},
    {"uint4 g64 channel s2", Q(HC_FMT_UINT4, HC_FMT_F8E4M3, 64, .scale_2_channel = 1,
                               .scale_2_format = HC_FMT_BF16), 16, 256},
    {"uint4 block 128x128", Q(HC_FMT_UINT4, HC_FMT_F32, 128, .group_size_n = 128), 128, 256},
    {"uint4 tensor", Q(HC_FMT_UINT4, HC_FMT_F32, HC_QUANT_GROUP_TENSOR), 16, 256},
};

static void skip_without_vectors(void)
{
    if (hq_isa_detect() != HQ_ISA_GENERIC) return;
    printf("SKIP[isa]: this CPU runs only the portable element loops: nothing to compare\n");
    skip();
}

/* Magnitudes (fill's exponent range and largest value) whose group scales fit
 * the scale format sf, so that the codes themselves are compared. */
static void fitting_magnitudes(hc_format_id sf, int *top, float *big)
{
    *top = sf == HC_FMT_F16 ? 10 : sf == HC_FMT_F8E4M3 ? 5 : 20;
    *big = sf == HC_FMT_F16 ? 6e4f : sf == HC_FMT_F8E4M3 ? 1e3f : 1.0e38f;
}

static void test_isas_agree(void **state)
{
    (void)state;
    skip_without_vectors();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const isa_case *x = &cases[c];
        int64_t E = 2, count = E * x->N * x->K;
        float *w = malloc((size_t)count * sizeof *w);
        assert_non_null(w);
        int64_t run = x->d.group_size > 0 ? x->d.group_size : x->K;
        int top;
        float big;
        fitting_magnitudes(x->d.scale_format, &top, &big);
        for (int rep = 0; rep < 5; rep++) {
            fill(w, count, run + rep * 8, top, big); /* runs straddle groups after pass 0 */
            if (rep >= 3) w[count / 2 + 5] = rep == 3 ? NAN : -INFINITY;
            hc_status st = compare(x->name, x->d, E, x->N, x->K, w);
            if (rep < 3 && st != HC_OK) {
                print_error("%s: pass %d failed (status %d): nothing compared\n", x->name, rep, st);
                fail();
            }
        }
        free(w);
    }
}

/* The cross-group scale chain (hc_quant_chain.c, 8 groups per vector) on rows
 * of 11, 16 and 17 groups (whole blocks of 8 and the rest), every scale format it
 * takes and its neighbours, zero points, second scales, e8m0, float targets;
 * data as test_isas_agree's, plus passes whose scales overflow the scale
 * format (refused identically) and NaN/Inf at a row's start, middle, end. */
static const isa_case chain_cases[] = {
    {"uint4 g128 f16", Q(HC_FMT_UINT4, HC_FMT_F16, 128), 8, 128 * 11},
    {"uint4 g32 f16", Q(HC_FMT_UINT4, HC_FMT_F16, 32), 8, 32 * 17},
    {"uint4 g8 f16", Q(HC_FMT_UINT4, HC_FMT_F16, 8), 8, 8 * 17},
    {"uint4 g16 bf16 int zp", Q(HC_FMT_UINT4, HC_FMT_BF16, 16, .zero_point = HC_ZP_INT), 8,
     16 * 16},
    {"uint4 g64 bf16", Q(HC_FMT_UINT4, HC_FMT_BF16, 64), 8, 64 * 11},
    {"int4 g128 f32", Q(HC_FMT_INT4, HC_FMT_F32, 128), 8, 128 * 17},
    {"uint8 g128 f16", Q(HC_FMT_UINT8, HC_FMT_F16, 128), 8, 128 * 11},
    {"uint2 g64 f16", Q(HC_FMT_UINT2, HC_FMT_F16, 64), 8, 64 * 17},
    {"uint3 g32 bf16", Q(HC_FMT_UINT3, HC_FMT_BF16, 32), 8, 32 * 11},
    {"uint1 g32 f32", Q(HC_FMT_UINT1, HC_FMT_F32, 32), 8, 32 * 17},
    {"mxint4 (int4 g32 e8m0)", Q(HC_FMT_INT4, HC_FMT_F8E8M0, 32), 8, 32 * 17},
    {"uint8 g32 e8m0", Q(HC_FMT_UINT8, HC_FMT_F8E8M0, 32), 8, 32 * 11},
    {"uint4 g128 int zp f16", Q(HC_FMT_UINT4, HC_FMT_F16, 128, .zero_point = HC_ZP_INT), 8,
     128 * 11},
    {"uint4 g32 int zp e8m0", Q(HC_FMT_UINT4, HC_FMT_F8E8M0, 32, .zero_point = HC_ZP_INT), 8,
     32 * 17},
    {"uint8 g64 int zp f32", Q(HC_FMT_UINT8, HC_FMT_F32, 64, .zero_point = HC_ZP_INT), 8,
     64 * 11},
    {"uint4 g128 float zp f16", Q(HC_FMT_UINT4, HC_FMT_F16, 128, .zero_point = HC_ZP_FLOAT), 8,
     128 * 11},
    {"uint8 g32 float zp bf16", Q(HC_FMT_UINT8, HC_FMT_BF16, 32, .zero_point = HC_ZP_FLOAT), 8,
     32 * 17},
    {"uint4 g32 float zp f32", Q(HC_FMT_UINT4, HC_FMT_F32, 32, .zero_point = HC_ZP_FLOAT), 8,
     32 * 11},
    {"uint4 g128 f16 global", Q(HC_FMT_UINT4, HC_FMT_F16, 128, .global_scale = 1), 8, 128 * 11},
    {"uint4 g64 bf16 channel s2", Q(HC_FMT_UINT4, HC_FMT_BF16, 64, .scale_2_channel = 1,
                                    .scale_2_format = HC_FMT_BF16), 8, 64 * 17},
    {"mxfp4", Q(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32), 8, 32 * 17},
    {"fp8 e5m2 g64 f32", Q(HC_FMT_F8E5M2, HC_FMT_F32, 64), 8, 64 * 11},
    {"fp4 g32 f16", Q(HC_FMT_F4E2M1, HC_FMT_F16, 32), 8, 32 * 11},
    {"nvfp4", Q(HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, .global_scale = 1), 8, 16 * 17},
    {"fp4 g32 e4m3", Q(HC_FMT_F4E2M1, HC_FMT_F8E4M3, 32), 8, 32 * 11},
    {"uint4 g32 e4m3", Q(HC_FMT_UINT4, HC_FMT_F8E4M3, 32), 8, 32 * 17},
    {"int8 g16 e4m3 global", Q(HC_FMT_INT8, HC_FMT_F8E4M3, 16, .global_scale = 1), 8, 16 * 16},
    {"uint4 g128 mse (portable chain)", Q(HC_FMT_UINT4, HC_FMT_F16, 128,
                                          .quantizer = HC_QUANTIZER_MSE), 8, 128 * 11},
    {"uint4 channel f16 (one group)", Q(HC_FMT_UINT4, HC_FMT_F16, HC_QUANT_GROUP_CHANNEL), 8,
     128 * 11},
};

/* Groups whose symmetric integer scale amax / 2^(b-1) is exactly one of the
 * rounding cases of the scale storage: bfloat16 and float16 ties (even and
 * odd) and their neighbours, powers of two and one ulp above (e8m0), float16
 * subnormals and their half-way point, float16 max, e4m3 ties (normal and
 * subnormal); those above smax (the scale format's largest value) are left
 * out. */
static void fill_ties(float *w, int64_t count, int64_t run, int bits, double smax)
{
    static const uint32_t t[] = {0x3F818000, 0x3F808000, 0x3F808001, 0x3F817FFF, 0x3F801000,
                                 0x3F803000, 0x3F802FFF, 0x3F800001, 0x3F800000, 0x38800000,
                                 0x38000000, 0x33000000, 0x33000001, 0x477FE000, 0x3E2AAAAB,
                                 0x3F880000, 0x3F980000, 0x3F97FFFF, 0x3A800000, 0x3B400000,
                                 0x3B3FFFFF, 0x43E00000, 0x43D80000};
    const int64_t nt = (int64_t)(sizeof t / sizeof t[0]);
    for (int64_t at = 0, gi = 0, ti = 0; at < count; at += run, gi++) {
        float s;
        do
            memcpy(&s, &t[ti++ % nt], sizeof s);
        while (s > smax);
        float m = (float)ldexp(s, bits - 1) * (gi % 2 ? -1.0f : 1.0f);
        for (int64_t i = at; i < at + run && i < count; i++)
            w[i] = (float)(urand() * 2.0 - 1.0) * m / 64.0f;
        w[at + (gi * 7) % run] = m;
    }
}

static void test_chain_agree(void **state)
{
    (void)state;
    skip_without_vectors();
    for (size_t c = 0; c < sizeof chain_cases / sizeof chain_cases[0]; c++) {
        const isa_case *x = &chain_cases[c];
        int64_t E = 2, count = E * x->N * x->K, ok = 0;
        float *w = malloc((size_t)count * sizeof *w);
        assert_non_null(w);
        int64_t run = x->d.group_size > 0 ? x->d.group_size : x->K;
        int top;
        float big;
        fitting_magnitudes(x->d.scale_format, &top, &big);
        for (int rep = 0; rep < 9; rep++) {
            /* 0-2 fitting data (2: fill_ties), 3 scales past the format (f16 / e4m3: refused),
             * 4-8 a NaN or Inf at a row's start, middle or end */
            fill(w, count, run + (rep % 3) * 8, top, rep == 3 ? 3.0e38f : big);
            int64_t at[5] = {0, x->K / 2 + 3, x->K - 1, count - 1, x->K * 3 + 8};
            if (rep >= 4) w[at[rep - 4]] = rep % 2 ? NAN : (rep == 6 ? -INFINITY : INFINITY);
            const hc_format_info *wf = hc_format_get(x->d.weight_format);
            const hc_format_id sf = x->d.scale_format;
            double smax = sf == HC_FMT_F8E8M0 ? 1e38 : hc_format_get(sf)->max_value;
            if (rep == 2 && wf->kind != HC_KIND_FLOAT) fill_ties(w, count, run, wf->bits, smax);
            hc_status st = compare(x->name, x->d, E, x->N, x->K, w);
            ok += rep < 3 && st == HC_OK;
            if (rep >= 4 && st != HC_ERR_FORMAT) {
                print_error("%s: pass %d: a NaN/Inf not refused (status %d)\n", x->name, rep, st);
                fail();
            }
        }
        if (ok != 3) {
            print_error("%s: fitting data refused: nothing compared\n", x->name);
            fail();
        }
        free(w);
    }
}

/* The vector loops stop at a block where x - mn' overflows; the portable
 * loop finishes in double: same codes. */
static void test_zero_point_overflow(void **state)
{
    (void)state;
    skip_without_vectors();
    float w[2 * 128];
    for (int i = 0; i < 256; i++) w[i] = (i % 5 - 2) * 1.5e38f + (float)i;
    hc_quant_desc d = Q(HC_FMT_UINT4, HC_FMT_F32, 128, .zero_point = HC_ZP_INT);
    compare("uint4 int zp near max", d, 1, 2, 128, w);
    d.zero_point = HC_ZP_FLOAT;
    compare("uint4 float zp near max", d, 1, 2, 128, w);
}

/* Row packing: every width, lengths around the 64-code blocks. */
static void test_pack_rows(void **state)
{
    (void)state;
    skip_without_vectors();
    uint8_t codes[512];
    uint32_t a[130], b[130];
    for (int bits = 1; bits <= 8; bits++)
        for (int64_t len = 32; len <= 512; len += 32) {
            for (int i = 0; i < 512; i++) codes[i] = (uint8_t)(urand() * 256.0);
            memset(a, 0xAB, sizeof a);
            memset(b, 0xAB, sizeof b);
            hq_pack_row_isa(HQ_ISA_GENERIC, codes, len, bits, a);
            for (int isa = HQ_ISA_AVX2; isa <= hq_isa_detect(); isa++) {
                memset(b, 0xAB, sizeof b);
                hq_pack_row_isa(isa, codes, len, bits, b);
                if (memcmp(a, b, sizeof a) != 0) {
                    print_error("pack (isa %d): %d bits, %lld codes differ\n", isa, bits,
                                (long long)len);
                    fail();
                }
            }
        }
}

/* hq_store_scale's tables for 8-bit float scale formats give what the codec
 * gives (code and decoded value): every float32 pattern in a stride, plus
 * every code's value, the midpoints between neighbours and their float32
 * neighbours (the ties), signed, zero, subnormal, NaN, Inf, past the max. */
static void check_scale(const hq_ctx *c, hc_format_id sf, float v)
{
    hq_group g;
    memset(&g, 0, sizeof g);
    hq_store_scale(c, sf, v, 1.0, &g);
    uint32_t want = hc_format_encode(sf, v);
    double val = hc_format_decode(sf, want);
    if (g.scale_bits != want || !(g.val == val || (isnan(g.val) && isnan(val)))) {
        print_error("%s: %a -> code %#x value %a, the codec says %#x %a\n",
                    hc_format_get(sf)->name, (double)v, g.scale_bits, g.val, want, val);
        fail();
    }
}

static void test_scale_tables(void **state)
{
    (void)state;
    const hc_format_id fmts[] = {HC_FMT_F8E4M3, HC_FMT_F8E5M2, HC_FMT_F8E3M4};
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        hc_quant_desc d;
        memset(&d, 0, sizeof d);
        d.weight_format = HC_FMT_F4E2M1;
        d.scale_format = fmts[k];
        d.group_size = 16;
        hq_ctx c;
        hq_ctx_init(&c, &d, HQ_ISA_GENERIC);
        assert_true(c.scale8);
        for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4093) {
            float v;
            uint32_t b = (uint32_t)u;
            memcpy(&v, &b, sizeof v);
            check_scale(&c, fmts[k], v);
        }
        for (uint32_t m = 0; m + 1 <= c.smax + 1; m++) {
            double lo = hc_format_decode(fmts[k], m), hi = hc_format_decode(fmts[k], m + 1);
            if (!isfinite(hi)) hi = lo * 1.25;
            float pts[5] = {(float)lo, (float)((lo + hi) / 2), 0, 0, (float)hi};
            pts[2] = nextafterf(pts[1], 0.0f);
            pts[3] = nextafterf(pts[1], INFINITY);
            for (int i = 0; i < 5; i++) {
                check_scale(&c, fmts[k], pts[i]);
                check_scale(&c, fmts[k], -pts[i]);
            }
        }
        const float odd[] = {0.0f, -0.0f, NAN, -NAN, INFINITY, -INFINITY, FLT_MAX, 1e-45f};
        for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) check_scale(&c, fmts[k], odd[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isas_agree),
        cmocka_unit_test(test_chain_agree),
        cmocka_unit_test(test_zero_point_overflow),
        cmocka_unit_test(test_pack_rows),
        cmocka_unit_test(test_scale_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
