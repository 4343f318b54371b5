/* test_layout_scales.c - spec 5.4-5.6 as humming-kernels 0.1.19 keeps them:
 * scale permutations against the spec's explicit lists, block scales,
 * zero-point bytes, bias; the refusals of the support matrix (canonical and
 * 0.1.19 plans) and their padding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_layout.h"
#include "hc_layout_ops.h"
#include "hc_repack.h"

static const int perm64_list[64] = {
    0, 8, 16, 24, 32, 40, 48, 56, 1, 9, 17, 25, 33, 41, 49, 57, 2, 10, 18, 26, 34, 42,
    50, 58, 3, 11, 19, 27, 35, 43, 51, 59, 4, 12, 20, 28, 36, 44, 52, 60, 5, 13, 21, 29,
    37, 45, 53, 61, 6, 14, 22, 30, 38, 46, 54, 62, 7, 15, 23, 31, 39, 47, 55, 63};
static const int perm32_list[32] = {0, 1, 8, 9, 16, 17, 24, 25, 2, 3, 10, 11, 18, 19, 26, 27,
                                    4, 5, 12, 13, 20, 21, 28, 29, 6, 7, 14, 15, 22, 23, 30, 31};

static void tensor_of(hc_tensor *t, hc_dtype dt, int moe, int64_t E, int nd, int64_t d0,
                      int64_t d1, void *data)
{
    int64_t shape[3];
    int n = 0;
    if (moe) shape[n++] = E;
    shape[n++] = d0;
    if (nd == 2) shape[n++] = d1;
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->ndim = n;
    memcpy(t->shape, shape, sizeof shape);
    t->nbytes = (size_t)hc_tensor_byte_size(dt, n, shape);
    t->data = data;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    assert_non_null(p);
    return p;
}

static uint32_t lcg = 12345;
static uint32_t rnd(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return lcg >> 8;
}

static void test_perm_lists(void **state)
{
    (void)state;
    for (int j = 0; j < 64; j++) assert_int_equal(hc_scale_perm(64, j), perm64_list[j]);
    for (int j = 0; j < 32; j++) assert_int_equal(hc_scale_perm(32, j), perm32_list[j]);
}

/* (E, R, G) -> (E, G, R) with the explicit lists, both chunk widths. */
static void test_scales_permute(void **state)
{
    (void)state;
    int64_t E = 2, R = 128, G = 3;
    uint16_t in[2 * 128 * 3], out[2 * 128 * 3];
    for (int i = 0; i < 2 * 128 * 3; i++) in[i] = (uint16_t)i;
    for (int chunk = 32; chunk <= 64; chunk += 32) {
        hc_scales_permute(in, out, E, R, G, 2, chunk);
        for (int64_t e = 0; e < E; e++)
            for (int64_t g = 0; g < G; g++)
                for (int64_t r = 0; r < R; r++) {
                    int p = chunk == 64 ? perm64_list[r % 64] : perm32_list[r % 32];
                    int64_t src = r / chunk * chunk + p;
                    assert_int_equal(out[(e * G + g) * R + r], in[(e * R + src) * G + g]);
                }
    }
}

/* Element of an (E, N, G) array seen through padding to Np rows (0 beyond N). */
static uint32_t padded_at(const uint16_t *a, int64_t N, int64_t G, int64_t e, int64_t n,
                          int64_t g)
{
    return n < N ? a[(e * N + n) * G + g] : 0;
}

/* uint_b x fp16, E = 2, N = 96 (padded to 256), K = 256, group 128: checks the
 * group scales (perm64), integer zero-point bytes and bias (perm32). */
static void zp_scale_bias_case(int b)
{
    const int64_t E = 2, N = 96, K = 256, gs = 128, G = 2, Np = 256;
    hc_layer_config cfg = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                           .scale_format = HC_FMT_F16, .act_format = HC_FMT_F16,
                           .param_format = HC_FMT_F16, .scale_type = HC_SCALE_GROUP,
                           .group_size = gs, .has_zero_point = 1, .sm = 80,
                           .version = HC_HUMMING_0_1_19};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, 1, E, N, K, &m, &err), HC_OK);
    assert_int_equal(m.Np, Np);
    assert_false(m.to_apply_on_c);
    uint32_t *w = xcalloc((size_t)(E * N * K * b / 32), 4);
    uint16_t *s = xcalloc((size_t)(E * N * G), 2), *zc = xcalloc((size_t)(E * N * G), 2);
    uint16_t *bias = xcalloc((size_t)(E * N), 2);
    uint32_t *zp = xcalloc((size_t)(E * N * b / 32 * G), 4);
    for (int64_t i = 0; i < E * N * G; i++) {
        s[i] = (uint16_t)(rnd() | 1);
        zc[i] = (uint16_t)(rnd() % (1u << b));
    }
    for (int64_t i = 0; i < E * N; i++) bias[i] = (uint16_t)rnd();
    for (int64_t e = 0; e < E; e++)  /* N-packed, bit by bit */
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                for (int t = 0; t < b; t++)
                    if ((zc[(e * N + n) * G + g] >> t) & 1)
                        zp[(e * (N * b / 32) + (n * b + t) / 32) * G + g] |= 1u << ((n * b + t) % 32);
    hc_layer_tensors pre = {0}, post;
    tensor_of(&pre.weight, HC_DT_I32, 1, E, 2, N, K * b / 32, w);
    tensor_of(&pre.weight_scale, HC_DT_F16, 1, E, 2, N, G, s);
    tensor_of(&pre.zero_point, HC_DT_I32, 1, E, 2, N * b / 32, G, zp);
    tensor_of(&pre.bias, HC_DT_F16, 1, E, 1, N, 0, bias);
    assert_int_equal(hc_layer_transform(&cfg, &m, &pre, &post, &err), HC_OK);
    int zb = b <= 4 ? 4 : 8;
    assert_int_equal(post.zero_point.ndim, 3);
    assert_int_equal(post.zero_point.shape[0], E);
    assert_int_equal(post.zero_point.shape[1], G);
    assert_int_equal(post.zero_point.shape[2], Np * zb / 32);
    const uint8_t *zbytes = post.zero_point.data;
    const uint16_t *ps = post.weight_scale.data, *pb = post.bias.data;
    for (int64_t e = 0; e < E; e++) {
        for (int64_t g = 0; g < G; g++)
            for (int64_t r = 0; r < Np; r++) {
                int64_t src = r / 64 * 64 + perm64_list[r % 64];
                int64_t idx = (e * G + g) * Np + r;  /* position in the code stream */
                uint32_t z = zb == 4 ? (zbytes[idx / 2] >> (4 * (idx % 2))) & 15 : zbytes[idx];
                assert_int_equal(z, padded_at(zc, N, G, e, src, g));
                assert_int_equal(ps[idx], padded_at(s, N, G, e, src, g));
            }
        for (int64_t r = 0; r < Np; r++)
            assert_int_equal(pb[e * Np + r],
                             padded_at(bias, N, 1, e, r / 32 * 32 + perm32_list[r % 32], 0));
    }
    hc_layer_tensors_free(&post);
    free(w); free(s); free(zc); free(bias); free(zp);
}

static void test_zero_point_bytes_scales_bias(void **state)
{
    (void)state;
    static const int widths[4] = {3, 4, 5, 8};
    for (int i = 0; i < 4; i++) zp_scale_bias_case(widths[i]);
}

/* Runs plan + transform on a dense 64-row-multiple layer; returns post. */
static void run_dense(const hc_layer_config *cfg, int64_t N, int64_t K, hc_layer_tensors *pre,
                      hc_layer_meta *m, hc_layer_tensors *post)
{
    hc_error err = {0};
    if (hc_layer_plan(cfg, 0, 1, N, K, m, &err) != HC_OK) fail_msg("plan: %s", err.msg);
    if (hc_layer_transform(cfg, m, pre, post, &err) != HC_OK) fail_msg("transform: %s", err.msg);
}

/* Channel scales on WGMMA go on C (perm32); float zero points use perm64. */
static void test_channel_scales_and_float_zp(void **state)
{
    (void)state;
    const int64_t N = 128, K = 256, G = 4;
    uint32_t *w = xcalloc((size_t)(N * K / 8), 4);
    uint16_t s[128], zf[128 * 4];
    for (int i = 0; i < 128; i++) s[i] = (uint16_t)(0x3c00 + i);
    for (int i = 0; i < 128 * 4; i++) zf[i] = (uint16_t)(0x4000 + i);
    hc_layer_config cfg = {.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_BF16,
                           .act_format = HC_FMT_BF16, .param_format = HC_FMT_BF16,
                           .scale_type = HC_SCALE_CHANNEL, .sm = 90,
                           .version = HC_HUMMING_0_1_19};
    hc_layer_tensors pre = {0}, post;
    hc_layer_meta m;
    tensor_of(&pre.weight, HC_DT_I32, 0, 1, 2, N, K / 8, w);
    tensor_of(&pre.weight_scale, HC_DT_BF16, 0, 1, 2, N, 1, s);
    run_dense(&cfg, N, K, &pre, &m, &post);
    assert_true(m.to_apply_on_c);
    assert_int_equal(m.Np, 256);
    const uint16_t *ps = post.weight_scale.data;
    assert_int_equal(post.weight_scale.shape[0], 1);
    for (int r = 0; r < N; r++) assert_int_equal(ps[r], s[r / 32 * 32 + perm32_list[r % 32]]);
    hc_layer_tensors_free(&post);
    cfg.scale_type = HC_SCALE_GROUP;
    cfg.group_size = K / G;
    cfg.has_zero_point = cfg.is_fp_zero_point = 1;
    uint16_t sg[128 * 4] = {0};
    tensor_of(&pre.weight_scale, HC_DT_BF16, 0, 1, 2, N, G, sg);
    tensor_of(&pre.zero_point, HC_DT_BF16, 0, 1, 2, N, G, zf);
    run_dense(&cfg, N, K, &pre, &m, &post);
    assert_false(m.preprocess_int2fp);
    assert_int_equal(post.zero_point.dtype, HC_DT_BF16);
    const uint16_t *pz = post.zero_point.data;
    for (int g = 0; g < G; g++)
        for (int r = 0; r < N; r++)
            assert_int_equal(pz[g * m.Np + r], zf[(r / 64 * 64 + perm64_list[r % 64]) * G + g]);
    hc_layer_tensors_free(&post);
    free(w);
}

static void test_block_scales(void **state)
{
    (void)state;
    const int64_t N = 128, K = 384;
    uint32_t *w = xcalloc((size_t)(N * K / 4), 4);
    float s[2 * 3] = {1, 2, 3, 4, 5, 6};
    hc_layer_config cfg = {.weight_format = HC_FMT_F8E4M3, .scale_format = HC_FMT_F32,
                           .act_format = HC_FMT_BF16, .param_format = HC_FMT_BF16,
                           .scale_type = HC_SCALE_BLOCK, .group_size = 128, .group_size_n = 64,
                           .sm = 90, .version = HC_HUMMING_0_1_19};
    hc_layer_tensors pre = {0}, post;
    hc_layer_meta m;
    tensor_of(&pre.weight, HC_DT_I32, 0, 1, 2, N, K / 4, w);
    tensor_of(&pre.weight_scale, HC_DT_F32, 0, 1, 2, 2, 3, s);
    run_dense(&cfg, N, K, &pre, &m, &post);
    assert_int_equal(post.weight_scale.dtype, HC_DT_F32);
    assert_int_equal(post.weight_scale.shape[0], 3);
    assert_int_equal(post.weight_scale.shape[1], 4); /* N padded to 256: 4 block rows */
    const float *ps = post.weight_scale.data;
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 4; r++) assert_true(ps[c * 4 + r] == (r < 2 ? s[r * 3 + c] : 0.0f));
    hc_layer_tensors_free(&post);
    free(w);
}

typedef struct {
    hc_format_id w, s, a;
    int64_t gs;
    int zp, fpzp;
    const char *msg;
} refusal;

/* What the canonical and the 0.1.19 plans refuse alike: humming-kernels
 * 0.1.19's schema and LayerConfig checks. */
static void test_support_matrix_refusals(void **state)
{
    (void)state;
    static const refusal cases[] = {
        {HC_FMT_UINT5, HC_FMT_F16, HC_FMT_INT4, 128, 0, 0,
         "5-bit weights need 8- or 16-bit activations"},
        {HC_FMT_UINT6, HC_FMT_F16, HC_FMT_F8E4M3, 128, 0, 0, "supported up to 5 bits"},
        {HC_FMT_UINT5, HC_FMT_F16, HC_FMT_F8E4M3, 128, 1, 0, "supported up to 4 bits"},
        {HC_FMT_UINT5, HC_FMT_F16, HC_FMT_F8E5M2, 128, 1, 0, "need a bfloat16 layer dtype"},
        {HC_FMT_UINT8, HC_FMT_F16, HC_FMT_INT8, 128, 1, 0, "take no zero point"},
        {HC_FMT_F4E2M1, HC_FMT_F16, HC_FMT_F16, 32, 1, 0, "zero points need integer weights"},
        {HC_FMT_F7E1M5, HC_FMT_F16, HC_FMT_F8E4M3, 128, 0, 0, "<= 3 mantissa bits"},
        {HC_FMT_F8E4M3, HC_FMT_F16, HC_FMT_INT8, 128, 0, 0, "take integer weights"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F16, 8, 0, 0, "the smallest is 16"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_INT8, 16, 0, 0, "the smallest is 32"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_INT4, 32, 0, 0, "the smallest is 64"},
        {HC_FMT_UINT4, HC_FMT_F32, HC_FMT_F16, 128, 0, 0, "scales must be float16"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F32, 128, 0, 0, "activation format float32"},
        {HC_FMT_F8E8M0, HC_FMT_F16, HC_FMT_F16, 128, 0, 0, "float weights need >= 1"},
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_F16, 128, 0, 0, "16-bit scales must be"},
    };
    for (int v = 0; v < 2; v++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const refusal *c = &cases[i];
            hc_layer_config cfg = {.weight_format = c->w, .scale_format = c->s,
                                   .act_format = c->a, .param_format = HC_FMT_F16,
                                   .scale_type = HC_SCALE_GROUP, .group_size = c->gs,
                                   .has_zero_point = c->zp, .is_fp_zero_point = c->fpzp,
                                   .sm = 89, .version = v ? HC_HUMMING_CANONICAL
                                                          : HC_HUMMING_0_1_19};
            hc_layer_meta m;
            hc_error err = {0};
            assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
            if (strstr(err.msg, c->msg) == NULL)
                fail_msg("case %zu (%s): '%s' lacks '%s'", i, v ? "canonical" : "0.1.19", err.msg,
                         c->msg);
        }
    /* block scales: group_size_n > 1; fp8 activations before Ada */
    hc_layer_config cfg = {.weight_format = HC_FMT_F8E4M3, .scale_format = HC_FMT_F32,
                           .act_format = HC_FMT_BF16, .param_format = HC_FMT_BF16,
                           .scale_type = HC_SCALE_BLOCK, .group_size = 128, .group_size_n = 1,
                           .sm = 90, .version = HC_HUMMING_CANONICAL};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "group_size_n > 1"));
    cfg.scale_type = HC_SCALE_CHANNEL, cfg.group_size = 0, cfg.group_size_n = 0;
    cfg.scale_format = HC_FMT_BF16, cfg.act_format = HC_FMT_F8E4M3, cfg.sm = 80;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "sm >= 89"));
    /* what vLLM loads but the tiles do not implement: canonical only */
    cfg = (hc_layer_config){.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E8M0,
                            .act_format = HC_FMT_F8E4M3, .param_format = HC_FMT_BF16,
                            .scale_type = HC_SCALE_GROUP, .group_size = 32, .sm = 90,
                            .version = HC_HUMMING_CANONICAL};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_OK);
    cfg.sm = 100;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_OK);
    cfg.act_format = HC_FMT_INT8; /* MXFP4 x int8: groups of 32 only */
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_OK);
    cfg.group_size = 64;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
    /* float8e3m4 operands run on sm100 / sm103 / sm120 / sm121 only */
    cfg = (hc_layer_config){.weight_format = HC_FMT_F8E3M4, .scale_format = HC_FMT_BF16,
                            .act_format = HC_FMT_F8E4M3, .param_format = HC_FMT_BF16,
                            .scale_type = HC_SCALE_CHANNEL, .sm = 90,
                            .version = HC_HUMMING_CANONICAL};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "float8e3m4"));
    cfg.sm = 120;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_OK);
}

/* Padding: 0.1.19 pads N to 256 and K to 128 (vLLM's); a canonical plan
 * keeps the shapes. */
static void test_padding_rule(void **state)
{
    (void)state;
    hc_layer_config cfg = {.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_F16,
                           .act_format = HC_FMT_F16, .param_format = HC_FMT_F16,
                           .scale_type = HC_SCALE_CHANNEL, .sm = 90,
                           .version = HC_HUMMING_0_1_19};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 100, 40, &m, &err), HC_OK);
    assert_int_equal(m.Np, 256);
    assert_int_equal(m.Kp, 128);
    assert_int_equal(m.G, 1);
    assert_int_equal(hc_layer_plan(&cfg, 1, 3, 300, 136, &m, &err), HC_OK);
    assert_true(m.Np == 512 && m.Kp == 256 && m.E == 3);
    cfg.scale_type = HC_SCALE_GROUP, cfg.group_size = 64;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 192, &m, &err), HC_OK);
    assert_true(m.Kp == 256 && m.G == 4);
    assert_string_equal(hc_layout_variant_name(&m), "tiled");
    assert_string_equal(hc_scale_type_name(m.scale_type), "group");
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 160, &m, &err), HC_ERR_UNSUPPORTED);
    cfg.version = HC_HUMMING_CANONICAL;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 100, 192, &m, &err), HC_OK);
    assert_true(m.Np == 100 && m.Kp == 192 && m.G == 3 && m.N == 100 && m.K == 192);
    assert_string_equal(hc_layout_variant_name(&m), "canonical");
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 160, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "multiple of the group size"));
    /* and it builds no tiles */
    hc_layer_tensors pre = {0}, post;
    assert_int_equal(hc_layer_transform(&cfg, &m, &pre, &post, &err), HC_ERR_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perm_lists),
        cmocka_unit_test(test_scales_permute),
        cmocka_unit_test(test_zero_point_bytes_scales_bias),
        cmocka_unit_test(test_channel_scales_and_float_zp),
        cmocka_unit_test(test_block_scales),
        cmocka_unit_test(test_support_matrix_refusals),
        cmocka_unit_test(test_padding_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
