/* hc_kernels.h - C API of build/libhc_kernels.so (CUDA), loaded at run time by
 * lib/hc_gpu.c with dlopen. Everything here is plain C: the library links no
 * CUDA at build time. Docs: docs/kernels.md.
 *
 * The kernel computes y = x . dequant(W)^T (+ bias) from the kernel-ready
 * tensors (tile layout, permuted scales / zero points / bias) exactly as the
 * CPU reference decoder (lib/hc_verify_decode.c) defines dequant(W). */
#ifndef HC_KERNELS_H
#define HC_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define HCK_ABI_VERSION 1

enum { HCK_W_INT = 0, HCK_W_FLOAT = 1 };
enum {
    HCK_S_NONE = 0,   /* no scale tensor (tensor-wise: global only) */
    HCK_S_F16 = 1,
    HCK_S_BF16 = 2,
    HCK_S_LUT8 = 3,   /* one byte through slut (e4m3, e5m2, e8m0) */
    HCK_S_INT16 = 4,  /* int16 weight scales (spec 5.7) */
    HCK_S_EXP2 = 5,   /* fused e8m0: byte offset o, scale 2^o (spec 5.3) */
    HCK_S_BLOCK = 6   /* float32 (E, Kp/gk, Np/gn) */
};
enum { HCK_Z_NONE = 0, HCK_Z_INT = 1, HCK_Z_F16 = 2, HCK_Z_BF16 = 3 };
enum { HCK_A_NONE = 0, HCK_A_E4M3 = 1, HCK_A_E5M2 = 2, HCK_A_INT8 = 3, HCK_A_INT4 = 4 };

/* Byte offset of the row that `lane` hands to ldmatrix.x4 in the wgmma
 * kernel's 16-token variant, for k16 step s of a stage: 16 tokens x 64 k of
 * 16-bit activations written by TMA with the 128-byte swizzle (16-byte chunk c
 * of token row r stored at chunk c ^ (r % 8); the stage is 1024-aligned).
 * Matrices 0-3 are (tokens 0-7, k lo), (0-7, k hi), (8-15, lo), (8-15, hi): the
 * B pairs of two mma.m16n8k16 n8 blocks. Shared by kernels/hc_wgmma.cuh and
 * tests/test_kernel_fragments.c. */
#define HCK_SYNC16_LDSM_ROW(lane) ((lane) % 8 + 8 * ((lane) / 16))
#define HCK_SYNC16_LDSM_OFFSET(lane, s) \
    (HCK_SYNC16_LDSM_ROW(lane) * 128 + (((2 * (s) + ((lane) / 8) % 2) ^ (HCK_SYNC16_LDSM_ROW(lane) % 8)) * 16))

/* The wgmma kernel's weight stage: one TMA box of the 3-D weight map (words
 * chunked by wc <= 256, chunk of the tile row, tile row) covering `bt` tiles
 * of R tile rows, written densely in box order; HCK_WG_BOX_CHUNKS is the
 * box's chunk extent, HCK_WG_STAGE_WORD the word where tile `tile`'s row `rr`
 * starts in the stage ([row][tile]). Shared by kernels/hc_wgmma.cuh, the host
 * tensor map and tests/test_kernel_fragments.c. */
#define HCK_WG_BOX_CHUNKS(bt, tile_words, wc) ((bt) * (tile_words) / (wc))
#define HCK_WG_STAGE_WORD(tile, rr, bt, tile_words) (((rr) * (bt) + (tile)) * (tile_words))

/* The wgmma kernel's 16-token 4-bit variants that split a stage by tile and k
 * ("KW": uint4 x 16-bit, uint4 and fp4 x 8-bit): with tpw
 * tiles per warpgroup and `rows` tile rows per stage (4 of k16, or 2 of k32),
 * warp w takes tile HCK_KW_TILE(w, tpw) of them and rows HCK_KW_ROW(w, r, tpw,
 * rows) for r < rows x tpw / 4, all 64 columns of each. A lane's words of n16
 * block i (rows 16 i + lane / 4, + 8) of a tile row start at HCK_KW_WORD(lane,
 * i, rw), rw = 1 or 2 words per block (the spec 4.4 pieces): the blocks' words
 * are one or two 16-byte loads. 8 entries of the tile's perm64 group scales (16
 * bytes, or 8 e8m0 bytes) from entry HCK_KW_SCALE_ENTRY(lane, 0, 0): entry (i, h)
 * is the scale of row 16 i + lane / 4 + 8 h. Shared by kernels/hc_wgmma.cuh and
 * tests/test_kernel_fragments.c. */
#define HCK_KW_TILE(w, tpw) ((w) % (tpw))
#define HCK_KW_ROW(w, r, tpw, rows) ((w) / (tpw) * ((rows) * (tpw) / 4) + (r))
#define HCK_KW_WORD(lane, i, rw) ((i) * (rw) / 4 * 128 + 4 * (lane) + (i) * (rw) % 4)
#define HCK_KW_SCALE_ENTRY(lane, i, h) (8 * ((lane) / 4) + 2 * (i) + (h))
/* KW2 (uint4 x 16-bit, 16 tokens, group scales): warp w takes tile
 * HCK_KW_TILE(w, 2) and n16 blocks HCK_KW2_BLOCK(w, 0) and (w, 1) of it over
 * every row of the stage: the lane's two words at HCK_KW_WORD(lane,
 * HCK_KW2_BLOCK(w, 0), 1) (one 8-byte load), its 4 scale entries from
 * HCK_KW_SCALE_ENTRY(lane, HCK_KW2_BLOCK(w, 0), 0) (8 bytes). */
#define HCK_KW2_BLOCK(w, i) (2 * ((w) / 2) + (i))

/* The wgmma kernel's epilogue staging: a warpgroup's 64-column tile as
 * fp32 [token][HCK_EPI_STRIDE]. Accumulator c (0-3) of n8 block j of lane
 * (g = lane / 4, t = lane % 4) of warp w holds token 8 j + 2 t + (c & 1) and
 * tile column 16 w + g + 8 (c >> 1) (the mma.m16n8k16 C and wgmma D layouts,
 * weights as rows); HCK_EPI_STAGE_INDEX is the float it is staged at. The
 * stride puts a warp's 32 lanes on 32 banks. Each of the 128 threads then
 * reads 4 consecutive columns 4 (tid % 16) of tokens tid / 16 + 8 i
 * (HCK_EPI_READ_INDEX). Shared by kernels/hc_wgmma.cuh and
 * tests/test_kernel_fragments.c. */
#define HCK_EPI_STRIDE 68
#define HCK_EPI_STAGE_INDEX(j, c, w, g, t) \
    ((8 * (j) + 2 * (t) + ((c) & 1)) * HCK_EPI_STRIDE + 16 * (w) + (g) + 8 * ((c) >> 1))
#define HCK_EPI_READ_INDEX(token, col) ((token) * HCK_EPI_STRIDE + (col))

/* The split sum over a cluster: a CTA's bt staged tiles hold total =
 * bt x mrows x 16 groups of 4 columns; group g is tile HCK_CSUM_TILE, token
 * HCK_CSUM_TOKEN and tile column HCK_CSUM_COL (+ 0..3, at HCK_EPI_READ_INDEX of
 * that tile's staging area), and the cluster's CTA `split` of `splits` sums
 * groups [HCK_CSUM_BEGIN(split), HCK_CSUM_BEGIN(split + 1)). Shared by
 * kernels/hc_wgmma.cuh and tests/test_kernel_fragments.c. */
#define HCK_CSUM_BEGIN(total, split, splits) ((int)((int64_t)(total) * (split) / (splits)))
#define HCK_CSUM_TILE(g, mrows) ((g) / (16 * (mrows)))
#define HCK_CSUM_TOKEN(g, mrows) ((g) / 16 % (mrows))
#define HCK_CSUM_COL(g) (4 * ((g) % 16))

/* The split sum of a cooperative launch: split `split` sums column quads
 * [HCK_CSUM_BEGIN(q, split), HCK_CSUM_BEGIN(q, split + 1)) of every token row
 * (q = 16 per tile). Each split adds 1 to the tile group's counter when its
 * partials are stored, waits until HCK_COOP_ALL_IN, sums, adds 1 again, and
 * the split whose second add returns HCK_COOP_LAST_OUT zeroes the counter for
 * the next launch (no split still waits then). */
#define HCK_COOP_ALL_IN(seen, splits) ((seen) >= (splits))
#define HCK_COOP_LAST_OUT(old, splits) ((old) == 2 * (splits) - 1)

/* The polled split sum: every float of the workspace holds HCK_WS_EMPTY
 * between launches; a split stores its partials, each split polls its share of
 * the other splits' partials until no float of it is HCK_WS_EMPTY, sums and
 * writes HCK_WS_EMPTY back. A signalling NaN with a payload: arithmetic only
 * makes quiet NaNs, so no partial sum can take this value (the quiet bit,
 * HCK_NAN_QUIET, is clear). Shared by kernels/hc_wgmma.cuh and
 * tests/test_kernel_fragments.c. */
#define HCK_WS_EMPTY 0x7FB0DEADu
#define HCK_NAN_QUIET 0x00400000u

/* The fp8 wgmma variant's decoders, plain C so that
 * tests/test_kernel_fragments.c runs the very code the kernel runs. A 32-k tile
 * row of the a = 8 layout (spec 4.3) gives a lane two words w[2]; the e4m3 A
 * fragment of wgmma m64nNk32 is a[4] = {row g k lo, row g + 8 k lo, row g k hi,
 * row g + 8 k hi}, k = 4 t + byte (+ 16 for k hi) for lane 4 g + t. Normal
 * layout: word h is row g + 8 h, even nibbles k lo; transposed: word h is k
 * half h, even nibbles row g. */
#ifdef __CUDACC__
#define HCK_HD static __host__ __device__ __forceinline__
#else
#define HCK_HD static inline
#endif

/* prmt.b32 (default mode; selector nibbles below 8): byte i of the result is
 * byte (s >> 4 i) & 7 of b:a */
HCK_HD uint32_t hck_byte_perm(uint32_t a, uint32_t b, uint32_t s)
{
#ifdef __CUDA_ARCH__
    return __byte_perm(a, b, s);
#else
    const uint64_t v = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= (uint32_t)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xffu) << (8 * i);
    return r;
#endif
}

/* e8m0 byte k of raw as an fp16 power of two in both halves, (e + 15) << 10
 * each (the MXFP4 decoders leave out the rest of the bias): byte pair
 * 0x00ee00ee times 1024 plus 15 << 10 per half. The halves cannot overlap
 * for e < 256, so this equals ((e + 15) << 10) | ((e + 15) << 26) for every
 * byte (tests/test_kernel_fragments.c), in fewer instructions. */
HCK_HD uint32_t hck_e8m0_pair(uint32_t raw, int k)
{
    return hck_byte_perm(raw, 0, 0x4040u + 0x0101u * (uint32_t)k) * 1024u + 0x3c003c00u;
}

/* Four uint4 int->fp codes (spec 4.7, z = 8: bit 3 sign, low bits |x| or
 * |x| - 1), one per byte, -> e4m3 bytes of x * 2^-9 (exact: |x| < 8 is the
 * subnormal byte |x|, 8 the normal 0x08 = 2^-6). */
HCK_HD uint32_t hck_i4_e4m3x4(uint32_t r)
{
    const uint32_t m = r & 0x08080808u;
    return ((r & 0x07070707u) + (m >> 3)) | (m << 4);
}

/* The e4m3 bytes of the fp4 magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6} * 2^(x' - 6)
 * for a fused exponent offset x' in [0, 12] (spec 5.3): 6 * 2^6 = 384 fits,
 * 0.5 * 2^-6 is the subnormal 0x04, the other entries add x' to the exponent. */
HCK_HD void hck_fp4_e4m3_table(uint32_t xo, uint32_t t[2])
{
    t[0] = 0x0C080000u + xo * 0x08080800u + (xo == 0 ? 0x400u : 0u);
    t[1] = 0x1C181410u + xo * 0x08080808u;
}

/* four fp4 magnitudes (low 3 bits of each byte) looked up in table t */
HCK_HD uint32_t hck_fp4_e4m3x4(uint32_t x, const uint32_t t[2])
{
    return hck_byte_perm(t[0], t[1], hck_byte_perm(x | (x >> 4), 0, 0x0020));
}

/* The fragment a[4] from the lane's words w[2]: fp4 = 0 uint4 int->fp codes,
 * else MXFP4 (normal layout) with the tables t0, t1 of rows g and g + 8. */
HCK_HD void hck_f8_fragment(const uint32_t w[2], int fp4, int tr, const uint32_t t0[2], const uint32_t t1[2],
                            uint32_t a[4])
{
    uint32_t ev[2], od[2];
    for (int h = 0; h < 2; h++) {
        if (!fp4) {
            ev[h] = hck_i4_e4m3x4(w[h] & 0x0F0F0F0Fu), od[h] = hck_i4_e4m3x4((w[h] >> 4) & 0x0F0F0F0Fu);
        } else {
            const uint32_t *t = h ? t1 : t0;
            ev[h] = hck_fp4_e4m3x4(w[h] & 0x07070707u, t) | ((w[h] << 4) & 0x80808080u);
            od[h] = hck_fp4_e4m3x4((w[h] >> 4) & 0x07070707u, t) | (w[h] & 0x80808080u);
        }
    }
    if (tr) a[0] = ev[0], a[1] = od[0], a[2] = ev[1], a[3] = od[1];
    else a[0] = ev[0], a[1] = ev[1], a[2] = od[0], a[3] = od[1];
}

typedef struct {
    int E;                        /* experts (1 for a dense layer) */
    int64_t N, K, Np, Kp, G;      /* unpadded / padded sizes, scale groups along Kp */
    int64_t group_size;           /* along K (Kp for channel) */
    int64_t group_size_n;         /* block scales */
    int wbits, abits;             /* weight bits b, activation bits a (16, 8, 4) */
    int wkind;                    /* HCK_W_* */
    int weight_signed;            /* two's complement codes (W8A8, W4A4) */
    int int2fp;                   /* int->fp preprocessed codes (spec 4.7) */
    int zp_in_repack;             /* the integer zero point took part in 4.7 */
    int fused_x2;                 /* fused e8m0 with int8 activations: value * 2 */
    int transposed;               /* transposed mini-block variant */
    int scale_kind, scale_perm;   /* HCK_S_*, 32 or 64 */
    int zp_kind;                  /* HCK_Z_* */
    int bias_kind;                /* 0 none, 1 f16, 2 bf16 (perm32) */
    int global_count;             /* 0 none, 1 shared, E per expert */
    int out_bf16;                 /* 0: float16 output and input, 1: bfloat16 */
    int act_quant;                /* HCK_A_* per-token quantization of x */
    float wlut[256];              /* float weight codes -> value */
    float slut[256];              /* 8-bit scale codes -> value */
    /* host pointers to the post tensors and their byte sizes */
    const void *weight, *scale, *zero, *global, *bias;
    size_t weight_bytes, scale_bytes, zero_bytes, global_bytes, bias_bytes;
} hck_desc;

typedef struct hck_layer hck_layer;

/* Version of this ABI (HCK_ABI_VERSION). */
int hck_abi_version(void);
/* Compute capability of device 0 (e.g. 90), or 0 with a reason in msg. */
int hck_device_sm(char *msg, size_t msglen);
/* Copies the tensors to the device. 0 on success, else -1 with msg. */
int hck_layer_create(const hck_desc *d, hck_layer **out, char *msg, size_t msglen);
void hck_layer_destroy(hck_layer *L);
/* Host-memory GEMM. x: (rows, K) 16-bit values of the layer dtype; rows are
 * sorted by expert, offsets[E+1] (NULL: dense, all rows to expert 0).
 * y: (rows, N) 16-bit values of the layer dtype. The output is poisoned
 * (all-ones: NaN) before the launch. simt != 0 picks the plain-FMA kernel. */
int hck_gemm_host(hck_layer *L, const uint16_t *x, int64_t rows, const int64_t *offsets,
                  uint16_t *y, int simt, char *msg, size_t msglen);
/* Per-token activation quantization on the device: x (rows, K) 16-bit ->
 * codes as float values (rows, K) and scales (rows). */
int hck_quantize_host(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                      float *codes, float *scales, char *msg, size_t msglen);
/* Times the dense GEMM for `rows` random tokens: median over iters launches
 * (CUDA events), first-call time included in *first_ms. */
int hck_gemm_time(hck_layer *L, int64_t rows, int iters, int simt, float *median_ms,
                  float *first_ms, char *msg, size_t msglen);

#endif
