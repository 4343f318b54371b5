/* hc_repack.h - the low-level weight repack: row-packed codes -> tile layout.
 *
 * Spec sections 3 (row-packed bit streams), 4.3/4.10 (tile mapping), 4.5
 * (compaction for b = 3, 5, 6, 7), 4.6 (transposed mini-blocks) and 4.7 (int->fp
 * preprocessing), plus the per-code XOR used for the int8 byte flip (4.1) and
 * our W4A4 nibble fix. Works on raw 32-bit words; no tensors, no allocation. */
#ifndef HC_REPACK_H
#define HC_REPACK_H

#include <stdint.h>

#include "hc_error.h"

typedef struct {
    int bits;            /* weight bits b, 1..8 */
    int act_bits;        /* activation bits a: 16, 8 or 4 (next_pow2(b) <= a) */
    int transposed;      /* transposed mini-block variant (4.6) */
    int native;          /* 0.1.19 use_native_dequant: slots in code order, no interleave */
    int64_t E, N, K;     /* padded sizes: N % 64 == 0, K % (512/a) == 0 */
    uint32_t code_xor;   /* XORed into every code first: 0x80 int8 flip, 0x8 W4A4 fix */
    int int2fp;          /* apply the 4.7 transform */
    const uint8_t *zp;   /* int2fp zero codes (E, N, zp_groups), or NULL for 2^(b-1) */
    int64_t zp_groups;   /* groups along K of zp (K % zp_groups == 0) */
    int portable;        /* 1: the portable loops only, 2: no AVX-512 (AVX2 at most); tests
                            compare them with the best */
} hc_repack_params;

/* next_pow2(b): 1, 2, 4, 4, 8, 8, 8, 8 for b = 1..8. */
int hc_repack_padded_bits(int b);

/* Code idx (b bits) of a little-endian bit stream (spec 3), straddles handled. */
uint32_t hc_stream_get(const uint32_t *words, int64_t idx, int b);
/* The same without straddle handling: only the bits inside the first word
 * (what Humming's int->fp preprocessing reads for zero points, spec 4.7). */
uint32_t hc_stream_get_truncated(const uint32_t *words, int64_t idx, int b);

/* 4.7: v' = v - z if v >= z, else 2^b - 1 - v. */
uint32_t hc_int2fp_code(uint32_t v, uint32_t z, int b);

/* 4.5: compacts the next_pow2(b) padded words of one lane to b words
 * (a copy for b in {1, 2, 4, 8}). */
void hc_repack_compact(int b, const uint32_t *padded, uint32_t *out);

/* in: (E, N, K*b/32) row-packed words; out: (E, K/P, N*P*b/32) words, P = 256/a.
 * Fails with HC_ERR_ARG on sizes or widths outside the preconditions. */
hc_status hc_repack_weight(const hc_repack_params *p, const uint32_t *in, uint32_t *out,
                           hc_error *err);

#endif
