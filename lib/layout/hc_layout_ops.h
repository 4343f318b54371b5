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

/* hc_layer_plan for cfg->version == HC_HUMMING_CANONICAL (hc_layout_canonical.c). */
hc_status hc_layer_plan_canonical(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                                  int64_t K, hc_layer_meta *meta, hc_error *err);

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

/* In place on `count` e8m0 scale bytes: Humming's pack_e8m0_scale_for_fp16,
 * x -> clamp(x - 112, 0, 30) << 3 (padded E5M0: 2^-14 .. 2^15). */
void hc_e8m0_as_e5m0(uint8_t *s, int64_t count);

#endif
