/* hck_wg16.cu - the Hopper 16-bit wgmma family (sm_90a): uint4 weights x
 * fp16 / bf16 activations on the tiled layout of humming-kernels 0.1.19 (the
 * layers of hck_w4a16.cu, from 17 tokens on an sm90 device: TUNE_SM90).
 *
 * The product runs transposed, y^T = W x^T: the weights are the wgmma A
 * operand from registers, the activations the B operand from shared memory.
 * A lane's 4 words of a tile row hold, per word w, the mma.m16n8k16 A
 * fragment of columns 16 w .. 16 w + 15 of the tile (hc_kernels.h,
 * hck_wg16_shift), which is also the m64nNk16 A fragment of warp w of a
 * warpgroup: warp w of the warpgroup on a tile reads word w of every lane.
 * Codes become (code - 8) in 16 bits as in hck_w4a16.cu; group scales
 * multiply them in 16 bits (as Humming rounds value x scale), channel scales
 * the float32 sums. Both operands are staged per 64 k in a ring of S stages,
 * issued by one thread and completing on the slot's mbarrier (cp.async by
 * every thread ran 14-17% slower at M = 1024): the activations (rows, K) as
 * one TMA box of NTOK rows of 64 k with the 128-byte swizzle (the 16-byte
 * unit u of token t at u ^ (t % 8): an unswizzled layout of 8 x 16-byte core
 * matrices ran 1.5x slower; zero past K and past the rows), each of the 4
 * tile rows of the block's tiles as one bulk copy (each lane's 16-byte word
 * as laid out). Sums stay in the wgmma accumulators over all k (float32).
 *
 * A block is 2 warpgroups of WT tiles each (128 WT columns) on NTOK tokens,
 * one barrier per round of two stages. A warpgroup decodes a stage's four
 * k16 steps while the wgmmas of the stage before run (wait_group 1; ptxas
 * gives the two stages' A fragments different registers, as a wgmma in
 * flight still reads its own). Split K sums float atomics into a workspace,
 * then a pass adds the bias and rounds. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "hck_internal.cuh"
#include "hck_wgmma.cuh"

namespace hck {
namespace {

constexpr int WG = 2; /* warpgroups per block */

/* Shape of an instance. A stage: the activations of 64 k (XB bytes, NTOK
 * rows of 128 bytes, 128-byte swizzle), then the 4 tile rows of 64 k, each
 * the block's WG WT tiles of 512 bytes. S stages, PF of them copied ahead: a round refills two slots while
 * the wgmmas of the previous stage may still read theirs, hence PF + 3 <= S.
 * GS: k16 steps per register set (4 ran 1-9% faster than 2 at M >= 1024). */
template <int NTOK, int WT> struct Geo {
    static constexpr int XB = NTOK * 128;
    static constexpr int SST = XB + WG * WT * 2048;
    static constexpr int S = 224 * 1024 / SST < 8 ? 224 * 1024 / SST : 8;
    static constexpr int PF = S - 3;
    static constexpr int GS = 4;
};

/* the ring, 1024 bytes to align it for the swizzle, a barrier per slot */
template <int NTOK, int WT> constexpr size_t smem_bytes()
{
    return (size_t)Geo<NTOK, WT>::S * (Geo<NTOK, WT>::SST + 8) + 1024;
}

#ifdef HCK_WGMMA
using namespace wgmma;

/* d (64 x N, float32) += A (registers a, 64 x 16) . B (shared memory by
 * descriptor db, 16 x N), fp16 or bf16 */
template <int N, bool BF>
__device__ __forceinline__ void mma_rs(float *d, const uint32_t *a, uint64_t db)
{
    if (N == 64) {
        if (BF) asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " HCK_D32_STR
                             ", {%32, %33, %34, %35}, %36, 1, 1, 1, 0;\n"
                             : HCK_D32(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
        else asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " HCK_D32_STR
                          ", {%32, %33, %34, %35}, %36, 1, 1, 1, 0;\n"
                          : HCK_D32(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    } else if (N == 128) {
        if (BF) asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " HCK_D64_STR
                             ", {%64, %65, %66, %67}, %68, 1, 1, 1, 0;\n"
                             : HCK_D64(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
        else asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " HCK_D64_STR
                          ", {%64, %65, %66, %67}, %68, 1, 1, 1, 0;\n"
                          : HCK_D64(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    } else {
        if (BF) asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " HCK_D128_STR
                             ", {%128, %129, %130, %131}, %132, 1, 1, 1, 0;\n"
                             : HCK_D128(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
        else asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " HCK_D128_STR
                          ", {%128, %129, %130, %131}, %132, 1, 1, 1, 0;\n"
                          : HCK_D128(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
    }
}

/* the 4 A registers of a step: defined here as far as the compiler knows, so
 * that no decode instruction lands between the wgmmas (ptxas would serialize) */
__device__ __forceinline__ void pin4(uint32_t *a)
{
    asm volatile("" : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3]));
}
#endif

template <bool BF, bool SC, int NTOK, int WT>
__global__ void __launch_bounds__(WG * 128, 1)
wg16_kernel(hck_desc d, hck_ptrs p, const __grid_constant__ CUtensorMap tmx, const int64_t *__restrict__ offsets,
            uint16_t *__restrict__ y, int splits, float *__restrict__ ws)
{
    static_assert(Geo<NTOK, WT>::PF >= 2 && 4 % Geo<NTOK, WT>::GS == 0,
                  "a ring of at least two stages ahead; register sets of whole stages");
#ifdef HCK_WGMMA
    using G = Geo<NTOK, WT>;
    constexpr int S = G::S, PF = G::PF, GS = G::GS;
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4;
    const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t bstart = r0 + (int64_t)blockIdx.y * NTOK;
    if (bstart >= r1) return;
    const int brows = (int)min((int64_t)NTOK, r1 - bstart);
    const int64_t Np = d.Np;
    const int ntiles = (int)(Np / 64), tb0 = blockIdx.x * WG * WT; /* the block's first tile */
    const int rounds = (int)(d.Kp / 128);
    const int p0 = (int)((int64_t)rounds * split / splits), p1 = (int)((int64_t)rounds * (split + 1) / splits);
    const int s0 = 2 * p0, s1 = 2 * p1;

    extern __shared__ __align__(128) uint8_t smem_raw[];
    const uint32_t sraw0 = (uint32_t)__cvta_generic_to_shared(smem_raw), sbase = (sraw0 + 1023) & ~1023u;
    const uint8_t *smem8 = smem_raw + (sbase - sraw0);
    const uint32_t bars = sbase + S * G::SST; /* the barrier of slot j at bars + 8 j */
    if (tid == 0) {
        for (int j = 0; j < S; j++) mbar_init(bars + 8 * j, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    /* column of the rows gq + 8 r of tile t */
    auto col = [&](int t, int r) { return 64 * (int64_t)(tb0 + wg * WT + t) + 16 * warp + gq + 8 * r; };

    /* 64-k step s into ring slot (s - s0) % S, completing on the slot's
     * barrier: the activations as one TMA box, each of the 4 tile rows of the
     * block's tiles as one bulk copy (a tile row's tiles are contiguous;
     * tiles past Np are not copied, their columns are not stored) */
    const int vt = min(WG * WT, ntiles - tb0);
    const uint32_t *wsrc = p.w + hck_wg16_lane_word(Np, d.Kp, e, tb0, 0);
    auto stage = [&](int s) {
        if (s < s1 && tid == 0) {
            const int slot = (s - s0) % S;
            const uint32_t dst = sbase + (uint32_t)(slot * G::SST), bar = bars + 8 * slot;
            mbar_expect_tx(bar, (uint32_t)(G::XB + 4 * vt * 512));
            tma_box2(dst, &tmx, 64 * s, (int)bstart, bar);
#pragma unroll
            for (int r = 0; r < 4; r++)
                bulk_copy(dst + G::XB + (uint32_t)(r * WG * WT * 512), wsrc + (int64_t)(4 * s + r) * 2 * Np,
                          (uint32_t)(vt * 512), bar);
        }
    };

    /* group scales (perm64) of the lane's rows gq and gq + 8 of each tile, as
     * fp16 / bf16 pairs; raw values loaded a stage ahead */
    const int sbf = d.scale_kind == HCK_S_BF16;
    const uint16_t *sp = (const uint16_t *)p.s;
    int soff[WT][2];
    uint16_t sraw[WT][2];
    uint32_t sc[WT][2];
#pragma unroll
    for (int t = 0; t < WT; t++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t n = col(t, h);
            soff[t][h] = n < Np ? (int)((n / 64) * 64 + hck_inv_perm(64, (int)(n % 64))) : -1;
            sraw[t][h] = 0, sc[t][h] = 0;
        }
    auto load_scales = [&](int s) {
        if (SC || s >= s1) return;
        const uint16_t *g = sp + ((int64_t)e * d.G + (int64_t)s * 64 / d.group_size) * Np;
#pragma unroll
        for (int t = 0; t < WT; t++)
#pragma unroll
            for (int h = 0; h < 2; h++) sraw[t][h] = soff[t][h] < 0 ? 0 : __ldg(g + soff[t][h]);
    };

    float acc[WT][NTOK / 2];
#pragma unroll
    for (int t = 0; t < WT; t++)
#pragma unroll
        for (int i = 0; i < NTOK / 2; i++) acc[t][i] = 0.0f;
    uint32_t a[2][GS][WT][4]; /* [register set][k16 step][tile][register] */

#pragma unroll 1
    for (int u = 0; u < PF; u++) stage(s0 + u);
    load_scales(s0);
#pragma unroll 1
    for (int pr = p0; pr < p1; pr++) {
        const int s = 2 * pr;
        mbar_wait(bars + 8 * ((s - s0) % S), ((s - s0) / S) & 1);
        mbar_wait(bars + 8 * ((s + 1 - s0) % S), ((s + 1 - s0) / S) & 1);
        __syncthreads(); /* steps s, s + 1 landed; the slots now refilled are read by no wgmma */
        stage(s + PF);
        stage(s + PF + 1);
#pragma unroll
        for (int hs = 0; hs < 2; hs++) {
            const uint32_t slot = sbase + (uint32_t)(((s + hs - s0) % S) * G::SST);
            if (!SC) {
#pragma unroll
                for (int t = 0; t < WT; t++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const uint32_t v = conv16<BF>(sraw[t][h], sbf);
                        sc[t][h] = v | v << 16;
                    }
                load_scales(s + hs + 1);
            }
#pragma unroll
            for (int g = 0; g < 4 / GS; g++) { /* k16 steps GS g.. of the stage into register set g % 2 */
                const uint8_t *wst = smem8 + ((s + hs - s0) % S) * G::SST + G::XB;
#pragma unroll
                for (int q = 0; q < GS; q++) {
                    const int row = GS * g + q;
#pragma unroll
                    for (int t = 0; t < WT; t++) {
                        const uint32_t w =
                            *(const uint32_t *)(wst + (row * WG * WT + wg * WT + t) * 512 + lane * 16 + warp * 4);
#pragma unroll
                        for (int r = 0; r < 4; r++) {
                            uint32_t v = dq<BF>(w, hck_wg16_shift(r, 0));
                            if (!SC) v = fma2<BF>(v, sc[t][r % 2], 0x80008000u); /* -0: v s + (-0) = v s */
                            a[g % 2][q][t][r] = v;
                        }
                        pin4(a[g % 2][q][t]);
                    }
                }
                fence();
#pragma unroll
                for (int q = 0; q < GS; q++)
#pragma unroll
                    for (int t = 0; t < WT; t++)
                        mma_rs<NTOK, BF>(acc[t], a[g % 2][q][t], desc_sw128(slot + (uint32_t)(32 * (GS * g + q))));
                commit();
                wait<1>();
            }
        }
    }
    wait<0>();
#pragma unroll
    for (int t = 0; t < WT; t++) fence_acc<NTOK>(acc[t]);

    /* tile t, rows n0 + 8 r: token 8 j + 2 tq + c at acc[t][4 j + 2 r + c] */
    const float gsc = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
#pragma unroll
    for (int t = 0; t < WT; t++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int64_t n = col(t, r);
            if (n >= d.N) continue;
            const float cs = (SC ? (float)hck_scale(&d, &p, e, n, 0, 0) : 1.0f) * gsc;
            const float b = splits > 1 ? 0.0f : hck_bias(&d, &p, e, n);
#pragma unroll
            for (int j = 0; j < NTOK / 8; j++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    const int tl = 8 * j + 2 * tq + c;
                    if (tl >= brows) continue;
                    const int64_t m = bstart + tl;
                    const float v = acc[t][4 * j + 2 * r + c] * cs;
                    if (splits > 1) atomicAdd(ws + m * d.N + n, v);
                    else y[m * d.N + n] = f2h(v + b, d.out_bf16);
                }
        }
#endif
}

/* The instantiations: (bf16, channel scales, NTOK, tiles per warpgroup). */
#define HCK_WG16_INSTANCES(X)                                                                      \
    X(false, false, 64, 2) X(false, true, 64, 2) X(true, false, 64, 2) X(true, true, 64, 2)         \
    X(false, false, 128, 2) X(false, true, 128, 2) X(true, false, 128, 2) X(true, true, 128, 2)     \
    X(false, false, 256, 1) X(false, true, 256, 1) X(true, false, 256, 1) X(true, true, 256, 1)

/* Tile-size choices (sm90 only): tokens per block by the largest expert's
 * rows (ntok 0: the mma.sync family of hck_w4a16.cu takes the launch), tiles
 * per warpgroup, and the resident blocks per SM the split-K model assumes.
 * Past 128 tokens one tile of 256 tokens per warpgroup decodes half the A
 * fragments per product of two tiles of 128 (M = 1024: 3-4% faster, with a
 * ring of 6 stages rather than 5 another 4%). */
struct Tune {
    int64_t rows_max;
    int ntok, wt, blocks_per_sm;
};
constexpr Tune TUNE_SM90[] = {{16, 0, 0, 0}, {64, 64, 2, 1}, {128, 128, 2, 1}, {INT64_MAX, 256, 1, 1}};

const Tune &tune(int64_t rows) { return tune_pick(TUNE_SM90, rows); }

/* tile sizes (NTOK, WT) of each instance: four per row past ntok 0 (bf16 or
 * not, channel scales or not) */
#define HCK_WG16_KEY_(BF, SC, NTOK, WT) TileKey{NTOK, WT, 0},
constexpr TileKey KEYS[] = {HCK_WG16_INSTANCES(HCK_WG16_KEY_)};
#undef HCK_WG16_KEY_
constexpr bool row_ok(const Tune &t) { return t.ntok == 0 || instances_of(KEYS, t.ntok, t.wt) == 4; }
static_assert(all_rows(TUNE_SM90, row_ok), "a tuning row without its instances");

}  // namespace

bool wg16_takes(const hck_layer &L, int64_t max_rows)
{
    return L.tmap_encode && tune(max_rows).ntok > 0 && w4a16_sm90_takes(L.d, L.sm, 128);
}

cudaError_t wg16_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_WG16_ATTR_(BF, SC, NTOK, WT) smem_limit(e, wg16_kernel<BF, SC, NTOK, WT>, smem_bytes<NTOK, WT>());
    HCK_WG16_INSTANCES(HCK_WG16_ATTR_)
#undef HCK_WG16_ATTR_
    return e;
}

cudaError_t launch_wg16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                        int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    if (max_rows == 0) return cudaSuccess;
    const Tune &t = tune(max_rows);
    const int64_t nx = (d.Np / 64 + WG * t.wt - 1) / (WG * t.wt), ny = (max_rows + t.ntok - 1) / t.ntok;
    const int splits = split_wgmma(d.Kp, nx * ny * d.E, (int64_t)L->sms * t.blocks_per_sm);
    const dim3 grid((unsigned)nx, (unsigned)ny, (unsigned)(d.E * splits));
    cudaError_t e;
    if (splits > 1 && (e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st)) != cudaSuccess)
        return e;
    /* x as boxes of 64 k x NTOK tokens, 128-byte swizzled, zero past K and rows */
    CUtensorMap tmx;
    const cuuint64_t dims[2] = {(cuuint64_t)d.K, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)d.K * 2};
    const cuuint32_t box[2] = {64, (cuuint32_t)t.ntok}, es[2] = {1, 1};
    if (((PFN_cuTensorMapEncodeTiled_v12000)L->tmap_encode)(
            &tmx, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, (void *)x, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) !=
        CUDA_SUCCESS)
        return cudaErrorInvalidValue;
    const bool bf = d.out_bf16, sc = d.scale_perm == 32;
#define HCK_WG16_CASE_(BF, SC, NTOK, WT)                                                                      \
    if (bf == BF && sc == SC && t.ntok == NTOK && t.wt == WT)                                                 \
        wg16_kernel<BF, SC, NTOK, WT><<<grid, WG * 128, smem_bytes<NTOK, WT>(), st>>>(d, L->p, tmx, offsets, y, \
                                                                                     splits, ws);
    HCK_WG16_INSTANCES(HCK_WG16_CASE_)
#undef HCK_WG16_CASE_
    if ((e = cudaGetLastError()) != cudaSuccess || splits == 1) return e;
    return launch_splitk_finish(L, ws, offsets, rows, y, st);
}

}  // namespace hck
