/* test_layout_scales.c - spec 5.3-5.7 and 6.1: scale permutations against the
 * spec's explicit lists, block scales, zero-point bytes, bias, int16 weight
 * scales, fused e8m0, and the refusals of the support matrix. */
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

/* uint_b x fp16, E = 2, N = 96 (padded to 128), K = 256, group 128: checks the
 * group scales (perm64), integer zero-point bytes and bias (perm32). */
static void zp_scale_bias_case(int b)
{
    const int64_t E = 2, N = 96, K = 256, gs = 128, G = 2, Np = 128;
    hc_layer_config cfg = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                           .scale_format = HC_FMT_F16, .act_format = HC_FMT_F16,
                           .param_format = HC_FMT_F16, .scale_type = HC_SCALE_GROUP,
                           .group_size = gs, .has_zero_point = 1, .sm = 80};
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
    assert_int_equal(post.zero_point.ndim, 2);
    assert_int_equal(post.zero_point.shape[0], E * G);
    assert_int_equal(post.zero_point.shape[1], Np * zb / 32);
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
                           .scale_type = HC_SCALE_CHANNEL, .sm = 90};
    hc_layer_tensors pre = {0}, post;
    hc_layer_meta m;
    tensor_of(&pre.weight, HC_DT_I32, 0, 1, 2, N, K / 8, w);
    tensor_of(&pre.weight_scale, HC_DT_BF16, 0, 1, 2, N, 1, s);
    run_dense(&cfg, N, K, &pre, &m, &post);
    assert_true(m.to_apply_on_c);
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
            assert_int_equal(pz[g * N + r], zf[(r / 64 * 64 + perm64_list[r % 64]) * G + g]);
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
                           .sm = 90};
    hc_layer_tensors pre = {0}, post;
    hc_layer_meta m;
    tensor_of(&pre.weight, HC_DT_I32, 0, 1, 2, N, K / 4, w);
    tensor_of(&pre.weight_scale, HC_DT_F32, 0, 1, 2, 2, 3, s);
    run_dense(&cfg, N, K, &pre, &m, &post);
    assert_int_equal(post.weight_scale.dtype, HC_DT_F32);
    assert_int_equal(post.weight_scale.shape[0], 3);
    assert_int_equal(post.weight_scale.shape[1], 2);
    const float *ps = post.weight_scale.data;
    for (int c = 0; c < 3; c++)
        for (int r = 0; r < 2; r++) assert_true(ps[c * 2 + r] == s[r * 3 + c]);
    hc_layer_tensors_free(&post);
    free(w);
}

/* 5.7 with e4m3 scales cast to bf16: f = max|ws| / 1024 (1.625 / 1024 here). */
static void test_int_weight_scales(void **state)
{
    (void)state;
    const int64_t N = 64, K = 256, G = 2;
    uint32_t *w = xcalloc((size_t)(N * K / 8), 4);
    uint8_t s[64 * 2];
    memset(s, 0x38, sizeof s);           /* 1.0 */
    s[5 * G + 1] = 0x3D;                 /* 1.625: the maximum */
    s[9 * G + 0] = 0xB0;                 /* -0.5 */
    s[33 * G + 1] = 0x3C;                /* 1.5 */
    float gin = 2.0f;
    hc_layer_config cfg = {.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_F8E4M3,
                           .act_format = HC_FMT_INT8, .param_format = HC_FMT_BF16,
                           .scale_type = HC_SCALE_GROUP, .group_size = 128, .sm = 80};
    hc_layer_tensors pre = {0}, post;
    hc_layer_meta m;
    tensor_of(&pre.weight, HC_DT_I32, 0, 1, 2, N, K / 8, w);
    tensor_of(&pre.weight_scale, HC_DT_F8_E4M3, 0, 1, 2, N, G, s);
    tensor_of(&pre.global_scale, HC_DT_F32, 0, 1, 1, 1, 0, &gin);
    run_dense(&cfg, N, K, &pre, &m, &post);
    assert_true(m.use_int_weight_scale);
    assert_int_equal(m.scale_type, HC_SCALE_GROUP_TENSOR);
    assert_true(m.to_apply_on_c);  /* MMA with 8-bit activations */
    assert_int_equal(post.weight_scale.dtype, HC_DT_BF16);
    const int16_t *q = post.weight_scale.data;
    float f = 1.625f / 1024.0f;
    for (int g = 0; g < G; g++)
        for (int r = 0; r < N; r++) {
            int src = r / 32 * 32 + perm32_list[r % 32];
            int16_t want = (int16_t)(src == 5 && g == 1 ? 1024 : src == 9 && g == 0 ? -315
                                     : src == 33 && g == 1 ? 945 : 630);
            assert_int_equal(q[g * N + r], want);
        }
    assert_int_equal(post.global_scale.ndim, 1);
    assert_true(((const float *)post.global_scale.data)[0] == 2.0f * f);
    hc_layer_tensors_free(&post);
    free(w);
}

static void test_fp4_shift_down(void **state)
{
    (void)state;
    /* {code, d, result}: 0.5/2 = 0.25 -> 0.5, 1.5/2 = 0.75 -> 1, 3/4 -> 1, 1/4 -> 0.5,
     * 0.5/4 -> 0, 4/2 = 2, 6/2 = 3, 6/4 = 1.5, 2/8 -> 0.5, -0.5/4 -> -0, d = 0 unchanged */
    static const uint32_t cases[][3] = {
        {1, 1, 1}, {3, 1, 2}, {5, 2, 2}, {2, 2, 1}, {1, 2, 0}, {6, 1, 4}, {7, 1, 5},
        {7, 2, 3}, {4, 3, 1}, {9, 2, 8}, {0xB, 1, 0xA}, {7, 0, 7}, {7, 30, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(hc_fp4_shift_down(cases[i][0], (int)cases[i][1]), cases[i][2]);
}

static double fp4_value(uint32_t c)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

/* Independent fused-e8m0 code rewrite: nearest fp4 magnitude, ties away. */
static uint32_t ref_fused_code(uint32_t c, int d)
{
    if (c == 8) c = 0;
    if (d == 0) return c;
    double v = fabs(fp4_value(c)) / (double)(1u << d), best_err = 1e9;
    uint32_t best = 0;
    for (uint32_t m = 0; m < 8; m++) {
        double e = fabs(fp4_value(m) - v);
        if (e < best_err || e == best_err) best = m, best_err = e;  /* later = larger */
    }
    return (c & 8) | best;
}

static void fused_case(hc_format_id act, const float *gin)
{
    const int64_t E = 2, N = 64, K = 128, G = 4, gs = 32;
    int int8 = act == HC_FMT_INT8;
    uint8_t *codes = xcalloc((size_t)(E * N * K), 1), *s = xcalloc((size_t)(E * N * G), 1);
    uint32_t *w = xcalloc((size_t)(E * N * K / 8), 4);
    for (int64_t i = 0; i < E * N * K; i++) codes[i] = (uint8_t)(rnd() & 15);
    for (int64_t i = 0; i < N * G; i++) s[i] = (uint8_t)(100 + rnd() % 21);
    for (int64_t i = 0; i < N * G; i++) s[N * G + i] = (uint8_t)(125 + rnd() % 3);
    s[0] = 100, s[1] = 120, s[N * G] = 125, s[N * G + 1] = 127;
    for (int64_t i = 0; i < E * N * K; i++) w[i / 8] |= (uint32_t)codes[i] << (4 * (i % 8));
    hc_layer_config cfg = {.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E8M0,
                           .act_format = act, .param_format = HC_FMT_BF16,
                           .scale_type = HC_SCALE_GROUP, .group_size = gs, .sm = 90};
    hc_layer_tensors pre = {0}, post;
    hc_layer_meta m;
    hc_error err = {0};
    tensor_of(&pre.weight, HC_DT_I32, 1, E, 2, N, K / 8, w);
    tensor_of(&pre.weight_scale, HC_DT_F8_E8M0, 1, E, 2, N, G, s);
    if (gin) tensor_of(&pre.global_scale, HC_DT_F32, 0, 1, 1, E, 0, (void *)gin);
    assert_int_equal(hc_layer_plan(&cfg, 1, E, N, K, &m, &err), HC_OK);
    assert_true(m.use_fused_e8m0 && !m.transposed_mini_block && !m.to_apply_on_c);
    assert_string_equal(hc_layout_variant_name(&m), "fused_e8m0");
    assert_int_equal(hc_layer_transform(&cfg, &m, &pre, &post, &err), HC_OK);
    int base[2] = {int8 ? 117 : 108, 125};
    const float *gs_out = post.global_scale.data;
    for (int e = 0; e < 2; e++) {
        float want = (gin ? gin[e] : 1.0f) * ldexpf(1.0f, base[e] - 127) * (int8 ? 0.5f : 1.0f);
        assert_true(gs_out[e] == want);
    }
    uint8_t *sc = xcalloc((size_t)(E * N * G), 1);
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                int x = s[(e * N + n) * G + k / gs], xm = x > base[e] ? x : base[e];
                uint8_t *c = &codes[(e * N + n) * K + k];
                *c = (uint8_t)ref_fused_code(*c, xm - x);
                sc[(e * N + n) * G + k / gs] = (uint8_t)(xm - base[e]);
            }
    const uint8_t *ps = post.weight_scale.data;
    for (int64_t e = 0; e < E; e++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t r = 0; r < N; r++)
                assert_int_equal(ps[(e * G + g) * N + r], sc[(e * N + perm64_list[r]) * G + g]);
    memset(w, 0, (size_t)(E * N * K / 2));
    for (int64_t i = 0; i < E * N * K; i++) w[i / 8] |= (uint32_t)codes[i] << (4 * (i % 8));
    uint32_t *want = xcalloc((size_t)(E * N * K / 8), 4);
    hc_repack_params p = {.bits = 4, .act_bits = 8, .E = E, .N = N, .K = K};
    assert_int_equal(hc_repack_weight(&p, w, want, &err), HC_OK);
    assert_memory_equal(post.weight.data, want, post.weight.nbytes);
    hc_layer_tensors_free(&post);
    free(want); free(sc); free(w); free(s); free(codes);
}

static void test_fused_e8m0(void **state)
{
    (void)state;
    static const float gin[2] = {2.0f, 0.75f};
    fused_case(HC_FMT_F8E4M3, NULL);
    fused_case(HC_FMT_INT8, NULL);
    fused_case(HC_FMT_INT8, gin);
    fused_case(HC_FMT_F8E4M3, gin);
}

typedef struct {
    hc_format_id w, s, a;
    int64_t gs;
    int zp, fpzp;
    const char *msg;
} refusal;

static void test_support_matrix_refusals(void **state)
{
    (void)state;
    static const refusal cases[] = {
        {HC_FMT_UINT5, HC_FMT_F16, HC_FMT_INT4, 128, 0, 0,
         "5-bit weights need 8- or 16-bit activations"},
        {HC_FMT_UINT6, HC_FMT_F16, HC_FMT_F8E4M3, 128, 0, 0, "supported up to 5 bits"},
        {HC_FMT_UINT5, HC_FMT_F16, HC_FMT_F8E4M3, 128, 1, 0, "supported up to 4 bits"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F8E5M2, 128, 1, 0, "supported up to 3 bits"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F8E4M3, 128, 1, 1, "float zero points need"},
        {HC_FMT_UINT8, HC_FMT_F16, HC_FMT_INT8, 128, 1, 0, "zero points need unsigned"},
        {HC_FMT_F4E2M1, HC_FMT_F16, HC_FMT_F16, 32, 1, 0, "zero points need unsigned integer"},
        {HC_FMT_F8E5M2, HC_FMT_F16, HC_FMT_F8E4M3, 128, 0, 0, "exponent bits <= 4"},
        {HC_FMT_F8E4M3, HC_FMT_F16, HC_FMT_INT8, 128, 0, 0, "only MXFP4"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F16, 8, 0, 0, "sizes >= 16"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_INT4, 32, 0, 0, "sizes >= 64"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F16, 96, 0, 0, "divide 64 or are multiples of 64"},
        {HC_FMT_UINT4, HC_FMT_F32, HC_FMT_F16, 128, 0, 0, "scales must be float16"},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F32, 128, 0, 0, "activation format float32"},
        {HC_FMT_F8E8M0, HC_FMT_F16, HC_FMT_BF16, 128, 0, 0, "must be signed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const refusal *c = &cases[i];
        hc_layer_config cfg = {.weight_format = c->w, .scale_format = c->s, .act_format = c->a,
                               .param_format = HC_FMT_F16, .scale_type = HC_SCALE_GROUP,
                               .group_size = c->gs, .has_zero_point = c->zp,
                               .is_fp_zero_point = c->fpzp, .sm = 90};
        hc_layer_meta m;
        hc_error err = {0};
        assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
        if (strstr(err.msg, c->msg) == NULL) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, c->msg);
    }
    /* block scales: zero points and small group_size_n refused */
    hc_layer_config cfg = {.weight_format = HC_FMT_F8E4M3, .scale_format = HC_FMT_F32,
                           .act_format = HC_FMT_BF16, .param_format = HC_FMT_BF16,
                           .scale_type = HC_SCALE_BLOCK, .group_size = 128, .group_size_n = 32,
                           .sm = 90};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "group_size_n >= 64"));
    /* fp8 activations before Ada */
    cfg.scale_type = HC_SCALE_CHANNEL, cfg.group_size = 0, cfg.group_size_n = 0;
    cfg.scale_format = HC_FMT_BF16, cfg.act_format = HC_FMT_F8E4M3, cfg.sm = 80;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 256, 1024, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "sm >= 89"));
}

/* Padding rule: N to 64; K to lcm(512/a, group size, 64 for MoE). */
static void test_padding_rule(void **state)
{
    (void)state;
    hc_layer_config cfg = {.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_F16,
                           .act_format = HC_FMT_F16, .param_format = HC_FMT_F16,
                           .scale_type = HC_SCALE_CHANNEL, .sm = 90};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 100, 40, &m, &err), HC_OK);
    assert_int_equal(m.Np, 128);
    assert_int_equal(m.Kp, 64);  /* 512/16 = 32 */
    assert_int_equal(hc_layer_plan(&cfg, 1, 3, 100, 40, &m, &err), HC_OK);
    assert_int_equal(m.Kp, 64);  /* MoE: 64 */
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 96, &m, &err), HC_OK);
    assert_int_equal(m.Kp, 96);
    cfg.scale_type = HC_SCALE_GROUP, cfg.group_size = 128;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 200, &m, &err), HC_OK);
    assert_int_equal(m.Kp, 256);
    assert_int_equal(m.G, 2);
    cfg.act_format = HC_FMT_INT4, cfg.group_size = 64;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 136, &m, &err), HC_OK);
    assert_int_equal(m.Kp, 256);  /* 512/4 = 128 */
    assert_string_equal(hc_layout_variant_name(&m), "transposed");
    assert_string_equal(hc_scale_type_name(m.scale_type), "group_tensor");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perm_lists),
        cmocka_unit_test(test_scales_permute),
        cmocka_unit_test(test_zero_point_bytes_scales_bias),
        cmocka_unit_test(test_channel_scales_and_float_zp),
        cmocka_unit_test(test_block_scales),
        cmocka_unit_test(test_int_weight_scales),
        cmocka_unit_test(test_fp4_shift_down),
        cmocka_unit_test(test_fused_e8m0),
        cmocka_unit_test(test_support_matrix_refusals),
        cmocka_unit_test(test_padding_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
