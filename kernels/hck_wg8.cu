/* hck_wg8.cu - the Hopper fp8 wgmma family (sm_90a): e4m3 activations x
 * uint4 weights on the packed-K layout (sm90 W4A8, groups a multiple of 128)
 * or e4m3 weights on the flat layout (W8A8 fp8, channel scales).
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
 * Packed-K weights are the A operand in registers: a lane's 16-byte word of a
 * 64-k row holds the m64nNk32 A fragment of the warp's 16 columns for both k32
 * halves (low nibbles rows gq, high nibbles rows gq + 8, bytes in k order).
 * The int->fp codes (v >= 0: v; v < 0: 8 | (-1 - v)) become e4m3 bytes of
 * v 2^-9 (subnormal, exact; 8 2^-9 is the smallest normal): c < 8 gives c,
 * c >= 8 gives 0x80 | ((c & 7) + 1); 2^9 comes back in the epilogue. A
 * round of 128 k (one scale group or part of one) runs its tokens in H halves
 * on the same A registers; each half sums into a set of partial sums, added
 * into the float32 sums times the group's scale, as Humming promotes per
 * group. Up to 128 tokens the halves alternate between two sets, so that one
 * half's wgmmas run while the half before is promoted (wait_group 1), over
 * four rounds (two sets of A registers) before the wgmmas drain; at 256
 * tokens (two 128-token halves) there is room for one set only, and each half
 * drains before its promotion.
 *
 * A block is WG warpgroups on WG x 64 columns and NTOK tokens, one barrier per
 * round. Split K sums float atomics into a workspace, then a pass adds the
 * bias and rounds. */
#include <cstdint>
#include <type_traits>

#include "hck_internal.cuh"
#include "hck_wgmma.cuh"

namespace hck {
namespace {

enum { F_W4PK = 0, F_E4M3 = 1 }; /* weight form */

/* Shape of an instance. A stage: the activations of 64 k (4 runs of NTOK x
 * 16 bytes), then the weights of 64 k (packed-K: each lane's 16-byte word,
 * copied and read back by the lane itself; flat: per warpgroup 4 runs of 64
 * columns x 16 bytes). SS: A from shared memory (flat weights); PROMOTE:
 * rounds summed apart (packed-K); PP: halves alternate between NB = 2 sets of
 * sums (the file's comment); H: token halves of a round; RPI: rounds per
 * drain. A round refills the slots of the round two back: the wgmmas of the
 * round before may still read theirs, hence PF = S - 4. */
template <int F, int NTOK, int WG> struct Geo {
    static constexpr bool SS = F == F_E4M3, PROMOTE = F == F_W4PK;
    static constexpr bool PP = PROMOTE && NTOK <= 128; /* at 256 a second set spills (255 registers) */
    static constexpr int H = !PROMOTE || NTOK == 16 ? 1 : PP ? NTOK / 64 : NTOK / 128;
    static constexpr int NH = NTOK / H; /* wgmma N */
    static constexpr int RPI = PP ? 4 : 1, NB = PP ? 2 : 1;
    static constexpr int XB = NTOK * 64;
    static constexpr int SST = XB + WG * (SS ? 4096 : 2048);
    static constexpr int BUDGET = NTOK == 16 ? 52 * 1024 : 200 * 1024;  /* 4 blocks or 1 per SM */
    static constexpr int S = (BUDGET / SST) & ~1;                          /* ring stages, even */
    static constexpr int PF = S - 4;                                       /* stages copied ahead */
};

template <int F, int NTOK, int WG> constexpr size_t smem_bytes() { return (size_t)Geo<F, NTOK, WG>::S * Geo<F, NTOK, WG>::SST; }

#ifdef HCK_WGMMA
using namespace wgmma;

/* d (64 x N, N 16, 64 or 128) = (ADD ? d : 0) + A (64 x 32 e4m3, registers a) .
 * B (shared memory, 32 x N e4m3). Without ADD, d is written only: its old
 * values are no input, so the compiler need not keep (or copy) them. */
#define HCK_WG8_RS_(SHAPE, DSTR, DLIST, A, DB, P)                                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\n"                                       \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32.e4m3.e4m3 " DSTR ", {" A "}, " DB ", p, 1, 1;\n}\n" \
                 : DLIST(d)                                                                          \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"((uint32_t)ADD))
template <int N, bool ADD>
__device__ __forceinline__ void wgmma_rs(float *d, const uint32_t *a, uint64_t db)
{
    static_assert(N == 16 || N == 64 || N == 128, "packed-K halves of 16, 64 or 128 tokens");
#define HCK_WG8_N16_(DLIST) HCK_WG8_RS_("m64n16k32", HCK_D8_STR, DLIST, "%8, %9, %10, %11", "%12", "%13")
#define HCK_WG8_N64_(DLIST) HCK_WG8_RS_("m64n64k32", HCK_D32_STR, DLIST, "%32, %33, %34, %35", "%36", "%37")
#define HCK_WG8_N128_(DLIST) HCK_WG8_RS_("m64n128k32", HCK_D64_STR, DLIST, "%64, %65, %66, %67", "%68", "%69")
    if (N == 16 && ADD) HCK_WG8_N16_(HCK_D8);
    else if (N == 16) HCK_WG8_N16_(HCK_W8);
    else if (N == 64 && ADD) HCK_WG8_N64_(HCK_D32);
    else if (N == 64) HCK_WG8_N64_(HCK_W32);
    else if (ADD) HCK_WG8_N128_(HCK_D64);
    else HCK_WG8_N128_(HCK_W64);
#undef HCK_WG8_N16_
#undef HCK_WG8_N64_
#undef HCK_WG8_N128_
}
#undef HCK_WG8_RS_
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

template <int F, int NTOK, int WG>
__global__ void __launch_bounds__(WG * 128, 1)
wg8_kernel(hck_desc d, hck_ptrs p, const uint8_t *__restrict__ xa, const float *__restrict__ tscale,
           const int64_t *__restrict__ offsets, int64_t rows, uint16_t *__restrict__ y, int splits,
           float *__restrict__ ws)
{
    static_assert(Geo<F, NTOK, WG>::PF >= 2 && Geo<F, NTOK, WG>::NH * Geo<F, NTOK, WG>::H == NTOK &&
                      Geo<F, NTOK, WG>::SS != Geo<F, NTOK, WG>::PROMOTE,
                  "a ring of at least two stages ahead; halves of NTOK");
#ifdef HCK_WGMMA
    using G = Geo<F, NTOK, WG>;
    constexpr int S = G::S, PF = G::PF, H = G::H, NH = G::NH, RPI = G::RPI, NB = G::NB;
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

    /* packed-K: the lane's word of step 0; flat: its warpgroup's 64 columns
     * of chunk 0 (16-byte units); then the units between steps */
    const uint8_t *wsrc;
    int64_t wstride;
    if (G::SS) {
        wstride = Np * 64;
        wsrc = (const uint8_t *)p.w + hck_flat8_unit(Np, d.Kp, e, (int64_t)64 * nb);
    } else {
        wstride = Np * 32;
        wsrc = (const uint8_t *)(p.w + hck_pk_lane_word(Np, d.Kp, e, nb, warp, lane));
    }

    extern __shared__ __align__(128) uint8_t smem8[];
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem8);
    const int wofs = G::XB + wg * (G::SS ? 4096 : 2048); /* the warpgroup's weights in a stage */

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
            if (G::SS) {
#pragma unroll
                for (int j = 0; j < 2; j++) { /* unit i: chunk i / 64, column i % 64 */
                    const int i = tid % 128 + 128 * j;
                    cp_async16(dst + wofs + i * 16, wsrc + (int64_t)s * wstride + ((int64_t)(i / 64) * Np + i % 64) * 16, 16);
                }
            } else {
                cp_async16(dst + wofs + (tid % 128) * 16, wsrc + (int64_t)s * wstride, 16);
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };

    float acc[NTOK / 2];
#pragma unroll
    for (int i = 0; i < NTOK / 2; i++) acc[i] = 0.0f;

    /* group scales of the lane's two rows (a round lies in one group) */
    const int sbf = d.scale_kind == HCK_S_BF16;
    int soff[2] = {0, 0};
    if (G::PROMOTE) {
        const int L = d.scale_perm;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t n = n0 + 8 * h;
            soff[h] = (int)((n / L) * L + hck_inv_perm(L, (int)(n % L)));
        }
    }
    uint16_t sc[2] = {0, 0};
    auto load_scales = [&](int pr) {
        if (G::PROMOTE && pr < p1) {
            const int64_t g = (int64_t)pr * 128 / d.group_size;
            const uint16_t *sp = (const uint16_t *)p.s + ((int64_t)e * d.G + g) * Np;
            sc[0] = __ldg(sp + soff[0]), sc[1] = __ldg(sp + soff[1]);
        }
    };

#pragma unroll 1
    for (int u = 0; u < PF; u++) stage(s0 + u);
    load_scales(p0);
    /* steps s, s + 1 landed; the slots refilled now are those of two rounds
     * back, which no wgmma reads any more */
    auto next_round = [&](int s) {
        asm volatile("cp.async.wait_group %0;\nfence.proxy.async.shared::cta;" ::"n"(PF - 2) : "memory");
        __syncthreads();
        stage(s + PF);
        stage(s + PF + 1);
    };
    if constexpr (G::SS) {
#pragma unroll 1
        for (int pr = p0; pr < p1; pr++) {
            const int s = 2 * pr;
            next_round(s);
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
    } else {
        /* halves and sums as the file's comment says; a round's A fragments
         * stay untouched until its last half is done, so with four rounds per
         * drain the rounds alternate between two sets of them */
        uint32_t a[RPI > 1 ? 2 : 1][4][4];
        float tmp[NB][NH / 2];
        float pc0 = 0.0f, pc1 = 0.0f; /* group scales of the last round's last half */
        auto promote = [&](float *t, int h, float c0, float c1) {
            fence_acc<NH>(t);
            float *ah = acc + h * (NH / 2);
#pragma unroll
            for (int j = 0; j < NH / 2; j += 4) {
                ah[j] = fmaf(t[j], c0, ah[j]), ah[j + 1] = fmaf(t[j + 1], c0, ah[j + 1]);
                ah[j + 2] = fmaf(t[j + 2], c1, ah[j + 2]), ah[j + 3] = fmaf(t[j + 3], c1, ah[j + 3]);
            }
        };
        auto round = [&](int pr, auto parity, auto first) {
            constexpr int P = decltype(parity)::value; /* register sets: A a[P], halves from tmp[P H % 2] */
            const int s = 2 * pr;
            next_round(s);
            const float c0 = h2f(sc[0], sbf), c1 = h2f(sc[1], sbf);
            load_scales(pr + 1);
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const uint4 v = *(const uint4 *)(smem8 + ((s + q) % S) * G::SST + wofs + (tid % 128) * 16);
                uint32_t *a0 = a[P][2 * q], *a1 = a[P][2 * q + 1];
                a0[0] = hck_nib_e4m3(v.x & 0x0f0f0f0fu), a0[1] = hck_nib_e4m3((v.x >> 4) & 0x0f0f0f0fu);
                a0[2] = hck_nib_e4m3(v.y & 0x0f0f0f0fu), a0[3] = hck_nib_e4m3((v.y >> 4) & 0x0f0f0f0fu);
                a1[0] = hck_nib_e4m3(v.z & 0x0f0f0f0fu), a1[1] = hck_nib_e4m3((v.z >> 4) & 0x0f0f0f0fu);
                a1[2] = hck_nib_e4m3(v.w & 0x0f0f0f0fu), a1[3] = hck_nib_e4m3((v.w >> 4) & 0x0f0f0f0fu);
            }
            const uint32_t x0 = sbase + (uint32_t)((s % S) * G::SST), x1 = sbase + (uint32_t)(((s + 1) % S) * G::SST);
#pragma unroll
            for (int h = 0; h < H; h++) {
                float *t = tmp[(P * H + h) % NB], *tp = tmp[(P * H + h + 1) % NB];
                fence();
                const uint32_t xh = (uint32_t)(h * NH * 16), kb = 2 * NTOK * 16; /* half, 32 k */
                wgmma_rs<NH, false>(t, a[P][0], desc_k(x0 + xh, NTOK * 16));
                wgmma_rs<NH, true>(t, a[P][1], desc_k(x0 + kb + xh, NTOK * 16));
                wgmma_rs<NH, true>(t, a[P][2], desc_k(x1 + xh, NTOK * 16));
                wgmma_rs<NH, true>(t, a[P][3], desc_k(x1 + kb + xh, NTOK * 16));
                commit();
                if constexpr (!G::PP) {
                    wait<0>();
                    promote(t, h, c0, c1);
                    continue;
                }
                wait<1>();
                if (h > 0) promote(tp, h - 1, c0, c1);
                else if (!decltype(first)::value) promote(tp, H - 1, pc0, pc1); /* the round before's last half */
            }
            pc0 = c0, pc1 = c1;
        };
        /* Four rounds per iteration, then single rounds; each iteration
         * drains its wgmmas at its end (ptxas serializes every wgmma of a loop
         * whose back edge has one in flight while sums are read). The last
         * half of a round of parity P is in tmp[(P H + H - 1) % 2]. */
        using I0 = std::integral_constant<int, 0>;
        using I1 = std::integral_constant<int, 1>;
        using First = std::true_type;
        using Next = std::false_type;
        int pr = p0;
        if constexpr (RPI == 4) {
#pragma unroll 1
            for (; pr + 3 < p1; pr += 4) {
                round(pr, I0(), First());
                round(pr + 1, I1(), Next());
                round(pr + 2, I0(), Next());
                round(pr + 3, I1(), Next());
                wait<0>();
                promote(tmp[1], H - 1, pc0, pc1);
            }
        }
#pragma unroll 1
        for (; pr < p1; pr++) {
            round(pr, I0(), First());
            if constexpr (G::PP) {
                wait<0>();
                promote(tmp[(H - 1) % NB], H - 1, pc0, pc1);
            }
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    /* rows n0, n0 + 8; token 8 j + 2 tq + c of half h at acc[h NH / 2 + 4 j + 2 r + c] */
    const float gsc = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int64_t n = n0 + 8 * r;
        if (n >= d.N) continue;
        const float cs = (G::PROMOTE ? 512.0f : (float)hck_scale(&d, &p, e, n, 0, 0)) * gsc;
        const float b = splits > 1 ? 0.0f : hck_bias(&d, &p, e, n);
#pragma unroll
        for (int j = 0; j < NTOK / 8; j++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int tl = 8 * j + 2 * tq + c; /* j runs over both halves: NH / 8 n8 blocks each */
                if (tl >= brows) continue;
                const int64_t m = bstart + tl;
                const float v = acc[4 * j + 2 * r + c] * cs * tscale[m];
                if (splits > 1) atomicAdd(ws + m * d.N + n, v);
                else y[m * d.N + n] = f2h(v + b, d.out_bf16);
            }
    }
#endif
}

/* The instantiations: (weight form, NTOK, warpgroups). */
#define HCK_WG8_INSTANCES(X)                                                                         \
    X(F_W4PK, 16, 1) X(F_W4PK, 128, 2) X(F_W4PK, 256, 2) X(F_E4M3, 16, 1) X(F_E4M3, 128, 2) X(F_E4M3, 256, 2)

/* Tile-size choices (sm90 only): tokens per block by the largest expert's
 * rows, warpgroups per block, and the resident blocks per SM the split-K
 * model assumes. */
struct Tune {
    int64_t rows_max;
    int ntok, wg, blocks_per_sm;
};
constexpr Tune TUNE_SM90[] = {{16, 16, 1, 4}, {128, 128, 2, 1}, {INT64_MAX, 256, 2, 1}};

const Tune &tune(int64_t rows) { return tune_pick(TUNE_SM90, rows); }

/* (form, NTOK, WG) of each instance: one of each form per row */
#define HCK_WG8_KEY_(F, NTOK, WG) TileKey{F, NTOK, WG},
constexpr TileKey KEYS[] = {HCK_WG8_INSTANCES(HCK_WG8_KEY_)};
#undef HCK_WG8_KEY_
constexpr bool row_ok(const Tune &t)
{
    return instances_of(KEYS, F_W4PK, t.ntok, t.wg) == 1 && instances_of(KEYS, F_E4M3, t.ntok, t.wg) == 1;
}
static_assert(all_rows(TUNE_SM90, row_ok), "a tuning row without its instances");

}  // namespace

bool wg8_takes(const hck_desc &d, int sm)
{
    if (sm != 90 || d.act_quant != HCK_A_E4M3 || d.zp_kind != HCK_Z_NONE || d.native_dequant ||
        d.global_channel || d.Np % 128 || d.Kp % 128)
        return false;
    if (d.layout == HCK_L_PACKED_K)
        return d.wbits == 4 && d.wkind == HCK_W_INT2FP && !d.zp_in_repack && d.transposed &&
               (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) && d.group_size % 128 == 0;
    if (d.layout == HCK_L_FLAT)
        return d.wbits == 8 && d.wkind == HCK_W_FLOAT && d.weight_format == HC_FMT_F8E4M3 &&
               (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) && d.G == 1;
    return false;
}

cudaError_t wg8_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_WG8_ATTR_(F, NTOK, WG) smem_limit(e, wg8_kernel<F, NTOK, WG>, smem_bytes<F, NTOK, WG>());
    HCK_WG8_INSTANCES(HCK_WG8_ATTR_)
#undef HCK_WG8_ATTR_
    return e;
}

size_t wg8_ws_bytes(const hck_layer *L, int64_t rows) { return (size_t)rows * L->d.N * sizeof(float) + 4; }

cudaError_t launch_wg8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                       int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    if (max_rows == 0) return cudaSuccess;
    cudaError_t e = launch_act8(d.act_quant, d.out_bf16, x, rows, d.K, d.Kp, xa, tscale, st);
    if (e != cudaSuccess) return e;
    const Tune &t = tune(max_rows);
    const int64_t nx = (d.Np / 64 + t.wg - 1) / t.wg, ny = (max_rows + t.ntok - 1) / t.ntok;
    const int splits = split_wgmma(d.Kp, nx * ny * d.E, (int64_t)L->sms * t.blocks_per_sm);
    const dim3 grid((unsigned)nx, (unsigned)ny, (unsigned)(d.E * splits));
    if (splits > 1 && (e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st)) != cudaSuccess)
        return e;
    const int f = d.layout == HCK_L_PACKED_K ? F_W4PK : F_E4M3;
#define HCK_WG8_CASE_(F, NTOK, WG)                                                                        \
    if (f == F && t.ntok == NTOK && t.wg == WG)                                                           \
        wg8_kernel<F, NTOK, WG><<<grid, WG * 128, smem_bytes<F, NTOK, WG>(), st>>>(d, L->p, xa, tscale, offsets, \
                                                                               rows, y, splits, ws);
    HCK_WG8_INSTANCES(HCK_WG8_CASE_)
#undef HCK_WG8_CASE_
    if ((e = cudaGetLastError()) != cudaSuccess || splits == 1) return e;
    return launch_splitk_finish(L, ws, offsets, rows, y, st);
}

}  // namespace hck
