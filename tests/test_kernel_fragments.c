/* test_kernel_fragments.c - the GPU kernels' element mapping and code values
 * (kernels/hc_kernels.h: hck_decode and what it calls, the very functions the
 * GEMM kernel runs), checked on the CPU so that CI without a GPU guards them.
 *
 * For every humming-kernels 0.1.19 path the tiles writer produces (tiled with
 * every weight width and compaction, zero points integer and float, the
 * int->fp preprocessing, packed-K with the mini-block transpose, native
 * dequant, flat W8A8 fp8 / int8, W4A4 and W4A8-int8, byte / e5m0 / block
 * scales, second scale, bias, MoE stacks with the e0m recoding, fused e8m0
 * with its split-sign slots and per-channel second scale), random
 * weights are quantized and transformed by the library, then every thread of
 * every kernel block decodes its values: each (n, k) of a block must be
 * written exactly once, with the bits of the verifier's decoder
 * (lib/verify/hc_verify_decode.c), and those must equal the canonical values
 * (hc_dequant_pre). The fp8 wgmma family's A operands (packed-K uint4 words
 * as its lanes load them, turned into e4m3 bytes; flat e4m3 bytes at the
 * offsets it copies) must give the same values. The number formats are
 * checked against the format table. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_gpu.h"
#include "hc_layout.h"
#include "hc_preset.h"
#include "hc_quant.h"
#include "hc_verify.h"
#include "../kernels/hc_kernels.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void)
{
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return ((rs >> 11) + 0.5) * 0x1.0p-53;
}
static double grand(void) { return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()); }

#define P_ HC_FMT_PARAM
#define ZN HC_TARGET_ZP_NONE
#define ZI HC_TARGET_ZP_INT
#define ZF HC_TARGET_ZP_FLOAT

typedef struct {
    const char *name;
    hc_target t;
    hc_format_id param;
    int sm, moe;
    int layout;  /* the HCK_L_* 0.1.19 must pick */
} kcase;

#define T(w, s, g, gn, zp, gl, act) {w, s, g, gn, zp, gl, act, HC_TARGET_RTN}
static const kcase cases[] = {
    {"uint4 g128 a16", T(HC_FMT_UINT4, P_, 128, 0, ZN, 0, P_), HC_FMT_F16, 90, 0, HCK_L_TILED},
    {"uint4 g128 zp a16", T(HC_FMT_UINT4, P_, 128, 0, ZI, 0, P_), HC_FMT_BF16, 80, 0, HCK_L_TILED},
    {"uint4 g64 float zp", T(HC_FMT_UINT4, P_, 64, 0, ZF, 0, P_), HC_FMT_F16, 90, 0, HCK_L_TILED},
    {"uint1 ch", T(HC_FMT_UINT1, P_, 0, 0, ZN, 0, P_), HC_FMT_F16, 80, 0, HCK_L_TILED},
    {"uint2 g64 zp", T(HC_FMT_UINT2, P_, 64, 0, ZI, 0, P_), HC_FMT_F16, 90, 0, HCK_L_TILED},
    {"uint3 g32 zp", T(HC_FMT_UINT3, P_, 32, 0, ZI, 0, P_), HC_FMT_BF16, 90, 0, HCK_L_TILED},
    {"uint5 ch zp", T(HC_FMT_UINT5, P_, 0, 0, ZI, 0, P_), HC_FMT_F16, 90, 0, HCK_L_TILED},
    {"uint6 g64", T(HC_FMT_UINT6, P_, 64, 0, ZN, 0, P_), HC_FMT_BF16, 90, 0, HCK_L_TILED},
    {"uint7 g128 zp int2fp", T(HC_FMT_UINT7, P_, 128, 0, ZI, 0, P_), HC_FMT_BF16, 90, 0, HCK_L_TILED},
    {"uint8 ch int2fp", T(HC_FMT_UINT8, P_, 0, 0, ZN, 0, P_), HC_FMT_BF16, 80, 0, HCK_L_TILED},
    {"uint3 g64 zp fp8", T(HC_FMT_UINT3, P_, 64, 0, ZI, 0, HC_FMT_F8E4M3), HC_FMT_F16, 89, 0, HCK_L_TILED},
    {"uint4 ch fp8", T(HC_FMT_UINT4, P_, 0, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_BF16, 90, 0, HCK_L_TILED},
    {"uint4 g128 fp8 packed-K", T(HC_FMT_UINT4, P_, 128, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_BF16, 90, 0,
     HCK_L_PACKED_K},
    {"uint2 g128 fp8 packed-K", T(HC_FMT_UINT2, P_, 128, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_F16, 90, 0,
     HCK_L_PACKED_K},
    {"uint4 g128 int8 packed-K", T(HC_FMT_UINT4, P_, 128, 0, ZI, 0, HC_FMT_INT8), HC_FMT_BF16, 90, 0,
     HCK_L_PACKED_K},
    {"e5m2 ch native", T(HC_FMT_F8E5M2, P_, 0, 0, ZN, 0, P_), HC_FMT_F16, 89, 0, HCK_L_TILED},
    {"e3m2 g32", T(HC_FMT_F6E3M2, P_, 32, 0, ZN, 0, P_), HC_FMT_BF16, 90, 0, HCK_L_TILED},
    {"e2m3 g64 e4m3 scale", T(HC_FMT_F6E2M3, HC_FMT_F8E4M3, 64, 0, ZN, 0, P_), HC_FMT_BF16, 90, 0,
     HCK_L_TILED},
    {"mxfp4 fp16 e5m0", T(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, P_), HC_FMT_F16, 90, 0, HCK_L_TILED},
    {"nvfp4 second scale", T(HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, 0, ZN, 1, P_), HC_FMT_BF16, 90, 0,
     HCK_L_TILED},
    {"W8A8 fp8 flat", T(HC_FMT_F8E4M3, P_, 0, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_BF16, 90, 0, HCK_L_FLAT},
    {"W8A8 fp8 block flat", T(HC_FMT_F8E4M3, HC_FMT_F32, 128, 128, ZN, 0, HC_FMT_F8E4M3), HC_FMT_BF16, 90,
     0, HCK_L_FLAT},
    {"W8A8 fp8 tensor flat", T(HC_FMT_F8E4M3, HC_FMT_F32, -1, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_F16, 90, 0,
     HCK_L_FLAT},
    {"W8A8 int8 flat", T(HC_FMT_INT8, P_, 0, 0, ZN, 0, HC_FMT_INT8), HC_FMT_F16, 80, 0, HCK_L_FLAT},
    {"W4A4 flat", T(HC_FMT_INT4, P_, 0, 0, ZN, 0, HC_FMT_INT4), HC_FMT_F16, 80, 0, HCK_L_FLAT},
    {"W4A8 int8 ldmatrix flat", T(HC_FMT_UINT4, P_, 0, 0, ZN, 0, HC_FMT_INT8), HC_FMT_BF16, 90, 0,
     HCK_L_FLAT},
    {"W2A4 ldmatrix flat", T(HC_FMT_UINT2, P_, 128, 0, ZN, 0, HC_FMT_INT4), HC_FMT_F16, 80, 0, HCK_L_FLAT},
    {"MoE uint4 g128 e0m", T(HC_FMT_UINT4, P_, 128, 0, ZN, 0, P_), HC_FMT_BF16, 90, 1, HCK_L_TILED},
    {"MoE uint4 zp fp8", T(HC_FMT_UINT4, P_, 128, 0, ZI, 0, HC_FMT_F8E4M3), HC_FMT_F16, 90, 1,
     HCK_L_PACKED_K},
    {"MoE W8A8 fp8 flat", T(HC_FMT_F8E4M3, P_, 0, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_BF16, 90, 1, HCK_L_FLAT},
    {"MXFP4 x fp8 fused e8m0", T(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_BF16,
     90, 0, HCK_L_TILED},
    {"MXFP4 x int8 fused e8m0", T(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_INT8), HC_FMT_F16, 90,
     0, HCK_L_TILED},
    {"MoE MXFP4 x fp8 fused", T(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_F8E4M3), HC_FMT_F16,
     89, 1, HCK_L_TILED},
    {"MoE MXFP4 x int8 fused", T(HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_INT8), HC_FMT_BF16, 80,
     1, HCK_L_TILED},
};
#undef T

static hc_format_id stored_format(hc_format_id f)
{
    const hc_format_info *fi = hc_format_get(f);
    return fi->kind == HC_KIND_INT ? (hc_format_id)(HC_FMT_UINT1 + fi->bits - 1) : f;
}

static void tensor_from(hc_tensor *t, hc_dtype dt, int moe, int64_t E, int64_t a, int64_t b,
                        const void *src)
{
    int64_t s3[3] = {E, a, b};
    assert_int_equal(hc_tensor_alloc(t, dt, moe ? 3 : 2, moe ? s3 : s3 + 1, NULL), HC_OK);
    memcpy(t->data, src, t->nbytes);
}

/* Random weights through the library's quantizer into the pre form, with a bias. */
static void make_pre(const hc_target *t, const hc_layer_config *c, int moe, int64_t E, int64_t N,
                     int64_t K, hc_layer_tensors *pre)
{
    memset(pre, 0, sizeof *pre);
    hc_quant_desc d = {.weight_format = t->weight_format, .scale_format = t->scale_format,
                       .group_size = t->group_size > 0 ? (int)t->group_size
                                     : t->group_size == 0 ? HC_QUANT_GROUP_CHANNEL
                                                          : HC_QUANT_GROUP_TENSOR,
                       .group_size_n = (int)t->group_size_n,
                       .zero_point = t->zero_point == ZI ? HC_ZP_INT
                                     : t->zero_point == ZF ? HC_ZP_FLOAT : HC_ZP_NONE,
                       .global_scale = t->global_scale, .quantizer = HC_QUANTIZER_RTN};
    float *w = malloc((size_t)(E * N * K) * sizeof *w);
    assert_non_null(w);
    /* fused e8m0 (MXFP4 x 8-bit): groups of 32 spread over 17 exponents, so the
     * folding shifts codes */
    const int spread = t->weight_format == HC_FMT_F4E2M1 && hc_format_get(t->activation)->bits == 8;
    for (int64_t i = 0; i < E * N * K; i++)
        w[i] = (float)(0.05 * grand() * (spread ? ldexp(1.0, (int)((i / 32) * 7 % 17) - 8) : 1.0));
    hc_quant_result r;
    hc_error err = {0};
    if (hc_quantize(&d, w, E, N, K, &r, &err) != HC_OK) fail_msg("quantize: %s", err.msg);
    free(w);
    int64_t NS = r.group_rows, G = r.groups, b = r.bits;
    tensor_from(&pre->weight, HC_DT_I32, moe, E, N, K * b / 32, r.codes);
    if (r.scales)
        tensor_from(&pre->weight_scale, hc_dtype_of_format(t->scale_format), moe, E, NS, G, r.scales);
    if (r.zero_points) tensor_from(&pre->zero_point, HC_DT_I32, moe, E, NS * b / 32, G, r.zero_points);
    if (r.zero_points_f)
        tensor_from(&pre->zero_point, hc_dtype_of_format(r.zp_float_format), moe, E, NS, G, r.zero_points_f);
    if (r.global_scale) {
        int64_t ge = E;
        assert_int_equal(hc_tensor_alloc(&pre->global_scale, HC_DT_F32, 1, &ge, NULL), HC_OK);
        memcpy(pre->global_scale.data, r.global_scale, (size_t)E * 4);
    }
    int64_t bs[2] = {E, N};
    assert_int_equal(hc_tensor_alloc(&pre->bias, hc_dtype_of_format(c->param_format), moe ? 2 : 1,
                                     moe ? bs : bs + 1, NULL), HC_OK);
    uint16_t *bb = pre->bias.data;
    for (int64_t i = 0; i < E * N; i++)
        bb[i] = c->param_format == HC_FMT_BF16 ? hc_f32_to_bf16((float)grand()) : hc_f32_to_f16((float)grand());
    hc_quant_result_free(&r);
}

/* Symmetric codes with none at 0 (b divides 32 here): vLLM's MoE path then
 * recodes them as float{b}e0m{b-1}. */
static void lift_zero_codes(hc_tensor *w, int b)
{
    uint32_t *words = w->data;
    for (size_t i = 0; i < w->nbytes / 4; i++)
        for (int s = 0; s < 32; s += b)
            if (((words[i] >> s) & ((1u << b) - 1)) == 0) words[i] |= 1u << s;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Every block (e, n0, k0) decoded by its 128 threads vs the library's decode W. */
static int64_t check_blocks(const hck_desc *d, const hck_ptrs *p, const float *W)
{
    int64_t bad = 0;
    unsigned char seen[HCK_BLOCK_K * HCK_BLOCK_N];
    for (int64_t e = 0; e < d->E; e++)
        for (int64_t n0 = 0; n0 < d->Np; n0 += HCK_BLOCK_N)
            for (int64_t k0 = 0; k0 < d->Kp; k0 += HCK_BLOCK_K) {
                memset(seen, 0, sizeof seen);
                for (int t = 0; t < HCK_THREADS; t++) {
                    float val[HCK_LANE_VALUES];
                    int at[HCK_LANE_VALUES];
                    hck_decode(d, p, e, n0, k0, t, val, at);
                    for (int i = 0; i < HCK_LANE_VALUES; i++) {
                        if (at[i] < 0 || at[i] >= HCK_BLOCK_K * HCK_BLOCK_N || seen[at[i]]++) {
                            bad++;
                            continue;
                        }
                        const int64_t n = n0 + at[i] % HCK_BLOCK_N, k = k0 + at[i] / HCK_BLOCK_N;
                        bad += bits_of(val[i]) != bits_of(W[(e * d->Np + n) * d->Kp + k]);
                    }
                }
            }
    return bad;
}

/* The wgmma families' A operands (kernels/hck_wg8.cu, hck_wg8pk.cu,
 * hck_wg16.cu), against the library's decode W: packed-K uint4 int->fp words
 * as the lanes load them (hck_pk_lane_word) turned into e4m3 bytes (hck_nib_e4m3) of value / 512
 * and into the small-M family's fp16 codes (hck_pk16_word, hck_pk16_shift),
 * flat e4m3 bytes at the unswizzled core-matrix offsets the kernel copies
 * (hck_flat8_unit), and tiled uint4 x 16-bit codes at the A-fragment
 * positions of hck_wg16_lane_word / hck_wg16_shift. Returns mismatches; *count: values checked (0 where the
 * family does not take the layer). */
static int64_t check_wg_operands(const hck_desc *d, const hck_ptrs *p, const float *W, int64_t *count)
{
    int64_t bad = 0;
    *count = 0;
    const double gl = d->global_count ? (double)p->gl[0] : 1.0;
    if (d->layout == HCK_L_PACKED_K && d->wbits == 4 && d->wkind == HCK_W_INT2FP && !d->zp_in_repack &&
        d->act_quant == HCK_A_E4M3) {
        for (int64_t e = 0; e < d->E; e++)
            for (int64_t s = 0; s < d->Kp / 64; s++)
                for (int nb = 0; nb < (int)(d->Np / 64); nb++)
                    for (int w = 0; w < 4; w++)
                        for (int lane = 0; lane < 32; lane++)
                            for (int q = 0; q < 4; q++) {
                                const uint32_t wd = p->w[hck_pk_lane_word(d->Np, d->Kp, e, nb, w, lane) +
                                                         s * d->Np * 8 + q];
                                const uint32_t w16 = hck_pk16_word(wd); /* the small-M family's fp16 form */
                                for (int r = 0; r < 4; r++)
                                    for (int h = 0; h < 2; h++) {
                                        const int64_t n = 64 * nb + 16 * w + lane / 4 + 8 * (r % 2);
                                        const int64_t k = 64 * s + 16 * q + 4 * (lane % 4) + 2 * (r / 2) + h;
                                        const double v = (double)((w16 >> hck_pk16_shift(r, h)) & 15u) - 8.0;
                                        const float x = (float)(v * hck_scale(d, p, e, n, k, k / d->group_size) * gl);
                                        bad += bits_of(x) != bits_of(W[(e * d->Np + n) * d->Kp + k]);
                                        (*count)++;
                                    }
                                for (int hi = 0; hi < 2; hi++) {
                                    const uint32_t by = hck_nib_e4m3((wd >> (4 * hi)) & 0x0f0f0f0fu);
                                    for (int j = 0; j < 4; j++) {
                                        const int64_t n = 64 * nb + 16 * w + lane / 4 + 8 * hi;
                                        const int64_t k = 64 * s + 16 * q + 4 * (lane % 4) + j;
                                        const double v = hck_float_code(HC_FMT_F8E4M3, (by >> (8 * j)) & 0xffu) * 512.0;
                                        const float x = (float)(v * hck_scale(d, p, e, n, k, k / d->group_size) * gl);
                                        bad += bits_of(x) != bits_of(W[(e * d->Np + n) * d->Kp + k]);
                                        (*count)++;
                                    }
                                }
                            }
    } else if (d->layout == HCK_L_TILED && d->abits == 16 && d->wbits == 4 && d->wkind == HCK_W_UINT &&
               d->zp_kind == HCK_Z_NONE && !d->transposed && !d->native_dequant) {
        for (int64_t e = 0; e < d->E; e++)
            for (int64_t kb = 0; kb < d->Kp / 16; kb++)
                for (int nb = 0; nb < (int)(d->Np / 64); nb++)
                    for (int w = 0; w < 4; w++)
                        for (int lane = 0; lane < 32; lane++) {
                            const uint32_t wd = p->w[hck_wg16_lane_word(d->Np, d->Kp, e, nb, lane) + kb * 2 * d->Np + w];
                            for (int r = 0; r < 4; r++)
                                for (int h = 0; h < 2; h++) {
                                    const int64_t n = 64 * nb + 16 * w + lane / 4 + 8 * (r % 2);
                                    const int64_t k = 16 * kb + 2 * (lane % 4) + 8 * (r / 2) + h;
                                    const uint32_t c = (wd >> hck_wg16_shift(r, h)) & 15u;
                                    bad += bits_of(hck_weight(d, p, c, e, n, k)) != bits_of(W[(e * d->Np + n) * d->Kp + k]);
                                    (*count)++;
                                }
                        }
    } else if (d->layout == HCK_L_FLAT && d->wkind == HCK_W_FLOAT && d->weight_format == HC_FMT_F8E4M3) {
        const uint8_t *w8 = (const uint8_t *)(const void *)p->w;
        for (int64_t e = 0; e < d->E; e++)
            for (int64_t n = 0; n < d->Np; n++)
                for (int64_t k = 0; k < d->Kp; k++) {
                    const uint8_t c = w8[hck_flat8_unit(d->Np, d->Kp, e, n) + (k / 16) * d->Np * 16 + k % 16];
                    bad += bits_of(hck_weight(d, p, c, e, n, k)) != bits_of(W[(e * d->Np + n) * d->Kp + k]);
                    (*count)++;
                }
    }
    return bad;
}

/* Checks one case; returns how many wgmma operand values it checked. */
static int64_t run_case(const kcase *kc)
{
    hc_target t = hc_target_resolve(kc->t, kc->param);
    hc_layer_config c = {
        .weight_format = stored_format(t.weight_format), .scale_format = t.scale_format,
        .act_format = t.activation, .param_format = kc->param,
        .scale_type = t.group_size_n > 1 ? HC_SCALE_BLOCK
                      : t.group_size < 0 ? HC_SCALE_TENSOR
                      : t.global_scale   ? HC_SCALE_GROUP_TENSOR
                      : t.group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP,
        .group_size = t.group_size > 0 ? t.group_size : 0, .group_size_n = t.group_size_n,
        .has_zero_point = t.zero_point != ZN, .is_fp_zero_point = t.zero_point == ZF, .sm = kc->sm,
        .version = HC_HUMMING_0_1_19};
    /* N and K that need padding (N to 256, K to 128) where the groups allow it */
    const int64_t E = kc->moe ? 2 : 1, N = t.group_size_n > 1 ? 2 * t.group_size_n : 224;
    const int64_t K = t.group_size >= 128 ? 2 * t.group_size : 320;
    hc_layer_meta m;
    hc_error err = {0};
    if (hc_layer_plan(&c, kc->moe, E, N, K, &m, &err) != HC_OK) fail_msg("%s: plan: %s", kc->name, err.msg);
    hc_layer_tensors pre, post;
    memset(&post, 0, sizeof post);
    make_pre(&t, &c, kc->moe, E, N, K, &pre);
    const int e0m = kc->moe && !c.has_zero_point && hc_format_get(c.act_format)->kind == HC_KIND_FLOAT &&
                    hc_format_get(c.weight_format)->kind == HC_KIND_UINT;
    if (e0m) lift_zero_codes(&pre.weight, hc_format_get(c.weight_format)->bits);
    if (hc_layer_transform(&c, &m, &pre, &post, &err) != HC_OK) fail_msg("%s: transform: %s", kc->name, err.msg);
    hck_desc d;
    hc_gpu_describe(&c, &m, &post, &d);
    assert_int_equal(d.layout, kc->layout);
    const hck_ptrs p = {d.weight, d.scale, d.zero, d.global, d.bias};
    float *W = calloc((size_t)(E * m.Np * m.Kp), sizeof *W), *R = calloc((size_t)(E * N * K), sizeof *R);
    float *bias = calloc((size_t)(E * m.Np), sizeof *bias), *rb = calloc((size_t)(E * N), sizeof *rb);
    assert_true(W && R && bias && rb);
    if (hc_verify_decode(&c, &m, &post, W, bias, &err) != HC_OK) fail_msg("%s: decode: %s", kc->name, err.msg);
    if (hc_dequant_pre(&c, &m, &pre, R, rb, &err) != HC_OK) fail_msg("%s: dequant: %s", kc->name, err.msg);
    int64_t bad = check_blocks(&d, &p, W), canon = 0, bbad = 0, wgn = 0;
    const int64_t wgbad = check_wg_operands(&d, &p, W, &wgn);
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < m.Np; n++) {
            bbad += bits_of(hck_bias(&d, &p, e, n)) != bits_of(bias[e * m.Np + n]);
            for (int64_t k = 0; n < N && k < K; k++)
                canon += W[(e * m.Np + n) * m.Kp + k] != R[(e * N + n) * K + k];
        }
    printf("%-26s %-8s layout %d wkind %d scale %d zp %d e0m %d: %lld mapping/value mismatches, %lld vs "
           "canonical, %lld bias, %lld of %lld wgmma operand values\n", kc->name, hc_layout_variant_name(&m),
           d.layout, d.wkind, d.scale_kind, d.zp_kind, post.weight_e0m, (long long)bad, (long long)canon,
           (long long)bbad, (long long)wgbad, (long long)wgn);
    if (e0m) assert_int_equal(d.wkind, HCK_W_E0M);
    assert_int_equal(bad, 0);
    /* the fused-e8m0 folding re-rounds codes (tests/test_layout_golden0119.c
     * bounds that against Humming's own vectors) */
    if (!m.use_fused_e8m0) assert_int_equal(canon, 0);
    assert_int_equal(bbad, 0);
    assert_int_equal(wgbad, 0);
    /* every value once per operand form: packed-K has two (e4m3, fp16) */
    assert_true(wgn == 0 || wgn == (d.layout == HCK_L_PACKED_K ? 2 : 1) * E * m.Np * m.Kp);
    free(W), free(R), free(bias), free(rb);
    hc_layer_tensors_free(&pre);
    hc_layer_tensors_free(&post);
    return wgn;
}

static void test_layouts(void **st)
{
    (void)st;
    int64_t wg[3] = {0, 0, 0}; /* wgmma operand values checked per layout */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) wg[cases[i].layout] += run_case(&cases[i]);
    assert_true(wg[HCK_L_TILED] > 0 && wg[HCK_L_PACKED_K] > 0 && wg[HCK_L_FLAT] > 0);
}

/* hck_float_code equals the format table's value for every finite code of
 * every float format; hck_half for every finite fp16 and bf16 value. */
static void test_number_formats(void **st)
{
    (void)st;
    int64_t bad = 0, n = 0;
    for (int f = 0; f < HC_FMT_COUNT; f++) {
        const hc_format_info *fi = hc_format_get((hc_format_id)f);
        if (fi->kind != HC_KIND_FLOAT || fi->bits > 8) continue;
        for (uint32_t c = 0; c < (1u << fi->bits); c++) {
            const double v = hc_format_decode((hc_format_id)f, c);
            if (!isfinite(v)) continue;
            n++;
            bad += (double)hck_float_code(f, c) != v;
        }
    }
    for (uint32_t h = 0; h < 65536; h++) {
        const float a = hc_f16_to_f32((uint16_t)h), b = hc_bf16_to_f32((uint16_t)h);
        if (isfinite(a)) bad += bits_of(hck_half((uint16_t)h, 0)) != bits_of(a);
        if (isfinite(b)) bad += bits_of(hck_half((uint16_t)h, 1)) != bits_of(b);
    }
    printf("number formats: %lld float codes, %lld mismatches\n", (long long)n, (long long)bad);
    assert_true(n > 1000);
    assert_int_equal(bad, 0);
}

/* hck_inv_perm inverts perm64 / perm32 as docs/layout.md writes them. */
static void test_inverse_perm(void **st)
{
    (void)st;
    static const int t32[8] = {0, 1, 8, 9, 16, 17, 24, 25};
    for (int j = 0; j < 64; j++) assert_int_equal(hck_inv_perm(64, 8 * (j % 8) + j / 8), j);
    for (int j = 0; j < 32; j++) assert_int_equal(hck_inv_perm(32, t32[j % 8] + 2 * (j / 8)), j);
    /* the small-M family's 16-byte scale read: entry 8 (lane / 4) + j is the scale of the
     * A-fragment rows of word j / 2, half j % 2 (hck_wg16_shift's columns) */
    for (int lane = 0; lane < 32; lane++)
        for (int j = 0; j < 8; j++) {
            assert_int_equal(hck_s16_scale_col(lane, j), 16 * (j / 2) + lane / 4 + 8 * (j % 2));
            assert_int_equal(hck_inv_perm(64, hck_s16_scale_col(lane, j)), 8 * (lane / 4) + j);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inverse_perm),
        cmocka_unit_test(test_number_formats),
        cmocka_unit_test(test_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
