/* hck_small16.cu - the small-M family (sm90, up to 16 tokens): uint4 weights
 * x fp16 / bf16 activations on the tiled layout of humming-kernels 0.1.19
 * (the layers of hck_w4a16.cu whose group size is a multiple of 64, or
 * channel scales, with K % 8 == 0).
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
 * so one launch does it all. */
#include <cstdint>

#include "hck_internal.cuh"

namespace hck {
namespace {

constexpr int WARPS = 4, NT = WARPS * 32, TB = 4; /* warps, threads, tiles per block */

/* One stage of 64 k in the ring: activations (8 NTB rows of 128 bytes),
 * weights (4 tile rows x TB tiles x 512 bytes), one group's scales of the
 * block's columns. S stages; the epilogue's float sums (8 NTB rows of the
 * block's 256 columns, padded to YP) reuse the ring. */
template <int NTB> struct Geo {
    static constexpr int NTOK = 8 * NTB;
    static constexpr int XB = NTOK * 128, WB = 4 * TB * 512, SB = TB * 128;
    static constexpr int SST = XB + WB + SB;
    static constexpr int S = 6, PF = S - 1; /* 3 blocks per SM: 15 stages, 120 KB of weights, in flight */
    static constexpr int YP = TB * 64 + 4;
    static_assert(NTOK * YP * 4 <= S * SST && SST % 128 == 0, "epilogue fits the ring; rows 128-aligned");
};

template <int NTB> constexpr size_t smem_bytes() { return (size_t)Geo<NTB>::S * Geo<NTB>::SST; }

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

/* v (4 float sums of consecutive columns) added into the workspace */
__device__ __forceinline__ void add4(float *dst, float4 v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float4 *)dst, v);
#else
    atomicAdd(dst, v.x), atomicAdd(dst + 1, v.y), atomicAdd(dst + 2, v.z), atomicAdd(dst + 3, v.w);
#endif
}

template <bool BF, bool SC, int NTB>
__global__ void __launch_bounds__(NT, 3)
small16_kernel(hck_desc d, hck_ptrs p, const uint16_t *__restrict__ x, const int64_t *__restrict__ offsets,
               uint16_t *__restrict__ y, int splits, float *__restrict__ ws)
{
    using G = Geo<NTB>;
    constexpr int S = G::S, PF = G::PF, NTOK = G::NTOK;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
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
    auto stage = [&](int s) {
        if (s < s1) {
            const uint32_t dst = sb + (uint32_t)((s % S) * G::SST);
            const int64_t k0 = (int64_t)s * 64;
            if (tid < NTOK * 8) { /* unit: token tid / 8, k 8 (tid % 8) */
                const int t = tid / 8, c = tid % 8;
                const bool ok = t < brows && k0 + 8 * c < K;
                const uint16_t *src = x + (bstart + t) * K + k0 + 8 * c;
                cp_async16(dst + (uint32_t)(t * 128 + ((c ^ (t % 8)) * 16)), ok ? (const void *)src : (const void *)x,
                           ok ? 16 : 0);
            }
            if (active) {
                const uint32_t *src = p.w + hck_wg16_lane_word(Np, d.Kp, e, tile, lane) + (int64_t)4 * s * 2 * Np;
#pragma unroll
                for (int q = 0; q < 4; q++) /* tile row q: 2048 bytes, tile w's 512 at w 512 */
                    cp_async16(dst + G::XB + (uint32_t)(q * TB * 512 + tid * 16), src + (int64_t)q * 2 * Np, 16);
            }
            if (!SC && tid < TB * 8) { /* the group's scales of the block's columns */
                const int64_t col = (int64_t)tb0 * 64 + 8 * tid;
                const uint16_t *src = sp + ((int64_t)e * d.G + s / spg) * Np + col;
                if (col < Np) cp_async16(dst + G::XB + G::WB + (uint32_t)tid * 16, src, 16);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[4][NTB][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < NTB; j++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[i][j][c] = 0.0f;
    uint32_t sc[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}}; /* [word][row half] scale pairs */
    const int sbf = d.scale_kind == HCK_S_BF16;
    int gr = SC ? 0 : s0 % spg; /* stage s's place in its group */

#pragma unroll 1
    for (int u = 0; u < PF; u++) stage(s0 + u);
#pragma unroll 1
    for (int s = s0; s < s1; s++) {
        asm volatile("cp.async.wait_group %0;" ::"n"(PF - 1) : "memory");
        __syncthreads(); /* stage s landed; everyone is done with slot (s - 1) % S */
        stage(s + PF);
        const uint32_t slot = sb + (uint32_t)((s % S) * G::SST);
        if (!active) continue;
        if (!SC) {
            if (gr == 0 || s == s0) {
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
            if (++gr == spg) gr = 0;
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
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads(); /* the ring is free for the sums */

    /* word i, token block j: column hck_s16_scale_col(lane, 2 i + c / 2), token 8 j + 2 tq + c % 2 at acc[i][j][c] */
    float *ys = (float *)smem;
    if (active) {
        const float gsc = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
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
                    for (int c = 0; c < 2; c++) ys[(8 * j + 2 * tq + c) * G::YP + nl] = acc[i][j][2 * h + c] * cs;
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

/* The instantiations: (bf16, channel scales, token blocks of 8). */
#define HCK_SMALL16_INSTANCES(X)                                                       \
    X(false, false, 1) X(false, true, 1) X(true, false, 1) X(true, true, 1)            \
    X(false, false, 2) X(false, true, 2) X(true, false, 2) X(true, true, 2)

/* Tile-size choices (sm90 only): token blocks of 8 by the largest expert's
 * rows (ntb 0: another family takes the launch) and the resident blocks per
 * SM the split-K model assumes. */
struct Tune {
    int64_t rows_max;
    int ntb, blocks_per_sm;
};
constexpr Tune TUNE_SM90[] = {{8, 1, 3}, {16, 2, 3}, {INT64_MAX, 0, 0}};

const Tune &tune(int64_t rows) { return tune_pick(TUNE_SM90, rows); }

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

cudaError_t small16_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_SMALL16_ATTR_(BF, SC, NTB)                                                                   \
    if (e == cudaSuccess)                                                                                \
        e = cudaFuncSetAttribute(small16_kernel<BF, SC, NTB>, cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                 (int)smem_bytes<NTB>());
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

cudaError_t launch_small16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                           int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    if (max_rows == 0) return cudaSuccess;
    const Tune &t = tune(max_rows);
    const int64_t nx = (d.Np / 64 + TB - 1) / TB, ny = (max_rows + 8 * t.ntb - 1) / (8 * t.ntb);
    const int splits = split_of(d, t, nx * ny * d.E, L->sms);
    const dim3 grid((unsigned)nx, (unsigned)ny, (unsigned)(d.E * splits));
    const bool bf = d.out_bf16, sc = d.scale_perm == 32;
    (void)rows; /* the counters sit after offsets[E] x N floats */
#define HCK_SMALL16_CASE_(BF, SC, NTB)                                                                    \
    if (bf == BF && sc == SC && t.ntb == NTB)                                                             \
        small16_kernel<BF, SC, NTB><<<grid, NT, smem_bytes<NTB>(), st>>>(d, L->p, x, offsets, y, splits, ws);
    HCK_SMALL16_INSTANCES(HCK_SMALL16_CASE_)
#undef HCK_SMALL16_CASE_
    return cudaGetLastError();
}

}  // namespace hck
