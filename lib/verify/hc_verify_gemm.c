/* hc_verify_gemm.c - the CPU GEMM of the reference path, activation
 * quantizers as the kernel's input kernel applies them (spec 6.2), and random
 * activations with a realistic per-channel spread. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hc_parallel.h"
#include "hc_verify.h"

/* Dot products of up to 4 token rows with one weight row: eight k lanes per
 * token accumulate float32 fused multiply-adds over blocks of HC_DOT_BLOCK k
 * (8 roundings per lane per block), each block's lanes are added into double
 * lane sums, and the lanes are summed in a fixed order at the end
 * (docs/verification.md: error analysis). The portable form (fmaf, correctly
 * rounded by definition) and the AVX2+FMA form perform the same operations,
 * so both give the same doubles (tests/test_verify_decode.c compares them). */
#define HC_DOT_BLOCK 64

static double lanes_total(const double *d, double tail)
{
    return (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) + tail;
}

/* Adds the blocks of [k0, k1) (k0 a multiple of HC_DOT_BLOCK, k1 <= K / 8 * 8;
 * the last block ends at k1) of 4 token rows xr . w to their double lanes. */
typedef void (*blocks_fn)(const float *const *xr, const float *w, int64_t k0, int64_t k1,
                          double (*dacc)[8]);

static void blocks_generic(const float *const *xr, const float *w, int64_t k0, int64_t k1,
                           double (*dacc)[8])
{
    for (; k0 < k1; k0 += HC_DOT_BLOCK) {
        const int64_t kend = k0 + HC_DOT_BLOCK < k1 ? k0 + HC_DOT_BLOCK : k1;
        for (int t = 0; t < 4; t++) {
            float acc[8] = {0};
            for (int64_t k = k0; k < kend; k += 8)
                for (int j = 0; j < 8; j++) acc[j] = fmaf(xr[t][k + j], w[k + j], acc[j]);
            for (int j = 0; j < 8; j++) dacc[t][j] += (double)acc[j];
        }
    }
}

/* The 4 rows' pointers (rows past `rows` repeat the first; their sums are
 * never used). */
static void token_rows(const float *x, int64_t K, int64_t rows, const float **xr)
{
    for (int t = 0; t < 4; t++) xr[t] = x + (t < rows ? t : 0) * K;
}

/* The K % 8 tail in double and the lanes in a fixed order. */
static void dot4_finish(const float *const *xr, const float *w, int64_t K, double (*dacc)[8],
                        double *out)
{
    for (int t = 0; t < 4; t++) {
        double tail = 0.0;
        for (int64_t k = K / 8 * 8; k < K; k++) tail += (double)xr[t][k] * (double)w[k];
        out[t] = lanes_total(dacc[t], tail);
    }
}

static void dot4_generic(const float *x, int64_t K, int64_t rows, const float *w, double *out)
{
    double dacc[4][8] = {{0}};
    const float *xr[4];
    token_rows(x, K, rows, xr);
    blocks_generic(xr, w, 0, K / 8 * 8, dacc);
    dot4_finish(xr, w, K, dacc, out);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define HC_AVX2_FMA __attribute__((target("avx2,fma")))

/* dacc[0..7] += the 8 float lanes of a. */
HC_AVX2_FMA static void add_lanes(double *dacc, __m256 a)
{
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(a)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
    _mm256_storeu_pd(dacc, _mm256_add_pd(_mm256_loadu_pd(dacc), lo));
    _mm256_storeu_pd(dacc + 4, _mm256_add_pd(_mm256_loadu_pd(dacc + 4), hi));
}

/* Two weight rows at once (da: w0's lanes, db: w1's): eight independent
 * FMA chains instead of four hide the FMA latency; each (row, token) sees
 * the operations of blocks_fma. The tokens are written out so that the
 * accumulators stay in registers (an indexed array of them was kept on the
 * stack, each FMA waiting on a store and a load). */
HC_AVX2_FMA static void blocks2_fma(const float *const *xr, const float *w0, const float *w1,
                                    int64_t k0, int64_t k1, double (*da)[8], double (*db)[8])
{
    const float *x0 = xr[0], *x1 = xr[1], *x2 = xr[2], *x3 = xr[3];
    for (; k0 < k1; k0 += HC_DOT_BLOCK) {
        const int64_t kend = k0 + HC_DOT_BLOCK < k1 ? k0 + HC_DOT_BLOCK : k1;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
        for (int64_t k = k0; k < kend; k += 8) {
            const __m256 v0 = _mm256_loadu_ps(w0 + k), v1 = _mm256_loadu_ps(w1 + k);
            __m256 xv = _mm256_loadu_ps(x0 + k);
            a0 = _mm256_fmadd_ps(xv, v0, a0);
            b0 = _mm256_fmadd_ps(xv, v1, b0);
            xv = _mm256_loadu_ps(x1 + k);
            a1 = _mm256_fmadd_ps(xv, v0, a1);
            b1 = _mm256_fmadd_ps(xv, v1, b1);
            xv = _mm256_loadu_ps(x2 + k);
            a2 = _mm256_fmadd_ps(xv, v0, a2);
            b2 = _mm256_fmadd_ps(xv, v1, b2);
            xv = _mm256_loadu_ps(x3 + k);
            a3 = _mm256_fmadd_ps(xv, v0, a3);
            b3 = _mm256_fmadd_ps(xv, v1, b3);
        }
        add_lanes(da[0], a0), add_lanes(da[1], a1), add_lanes(da[2], a2), add_lanes(da[3], a3);
        add_lanes(db[0], b0), add_lanes(db[1], b1), add_lanes(db[2], b2), add_lanes(db[3], b3);
    }
}

/* Two weight rows and 4 pairs of tokens with 512-bit FMAs: each register
 * holds the 8 float32 lanes of two tokens (the activations interleaved in
 * pairs, hc_verify_act), each weight row's 8 values broadcast to both
 * halves, so one FMA performs the two 256-bit FMAs of blocks2_fma on the
 * same values (half the FMA instructions); at a block's end each half is
 * converted to double and added to its token's 8 double lanes, held in
 * registers over the range. The same operations in the same order as
 * blocks_generic per (row, token): the same doubles. np: 4 or 2 pairs. */
#define HC_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx2,fma")))

HC_AVX512 static inline __attribute__((always_inline)) void
pairs_blocks(const float *xp, int64_t ps, const int np, const float *w0, const float *w1,
             int64_t k0, int64_t k1, double *da, double *db)
{
    __m512d A[8], B[8];
#pragma GCC unroll 8
    for (int i = 0; i < 2 * np; i++) A[i] = _mm512_loadu_pd(da + 8 * i), B[i] = _mm512_loadu_pd(db + 8 * i);
    for (; k0 < k1; k0 += HC_DOT_BLOCK) {
        const int64_t kend = k0 + HC_DOT_BLOCK < k1 ? k0 + HC_DOT_BLOCK : k1;
        __m512 a[4], b[4];
#pragma GCC unroll 4
        for (int p = 0; p < np; p++) a[p] = _mm512_setzero_ps(), b[p] = a[p];
#pragma GCC unroll 8
        for (int64_t k = k0; k < kend; k += 8) {
            const __m512 v0 = _mm512_broadcast_f32x8(_mm256_loadu_ps(w0 + k));
            const __m512 v1 = _mm512_broadcast_f32x8(_mm256_loadu_ps(w1 + k));
#pragma GCC unroll 4
            for (int p = 0; p < np; p++) {
                __m512 xv = _mm512_loadu_ps(xp + p * ps + 2 * k);
                __asm__("" : "+v"(xv)); /* one load for both rows, not one per FMA */
                a[p] = _mm512_fmadd_ps(xv, v0, a[p]);
                b[p] = _mm512_fmadd_ps(xv, v1, b[p]);
            }
        }
#pragma GCC unroll 4
        for (int p = 0; p < np; p++) {
            A[2 * p] = _mm512_add_pd(A[2 * p], _mm512_cvtps_pd(_mm512_castps512_ps256(a[p])));
            A[2 * p + 1] = _mm512_add_pd(A[2 * p + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(a[p], 1)));
            B[2 * p] = _mm512_add_pd(B[2 * p], _mm512_cvtps_pd(_mm512_castps512_ps256(b[p])));
            B[2 * p + 1] = _mm512_add_pd(B[2 * p + 1], _mm512_cvtps_pd(_mm512_extractf32x8_ps(b[p], 1)));
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < 2 * np; i++) _mm512_storeu_pd(da + 8 * i, A[i]), _mm512_storeu_pd(db + 8 * i, B[i]);
}

/* pairs_blocks for 8 tokens (da, db: their 8 x 8 double lanes) or 4. */
HC_AVX512 static void pairs4(const float *xp, int64_t ps, const float *w0, const float *w1,
                             int64_t k0, int64_t k1, double *da, double *db)
{
    pairs_blocks(xp, ps, 4, w0, w1, k0, k1, da, db);
}

HC_AVX512 static void pairs2(const float *xp, int64_t ps, const float *w0, const float *w1,
                             int64_t k0, int64_t k1, double *da, double *db)
{
    pairs_blocks(xp, ps, 2, w0, w1, k0, k1, da, db);
}

HC_AVX2_FMA static void blocks_fma(const float *const *xr, const float *w, int64_t k0,
                                   int64_t k1, double (*dacc)[8])
{
    for (; k0 < k1; k0 += HC_DOT_BLOCK) {
        const int64_t kend = k0 + HC_DOT_BLOCK < k1 ? k0 + HC_DOT_BLOCK : k1;
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                         _mm256_setzero_ps()};
        for (int64_t k = k0; k < kend; k += 8) {
            const __m256 wv = _mm256_loadu_ps(w + k);
            for (int t = 0; t < 4; t++) acc[t] = _mm256_fmadd_ps(_mm256_loadu_ps(xr[t] + k), wv, acc[t]);
        }
        for (int t = 0; t < 4; t++) add_lanes(dacc[t], acc[t]);
    }
}

HC_AVX2_FMA static void dot4_fma(const float *x, int64_t K, int64_t rows, const float *w,
                                 double *out)
{
    double dacc[4][8] = {{0}};
    const float *xr[4];
    token_rows(x, K, rows, xr);
    blocks_fma(xr, w, 0, K / 8 * 8, dacc);
    dot4_finish(xr, w, K, dacc, out);
}
#endif

hc_dot4_fn hc_verify_dot4_impl(int portable)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (!portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return dot4_fma;
#endif
    (void)portable;
    return dot4_generic;
}

/* The forms of hc_verify_act.form: the blocks of one and of two weight
 * rows, and whether the AVX-512 token pairs run. */
typedef void (*blocks2_fn)(const float *const *xr, const float *w0, const float *w1,
                           int64_t k0, int64_t k1, double (*da)[8], double (*db)[8]);

static void blocks2_generic(const float *const *xr, const float *w0, const float *w1,
                            int64_t k0, int64_t k1, double (*da)[8], double (*db)[8])
{
    blocks_generic(xr, w0, k0, k1, da);
    blocks_generic(xr, w1, k0, k1, db);
}

static int pairs_supported(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static void pick_blocks(int form, blocks_fn *one, blocks2_fn *two)
{
    *one = blocks_generic;
    *two = blocks2_generic;
#if defined(__x86_64__) && defined(__GNUC__)
    if (form != 1 && hc_verify_dot4_impl(0) == dot4_fma) {
        *one = blocks_fma;
        *two = blocks2_fma;
    }
#else
    (void)form;
#endif
}

/* Row strides of the copies: a power-of-two K puts every token's row in
 * the same cache sets (16 tokens of K = 16384 share one set of an 8-way
 * L1 and L2), so the rows are 64 bytes further apart than K. */
static int64_t pad_stride(int64_t K8) { return (K8 + 15) / 16 * 16 + 16; }

/* The pairs' stride: two tokens' K8 values interleaved, padded as rows. */
static int64_t pairs_stride(int64_t K8) { return 2 * K8 + 32; }

/* The AVX-512 token pairs (tokens past M repeat their group's first, as
 * token_rows: sums never used); 0 when they cannot be allocated. */
static int pairs_init(hc_verify_act *a, const float *x, int64_t M, int64_t K)
{
    const int64_t K8 = K / 8 * 8, npairs = (M + 3) / 4 * 2, ps = pairs_stride(K8);
    a->pairs = aligned_alloc(64, (size_t)(npairs * ps) * sizeof *a->pairs); /* ps: 32 floats */
    if (a->pairs == NULL) return 0;
    for (int64_t p = 0; p < npairs; p++)
        for (int h = 0; h < 2; h++) {
            const int64_t t = 2 * p + h;
            const float *src = x + (t < M ? t : t / 4 * 4) * K;
            float *dst = a->pairs + p * ps + 8 * h;
            for (int64_t k = 0; k < K8; k += 8) memcpy(dst + 2 * k, src + k, 8 * sizeof *dst);
        }
    return 1;
}

void hc_verify_act_init(hc_verify_act *a, const float *x, int64_t M, int64_t K, int form)
{
    const int64_t K8 = K / 8 * 8;
    a->x = x;
    a->xb = x;
    a->xs = K;
    a->xpad = NULL;
    a->M = M;
    a->K = K;
    a->form = form;
    a->pairs = NULL;
    if (K8 == 0) return;
    if (form == 0 && pairs_supported() && pairs_init(a, x, M, K)) return;
    /* the blocks read the first K8 values of each row: a padded copy, or
     * the rows in place where it cannot be allocated (the same doubles) */
    const int64_t xs = pad_stride(K8);
    a->xpad = aligned_alloc(64, (size_t)(M * xs) * sizeof *a->xpad); /* xs: 16 floats */
    if (a->xpad == NULL) return;
    for (int64_t m = 0; m < M; m++) memcpy(a->xpad + m * xs, x + m * K, (size_t)K8 * sizeof *x);
    a->xb = a->xpad;
    a->xs = xs;
}

void hc_verify_act_free(hc_verify_act *a)
{
    if (a == NULL) return;
    free(a->pairs);
    free(a->xpad);
    a->pairs = NULL;
    a->xpad = NULL;
}

/* K columns per pass of hc_verify_gemm_rows: the tokens' slice (16 tokens:
 * 64 KiB) stays in cache while every row of the panel reads it. */
#define HC_GEMM_KC 1024

int64_t hc_verify_gemm_acc_len(int64_t rows, int64_t M) { return rows * ((M + 3) / 4) * 4 * 9; }

/* The K % 8 tail terms in [k0, k1) of the (row, token) sums, in double and
 * in k order, as dot4_finish adds them. */
static void tail_terms(const float *x, int64_t M, int64_t K, int64_t k0, int64_t k1,
                       const float *W, int64_t rows, int64_t ldw, double *tail)
{
    const int64_t M4 = (M + 3) / 4;
    for (int64_t k = k0 > K / 8 * 8 ? k0 : K / 8 * 8; k < k1; k++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t q = 0; q < M4; q++) {
                const float *xr[4];
                token_rows(x + 4 * q * K, K, M - 4 * q, xr);
                for (int t = 0; t < 4; t++)
                    tail[(r * M4 + q) * 4 + t] += (double)xr[t][k] * (double)W[r * ldw + k - k0];
            }
}

/* Rows r and r + 1 over [kc, kend) (relative to W's column 0 = k0) with
 * the token pairs: 8 tokens (the double lanes of groups q and q + 1 lie
 * next to each other in acc) at a time, the last 4 alone. */
static void pairs_rows(const hc_verify_act *a, int64_t k0, int64_t kc, int64_t kend,
                       const float *w0, const float *w1, double (*da)[8], double (*db)[8])
{
#if defined(__x86_64__) && defined(__GNUC__)
    const int64_t M4 = (a->M + 3) / 4, ps = pairs_stride(a->K / 8 * 8);
    for (int64_t t0 = 0; t0 < 4 * M4; t0 += 8) {
        const float *xp = a->pairs + (t0 / 2) * ps + 2 * k0;
        if (4 * M4 - t0 >= 8)
            pairs4(xp, ps, w0, w1, kc, kend, da[t0], db[t0]);
        else
            pairs2(xp, ps, w0, w1, kc, kend, da[t0], db[t0]);
    }
#else
    (void)a, (void)k0, (void)kc, (void)kend, (void)w0, (void)w1, (void)da, (void)db;
#endif
}

void hc_verify_gemm_acc(const hc_verify_act *a, int64_t k0, int64_t k1, const float *W,
                        int64_t rows, int64_t ldw, double *acc)
{
    blocks_fn blocks;
    blocks2_fn blocks2;
    pick_blocks(a->form, &blocks, &blocks2);
    const int64_t M = a->M, K = a->K, M4 = (M + 3) / 4, K8 = K / 8 * 8;
    const int64_t kv = (k1 < K8 ? k1 : K8) - k0;
    double (*dacc)[8] = (double (*)[8])acc;
    for (int64_t kc = 0; kc < kv; kc += HC_GEMM_KC) {
        const int64_t kend = kc + HC_GEMM_KC < kv ? kc + HC_GEMM_KC : kv;
        for (int64_t r = 0; r < rows; r += 2) {
            if (r + 1 < rows && a->pairs) {
                pairs_rows(a, k0, kc, kend, W + r * ldw, W + (r + 1) * ldw, dacc + r * M4 * 4,
                           dacc + (r + 1) * M4 * 4);
                continue;
            }
            for (int64_t q = 0; q < M4; q++) {
                const float *xr[4];
                token_rows(a->xb + 4 * q * a->xs, a->xs, M - 4 * q, xr);
                for (int t = 0; t < 4; t++) xr[t] += k0; /* W's column 0 is k0 */
                if (r + 1 < rows)
                    blocks2(xr, W + r * ldw, W + (r + 1) * ldw, kc, kend,
                            dacc + (r * M4 + q) * 4, dacc + ((r + 1) * M4 + q) * 4);
                else
                    blocks(xr, W + r * ldw, kc, kend, dacc + (r * M4 + q) * 4);
            }
        }
    }
    tail_terms(a->x, M, K, k0, k1, W, rows, ldw, acc + rows * M4 * 4 * 8);
}

void hc_verify_gemm_end(const double *acc, int64_t M, int64_t rows, const float *bias, float *y,
                        int64_t y_stride)
{
    const int64_t M4 = (M + 3) / 4;
    const double (*dacc)[8] = (const double (*)[8])acc, *tail = acc + rows * M4 * 4 * 8;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t t = 0; t < M; t++) {
            const int64_t i = (r * M4 + t / 4) * 4 + t % 4;
            const double b = bias ? bias[r] : 0.0;
            y[t * y_stride + r] = (float)(lanes_total(dacc[i], tail[i]) + b);
        }
}

/* hc_verify_gemm_rows on prepared activations. */
static hc_status gemm_rows_act(const hc_verify_act *a, const float *W, int64_t rows, int64_t Kw,
                               const float *bias, float *y, int64_t y_stride)
{
    double *acc = calloc((size_t)hc_verify_gemm_acc_len(rows, a->M) + 1, sizeof *acc);
    if (acc == NULL) return HC_ERR_NOMEM;
    hc_verify_gemm_acc(a, 0, a->K, W, rows, Kw, acc);
    hc_verify_gemm_end(acc, a->M, rows, bias, y, y_stride);
    free(acc);
    return HC_OK;
}

hc_status hc_verify_gemm_rows(const float *x, int64_t M, int64_t K, const float *W,
                              int64_t rows, int64_t Kw, const float *bias, float *y,
                              int64_t y_stride)
{
    hc_verify_act a;
    hc_verify_act_init(&a, x, M, K, 0);
    hc_status st = gemm_rows_act(&a, W, rows, Kw, bias, y, y_stride);
    hc_verify_act_free(&a);
    return st;
}

void hc_verify_gemm(const float *x, int64_t M, int64_t K, const float *W, int64_t E,
                    int64_t N, int64_t Nw, int64_t Kw, const float *bias, int64_t Nb, float *y)
{
    const hc_dot4_fn dot = hc_verify_dot4_impl(0);
    const int64_t panels = (N + 63) / 64;
    hc_verify_act a;
    hc_verify_act_init(&a, x, M, K, 0);
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * M * K / 16))
    for (int64_t e = 0; e < E; e++)
        for (int64_t p = 0; p < panels; p++) {
            const int64_t n0 = 64 * p, rows = N - n0 < 64 ? N - n0 : 64;
            if (gemm_rows_act(&a, W + (e * Nw + n0) * Kw, rows, Kw,
                              bias ? bias + e * Nb + n0 : NULL, y + e * M * N + n0, N) == HC_OK)
                continue;
            for (int64_t n = n0; n < n0 + rows; n++) { /* no memory: row by row */
                const float *w = W + (e * Nw + n) * Kw;
                const double b = bias ? bias[e * Nb + n] : 0.0;
                for (int64_t m = 0; m < M; m += 4) {
                    const int64_t t_rows = M - m < 4 ? M - m : 4;
                    double d[4];
                    dot(x + m * K, K, t_rows, w, d);
                    for (int64_t t = 0; t < t_rows; t++)
                        y[(e * M + m + t) * N + n] = (float)(d[t] + b);
                }
            }
        }
    hc_verify_act_free(&a);
}

void hc_verify_round_act(hc_format_id fmt, float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = fmt == HC_FMT_BF16 ? hc_bf16_to_f32(hc_f32_to_bf16(x[i]))
                                  : hc_f16_to_f32(hc_f32_to_f16(x[i]));
}

/* One token as humming-kernels 0.1.19's process_input kernel quantizes it:
 * s = max(amax / act_max, 1e-30) (the golden-0119 x.scale bit for bit), the
 * values multiplied by the float32 reciprocal of s and rounded to the grid
 * (RNE, saturating; integers to their two's complement range): every
 * element of the golden-0119 x.quant. */
static void quantize_row(hc_format_id fmt, float *x, int64_t K)
{
    hc_format_role_info r = hc_format_role(fmt);
    if (r.act_max == 0.0f) return; /* 16-bit activations */
    float amax = 0.0f;
    for (int64_t k = 0; k < K; k++) amax = fmaxf(amax, fabsf(x[k]));
    const hc_format_info *fi = hc_format_get(fmt);
    const int is_int = fi->kind != HC_KIND_FLOAT;
    const float s = fmaxf(amax / r.act_max, 1e-30f), inv = 1.0f / s;
    const float hi = (float)fi->max_value, lo = -hi - 1.0f; /* two's complement range */
    for (int64_t k = 0; k < K; k++) {
        float t = x[k] * inv, q;
        if (is_int) {
            q = nearbyintf(t);
            q = q < lo ? lo : q > hi ? hi : q;
        } else {
            q = (float)hc_format_decode(fmt, hc_format_encode(fmt, t));
        }
        x[k] = q * s;
    }
}

void hc_verify_quantize_act(hc_format_id fmt, float *x, int64_t M, int64_t K)
{
#pragma omp parallel for schedule(static) if (HC_PARALLEL(M * K))
    for (int64_t m = 0; m < M; m++) quantize_row(fmt, x + m * K, K);
}

#define HC_SPLITMIX_STEP 0x9E3779B97F4A7C15ull

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += HC_SPLITMIX_STEP);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return ((splitmix(s) >> 11) + 0.5) * 0x1.0p-53; }

static double gauss(uint64_t *s)
{
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Channel k has spread exp(0.5*g_k) (log-normal, as activations of real
 * models), and one channel in 64 is an outlier with 6x that. One stream of
 * splitmix draws, channel after channel (3 + 2 M draws each); the state
 * after n draws is the seed's + n times the increment, so the channels are
 * drawn in parallel from their own starting states: the same values. */
void hc_verify_random_act(float *x, int64_t M, int64_t K, uint64_t seed)
{
    const uint64_t s0 = seed ^ 0x5DEECE66Dull, per = 3 + 2 * (uint64_t)M;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(M * K * 4))
    for (int64_t k = 0; k < K; k++) {
        uint64_t s = s0 + (uint64_t)k * per * HC_SPLITMIX_STEP;
        double c = exp(0.5 * gauss(&s));
        if (splitmix(&s) % 64 == 0) c *= 6.0;
        for (int64_t m = 0; m < M; m++) x[m * K + k] = (float)(gauss(&s) * c);
    }
}
