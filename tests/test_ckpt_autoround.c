/* test_ckpt_autoround.c - AutoRound / INC checkpoints (quant_method
 * "auto-round" / "intel/auto-round") read with the GPTQ and AWQ readers:
 * packing_format auto_round:auto_gptq (AutoGPTQ layout, stored zero - 1),
 * AutoRound's own QuantLinear (same layout, true zeros; 5/6/7 bits as one
 * little-endian bit stream, auto_round.utils.bit_packing), auto_round:auto_awq
 * (AutoAWQ GEMM); extra_config per-layer bits / group_size / sym (exact name,
 * '.'-suffix, regex searched anywhere; bits 16 = unquantized) as vLLM 0.33's
 * INC parser; refusals. Also the skip-list limit. Expected weights (q - z) * s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_format.h"
#include "hc_test_ckpt.h"

#define P "model.layers.0.mlp.down_proj"

/* GPTQ layout: qweight [K*b/32, N] (column stream along K), qzeros [G, N*b/32]
 * (row stream along N) holding zero - zoff, scales [G, N] F16. */
static float *build_gptq(tc_ckpt *c, const char *prefix, int b, int N, int K, int gs, int sym,
                         int zoff)
{
    int G = K / gs, top = (1 << b) - 1;
    char name[160];
    snprintf(name, sizeof name, "%s.qweight", prefix);
    uint32_t *qw = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){K * b / 32, N});
    snprintf(name, sizeof name, "%s.qzeros", prefix);
    uint32_t *qz = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){G, N * b / 32});
    snprintf(name, sizeof name, "%s.scales", prefix);
    uint16_t *sc = tc_add(c, name, HC_DT_F16, 2, (int64_t[2]){G, N});
    int *z = malloc((size_t)(G * N) * sizeof *z);
    for (int g = 0; g < G; g++)
        for (int n = 0; n < N; n++) {
            z[g * N + n] = sym ? 1 << (b - 1) : zoff + (int)(tc_rand() % (uint32_t)(top + 1 - zoff));
            tc_put_bits(qz + (int64_t)g * (N * b / 32), (int64_t)n * b, b, (uint32_t)(z[g * N + n] - zoff));
            sc[g * N + n] = hc_f32_to_f16((float)(0.001 + (tc_rand() % 1000) * 1e-5));
        }
    uint32_t *col = calloc((size_t)(K * b / 32), 4);
    float *want = malloc((size_t)(N * K) * sizeof *want);
    for (int n = 0; n < N; n++) {
        memset(col, 0, (size_t)(K * b / 32) * 4);
        for (int k = 0; k < K; k++) {
            int q = (int)(tc_rand() % (uint32_t)(top + 1));
            tc_put_bits(col, (int64_t)k * b, b, (uint32_t)q);
            want[n * K + k] = (float)((q - z[(k / gs) * N + n]) *
                                      (double)hc_f16_to_f32(sc[(k / gs) * N + n]));
        }
        for (int w = 0; w < K * b / 32; w++) qw[(int64_t)w * N + n] = col[w];
    }
    free(col);
    free(z);
    return want;
}

static char *ar_cfg(const char *method, const char *pf, int bits, int gs, int sym,
                    const char *extra)
{
    char *s = malloc(2048);
    snprintf(s, 2048,
             "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
             "\"%s\", \"packing_format\": \"%s\", \"bits\": %d, \"group_size\": %d, \"sym\": %s, "
             "\"data_type\": \"int\", \"autoround_version\": \"0.16.1\"%s%s}}",
             method, pf, bits, gs, sym ? "true" : "false", extra[0] ? ", " : "", extra);
    return s;
}

/* Reads prefix, compares with want, converts (tiles and canonical). */
static void check_layer(tc_ckpt *c, const char *prefix, const float *want, int N, int K,
                        const char *sf_word)
{
    hc_ckpt_layer l;
    hc_error err;
    float *got = NULL;
    if (tc_read_layer(c->dir, prefix, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK)
        fail_msg("%s: %s", prefix, err.msg);
    assert_int_equal(tc_diff(want, got, (int64_t)N * K), 0);
    assert_true(l.lossless);
    if (!strstr(l.source_format, sf_word)) fail_msg("'%s' lacks '%s'", l.source_format, sf_word);
    hc_ckpt_layer_free(&l);
    free(got);
}

static void convert_ok(tc_ckpt *c)
{
    hc_error err;
    char *out = NULL;
    if (tc_convert(c->dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    char *v = tc_layer_field(out, P, "lossless");
    assert_string_equal(v, "true");
    free(v);
    free(out);
}

/* auto_round:auto_gptq (v1 zeros) and AutoRound's own packing (true zeros), every width. */
static void test_gptq_packings(void **state)
{
    (void)state;
    static const int bits[7] = {2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 7; i++)
        for (int v = 0; v < 3; v++) {
            int b = bits[i], sym = v == 2;
            const char *pf = v == 1 ? "auto_round" : "auto_round:auto_gptq";
            tc_ckpt c;
            tc_init(&c, "autoround");
            float *want = build_gptq(&c, P, b, 64, 128, 32, sym, v == 1 ? 0 : 1);
            char *cfg = ar_cfg(v == 1 ? "intel/auto-round" : "auto-round", pf, b, 32, sym, "");
            tc_write(&c, cfg, NULL, NULL);
            check_layer(&c, P, want, 64, 128, pf);
            if (b == 3 || b == 5) convert_ok(&c);
            free(cfg);
            free(want);
            tc_free(&c);
        }
}

/* auto_round:auto_awq: AutoAWQ GEMM (nibble interleave 0,2,4,6,1,3,5,7 along N). */
static void test_awq_packing(void **state)
{
    (void)state;
    static const int rev[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    int N = 64, K = 128, gs = 32, G = K / gs;
    tc_ckpt c;
    tc_init(&c, "autoround-awq");
    uint32_t *qw = tc_add(&c, P ".qweight", HC_DT_I32, 2, (int64_t[2]){K, N / 8});
    uint32_t *qz = tc_add(&c, P ".qzeros", HC_DT_I32, 2, (int64_t[2]){G, N / 8});
    uint16_t *sc = tc_add(&c, P ".scales", HC_DT_F16, 2, (int64_t[2]){G, N});
    int *z = malloc((size_t)(G * N) * sizeof *z), *q = malloc((size_t)(K * N) * sizeof *q);
    for (int g = 0; g < G; g++)
        for (int n = 0; n < N; n++) {
            z[g * N + n] = (int)(tc_rand() % 16);
            qz[g * (N / 8) + n / 8] |= (uint32_t)z[g * N + n] << (4 * rev[n % 8]);
            sc[g * N + n] = hc_f32_to_f16((float)(0.002 + (tc_rand() % 500) * 1e-5));
        }
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) {
            q[k * N + n] = (int)(tc_rand() % 16);
            qw[k * (N / 8) + n / 8] |= (uint32_t)q[k * N + n] << (4 * rev[n % 8]);
        }
    float *want = malloc((size_t)(N * K) * sizeof *want);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            want[n * K + k] = (float)((q[k * N + n] - z[(k / gs) * N + n]) *
                                      (double)hc_f16_to_f32(sc[(k / gs) * N + n]));
    char *cfg = ar_cfg("auto-round", "auto_round:auto_awq", 4, 32, 0, "");
    tc_write(&c, cfg, NULL, NULL);
    check_layer(&c, P, want, N, K, "awq gemm");
    convert_ok(&c);
    free(cfg); free(want); free(z); free(q);
    tc_free(&c);
}

/* extra_config: the layer's own bits / group / sym (exact name), regex keys
 * searched anywhere, '.'-suffix keys, bits 16 = unquantized (skipped). */
static void test_extra_config(void **state)
{
    (void)state;
    tc_ckpt c;
    tc_init(&c, "autoround-extra");
    float *w_down = build_gptq(&c, P, 8, 64, 128, 64, 0, 1);
    float *w_up = build_gptq(&c, "model.layers.0.mlp.up_proj", 3, 64, 128, 32, 1, 1);
    float *w_o = build_gptq(&c, "model.layers.0.self_attn.o_proj", 4, 64, 128, 32, 0, 1);
    char *cfg = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 0,
                       "\"extra_config\": {\"" P "\": {\"bits\": 8, \"group_size\": 64}, "
                       "\"mlp\\\\.up_proj$\": {\"bits\": 3, \"sym\": true}, "
                       "\".*mlp\\\\.gate$\": {\"bits\": 16, \"data_type\": \"float\"}, "
                       "\"lm_head\": {\"bits\": 16}}");
    tc_write(&c, cfg, NULL, NULL);
    check_layer(&c, P, w_down, 64, 128, "uint8 g64");
    check_layer(&c, "model.layers.0.mlp.up_proj", w_up, 64, 128, "uint3 g32 sym");
    check_layer(&c, "model.layers.0.self_attn.o_proj", w_o, 64, 128, "uint4 g32 asym");
    hc_ckpt_config dc;
    hc_error err;
    assert_int_equal(tc_detect(c.dir, &dc, &err), HC_OK);
    assert_int_equal(dc.method, HC_CKPT_GPTQ);
    assert_true(hc_ckpt_is_skipped(&dc, "model.layers.5.mlp.gate"));
    assert_true(hc_ckpt_is_skipped(&dc, "model.language_model.lm_head"));
    assert_false(hc_ckpt_is_skipped(&dc, "model.layers.5.mlp.gate_proj"));
    assert_false(hc_ckpt_is_skipped(&dc, P));
    convert_ok(&c);
    free(cfg); free(w_down); free(w_up); free(w_o);
    tc_free(&c);
}

static void expect_detect_fail(const char *cfg, hc_status want, const char *words)
{
    tc_ckpt c;
    tc_init(&c, "autoround-bad");
    free(build_gptq(&c, P, 4, 64, 128, 32, 0, 1));
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_config dc;
    hc_error err;
    assert_int_equal(tc_detect(c.dir, &dc, &err), want);
    if (!strstr(err.msg, words)) fail_msg("message lacks '%s': %s", words, err.msg);
    tc_free(&c);
}

/* What is not read is refused with its cause. */
static void test_refusals(void **state)
{
    (void)state;
    char *a = ar_cfg("auto-round", "auto_round:fp8", 8, 128, 1, "");
    expect_detect_fail(a, HC_ERR_UNSUPPORTED, "auto_round:fp8");
    free(a);
    a = ar_cfg("auto-round", "auto_round:llm_compressor", 8, 32, 1, "");
    expect_detect_fail(a, HC_ERR_UNSUPPORTED, "llm_compressor");
    free(a);
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 1,
               "\"extra_config\": {\"" P "\": {\"bits\": 4, \"data_type\": \"mx_fp\"}}");
    expect_detect_fail(a, HC_ERR_UNSUPPORTED, "mx_fp");
    free(a);
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 1, 32, 1, "");
    expect_detect_fail(a, HC_ERR_UNSUPPORTED, "2..8 bits");
    free(a);
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 1,
               "\"extra_config\": {\"(bad\": {\"bits\": 8}}");
    expect_detect_fail(a, HC_ERR_FORMAT, "bad regular expression");
    free(a);
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 1, "\"extra_config\": {\"x\": 5}");
    expect_detect_fail(a, HC_ERR_FORMAT, "extra_config.x must be an object");
    free(a);
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 1, "\"extra_config\": [1]");
    expect_detect_fail(a, HC_ERR_FORMAT, "extra_config must be an object");
    free(a);
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 1,
               "\"extra_config\": {\"" P "\": {\"bits\": \"8\", \"group_size\": 0}}");
    expect_detect_fail(a, HC_ERR_FORMAT, "group_size = 0");
    free(a);
    /* a packed layer that extra_config calls unquantized */
    tc_ckpt c;
    tc_init(&c, "autoround-16");
    free(build_gptq(&c, P, 4, 64, 128, 32, 0, 1));
    a = ar_cfg("auto-round", "auto_round:auto_gptq", 4, 32, 0,
               "\"extra_config\": {\"" P "\": {\"bits\": 16}}");
    tc_write(&c, a, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err), HC_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "unquantized"));
    free(a);
    tc_free(&c);
}

/* A skip list longer than the reader holds is refused, not cut. */
static void test_skip_limit(void **state)
{
    (void)state;
    for (int n = HC_CKPT_MAX_SKIP; n <= HC_CKPT_MAX_SKIP + 1; n++) {
        size_t cap = (size_t)n * 40 + 512;
        char *cfg = malloc(cap);
        size_t o = (size_t)snprintf(cfg, cap, "{\"quantization_config\": {\"quant_method\": "
                                    "\"gptq\", \"bits\": 4, \"group_size\": 32, "
                                    "\"modules_to_not_convert\": [");
        for (int i = 0; i < n; i++)
            o += (size_t)snprintf(cfg + o, cap - o, "%s\"model.layers.%d.mlp.gate\"", i ? ", " : "", i);
        snprintf(cfg + o, cap - o, "]}}");
        tc_ckpt c;
        tc_init(&c, "skip-limit");
        tc_write(&c, cfg, NULL, NULL);
        hc_ckpt_config dc;
        hc_error err;
        hc_status st = tc_detect(c.dir, &dc, &err);
        if (n == HC_CKPT_MAX_SKIP) {
            assert_int_equal(st, HC_OK);
            assert_true(hc_ckpt_is_skipped(&dc, "model.layers.1023.mlp.gate"));
        } else {
            assert_int_equal(st, HC_ERR_UNSUPPORTED);
            assert_non_null(strstr(err.msg, "skip-list entries"));
        }
        free(cfg);
        tc_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gptq_packings), cmocka_unit_test(test_awq_packing),
        cmocka_unit_test(test_extra_config),  cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_skip_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
