/* test_verify_rows.c - the weight checks of one row (hc_verify_row_check,
 * lib/verify/hc_verify_rows.c): the AVX-512 and AVX2 forms equal the
 * portable form bit for bit (sums, counts, histogram) on rows with NaN / Inf, zeros,
 * subnormals, differences exactly on a decade threshold, lengths and group
 * widths around the 8-lane edges (unaligned groups included) and an all-zero
 * reference; the counts equal a plain recount from the definitions, the sums
 * a long double sum; and one element moved by more than a step of its group
 * is one violation wherever it sits. SKIP[isa] where only the portable form
 * runs (nothing to compare); the recounts are checked anyway. */
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

enum { B = HC_VERIFY_HIST_BINS };

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 11;
}

static float frand(void)
{
    double u = (double)next() * 0x1p-53 * 2.0 - 1.0;
    int kind = (int)(next() % 16);
    if (kind == 0) return 0.0f * (float)u; /* signed zeros */
    if (kind == 1) return (float)(u * 1e-40); /* subnormal */
    return (float)ldexp(u, (int)(next() % 24) - 12);
}

/* pass 0: random; 1: all-zero reference (rms 0); 2: rms exactly 10 with
 * |d| = 1 exactly on the top threshold; every pass with NaN / Inf in got
 * and ref, equal elements and a difference on each decade; pass 3: equal
 * but for every 61st element (runs of equal blocks, -0 against +0 among
 * them). */
static void fill(int pass, float *got, float *ref, int64_t n)
{
    if (pass == 3) {
        for (int64_t i = 0; i < n; i++) {
            ref[i] = i % 7 == 3 ? -0.0f : frand();
            got[i] = i % 61 == 0 ? ref[i] * 1.5f + 0.25f : i % 14 == 3 ? 0.0f : ref[i];
            if (i % 401 == 0) got[i] = NAN;
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        ref[i] = pass == 1 ? 0.0f : pass == 2 ? (i % 2 ? 10.0f : -10.0f) : frand();
        float d = (float)ldexp(1.0, (int)(next() % 40) - 30) * (i % 2 ? 1.0f : -1.0f);
        got[i] = i % 11 == 0 ? ref[i] : i % 97 == 0 ? NAN : i % 89 == 0 ? INFINITY
                 : i % 13 == 0 ? ref[i] + (float)pow(10.0, (double)(i % 9) - 9)
                 : pass == 2 && i % 5 == 0 ? ref[i] + 1.0f : ref[i] + d;
        if (pass == 0 && i % 101 == 0) ref[i] = i % 202 ? NAN : -INFINITY;
    }
}

/* The plain recount of the counts from their definitions. */
static void recount(const hc_verify_row_opts *o, const float *got, const float *ref, int64_t K,
                    hc_verify_row_sums *want, int64_t *hist)
{
    const int64_t gk = o->gk > 0 && o->gk < K ? o->gk : K;
    memset(want, 0, sizeof *want);
    for (int64_t k = 0; k < K; k++) {
        double amax = 0;
        for (int64_t j = k / gk * gk; j < k / gk * gk + gk && j < K; j++)
            if (fabs(ref[j]) > amax) amax = fabs(ref[j]);
        const double d = fabs((double)got[k] - (double)ref[k]);
        want->bad += !isfinite(got[k]);
        want->mism += got[k] != ref[k];
        want->violations += o->gk > 0 && !(d <= o->limit * amax);
        int bin = B - 1;
        if (d == 0) bin = 0;
        else if (o->rms > 0 && isfinite(d))
            for (bin = 1; bin < B - 1 && d >= o->thr[bin + 1];) bin++;
        hist[bin]++;
    }
}

static void expect_same(const hc_verify_row_sums *a, const hc_verify_row_sums *b, const char *what)
{
    if (memcmp(a, b, sizeof *a) != 0) {
        print_error("%s: err2 %.17g/%.17g ref2 %.17g/%.17g maxe %.17g/%.17g bad %lld/%lld "
                    "mism %lld/%lld viol %lld/%lld\n", what, a->err2, b->err2, a->ref2, b->ref2,
                    a->maxe, b->maxe, (long long)a->bad, (long long)b->bad, (long long)a->mism,
                    (long long)b->mism, (long long)a->violations, (long long)b->violations);
        fail();
    }
}

static void check_row(hc_verify_row_opts *o, const float *got, const float *ref, int64_t K)
{
    hc_verify_row_sums a, b, want;
    int64_t ha[B] = {0}, hw[B] = {0};
    o->portable = 1;
    hc_verify_row_check(o, got, ref, K, &a, ha);
    for (int isa = 0; isa <= 2; isa += 2) { /* the fastest (AVX-512), at most AVX2 */
        int64_t hb[B] = {0};
        o->portable = isa;
        hc_verify_row_check(o, got, ref, K, &b, hb);
        expect_same(&a, &b, isa ? "portable vs AVX2" : "portable vs fastest");
        assert_memory_equal(ha, hb, sizeof ha);
    }
    assert_true(hc_verify_row_energy(ref, K, 1) == hc_verify_row_energy(ref, K, 0) ||
                isnan(hc_verify_row_energy(ref, K, 1)));
    recount(o, got, ref, K, &want, hw);
    assert_int_equal(a.bad, want.bad);
    assert_int_equal(a.mism, want.mism);
    assert_int_equal(a.violations, want.violations);
    for (int j = 0; j < B; j++)
        if (ha[j] != hw[j]) {
            print_error("K %lld bin %d: %lld vs recount %lld\n", (long long)K, j,
                        (long long)ha[j], (long long)hw[j]);
            fail();
        }
}

static void test_row_forms_agree(void **state)
{
    (void)state;
    static const int64_t lens[] = {1, 7, 8, 9, 31, 64, 100, 1000, 4099};
    static const int64_t gks[] = {0, 8, 12, 32, 128};
    enum { n = 4099 };
    static float got[n], ref[n];
    for (int pass = 0; pass < 4; pass++) {
        fill(pass, got, ref, n);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (size_t gi = 0; gi < sizeof gks / sizeof gks[0]; gi++) {
                const int64_t K = lens[li];
                double e = 0;
                for (int64_t k = 0; k < K; k++) e += (double)ref[k] * ref[k];
                hc_verify_row_opts o = {.gk = gks[gi], .limit = 0.07};
                o.rms = isfinite(e) ? sqrt(e / (double)K) : 0;
                hc_verify_hist_thresholds(o.rms, o.thr);
                check_row(&o, got, ref, K);
            }
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) return;
#endif
    printf("SKIP[isa]: no AVX2 here: only the portable row checks run\n");
    skip();
}

/* Finite rows: the lane sums are within a few ulps of a long double sum. */
static void test_row_sums_accurate(void **state)
{
    (void)state;
    enum { K = 4096 };
    static float got[K], ref[K];
    for (int k = 0; k < K; k++) {
        ref[k] = frand();
        got[k] = ref[k] * (1.0f + (float)((double)next() * 0x1p-53 - 0.5) * 0.01f);
    }
    hc_verify_row_opts o = {.gk = 128, .limit = 1.0, .rms = 1.0};
    hc_verify_hist_thresholds(o.rms, o.thr);
    hc_verify_row_sums s;
    int64_t h[B] = {0};
    hc_verify_row_check(&o, got, ref, K, &s, h);
    long double err2 = 0, ref2 = 0, dot = 0;
    for (int k = 0; k < K; k++) {
        long double d = (long double)got[k] - ref[k];
        err2 += d * d;
        ref2 += (long double)ref[k] * ref[k];
        dot += (long double)got[k] * ref[k];
    }
    assert_true(fabsl(s.err2 - err2) <= 1e-13L * err2);
    assert_true(fabsl(s.ref2 - ref2) <= 1e-13L * ref2);
    assert_true(fabsl(s.dot - dot) <= 1e-13L * ref2);
    assert_true(fabsl(hc_verify_row_energy(ref, K, 0) - ref2) <= 1e-13L * ref2);
    assert_int_equal(s.violations, 0);
}

/* One element moved by just over a step (limit x its group's amax) is one
 * violation and one mismatch, at every position of the lanes, the tail and
 * an unaligned group, in both forms; moved by just under, none. */
static void test_one_wrong_element_caught(void **state)
{
    (void)state;
    enum { K = 203 };
    static float got[K], ref[K];
    for (int64_t gi = 0; gi < 3; gi++) {
        const int64_t gk = gi == 0 ? 32 : gi == 1 ? 12 : 0;
        for (int64_t at = 0; at < K; at++) {
            for (int k = 0; k < K; k++) got[k] = ref[k] = (float)(k % 7) - 3.0f;
            hc_verify_row_opts o = {.gk = gk ? gk : 64, .limit = 1.0 / 7.0, .rms = 2.0};
            hc_verify_hist_thresholds(o.rms, o.thr);
            got[at] = ref[at] + 0.44f; /* a step: 3 / 7 = 0.43 */
            for (int portable = 0; portable < 3; portable++) {
                hc_verify_row_sums s;
                int64_t h[B] = {0};
                o.portable = portable;
                hc_verify_row_check(&o, got, ref, K, &s, h);
                assert_int_equal(s.violations, 1);
                assert_int_equal(s.mism, 1);
                got[at] = ref[at] + 0.42f;
                hc_verify_row_check(&o, got, ref, K, &s, h);
                assert_int_equal(s.violations, 0);
                got[at] = ref[at] + 0.44f;
            }
        }
    }
}

/* hc_verify_row_part over parts of whole groups (and multiples of 8) in
 * order gives one call's bits, in both forms. */
static void test_row_parts_equal_one_call(void **state)
{
    (void)state;
    enum { K = 4099 };
    static float got[K], ref[K];
    fill(0, got, ref, K);
    for (int portable = 0; portable < 3; portable++)
        for (int64_t gk = 0; gk <= 128; gk = gk ? 2 * gk : 8) { /* groups dividing 1024 */
            hc_verify_row_opts o = {.gk = gk, .limit = 0.07, .rms = 0.5, .portable = portable};
            hc_verify_hist_thresholds(o.rms, o.thr);
            hc_verify_row_sums a, b;
            int64_t ha[B] = {0}, hb[B] = {0};
            hc_verify_row_check(&o, got, ref, K, &a, ha);
            hc_verify_row_state st;
            hc_verify_row_begin(&st);
            for (int64_t k0 = 0; k0 < K; k0 += 1024)
                hc_verify_row_part(&o, got + k0, ref + k0, K - k0 < 1024 ? K - k0 : 1024, &st);
            hc_verify_row_end(&o, &st, &b, hb);
            expect_same(&a, &b, "parts vs one call");
            assert_memory_equal(ha, hb, sizeof ha);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_forms_agree),
        cmocka_unit_test(test_row_sums_accurate),
        cmocka_unit_test(test_one_wrong_element_caught),
        cmocka_unit_test(test_row_parts_equal_one_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
