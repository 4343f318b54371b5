/* test_ckpt_fp.c - float-element checkpoints: compressed-tensors NVFP4
 * (global scale is a divisor) and MXFP4, ModelOpt NVFP4 (weight_scale_2 is a
 * multiplier) and FP8, gpt-oss MXFP4 expert stacks (interleaved gate/up,
 * bias), DeepSeek FP8 128x128 blocks with partial edge blocks. Element
 * decoders are written here from formats spec 0.1. */
#include <math.h>
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
#include "hc_test_util.h"

#define P "model.layers.0.mlp.up_proj"

static double e2m1(unsigned c)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (c & 8 ? -1 : 1) * mag[c & 7];
}

static double e4m3(unsigned b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v = e == 0 ? m * ldexp(1, -9) : (8 + m) * ldexp(1, e - 10);
    return s ? -v : v;
}

static unsigned rand_e4m3_pos(void) { return 0x20 + tc_rand() % 0x30; } /* moderate, finite */
static unsigned rand_e4m3(void)
{
    unsigned b = tc_rand() % 256;
    return (b & 0x7F) == 0x7F ? 0x10 : b; /* no NaN */
}

/* NVFP4 fixture: U8 [N, K/2], F8_E4M3 [N, K/16]; returns codes and scale bytes. */
static void nvfp4_tensors(tc_ckpt *c, const char *wname, int N, int K, uint8_t **w, uint8_t **s)
{
    *w = tc_add(c, wname, HC_DT_U8, 2, (int64_t[2]){N, K / 2});
    *s = tc_add(c, P ".weight_scale", HC_DT_F8_E4M3, 2, (int64_t[2]){N, K / 16});
    for (int i = 0; i < N * K / 2; i++) (*w)[i] = (uint8_t)(tc_rand() % 256);
    for (int i = 0; i < N * K / 16; i++) (*s)[i] = (uint8_t)rand_e4m3_pos();
}

static double nv_elem(const uint8_t *w, int K, int n, int k)
{
    uint8_t byte = w[n * (K / 2) + k / 2];
    return e2m1(k % 2 ? byte >> 4 : byte & 15); /* element 2j in the low nibble */
}

#define CT_FP4(fmt, gs) \
    "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": " \
    "\"compressed-tensors\", \"format\": \"" fmt "\", \"quantization_status\": \"compressed\", " \
    "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, " \
    "\"type\": \"float\", \"strategy\": \"tensor_group\", \"group_size\": " #gs "}}}}}"

/* Trap: compressed-tensors' weight_global_scale DIVIDES. */
static void run_ct_nvfp4(float gsc, int expect_lossless)
{
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "ct-nvfp4");
    uint8_t *w, *s;
    nvfp4_tensors(&c, P ".weight_packed", N, K, &w, &s);
    float *g = tc_add(&c, P ".weight_global_scale", HC_DT_F32, 1, (int64_t[1]){1});
    g[0] = gsc;
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            want[n * K + k] = (float)(nv_elem(w, K, n, k) * e4m3(s[n * (K / 16) + k / 16]) / gsc);
    tc_write(&c, CT_FP4("nvfp4-pack-quantized", 16), NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(l.lossless, expect_lossless);
    if (expect_lossless) {
        assert_int_equal(tc_diff(want, got, N * K), 0);
    } else { /* one fp32 rounding of the reciprocal: relative error ~1e-7, never gsc^2 */
        assert_non_null(strstr(l.note, "reciprocal"));
        for (int i = 0; i < N * K; i++) assert_true(fabs(want[i] - got[i]) <= 1e-6 * fabs(want[i]));
        /* the measured count is compressed-tensors' own value code * fp32(s / g) against ours */
        int64_t differ = 0;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++) {
                float eff = (float)(e4m3(s[n * (K / 16) + k / 16]) / gsc);
                differ += (float)(nv_elem(w, K, n, k) * (double)eff) != got[n * K + k];
            }
        char counted[64];
        snprintf(counted, sizeof counted, "%lld of %d elements differ", (long long)differ, N * K);
        if (!strstr(l.note, counted)) fail_msg("note lacks '%s': %s", counted, l.note);
        assert_true(differ > 0);
        printf("  %s\n", l.note);
        assert_non_null(strstr(l.note, "max relative difference"));
        /* the report measures the output against compressed-tensors' own values */
        char *cfgout = NULL;
        if (tc_convert_keep(c.dir, NULL, 0, &cfgout, &err) != HC_OK) fail_msg("%s", err.msg);
        char *v = tc_layer_field(cfgout, P, "lossless");
        assert_string_equal(v, "false");
        free(v);
        free(cfgout);
        char *od = tc_out_dir(c.dir, "out"), path[4096];
        snprintf(path, sizeof path, "%s/humming_report.json", od);
        char *rep = hc_test_read_file(path, NULL);
        assert_non_null(rep);
        assert_non_null(strstr(rep, "\"lossless\":\tfalse"));
        const char *re = strstr(rep, "\"weight_rel_err\":");
        assert_non_null(re);
        double rel = atof(re + strlen("\"weight_rel_err\":"));
        assert_true(rel > 1e-9 && rel < 1e-6);
        printf("  report: lossless false, weight_rel_err %.3g\n", rel);
        free(rep);
        free(od);
    }
    hc_ckpt_layer_free(&l);
    free(want); free(got);
    tc_free(&c);
}

static void test_ct_nvfp4_divisor(void **state)
{
    (void)state;
    run_ct_nvfp4(512.0f, 1);  /* power of two: reciprocal exact, lossless */
    run_ct_nvfp4(896.0f, 0);  /* 448*6/3: reciprocal inexact, flagged */
    run_ct_nvfp4(2688.0f / 7.0f, 0); /* amax 2.5 (not a power of two): 448*6/amax */
}

/* Trap: ModelOpt's weight_scale_2 MULTIPLIES (the inverse of CT). */
static void test_modelopt_nvfp4_multiplier(void **state)
{
    (void)state;
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "mo-nvfp4");
    uint8_t *w, *s;
    nvfp4_tensors(&c, P ".weight", N, K, &w, &s);
    float *s2 = tc_add(&c, P ".weight_scale_2", HC_DT_F32, 0, NULL);
    s2[0] = 0.00123f;
    uint16_t *lm = tc_add(&c, "lm_head.weight", HC_DT_BF16, 2, (int64_t[2]){64, 128});
    for (int i = 0; i < 64 * 128; i++) lm[i] = hc_f32_to_bf16(0.01f * (float)(i % 9));
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            want[n * K + k] = (float)(nv_elem(w, K, n, k) * e4m3(s[n * (K / 16) + k / 16]) * (double)s2[0]);
    tc_write(&c, "{\"torch_dtype\": \"bfloat16\"}", "hf_quant_config.json",
             "{\"producer\": {\"name\": \"modelopt\", \"version\": \"0.2\"}, \"quantization\": "
             "{\"quant_algo\": \"NVFP4\", \"group_size\": 16, \"exclude_modules\": [\"lm_head\", "
             "\"model.layers.*.mlp.gate\"]}}");
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_true(l.lossless);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    hc_ckpt_layer_free(&l);
    hc_ckpt_config cfg;
    assert_int_equal(tc_detect(c.dir, &cfg, &err), HC_OK);
    assert_int_equal(cfg.method, HC_CKPT_MODELOPT);
    assert_true(hc_ckpt_is_skipped(&cfg, "model.layers.7.mlp.gate")); /* fnmatch */
    assert_true(hc_ckpt_is_skipped(&cfg, "lm_head"));
    assert_false(hc_ckpt_is_skipped(&cfg, "model.layers.7.mlp.up_proj"));
    /* conversion: NVFP4 kept (lossless), lm_head (excluded) stays float even with a target */
    char *out = NULL;
    if (tc_convert(c.dir, "nvfp4", 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    char *v = tc_layer_field(out, P, "lossless");
    assert_string_equal(v, "true");
    free(v);
    v = tc_layer_field(out, P, "scale_type");
    assert_string_equal(v, "\"group_tensor\"");
    free(v);
    assert_null(tc_layer_field(out, "lm_head", "weight_dtype"));
    free(out);
    free(want); free(got);
    tc_free(&c);
}

/* The canonical output of a ModelOpt NVFP4 up_proj (loaded by vLLM into the
 * fused gate_up_proj, where no per-tensor second scale loads) with global
 * scale g. Returns the config.json text; *s2 the first weight_scale_2 value
 * and *dt its dtype (or -1 when there is none). */
static char *modelopt_canonical(float g, float *s2, int *dt)
{
    tc_ckpt c;
    tc_init(&c, "mo-nvfp4-ch");
    uint8_t *w, *s;
    nvfp4_tensors(&c, P ".weight", 64, 128, &w, &s);
    *(float *)tc_add(&c, P ".weight_scale_2", HC_DT_F32, 0, NULL) = g;
    tc_write(&c, "{\"torch_dtype\": \"bfloat16\"}", "hf_quant_config.json",
             "{\"producer\": {\"name\": \"modelopt\", \"version\": \"0.2\"}, \"quantization\": "
             "{\"quant_algo\": \"NVFP4\", \"group_size\": 16}}");
    char *out = tc_out_dir(c.dir, "canon"), cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --arch sm90 -q --verify cpu", hc_test_cli(), c.dir, out);
    assert_int_equal(system(cmd), 0);
    char *cp = hc_test_path_join(out, "config.json"), *mp = hc_test_path_join(out, "model.safetensors");
    char *text = hc_test_read_file(cp, NULL);
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(mp, &f, NULL), HC_OK);
    const hc_st_tensor *t = hc_st_find(f, P ".weight_scale_2");
    *dt = t ? (int)t->dtype : -1;
    if (t && t->dtype == HC_DT_BF16) {
        assert_true(t->ndim == 1 && t->shape[0] == 64);
        uint16_t h;
        memcpy(&h, (const unsigned char *)t->data + 2 * 63, 2);
        *s2 = hc_bf16_to_f32(h);
    }
    hc_st_close(f);
    free(cp), free(mp), free(out);
    tc_free(&c);
    return text;
}

/* vLLM 0.33 loads a per-channel second scale into fused modules: a global
 * scale the model dtype holds exactly becomes one, losslessly; another is
 * requantized into model-dtype group scales as before (more exact than a
 * rounded second scale). */
static void test_modelopt_nvfp4_fused_channel_s2(void **state)
{
    (void)state;
    float s2 = 0;
    int dt = -1;
    char *cfg = modelopt_canonical(0.375f, &s2, &dt);
    assert_int_equal(dt, HC_DT_BF16);
    assert_true(s2 == 0.375f);
    assert_non_null(strstr(cfg, "\"weight_scale_2_type\":\t\"channel\""));
    char *v = tc_layer_field(cfg, P, "lossless");
    assert_string_equal(v, "true");
    free(v);
    free(cfg);
    cfg = modelopt_canonical(0.00123f, &s2, &dt);
    assert_int_equal(dt, -1);
    v = tc_layer_field(cfg, P, "requantized");
    assert_string_equal(v, "true");
    free(v);
    free(cfg);
}

static void test_modelopt_swizzled_scale_refused(void **state)
{
    (void)state;
    tc_ckpt c;
    tc_init(&c, "mo-swz");
    uint8_t *w = tc_add(&c, P ".weight", HC_DT_U8, 2, (int64_t[2]){64, 64});
    (void)w;
    tc_add(&c, P ".weight_scale", HC_DT_U8, 1, (int64_t[1]){512});
    tc_add(&c, P ".weight_scale_2", HC_DT_F32, 0, NULL);
    tc_write(&c, "{\"quantization_config\": {\"quant_method\": \"modelopt\", \"quant_algo\": "
                 "\"NVFP4\"}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "swizzled"));
    tc_free(&c);
}

/* gpt-oss: [E, N, K/32, 16] blocks, E8M0 scales (0 is 2^-127, not zero; 0xFF refused). */
static void test_gpt_oss_mxfp4(void **state)
{
    (void)state;
    int E = 2, N = 64, K = 64, G = K / 32;
    const char *pre = "model.layers.0.mlp.experts.gate_up_proj";
    for (int nan = 0; nan < 2; nan++) {
        tc_ckpt c;
        tc_init(&c, "gptoss");
        uint8_t *b = tc_add(&c, "model.layers.0.mlp.experts.gate_up_proj_blocks", HC_DT_U8, 4,
                            (int64_t[4]){E, N, G, 16});
        uint8_t *s = tc_add(&c, "model.layers.0.mlp.experts.gate_up_proj_scales", HC_DT_U8, 3,
                            (int64_t[3]){E, N, G});
        uint16_t *bias = tc_add(&c, "model.layers.0.mlp.experts.gate_up_proj_bias", HC_DT_BF16, 2,
                                (int64_t[2]){E, N});
        uint16_t *router = tc_add(&c, "model.layers.0.mlp.router.weight", HC_DT_BF16, 2,
                                  (int64_t[2]){E, 64});
        (void)router;
        for (int i = 0; i < E * N * G * 16; i++) b[i] = (uint8_t)(tc_rand() % 256);
        for (int i = 0; i < E * N * G; i++) s[i] = (uint8_t)(120 + tc_rand() % 10);
        for (int i = 0; i < E * N; i++) bias[i] = hc_f32_to_bf16(0.25f * (float)(i % 5));
        s[5] = 0;          /* 2^-127 */
        if (nan) s[7] = 0xFF;
        float *want = malloc((size_t)(E * N * K) * sizeof *want), *got = NULL;
        for (int r = 0; r < E * N; r++)
            for (int k = 0; k < K; k++) {
                uint8_t byte = b[(r * G + k / 32) * 16 + (k % 32) / 2];
                want[r * K + k] = (float)(e2m1(k % 2 ? byte >> 4 : byte & 15) *
                                          ldexp(1.0, (int)s[r * G + k / 32] - 127));
            }
        tc_write(&c, "{\"torch_dtype\": \"bfloat16\", \"model_type\": \"gpt_oss\", "
                     "\"quantization_config\": {\"quant_method\": \"mxfp4\", "
                     "\"modules_to_not_convert\": [\"model.layers.*.self_attn\", "
                     "\"model.layers.*.mlp.router\", \"model.embed_tokens\", \"lm_head\"]}}",
                 NULL, NULL);
        hc_ckpt_layer l;
        hc_error err;
        hc_status st = tc_read_layer(c.dir, pre, HC_ACT_ORDER_REFUSE, &l, &got, &err);
        if (nan) {
            assert_int_equal(st, HC_ERR_FORMAT);
            assert_non_null(strstr(err.msg, "0xFF"));
        } else {
            if (st != HC_OK) fail_msg("%s", err.msg);
            assert_true(l.is_moe);
            assert_int_equal(tc_diff(want, got, E * N * K), 0);
            assert_true(got[5 / G * K + (5 % G) * 32 + 2] == 0 ||
                        fabsf(got[5 / G * K + (5 % G) * 32 + 2]) < 1e-37f);
            assert_non_null(strstr(l.source_format, "interleaved"));
            hc_ckpt_layer_free(&l);
            char *out = NULL;
            if (tc_convert(c.dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
            char *v = tc_layer_field(out, pre, "num_experts");
            assert_string_equal(v, "2");
            free(v);
            v = tc_layer_field(out, pre, "has_bias");
            assert_string_equal(v, "true");
            free(v);
            assert_null(tc_layer_field(out, "model.layers.0.mlp.router", "weight_dtype"));
            free(out);
            /* requantize to another format */
            if (tc_convert(c.dir, "nvfp4", 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
            v = tc_layer_field(out, pre, "requantized");
            assert_string_equal(v, "true");
            free(v);
            free(out);
        }
        free(want); free(got);
        tc_free(&c);
    }
}

/* DeepSeek FP8: weight_scale_inv MULTIPLIES; 128x128 blocks; N = 192 leaves a
 * 64-row edge block (block size must come from the config, not 192/2). */
static void test_fp8_block_partial_edges(void **state)
{
    (void)state;
    int N = 192, K = 320, RB = 2, CB = 3;
    tc_ckpt c;
    tc_init(&c, "fp8-block");
    uint8_t *w = tc_add(&c, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", HC_DT_F8_E4M3,
                        2, (int64_t[2]){N, K});
    float *si = tc_add(&c, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv",
                       HC_DT_F32, 2, (int64_t[2]){RB, CB});
    for (int i = 0; i < RB * CB; i++) si[i] = 0.00137f * (float)(i + 1) + 1e-7f * (float)i;
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            w[n * K + k] = (uint8_t)rand_e4m3();
            want[n * K + k] = (float)(e4m3(w[n * K + k]) * (double)si[(n / 128) * CB + k / 128]);
        }
    tc_write(&c, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
                 "\"fp8\", \"fmt\": \"e4m3\", \"activation_scheme\": \"dynamic\", "
                 "\"weight_block_size\": [128, 128]}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, "model.layers.0.self_attn.kv_a_proj_with_mqa", HC_ACT_ORDER_REFUSE,
                      &l, &got, &err) != HC_OK)
        fail_msg("%s", err.msg);
    assert_true(l.lossless);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    assert_int_equal(l.q.desc.group_size_n, 64);
    assert_int_equal(l.q.desc.group_size, 64);
    hc_ckpt_layer_free(&l);
    tc_expect_converted_field(c.dir, "model.layers.0.self_attn.kv_a_proj_with_mqa", "scale_type", "\"block\"");
    free(want); free(got);
    tc_free(&c);
}

/* compressed-tensors FP8_BLOCK (float-quantized, strategy block [128, 128]):
 * scales [ceil(N/128), ceil(K/128)] in the model dtype, partial edge tiles in
 * both directions (N = 192, K = 320), as llm-compressor writes them. */
static void test_ct_fp8_block_partial(void **state)
{
    (void)state;
    int N = 192, K = 320, RB = 2, CB = 3;
    tc_ckpt c;
    tc_init(&c, "ct-fp8-block");
    uint8_t *w = tc_add(&c, P ".weight", HC_DT_F8_E4M3, 2, (int64_t[2]){N, K});
    uint16_t *sc = tc_add(&c, P ".weight_scale", HC_DT_BF16, 2, (int64_t[2]){RB, CB});
    for (int i = 0; i < RB * CB; i++) sc[i] = hc_f32_to_bf16(0.00137f * (float)(i + 1));
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            w[n * K + k] = (uint8_t)rand_e4m3();
            want[n * K + k] = (float)(e4m3(w[n * K + k]) *
                                      (double)hc_bf16_to_f32(sc[(n / 128) * CB + k / 128]));
        }
    tc_write(&c, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
                 "\"compressed-tensors\", \"format\": \"float-quantized\", \"version\": \"0.20.1\", "
                 "\"quantization_status\": \"compressed\", \"transform_config\": {}, "
                 "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": "
                 "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", "
                 "\"block_structure\": [128, 128], \"symmetric\": true}}}}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_true(l.lossless);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    hc_ckpt_layer_free(&l);
    tc_expect_converted_field(c.dir, P, "lossless", "true");
    free(want); free(got);
    tc_free(&c);
}

/* An FP8 weight without its scale is refused (reading it raw gives a wrong model). */
static void test_fp8_missing_scale(void **state)
{
    (void)state;
    tc_ckpt c;
    tc_init(&c, "fp8-noscale");
    tc_add(&c, P ".weight", HC_DT_F8_E4M3, 2, (int64_t[2]){64, 128});
    tc_write(&c, "{\"quantization_config\": {\"quant_method\": \"fp8\"}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err), HC_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "without a scale"));
    tc_free(&c);
}

/* ModelOpt FP8 per tensor (scalar F32 scale) -> tensor scale type, exact. */
static void test_modelopt_fp8_tensor(void **state)
{
    (void)state;
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "mo-fp8");
    uint8_t *w = tc_add(&c, P ".weight", HC_DT_F8_E4M3, 2, (int64_t[2]){N, K});
    float *s = tc_add(&c, P ".weight_scale", HC_DT_F32, 0, NULL);
    tc_add(&c, P ".input_scale", HC_DT_F32, 0, NULL);
    s[0] = 0.0123456f;
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int i = 0; i < N * K; i++) {
        w[i] = (uint8_t)rand_e4m3();
        want[i] = (float)(e4m3(w[i]) * (double)s[0]);
    }
    tc_write(&c, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
                 "\"modelopt\", \"quant_algo\": \"FP8\"}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    hc_ckpt_layer_free(&l);
    tc_expect_converted_field(c.dir, P, "scale_type", "\"tensor\"");
    free(want); free(got);
    tc_free(&c);
}

/* ModelOpt FP8 per channel with float32 scales that 16 bits cannot hold:
 * refused losslessly, naming the tensor and the way out, which works. */
static void test_modelopt_fp8_channel_inexact(void **state)
{
    (void)state;
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "mo-fp8-ch");
    uint8_t *w = tc_add(&c, P ".weight", HC_DT_F8_E4M3, 2, (int64_t[2]){N, K});
    float *s = tc_add(&c, P ".weight_scale", HC_DT_F32, 2, (int64_t[2]){N, 1});
    for (int i = 0; i < N * K; i++) w[i] = (uint8_t)rand_e4m3();
    for (int n = 0; n < N; n++) s[n] = 0.0123456f + 1e-7f * (float)n; /* not exact in 16 bits */
    tc_write(&c, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
                 "\"modelopt\", \"quant_algo\": \"FP8\"}}", NULL, NULL);
    hc_error err;
    assert_int_equal(tc_convert(c.dir, NULL, 0, NULL, &err), HC_ERR_UNSUPPORTED);
    if (!strstr(err.msg, P ".weight_scale") || !strstr(err.msg, "--format fp8"))
        fail_msg("message lacks the tensor or the way out: %s", err.msg);
    if (tc_convert(c.dir, "fp8", 0, NULL, &err) != HC_OK) fail_msg("--format fp8: %s", err.msg);
    tc_free(&c);
}

/* compressed-tensors MXFP4 (U8 E8M0 scales, group 32, no global scale). */
static void test_ct_mxfp4(void **state)
{
    (void)state;
    int N = 64, K = 128;
    tc_ckpt c;
    tc_init(&c, "ct-mxfp4");
    uint8_t *w = tc_add(&c, P ".weight_packed", HC_DT_U8, 2, (int64_t[2]){N, K / 2});
    uint8_t *s = tc_add(&c, P ".weight_scale", HC_DT_U8, 2, (int64_t[2]){N, K / 32});
    for (int i = 0; i < N * K / 2; i++) w[i] = (uint8_t)(tc_rand() % 256);
    for (int i = 0; i < N * K / 32; i++) s[i] = (uint8_t)(110 + tc_rand() % 30);
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            want[n * K + k] = (float)(nv_elem(w, K, n, k) * ldexp(1.0, s[n * 4 + k / 32] - 127));
    tc_write(&c, CT_FP4("mxfp4-pack-quantized", 32), NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    hc_ckpt_layer_free(&l);
    free(want); free(got);
    tc_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ct_nvfp4_divisor),
        cmocka_unit_test(test_modelopt_nvfp4_multiplier),
        cmocka_unit_test(test_modelopt_nvfp4_fused_channel_s2),
        cmocka_unit_test(test_modelopt_swizzled_scale_refused),
        cmocka_unit_test(test_gpt_oss_mxfp4),
        cmocka_unit_test(test_fp8_block_partial_edges),
        cmocka_unit_test(test_ct_fp8_block_partial),
        cmocka_unit_test(test_fp8_missing_scale),
        cmocka_unit_test(test_modelopt_fp8_tensor),
        cmocka_unit_test(test_modelopt_fp8_channel_inexact),
        cmocka_unit_test(test_ct_mxfp4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
