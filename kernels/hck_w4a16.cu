/* hck_w4a16.cu - the mma.sync family: uint4 weights x fp16/bf16 activations
 * on the tiled layout of humming-kernels 0.1.19 (its normal mini-block order,
 * the tiles of a16 layers on every arch), read in registers straight into
 * mma.m16n8k16 B fragments.
 *
 * It takes the layers with 4-bit offset-binary codes (no zero point, no int->fp
 * transform, no e0m recoding), 16-bit activations and fp16/bf16 group scales
 * (perm64, group a multiple of 16) or channel scales (perm32); the others run
 * the verification GEMM (hck_gemm.cu). A lane's 4 words of a tile row are one
 * 16-byte load; two nibbles masked into the halves, OR the exponent of 1024
 * (fp16) or 128 (bf16) and minus 1032 / 136 give code - 8 exactly; group
 * scales multiply the B pairs (16-bit rounding of value x scale, as Humming),
 * channel scales the fp32 accumulators. A block is 4 warps on 4 tiles of 64
 * columns and 16 MT TG tokens; MT = 1 double-buffers the weight registers
 * and stages the split's scales, TG = 2 double-buffers the activations with
 * cp.async. Split K sums float atomics into a workspace, then a pass adds the
 * bias and rounds. */
#include <cstdint>

#include "hck_internal.cuh"

namespace hck {
namespace {

constexpr int WARPS = 4;
constexpr size_t SMEM_MAX = 96 * 1024; /* dynamic shared memory limit set at layer creation */

/* mma16816 with C = 0: d = a b (the first product of a sum; no zeroing) */
template <bool BF>
__device__ __forceinline__ void mma16816_zc(float *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    const float z = 0.0f;
    if (BF)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};"
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(z));
}

__device__ __forceinline__ void ldsm4(uint32_t *a, const void *p)
{
    uint32_t s = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(s));
}

/* TG > 1 (M > 64): TG groups of 4 warps on the same 4 column tiles and
 * consecutive 16 MT-token slices (a 16 MT TG-token block; the groups share each
 * weight row through L1), activations double-buffered in shared memory and
 * fetched with cp.async while the previous chunk is multiplied. */
template <int MT, int TG = 1> struct Shape {
    static constexpr int KC = MT == 1 ? 1024 : (TG > 1 ? 128 : 256);  /* k per staged chunk */
    static constexpr int XLD = KC + 8;                                 /* padded row (16-bit units) */
};

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(bytes));
}

template <bool BF, bool SCALE_C, int MT, int TG = 1>
__global__ void __launch_bounds__(WARPS * TG * 32)
w4a16_kernel(hck_desc d, hck_ptrs p, const uint16_t *__restrict__ x, const int64_t *__restrict__ offsets,
             uint16_t *__restrict__ y, int splits, float *__restrict__ ws)
{
    constexpr int KC = Shape<MT, TG>::KC, XLD = Shape<MT, TG>::XLD;
    constexpr int U = MT == 1 ? 8 : 4;   /* weight loads per batch and warp */
    constexpr bool PIPE = MT == 1;       /* double-buffered weight registers, scales in smem */
    constexpr bool ASYNC = TG > 1;       /* double-buffered activations via cp.async */
    constexpr int NT = WARPS * TG * 32, BR = 16 * MT * TG; /* threads, block tokens */
    const int tid = threadIdx.x, warp = (tid / 32) % WARPS, tg = tid / (32 * WARPS);
    const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t bstart = r0 + (int64_t)blockIdx.y * BR;
    if (bstart >= r1) return;
    const int brows = (int)min((int64_t)BR, r1 - bstart);
    const int64_t mstart = bstart + 16 * MT * tg;          /* this warp's token slice */
    const int mrows = brows - 16 * MT * tg;
    const int ntiles = (int)(d.Np / 64), nb = blockIdx.x * WARPS + warp;
    const bool active = nb < ntiles && mrows > 0;
    const int rows = (int)(d.Kp / 16);
    const int kb0 = (int)((int64_t)rows * split / splits);
    const int kb1 = (int)((int64_t)rows * (split + 1) / splits);
    const int64_t row_words = d.Np * 2, K = d.K;
    const int gs = (int)d.group_size, sbf = d.scale_kind == HCK_S_BF16;
    const int s1 = d.transposed ? 8 : 4, s2 = d.transposed ? 4 : 8;
    const uint32_t *wp = p.w + ((int64_t)e * rows) * row_words + (int64_t)nb * 128 + lane * 4;
    const uint16_t *sp = (const uint16_t *)p.s;
    extern __shared__ __align__(16) uint16_t smem16[];
    uint16_t *xs = smem16;                  /* [BR][XLD] activations (ASYNC: two buffers) */
    uint16_t *ss = smem16 + BR * XLD;       /* PIPE, group scales: [groups][256] */
    const int xoff = 16 * MT * tg;          /* the warp's first row in the staged tile */
    const int g0 = kb0 * 16 / gs;

    float acc[MT][4][2][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int c = 0; c < 4; c++) acc[mt][i][j][c] = 0.0f;
    uint32_t sc[4][2];
    int cur_g = -1;
    const bool vec = (K & 7) == 0;

    /* B-side group scale of tile row kb (perm64: 8 consecutive entries per lane) */
    auto get_scale = [&](int kb) {
        const int g = kb * 16 / gs;
        if (g == cur_g) return;
        cur_g = g;
        const uint4 sv = PIPE ? *(const uint4 *)&ss[(g - g0) * 256 + warp * 64 + 8 * gq]
                              : __ldg((const uint4 *)(sp + ((int64_t)e * d.G + g) * d.Np +
                                                      (int64_t)nb * 64 + 8 * gq));
        const uint32_t sw[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
        for (int i3 = 0; i3 < 4; i3++) {
            const uint32_t lo = conv16<BF>(sw[i3] & 0xffffu, sbf);
            const uint32_t hi = conv16<BF>(sw[i3] >> 16, sbf);
            sc[i3][0] = lo | lo << 16;
            sc[i3][1] = hi | hi << 16;
        }
    };
    /* one tile row: the lane's 4 words, activations at chunk column 16 t */
    auto row = [&](const uint4 &w4, int t) {
        uint32_t a[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
            ldsm4(a[mt], &xs[(xoff + 16 * mt + (lane % 16)) * XLD + t * 16 + 8 * (lane / 16)]);
        const uint32_t wd[4] = {w4.x, w4.y, w4.z, w4.w};
#pragma unroll
        for (int i3 = 0; i3 < 4; i3++) {
            uint32_t b00 = dq<BF>(wd[i3], 0), b01 = dq<BF>(wd[i3], s1);
            uint32_t b10 = dq<BF>(wd[i3], s2), b11 = dq<BF>(wd[i3], 12);
            if (!SCALE_C) {
                const uint32_t z = 0x80008000u; /* -0: a * s + (-0) = a * s */
                b00 = fma2<BF>(b00, sc[i3][0], z);
                b01 = fma2<BF>(b01, sc[i3][0], z);
                b10 = fma2<BF>(b10, sc[i3][1], z);
                b11 = fma2<BF>(b11, sc[i3][1], z);
            }
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                mma16816<BF>(acc[mt][i3][0], a[mt], b00, b01);
                mma16816<BF>(acc[mt][i3][1], a[mt], b10, b11);
            }
        }
    };

    /* stage chunk kc's activations into buf: BR rows x KC k (zero outside) */
    auto stage = [&](int kc, uint16_t *buf) {
        const int nrow = min(KC / 16, kb1 - kc);
        for (int i = tid; i < BR * (KC / 8); i += NT) {
            const int r = i / (KC / 8), c = i % (KC / 8);
            const int64_t k = (int64_t)kc * 16 + c * 8;
            const bool in = r < brows && c < nrow * 2;
            const uint16_t *src = x + (bstart + r) * K + k;
            if (ASYNC && vec) {
                const bool ok = in && k < K;
                cp_async16(&buf[r * XLD + c * 8], ok ? (const void *)src : (const void *)x, ok ? 16 : 0);
                continue;
            }
            uint4 v = make_uint4(0, 0, 0, 0);
            if (in) {
                if (vec) {
                    if (k < K) v = __ldg((const uint4 *)src);
                } else {
                    uint16_t t[8];
#pragma unroll
                    for (int j = 0; j < 8; j++) t[j] = k + j < K ? src[j] : 0;
                    v.x = t[0] | (uint32_t)t[1] << 16;
                    v.y = t[2] | (uint32_t)t[3] << 16;
                    v.z = t[4] | (uint32_t)t[5] << 16;
                    v.w = t[6] | (uint32_t)t[7] << 16;
                }
            }
            *(uint4 *)&buf[r * XLD + c * 8] = v;
        }
    };
    int xb = 0;
    if (ASYNC) {
        stage(kb0, xs);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kc = kb0; kc < kb1; kc += KC / 16) {
        const int nrow = min(KC / 16, kb1 - kc);
        if (ASYNC) {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
            __syncthreads(); /* chunk kc in buffer xb; everyone is done with buffer xb ^ 1 */
            if (kc + KC / 16 < kb1) {
                stage(kc + KC / 16, smem16 + (xb ^ 1) * BR * XLD);
                asm volatile("cp.async.commit_group;" ::: "memory");
            }
            xs = smem16 + xb * BR * XLD;
            xb ^= 1;
        } else {
            __syncthreads();
            stage(kc, xs);
        }
        if (PIPE && !SCALE_C && kc == kb0) { /* scales of the whole k range, once */
            const int ng = (kb1 * 16 - 1) / gs - g0 + 1;
            for (int i = tid; i < ng * 32; i += NT) {
                const int gi = i / 32;
                const int64_t col = (int64_t)blockIdx.x * 256 + (i % 32) * 8;
                uint4 v = make_uint4(0, 0, 0, 0);
                if (col < d.Np) v = __ldg((const uint4 *)(sp + ((int64_t)e * d.G + g0 + gi) * d.Np + col));
                *(uint4 *)&ss[gi * 256 + (i % 32) * 8] = v;
            }
        }
        if (!ASYNC) __syncthreads();
        if (!active) continue;
        if (PIPE) {
            uint4 wa[U], wb[U];
            auto issue = [&](uint4 *w, int t) {
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (t + u < nrow) w[u] = __ldg((const uint4 *)(wp + (int64_t)(kc + t + u) * row_words));
            };
            auto run = [&](const uint4 *w, int t) {
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (t + u < nrow) {
                        if (!SCALE_C) get_scale(kc + t + u);
                        row(w[u], t + u);
                    }
            };
            issue(wa, 0);
            for (int t0 = 0; t0 < nrow; t0 += 2 * U) {
                issue(wb, t0 + U);
                run(wa, t0);
                issue(wa, t0 + 2 * U);
                run(wb, t0 + U);
            }
        } else {
            for (int t0 = 0; t0 < nrow; t0 += U) {
                uint4 wv[U];
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (t0 + u < nrow) wv[u] = __ldg((const uint4 *)(wp + (int64_t)(kc + t0 + u) * row_words));
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (t0 + u < nrow) {
                        if (!SCALE_C) get_scale(kc + t0 + u);
                        row(wv[u], t0 + u);
                    }
            }
        }
    }
    if (!active) return;

    float cs[4][2][2];
#pragma unroll
    for (int i3 = 0; i3 < 4; i3++)
#pragma unroll
        for (int i4 = 0; i4 < 2; i4++) cs[i3][i4][0] = cs[i3][i4][1] = 1.0f;
    if (SCALE_C) {
#pragma unroll
        for (int ch = 0; ch < 2; ch++) {
            const uint4 sv = __ldg((const uint4 *)(sp + (int64_t)e * d.Np + (int64_t)nb * 64 + 32 * ch + 8 * tq));
            const uint32_t sw[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
            for (int t = 0; t < 8; t++) {
                /* t = 2 (2 (i3 % 2) + i4) + c */
                const uint32_t raw = (sw[t / 2] >> (16 * (t % 2))) & 0xffffu;
                cs[2 * ch + t / 4][(t / 2) % 2][t % 2] = h2f((uint16_t)raw, sbf);
            }
        }
    }
    const float gscale = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i3 = 0; i3 < 4; i3++)
#pragma unroll
            for (int i4 = 0; i4 < 2; i4++)
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    const int ml = 16 * mt + gq + 8 * (c >> 1);
                    const int64_t n = (int64_t)nb * 64 + 16 * i3 + 8 * i4 + 2 * tq + (c & 1);
                    if (ml >= mrows || n >= d.N) continue;
                    const int64_t m = mstart + ml;
                    float v = acc[mt][i3][i4][c] * cs[i3][i4][c & 1] * gscale;
                    if (splits > 1) {
                        atomicAdd(ws + m * d.N + n, v);
                        continue;
                    }
                    v += hck_bias(&d, &p, e, n);
                    y[m * d.N + n] = f2h(v, d.out_bf16);
                }
}

/* The instantiations: (bf16, scales on C, MT, TG). */
#define HCK_W4A16_INSTANCES(X)                                                                   \
    X(false, false, 1, 1) X(false, true, 1, 1) X(true, false, 1, 1) X(true, true, 1, 1)          \
    X(false, false, 4, 1) X(false, true, 4, 1) X(true, false, 4, 1) X(true, true, 4, 1)          \
    X(false, false, 4, 2) X(false, true, 4, 2) X(true, false, 4, 2) X(true, true, 4, 2)

/* Tile-size choices per arch: tokens per block (16 MT TG) by the largest
 * expert's rows, and the resident blocks per SM the split-K model assumes. */
struct Tune {
    int64_t rows_max;
    int mt, tg, blocks_per_sm;
};
constexpr Tune TUNE_SM80[] = {{16, 1, 1, 3}, {64, 4, 1, 2}, {INT64_MAX, 4, 2, 1}};
constexpr Tune TUNE_SM89[] = {{16, 1, 1, 3}, {64, 4, 1, 2}, {INT64_MAX, 4, 2, 1}};
constexpr Tune TUNE_SM90[] = {{16, 1, 1, 3}, {64, 4, 1, 2}, {INT64_MAX, 4, 2, 1}};

const Tune &tune(int sm, int64_t rows)
{
    if (sm >= 90) return tune_pick(TUNE_SM90, rows);
    if (sm >= 89) return tune_pick(TUNE_SM89, rows);
    return tune_pick(TUNE_SM80, rows);
}

/* tile sizes (MT, TG) of each instance: four per row (bf16 or not, scales on C or not) */
#define HCK_W4A16_KEY_(BF, ONC, MT, TG) TileKey{MT, TG, 0},
constexpr TileKey KEYS[] = {HCK_W4A16_INSTANCES(HCK_W4A16_KEY_)};
#undef HCK_W4A16_KEY_
constexpr bool row_ok(const Tune &t) { return instances_of(KEYS, t.mt, t.tg) == 4; }
static_assert(all_rows(TUNE_SM80, row_ok) && all_rows(TUNE_SM89, row_ok) && all_rows(TUNE_SM90, row_ok),
              "a tuning row without its instances");

/* Dynamic shared memory: staged activations, and for MT = 1 with group
 * scales the scales of the block's k range (4 tiles). */
size_t smem_of(const hck_desc &d, int mt, int tg, int splits)
{
    const int xld = (mt == 1 ? Shape<1>::XLD : tg > 1 ? Shape<4, 2>::XLD : Shape<4>::XLD);
    size_t b = (size_t)16 * mt * tg * xld * 2 * (tg > 1 ? 2 : 1);
    if (mt == 1 && d.scale_perm == 64) {
        const int64_t krows = d.Kp / 16, kr = (krows + splits - 1) / splits + 1;
        b += (size_t)((kr * 16) / d.group_size + 2) * 256 * 2;
    }
    return b;
}

/* Split-K: k units of 16 rows, a block costs its rows + 16, a split 8 more,
 * at least 4 rows per split, and the staged scales must fit (0: they fit no split). */
int split_of(const hck_desc &d, const Tune &t, int64_t blocks, int sms)
{
    return split_waves(d.Kp / 16, 4, 16.0, 8.0, blocks, (int64_t)sms * t.blocks_per_sm,
                       [&](int64_t s) { return smem_of(d, t.mt, t.tg, (int)s) <= SMEM_MAX; });
}

}  // namespace

bool w4a16_takes(const hck_desc &d)
{
    return d.layout == HCK_L_TILED && !d.transposed && !d.native_dequant && d.abits == 16 && d.wbits == 4 &&
           d.wkind == HCK_W_UINT && d.zp_kind == HCK_Z_NONE && !d.global_channel &&
           (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) &&
           ((d.scale_perm == 64 && d.group_size % 16 == 0) || (d.scale_perm == 32 && d.G == 1));
}

bool w4a16_sm90_takes(const hck_desc &d, int sm, int64_t kp_multiple)
{
    return sm == 90 && w4a16_takes(d) && d.Kp % kp_multiple == 0 && d.K % 8 == 0 &&
           (d.scale_perm == 32 || d.group_size % 64 == 0);
}

cudaError_t w4a16_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_W4A16_ATTR_(BF, ONC, MT, TG) smem_limit(e, w4a16_kernel<BF, ONC, MT, TG>, SMEM_MAX);
    HCK_W4A16_INSTANCES(HCK_W4A16_ATTR_)
#undef HCK_W4A16_ATTR_
    return e;
}

size_t w4a16_ws_bytes(const hck_layer *L, int64_t rows) { return (size_t)rows * L->d.N * sizeof(float) + 4; }

cudaError_t launch_w4a16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                         int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    const Tune &t = tune(L->sm, max_rows);
    const int64_t br = 16 * t.mt * t.tg;
    const int64_t blocks = ((d.Np / 64 + 3) / 4) * ((max_rows + br - 1) / br) * d.E;
    if (max_rows == 0) return cudaSuccess;
    const int splits = split_of(d, t, blocks, L->sms);
    if (splits == 0) return cudaErrorInvalidConfiguration;
    const size_t smem = smem_of(d, t.mt, t.tg, splits);
    const dim3 grid((unsigned)((d.Np / 64 + 3) / 4), (unsigned)((max_rows + br - 1) / br), (unsigned)(d.E * splits));
    if (splits > 1) {
        const cudaError_t e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st);
        if (e != cudaSuccess) return e;
    }
    const bool bf = d.out_bf16, onc = d.scale_perm == 32;
#define HCK_W4A16_CASE_(BF, ONC, MT, TG)                                                                 \
    if (bf == BF && onc == ONC && t.mt == MT && t.tg == TG)                                              \
        w4a16_kernel<BF, ONC, MT, TG><<<grid, WARPS * TG * 32, smem, st>>>(d, L->p, x, offsets, y, splits, ws);
    HCK_W4A16_INSTANCES(HCK_W4A16_CASE_)
#undef HCK_W4A16_CASE_
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || splits == 1) return e;
    return launch_splitk_finish(L, ws, offsets, rows, y, st);
}

}  // namespace hck
