/* test_verify_gemm.c - the reference GEMM's dot products (hc_verify_dot4_impl):
 * the AVX2+FMA form equals the portable fmaf form bit for bit (lengths
 * around the 8-lane and 64-k block edges, 1..4 tokens, signed zeros,
 * subnormals, wide magnitudes), and each stays within the error bound of
 * docs/verification.md of an exact (long double) dot product:
 * |err| <= (gamma_9 + 2^-50 * K) * sum |x_k w_k|. SKIP[isa] where only the
 * portable form runs (nothing to compare); the bound is checked anyway. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_verify.h"

static uint64_t rng = 0xD1B54A32D192ED03ull;

static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0;
    int kind = (int)(rng >> 3) % 16;
    if (kind == 0) return 0.0f * (float)u;           /* signed zeros */
    if (kind == 1) return (float)(u * 1e-40);        /* subnormal */
    return (float)ldexp(u, (int)(rng >> 5) % 24 - 12);
}

/* Exact-enough reference and the bound of the blocked float32 sum. */
static void check_bound(const float *x, const float *w, int64_t K, double got)
{
    long double exact = 0, mag = 0;
    for (int64_t k = 0; k < K; k++) {
        exact += (long double)x[k] * w[k];
        mag += fabsl((long double)x[k] * w[k]);
    }
    const double u = 0x1p-24, gamma9 = 9 * u / (1 - 9 * u);
    double bound = (gamma9 + 0x1p-50 * (double)K) * (double)mag;
    if (fabs(got - (double)exact) > bound) {
        print_error("K %lld: |%.17g - %.17Lg| > %.3g\n", (long long)K, got, exact, bound);
        fail();
    }
}

static void test_forms_agree_and_bound(void **state)
{
    (void)state;
    hc_dot4_fn portable = hc_verify_dot4_impl(1), fast = hc_verify_dot4_impl(0);
    static const int64_t lens[] = {1, 7, 8, 9, 63, 64, 65, 72, 127, 128, 129, 200, 1000, 4099, 16384};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        int64_t K = lens[i];
        float *x = malloc((size_t)(4 * K) * sizeof *x), *w = malloc((size_t)K * sizeof *w);
        assert_non_null(x);
        assert_non_null(w);
        for (int64_t k = 0; k < 4 * K; k++) x[k] = frand();
        for (int64_t k = 0; k < K; k++) w[k] = frand();
        for (int64_t rows = 1; rows <= 4; rows++) {
            double a[4], b[4];
            portable(x, K, rows, w, a);
            fast(x, K, rows, w, b);
            for (int64_t t = 0; t < rows; t++) {
                if (memcmp(&a[t], &b[t], sizeof a[t]) != 0) {
                    print_error("K %lld token %lld: %.17g vs %.17g\n", (long long)K, (long long)t,
                                a[t], b[t]);
                    fail();
                }
                check_bound(x + t * K, w, K, a[t]);
            }
        }
        free(x);
        free(w);
    }
    if (portable == fast) {
        printf("SKIP[isa]: no AVX2+FMA here: only the portable dot product runs\n");
        skip();
    }
}

/* hc_verify_gemm_rows (passes over K) gives each row's dot products: K past
 * one pass with a tail, token counts not a multiple of 4, bias, a row stride
 * and an output stride. */
static void test_gemm_rows_equal_dots(void **state)
{
    (void)state;
    hc_dot4_fn dot = hc_verify_dot4_impl(0);
    static const int64_t Ms[] = {1, 4, 7, 16};
    const int64_t K = 2 * 1024 + 67, Kw = K + 5, rows = 5, ys = 9;
    float *x = malloc((size_t)(16 * K) * sizeof *x), *W = malloc((size_t)(rows * Kw) * sizeof *W);
    float y[16 * 9], bias[5];
    assert_non_null(x);
    assert_non_null(W);
    for (int64_t i = 0; i < 16 * K; i++) x[i] = frand();
    for (int64_t i = 0; i < rows * Kw; i++) W[i] = frand();
    for (int r = 0; r < rows; r++) bias[r] = frand();
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
        const int64_t M = Ms[mi];
        assert_int_equal(hc_verify_gemm_rows(x, M, K, W, rows, Kw, bias, y, ys), HC_OK);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t m = 0; m < M; m += 4) {
                double d[4];
                const int64_t t_rows = M - m < 4 ? M - m : 4;
                dot(x + m * K, K, t_rows, W + r * Kw, d);
                for (int64_t t = 0; t < t_rows; t++) {
                    const float want = (float)(d[t] + bias[r]);
                    assert_memory_equal(&y[(m + t) * ys + r], &want, sizeof want);
                }
            }
    }
    free(x);
    free(W);
}

/* hc_verify_gemm_acc in parts along K (slabs of 1024 and of 64, the K % 8
 * tail in the last) gives hc_verify_gemm_rows's floats. */
static void test_gemm_parts_equal_rows(void **state)
{
    (void)state;
    const int64_t M = 7, K = 2 * 1024 + 67, rows = 5;
    float *x = malloc((size_t)(M * K) * sizeof *x), *W = malloc((size_t)(rows * K) * sizeof *W);
    float *slab = malloc((size_t)(rows * 1024) * sizeof *slab), y[7 * 5], z[7 * 5], bias[5];
    double *acc = calloc((size_t)hc_verify_gemm_acc_len(rows, M), sizeof *acc);
    assert_true(x && W && slab && acc);
    for (int64_t i = 0; i < M * K; i++) x[i] = frand();
    hc_verify_act a;
    hc_verify_act_init(&a, x, M, K, 0);
    for (int64_t i = 0; i < rows * K; i++) W[i] = frand();
    for (int r = 0; r < rows; r++) bias[r] = frand();
    assert_int_equal(hc_verify_gemm_rows(x, M, K, W, rows, K, bias, y, rows), HC_OK);
    for (int64_t step = 64; step <= 1024; step += 960) {
        memset(acc, 0, (size_t)hc_verify_gemm_acc_len(rows, M) * sizeof *acc);
        for (int64_t k0 = 0; k0 < K; k0 += step) {
            const int64_t kw = K - k0 < step ? K - k0 : step;
            for (int64_t r = 0; r < rows; r++) /* a copy of the slab, row stride 1024 */
                memcpy(slab + r * 1024, W + r * K + k0, (size_t)kw * sizeof *slab);
            hc_verify_gemm_acc(&a, k0, k0 + kw, slab, rows, 1024, acc);
        }
        hc_verify_gemm_end(acc, M, rows, bias, z, rows);
        assert_memory_equal(y, z, sizeof y);
    }
    hc_verify_act_free(&a);
    free(x);
    free(W);
    free(slab);
    free(acc);
}

/* The sums of one form of hc_verify_gemm_acc over [0, K) in slabs of 1024
 * (W's copy per slab, row stride 1024) into acc. */
static void acc_form(int form, const float *x, int64_t M, int64_t K, const float *W, int64_t rows,
                     float *slab, double *acc, int *paired)
{
    hc_verify_act a;
    hc_verify_act_init(&a, x, M, K, form);
    *paired = a.pairs != NULL;
    memset(acc, 0, (size_t)hc_verify_gemm_acc_len(rows, M) * sizeof *acc);
    for (int64_t k0 = 0; k0 < K; k0 += 1024) {
        const int64_t kw = K - k0 < 1024 ? K - k0 : 1024;
        for (int64_t r = 0; r < rows; r++)
            memcpy(slab + r * 1024, W + r * K + k0, (size_t)kw * sizeof *slab);
        hc_verify_gemm_acc(&a, k0, k0 + kw, slab, rows, 1024, acc);
    }
    hc_verify_act_free(&a);
}

/* Every form of hc_verify_gemm_acc (portable, AVX2+FMA, AVX-512 token
 * pairs) gives the same doubles for every (row, token): token counts
 * around the pairs and the groups of 4 and 8, odd row counts (the last row
 * alone), K around the 8-lane, 64-k block and 1024 slab edges. A pairs
 * kernel that mixed up a token's half, a pair or a row fails here.
 * SKIP[isa] where the pairs do not run. */
static void test_gemm_forms_agree(void **state)
{
    (void)state;
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24};
    static const int64_t Ks[] = {7, 8, 64, 67, 1000, 2 * 1024 + 67};
    static const int64_t Rs[] = {1, 2, 3, 5, 64};
    const int64_t Mmax = 24, Kmax = 2 * 1024 + 67, Rmax = 64;
    float *x = malloc((size_t)(Mmax * Kmax) * sizeof *x);
    float *W = malloc((size_t)(Rmax * Kmax) * sizeof *W);
    float *slab = malloc((size_t)(Rmax * 1024) * sizeof *slab);
    const size_t n = (size_t)hc_verify_gemm_acc_len(Rmax, Mmax);
    double *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    assert_true(x && W && slab && ref && got);
    for (int64_t i = 0; i < Mmax * Kmax; i++) x[i] = frand();
    for (int64_t i = 0; i < Rmax * Kmax; i++) W[i] = frand();
    int paired = 0;
    for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++)
            for (size_t ri = 0; ri < sizeof Rs / sizeof Rs[0]; ri++) {
                const int64_t M = Ms[mi], K = Ks[ki], rows = Rs[ri];
                const size_t len = (size_t)hc_verify_gemm_acc_len(rows, M) * sizeof *ref;
                int p1, p;
                acc_form(1, x, M, K, W, rows, slab, ref, &p1);
                for (int form = 2; form >= 0; form -= 2) {
                    acc_form(form, x, M, K, W, rows, slab, got, &p);
                    paired |= p;
                    if (memcmp(ref, got, len) != 0) {
                        print_error("form %d, M %lld K %lld rows %lld: sums differ from the "
                                    "portable form\n", form, (long long)M, (long long)K,
                                    (long long)rows);
                        fail();
                    }
                }
            }
    free(x);
    free(W);
    free(slab);
    free(ref);
    free(got);
    if (!paired) {
        printf("SKIP[isa]: no AVX-512: the token pairs do not run\n");
        skip();
    }
}

/* The serial stream hc_verify_random_act draws from (its definition:
 * channel after channel, a spread then M values), for comparison. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double normal(uint64_t *s)
{
    double u = ((mix(s) >> 11) + 0.5) * 0x1.0p-53, v = ((mix(s) >> 11) + 0.5) * 0x1.0p-53;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Random activations drawn channel by channel in parallel equal the serial
 * stream bit for bit (token counts, channel counts below and above the
 * parallel threshold). */
static void test_random_act_stream(void **state)
{
    (void)state;
    static const int64_t Ms[] = {1, 3, 16}, Ks[] = {1, 5, 1000, 70000};
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t ki = 0; ki < 4; ki++) {
            const int64_t M = Ms[mi], K = Ks[ki];
            float *x = malloc((size_t)(M * K) * sizeof *x), *w = malloc((size_t)(M * K) * sizeof *w);
            assert_true(x && w);
            hc_verify_random_act(x, M, K, 0x1234 + (uint64_t)K);
            uint64_t s = (0x1234 + (uint64_t)K) ^ 0x5DEECE66Dull;
            for (int64_t k = 0; k < K; k++) {
                double c = exp(0.5 * normal(&s));
                if (mix(&s) % 64 == 0) c *= 6.0;
                for (int64_t m = 0; m < M; m++) w[m * K + k] = (float)(normal(&s) * c);
            }
            assert_memory_equal(x, w, (size_t)(M * K) * sizeof *x);
            free(x);
            free(w);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms_agree_and_bound),
        cmocka_unit_test(test_gemm_rows_equal_dots),
        cmocka_unit_test(test_gemm_parts_equal_rows),
        cmocka_unit_test(test_gemm_forms_agree),
        cmocka_unit_test(test_random_act_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
