/* test_ckpt_gptq.c - GPTQ checkpoints: every width (2/3/4/8, 3-bit fields
 * straddling words), sym/asym, v1/v2 zeros, channel-wise -1, the mislabelled
 * v2 trap, the v1 all-ones zero, act-order refuse/permute/requant, and the
 * whole conversion. Fixtures are packed here from the format's meaning
 * (formats spec 3) with an independent bit writer; expected weights are
 * (q - z) * s with the true zero z. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_convert.h"
#include "hc_format.h"
#include "hc_report.h"
#include "hc_test_ckpt.h"
#include "hc_test_util.h"

typedef struct {
    int b, gs, sym, v2_label, v2_data;
    int N, K;
    int act_order;       /* shuffle g_idx */
    int overflow_one;    /* v1: zero 0 at n = 3 of group 0, packed as AutoGPTQ does */
    int neg_scales;      /* every odd column's scales negative, as auto-round's sym RTN */
} gp_spec;

/* Builds the checkpoint; returns expected weights [N, K] (malloc'ed). */
static float *build_gptq(tc_ckpt *c, const gp_spec *s, int32_t *g_idx_out)
{
    int b = s->b, N = s->N, K = s->K, gs = s->gs > 0 ? s->gs : K, G = K / gs;
    int64_t qs[2] = {K * b / 32, N}, zs[2] = {G, N * b / 32}, ss[2] = {G, N}, gsh[1] = {K};
    uint32_t *qw = tc_add(c, "model.layers.0.mlp.up_proj.qweight", HC_DT_I32, 2, qs);
    uint32_t *qz = tc_add(c, "model.layers.0.mlp.up_proj.qzeros", HC_DT_I32, 2, zs);
    uint16_t *sc = tc_add(c, "model.layers.0.mlp.up_proj.scales", HC_DT_F16, 2, ss);
    int32_t *gi = tc_add(c, "model.layers.0.mlp.up_proj.g_idx", HC_DT_I32, 1, gsh);
    int half = 1 << (b - 1), top = (1 << b) - 1;
    /* g_idx: trivial, or each group's members scattered */
    for (int k = 0; k < K; k++) gi[k] = k / gs;
    if (s->act_order)
        for (int k = K - 1; k > 0; k--) {
            int j = (int)(tc_rand() % (uint32_t)(k + 1)), t = gi[k];
            gi[k] = gi[j];
            gi[j] = t;
        }
    if (g_idx_out) memcpy(g_idx_out, gi, (size_t)K * 4);
    int *z = malloc((size_t)(G * N) * sizeof *z);
    uint32_t *col = calloc((size_t)(K * b / 32 + 1), 4), *row = calloc((size_t)(N * b / 32 + 1), 4);
    for (int g = 0; g < G; g++) {
        for (int n = 0; n < N; n++) {
            int zz = s->sym ? half : 1 + (int)(tc_rand() % (uint32_t)top); /* 1..2^b-1 */
            int stored = s->v2_data ? zz : zz - 1;
            /* AutoGPTQ packs zero 0 as uint32(-1) << shift: fields 3.. of the word all ones */
            if (s->overflow_one && g == 0 && n >= 3 && n < 32 / b) { stored = top; zz = top + 1; }
            z[g * N + n] = zz;
            tc_put_bits(row, (int64_t)n * b, b, (uint32_t)stored);
            float v = (float)(0.001 + (tc_rand() % 1000) * 1e-5);
            sc[g * N + n] = hc_f32_to_f16(s->neg_scales && n % 2 ? -v : v);
        }
        memcpy(qz + (size_t)g * (N * b / 32), row, (size_t)(N * b / 32) * 4);
    }
    float *want = malloc((size_t)(N * K) * sizeof *want);
    for (int n = 0; n < N; n++) {
        memset(col, 0, (size_t)(K * b / 32 + 1) * 4);
        for (int k = 0; k < K; k++) {
            int q = (int)(tc_rand() % (uint32_t)(top + 1)), g = gi[k];
            tc_put_bits(col, (int64_t)k * b, b, (uint32_t)q);
            want[n * K + k] = (float)((double)(q - z[g * N + n]) * hc_f16_to_f32(sc[g * N + n]));
        }
        for (int r = 0; r < K * b / 32; r++) qw[(size_t)r * N + n] = col[r];
    }
    free(z);
    free(col);
    free(row);
    char cfg[512];
    /* a float16 model, as GPTQ's scales: 0.1.19 tiles hold them losslessly */
    snprintf(cfg, sizeof cfg,
             "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
             "\"gptq\", \"bits\": %d, \"group_size\": %d, \"sym\": %s, \"desc_act\": %s, "
             "\"checkpoint_format\": \"%s\"}}",
             b, s->gs, s->sym ? "true" : "false", s->act_order ? "true" : "false",
             s->v2_label ? "gptq_v2" : "gptq");
    tc_write(c, cfg, NULL, NULL);
    return want;
}

static void check_lossless(const gp_spec *s, const char *expect_note)
{
    tc_ckpt c;
    tc_init(&c, "gptq");
    float *want = build_gptq(&c, s, NULL), *got = NULL;
    hc_ckpt_layer l;
    hc_error err;
    hc_status st = tc_read_layer(c.dir, "model.layers.0.mlp.up_proj", HC_ACT_ORDER_REFUSE, &l,
                                 &got, &err);
    if (st != HC_OK) fail_msg("b=%d sym=%d: %s", s->b, s->sym, err.msg);
    assert_int_equal(tc_diff(want, got, (int64_t)s->N * s->K), 0);
    assert_int_equal(tc_codes_paths_differ(c.dir, "model.layers.0.mlp.up_proj",
                                           HC_ACT_ORDER_REFUSE), 0);
    assert_true(l.lossless);
    if (expect_note) assert_non_null(strstr(l.note, expect_note));
    else assert_string_equal(l.note, "");
    hc_ckpt_layer_free(&l);
    free(want);
    free(got);
    tc_free(&c);
}

static void test_widths_sym_asym_v1_v2(void **state)
{
    (void)state;
    static const int bits[] = {2, 3, 4, 8};
    for (int i = 0; i < 4; i++)
        for (int sym = 0; sym < 2; sym++)
            for (int v2 = 0; v2 < 2; v2++) {
                gp_spec s = {.b = bits[i], .gs = 32, .sym = sym, .v2_label = v2, .v2_data = v2,
                             .N = 64, .K = 128};
                check_lossless(&s, NULL);
            }
}

/* auto-round's symmetric RTN keeps each group's sign in its scale: read as
 * written, noted, lossless. */
static void test_negative_scales(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = 32, .sym = 1, .N = 64, .K = 128, .neg_scales = 1};
    check_lossless(&s, "128 scale(s) are negative");
}

static void test_channel_wise(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = -1, .sym = 0, .N = 64, .K = 128};
    check_lossless(&s, NULL);
    gp_spec s2 = {.b = 4, .gs = -1, .sym = 1, .N = 64, .K = 256};
    check_lossless(&s2, NULL);
}

/* Trap: label "gptq" (v1) with v2 zeros (0x88888888): reading them as v1
 * would shift every weight by one step; detected, warned, read as v2. */
static void test_mislabelled_v2(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = 32, .sym = 1, .v2_label = 0, .v2_data = 1, .N = 64, .K = 128};
    check_lossless(&s, "mislabelled gptq_v2");
    gp_spec s3 = {.b = 3, .gs = 32, .sym = 1, .v2_label = 0, .v2_data = 1, .N = 64, .K = 128};
    check_lossless(&s3, "mislabelled gptq_v2");
}

/* v1 stored field 2^b - 1: read as true zero 2^b (AutoGPTQ's CUDA kernels, vLLM's
 * gptq_gemm), held as float zero points, with a warning that counts the fields. */
static void test_v1_all_ones_zero(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = 32, .sym = 0, .N = 64, .K = 128, .overflow_one = 1};
    check_lossless(&s, "5 of 256 v1 qzeros fields are 15");
    gp_spec s8 = {.b = 8, .gs = 32, .sym = 0, .N = 64, .K = 128, .overflow_one = 1};
    check_lossless(&s8, "1 of 256 v1 qzeros fields are 255");
    /* the CLI prints the warning on stderr, also under --quiet */
    tc_ckpt c;
    tc_init(&c, "gptq-ones-cli");
    free(build_gptq(&c, &s, NULL));
    char *out = tc_out_dir(c.dir, "out"), *log = tc_out_dir(c.dir, "log"), cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' -q --layout tiles 2>'%s' >/dev/null", hc_test_cli(),
             c.dir, out, log);
    assert_int_equal(system(cmd), 0);
    char *msg = hc_test_read_file(log, NULL);
    assert_non_null(msg);
    if (!strstr(msg, "warning: layer model.layers.0.mlp.up_proj: 5 of 256 v1 qzeros fields"))
        fail_msg("no warning on stderr: %s", msg);
    assert_non_null(strstr(msg, "old torch path reads 0"));
    free(msg);
    remove(log);
    free(log);
    free(out);
    tc_free(&c);
}

static void test_act_order(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = 32, .sym = 0, .v2_label = 1, .v2_data = 1, .N = 64, .K = 128,
                 .act_order = 1};
    tc_ckpt c;
    tc_init(&c, "gptq-ao");
    int32_t gidx[128];
    float *want = build_gptq(&c, &s, gidx), *got = NULL;
    hc_ckpt_layer l;
    hc_error err;
    /* refused by default, message offers both options */
    assert_int_equal(tc_read_layer(c.dir, "model.layers.0.mlp.up_proj", HC_ACT_ORDER_REFUSE, &l,
                                   NULL, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "--act-order permute"));
    assert_non_null(strstr(err.msg, "--act-order requant"));
    assert_non_null(strstr(err.msg, "input_perm"));
    /* permute: column j of the pre form is source column perm[j]; groups contiguous */
    assert_int_equal(tc_read_layer(c.dir, "model.layers.0.mlp.up_proj", HC_ACT_ORDER_PERMUTE, &l,
                                   &got, &err), HC_OK);
    assert_non_null(l.perm);
    int64_t bad = 0;
    for (int j = 0; j < 128; j++) {
        if (gidx[l.perm[j]] != j / 32) bad++;
        for (int n = 0; n < 64; n++)
            if (memcmp(&got[n * 128 + j], &want[n * 128 + l.perm[j]], 4)) bad++;
    }
    assert_int_equal(bad, 0);
    hc_ckpt_layer_free(&l);
    /* whole conversion: refuse, permute (input_perm written), requant */
    char *cfg = NULL;
    assert_int_equal(tc_convert(c.dir, NULL, 0, NULL, &err), HC_ERR_UNSUPPORTED);
    assert_int_equal(tc_convert(c.dir, NULL, 1, &cfg, &err), HC_OK);
    char *v = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "input_perm");
    assert_non_null(v);
    assert_string_equal(v, "\"model.layers.0.mlp.up_proj.input_perm\"");
    free(v);
    free(cfg);
    assert_int_equal(tc_convert(c.dir, NULL, 2, &cfg, &err), HC_OK);
    v = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "requantized");
    assert_string_equal(v, "true");
    free(v);
    free(cfg);
    free(want);
    free(got);
    tc_free(&c);
}

static void test_convert_records(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = 32, .sym = 1, .N = 64, .K = 128};
    tc_ckpt c;
    tc_init(&c, "gptq-e2e");
    free(build_gptq(&c, &s, NULL));
    hc_error err;
    char *cfg = NULL;
    if (tc_convert(c.dir, NULL, 0, &cfg, &err) != HC_OK) fail_msg("%s", err.msg);
    char *lossless = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "lossless");
    char *src = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "source_format");
    char *wd = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "weight_dtype");
    assert_string_equal(lossless, "true");
    assert_non_null(strstr(src, "gptq uint4 g32 sym"));
    assert_string_equal(wd, "\"uint4\"");
    free(lossless); free(src); free(wd); free(cfg);
    /* another target: requantized */
    if (tc_convert(c.dir, "w8a16", 0, &cfg, &err) != HC_OK) fail_msg("%s", err.msg);
    lossless = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "lossless");
    wd = tc_layer_field(cfg, "model.layers.0.mlp.up_proj", "weight_dtype");
    assert_string_equal(lossless, "false");
    assert_string_equal(wd, "\"uint8\"");
    free(lossless); free(wd); free(cfg);
    tc_free(&c);
}

/* A lossless repack with --verify off, both layouts (no source values are
 * read for a verification that does not run). */
static void test_convert_verify_off(void **state)
{
    (void)state;
    gp_spec s = {.b = 4, .gs = 32, .sym = 1, .N = 64, .K = 128};
    tc_ckpt c;
    tc_init(&c, "gptq-verify-off");
    free(build_gptq(&c, &s, NULL));
    char *out = tc_out_dir(c.dir, "out");
    for (int tiles = 0; tiles < 2; tiles++) {
        hc_convert_options o = {.in_dir = c.dir, .out_dir = out, .sm = 90, .force = 1,
                                .verify = HC_VERIFY_OFF,
                                .layout = tiles ? HC_LAYOUT_TILES : HC_LAYOUT_CANONICAL};
        hc_convert_stats stats;
        hc_error err = {0};
        if (hc_convert_run(&o, &stats, &err) != HC_OK) fail_msg("%s", err.msg);
        hc_report_free(stats.report);
    }
    hc_test_rm_rf(out);
    free(out);
    tc_free(&c);
}

static void test_detect_side_file(void **state)
{
    (void)state;
    tc_ckpt c;
    tc_init(&c, "gptq-side");
    int64_t s1[1] = {4};
    tc_add(&c, "x", HC_DT_F32, 1, s1);
    tc_write(&c, "{\"torch_dtype\": \"float16\"}", "quantize_config.json",
             "{\"bits\": 4, \"group_size\": 128, \"desc_act\": false, \"sym\": true}");
    hc_ckpt_config cfg;
    hc_error err;
    assert_int_equal(tc_detect(c.dir, &cfg, &err), HC_OK);
    assert_int_equal(cfg.method, HC_CKPT_GPTQ);
    assert_string_equal(cfg.source_file, "quantize_config.json");
    assert_int_equal(cfg.gptq_v2, 0);
    tc_free(&c);
    tc_init(&c, "gptq-marlin");
    tc_add(&c, "x", HC_DT_F32, 1, s1);
    tc_write(&c, "{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4, "
                 "\"checkpoint_format\": \"marlin\"}}", NULL, NULL);
    assert_int_equal(tc_detect(c.dir, &cfg, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "Marlin"));
    tc_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_widths_sym_asym_v1_v2), cmocka_unit_test(test_negative_scales),
        cmocka_unit_test(test_channel_wise),
        cmocka_unit_test(test_mislabelled_v2),        cmocka_unit_test(test_v1_all_ones_zero),
        cmocka_unit_test(test_act_order),             cmocka_unit_test(test_convert_records),
        cmocka_unit_test(test_convert_verify_off),
        cmocka_unit_test(test_detect_side_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
