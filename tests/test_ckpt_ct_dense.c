/* test_ckpt_ct_dense.c - compressed-tensors pack-quantized as written since
 * 0.18 (pack_to_int32 dense: one little-endian bit stream per row, 3/5/6/7-bit
 * codes straddle words, weight_packed [N, ceil(K*b/32)], zero points dense
 * along N), told apart from the older padded layout by the packed width and
 * the config's "version"; weight_g_idx (activation ordering) on packed and
 * int-quantized weights. Fixtures are packed from the layout's definition
 * (bit i*b of the row stream), expected weights (stored - zero) * scale. */
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

/* config.json text; version "" leaves the key out. */
static char *ct_cfg(int bits, const char *strat, int gs, int sym, const char *version,
                    const char *actorder)
{
    char *s = malloc(1024);
    char ver[64] = "", ao[64] = "";
    if (version[0]) snprintf(ver, sizeof ver, "\"version\": \"%s\", ", version);
    if (actorder[0]) snprintf(ao, sizeof ao, ", \"actorder\": \"%s\"", actorder);
    snprintf(s, 1024,
             "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
             "\"compressed-tensors\", \"format\": \"pack-quantized\", %s\"quantization_status\": "
             "\"compressed\", \"transform_config\": {}, \"config_groups\": {\"group_0\": "
             "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": %d, \"type\": \"int\", "
             "\"strategy\": \"%s\", \"group_size\": %d, \"symmetric\": %s%s}}}}}",
             ver, bits, strat, gs, sym ? "true" : "false", ao);
    return s;
}

typedef struct {
    int b, N, K, gs, asym, dense, shape; /* shape: write weight_shape */
    int act_order;                      /* 1: shuffled g_idx, 2: g_idx all -1 */
} ct_spec;

/* Builds the layer; returns the expected weights [N, K] (source column order). */
static float *build(tc_ckpt *c, const ct_spec *s, int32_t *gidx_out)
{
    int b = s->b, N = s->N, K = s->K, G = s->gs > 0 ? K / s->gs : 1, top = (1 << b) - 1;
    int pack = 32 / b;
    int64_t kw = s->dense ? ((int64_t)K * b + 31) / 32 : (K + pack - 1) / pack;
    int64_t nw = s->dense ? ((int64_t)N * b + 31) / 32 : (N + pack - 1) / pack;
    uint32_t *wp = tc_add(c, P ".weight_packed", HC_DT_I32, 2, (int64_t[2]){N, kw});
    uint16_t *sc = tc_add(c, P ".weight_scale", HC_DT_BF16, 2, (int64_t[2]){N, G});
    if (s->shape) {
        int64_t *shp = tc_add(c, P ".weight_shape", HC_DT_I64, 1, (int64_t[1]){2});
        shp[0] = N;
        shp[1] = K;
    }
    uint32_t *zp = s->asym ? tc_add(c, P ".weight_zero_point", HC_DT_I32, 2, (int64_t[2]){nw, G})
                           : NULL;
    int32_t *gidx = NULL;
    if (s->act_order) {
        gidx = tc_add(c, P ".weight_g_idx", HC_DT_I32, 1, (int64_t[1]){K});
        for (int k = 0; k < K; k++) gidx[k] = s->act_order == 2 ? -1 : k / s->gs;
        for (int k = K - 1; s->act_order == 1 && k > 0; k--) { /* shuffle: groups keep gs members */
            int j = (int)(tc_rand() % (uint32_t)(k + 1)), t = gidx[k];
            gidx[k] = gidx[j];
            gidx[j] = t;
        }
        if (gidx_out) memcpy(gidx_out, gidx, (size_t)K * sizeof *gidx);
    }
    int *z = calloc((size_t)(N * G), sizeof *z);
    uint32_t *col = calloc((size_t)nw + 1, sizeof *col);
    for (int g = 0; g < G; g++) {
        memset(col, 0, (size_t)nw * sizeof *col);
        for (int n = 0; n < N; n++) {
            sc[n * G + g] = hc_f32_to_bf16(0.0078125f * (float)(1 + tc_rand() % 16));
            z[n * G + g] = s->asym ? (int)(tc_rand() % (uint32_t)(top + 1)) : 1 << (b - 1);
            int64_t pos = s->dense ? (int64_t)n * b : (int64_t)(n / pack) * 32 + (n % pack) * b;
            tc_put_bits(col, pos, b, (uint32_t)z[n * G + g]);
        }
        for (int64_t w = 0; zp && w < nw; w++) zp[w * G + g] = col[w];
    }
    float *want = malloc((size_t)(N * K) * sizeof *want);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            int stored = (int)(tc_rand() % (uint32_t)(top + 1));
            int g = s->act_order == 1 ? gidx[k] : s->gs > 0 ? k / s->gs : 0;
            int64_t pos = s->dense ? (int64_t)k * b : (int64_t)(k / pack) * 32 + (k % pack) * b;
            tc_put_bits(wp + (int64_t)n * kw, pos, b, (uint32_t)stored);
            want[n * K + k] = (float)((stored - z[n * G + g]) * (double)hc_bf16_to_f32(sc[n * G + g]));
        }
    free(col);
    free(z);
    return want;
}

/* Reads the layer and converts it (tiles and canonical); expects lossless. */
static void check_lossless(const ct_spec *s, const char *version, const char *layout_word)
{
    tc_ckpt c;
    tc_init(&c, "ct-dense");
    float *want = build(&c, s, NULL), *got = NULL;
    char *cfg = ct_cfg(s->b, s->gs > 0 ? "group" : "channel", s->gs, !s->asym, version, "");
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    if (tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err) != HC_OK)
        fail_msg("b=%d dense=%d: %s", s->b, s->dense, err.msg);
    assert_int_equal(tc_diff(want, got, (int64_t)s->N * s->K), 0);
    assert_true(l.lossless);
    if (layout_word) assert_non_null(strstr(l.source_format, layout_word));
    hc_ckpt_layer_free(&l);
    tc_expect_converted_field(c.dir, P, "lossless", "true");
    free(cfg);
    free(want);
    free(got);
    tc_free(&c);
}

/* Every straddling width, sym and asym (dense zero points), group and channel. */
static void test_dense_widths(void **state)
{
    (void)state;
    static const int bits[4] = {3, 5, 6, 7};
    for (int i = 0; i < 4; i++) {
        ct_spec g = {.b = bits[i], .N = 64, .K = 256, .gs = 64, .asym = 0, .dense = 1, .shape = 1};
        check_lossless(&g, "0.20.1", "dense");
        g.asym = 1;
        check_lossless(&g, "0.18.0", "dense");
        ct_spec ch = {.b = bits[i], .N = 32, .K = 128, .gs = 0, .asym = 1, .dense = 1, .shape = 1};
        check_lossless(&ch, "", "dense"); /* no version: the width alone decides */
    }
}

/* The older layout still reads, by width and with a pre-0.18 version; 4 and 8
 * bits are one layout whatever the version says. */
static void test_padded_and_plain(void **state)
{
    (void)state;
    ct_spec p = {.b = 3, .N = 64, .K = 320, .gs = 0, .asym = 1, .dense = 0, .shape = 1};
    check_lossless(&p, "0.12.2", "padded");
    p.b = 6;
    p.K = 160;
    check_lossless(&p, "", "padded");
    ct_spec four = {.b = 4, .N = 64, .K = 128, .gs = 32, .asym = 1, .dense = 1, .shape = 1};
    check_lossless(&four, "0.20.1", NULL);
    check_lossless(&four, "0.12.2", NULL);
    four.b = 8;
    check_lossless(&four, "0.20.1", NULL);
}

static void expect_refusal(const ct_spec *s, const char *version, hc_status want_st,
                           const char *words)
{
    tc_ckpt c;
    tc_init(&c, "ct-dense-bad");
    free(build(&c, s, NULL));
    char *cfg = ct_cfg(s->b, s->gs > 0 ? "group" : "channel", s->gs, !s->asym, version, "");
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err), want_st);
    if (!strstr(err.msg, words)) fail_msg("message lacks '%s': %s", words, err.msg);
    assert_non_null(strstr(err.msg, P ".weight_packed"));
    free(cfg);
    tc_free(&c);
}

/* Width and version disagree; no weight_shape and no version (ambiguous);
 * a width neither layout gives. Without weight_shape a version decides. */
static void test_layout_refusals(void **state)
{
    (void)state;
    ct_spec d = {.b = 3, .N = 64, .K = 256, .gs = 64, .dense = 1, .shape = 1};
    expect_refusal(&d, "0.12.2", HC_ERR_FORMAT, "inconsistent");
    ct_spec p = {.b = 5, .N = 64, .K = 192, .gs = 64, .dense = 0, .shape = 1};
    expect_refusal(&p, "0.19.0", HC_ERR_FORMAT, "inconsistent");
    d.shape = 0;
    expect_refusal(&d, "", HC_ERR_UNSUPPORTED, "\"version\"");
    ct_spec ok = {.b = 7, .N = 64, .K = 256, .gs = 64, .dense = 1, .shape = 0};
    check_lossless(&ok, "0.20.1", "dense");
    ok.dense = 0;
    ok.K = 128; /* padded, 4 per word: 32 words, K = 128 */
    check_lossless(&ok, "0.17.0", "padded");
    /* weight_shape K that neither layout's width holds */
    tc_ckpt c;
    tc_init(&c, "ct-dense-width");
    ct_spec w = {.b = 3, .N = 32, .K = 256, .gs = 0, .dense = 1, .shape = 1};
    free(build(&c, &w, NULL));
    ((int64_t *)c.t[2].data)[1] = 512;
    char *cfg = ct_cfg(3, "channel", 0, 1, "0.20.1", "");
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err), HC_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "either pack_to_int32 layout"));
    free(cfg);
    tc_free(&c);
}

/* actorder "group": weight_g_idx read as GPTQ's g_idx (refused by default,
 * permuted or requantized); a g_idx of -1 is column order, as compressed-tensors
 * reads it. Dense 3-bit packing and int-quantized int8. */
static void test_g_idx(void **state)
{
    (void)state;
    ct_spec s = {.b = 3, .N = 64, .K = 256, .gs = 64, .asym = 1, .dense = 1, .shape = 1,
                 .act_order = 1};
    tc_ckpt c;
    tc_init(&c, "ct-gidx");
    int32_t gidx[256];
    float *want = build(&c, &s, gidx), *got = NULL;
    char *cfg = ct_cfg(3, "group", 64, 0, "0.18.0", "group");
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err),
                     HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "--act-order requant"));
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_PERMUTE, &l, &got, &err), HC_OK);
    assert_non_null(l.perm);
    int64_t bad = 0;
    for (int j = 0; j < 256; j++) {
        if (gidx[l.perm[j]] != j / 64) bad++;
        for (int n = 0; n < 64; n++)
            if (memcmp(&got[n * 256 + j], &want[n * 256 + l.perm[j]], 4)) bad++;
    }
    assert_int_equal(bad, 0);
    assert_non_null(strstr(l.source_format, "act-order"));
    hc_ckpt_layer_free(&l);
    char *out = NULL;
    assert_int_equal(tc_convert(c.dir, NULL, 2, &out, &err), HC_OK);
    char *v = tc_layer_field(out, P, "requantized");
    assert_string_equal(v, "true");
    free(v);
    free(out);
    free(want);
    free(got);
    free(cfg);
    tc_free(&c);
    /* all -1: column order */
    s.act_order = 2;
    tc_init(&c, "ct-gidx-none");
    want = build(&c, &s, NULL);
    cfg = ct_cfg(3, "group", 64, 0, "0.18.0", "group");
    tc_write(&c, cfg, NULL, NULL);
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err), HC_OK);
    assert_null(l.perm);
    assert_int_equal(tc_diff(want, got, 64 * 256), 0);
    assert_non_null(strstr(l.note, "column order"));
    hc_ckpt_layer_free(&l);
    free(want);
    free(got);
    free(cfg);
    tc_free(&c);
}

/* int-quantized int8 in column order, every byte value: the word-level path
 * (codes built from the bytes) gives the element path's codes bit for bit,
 * and the values are int8 x scale. */
static void test_int8_words(void **state)
{
    (void)state;
    int N = 64, K = 256;
    tc_ckpt c;
    tc_init(&c, "ct-int8-words");
    int8_t *w = tc_add(&c, P ".weight", HC_DT_I8, 2, (int64_t[2]){N, K});
    uint16_t *sc = tc_add(&c, P ".weight_scale", HC_DT_BF16, 2, (int64_t[2]){N, 1});
    for (int n = 0; n < N; n++) sc[n] = hc_f32_to_bf16(0.001953125f * (float)(1 + n % 5));
    for (int i = 0; i < N * K; i++) w[i] = (int8_t)(uint8_t)((i * 7 + i / 256) & 255);
    const char *cfg =
        "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
        "\"compressed-tensors\", \"format\": \"int-quantized\", \"quantization_status\": "
        "\"compressed\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], "
        "\"weights\": {\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"channel\", "
        "\"symmetric\": true}}}}}";
    tc_write(&c, cfg, NULL, NULL);
    assert_int_equal(tc_codes_paths_differ(c.dir, P, HC_ACT_ORDER_REFUSE), 0);
    hc_ckpt_layer l;
    hc_error err;
    float *got = NULL;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, &got, &err), HC_OK);
    int64_t bad = 0;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            const float want = (float)(w[n * K + k] * (double)hc_bf16_to_f32(sc[n]));
            bad += memcmp(&got[n * K + k], &want, 4) != 0;
        }
    assert_int_equal(bad, 0);
    hc_ckpt_layer_free(&l);
    free(got);
    tc_free(&c);
}

/* int-quantized int8 with weight_g_idx: the codes follow it (it used to be ignored). */
static void test_g_idx_int8(void **state)
{
    (void)state;
    int N = 32, K = 128, gs = 32, G = K / gs;
    tc_ckpt c;
    tc_init(&c, "ct-gidx-int8");
    int8_t *w = tc_add(&c, P ".weight", HC_DT_I8, 2, (int64_t[2]){N, K});
    uint16_t *sc = tc_add(&c, P ".weight_scale", HC_DT_BF16, 2, (int64_t[2]){N, G});
    int32_t *gi = tc_add(&c, P ".weight_g_idx", HC_DT_I32, 1, (int64_t[1]){K});
    for (int k = 0; k < K; k++) gi[k] = (k * 5) % G; /* every group has gs members */
    for (int i = 0; i < N * G; i++) sc[i] = hc_f32_to_bf16(0.001953125f * (float)(1 + i % 7));
    float *want = malloc((size_t)(N * K) * sizeof *want), *got = NULL;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            w[n * K + k] = (int8_t)((int)(tc_rand() % 256) - 128);
            want[n * K + k] = (float)(w[n * K + k] * (double)hc_bf16_to_f32(sc[n * G + gi[k]]));
        }
    const char *cfg =
        "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": "
        "\"compressed-tensors\", \"format\": \"int-quantized\", \"quantization_status\": "
        "\"compressed\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], "
        "\"weights\": {\"num_bits\": 8, \"type\": \"int\", \"strategy\": \"group\", "
        "\"group_size\": 32, \"symmetric\": true, \"actorder\": \"group\"}}}}}";
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_REFUSE, &l, NULL, &err),
                     HC_ERR_UNSUPPORTED);
    assert_int_equal(tc_read_layer(c.dir, P, HC_ACT_ORDER_PERMUTE, &l, &got, &err), HC_OK);
    int64_t bad = 0;
    for (int j = 0; j < K; j++)
        for (int n = 0; n < N; n++)
            if (memcmp(&got[n * K + j], &want[n * K + l.perm[j]], 4)) bad++;
    assert_int_equal(bad, 0);
    hc_ckpt_layer_free(&l);
    free(want);
    free(got);
    tc_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_widths),    cmocka_unit_test(test_padded_and_plain),
        cmocka_unit_test(test_layout_refusals), cmocka_unit_test(test_g_idx),
        cmocka_unit_test(test_g_idx_int8),      cmocka_unit_test(test_int8_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
