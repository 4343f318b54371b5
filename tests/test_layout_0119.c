/* test_layout_0119.c - the humming-kernels 0.1.19 paths no golden-0119 vector
 * covers, each checked against a path that is verified (a golden vector, or
 * the repack that test_layout.c checks against spec 4.9's golden words and
 * an independent reference) and the 0.1.19 source's own formula for the
 * step between them:
 * - packed-K: the transposed-mini-block tiles of the repack, re-stored with
 *   the packed-K store of weight_repack_nk (process.cuh), written here as the
 *   kernel loops;
 * - flat int8 x int8 / W4A4: the flat fp8 order with each code's top bit flipped;
 * - native dequant (sm89 fp16 x fp8): the tiled words with the byte slots in order;
 * - e8m0 scales with fp16 output: the bf16 layout's bytes through
 *   pack_e8m0_scale_for_fp16; bias and float zero points: the channel / group
 *   scale permutations; MoE: each expert transformed as a dense layer;
 * - MoE weights recoded as float{b}e0m{b-1}: the plain repack of the
 *   sign-magnitude codes of convert_symmetric_integer_weight;
 * - fused e8m0: process_mxfp4_w4a8's code folding against exact arithmetic;
 * and the refusals of what is not implemented. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "hc_layout.h"
#include "hc_layout_ops.h"
#include "hc_repack.h"

static uint32_t lcg = 2024;
static uint32_t rnd(void)
{
    lcg = lcg * 1664525u + 1013904223u;
    return lcg >> 8;
}

/* A layer's pre tensors, random: weight codes, 16-bit or 8-bit scales. */
typedef struct {
    hc_layer_config cfg;
    int moe;
    int64_t E, N, K;
    hc_layer_tensors pre;
} layer;

static hc_layer_config base_cfg(hc_format_id w, hc_format_id a, hc_format_id param, int64_t gs)
{
    hc_layer_config c = {.weight_format = w, .act_format = a, .param_format = param,
                         .scale_format = param, .group_size = gs,
                         .scale_type = gs ? HC_SCALE_GROUP : HC_SCALE_CHANNEL, .sm = 90,
                         .version = HC_HUMMING_0_1_19};
    return c;
}

static void alloc3(hc_tensor *t, hc_dtype dt, const layer *L, int64_t d0, int64_t d1)
{
    int64_t s[3];
    int n = 0;
    if (L->moe) s[n++] = L->E;
    s[n++] = d0;
    if (d1 > 0) s[n++] = d1;
    assert_int_equal(hc_tensor_alloc(t, dt, n, s, NULL), HC_OK);
}

/* Random codes (lo..2^b-1), scales in the scale format, optional bias / zp. */
static void make_layer(layer *L, int with_bias, uint32_t lo)
{
    const hc_layer_config *c = &L->cfg;
    int b = hc_format_get(c->weight_format)->bits;
    int64_t G = c->group_size ? L->K / c->group_size : 1;
    memset(&L->pre, 0, sizeof L->pre);
    alloc3(&L->pre.weight, HC_DT_I32, L, L->N, L->K * b / 32);
    uint32_t *w = L->pre.weight.data;
    for (int64_t r = 0; r < L->E * L->N; r++)
        for (int64_t k = 0; k < L->K; k++) {
            uint32_t v = lo + rnd() % ((1u << b) - lo);
            int64_t bit = r * L->K * b + k * b;
            w[bit / 32] |= v << (bit % 32);
            if (bit % 32 + b > 32) w[bit / 32 + 1] |= v >> (32 - bit % 32);
        }
    hc_dtype sd = hc_dtype_of_format(c->scale_format);
    alloc3(&L->pre.weight_scale, sd, L, c->scale_type == HC_SCALE_BLOCK ? L->N / c->group_size_n : L->N, G);
    uint8_t *s = L->pre.weight_scale.data;
    for (size_t i = 0; i < L->pre.weight_scale.nbytes; i++) /* 16-bit: in [0.0078, 2) */
        s[i] = hc_dtype_bits(sd) == 16 && i % 2 ? (uint8_t)(0x3c + rnd() % 3) : (uint8_t)(110 + rnd() % 30);
    if (c->has_zero_point && c->is_fp_zero_point) {
        alloc3(&L->pre.zero_point, hc_dtype_of_format(c->param_format), L, L->N, G);
        uint16_t *z = L->pre.zero_point.data;
        for (size_t i = 0; i < L->pre.zero_point.nbytes / 2; i++) z[i] = (uint16_t)(0x3c00 + rnd() % 0x300);
    } else if (c->has_zero_point) {
        alloc3(&L->pre.zero_point, HC_DT_I32, L, L->N * b / 32, G);
        uint32_t *z = L->pre.zero_point.data;
        for (size_t i = 0; i < L->pre.zero_point.nbytes / 4; i++) z[i] = rnd() ^ rnd() << 16;
    }
    if (with_bias) {
        alloc3(&L->pre.bias, hc_dtype_of_format(c->param_format), L, L->N, 0);
        uint16_t *bb = L->pre.bias.data;
        for (size_t i = 0; i < L->pre.bias.nbytes / 2; i++) bb[i] = (uint16_t)(rnd() & 0xbfff);
    }
}

static hc_status transform(const layer *L, hc_layer_meta *m, hc_layer_tensors *post, hc_error *err)
{
    HC_TRY(hc_layer_plan(&L->cfg, L->moe, L->moe ? L->E : 1, L->N, L->K, m, err));
    return hc_layer_transform(&L->cfg, m, &L->pre, post, err);
}

static void transform_ok(const layer *L, hc_layer_meta *m, hc_layer_tensors *post)
{
    hc_error err = {0};
    if (transform(L, m, post, &err) != HC_OK) fail_msg("%s", err.msg);
}

/* packed-K: the transposed-mini-block tiles of the row-packed codes (no
 * padding, no code transform in these cases) stored the way
 * weight_repack_nk's kUsePackedKLayout branch stores them. */
static void check_packed_k(hc_format_id w, hc_format_id a, int zp)
{
    layer L = {.cfg = base_cfg(w, a, HC_FMT_BF16, 128), .E = 1, .N = 256, .K = 512};
    L.cfg.has_zero_point = zp;
    make_layer(&L, 0, 0);
    hc_layer_meta m;
    hc_layer_tensors post;
    transform_ok(&L, &m, &post);
    assert_true(m.use_packed_k_layout && m.transposed_mini_block && !m.use_flat_weight);
    assert_true(!m.preprocess_int2fp && !m.int8_byte_flip && m.Np == 256 && m.Kp == 512);
    int b = m.weight_bits, hb = b / 2, rows_per_k64 = 2, ints_per_row = 16 * b / 8;
    uint32_t *T = malloc(L.pre.weight.nbytes);
    assert_non_null(T);
    hc_repack_params rp = {.bits = b, .act_bits = 8, .transposed = 1, .E = 1, .N = 256, .K = 512};
    hc_error err = {0};
    assert_int_equal(hc_repack_weight(&rp, L.pre.weight.data, T, &err), HC_OK);
    const uint32_t *got = post.weight.data;
    int64_t tiled_row = 32 * 256 * b / 32, packed_row = 64 * 256 * b / 32, bad = 0;
    assert_int_equal(post.weight.shape[0], 512 / 64);
    assert_int_equal(post.weight.shape[1], packed_row);
    for (int64_t ky = 0; ky < 512 / 64; ky++)      /* blockIdx.y */
        for (int64_t nx = 0; nx < 256 / 64; nx++)  /* blockIdx.x */
            for (int lane = 0; lane < 32; lane++) { /* threadIdx.x */
                uint32_t out_arr[2 * 16];
                for (int i = 0; i < rows_per_k64; i++) /* the non-packed store, inverted */
                    for (int j = 0; j < ints_per_row / b; j++)
                        for (int k = 0; k < b; k++)
                            out_arr[i * ints_per_row + j * b + k] =
                                T[(ky * 2 + i) * tiled_row + 64 * nx * b + j * 32 * b + lane * b + k];
                for (int i = 0; i < rows_per_k64; i++)
                    for (int j = 0; j < ints_per_row / b; j++)
                        for (int k = 0; k < b; k++) {
                            int64_t region = nx * 4 + j * 2 + k / hb, s = i * hb + k % hb;
                            int64_t col = region * (32 * b) + lane * b + s;
                            bad += got[ky * packed_row + col] != out_arr[i * ints_per_row + j * b + k];
                        }
            }
    assert_int_equal(bad, 0);
    hc_layer_tensors_free(&post);
    free(T);
    hc_layer_tensors_free(&L.pre);
}

static void test_packed_k(void **state)
{
    (void)state;
    check_packed_k(HC_FMT_UINT2, HC_FMT_INT8, 0);
    check_packed_k(HC_FMT_UINT4, HC_FMT_INT8, 1);  /* zero points: no ldmatrix, so tiles */
    check_packed_k(HC_FMT_F6E3M2, HC_FMT_F8E4M3, 0);
    /* no packed-K: group 64, channel scales, odd bits, sm89 */
    hc_layer_meta m;
    hc_layer_config c = base_cfg(HC_FMT_UINT4, HC_FMT_F8E4M3, HC_FMT_BF16, 64);
    assert_int_equal(hc_layer_plan(&c, 0, 1, 256, 512, &m, NULL), HC_OK);
    assert_false(m.use_packed_k_layout);
    c = base_cfg(HC_FMT_UINT3, HC_FMT_F8E4M3, HC_FMT_BF16, 128);
    assert_int_equal(hc_layer_plan(&c, 0, 1, 256, 512, &m, NULL), HC_OK);
    assert_false(m.use_packed_k_layout);
    c = base_cfg(HC_FMT_UINT4, HC_FMT_F8E4M3, HC_FMT_BF16, 128);
    c.sm = 89;
    assert_int_equal(hc_layer_plan(&c, 0, 1, 256, 512, &m, NULL), HC_OK);
    assert_false(m.use_packed_k_layout);
    char *js = hc_layer_config_json(&c, &m, 0, 0, 0);
    assert_non_null(strstr(js, "\"use_packed_k_layout\":false"));
    free(js);
}

/* int8 x int8 (sm90) and int4 x int4 (sm80): the fp8 x fp8 / int4 x int8
 * flat order (golden-verified) with every code's top bit flipped (int8 minus
 * 128, int4 minus 8). */
static void check_flat_flip(hc_format_id w, hc_format_id a, hc_format_id ref_w, hc_format_id ref_a,
                            int sm, uint32_t mask)
{
    layer L = {.cfg = base_cfg(w, a, HC_FMT_BF16, 0), .E = 1, .N = 200, .K = 384};
    L.cfg.sm = sm;
    make_layer(&L, 0, 0);
    layer R = L;
    R.cfg.weight_format = ref_w, R.cfg.act_format = ref_a, R.cfg.sm = 90;
    hc_layer_meta m, mr;
    hc_layer_tensors post, ref;
    transform_ok(&L, &m, &post);
    transform_ok(&R, &mr, &ref);
    assert_true(m.use_flat_weight && mr.use_flat_weight);
    assert_int_equal(post.weight.nbytes, ref.weight.nbytes);
    const uint32_t *x = post.weight.data, *y = ref.weight.data;
    for (size_t i = 0; i < post.weight.nbytes / 4; i++) assert_int_equal(x[i], y[i] ^ mask);
    char *js = hc_layer_config_json(&L.cfg, &m, 0, 0, 0);
    assert_non_null(strstr(js, hc_format_get(w)->bits == 8 ? "\"b_dtype\":\"int8\"" : "\"b_dtype\":\"int4\""));
    free(js);
    hc_layer_tensors_free(&post);
    hc_layer_tensors_free(&ref);
    hc_layer_tensors_free(&L.pre);
}

static void test_flat_signed(void **state)
{
    (void)state;
    check_flat_flip(HC_FMT_UINT8, HC_FMT_INT8, HC_FMT_F8E4M3, HC_FMT_F8E4M3, 90, 0x80808080u);
    /* W4A4 runs on sm75-sm89 only: against int4 x int8 (its ldmatrix flip is the same) */
    check_flat_flip(HC_FMT_UINT4, HC_FMT_INT4, HC_FMT_UINT4, HC_FMT_INT8, 80, 0u);
}

/* sm89 fp16 x fp8 weights (use_native_dequant): the bytes of each word in
 * code order; the tiled words put codes 0,1,2,3 in bytes 0,2,1,3. */
static void test_native_dequant(void **state)
{
    (void)state;
    layer L = {.cfg = base_cfg(HC_FMT_F8E4M3, HC_FMT_F16, HC_FMT_F16, 0), .E = 1, .N = 256, .K = 256};
    L.cfg.sm = 89;
    make_layer(&L, 0, 0);
    layer R = L;
    R.cfg.sm = 90;
    hc_layer_meta m, mr;
    hc_layer_tensors post, ref;
    transform_ok(&L, &m, &post);
    transform_ok(&R, &mr, &ref);
    assert_true(m.use_native_dequant && !mr.use_native_dequant);
    const uint8_t *x = post.weight.data, *y = ref.weight.data;
    static const int swap[4] = {0, 2, 1, 3};
    for (size_t i = 0; i < post.weight.nbytes; i++) assert_int_equal(x[i], y[i / 4 * 4 + swap[i % 4]]);
    /* bf16 on sm89 and fp16 on sm80 interleave as sm90 does */
    L.cfg.sm = 80;
    assert_int_equal(hc_layer_plan(&L.cfg, 0, 1, 256, 256, &m, NULL), HC_OK);
    assert_false(m.use_native_dequant);
    hc_layer_tensors_free(&post);
    hc_layer_tensors_free(&ref);
    hc_layer_tensors_free(&L.pre);
}

/* MXFP4 in an fp16 model: the bf16 model's scale bytes (golden-verified
 * layout) through pack_e8m0_scale_for_fp16, padded rows (1.0) included. */
static void test_e8m0_fp16(void **state)
{
    (void)state;
    layer L = {.cfg = base_cfg(HC_FMT_F4E2M1, HC_FMT_F16, HC_FMT_F16, 32), .E = 1, .N = 100, .K = 256};
    L.cfg.scale_format = HC_FMT_F8E8M0;
    make_layer(&L, 0, 0);
    uint8_t *s = L.pre.weight_scale.data; /* the clamps: 2^-16, 2^-15, 2^-14, 2^15, 2^16, NaN */
    const uint8_t edge[6] = {111, 112, 113, 142, 143, 255};
    memcpy(s, edge, 6);
    layer R = L;
    R.cfg.act_format = R.cfg.param_format = HC_FMT_BF16;
    hc_layer_meta m, mr;
    hc_layer_tensors post, ref;
    transform_ok(&L, &m, &post);
    transform_ok(&R, &mr, &ref);
    assert_true(m.e8m0_as_e5m0 && !mr.e8m0_as_e5m0);
    const uint8_t *x = post.weight_scale.data, *y = ref.weight_scale.data;
    int seen[6] = {0};
    for (size_t i = 0; i < post.weight_scale.nbytes; i++) {
        int e = (int)y[i] - 112;
        assert_int_equal(x[i], (e < 0 ? 0 : e > 30 ? 30 : e) << 3);
        for (int j = 0; j < 6; j++) seen[j] += y[i] == edge[j];
    }
    for (int j = 0; j < 6; j++) assert_true(seen[j] > 0);
    assert_memory_equal(post.weight.data, ref.weight.data, post.weight.nbytes);
    hc_layer_tensors_free(&post);
    hc_layer_tensors_free(&ref);
    hc_layer_tensors_free(&L.pre);
}

/* Bias: the channel-scale permutation (perm32, golden-verified); float zero
 * points: the group-scale permutation (perm64). */
static void test_bias_and_float_zero_point(void **state)
{
    (void)state;
    layer L = {.cfg = base_cfg(HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F16, 128), .E = 1, .N = 300, .K = 256};
    L.cfg.has_zero_point = L.cfg.is_fp_zero_point = 1;
    make_layer(&L, 1, 0);
    hc_layer_meta m, mr;
    hc_layer_tensors post, ref;
    transform_ok(&L, &m, &post);
    layer R = L; /* channel scales holding the bias, group scales holding the zero points */
    R.cfg = base_cfg(HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F16, 0);
    R.pre = (hc_layer_tensors){.weight = L.pre.weight, .weight_scale = L.pre.bias};
    R.pre.weight_scale.ndim = 2, R.pre.weight_scale.shape[1] = 1;
    transform_ok(&R, &mr, &ref);
    assert_int_equal(post.bias.nbytes, ref.weight_scale.nbytes);
    assert_memory_equal(post.bias.data, ref.weight_scale.data, post.bias.nbytes);
    hc_layer_tensors_free(&ref);
    R.cfg = base_cfg(HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F16, 128);
    R.pre = (hc_layer_tensors){.weight = L.pre.weight, .weight_scale = L.pre.zero_point};
    transform_ok(&R, &mr, &ref);
    assert_int_equal(post.zero_point.nbytes, ref.weight_scale.nbytes);
    assert_memory_equal(post.zero_point.data, ref.weight_scale.data, post.zero_point.nbytes);
    assert_int_equal(post.bias.shape[0], 512);
    hc_layer_tensors_free(&ref);
    hc_layer_tensors_free(&post);
    hc_layer_tensors_free(&L.pre);
}

/* Tensor t's expert-e slice as a dense tensor (borrowed). */
static hc_tensor slice(const hc_tensor *t, int64_t E, int64_t e)
{
    hc_tensor s = *t;
    s.owned = 0;
    s.nbytes /= (size_t)E;
    s.data = (unsigned char *)t->data + (size_t)e * s.nbytes;
    if (t->ndim > 1) {
        s.ndim--;
        memmove(s.shape, s.shape + 1, (size_t)s.ndim * sizeof s.shape[0]);
    }
    return s;
}

/* A per-channel second scale (E?, N) in the layer dtype, random, positive. */
static void add_channel_scale_2(layer *L)
{
    L->cfg.scale_2_channel = 1;
    alloc3(&L->pre.global_scale, hc_dtype_of_format(L->cfg.param_format), L, L->N, 0);
    uint16_t *g = L->pre.global_scale.data;
    for (size_t i = 0; i < L->pre.global_scale.nbytes / 2; i++) g[i] = (uint16_t)(0x3a00 + rnd() % 0x500);
}

/* A MoE stack equals its experts transformed one by one as dense layers,
 * integer zero points (E, G, Np*zb/32) included, and 8-bit activations. */
static void check_moe_slices(hc_format_id w, hc_format_id a, int zp, int with_bias, int s2)
{
    layer L = {.cfg = base_cfg(w, a, HC_FMT_BF16, 128), .moe = 1, .E = 3, .N = 96, .K = 256};
    L.cfg.has_zero_point = zp;
    make_layer(&L, with_bias, 0);
    if (s2) add_channel_scale_2(&L);
    hc_layer_meta m;
    hc_layer_tensors post;
    transform_ok(&L, &m, &post);
    if (zp) assert_int_equal(post.zero_point.ndim, 3);
    for (int64_t e = 0; e < L.E; e++) {
        layer D = {.cfg = L.cfg, .E = 1, .N = L.N, .K = L.K};
        hc_tensor *src[5] = {&L.pre.weight, &L.pre.weight_scale, &L.pre.zero_point,
                             &L.pre.global_scale, &L.pre.bias};
        hc_tensor *dst[5] = {&D.pre.weight, &D.pre.weight_scale, &D.pre.zero_point,
                             &D.pre.global_scale, &D.pre.bias};
        for (int r = 0; r < 5; r++)
            if (src[r]->data) *dst[r] = slice(src[r], L.E, e);
        hc_layer_meta md;
        hc_layer_tensors one;
        transform_ok(&D, &md, &one);
        hc_tensor *got[5] = {&post.weight, &post.weight_scale, &post.zero_point,
                             &post.global_scale, &post.bias};
        hc_tensor *want[5] = {&one.weight, &one.weight_scale, &one.zero_point,
                              &one.global_scale, &one.bias};
        for (int r = 0; r < 5; r++) {
            assert_int_equal(got[r]->data != NULL, want[r]->data != NULL);
            if (!want[r]->data) continue;
            hc_tensor g = slice(got[r], L.E, e);
            assert_int_equal(g.nbytes, want[r]->nbytes);
            assert_memory_equal(g.data, want[r]->data, g.nbytes);
        }
        hc_layer_tensors_free(&one);
    }
    hc_layer_tensors_free(&post);
    hc_layer_tensors_free(&L.pre);
}

static void test_moe_stacks(void **state)
{
    (void)state;
    check_moe_slices(HC_FMT_UINT4, HC_FMT_BF16, 1, 1, 0);
    check_moe_slices(HC_FMT_UINT8, HC_FMT_BF16, 1, 0, 0);  /* int->fp with zero points */
    check_moe_slices(HC_FMT_UINT4, HC_FMT_F8E4M3, 0, 0, 0); /* packed-K */
    check_moe_slices(HC_FMT_UINT4, HC_FMT_INT8, 0, 0, 0);   /* flat */
    check_moe_slices(HC_FMT_UINT4, HC_FMT_BF16, 0, 1, 1);  /* per-channel second scale */
}

/* A per-channel second scale (weight_scale_2_type channel): padded with
 * zeros to Np and permuted as transform_humming_bias permutes a bias, in the
 * layer dtype; the LayerConfig says "channel"; only with group scales, and
 * only in the layer dtype. */
static void test_channel_scale_2(void **state)
{
    (void)state;
    layer L = {.cfg = base_cfg(HC_FMT_F4E2M1, HC_FMT_BF16, HC_FMT_BF16, 16), .E = 1, .N = 96,
               .K = 256};
    L.cfg.scale_format = HC_FMT_F8E4M3;
    make_layer(&L, 0, 0);
    add_channel_scale_2(&L);
    L.pre.bias = L.pre.global_scale; /* the same values as a bias: the same permutation */
    L.pre.bias.owned = 0;
    hc_layer_meta m;
    hc_layer_tensors post;
    transform_ok(&L, &m, &post);
    assert_int_equal(post.global_scale.dtype, HC_DT_BF16);
    assert_int_equal(post.global_scale.ndim, 1);
    assert_int_equal(post.global_scale.shape[0], 256);
    assert_memory_equal(post.global_scale.data, post.bias.data, post.bias.nbytes);
    static const int base32[8] = {0, 1, 8, 9, 16, 17, 24, 25};
    const uint16_t *got = post.global_scale.data, *in = L.pre.global_scale.data;
    for (int r = 0; r < 256; r++) {
        int src = r / 32 * 32 + base32[r % 32 % 8] + 2 * (r % 32 / 8);
        assert_int_equal(got[r], src < 96 ? in[src] : 0);
    }
    char *js = hc_layer_config_json(&L.cfg, &m, 1, 1, 0);
    assert_non_null(strstr(js, "\"weight_scale_2_type\":\"channel\""));
    free(js);
    hc_layer_tensors_free(&post);
    /* the canonical plan takes it too; neither takes it beside channel scales */
    hc_layer_config c = L.cfg;
    c.version = HC_HUMMING_CANONICAL;
    assert_int_equal(hc_layer_plan(&c, 0, 1, 96, 256, &m, NULL), HC_OK);
    hc_error err = {0};
    for (int v = 0; v < 2; v++) {
        c.version = v ? HC_HUMMING_CANONICAL : HC_HUMMING_0_1_19;
        c.scale_type = HC_SCALE_CHANNEL, c.group_size = 0;
        assert_int_equal(hc_layer_plan(&c, 0, 1, 96, 256, &m, &err), HC_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, "needs group scales"));
        c.scale_type = HC_SCALE_GROUP, c.group_size = 16;
    }
    /* a float32 one is refused by role */
    L.pre.bias = (hc_tensor){0};
    hc_tensor f32;
    int64_t n = 96;
    assert_int_equal(hc_tensor_alloc(&f32, HC_DT_F32, 1, &n, NULL), HC_OK);
    hc_tensor_free(&L.pre.global_scale);
    L.pre.global_scale = f32;
    assert_int_equal(transform(&L, &m, &post, &err), HC_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "weight_scale_2"));
    hc_layer_tensors_free(&L.pre);
}

/* Expert codes 1..15: vLLM's MoE path recodes them sign-magnitude
 * (|c - 8| | (c < 8) << 3), which the repack takes as float codes. */
static void test_moe_e0m(void **state)
{
    (void)state;
    layer L = {.cfg = base_cfg(HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_BF16, 128), .moe = 1, .E = 2,
               .N = 256, .K = 256};
    make_layer(&L, 0, 1);
    hc_layer_meta m;
    hc_layer_tensors post;
    transform_ok(&L, &m, &post);
    assert_true(post.weight_e0m);
    size_t nw = L.pre.weight.nbytes / 4;
    uint32_t *sm = calloc(nw, 4), *want = calloc(nw, 4);
    assert_true(sm && want);
    const uint32_t *w = L.pre.weight.data;
    for (size_t i = 0; i < nw * 8; i++) {
        uint32_t c = (w[i / 8] >> (4 * (i % 8))) & 15, v = c >= 8 ? c - 8 : (8 - c) | 8;
        sm[i / 8] |= v << (4 * (i % 8));
    }
    hc_repack_params p = {.bits = 4, .act_bits = 16, .E = 2, .N = 256, .K = 256};
    assert_int_equal(hc_repack_weight(&p, sm, want, NULL), HC_OK);
    assert_memory_equal(post.weight.data, want, nw * 4);
    char *js = hc_layer_config_json(&L.cfg, &m, 0, 0, post.weight_e0m);
    assert_non_null(strstr(js, "\"b_dtype\":\"float4e0m3\""));
    free(js);
    hc_layer_tensors_free(&post);
    /* integer activations turn the codes back: nothing changes; a code 0 keeps them */
    L.cfg.act_format = HC_FMT_INT8;
    transform_ok(&L, &m, &post);
    assert_false(post.weight_e0m);
    hc_layer_tensors_free(&post);
    L.cfg.act_format = HC_FMT_BF16;
    ((uint32_t *)L.pre.weight.data)[5] &= ~0xf0u;
    transform_ok(&L, &m, &post);
    assert_false(post.weight_e0m);
    hc_layer_tensors_free(&post);
    free(sm);
    free(want);
    hc_layer_tensors_free(&L.pre);
}

/* What 0.1.19 does not do, or we do not yet: refused with the reason. */
static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        hc_format_id w, a, s, param;
        int64_t gs;
        int sm;
        const char *why;
    } bad[] = {
        {HC_FMT_F4E2M1, HC_FMT_F8E4M3, HC_FMT_F8E8M0, HC_FMT_BF16, 64, 90, "need group size 32"},
        {HC_FMT_F4E2M1, HC_FMT_INT8, HC_FMT_F8E8M0, HC_FMT_BF16, 128, 90, "need group size 32"},
        {HC_FMT_F4E2M1, HC_FMT_INT8, HC_FMT_F8E4M3, HC_FMT_BF16, 32, 90, "integer activations"},
        {HC_FMT_UINT4, HC_FMT_INT4, HC_FMT_BF16, HC_FMT_BF16, 0, 90, "sm75-sm89 only"},
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_BF16, HC_FMT_BF16, 128, 110, "sm100 and sm120"},
        {HC_FMT_F8E4M3, HC_FMT_BF16, HC_FMT_BF16, HC_FMT_BF16, 0, 120, "NVRTC >= 13.2"},
        {HC_FMT_F4E2M1, HC_FMT_BF16, HC_FMT_F8E8M0, HC_FMT_BF16, 32, 100, "NVRTC >= 13.2"},
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_F16, HC_FMT_BF16, 128, 90, "must be the activation dtype"},
        {HC_FMT_UINT8, HC_FMT_F8E4M3, HC_FMT_BF16, HC_FMT_BF16, 0, 90, "supported up to"},
        {HC_FMT_UINT4, HC_FMT_F8E4M3, HC_FMT_BF16, HC_FMT_BF16, 16, 90, "smallest is 32"},
        {HC_FMT_F8E4M3, HC_FMT_F8E4M3, HC_FMT_BF16, HC_FMT_BF16, 0, 80, "need sm >= 89"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hc_layer_config c = base_cfg(bad[i].w, bad[i].a, bad[i].param, bad[i].gs);
        c.scale_format = bad[i].s, c.sm = bad[i].sm;
        hc_layer_meta m;
        hc_error err = {0};
        assert_int_not_equal(hc_layer_plan(&c, 0, 1, 256, 512, &m, &err), HC_OK);
        if (strstr(err.msg, bad[i].why) == NULL) fail_msg("case %zu: %s", i, err.msg);
    }
    /* a second scale next to block scales */
    layer L = {.cfg = base_cfg(HC_FMT_F8E4M3, HC_FMT_BF16, HC_FMT_BF16, 128), .E = 1, .N = 256, .K = 256};
    L.cfg.scale_type = HC_SCALE_BLOCK, L.cfg.group_size_n = 128, L.cfg.scale_format = HC_FMT_F32;
    make_layer(&L, 0, 0);
    int64_t one = 1;
    assert_int_equal(hc_tensor_alloc(&L.pre.global_scale, HC_DT_F32, 1, &one, NULL), HC_OK);
    hc_layer_meta m;
    hc_layer_tensors post;
    hc_error err = {0};
    assert_int_equal(transform(&L, &m, &post, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "second scale"));
    hc_layer_tensors_free(&L.pre);
}

/* fp4 code (sign, magnitude in half units 0,1,2,3,4,6,8,12) divided by 2^d
 * and rounded to the nearest fp4 value, ties away from zero, the sign kept
 * (also on a zero): the exact arithmetic process_mxfp4_w4a8 does in floats. */
static uint32_t fold_ref(uint32_t code, int d)
{
    static const int half_units[8] = {0, 1, 2, 3, 4, 6, 8, 12};
    if (code == 8) code = 0;
    if (d == 0) return code;
    const double v = half_units[code & 7] / ldexp(1.0, d);
    int best = 0;
    for (int i = 1; i < 8; i++)
        if (fabs(half_units[i] - v) <= fabs(half_units[best] - v)) best = i;
    return (code & 8u) | (uint32_t)best;
}

/* Fused e8m0 (MXFP4 x fp8 / int8): the code folding against exact arithmetic,
 * and what 0.1.19's preprocessing cannot take (the layout itself is checked
 * bit for bit against Humming's vectors in test_layout_golden0119.c). */
static void test_fused_e8m0(void **state)
{
    (void)state;
    for (uint32_t c = 0; c < 16; c++)
        for (int d = 0; d <= 127; d++)
            if (hc_fp4_fold(c, d) != fold_ref(c, d)) fail_msg("fold %u by %d: %u, expected %u", c, d,
                                                            hc_fp4_fold(c, d), fold_ref(c, d));
    /* int8 activations with a per-tensor second scale */
    hc_layer_config c = base_cfg(HC_FMT_F4E2M1, HC_FMT_INT8, HC_FMT_BF16, 32);
    c.scale_format = HC_FMT_F8E8M0, c.scale_type = HC_SCALE_GROUP_TENSOR;
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&c, 0, 1, 256, 512, &m, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "per-tensor weight_scale_2"));
    /* a shift of 130: the preprocessing's scale factor would overflow */
    layer L = {.cfg = base_cfg(HC_FMT_F4E2M1, HC_FMT_F8E4M3, HC_FMT_BF16, 32), .E = 1, .N = 256, .K = 256};
    L.cfg.scale_format = HC_FMT_F8E8M0;
    make_layer(&L, 0, 0);
    uint8_t *s = L.pre.weight_scale.data;
    s[0] = 240, s[1] = 99; /* folded base 229 */
    hc_layer_tensors post;
    assert_int_equal(transform(&L, &m, &post, &err), HC_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "overflows"));
    s[1] = 120; /* the others lie in 110..139: shifts up to 119 */
    transform_ok(&L, &m, &post);
    assert_int_equal(m.use_fused_e8m0, 1);
    assert_int_equal(m.fused_split_sign, 1);
    assert_int_equal(m.scale2_channel, 0);
    hc_layer_tensors_free(&post);
    hc_layer_tensors_free(&L.pre);
    /* int8 activations: the plan makes the second scale per channel, which a
     * per-tensor input next to group scales cannot be */
    layer I = {.cfg = base_cfg(HC_FMT_F4E2M1, HC_FMT_INT8, HC_FMT_BF16, 32), .E = 1, .N = 256, .K = 256};
    I.cfg.scale_format = HC_FMT_F8E8M0;
    make_layer(&I, 0, 0);
    int64_t one = 1;
    assert_int_equal(hc_tensor_alloc(&I.pre.global_scale, HC_DT_F32, 1, &one, NULL), HC_OK);
    *(float *)I.pre.global_scale.data = 2.0f;
    assert_int_equal(transform(&I, &m, &post, &err), HC_ERR_UNSUPPORTED);
    assert_int_equal(m.scale2_channel, 1);
    assert_non_null(strstr(err.msg, "per-channel second scale"));
    hc_layer_tensors_free(&I.pre);
}

/* vLLM's padding and the LayerConfig record of an odd shape. */
static void test_padding_record(void **state)
{
    (void)state;
    layer L = {.cfg = base_cfg(HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_BF16, 64), .E = 1, .N = 300, .K = 192};
    hc_layer_meta m;
    assert_int_equal(hc_layer_plan(&L.cfg, 0, 1, L.N, L.K, &m, NULL), HC_OK);
    assert_int_equal(m.Np, 512);
    assert_int_equal(m.Kp, 256);
    assert_int_equal(m.G, 4);
    char *js = hc_layer_config_json(&L.cfg, &m, 1, 0, 0);
    cJSON *o = cJSON_Parse(js);
    assert_int_equal(cJSON_GetObjectItem(o, "shape_n")->valueint, 512);
    assert_int_equal(cJSON_GetObjectItem(o, "pad_shape_n")->valueint, 212);
    assert_int_equal(cJSON_GetObjectItem(o, "pad_shape_k")->valueint, 64);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "has_bias")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "as_dtype")));
    assert_int_equal(cJSON_GetArraySize(o), 23); /* every LayerConfig field */
    cJSON_Delete(o);
    free(js);
}

/* 0.1.20's refusals (hc_humming_release_check): each kind of layer whose
 * tensors differ from 0.1.19's is refused for 0.1.20 only, naming the layer;
 * the same layers pass for 0.1.19 and without a release. */
static void test_release_0120(void **state)
{
    (void)state;
    hc_layer_config base = {.weight_format = HC_FMT_UINT4, .act_format = HC_FMT_F16,
                            .param_format = HC_FMT_F16, .scale_type = HC_SCALE_GROUP,
                            .group_size = 128, .sm = 90, .version = HC_HUMMING_0_1_19};
    hc_layer_meta m0;
    memset(&m0, 0, sizeof m0);
    struct { hc_layer_config c; hc_layer_meta m; const char *why; } k[4];
    for (int i = 0; i < 4; i++) k[i].c = base, k[i].m = m0, k[i].why = NULL;
    k[1].m.use_fused_e8m0 = 1, k[1].c.act_format = HC_FMT_F8E4M3, k[1].why = "MXFP4 weights with fp8";
    k[2].m.is_moe = 1, k[2].c.is_fp_zero_point = 1, k[2].c.has_zero_point = 1, k[2].why = "float zero point";
    k[3].c.group_size = 96, k[3].why = "into groups of 32";
    for (int i = 0; i < 4; i++) {
        hc_error err = {0};
        assert_int_equal(hc_humming_release_check("0.1.19", &k[i].c, &k[i].m, "L", &err), HC_OK);
        assert_int_equal(hc_humming_release_check(NULL, &k[i].c, &k[i].m, "L", &err), HC_OK);
        hc_status st = hc_humming_release_check("0.1.20", &k[i].c, &k[i].m, "layer.x", &err);
        if (k[i].why == NULL) {
            assert_int_equal(st, HC_OK);
            continue;
        }
        assert_int_equal(st, HC_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, k[i].why));
        assert_non_null(strstr(err.msg, "layer.x"));
    }
    /* fused e8m0 with int8 activations is the same in 0.1.20 */
    hc_error err = {0};
    k[1].c.act_format = HC_FMT_INT8;
    assert_int_equal(hc_humming_release_check("0.1.20", &k[1].c, &k[1].m, "L", &err), HC_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_k),        cmocka_unit_test(test_flat_signed),
        cmocka_unit_test(test_native_dequant),  cmocka_unit_test(test_e8m0_fp16),
        cmocka_unit_test(test_bias_and_float_zero_point), cmocka_unit_test(test_moe_stacks),
        cmocka_unit_test(test_moe_e0m),         cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_padding_record),  cmocka_unit_test(test_channel_scale_2),
        cmocka_unit_test(test_fused_e8m0),      cmocka_unit_test(test_release_0120),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
