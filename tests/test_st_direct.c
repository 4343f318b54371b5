/* test_st_direct.c - staged O_DIRECT writing (hc_st_direct.h): the file holds
 * exactly the bytes put, in pieces of every size across stage boundaries and
 * with a tail that is not a whole block (the padding cut off), through the
 * O_DIRECT descriptor where the file system gives one and through the
 * ordinary descriptor (the fallback) alike, with the flusher thread, with
 * none (the caller's thread writes) and with it stopped half-way; a safetensors file written by
 * the writer (which stages) reads back whole; bytes copied from an input
 * model's mapping (read with pread) and from memory, with their CRCs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "hc_crc32.h"
#include "hc_safetensors.h"
#include "hc_st_direct.h"
#include "hc_test_util.h"

static uint32_t seed = 12345;

static unsigned char next_byte(void)
{
    seed = seed * 1103515245u + 12345u;
    return (unsigned char)(seed >> 16);
}

enum { VIA_THREAD, VIA_FALLBACK_FD, VIA_NO_THREAD, VIA_THREAD_STOPPED, VIA_COUNT };

/* Writes `total` random bytes in pieces of varying size through d (direct or,
 * with VIA_FALLBACK_FD, the ordinary descriptor; without the flusher thread,
 * or with it stopped half-way) and compares the file. */
static void write_and_check(size_t total, int via)
{
    char *dir = hc_test_mkdtemp("direct");
    assert_non_null(dir);
    char *path = hc_test_path_join(dir, "f.bin");
    assert_non_null(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    hc_st_direct d;
    assert_int_equal(hc_st_direct_open(&d, path, fd), 1);
    if (via == VIA_FALLBACK_FD && d.dfd >= 0) {
        close(d.dfd);
        d.dfd = -1;
    }
    if (via == VIA_NO_THREAD) hc_st_direct_stop_flusher(&d);
    assert_int_equal(d.started, via != VIA_NO_THREAD);
    unsigned char *want = malloc(total + 1);
    assert_non_null(want);
    for (size_t i = 0; i < total; i++) want[i] = next_byte();
    hc_error err;
    size_t at = 0, step = 1;
    while (at < total) {
        if (via == VIA_THREAD_STOPPED && at >= total / 2 && d.started) hc_st_direct_stop_flusher(&d);
        size_t n = total - at < step ? total - at : step;
        assert_int_equal(hc_st_direct_put(&d, want + at, n, &err), HC_OK);
        at += n;
        step = step * 3 + 7; /* 1, 10, 37, ... past the stage size */
        if (step > 3 * HC_ST_DIRECT_STAGE) step = 1;
    }
    assert_int_equal(hc_st_direct_finish(&d, &err), HC_OK);
    hc_st_direct_close(&d);
    assert_int_equal(fsync(fd), 0);
    close(fd);
    size_t len = 0;
    unsigned char *got = hc_test_read_file(path, &len);
    assert_non_null(got);
    assert_int_equal(len, total);
    assert_memory_equal(got, want, total);
    free(got);
    free(want);
    hc_test_rm_rf(dir);
    free(path);
    free(dir);
}

static void test_direct_sizes(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 4095, 4096, 4097, HC_ST_DIRECT_STAGE - 1, HC_ST_DIRECT_STAGE,
                            HC_ST_DIRECT_STAGE + 1, 3 * HC_ST_DIRECT_STAGE + 12345};
    for (int via = 0; via < VIA_COUNT; via++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
            write_and_check(sizes[i], via);
}

/* Nothing put: an empty file, no write. */
static void test_direct_empty(void **state)
{
    (void)state;
    write_and_check(0, VIA_THREAD);
    write_and_check(0, VIA_NO_THREAD);
}

/* The writer stages its header and tensors: a file of odd sizes reads back. */
static void test_writer_round_trip(void **state)
{
    (void)state;
    char *dir = hc_test_mkdtemp("direct-st");
    assert_non_null(dir);
    char *path = hc_test_path_join(dir, "m.safetensors");
    assert_non_null(path);
    const int64_t n = 3 * (int64_t)HC_ST_DIRECT_STAGE / 4 + 3; /* bytes of a U8 tensor */
    unsigned char *a = malloc((size_t)n), b[5] = {1, 2, 3, 4, 5};
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = next_byte();
    hc_tensor t[2] = {{.dtype = HC_DT_U8, .ndim = 1, .shape = {n}, .data = a, .nbytes = (size_t)n},
                      {.dtype = HC_DT_U8, .ndim = 1, .shape = {5}, .data = b, .nbytes = 5}};
    const char *names[2] = {"a", "b"};
    hc_error err;
    assert_int_equal(hc_st_write_file(path, t, names, 2, NULL, &err), HC_OK);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, &err), HC_OK);
    const hc_st_tensor *ta = hc_st_find(f, "a"), *tb = hc_st_find(f, "b");
    assert_non_null(ta);
    assert_non_null(tb);
    assert_memory_equal(ta->data, a, (size_t)n);
    assert_memory_equal(tb->data, b, 5);
    hc_st_close(f);
    free(a);
    hc_test_rm_rf(dir);
    free(path);
    free(dir);
}

/* hc_st_writer_copy_async: bytes of an input mapping read by pread into the
 * stages, bytes outside every mapping (a heap buffer) copied; each chunk's
 * CRC as the bytes', the file as the sources. */
static uint32_t copy_crc;

static void copy_done(void *ctx, int written, uint32_t crc)
{
    (void)ctx;
    assert_int_equal(written, 1);
    copy_crc = crc;
}

static void test_writer_copy_from_model(void **state)
{
    (void)state;
    char *dir = hc_test_mkdtemp("direct-copy");
    assert_non_null(dir);
    char *in = hc_test_path_join(dir, "model.safetensors"), *out = hc_test_path_join(dir, "o.st");
    assert_non_null(in);
    assert_non_null(out);
    const int64_t n = 5 * (int64_t)HC_ST_DIRECT_STAGE / 2 + 77;
    unsigned char *a = malloc((size_t)n), heap[300];
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = next_byte();
    for (size_t i = 0; i < sizeof heap; i++) heap[i] = next_byte();
    hc_tensor t = {.dtype = HC_DT_U8, .ndim = 1, .shape = {n}, .data = a, .nbytes = (size_t)n};
    const char *name = "a";
    hc_error err;
    assert_int_equal(hc_st_write_file(in, &t, &name, 1, NULL, &err), HC_OK);
    hc_st_model *m = NULL;
    assert_int_equal(hc_st_model_open(dir, &m, &err), HC_OK);
    const hc_st_tensor *src = hc_st_model_find(m, "a");
    assert_non_null(src);
    hc_st_writer *w = NULL;
    assert_int_equal(hc_st_writer_open(out, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "a", HC_DT_U8, 1, (int64_t[1]){n}, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "h", HC_DT_U8, 1, (int64_t[1]){300}, &err), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_OK);
    const unsigned char *d = src->data;
    size_t half = (size_t)n / 2;
    assert_int_equal(hc_st_writer_copy_async(w, 0, m, d, half, NULL, NULL, &err), HC_OK);
    assert_int_equal(hc_st_writer_copy_async(w, 0, m, d + half, (size_t)n - half, copy_done,
                                             NULL, &err), HC_OK);
    assert_int_equal(hc_st_writer_flush(w, &err), HC_OK);
    assert_int_equal(copy_crc, hc_crc32(0, a, (size_t)n));
    assert_int_equal(hc_st_writer_copy_async(w, 1, m, heap, sizeof heap, copy_done, NULL, &err),
                     HC_OK);
    assert_int_equal(hc_st_writer_finish(w, &err), HC_OK);
    assert_int_equal(copy_crc, hc_crc32(0, heap, sizeof heap));
    hc_st_model_close(m);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(out, &f, &err), HC_OK);
    assert_memory_equal(hc_st_find(f, "a")->data, a, (size_t)n);
    assert_memory_equal(hc_st_find(f, "h")->data, heap, sizeof heap);
    hc_st_close(f);
    free(a);
    hc_test_rm_rf(dir);
    free(in);
    free(out);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_sizes),
        cmocka_unit_test(test_direct_empty),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_writer_copy_from_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
