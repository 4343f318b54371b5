/* test_limits - inputs at and past the limits are refused with clear errors,
 * never undefined behaviour: absurd safetensors header sizes, shapes whose
 * element or byte count overflows 64 bits, negative or huge group sizes (CLI
 * fields, recipes, config.json), NaN/Inf weights given to hc_quantize, JSON
 * numbers that do not fit an integer (hc_json_int; manifest and journal sizes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include "hc_integrity.h"
#include "hc_json.h"
#include "hc_model_config.h"
#include "hc_quant.h"
#include "hc_recipe.h"
#include "hc_safetensors.h"
#include "hc_test_util.h"

/* Asserts status st with a message containing needle. */
static void expect_error(hc_status got, const hc_error *e, hc_status want, const char *needle)
{
    if (got != want || strstr(e->msg, needle) == NULL)
        fail_msg("expected status %d with '%s', got %d: '%s'", (int)want, needle, (int)got, e->msg);
    assert_int_equal(e->status, want);
}

/* 8-byte little-endian length n followed by header text (not n bytes of it). */
static size_t st_bytes(unsigned char *buf, size_t cap, uint64_t n, const char *header)
{
    size_t h = strlen(header);
    assert_true(8 + h <= cap);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, h);
    return 8 + h;
}

static void st_expect(const unsigned char *buf, size_t len, const char *needle)
{
    hc_st_file *f = (hc_st_file *)1;
    hc_error e;
    hc_error_clear(&e);
    expect_error(hc_st_open_buffer(buf, len, "limits.safetensors", &f, &e), &e, HC_ERR_FORMAT,
                 needle);
    assert_null(f);
    assert_non_null(strstr(e.msg, "limits.safetensors"));
}

static void test_header_sizes(void **state)
{
    (void)state;
    unsigned char buf[512];
    size_t n = st_bytes(buf, sizeof buf, UINT64_MAX, "{}");
    st_expect(buf, n, "exceeds the maximum");
    n = st_bytes(buf, sizeof buf, HC_ST_MAX_HEADER + 1, "{}");
    st_expect(buf, n, "exceeds the maximum");
    n = st_bytes(buf, sizeof buf, 1ULL << 63, "{}");
    st_expect(buf, n, "exceeds the maximum");
    n = st_bytes(buf, sizeof buf, 3, "{}");
    st_expect(buf, n, "runs past the end");
    st_expect(buf, 7, "shorter than the 8-byte");
    st_expect(buf, 0, "shorter than the 8-byte");
    n = st_bytes(buf, sizeof buf, 0, "");
    st_expect(buf, n, "not a JSON object");

    /* the file reader gives the same answer */
    char *dir = hc_test_mkdtemp("limits");
    assert_non_null(dir);
    char *path = hc_test_path_join(dir, "huge.safetensors");
    n = st_bytes(buf, sizeof buf, UINT64_MAX, "{}");
    assert_int_equal(hc_test_write_file(path, buf, n), 0);
    hc_st_file *f = NULL;
    hc_error e;
    hc_error_clear(&e);
    expect_error(hc_st_open(path, &f, &e), &e, HC_ERR_FORMAT, "exceeds the maximum");
    assert_null(f);
    free(path);
    hc_test_rm_rf(dir);
    free(dir);
}

/* One tensor entry with the given dtype and shape text, data [0, 0]. */
static void shape_expect(const char *dtype, const char *shape, const char *needle)
{
    char header[256];
    snprintf(header, sizeof header,
             "{\"w\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[0,0]}}", dtype, shape);
    unsigned char buf[512];
    size_t n = st_bytes(buf, sizeof buf, strlen(header), header);
    st_expect(buf, n, needle);
}

static void test_shape_overflow(void **state)
{
    (void)state;
    /* element count 2^66 */
    shape_expect("U8", "[4294967296,4294967296,4]", "element count of shape");
    /* element count 2^63 fits, bytes (x 8) do not */
    shape_expect("F64", "[1073741824,1073741824,8]", "overflows");
    /* byte size exactly 2^64 */
    shape_expect("F32", "[4294967296,1073741824]", "overflows");
    /* dims past 2^53 cannot be read exactly from JSON */
    shape_expect("U8", "[18446744073709551616]", "too large");
    shape_expect("U8", "[-1]", "negative");
    shape_expect("U8", "[1.5]", "not an integer");
    shape_expect("U8", "[1e999]", "too large");
    shape_expect("U8", "[1,1,1,1,1,1,1,1,1]", "dimensions");
    /* offsets at the 2^53 limit, far past the data */
    char header[200];
    snprintf(header, sizeof header, "{\"w\":{\"dtype\":\"U8\",\"shape\":[2],"
             "\"data_offsets\":[9007199254740990,9007199254740992]}}");
    unsigned char buf[512];
    size_t n = st_bytes(buf, sizeof buf, strlen(header), header);
    st_expect(buf, n, "run past the end");
}

static void field_expect(const char *key, const char *value, const char *needle)
{
    hc_target t = hc_preset_find("w4a16")->target, before = t;
    hc_error e;
    hc_error_clear(&e);
    expect_error(hc_target_set_field(&t, key, value, &e), &e, HC_ERR_ARG, needle);
    assert_memory_equal(&t, &before, sizeof t);
}

static void test_group_sizes_fields(void **state)
{
    (void)state;
    field_expect("group_size", "-1", "group_size");
    field_expect("group_size", "-128", "group_size");
    field_expect("group-size", "2097152", "power of two");
    field_expect("group_size", "99999999999999999999", "not a number");
    field_expect("group_size", "9223372036854775807", "power of two");
    field_expect("group_size", "96", "power of two");
    field_expect("group_size", "0x80", "not a number");
    field_expect("group_size", " 128", "not a number");
    field_expect("group_size_n", "-2", "group_size_n");
    field_expect("group_size_n", "4611686018427387904", "power of two");
    field_expect("group_size_n", "3", "power of two");
    /* the largest accepted values */
    hc_target t = hc_preset_find("w4a16")->target;
    assert_int_equal(hc_target_set_field(&t, "group_size", "1048576", NULL), HC_OK);
    assert_int_equal(t.group_size, 1 << 20);
    assert_int_equal(hc_target_set_field(&t, "group_size_n", "1048576", NULL), HC_OK);
    assert_int_equal(t.group_size_n, 1 << 20);
}

static void recipe_expect(const char *text, const char *needle)
{
    hc_recipe *r = NULL;
    hc_error e;
    hc_error_clear(&e);
    expect_error(hc_recipe_parse_text(text, "limits.yaml", &r, &e), &e, HC_ERR_FORMAT, needle);
    assert_null(r);
    assert_non_null(strstr(e.msg, "limits.yaml:"));
}

static void test_group_sizes_recipes(void **state)
{
    (void)state;
    recipe_expect("defaults:\n  group_size: -128\n", "group_size");
    recipe_expect("defaults:\n  group_size: 1e9\n", "group_size");
    recipe_expect("rules:\n  - targets: ['.*']\n    group_size: 4294967296\n", "power of two");
    recipe_expect("rules:\n  - targets: ['.*']\n    group_size_n: -16\n", "group_size_n");
    recipe_expect("rules:\n  - targets: ['.*']\n    group_size: .nan\n", "group_size");
}

/* Patterns whose repetitions glibc's regcomp would expand exponentially (a
 * fuzz_recipe timeout) or that need exponential matching are refused. */
static void test_recipe_patterns(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text, "ignore: ['a%.*s']\n", 80,
             "++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++");
    recipe_expect(text, "pattern too complex");
    recipe_expect("ignore: ['((x{100}){100}){100}']\n", "pattern too complex");
    recipe_expect("ignore: ['(.+){9999}(.+){9999}']\n", "pattern too complex");
    /* small, but repeating what can match the empty string: exponential in glibc */
    recipe_expect("ignore: ['((.*)*){40}']\n", "can match the empty string");
    recipe_expect("ignore: ['(a*)*\\1']\n", "back-references");
    /* ordinary patterns, including bounded repetitions, still load */
    hc_recipe *r = NULL;
    hc_error e;
    hc_error_clear(&e);
    assert_int_equal(hc_recipe_parse_text("ignore: ['model\\.layers\\.[0-9]{1,3}\\.mlp\\.(gate|up)_proj+', "
                                          "'x{2,}y?z*', '[{]+']\n", "ok.yaml", &r, &e), HC_OK);
    hc_recipe_free(r);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Builds head + n x item + tail into a malloc'ed string. */
static char *repeat(const char *head, const char *item, int n, const char *tail)
{
    size_t a = strlen(head), b = strlen(item), c = strlen(tail);
    char *s = malloc(a + (size_t)n * b + c + 1), *p = s;
    assert_non_null(s);
    memcpy(p, head, a), p += a;
    for (int i = 0; i < n; i++) memcpy(p, item, b), p += b;
    memcpy(p, tail, c + 1);
    return s;
}

/* Recipes libyaml or glibc would spend minutes or gigabytes on are refused
 * at once: deep nesting (quadratic in libyaml's loader: 100k flow levels took
 * 23 s), too many nodes, too many patterns (each a compiled regex; an alias
 * counts each time it is used). */
static void test_recipe_size_limits(void **state)
{
    (void)state;
    char *deep = repeat("ignore: ", "[", 100000, "");
    char *tail = repeat(deep, "]", 100000, "\n");
    double t0 = now_s();
    recipe_expect(tail, "nested more than 64 levels deep");
    free(deep), free(tail);
    deep = repeat("ignore:\n  ", "- ", 100000, "a\n");
    recipe_expect(deep, "nested more than 64 levels deep");
    free(deep);
    char *many = repeat("ignore:\n", "  - a\n", 200000, "");
    recipe_expect(many, "more than 100000 YAML nodes");
    free(many);
    many = repeat("ignore:\n", "  - a\n", 4097, "");
    recipe_expect(many, "limits.yaml:4098:5: ignore: more than 4096 patterns");
    free(many);
    char *targets = repeat("rules:\n  - &r {skip: true, targets: [a", ", a", 999, "]}\n");
    char *aliased = repeat(targets, "  - *r\n", 5, "");
    recipe_expect(aliased, "more than 4096 patterns");
    free(targets), free(aliased);
    double t = now_s() - t0;
    printf("  five oversized recipes refused in %.3f s\n", t);
    assert_true(t < 5.0);
    /* just under the pattern limit (the 8 built-in ignores make 4096) it loads */
    many = repeat("ignore:\n", "  - a\n", 4096 - 8, "");
    hc_recipe *r = NULL;
    hc_error e;
    assert_int_equal(hc_recipe_parse_text(many, "ok.yaml", &r, &e), HC_OK);
    assert_int_equal(hc_recipe_ignore_count(r), 4096);
    hc_recipe_free(r);
    free(many);
}

/* A long tensor name in a message is cut, not the reason after it. */
static void test_long_names_in_messages(void **state)
{
    (void)state;
    char *name = repeat("model.", "x", 3000, ".weight");
    hc_error e;
    hc_error_set(&e, HC_ERR_FORMAT, "/data/in/model.safetensors: tensor '%s': unknown dtype "
                 "\"F12\"", name);
    printf("  %s\n", e.msg);
    assert_true(strlen(e.msg) < HC_ERROR_MSG_MAX);
    assert_non_null(strstr(e.msg, "/data/in/model.safetensors: tensor 'model.xxx"));
    assert_non_null(strstr(e.msg, " ... "));
    assert_non_null(strstr(e.msg, "xxx.weight': unknown dtype \"F12\""));
    /* a context prefix with the name, added in front of a short reason */
    hc_error_set(&e, HC_ERR_FORMAT, "shape[0] is negative");
    hc_error_prefix(&e, "limits.safetensors: tensor '%s': ", name);
    assert_non_null(strstr(e.msg, "limits.safetensors: tensor 'model.x"));
    assert_non_null(strstr(e.msg, "': shape[0] is negative"));
    /* the reader: a 3000-byte name with a bad dtype, and a name past the limit */
    unsigned char buf[12000];
    char header[11000];
    snprintf(header, sizeof header, "{\"%s\": {\"dtype\": \"F12\", \"shape\": [], "
             "\"data_offsets\": [0, 0]}}", name);
    st_expect(buf, st_bytes(buf, sizeof buf, strlen(header), header), "unknown dtype \"F12\"");
    free(name);
    name = repeat("", "y", HC_ST_MAX_NAME + 1, "");
    snprintf(header, sizeof header, "{\"%s\": {\"dtype\": \"F32\", \"shape\": [], "
             "\"data_offsets\": [0, 4]}}", name);
    size_t n = st_bytes(buf, sizeof buf, strlen(header), header);
    memset(buf + n, 0, 4);
    st_expect(buf, n + 4, "the name is 4097 bytes, longer than the limit of 4096");
    free(name);
}

static void config_expect(const char *q, hc_status want, const char *needle)
{
    char json[512];
    snprintf(json, sizeof json, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": "
             "{\"quant_method\": \"humming\", \"b_dtype\": \"uint4\", %s}}", q);
    hc_humming_qconfig c;
    hc_error e;
    hc_error_clear(&e);
    expect_error(hc_humming_qconfig_parse(json, "config.json", &c, &e), &e, want, needle);
    assert_non_null(strstr(e.msg, "config.json"));
}

static void test_group_sizes_config(void **state)
{
    (void)state;
    config_expect("\"group_size\": 1e300", HC_ERR_FORMAT, "out of range");
    config_expect("\"group_size\": -1e300", HC_ERR_FORMAT, "out of range");
    config_expect("\"group_size\": 9223372036854775807", HC_ERR_FORMAT, "out of range");
    config_expect("\"group_size\": \"9223372036854775808\"", HC_ERR_FORMAT, "out of range");
    config_expect("\"group_size\": 4194304", HC_ERR_FORMAT, "out of range");
    config_expect("\"group_size\": 64.5", HC_ERR_FORMAT, "must be an integer");
    config_expect("\"weight_scale_group_size_n\": -128", HC_ERR_FORMAT, "out of range");
    config_expect("\"weight_scale_group_size_n\": \"-1\"", HC_ERR_FORMAT, "out of range");
    config_expect("\"weight_scale_group_size_n\": 1e20", HC_ERR_FORMAT, "out of range");
    /* negative group_size still means channel-wise (spec 7.8) */
    const char *ok = "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
                     "\"humming\", \"b_dtype\": \"uint4\", \"group_size\": -1}}";
    hc_humming_qconfig c;
    assert_int_equal(hc_humming_qconfig_parse(ok, "config.json", &c, NULL), HC_OK);
    assert_int_equal(c.group_size, 0);
}

static void quant_expect_nonfinite(float bad, int64_t at)
{
    enum { E = 1, N = 4, K = 64 };
    float *w = calloc(E * N * K, sizeof *w);
    assert_non_null(w);
    for (int i = 0; i < E * N * K; i++) w[i] = (float)((i % 13) - 6) * 0.25f;
    w[at] = bad;
    hc_quant_desc d = {.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_F16,
                       .group_size = 32, .zero_point = HC_ZP_NONE};
    hc_quant_result r;
    memset(&r, 0, sizeof r);
    hc_error e;
    hc_error_clear(&e);
    expect_error(hc_quantize(&d, w, E, N, K, &r, &e), &e, HC_ERR_FORMAT, "non-finite weight");
    char where[64];
    snprintf(where, sizeof where, "row %lld, column %lld", (long long)(at / K), (long long)(at % K));
    assert_non_null(strstr(e.msg, where));
    assert_null(r.codes);
    hc_quant_result_free(&r);
    free(w);
}

static void test_nonfinite_weights(void **state)
{
    (void)state;
    quant_expect_nonfinite(NAN, 0);
    quant_expect_nonfinite(INFINITY, 77);
    quant_expect_nonfinite(-INFINITY, 4 * 64 - 1);
    quant_expect_nonfinite(-NAN, 130);
}

/* hc_json_int: every JSON number that becomes an integer goes through it. */
static void test_json_int(void **state)
{
    (void)state;
    static const struct {
        double d;
        long long lo, hi;
        const char *why; /* NULL: accepted */
    } cases[] = {
        {4, 1, 8, NULL},         {1, 1, 8, NULL},          {8, 1, 8, NULL},
        {0, 1, 8, "too small"},  {-3, 1, 8, "too small"},  {-1, 0, 8, "is negative"},
        {9, 1, 8, "too large"},  {4294967300.0, 1, 64, "too large"},
        {1e300, 1, 64, "too large"}, {-1e300, 0, 64, "is negative"},
        {0.5, 0, 64, "not an integer"}, {4.5, 1, 8, "not an integer"},
        {INFINITY, 0, INT64_MAX, "too large"}, {-INFINITY, INT64_MIN, 0, "too small"},
        {NAN, INT64_MIN, INT64_MAX, "not a number"},
        {9223372036854775808.0, INT64_MIN, INT64_MAX, "too large"}, /* 2^63: the cast is UB */
        {9007199254740992.0, 0, INT64_MAX, NULL},                   /* 2^53: still exact */
        {9007199254740994.0, 0, INT64_MAX, "too large"},            /* digits already lost */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = cJSON_CreateNumber(cases[i].d);
        int64_t out = -77;
        const char *why = hc_json_int(v, cases[i].lo, cases[i].hi, 0, &out);
        if (cases[i].why == NULL && (why != NULL || out != (int64_t)cases[i].d))
            fail_msg("case %zu (%g): refused: %s", i, cases[i].d, why);
        if (cases[i].why && (why == NULL || strstr(why, cases[i].why) == NULL || out != -77))
            fail_msg("case %zu (%g): want '%s', got '%s'", i, cases[i].d, cases[i].why,
                     why ? why : "accepted");
        cJSON_Delete(v);
    }
    static const char *const strs[][2] = {
        {"128", NULL}, {"-1", NULL}, {"12x", "not an integer"}, {"", "not an integer"},
        {"99999999999999999999", "too large"}, {"-99999999999999999999", "too small"},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        cJSON *v = cJSON_CreateString(strs[i][0]);
        int64_t out = 0;
        const char *why = hc_json_int(v, -1, 1 << 20, 1, &out);
        if ((why == NULL) != (strs[i][1] == NULL) || (why && !strstr(why, strs[i][1])))
            fail_msg("string \"%s\": got '%s'", strs[i][0], why ? why : "accepted");
        assert_non_null(hc_json_int(v, -1, 1 << 20, 0, &out)); /* strings only when allowed */
        cJSON_Delete(v);
    }
}

/* Sizes and offsets in a manifest are JSON numbers too: 1e300, -1 or 0.5
 * make a malformed entry (a problem), never an undefined cast. */
/* Counts check problems other than what a real output promises (this
 * manifest lists a.bin alone: no config.json, no shard). */
static void count_entry_problem(void *ctx, const char *line)
{
    if (!strstr(line, "not in the manifest") && !strstr(line, "in no shard")) ++*(int *)ctx;
}

static void test_manifest_sizes(void **state)
{
    (void)state;
    static const char *const bad[] = {"1e300", "-1", "0.5", "18446744073709551616"};
    char *dir = hc_test_mkdtemp("limits-manifest");
    char *file = hc_test_path_join(dir, "a.bin"), *man = hc_test_path_join(dir, "humming_manifest.json");
    assert_int_equal(hc_test_write_file(file, "abc", 3), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"files\": [{\"name\": \"a.bin\", \"size\": %s, \"crc32\": "
                 "\"00000000\"}]}", bad[i]);
        assert_int_equal(hc_test_write_file(man, json, strlen(json)), 0);
        int problems = 0, entry = 0;
        hc_error err;
        assert_int_equal(hc_check_dir(dir, count_entry_problem, &entry, &problems, &err), HC_OK);
        assert_int_equal(entry, 1); /* "malformed manifest entry" */
        /* a size that matches but tensor offsets that do not fit: skipped, not cast */
        snprintf(json, sizeof json, "{\"files\": [{\"name\": \"a.bin\", \"size\": 3, \"crc32\": "
                 "\"00000000\", \"header_end\": %s, \"header_crc32\": \"0\", \"tensors\": [{\"name\":"
                 " \"t\", \"begin\": %s, \"end\": %s, \"crc32\": \"0\"}]}]}", bad[i], bad[i], bad[i]);
        assert_int_equal(hc_test_write_file(man, json, strlen(json)), 0);
        entry = 0;
        assert_int_equal(hc_check_dir(dir, count_entry_problem, &entry, &problems, &err), HC_OK);
        assert_int_equal(entry, 2); /* CRC mismatch + "the difference is after..." */
    }
    hc_test_rm_rf(dir);
    free(file);
    free(man);
    free(dir);
}

/* A journal entry whose size is no integer is not usable (that shard would
 * be written again); the resume is then refused on the fingerprint. */
static void test_journal_sizes(void **state)
{
    (void)state;
    char *root = hc_test_mkdtemp("limits-journal");
    char *in = hc_test_path_join(root, "in"), *out = hc_test_path_join(root, "out");
    char *partial = hc_test_path_join(root, "out.partial");
    char *journal = hc_test_path_join(partial, ".hc_journal.json"), cmd[8192];
    assert_int_equal(hc_test_gen_model(in, "--layers 1 --experts 0"), 0);
    assert_int_equal(mkdir(partial, 0755), 0);
    static const char *const bad[] = {"1e300", "-1e300", "0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[512];
        snprintf(json, sizeof json, "{\"fingerprint\": \"0000000000000000\", \"shards\": "
                 "[{\"name\": \"model.safetensors\", \"size\": %s, \"crc32\": \"0\"}]}", bad[i]);
        assert_int_equal(hc_test_write_file(journal, json, strlen(json)), 0);
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --resume -q --verify off 2>'%s/log'",
                 hc_test_cli(), in, out, root);
        int rc = system(cmd);
        char *log = hc_test_path_join(root, "log"), *text = hc_test_read_file(log, NULL);
        if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 2 || !strstr(text, "cannot resume"))
            fail_msg("size %s: exit %d: %s", bad[i], WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, text);
        free(text);
        free(log);
    }
    hc_test_rm_rf(root);
    free(in); free(out); free(partial); free(journal); free(root);
}

int main(void)
{
    alarm(120); /* a pattern the regex guard lets through by mistake hangs regcomp */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_sizes),
        cmocka_unit_test(test_shape_overflow),
        cmocka_unit_test(test_group_sizes_fields),
        cmocka_unit_test(test_group_sizes_recipes),
        cmocka_unit_test(test_recipe_patterns),
        cmocka_unit_test(test_recipe_size_limits),
        cmocka_unit_test(test_long_names_in_messages),
        cmocka_unit_test(test_group_sizes_config),
        cmocka_unit_test(test_nonfinite_weights),
        cmocka_unit_test(test_json_int),
        cmocka_unit_test(test_manifest_sizes),
        cmocka_unit_test(test_journal_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
