/* test_layout.c - the weight repack (spec 3, 4): golden words of 4.9 and an
 * independent element-by-element reference (4.3 forward mapping, 4.4 closed
 * forms, 4.5 explicit compaction formulas) on random codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_repack.h"

/* ---- shared helpers ---------------------------------------------------- */

/* Row-packs codes (E, N, K) into (E, N, K*b/32) words, written out longhand
 * (bit by bit) so that it does not share code with the library. */
static uint32_t *pack_rows(const uint8_t *codes, int64_t rows, int64_t K, int b)
{
    int64_t rw = K * b / 32;
    uint32_t *w = calloc((size_t)(rows * rw), sizeof *w);
    assert_non_null(w);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < K; k++)
            for (int t = 0; t < b; t++) {
                int64_t bit = k * b + t;
                if ((codes[r * K + k] >> t) & 1) w[r * rw + bit / 32] |= 1u << (bit % 32);
            }
    return w;
}

static uint32_t *run_repack(const uint8_t *codes, int b, int a, int tr, int64_t E, int64_t N,
                            int64_t K)
{
    uint32_t *in = pack_rows(codes, E * N, K, b);
    uint32_t *out = calloc((size_t)(E * N * K * b / 32), sizeof *out);
    assert_non_null(out);
    hc_repack_params p = {.bits = b, .act_bits = a, .transposed = tr, .E = E, .N = N, .K = K};
    hc_error err = {0};
    assert_int_equal(hc_repack_weight(&p, in, out, &err), HC_OK);
    free(in);
    return out;
}

/* ---- (a) golden words of spec 4.9 --------------------------------------- */

typedef struct {
    int b, a, tr;
    uint32_t row0[8], row1[2];
} golden_words;

static const golden_words goldens[] = {
    {4, 16, 0, {0x2b97ec20, 0xa36fb4f8, 0x703c8c70, 0x4804594d, 0x0ec51a0e, 0xd692e7db,
                0xa36abfa3, 0x7b378c70}, {0xb42b7564, 0x814d9281}},
    {4, 16, 1, {0x29b7e2c0, 0xa63fbf48, 0x730c87c0, 0x4084549d, 0x0ce510ae, 0xd962ed7b,
                0xa63abaf3, 0x73b787c0}, {0xb24b7654, 0x841d9821}},
    {3, 16, 0, {0x239f6ca0, 0xe36b38f0, 0x9018a29a, 0x8e459a86, 0x56d66f57, 0xe76e19e1,
                0x34a87531, 0x8d39d68d}, {0x34ab7564, 0x45055e45}},
    {8, 16, 0, {0x89474200, 0x027bae2c, 0x76af1f58, 0xeae38b84, 0x631cf7b0, 0xd75068dc,
                0x5084d40d, 0xc4b84539}, {0x12cbc684, 0x0b84b735}},
    {5, 16, 0, {0x09c76260, 0x5a3f7e60, 0x1ae3bb84, 0xaf209178, 0x20c42ccd, 0x1cf5904e,
                0x240a352e, 0xbd565e17}, {0x522ba6a4, 0x93f4a385}},
    {4, 8, 0, {0xe57eb740, 0x7e3a4b5c, 0xb24bdf18, 0x46571324, 0xf68fc851, 0x8f905c6d,
               0x135ce579, 0xac68798a}, {0xb24b841d, 0x905c6d7e}},
    {8, 8, 0, {0xd58e4700, 0x5e17cb84, 0x1eca7b2c, 0x27d38435, 0x620baf58, 0xeb943de1,
               0xa647e384, 0xb455f192}, {0xe29b540d, 0x6b24d891}},
    {2, 4, 0, {0x23499e34, 0x788d2278, 0x9de3449e, 0xd27b8d22, 0x3449e334, 0x8dd2778d,
               0x9e3349ee, 0x678cd277}, {0x99e3749e, 0x788d2678}},
};

static void test_golden_words(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof goldens / sizeof goldens[0]; t++) {
        const golden_words *g = &goldens[t];
        int64_t N = 64, K = g->a == 4 ? 128 : 64;
        uint8_t *codes = malloc((size_t)(N * K));
        assert_non_null(codes);
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                codes[n * K + k] = (uint8_t)(((131 * n + 71 * k + n * k) % 251) % (1 << g->b));
        uint32_t *out = run_repack(codes, g->b, g->a, g->tr, 1, N, K);
        int64_t row = N * (256 / g->a) * g->b / 32;
        for (int w = 0; w < 8; w++) assert_int_equal(out[w], g->row0[w]);
        for (int w = 0; w < 2; w++) assert_int_equal(out[row + w], g->row1[w]);
        free(out);
        free(codes);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
