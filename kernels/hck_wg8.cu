/* hck_wg8.cu - the Hopper fp8 wgmma family (sm_90a) for flat e4m3 weights:
 * e4m3 activations x e4m3 weights on the flat layout (W8A8 fp8, channel
 * scales). The packed-K uint4 layers (W4A8) run in hck_wg8pk.cu.
 *
 * The product runs transposed, y^T = W x^T: the weights are the wgmma A
 * operand (64 columns per warpgroup), the activations the B operand (NTOK
 * tokens), both staged per 64 k in a ring of S shared-memory stages with
 * cp.async. Activations are quantized per token into e4m3 bytes (the codes of
 * hck_act.cu) laid out as (Kp/16, rows, 16): 16 k of 8 tokens are one
 * 128-byte core matrix of wgmma's unswizzled K-major layout, so a stage is
 * four contiguous runs. The flat weights are that layout already (16 k of a
 * column per 16 bytes, columns contiguous per 16 k: docs/layout.md), so they
 * are the A operand in shared memory as they are, and their products sum in
 * the wgmma accumulators over all k, as Humming's flat path does.
 *
 * A block is WG warpgroups on WG x 64 columns and NTOK tokens, one barrier per
 * round of 128 k. Split K sums float atomics into a workspace, then a pass
 * adds the bias and rounds. */
#include <cstdint>

#include "hck_internal.cuh"
#include "hck_wgmma.cuh"

namespace hck {
namespace {

/* Shape of an instance. A stage: the activations of 64 k (4 runs of NTOK x
 * 16 bytes), then per warpgroup the weights of 64 k (4 runs of 64 columns x
 * 16 bytes). A round refills the slots of the round two back: the wgmmas of
 * the round before may still read theirs, hence PF = S - 4. */
template <int NTOK, int WG> struct Geo {
    static constexpr int XB = NTOK * 64;
    static constexpr int SST = XB + WG * 4096;
    static constexpr int BUDGET = NTOK == 16 ? 52 * 1024 : 200 * 1024; /* 4 blocks or 1 per SM */
    static constexpr int S = (BUDGET / SST) & ~1;                         /* ring stages, even */
    static constexpr int PF = S - 4;                                      /* stages copied ahead */
};

template <int NTOK, int WG> constexpr size_t smem_bytes() { return (size_t)Geo<NTOK, WG>::S * Geo<NTOK, WG>::SST; }

#ifdef HCK_WGMMA
using namespace wgmma;

/* d (64 x N, N 16, 128 or 256) += A (64 x 32 e4m3) . B (32 x N e4m3), both in
 * shared memory */
template <int N>
__device__ __forceinline__ void wgmma_ss(float *d, uint64_t da, uint64_t db)
{
    if (N == 16)
        asm volatile("wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 " HCK_D8_STR ", %8, %9, 1, 1, 1;\n"
                     : HCK_D8(d)
                     : "l"(da), "l"(db));
    else if (N == 128)
        asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " HCK_D64_STR ", %64, %65, 1, 1, 1;\n"
                     : HCK_D64(d)
                     : "l"(da), "l"(db));
    else
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 " HCK_D128_STR
                     ", %128, %129, 1, 1, 1;\n"
                     : HCK_D128(d)
                     : "l"(da), "l"(db));
}

#endif

template <int NTOK, int WG>
__global__ void __launch_bounds__(WG * 128, 1)
wg8_kernel(hck_desc d, hck_ptrs p, const uint8_t *__restrict__ xa, const float *__restrict__ tscale,
           const int64_t *__restrict__ offsets, int64_t rows, uint16_t *__restrict__ y, int splits,
           float *__restrict__ ws)
{
    static_assert(Geo<NTOK, WG>::PF >= 2, "a ring of at least two stages ahead");
#ifdef HCK_WGMMA
    using G = Geo<NTOK, WG>;
    constexpr int S = G::S, PF = G::PF;
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4;
    const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t bstart = r0 + (int64_t)blockIdx.y * NTOK;
    if (bstart >= r1) return;
    const int brows = (int)min((int64_t)NTOK, r1 - bstart);
    const int nb = blockIdx.x * WG + wg; /* this warpgroup's 64-column tile (Np: a multiple of 64 WG) */
    const int rounds = (int)(d.Kp / 128); /* rounds of two 64-k steps */
    const int p0 = (int)((int64_t)rounds * split / splits), p1 = (int)((int64_t)rounds * (split + 1) / splits);
    const int s0 = 2 * p0, s1 = 2 * p1;
    const int64_t Np = d.Np;
    const int n0 = 64 * nb + 16 * warp + gq; /* the lane's rows n0 and n0 + 8 */
    /* the warpgroup's 64 columns of chunk 0 (16-byte units), then the units between steps */
    const int64_t wstride = Np * 64;
    const uint8_t *wsrc = (const uint8_t *)p.w + hck_flat8_unit(Np, d.Kp, e, (int64_t)64 * nb);

    extern __shared__ __align__(128) uint8_t smem8[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem8);
    const int wofs = G::XB + wg * 4096; /* the warpgroup's weights in a stage */

    /* step s of the k range into ring slot s % S (an empty group past s1) */
    auto stage = [&](int s) {
        if (s < s1) {
            const uint32_t dst = sbase + (uint32_t)((s % S) * G::SST);
            for (int i = tid; i < 4 * NTOK; i += WG * 128) {
                const int c = i / NTOK, t = i % NTOK;
                const bool ok = t < brows;
                const uint8_t *src = xa + ((int64_t)(4 * s + c) * rows + bstart + t) * 16;
                cp_async16(dst + (uint32_t)i * 16, ok ? (const void *)src : (const void *)xa, ok ? 16 : 0);
            }
#pragma unroll
            for (int j = 0; j < 2; j++) { /* unit i: chunk i / 64, column i % 64 */
                const int i = tid % 128 + 128 * j;
                cp_async16(dst + wofs + i * 16, wsrc + (int64_t)s * wstride + ((int64_t)(i / 64) * Np + i % 64) * 16, 16);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[NTOK / 2];
#pragma unroll
    for (int i = 0; i < NTOK / 2; i++) acc[i] = 0.0f;
#pragma unroll 1
    for (int u = 0; u < PF; u++) stage(s0 + u);
#pragma unroll 1
    for (int pr = p0; pr < p1; pr++) {
        /* steps s, s + 1 landed; the slots refilled now are those of two
         * rounds back, which no wgmma reads any more */
        const int s = 2 * pr;
        asm volatile("cp.async.wait_group %0;\nfence.proxy.async.shared::cta;" ::"n"(PF - 2) : "memory");
        __syncthreads();
        stage(s + PF);
        stage(s + PF + 1);
        const uint32_t x0 = sbase + (uint32_t)((s % S) * G::SST), x1 = sbase + (uint32_t)(((s + 1) % S) * G::SST);
        fence();
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const uint32_t xs = (q < 2 ? x0 : x1) + (uint32_t)((q % 2) * 2 * NTOK * 16);
            const uint32_t as = (q < 2 ? x0 : x1) + wofs + (uint32_t)((q % 2) * 2048);
            wgmma_ss<NTOK>(acc, desc_k(as, 1024), desc_k(xs, NTOK * 16));
        }
        commit();
        wait<1>();
    }
    wait<0>();
    fence_acc<NTOK>(acc);
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    const float gsc = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
    store_rows<NTOK>(d, p, acc, e, n0, tq, brows, bstart, tscale, splits, ws, y,
                     [&](int64_t n) { return (float)hck_scale(&d, &p, e, n, 0, 0) * gsc; });
#endif
}

/* The instantiations: (NTOK, warpgroups). */
#define HCK_WG8_INSTANCES(X) X(16, 1) X(128, 2) X(256, 2)

/* Tile-size choices (sm90 only): tokens per block by the largest expert's
 * rows, warpgroups per block, and the resident blocks per SM the split-K
 * model assumes. */
struct Tune {
    int64_t rows_max;
    int ntok, wg, blocks_per_sm;
};
constexpr Tune TUNE_SM90[] = {{16, 16, 1, 4}, {128, 128, 2, 1}, {INT64_MAX, 256, 2, 1}};

const Tune &tune(int64_t rows) { return tune_pick(TUNE_SM90, rows); }

#define HCK_WG8_KEY_(NTOK, WG) TileKey{0, NTOK, WG},
constexpr TileKey KEYS[] = {HCK_WG8_INSTANCES(HCK_WG8_KEY_)};
#undef HCK_WG8_KEY_
constexpr bool row_ok(const Tune &t) { return instances_of(KEYS, 0, t.ntok, t.wg) == 1; }
static_assert(all_rows(TUNE_SM90, row_ok), "a tuning row without its instance");

}  // namespace

bool wg8_takes(const hck_desc &d, int sm)
{
    return sm == 90 && d.act_quant == HCK_A_E4M3 && d.zp_kind == HCK_Z_NONE && !d.native_dequant &&
           !d.global_channel && d.Np % 128 == 0 && d.Kp % 128 == 0 && d.layout == HCK_L_FLAT && d.wbits == 8 &&
           d.wkind == HCK_W_FLOAT && d.weight_format == HC_FMT_F8E4M3 &&
           (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) && d.G == 1;
}

cudaError_t wg8_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_WG8_ATTR_(NTOK, WG) smem_limit(e, wg8_kernel<NTOK, WG>, smem_bytes<NTOK, WG>());
    HCK_WG8_INSTANCES(HCK_WG8_ATTR_)
#undef HCK_WG8_ATTR_
    return e;
}

cudaError_t launch_wg8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                       int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    const Tune &t = tune(max_rows);
    const int64_t nx = (d.Np / 64 + t.wg - 1) / t.wg, slots = (int64_t)L->sms * t.blocks_per_sm;
    return launch_fp8_wgmma(L, x, offsets, rows, max_rows, nx, t.ntok, slots, false, y, xa, tscale, ws, st,
                            [&](dim3 grid, int splits, int, int) {
#define HCK_WG8_CASE_(NTOK, WG)                                                                              \
    if (t.ntok == NTOK && t.wg == WG)                                                                        \
        wg8_kernel<NTOK, WG><<<grid, WG * 128, smem_bytes<NTOK, WG>(), st>>>(d, L->p, xa, tscale, offsets, rows, \
                                                                         y, splits, ws);
                                HCK_WG8_INSTANCES(HCK_WG8_CASE_)
#undef HCK_WG8_CASE_
                            });
}

}  // namespace hck
