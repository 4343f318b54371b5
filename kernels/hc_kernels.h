/* hc_kernels.h - C API of build/libhc_kernels.so (CUDA), loaded at run time by
 * lib/verify/hc_gpu.c with dlopen. Everything here is plain C: the library links no
 * CUDA at build time. Docs: docs/kernels.md.
 *
 * The kernels compute y = x . dequant(W)^T (+ bias) from the tensors that
 * humming-kernels 0.1.19 holds after its transform (docs/layout.md: tiled,
 * packed-K or flat weights, permuted scales / zero points / bias), exactly as
 * the CPU reference decoder (lib/verify/hc_verify_decode.c) defines dequant(W).
 *
 * The element mapping of the three weight layouts and the value of a code are
 * plain C functions below (HCK_HD), so that tests/test_kernel_fragments.c runs
 * the very code the kernels run, on the CPU. */
#ifndef HC_KERNELS_H
#define HC_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "hc_format.h"

#define HCK_ABI_VERSION 3

/* weight layouts of humming-kernels 0.1.19 */
enum { HCK_L_TILED = 0, HCK_L_PACKED_K = 1, HCK_L_FLAT = 2 };
/* how a weight code becomes its number before scales */
enum {
    HCK_W_UINT = 0,   /* offset binary: code - 2^(b-1), or code - zero point */
    HCK_W_SIGNED = 1, /* two's complement (flat integer layouts, W8A8/W4A4 tiles) */
    HCK_W_INT2FP = 2, /* int->fp preprocessed codes (zero point in them or 2^(b-1)) */
    HCK_W_FLOAT = 3,  /* float eXmY code of weight_format */
    HCK_W_E0M = 4     /* sign-magnitude float{b}e0m{b-1} (0.1.19 MoE recoding) */
};
enum {
    HCK_S_NONE = 0,  /* no scale tensor (tensor-wise: global only) */
    HCK_S_F16 = 1,
    HCK_S_BF16 = 2,
    HCK_S_BYTE = 3,  /* one byte of scale_format (e4m3, e5m2, e8m0) */
    HCK_S_E5M0 = 4,  /* e8m0 re-biased for fp16 layers: 2^((byte >> 3) - 15) */
    HCK_S_BLOCK = 5, /* float32 (E, Kp/gk, Np/gn) */
    HCK_S_EXP = 6    /* fused e8m0 offsets (MXFP4 x fp8 / int8): 2^(byte + scale_exp_add) */
};
enum { HCK_Z_NONE = 0, HCK_Z_INT = 1, HCK_Z_F16 = 2, HCK_Z_BF16 = 3 };
enum { HCK_A_NONE = 0, HCK_A_E4M3 = 1, HCK_A_E5M2 = 2, HCK_A_INT8 = 3, HCK_A_INT4 = 4 };

/* The GEMM block: 64 output columns x 64 k per shared-memory stage, decoded
 * by 128 threads; a thread decodes HCK_LANE_VALUES weights (one tile lane of
 * the tiled layouts, or 32 consecutive k of one row of the flat layout). */
#define HCK_BLOCK_N 64
#define HCK_BLOCK_K 64
#define HCK_THREADS 128
#define HCK_LANE_VALUES 32

typedef struct hck_desc {
    int E;                        /* experts (1 for a dense layer) */
    int64_t N, K, Np, Kp, G;      /* unpadded / padded sizes, scale groups along Kp */
    int64_t group_size;           /* along K (Kp for channel) */
    int64_t group_size_n;         /* block scales */
    int wbits, abits;             /* weight bits b, activation bits a (16, 8, 4) */
    int layout;                   /* HCK_L_* */
    int transposed;               /* mini-block transpose (packed-K) */
    int native_dequant;           /* codes in slot order (sm89 fp8 x fp16) */
    int wkind;                    /* HCK_W_* */
    int weight_format;            /* hc_format_id of float codes (HCK_W_FLOAT) */
    int zp_in_repack;             /* HCK_W_INT2FP: the integer zero point took part */
    int scale_kind, scale_perm;   /* HCK_S_*, 32 or 64 */
    int scale_format;             /* hc_format_id of HCK_S_BYTE */
    int zp_kind;                  /* HCK_Z_* */
    int bias_kind;                /* 0 none, 1 f16, 2 bf16 (perm32) */
    int global_count;             /* 0 none, 1 shared, E per expert */
    int out_bf16;                 /* 0: float16 output and input, 1: bfloat16 */
    int act_quant;                /* HCK_A_* per-token quantization of x */
    int split_sign;               /* fused e8m0 x fp8: a slot holds the magnitude of the
                                     code in slot order, the sign of the interleaved one */
    int scale_exp_add;            /* HCK_S_EXP: 1 with int8 activations (fp4 values x 2) */
    int global_channel;           /* the second scale is (E?, Np) 16-bit of the layer
                                     dtype, perm32 (a per-channel weight_scale_2, also
                                     fused e8m0 x int8's); global_count 0. Only the
                                     generic decode path takes it */
    /* host pointers to the post tensors and their byte sizes */
    const void *weight, *scale, *zero, *global, *bias;
    size_t weight_bytes, scale_bytes, zero_bytes, global_bytes, bias_bytes;
} hck_desc;

/* The tensors as the decoders read them (device pointers in the kernels,
 * host pointers in the CPU tests). */
typedef struct {
    const uint32_t *w;
    const uint8_t *s;
    const uint8_t *z;
    const float *gl;
    const uint16_t *bias;
} hck_ptrs;

#ifdef __CUDACC__
#define HCK_HD static __host__ __device__ __forceinline__
#else
#define HCK_HD static inline
#endif

HCK_HD int hck_pow2(int b) { return b <= 1 ? 1 : b <= 2 ? 2 : b <= 4 ? 4 : 8; }

/* Value of a float code from its traits (formats/hc_format.h): subnormals at
 * exponent field 0, no infinities (weights and scales never hold them). */
HCK_HD float hck_float_bits(uint32_t c, int bits, int e, int m, int sgn, int e8m0, int bias)
{
    if (e8m0) return ldexpf(1.0f, (int)(c & 0xffu) - 127);
    const uint32_t ex = (c >> m) & ((1u << e) - 1u), man = c & ((1u << m) - 1u);
    const float v = ex == 0 ? ldexpf((float)man, 1 - bias - m)
                            : ldexpf((float)((1u << m) + man), (int)ex - bias - m);
    return sgn && ((c >> (bits - 1)) & 1u) ? -v : v;
}

/* Value of code c of float format id f (formats/hc_format.h's table). */
HCK_HD float hck_float_code(int f, uint32_t c)
{
    switch (f) {
#define HCK_FMT_CASE_(id, name, kind, bits, e, m, sgn, spec, bias, mx, mn) \
    case HC_FMT_##id: return hck_float_bits(c, bits, e, m, sgn, spec == HC_SPECIAL_E8M0, bias);
        HC_FORMAT_LIST(HCK_FMT_CASE_)
#undef HCK_FMT_CASE_
    default: return 0.0f;
    }
}

/* fp16 / bf16 bits as float */
HCK_HD float hck_half(uint16_t h, int bf16)
{
    if (bf16) {
        union { uint32_t u; float f; } t = {(uint32_t)h << 16};
        return t.f;
    }
    const int ex = (h >> 10) & 31, man = h & 1023;
    const float v = ex == 0 ? ldexpf((float)man, -24) : ldexpf((float)(1024 + man), ex - 25);
    return (h & 0x8000u) ? -v : v;
}

/* Position, inside a chunk of L (64 or 32), of original index i: the inverse
 * of perm64[j] = 8 (j % 8) + j / 8 and perm32[j] = {0,1,8,9,16,17,24,25}[j % 8]
 * + 2 (j / 8) (docs/layout.md, scales). */
HCK_HD int hck_inv_perm(int L, int i)
{
    if (L == 64) return 8 * (i % 8) + i / 8;
    return 8 * ((i % 8) / 2) + 2 * (i / 8) + (i % 2);
}

/* Where code u (0..31) of a tile lane sits: n = 64 nb + 4 a j + lane / 4 + *dn,
 * k = P kb + R (lane % 4) + *dk (P = 256 / a, R = 32 / a), in padded word *word
 * at bit *shift. Mini-block order: normal, or transposed (i4 and i5 swapped);
 * slots interleaved by R, or in order with native dequant. */
HCK_HD void hck_lane_slot(const hck_desc *d, int u, int *dn, int *dk, int *word, int *shift)
{
    const int a = d->abits, Bp = hck_pow2(d->wbits), R = 32 / a, Nw = 32 / Bp, Gs = a / Bp;
    const int kk = u % R, rest = u / R, i3 = rest / 4;
    const int i4 = d->transposed ? rest % 2 : (rest / 2) % 2;
    const int i5 = d->transposed ? (rest / 2) % 2 : rest % 2;
    const int o = u % Nw, slot = d->native_dequant ? o : (o % R) * Gs + o / R;
    *dn = 16 * i3 + 8 * i4;
    *dk = 4 * R * i5 + kk;
    *word = u / Nw;
    *shift = slot * Bp;
}

/* Code u of a lane from its padded words W (hck_lane_slot's word and shift):
 * with split_sign, the magnitude bits come from slot u % (32 / Bp) in order. */
HCK_HD uint32_t hck_lane_code(const hck_desc *d, const uint32_t *W, int u, int wd, int sh)
{
    const uint32_t mask = (1u << d->wbits) - 1;
    if (!d->split_sign) return (W[wd] >> sh) & mask;
    const int Bp = hck_pow2(d->wbits), o = u % (32 / Bp);
    return ((W[wd] >> (o * Bp)) & (mask >> 1)) | ((W[wd] >> sh) & ((mask >> 1) + 1));
}

/* One slot of b final fields f -> the Bp padded fields v (inverse of the
 * compaction of 3, 5, 6 and 7-bit codes into b words). */
HCK_HD void hck_uncompact_slot(int b, const uint32_t *f, uint32_t *v)
{
    if (b == 3) {
        v[0] = f[0] & 7, v[1] = (f[1] & 3) | ((f[0] >> 3) & 1) << 2;
        v[2] = (f[2] & 1) | ((f[1] >> 2) & 3) << 1, v[3] = (f[2] >> 1) & 7;
    } else if (b == 5) {
        v[0] = f[0] & 31, v[1] = (f[1] & 3) | ((f[0] >> 5) & 7) << 2, v[2] = (f[1] >> 2) & 31;
        v[3] = (f[2] & 15) | ((f[1] >> 7) & 1) << 4, v[4] = (f[3] & 1) | ((f[2] >> 4) & 15) << 1;
        v[5] = (f[3] >> 1) & 31, v[6] = (f[4] & 7) | ((f[3] >> 6) & 3) << 3, v[7] = (f[4] >> 3) & 31;
    } else if (b == 6) {
        for (int h = 0; h < 2; h++) {
            const uint32_t *g = f + 3 * h;
            uint32_t *w = v + 4 * h;
            w[0] = g[0] & 63, w[1] = (g[1] & 15) | ((g[0] >> 6) & 3) << 4;
            w[2] = (g[2] & 3) | ((g[1] >> 4) & 15) << 2, w[3] = (g[2] >> 2) & 63;
        }
    } else if (b == 7) {
        v[0] = f[0] & 127;
        for (int j = 1; j <= 7; j++) {
            const uint32_t lo = j < 7 ? f[j] & ((1u << (7 - j)) - 1) : 0;
            v[j] = (lo | (f[j - 1] >> (8 - j)) << (7 - j)) & 127;
        }
    } else {
        for (int i = 0; i < b; i++) v[i] = f[i];
    }
}

/* A lane's b final words F -> its Bp padded words W. */
HCK_HD void hck_uncompact(int b, const uint32_t *F, uint32_t *W)
{
    const int Bp = hck_pow2(b);
    if (b == Bp) {
        for (int i = 0; i < b; i++) W[i] = F[i];
        return;
    }
    const uint32_t smask = (1u << Bp) - 1;
    for (int p = 0; p < Bp; p++) W[p] = 0;
    for (int s = 0; s < 32 / Bp; s++) {
        uint32_t f[8], v[8];
        for (int i = 0; i < b; i++) f[i] = (F[i] >> (s * Bp)) & smask;
        hck_uncompact_slot(b, f, v);
        for (int p = 0; p < Bp; p++) W[p] |= v[p] << (s * Bp);
    }
}

/* Index of word w of (expert e, tile row kb, n tile nb, chunk j, lane) in the
 * tiled weight tensor (E?, Kp/P, Np*P*b/32) of b-bit weights and a-bit
 * activations (P = 256/a); packed-K: (E?, Kp/64, Np*64*b/32), tile rows 2r and
 * 2r+1 in row r, each lane's words split in two halves of b/2 that sit side by
 * side. The CPU decoder (lib/verify/hc_verify_decode.c) indexes with it too. */
HCK_HD int64_t hck_tile_word_at(int b, int a, int packed_k, int64_t Np, int64_t Kp, int64_t e,
                                int64_t kb, int64_t nb, int j, int lane, int w)
{
    const int P = 256 / a;
    if (packed_k) {
        const int hb = b / 2;
        const int64_t row = e * (Kp / 64) + kb / 2, row_words = 2 * Np * b;
        return row * row_words + (nb * 4 + j * 2 + w / hb) * 32 * b + (int64_t)lane * b +
               (kb % 2) * hb + w % hb;
    }
    const int64_t row = e * (Kp / P) + kb, row_words = Np * P * b / 32;
    return row * row_words + nb * 2 * P * b + (int64_t)j * 32 * b + (int64_t)lane * b + w;
}

/* hck_tile_word_at for the layer d. */
HCK_HD int64_t hck_tile_word(const hck_desc *d, int64_t e, int64_t kb, int64_t nb, int j, int lane,
                             int w)
{
    return hck_tile_word_at(d->wbits, d->abits, d->layout == HCK_L_PACKED_K, d->Np, d->Kp, e, kb,
                            nb, j, lane, w);
}

/* Index of the word holding code (e, n, k) of the flat layout: row-packed
 * words cut into 128-bit chunks, stored as (E?, Kp*b/128, Np/64, 64, 4). */
HCK_HD int64_t hck_flat_word(const hck_desc *d, int64_t e, int64_t n, int64_t k)
{
    const int64_t wi = k * d->wbits / 32, chunk = wi / 4, row_words = d->Kp * d->wbits / 32;
    return e * d->Np * row_words + ((chunk * (d->Np / 64) + n / 64) * 64 + n % 64) * 4 + wi % 4;
}

/* Byte offset of the 16 bytes of 8-bit column n, k 16 c.. (c = 0: n's
 * first; chunk c: c Np 16 bytes on) in the flat layout, (E?, Kp/16, Np, 16):
 * 8 columns of one 16-k chunk are the 128-byte core matrix of wgmma's
 * unswizzled K-major layout (kernels/hck_wg8.cu reads the flat e4m3 weights as
 * its A operand so). */
HCK_HD int64_t hck_flat8_unit(int64_t Np, int64_t Kp, int64_t e, int64_t n)
{
    return e * Np * Kp + n * 16;
}

/* The packed-K uint4 A operand of the warp-specialized fp8 wgmma family
 * (kernels/hck_wg8pk.cu): the first of the 4 words lane `lane` of warp w
 * (0..3) of the warpgroup on the 64-column tile nb reads at 64-k step 0
 * (step s: s Np 8 words on). Word 2 h + i holds, for column
 * 64 nb + 16 w + lane / 4 in its low nibbles and + 8 in its high nibbles,
 * k = 64 s + 32 h + 16 i + 4 (lane % 4) + j in byte j: the m64nNk32 A
 * fragment of the two k32 steps. */
HCK_HD int64_t hck_pk_lane_word(int64_t Np, int64_t Kp, int64_t e, int nb, int w, int lane)
{
    return e * (Kp / 64) * Np * 8 + (int64_t)(4 * nb + w) * 128 + lane * 4;
}

/* Four uint4 int->fp codes c, one per byte (0..15) -> the e4m3 bytes of their
 * values v 2^-9 (v = c for c < 8, 7 - c above: subnormals and 8 2^-9, exact). */
HCK_HD uint32_t hck_nib_e4m3(uint32_t b)
{
    const uint32_t s = (b >> 3) & 0x01010101u;
    return ((b & 0x07070707u) + s) | s << 7;
}

/* The small-M family's packed-K uint4 A operand (kernels/hck_small16.cu):
 * lane word w (hck_pk_lane_word) with each int->fp code c turned into v + 8
 * (v = c for c < 8, 7 - c above) and its bytes reordered 0, 2, 1, 3, so
 * that the nibble pairs at hck_pk16_shift are the mma.m16n8k16 A registers. */
HCK_HD uint32_t hck_pk16_word(uint32_t w)
{
    const uint32_t u = w ^ 0x88888888u ^ (((w >> 3) & 0x11111111u) * 7u);
#ifdef __CUDA_ARCH__
    return __byte_perm(u, 0, 0x3120);
#else
    return (u & 0xff0000ffu) | (u >> 8 & 0xff00u) | (u << 8 & 0xff0000u);
#endif
}

/* Bit position, in hck_pk16_word(word q of the lane's 4), of half h of A
 * register r (0..3): v + 8 of column 64 nb + 16 w + lane / 4 + 8 (r % 2),
 * k = 64 s + 16 q + 4 (lane % 4) + 2 (r / 2) + h. The B operand takes the
 * activations in that k order: register b_i half h is k 16 q + 4 (lane % 4)
 * + 2 i + h. */
HCK_HD int hck_pk16_shift(int r, int h) { return 4 * (r % 2) + 8 * (r / 2) + 16 * h; }

/* The 16-bit wgmma family's uint4 A operand (kernels/hck_wg16.cu) on the
 * tiled layout of 16-bit activations: the first word of tile lane `lane` of
 * the 64-column tile nb at tile row 0 (row kb: kb 2 Np words on); the
 * family copies the lane's 4 words and warp w (0..3) of the warpgroup reads
 * word w. */
HCK_HD int64_t hck_wg16_lane_word(int64_t Np, int64_t Kp, int64_t e, int64_t nb, int lane)
{
    return hck_tile_word_at(4, 16, 0, Np, Kp, e, 0, nb, 0, lane, 0);
}

/* Bit position, in that word, of half h of register r (0..3) of the warp's
 * m64nNk16 A fragment (the mma.m16n8k16 A fragment): the code of column
 * 64 nb + 16 w + lane / 4 + 8 (r % 2), k = 16 kb + 2 (lane % 4) + 8 (r / 2) + h. */
HCK_HD int hck_wg16_shift(int r, int h) { return 4 * (2 * (r % 2) + r / 2) + 16 * h; }

/* The small-M family's group scales (kernels/hck_small16.cu): a lane reads
 * the perm64 entries 8 (lane / 4) + j, j = 0..7, of its tile; entry j
 * scales the rows of word j / 2's A fragment (hck_wg16_shift) in row half
 * j % 2, and those rows' sums are its column: 16 (j / 2) + lane / 4 + 8 (j % 2). */
HCK_HD int hck_s16_scale_col(int lane, int j) { return 16 * (j / 2) + lane / 4 + 8 * (j % 2); }

/* Integer zero-point code of (e, n, g): perm64 entries, nibbles (b <= 4) or bytes. */
HCK_HD uint32_t hck_zero_code(const hck_desc *d, const hck_ptrs *p, int64_t e, int64_t n, int64_t g)
{
    const int64_t t = (e * d->G + g) * d->Np + (n / 64) * 64 + hck_inv_perm(64, (int)(n % 64));
    return d->wbits <= 4 ? (uint32_t)(p->z[t / 2] >> (4 * (t % 2))) & 15u : p->z[t];
}

/* The number a code stands for before scales. */
HCK_HD float hck_code_value(const hck_desc *d, const hck_ptrs *p, uint32_t c, int64_t e, int64_t n,
                            int64_t g)
{
    const int b = d->wbits;
    const uint32_t mask = (1u << b) - 1;
    switch (d->wkind) {
    case HCK_W_FLOAT: return hck_float_code(d->weight_format, c);
    case HCK_W_E0M: return c > mask >> 1 ? -(float)(c & (mask >> 1)) : (float)c;
    case HCK_W_SIGNED: return (float)((int32_t)(c << (32 - b)) >> (32 - b));
    case HCK_W_INT2FP: { /* v' <= mask - z held v - z, larger v' held mask - v' */
        const uint32_t z = d->zp_in_repack && d->zp_kind == HCK_Z_INT ? hck_zero_code(d, p, e, n, g)
                                                                       : 1u << (b - 1);
        const uint32_t v = c <= mask - z ? c + z : mask - c;
        return (float)v - (float)z;
    }
    default: break;
    }
    if (d->zp_kind == HCK_Z_INT) return (float)c - (float)hck_zero_code(d, p, e, n, g);
    if (d->zp_kind != HCK_Z_NONE) {
        const int64_t t = (e * d->G + g) * d->Np + (n / 64) * 64 + hck_inv_perm(64, (int)(n % 64));
        uint16_t h;
        h = (uint16_t)(p->z[2 * t] | p->z[2 * t + 1] << 8);
        return (float)c - hck_half(h, d->zp_kind == HCK_Z_BF16);
    }
    return (float)c - (float)(1u << (b - 1));
}

/* Scale of element (e, n, k) of group g (1 without a scale tensor). */
HCK_HD double hck_scale(const hck_desc *d, const hck_ptrs *p, int64_t e, int64_t n, int64_t k, int64_t g)
{
    if (d->scale_kind == HCK_S_NONE) return 1.0;
    if (d->scale_kind == HCK_S_BLOCK) {
        const int64_t Rb = d->Np / d->group_size_n, Cb = d->Kp / d->group_size;
        const float *f = (const float *)(const void *)p->s;
        return f[(e * Cb + k / d->group_size) * Rb + n / d->group_size_n];
    }
    const int L = d->scale_perm;
    const int64_t t = (e * d->G + g) * d->Np + (n / L) * L + hck_inv_perm(L, (int)(n % L));
    switch (d->scale_kind) {
    case HCK_S_F16:
    case HCK_S_BF16: return hck_half((uint16_t)(p->s[2 * t] | p->s[2 * t + 1] << 8), d->scale_kind == HCK_S_BF16);
    case HCK_S_E5M0: return ldexp(1.0, (p->s[t] >> 3) - 15);
    case HCK_S_EXP: return ldexp(1.0, p->s[t] + d->scale_exp_add);
    default: return hck_float_code(d->scale_format, p->s[t]);
    }
}

/* The weight value of code c at (e, n, k): number x scale x global, products
 * in double and rounded once, as lib/verify/hc_verify_decode.c does. */
HCK_HD float hck_weight(const hck_desc *d, const hck_ptrs *p, uint32_t c, int64_t e, int64_t n, int64_t k)
{
    const int64_t g = k / d->group_size;
    double v = (double)hck_code_value(d, p, c, e, n, g) * hck_scale(d, p, e, n, k, g);
    if (d->global_count) v *= (double)p->gl[d->global_count == 1 ? 0 : e];
    if (d->global_channel) {
        const uint16_t *h = (const uint16_t *)(const void *)p->gl;
        v *= (double)hck_half(h[e * d->Np + (n / 32) * 32 + hck_inv_perm(32, (int)(n % 32))], d->out_bf16);
    }
    return (float)v;
}

/* Decodes thread t's HCK_LANE_VALUES weights of the block (expert e, columns
 * n0.., k n0.. k0 + HCK_BLOCK_K): val[i] goes to at[i] = (k - k0) *
 * HCK_BLOCK_N + (n - n0). Tiled / packed-K: the block holds 64 / P tile rows
 * of 32 x 16 / a lanes (128 lanes for every a); flat: thread t takes row
 * n0 + t % 64, k from k0 + 32 (t / 64). n0 is a multiple of 64, k0 of 64. */
HCK_HD void hck_decode(const hck_desc *d, const hck_ptrs *p, int64_t e, int64_t n0, int64_t k0, int t,
                       float *val, int *at)
{
    const int b = d->wbits;
    const uint32_t mask = (1u << b) - 1;
    if (d->layout == HCK_L_FLAT) {
        const int64_t n = n0 + t % 64;
        for (int i = 0; i < HCK_LANE_VALUES; i++) {
            const int64_t k = k0 + 32 * (t / 64) + i;
            const uint32_t c = (p->w[hck_flat_word(d, e, n, k)] >> (k * b % 32)) & mask;
            val[i] = hck_weight(d, p, c, e, n, k);
            at[i] = (int)(k - k0) * HCK_BLOCK_N + t % 64;
        }
        return;
    }
    const int a = d->abits, P = 256 / a, R = 32 / a, lanes = 512 / a;
    const int64_t kb = k0 / P + t / lanes, nb = n0 / 64;
    const int j = t % lanes / 32, lane = t % 32;
    uint32_t F[8], W[8];
    for (int w = 0; w < b; w++) F[w] = p->w[hck_tile_word(d, e, kb, nb, j, lane, w)];
    hck_uncompact(b, F, W);
    for (int u = 0; u < 32; u++) {
        int dn, dk, wd, sh;
        hck_lane_slot(d, u, &dn, &dk, &wd, &sh);
        const int64_t n = n0 + 4 * a * j + lane / 4 + dn, k = P * kb + R * (lane % 4) + dk;
        val[u] = hck_weight(d, p, hck_lane_code(d, W, u, wd, sh), e, n, k);
        at[u] = (int)(k - k0) * HCK_BLOCK_N + (int)(n - n0);
    }
}

/* Bias of output column n of expert e (perm32), 0 without. */
HCK_HD float hck_bias(const hck_desc *d, const hck_ptrs *p, int64_t e, int64_t n)
{
    if (!d->bias_kind) return 0.0f;
    return hck_half(p->bias[e * d->Np + (n / 32) * 32 + hck_inv_perm(32, (int)(n % 32))], d->bias_kind == 2);
}

typedef struct hck_layer hck_layer;

#ifdef __cplusplus
extern "C" {
#endif
/* Version of this ABI (HCK_ABI_VERSION). */
int hck_abi_version(void);
/* Compute capability of device 0 (e.g. 90), or 0 with a reason in msg. */
int hck_device_sm(char *msg, size_t msglen);
/* Copies the tensors to the device. 0 on success, else -1 with msg. */
int hck_layer_create(const hck_desc *d, hck_layer **out, char *msg, size_t msglen);
/* Frees the device tensors and L (NULL: nothing). */
void hck_layer_destroy(hck_layer *L);
/* Host-memory GEMM. x: (rows, K) 16-bit values of the layer dtype; rows are
 * sorted by expert, offsets[E+1] (NULL: dense, all rows to expert 0).
 * y: (rows, N) 16-bit values of the layer dtype. The output is poisoned
 * (all-ones: NaN) before the launch. */
int hck_gemm_host(hck_layer *L, const uint16_t *x, int64_t rows, const int64_t *offsets,
                  uint16_t *y, char *msg, size_t msglen);
/* Per-token activation quantization on the device: x (rows, K) 16-bit ->
 * codes as float values (rows, K) and scales (rows). */
int hck_quantize_host(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                      float *codes, float *scales, char *msg, size_t msglen);
/* Times the dense GEMM (activation quantization included) for `rows` random
 * tokens: median over iters CUDA-graph replays (CUDA events); flush: 0 none,
 * 1 zero 256 MB before each (L2 dirty, as triton's do_bench), 2 read it (L2
 * clean). The first call's time in *first_ms. */
int hck_gemm_time(hck_layer *L, int64_t rows, int iters, int flush, float *median_ms,
                  float *first_ms, char *msg, size_t msglen);
#ifdef __cplusplus
}
#endif

#endif
