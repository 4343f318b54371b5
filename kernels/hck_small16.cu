/* hck_small16.cu - the small-M family (sm90, up to 16 tokens) on mma.sync
 * m16n8k16 with 16-bit operands, in two weight forms: uint4 weights x fp16 /
 * bf16 activations on the tiled layout of humming-kernels 0.1.19 (F_T16: the
 * layers of hck_w4a16.cu whose group size is a multiple of 64, or channel
 * scales, with K % 8 == 0), and packed-K uint4 weights x e4m3 activations
 * (F_PK8: the W4A8 layers of hck_wg8pk.cu with perm64 group scales).
 *
 * The product runs transposed on mma.sync m16n8k16, y^T = W x^T: word w of
 * a lane's 4 words of a tile row is the A fragment of columns 16 w .. 16 w +
 * 15 of the tile (hc_kernels.h, hck_wg16_shift), the activations of 8 tokens
 * the B fragment, so up to 8 tokens cost one mma per 16 columns and k16
 * step (hck_w4a16.cu, weights as B, pads to 16 tokens and costs two).
 * Codes become (code - 8) in 16 bits as in hck_w4a16.cu; group scales
 * multiply them in 16 bits (as Humming rounds value x scale), channel scales
 * the float32 sums.
 *
 * A block is 4 warps, warp w on tile w of 4 consecutive 64-column tiles, on
 * 8 NTB tokens. Every thread copies with cp.async into a ring of S stages of
 * 64 k, PF = S - 1 stages ahead: the 4 tiles' 4 tile rows as they lie (the
 * 16 bytes a lane copies are the 16 bytes it reads), the tokens' 64 k with
 * the 128-byte swizzle (the 16-byte unit u of token t at u ^ (t % 8), so
 * the ldmatrix of 8 tokens is conflict-free; rows past the block's and k
 * past K zero) and the stage's group scales (one group per stage: 256
 * columns, 512 bytes). One barrier per stage. The sums go through shared
 * memory, token-major, to 16-byte accesses. Split K: 16-byte float atomics
 * into a workspace that starts zeroed; the block of the last split to arrive
 * (a counter per output block after the workspace's rows x N floats) reads
 * the sums, adds the bias, rounds, and zeroes what it read and the counter,
 * so one launch does it all.
 *
 * F_PK8: a lane's 16 bytes of a packed-K 64-k row (hck_pk_lane_word) hold
 * the A fragments of 4 k16 steps of the columns 16 w.. of the wgmma warp w;
 * the block's warp copies all 4 such runs of its tile and decodes each word
 * to fp16 (hck_pk16_word: int->fp code v + 8 in place, then as F_T16). The
 * activations are the e4m3 codes of hck_act.cu, (Kp/16, rows, 16), staged as
 * they lie and widened to fp16 (exact) into the B fragment, whose k order is
 * the weights' (hck_pk16_shift). Products of exact fp16 values sum in float32
 * per 64-k stage and go into the sums times the group's scale at each group's
 * end, as Humming promotes per group; the token scales multiply the sums. */
#include <cstdint>
#include <cuda_fp8.h>

#include "hck_internal.cuh"

namespace hck {
namespace {

constexpr int WARPS = 4, NT = WARPS * 32, TB = 4; /* warps, threads, tiles per block */

enum { F_T16 = 0, F_PK8 = 1 }; /* weight form */

/* One stage of 64 k in the ring: activations (8 NTB rows of 128 bytes, or
 * 4 k16 runs of 8 NTB x 16 code bytes), weights (TB tiles x 2048 bytes: 4
 * tile rows of 512, or the 4 packed-K runs of 512), one group's scales of the
 * block's columns. S stages; the epilogue's float sums (8 NTB rows of the
 * block's 256 columns, padded to YP) reuse the ring. */
template <int F, int NTB> struct Geo {
    static constexpr int NTOK = 8 * NTB;
    static constexpr int XB = NTOK * (F == F_T16 ? 128 : 64), WB = TB * 2048, SB = TB * 128;
    static constexpr int SST = XB + WB + SB;
    static constexpr int S = 6, PF = S - 1; /* 3 blocks per SM: 15 stages, 120 KB of weights, in flight */
    static constexpr int YP = TB * 64 + 4;
    static_assert(NTOK * YP * 4 <= S * SST && SST % 128 == 0, "epilogue fits the ring; rows 128-aligned");
};

template <int F, int NTB> constexpr size_t smem_bytes() { return (size_t)Geo<F, NTB>::S * Geo<F, NTB>::SST; }

__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes));
}

__device__ __forceinline__ void ldsm4(uint32_t *r, uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* The 4 A registers of word w (register r: the codes at hck_wg16_shift(r, 0)
 * and + 16) as (code - 8) pairs, dq's values. fp16: the codes at bits 4..7
 * are taken in place (1024 + 16 c, times 1/16 minus 72: exact), one shift
 * for the upper byte's two. */
template <bool BF>
__device__ __forceinline__ void dq4(uint32_t *a, uint32_t w)
{
    if (BF) {
#pragma unroll
        for (int r = 0; r < 4; r++) a[r] = dq<BF>(w, hck_wg16_shift(r, 0));
        return;
    }
    const uint32_t magic = 0x64006400u, one = 0x3c003c00u, nb = 0xe408e408u; /* 1024, 1, -1032 */
    const uint32_t s16 = 0x2c002c00u, nb16 = 0xd480d480u;                     /* 1/16, -72 */
    const uint32_t w8 = w >> 8;
    a[0] = fma2<false>((w & 0x000f000fu) | magic, one, nb);     /* shift 0 */
    a[2] = fma2<false>((w & 0x00f000f0u) | magic, s16, nb16);   /* shift 4 */
    a[1] = fma2<false>((w8 & 0x000f000fu) | magic, one, nb);    /* shift 8 */
    a[3] = fma2<false>((w8 & 0x00f000f0u) | magic, s16, nb16);  /* shift 12 */
}

/* two e4m3 codes (the low 16 bits) -> an fp16 pair, exact */
__device__ __forceinline__ uint32_t e4m3x2_f16x2(uint32_t v)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(v & 0xffffu), __NV_E4M3);
    return (uint32_t)h.x | (uint32_t)h.y << 16;
}

/* v (4 float sums of consecutive columns) added into the workspace */
__device__ __forceinline__ void add4(float *dst, float4 v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float4 *)dst, v);
#else
    atomicAdd(dst, v.x), atomicAdd(dst + 1, v.y), atomicAdd(dst + 2, v.z), atomicAdd(dst + 3, v.w);
#endif
}

/* F_T16: one 64-k stage at shared address slot into acc; the stage's
 * group scales are loaded into sc where load_sc (a group's first stage). */
template <bool BF, bool SC, int NTB>
__device__ __forceinline__ void t16_stage(float (&acc)[4][NTB][4], uint32_t (&sc)[4][2], uint32_t slot,
                                          bool load_sc, int tid, int sbf)
{
    using G = Geo<F_T16, NTB>;
    const int warp = tid / 32, lane = tid % 32, gq = lane / 4;
    if (load_sc) {
        uint32_t sw[4];
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(sw[0]), "=r"(sw[1]), "=r"(sw[2]), "=r"(sw[3])
                     : "r"(slot + G::XB + G::WB + warp * 128 + gq * 16));
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t lo = conv16<BF>(sw[i] & 0xffffu, sbf), hi = conv16<BF>(sw[i] >> 16, sbf);
            sc[i][0] = lo | lo << 16;
            sc[i][1] = hi | hi << 16;
        }
    }
    /* B fragments: [k16 step][token block][register] */
    uint32_t b[4][NTB][2];
    if (NTB == 1) {
#pragma unroll
        for (int h = 0; h < 2; h++) { /* steps 2 h, 2 h + 1; matrix lane / 8: unit 4 h + lane / 8 */
            const int t = lane % 8, uu = 4 * h + lane / 8;
            uint32_t r[4];
            ldsm4(r, slot + (uint32_t)(t * 128 + ((uu ^ t) * 16)));
            b[2 * h][0][0] = r[0], b[2 * h][0][1] = r[1], b[2 * h + 1][0][0] = r[2], b[2 * h + 1][0][1] = r[3];
        }
    } else {
#pragma unroll
        for (int q = 0; q < 4; q++) { /* matrix lane / 8: token block lane / 16, k half (lane / 8) % 2 */
            const int t = 8 * (lane / 16) + lane % 8, uu = 2 * q + (lane / 8) % 2;
            uint32_t r[4];
            ldsm4(r, slot + (uint32_t)(t * 128 + ((uu ^ (t % 8)) * 16)));
            b[q][0][0] = r[0], b[q][0][1] = r[1], b[q][NTB - 1][0] = r[2], b[q][NTB - 1][1] = r[3];
        }
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
        uint32_t w[4];
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                     : "r"(slot + G::XB + (uint32_t)(q * TB * 512 + tid * 16)));
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint32_t a[4];
            dq4<BF>(a, w[i]);
            if (!SC)
#pragma unroll
                for (int r = 0; r < 4; r++) a[r] = fma2<BF>(a[r], sc[i][r % 2], 0x80008000u); /* -0: a s + (-0) = a s */
#pragma unroll
            for (int j = 0; j < NTB; j++) mma16816<BF>(acc[i][j], a, b[q][j][0], b[q][j][1]);
        }
    }
}

/* F_PK8: one 64-k stage at shared address slot summed into tmp; where
 * promote (a group's last stage, or the split's), tmp goes into acc times
 * the stage's group scales and is cleared. */
template <int NTB>
__device__ __forceinline__ void pk8_stage(float (&acc)[4][NTB][4], float (&tmp)[4][NTB][4], uint32_t slot,
                                          bool promote, int tid, int sbf)
{
    using G = Geo<F_PK8, NTB>;
    const int warp = tid / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    uint32_t b[4][NTB][2]; /* [k16 step][token block][register]: k 16 q + 4 tq + 2 r + h of token 8 j + gq */
#pragma unroll
    for (int q = 0; q < 4; q++)
#pragma unroll
        for (int j = 0; j < NTB; j++) {
            uint32_t v;
            asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(slot + (uint32_t)((q * G::NTOK + 8 * j + gq) * 16 + 4 * tq)));
            b[q][j][0] = e4m3x2_f16x2(v), b[q][j][1] = e4m3x2_f16x2(v >> 16);
        }
#pragma unroll
    for (int i = 0; i < 4; i++) { /* the columns 16 i.. of the warp's tile */
        uint32_t w[4];
        asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                     : "r"(slot + G::XB + (uint32_t)(warp * 2048 + i * 512 + lane * 16)));
#pragma unroll
        for (int q = 0; q < 4; q++) {
            uint32_t a[4];
            dq4<false>(a, hck_pk16_word(w[q])); /* a[r]: shift hck_wg16_shift(r, 0); register r: hck_pk16_shift */
            const uint32_t ar[4] = {a[0], a[2], a[1], a[3]};
#pragma unroll
            for (int j = 0; j < NTB; j++) mma16816<false>(tmp[i][j], ar, b[q][j][0], b[q][j][1]);
        }
    }
    if (!promote) return;
    uint32_t sw[4]; /* entries 2 i + h: the scale of the rows of half h of columns 16 i.. */
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(sw[0]), "=r"(sw[1]), "=r"(sw[2]), "=r"(sw[3])
                 : "r"(slot + G::XB + G::WB + warp * 128 + gq * 16));
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float c0 = h2f((uint16_t)(sw[i] & 0xffffu), sbf), c1 = h2f((uint16_t)(sw[i] >> 16), sbf);
#pragma unroll
        for (int j = 0; j < NTB; j++) {
            acc[i][j][0] = fmaf(tmp[i][j][0], c0, acc[i][j][0]), acc[i][j][1] = fmaf(tmp[i][j][1], c0, acc[i][j][1]);
            acc[i][j][2] = fmaf(tmp[i][j][2], c1, acc[i][j][2]), acc[i][j][3] = fmaf(tmp[i][j][3], c1, acc[i][j][3]);
#pragma unroll
            for (int c = 0; c < 4; c++) tmp[i][j][c] = 0.0f;
        }
    }
}

/* xin: 16-bit activations (rows, K) (F_T16) or e4m3 codes (Kp/16, rows, 16)
 * with their token scales tscale (F_PK8) */
template <int F, bool BF, bool SC, int NTB>
__global__ void __launch_bounds__(NT, 3)
small16_kernel(hck_desc d, hck_ptrs p, const void *__restrict__ xin, const float *__restrict__ tscale,
               const int64_t *__restrict__ offsets, int64_t rows, uint16_t *__restrict__ y, int splits,
               float *__restrict__ ws)
{
    using G = Geo<F, NTB>;
    constexpr int S = G::S, PF = G::PF, NTOK = G::NTOK;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t bstart = r0 + (int64_t)blockIdx.y * NTOK;
    if (bstart >= r1) return;
    const int brows = (int)min((int64_t)NTOK, r1 - bstart);
    const int64_t Np = d.Np, K = d.K;
    const int ntiles = (int)(Np / 64), tb0 = blockIdx.x * TB, tile = tb0 + warp;
    const bool active = tile < ntiles;
    const int nst = (int)(d.Kp / 64);
    const int s0 = (int)((int64_t)nst * split / splits), s1 = (int)((int64_t)nst * (split + 1) / splits);
    const int spg = SC ? 1 : (int)(d.group_size / 64); /* stages per group */
    const uint16_t *sp = (const uint16_t *)p.s;
    extern __shared__ __align__(128) uint8_t smem[];
    const uint32_t sb = (uint32_t)__cvta_generic_to_shared(smem);

    /* 64-k stage s into slot s % S (an empty group past s1) */
    auto stage = [&](int s, int parts) { /* parts: 1 activations, 2 weights and scales; committed with 1 */
        if (s < s1) {
            const uint32_t dst = sb + (uint32_t)((s % S) * G::SST);
            const int64_t k0 = (int64_t)s * 64;
            if ((parts & 1) && F == F_PK8 && tid < NTOK * 4) { /* unit: k16 run tid / NTOK, token tid % NTOK */
                const int c = tid / NTOK, t = tid % NTOK;
                const bool ok = t < brows;
                const uint8_t *xa = (const uint8_t *)xin, *src = xa + ((int64_t)(4 * s + c) * rows + bstart + t) * 16;
                cp_async16(dst + (uint32_t)tid * 16, ok ? (const void *)src : (const void *)xa, ok ? 16 : 0);
            }
            if ((parts & 1) && F == F_T16 && tid < NTOK * 8) { /* unit: token tid / 8, k 8 (tid % 8) */
                const uint16_t *x = (const uint16_t *)xin;
                const int t = tid / 8, c = tid % 8;
                const bool ok = t < brows && k0 + 8 * c < K;
                const uint16_t *src = x + (bstart + t) * K + k0 + 8 * c;
                cp_async16(dst + (uint32_t)(t * 128 + ((c ^ (t % 8)) * 16)), ok ? (const void *)src : (const void *)x,
                           ok ? 16 : 0);
            }
            if ((parts & 2) && active && F == F_PK8) {
                const uint32_t *src = p.w + hck_pk_lane_word(Np, d.Kp, e, tile, 0, lane) + (int64_t)s * Np * 8;
#pragma unroll
                for (int w = 0; w < 4; w++) /* wgmma warp w's run: tile warp's 2048 bytes, 512 w on */
                    cp_async16(dst + G::XB + (uint32_t)(warp * 2048 + w * 512 + lane * 16), src + w * 128, 16);
            }
            if ((parts & 2) && active && F == F_T16) {
                const uint32_t *src = p.w + hck_wg16_lane_word(Np, d.Kp, e, tile, lane) + (int64_t)4 * s * 2 * Np;
#pragma unroll
                for (int q = 0; q < 4; q++) /* tile row q: 2048 bytes, tile w's 512 at w 512 */
                    cp_async16(dst + G::XB + (uint32_t)(q * TB * 512 + tid * 16), src + (int64_t)q * 2 * Np, 16);
            }
            if ((parts & 2) && !SC && tid < TB * 8) { /* the group's scales of the block's columns */
                const int64_t col = (int64_t)tb0 * 64 + 8 * tid;
                const uint16_t *src = sp + ((int64_t)e * d.G + s / spg) * Np + col;
                if (col < Np) cp_async16(dst + G::XB + G::WB + (uint32_t)tid * 16, src, 16);
            }
        }
        if (parts & 1) asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[4][NTB][4], tmp[4][NTB][4]; /* the sums; F_PK8: the group's sums so far */
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NTB; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.0f, tmp[i][j][c] = 0.0f;
    uint32_t sc[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}}; /* F_T16: [word][row half] scale pairs */
    const int sbf = d.scale_kind == HCK_S_BF16;
    int gr = SC ? 0 : s0 % spg; /* stage s's place in its group */

    /* F_PK8 runs after the activations' kernel with programmatic dependent
     * launch: the first stages' weights are requested before it is waited for
     * (they join the first stage's group) */
#pragma unroll 1
    for (int u = 0; u < PF; u++) stage(s0 + u, F == F_PK8 ? 2 : 3);
    if (F == F_PK8) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
#pragma unroll 1
        for (int u = 0; u < PF; u++) stage(s0 + u, 1);
    }
#pragma unroll 1
    for (int s = s0; s < s1; s++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(PF - 1) : "memory");
        __syncthreads(); /* stage s landed; everyone is done with slot (s - 1) % S */
        stage(s + PF, 3);
        const uint32_t slot = sb + (uint32_t)((s % S) * G::SST);
        if (!active) continue;
        if (F == F_T16) t16_stage<BF, SC, NTB>(acc, sc, slot, !SC && (gr == 0 || s == s0), tid, sbf);
        else pk8_stage<NTB>(acc, tmp, slot, gr == spg - 1 || s == s1 - 1, tid, sbf);
        if (!SC && ++gr == spg) gr = 0;
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads(); /* the ring is free for the sums */

    /* word i, token block j: column hck_s16_scale_col(lane, 2 i + c / 2), token 8 j + 2 tq + c % 2 at acc[i][j][c] */
    float *ys = (float *)smem;
    if (active) {
        const float gsc = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
        float ts[NTB][2]; /* F_PK8: the token scales of the lane's tokens 8 j + 2 tq + c */
#pragma unroll
        for (int j = 0; j < NTB; j++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int t = 8 * j + 2 * tq + c;
                ts[j][c] = F == F_T16 ? 1.0f : t < brows ? tscale[bstart + t] : 0.0f;
            }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int nl = 64 * warp + hck_s16_scale_col(lane, 2 * i + h);
                const int64_t n = 64 * (int64_t)tb0 + nl;
                const float cs = (SC && n < d.N ? (float)hck_scale(&d, &p, e, n, 0, 0) : 1.0f) * gsc;
#pragma unroll
                for (int j = 0; j < NTB; j++)
#pragma unroll
                    for (int c = 0; c < 2; c++) ys[(8 * j + 2 * tq + c) * G::YP + nl] = acc[i][j][2 * h + c] * cs * ts[j][c];
            }
    }
    __syncthreads();
    /* thread tid's U units of 4 columns: unit tid + NT u, token (tid + NT u) / 64 */
    constexpr int U = NTOK * TB * 16 / NT;
    const bool vec = d.N % 4 == 0;
    if (splits > 1) { /* add into the workspace; the last split's block rounds and zeroes it */
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = tid + NT * u, t = i / (TB * 16), nl = 4 * (i % (TB * 16));
            const int64_t n = 64 * (int64_t)tb0 + nl, m = bstart + t;
            if (t >= brows || n >= d.N) continue;
            const float4 v = *(const float4 *)&ys[t * G::YP + nl];
            if (vec) add4(ws + m * d.N + n, v);
            else {
                const float vv[4] = {v.x, v.y, v.z, v.w};
                for (int c = 0; c < 4 && n + c < d.N; c++) atomicAdd(ws + m * d.N + n + c, vv[c]);
            }
        }
        __threadfence();
        __syncthreads();
        __shared__ int last;
        if (tid == 0) {
            int *cnt = (int *)(ws + offsets[d.E] * d.N) + ((int64_t)e * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
            last = atomicAdd(cnt, 1) == splits - 1;
            if (last) *cnt = 0;
        }
        __syncthreads();
        if (!last) return;
        __threadfence();
    }
    float4 v[U]; /* all loads first: one round trip to L2 */
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int i = tid + NT * u, t = i / (TB * 16), nl = 4 * (i % (TB * 16));
        const int64_t n = 64 * (int64_t)tb0 + nl, m = bstart + t;
        v[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (t >= brows || n >= d.N) continue;
        float *w = ws + m * d.N + n;
        if (splits == 1) v[u] = *(const float4 *)&ys[t * G::YP + nl];
        else if (vec) v[u] = __ldcg((const float4 *)w);
        else {
            v[u].x = __ldcg(w);
            if (n + 1 < d.N) v[u].y = __ldcg(w + 1);
            if (n + 2 < d.N) v[u].z = __ldcg(w + 2);
            if (n + 3 < d.N) v[u].w = __ldcg(w + 3);
        }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int i = tid + NT * u, t = i / (TB * 16), nl = 4 * (i % (TB * 16));
        const int64_t n = 64 * (int64_t)tb0 + nl, m = bstart + t;
        if (t >= brows || n >= d.N) continue;
        const float vv[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
        for (int c = 0; c < 4 && n + c < d.N; c++) y[m * d.N + n + c] = f2h(vv[c] + hck_bias(&d, &p, e, n + c), d.out_bf16);
        if (splits == 1) continue;
        if (vec) __stcg((float4 *)(ws + m * d.N + n), make_float4(0.0f, 0.0f, 0.0f, 0.0f));
        else
            for (int c = 0; c < 4 && n + c < d.N; c++) __stcg(ws + m * d.N + n + c, 0.0f);
    }
}

/* The instantiations: (weight form, bf16, channel scales, token blocks of 8). */
#define HCK_SMALL16_INSTANCES(X)                                                                   \
    X(F_T16, false, false, 1) X(F_T16, false, true, 1) X(F_T16, true, false, 1) X(F_T16, true, true, 1) \
    X(F_T16, false, false, 2) X(F_T16, false, true, 2) X(F_T16, true, false, 2) X(F_T16, true, true, 2) \
    X(F_PK8, false, false, 1) X(F_PK8, false, false, 2)

/* Tile-size choices (sm90 only): token blocks of 8 by the largest expert's
 * rows (ntb 0: another family takes the launch) and the resident blocks per
 * SM the split-K model assumes. */
struct Tune {
    int64_t rows_max;
    int ntb, blocks_per_sm;
};
constexpr Tune TUNE_SM90[] = {{8, 1, 3}, {16, 2, 3}, {INT64_MAX, 0, 0}};

const Tune &tune(int64_t rows) { return tune_pick(TUNE_SM90, rows); }

/* (form, NTB) of each instance: four of F_T16 (bf16 or not, channel scales
 * or not) and one of F_PK8 per row past ntb 0 */
#define HCK_SMALL16_KEY_(F, BF, SC, NTB) TileKey{F, NTB, 0},
constexpr TileKey KEYS[] = {HCK_SMALL16_INSTANCES(HCK_SMALL16_KEY_)};
#undef HCK_SMALL16_KEY_
constexpr bool row_ok(const Tune &t)
{
    return t.ntb == 0 || (instances_of(KEYS, F_T16, t.ntb) == 4 && instances_of(KEYS, F_PK8, t.ntb) == 1);
}
static_assert(all_rows(TUNE_SM90, row_ok), "a tuning row without its instances");

/* Split-K in 64-k stages: a block costs its stages + 4 (the ring's fill), a
 * split 2 more, at least 2 stages per split. */
int split_of(const hck_desc &d, const Tune &t, int64_t blocks, int sms)
{
    return split_waves(d.Kp / 64, 2, 4.0, 2.0, blocks, (int64_t)sms * t.blocks_per_sm);
}

}  // namespace

bool small16_takes(const hck_desc &d, int sm, int64_t max_rows)
{
    return tune(max_rows).ntb > 0 && w4a16_sm90_takes(d, sm, 64);
}

bool small8_takes(const hck_desc &d, int sm, int64_t max_rows)
{
    return tune(max_rows).ntb > 0 && wg8pk_takes(d, sm) && d.scale_perm == 64;
}

cudaError_t small16_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_SMALL16_ATTR_(F, BF, SC, NTB) smem_limit(e, small16_kernel<F, BF, SC, NTB>, smem_bytes<F, NTB>());
    HCK_SMALL16_INSTANCES(HCK_SMALL16_ATTR_)
#undef HCK_SMALL16_ATTR_
    return e;
}

size_t small16_ws_bytes(const hck_layer *L, int64_t rows)
{
    const hck_desc &d = L->d;
    const int64_t counters = ((d.Np / 64 + TB - 1) / TB) * ((rows + 7) / 8) * d.E;
    return (size_t)rows * d.N * sizeof(float) + (size_t)counters * sizeof(int) + 16;
}

namespace {

/* The launch of form f on xin (16-bit activations, or e4m3 codes and their
 * token scales). */
cudaError_t launch_form(int f, const hck_layer *L, const void *xin, const float *tscale, const int64_t *offsets,
                        int64_t rows, int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    const Tune &t = tune(max_rows);
    const int64_t nx = (d.Np / 64 + TB - 1) / TB, ny = (max_rows + 8 * t.ntb - 1) / (8 * t.ntb);
    const int splits = split_of(d, t, nx * ny * d.E, L->sms);
    const dim3 grid((unsigned)nx, (unsigned)ny, (unsigned)(d.E * splits));
    const bool bf = f == F_T16 && d.out_bf16, sc = d.scale_perm == 32; /* F_PK8 runs on fp16 */
    cudaLaunchAttribute pdl[1];
    pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    pdl[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = dim3(NT), cfg.stream = st;
    cfg.attrs = pdl, cfg.numAttrs = f == F_PK8 ? 1 : 0; /* F_PK8 follows the activations' kernel */
    cudaError_t e = cudaErrorInvalidValue;
#define HCK_SMALL16_CASE_(F, BF, SC, NTB)                                                                   \
    if (f == F && bf == BF && sc == SC && t.ntb == NTB) {                                                   \
        cfg.dynamicSmemBytes = smem_bytes<F, NTB>();                                                        \
        e = cudaLaunchKernelEx(&cfg, small16_kernel<F, BF, SC, NTB>, d, L->p, xin, tscale, offsets, rows, y, \
                               splits, ws);                                                                 \
    }
    HCK_SMALL16_INSTANCES(HCK_SMALL16_CASE_)
#undef HCK_SMALL16_CASE_
    return e;
}

}  // namespace

cudaError_t launch_small16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                           int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st)
{
    if (max_rows == 0) return cudaSuccess;
    return launch_form(F_T16, L, x, nullptr, offsets, rows, max_rows, y, ws, st);
}

cudaError_t launch_small8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                          int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    if (max_rows == 0) return cudaSuccess;
    const cudaError_t e = launch_act8(d.act_quant, d.out_bf16, x, rows, d.K, d.Kp, xa, tscale, st);
    if (e != cudaSuccess) return e;
    return launch_form(F_PK8, L, xa, tscale, offsets, rows, max_rows, y, ws, st);
}

}  // namespace hck
