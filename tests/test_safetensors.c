/* test_safetensors.c - reader, model directory and writer tests.
 *
 * Without arguments: runs the CMocka suite. Two helper modes are used by
 * tests/py/test_safetensors_roundtrip.py:
 *   --copy IN OUT  read IN with our reader, write every tensor and the
 *                  metadata with our writer to OUT
 *   --dump IN      print "M\tkey\tvalue" per metadata entry, then
 *                  "T\tname\tdtype\td0,d1,..\tcrc32\tnbytes" per tensor */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "hc_safetensors.h"
#include "hc_test_util.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct {
    char *dir;
} fixture;

static int setup_dir(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    f->dir = hc_test_mkdtemp("st");
    if (f->dir == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown_dir(void **state)
{
    fixture *f = *state;
    int rc = hc_test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return rc;
}

/* Writes <8-byte N><header><data_len bytes of 0xA5> to dir/name; returns path. */
static char *put_st(const char *dir, const char *name, const char *header, size_t hlen,
                    uint64_t n_field, size_t data_len)
{
    char *path = hc_test_path_join(dir, name);
    size_t total = 8 + hlen + data_len;
    unsigned char *buf = malloc(total);
    assert_non_null(path);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n_field >> (8 * i));
    memcpy(buf + 8, header, hlen);
    memset(buf + 8 + hlen, 0xA5, data_len);
    assert_int_equal(hc_test_write_file(path, buf, total), 0);
    free(buf);
    return path;
}

static char *put_json(const char *dir, const char *name, const char *header, size_t data_len)
{
    return put_st(dir, name, header, strlen(header), strlen(header), data_len);
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle) == NULL) fail_msg("\"%s\" not found in \"%s\"", needle, haystack);
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 31u + i * 7u + (i >> 3));
}

/* ---- round trips ---------------------------------------------------------- */

enum { N_ALL = HC_DT_COUNT + 2 };

/* One tensor per dtype (sub-byte ones with whole-byte sizes), then a 0-d
 * scalar and an empty tensor, filled with a pattern. */
static void make_all_tensors(hc_tensor *t, char (*names)[32], const char **name_ptrs)
{
    hc_error err = {0};
    for (int i = 0; i < N_ALL; i++) {
        int64_t shape[2] = {2, 4};
        hc_dtype dt = i < HC_DT_COUNT ? (hc_dtype)i : HC_DT_F32;
        int ndim = i == HC_DT_COUNT ? 0 : 2;                    /* scalar */
        if (i == HC_DT_COUNT + 1) shape[0] = 0;                 /* empty */
        if (dt == HC_DT_F6_E2M3 || dt == HC_DT_F6_E3M2) shape[1] = 8;
        assert_int_equal(hc_tensor_alloc(&t[i], dt, ndim, shape, &err), HC_OK);
        fill_pattern(t[i].data, t[i].nbytes, (unsigned)i);
        snprintf(names[i], 32, "t%02d.%s", i, hc_dtype_name(dt));
        name_ptrs[i] = names[i];
    }
}

static void check_same_tensor(const hc_st_file *f, const char *name, const hc_tensor *t)
{
    const hc_st_tensor *d = hc_st_find(f, name);
    assert_non_null(d);
    assert_string_equal(d->name, name);
    assert_int_equal(d->dtype, t->dtype);
    assert_int_equal(d->ndim, t->ndim);
    assert_memory_equal(d->shape, t->shape, (size_t)t->ndim * sizeof(int64_t));
    assert_int_equal(d->nbytes, t->nbytes);
    if (d->nbytes) assert_memory_equal(d->data, t->data, d->nbytes);
    hc_tensor v;
    hc_st_tensor_view(d, &v);
    assert_int_equal(v.owned, 0);
    assert_int_equal(v.nbytes, d->nbytes);
    assert_ptr_equal(v.data, d->data);
    hc_tensor_free(&v);
}

static void test_roundtrip_all_dtypes(void **state)
{
    fixture *fx = *state;
    hc_tensor t[N_ALL];
    char names[N_ALL][32];
    const char *name_ptrs[N_ALL];
    hc_error err = {0};
    make_all_tensors(t, names, name_ptrs);
    const char *meta[] = {"format", "pt", "note", "quote \" and \\ and \n", NULL};
    char *path = hc_test_path_join(fx->dir, "all.safetensors");
    assert_int_equal(hc_st_write_file(path, t, name_ptrs, N_ALL, meta, &err), HC_OK);
    size_t before_len = 0, after_len = 0;
    unsigned char *before = hc_test_read_file(path, &before_len);
    assert_non_null(before);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | before[i];
    assert_int_equal((8 + hlen) % 8, 0);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, &err), HC_OK);
    assert_int_equal(hc_st_count(f), N_ALL);
    assert_string_equal(hc_st_metadata_get(f, "format"), "pt");
    assert_string_equal(hc_st_metadata_get(f, "note"), "quote \" and \\ and \n");
    assert_null(hc_st_metadata_get(f, "absent"));
    for (int i = 0; i < N_ALL; i++) {
        assert_string_equal(hc_st_tensor_at(f, (size_t)i)->name, names[i]); /* file order */
        check_same_tensor(f, names[i], &t[i]);
        hc_tensor_free(&t[i]);
    }
    assert_null(hc_st_tensor_at(f, N_ALL));
    assert_null(hc_st_find(f, "nope"));
    hc_st_close(f);
    unsigned char *after = hc_test_read_file(path, &after_len);
    assert_non_null(after);
    assert_int_equal(after_len, before_len); /* the reader never writes */
    assert_memory_equal(after, before, before_len);
    free(before);
    free(after);
    free(path);
}

/* A 3-byte U8 tensor first puts the F32 tensor at an odd address. */
static void test_unaligned_data(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    char *path = hc_test_path_join(fx->dir, "odd.safetensors");
    hc_st_writer *w = NULL;
    int64_t s3 = 3, s2 = 2;
    const unsigned char u8[3] = {1, 2, 3};
    const float f32[2] = {1.5f, -2.25f};
    assert_int_equal(hc_st_writer_open(path, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "u", HC_DT_U8, 1, &s3, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "f", HC_DT_F32, 1, &s2, &err), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 0, u8, 3, &err), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 1, f32, 4, &err), HC_OK); /* two chunks */
    assert_int_equal(hc_st_writer_write(w, 1, f32 + 1, 4, &err), HC_OK);
    assert_int_equal(hc_st_writer_finish(w, &err), HC_OK);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, &err), HC_OK);
    const hc_st_tensor *d = hc_st_find(f, "f");
    assert_non_null(d);
    assert_int_equal(d->offset, 3);
    assert_int_not_equal((uintptr_t)d->data % 4, 0);
    float got[2];
    memcpy(got, d->data, sizeof got);
    assert_true(got[0] == 1.5f && got[1] == -2.25f);
    hc_st_close(f);
    free(path);
}

/* Key order in the JSON differs from offset order: the API lists by offset. */
/* hc_st_pread: the mapped bytes from the file; -1 outside the mapping, for a
 * buffer-backed file, and for bytes the file no longer has (truncated). */
static void test_pread(void **state)
{
    fixture *f = *state;
    char *path = hc_test_path_join(f->dir, "p.safetensors");
    assert_non_null(path);
    enum { LEN = 100003 };
    unsigned char *a = malloc(LEN), got[4096];
    assert_non_null(a);
    for (int i = 0; i < LEN; i++) a[i] = (unsigned char)(i * 7 + 3);
    hc_tensor t = {.dtype = HC_DT_U8, .ndim = 1, .shape = {LEN}, .data = a, .nbytes = LEN};
    const char *name = "a";
    hc_error err;
    assert_int_equal(hc_st_write_file(path, &t, &name, 1, NULL, &err), HC_OK);
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(path, &st, &err), HC_OK);
    const unsigned char *d = hc_st_find(st, "a")->data;
    assert_int_equal(hc_st_pread(st, d + 5, sizeof got, got), 0);
    assert_memory_equal(got, a + 5, sizeof got);
    assert_int_equal(hc_st_pread(st, d + LEN - 10, 10, got), 0);
    assert_memory_equal(got, a + LEN - 10, 10);
    assert_int_equal(hc_st_pread(st, d + LEN - 10, 11, got), -1); /* past the file's end */
    assert_int_equal(hc_st_pread(st, a, 10, got), -1);             /* not in the mapping */
    size_t len = 0;
    unsigned char *bytes = hc_test_read_file(path, &len);
    assert_non_null(bytes);
    hc_st_file *buf = NULL;
    assert_int_equal(hc_st_open_buffer(bytes, len, "buf", &buf, &err), HC_OK);
    assert_int_equal(hc_st_pread(buf, hc_st_find(buf, "a")->data, 10, got), -1);
    hc_st_close(buf);
    free(bytes);
    assert_int_equal(truncate(path, 4096), 0);
    assert_int_equal(hc_st_pread(st, d + LEN - 10, 10, got), -1); /* the file shrank */
    assert_int_equal(hc_st_pread(st, d, 10, got), 0);               /* what it still has */
    assert_memory_equal(got, a, 10);
    hc_st_close(st);
    free(a);
    free(path);
}

static void test_file_order_and_lenient_bits(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    const char *h = "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                    "\"caf\\u00e9\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],\"x\":1},"
                    "\"__metadata__\":{\"k\":\"v\"}}\n  \t";
    char *path = put_json(fx->dir, "order.safetensors", h, 4); /* no 8-byte padding */
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, &err), HC_OK);
    assert_string_equal(hc_st_tensor_at(f, 0)->name, "caf\xc3\xa9");
    assert_string_equal(hc_st_tensor_at(f, 1)->name, "b");
    const char *k = NULL, *v = NULL;
    assert_int_equal(hc_st_metadata_count(f), 1);
    assert_int_equal(hc_st_metadata_at(f, 0, &k, &v), 0);
    assert_string_equal(k, "k");
    assert_string_equal(v, "v");
    assert_int_equal(hc_st_metadata_at(f, 1, &k, &v), -1);
    assert_string_equal(hc_st_path(f), path);
    hc_st_close(f);
    free(path);
}

/* ---- writer ---------------------------------------------------------------- */

static void test_writer_temp_then_rename(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    char *path = hc_test_path_join(fx->dir, "w.safetensors");
    hc_st_writer *w = NULL;
    int64_t s = 4;
    assert_int_equal(hc_st_writer_open(path, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "x", HC_DT_U8, 1, &s, &err), HC_OK);
    assert_int_equal(hc_st_writer_set_metadata(w, "a", "1", &err), HC_OK);
    assert_int_equal(hc_st_writer_set_metadata(w, "a", "2", &err), HC_OK); /* replaces */
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 0, "ab", 2, &err), HC_OK);
    assert_false(hc_test_exists(path));
    assert_int_equal(hc_test_dir_count(fx->dir), 1); /* only the temporary file */
    assert_int_equal(hc_st_writer_write(w, 0, "cd", 2, &err), HC_OK);
    assert_false(hc_test_exists(path));
    assert_int_equal(hc_st_writer_finish(w, &err), HC_OK);
    assert_true(hc_test_exists(path));
    assert_int_equal(hc_test_dir_count(fx->dir), 1);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, &err), HC_OK);
    assert_string_equal(hc_st_metadata_get(f, "a"), "2");
    assert_memory_equal(hc_st_find(f, "x")->data, "abcd", 4);
    hc_st_close(f);
    free(path);
}

static void test_writer_abort_leaves_nothing(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    char *path = hc_test_path_join(fx->dir, "a.safetensors");
    hc_st_writer *w = NULL;
    int64_t s = 4;
    assert_int_equal(hc_st_writer_open(path, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "x", HC_DT_U8, 1, &s, &err), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 0, "ab", 2, &err), HC_OK);
    hc_st_writer_abort(w);
    assert_int_equal(hc_test_dir_count(fx->dir), 0);
    /* finish with missing bytes fails, removes the temporary, leaves nothing */
    assert_int_equal(hc_st_writer_open(path, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "x", HC_DT_U8, 1, &s, &err), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_OK);
    assert_int_equal(hc_st_writer_finish(w, &err), HC_ERR_ARG);
    assert_contains(err.msg, "tensor 'x' is incomplete");
    assert_int_equal(hc_test_dir_count(fx->dir), 0);
    free(path);
}

static void test_writer_misuse(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    char *path = hc_test_path_join(fx->dir, "m.safetensors");
    hc_st_writer *w = NULL;
    int64_t s4 = 4, s3 = 3, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(hc_st_writer_open(path, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "__metadata__", HC_DT_U8, 1, &s4, &err), HC_ERR_ARG);
    assert_contains(err.msg, "reserved");
    assert_int_equal(hc_st_writer_add(w, "f4", HC_DT_F4, 1, &s3, &err), HC_ERR_ARG);
    assert_int_equal(hc_st_writer_add(w, "r9", HC_DT_U8, 9, s9, &err), HC_ERR_ARG);
    assert_int_equal(hc_st_writer_add(w, "bad\xff", HC_DT_U8, 1, &s4, &err), HC_ERR_ARG);
    assert_int_equal(hc_st_writer_write(w, 0, "x", 1, &err), HC_ERR_ARG); /* before begin */
    assert_int_equal(hc_st_writer_add(w, "a", HC_DT_U8, 1, &s4, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "e", HC_DT_U8, 0, &s4, &err), HC_OK); /* scalar U8 */
    assert_int_equal(hc_st_writer_add(w, "b", HC_DT_U8, 1, &s4, &err), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "late", HC_DT_U8, 1, &s4, &err), HC_ERR_ARG);
    assert_int_equal(hc_st_writer_write(w, 2, "xxxx", 4, &err), HC_ERR_ARG); /* out of order */
    assert_contains(err.msg, "before tensor 'a' is complete");
    assert_int_equal(hc_st_writer_write(w, 0, "xxxxx", 5, &err), HC_ERR_ARG); /* overrun */
    assert_contains(err.msg, "overruns");
    assert_int_equal(hc_st_writer_write(w, 0, "xxxx", 4, &err), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 1, "y", 1, &err), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 0, "x", 1, &err), HC_ERR_ARG); /* complete */
    assert_int_equal(hc_st_writer_write(w, 9, "x", 1, &err), HC_ERR_ARG);
    hc_st_writer_abort(w);
    /* duplicate names are caught when the header is built */
    assert_int_equal(hc_st_writer_open(path, &w, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "d", HC_DT_U8, 1, &s4, &err), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "d", HC_DT_U8, 1, &s4, &err), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &err), HC_ERR_ARG);
    assert_contains(err.msg, "declared twice");
    hc_st_writer_abort(w);
    assert_int_equal(hc_test_dir_count(fx->dir), 0);
    free(path);
}

static void test_empty_file_roundtrip(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    char *path = hc_test_path_join(fx->dir, "none.safetensors");
    assert_int_equal(hc_st_write_file(path, NULL, NULL, 0, NULL, &err), HC_OK);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, &err), HC_OK);
    assert_int_equal(hc_st_count(f), 0);
    assert_int_equal(hc_st_metadata_count(f), 0);
    hc_st_close(f);
    free(path);
}

/* ---- model directories ------------------------------------------------------ */

/* Writes dir/name holding U8 tensors called names[i] of 1 byte each (value i+seed). */
static void put_shard(const char *dir, const char *name, const char *const *names, size_t n,
                      unsigned seed)
{
    hc_tensor t[8];
    hc_error err = {0};
    int64_t one = 1;
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(hc_tensor_alloc(&t[i], HC_DT_U8, 1, &one, &err), HC_OK);
        ((unsigned char *)t[i].data)[0] = (unsigned char)(seed + i);
    }
    char *path = hc_test_path_join(dir, name);
    assert_int_equal(hc_st_write_file(path, t, names, n, NULL, &err), HC_OK);
    for (size_t i = 0; i < n; i++) hc_tensor_free(&t[i]);
    free(path);
}

static void put_text(const char *dir, const char *name, const char *text)
{
    char *path = hc_test_path_join(dir, name);
    assert_int_equal(hc_test_write_file(path, text, strlen(text)), 0);
    free(path);
}

static void put_two_shards(const char *dir)
{
    const char *a[] = {"z.first", "only_in_shard"};
    const char *b[] = {"b.weight", "a.weight", "dup"};
    put_shard(dir, "model-00001-of-00002.safetensors", a, 2, 10);
    put_shard(dir, "model-00002-of-00002.safetensors", b, 3, 20);
}

static void test_model_index(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    put_two_shards(fx->dir);
    put_text(fx->dir, "model.safetensors.index.json",
             "{\"metadata\":{\"total_size\":12345},\"weight_map\":{"
             "\"a.weight\":\"model-00002-of-00002.safetensors\","
             "\"dup\":\"model-00002-of-00002.safetensors\","
             "\"b.weight\":\"model-00002-of-00002.safetensors\","
             "\"z.first\":\"model-00001-of-00002.safetensors\"}}");
    hc_st_model *m = NULL;
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_OK);
    assert_int_equal(hc_st_model_count(m), 4);
    assert_int_equal(hc_st_model_file_count(m), 2);
    const char *order[] = {"z.first", "b.weight", "a.weight", "dup"};
    for (size_t i = 0; i < 4; i++) assert_string_equal(hc_st_model_tensor_at(m, i)->name, order[i]);
    assert_null(hc_st_model_tensor_at(m, 4));
    const hc_st_tensor *dup = hc_st_model_find(m, "dup");
    assert_non_null(dup);
    assert_contains(dup->file, "model-00002-of-00002.safetensors");
    assert_int_equal(((const unsigned char *)dup->data)[0], 22);
    assert_null(hc_st_model_find(m, "only_in_shard"));
    assert_non_null(hc_st_model_file_at(m, 1));
    assert_null(hc_st_model_file_at(m, 2));
    hc_st_model_close(m);
}

/* One name in two places is refused naming both, never read twice: a copy in a
 * shard the index does not name, a weight_map key given twice. */
static void test_model_index_duplicates(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    hc_st_model *m = NULL;
    const char *s1 = "model-00001-of-00002.safetensors", *s2 = "model-00002-of-00002.safetensors";
    const char *a[] = {"z.first", "dup"}, *b[] = {"b.weight", "dup"};
    put_shard(fx->dir, s1, a, 2, 10);
    put_shard(fx->dir, s2, b, 2, 20);
    put_text(fx->dir, "model.safetensors.index.json",
             "{\"weight_map\":{\"z.first\":\"model-00001-of-00002.safetensors\","
             "\"b.weight\":\"model-00002-of-00002.safetensors\","
             "\"dup\":\"model-00002-of-00002.safetensors\"}}");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_null(m);
    assert_contains(err.msg, "tensor 'dup' appears in both");
    assert_contains(err.msg, s1);
    assert_contains(err.msg, s2);
    put_text(fx->dir, "model.safetensors.index.json",
             "{\"weight_map\":{\"z.first\":\"model-00001-of-00002.safetensors\","
             "\"dup\":\"model-00001-of-00002.safetensors\","
             "\"dup\":\"model-00002-of-00002.safetensors\"}}");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_contains(err.msg, "tensor 'dup' appears in both");
    assert_contains(err.msg, s1);
    assert_contains(err.msg, s2);
    const char *b1[] = {"b.weight"};
    put_shard(fx->dir, s2, b1, 1, 20); /* dup now only in shard 1, listed twice */
    put_text(fx->dir, "model.safetensors.index.json",
             "{\"weight_map\":{\"dup\":\"model-00001-of-00002.safetensors\","
             "\"dup\":\"model-00001-of-00002.safetensors\"}}");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_contains(err.msg, "lists tensor 'dup' twice");
    assert_contains(err.msg, s1);
}

static void test_model_index_errors(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    hc_st_model *m = NULL;
    put_two_shards(fx->dir);
    put_text(fx->dir, "model.safetensors.index.json",
             "{\"weight_map\":{\"x\":\"model-00001-of-00002.safetensors\","
             "\"gone\":\"model-00003-of-00003.safetensors\"}}");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_IO);
    assert_null(m);
    assert_contains(err.msg, "tensor 'gone'");
    assert_contains(err.msg, "shard 'model-00003-of-00003.safetensors'");
    put_text(fx->dir, "model.safetensors.index.json",
             "{\"weight_map\":{\"missing.weight\":\"model-00001-of-00002.safetensors\"}}");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_contains(err.msg, "tensor 'missing.weight'");
    assert_contains(err.msg, "'model-00001-of-00002.safetensors', which does not contain it");
    const char *escapes[] = {"../model-00001-of-00002.safetensors", "sub/x.safetensors",
                             "/etc/passwd", "..", ""};
    for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"weight_map\":{\"w\":\"%s\"}}", escapes[i]);
        put_text(fx->dir, "model.safetensors.index.json", json);
        assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
        assert_contains(err.msg, "tensor 'w'");
        assert_contains(err.msg, "not a plain file name");
    }
    put_text(fx->dir, "model.safetensors.index.json", "{\"weight_map\":[1]}");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_contains(err.msg, "weight_map");
    put_text(fx->dir, "model.safetensors.index.json", "{\"weight_map\":");
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_contains(err.msg, "model.safetensors.index.json: not valid JSON");
}

static void test_model_single_and_glob(void **state)
{
    fixture *fx = *state;
    hc_error err = {0};
    hc_st_model *m = NULL;
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_IO); /* empty dir */
    assert_contains(err.msg, "no model.safetensors.index.json");
    const char *a[] = {"a1", "a2"}, *b[] = {"b1"}, *s[] = {"s"};
    put_shard(fx->dir, "b.safetensors", b, 1, 0);
    put_shard(fx->dir, "a.safetensors", a, 2, 0);
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_OK);
    assert_int_equal(hc_st_model_count(m), 3);
    assert_string_equal(hc_st_model_tensor_at(m, 0)->name, "a1");
    assert_string_equal(hc_st_model_tensor_at(m, 2)->name, "b1");
    hc_st_model_close(m);
    put_shard(fx->dir, "c.safetensors", a, 1, 0); /* a1 again */
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_ERR_FORMAT);
    assert_contains(err.msg, "tensor 'a1' appears in both");
    assert_contains(err.msg, "a.safetensors");
    assert_contains(err.msg, "c.safetensors");
    put_shard(fx->dir, "model.safetensors", s, 1, 0); /* wins over the glob */
    assert_int_equal(hc_st_model_open(fx->dir, &m, &err), HC_OK);
    assert_int_equal(hc_st_model_count(m), 1);
    assert_non_null(hc_st_model_find(m, "s"));
    hc_st_model_close(m);
}

#define MODEL_TESTS                                                                  \
    cmocka_unit_test_setup_teardown(test_model_index, setup_dir, teardown_dir),      \
    cmocka_unit_test_setup_teardown(test_model_index_duplicates, setup_dir, teardown_dir), \
    cmocka_unit_test_setup_teardown(test_model_index_errors, setup_dir, teardown_dir), \
    cmocka_unit_test_setup_teardown(test_model_single_and_glob, setup_dir, teardown_dir)

/* ---- malformed files -------------------------------------------------------- */

/* One malformed file per case, built in a fresh temporary directory. The
 * error must be `status` and name the file, the tensor (when given) and the
 * reason. When raw_len is non-zero, raw is the whole file; otherwise the file
 * is <u64 n><header><data_len bytes>, n = strlen(header) unless n_field. */
typedef struct {
    const char *label;
    const char *header;
    size_t data_len;
    uint64_t n_field;
    const char *raw;
    size_t raw_len;
    hc_status status;
    const char *tensor;
    const char *reason;
} bad_case;

#define T1(body) "{\"t\":{" body "}}"
#define F32_1 "\"dtype\":\"F32\",\"shape\":[1]"
#define ENT(name, dt, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static const bad_case bad_cases[] = {
    {"short_file", NULL, 0, 0, "\x01\x00\x00", 3, HC_ERR_FORMAT, NULL, "shorter than the 8-byte"},
    {"header_too_large", "{}", 0, 100000001ULL, NULL, 0, HC_ERR_FORMAT, NULL, "exceeds the maximum"},
    {"header_past_eof", "{}", 0, 1000, NULL, 0, HC_ERR_FORMAT, NULL, "runs past the end of the file"},
    {"empty_header", "", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "does not begin with '{'"},
    {"bad_utf8", "{\"t\xff\":{}}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "not valid UTF-8"},
    {"overlong_utf8", "{\"\xc0\xaf\":{}}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "not valid UTF-8"},
    {"surrogate_utf8", "{\"\xed\xa0\x80\":{}}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "not valid UTF-8"},
    {"json_array", "[1, 2]", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "not a JSON object"},
    {"leading_space", " {}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "does not begin with '{'"},
    {"utf8_bom", "\xef\xbb\xbf{}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "does not begin with '{'"},
    {"truncated_json", "{\"t\":", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "not valid JSON"},
    {"trailing_garbage", "{}x", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "trailing bytes after the header"},
    {"nul_padding", NULL, 0, 0, "\x04\0\0\0\0\0\0\0{}\0\0", 12, HC_ERR_FORMAT, NULL,
     "trailing bytes after the header"},
    {"control_in_name", "{\"a\tb\":{}}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "control character 0x09"},
    {"control_as_space", "{\x01}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL, "control character 0x01"},
    {"metadata_not_object", "{\"__metadata__\":5}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL,
     "\"__metadata__\" is not an object"},
    {"metadata_not_string", "{\"__metadata__\":{\"k\":1}}", 0, 0, NULL, 0, HC_ERR_FORMAT, NULL,
     "value of \"k\" is not a string"},
    {"metadata_as_tensor", "{" ENT("__metadata__", "U8", "[1]", 0, 1) "}", 1, 0, NULL, 0,
     HC_ERR_FORMAT, NULL, "reserved and cannot name a tensor"},
    {"metadata_twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, 0, NULL, 0, HC_ERR_FORMAT,
     NULL, "duplicate \"__metadata__\" entry"},
    {"metadata_dup_key", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, 0, NULL, 0,
     HC_ERR_FORMAT, NULL, "duplicate \"__metadata__\" key \"k\""},
    {"entry_not_object", "{\"t\":5}", 0, 0, NULL, 0, HC_ERR_FORMAT, "t", "entry is not an object"},
    {"missing_dtype", T1("\"shape\":[1],\"data_offsets\":[0,4]"), 4, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "missing \"dtype\""},
    {"dtype_not_string", T1("\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "\"dtype\" is not a string"},
    {"unknown_dtype", T1("\"dtype\":\"F12\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "unknown dtype \"F12\""},
    {"dtype_twice", T1(F32_1 ",\"dtype\":\"U8\",\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "duplicate key \"dtype\""},
    {"missing_shape", T1("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4, 0, NULL, 0, HC_ERR_FORMAT,
     "t", "missing \"shape\""},
    {"shape_not_array", T1("\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "\"shape\" is not an array"},
    {"negative_dim", T1("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "shape[0] is negative"},
    {"fractional_dim", T1("\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,4]"), 4, 0,
     NULL, 0, HC_ERR_FORMAT, "t", "shape[1] is not an integer"},
    {"string_dim", T1("\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "shape[0] is not a number"},
    {"too_many_dims", T1("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]"),
     4, 0, NULL, 0, HC_ERR_FORMAT, "t", "9 dimensions; at most 8"},
    {"missing_offsets", T1(F32_1), 4, 0, NULL, 0, HC_ERR_FORMAT, "t", "missing \"data_offsets\""},
    {"offsets_one_value", T1(F32_1 ",\"data_offsets\":[0]"), 4, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "not an array of two integers"},
    {"offsets_object", T1(F32_1 ",\"data_offsets\":{\"a\":0,\"b\":4}"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "not an array of two integers"},
    {"offsets_negative", T1(F32_1 ",\"data_offsets\":[-4,0]"), 4, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "data_offsets[0] is negative"},
    {"offsets_huge", T1(F32_1 ",\"data_offsets\":[0,1e300]"), 4, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "data_offsets[1] is too large"},
    {"offsets_reversed", T1(F32_1 ",\"data_offsets\":[4,0]"), 4, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "end 0 is before begin 4"},
    {"size_mismatch", T1("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]"), 4, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "hold 4 bytes but F32 [2] needs 8"},
    {"size_overflow",
     T1("\"dtype\":\"F64\",\"shape\":[4503599627370496,4503599627370496],\"data_offsets\":[0,8]"),
     8, 0, NULL, 0, HC_ERR_FORMAT, "t", "overflows"},
    {"f4_half_byte", T1("\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]"), 2, 0, NULL, 0,
     HC_ERR_FORMAT, "t", "12 bits, not a whole number of bytes"},
    {"f6_partial_byte", T1("\"dtype\":\"F6_E2M3\",\"shape\":[1],\"data_offsets\":[0,1]"), 1, 0,
     NULL, 0, HC_ERR_FORMAT, "t", "6 bits, not a whole number of bytes"},
    {"offsets_past_eof", T1(F32_1 ",\"data_offsets\":[0,4]"), 2, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "run past the end of the data section"},
    {"hole_at_start", "{" ENT("t", "F32", "[1]", 4, 8) "}", 8, 0, NULL, 0, HC_ERR_FORMAT, "t",
     "first tensor begins at offset 4"},
    {"hole_between", "{" ENT("a", "F32", "[1]", 0, 4) "," ENT("b", "F32", "[1]", 8, 12) "}", 12, 0,
     NULL, 0, HC_ERR_FORMAT, "b", "hole of 4 bytes after tensor 'a'"},
    {"overlap", "{" ENT("a", "F32", "[2]", 0, 8) "," ENT("b", "F32", "[1]", 4, 8) "}", 8, 0, NULL,
     0, HC_ERR_FORMAT, "b", "overlaps tensor 'a'"},
    {"shared_bytes", "{" ENT("a", "F32", "[1]", 0, 4) "," ENT("b", "F32", "[1]", 0, 4) "}", 4, 0,
     NULL, 0, HC_ERR_FORMAT, "b", "overlaps tensor 'a'"},
    {"trailing_data", "{" ENT("a", "F32", "[1]", 0, 4) "}", 7, 0, NULL, 0, HC_ERR_FORMAT, NULL,
     "3 trailing bytes after the last tensor"},
    {"data_without_tensors", "{}", 1, 0, NULL, 0, HC_ERR_FORMAT, NULL, "1 trailing bytes"},
    {"duplicate_name", "{" ENT("a", "F32", "[1]", 0, 4) "," ENT("a", "F32", "[1]", 4, 8) "}", 8, 0,
     NULL, 0, HC_ERR_FORMAT, "a", "duplicate tensor name"},
};

static void test_bad_case(void **state)
{
    const bad_case *c = *state;
    char *dir = hc_test_mkdtemp("stbad");
    assert_non_null(dir);
    char name[96];
    snprintf(name, sizeof name, "%s.safetensors", c->label);
    char *path;
    if (c->raw_len) {
        path = hc_test_path_join(dir, name);
        assert_int_equal(hc_test_write_file(path, c->raw, c->raw_len), 0);
    } else {
        size_t hl = strlen(c->header);
        path = put_st(dir, name, c->header, hl, c->n_field ? c->n_field : hl, c->data_len);
    }
    hc_st_file *f = (hc_st_file *)&f; /* must be reset to NULL */
    hc_error err = {0};
    assert_int_equal(hc_st_open(path, &f, &err), c->status);
    assert_null(f);
    assert_int_equal(err.status, c->status);
    assert_contains(err.msg, path);
    if (c->tensor) {
        char want[128];
        snprintf(want, sizeof want, "tensor '%s'", c->tensor);
        assert_contains(err.msg, want);
    }
    assert_contains(err.msg, c->reason);
    assert_int_equal(hc_test_rm_rf(dir), 0);
    free(path);
    free(dir);
}

static void test_open_missing_file(void **state)
{
    (void)state;
    hc_st_file *f = NULL;
    hc_error err = {0};
    assert_int_equal(hc_st_open("/nonexistent/x.safetensors", &f, &err), HC_ERR_IO);
    assert_contains(err.msg, "/nonexistent/x.safetensors: cannot open");
    assert_int_equal(hc_st_open("/", &f, &err), HC_ERR_IO);
    assert_contains(err.msg, "/: is a directory, not a regular file");
    /* without an error record the status is the same (it once came back
     * HC_OK with no file: the context prefix returned err->status) */
    assert_int_equal(hc_st_open("/nonexistent/x.safetensors", &f, NULL), HC_ERR_IO);
    assert_null(f);
    hc_st_model *m = NULL;
    assert_int_not_equal(hc_st_model_open("/nonexistent", &m, NULL), HC_OK);
    assert_null(m);
}

static int run_with_bad_cases(const struct CMUnitTest *fixed, size_t nfixed)
{
    size_t nbad = sizeof bad_cases / sizeof bad_cases[0], n = nfixed + 1 + nbad;
    struct CMUnitTest *all = calloc(n, sizeof *all);
    if (all == NULL) return 1;
    memcpy(all, fixed, nfixed * sizeof *all);
    all[nfixed] = (struct CMUnitTest)cmocka_unit_test(test_open_missing_file);
    for (size_t i = 0; i < nbad; i++) {
        struct CMUnitTest *t = &all[nfixed + 1 + i];
        t->name = bad_cases[i].label;
        t->test_func = test_bad_case;
        t->initial_state = (void *)&bad_cases[i];
    }
    int rc = _cmocka_run_group_tests("safetensors", all, n, NULL, NULL);
    free(all);
    return rc;
}

/* ---- helper modes for the Python interop test --------------------------------- */

static int cli_fail(const hc_error *err)
{
    fprintf(stderr, "test_safetensors: %s: %s\n", hc_status_name(err->status), err->msg);
    return 1;
}

static hc_status copy_file(const hc_st_file *in, const char *out, hc_error *err)
{
    hc_st_writer *w = NULL;
    HC_TRY(hc_st_writer_open(out, &w, err));
    hc_status st = HC_OK;
    for (size_t i = 0; st == HC_OK && i < hc_st_metadata_count(in); i++) {
        const char *k = NULL, *v = NULL;
        hc_st_metadata_at(in, i, &k, &v);
        st = hc_st_writer_set_metadata(w, k, v, err);
    }
    for (size_t i = 0; st == HC_OK && i < hc_st_count(in); i++) {
        const hc_st_tensor *t = hc_st_tensor_at(in, i);
        st = hc_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, err);
    }
    if (st == HC_OK) st = hc_st_writer_begin_data(w, err);
    for (size_t i = 0; st == HC_OK && i < hc_st_count(in); i++)
        st = hc_st_writer_write(w, i, hc_st_tensor_at(in, i)->data, hc_st_tensor_at(in, i)->nbytes,
                                err);
    if (st != HC_OK) {
        hc_st_writer_abort(w);
        return st;
    }
    return hc_st_writer_finish(w, err);
}

static void dump_file(const hc_st_file *f)
{
    for (size_t i = 0; i < hc_st_metadata_count(f); i++) {
        const char *k = NULL, *v = NULL;
        hc_st_metadata_at(f, i, &k, &v);
        printf("M\t%s\t%s\n", k, v);
    }
    for (size_t i = 0; i < hc_st_count(f); i++) {
        const hc_st_tensor *t = hc_st_tensor_at(f, i);
        printf("T\t%s\t%s\t", t->name, hc_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) printf("%s%lld", d ? "," : "", (long long)t->shape[d]);
        uLong crc = crc32(0L, Z_NULL, 0);
        const unsigned char *p = t->data;
        for (size_t done = 0; done < t->nbytes;) { /* zlib takes uInt lengths */
            size_t step = t->nbytes - done > (1u << 30) ? (1u << 30) : t->nbytes - done;
            crc = crc32(crc, p + done, (uInt)step);
            done += step;
        }
        printf("\t%lu\t%zu\n", (unsigned long)crc, t->nbytes);
    }
}

static int cli_main(int argc, char **argv)
{
    hc_error err = {0};
    hc_st_file *f = NULL;
    int copy = argc == 4 && strcmp(argv[1], "--copy") == 0;
    int dump = argc == 3 && strcmp(argv[1], "--dump") == 0;
    if (!copy && !dump) {
        fprintf(stderr, "usage: %s [--copy IN OUT | --dump IN]\n", argv[0]);
        return 2;
    }
    if (hc_st_open(argv[2], &f, &err) != HC_OK) return cli_fail(&err);
    hc_status st = HC_OK;
    if (copy) st = copy_file(f, argv[3], &err);
    else dump_file(f);
    hc_st_close(f);
    return st == HC_OK ? 0 : cli_fail(&err);
}

int main(int argc, char **argv)
{
    if (argc > 1) return cli_main(argc, argv);
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_all_dtypes, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_unaligned_data, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_pread, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_file_order_and_lenient_bits, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_writer_temp_then_rename, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_writer_abort_leaves_nothing, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_writer_misuse, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_empty_file_roundtrip, setup_dir, teardown_dir),
        MODEL_TESTS,
    };
    return run_with_bad_cases(fixed, sizeof fixed / sizeof fixed[0]);
}
