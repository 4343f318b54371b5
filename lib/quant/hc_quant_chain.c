/* hc_quant_chain.c - RTN over one row of groups along K: the finiteness check,
 * the group statistics, the scale chain (raw scale, e8m0 rounding or the
 * second-scale division, storage in the scale format, zero point) and the
 * codes. The portable implementation runs hq_group_params / hq_group_codes
 * group by group; the AVX2 one takes 8 groups at a time, one group per
 * vector lane through the scale chain, with the same float32 / double
 * operations in the same order (tests/test_quant_isa.c compares them):
 *  - max/min of a group in any order: MAXPS / MINPS are exact and the
 *    statistics start at +-1e-30, so signed zeros never reach them;
 *  - quotients in double, rounded once to float32 (CVTPD2PS in the default
 *    rounding mode, as the C cast);
 *  - float16 storage by F16C (IEEE round-to-nearest-even, as hc_f32_to_f16),
 *    bfloat16 by the same integer rounding as hc_f32_to_bf16, 8-bit float
 *    scales (e4m3: NVFP4) by encode_scale8's bit operations and its table;
 *  - e8m0 as hc_e8m0_encode_ceil, on the float32 bits.
 * A lane leaves the vector chain for the portable one where anything out of
 * the ordinary could happen: a NaN scale, a stored scale that is not finite
 * or so large that a code's value could overflow float32 (fix_overflow), an
 * e8m0 code 0 or 255, an 8-bit scale at or past the format's largest value
 * (the codec), a zero-point range that overflows. Those groups are
 * then computed by hq_group_params / hq_group_codes themselves. */
#include <string.h>

#include "hc_quant_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HQ_HAVE_AVX2 1
#else
#define HQ_HAVE_AVX2 0
#endif

static int64_t rtn_row_generic(const hq_ctx *c, const float *x, int64_t ng, int64_t gk,
                               const hq_s2 *s2, hq_group *g, uint8_t *codes)
{
    int64_t n = ng * gk, i = hq_first_nonfinite(c->isa, x, n);
    if (i < n) return i;
    for (int64_t j = 0; j < ng; j++) {
        hq_group_params(c, x + j * gk, gk, 1.0f, s2, &g[j]);
        hq_group_codes(c, &g[j], x + j * gk, gk, codes + j * gk);
    }
    return n;
}

static int64_t raw_row_generic(const hq_ctx *c, const float *x, int64_t ng, int64_t gk,
                               float *raw)
{
    int64_t n = ng * gk, i = hq_first_nonfinite(c->isa, x, n);
    for (int64_t j = 0; i == n && j < ng; j++) {
        float mx, mn;
        hq_stats_isa(c->isa, x + j * gk, gk, &mx, &mn);
        raw[j] = hq_raw_scale(c, mx, mn);
    }
    return i;
}

#if HQ_HAVE_AVX2
#define HQ_AVX2 __attribute__((target("avx2,f16c")))

/* v[j] -> lane j of the result: the max (min) of v[j]'s lanes. */
HQ_AVX2 static __m256 reduce8(const __m256 *v, int is_max)
{
#define HQ_M(a, b) (is_max ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b))
    __m256 t[4], u[2];
    for (int p = 0; p < 4; p++)
        t[p] = HQ_M(_mm256_unpacklo_ps(v[2 * p], v[2 * p + 1]),
                    _mm256_unpackhi_ps(v[2 * p], v[2 * p + 1]));
    for (int p = 0; p < 2; p++)
        u[p] = HQ_M(_mm256_shuffle_ps(t[2 * p], t[2 * p + 1], 0x44),
                    _mm256_shuffle_ps(t[2 * p], t[2 * p + 1], 0xEE));
    return HQ_M(_mm256_permute2f128_ps(u[0], u[1], 0x20), _mm256_permute2f128_ps(u[0], u[1], 0x31));
#undef HQ_M
}

/* Max, min and NaN lanes of 4 groups of gk at x (one accumulator pair per
 * group in registers: independent chains). */
HQ_AVX2 static void stats4(const float *x, int64_t gk, __m256 *hi, __m256 *lo, __m256 *nan)
{
    __m256 h0 = _mm256_set1_ps(1e-30f), h1 = h0, h2 = h0, h3 = h0;
    __m256 l0 = _mm256_set1_ps(-1e-30f), l1 = l0, l2 = l0, l3 = l0, u = *nan;
    for (int64_t i = 0; i < gk; i += 8) {
        __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + gk + i);
        __m256 v2 = _mm256_loadu_ps(x + 2 * gk + i), v3 = _mm256_loadu_ps(x + 3 * gk + i);
        h0 = _mm256_max_ps(v0, h0);
        h1 = _mm256_max_ps(v1, h1);
        h2 = _mm256_max_ps(v2, h2);
        h3 = _mm256_max_ps(v3, h3);
        l0 = _mm256_min_ps(v0, l0);
        l1 = _mm256_min_ps(v1, l1);
        l2 = _mm256_min_ps(v2, l2);
        l3 = _mm256_min_ps(v3, l3);
        u = _mm256_or_ps(u, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),
                                         _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
    }
    hi[0] = h0, hi[1] = h1, hi[2] = h2, hi[3] = h3;
    lo[0] = l0, lo[1] = l1, lo[2] = l2, lo[3] = l3;
    *nan = u;
}

/* Statistics of 8 groups of gk (% 8 == 0) at x, as hq_stats_isa; returns
 * nonzero when one of them holds a NaN or an Inf. */
HQ_AVX2 static int stats8(const float *x, int64_t gk, __m256 *mx, __m256 *mn)
{
    __m256 hi[8], lo[8], nan = _mm256_setzero_ps();
    stats4(x, gk, hi, lo, &nan);
    stats4(x + 4 * gk, gk, hi + 4, lo + 4, &nan);
    *mx = reduce8(hi, 1);
    *mn = reduce8(lo, 0);
    __m256 inf = _mm256_set1_ps(__builtin_inff());
    __m256 odd = _mm256_or_ps(_mm256_cmp_ps(*mx, inf, _CMP_EQ_OQ),
                              _mm256_cmp_ps(*mn, _mm256_sub_ps(_mm256_setzero_ps(), inf),
                                            _CMP_EQ_OQ));
    return _mm256_movemask_ps(_mm256_or_ps(nan, odd));
}

/* f32((double)a / d) lane by lane. */
HQ_AVX2 static __m256 div_f64(__m256 a, double d)
{
    __m256d vd = _mm256_set1_pd(d);
    __m128 lo = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), vd));
    __m128 hi = _mm256_cvtpd_ps(_mm256_div_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)), vd));
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

/* hq_int_sym_scale lane by lane. */
HQ_AVX2 static __m256 sym_scale8(const hq_ctx *c, __m256 mx, __m256 mn)
{
    __m256 sign = _mm256_set1_ps(-0.0f), amn = _mm256_andnot_ps(sign, mn);
    __m256 amax = _mm256_max_ps(mx, amn), amin = _mm256_min_ps(mx, amn);
    int one_bit = c->bits == 1;
    __m256 s = _mm256_max_ps(div_f64(amax, c->dmax + (one_bit ? 1.499 : 1.0)),
                             div_f64(amin, c->dmax + (one_bit ? 0.499 : 0.0)));
    return _mm256_xor_ps(s, _mm256_and_ps(sign, _mm256_cmp_ps(mx, amn, _CMP_GT_OQ)));
}

/* float32 value of a stored 16-bit scale's bits (the low half of each lane). */
HQ_AVX2 static __m256 f16_value(__m256i b)
{
    __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    return _mm256_cvtph_ps(p);
}

/* hc_f32_to_bf16 for lanes that are not NaN (those leave the chain). */
HQ_AVX2 static __m256i bf16_bits(__m256 v)
{
    __m256i u = _mm256_castps_si256(v), one = _mm256_set1_epi32(1);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    return _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF),
                                                                   lsb)), 16);
}

/* encode_scale8 (hc_quant_group.c) lane by lane for |v| below the format's
 * largest value; clears *keep's other lanes (the codec's cases). */
HQ_AVX2 static __m256i scale8_bits(const hq_ctx *c, __m256 v, int *keep)
{
    __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
    *keep &= _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(c->slimit), _CMP_LT_OQ));
    int M = c->sman;
    __m256 t = _mm256_mul_ps(a, _mm256_set1_ps(c->ssub)), big = _mm256_set1_ps(0x1p23f);
    __m256i ms = _mm256_cvttps_epi32(_mm256_sub_ps(_mm256_add_ps(t, big), big)); /* RNE */
    __m256i u = _mm256_castps_si256(a), one = _mm256_set1_epi32(1);
    __m128i sh = _mm_cvtsi32_si128(23 - M);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32((1 << (22 - M)) - 1),
                                                     _mm256_and_si256(_mm256_srl_epi32(u, sh), one)));
    __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(r, 23), _mm256_set1_epi32(127 + c->semin - 1));
    __m256i mn = _mm256_or_si256(_mm256_sll_epi32(e, _mm_cvtsi32_si128(M)),
                                 _mm256_and_si256(_mm256_srl_epi32(r, sh),
                                                  _mm256_set1_epi32((1 << M) - 1)));
    __m256 sub = _mm256_cmp_ps(a, _mm256_set1_ps(c->snorm), _CMP_LT_OQ);
    __m256i m = _mm256_blendv_epi8(mn, ms, _mm256_castps_si256(sub));
    __m256i sg = _mm256_and_si256(_mm256_srai_epi32(_mm256_castps_si256(v), 31),
                                  _mm256_set1_epi32((int)c->ssign));
    return _mm256_or_si256(m, sg);
}

/* Stored scale of the 8 scales *s into bits / dec (decoded, float32);
 * returns the lanes that stay in the chain. e8m0 replaces *s by its rounded
 * value, as e8m0_scale does. */
HQ_AVX2 static int store8(const hq_ctx *c, const hq_s2 *s2, __m256 *s, __m256i *bits,
                          __m256 *dec)
{
    int keep = 0xFF;
    if (c->e8m0) {
        __m256i e = _mm256_srli_epi32(_mm256_and_si256(
            _mm256_add_epi32(_mm256_castps_si256(*s), _mm256_set1_epi32(0x007FFFFF)),
            _mm256_set1_epi32(0x7F800000)), 23);
        __m256i odd = _mm256_or_si256(_mm256_cmpeq_epi32(e, _mm256_setzero_si256()),
                                      _mm256_cmpeq_epi32(e, _mm256_set1_epi32(0xFF)));
        keep &= ~_mm256_movemask_ps(_mm256_castsi256_ps(odd)); /* 2^-127 and NaN: portable */
        *bits = e;
        *dec = *s = _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
        return keep;
    }
    __m256 v = _mm256_div_ps(*s, _mm256_set1_ps(s2->div));
    keep &= _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_ORD_Q));
    if (c->d.scale_format == HC_FMT_F16) {
        *bits = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        *dec = f16_value(*bits);
    } else if (c->d.scale_format == HC_FMT_BF16) {
        *bits = bf16_bits(v);
        *dec = _mm256_castsi256_ps(_mm256_slli_epi32(*bits, 16));
    } else if (c->scale8) { /* decoded by the table: its values are float32 values */
        uint32_t b[8];
        float d[8];
        *bits = scale8_bits(c, v, &keep);
        _mm256_storeu_si256((__m256i *)b, *bits);
        for (int l = 0; l < 8; l++) d[l] = (float)c->sdec[b[l] & 0xFF];
        *dec = _mm256_loadu_ps(d);
    } else { /* HC_FMT_F32 */
        *bits = _mm256_castps_si256(v);
        *dec = v;
    }
    return keep;
}

/* Lanes whose step dec * mul (double) is at most lim: finite, and no code's
 * value can overflow float32 (fix_overflow has nothing to do). */
HQ_AVX2 static int step_ok(__m256 dec, double mul, double lim)
{
    __m256d m = _mm256_set1_pd(mul), l = _mm256_set1_pd(lim), sg = _mm256_set1_pd(-0.0);
    __m256d a = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(dec)), m);
    __m256d b = _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(dec, 1)), m);
    return _mm256_movemask_pd(_mm256_cmp_pd(_mm256_andnot_pd(sg, a), l, _CMP_LE_OQ)) |
           _mm256_movemask_pd(_mm256_cmp_pd(_mm256_andnot_pd(sg, b), l, _CMP_LE_OQ)) << 4;
}

/* 8 groups' parameters as a struct of arrays. */
typedef struct {
    float s[8], mn_eff[8], dec[8], zp_val[8];
    uint32_t bits[8];
    int32_t zq[8];
    uint16_t zf[8];
} chain8;

/* hq_zp_params lane by lane from the scales s the codes use. */
HQ_AVX2 static void zp8(const hq_ctx *c, __m256 s, __m256 mn, chain8 *o)
{
    __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 zf = _mm256_div_ps(_mm256_xor_ps(mn, sign), s);
    if (c->d.zero_point == HC_ZP_INT) {
        __m256 q = _mm256_round_ps(zf, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm256_min_ps(_mm256_max_ps(q, _mm256_set1_ps((float)c->qlo)),
                          _mm256_set1_ps((float)c->qhi));
        _mm256_storeu_si256((__m256i *)o->zq, _mm256_cvttps_epi32(q));
        _mm256_storeu_ps(o->zp_val, q);
        _mm256_storeu_ps(o->mn_eff, _mm256_mul_ps(q, _mm256_xor_ps(s, sign)));
        return;
    }
    __m256i b;
    __m256 dec;
    if (c->d.scale_format == HC_FMT_F16) {
        b = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(zf, _MM_FROUND_TO_NEAREST_INT));
        dec = f16_value(b);
    } else {
        b = bf16_bits(zf);
        dec = _mm256_castsi256_ps(_mm256_slli_epi32(b, 16));
    }
    __m128i p = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storeu_si128((__m128i *)o->zf, p);
    _mm256_storeu_ps(o->zp_val, dec);
    _mm256_storeu_ps(o->mn_eff, mn);
}

/* Raw scales of 8 groups (hq_raw_scale); clears *keep's lanes whose integer
 * zero-point range overflows (hq_int_zp_scale then takes it in double). */
HQ_AVX2 static __m256 raw8(const hq_ctx *c, __m256 mx, __m256 mn, int *keep)
{
    if (c->is_float)
        return _mm256_div_ps(_mm256_max_ps(mx, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), mn)),
                             _mm256_set1_ps((float)c->dmax));
    if (c->d.zero_point == HC_ZP_NONE) return sym_scale8(c, mx, mn);
    __m256 range = _mm256_sub_ps(mx, mn);
    __m256 inf = _mm256_set1_ps(__builtin_inff());
    *keep &= ~_mm256_movemask_ps(_mm256_cmp_ps(range, inf, _CMP_EQ_OQ));
    return _mm256_div_ps(range, _mm256_set1_ps((float)(2.0 * c->dmax + 1.0)));
}

/* The 8 groups at x: parameters into g[0..8), codes; returns nonzero when
 * one of them is not finite (nothing else is then meaningful). raw: NULL, or
 * their raw8 scales of a pass before (raw_row_avx2: float formats without
 * zero point keep every lane there, and their chain needs nothing else of
 * the statistics). */
HQ_AVX2 static int chain8_run(const hq_ctx *c, const float *x, int64_t gk, const hq_s2 *s2,
                              double lim, const float *raw, hq_group *g, uint8_t *codes)
{
    __m256 mx, mn = _mm256_setzero_ps(), dec, s;
    __m256i bits;
    int keep = 0xFF;
    if (raw) {
        s = _mm256_loadu_ps(raw);
    } else {
        if (stats8(x, gk, &mx, &mn)) return 1;
        s = raw8(c, mx, mn, &keep);
    }
    keep &= store8(c, s2, &s, &bits, &dec);
    double mul = c->e8m0 ? 1.0 : s2->mul;
    keep &= step_ok(dec, mul, lim);
    chain8 o;
    if (c->d.zero_point != HC_ZP_NONE) zp8(c, s, mn, &o);
    _mm256_storeu_ps(o.s, s);
    _mm256_storeu_ps(o.dec, dec);
    _mm256_storeu_si256((__m256i *)o.bits, bits);
    float inv[8];
    _mm256_storeu_ps(inv, _mm256_div_ps(_mm256_set1_ps(1.0f), s)); /* f32(1 / s) */
    int done = hq_codes8_isa(c, inv, x, gk, codes); /* lanes not kept: redone below */
    for (int j = 0; j < 8; j++) {
        const float *xj = x + j * gk;
        if (!(keep >> j & 1)) {
            hq_group_params(c, xj, gk, 1.0f, s2, &g[j]);
            hq_group_codes(c, &g[j], xj, gk, codes + j * gk);
            continue;
        }
        memset(&g[j], 0, sizeof g[j]);
        g[j].s = o.s[j];
        g[j].val = (double)o.dec[j] * mul;
        g[j].scale_bits = o.bits[j];
        if (c->d.zero_point == HC_ZP_INT) {
            g[j].zq = o.zq[j];
            g[j].zp_val = o.zp_val[j];
            g[j].mn_eff = o.mn_eff[j];
        } else if (c->d.zero_point == HC_ZP_FLOAT) {
            g[j].zf_bits = o.zf[j];
            g[j].zp_val = o.zp_val[j];
            g[j].mn_eff = o.mn_eff[j];
        }
        if (!(done >> j & 1)) hq_codes_isa(c, &g[j], xj, gk, codes + j * gk);
    }
    return 0;
}

/* Bound on |step| under which no code's value |lut - zp| * step overflows
 * float32 (with a factor 2 to spare): |lut| <= its largest entry, |zp| <=
 * 2^bits (an integer zero point is a code; a float one is -mn / s, at most
 * about 2^bits - 1 before its 16-bit rounding). */
static double step_limit(const hq_ctx *c)
{
    double top = c->lut_hi > -c->lut_lo ? c->lut_hi : -c->lut_lo;
    if (c->d.zero_point != HC_ZP_NONE) top += (double)(1u << c->bits);
    return 3.4028234663852886e38 / (2.0 * (top + 1.0));
}

/* The vector chain covers RTN groups of a multiple of 8 elements with float16,
 * bfloat16, float32, e8m0 or table-coded 8-bit float scales (c->scale8). */
static int chain_ok(const hq_ctx *c, int64_t gk)
{
    hc_format_id sf = c->d.scale_format;
    return gk % 8 == 0 && gk > 0 && !c->tensor &&
           (c->e8m0 || c->scale8 || sf == HC_FMT_F16 || sf == HC_FMT_BF16 || sf == HC_FMT_F32);
}

static int64_t rtn_row_avx2(const hq_ctx *c, const float *x, int64_t ng, int64_t gk,
                            const hq_s2 *s2, const float *raw, hq_group *g, uint8_t *codes)
{
    int64_t n = ng * gk, j = 0;
    double lim = step_limit(c);
    if (!c->is_float || c->d.zero_point != HC_ZP_NONE) raw = NULL;
    for (; j + 8 <= ng; j += 8)
        if (chain8_run(c, x + j * gk, gk, s2, lim, raw ? raw + j : NULL, g + j, codes + j * gk))
            return hq_first_nonfinite(c->isa, x, n);
    int64_t i = hq_first_nonfinite(c->isa, x + j * gk, n - j * gk) + j * gk;
    if (i < n) return i;
    for (; j < ng; j++) {
        hq_group_params(c, x + j * gk, gk, 1.0f, s2, &g[j]);
        hq_group_codes(c, &g[j], x + j * gk, gk, codes + j * gk);
    }
    return n;
}

/* raw_row_generic 8 groups at a time; a lane raw8 hands back (an integer
 * zero-point range that overflows float32) takes hq_raw_scale. */
HQ_AVX2 static int64_t raw_row_avx2(const hq_ctx *c, const float *x, int64_t ng, int64_t gk,
                                    float *raw)
{
    int64_t n = ng * gk, j = 0;
    for (; j + 8 <= ng; j += 8) {
        __m256 mx, mn;
        if (stats8(x + j * gk, gk, &mx, &mn)) return hq_first_nonfinite(c->isa, x, n);
        int keep = 0xFF;
        _mm256_storeu_ps(raw + j, raw8(c, mx, mn, &keep));
        float hi[8], lo[8];
        _mm256_storeu_ps(hi, mx);
        _mm256_storeu_ps(lo, mn);
        for (int l = 0; l < 8; l++)
            if (!(keep >> l & 1)) raw[j + l] = hq_raw_scale(c, hi[l], lo[l]);
    }
    int64_t i = raw_row_generic(c, x + j * gk, ng - j, gk, raw + j);
    return i < n - j * gk ? i + j * gk : n;
}
#endif

int64_t hq_raw_row(const hq_ctx *c, const float *x, int64_t ng, int64_t gk, float *raw)
{
#if HQ_HAVE_AVX2
    if (c->isa >= HQ_ISA_AVX2 && gk % 8 == 0 && gk > 0) return raw_row_avx2(c, x, ng, gk, raw);
#endif
    return raw_row_generic(c, x, ng, gk, raw);
}

int64_t hq_rtn_row(const hq_ctx *c, const float *x, int64_t ng, int64_t gk, const hq_s2 *s2,
                   const float *raw, hq_group *g, uint8_t *codes)
{
#if HQ_HAVE_AVX2
    if (c->isa >= HQ_ISA_AVX2 && chain_ok(c, gk)) return rtn_row_avx2(c, x, ng, gk, s2, raw, g, codes);
#else
    (void)raw;
#endif
    return rtn_row_generic(c, x, ng, gk, s2, g, codes);
}
