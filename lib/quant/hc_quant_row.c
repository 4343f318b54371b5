/* hc_quant_row.c - the quantizer's per-element loops (group statistics,
 * finiteness, codes) in two implementations chosen at run time: a portable
 * one (plain C, the rules as hc_quant_int.c / hc_quant_float.c state them)
 * and an AVX2 one for x86-64. Both perform the same float32 operations with
 * the same roundings, so their results are bit-identical
 * (tests/test_quant_isa.c compares them on every kind of target):
 *  - max/min: MAXPS(x, m) is exactly `x > m ? x : m`;
 *  - rne: ROUNDPS in round-to-nearest-even, which is what nearbyintf does in
 *    the default rounding mode;
 *  - the symmetric clamp in float: q + offset is exact where it matters
 *    (|q| < 2^23) and keeps its sign elsewhere, so clamping it to 0..2^b-1
 *    gives what the double sum gives;
 *  - the float re-bias f32(y / 2^k) (k <= 126) is one rounding of the exact
 *    y * 2^-k, which is what the float32 product y * 2^-k also is. */
#include <math.h>
#include <string.h>

#include "hc_quant_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HQ_HAVE_AVX2 1
#else
#define HQ_HAVE_AVX2 0
#endif

#if HQ_HAVE_AVX2
/* F16C (the scale chain's float16 conversions), which every AVX2 CPU has;
 * clang has no __builtin_cpu_supports("f16c"). */
static int have_f16c(void)
{
#if defined(__clang__)
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
#else
    return __builtin_cpu_supports("f16c");
#endif
}
#endif

int hq_isa_detect(void)
{
#if HQ_HAVE_AVX2
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && have_f16c())
        return __builtin_cpu_supports("avx512f") ? HQ_ISA_AVX512 : HQ_ISA_AVX2;
#endif
    return HQ_ISA_GENERIC;
}

/* ---- portable ---------------------------------------------------------- */

static void stats_generic(const float *x, int64_t n, float *mx, float *mn)
{
    float hi = 1e-30f, lo = -1e-30f;
    for (int64_t i = 0; i < n; i++) {
        hi = x[i] > hi ? x[i] : hi;
        lo = x[i] < lo ? x[i] : lo;
    }
    *mx = hi;
    *mn = lo;
}

static int64_t nonfinite_generic(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

/* ---- AVX2 -------------------------------------------------------------- */
#if HQ_HAVE_AVX2
#define HQ_AVX2 __attribute__((target("avx2")))

HQ_AVX2 static void stats_avx2(const float *x, int64_t n, float *mx, float *mn)
{
    __m256 hi = _mm256_set1_ps(1e-30f), lo = _mm256_set1_ps(-1e-30f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        hi = _mm256_max_ps(v, hi); /* v > hi ? v : hi */
        lo = _mm256_min_ps(v, lo); /* v < lo ? v : lo */
    }
    /* lanes folded pairwise: max and min are exact, so any order gives the same */
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
    __m128 l = _mm_min_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    l = _mm_min_ps(l, _mm_movehl_ps(l, l));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    l = _mm_min_ss(l, _mm_shuffle_ps(l, l, 1));
    stats_generic(x + i, n - i, mx, mn);
    float hv = _mm_cvtss_f32(h), lv = _mm_cvtss_f32(l);
    *mx = hv > *mx ? hv : *mx;
    *mn = lv < *mn ? lv : *mn;
}

HQ_AVX2 static int64_t nonfinite_avx2(const float *x, int64_t n)
{
    const __m256i exp = _mm256_set1_epi32(0x7F800000);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(x + i)), exp);
        if (!_mm256_testz_si256(_mm256_cmpeq_epi32(v, exp), _mm256_cmpeq_epi32(v, exp))) break;
    }
    return i + nonfinite_generic(x + i, n - i);
}

/* 8 clamped float codes (integral values 0..255) -> 8 bytes. */
HQ_AVX2 static void store8(__m256 q, uint8_t *out)
{
    __m256i v = _mm256_cvttps_epi32(q);
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((__m128i *)out, _mm_packus_epi16(w, w));
}

/* Clamp to lo..hi as clamp_code does: NaN and below -> lo, above -> hi. */
HQ_AVX2 static __m256 clamp8(__m256 v, __m256 lo, __m256 hi)
{
    return _mm256_min_ps(_mm256_max_ps(v, lo), hi);
}

#define HQ_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* Symmetric codes of ng groups of n (% 8 == 0) at x, group j's inverse scale
 * inv[j], its codes at codes + j * n. */
HQ_AVX2 static void sym_avx2(const hq_ctx *c, const float *inv, const float *x, int64_t ng,
                             int64_t n, uint8_t *codes)
{
    __m256 off = _mm256_set1_ps((float)c->offset);
    __m256 lo = _mm256_set1_ps((float)c->qlo), hi = _mm256_set1_ps((float)c->qhi);
    /* 32 codes a step, clamped before rounding to the integral bounds
     * qlo - offset .. qhi - offset (the same code: rounding is monotonic and
     * keeps integers; NaN -> the lower bound), the offset added to the
     * signed bytes (exact: they lie in -128..127, the codes in 0..255); the
     * packs interleave the 128-bit halves, one permute restores the order */
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    const __m256i boff = _mm256_set1_epi8((char)c->offset);
    __m256 slo = _mm256_sub_ps(lo, off), shi = _mm256_sub_ps(hi, off);
    for (int64_t j = 0; j < ng; j++, x += n, codes += n) {
        __m256 vinv = _mm256_set1_ps(inv[j]);
        int64_t i = 0;
        for (; i + 32 <= n; i += 32) {
#define HQ_SYM(p) _mm256_cvttps_epi32(_mm256_round_ps(clamp8(_mm256_mul_ps(_mm256_loadu_ps(p), \
        vinv), slo, shi), HQ_RNE))
            __m256i v0 = HQ_SYM(x + i), v1 = HQ_SYM(x + i + 8);
            __m256i v2 = HQ_SYM(x + i + 16), v3 = HQ_SYM(x + i + 24);
#undef HQ_SYM
            __m256i w = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
            w = _mm256_add_epi8(_mm256_permutevar8x32_epi32(w, order), boff);
            _mm256_storeu_si256((__m256i *)(codes + i), w);
        }
        for (; i + 8 <= n; i += 8) {
            __m256 q = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv), HQ_RNE);
            store8(clamp8(_mm256_add_ps(q, off), lo, hi), codes + i);
        }
    }
}

/* Zero-point codes; stops early (returns the position) at a block where
 * x - mn' overflows, which the portable loop then handles in double. */
HQ_AVX2 static int64_t zp_avx2(const hq_ctx *c, float inv, float mn_eff, const float *x,
                               int64_t n, uint8_t *codes)
{
    __m256 vinv = _mm256_set1_ps(inv), mn = _mm256_set1_ps(mn_eff);
    __m256 lo = _mm256_set1_ps((float)c->qlo), hi = _mm256_set1_ps((float)c->qhi);
    __m256 big = _mm256_set1_ps(3.40282347e38f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), mn);
        if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, d), big, _CMP_GT_OQ))) break;
        store8(clamp8(_mm256_round_ps(_mm256_mul_ps(d, vinv), HQ_RNE), lo, hi), codes + i);
    }
    return i;
}

/* The constants of float_code8 for one target format. */
typedef struct {
    __m256 sign, ymax, norm, sub;
    __m256i fm, sm, half, low, kexp;
    __m128i sh_sign, sh_code;
} fcode_k;

HQ_AVX2 static void fcode_init(const hc_format_info *f, int k, fcode_k *p)
{
    int m = f->man_bits, nb = f->bits;
    uint32_t norm = (uint32_t)(127 + k - 126) << 23, sub = (uint32_t)(127 + 149 - k) << 23;
    p->sign = _mm256_set1_ps(-0.0f);
    p->ymax = _mm256_set1_ps((float)f->max_value);
    p->norm = _mm256_castsi256_ps(_mm256_set1_epi32((int)norm)); /* 2^(k-126) */
    p->sub = _mm256_castsi256_ps(_mm256_set1_epi32((int)sub));   /* 2^(149-k) */
    p->fm = _mm256_set1_epi32((int)(((1u << (nb - 1)) - 1u) << (23 - m)));
    p->sm = _mm256_set1_epi32((int)0x80000000u);
    p->half = _mm256_set1_epi32(1 << (22 - m));
    p->low = _mm256_set1_epi32((1 << (23 - m)) - 1);
    p->kexp = _mm256_set1_epi32(k << 23);
    p->sh_sign = _mm_cvtsi32_si128(32 - nb);
    p->sh_code = _mm_cvtsi32_si128(23 - m);
}

/* hc_quant_float_code_humming on 8 finite values y = x * inv, without
 * computing in float32 subnormals (a microcode assist per element on some
 * CPUs: most of an NVFP4 run). Its t = f32(y * 2^-k) is formed as bits:
 * |y| >= 2^(k-126) gives a normal t, y's bits with k taken off the exponent
 * (exact); below, t is subnormal, its bits the integer RNE(|y| * 2^(149-k))
 * (the product exact, < 2^23, or 2^23: then t = 2^-126, the same bits). Then
 * the code as there: up when the bits cut off exceed half a code step (its
 * |t - rz| > |ru - t|, both exact), ties toward zero. */
HQ_AVX2 static __m256i float_code8(const fcode_k *p, __m256 y)
{
    __m256 over = _mm256_cmp_ps(_mm256_andnot_ps(p->sign, y), p->ymax, _CMP_GT_OQ);
    y = _mm256_blendv_ps(y, _mm256_or_ps(p->ymax, _mm256_and_ps(p->sign, y)), over);
    __m256 a = _mm256_andnot_ps(p->sign, y);
    __m256i tn = _mm256_sub_epi32(_mm256_castps_si256(a), p->kexp);
    __m256i ts = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(a, p->sub), HQ_RNE));
    __m256 isn = _mm256_cmp_ps(a, p->norm, _CMP_GE_OQ);
    __m256i u = _mm256_blendv_epi8(ts, tn, _mm256_castps_si256(isn));
    __m256i up = _mm256_cmpgt_epi32(_mm256_and_si256(u, p->low), p->half);
    __m256i rz = _mm256_andnot_si256(p->low, u);
    __m256i pick = _mm256_add_epi32(rz, _mm256_and_si256(up, _mm256_add_epi32(p->low,
                                                                               _mm256_set1_epi32(1))));
    return _mm256_or_si256(_mm256_srl_epi32(_mm256_and_si256(_mm256_castps_si256(y), p->sm),
                                            p->sh_sign),
                           _mm256_srl_epi32(_mm256_and_si256(pick, p->fm), p->sh_code));
}

/* Float-target codes of x[0..n) under the constants p, stopping (returns
 * the position) at a block with a NaN product, which the portable loop
 * handles. */
HQ_AVX2 static int64_t float_run(const fcode_k *p, float inv, const float *x, int64_t n,
                                 uint8_t *codes)
{
    __m256 vinv = _mm256_set1_ps(inv);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 y = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
        if (_mm256_movemask_ps(_mm256_cmp_ps(y, y, _CMP_UNORD_Q))) break; /* NaN: portable */
        __m256i v = float_code8(p, y);
        __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
        _mm_storel_epi64((__m128i *)(codes + i), _mm_packus_epi16(w, w));
    }
    return i;
}

/* float_code8 on 16 lanes (AVX-512F): the same operations, the blends as
 * masked moves. */
#define HQ_AVX512 __attribute__((target("avx2,avx512f")))

typedef struct {
    __m512i sign, ymax, norm, sub, fm, sm, half, low, step, kexp;
    __m128i sh_sign, sh_code;
} fcode16_k;

HQ_AVX512 static void fcode16_init(const fcode_k *p8, fcode16_k *p)
{
    p->sign = _mm512_broadcastd_epi32(_mm256_castsi256_si128(_mm256_castps_si256(p8->sign)));
    p->ymax = _mm512_broadcastd_epi32(_mm256_castsi256_si128(_mm256_castps_si256(p8->ymax)));
    p->norm = _mm512_broadcastd_epi32(_mm256_castsi256_si128(_mm256_castps_si256(p8->norm)));
    p->sub = _mm512_broadcastd_epi32(_mm256_castsi256_si128(_mm256_castps_si256(p8->sub)));
    p->fm = _mm512_broadcastd_epi32(_mm256_castsi256_si128(p8->fm));
    p->sm = _mm512_broadcastd_epi32(_mm256_castsi256_si128(p8->sm));
    p->half = _mm512_broadcastd_epi32(_mm256_castsi256_si128(p8->half));
    p->low = _mm512_broadcastd_epi32(_mm256_castsi256_si128(p8->low));
    p->step = _mm512_add_epi32(p->low, _mm512_set1_epi32(1));
    p->kexp = _mm512_broadcastd_epi32(_mm256_castsi256_si128(p8->kexp));
    p->sh_sign = p8->sh_sign;
    p->sh_code = p8->sh_code;
}

HQ_AVX512 static __m512i float_code16(const fcode16_k *p, __m512 y)
{
    const __m512i yi = _mm512_castps_si512(y);
    __m512i a = _mm512_andnot_si512(p->sign, yi);
    const __mmask16 over = _mm512_cmp_ps_mask(_mm512_castsi512_ps(a),
                                              _mm512_castsi512_ps(p->ymax), _CMP_GT_OQ);
    const __m512i yc = _mm512_mask_mov_epi32(yi, over,
                                             _mm512_or_si512(p->ymax, _mm512_and_si512(p->sign, yi)));
    a = _mm512_andnot_si512(p->sign, yc);
    const __m512 af = _mm512_castsi512_ps(a);
    const __m512i tn = _mm512_sub_epi32(a, p->kexp);
    const __m512i ts = _mm512_cvtps_epi32(_mm512_roundscale_ps(
        _mm512_mul_ps(af, _mm512_castsi512_ps(p->sub)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __mmask16 isn = _mm512_cmp_ps_mask(af, _mm512_castsi512_ps(p->norm), _CMP_GE_OQ);
    const __m512i u = _mm512_mask_mov_epi32(ts, isn, tn);
    const __mmask16 up = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, p->low), p->half);
    const __m512i rz = _mm512_andnot_si512(p->low, u);
    const __m512i pick = _mm512_mask_add_epi32(rz, up, rz, p->step);
    return _mm512_or_si512(_mm512_srl_epi32(_mm512_and_si512(yc, p->sm), p->sh_sign),
                           _mm512_srl_epi32(_mm512_and_si512(pick, p->fm), p->sh_code));
}

/* float_run 16 codes at a time, the rest (or from a block with a NaN
 * product on) by float_run. */
HQ_AVX512 static int64_t float_run16(const fcode_k *p8, const fcode16_k *p, float inv,
                                     const float *x, int64_t n, uint8_t *codes)
{
    const __m512 vinv = _mm512_set1_ps(inv);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 y = _mm512_mul_ps(_mm512_loadu_ps(x + i), vinv);
        if (_mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q)) break;
        _mm_storeu_si128((__m128i *)(codes + i), _mm512_cvtusepi32_epi8(float_code16(p, y)));
    }
    return i + float_run(p8, inv, x + i, n - i, codes + i);
}

/* The k of float_code8 for c's weight format; 0 where its exponent range is
 * not as float_code8 assumes (the portable loop then). */
static int float_k(const hq_ctx *c)
{
    int k = 128 - (1 << (c->wf->exp_bits - 1));
    return k > 126 || k < 24 || c->wf->bits > 8 ? 0 : k;
}

HQ_AVX2 static int64_t float_avx2(const hq_ctx *c, float inv, const float *x, int64_t n,
                                  uint8_t *codes)
{
    int k = float_k(c);
    if (!k) return 0;
    fcode_k p;
    fcode_init(c->wf, k, &p);
    if (c->isa >= HQ_ISA_AVX512) {
        fcode16_k p16;
        fcode16_init(&p, &p16);
        return float_run16(&p, &p16, inv, x, n, codes);
    }
    return float_run(&p, inv, x, n, codes);
}

/* float_avx2 over 8 groups of n with the constants set up once; returns the
 * groups done whole. */
HQ_AVX2 static int float8_avx2(const hq_ctx *c, const float *inv, const float *x, int64_t n,
                               uint8_t *codes)
{
    int k = float_k(c), done = 0;
    if (!k) return 0;
    fcode_k p;
    fcode_init(c->wf, k, &p);
    fcode16_k p16;
    if (c->isa >= HQ_ISA_AVX512) fcode16_init(&p, &p16);
    for (int j = 0; j < 8; j++)
        done |= ((c->isa >= HQ_ISA_AVX512 ? float_run16(&p, &p16, inv[j], x + j * n, n, codes + j * n)
                                           : float_run(&p, inv[j], x + j * n, n, codes + j * n)) == n)
                << j;
    return done;
}

/* Codes of the leading whole blocks of 8; returns how many were done. */
static int64_t codes_avx2(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                          uint8_t *codes)
{
    float inv = 1.0f / g->s;
    if (c->is_float) return float_avx2(c, inv, x, n, codes);
    if (c->d.zero_point == HC_ZP_NONE) {
        sym_avx2(c, &inv, x, 1, n & ~(int64_t)7, codes);
        return n & ~(int64_t)7;
    }
    return zp_avx2(c, inv, g->mn_eff, x, n, codes);
}
#endif

/* ---- dispatch ---------------------------------------------------------- */

void hq_stats_isa(int isa, const float *x, int64_t n, float *mx, float *mn)
{
#if HQ_HAVE_AVX2
    if (isa >= HQ_ISA_AVX2) {
        stats_avx2(x, n, mx, mn);
        return;
    }
#endif
    (void)isa;
    stats_generic(x, n, mx, mn);
}

int64_t hq_first_nonfinite(int isa, const float *x, int64_t n)
{
#if HQ_HAVE_AVX2
    if (isa >= HQ_ISA_AVX2) return nonfinite_avx2(x, n);
#endif
    (void)isa;
    return nonfinite_generic(x, n);
}

int hq_codes8_isa(const hq_ctx *c, const float *inv, const float *x, int64_t n, uint8_t *codes)
{
#if HQ_HAVE_AVX2
    if (c->isa >= HQ_ISA_AVX2 && n % 8 == 0 && c->is_float) return float8_avx2(c, inv, x, n, codes);
    if (c->isa >= HQ_ISA_AVX2 && n % 8 == 0 && c->d.zero_point == HC_ZP_NONE) {
        sym_avx2(c, inv, x, 8, n, codes);
        return 0xFF;
    }
#endif
    (void)c, (void)inv, (void)x, (void)n, (void)codes;
    return 0;
}

void hq_codes_isa(const hq_ctx *c, const hq_group *g, const float *x, int64_t n, uint8_t *codes)
{
    int64_t done = 0;
#if HQ_HAVE_AVX2
    if (c->isa >= HQ_ISA_AVX2) done = codes_avx2(c, g, x, n, codes);
#endif
    if (done == n) return;
    if (c->is_float) hq_float_codes_humming(c, g, x + done, n - done, codes + done);
    else hq_int_codes_humming(c, g, x + done, n - done, codes + done);
}
