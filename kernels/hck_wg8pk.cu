/* hck_wg8pk.cu - the Hopper warp-specialized fp8 wgmma family (sm_90a) for
 * packed-K uint4 weights: e4m3 activations x uint4 int->fp weights with group
 * scales (sm90 W4A8, groups a multiple of 128).
 *
 * The product runs transposed, y^T = W x^T: the weights are the wgmma A
 * operand in registers (64 columns per consumer warpgroup), the activations
 * the B operand (NTOK tokens) in a ring of S shared-memory stages of 64 k.
 * Activations are the e4m3 codes of hck_act.cu laid out as (Kp/16, rows, 16),
 * wgmma's unswizzled K-major layout (hck_wg8.cu says how).
 *
 * Warp specialization: one thread of warpgroup 0 copies each 64-k step (the
 * tokens of its four 16-k chunks, the weights of both consumers, at a round's
 * first step the block's group scales) into a ring slot with bulk copies that
 * complete on the slot's full mbarrier (expect_tx); warpgroups 1 and 2
 * compute 64 columns each and arrive on the slot's empty mbarrier once their
 * wgmmas that read it are done. No block barrier in the main loop, so the
 * consumers drift apart and one's promotion overlaps the other's wgmmas. The
 * producer gives its registers to the consumers (setmaxnreg). Bulk copies
 * write through the async proxy, which the wgmmas read, so no proxy fence;
 * past a block's last token a slot keeps stale bytes, whose products land in
 * token columns that are not stored.
 *
 * A lane's 16-byte word of a 64-k row holds the m64nNk32 A fragment of the
 * warp's 16 columns for both k32 halves (low nibbles rows gq, high nibbles
 * rows gq + 8, bytes in k order). The int->fp codes (v >= 0: v; v < 0:
 * 8 | (-1 - v)) become e4m3 bytes of v 2^-9 (subnormal, exact; 8 2^-9 is the
 * smallest normal): c < 8 gives c, c >= 8 gives 0x80 | ((c & 7) + 1); 2^9
 * comes back in the epilogue. A round of 128 k (one scale group or part of
 * one) runs its tokens in halves of 128 on the same A registers; each half
 * sums apart and is added into the float32 sums times the group's scale, as
 * Humming promotes per group. At 128 tokens a round's A fragments are decoded
 * while the round before runs its wgmmas (a second set spills at 256).
 *
 * Two schedules, an instance each. Split K: a block is one tile's split of
 * the rounds; the splits sum float atomics into a workspace, then a pass adds
 * the bias and rounds. Stream-K (one expert, more tiles than resident blocks,
 * where hck_internal.cuh stream_k_wgmma takes it): each SM's block takes an
 * equal range of all tiles' rounds, so no wave runs part-empty, and runs it
 * from the top down, tile segment by tile segment (for_segments), the ring's
 * steps running on across them; a tile split between two blocks is summed by
 * its owner (stream_k_end). */
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "hck_internal.cuh"
#include "hck_wgmma.cuh"

namespace hck {
namespace {

constexpr int CW = 2, THREADS = 128 * (CW + 1); /* consumer warpgroups, threads */

/* Shape of an instance: a stage holds the activations of 64 k (4 runs of
 * NTOK x 16 bytes), the consumers' weights (each lane's 16-byte word), and in
 * a round's first stage the block's 64 CW group scales; the ring, then the
 * full[S] and empty[S] barriers. */
template <int NTOK> struct Geo {
    static constexpr int XB = NTOK * 64, SCB = XB + CW * 2048, SST = SCB + CW * 128;
    static constexpr int S = 216 * 1024 / SST;
    static constexpr int H = NTOK / 128, NH = 128; /* token halves of a round, wgmma N */
    static constexpr size_t BYTES = (size_t)S * SST + 16 * S;
};

#ifdef HCK_WGMMA
using namespace wgmma;

/* d (64 x 128) = (ADD ? d : 0) + A (64 x 32 e4m3, registers a) . B (shared
 * memory, 32 x 128 e4m3). Without ADD, d is written only: its old values are
 * no input, so the compiler need not keep (or copy) them. */
#define HCK_WG8PK_RS_(DLIST)                                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                             \
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " HCK_D64_STR                     \
                 ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"                                             \
                 : DLIST(d)                                                                               \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"((uint32_t)ADD))
template <bool ADD> __device__ __forceinline__ void wgmma_rs(float *d, const uint32_t *a, uint64_t db)
{
    if (ADD) HCK_WG8PK_RS_(HCK_D64);
    else HCK_WG8PK_RS_(HCK_W64);
}
#undef HCK_WG8PK_RS_

/* Named barrier of one consumer warpgroup (ids 1, 2: 0 is __syncthreads);
 * a stream-K flag's release store and acquire load (device scope). */
__device__ __forceinline__ void wg_bar(int c) { asm volatile("bar.sync %0, 128;" ::"r"(1 + c) : "memory"); }
__device__ __forceinline__ void st_release(int *f, int v)
{
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(f), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_acquire(const int *f)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
    return v;
}

/* Stream-K's end of a tile's part (rounds [ra, rb) of tile t, R rounds a
 * tile, sk blocks over U units) that is not the whole tile. The tile is
 * split between two blocks: the lower one's part (rb < R: its top segment,
 * run first) goes to its slot of the workspace with a flag; the owner (the
 * tile's last rounds) waits for the flags of the blocks below that hold the
 * tile's first rounds and adds their parts into acc in block order, then
 * stores the tile. */
template <int NTOK>
__device__ __forceinline__ void stream_k_end(float *acc, int sk, int U, int c, int ct, int t, int ra, int rb, int R,
                                             float *__restrict__ ws)
{
    constexpr int A = NTOK / 2;
    int *flags = (int *)ws;
    float *part = ws + stream_k_flags(sk);
    if (rb < R) {
        float *mine = part + ((int64_t)blockIdx.x * CW + c) * (128 * A);
#pragma unroll
        for (int i = 0; i < A; i++) __stcg(mine + i * 128 + ct, acc[i]);
        __threadfence();
        wg_bar(c);
        if (ct == 0) st_release(flags + 4 * blockIdx.x + c, 1);
        return;
    }
    for (int b = (int)blockIdx.x - 1; b >= 0 && (int64_t)U * (b + 1) / sk > (int64_t)t * R; b--) {
        if (ct == 0)
            while (ld_acquire(flags + 4 * b + c) == 0) {
            }
        wg_bar(c);
        const float *theirs = part + ((int64_t)b * CW + c) * (128 * A);
#pragma unroll
        for (int i = 0; i < A; i++) acc[i] += __ldcg(theirs + i * 128 + ct);
    }
}

/* Stream-K's order of a block's units [lo, hi) (tile, round): from the top
 * down, tile segment by tile segment, f(x, y, ra, rb, q) for rounds [ra, rb)
 * of tile (x, y) whose first ring step is q. The owner of a split tile (the
 * block with its last rounds) thus runs its part after the block below ran
 * its own part first, and waits only on blocks below it (dispatched before
 * it; the launch has at most one block per SM, all resident). */
template <class F> __device__ __forceinline__ void for_segments(int lo, int hi, int R, int nx, F f)
{
    int q = 0;
#pragma unroll 1
    for (int top = hi; top > lo;) {
        const int t = (top - 1) / R, st = max(lo, t * R);
        f(t % nx, t / nx, st - t * R, top - t * R, q);
        q += 2 * (top - st);
        top = st;
    }
}
#endif

/* SK: stream-K (sk blocks over the units of all tiles, one expert), else
 * tile (blockIdx.x, blockIdx.y) of expert blockIdx.z / splits, its split's
 * rounds. */
template <int NTOK, bool SK>
__global__ void __launch_bounds__(THREADS, 1)
wg8pk_kernel(hck_desc d, hck_ptrs p, const uint8_t *__restrict__ xa, const float *__restrict__ tscale,
             const int64_t *__restrict__ offsets, int64_t rows, uint16_t *__restrict__ y, int splits, int sk,
             int ny, float *__restrict__ ws)
{
#ifdef HCK_WGMMA
    using G = Geo<NTOK>;
    constexpr int S = G::S, H = G::H, NH = G::NH;
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4;
    const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int R = (int)(d.Kp / 128), nx = (int)(d.Np / (64 * CW));
    const int e = SK ? 0 : blockIdx.z / splits, split = SK ? 0 : blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    if (!SK && r0 + (int64_t)blockIdx.y * NTOK >= r1) return;
    const int U = nx * ny * R; /* stream-K's units; the launch keeps them below 2^31 */
    const int lo = SK ? (int)((int64_t)U * blockIdx.x / sk) : 0, hi = SK ? (int)((int64_t)U * (blockIdx.x + 1) / sk) : 0;
    const int p0 = SK ? 0 : R * split / splits, p1 = SK ? 0 : R * (split + 1) / splits;
    const int64_t Np = d.Np;

    extern __shared__ __align__(128) uint8_t smem8[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem8);
    const uint32_t full0 = sbase + (uint32_t)(S * G::SST), empty0 = full0 + 8 * S;
    if (tid == 0)
        for (int i = 0; i < S; i++) mbar_init(full0 + 8 * i, 1), mbar_init(empty0 + 8 * i, CW * 128);
    __syncthreads();

    if (wg == 0) { /* producer */
        /* 56 + 2 x 224 per lane fits the 64K registers; at 256 tokens ptxas
         * spills 4 bytes so, 28 with 40 / 232 or 48 / 232 */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n" ::: "memory");
        if (tid != 0) return; /* one thread issues the bulk copies */
        /* steps [2 ra, 2 rb) of tile (x, by), ring steps from q */
        auto issue = [&](int x, int by, int ra, int rb, int q) {
            /* the consumers' weights of step 0 (2048 contiguous bytes each),
             * the block's group scales of group 0, the tokens of 16-k chunk 0 */
            const uint8_t *wsrc = (const uint8_t *)(p.w + hck_pk_lane_word(Np, d.Kp, e, x * CW, 0, 0));
            const uint8_t *ssrc = (const uint8_t *)p.s + ((int64_t)e * d.G * Np + (int64_t)x * CW * 64) * 2;
            const int64_t bstart = r0 + (int64_t)by * NTOK;
            const uint8_t *xsrc = xa + bstart * 16;
            const uint32_t xbytes = (uint32_t)min((int64_t)NTOK, r1 - bstart) * 16;
#pragma unroll 1
            for (int s = 2 * ra; s < 2 * rb; s++, q++) {
                const int slot = q % S;
                const uint32_t dst = sbase + (uint32_t)(slot * G::SST), full = full0 + 8 * slot;
                if (q >= S) mbar_wait(empty0 + 8 * slot, (q / S - 1) & 1);
                const bool first = s % 2 == 0; /* a round's first step brings its group scales */
                mbar_expect_tx(full, 4 * xbytes + CW * 2048 + (first ? CW * 128 : 0));
#pragma unroll
                for (int c = 0; c < 4; c++)
                    bulk_copy(dst + (uint32_t)(c * NTOK * 16), xsrc + (int64_t)(4 * s + c) * rows * 16, xbytes, full);
                bulk_copy(dst + G::XB, wsrc + (int64_t)s * Np * 32, CW * 2048, full);
                if (first)
                    bulk_copy(dst + G::SCB, ssrc + (int64_t)(s / 2) * 128 / d.group_size * Np * 2, CW * 128, full);
            }
        };
        if (SK) for_segments(lo, hi, R, nx, issue);
        else issue(blockIdx.x, blockIdx.y, p0, p1, 0);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");

    const int c = wg - 1, ct = tid % 128;
    const int wofs = G::XB + c * 2048;
    const int sbf = d.scale_kind == HCK_S_BF16;
    float acc[NTOK / 2], tmp[NH / 2];
    /* a round's A fragments; at 128 tokens decoded while the round before
     * runs its wgmmas (a second set spills at 256; with stream-K's segment
     * state it spills 60 bytes at 128, and stream-K ran 3% slower with it) */
    constexpr bool DA = NTOK == 128 && !SK;
    uint32_t a[DA ? 2 : 1][4][4];
    /* rounds [ra, rb) of tile (x, by), ring steps from q */
    auto run = [&](int x, int by, int ra, int rb, int q) {
        const int64_t bstart = r0 + (int64_t)by * NTOK;
        const int brows = (int)min((int64_t)NTOK, r1 - bstart);
        const int n0 = 64 * (x * CW + c) + 16 * warp + gq; /* the lane's rows n0 and n0 + 8 */
        const int qb = q - 2 * ra;                          /* ring step of round pr's first: qb + 2 pr */
        int soff[2]; /* byte offsets of the lane's two group scales in a round's first slot */
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t n = n0 + 8 * h;
            const int L = d.scale_perm;
            soff[h] = G::SCB + 2 * (int)((n / L) * L + hck_inv_perm(L, (int)(n % L)) - (int64_t)x * CW * 64);
        }
#pragma unroll
        for (int i = 0; i < NTOK / 2; i++) acc[i] = 0.0f;
        auto decode = [&](uint32_t(&ar)[4][4], int pr) {
            const int j0 = qb + 2 * pr, j1 = j0 + 1;
            const int sl0 = j0 % S, sl1 = j1 % S;
            mbar_wait(full0 + 8 * sl0, (j0 / S) & 1);
            mbar_wait(full0 + 8 * sl1, (j1 / S) & 1);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint4 v = *(const uint4 *)(smem8 + (h ? sl1 : sl0) * G::SST + wofs + ct * 16);
                uint32_t *a0 = ar[2 * h], *a1 = ar[2 * h + 1];
                a0[0] = hck_nib_e4m3(v.x & 0x0f0f0f0fu), a0[1] = hck_nib_e4m3((v.x >> 4) & 0x0f0f0f0fu);
                a0[2] = hck_nib_e4m3(v.y & 0x0f0f0f0fu), a0[3] = hck_nib_e4m3((v.y >> 4) & 0x0f0f0f0fu);
                a1[0] = hck_nib_e4m3(v.z & 0x0f0f0f0fu), a1[1] = hck_nib_e4m3((v.z >> 4) & 0x0f0f0f0fu);
                a1[2] = hck_nib_e4m3(v.w & 0x0f0f0f0fu), a1[3] = hck_nib_e4m3((v.w >> 4) & 0x0f0f0f0fu);
            }
            /* here, not sunk next to the wgmmas that read them */
            if constexpr (DA)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    asm volatile("" : "+r"(ar[i][0]), "+r"(ar[i][1]), "+r"(ar[i][2]), "+r"(ar[i][3]));
        };
        auto round = [&](int pr, auto parity) {
            constexpr int P = DA ? decltype(parity)::value : 0;
            if constexpr (!DA) decode(a[0], pr);
            const int sl0 = (qb + 2 * pr) % S, sl1 = (qb + 2 * pr + 1) % S;
            const uint32_t x0 = sbase + (uint32_t)(sl0 * G::SST), x1 = sbase + (uint32_t)(sl1 * G::SST);
#pragma unroll
            for (int h = 0; h < H; h++) {
                const uint32_t xh = (uint32_t)(h * NH * 16), kb = 2 * NTOK * 16;
                fence();
                wgmma_rs<false>(tmp, a[P][0], desc_k(x0 + xh, NTOK * 16));
                wgmma_rs<true>(tmp, a[P][1], desc_k(x0 + kb + xh, NTOK * 16));
                wgmma_rs<true>(tmp, a[P][2], desc_k(x1 + xh, NTOK * 16));
                wgmma_rs<true>(tmp, a[P][3], desc_k(x1 + kb + xh, NTOK * 16));
                commit();
                if (DA && h == 0 && pr + 1 < rb) decode(a[DA ? 1 - P : 0], pr + 1);
                wait<0>();
                fence_acc<NH>(tmp);
                const uint8_t *sc = smem8 + sl0 * G::SST;
                const float c0 = h2f(*(const uint16_t *)(sc + soff[0]), sbf), c1 = h2f(*(const uint16_t *)(sc + soff[1]), sbf);
                float *ah = acc + h * (NH / 2);
#pragma unroll
                for (int j = 0; j < NH / 2; j += 4) {
                    ah[j] = fmaf(tmp[j], c0, ah[j]), ah[j + 1] = fmaf(tmp[j + 1], c0, ah[j + 1]);
                    ah[j + 2] = fmaf(tmp[j + 2], c1, ah[j + 2]), ah[j + 3] = fmaf(tmp[j + 3], c1, ah[j + 3]);
                }
            }
            mbar_arrive(empty0 + 8 * sl0);
            mbar_arrive(empty0 + 8 * sl1);
        };
        using I0 = std::integral_constant<int, 0>;
        using I1 = std::integral_constant<int, 1>;
        if (DA) decode(a[0], ra);
        int pr = ra;
        if constexpr (DA) {
#pragma unroll 1
            for (; pr + 1 < rb; pr += 2) {
                round(pr, I0());
                round(pr + 1, I1());
            }
        }
#pragma unroll 1
        for (; pr < rb; pr++) round(pr, I0());
        const float cs = 512.0f * (d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e]);
        if (SK && !(ra == 0 && rb == R))
            stream_k_end<NTOK>(acc, sk, U, c, ct, by * nx + x, ra, rb, R, ws);
        if (!SK || rb == R)
            store_rows<NTOK>(d, p, acc, e, n0, tq, brows, bstart, tscale, SK ? 1 : splits, ws, y,
                             [&](int64_t) { return cs; });
    };
    if (SK) for_segments(lo, hi, R, nx, run);
    else run(blockIdx.x, blockIdx.y, p0, p1, 0);
#endif
}

/* The instantiations: NTOK (each with both schedules). */
#define HCK_WG8PK_INSTANCES(X) X(128) X(256)

/* Tile-size choices (sm90 only): tokens per block by the largest expert's
 * rows (at most 16 rows go to the small-M family, hck_small16.cu). */
struct Tune {
    int64_t rows_max;
    int ntok;
};
constexpr Tune TUNE_SM90[] = {{128, 128}, {INT64_MAX, 256}};

const Tune &tune(int64_t rows) { return tune_pick(TUNE_SM90, rows); }

#define HCK_WG8PK_KEY_(NTOK) TileKey{0, NTOK, 0},
constexpr TileKey KEYS[] = {HCK_WG8PK_INSTANCES(HCK_WG8PK_KEY_)};
#undef HCK_WG8PK_KEY_
constexpr bool row_ok(const Tune &t) { return instances_of(KEYS, 0, t.ntok) == 1; }
static_assert(all_rows(TUNE_SM90, row_ok), "a tuning row without its instance");

}  // namespace

bool wg8pk_takes(const hck_desc &d, int sm)
{
    return sm == 90 && d.act_quant == HCK_A_E4M3 && d.zp_kind == HCK_Z_NONE && !d.native_dequant &&
           !d.global_channel && d.Np % 128 == 0 && d.Kp % 128 == 0 && d.layout == HCK_L_PACKED_K &&
           d.wbits == 4 && d.wkind == HCK_W_INT2FP && !d.zp_in_repack && d.transposed &&
           (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) && d.group_size % 128 == 0;
}

cudaError_t wg8pk_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_WG8PK_ATTR_(NTOK)                                                 \
    smem_limit(e, wg8pk_kernel<NTOK, false>, Geo<NTOK>::BYTES); \
    smem_limit(e, wg8pk_kernel<NTOK, true>, Geo<NTOK>::BYTES);
    HCK_WG8PK_INSTANCES(HCK_WG8PK_ATTR_)
#undef HCK_WG8PK_ATTR_
    return e;
}

cudaError_t launch_wg8pk(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                         int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    const Tune &t = tune(max_rows);
    return launch_fp8_wgmma(L, x, offsets, rows, max_rows, d.Np / (64 * CW), t.ntok, L->sms, true, y, xa, tscale,
                            ws, st, [&](dim3 grid, int splits, int sk, int ny) {
#define HCK_WG8PK_CASE_(NTOK)                                                                                    \
    if (t.ntok == NTOK && sk > 0)                                                                                \
        wg8pk_kernel<NTOK, true><<<grid, THREADS, Geo<NTOK>::BYTES, st>>>(d, L->p, xa, tscale, offsets, rows, y, \
                                                                          splits, sk, ny, ws);                   \
    else if (t.ntok == NTOK)                                                                                     \
        wg8pk_kernel<NTOK, false><<<grid, THREADS, Geo<NTOK>::BYTES, st>>>(d, L->p, xa, tscale, offsets, rows, y, \
                                                                           splits, sk, ny, ws);
                                HCK_WG8PK_INSTANCES(HCK_WG8PK_CASE_)
#undef HCK_WG8PK_CASE_
                            });
}

size_t wg8pk_ws_bytes(const hck_layer *L, int64_t rows)
{
    const int64_t sk = L->sms, ntok = 256; /* stream-K: at most sms blocks, the largest instance */
    const size_t skb = (size_t)(stream_k_flags(sk) + sk * CW * 128 * (ntok / 2)) * sizeof(float);
    return std::max(fp8_wgmma_ws_bytes(L, rows), skb);
}

}  // namespace hck
