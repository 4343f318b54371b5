/* test_verify_golden.c - the CPU reference GEMM on Humming's own kernel-ready
 * tensors (shared/golden: post.* and x, Humming a6455de) against Humming's GPU
 * output y.humming. Tolerance (docs/verification.md): relative RMS error <=
 * 1e-2. Our GPU kernels run humming-kernels 0.1.19 layouts only: their golden
 * check is in test_layout_golden0119.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cjson/cJSON.h>

#include "hc_test_st.h"
#include "hc_test_util.h"
#include "hc_verify.h"

#define GOLDEN_TOL 1e-2

static const char *const files[] = {
    "w1a16_uint1_ch", "w2a16_uint2_g64", "w4a16_fp4e2m1_g32_e8m0_mxfp4",
    "w4a16_uint4_ch_bf16", "w4a16_uint4_g128", "w4a8_uint4_g128_fp8", "w8a16_uint8_ch",
    "w8a8_fp8e4m3_ch",
};

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t jint(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsNumber(v)) return (int64_t)v->valuedouble;
    return cJSON_IsString(v) ? strtoll(v->valuestring, NULL, 10) : 0;
}

static hc_format_id fmt(const char *name)
{
    hc_format_id id = HC_FMT_COUNT;
    assert_non_null(name);
    if (!strncmp(name, "torch.", 6)) name += 6;
    if (!strcmp(name, "float8_e4m3fn")) name = "float8e4m3";
    assert_int_equal(hc_format_parse(name, &id), 0);
    return id;
}

/* Any float-ish tensor as float32. */
static float *to_float(const hc_tensor *t, int64_t *n)
{
    int bits = hc_dtype_bits(t->dtype);
    *n = (int64_t)(t->nbytes * 8 / (size_t)bits);
    float *out = malloc((size_t)*n * sizeof(float));
    assert_non_null(out);
    for (int64_t i = 0; i < *n; i++) {
        if (t->dtype == HC_DT_F32) out[i] = ((const float *)t->data)[i];
        else if (t->dtype == HC_DT_BF16) out[i] = hc_bf16_to_f32(((const uint16_t *)t->data)[i]);
        else if (t->dtype == HC_DT_F16) out[i] = hc_f16_to_f32(((const uint16_t *)t->data)[i]);
        else out[i] = (float)hc_format_decode(HC_FMT_F8E4M3, ((const uint8_t *)t->data)[i]);
    }
    return out;
}

static void get(const hc_test_st_file *f, const char *name, hc_tensor *t)
{
    memset(t, 0, sizeof *t);
    if (hc_test_st_has(f, name)) assert_int_equal(hc_test_st_get(f, name, t), 0);
}

static const char *shared_dir(void)
{
    const char *d = getenv("HC_SHARED_DIR");
    return d && d[0] ? d : "../shared";
}

typedef struct {
    const char *name;
} golden_case;

static void test_file(void **state)
{
    const golden_case *gc = *state;
    const char *name = gc->name;
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s.safetensors", shared_dir(), name);
    hc_test_st_file f;
    if (hc_test_st_open(path, &f) != 0) {
        hc_test_skip_notice("golden", "%s not readable (HC_SHARED_DIR?): golden GEMM check skipped",
                            path);
        skip();
        return; /* skip() does not always leave the test */
    }
    cJSON *meta = cJSON_Parse(hc_test_st_meta(&f, "meta"));
    assert_non_null(meta);
    cJSON *lm = cJSON_Parse(jstr(meta, "layer_meta"));
    const cJSON *wc = cJSON_GetObjectItemCaseSensitive(meta, "weight_config");
    assert_non_null(lm);
    hc_layer_config c;
    memset(&c, 0, sizeof c);
    c.weight_format = fmt(jstr(wc, "dtype"));
    c.act_format = fmt(jstr(meta, "a_dtype"));
    c.param_format = fmt(jstr(meta, "torch_dtype"));
    c.scale_format = jstr(wc, "scale_dtype") ? fmt(jstr(wc, "scale_dtype")) : c.param_format;
    c.group_size = jint(wc, "group_size");
    c.scale_type = c.group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP;
    c.has_zero_point = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(lm, "has_zero_point"));
    c.is_fp_zero_point = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(lm, "is_fp_zero_point"));
    c.sm = 90;
    int64_t N = jint(meta, "n"), K = jint(meta, "k");
    hc_layer_meta m;
    hc_error err = {0};
    if (hc_layer_plan(&c, 0, 1, N, K, &m, &err) != HC_OK) fail_msg("plan: %s", err.msg);
    hc_layer_tensors post;
    memset(&post, 0, sizeof post);
    get(&f, "post.weight", &post.weight);
    get(&f, "post.weight_scale", &post.weight_scale);
    get(&f, "post.zero_point", &post.zero_point);
    get(&f, "post.global_scale", &post.global_scale);
    get(&f, "post.bias", &post.bias);
    float *W = malloc((size_t)(m.Np * m.Kp) * sizeof(float));
    assert_non_null(W);
    if (hc_verify_decode(&c, &m, &post, W, NULL, &err) != HC_OK) fail_msg("decode: %s", err.msg);
    hc_tensor tx, ty, tq, ts, tw;
    get(&f, "x", &tx);
    get(&f, "y.humming", &ty);
    get(&f, "x.quant", &tq);
    get(&f, "x.scale", &ts);
    get(&f, "src.weight", &tw);
    int64_t nx, ny, nw;
    float *x = to_float(&tx, &nx), *yh = to_float(&ty, &ny), *src = to_float(&tw, &nw);
    int64_t M = nx / K;
    float *y = malloc((size_t)(M * N) * sizeof(float));
    assert_non_null(y);
    int64_t qdiff = -1;
    if (m.act_bits < 16) {
        float *mine = malloc((size_t)nx * sizeof(float));
        memcpy(mine, x, (size_t)nx * sizeof(float));
        hc_verify_quantize_act(c.act_format, mine, M, K);
        if (tq.data) { /* Humming's quantized activations: codes x per-token scale */
            int64_t nq, ns;
            float *q = to_float(&tq, &nq), *s = to_float(&ts, &ns);
            qdiff = 0;
            for (int64_t i = 0; i < nx; i++) {
                x[i] = q[i] * s[i / K];
                qdiff += fabsf(x[i] - mine[i]) > 1e-6f * fabsf(x[i]) + 1e-30f;
            }
            free(q);
            free(s);
        } else {
            memcpy(x, mine, (size_t)nx * sizeof(float));
        }
        free(mine);
    }
    hc_verify_gemm(x, M, K, W, 1, N, m.Np, m.Kp, NULL, 0, y);
    hc_verify_cmp cmp, wcmp;
    hc_verify_compare(y, yh, M * N, &cmp);
    float *Wu = malloc((size_t)(N * K) * sizeof(float));
    for (int64_t n = 0; n < N; n++) memcpy(Wu + n * K, W + n * m.Kp, (size_t)K * sizeof(float));
    hc_verify_compare(Wu, src, N * K, &wcmp);
    printf("GOLDEN %-30s gemm rel err %.3e (snr %.1f dB, cos %.6f, max abs %.3g); "
           "decoded W vs src.weight rel err %.4f (Humming recorded %.4f)",
           name, cmp.rel_err, cmp.snr_db, cmp.cosine, cmp.max_abs_err, wcmp.rel_err,
           cJSON_GetObjectItemCaseSensitive(meta, "rel_err_vs_fp_weight")
               ? cJSON_GetObjectItemCaseSensitive(meta, "rel_err_vs_fp_weight")->valuedouble : -1);
    if (qdiff >= 0) printf("; our per-token quantized x differs from x.quant in %lld of %lld",
                           (long long)qdiff, (long long)nx);
    printf("\n");
    assert_true(cmp.rel_err <= GOLDEN_TOL);
    assert_true(qdiff <= 0); /* per-token quantizer reproduces Humming's x.quant exactly */
    assert_int_equal(cmp.nonfinite, 0);
    free(W); free(Wu); free(x); free(yh); free(src); free(y);
    hc_tensor_free(&tx); hc_tensor_free(&ty); hc_tensor_free(&tq); hc_tensor_free(&ts);
    hc_tensor_free(&tw);
    hc_layer_tensors_free(&post);
    cJSON_Delete(lm);
    cJSON_Delete(meta);
    hc_test_st_close(&f);
}

int main(void)
{
    enum { NF = sizeof files / sizeof files[0] };
    static golden_case cases[NF];
    struct CMUnitTest tests[NF];
    for (size_t i = 0; i < NF; i++) {
        cases[i] = (golden_case){.name = files[i]};
        struct CMUnitTest t = cmocka_unit_test_prestate(test_file, &cases[i]);
        t.name = files[i];
        tests[i] = t;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
