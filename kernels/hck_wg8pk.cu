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
 * Split K sums float atomics into a workspace, then a pass adds the bias and
 * rounds. */
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
#endif

template <int NTOK>
__global__ void __launch_bounds__(THREADS, 1)
wg8pk_kernel(hck_desc d, hck_ptrs p, const uint8_t *__restrict__ xa, const float *__restrict__ tscale,
             const int64_t *__restrict__ offsets, int64_t rows, uint16_t *__restrict__ y, int splits,
             float *__restrict__ ws)
{
#ifdef HCK_WGMMA
    using G = Geo<NTOK>;
    constexpr int S = G::S, H = G::H, NH = G::NH;
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4;
    const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t bstart = r0 + (int64_t)blockIdx.y * NTOK;
    if (bstart >= r1) return;
    const int brows = (int)min((int64_t)NTOK, r1 - bstart);
    const int rounds = (int)(d.Kp / 128);
    const int p0 = (int)((int64_t)rounds * split / splits), p1 = (int)((int64_t)rounds * (split + 1) / splits);
    const int s0 = 2 * p0, s1 = 2 * p1;
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
        /* the consumers' weights of step 0 (2048 contiguous bytes each), the
         * block's group scales of group 0, the tokens of 16-k chunk 0 */
        const uint8_t *wsrc = (const uint8_t *)(p.w + hck_pk_lane_word(Np, d.Kp, e, blockIdx.x * CW, 0, 0));
        const uint8_t *ssrc = (const uint8_t *)p.s + ((int64_t)e * d.G * Np + (int64_t)blockIdx.x * CW * 64) * 2;
        const uint8_t *xsrc = xa + bstart * 16;
        const uint32_t xbytes = (uint32_t)brows * 16;
#pragma unroll 1
        for (int s = s0; s < s1; s++) {
            const int slot = (s - s0) % S, u = (s - s0) / S;
            const uint32_t dst = sbase + (uint32_t)(slot * G::SST), full = full0 + 8 * slot;
            if (u > 0) mbar_wait(empty0 + 8 * slot, (u - 1) & 1);
            const bool first = s % 2 == 0; /* a round's first step brings its group scales */
            mbar_expect_tx(full, 4 * xbytes + CW * 2048 + (first ? CW * 128 : 0));
#pragma unroll
            for (int c = 0; c < 4; c++)
                bulk_copy(dst + (uint32_t)(c * NTOK * 16), xsrc + (int64_t)(4 * s + c) * rows * 16, xbytes, full);
            bulk_copy(dst + G::XB, wsrc + (int64_t)s * Np * 32, CW * 2048, full);
            if (first) bulk_copy(dst + G::SCB, ssrc + (int64_t)(s / 2) * 128 / d.group_size * Np * 2, CW * 128, full);
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n" ::: "memory");

    const int c = wg - 1, ct = tid % 128;
    const int n0 = 64 * (blockIdx.x * CW + c) + 16 * warp + gq; /* the lane's rows n0 and n0 + 8 */
    const int wofs = G::XB + c * 2048;
    const int sbf = d.scale_kind == HCK_S_BF16;
    int soff[2]; /* byte offsets of the lane's two group scales in a round's first slot */
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int64_t n = n0 + 8 * h;
        const int L = d.scale_perm;
        soff[h] = G::SCB + 2 * (int)((n / L) * L + hck_inv_perm(L, (int)(n % L)) - (int64_t)blockIdx.x * CW * 64);
    }
    float acc[NTOK / 2], tmp[NH / 2];
#pragma unroll
    for (int i = 0; i < NTOK / 2; i++) acc[i] = 0.0f;
    /* a round's A fragments; at 128 tokens decoded while the round before
     * runs its wgmmas (a second set spills at 256) */
    constexpr bool DA = NTOK == 128;
    uint32_t a[DA ? 2 : 1][4][4];
    auto decode = [&](uint32_t(&ar)[4][4], int pr) {
        const int sl0 = (2 * pr - s0) % S, sl1 = (2 * pr + 1 - s0) % S;
        mbar_wait(full0 + 8 * sl0, ((2 * pr - s0) / S) & 1);
        mbar_wait(full0 + 8 * sl1, ((2 * pr + 1 - s0) / S) & 1);
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const uint4 v = *(const uint4 *)(smem8 + (q ? sl1 : sl0) * G::SST + wofs + ct * 16);
            uint32_t *a0 = ar[2 * q], *a1 = ar[2 * q + 1];
            a0[0] = hck_nib_e4m3(v.x & 0x0f0f0f0fu), a0[1] = hck_nib_e4m3((v.x >> 4) & 0x0f0f0f0fu);
            a0[2] = hck_nib_e4m3(v.y & 0x0f0f0f0fu), a0[3] = hck_nib_e4m3((v.y >> 4) & 0x0f0f0f0fu);
            a1[0] = hck_nib_e4m3(v.z & 0x0f0f0f0fu), a1[1] = hck_nib_e4m3((v.z >> 4) & 0x0f0f0f0fu);
            a1[2] = hck_nib_e4m3(v.w & 0x0f0f0f0fu), a1[3] = hck_nib_e4m3((v.w >> 4) & 0x0f0f0f0fu);
        }
        /* here, not sunk next to the wgmmas that read them */
        if constexpr (DA)
#pragma unroll
            for (int i = 0; i < 4; i++) asm volatile("" : "+r"(ar[i][0]), "+r"(ar[i][1]), "+r"(ar[i][2]), "+r"(ar[i][3]));
    };
    auto round = [&](int pr, auto parity) {
        constexpr int P = DA ? decltype(parity)::value : 0;
        if constexpr (!DA) decode(a[0], pr);
        const int sl0 = (2 * pr - s0) % S, sl1 = (2 * pr + 1 - s0) % S;
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
            if (DA && h == 0 && pr + 1 < p1) decode(a[DA ? 1 - P : 0], pr + 1);
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
    if (DA && p0 < p1) decode(a[0], p0);
    int pr = p0;
    if constexpr (DA) {
#pragma unroll 1
        for (; pr + 1 < p1; pr += 2) {
            round(pr, I0());
            round(pr + 1, I1());
        }
    }
#pragma unroll 1
    for (; pr < p1; pr++) round(pr, I0());

    const float gsc = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
    store_rows<NTOK>(d, p, acc, e, n0, tq, brows, bstart, tscale, splits, ws, y, [&](int64_t) { return 512.0f * gsc; });
#endif
}

/* The instantiations: NTOK. */
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
#define HCK_WG8PK_ATTR_(NTOK) smem_limit(e, wg8pk_kernel<NTOK>, Geo<NTOK>::BYTES);
    HCK_WG8PK_INSTANCES(HCK_WG8PK_ATTR_)
#undef HCK_WG8PK_ATTR_
    return e;
}

cudaError_t launch_wg8pk(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                         int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    const Tune &t = tune(max_rows);
    return launch_fp8_wgmma(L, x, offsets, rows, max_rows, d.Np / (64 * CW), t.ntok, L->sms, y, xa, tscale, ws, st,
                            [&](dim3 grid, int splits) {
#define HCK_WG8PK_CASE_(NTOK)                                                                                   \
    if (t.ntok == NTOK)                                                                                         \
        wg8pk_kernel<NTOK><<<grid, THREADS, Geo<NTOK>::BYTES, st>>>(d, L->p, xa, tscale, offsets, rows, y, splits, ws);
                                HCK_WG8PK_INSTANCES(HCK_WG8PK_CASE_)
#undef HCK_WG8PK_CASE_
                            });
}

}  // namespace hck
