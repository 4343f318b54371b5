/* test_ckpt_awq_ct.c - AWQ (GEMM interleave, GEMV, refusals, substring skip
 * list) and compressed-tensors integer formats (pack-quantized int4 / int3
 * without straddling / asym zero points, int-quantized and naive int8
 * offset, refusals, ignore regex). Fixtures packed from the formats' meaning
 * (formats spec 4, 5); expected weights (q - z) * s. */
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
static const int REV[8] = {0, 4, 1, 5, 2, 6, 3, 7};

static float *build_awq_gemm(tc_ckpt *c, int N, int K, int gs, float **natural)
{
    int G = K / gs;
    int64_t qs[2] = {K, N / 8}, zs[2] = {G, N / 8}, ss[2] = {G, N};
    uint32_t *qw = tc_add(c, P ".qweight", HC_DT_I32, 2, qs);
    uint32_t *qz = tc_add(c, P ".qzeros", HC_DT_I32, 2, zs);
    uint16_t *sc = tc_add(c, P ".scales", HC_DT_F16, 2, ss);
    int *z = malloc((size_t)(G * N) * sizeof *z);
    for (int g = 0; g < G; g++)
        for (int n = 0; n < N; n++) {
            z[g * N + n] = (int)(tc_rand() % 16);
            qz[g * (N / 8) + n / 8] |= (uint32_t)z[g * N + n] << (4 * REV[n % 8]);
            sc[g * N + n] = hc_f32_to_f16((float)(0.002 + (tc_rand() % 500) * 1e-5));
        }
    float *want = malloc((size_t)(N * K) * sizeof *want);
    *natural = malloc((size_t)(N * K) * sizeof **natural);
    int *q = malloc((size_t)(N * K) * sizeof *q);
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++) {
            q[k * N + n] = (int)(tc_rand() % 16);
            qw[k * (N / 8) + n / 8] |= (uint32_t)q[k * N + n] << (4 * REV[n % 8]);
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            int g = k / gs, nn = (n / 8) * 8 + REV[n % 8]; /* what a natural-order reader sees */
            double s = hc_f16_to_f32(sc[g * N + n]);
            want[n * K + k] = (float)((q[k * N + n] - z[g * N + n]) * s);
            (*natural)[n * K + k] = (float)((q[k * N + nn] - z[g * N + nn]) * s);
        }
    free(q);
    free(z);
    return want;
}

static void test_awq_gemm_interleave(void **state)
{
    (void)state;
    tc_ckpt c;
    tc_init(&c, "awq");
    float *natural = NULL, *want = build_awq_gemm(&c, 64, 128, 32, &natural), *got = NULL;
    int64_t fs[2] = {8, 128};
    uint16_t *gate = tc_add(&c, "model.layers.0.mlp.gate.weight", HC_DT_BF16, 2, fs);
    uint16_t *other = tc_add(&c, "model.layers.0.self_attn.o_proj.weight", HC_DT_BF16, 2,
                             (int64_t[2]){64, 128});
    for (int i = 0; i < 8 * 128; i++) gate[i] = hc_f32_to_bf16(0.01f * (float)(i % 7));
    for (int i = 0; i < 64 * 128; i++) other[i] = hc_f32_to_bf16(0.01f * (float)(i % 13) - 0.05f);
    tc_write(&c, "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
                 "\"awq\", \"bits\": 4, \"group_size\": 32, \"zero_point\": true, \"version\": "
                 "\"gemm\", \"modules_to_not_convert\": [\"gate\"]}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, 64 * 128), 0);
    assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
    assert_int_equal(tc_codes_viewed(c.dir, P, HC_ACT_ORDER_REFUSE), 0); /* transposed */
    /* trap: a reader that does not undo the interleave gets other values */
    assert_true(tc_diff(natural, got, 64 * 128) > 64 * 128 / 2);
    hc_ckpt_layer_free(&l);
    hc_ckpt_config cfg;
    assert_int_equal(tc_detect(c.dir, &cfg, &err), HC_OK);
    assert_true(hc_ckpt_is_skipped(&cfg, "model.layers.0.mlp.gate")); /* substring rule */
    assert_false(hc_ckpt_is_skipped(&cfg, "model.layers.0.mlp.down_proj"));
    /* lossless: float weights copied; with a target the skipped gate stays float */
    char *out = NULL;
    if (tc_convert(c.dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    char *v = tc_layer_field(out, P, "lossless");
    assert_string_equal(v, "true");
    free(v);
    assert_null(tc_layer_field(out, "model.layers.0.self_attn.o_proj", "weight_dtype"));
    free(out);
    if (tc_convert(c.dir, "w4a16", 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    v = tc_layer_field(out, "model.layers.0.self_attn.o_proj", "weight_dtype");
    assert_string_equal(v, "\"uint4\"");
    free(v);
    assert_null(tc_layer_field(out, "model.layers.0.mlp.gate", "weight_dtype"));
    v = tc_layer_field(out, P, "requantized");
    assert_string_equal(v, "true"); /* w4a16 is g128 symmetric: not the source format */
    free(v);
    free(out);
    free(want); free(natural); free(got);
    tc_free(&c);
}

static void test_awq_gemv(void **state)
{
    (void)state;
    int N = 64, K = 128, gs = 32, G = 4, Wz = 4;
    tc_ckpt c;
    tc_init(&c, "awq-gemv");
    uint32_t *qw = tc_add(&c, P ".qweight", HC_DT_I32, 2, (int64_t[2]){N, K / 8});
    uint32_t *qz = tc_add(&c, P ".qzeros", HC_DT_I32, 2, (int64_t[2]){N, Wz});
    uint16_t *sc = tc_add(&c, P ".scales", HC_DT_F16, 2, (int64_t[2]){N, 8 * Wz});
    float *want = malloc((size_t)(N * K) * sizeof *want);
    for (int n = 0; n < N; n++) {
        int z[4];
        for (int g = 0; g < G; g++) {
            z[g] = (int)(tc_rand() % 16);
            qz[n * Wz + g / 8] |= (uint32_t)z[g] << (4 * (g % 8));
            sc[n * 8 * Wz + g] = hc_f32_to_f16(0.01f + 0.001f * (float)g);
        }
        for (int k = 0; k < K; k++) {
            int q = (int)(tc_rand() % 16);
            qw[n * (K / 8) + k / 8] |= (uint32_t)q << (4 * (k % 8));
            want[n * K + k] = (float)((q - z[k / gs]) * (double)hc_f16_to_f32(sc[n * 8 * Wz + k / gs]));
        }
    }
    tc_write(&c, "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
                 "\"awq\", \"bits\": 4, \"group_size\": 32, \"version\": \"gemv\"}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    float *got = NULL;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
    assert_int_equal(tc_codes_viewed(c.dir, P, HC_ACT_ORDER_REFUSE), 1); /* already rows */
    hc_ckpt_layer_free(&l);
    free(want); free(got);
    tc_free(&c);
}

/* The GEMM word path (8 x 8 nibble transposes in blocks of 16 words) against
 * the element path and the format's meaning, on a shape whose last block is
 * partial (K/8 = 36) and whose word columns are not a power of two (N/8 = 25). */
static void test_awq_gemm_words(void **state)
{
    (void)state;
    int N = 200, K = 288;
    tc_ckpt c;
    tc_init(&c, "awq-words");
    float *natural = NULL, *want = build_awq_gemm(&c, N, K, 32, &natural), *got = NULL;
    tc_write(&c, "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
                 "\"awq\", \"bits\": 4, \"group_size\": 32, \"zero_point\": true, \"version\": "
                 "\"gemm\"}}", NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_diff(want, got, N * K), 0);
    assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
    hc_ckpt_layer_free(&l);
    free(want); free(natural); free(got);
    tc_free(&c);
}

/* Raw 16-bit scales: every finite F16 / BF16 pattern is stored as its own
 * bits by the element path (hc_ckpt_put_scale), so copying bits is the same. */
static void test_raw16_scales_exact(void **state)
{
    (void)state;
    uint8_t buf[2];
    hc_quant_result q = {.scales = buf, .scale_bytes = 2};
    for (int f = 0; f < 2; f++) {
        q.desc.scale_format = f ? HC_FMT_BF16 : HC_FMT_F16;
        for (uint32_t b = 0; b < 65536; b++) {
            double v = f ? hc_bf16_to_f32((uint16_t)b) : hc_f16_to_f32((uint16_t)b);
            if (v != v || v - v != 0) continue;
            assert_int_equal(hc_ckpt_put_scale(&q, 0, v), 0);
            assert_int_equal(buf[0] | buf[1] << 8, b);
        }
    }
}

/* Scale checks on F16 / BF16 bits: -0 is a zero and not a negative, a
 * negative subnormal is negative; a NaN is refused at its element. */
static void test_int_scales_bits(void **state)
{
    (void)state;
    uint16_t h[6] = {0x8000, 0x0000, 0xBC00, 0x8001, 0x3C00, 0x3C00};
    uint16_t bf[6] = {0x8000, 0x0000, 0xBF80, 0x8001, 0x3F80, 0x3F80};
    for (int f = 0; f < 2; f++) {
        uint16_t *v = f ? bf : h;
        hc_st_tensor t = {.name = "s", .file = "f", .dtype = f ? HC_DT_BF16 : HC_DT_F16,
                          .ndim = 1, .shape = {6}, .data = v, .nbytes = 12};
        hc_ckpt_layer l;
        memset(&l, 0, sizeof l);
        hc_error err;
        assert_int_equal(hc_ckpt_check_int_scales(&t, &l, &err), HC_OK);
        assert_non_null(strstr(l.note, "2 scale(s) are 0"));
        assert_non_null(strstr(l.note, "2 scale(s) are negative"));
        v[5] = f ? 0x7FC0 : 0x7E00;
        memset(&l, 0, sizeof l);
        assert_int_equal(hc_ckpt_check_int_scales(&t, &l, &err), HC_ERR_FORMAT);
        assert_non_null(strstr(err.msg, "element 5 is not finite"));
    }
}

/* A non-finite scale leaves the raw path to the element path's refusal
 * (same element, same words); a zero scale is counted by both. */
static void test_awq_scale_refusal(void **state)
{
    (void)state;
    int N = 64, K = 64, G = 2;
    for (int bad = 0; bad < 2; bad++) {
        tc_ckpt c;
        tc_init(&c, "awq-inf");
        uint32_t *qw = tc_add(&c, P ".qweight", HC_DT_I32, 2, (int64_t[2]){K, N / 8});
        tc_add(&c, P ".qzeros", HC_DT_I32, 2, (int64_t[2]){G, N / 8});
        uint16_t *sc = tc_add(&c, P ".scales", HC_DT_F16, 2, (int64_t[2]){G, N});
        for (int i = 0; i < K * N / 8; i++) qw[i] = tc_rand();
        for (int i = 0; i < G * N; i++) sc[i] = hc_f32_to_f16(0.01f);
        sc[5] = 0;
        sc[6] = 0x8000; /* -0: a zero too */
        if (bad) sc[N + 3] = 0x7C00; /* g 1, n 3 */
        tc_write(&c, "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
                     "\"awq\", \"bits\": 4, \"group_size\": 32, \"zero_point\": true, "
                     "\"version\": \"gemm\"}}", NULL, NULL);
        hc_ckpt_layer l;
        hc_error err;
        hc_status st = tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err);
        if (bad) {
            assert_int_equal(st, HC_ERR_FORMAT);
            assert_non_null(strstr(err.msg, "scale inf at element 67 is not finite"));
        } else {
            assert_int_equal(st, HC_OK);
            assert_non_null(strstr(l.note, "2 scale(s) are 0"));
            assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
            hc_ckpt_layer_free(&l);
        }
        tc_free(&c);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    static const char *const cfgs[][2] = {
        {"{\"quantization_config\": {\"quant_method\": \"awq\", \"version\": \"gemv_fast\"}}", "scaled_zeros"},
        {"{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": "
         "\"pack-quantized\", \"quantization_status\": \"compressed\", \"transform_config\": {\"x\": 1}, "
         "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4}}}}}", "rotated"},
        {"{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": "
         "\"pack-quantized\", \"quantization_status\": \"frozen\", "
         "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4}}}}}", "frozen"},
        {"{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 6}}", "bits 6"},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        tc_ckpt c;
        tc_init(&c, "refuse");
        tc_add(&c, "x", HC_DT_F32, 1, (int64_t[1]){4});
        tc_write(&c, cfgs[i][0], NULL, NULL);
        hc_ckpt_config cfg;
        hc_error err;
        assert_int_equal(tc_detect(c.dir, &cfg, &err), HC_ERR_UNSUPPORTED);
        if (!strstr(err.msg, cfgs[i][1])) fail_msg("%s: %s", cfgs[i][1], err.msg);
        tc_free(&c);
    }
    /* compressed-tensors' own writer always adds transform_config: {} or null is no transform */
    static const char *const empty[] = {"{}", "null", "{\"config_groups\": {}}"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
        char cfg_text[512];
        snprintf(cfg_text, sizeof cfg_text, "{\"quantization_config\": {\"quant_method\": "
                 "\"compressed-tensors\", \"format\": \"pack-quantized\", \"quantization_status\": "
                 "\"compressed\", \"transform_config\": %s, \"config_groups\": {\"g\": {\"targets\": "
                 "[\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": \"int\", \"strategy\": "
                 "\"group\", \"group_size\": 32, \"symmetric\": true}}}}}", empty[i]);
        tc_ckpt c;
        tc_init(&c, "ct-notransform");
        tc_add(&c, "x", HC_DT_F32, 1, (int64_t[1]){4});
        tc_write(&c, cfg_text, NULL, NULL);
        hc_ckpt_config cfg;
        hc_error err;
        if (tc_detect(c.dir, &cfg, &err) != HC_OK) fail_msg("transform_config %s: %s", empty[i], err.msg);
        tc_free(&c);
    }
}

#define CT_CFG(fmt, bits, strat, gs, sym) \
    "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": " \
    "\"compressed-tensors\", \"format\": \"" fmt "\", \"quantization_status\": \"compressed\", " \
    "\"ignore\": [\"lm_head\", \"re:.*mlp\\\\.gate$\"], \"config_groups\": {\"group_0\": " \
    "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": " #bits ", \"type\": \"int\", " \
    "\"strategy\": \"" strat "\", \"group_size\": " #gs ", \"symmetric\": " sym "}}}}}"

/* pack-quantized: b bits, pack = 32/b per word, no straddling, offset binary. */
static void run_ct_packed(int b, int N, int K, int gs, int asym, const char *cfgtext)
{
    int pack = 32 / b, G = gs > 0 ? K / gs : 1, half = 1 << (b - 1), top = (1 << b) - 1;
    tc_ckpt c;
    tc_init(&c, "ct-packed");
    int kw = (K + pack - 1) / pack, nw = (N + pack - 1) / pack;
    uint32_t *wp = tc_add(&c, P ".weight_packed", HC_DT_I32, 2, (int64_t[2]){N, kw});
    uint16_t *sc = tc_add(&c, P ".weight_scale", HC_DT_BF16, 2, (int64_t[2]){N, G});
    int64_t *shp = tc_add(&c, P ".weight_shape", HC_DT_I64, 1, (int64_t[1]){2});
    uint32_t *zp = asym ? tc_add(&c, P ".weight_zero_point", HC_DT_I32, 2, (int64_t[2]){nw, G}) : NULL;
    shp[0] = N;
    shp[1] = K;
    int *z = calloc((size_t)(N * G), sizeof *z);
    for (int n = 0; n < N; n++)
        for (int g = 0; g < G; g++) {
            sc[n * G + g] = hc_f32_to_bf16(0.0078125f * (float)(1 + tc_rand() % 16));
            z[n * G + g] = asym ? (int)(tc_rand() % (uint32_t)(top + 1)) : half;
            if (asym) zp[(n / pack) * G + g] |= (uint32_t)z[n * G + g] << (b * (n % pack));
        }
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            int stored = (int)(tc_rand() % (uint32_t)(top + 1)), g = gs > 0 ? k / gs : 0;
            wp[n * kw + k / pack] |= (uint32_t)stored << (b * (k % pack));
            want[n * K + k] = (float)((stored - z[n * G + g]) * (double)hc_bf16_to_f32(sc[n * G + g]));
        }
    tc_write(&c, cfgtext, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
    /* whole-word rows (b = 4): the conversion writes them from the mapping */
    assert_int_equal(tc_codes_viewed(c.dir, P, HC_ACT_ORDER_REFUSE), b == 4);
    assert_int_equal(tc_diff(want, got, (int64_t)N * K), 0);
    assert_true(l.lossless);
    hc_ckpt_layer_free(&l);
    char *out = NULL;
    if (tc_convert(c.dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    char *v = tc_layer_field(out, P, "source_format");
    assert_non_null(strstr(v, "pack-quantized"));
    free(v);
    free(out);
    hc_ckpt_config cfg;
    assert_int_equal(tc_detect(c.dir, &cfg, &err), HC_OK);
    assert_true(hc_ckpt_is_skipped(&cfg, "lm_head"));
    assert_true(hc_ckpt_is_skipped(&cfg, "model.layers.3.mlp.gate"));
    assert_false(hc_ckpt_is_skipped(&cfg, "model.layers.3.mlp.gate_proj"));
    assert_false(hc_ckpt_is_skipped(&cfg, "lm_head_extra")); /* exact, not substring */
    free(z); free(want); free(got);
    tc_free(&c);
}

static void test_ct_pack_int4_group(void **state)
{
    (void)state;
    run_ct_packed(4, 64, 128, 32, 0, CT_CFG("pack-quantized", 4, "group", 32, "true"));
    run_ct_packed(4, 64, 128, 32, 1, CT_CFG("pack-quantized", 4, "group", 32, "false"));
}

/* Trap: CT 3-bit packs 10 values per word (no straddling), unlike GPTQ. */
static void test_ct_pack_int3_channel_asym(void **state)
{
    (void)state;
    run_ct_packed(3, 64, 320, 0, 1, CT_CFG("pack-quantized", 3, "channel", 0, "false"));
}

/* Trap: int8 codes are two's complement; Humming's uint8 code is byte ^ 0x80
 * (also for naive-quantized, where Humming forgets the offset). */
static void test_ct_int8(void **state)
{
    (void)state;
    const char *fmts[2] = {CT_CFG("int-quantized", 8, "channel", 0, "true"),
                           CT_CFG("naive-quantized", 8, "channel", 0, "true")};
    for (int f = 0; f < 2; f++) {
        int N = 64, K = 128;
        tc_ckpt c;
        tc_init(&c, "ct-int8");
        int8_t *w = tc_add(&c, P ".weight", HC_DT_I8, 2, (int64_t[2]){N, K});
        uint16_t *sc = tc_add(&c, P ".weight_scale", HC_DT_BF16, 2, (int64_t[2]){N, 1});
        float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
        for (int n = 0; n < N; n++) sc[n] = hc_f32_to_bf16(0.001953125f * (float)(1 + n % 5));
        for (int i = 0; i < N * K; i++) {
            w[i] = (int8_t)((int)(tc_rand() % 256) - 128);
            want[i] = (float)(w[i] * (double)hc_bf16_to_f32(sc[i / K]));
        }
        tc_write(&c, fmts[f], NULL, NULL);
        hc_ckpt_layer l;
        hc_error err;
        if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK) fail_msg("%s", err.msg);
        assert_int_equal(tc_diff(want, got, N * K), 0);
        hc_ckpt_layer_free(&l);
        free(want); free(got);
        tc_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_awq_gemm_interleave), cmocka_unit_test(test_awq_gemv),
        cmocka_unit_test(test_awq_gemm_words), cmocka_unit_test(test_raw16_scales_exact),
        cmocka_unit_test(test_awq_scale_refusal), cmocka_unit_test(test_int_scales_bits),
        cmocka_unit_test(test_refusals),            cmocka_unit_test(test_ct_pack_int4_group),
        cmocka_unit_test(test_ct_pack_int3_channel_asym), cmocka_unit_test(test_ct_int8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
