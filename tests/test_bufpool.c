/* test_bufpool.c - hc_bufpool: a buffer given back is reused for the same
 * size only, zeroed by hc_bufpool_calloc, as it was by hc_bufpool_take; the
 * oldest kept goes when the pool is full; large buffers (on huge pages)
 * behave the same; a NULL pool is plain calloc (malloc) / free. (Leaks show
 * under make asan.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "hc_bufpool.h"

static int all_zero(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

static void test_reuse_and_zero(void **state)
{
    (void)state;
    hc_bufpool *p = NULL;
    hc_error e;
    assert_int_equal(hc_bufpool_new(2, &p, &e), HC_OK);
    unsigned char *a = hc_bufpool_calloc(p, 4096);
    assert_non_null(a);
    memset(a, 0xAB, 4096);
    hc_bufpool_put(p, a, 4096);
    unsigned char *other = hc_bufpool_calloc(p, 4000); /* another size: a new buffer */
    assert_non_null(other);
    assert_ptr_not_equal(other, a);
    unsigned char *again = hc_bufpool_calloc(p, 4096); /* the kept one, zeroed */
    assert_ptr_equal(again, a);
    assert_true(all_zero(again, 4096));
    /* full pool: the oldest kept is freed */
    hc_bufpool_put(p, again, 4096);
    hc_bufpool_put(p, other, 4000);
    unsigned char *third = malloc(100);
    assert_non_null(third);
    hc_bufpool_put(p, third, 100); /* evicts `again` (4096) */
    unsigned char *x = hc_bufpool_calloc(p, 4000);
    assert_ptr_equal(x, other);
    unsigned char *y = hc_bufpool_calloc(p, 4096);
    assert_non_null(y);
    free(x);
    free(y);
    hc_bufpool_free(p); /* frees `third` */
}

/* hc_bufpool_take: the kept buffer as it was (not zeroed), a new one for
 * another size, malloc without a pool. */
static void test_take(void **state)
{
    (void)state;
    hc_bufpool *p = NULL;
    hc_error e;
    assert_int_equal(hc_bufpool_new(2, &p, &e), HC_OK);
    unsigned char *a = hc_bufpool_take(p, 4096);
    assert_non_null(a);
    memset(a, 0xAB, 4096);
    hc_bufpool_put(p, a, 4096);
    unsigned char *other = hc_bufpool_take(p, 4095);
    assert_non_null(other);
    assert_ptr_not_equal(other, a);
    unsigned char *again = hc_bufpool_take(p, 4096);
    assert_ptr_equal(again, a);
    assert_int_equal(again[0], 0xAB);
    assert_int_equal(again[4095], 0xAB);
    unsigned char *fresh = hc_bufpool_take(p, 4096); /* none kept now */
    assert_non_null(fresh);
    assert_ptr_not_equal(fresh, a);
    free(again);
    free(other);
    free(fresh);
    unsigned char *b = hc_bufpool_take(NULL, 64);
    assert_non_null(b);
    hc_bufpool_put(NULL, b, 64);
    hc_bufpool_free(p);
}

/* Large buffers (huge-page aligned and advised): calloc zeroed when new and
 * when reused, take usable to the last byte, both freed by free(). */
static void test_large(void **state)
{
    (void)state;
    hc_bufpool *p = NULL;
    hc_error e;
    const size_t n = (9u << 20) + 3;
    assert_int_equal(hc_bufpool_new(1, &p, &e), HC_OK);
    unsigned char *a = hc_bufpool_calloc(p, n);
    assert_non_null(a);
    assert_true(all_zero(a, n));
    memset(a, 0xCD, n);
    hc_bufpool_put(p, a, n);
    unsigned char *again = hc_bufpool_calloc(p, n);
    assert_ptr_equal(again, a);
    assert_true(all_zero(again, n));
    unsigned char *t = hc_bufpool_take(p, n); /* none kept: a new one */
    assert_non_null(t);
    memset(t, 0xEF, n);
    assert_int_equal(t[n - 1], 0xEF);
    free(t);
    hc_bufpool_put(p, again, n);
    hc_bufpool_free(p);
}

static void test_null_pool(void **state)
{
    (void)state;
    unsigned char *b = hc_bufpool_calloc(NULL, 64);
    assert_non_null(b);
    assert_true(all_zero(b, 64));
    hc_bufpool_put(NULL, b, 64);
    hc_bufpool_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse_and_zero),
        cmocka_unit_test(test_take),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_null_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
