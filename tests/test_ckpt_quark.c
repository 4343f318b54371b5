/* test_ckpt_quark.c - AMD Quark exports (quant_method "quark"), the subset
 * vLLM 0.33 serves through Humming: int4 / uint4 per_group weight-only packed
 * by Pack_4_bits along N (pack_method reorder = AutoAWQ's nibble order, order
 * = natural; int4 nibbles two's complement), fp8_e4m3 per_channel, fp4 MXFP4
 * with e8m0 scales; exclude list; refusals naming the cause. Fixtures follow
 * quark.torch.utils.pack; expected weights (q - z) * s, code * scale. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_format.h"
#include "hc_safetensors.h"
#include "hc_test_ckpt.h"

#define P "model.layers.0.mlp.down_proj"

static char *quark_cfg(const char *weight, const char *input, const char *pack, const char *extra)
{
    char *s = malloc(4096);
    snprintf(s, 4096,
             "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
             "\"quark\", \"export\": {\"kv_cache_group\": [], \"pack_method\": \"%s\"}, "
             "\"global_quant_config\": {\"weight\": %s, \"input_tensors\": %s, "
             "\"output_tensors\": null, \"bias\": null}, "
             "\"layer_type_quant_config\": {}, \"exclude\": [\"lm_head\", "
             "\"re:.*mlp\\\\.gate$\"]%s%s}}",
             pack, weight, input, extra[0] ? ", " : "", extra);
    return s;
}

#define W_INT4(dt, sym) \
    "{\"dtype\": \"" dt "\", \"qscheme\": \"per_group\", \"ch_axis\": 1, \"group_size\": 32, " \
    "\"symmetric\": " sym ", \"is_dynamic\": false, \"scale_type\": \"float\"}"

/* Pack_4_bits: weight transposed to [K, N], column 8w + order[i] in nibble i. */
static void put4(uint32_t *t, int64_t wc, int64_t r, int64_t n, int reorder, int v)
{
    static const int nib[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    int i = reorder ? nib[n % 8] : (int)(n % 8);
    t[r * wc + n / 8] |= ((uint32_t)v & 15u) << (4 * i);
}

/* One int4 / uint4 per_group layer (N 64, K 128, group 32) under prefix;
 * returns the expected weights. */
static float *build_int4(tc_ckpt *c, const char *prefix, const char *dt, int sym, int reorder)
{
    int N = 64, K = 128, gs = 32, G = K / gs, sgn = strcmp(dt, "int4") == 0;
    char name[160];
    snprintf(name, sizeof name, "%s.weight", prefix);
    uint32_t *w = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){K, N / 8});
    snprintf(name, sizeof name, "%s.weight_scale", prefix);
    uint16_t *sc = tc_add(c, name, HC_DT_BF16, 2, (int64_t[2]){G, N});
    snprintf(name, sizeof name, "%s.weight_zero_point", prefix);
    uint32_t *zp = sym ? NULL : tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){G, N / 8});
    int *z = calloc((size_t)(G * N), sizeof *z);
    for (int g = 0; g < G; g++)
        for (int n = 0; n < N; n++) {
            sc[g * N + n] = hc_f32_to_bf16(0.0078125f * (float)(1 + tc_rand() % 16));
            if (!sym) {
                z[g * N + n] = (int)(tc_rand() % 16) - (sgn ? 8 : 0);
                put4(zp, N / 8, g, n, reorder, z[g * N + n]);
            }
        }
    float *want = malloc((size_t)(N * K) * sizeof *want);
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) {
            int q = (int)(tc_rand() % 16) - (sgn ? 8 : 0);
            put4(w, N / 8, k, n, reorder, q);
            want[n * K + k] = (float)((q - z[(k / gs) * N + n]) *
                                      (double)hc_bf16_to_f32(sc[(k / gs) * N + n]));
        }
    free(z);
    return want;
}

static void expect_layer(const char *dir, const char *prefix, const float *want, const char *sf)
{
    hc_ckpt_layer l;
    hc_error err;
    float *got = NULL;
    if (tc_read_layer(dir, prefix, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK)
        fail_msg("%s: %s", prefix, err.msg);
    assert_int_equal(tc_diff(want, got, 64 * 128), 0);
    assert_true(l.lossless);
    if (!strstr(l.source_format, sf)) fail_msg("'%s' lacks '%s'", l.source_format, sf);
    hc_ckpt_layer_free(&l);
    free(got);
}

static void run_int4(const char *dt, int sym, int reorder)
{
    tc_ckpt c;
    tc_init(&c, "quark-int4");
    float *want = build_int4(&c, P, dt, sym, reorder);
    char wcfg[512];
    snprintf(wcfg, sizeof wcfg, "{\"dtype\": \"%s\", \"qscheme\": \"per_group\", \"ch_axis\": 1, "
             "\"group_size\": 32, \"symmetric\": %s, \"is_dynamic\": false}", dt,
             sym ? "true" : "false");
    char *cfg = quark_cfg(wcfg, "null", reorder ? "reorder" : "order", "");
    tc_write(&c, cfg, NULL, NULL);
    expect_layer(c.dir, P, want, "quark");
    assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
    hc_error err;
    tc_expect_converted_field(c.dir, P, "lossless", "true");
    hc_ckpt_config dc;
    assert_int_equal(tc_detect(c.dir, &dc, &err), HC_OK);
    assert_true(hc_ckpt_is_skipped(&dc, "lm_head"));
    assert_true(hc_ckpt_is_skipped(&dc, "model.layers.2.mlp.gate"));
    assert_false(hc_ckpt_is_skipped(&dc, "model.layers.2.mlp.gate_proj"));
    free(cfg); free(want);
    tc_free(&c);
}

/* layer_quant_config: an entry with its own weight config applies to the
 * layers it matches (fnmatch with '*', else the name within the key); a
 * KV-cache entry without weights leaves the global config. */
static void test_layer_config(void **state)
{
    (void)state;
    tc_ckpt c;
    tc_init(&c, "quark-layers");
    float *w_down = build_int4(&c, P, "uint4", 0, 1);
    float *w_o = build_int4(&c, "model.layers.0.self_attn.o_proj", "int4", 1, 1);
    float *w_k = build_int4(&c, "model.layers.0.self_attn.k_proj", "int4", 1, 1);
    char *cfg = quark_cfg(W_INT4("int4", "true"), "null", "reorder",
                          "\"layer_quant_config\": {\"*down_proj\": {\"weight\": "
                          W_INT4("uint4", "false") ", \"input_tensors\": null}, "
                          "\"*k_proj\": {\"weight\": null, \"output_tensors\": "
                          "{\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\"}}}");
    tc_write(&c, cfg, NULL, NULL);
    expect_layer(c.dir, P, w_down, "uint4 g32 asym");
    expect_layer(c.dir, "model.layers.0.self_attn.o_proj", w_o, "int4 g32 sym");
    expect_layer(c.dir, "model.layers.0.self_attn.k_proj", w_k, "int4 g32 sym");
    hc_error err;
    char *out = NULL;
    if (tc_convert(c.dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    free(out);
    free(cfg); free(w_down); free(w_o); free(w_k);
    tc_free(&c);
}

static void test_int4(void **state)
{
    (void)state;
    run_int4("int4", 1, 1);
    run_int4("int4", 1, 0);
    run_int4("uint4", 0, 1);
    run_int4("uint4", 0, 0);
    run_int4("int4", 0, 1); /* signed zero points: nibble XOR 8 on both keeps q - z */
}

/* A finite positive-or-negative e4m3 byte (no NaN 0x7F / 0xFF). */
static uint8_t rand_e4m3(void)
{
    uint8_t b;
    do b = (uint8_t)(tc_rand() % 256);
    while ((b & 0x7F) == 0x7F);
    return b;
}

/* fp8_e4m3 per_channel (W8A8 FP8): the static input_scale is not carried. */
static void test_fp8_channel(void **state)
{
    (void)state;
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "quark-fp8");
    uint8_t *w = tc_add(&c, P ".weight", HC_DT_F8_E4M3, 2, (int64_t[2]){N, K});
    float *s = tc_add(&c, P ".weight_scale", HC_DT_F32, 1, (int64_t[1]){N});
    float *is = tc_add(&c, P ".input_scale", HC_DT_F32, 0, NULL);
    is[0] = 0.5f;
    for (int n = 0; n < N; n++) s[n] = hc_bf16_to_f32(hc_f32_to_bf16(0.001f * (float)(n + 1)));
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int i = 0; i < N * K; i++) {
        w[i] = rand_e4m3();
        want[i] = (float)(hc_format_decode(HC_FMT_F8E4M3, w[i]) * (double)s[i / K]);
    }
    char *cfg = quark_cfg("{\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_channel\", \"ch_axis\": 0, "
                          "\"is_dynamic\": false}",
                          "{\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\", \"is_dynamic\": "
                          "false, \"symmetric\": true}", "reorder", "");
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    assert_non_null(strstr(l.note, "input_scale"));
    hc_ckpt_layer_free(&l);
    char *out = NULL;
    if (tc_convert_keep(c.dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    free(out);
    char *od = tc_out_dir(c.dir, "out");
    hc_st_model *m = NULL;
    assert_int_equal(hc_st_model_open(od, &m, &err), HC_OK);
    assert_null(hc_st_model_find(m, P ".input_scale")); /* consumed with the layer, not copied */
    assert_non_null(hc_st_model_find(m, P ".weight"));
    hc_st_model_close(m);
    free(od);
    free(cfg); free(want); free(got);
    tc_free(&c);
}

/* fp4 per_group 32, e8m0 scales (OCP MXFP4), Pack_fp4: element 2j in the low nibble. */
static void test_mxfp4(void **state)
{
    (void)state;
    static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "quark-mxfp4");
    uint8_t *w = tc_add(&c, P ".weight", HC_DT_U8, 2, (int64_t[2]){N, K / 2});
    uint8_t *s = tc_add(&c, P ".weight_scale", HC_DT_U8, 2, (int64_t[2]){N, K / 32});
    for (int i = 0; i < N * K / 32; i++) s[i] = (uint8_t)(120 + tc_rand() % 10);
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k += 2) {
            uint8_t lo = (uint8_t)(tc_rand() % 16), hi = (uint8_t)(tc_rand() % 16);
            w[n * (K / 2) + k / 2] = (uint8_t)(lo | hi << 4);
            double sc = hc_format_decode(HC_FMT_F8E8M0, s[n * (K / 32) + k / 32]);
            want[n * K + k] = (float)((lo & 8 ? -1 : 1) * e2m1[lo & 7] * sc);
            want[n * K + k + 1] = (float)((hi & 8 ? -1 : 1) * e2m1[hi & 7] * sc);
        }
    char *cfg = quark_cfg("{\"dtype\": \"fp4\", \"qscheme\": \"per_group\", \"ch_axis\": -1, "
                          "\"group_size\": 32, \"scale_format\": \"e8m0\", \"is_dynamic\": false}",
                          "null", "reorder", "");
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    hc_ckpt_layer_free(&l);
    char *out = NULL;
    if (tc_convert(c.dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    free(out);
    free(cfg); free(want); free(got);
    tc_free(&c);
}

static void expect_refused(const char *cfg, const char *words)
{
    tc_ckpt c;
    tc_init(&c, "quark-bad");
    tc_add(&c, P ".weight", HC_DT_I32, 2, (int64_t[2]){128, 8});
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_config dc;
    hc_error err;
    assert_int_equal(tc_detect(c.dir, &dc, &err), HC_ERR_UNSUPPORTED);
    if (!strstr(err.msg, words)) fail_msg("message lacks '%s': %s", words, err.msg);
    tc_free(&c);
}

/* What vLLM 0.33's Humming path does not serve is refused, naming the cause. */
static void test_refusals(void **state)
{
    (void)state;
    char *a = quark_cfg("[{\"dtype\": \"fp4\", \"qscheme\": \"per_group\", \"group_size\": 16}, "
                        "{\"dtype\": \"fp8_e4m3\", \"qscheme\": \"per_tensor\"}]", "null", "reorder", "");
    expect_refused(a, "NVFP4");
    free(a);
    a = quark_cfg("{\"dtype\": \"int8\", \"qscheme\": \"per_channel\", \"symmetric\": true}",
                  "{\"dtype\": \"int8\", \"qscheme\": \"per_tensor\"}", "reorder", "");
    expect_refused(a, "\"int8\"");
    free(a);
    a = quark_cfg(W_INT4("uint4", "true"), "null", "reorder", "");
    expect_refused(a, "uint4 symmetric");
    free(a);
    a = quark_cfg(W_INT4("int4", "true"), "{\"dtype\": \"int8\", \"qscheme\": \"per_tensor\"}",
                  "reorder", "");
    expect_refused(a, "quantized activations");
    free(a);
    a = quark_cfg("{\"dtype\": \"fp6_e2m3\", \"qscheme\": \"per_group\", \"group_size\": 32, "
                  "\"scale_format\": \"e8m0\"}", "null", "reorder", "");
    expect_refused(a, "fp6_e2m3");
    free(a);
    char *b = malloc(4096);
    snprintf(b, 4096, "{\"quantization_config\": {\"quant_method\": \"quark\", "
             "\"global_quant_config\": {\"weight\": " W_INT4("int4", "true") ", "
             "\"input_tensors\": null}, \"layer_quant_config\": {\"*down_proj\": {\"weight\": "
             W_INT4("int4", "false") "}}}}");
    { /* an entry with its own (readable) weight config is read, not refused */
        tc_ckpt c;
        tc_init(&c, "quark-layer-ok");
        tc_write(&c, b, NULL, NULL);
        hc_ckpt_config dc;
        hc_error err;
        assert_int_equal(tc_detect(c.dir, &dc, &err), HC_OK);
        assert_int_equal(dc.n_qlayers, 1);
        assert_false(hc_ckpt_quark_for(&dc, P)->sym);
        assert_true(hc_ckpt_quark_for(&dc, "model.layers.0.self_attn.o_proj")->sym);
        tc_free(&c);
    }
    snprintf(b, 4096, "{\"quantization_config\": {\"quant_method\": \"quark\", "
             "\"global_quant_config\": {\"weight\": " W_INT4("int4", "true") ", "
             "\"input_tensors\": null}, \"layer_quant_config\": {\"*down_proj\": {\"weight\": "
             "{\"dtype\": \"int8\", \"qscheme\": \"per_channel\"}}}}}");
    expect_refused(b, "layer_quant_config.*down_proj.weight");
    snprintf(b, 4096, "{\"quantization_config\": {\"quant_method\": \"quark\", "
             "\"global_quant_config\": {\"weight\": " W_INT4("int4", "true") ", "
             "\"input_tensors\": null}, \"layer_type_quant_config\": {\"Linear\": {}}}}");
    expect_refused(b, "layer_type_quant_config");
    free(b);
}

/* Tensors that do not match the config are refused before any arithmetic. */
static void test_hostile(void **state)
{
    (void)state;
    static const struct { int64_t w[2], s[2], z[2]; const char *words; } cases[] = {
        {{128, 9}, {4, 64}, {4, 8}, "does not hold N=64"},      /* packed width vs scales */
        {{128, 8}, {3, 64}, {4, 8}, "expected shape [4, 64]"},  /* scale groups */
        {{128, 8}, {4, 64}, {4, 9}, "expected shape [4, 8]"},   /* zero points */
        {{100, 8}, {4, 64}, {4, 8}, "not a multiple of the group size"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_ckpt c;
        tc_init(&c, "quark-hostile");
        tc_add(&c, P ".weight", HC_DT_I32, 2, cases[i].w);
        tc_add(&c, P ".weight_scale", HC_DT_BF16, 2, cases[i].s);
        tc_add(&c, P ".weight_zero_point", HC_DT_I32, 2, cases[i].z);
        char *cfg = quark_cfg(W_INT4("uint4", "false"), "null", "reorder", "");
        tc_write(&c, cfg, NULL, NULL);
        hc_ckpt_layer l;
        hc_error err;
        hc_status st = tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err);
        assert_true(st == HC_ERR_FORMAT || st == HC_ERR_UNSUPPORTED);
        if (!strstr(err.msg, cases[i].words)) fail_msg("case %zu: %s", i, err.msg);
        free(cfg);
        tc_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int4),  cmocka_unit_test(test_layer_config),
        cmocka_unit_test(test_fp8_channel),
        cmocka_unit_test(test_mxfp4), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
