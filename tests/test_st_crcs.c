/* test_st_crcs.c - the input files' CRC-32 assembled from the tensors' CRCs
 * noted during the run (hc_st_crcs.h) equals the CRC of the whole file:
 * unit cases (noted, taken and never-read tensors, a tensor in the file that
 * no index entry names, header padding, two shards), a wrong note showing
 * that the notes are used, and whole conversions whose manifest records the
 * inputs (sharded input with an unindexed tensor, copied tensors, experts,
 * w4a16 / nvfp4, with and without verification). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "hc_crc32.h"
#include "hc_integrity.h"
#include "hc_safetensors.h"
#include "hc_st_crcs.h"
#include "hc_test_util.h"

static uint32_t whole_file_crc(const char *dir, const char *name)
{
    char *path = hc_test_path_join(dir, name);
    size_t len = 0;
    unsigned char *b = hc_test_read_file(path, &len);
    assert_non_null(b);
    uint32_t crc = hc_crc32_zlib(0, b, len);
    free(b);
    free(path);
    return crc;
}

/* One shard of tensors t<first>..t<first+n-1> (F16 [rows, 8], distinct
 * bytes), plus "unlisted" when extra: a tensor the index does not name. */
static void write_shard(const char *dir, const char *name, int first, int n, int extra)
{
    char *path = hc_test_path_join(dir, name);
    hc_st_writer *w = NULL;
    hc_error e;
    assert_int_equal(hc_st_writer_open(path, &w, &e), HC_OK);
    assert_int_equal(hc_st_writer_set_metadata(w, "format", "pt", &e), HC_OK);
    for (int i = 0; i < n + extra; i++) {
        char tn[32];
        int64_t shape[2] = {3 + first + i, 8};
        snprintf(tn, sizeof tn, i < n ? "t%d" : "unlisted", first + i);
        assert_int_equal(hc_st_writer_add(w, tn, HC_DT_F16, 2, shape, &e), HC_OK);
    }
    assert_int_equal(hc_st_writer_begin_data(w, &e), HC_OK);
    for (int i = 0; i < n + extra; i++) {
        size_t len = (size_t)(3 + first + i) * 16;
        unsigned char *b = malloc(len);
        assert_non_null(b);
        for (size_t j = 0; j < len; j++) b[j] = (unsigned char)(j * 7 + (size_t)(first + i) * 31);
        assert_int_equal(hc_st_writer_write(w, (size_t)i, b, len, &e), HC_OK);
        free(b);
    }
    assert_int_equal(hc_st_writer_finish(w, &e), HC_OK);
    free(path);
}

static void write_index(const char *dir, const char *body)
{
    char *path = hc_test_path_join(dir, "model.safetensors.index.json");
    assert_int_equal(hc_test_write_file(path, body, strlen(body)), 0);
    free(path);
}

static uint32_t file_crc(hc_st_crcs *c, const char *name)
{
    int found = 0;
    uint32_t crc = 0;
    uint64_t size = 0;
    hc_error e;
    assert_int_equal(hc_st_crcs_file(c, name, &found, &crc, &size, &e), HC_OK);
    assert_int_equal(found, 1);
    return crc;
}

static void test_table(void **state)
{
    (void)state;
    char *dir = hc_test_mkdtemp("stcrc");
    write_shard(dir, "a.safetensors", 0, 3, 1);
    write_shard(dir, "b.safetensors", 3, 2, 0);
    write_index(dir, "{\"weight_map\": {\"t0\": \"a.safetensors\", \"t1\": \"a.safetensors\", "
                     "\"t2\": \"a.safetensors\", \"t3\": \"b.safetensors\", "
                     "\"t4\": \"b.safetensors\"}}");
    hc_st_model *m = NULL;
    hc_error e;
    assert_int_equal(hc_st_model_open(dir, &m, &e), HC_OK);
    hc_st_crcs *c = NULL;
    assert_int_equal(hc_st_crcs_new(m, &c, &e), HC_OK);
    /* t0 noted, t1 taken, t2, t4 and "unlisted" never read: from the mapping */
    const hc_st_tensor *t0 = hc_st_model_find(m, "t0"), *t1 = hc_st_model_find(m, "t1");
    const hc_st_tensor *t3 = hc_st_model_find(m, "t3");
    assert_non_null(t0);
    assert_null(hc_st_model_find(m, "unlisted"));
    hc_st_crcs_note(c, t0, hc_crc32(0, t0->data, t0->nbytes));
    hc_st_crcs_take(c, t1);
    hc_st_crcs_take(c, t3);
    assert_int_equal(file_crc(c, "a.safetensors"), whole_file_crc(dir, "a.safetensors"));
    assert_int_equal(file_crc(c, "b.safetensors"), whole_file_crc(dir, "b.safetensors"));
    int found = 1;
    uint32_t crc;
    uint64_t size;
    assert_int_equal(hc_st_crcs_file(c, "config.json", &found, &crc, &size, &e), HC_OK);
    assert_int_equal(found, 0);
    /* the notes are what is combined: a wrong one gives a wrong file CRC */
    hc_st_crcs_note(c, t3, 0x12345678u);
    assert_int_not_equal(file_crc(c, "b.safetensors"), whole_file_crc(dir, "b.safetensors"));
    hc_st_crcs_free(c);
    hc_st_model_close(m);
    hc_test_rm_rf(dir);
    free(dir);
}

static void test_concat(void **state)
{
    (void)state;
    unsigned char b[7 * 96];
    uint32_t pieces[7];
    for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)(i * 13 + 5);
    for (int i = 0; i < 7; i++) pieces[i] = hc_crc32(0, b + 96 * i, 96);
    assert_int_equal(hc_crc32_concat(pieces, 7, 96), hc_crc32_zlib(0, b, sizeof b));
    assert_int_equal(hc_crc32_concat(pieces, 1, 96), pieces[0]);
    assert_int_equal(hc_crc32_concat(pieces, 0, 96), 0);
}

typedef struct {
    int calls, written;
    uint32_t crc;
} done_log;

static void log_done(void *ctx, int written, uint32_t crc)
{
    done_log *d = ctx;
    d->calls++;
    d->written += written;
    d->crc = crc;
}

/* The writer's CRCs (async chunks, sync chunks, several chunks per tensor,
 * an empty tensor) equal those of the file read back. */
static void test_writer_crcs(void **state)
{
    (void)state;
    char *dir = hc_test_mkdtemp("stcrc-w"), *path = hc_test_path_join(dir, "x.safetensors");
    enum { A = 3000001, B = 777 };
    unsigned char *a = malloc(A), b[B];
    assert_non_null(a);
    for (size_t i = 0; i < A; i++) a[i] = (unsigned char)(i * 2654435761u >> 13);
    for (size_t i = 0; i < B; i++) b[i] = (unsigned char)(i ^ 0x5a);
    hc_st_writer *w = NULL;
    hc_error e;
    int64_t sa[1] = {A}, sb[1] = {B}, s0[1] = {0};
    assert_int_equal(hc_st_writer_open(path, &w, &e), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "a", HC_DT_U8, 1, sa, &e), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "empty", HC_DT_U8, 1, s0, &e), HC_OK);
    assert_int_equal(hc_st_writer_add(w, "b", HC_DT_U8, 1, sb, &e), HC_OK);
    assert_int_equal(hc_st_writer_begin_data(w, &e), HC_OK);
    done_log d1 = {0}, d2 = {0}, d3 = {0};
    assert_int_equal(hc_st_writer_write_async(w, 0, a, 1000, log_done, &d1, &e), HC_OK);
    assert_int_equal(hc_st_writer_write_async(w, 0, a + 1000, A - 1000, log_done, &d2, &e), HC_OK);
    assert_int_equal(hc_st_writer_write(w, 2, b, 100, &e), HC_OK); /* waits for the queue */
    assert_int_equal(d1.calls + d2.calls, 2);
    assert_int_equal(d2.crc, hc_crc32(0, a, A));
    assert_int_equal(hc_st_writer_write_async(w, 2, b + 100, B - 100, log_done, &d3, &e), HC_OK);
    /* a chunk past the tensor's end: refused, and its callback still runs */
    done_log bad = {0};
    assert_int_not_equal(hc_st_writer_write_async(w, 2, b, B, log_done, &bad, &e), HC_OK);
    assert_int_equal(bad.calls, 1);
    assert_int_equal(bad.written, 0);
    hc_file_crc got, want;
    assert_int_equal(hc_st_writer_finish_crc(w, "x.safetensors", &got, &e), HC_OK);
    assert_int_equal(d1.written + d2.written + d3.written, 3);
    assert_int_equal(d3.crc, hc_crc32(0, b, B));
    assert_int_equal(hc_file_crc_compute(dir, "x.safetensors", &want, &e), HC_OK);
    assert_string_equal(got.name, want.name);
    assert_int_equal(got.size, want.size);
    assert_int_equal(got.crc, want.crc);
    assert_int_equal(got.header_end, want.header_end);
    assert_int_equal(got.header_crc, want.header_crc);
    assert_int_equal(got.n_tensors, want.n_tensors);
    for (size_t i = 0; i < got.n_tensors; i++) {
        assert_string_equal(got.tensors[i].name, want.tensors[i].name);
        assert_int_equal(got.tensors[i].begin, want.tensors[i].begin);
        assert_int_equal(got.tensors[i].end, want.tensors[i].end);
        assert_int_equal(got.tensors[i].crc, want.tensors[i].crc);
    }
    hc_file_crc_free(&got);
    hc_file_crc_free(&want);
    free(a);
    free(path);
    hc_test_rm_rf(dir);
    free(dir);
}

/* Rewrites dir/model.safetensors as two shards and an index; the first
 * shard also holds a tensor the index does not name, the second a copied
 * tensor of 18 MB (written in pieces: its CRC is the writer's). */
static void reshard(const char *dir)
{
    char *path = hc_test_path_join(dir, "model.safetensors");
    hc_st_file *f = NULL;
    hc_error e;
    assert_int_equal(hc_st_open(path, &f, &e), HC_OK);
    size_t n = hc_st_count(f), half = n / 2;
    cJSON *root = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(root, "weight_map");
    for (int s = 0; s < 2; s++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-00002.safetensors", s + 1);
        char *sp = hc_test_path_join(dir, name);
        hc_st_writer *w = NULL;
        size_t lo = s ? half : 0, hi = s ? n : half;
        assert_int_equal(hc_st_writer_open(sp, &w, &e), HC_OK);
        for (size_t i = lo; i < hi; i++) {
            const hc_st_tensor *t = hc_st_tensor_at(f, i);
            assert_int_equal(hc_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, &e), HC_OK);
            cJSON_AddStringToObject(map, t->name, name);
        }
        int64_t shape[1] = {37}, big_shape[1] = {9000001};
        if (s == 0) assert_int_equal(hc_st_writer_add(w, "unlisted", HC_DT_U8, 1, shape, &e), HC_OK);
        if (s == 1) {
            assert_int_equal(hc_st_writer_add(w, "model.big_norm.weight", HC_DT_F16, 1, big_shape,
                                              &e), HC_OK);
            cJSON_AddStringToObject(map, "model.big_norm.weight", name);
        }
        assert_int_equal(hc_st_writer_begin_data(w, &e), HC_OK);
        for (size_t i = lo; i < hi; i++) {
            const hc_st_tensor *t = hc_st_tensor_at(f, i);
            assert_int_equal(hc_st_writer_write(w, i - lo, t->data, t->nbytes, &e), HC_OK);
        }
        unsigned char extra[37] = {1, 2, 3};
        if (s == 0) assert_int_equal(hc_st_writer_write(w, hi - lo, extra, 37, &e), HC_OK);
        if (s == 1) {
            size_t len = 2 * (size_t)big_shape[0];
            unsigned char *big = malloc(len);
            assert_non_null(big);
            for (size_t i = 0; i < len; i++) big[i] = (unsigned char)(i * 2654435761u >> 11);
            for (size_t i = 1; i < len; i += 2) big[i] &= 0x3B; /* finite fp16 */
            assert_int_equal(hc_st_writer_write(w, hi - lo, big, len, &e), HC_OK);
            free(big);
        }
        assert_int_equal(hc_st_writer_finish(w, &e), HC_OK);
        free(sp);
    }
    hc_st_close(f);
    assert_int_equal(remove(path), 0);
    char *text = cJSON_Print(root);
    write_index(dir, text);
    free(text);
    cJSON_Delete(root);
    free(path);
}

/* Converts dir with args; every input the manifest lists has the CRC of the
 * whole file. */
static void check_run(const char *dir, const char *args, int want_inputs, int check)
{
    char *parent = hc_test_mkdtemp("stcrc-out"), *out = hc_test_path_join(parent, "out");
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' -q --force %s >/dev/null 2>&1", hc_test_cli(), dir,
             out, args);
    assert_int_equal(system(cmd), 0);
    char *mp = hc_test_path_join(out, "humming_manifest.json");
    char *text = hc_test_read_file(mp, NULL);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text), *in = cJSON_GetObjectItem(root, "inputs"), *it;
    int n = 0;
    cJSON_ArrayForEach(it, in) {
        const char *name = cJSON_GetObjectItem(it, "name")->valuestring;
        char want[16];
        snprintf(want, sizeof want, "%08x", whole_file_crc(dir, name));
        if (strcmp(want, cJSON_GetObjectItem(it, "crc32")->valuestring) != 0) {
            print_error("%s (%s): input %s recorded %s, the file's CRC is %s\n", dir, args, name,
                        cJSON_GetObjectItem(it, "crc32")->valuestring, want);
            fail();
        }
        n++;
    }
    assert_int_equal(n, want_inputs);
    /* the shards' CRCs the writer took as it wrote match the files */
    snprintf(cmd, sizeof cmd, "'%s' check '%s' >/dev/null 2>&1", hc_test_cli(), out);
    if (check) assert_int_equal(system(cmd), 0);
    cJSON_Delete(root);
    free(text);
    free(mp);
    hc_test_rm_rf(parent);
    free(out);
    free(parent);
}

static void test_conversions(void **state)
{
    (void)state;
    /* experts (read as one tensor each), then dense layers in two shards
     * (`check` is left out for the first: main's check does not find MoE
     * canonical tensors in the manifest) */
    char *dir = hc_test_mkdtemp("stcrc-model");
    assert_int_equal(hc_test_gen_model(dir, "--format float16 --layers 2"), 0);
    /* config, generation config, tokenizer config, model.safetensors */
    check_run(dir, "--format w4a16 --verify off", 4, 0);
    check_run(dir, "--format nvfp4 --layout tiles", 4, 1);
    hc_test_rm_rf(dir);
    assert_int_equal(hc_test_gen_model(dir, "--format float16 --layers 2 --experts 0"), 0);
    reshard(dir); /* now two shards and the index */
    check_run(dir, "--format w4a16 --verify off", 6, 1);
    check_run(dir, "--format nvfp4 --layout tiles --verify off", 6, 1);
    check_run(dir, "--format w4a16 --max-shard-size 1M", 6, 1);
    hc_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_writer_crcs),
        cmocka_unit_test(test_conversions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
