/* test_quant_golden.c - the quantizer against the older golden vectors of
 * Humming a6455de ($HC_SHARED_DIR/golden).
 *
 * We follow humming-kernels 0.1.19's quantizer (test_quant_golden0119.c).
 * a6455de's differs from it for symmetric integers of 2 to 8 bits (it divides
 * by D + 1.499 and D + 0.499, 0.1.19 by D + 1 and D) and for e8m0 scales (it
 * stores the exponent rounded down); it is the same rule for 1-bit integers
 * and for float weights with other scales. Only those vectors are quantizer
 * references here: src.weight quantized under the file's weight_config must
 * give pre.weight / pre.weight_scale / pre.zero_point bit for bit. The other
 * files are named and left to their layout tests (test_cli_golden). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_quant.h"
#include "hc_test_st.h"
#include "hc_test_util.h"

static char golden_dir[1024];

static int has_golden(void)
{
    const char *s = getenv("HC_SHARED_DIR");
    snprintf(golden_dir, sizeof golden_dir, "%s/golden", s && *s ? s : "../shared");
    DIR *d = opendir(golden_dir);
    if (!d) {
        hc_test_skip_notice("golden", "%s not found: golden quantizer tests skipped", golden_dir);
        return 0;
    }
    closedir(d);
    return 1;
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int json_flag(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    if (cJSON_IsString(v)) return strcmp(v->valuestring, "True") == 0 || strcmp(v->valuestring, "true") == 0;
    return cJSON_IsNumber(v) && v->valuedouble != 0;
}

/* The quantizer description from the file's meta JSON; -1 if unusable. */
static int desc_from_meta(const char *meta, hc_quant_desc *d)
{
    cJSON *m = cJSON_Parse(meta);
    const cJSON *wc = cJSON_GetObjectItemCaseSensitive(m, "weight_config");
    const char *dtype = json_str(wc, "dtype"), *gs = json_str(wc, "group_size");
    const char *sd = json_str(wc, "scale_dtype"), *td = json_str(m, "torch_dtype");
    int rc = -1;
    memset(d, 0, sizeof *d);
    if (dtype && hc_format_parse(dtype, &d->weight_format) == 0 && td) {
        const cJSON *gsn = cJSON_GetObjectItemCaseSensitive(wc, "group_size");
        d->group_size = gs ? atoi(gs) : (cJSON_IsNumber(gsn) ? gsn->valueint : 0);
        if (d->group_size < 0) d->group_size = 0;
        d->scale_format = strstr(td, "bfloat16") ? HC_FMT_BF16 : HC_FMT_F16;
        rc = (sd && hc_format_parse(sd, &d->scale_format) != 0) ? -1 : 0;
        if (json_flag(wc, "has_zero_point"))
            d->zero_point = json_flag(wc, "is_fp_zero_point") ? HC_ZP_FLOAT : HC_ZP_INT;
    }
    cJSON_Delete(m);
    return rc;
}

/* Number of differing 32-bit words / bytes between two buffers. */
static int64_t count_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    int64_t d = 0;
    for (size_t i = 0; i < n; i++) d += a[i] != b[i];
    return d;
}

static int compare_tensor(const hc_test_st_file *f, const char *name, const void *ours,
                          size_t nbytes, const char *file)
{
    hc_tensor t;
    if (hc_test_st_get(f, name, &t) != 0) {
        printf("  %s: %s missing\n", file, name);
        return 1;
    }
    if (t.nbytes != nbytes) {
        printf("  %s: %s has %zu bytes, ours %zu\n", file, name, t.nbytes, nbytes);
        hc_tensor_free(&t);
        return 1;
    }
    int64_t d = count_diff(t.data, ours, nbytes);
    hc_tensor_free(&t);
    printf("  %s: %s %s (%lld of %zu bytes differ)\n", file, name, d ? "MISMATCH" : "bit exact",
           (long long)d, nbytes);
    return d != 0;
}

static int check_exact(const hc_test_st_file *f, const hc_quant_result *r, const char *file)
{
    int bad = compare_tensor(f, "pre.weight", r->codes,
                             (size_t)(r->experts * r->n * r->k * r->bits / 8), file);
    bad += compare_tensor(f, "pre.weight_scale", r->scales,
                          (size_t)(r->experts * r->group_rows * r->groups * r->scale_bytes), file);
    if (hc_test_st_has(f, "pre.zero_point")) {
        size_t zn = r->zero_points ? (size_t)(r->experts * r->group_rows * r->bits / 32 * r->groups * 4)
                                   : (size_t)(r->experts * r->group_rows * r->groups * 2);
        const void *zp = r->zero_points ? (const void *)r->zero_points : (const void *)r->zero_points_f;
        bad += zp ? compare_tensor(f, "pre.zero_point", zp, zn, file) : 1;
    }
    return bad;
}

/* Whether a6455de's quantizer rule for d is 0.1.19's: 1-bit symmetric
 * integers, or float weights with scales other than e8m0. */
static int same_rule(const hc_quant_desc *d, const char **why)
{
    const hc_format_info *wf = hc_format_get(d->weight_format);
    if (d->scale_format == HC_FMT_F8E8M0) {
        *why = "e8m0 scales rounded down";
        return 0;
    }
    if (wf->kind != HC_KIND_FLOAT && wf->bits > 1 && d->zero_point == HC_ZP_NONE) {
        *why = "symmetric scale amax/(D+1.499), amin/(D+0.499)";
        return 0;
    }
    return 1;
}

/* Mismatches of one file; *compared = 1 when its quantizer rule is ours. */
static int run_file(const char *path, const char *file, int *compared, void *ctx)
{
    (void)ctx;
    hc_test_st_file f = {0};
    hc_tensor src = {0};
    hc_quant_desc d;
    hc_quant_result r;
    hc_error err = {0};
    const char *meta, *why = "";
    *compared = 0;
    if (hc_test_st_open(path, &f) != 0 || hc_test_st_get(&f, "src.weight", &src) != 0 ||
        src.ndim != 2 || !(meta = hc_test_st_meta(&f, "meta")) || desc_from_meta(meta, &d) != 0) {
        printf("  %s: unreadable golden file\n", file);
        hc_tensor_free(&src);
        hc_test_st_close(&f);
        return 1;
    }
    int bad = 0;
    if (!same_rule(&d, &why)) {
        printf("  %s: not a quantizer reference (a6455de: %s)\n", file, why);
    } else {
        float *w = malloc((size_t)hc_shape_numel(src.ndim, src.shape) * sizeof *w);
        assert_non_null(w);
        assert_int_equal(hc_test_st_to_f32(&src, w), 0);
        *compared = 1;
        bad = 1;
        if (hc_quantize(&d, w, 1, src.shape[0], src.shape[1], &r, &err) != HC_OK) {
            printf("  %s: quantize failed: %s\n", file, err.msg);
        } else {
            bad = check_exact(&f, &r, file);
            hc_quant_result_free(&r);
        }
        free(w);
    }
    hc_tensor_free(&src);
    hc_test_st_close(&f);
    return bad;
}

static void test_golden_files(void **state)
{
    (void)state;
    if (!has_golden()) {
        skip();
        return; /* skip() does not always leave the test */
    }
    int compared = 0;
    int failed = hc_test_golden_walk(golden_dir, run_file, "golden (a6455de)", &compared);
    assert_true(failed >= 0);
    assert_true(compared >= 2); /* w1a16_uint1_ch and w8a8_fp8e4m3_ch */
    assert_int_equal(failed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
