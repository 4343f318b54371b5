/* hck_a8.cu - the mma.sync family for 8-bit float activations: uint4 weights
 * on the packed-K layout (sm90 W4A8, g a multiple of 64) and fp8 weights on
 * the flat layout (W8A8 fp8, channel scales), on fp16 m16n8k16 tensor-core
 * products with float32 sums.
 *
 * Every fp8 activation code and every weight number (int4 value, e4m3 or
 * e5m2) is exact in fp16 and a product of two is exact in float32, so the
 * sums equal the verification GEMM's up to summation order; group scales
 * multiply each group's float32 sum (as Humming applies them on C), channel,
 * global and token scales the output. The activations come quantized as fp16
 * codes, padded to Kp (hck_act.cu).
 *
 * A k step is 64 k. The layouts hand a lane mma B fragments directly if the
 * lane's 4 consecutive k of one column are taken as the k pairs (2tq, 2tq+1)
 * and (8+2tq, 9+2tq) of the mma: the A fragment is then one 8-byte shared load
 * per 8 rows. Packed-K: a lane's word of tile row kb holds k = 32 kb + 16 (w %
 * 2) + 4 tq + 0..3 of columns 16 (w / 2) + gq (+ 8 in the high nibbles) of its
 * 32-column half tile, in slots (0, 2, 4, 6 | 1, 3, 5, 7) for k 0..3. Flat:
 * a lane's 16 bytes are 16 consecutive k of one column (docs/layout.md).
 *
 * A block is 4 warps on 4 x 32 columns and 16 MT TG tokens (TG groups of 4
 * warps on consecutive token slices). Activations are staged per chunk in
 * shared memory with cp.async, double-buffered; weights are read in batches
 * of U k steps into registers, two batches in flight. Split K sums float
 * atomics into a workspace, then a pass adds the bias and rounds. */
#include <algorithm>
#include <cstdint>
#include <cuda_fp8.h>

#include "hck_internal.cuh"

namespace hck {
namespace {

constexpr int WARPS = 4;
constexpr size_t SMEM_MAX = 96 * 1024;

enum { F_W4PK = 0, F_E4M3 = 1, F_E5M2 = 2 }; /* weight form */

__device__ __forceinline__ void mma_f16(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                        uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t hfma2(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t r;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

/* Nibbles of bytes (lo, hi) of w as fp16 pairs (code - 8): the low nibbles
 * (*l) and the high ones (*h). 1024 + c is exact in fp16, as is 1024 + 16 c,
 * scaled by 1/16. */
__device__ __forceinline__ void nib_pairs(uint32_t w, uint32_t sel, uint32_t *l, uint32_t *h)
{
    const uint32_t p = __byte_perm(w, 0, sel);
    *l = hfma2((p & 0x000f000fu) | 0x64006400u, 0x3c003c00u, 0xe408e408u);   /* x 1 - 1032 */
    *h = hfma2((p & 0x00f000f0u) | 0x64006400u, 0x2c002c00u, 0xd480d480u);   /* x 1/16 - 72 */
}

/* int->fp preprocessed nibbles (v >= 0: v; v < 0: 8 | (-1 - v), docs/layout.md)
 * -> offset binary v + 8: the low 3 bits flip where the top bit is set, then
 * the top bit flips. */
__device__ __forceinline__ uint32_t to_offset(uint32_t w)
{
    return w ^ (((w >> 3) & 0x11111111u) * 7u) ^ 0x88888888u;
}

template <int F>
__device__ __forceinline__ uint32_t fp8_pair(uint32_t w16)
{
    const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)w16, F == F_E5M2 ? __NV_E5M2 : __NV_E4M3);
    return (uint32_t)r.x | (uint32_t)r.y << 16;
}

__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    const uint32_t s = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(bytes));
}

/* Words of one k step per lane (uint4 loads): packed-K 2, flat 4. */
template <int F> struct Form {
    static constexpr int NW = F == F_W4PK ? 2 : 4;
};

/* Staged chunk (k steps), padded row (16-bit units: conflict-free 8-byte A
 * loads for the packed-K pattern; 4-way bank conflicts for the flat one). */
template <int MT, int TG> struct Shape {
    static constexpr int CS = MT == 1 ? 8 : (TG > 1 ? 2 : 4);
    static constexpr int XLD = 64 * CS + 16;
};

/* k steps per weight batch (two batches in flight): 256 bytes a lane at 16
 * tokens, 64 or 128 at 64 and 128 tokens. */
template <int F, int MT> struct Batch {
    static constexpr int U = MT == 1 ? 256 / (16 * Form<F>::NW) : 2;
};

template <int F, int MT, int TG>
__global__ void __launch_bounds__(WARPS * TG * 32)
a8_kernel(hck_desc d, hck_ptrs p, const uint16_t *__restrict__ xq, const float *__restrict__ tscale,
          const int64_t *__restrict__ offsets, uint16_t *__restrict__ y, int splits, float *__restrict__ ws)
{
    constexpr int CS = Shape<MT, TG>::CS, XLD = Shape<MT, TG>::XLD, U = Batch<F, MT>::U;
    constexpr int NW = Form<F>::NW, NT = WARPS * TG * 32, BR = 16 * MT * TG;
    constexpr bool GROUPS = F == F_W4PK;
    const int tid = threadIdx.x, warp = (tid / 32) % WARPS, tg = tid / (32 * WARPS);
    const int lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t bstart = r0 + (int64_t)blockIdx.y * BR;
    if (bstart >= r1) return;
    const int brows = (int)min((int64_t)BR, r1 - bstart);
    const int mrows = brows - 16 * MT * tg;
    const int unit = blockIdx.x * WARPS + warp; /* this warp's 32 columns */
    const bool active = unit < (int)(d.Np / 32) && mrows > 0;
    const int steps = (int)(d.Kp / 64);
    const int s0 = (int)((int64_t)steps * split / splits), s1 = (int)((int64_t)steps * (split + 1) / splits);
    const int64_t Kp = d.Kp;
    /* per-lane weight base and the stride of one k step, in words */
    const uint32_t *wp;
    int64_t sstride;
    if (F == F_W4PK) {
        sstride = d.Np * 8;
        wp = p.w + (int64_t)e * (Kp / 64) * sstride + (int64_t)unit * 256 + lane * 4;
    } else {
        sstride = 4 * (d.Np / 64) * 256; /* 4 chunks of 16 k, each Np x 4 words */
        wp = p.w + (int64_t)e * d.Np * (Kp / 4) + ((int64_t)tq * (d.Np / 64) * 64 + (int64_t)unit * 32 + gq) * 4;
    }
    extern __shared__ __align__(16) uint16_t smem16[];
    const int xrow = 16 * MT * tg + gq; /* the lane's first A row in the staged tile */

    float acc[MT][4][4], part[GROUPS ? MT : 1][4][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[mt][i][c] = 0.0f, part[GROUPS ? mt : 0][i][c] = 0.0f;
    /* group scale positions of the lane's 8 columns (n8 tile i, parity c) */
    int soff[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
            const int64_t n = (int64_t)unit * 32 + 8 * i + 2 * tq + c;
            const int L = d.scale_perm;
            soff[i][c] = (int)((n / L) * L + hck_inv_perm(L, (int)(n % L)));
        }

    auto stage = [&](int chunk, int buf) {
        uint16_t *dst = smem16 + buf * BR * XLD;
        const int64_t k0 = (int64_t)(s0 + chunk * CS) * 64;
        const int nst = min(CS, s1 - (s0 + chunk * CS));
        for (int i = tid; i < BR * CS * 8; i += NT) {
            const int r = i / (CS * 8), c = i % (CS * 8);
            const bool ok = r < brows && c < nst * 8;
            const uint16_t *src = xq + (bstart + r) * Kp + k0 + c * 8;
            cp_async16(&dst[r * XLD + c * 8], ok ? (const void *)src : (const void *)xq, ok ? 16 : 0);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    const uint16_t *xs = smem16;
    auto next_chunk = [&](int chunk) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads(); /* chunk in its buffer; the other buffer is free */
        if (s0 + (chunk + 1) * CS < s1) stage(chunk + 1, (chunk + 1) & 1);
        xs = smem16 + (chunk & 1) * BR * XLD;
    };
    /* the A fragment of token tile mt at staged column col */
    auto afrag = [&](int mt, int col, uint32_t *a) {
        const uint2 lo = *(const uint2 *)&xs[(xrow + 16 * mt) * XLD + col];
        const uint2 hi = *(const uint2 *)&xs[(xrow + 16 * mt + 8) * XLD + col];
        a[0] = lo.x, a[1] = hi.x, a[2] = lo.y, a[3] = hi.y;
    };
    /* the raw group scales of the lane's columns, loaded a group ahead */
    uint16_t scr[4][2];
    auto load_scales = [&](int st) {
        const int64_t g = (int64_t)st * 64 / d.group_size;
        const uint16_t *sp = (const uint16_t *)p.s + ((int64_t)e * d.G + g) * d.Np;
#pragma unroll
        for (int i = 0; i < 4; i++) scr[i][0] = __ldg(sp + soff[i][0]), scr[i][1] = __ldg(sp + soff[i][1]);
    };
    /* the group ending at step st: its float32 sums x scale into acc, then
     * the next group's scales */
    auto flush_group = [&](int st) {
        const int sbf = d.scale_kind == HCK_S_BF16;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float sc0 = h2f(scr[i][0], sbf), sc1 = h2f(scr[i][1], sbf);
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
                float *pp = part[GROUPS ? mt : 0][i];
                acc[mt][i][0] = fmaf(pp[0], sc0, acc[mt][i][0]);
                acc[mt][i][1] = fmaf(pp[1], sc1, acc[mt][i][1]);
                acc[mt][i][2] = fmaf(pp[2], sc0, acc[mt][i][2]);
                acc[mt][i][3] = fmaf(pp[3], sc1, acc[mt][i][3]);
                pp[0] = pp[1] = pp[2] = pp[3] = 0.0f;
            }
        }
        if (st + 1 < s1) load_scales(st + 1);
    };
    /* one k step: the lane's NW words, staged step column base */
    auto compute = [&](const uint4 *w, int base) {
        if (F == F_W4PK) {
            /* w[h] = (row kb 0: words 2h, 2h+1 | row kb 1: words 2h, 2h+1) */
#pragma unroll
            for (int kb = 0; kb < 2; kb++)
#pragma unroll
                for (int i5 = 0; i5 < 2; i5++) {
                    uint32_t a[MT][4];
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) afrag(mt, base + 32 * kb + 16 * i5 + 4 * tq, a[mt]);
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const uint32_t wd = to_offset(kb ? (i5 ? w[h].w : w[h].z) : (i5 ? w[h].y : w[h].x));
                        uint32_t l0, h0, l1, h1;
                        nib_pairs(wd, 0x4140, &l0, &h0); /* k 0, 1 */
                        nib_pairs(wd, 0x4342, &l1, &h1); /* k 2, 3 */
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) {
                            float(*pp)[4] = part[GROUPS ? mt : 0];
                            mma_f16(pp[2 * h], a[mt][0], a[mt][1], a[mt][2], a[mt][3], l0, l1);
                            mma_f16(pp[2 * h + 1], a[mt][0], a[mt][1], a[mt][2], a[mt][3], h0, h1);
                        }
                    }
                }
        } else {
            /* w[i]: 16 consecutive k (16 tq ..) of column 8 i + gq */
#pragma unroll
            for (int s = 0; s < 4; s++) {
                uint32_t b[4][2];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const uint32_t wd = s == 0 ? w[i].x : s == 1 ? w[i].y : s == 2 ? w[i].z : w[i].w;
                    b[i][0] = fp8_pair<F>(wd & 0xffffu);
                    b[i][1] = fp8_pair<F>(wd >> 16);
                }
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    uint32_t a[4];
                    afrag(mt, base + 16 * tq + 4 * s, a);
#pragma unroll
                    for (int i = 0; i < 4; i++) mma_f16(acc[mt][i], a[0], a[1], a[2], a[3], b[i][0], b[i][1]);
                }
            }
        }
    };
    auto issue = [&](uint4 (*w)[NW], int t) {
#pragma unroll
        for (int u = 0; u < U; u++)
            if (active && t + u < s1) {
                const uint32_t *q = wp + (int64_t)(t + u) * sstride;
#pragma unroll
                for (int j = 0; j < NW; j++)
                    w[u][j] = __ldg((const uint4 *)(q + (F == F_W4PK ? j * 128 : j * 32)));
            }
    };
    auto run = [&](uint4 (*w)[NW], int t) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int st = t + u;
            if (st >= s1) break;
            if ((st - s0) % CS == 0) next_chunk((st - s0) / CS);
            if (!active) continue;
            compute(w[u], ((st - s0) % CS) * 64);
            if (GROUPS && (((int64_t)(st + 1) * 64) % d.group_size == 0 || st + 1 == s1)) flush_group(st);
        }
    };
    uint4 wa[U][NW], wb[U][NW];
    if (GROUPS && active && s0 < s1) load_scales(s0);
    if (s0 < s1) stage(0, 0);
    issue(wa, s0);
    for (int t = s0; t < s1; t += 2 * U) {
        issue(wb, t + U);
        run(wa, t);
        issue(wa, t + 2 * U);
        run(wb, t + U);
    }
    if (!active) return;

    const float gscale = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
            const int64_t n = (int64_t)unit * 32 + 8 * i + 2 * tq + c;
            if (n >= d.N) continue;
            const float cs = (GROUPS ? 1.0f : (float)hck_scale(&d, &p, e, n, 0, 0)) * gscale;
            const float b = splits > 1 ? 0.0f : hck_bias(&d, &p, e, n);
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int hr = 0; hr < 2; hr++) {
                    const int ml = 16 * MT * tg + 16 * mt + gq + 8 * hr;
                    if (ml >= brows) continue;
                    const int64_t m = bstart + ml;
                    const float v = acc[mt][i][2 * hr + c] * cs * tscale[m];
                    if (splits > 1) atomicAdd(ws + m * d.N + n, v);
                    else y[m * d.N + n] = f2h(v + b, d.out_bf16);
                }
        }
}

/* The instantiations: (weight form, MT, TG). */
#define HCK_A8_INSTANCES(X)                                                            \
    X(F_W4PK, 1, 1) X(F_W4PK, 4, 1) X(F_W4PK, 4, 2) X(F_E4M3, 1, 1) X(F_E4M3, 4, 1)    \
    X(F_E4M3, 4, 2) X(F_E5M2, 1, 1) X(F_E5M2, 4, 1) X(F_E5M2, 4, 2)

/* Tile-size choices per arch (the family runs on sm89+, fp8 activations):
 * tokens per block (16 MT TG) by the largest expert's rows, and the resident
 * blocks per SM the split-K model assumes. */
struct Tune {
    int64_t rows_max;
    int mt, tg, blocks_per_sm;
};
constexpr Tune TUNE_SM89[] = {{16, 1, 1, 2}, {64, 4, 1, 2}, {INT64_MAX, 4, 2, 1}};
constexpr Tune TUNE_SM90[] = {{16, 1, 1, 2}, {64, 4, 1, 2}, {INT64_MAX, 4, 2, 1}};

const Tune &tune(int sm, int64_t rows) { return sm >= 90 ? tune_pick(TUNE_SM90, rows) : tune_pick(TUNE_SM89, rows); }

/* tile sizes (MT, TG) of each instance: one per weight form (three) per row */
#define HCK_A8_KEY_(F, MT, TG) TileKey{MT, TG, 0},
constexpr TileKey KEYS[] = {HCK_A8_INSTANCES(HCK_A8_KEY_)};
#undef HCK_A8_KEY_
constexpr bool row_ok(const Tune &t) { return instances_of(KEYS, t.mt, t.tg) == 3; }
static_assert(all_rows(TUNE_SM89, row_ok) && all_rows(TUNE_SM90, row_ok), "a tuning row without its instances");

size_t smem_of(int mt, int tg)
{
    const int xld = mt == 1 ? Shape<1, 1>::XLD : tg > 1 ? Shape<4, 2>::XLD : Shape<4, 1>::XLD;
    return (size_t)16 * mt * tg * xld * 2 * 2;
}

/* Split-K: k units of 64, a block costs its steps + 4, a split 2 more, at
 * least 4 steps per split. */
int split_of(const hck_desc &d, const Tune &t, int64_t blocks, int sms)
{
    return split_waves(d.Kp / 64, 4, 4.0, 2.0, blocks, (int64_t)sms * t.blocks_per_sm);
}

int form_of(const hck_desc &d)
{
    if (d.layout == HCK_L_PACKED_K) return F_W4PK;
    return d.weight_format == HC_FMT_F8E5M2 ? F_E5M2 : F_E4M3;
}

}  // namespace

bool a8_takes(const hck_desc &d)
{
    if (d.act_quant != HCK_A_E4M3 && d.act_quant != HCK_A_E5M2) return false;
    if (d.zp_kind != HCK_Z_NONE || d.native_dequant || d.global_channel || d.Np % 32) return false;
    if (d.layout == HCK_L_PACKED_K)
        return d.wbits == 4 && d.wkind == HCK_W_INT2FP && !d.zp_in_repack && d.transposed &&
               (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) && d.group_size % 64 == 0;
    if (d.layout == HCK_L_FLAT)
        return d.wbits == 8 && d.wkind == HCK_W_FLOAT &&
               (d.weight_format == HC_FMT_F8E4M3 || d.weight_format == HC_FMT_F8E5M2) &&
               (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) && d.G == 1;
    return false;
}

cudaError_t a8_init()
{
    cudaError_t e = cudaSuccess;
#define HCK_A8_ATTR_(F, MT, TG) smem_limit(e, a8_kernel<F, MT, TG>, SMEM_MAX);
    HCK_A8_INSTANCES(HCK_A8_ATTR_)
#undef HCK_A8_ATTR_
    return e;
}

size_t a8_ws_bytes(const hck_layer *L, int64_t rows) { return (size_t)rows * L->d.N * sizeof(float) + 4; }

cudaError_t launch_a8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                      int64_t max_rows, uint16_t *y, uint16_t *xq, float *tscale, float *ws, cudaStream_t st)
{
    const hck_desc &d = L->d;
    if (max_rows == 0) return cudaSuccess;
    cudaError_t e = launch_act16(d.act_quant, d.out_bf16, x, rows, d.K, d.Kp, xq, tscale, st);
    if (e != cudaSuccess) return e;
    const Tune &t = tune(L->sm, max_rows);
    const int64_t br = 16 * t.mt * t.tg, nx = (d.Np / 32 + WARPS - 1) / WARPS;
    const int64_t blocks = nx * ((max_rows + br - 1) / br) * d.E;
    const int splits = split_of(d, t, blocks, L->sms);
    const dim3 grid((unsigned)nx, (unsigned)((max_rows + br - 1) / br), (unsigned)(d.E * splits));
    if (splits > 1 && (e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st)) != cudaSuccess)
        return e;
    const int f = form_of(d);
    const size_t smem = smem_of(t.mt, t.tg);
#define HCK_A8_CASE_(F, MT, TG)                                                                       \
    if (f == F && t.mt == MT && t.tg == TG)                                                           \
        a8_kernel<F, MT, TG><<<grid, WARPS * TG * 32, smem, st>>>(d, L->p, xq, tscale, offsets, y, splits, ws);
    HCK_A8_INSTANCES(HCK_A8_CASE_)
#undef HCK_A8_CASE_
    if ((e = cudaGetLastError()) != cudaSuccess || splits == 1) return e;
    return launch_splitk_finish(L, ws, offsets, rows, y, st);
}

}  // namespace hck
