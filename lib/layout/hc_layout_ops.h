/* hc_layout_ops.h - the layout steps of spec 5.3-5.7 on raw arrays.
 *
 * Internal to the library (and its tests): hc_layer_transform strings these
 * together. Arrays carry an explicit expert count E (1 for a dense layer);
 * every function only reads `in` and writes the caller-allocated `out`. */
#ifndef HC_LAYOUT_OPS_H
#define HC_LAYOUT_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "hc_error.h"
#include "hc_format.h"
#include "hc_layout.h"

/* perm64[j] = 8*(j%8) + j/8; perm32[j] = {0,1,8,9,16,17,24,25}[j%8] + 2*(j/8). */
int hc_scale_perm(int chunk, int j);

/* 5.4: (E, R, G) elements of `elem` bytes -> (E, G, R), permuted inside every
 * chunk of `chunk` (32 or 64) along R: out[e][g][c*L+j] = in[e][c*L+perm[j]][g].
 * R % chunk == 0. Also serves bias (G = 1) and float zero points. */
void hc_scales_permute(const void *in, void *out, int64_t E, int64_t R, int64_t G,
                       size_t elem, int chunk);

/* (E, R, C) -> (E, C, R), elements of `elem` bytes (block scales, 5.4). */
void hc_transpose_last2(const void *in, void *out, int64_t E, int64_t R, int64_t C,
                        size_t elem);

/* N-packed zero points (E, N*b/32, G) int32 -> codes (E, N, G); codes that
 * straddle two words are read whole. */
void hc_zp_unpack(const uint32_t *in, uint8_t *codes, int64_t E, int64_t N, int64_t G, int b);

/* 5.5: permuted codes (E, G, N) -> byte stream (two codes per byte, low nibble
 * first, if b <= 4; else one per byte). `out` holds E*G*N*zb/8 bytes. */
void hc_zp_pack_bytes(const uint8_t *codes, uint8_t *out, int64_t count, int b);

/* Humming's fp8 types (float8e4m3, float8e5m2, float8e3m4). */
int hc_layout_is_fp8(hc_format_id id);

/* get_mma_b_dtype (humming/config/mma.py): the type the tensor core sees
 * weight format b as, with activations a and a zero point (zp); e3m4: the
 * target runs float8e3m4 operands (sm100/103/120/121). */
hc_format_id hc_layout_mma_b_type(hc_format_id a, hc_format_id b, int zp, int e3m4);

/* get_dtype_compatibility_error and the activations' minimum SM for cfg:
 * HC_ERR_UNSUPPORTED with the reason, else HC_OK. */
hc_status hc_layout_check_dtypes(const hc_layer_config *c, hc_error *err);

/* The scale type against the group sizes (LayerConfig.__post_init__), the
 * smallest group per activation width, zero points only with group or
 * channel scales, the scale formats: HC_ERR_ARG / HC_ERR_UNSUPPORTED with
 * the reason, else HC_OK. */
hc_status hc_layout_check_scales(const hc_layer_config *c, hc_error *err);

/* The shape meta->E/N/K and the row packing of meta->weight_bits-bit codes
 * (and N-packed integer zero points) in whole 32-bit words: HC_ERR_ARG /
 * HC_ERR_UNSUPPORTED with the reason, else HC_OK. */
hc_status hc_layout_check_packing(const hc_layer_config *c, const hc_layer_meta *m, hc_error *err);

/* hc_layer_plan for cfg->version == HC_HUMMING_CANONICAL (hc_layout_canonical.c). */
hc_status hc_layer_plan_canonical(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                                  int64_t K, hc_layer_meta *meta, hc_error *err);

/* 0.1.19 fused e8m0 (hc_layout_e8m0.c): process_mxfp4_w4a8 on one fp4 code,
 * shifted down by d exponent steps (-0 becomes +0 first). */
uint32_t hc_fp4_fold(uint32_t code, int d);

/* 0.1.19 fused e8m0 on the padded working tensors: fp4 words w (E, Np, Kp/8)
 * and e8m0 scale bytes s (E, Np, G) padded with 127, group size 32, in place
 * (the K padding of real rows becomes their largest exponent, exponents are
 * folded into the offsets Humming keeps, codes re-rounded). The new
 * weight_scale_2: m->scale2_channel, s2 (the padded (E, 1, Np) per-channel
 * copy in the layer dtype, allocated when its data is NULL) scaled in place;
 * else gs_out gets it from gs_in (float32 (E?); data NULL: 1). On failure s2
 * may stay allocated (its owner frees it). HC_ERR_UNSUPPORTED where 0.1.19's
 * preprocessing overflows. */
hc_status hc_fused_e8m0_step(const hc_layer_config *cfg, const hc_layer_meta *m,
                             const hc_tensor *gs_in, uint32_t *w, uint8_t *s, hc_tensor *s2,
                             hc_tensor *gs_out, hc_error *err);

/* Interleave mode 2 of 0.1.19's repack (fused e8m0 x fp8), in place on tiled
 * words of 4-bit codes and 8-bit activations written in mode 3. */
void hc_split_sign_words(uint32_t *w, int64_t count);

/* hc_layer_plan for cfg->version == HC_HUMMING_0_1_19 (hc_layout_plan0119.c). */
hc_status hc_layer_plan_0119(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                             int64_t K, hc_layer_meta *meta, hc_error *err);

/* 0.1.19 flat weight (use_flat_weight): the padded row-packed words
 * (E, N, K*b/32), each XORed with `xor_mask`, seen as (E, N/64, 64, C, 4)
 * with C = K*b/128 and stored in the order (E, C, N/64, 64, 4). N % 64 == 0,
 * K*b % 128 == 0. */
void hc_flat_weight(const uint32_t *in, uint32_t *out, int64_t E, int64_t N, int64_t K, int b,
                    uint32_t xor_mask);

/* 0.1.19 packed-K layout: the tiled words of 8-bit activations (E, K/32,
 * N*b) rearranged to (E, K/64, 2*N*b): row pair (2r, 2r+1) becomes row r, the
 * b words of each lane split into two halves of b/2 (b even). */
void hc_packed_k_permute(const uint32_t *in, uint32_t *out, int64_t E, int64_t N, int64_t K,
                         int b);

/* 0.1.19 raw weight (use_raw_weight, sm100 UMMA): the padded row-packed words
 * (E, N, K*b/32), each XORed with `xor_mask`; count words. */
void hc_raw_weight(const uint32_t *in, uint32_t *out, int64_t count, uint32_t xor_mask);

/* 0.1.19 block-scaled group scales, bytes (E, N, G) -> int32 words of 4 bytes.
 * UMMA (sm100): (E, G/4, N), the word at (q, 128 nb + 4 j + i) holding groups
 * 4q..4q+3 of row 128 nb + 32 i + j (N % 128 == 0, G % 4 == 0). MXMMA (sm120,
 * one scale per 32 k of 8-bit activations): (E, G/2, N/2), the word at (q,
 * 8 nb + j) holding groups 2q, 2q+1 of rows 16 nb + j, 16 nb + 8 + j. */
void hc_umma_scales(const uint8_t *in, uint8_t *out, int64_t E, int64_t N, int64_t G);
void hc_mxmma_scales(const uint8_t *in, uint8_t *out, int64_t E, int64_t N, int64_t G);

/* In place on `count` e8m0 scale bytes: Humming's pack_e8m0_scale_for_fp16,
 * x -> clamp(x - 112, 0, 30) << 3 (padded E5M0: 2^-14 .. 2^15). */
void hc_e8m0_as_e5m0(uint8_t *s, int64_t count);

#endif
