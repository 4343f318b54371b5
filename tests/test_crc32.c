/* test_crc32.c - hc_crc32 (carry-less multiplication where the CPU has it:
 * PCLMULQDQ, and VPCLMULQDQ on 256-bit and 512-bit registers, each level
 * tested) equals
 * zlib's crc32 for every length around the folding boundaries (0..1100
 * bytes), every alignment, chained calls and a buffer of 3 MiB + 5.
 * Skipped (SKIP[isa]) where the CPU has no PCLMULQDQ: both are zlib then. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "hc_crc32.h"

static void skip_without_clmul(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) return;
#endif
    printf("SKIP[isa]: no PCLMULQDQ here: hc_crc32 is zlib's crc32, nothing to compare\n");
    skip();
}

static unsigned char *random_bytes(size_t n)
{
    unsigned char *b = malloc(n);
    assert_non_null(b);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        b[i] = (unsigned char)(s >> 56);
    }
    return b;
}

static void test_lengths_and_alignments(void **state)
{
    (void)state;
    skip_without_clmul();
    unsigned char *b = random_bytes(1200);
    for (int level = 1; level <= 3; level++)
        for (size_t len = 0; len <= 1100; len++)
            for (size_t off = 0; off < 16; off += len < 200 ? 1 : 5) {
                uint32_t want = hc_crc32_zlib(0x12345678u, b + off, len);
                if (hc_crc32_level(level, 0x12345678u, b + off, len) != want) {
                    print_error("level %d: length %zu at offset %zu differs from zlib\n", level,
                                len, off);
                    fail();
                }
            }
    free(b);
}

static void test_chained_and_large(void **state)
{
    (void)state;
    skip_without_clmul();
    size_t n = (3u << 20) + 5;
    unsigned char *b = random_bytes(n);
    uint32_t want = hc_crc32_zlib(0, b, n), c = 0;
    assert_int_equal(hc_crc32(0, b, n), want);
    assert_int_equal(hc_crc32_level(1, 0, b, n), want);
    assert_int_equal(hc_crc32_level(2, 0, b, n), want);
    assert_int_equal(hc_crc32_level(3, 0, b, n), want);
    for (size_t at = 0, step = 1; at < n; at += step, step = step * 3 + 7)
        c = hc_crc32(c, b + at, step < n - at ? step : n - at);
    assert_int_equal(c, want);
    assert_int_equal(hc_crc32(0, "123456789", 9), 0xCBF43926u); /* the check value */
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths_and_alignments),
        cmocka_unit_test(test_chained_and_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
