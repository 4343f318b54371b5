/* test_formats.c - the format table and codecs against independent references.
 *
 * The references here never place bits: values come from enumerating
 * (sign, exponent, mantissa) and evaluating sign * 2^(e-bias) * (1 + m/2^M)
 * with ldexp, and the expected encodings from the sorted value grid.
 *
 * `test_formats --dump DIR` writes raw little-endian files for the Python
 * ml_dtypes oracle (tests/py/test_formats_oracle.py) instead of running tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_format.h"

#define MAX_CODES 65536

static const hc_format_info *fmt(int i) { return hc_format_get((hc_format_id)i); }

static uint32_t fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Same double, sign of zero included; NaN equals NaN. */
static int same_value(double a, double b)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* xorshift64*: deterministic, state owned by the caller. */
static uint32_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (uint32_t)((*s * 0x2545F4914F6CDD1Dull) >> 32);
}

/* ---- (a) derived columns ------------------------------------------------- */

/* Largest finite magnitude from the exponent range each specials kind leaves. */
static double ref_max(const hc_format_info *f)
{
    int E = f->exp_bits, M = f->man_bits, top_e = (1 << E) - 1;
    if (f->kind == HC_KIND_UINT || f->kind == HC_KIND_INT) return pow(2, f->bits - 1) - 1;
    switch (f->specials) {
    case HC_SPECIAL_NONE: return (2 - pow(2, -M)) * pow(2, top_e - f->bias);
    case HC_SPECIAL_IEEE: return (2 - pow(2, -M)) * pow(2, top_e - 1 - f->bias);
    case HC_SPECIAL_FN: return (2 - pow(2, 1 - M)) * pow(2, top_e - f->bias);
    case HC_SPECIAL_E8M0: return pow(2, 254 - 127);
    }
    return NAN;
}

static void test_derived_columns(void **state)
{
    (void)state;
    for (int i = 0; i < HC_FMT_COUNT; i++) {
        const hc_format_info *f = fmt(i);
        int E = f->exp_bits, M = f->man_bits;
        int bias = f->kind == HC_KIND_FLOAT  ? (1 << (E - 1)) - 1
                   : f->kind == HC_KIND_UINT ? 1 << (f->bits - 1)
                                             : 0;
        double min = f->kind != HC_KIND_FLOAT             ? 1.0
                     : f->specials == HC_SPECIAL_E8M0     ? pow(2, -127)
                                                          : pow(2, 1 - bias - M);
        if (f->bias != bias || f->max_value != ref_max(f) || f->min_subnormal != min)
            fail_msg("%s: bias %d/%d max %a/%a min %a/%a", f->name, f->bias, bias,
                     f->max_value, ref_max(f), f->min_subnormal, min);
        if (f->kind == HC_KIND_FLOAT)
            assert_int_equal(f->bits, f->is_signed + E + M);
        else
            assert_true(E == 0 && M == 0 && f->is_signed == (f->kind == HC_KIND_INT));
    }
    assert_null(hc_format_get(HC_FMT_COUNT));
    assert_null(hc_format_get((hc_format_id)-1));
}

/* ---- reference decoder by enumeration ------------------------------------ */

/* vals[code] for every code of a <= 16-bit format. */
static void ref_table(const hc_format_info *f, double *vals)
{
    int n = 1 << f->bits, E = f->exp_bits, M = f->man_bits;
    if (f->kind == HC_KIND_UINT) {
        for (int v = 0; v < n; v++) vals[v] = v;
        return;
    }
    if (f->kind == HC_KIND_INT) { /* two's complement: v and v + 2^b share a code */
        for (int v = -n / 2; v < n / 2; v++) vals[v < 0 ? v + n : v] = v;
        return;
    }
    for (int s = 0; s <= f->is_signed; s++)
        for (int e = 0; e < (1 << E); e++)
            for (int m = 0; m < (1 << M); m++) {
                double frac = (double)m / (1 << M), v;
                if (f->specials == HC_SPECIAL_E8M0) v = e == 255 ? NAN : ldexp(1.0, e - 127);
                else if (f->specials == HC_SPECIAL_IEEE && e == (1 << E) - 1) v = m ? NAN : INFINITY;
                else if (f->specials == HC_SPECIAL_FN && e == (1 << E) - 1 && m == (1 << M) - 1) v = NAN;
                else if (e == 0) v = ldexp(frac, 1 - f->bias);
                else v = ldexp(1.0 + frac, e - f->bias);
                vals[s * (1 << (E + M)) + e * (1 << M) + m] = s ? -v : v;
            }
}

/* The canonical NaN each format's encoder is documented to produce. */
static uint32_t ref_nan_code(const hc_format_info *f, int neg)
{
    uint32_t sign = neg && f->is_signed ? 1u << (f->bits - 1) : 0;
    switch (f->kind == HC_KIND_FLOAT ? f->specials : HC_SPECIAL_NONE) {
    case HC_SPECIAL_IEEE: return sign | (((1u << f->exp_bits) - 1) << f->man_bits) |
                                 (1u << (f->man_bits - 1));
    case HC_SPECIAL_FN: return sign | ((1u << (f->bits - 1)) - 1);
    case HC_SPECIAL_E8M0: return 0xFF;
    default: return 0;
    }
}

/* ---- (b) exhaustive decode and round trip -------------------------------- */

static void test_exhaustive_codes(void **state)
{
    (void)state;
    double *vals = malloc(MAX_CODES * sizeof *vals);
    assert_non_null(vals);
    for (int i = 0; i < HC_FMT_COUNT; i++) {
        const hc_format_info *f = fmt(i);
        if (f->bits > 16) continue;
        ref_table(f, vals);
        uint32_t n = 1u << f->bits, nans = 0;
        for (uint32_t c = 0; c < n; c++) {
            double d = hc_format_decode((hc_format_id)i, c);
            if (!same_value(d, vals[c])) fail_msg("%s code %#x: decode %a, want %a", f->name, c, d, vals[c]);
            /* high bits beyond the code width are ignored */
            assert_true(same_value(hc_format_decode((hc_format_id)i, c | (n << 1)), d));
            assert_true((double)(float)d == d || isnan(d)); /* fits the float32 encode input */
            uint32_t want = isnan(d) ? ref_nan_code(f, signbit(d) != 0) : c;
            uint32_t got = hc_format_encode((hc_format_id)i, (float)d);
            if (got != want) fail_msg("%s code %#x (%a): encode -> %#x, want %#x", f->name, c, d, got, want);
            nans += isnan(d) != 0;
        }
        print_message("  %-12s %6u codes decoded and round-tripped (%u NaN)\n", f->name, n, nans);
    }
    free(vals);
}

/* ---- (c) rounding between neighbours and past the largest value ---------- */

typedef struct {
    double v;
    uint32_t code;
} grid_point;

static int cmp_grid(const void *a, const void *b)
{
    double x = ((const grid_point *)a)->v, y = ((const grid_point *)b)->v;
    return (x > y) - (x < y);
}

/* Finite values in increasing order; for signed floats only the magnitudes
 * (the negative half is checked by mirroring the sign). */
static int build_grid(const hc_format_info *f, const double *vals, grid_point *g)
{
    int n = 0, mirror = f->kind == HC_KIND_FLOAT && f->is_signed;
    for (uint32_t c = 0; c < (1u << f->bits); c++) {
        if (!isfinite(vals[c]) || (mirror && signbit(vals[c]))) continue;
        g[n++] = (grid_point){vals[c], c};
    }
    qsort(g, (size_t)n, sizeof *g, cmp_grid);
    return n;
}

/* Checks encode(x) == want, and for signed floats encode(-x) == want|sign. */
static void expect_enc(const hc_format_info *f, hc_format_id id, double x, uint32_t want)
{
    float xf = (float)x;
    if ((double)xf != x) fail_msg("%s: test input %a not a float32", f->name, x);
    uint32_t got = hc_format_encode(id, xf);
    if (got != want) fail_msg("%s: encode(%a) = %#x, want %#x", f->name, x, got, want);
    if (f->kind != HC_KIND_FLOAT || !f->is_signed) return;
    uint32_t sign = 1u << (f->bits - 1);
    if ((got = hc_format_encode(id, -xf)) != (want | sign))
        fail_msg("%s: encode(%a) = %#x, want %#x", f->name, -x, got, want | sign);
}

/* Past the largest finite value: saturation, Inf or NaN by the specials. */
static void check_overflow(const hc_format_info *f, hc_format_id id, const grid_point *g, int n)
{
    double top = g[n - 1].v, bound = top + (top - g[n - 2].v) / 2;
    uint32_t top_code = g[n - 1].code, lo_code = g[0].code;
    uint32_t inf = f->kind == HC_KIND_FLOAT ? ((1u << f->exp_bits) - 1) << f->man_bits : 0;
    uint32_t past = f->specials == HC_SPECIAL_IEEE ? inf
                    : f->specials == HC_SPECIAL_FN ? ref_nan_code(f, 0) : top_code;
    /* the tie at the boundary goes to the even code: Inf for IEEE (a carry
     * into the exponent), the top value for FN (0x7E beats 0x7F) */
    expect_enc(f, id, bound, f->specials == HC_SPECIAL_IEEE ? inf : top_code);
    expect_enc(f, id, nextafterf((float)bound, 0.0f), top_code);
    expect_enc(f, id, nextafterf((float)bound, INFINITY), past);
    expect_enc(f, id, 0x1.fffffep127, past); /* FLT_MAX */
    expect_enc(f, id, INFINITY, past);
    if (f->kind != HC_KIND_FLOAT) { /* integers also saturate at the low end */
        assert_int_equal(hc_format_encode(id, -INFINITY), lo_code);
        assert_int_equal(hc_format_encode(id, (float)g[0].v - 0.75f), lo_code);
        assert_int_equal(hc_format_encode(id, -0x1p100f), lo_code);
    }
    assert_int_equal(hc_format_encode(id, NAN), ref_nan_code(f, 0));
    assert_int_equal(hc_format_encode(id, -NAN), ref_nan_code(f, 1));
}

/* Every adjacent pair: both ends exact, midpoint to the even code, one float32
 * ulp either side of it to the nearer neighbour. */
static int check_neighbours(const hc_format_info *f, hc_format_id id, const grid_point *g, int n)
{
    for (int k = 0; k + 1 < n; k++) {
        double lo = g[k].v, hi = g[k + 1].v, mid = (lo + hi) / 2;
        uint32_t cl = g[k].code, ch = g[k + 1].code;
        assert_true(((cl ^ ch) & 1) == 1); /* neighbours differ in parity */
        expect_enc(f, id, lo, cl);
        expect_enc(f, id, mid, (cl & 1) ? ch : cl);
        expect_enc(f, id, nextafterf((float)mid, -INFINITY), cl);
        expect_enc(f, id, nextafterf((float)mid, INFINITY), ch);
    }
    return 4 * (n - 1);
}

static void test_encode_rounding(void **state)
{
    (void)state;
    double *vals = malloc(MAX_CODES * sizeof *vals);
    grid_point *g = malloc(MAX_CODES * sizeof *g);
    assert_true(vals && g);
    for (int i = 0; i < HC_FMT_COUNT; i++) {
        const hc_format_info *f = fmt(i);
        if (f->bits > 16 || f->specials == HC_SPECIAL_E8M0) continue; /* e8m0: own rule */
        ref_table(f, vals);
        int n = build_grid(f, vals, g);
        assert_true(n >= 2);
        if (f->kind == HC_KIND_FLOAT) assert_true(g[n - 1].v == f->max_value);
        int checks = check_neighbours(f, (hc_format_id)i, g, n);
        check_overflow(f, (hc_format_id)i, g, n);
        print_message("  %-12s %6d neighbour/midpoint inputs checked\n", f->name, checks);
    }
    free(vals);
    free(g);
}

/* ---- (d) float32 ---------------------------------------------------------- */

static void test_float32(void **state)
{
    (void)state;
    static const struct { uint32_t code; double v; } known[] = {
        {0x3F800000, 1.0},          {0xC0490FDB, -0x1.921fb6p+1}, {0x00000001, 0x1p-149},
        {0x007FFFFF, 0x1.fffffcp-127}, {0x00800000, 0x1p-126},   {0x7F7FFFFF, 0x1.fffffep127},
        {0x80000000, -0.0},         {0x7F800000, INFINITY},       {0xFF800000, -INFINITY},
        {0x7FC00000, NAN},          {0x7F800001, NAN},            {0xFFFFFFFF, NAN},
    };
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        assert_true(same_value(hc_format_decode(HC_FMT_F32, known[k].code), known[k].v));
    uint64_t s = 0x1234567;
    for (int k = 0; k < 200000; k++) { /* random codes: decode is the float, encode its bits */
        uint32_t c = rng_next(&s);
        float x = bitsf(c);
        assert_true(same_value(hc_format_decode(HC_FMT_F32, c), (double)x));
        uint32_t want = isnan(x) ? 0x7FC00000u | (c & 0x80000000u) : c;
        assert_int_equal(hc_format_encode(HC_FMT_F32, x), want);
    }
}

/* ---- (e) e8m0 and the spec's examples ------------------------------------- */

/* PyTorch float8_e8m0fnu rounding stated on values: normal inputs round up
 * from 1.5 * 2^t, subnormal inputs only strictly above 2^-127. */
static uint8_t ref_e8m0_round(float x)
{
    double a = fabs((double)x);
    if (isnan(a) || isinf(a)) return 0xFF;
    if (a < 0x1p-126) return a > 0x1p-127; /* float32 subnormal input */
    int k;
    frexp(a, &k);
    int t = k - 1 + 127; /* 2^(t-127) <= a < 2^(t-126) */
    return (uint8_t)(a >= 1.5 * ldexp(1.0, t - 127) ? t + 1 : t);
}

static void test_e8m0(void **state)
{
    (void)state;
    const float in[] = {1, 1.4999f, 1.5f, 1.75f, 3, 0x1p-127f, 0x1.8p-127f, -2};
    const uint8_t round_want[] = {127, 127, 128, 128, 129, 0, 1, 128};
    const uint8_t ceil_want[] = {127, 128, 128, 128, 129, 1, 1, 128};
    for (int k = 0; k < 8; k++) {
        assert_int_equal(hc_e8m0_encode_round(in[k]), round_want[k]);
        assert_int_equal(hc_format_encode(HC_FMT_F8E8M0, in[k]), round_want[k]);
        assert_int_equal(hc_e8m0_encode_ceil(in[k]), ceil_want[k]);
    }
    assert_int_equal(hc_e8m0_encode_round(NAN), 0xFF);
    assert_int_equal(hc_e8m0_encode_round(-INFINITY), 0xFF);
    assert_int_equal(hc_e8m0_encode_round(0x1.8p127f), 0xFF); /* rounds past 2^127 */
    assert_int_equal(hc_e8m0_encode_round(0.0f), 0);
    assert_int_equal(hc_e8m0_encode_ceil(NAN), 0);
    assert_int_equal(hc_e8m0_encode_ceil(INFINITY), 0xFF);
    assert_int_equal(hc_e8m0_encode_ceil(0x1.000002p127f), 0xFF);
    assert_int_equal(hc_e8m0_encode_ceil(-0.75f), 127);
    assert_int_equal(hc_e8m0_encode_ceil(0.0f), 0);
    uint64_t s = 42;
    for (int k = 0; k < 300000; k++) {
        float x = bitsf(rng_next(&s));
        if (hc_e8m0_encode_round(x) != ref_e8m0_round(x))
            fail_msg("e8m0 round(%a) = %u, want %u", (double)x, hc_e8m0_encode_round(x), ref_e8m0_round(x));
        /* ceil: the smallest power of two at or above |x| */
        if (isfinite(x) && fabsf(x) >= 0x1p-126f && fabsf(x) <= 0x1p127f)
            assert_true(ldexp(1.0, hc_e8m0_encode_ceil(x) - 127) >= fabs((double)x) &&
                        fabs((double)x) > ldexp(1.0, hc_e8m0_encode_ceil(x) - 128));
    }
}

static void test_e4m3_examples(void **state)
{
    (void)state;
    const float in[] = {448, 460, 464, 470, 480, 1e6f, 0x1p-10f, 0x1.8p-9f};
    const uint32_t want[] = {0x7E, 0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0x00, 0x02};
    for (int k = 0; k < 8; k++) {
        assert_int_equal(hc_format_encode(HC_FMT_F8E4M3, in[k]), want[k]);
        assert_int_equal(hc_format_encode(HC_FMT_F8E4M3, -in[k]), want[k] | 0x80);
    }
    /* §2.9: float4e2m1 at scale 1. Humming's quantizer sends the tie 0.75 toward
     * zero (0x1); this encoder is a cast and sends it to the even code 0x2. */
    const float fp4_in[] = {6, -3, 0.26f, -0.1f, 0.75f};
    const uint32_t fp4_want[] = {0x7, 0xD, 0x1, 0x8, 0x2};
    for (int k = 0; k < 5; k++) assert_int_equal(hc_format_encode(HC_FMT_F4E2M1, fp4_in[k]), fp4_want[k]);
    /* checkpoint spec §0.1: the E2M1 magnitude table */
    const double e2m1[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    for (uint32_t c = 0; c < 16; c++)
        assert_true(same_value(hc_format_decode(HC_FMT_F4E2M1, c), c & 8 ? -e2m1[c & 7] : e2m1[c & 7]));
}

/* ---- (f) the fast half/bfloat16 paths against the generic codec ------------ */

/* Same code, except that NaN payloads may differ: then both must be NaN codes
 * of the same sign (hc_half.c keeps payload bits, the generic path does not). */
static void expect_same_half(hc_format_id id, float x, uint32_t fast)
{
    uint32_t gen = hc_format_encode(id, x);
    if (isnan(x)) {
        assert_true(isnan(hc_format_decode(id, fast)) && (fast >> 15) == (gen >> 15));
        return;
    }
    if (fast != gen) fail_msg("%s(%a): fast %#x, generic %#x", fmt(id)->name, (double)x, fast, gen);
}

static void test_half_bf16(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float a = hc_f16_to_f32((uint16_t)h), b = hc_bf16_to_f32((uint16_t)h);
        assert_true(same_value(a, hc_format_decode(HC_FMT_F16, h)));
        assert_true(same_value(b, hc_format_decode(HC_FMT_BF16, h)));
        expect_same_half(HC_FMT_F16, a, hc_f32_to_f16(a));
        expect_same_half(HC_FMT_BF16, b, hc_f32_to_bf16(b));
        if (!isnan(a)) assert_int_equal(hc_f32_to_f16(a), h);
        if (!isnan(b)) assert_int_equal(hc_f32_to_bf16(b), h);
    }
    uint64_t s = 7;
    const int n = 2000000;
    for (int k = 0; k < n; k++) {
        uint32_t u = rng_next(&s);
        float x = bitsf(u); /* anywhere in float32 */
        /* exponent field 97..145: f16 underflow through overflow */
        float y = bitsf((u & 0x807FFFFFu) | ((97 + rng_next(&s) % 49) << 23));
        expect_same_half(HC_FMT_F16, x, hc_f32_to_f16(x));
        expect_same_half(HC_FMT_F16, y, hc_f32_to_f16(y));
        expect_same_half(HC_FMT_BF16, x, hc_f32_to_bf16(x));
    }
    print_message("  float16/bfloat16: 65536 codes each way, %d random float32 inputs\n", 3 * n);
}

/* ---- (g) names ------------------------------------------------------------ */

static void expect_parse(const char *name, hc_format_id want)
{
    hc_format_id got = HC_FMT_COUNT;
    if (hc_format_parse(name, &got) != 0 || got != want)
        fail_msg("parse(\"%s\") -> %d, want %s", name, (int)got, fmt(want)->name);
}

static void test_parse(void **state)
{
    (void)state;
    char buf[64];
    for (int i = 0; i < HC_FMT_COUNT; i++) {
        const hc_format_info *f = fmt(i);
        expect_parse(f->name, (hc_format_id)i);
        size_t len = strlen(f->name);
        for (size_t k = 0; k <= len; k++) buf[k] = (char)toupper((unsigned char)f->name[k]);
        expect_parse(buf, (hc_format_id)i); /* upper case */
        if (f->kind != HC_KIND_FLOAT) continue;
        snprintf(buf, sizeof buf, "float%d_e%dm%d", f->bits, f->exp_bits, f->man_bits);
        expect_parse(buf, (hc_format_id)i);
        snprintf(buf, sizeof buf, "float%de%dm%d", f->bits, f->exp_bits, f->man_bits);
        expect_parse(buf, (hc_format_id)i);
    }
    static const struct { const char *name; hc_format_id id; } ok[] = {
        {"half", HC_FMT_F16},  {"fp16", HC_FMT_F16}, {"FLOAT16", HC_FMT_F16},
        {"bf16", HC_FMT_BF16}, {"bfloat16", HC_FMT_BF16}, {"fp32", HC_FMT_F32},
        {"float", HC_FMT_F32}, {"e8m0", HC_FMT_F8E8M0}, {"UE8M0", HC_FMT_F8E8M0},
        {"float8_e4m3fn", HC_FMT_F8E4M3}, {"float8_e5m2", HC_FMT_F8E5M2},
        {"float8_e8m0fnu", HC_FMT_F8E8M0}, {"float4_e2m1fn", HC_FMT_F4E2M1},
        {"float6_e2m3fn", HC_FMT_F6E2M3}, {"float6_e3m2fn", HC_FMT_F6E3M2},
        {"float8__e4m3", HC_FMT_F8E4M3}, {"float16e8m7", HC_FMT_BF16}, {"uint1", HC_FMT_UINT1},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) expect_parse(ok[k].name, ok[k].id);
    /* int1 has no meaning (a sign bit and nothing else): rejected like uint9.
     * fn/fnu are accepted only where true; fnuz is a different encoding. */
    static const char *bad[] = {
        "", "float9e4m3", "float4e2m2", "uint9", "int1", "int9", "uint0", "int",
        "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e5m2fn", "float16_e5m10fn",
        "float8e8m0fn", "float8_e4m3fnu", "float8e4m3x", "float08e4m3", "fp8", "e4m3",
        "float8e4m", "floate4m3", "float8e4m3 ", "float1000e4m3", "bfloat", "float4_e2m1fnfn",
        "uint4_", "float8e4m3float8e4m3float8e4m3float8e4m3",
    };
    hc_format_id id = HC_FMT_COUNT;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        if (hc_format_parse(bad[k], &id) == 0) fail_msg("parse accepted \"%s\"", bad[k]);
    assert_int_equal(hc_format_parse(NULL, &id), -1);
    assert_int_equal(hc_format_parse("float16", NULL), -1);
}

/* ---- (h) block schemes ------------------------------------------------------- */

static void test_block_schemes(void **state)
{
    (void)state;
    const hc_block_scheme *mx = hc_block_scheme_get(HC_BLOCK_MX), *nv = hc_block_scheme_get(HC_BLOCK_NV);
    assert_true(mx && nv);
    assert_string_equal(mx->name, "mx");
    assert_int_equal(mx->group_size, 32);
    assert_int_equal(mx->scale_format, HC_FMT_F8E8M0);
    assert_int_equal(mx->has_global_scale, 0);
    assert_string_equal(nv->name, "nv");
    assert_int_equal(nv->group_size, 16);
    assert_int_equal(nv->scale_format, HC_FMT_F8E4M3);
    assert_int_equal(nv->has_global_scale, 1);
    assert_null(hc_block_scheme_get(HC_BLOCK_COUNT));
    assert_null(hc_block_scheme_get((hc_block_scheme_id)-1));
}

/* ---- --dump DIR: raw files for the ml_dtypes oracle ------------------------ */

/* The formats ml_dtypes (or numpy, for float16) also implements. */
static const char *const dump_formats[] = {
    "float8e4m3", "float8e5m2", "float8e8m0", "float4e2m1",
    "float6e2m3", "float6e3m2", "bfloat16",   "float16",
};

static int write_u32_le(FILE *fp, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return fwrite(b, 1, 4, fp) == 4 ? 0 : -1;
}

static float *read_inputs(const char *dir, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/inputs.f32", dir);
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    float *xs = NULL;
    unsigned char b[4];
    size_t cap = 0;
    for (*n = 0; fread(b, 1, 4, fp) == 4; (*n)++) {
        if (*n == cap) {
            float *grown = realloc(xs, (cap = cap ? 2 * cap : 4096) * sizeof *xs);
            if (!grown) { free(xs); fclose(fp); return NULL; }
            xs = grown;
        }
        xs[*n] = bitsf((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
    }
    fclose(fp);
    return xs;
}

/* <name>.decode.f32: float32 value of every code; <name>.encode.u32: the code
 * of every input. */
static int dump_format(const char *dir, hc_format_id id, const float *xs, size_t n)
{
    char path[4096];
    int rc = 0;
    snprintf(path, sizeof path, "%s/%s.decode.f32", dir, fmt(id)->name);
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    for (uint32_t c = 0; c < (1u << fmt(id)->bits); c++)
        rc |= write_u32_le(fp, fbits((float)hc_format_decode(id, c)));
    rc |= fclose(fp);
    snprintf(path, sizeof path, "%s/%s.encode.u32", dir, fmt(id)->name);
    if (!(fp = fopen(path, "wb"))) return -1;
    for (size_t k = 0; k < n; k++) rc |= write_u32_le(fp, hc_format_encode(id, xs[k]));
    rc |= fclose(fp);
    return rc ? -1 : 0;
}

static int dump_main(const char *dir)
{
    size_t n = 0;
    float *xs = read_inputs(dir, &n);
    if (!xs) {
        fprintf(stderr, "test_formats: cannot read %s/inputs.f32\n", dir);
        return 2;
    }
    for (size_t i = 0; i < sizeof dump_formats / sizeof dump_formats[0]; i++) {
        hc_format_id id;
        if (hc_format_parse(dump_formats[i], &id) != 0 || dump_format(dir, id, xs, n) != 0) {
            fprintf(stderr, "test_formats: dumping %s to %s failed\n", dump_formats[i], dir);
            free(xs);
            return 2;
        }
    }
    free(xs);
    return 0;
}

/* The bulk 16-bit converters (F16C where the CPU has it) equal the scalar
 * ones on every code, from a deliberately misaligned source. */
static void test_half_arrays(void **state)
{
    (void)state;
    unsigned char *buf = malloc(2 * 65536 + 1);
    float *got = malloc(65536 * sizeof *got);
    assert_non_null(buf);
    assert_non_null(got);
    for (uint32_t c = 0; c < 65536; c++) {
        uint16_t h = (uint16_t)c;
        memcpy(buf + 1 + 2 * c, &h, 2);
    }
    for (int bf = 0; bf < 2; bf++) {
        if (bf) hc_bf16_to_f32_array(buf + 1, got, 65536);
        else hc_f16_to_f32_array(buf + 1, got, 65536);
        for (uint32_t c = 0; c < 65536; c++) {
            float want = bf ? hc_bf16_to_f32((uint16_t)c) : hc_f16_to_f32((uint16_t)c);
            uint32_t a, b;
            memcpy(&a, &got[c], 4);
            memcpy(&b, &want, 4);
            if (want == want) assert_int_equal(a, b); /* NaN payloads may differ */
            else assert_true(got[c] != got[c]);
        }
    }
    free(buf);
    free(got);
}

/* Roles: the sets the CLI and recipes accept, from the table alone, and the
 * activation parameters: a token whose |x|max is amax is scaled so that amax
 * lands on the format's largest code. */
static void test_roles(void **state)
{
    (void)state;
    unsigned act = 0, scale = 0, zero16 = 0;
    for (int id = 0; id < HC_FMT_COUNT; id++) {
        hc_format_role_info r = hc_format_role((hc_format_id)id);
        const hc_format_info *f = hc_format_get((hc_format_id)id);
        int weight = f->bits <= 8 && !(f->kind == HC_KIND_FLOAT && !f->is_signed);
        assert_int_equal(!!(r.roles & HC_FROLE_WEIGHT), weight);
        act += !!(r.roles & HC_FROLE_ACT);
        scale += !!(r.roles & HC_FROLE_SCALE);
        zero16 += (r.roles & HC_FROLE_ZERO) && f->kind == HC_KIND_FLOAT;
        if (r.act_max != 0.0f) { /* the largest value (0.1.19) */
            assert_true(r.act_max == (float)f->max_value);
            assert_true(r.act_bound > 0.0);
        }
    }
    assert_int_equal(act, 6);    /* f16 bf16 e4m3 e5m2 int8 int4 */
    assert_int_equal(scale, 6);  /* f16 bf16 f32 e4m3 e5m2 e8m0 */
    assert_int_equal(zero16, 2); /* float zero points in the model dtype */
    assert_true(hc_format_role(HC_FMT_F8E4M3).roles & HC_FROLE_WEIGHT);
    assert_false(hc_format_role(HC_FMT_F8E8M0).roles & HC_FROLE_WEIGHT);
    assert_true(hc_format_role(HC_FMT_UINT4).roles & HC_FROLE_ZERO);
    assert_int_equal(hc_format_role(HC_FMT_COUNT).roles, 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump_main(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_derived_columns), cmocka_unit_test(test_exhaustive_codes),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_encode_rounding), cmocka_unit_test(test_float32),
        cmocka_unit_test(test_e8m0),            cmocka_unit_test(test_e4m3_examples),
        cmocka_unit_test(test_half_bf16),       cmocka_unit_test(test_parse),
        cmocka_unit_test(test_block_schemes),
        cmocka_unit_test(test_half_arrays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
