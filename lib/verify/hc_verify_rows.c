/* hc_verify_rows.c - the weight checks of one row in one pass
 * (docs/verification.md, "Weight sums"): lossless mismatches, non-finite
 * values, the error sums, the step violations against the group amax and
 * the error histogram.
 *
 * Sums run in 8 double lanes (element k of the row in lane k mod 8), added
 * in a fixed tree at the end of the row. The AVX2 form and the portable form
 * perform the same double operations per lane in the same order (no
 * contraction: -ffp-contract=off), so they give the same bits
 * (tests/test_verify_rows.c); counts are exact in both. */
#include <math.h>
#include <string.h>

#include "hc_verify.h"

enum { B = HC_VERIFY_HIST_BINS };

typedef hc_verify_row_state lanes;

static double tree(const double *l)
{
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* One element into lane j; lim is the step limit (violations counted when
 * count_viol). */
static void elem(lanes *L, int j, float gf, float rf, double lim, int count_viol,
                 const double *thr)
{
    const double g = gf, r = rf, d = g - r, ad = fabs(d);
    const int fin = fabs(g) < INFINITY;
    L->mism += !(gf == rf);
    L->viol += count_viol && !(ad <= lim);
    L->zero += ad == 0;
    L->valid += ad > 0 && ad < INFINITY;
    L->inf += ad == INFINITY;
    for (int t = 2; t < B; t++) L->reach[t] += ad >= thr[t];
    L->bad += !fin;
    L->n++;
    L->err2[j] += fin ? d * d : 0.0;
    L->ref2[j] += fin ? r * r : 0.0;
    L->got2[j] += fin ? g * g : 0.0;
    L->dot[j] += fin ? g * r : 0.0;
    const double m = fin ? ad : 0.0;
    L->maxe[j] = m > L->maxe[j] ? m : L->maxe[j];
}

static float amax_generic(const float *r, int64_t n)
{
    float a = 0;
    for (int64_t i = 0; i < n; i++) {
        const float v = fabsf(r[i]);
        a = v > a ? v : a; /* NaN skipped */
    }
    return a;
}

/* Elements [k0, k1) of the row; k0 and k1 are row indices (lane k mod 8). */
typedef void (*span_fn)(lanes *L, const float *got, const float *ref, int64_t k0, int64_t k1,
                        double lim, int count_viol, const double *thr);
typedef float (*amax_fn)(const float *r, int64_t n);

static void span_generic(lanes *L, const float *got, const float *ref, int64_t k0, int64_t k1,
                         double lim, int count_viol, const double *thr)
{
    for (int64_t k = k0; k < k1; k++) elem(L, (int)(k % 8), got[k], ref[k], lim, count_viol, thr);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define HC_AVX2 __attribute__((target("avx2")))

HC_AVX2 static float amax_avx2(const float *r, int64_t n)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) /* max_ps keeps a when the value is NaN, as amax_generic */
        a = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(r + i)), a);
    float l[8];
    _mm256_storeu_ps(l, a);
    float m = amax_generic(l, 8), t = amax_generic(r + i, n - i);
    return t > m ? t : m;
}

/* elem's state in registers: the double sums of lanes 0-3 (h = 0) and 4-7
 * (h = 1), the counts in 64-bit lanes. */
typedef struct {
    __m256d err2[2], ref2[2], got2[2], dot[2], maxe[2];
    __m256i viol, zero, valid, inf, reach[B];
    __m256i zf;   /* zeros of the finite blocks (vfinite, vequal) */
    int64_t fast; /* elements of the finite blocks */
} vlanes;

/* elem for four elements into half h of V (inlined: V stays in registers). */
HC_AVX2 static inline __attribute__((always_inline)) void
vhalf(vlanes *V, int h, __m128 gf, __m128 rf, __m256d lim, int count_viol, const __m256d *thr)
{
    const __m256d sign = _mm256_set1_pd(-0.0), inf = _mm256_set1_pd(INFINITY),
                  zero = _mm256_setzero_pd();
    const __m256d g = _mm256_cvtps_pd(gf), r = _mm256_cvtps_pd(rf), d = _mm256_sub_pd(g, r);
    const __m256d ad = _mm256_andnot_pd(sign, d);
    const __m256d fin = _mm256_cmp_pd(_mm256_andnot_pd(sign, g), inf, _CMP_LT_OQ);
    if (count_viol)
        V->viol = _mm256_sub_epi64(V->viol, _mm256_castpd_si256(_mm256_cmp_pd(ad, lim, _CMP_NLE_UQ)));
    V->zero = _mm256_sub_epi64(V->zero, _mm256_castpd_si256(_mm256_cmp_pd(ad, zero, _CMP_EQ_OQ)));
    V->valid = _mm256_sub_epi64(V->valid, _mm256_castpd_si256(_mm256_and_pd(
        _mm256_cmp_pd(ad, zero, _CMP_GT_OQ), _mm256_cmp_pd(ad, inf, _CMP_LT_OQ))));
    V->inf = _mm256_sub_epi64(V->inf, _mm256_castpd_si256(_mm256_cmp_pd(ad, inf, _CMP_EQ_OQ)));
#pragma GCC unroll 8
    for (int t = 2; t < B; t++)
        V->reach[t] = _mm256_sub_epi64(V->reach[t],
                                       _mm256_castpd_si256(_mm256_cmp_pd(ad, thr[t], _CMP_GE_OQ)));
    V->err2[h] = _mm256_add_pd(V->err2[h], _mm256_and_pd(fin, _mm256_mul_pd(d, d)));
    V->ref2[h] = _mm256_add_pd(V->ref2[h], _mm256_and_pd(fin, _mm256_mul_pd(r, r)));
    V->got2[h] = _mm256_add_pd(V->got2[h], _mm256_and_pd(fin, _mm256_mul_pd(g, g)));
    V->dot[h] = _mm256_add_pd(V->dot[h], _mm256_and_pd(fin, _mm256_mul_pd(g, r)));
    /* max_pd returns its second operand when the first is NaN, as elem */
    V->maxe[h] = _mm256_max_pd(_mm256_and_pd(fin, ad), V->maxe[h]);
}

/* vhalf for four elements of a block whose got and ref are all finite: the
 * same sums (fin all ones: the plain products and max), the counts that
 * follow from the zeros (a non-zero d is valid and a mismatch: g != r
 * exactly when d != 0) kept apart in zf / fast, as row_avx512's zblock_finite. */
HC_AVX2 static inline __attribute__((always_inline)) void
vfinite(vlanes *V, int h, __m128 gf, __m128 rf, __m256d lim, int count_viol, const __m256d *thr)
{
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m256d g = _mm256_cvtps_pd(gf), r = _mm256_cvtps_pd(rf), d = _mm256_sub_pd(g, r);
    const __m256d ad = _mm256_andnot_pd(sign, d);
    if (count_viol)
        V->viol = _mm256_sub_epi64(V->viol, _mm256_castpd_si256(_mm256_cmp_pd(ad, lim, _CMP_NLE_UQ)));
    V->zf = _mm256_sub_epi64(V->zf, _mm256_castpd_si256(
                                        _mm256_cmp_pd(ad, _mm256_setzero_pd(), _CMP_EQ_OQ)));
#pragma GCC unroll 8
    for (int t = 2; t < B; t++)
        V->reach[t] = _mm256_sub_epi64(V->reach[t],
                                       _mm256_castpd_si256(_mm256_cmp_pd(ad, thr[t], _CMP_GE_OQ)));
    V->err2[h] = _mm256_add_pd(V->err2[h], _mm256_mul_pd(d, d));
    V->ref2[h] = _mm256_add_pd(V->ref2[h], _mm256_mul_pd(r, r));
    V->got2[h] = _mm256_add_pd(V->got2[h], _mm256_mul_pd(g, g));
    V->dot[h] = _mm256_add_pd(V->dot[h], _mm256_mul_pd(g, r));
    V->maxe[h] = _mm256_max_pd(ad, V->maxe[h]);
    V->fast += 4;
}

/* vfinite for four finite elements whose got equals ref (a lossless layer's
 * usual block): d = +-0 leaves err2 and maxe as they are, got2 and dot take
 * r * r (g * g and g * r are the same products, or -0 where the sum takes
 * them as +0), no reach, every lane a zero. */
HC_AVX2 static inline __attribute__((always_inline)) void
vequal(vlanes *V, int h, __m128 rf, __m256d lim, int count_viol)
{
    const __m256d zero = _mm256_setzero_pd(), r = _mm256_cvtps_pd(rf), p = _mm256_mul_pd(r, r);
    if (count_viol) /* |d| = 0 against the limit */
        V->viol = _mm256_sub_epi64(V->viol, _mm256_castpd_si256(_mm256_cmp_pd(zero, lim, _CMP_NLE_UQ)));
    V->zf = _mm256_add_epi64(V->zf, _mm256_set1_epi64x(1));
    V->ref2[h] = _mm256_add_pd(V->ref2[h], p);
    V->got2[h] = _mm256_add_pd(V->got2[h], p);
    V->dot[h] = _mm256_add_pd(V->dot[h], p);
    V->fast += 4;
}

HC_AVX2 static int64_t hsum64(__m256i v)
{
    int64_t l[4];
    _mm256_storeu_si256((__m256i *)l, v);
    return l[0] + l[1] + l[2] + l[3];
}

/* L's double lanes into V and back (the lanes carry over between spans). */
HC_AVX2 static void vload(vlanes *V, const lanes *L)
{
    memset(V, 0, sizeof *V);
    for (int h = 0; h < 2; h++) {
        V->err2[h] = _mm256_loadu_pd(L->err2 + 4 * h);
        V->ref2[h] = _mm256_loadu_pd(L->ref2 + 4 * h);
        V->got2[h] = _mm256_loadu_pd(L->got2 + 4 * h);
        V->dot[h] = _mm256_loadu_pd(L->dot + 4 * h);
        V->maxe[h] = _mm256_loadu_pd(L->maxe + 4 * h);
    }
}

HC_AVX2 static void vstore(const vlanes *V, lanes *L)
{
    for (int h = 0; h < 2; h++) {
        _mm256_storeu_pd(L->err2 + 4 * h, V->err2[h]);
        _mm256_storeu_pd(L->ref2 + 4 * h, V->ref2[h]);
        _mm256_storeu_pd(L->got2 + 4 * h, V->got2[h]);
        _mm256_storeu_pd(L->dot + 4 * h, V->dot[h]);
        _mm256_storeu_pd(L->maxe + 4 * h, V->maxe[h]);
    }
    const int64_t zf = hsum64(V->zf);
    L->viol += hsum64(V->viol);
    L->zero += hsum64(V->zero) + zf;
    L->valid += hsum64(V->valid) + V->fast - zf;
    L->mism += V->fast - zf;
    L->inf += hsum64(V->inf);
    for (int t = 2; t < B; t++) L->reach[t] += hsum64(V->reach[t]);
}

/* Blocks of 8 of [k0, k1) (multiples of 8) into V. */
HC_AVX2 static inline __attribute__((always_inline)) void
blocks_avx2(vlanes *V, lanes *L, const float *got, const float *ref, int64_t k0, int64_t k1,
            double lim, int count_viol, const __m256d *th)
{
    const __m256d vl = _mm256_set1_pd(lim);
    int64_t mism = 0, bad = 0;
    const __m256 sign = _mm256_set1_ps(-0.0f), inf = _mm256_set1_ps(INFINITY);
    for (int64_t k = k0; k < k1; k += 8) {
        const __m256 g = _mm256_loadu_ps(got + k), r = _mm256_loadu_ps(ref + k);
        const __m256 gnf = _mm256_cmp_ps(_mm256_andnot_ps(sign, g), inf, _CMP_NLT_UQ);
        const __m256 rnf = _mm256_cmp_ps(_mm256_andnot_ps(sign, r), inf, _CMP_NLT_UQ);
        if (_mm256_testz_ps(_mm256_or_ps(gnf, rnf), _mm256_or_ps(gnf, rnf))) { /* all finite */
            if (_mm256_movemask_ps(_mm256_cmp_ps(g, r, _CMP_NEQ_OQ)) == 0) {
                vequal(V, 0, _mm256_castps256_ps128(r), vl, count_viol);
                vequal(V, 1, _mm256_extractf128_ps(r, 1), vl, count_viol);
            } else {
                vfinite(V, 0, _mm256_castps256_ps128(g), _mm256_castps256_ps128(r), vl,
                        count_viol, th);
                vfinite(V, 1, _mm256_extractf128_ps(g, 1), _mm256_extractf128_ps(r, 1), vl,
                        count_viol, th);
            }
            continue;
        }
        const int ne = _mm256_movemask_ps(_mm256_cmp_ps(g, r, _CMP_NEQ_UQ));
        const int nf = _mm256_movemask_ps(gnf);
        mism += __builtin_popcount((unsigned)ne);
        bad += __builtin_popcount((unsigned)nf);
        vhalf(V, 0, _mm256_castps256_ps128(g), _mm256_castps256_ps128(r), vl, count_viol, th);
        vhalf(V, 1, _mm256_extractf128_ps(g, 1), _mm256_extractf128_ps(r, 1), vl, count_viol, th);
    }
    L->n += k1 - k0;
    L->mism += mism;
    L->bad += bad;
}

/* Whole blocks of 8 from a multiple of 8; the ends element by element. */
HC_AVX2 static void span_avx2(lanes *L, const float *got, const float *ref, int64_t k0, int64_t k1,
                              double lim, int count_viol, const double *thr)
{
    int64_t a = (k0 + 7) / 8 * 8, z = k1 / 8 * 8;
    if (z - a < 8) {
        span_generic(L, got, ref, k0, k1, lim, count_viol, thr);
        return;
    }
    span_generic(L, got, ref, k0, a, lim, count_viol, thr);
    vlanes V;
    __m256d th[B];
    vload(&V, L);
    for (int t = 2; t < B; t++) th[t] = _mm256_set1_pd(thr[t]);
    blocks_avx2(&V, L, got, ref, a, z, lim, count_viol, th);
    vstore(&V, L);
    span_generic(L, got, ref, z, k1, lim, count_viol, thr);
}

/* The K % 8 tail of a row after its blocks of 8: the last group's rest (its
 * amax and n_g amax_g^2 taken with the blocks, unless the tail is a group of
 * its own) element by element. */
HC_AVX2 static void row_tail(lanes *L, const float *got, const float *ref, int64_t K, int64_t gk,
                             double limit, const double *thr)
{
    const int64_t K8 = K / 8 * 8, g0 = gk > 0 ? K8 / gk * gk : 0;
    if (K8 == K) return;
    double lim = 0;
    if (gk > 0) {
        const double a = amax_avx2(ref + g0, K - g0);
        if (g0 == K8) L->amax_energy += (double)(K - g0) * a * a;
        lim = limit * a;
    }
    span_generic(L, got, ref, K8, K, lim, gk > 0, thr);
}

/* A whole row whose groups (gk > 0) hold whole blocks of 8, or without
 * groups (gk == 0): the lanes stay in registers across the groups; the
 * K % 8 tail element by element; the groups' n_g amax_g^2 added to
 * L->amax_energy in order. */
HC_AVX2 static void row_avx2(lanes *L, const float *got, const float *ref, int64_t K,
                             int64_t gk, double limit, const double *thr)
{
    vlanes V;
    __m256d th[B];
    vload(&V, L);
    for (int t = 2; t < B; t++) th[t] = _mm256_set1_pd(thr[t]);
    const int64_t step = gk > 0 ? gk : K / 8 * 8, K8 = K / 8 * 8;
    double ae = L->amax_energy;
    for (int64_t k0 = 0; k0 < K8 && step > 0; k0 += step) {
        const int64_t k1 = k0 + step < K8 ? k0 + step : K8;
        double lim = 0;
        if (gk > 0) {
            const double a = amax_avx2(ref + k0, (k0 + gk < K ? k0 + gk : K) - k0);
            ae += (double)((k0 + gk < K ? k0 + gk : K) - k0) * a * a;
            lim = limit * a;
        }
        blocks_avx2(&V, L, got, ref, k0, k1, lim, gk > 0, th);
    }
    vstore(&V, L);
    L->amax_energy = ae;
    row_tail(L, got, ref, K, gk, limit, thr);
}

/* Sums of squares added to the 8 lanes l over whole blocks of 8; returns
 * the elements done. */
HC_AVX2 static int64_t energy_avx2(const float *ref, int64_t K, double *l)
{
    __m256d lo = _mm256_loadu_pd(l), hi = _mm256_loadu_pd(l + 4);
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(ref + k)),
                      b = _mm256_cvtps_pd(_mm_loadu_ps(ref + k + 4));
        lo = _mm256_add_pd(lo, _mm256_mul_pd(a, a));
        hi = _mm256_add_pd(hi, _mm256_mul_pd(b, b));
    }
    _mm256_storeu_pd(l, lo);
    _mm256_storeu_pd(l + 4, hi);
    return k;
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
/* The row of row_avx2 with AVX-512: the eight lanes in one register per
 * sum, 32 registers (no spills), masks for the counts; the same double
 * operations per lane (maskz_mul: the product or +0, as and(fin, ...)).
 * A block of 8 whose got and ref are all finite takes a shorter form: the
 * same sums (every mask all ones: the plain products and max), the counts
 * that then follow from the zeros (no NaN / Inf d: a non-zero d is valid
 * and a mismatch, g != r exactly when d != 0) kept apart in zf / fast. */
#define HC_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx2")))

typedef struct {
    __m512d err2, ref2, got2, dot, maxe;
    __m512i viol, zero, valid, inf, reach[B];
    __m512i zf;     /* zeros of the finite blocks */
    int64_t fast;   /* elements of the finite blocks */
} zlanes;

/* One block of 8 at got + k, ref + k, any values. */
HC_AVX512 static inline __attribute__((always_inline)) void
zblock_any(zlanes *V, __m256 gf, __m256 rf, __m512d vl, int count_viol, const __m512d *th,
           int64_t *mism, int64_t *bad)
{
    const __m512d inf = _mm512_set1_pd(INFINITY), zero = _mm512_setzero_pd();
    const __m512i one = _mm512_set1_epi64(1);
    *mism += __builtin_popcount(_mm256_cmp_ps_mask(gf, rf, _CMP_NEQ_UQ));
    const __m512d g = _mm512_cvtps_pd(gf), r = _mm512_cvtps_pd(rf), d = _mm512_sub_pd(g, r);
    const __m512d ad = _mm512_abs_pd(d);
    const __mmask8 fin = _mm512_cmp_pd_mask(_mm512_abs_pd(g), inf, _CMP_LT_OQ);
    *bad += 8 - __builtin_popcount(fin);
    if (count_viol)
        V->viol = _mm512_mask_add_epi64(V->viol, _mm512_cmp_pd_mask(ad, vl, _CMP_NLE_UQ),
                                        V->viol, one);
    V->zero = _mm512_mask_add_epi64(V->zero, _mm512_cmp_pd_mask(ad, zero, _CMP_EQ_OQ),
                                    V->zero, one);
    V->valid = _mm512_mask_add_epi64(
        V->valid,
        _mm512_cmp_pd_mask(ad, zero, _CMP_GT_OQ) & _mm512_cmp_pd_mask(ad, inf, _CMP_LT_OQ),
        V->valid, one);
    V->inf = _mm512_mask_add_epi64(V->inf, _mm512_cmp_pd_mask(ad, inf, _CMP_EQ_OQ), V->inf, one);
#pragma GCC unroll 8
    for (int t = 2; t < B; t++)
        V->reach[t] = _mm512_mask_add_epi64(
            V->reach[t], _mm512_cmp_pd_mask(ad, th[t], _CMP_GE_OQ), V->reach[t], one);
    V->err2 = _mm512_add_pd(V->err2, _mm512_maskz_mul_pd(fin, d, d));
    V->ref2 = _mm512_add_pd(V->ref2, _mm512_maskz_mul_pd(fin, r, r));
    V->got2 = _mm512_add_pd(V->got2, _mm512_maskz_mul_pd(fin, g, g));
    V->dot = _mm512_add_pd(V->dot, _mm512_maskz_mul_pd(fin, g, r));
    V->maxe = _mm512_max_pd(_mm512_maskz_mov_pd(fin, ad), V->maxe);
}

/* One block of 8 whose got and ref are finite: zblock_any's sums and
 * counts (zf and fast stand for zero, valid and mism; bad and inf 0). */
HC_AVX512 static inline __attribute__((always_inline)) void
zblock_finite(zlanes *V, __m256 gf, __m256 rf, __m512d vl, int count_viol, const __m512d *th)
{
    const __m512i one = _mm512_set1_epi64(1);
    const __m512d g = _mm512_cvtps_pd(gf), r = _mm512_cvtps_pd(rf), d = _mm512_sub_pd(g, r);
    const __m512d ad = _mm512_abs_pd(d);
    if (count_viol)
        V->viol = _mm512_mask_add_epi64(V->viol, _mm512_cmp_pd_mask(ad, vl, _CMP_NLE_UQ),
                                        V->viol, one);
    V->zf = _mm512_mask_add_epi64(V->zf, _mm512_cmp_pd_mask(ad, _mm512_setzero_pd(), _CMP_EQ_OQ),
                                  V->zf, one);
#pragma GCC unroll 8
    for (int t = 2; t < B; t++)
        V->reach[t] = _mm512_mask_add_epi64(
            V->reach[t], _mm512_cmp_pd_mask(ad, th[t], _CMP_GE_OQ), V->reach[t], one);
    V->err2 = _mm512_add_pd(V->err2, _mm512_mul_pd(d, d));
    V->ref2 = _mm512_add_pd(V->ref2, _mm512_mul_pd(r, r));
    V->got2 = _mm512_add_pd(V->got2, _mm512_mul_pd(g, g));
    V->dot = _mm512_add_pd(V->dot, _mm512_mul_pd(g, r));
    V->maxe = _mm512_max_pd(ad, V->maxe);
    V->fast += 8;
}

/* One finite block whose got equals ref element by element (a lossless
 * layer's usual block): zblock_finite's sums with d = +-0 (err2 and maxe
 * unchanged by +0; got2 and dot take r * r: g * g and g * r are the same
 * products, or -0 where the sum takes them as +0), every lane a zero. */
HC_AVX512 static inline __attribute__((always_inline)) void
zblock_equal(zlanes *V, __m256 rf, __m512d vl, int count_viol)
{
    const __m512i one = _mm512_set1_epi64(1);
    const __m512d r = _mm512_cvtps_pd(rf), p = _mm512_mul_pd(r, r);
    if (count_viol) /* |d| = 0 against the limit */
        V->viol = _mm512_mask_add_epi64(
            V->viol, _mm512_cmp_pd_mask(_mm512_setzero_pd(), vl, _CMP_NLE_UQ), V->viol, one);
    V->zf = _mm512_add_epi64(V->zf, one);
    V->ref2 = _mm512_add_pd(V->ref2, p);
    V->got2 = _mm512_add_pd(V->got2, p);
    V->dot = _mm512_add_pd(V->dot, p);
    V->fast += 8;
}

HC_AVX512 static inline __attribute__((always_inline)) void
zblocks(zlanes *V, lanes *L, const float *got, const float *ref, int64_t k0, int64_t k1,
        double lim, int count_viol, const __m512d *th)
{
    const __m512d vl = _mm512_set1_pd(lim);
    int64_t mism = 0, bad = 0;
    for (int64_t k = k0; k < k1; k += 8) {
        const __m256 gf = _mm256_loadu_ps(got + k), rf = _mm256_loadu_ps(ref + k);
        /* NaN (quiet, signalling) or +-Inf in either */
        if (_mm256_fpclass_ps_mask(gf, 0x99) | _mm256_fpclass_ps_mask(rf, 0x99))
            zblock_any(V, gf, rf, vl, count_viol, th, &mism, &bad);
        else if (_mm256_cmp_ps_mask(gf, rf, _CMP_NEQ_OQ) == 0)
            zblock_equal(V, rf, vl, count_viol);
        else
            zblock_finite(V, gf, rf, vl, count_viol, th);
    }
    L->n += k1 - k0;
    L->mism += mism;
    L->bad += bad;
}

HC_AVX512 static void zstore(const zlanes *V, lanes *L)
{
    _mm512_storeu_pd(L->err2, V->err2);
    _mm512_storeu_pd(L->ref2, V->ref2);
    _mm512_storeu_pd(L->got2, V->got2);
    _mm512_storeu_pd(L->dot, V->dot);
    _mm512_storeu_pd(L->maxe, V->maxe);
    const int64_t zf = _mm512_reduce_add_epi64(V->zf);
    L->viol += _mm512_reduce_add_epi64(V->viol);
    L->zero += _mm512_reduce_add_epi64(V->zero) + zf;
    L->valid += _mm512_reduce_add_epi64(V->valid) + V->fast - zf;
    L->mism += V->fast - zf;
    L->inf += _mm512_reduce_add_epi64(V->inf);
    for (int t = 2; t < B; t++) L->reach[t] += _mm512_reduce_add_epi64(V->reach[t]);
}

/* row_avx2's walk over the groups and the tail, with zblocks. */
HC_AVX512 static void row_avx512(lanes *L, const float *got, const float *ref, int64_t K,
                                 int64_t gk, double limit, const double *thr)
{
    zlanes V;
    __m512d th[B];
    memset(&V, 0, sizeof V);
    V.err2 = _mm512_loadu_pd(L->err2), V.ref2 = _mm512_loadu_pd(L->ref2);
    V.got2 = _mm512_loadu_pd(L->got2), V.dot = _mm512_loadu_pd(L->dot);
    V.maxe = _mm512_loadu_pd(L->maxe);
    for (int t = 2; t < B; t++) th[t] = _mm512_set1_pd(thr[t]);
    const int64_t step = gk > 0 ? gk : K / 8 * 8, K8 = K / 8 * 8;
    double ae = L->amax_energy;
    for (int64_t k0 = 0; k0 < K8 && step > 0; k0 += step) {
        const int64_t k1 = k0 + step < K8 ? k0 + step : K8, ge = k0 + gk < K ? k0 + gk : K;
        double lim = 0;
        if (gk > 0) {
            const double a = amax_avx2(ref + k0, ge - k0);
            ae += (double)(ge - k0) * a * a;
            lim = limit * a;
        }
        zblocks(&V, L, got, ref, k0, k1, lim, gk > 0, th);
    }
    zstore(&V, L);
    L->amax_energy = ae;
    row_tail(L, got, ref, K, gk, limit, thr);
}
#endif

static void pick(int portable, span_fn *span, amax_fn *amax)
{
    *span = span_generic;
    *amax = amax_generic;
#if defined(__x86_64__) && defined(__GNUC__)
    if (portable != 1 && __builtin_cpu_supports("avx2")) {
        *span = span_avx2;
        *amax = amax_avx2;
    }
#endif
    (void)portable;
}

/* The lanes' totals and the histogram bins from the cumulative counts. */
static void finish(const lanes *L, double rms, hc_verify_row_sums *out, int64_t *hist)
{
    out->err2 = tree(L->err2);
    out->ref2 = tree(L->ref2);
    out->got2 = tree(L->got2);
    out->dot = tree(L->dot);
    out->maxe = 0;
    for (int j = 0; j < 8; j++) out->maxe = L->maxe[j] > out->maxe ? L->maxe[j] : out->maxe;
    out->bad = L->bad;
    out->mism = L->mism;
    out->violations = L->viol;
    /* bin 0: d == 0; bin j: the valid (finite, non-zero) d reaching
     * threshold j but not j + 1; the last also every NaN / Inf d. reach[t]
     * counts d = +Inf too (ad >= thr), hence the subtraction. */
    const int64_t nonfinite = L->n - L->zero - L->valid;
    hist[0] += L->zero;
    if (!(rms > 0)) {
        hist[B - 1] += L->valid + nonfinite;
        return;
    }
    int64_t reach[B];
    for (int t = 2; t < B; t++) reach[t] = L->reach[t] - L->inf;
    hist[1] += L->valid - reach[2];
    for (int t = 2; t < B - 1; t++) hist[t] += reach[t] - reach[t + 1];
    hist[B - 1] += reach[B - 1] + nonfinite;
}

void hc_verify_row_begin(hc_verify_row_state *s) { memset(s, 0, sizeof *s); }

void hc_verify_row_part(const hc_verify_row_opts *o, const float *got, const float *ref,
                        int64_t K, hc_verify_row_state *L)
{
    span_fn span;
    amax_fn amax;
    pick(o->portable, &span, &amax);
    double thr[B] = {0}; /* a threshold of 0 (rms near underflow) must not count d == 0 */
    for (int t = 2; t < B; t++) thr[t] = o->thr[t] > 0 ? o->thr[t] : 0x1p-1074;
#if defined(__x86_64__) && defined(__GNUC__)
    if (span == span_avx2 && o->gk % 8 == 0) { /* groups of whole blocks of 8 */
        const int64_t gk = o->gk > 0 && o->gk < K ? o->gk : o->gk > 0 ? K : 0;
        if (o->portable == 0 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            row_avx512(L, got, ref, K, gk, o->limit, thr);
        else
            row_avx2(L, got, ref, K, gk, o->limit, thr);
        return;
    }
#endif
    const int64_t gk = o->gk > 0 && o->gk < K ? o->gk : K;
    for (int64_t k0 = 0; k0 < K; k0 += gk) {
        const int64_t k1 = k0 + gk < K ? k0 + gk : K;
        double lim = 0;
        if (o->gk > 0) {
            const double a = amax(ref + k0, k1 - k0);
            L->amax_energy += (double)(k1 - k0) * a * a;
            lim = o->limit * a;
        }
        span(L, got, ref, k0, k1, lim, o->gk > 0, thr);
    }
}

void hc_verify_row_end(const hc_verify_row_opts *o, const hc_verify_row_state *s,
                       hc_verify_row_sums *out, int64_t *hist)
{
    out->amax_energy = s->amax_energy;
    finish(s, o->rms, out, hist);
}

void hc_verify_row_check(const hc_verify_row_opts *o, const float *got, const float *ref,
                         int64_t K, hc_verify_row_sums *out, int64_t *hist)
{
    hc_verify_row_state s;
    hc_verify_row_begin(&s);
    hc_verify_row_part(o, got, ref, K, &s);
    hc_verify_row_end(o, &s, out, hist);
}

void hc_verify_row_energy_part(const float *ref, int64_t n, double *l, int portable)
{
    int64_t k = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (!portable && __builtin_cpu_supports("avx2")) k = energy_avx2(ref, n, l);
#endif
    (void)portable;
    for (; k < n; k++) l[k % 8] += (double)ref[k] * (double)ref[k];
}

double hc_verify_lanes_total(const double *l) { return tree(l); }

double hc_verify_row_energy(const float *ref, int64_t K, int portable)
{
    double l[8] = {0};
    hc_verify_row_energy_part(ref, K, l, portable);
    return tree(l);
}
