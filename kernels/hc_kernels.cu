/* hc_kernels.cu - fused dequantize-and-multiply GEMM on the Humming tile
 * layout (mma.sync tf32 family, sm80+), per-token activation quantization,
 * and the host API of hc_kernels.h. docs/kernels.md.
 *
 * Correct-first design: a block owns 64 tokens x one 64-column tile of N; for
 * each tile row kb (P = 256/a elements of K) its threads expand the tile's
 * lanes (inverse of the spec 4.5 compaction), place the 32 codes of every lane
 * at their (n, k) (spec 4.3 normal or 4.6 transposed order), apply zero point
 * and scale read through the inverse perm64/perm32, and store the value as
 * float in shared memory; the product runs on mma.sync m16n8k8 tf32 with fp32
 * accumulation. Token scale, global scale and bias are applied on the output. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <vector>

extern "C" {
#include "hc_kernels.h"
}

namespace {

/* How a split wgmma launch sums its splits' partials (Dev::sum_mode). */
enum { HCK_SUM_LAST = 0, HCK_SUM_CLUSTER = 1, HCK_SUM_COOP = 2, HCK_SUM_POLL = 3 };

struct Dev {
    hck_desc d;
    const uint32_t *w;
    const uint8_t *s;
    const uint8_t *z;
    const float *gl;
    const uint16_t *bias;
    int *counters; /* split-K arrival counters of the small-M kernel (zero between launches) */
    int sum_mode;  /* wgmma kernel's split sum: HCK_SUM_LAST, _CLUSTER, _COOP or _POLL */
    int pdl;       /* wgmma kernel launched as act16_kernel's programmatic dependent */
};

constexpr int BM = 64, BN = 64, THREADS = 128;

__device__ __forceinline__ float h2f(uint16_t raw, int bf16)
{
    if (bf16) return __uint_as_float((uint32_t)raw << 16);
    return __half2float(__ushort_as_half(raw));
}

__device__ __forceinline__ uint16_t f2h(float v, int bf16)
{
    if (bf16) return __bfloat16_as_ushort(__float2bfloat16_rn(v));
    return __half_as_ushort(__float2half_rn(v));
}

/* Position j inside a chunk of L that holds original index i (inverse of
 * perm64[j] = 8(j%8) + j/8 and perm32[j] = T[j%8] + 2(j/8)). */
__device__ __forceinline__ int inv_perm(int L, int i)
{
    if (L == 64) return 8 * (i % 8) + i / 8;
    return 8 * ((i % 8) / 2) + 2 * (i / 8) + (i % 2);
}

/* Bias of output column n of expert e (stored in perm32 order, spec 5.6); 0 without. */
__device__ __forceinline__ float bias_at(const Dev &p, int e, int64_t n)
{
    if (!p.d.bias_kind) return 0.0f;
    const int64_t t = (int64_t)e * p.d.Np + (n / 32) * 32 + inv_perm(32, (int)(n % 32));
    return h2f(p.bias[t], p.d.bias_kind == 2);
}

/* 4 partial sums from src (columns n..n + 3; those at or past N read as 0):
 * one 16-byte load when N % 4 == 0 (then src is 16-byte aligned) */
__device__ __forceinline__ float4 ld_partial4(const float *src, int64_t n, int64_t N, bool v4)
{
    if (v4) return __ldcg((const float4 *)src);
    float4 t = make_float4(0.f, 0.f, 0.f, 0.f);
    t.x = __ldcg(src);
    if (n + 1 < N) t.y = __ldcg(src + 1);
    if (n + 2 < N) t.z = __ldcg(src + 2);
    if (n + 3 < N) t.w = __ldcg(src + 3);
    return t;
}

/* The last-arriving block's sum of the split-K partials: rows [r0, r0 + mrows)
 * x columns [c0, c0 + ncols) of ws's `splits` planes (stride floats apart), in
 * split order, plus bias, into y. Thread tid of nt takes U groups of 4 columns
 * and keeps U x 4 loads (4 splits) in flight per round: one element and one
 * split per load would chain dozens of dependent L2 round trips per thread,
 * enough to make split K lose at 128 tokens. Shared by the small-M kernel (64
 * columns, U = 1) and the wgmma kernel. */
template <int U>
__device__ __forceinline__ void split_sum(const Dev &p, int e, const float *__restrict__ ws,
                                          uint16_t *__restrict__ y, int64_t r0, int mrows, int64_t c0, int ncols,
                                          int64_t stride, int splits, int tid, int nt)
{
    const hck_desc &d = p.d;
    const int q = ncols / 4, total = mrows * q;
    const bool v4 = (d.N & 3) == 0;
    for (int g0 = tid; g0 < total; g0 += nt * U) {
        int64_t n[U], row[U];
        bool ok[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int g = g0 + u * nt;
            row[u] = r0 + g / q, n[u] = c0 + 4 * (g % q), ok[u] = g < total && n[u] < d.N;
        }
        float v[U][4];
#pragma unroll
        for (int u = 0; u < U; u++) v[u][0] = v[u][1] = v[u][2] = v[u][3] = 0.0f;
        for (int s0 = 0; s0 < splits; s0 += 4) {
            float4 t[4][U];
#pragma unroll
            for (int j = 0; j < 4; j++)
#pragma unroll
                for (int u = 0; u < U; u++)
                    t[j][u] = ok[u] && s0 + j < splits
                                  ? ld_partial4(ws + (s0 + j) * stride + row[u] * d.N + n[u], n[u], d.N, v4)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
            for (int j = 0; j < 4; j++) /* in split order */
#pragma unroll
                for (int u = 0; u < U; u++)
                    if (s0 + j < splits)
                        v[u][0] += t[j][u].x, v[u][1] += t[j][u].y, v[u][2] += t[j][u].z, v[u][3] += t[j][u].w;
        }
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (ok[u] && n[u] + c < d.N)
                    y[row[u] * d.N + n[u] + c] = f2h(v[u][c] + bias_at(p, e, n[u] + c), d.out_bf16);
    }
}

__device__ __forceinline__ int next_pow2(int b)
{
    int p = 1;
    while (p < b) p <<= 1;
    return p;
}

/* Inverse of the 4.5 compaction for one slot: final fields f -> padded v. */
__device__ void uncompact_slot(int b, const uint32_t *f, uint32_t *v)
{
    if (b == 3) {
        v[0] = f[0] & 7;
        v[1] = (f[1] & 3) | ((f[0] >> 3) & 1) << 2;
        v[2] = (f[2] & 1) | ((f[1] >> 2) & 3) << 1;
        v[3] = (f[2] >> 1) & 7;
    } else if (b == 5) {
        v[0] = f[0] & 31;
        v[1] = (f[1] & 3) | ((f[0] >> 5) & 7) << 2;
        v[2] = (f[1] >> 2) & 31;
        v[3] = (f[2] & 15) | ((f[1] >> 7) & 1) << 4;
        v[4] = (f[3] & 1) | ((f[2] >> 4) & 15) << 1;
        v[5] = (f[3] >> 1) & 31;
        v[6] = (f[4] & 7) | ((f[3] >> 6) & 3) << 3;
        v[7] = (f[4] >> 3) & 31;
    } else if (b == 6) {
        for (int h = 0; h < 2; h++) {
            const uint32_t *g = f + 3 * h;
            uint32_t *w = v + 4 * h;
            w[0] = g[0] & 63;
            w[1] = (g[1] & 15) | ((g[0] >> 6) & 3) << 4;
            w[2] = (g[2] & 3) | ((g[1] >> 4) & 15) << 2;
            w[3] = (g[2] >> 2) & 63;
        }
    } else if (b == 7) {
        v[0] = f[0] & 127;
        for (int j = 1; j <= 7; j++) {
            uint32_t lo = j < 7 ? f[j] & ((1u << (7 - j)) - 1) : 0;
            v[j] = (lo | (f[j - 1] >> (8 - j)) << (7 - j)) & 127;
        }
    } else {
        for (int i = 0; i < b; i++) v[i] = f[i];
    }
}

/* b final words of one lane -> Bp padded words. */
__device__ void uncompact_words(int b, int Bp, const uint32_t *F, uint32_t *W)
{
    if (b == Bp) {
        for (int i = 0; i < b; i++) W[i] = F[i];
        return;
    }
    uint32_t smask = (1u << Bp) - 1;
    for (int p = 0; p < Bp; p++) W[p] = 0;
    for (int s = 0; s < 32 / Bp; s++) {
        uint32_t f[8], v[8];
        for (int i = 0; i < b; i++) f[i] = (F[i] >> (s * Bp)) & smask;
        uncompact_slot(b, f, v);
        for (int p = 0; p < Bp; p++) W[p] |= v[p] << (s * Bp);
    }
}

__device__ float scale_at(const Dev &p, int e, int n, int k, int g)
{
    const hck_desc &d = p.d;
    if (d.scale_kind == HCK_S_NONE) return 1.0f;
    if (d.scale_kind == HCK_S_BLOCK) {
        int Rb = (int)(d.Np / d.group_size_n), Cb = (int)(d.Kp / d.group_size);
        return ((const float *)p.s)[((int64_t)e * Cb + k / (int)d.group_size) * Rb +
                                    n / (int)d.group_size_n];
    }
    int L = d.scale_perm;
    int64_t src = ((int64_t)e * d.G + g) * d.Np + (n / L) * L + inv_perm(L, n % L);
    switch (d.scale_kind) {
    case HCK_S_F16: return h2f(((const uint16_t *)p.s)[src], 0);
    case HCK_S_BF16: return h2f(((const uint16_t *)p.s)[src], 1);
    case HCK_S_LUT8: return d.slut[p.s[src]];
    case HCK_S_INT16: return (float)(int16_t)((const uint16_t *)p.s)[src];
    case HCK_S_EXP2: return ldexpf(1.0f, (int)p.s[src]);
    }
    return 1.0f;
}

/* Zero point at (e, n, g): integer code or float value (as float). */
__device__ float zero_at(const Dev &p, int e, int n, int g)
{
    const hck_desc &d = p.d;
    int64_t t = ((int64_t)e * d.G + g) * d.Np + (n / 64) * 64 + inv_perm(64, n % 64);
    if (d.zp_kind == HCK_Z_INT) {
        if (d.wbits > 4) return (float)p.z[t];
        return (float)((p.z[t / 2] >> (4 * (t % 2))) & 15);
    }
    return h2f(((const uint16_t *)p.z)[t], d.zp_kind == HCK_Z_BF16);
}

/* Value of a stored code at (e, n, k) before global scale (docs/verification.md). */
__device__ float weight_value(const Dev &p, uint32_t code, int e, int n, int k)
{
    const hck_desc &d = p.d;
    int b = d.wbits;
    int g = k / (int)d.group_size;
    float x;
    if (d.wkind == HCK_W_FLOAT) {
        x = d.wlut[code];
    } else if (d.weight_signed) {
        x = (float)((int32_t)(code << (32 - b)) >> (32 - b));
    } else if (d.int2fp) {
        uint32_t mask = (1u << b) - 1;
        uint32_t z = d.zp_in_repack && d.zp_kind == HCK_Z_INT ? (uint32_t)zero_at(p, e, n, g)
                                                              : 1u << (b - 1);
        uint32_t v = code <= mask - z ? code + z : mask - code;
        x = (float)v - (float)z;
    } else if (d.zp_kind != HCK_Z_NONE) {
        x = (float)code - zero_at(p, e, n, g);
    } else {
        x = (float)code - (float)(1u << (b - 1));
    }
    if (d.fused_x2) x *= 2.0f;
    return x * scale_at(p, e, n, k, g);
}

/* The same value with the per-column zero point and scale of the current tile
 * row taken from shared memory (every tile row lies in one scale group:
 * group sizes are >= P = 256/a and divide 64 or are multiples of 64). */
__device__ __forceinline__ float weight_value_row(const hck_desc &d, const float *lut,
                                                  uint32_t code, float zero, float scale)
{
    int b = d.wbits;
    float x;
    if (d.wkind == HCK_W_FLOAT) {
        x = lut[code];
    } else if (d.weight_signed) {
        x = (float)((int32_t)(code << (32 - b)) >> (32 - b));
    } else if (d.int2fp) {
        uint32_t mask = (1u << b) - 1;
        uint32_t z = d.zp_in_repack && d.zp_kind == HCK_Z_INT ? (uint32_t)zero : 1u << (b - 1);
        uint32_t v = code <= mask - z ? code + z : mask - code;
        x = (float)v - (float)z;
    } else if (d.zp_kind != HCK_Z_NONE) {
        x = (float)code - zero;
    } else {
        x = (float)code - (float)(1u << (b - 1));
    }
    if (d.fused_x2) x *= 2.0f;
    return x * scale;
}

__device__ __forceinline__ uint32_t to_tf32(float v)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

/* y rows [offsets[e], offsets[e+1]) of expert e; x holds float values or
 * codes (tok_scale != NULL). */
template <bool SIMT>
__global__ void __launch_bounds__(THREADS)
gemm_kernel(Dev p, const float *__restrict__ x, const float *__restrict__ tok_scale,
            const int64_t *__restrict__ offsets, uint16_t *__restrict__ y, int splits,
            float *__restrict__ ws)
{
    const hck_desc &d = p.d;
    const int nb = blockIdx.x, e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e], r1 = offsets[e + 1];
    const int64_t mstart = r0 + (int64_t)blockIdx.y * BM;
    if (mstart >= r1) return;
    const int mrows = (int)min((int64_t)BM, r1 - mstart);
    const int a = d.abits, b = d.wbits, P = 256 / a, R = 32 / a, Bp = next_pow2(b);
    const int Nw = 32 / Bp, Gs = a / Bp, chunks = 16 / a, LD = P + 4;
    const uint32_t mask = (1u << b) - 1;
    const int64_t rows = d.Kp / P, row_words = d.Np * P * b / 32;
    extern __shared__ float smem[];
    float *Ws = smem;            /* [BN][LD]: n-major, k contiguous */
    float *Xs = smem + BN * LD;  /* [BM][LD] */
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int gq = lane / 4, tq = lane % 4;
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = 0.0f;
    __shared__ float s_lut[256], s_scale[BN], s_zero[BN];
    for (int i = tid; i < 256; i += THREADS) s_lut[i] = d.wlut[i];
    const bool row_scales = d.scale_kind != HCK_S_BLOCK && d.group_size % P == 0;

    /* split-K (small M): this block's share of the tile rows */
    const int64_t kb0 = rows * split / splits, kb1 = rows * (split + 1) / splits;
    for (int64_t kb = kb0; kb < kb1; kb++) {
        if (row_scales) {
            const int k0 = (int)kb * P, g = k0 / (int)d.group_size;
            for (int t = tid; t < BN; t += THREADS) {
                const int n = nb * BN + t;
                s_scale[t] = scale_at(p, e, n, k0, g);
                s_zero[t] = d.zp_kind != HCK_Z_NONE ? zero_at(p, e, n, g) : 0.0f;
            }
        }
        __syncthreads();
        for (int idx = tid; idx < BM * P; idx += THREADS) {
            int m = idx / P, kk = idx % P;
            int64_t gk = kb * P + kk;
            Xs[m * LD + kk] = (m < mrows && gk < d.K) ? x[(mstart + m) * d.K + gk] : 0.0f;
        }
        const int64_t base = ((int64_t)e * rows + kb) * row_words + (int64_t)nb * 2 * P * b;
        for (int it = tid; it < chunks * 32 * 4; it += THREADS) {
            int L = it >> 2, part = it & 3, j = L / 32, ln = L % 32;
            uint32_t F[8], Wd[8];
            const uint32_t *src = p.w + base + (int64_t)j * 32 * b + (int64_t)ln * b;
            for (int w = 0; w < b; w++) F[w] = src[w];
            uncompact_words(b, Bp, F, Wd);
            for (int uu = 0; uu < 8; uu++) {
                int u = part * 8 + uu;
                int kk = u % R, rest = u / R, i3 = rest / 4, i4, i5;
                if (d.transposed) i4 = rest % 2, i5 = (rest / 2) % 2;
                else i5 = rest % 2, i4 = (rest / 2) % 2;
                int nl = 4 * a * j + 16 * i3 + 8 * i4 + ln / 4;
                int kl = 4 * R * i5 + R * (ln % 4) + kk;
                int o = u % Nw, slot = (o % R) * Gs + o / R;
                uint32_t code = (Wd[u / Nw] >> (slot * Bp)) & mask;
                Ws[nl * LD + kl] =
                    row_scales ? weight_value_row(d, s_lut, code, s_zero[nl], s_scale[nl])
                               : weight_value(p, code, e, nb * BN + nl, (int)kb * P + kl);
            }
        }
        __syncthreads();
        if (SIMT) {
            const int n = tid % BN, m0 = (tid / BN) * 32;
            for (int kk = 0; kk < P; kk++) {
                float w = Ws[n * LD + kk];
#pragma unroll
                for (int i = 0; i < 32; i++) acc[i] = fmaf(Xs[(m0 + i) * LD + kk], w, acc[i]);
            }
        } else {
            const int wm = warp / 2, wn = warp % 2;
            for (int ks = 0; ks < P; ks += 8) {
                uint32_t af[2][4], bfr[4][2];
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    int r = 32 * wm + 16 * mi + gq;
                    af[mi][0] = to_tf32(Xs[r * LD + ks + tq]);
                    af[mi][1] = to_tf32(Xs[(r + 8) * LD + ks + tq]);
                    af[mi][2] = to_tf32(Xs[r * LD + ks + tq + 4]);
                    af[mi][3] = to_tf32(Xs[(r + 8) * LD + ks + tq + 4]);
                }
#pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    int c = 32 * wn + 8 * ni + gq;
                    bfr[ni][0] = to_tf32(Ws[c * LD + ks + tq]);
                    bfr[ni][1] = to_tf32(Ws[c * LD + ks + tq + 4]);
                }
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int ni = 0; ni < 4; ni++) {
                        float *c = acc + (mi * 4 + ni) * 4;
                        asm volatile(
                            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                            : "r"(af[mi][0]), "r"(af[mi][1]), "r"(af[mi][2]), "r"(af[mi][3]),
                              "r"(bfr[ni][0]), "r"(bfr[ni][1]));
                    }
            }
        }
        __syncthreads();
    }

    const float gscale = d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e];
    for (int i = 0; i < 32; i++) {
        int ml, nl;
        if (SIMT) {
            ml = (tid / BN) * 32 + i;
            nl = tid % BN;
        } else {
            int t4 = i / 4, mi = t4 / 4, ni = t4 % 4, c = i % 4;
            ml = 32 * (warp / 2) + 16 * mi + gq + (c >= 2 ? 8 : 0);
            nl = 32 * (warp % 2) + 8 * ni + 2 * tq + (c & 1);
        }
        int64_t n = (int64_t)nb * BN + nl;
        if (ml >= mrows || n >= d.N) continue;
        int64_t m = mstart + ml;
        float v = acc[i];
        if (tok_scale) v *= tok_scale[m];
        v *= gscale;
        if (splits > 1) { /* partial sums; finish_kernel adds the bias and rounds */
            atomicAdd(ws + m * d.N + n, v);
            continue;
        }
        if (d.bias_kind) {
            int64_t t = (int64_t)e * d.Np + (n / 32) * 32 + inv_perm(32, (int)(n % 32));
            v += h2f(p.bias[t], d.bias_kind == 2);
        }
        y[m * d.N + n] = f2h(v, d.out_bf16);
    }
}

/* ---- Fast path: 4-bit integer weights x 16-bit activations (mma.sync) ----
 *
 * For a = 16, b = 4 one lane's 4 words of a tile row (16 contiguous bytes) are
 * exactly its mma.m16n8k16 B fragments for the tile's 8 n8 blocks (spec 4.3
 * "Interpretation"): word i3 holds, for n0 = 16 i3 + lane/4 and n1 = n0 + 8,
 * k0 = 2 (lane % 4), the codes of (n, k0 + {0,1,8,9}); nibble 4 kk + 2 i4 + i5
 * (normal) or 4 kk + 2 i5 + i4 (transposed). (w >> 4 s) & 0x000f000f puts the
 * nibbles s and s + 4 (kk = 0, 1 of one (i4, i5)) into the two 16-bit halves;
 * OR-ing the exponent of 1024 (fp16) / 128 (bf16) and subtracting 1032 / 136
 * gives code - 8 exactly. Group scales (perm64) are applied to the B values:
 * the 8 columns a lane's B fragments touch are 8 consecutive permuted entries.
 * Channel scales (perm32, G = 1) are applied to the fp32 accumulators at the
 * end: the 8 accumulator columns of a lane in each 32-chunk are again 8
 * consecutive entries. A block is 4 warps on 4 consecutive 64-column tiles,
 * 16 * MT tokens and a split of the K tile rows; activations are staged in
 * shared memory 256 k at a time and read with ldmatrix. */
/* The per-token quantization scale (docs/verification.md) from each thread's
 * max mx and min mn of the token's values: a block-wide reduction (red: 64
 * floats of shared memory); every thread gets it. */
__device__ float token_scale_of(int act_quant, float mx, float mn, float *red)
{
    for (int o = 16; o > 0; o /= 2) {
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, o));
    }
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mx, red[32 + threadIdx.x / 32] = mn;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / 32); w++) mx = fmaxf(mx, red[w]), mn = fminf(mn, red[32 + w]);
        const float amax = fmaxf(mx, -mn);
        float s;
        switch (act_quant) {
        case HCK_A_E4M3: s = amax * (1.0f / 448.0f); break;
        case HCK_A_E5M2: s = amax * (1.0f / 57344.0f); break;
        case HCK_A_INT8: s = fmaxf(mx * (1.0f / 127.49f), -mn * (1.0f / 128.49f)); break;
        default: s = fmaxf(mx * (1.0f / 7.49f), -mn * (1.0f / 8.49f)); break;
        }
        red[0] = s;
    }
    __syncthreads();
    return red[0];
}

/* max and min of the 8 16-bit values in u into mx, mn */
__device__ __forceinline__ void range8(uint4 u, int in_bf16, float &mx, float &mn)
{
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float v = h2f((uint16_t)(w[i / 2] >> (16 * (i % 2))), in_bf16);
        mx = fmaxf(mx, v);
        mn = fminf(mn, v);
    }
}

/* the 8 16-bit values of row xr from k0, zero past K: one 16-byte load when K % 8 == 0 */
__device__ __forceinline__ uint4 ld_chunk8(const uint16_t *__restrict__ xr, int64_t k0, int64_t K, bool vec)
{
    if (vec) return k0 < K ? __ldg((const uint4 *)(xr + k0)) : make_uint4(0u, 0u, 0u, 0u);
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        w[i] = (k0 + 2 * i < K ? xr[k0 + 2 * i] : 0u) | (uint32_t)(k0 + 2 * i + 1 < K ? xr[k0 + 2 * i + 1] : 0u) << 16;
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Scale of one token's row xr (K 16-bit values) for per-token quantization:
 * token_scale_of over the row, read in 16-byte chunks where K % 8 == 0. */
__device__ float token_scale(int act_quant, int in_bf16, const uint16_t *__restrict__ xr, int64_t K, float *red)
{
    float mx = 1e-30f, mn = -1e-30f;
    const bool vec = (K & 7) == 0;
    for (int64_t c = threadIdx.x; c < (K + 7) / 8; c += blockDim.x) range8(ld_chunk8(xr, 8 * c, K, vec), in_bf16, mx, mn);
    return token_scale_of(act_quant, mx, mn, red);
}

namespace fastw4 {
constexpr int WARPS = 4;
constexpr size_t SMEM_MAX = 96 * 1024; /* dynamic shared memory limit set at layer creation */

template <bool BF>
__device__ __forceinline__ uint32_t fma2(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t r;
    if (BF) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    else asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
    return r;
}

/* two codes (halves of w >> sh) -> (code - 8) as a 16-bit pair */
template <bool BF>
__device__ __forceinline__ uint32_t dq(uint32_t w, int sh)
{
    const uint32_t magic = BF ? 0x43004300u : 0x64006400u;   /* 128 / 1024 */
    const uint32_t one = BF ? 0x3f803f80u : 0x3c003c00u;
    const uint32_t nb = BF ? 0xc308c308u : 0xe408e408u;      /* -136 / -1032 */
    return fma2<BF>(((w >> sh) & 0x000f000fu) | magic, one, nb);
}

template <bool BF>
__device__ __forceinline__ void mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    if (BF)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

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

/* raw 16-bit scale (fp16 or bf16) -> the compute type, as the low half */
template <bool BF>
__device__ __forceinline__ uint32_t conv16(uint32_t raw, int sbf)
{
    if (sbf == (int)BF) return raw & 0xffffu;
    return f2h(h2f((uint16_t)raw, sbf), BF);
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
w4a16_kernel(Dev p, const uint16_t *__restrict__ x, const int64_t *__restrict__ offsets,
             uint16_t *__restrict__ y, int splits, float *__restrict__ ws)
{
    constexpr int KC = Shape<MT, TG>::KC, XLD = Shape<MT, TG>::XLD;
    constexpr int U = MT == 1 ? 8 : 4;   /* weight loads per batch and warp */
    constexpr bool PIPE = MT == 1;       /* double-buffered weight registers, scales in smem */
    constexpr bool ASYNC = TG > 1;       /* double-buffered activations via cp.async */
    constexpr int NT = WARPS * TG * 32, BR = 16 * MT * TG; /* threads, block tokens */
    const hck_desc &d = p.d;
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
                    if (d.bias_kind) {
                        int64_t t = (int64_t)e * d.Np + (n / 32) * 32 + inv_perm(32, (int)(n % 32));
                        v += h2f(p.bias[t], d.bias_kind == 2);
                    }
                    y[m * d.N + n] = f2h(v, d.out_bf16);
                }
}
}  // namespace fastw4


/* ---- Small-M kernel: few tokens, memory-bound streaming ----
 *
 * Weight formats (WF): W_U4A16 uint4 x 16-bit activations; W_U4A8 uint4
 * (int->fp codes, spec 4.7) x fp8; W_FP4A8 MXFP4 with fused e8m0 offsets x
 * e4m3; W_FP8A8 e4m3 weights x fp8. 8-bit activations are quantized per token
 * first (act16_kernel) and their codes, exact in fp16/bf16, run on the 16-bit
 * tensor cores: a 32-k tile row is two k16 steps, and act16_kernel stores each
 * 16-k block de-interleaved (even k first) so that a lane's B pair of the
 * m16n8k32 fragment (k = 4t + {0, 2} and {1, 3}) meets its A pair.
 *
 * At few tokens the issue rate at low occupancy, not memory, limits, so the
 * loop keeps instructions per weight byte low: a block is 4 warps on one
 * 64-column tile and one split of the K tile rows; warp w takes the w-th
 * quarter of the split's rows, and the warps share the staged activations and
 * scales (the scales pre-converted to compute-type pairs, so a new group
 * costs two loads).
 * Each warp streams its rows through a private ring of S shared-memory slots
 * filled by cp.async (S - 1 rows in flight, issued before the activations are
 * staged, so the stream starts at once); each lane reads back only the bytes
 * it copied. uint4 codes become (code - 8) pairs with one lop3 and one f16x2
 * op (the odd nibble pair is read as 16 v and folded back by the fma); fp4 and
 * fp8 codes are placed into fp16 bit fields (a power of two folded into the
 * epilogue). The four warps' sums meet in shared memory; with a split, the
 * block's partial sums go to ws[split] with plain stores and the block that
 * arrives last (per-tile counter) adds them in split order, so results do not
 * depend on timing. */
namespace small {
enum { W_U4A16 = 0, W_U4A8 = 1, W_FP4A8 = 2, W_FP8A8 = 3 };
constexpr int WARPS = 4, NT = WARPS * 32, EPW = 32 / WARPS; /* entries each warp finishes */
constexpr size_t SMEM_MAX = 96 * 1024;
constexpr int YMAX = 16; /* 16-token blocks per expert at most (counters are sized for it) */

template <int WF> struct Fmt {
    static constexpr int P = WF == W_U4A16 ? 16 : 32;         /* k per tile row */
    static constexpr int B = WF == W_FP8A8 ? 8 : 4;           /* weight bits */
    static constexpr int U4 = (B / 4) * (P / 16);             /* 16-byte pieces per lane and row */
    static constexpr int TILE_WORDS = 2 * P * B;              /* words of one tile row */
    static constexpr int S = WF == W_FP8A8 ? 4 : 8;           /* ring slots */
    /* word offset of piece q of a lane inside its tile row (spec 4.4 closed forms) */
    __device__ static int piece(int q, int lane)
    {
        if (WF == W_U4A16) return lane * 4;
        if (B == 4) return q * 128 + lane * 4;
        return (q / 2) * 256 + lane * 8 + (q % 2) * 4;
    }
};

/* (w & mask) | magic in one instruction (the compiler otherwise spends two:
 * LOP3 takes one immediate) */
template <uint32_t MASK, uint32_t MAGIC>
__device__ __forceinline__ uint32_t lop_and_or(uint32_t w)
{
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(w), "n"(MASK), "r"(MAGIC));
    return r;
}

/* the four nibble pairs of a word as (code - 8) in the compute type:
 * q[0] = bits (0-3, 16-19), q[1] = (4-7, 20-23), q[2] = (8-11, 24-27), q[3] = (12-15, 28-31) */
template <bool BF>
__device__ __forceinline__ void dq4(uint32_t w, uint32_t *q)
{
    if (BF) {
        q[0] = fastw4::fma2<true>(lop_and_or<0x000f000fu, 0x43004300u>(w), 0x3f803f80u, 0xc308c308u);
#pragma unroll
        for (int i = 1; i < 4; i++)
            q[i] = fastw4::fma2<true>(lop_and_or<0x000f000fu, 0x43004300u>(w >> (4 * i)), 0x3f803f80u, 0xc308c308u);
        return;
    }
    const uint32_t w2 = w >> 8;
    q[0] = fastw4::fma2<false>(lop_and_or<0x000f000fu, 0x64006400u>(w), 0x3c003c00u, 0xe408e408u);
    q[1] = fastw4::fma2<false>(lop_and_or<0x00f000f0u, 0x64006400u>(w), 0x2c002c00u, 0xd480d480u);
    q[2] = fastw4::fma2<false>(lop_and_or<0x000f000fu, 0x64006400u>(w2), 0x3c003c00u, 0xe408e408u);
    q[3] = fastw4::fma2<false>(lop_and_or<0x00f000f0u, 0x64006400u>(w2), 0x2c002c00u, 0xd480d480u);
}

/* nibble pair i (nibbles i, i + 4) of e2m1 codes as fp16 bits: value x 2^-14 */
__device__ __forceinline__ uint32_t fp4_pair(uint32_t w, int i)
{
    const uint32_t t = w >> (4 * i);
    return ((t & 0x00070007u) << 9) | ((t & 0x00080008u) << 12);
}

/* bytes (h, h + 2) of e4m3 codes as fp16 bits: value x 2^-8 */
__device__ __forceinline__ uint32_t fp8_pair(uint32_t w, int h)
{
    const uint32_t t = (w >> (8 * h)) & 0x00ff00ffu;
    return ((t & 0x007f007fu) << 7) | ((t & 0x00800080u) << 8);
}

/* Shared memory: rings (reused for the cross-warp sums), staged activations
 * (mrows x (rows of the split) x P k) and, for group scales, the scale pairs of
 * the block's k range. */
__host__ __device__ inline size_t smem_bytes(int wf, int mrows, int krange_rows, int ngroups, bool group_scales)
{
    const int P = wf == W_U4A16 ? 16 : 32, B = wf == W_FP8A8 ? 8 : 4, S = wf == W_FP8A8 ? 4 : 8;
    const size_t ring = (size_t)WARPS * S * (B / 4) * (P / 16) * 512;
    return (ring > 16384 ? ring : 16384) + (size_t)mrows * (krange_rows * P + 8) * 2 +
           (group_scales ? (size_t)ngroups * 64 * 4 : 0);
}

/* scale entry i of group row sg (16-bit or fused-e8m0 byte) as a compute-type pair */
template <int WF, bool CBF>
__device__ __forceinline__ uint32_t scale_pair(const Dev &p, int64_t i)
{
    uint32_t h;
    if (WF == W_FP4A8) h = ((uint32_t)p.s[i] + 15u) << 10; /* 2^o in fp16 (o <= 12) */
    else h = fastw4::conv16<CBF>(((const uint16_t *)p.s)[i], p.d.scale_kind == HCK_S_BF16);
    return h | h << 16;
}

template <int WF, bool CBF, bool SCALE_C, bool TR>
__global__ void __launch_bounds__(NT)
gemv_kernel(Dev p, const uint16_t *__restrict__ x, int64_t xld, const float *__restrict__ tok_scale,
            const int64_t *__restrict__ offsets, uint16_t *__restrict__ y, int splits,
            float *__restrict__ ws)
{
    using F = Fmt<WF>;
    constexpr int P = F::P, U4 = F::U4, S = F::S;
    const hck_desc &d = p.d;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, gq = lane / 4, tq = lane % 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e] + 16 * (int64_t)blockIdx.y, r1 = offsets[e + 1]; /* 16-token block y */
    const int mrows = (int)min((int64_t)16, r1 - r0);
    if (mrows <= 0) return;
    const int nb = blockIdx.x;
    const int rows = (int)(d.Kp / P);
    const int kb0 = (int)((int64_t)rows * split / splits), kb1 = (int)((int64_t)rows * (split + 1) / splits);
    const int nrow = kb1 - kb0, XLD = nrow * P + 8;
    const int64_t row_words = d.Np * P * F::B / 32, K = xld;
    const int gs = (int)d.group_size, g0 = kb0 * P / gs;
    extern __shared__ __align__(16) uint16_t smem16[];
    /* the lane's piece q of slot i: ring[(U4 i + q) 32] */
    uint4 *ring = (uint4 *)smem16 + warp * S * U4 * 32 + lane;
    uint16_t *xs = smem16 + smem_bytes(WF, 0, 0, 0, false) / 2; /* [mrows][XLD], after the rings */
    uint32_t *ss = (uint32_t *)(xs + mrows * XLD);            /* [groups][64] scale pairs */
    const int w0 = kb0 + nrow * warp / WARPS, nmine = kb0 + nrow * (warp + 1) / WARPS - w0;
    const uint32_t *wp = p.w + ((int64_t)e * rows + w0) * row_words + (int64_t)nb * F::TILE_WORDS;
    int pofs[U4];
#pragma unroll
    for (int q = 0; q < U4; q++) pofs[q] = F::piece(q, lane);

    /* 1. start the weight stream: the warp's rows 0 .. S-2 (one commit group per row) */
#pragma unroll
    for (int i = 0; i < S - 1; i++) {
        if (i < nmine)
#pragma unroll
            for (int q = 0; q < U4; q++) fastw4::cp_async16(ring + 32 * (U4 * i + q), wp + i * row_words + pofs[q], 16);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    /* 2. activations of the k range (valid rows only; zero past K) and scales */
    const bool vec = (K & 7) == 0;
    const int xrow = nrow * P / 8; /* 16-byte pieces per row */
    for (int i = tid; i < mrows * xrow; i += NT) {
        const int r = i / xrow, c = i - r * xrow;
        const int64_t k = (int64_t)kb0 * P + c * 8;
        const uint16_t *src = x + (r0 + r) * K + k;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (vec) {
            if (k < K) v = __ldg((const uint4 *)src);
        } else {
            uint16_t t[8];
#pragma unroll
            for (int j = 0; j < 8; j++) t[j] = k + j < K ? src[j] : 0;
            v = make_uint4(t[0] | (uint32_t)t[1] << 16, t[2] | (uint32_t)t[3] << 16,
                           t[4] | (uint32_t)t[5] << 16, t[6] | (uint32_t)t[7] << 16);
        }
        *(uint4 *)&xs[r * XLD + c * 8] = v;
    }
    if (!SCALE_C) {
        const int ng = (kb1 * P - 1) / gs - g0 + 1;
        for (int i = tid; i < ng * 64; i += NT)
            ss[i] = scale_pair<WF, CBF>(p, ((int64_t)e * d.G + g0 + i / 64) * d.Np + (int64_t)nb * 64 + i % 64);
    }
    __syncthreads();

    float acc[8][4];
#pragma unroll
    for (int c = 0; c < 8; c++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[c][j] = 0.0f;
    uint32_t sc[8];
    /* group scales: rows per group, rows left in the current group (no division
     * in the loop), the next group's pairs (perm64: the lane's 8 B columns are 8
     * consecutive entries) */
    const int rpg = gs / P;
    int gleft = 0;
    const uint32_t *sg = ss + (w0 / rpg - g0) * 64 + 8 * gq;
    auto load_scales = [&]() {
        const uint4 a0 = *(const uint4 *)sg, a1 = *(const uint4 *)(sg + 4);
        sc[0] = a0.x, sc[1] = a0.y, sc[2] = a0.z, sc[3] = a0.w;
        sc[4] = a1.x, sc[5] = a1.y, sc[6] = a1.z, sc[7] = a1.w;
        sg += 64;
    };
    if (!SCALE_C && nmine > 0) {
        load_scales();
        gleft = rpg - w0 % rpg;
    }
    /* one B pair times the group scale, then the mma */
    auto mma = [&](int c, const uint32_t *a, uint32_t b0, uint32_t b1) {
        if (!SCALE_C) {
            b0 = fastw4::fma2<CBF>(b0, sc[c], 0x80008000u);
            b1 = fastw4::fma2<CBF>(b1, sc[c], 0x80008000u);
        }
        fastw4::mma16816<CBF>(acc[c], a, b0, b1);
    };
    const uint32_t *wq = wp + (int64_t)(S - 1) * row_words; /* next row to fetch */
    const uint16_t *xa = &xs[(lane % 16 < mrows ? lane % 16 : 0) * XLD + 8 * (lane / 16) + (w0 - kb0) * P];
    /* unrolled by S so that ring slots are constants */
    for (int t0 = 0; t0 < nmine; t0 += S) {
#pragma unroll
        for (int u = 0; u < S; u++) {
            const int t = t0 + u;
            if (t >= nmine) break;
            asm volatile("cp.async.wait_group %0;" ::"n"(S - 2) : "memory");
            uint32_t wv[4 * U4];
#pragma unroll
            for (int q = 0; q < U4; q++) {
                const uint4 v = ring[32 * (U4 * u + q)];
                wv[4 * q] = v.x, wv[4 * q + 1] = v.y, wv[4 * q + 2] = v.z, wv[4 * q + 3] = v.w;
            }
            /* refill the slot consumed by the previous row */
            if (t + S - 1 < nmine) {
                const int sl = (u + S - 1) % S;
#pragma unroll
                for (int q = 0; q < U4; q++) fastw4::cp_async16(ring + 32 * (U4 * sl + q), wq + pofs[q], 16);
            }
            wq += row_words;
            asm volatile("cp.async.commit_group;" ::: "memory");
            if (!SCALE_C) {
                if (gleft == 0) {
                    load_scales();
                    gleft = rpg;
                }
                gleft--;
            }
            /* A: one ldmatrix per k16 step; rows >= mrows repeat row 0 (discarded) */
            uint32_t a[P / 16][4];
#pragma unroll
            for (int st = 0; st < P / 16; st++) fastw4::ldsm4(a[st], xa + t * P + 16 * st);
            if (WF == W_U4A16) { /* word i3 holds n8 blocks 2 i3 (i4 = 0) and 2 i3 + 1 */
#pragma unroll
                for (int i3 = 0; i3 < 4; i3++) {
                    uint32_t q[4];
                    dq4<CBF>(wv[i3], q);
                    /* normal: nibble 4 kk + 2 i4 + i5; transposed: 4 kk + 2 i5 + i4 */
                    mma(2 * i3, a[0], q[0], TR ? q[2] : q[1]);
                    mma(2 * i3 + 1, a[0], TR ? q[1] : q[2], q[3]);
                }
            } else if (F::B == 4) {
                /* 8 words, one per (chunk j, i3, x): normal x = i4 (n8 block c = 4 j + 2 i3 + i4,
                 * nibble 2 kk + i5); transposed x = i5 (both blocks of the pair, nibble 2 kk + i4) */
#pragma unroll
                for (int wi = 0; wi < 8; wi++) {
                    uint32_t q[4];
                    if (WF == W_U4A8) {
                        /* sign-magnitude int->fp codes back to offset binary */
                        const uint32_t w = wv[wi], m = (w >> 3) & 0x11111111u;
                        dq4<CBF>(w ^ 0x88888888u ^ (m * 7u), q);
                    } else {
#pragma unroll
                        for (int i = 0; i < 4; i++) q[i] = fp4_pair(wv[wi], i);
                    }
                    if (TR) {
                        const int c = wi & ~1, st = wi & 1;
                        mma(c, a[st], q[0], q[2]);
                        mma(c + 1, a[st], q[1], q[3]);
                    } else {
                        mma(wi, a[0], q[0], q[2]);
                        mma(wi, a[1], q[1], q[3]);
                    }
                }
            } else { /* fp8: byte kk of word 8 j + 4 i3 + 2 i4 + i5 (transposed: 2 i5 + i4) */
#pragma unroll
                for (int c = 0; c < 8; c++)
#pragma unroll
                    for (int st = 0; st < 2; st++) {
                        const int wi = TR ? 8 * (c / 4) + 4 * ((c / 2) % 2) + 2 * st + c % 2 : 2 * c + st;
                        mma(c, a[st], fp8_pair(wv[wi], 0), fp8_pair(wv[wi], 1));
                    }
            }
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads(); /* the rings are free: they hold the four warps' sums now */

    /* 3. cross-warp sum (only the rows < mrows matter); then warp w finishes
     * the lane's accumulator entries [EPW w, EPW (w + 1)) */
    float *red = (float *)smem16; /* [WARPS][32][32] */
    const float *af = &acc[0][0];
#pragma unroll
    for (int j = 0; j < 32; j++)
        if ((gq + 8 * ((j % 4) >> 1)) < mrows) red[(warp * 32 + j) * 32 + lane] = af[j];
    __syncthreads();
    const int sbf = d.scale_kind == HCK_S_BF16;
    const float pow2 = WF == W_FP4A8 ? 16384.0f : WF == W_FP8A8 ? 256.0f : 1.0f; /* code placement */
    const float gscale = pow2 * (d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e]);
    const int64_t Mtot = offsets[d.E];
    const uint16_t *sp = (const uint16_t *)p.s;
    for (int jj = 0; jj < EPW; jj++) {
        const int j = EPW * warp + jj, c8 = j / 4, c = j % 4;
        const int ml = gq + 8 * (c >> 1);
        if (ml >= mrows) continue;
        const int64_t n = (int64_t)nb * 64 + 8 * c8 + 2 * tq + (c & 1);
        if (n >= d.N) continue;
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS; w++) v += red[(w * 32 + j) * 32 + lane];
        if (SCALE_C) { /* perm32: the lane's 8 columns of a 32-chunk are consecutive */
            const int i3 = c8 / 2, i4 = c8 % 2, t8 = 2 * (2 * (i3 % 2) + i4) + (c & 1);
            v *= h2f(sp[(int64_t)e * d.Np + (int64_t)nb * 64 + 32 * (i3 / 2) + 8 * tq + t8], sbf);
        }
        v *= gscale;
        if (tok_scale) v *= tok_scale[r0 + ml];
        if (splits > 1) ws[((int64_t)split * Mtot + r0 + ml) * d.N + n] = v;
        else y[(r0 + ml) * d.N + n] = f2h(v + bias_at(p, e, n), d.out_bf16);
    }
    if (splits == 1) return;
    /* 4. the last block of this tile to arrive sums the partials in split order */
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    int *ctr = p.counters + ((int64_t)e * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    if (tid == 0) s_last = atomicAdd(ctr, 1) == splits - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    split_sum<1>(p, e, ws, y, r0, mrows, (int64_t)nb * 64, 64, Mtot * d.N, splits, tid, NT);
    if (tid == 0) *ctr = 0;
}

/* The instantiated variants, by (format, bf16 compute, scale on C, transposed). */
using GemvFn = void (*)(Dev, const uint16_t *, int64_t, const float *, const int64_t *, uint16_t *, int, float *);
template <int WF>
inline GemvFn gemv_fn_of(bool cbf, bool sc, bool tr)
{
    if (cbf) {
        if (sc) return tr ? gemv_kernel<WF, true, true, true> : gemv_kernel<WF, true, true, false>;
        return tr ? gemv_kernel<WF, true, false, true> : gemv_kernel<WF, true, false, false>;
    }
    if (sc) return tr ? gemv_kernel<WF, false, true, true> : gemv_kernel<WF, false, true, false>;
    return tr ? gemv_kernel<WF, false, false, true> : gemv_kernel<WF, false, false, false>;
}
inline GemvFn gemv_fn(int wf, bool cbf, bool sc, bool tr)
{
    switch (wf) {
    case W_U4A16: return gemv_fn_of<W_U4A16>(cbf, sc, tr);
    case W_U4A8: return gemv_fn_of<W_U4A8>(cbf, sc, tr);
    case W_FP4A8: return cbf || sc || tr ? nullptr : gemv_kernel<W_FP4A8, false, false, false>;
    case W_FP8A8: return cbf ? nullptr : gemv_fn_of<W_FP8A8>(false, sc, tr);
    }
    return nullptr;
}

/* Quantizes one 16-byte chunk c (8 consecutive k, 16-bit values u) of row
 * `row` with scale s and stores its codes as act16_kernel describes. */
__device__ __forceinline__ void act16_chunk(int act_quant, int in_bf16, int code_bf16, int bytes, uint4 u, int64_t row,
                                            int64_t c, int64_t Kp, float s, uint16_t *__restrict__ codes)
{
    const int64_t k0 = 8 * c;
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
    uint16_t q[8];
    uint8_t b[8];
#pragma unroll
    for (int i = 0; i < 8; i++) { /* zero past K quantizes to code 0 */
        const float t = __fdiv_rn(h2f((uint16_t)(w[i / 2] >> (16 * (i % 2))), in_bf16), s);
        if (act_quant == HCK_A_E4M3) {
            const __nv_fp8_e4m3 c4(t);
            b[i] = c4.__x, q[i] = f2h(float(c4), code_bf16);
        } else {
            const __nv_fp8_e5m2 c5(t);
            b[i] = c5.__x, q[i] = f2h(float(c5), code_bf16);
        }
    }
    if (bytes) { /* the codes themselves, in k order */
        *(uint2 *)((uint8_t *)codes + row * Kp + k0) = make_uint2(
            b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24, b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24);
        return;
    }
    uint16_t *dst = codes + row * Kp + (k0 & ~(int64_t)15) + 4 * ((k0 / 8) % 2);
    *(uint2 *)dst = make_uint2(q[0] | (uint32_t)q[2] << 16, q[4] | (uint32_t)q[6] << 16);
    *(uint2 *)(dst + 8) = make_uint2(q[1] | (uint32_t)q[3] << 16, q[5] | (uint32_t)q[7] << 16);
}

constexpr int ACT_CACHE = 4; /* 16-byte chunks per thread kept in registers between the two passes */
/* threads of act16_kernel for `rows` tokens of Kp: a chunk each, up to 1024
 * where the rows alone leave SMs idle, else up to 256 (from 512 tokens, 1024
 * threads make two blocks per SM, each a load, a barrier and the arithmetic in
 * turn: slower than 256) */
inline int act16_threads(int64_t rows, int64_t Kp)
{
    return (int)std::min<int64_t>(rows >= 512 ? 256 : 1024, std::max<int64_t>(32, (Kp / 8 + 31) / 32 * 32));
}

/* Per-token quantization for the small-M and wgmma kernels, one block per
 * token: x (rows, K) 16-bit -> codes (bytes: as fp8 bytes (rows, Kp) in k
 * order, for the fp8 wgmma variant; else) as 16-bit values of the compute type
 * (rows, Kp), each 16-k block de-interleaved (position p < 8 holds k = 2p, p >=
 * 8 holds 2 (p - 8) + 1), zero past K; the scale per token. Same arithmetic as
 * act_kernel. A thread takes 8 consecutive k per chunk (one 16-byte load),
 * keeps its first ACT_CACHE chunks in registers from the max pass to the
 * quantization (rather than reading the row twice) and writes 4 even and 4
 * odd codes as two 8-byte stores. */
__global__ void __launch_bounds__(1024) act16_kernel(int act_quant, int in_bf16, int code_bf16, int bytes,
                                                     const uint16_t *__restrict__ x, int64_t K, int64_t Kp,
                                                     uint16_t *__restrict__ codes, float *__restrict__ scales)
{
    const int64_t row = blockIdx.x, nc = Kp / 8;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* the wgmma kernel after this one may start (its weights do not depend on
     * these codes; it waits for this grid before it reads them) */
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    const uint16_t *xr = x + row * K;
    __shared__ float red[64];
    const bool vec = (K & 7) == 0;
    uint4 u[ACT_CACHE];
    float mx = 1e-30f, mn = -1e-30f; /* the zeros past K change neither */
#pragma unroll
    for (int i = 0; i < ACT_CACHE; i++) {
        const int64_t c = threadIdx.x + (int64_t)i * blockDim.x;
        u[i] = make_uint4(0u, 0u, 0u, 0u);
        if (c < nc) u[i] = ld_chunk8(xr, 8 * c, K, vec), range8(u[i], in_bf16, mx, mn);
    }
    for (int64_t c = threadIdx.x + (int64_t)ACT_CACHE * blockDim.x; c < nc; c += blockDim.x)
        range8(ld_chunk8(xr, 8 * c, K, vec), in_bf16, mx, mn);
    const float s = token_scale_of(act_quant, mx, mn, red);
    if (threadIdx.x == 0) scales[row] = s;
#pragma unroll
    for (int i = 0; i < ACT_CACHE; i++) {
        const int64_t c = threadIdx.x + (int64_t)i * blockDim.x;
        if (c < nc) act16_chunk(act_quant, in_bf16, code_bf16, bytes, u[i], row, c, Kp, s, codes);
    }
    for (int64_t c = threadIdx.x + (int64_t)ACT_CACHE * blockDim.x; c < nc; c += blockDim.x)
        act16_chunk(act_quant, in_bf16, code_bf16, bytes, ld_chunk8(xr, 8 * c, K, vec), row, c, Kp, s, codes);
}
}  // namespace small

#include "hc_wgmma.cuh"

/* Split-K epilogue: float partial sums + bias -> 16-bit output. */
__global__ void finish_kernel(Dev p, const float *__restrict__ ws, const int64_t *__restrict__ offsets,
                              int64_t rows, uint16_t *__restrict__ y)
{
    const hck_desc &d = p.d;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * d.N;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t m = i / d.N, n = i % d.N;
        float v = ws[i];
        if (d.bias_kind) {
            int e = 0;
            while (e + 1 < d.E && m >= offsets[e + 1]) e++;
            int64_t t = (int64_t)e * d.Np + (n / 32) * 32 + inv_perm(32, (int)(n % 32));
            v += h2f(p.bias[t], d.bias_kind == 2);
        }
        y[i] = f2h(v, d.out_bf16);
    }
}

/* One block per token: 16-bit x -> float values (a16) or codes + scale. */
__global__ void act_kernel(int act_quant, int in_bf16, const uint16_t *__restrict__ x, int64_t K,
                           float *__restrict__ codes, float *__restrict__ scales)
{
    const int64_t row = blockIdx.x;
    const uint16_t *xr = x + row * K;
    float *cr = codes + row * K;
    if (act_quant == HCK_A_NONE) {
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) cr[k] = h2f(xr[k], in_bf16);
        return;
    }
    __shared__ float red[64];
    const float s = token_scale(act_quant, in_bf16, xr, K, red);
    if (threadIdx.x == 0) scales[row] = s;
    const float lo = act_quant == HCK_A_INT8 ? -128.0f : -8.0f;
    const float hi = act_quant == HCK_A_INT8 ? 127.0f : 7.0f;
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
        float t = __fdiv_rn(h2f(xr[k], in_bf16), s), q;
        if (act_quant == HCK_A_E4M3) {
            q = float(__nv_fp8_e4m3(t));
        } else if (act_quant == HCK_A_E5M2) {
            q = float(__nv_fp8_e5m2(t));
        } else {
            q = fminf(fmaxf(rintf(t), lo), hi);
        }
        cr[k] = q;
    }
}

/* Reads n 16-byte words of p (zeros) through L2, evicting what L2 held with
 * clean lines (HCK_TIME_FLUSH=2); the store that keeps the loads never runs. */
__global__ void read_flush_kernel(const uint4 *p, size_t n)
{
    uint32_t acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = __ldcg(p + i);
        acc |= v.x | v.y | v.z | v.w;
    }
    if (acc == 0x9e3779b9u) ((uint4 *)p)[0].x = acc;
}

__global__ void random_kernel(uint16_t *x, int64_t n, int bf16, uint32_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 0x2c1b3c6du;
        h ^= h >> 12;
        float v = ((float)(h & 0xffffff) / 16777216.0f) * 2.0f - 1.0f;
        x[i] = f2h(v, bf16);
    }
}

__global__ void fill_kernel(uint32_t *p, int64_t n, uint32_t v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

/* A split workspace of `bytes` (0: none, *ws = nullptr) with every float
 * HCK_WS_EMPTY, as the polled split sum needs it between launches (its
 * launches leave it so); the caller frees *ws with cudaFree. */
cudaError_t ws_alloc(float **ws, size_t bytes)
{
    *ws = nullptr;
    if (bytes == 0) return cudaSuccess;
    cudaError_t e = cudaMalloc((void **)ws, bytes);
    if (e != cudaSuccess) return e;
    fill_kernel<<<256, 256>>>((uint32_t *)*ws, (int64_t)(bytes / 4), HCK_WS_EMPTY);
    return cudaGetLastError();
}

#define CK(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            if (msg) snprintf(msg, msglen, "%s: %s", #call, cudaGetErrorString(e_));          \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

template <typename T>
cudaError_t upload(const void *src, size_t bytes, T **dst)
{
    *dst = nullptr;
    if (src == nullptr || bytes == 0) return cudaSuccess;
    cudaError_t e = cudaMalloc((void **)dst, bytes);
    if (e != cudaSuccess) return e;
    return cudaMemcpy((void *)*dst, src, bytes, cudaMemcpyHostToDevice);
}

size_t smem_bytes(const hck_desc &d) { return (size_t)(BM + BN) * (256 / d.abits + 4) * sizeof(float); }

/* Compute capability of the current device (cached; 0 if unknown). */
int device_sm()
{
    static int v = -1;
    if (v < 0) {
        int dev = 0, ma = 0, mi = 0;
        if (cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&ma, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&mi, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess)
            v = 10 * ma + mi;
        else
            v = 0;
    }
    return v;
}

}  // namespace

struct hck_layer {
    Dev dev;
};

extern "C" int hck_abi_version(void) { return HCK_ABI_VERSION; }

extern "C" int hck_device_sm(char *msg, size_t msglen)
{
    int n = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (msg) snprintf(msg, msglen, "no GPU: %s", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 0;
    }
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    if (major < 8) {
        if (msg) snprintf(msg, msglen, "GPU sm%d%d: the kernels need sm80 or newer", major, minor);
        return 0;
    }
    return 10 * major + minor;
}

extern "C" void hck_layer_destroy(hck_layer *L)
{
    if (L == nullptr) return;
    cudaFree((void *)L->dev.w);
    cudaFree((void *)L->dev.s);
    cudaFree((void *)L->dev.z);
    cudaFree((void *)L->dev.gl);
    cudaFree((void *)L->dev.bias);
    cudaFree((void *)L->dev.counters);
    delete L;
}

extern "C" int hck_layer_create(const hck_desc *d, hck_layer **out, char *msg, size_t msglen)
{
    *out = nullptr;
    hck_layer *L = new hck_layer();
    memset(&L->dev, 0, sizeof L->dev);
    L->dev.d = *d;
    if (d->abits != 16 && d->abits != 8 && d->abits != 4) {
        if (msg) snprintf(msg, msglen, "activation bits %d", d->abits);
        delete L;
        return -1;
    }
    CK(upload(d->weight, d->weight_bytes, &L->dev.w));
    CK(upload(d->scale, d->scale_bytes, &L->dev.s));
    CK(upload(d->zero, d->zero_bytes, &L->dev.z));
    CK(upload(d->global, d->global_bytes, &L->dev.gl));
    CK(upload(d->bias, d->bias_bytes, &L->dev.bias));
    {
        const size_t nctr = (size_t)(d->Np / 64 + 1) * d->E * small::YMAX;
        CK(cudaMalloc((void **)&L->dev.counters, nctr * sizeof(int)));
        CK(cudaMemset(L->dev.counters, 0, nctr * sizeof(int)));
    }
for (int v = 0; v < 32; v++) { /* every small-M variant: (format, bf16, on C, transposed) */
        small::GemvFn f = small::gemv_fn(v / 8, (v / 4) % 2, (v / 2) % 2, v % 2);
        if (f) CK(cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)small::SMEM_MAX));
    }
    if (device_sm() == 90)
        for (int v = 0; v < hopper::V_COUNT * 128; v++) { /* every wgmma variant */
            static const int ntoks[4] = {16, 64, 128, 256};
            const int wf = (v / 8) % 4, ntok = ntoks[(v / 32) % 4], var = v / 128;
            hopper::WgFn f = hopper::wg_fn(wf, (v / 4) % 2, (v / 2) % 2, v % 2, ntok, var);
            if (f) CK(cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)hopper::wg_shape(wf, ntok, var).smem));
        }
    CK(cudaFuncSetAttribute(gemm_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)smem_bytes(*d)));
    CK(cudaFuncSetAttribute(gemm_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)smem_bytes(*d)));
#define HCK_FAST_ATTR(BF, ONC, MT)                                                             \
    CK(cudaFuncSetAttribute(fastw4::w4a16_kernel<BF, ONC, MT>,                                 \
                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fastw4::SMEM_MAX))
    HCK_FAST_ATTR(false, false, 1); HCK_FAST_ATTR(false, true, 1);
    HCK_FAST_ATTR(true, false, 1); HCK_FAST_ATTR(true, true, 1);
    HCK_FAST_ATTR(false, false, 4); HCK_FAST_ATTR(false, true, 4);
    HCK_FAST_ATTR(true, false, 4); HCK_FAST_ATTR(true, true, 4);
#undef HCK_FAST_ATTR
#define HCK_FAST_ATTR(BF, ONC)                                                                 \
    CK(cudaFuncSetAttribute(fastw4::w4a16_kernel<BF, ONC, 4, 2>,                               \
                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fastw4::SMEM_MAX))
    HCK_FAST_ATTR(false, false); HCK_FAST_ATTR(false, true);
    HCK_FAST_ATTR(true, false); HCK_FAST_ATTR(true, true);
#undef HCK_FAST_ATTR
    *out = L;
    return 0;
fail:
    hck_layer_destroy(L);
    return -1;
}

namespace {
/* Activation prep + GEMM on device buffers. */
/* Split-K factor: enough blocks for ~2 waves on the device when M is small. */
int split_count(const hck_desc &d, int64_t max_rows)
{
    int64_t blocks = (d.Np / BN) * ((max_rows + BM - 1) / BM) * d.E;
    int64_t krows = d.Kp / (256 / d.abits);
    int64_t s = blocks > 0 ? (264 + blocks - 1) / blocks : 1;
    if (s > 16) s = 16;
    if (s > krows) s = krows;
    return s < 1 ? 1 : (int)s;
}

int sm_count()
{
    static int n = 0;
    if (n == 0) {
        int dev = 0, v = 0;
        if (cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess && v > 0)
            n = v;
        else
            n = 132;
    }
    return n;
}

/* Dynamic shared memory of the fast kernel: staged activations, and for MT = 1
 * with group scales the scales of the block's k range (4 tiles). */
size_t fast_smem(const hck_desc &d, int mt, int splits)
{
    /* mt = 8: 4 x 2 token groups, two activation buffers */
    const int xld = mt == 1 ? fastw4::Shape<1>::XLD : mt == 8 ? fastw4::Shape<4, 2>::XLD : fastw4::Shape<4>::XLD;
    size_t b = (size_t)16 * mt * xld * 2 * (mt == 8 ? 2 : 1);
    if (mt == 1 && d.scale_perm == 64) {
        const int64_t krows = d.Kp / 16, kr = (krows + splits - 1) / splits + 1;
        b += (size_t)((kr * 16) / d.group_size + 2) * 256 * 2;
    }
    return b;
}

/* Blocks of kernel f (nt threads, smem dynamic bytes) resident per SM:
 * the occupancy query, cached per (kernel, smem); `fallback` if it fails. */
int blocks_per_sm(const void *f, int nt, size_t smem, int fallback)
{
    static std::mutex mu;
    static std::map<std::pair<const void *, size_t>, int> memo;
    {
        std::lock_guard<std::mutex> g(mu);
        auto it = memo.find({f, smem});
        if (it != memo.end()) return it->second;
    }
    int v = 0;
    if (f == nullptr || cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, f, nt, smem) != cudaSuccess || v < 1) {
        cudaGetLastError();
        v = fallback;
    }
    std::lock_guard<std::mutex> g(mu);
    memo[{f, smem}] = v;
    return v;
}

/* Blocks of the fast kernel resident per SM. */
int fast_blocks_per_sm(int mt, bool scale_c, size_t smem)
{
    const void *f = mt == 1 ? (scale_c ? (const void *)fastw4::w4a16_kernel<false, true, 1>
                                       : (const void *)fastw4::w4a16_kernel<false, false, 1>)
                  : mt == 4 ? (scale_c ? (const void *)fastw4::w4a16_kernel<false, true, 4>
                                       : (const void *)fastw4::w4a16_kernel<false, false, 4>)
                            : (scale_c ? (const void *)fastw4::w4a16_kernel<false, true, 4, 2>
                                       : (const void *)fastw4::w4a16_kernel<false, false, 4, 2>);
    return blocks_per_sm(f, fastw4::WARPS * (mt == 8 ? 64 : 32), smem, mt == 1 ? 3 : mt == 4 ? 2 : 1);
}

/* Split-K model: a block of the fast kernel costs (its tile rows + R0)
 * time units, R0 = 16 covering prologue, staging and epilogue; blocks run in
 * waves of (SMs x resident blocks per SM). Pick the split s minimising
 * waves(s) x (krows / s + R0) + reduction cost, with the reduction (memset,
 * atomics, finish pass) charged 8 units when s > 1. Ties within 3% go to the
 * smaller s. s = 1 whenever the unsplit grid already fills the waves well. */
int fast_split_model(const hck_desc &d, int mt, int64_t blocks, int64_t krows)
{
    if (blocks <= 0) return 1;
    int64_t cap = krows / 4;
    if (cap > 32) cap = 32;
    if (cap < 1) cap = 1;
    double best = -1; /* none feasible yet (s = 1 may not fit the staged scales) */
    int64_t bs = 1;
    for (int64_t s = 1; s <= cap; s++) {
        const size_t smem = fast_smem(d, mt, (int)s);
        if (smem > fastw4::SMEM_MAX) continue;
        const int64_t slots = (int64_t)sm_count() * fast_blocks_per_sm(mt, d.scale_perm == 32, smem);
        const int64_t waves = (blocks * s + slots - 1) / slots;
        const double c = (double)waves * ((double)krows / s + 16.0) + (s > 1 ? 8.0 : 0.0);
        if (best < 0 || c < best * 0.97) { best = c; bs = s; }
    }
    return (int)bs;
}

/* Which kernel runs: the 4-bit x 16-bit fast path (fastw4) when the layer is
 * uint4 (offset binary, no zero point, no int->fp transform) with 16-bit
 * activations and fp16/bf16 group scales (perm64, group a multiple of 16) or
 * channel scales (perm32); the general kernel otherwise. */
struct Plan {
    int fast;    /* 0 general, else tokens per block / 16 (MT) */
    int splits;
    int small;   /* 1: the small-M kernel (fast == 1), partials in ws[split] */
    int wf;      /* its weight format (small::W_*) */
    size_t smem; /* dynamic shared memory of the small-M kernel */
    int wg;      /* the Hopper wgmma kernel in format wf: tokens per block (16 to 256), else 0 */
    int var;     /* its variant (hopper::V_*: standard, wide, fp8, fp8 wide, lo8, quad) */
};

/* Bytes of the activation-codes buffer: float codes (general kernel) or the
 * small-M kernel's 16-bit codes over Kp. */
size_t codes_bytes(const hck_desc &d, int64_t rows)
{
    const size_t a = (size_t)rows * d.K * 4, b = (size_t)rows * d.Kp * 2;
    return (a > b ? a : b) + 16;
}

/* Workspace bytes of a plan for `rows` tokens: the small-M kernel keeps one
 * partial sum per split, the others accumulate into one float per output. */
size_t ws_bytes(const Plan &pl, int64_t rows, int64_t N)
{
    if (pl.splits <= 1) return 0;
    return (size_t)rows * N * sizeof(float) * (pl.small || pl.wg ? pl.splits : 1) + 4;
}

/* Which small-M format a layer is, or -1 (docs/kernels.md lists the conditions). */
int small_format(const hck_desc &d)
{
    const bool s16 = d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16;
    const bool fp8a = d.act_quant == HCK_A_E4M3 || d.act_quant == HCK_A_E5M2;
    const bool plain = d.zp_kind == HCK_Z_NONE && !d.fused_x2 && d.Np % 64 == 0;
    if (!plain) return -1;
    auto scales_ok = [&](int P) {
        return (d.scale_perm == 64 && d.group_size % P == 0) || (d.scale_perm == 32 && d.G == 1);
    };
    if (d.abits == 16 && d.wbits == 4 && d.wkind == HCK_W_INT && !d.weight_signed && !d.int2fp && s16 &&
        scales_ok(16) && d.Kp % 16 == 0)
        return small::W_U4A16;
    if (d.abits != 8 || !fp8a || d.Kp % 32 != 0) return -1;
    if (d.wbits == 4 && d.wkind == HCK_W_INT && !d.weight_signed && d.int2fp && s16 && scales_ok(32))
        return small::W_U4A8;
    const bool e2m1 = d.wkind == HCK_W_FLOAT && d.wbits == 4 && d.wlut[1] == 0.5f && d.wlut[7] == 6.0f &&
                      d.wlut[9] == -0.5f && d.wlut[15] == -6.0f;
    if (e2m1 && d.scale_kind == HCK_S_EXP2 && d.scale_perm == 64 && d.group_size % 32 == 0 && !d.transposed)
        return small::W_FP4A8;
    const bool e4m3 = d.wkind == HCK_W_FLOAT && d.wbits == 8 && d.wlut[0x7e] == 448.0f &&
                      d.wlut[0x01] == 0.001953125f && d.wlut[0xb8] == -1.0f;
    /* group scales on B in fp16 only: bf16 scales would be rounded */
    if (e4m3 && s16 && (d.scale_perm == 32 ? d.G == 1 : d.scale_kind == HCK_S_F16 && scales_ok(32)))
        return small::W_FP8A8;
    return -1;
}

/* Small-M kernel: dynamic shared memory for split s. */
size_t small_smem(const hck_desc &d, int wf, int64_t max_rows, int s)
{
    if (max_rows > 16) max_rows = 16; /* one 16-token block's activations */
    const int P = wf == small::W_U4A16 ? 16 : 32;
    const int64_t krows = d.Kp / P, kr = (krows + s - 1) / s;
    const bool group = d.scale_perm == 64;
    return small::smem_bytes(wf, (int)max_rows, (int)kr, group ? (int)((kr * P) / d.group_size + 2) : 0, group);
}

/* Blocks of the small-M kernel resident per SM for this shared memory size. */
int small_blocks_per_sm(const hck_desc &d, int wf, size_t smem)
{
    const bool cbf = d.out_bf16 && wf <= small::W_U4A8;
    return blocks_per_sm((const void *)small::gemv_fn(wf, cbf, d.scale_perm == 32, false), small::NT, smem, 2);
}

/* Split model of the small-M kernel, in units of one block row (WARPS rows of
 * one tile): a block costs its rows / WARPS per warp + 6 (prologue,
 * activation staging, epilogue) + its split-K traffic (a split block writes
 * M x 64 floats of partials, M / 8 units; the last block reads s times that
 * at its lower rate); blocks run in waves of SMs x resident blocks. */
int small_split_model(const hck_desc &d, int wf, int64_t max_rows, int64_t blocks)
{
    const int64_t krows = d.Kp / (wf == small::W_U4A16 ? 16 : 32);
    int64_t cap = krows / small::WARPS;
    if (cap > 64) cap = 64;
    if (cap < 1) cap = 1;
    double best = -1;
    int bs = 0;
    /* each warp streams at least 16 KB (rows of 512 B, 1 KB or 2 KB per warp): the
     * per-warp prologue and epilogue are not free (at 8192^2 M = 1 the wave
     * model alone chose more, shorter splits and was slower) */
    const int64_t min_rows = wf == small::W_U4A16 ? 32 : wf == small::W_FP8A8 ? 8 : 16;
    for (int64_t s = 1; s <= cap; s++) {
        /* the floor gives way when only larger splits fit the staged activations */
        if (s > 1 && krows / (s * small::WARPS) < min_rows && bs > 0) break;
        const size_t smem = small_smem(d, wf, max_rows, (int)s);
        if (smem > small::SMEM_MAX) continue;
        const int64_t slots = (int64_t)sm_count() * small_blocks_per_sm(d, wf, smem);
        const int64_t waves = (blocks * s + slots - 1) / slots;
        const double mr = (double)(max_rows < 16 ? max_rows : 16); /* rows of one block */
        const double part = s > 1 ? mr / 8 + (double)s * mr / 8 : 0.0;
        const double c = (double)waves * ((double)krows / (s * small::WARPS) + 6.0 + part);
        if (best < 0 || c < best * 0.97) { best = c; bs = (int)s; }
    }
    return bs; /* 0: nothing fits */
}

/* Whether the wgmma kernel takes a layer of small-M format wf: sm_90a, a
 * variant for it, group scales in whole 64-k stages, 16-byte activation rows. */
bool wg_ok(const hck_desc &d, int wf)
{
    if (device_sm() != 90 || getenv("HCK_NO_WG")) return false;
    const bool cbf = d.out_bf16 && wf <= small::W_U4A8, sc = d.scale_perm == 32;
    if (hopper::wg_fn(wf, cbf, sc, d.transposed, 128, hopper::V_STD) == nullptr) return false;
    if (!sc && d.group_size % 64 != 0 && d.group_size != 32) return false;
    return wf != small::W_U4A16 || d.K % 8 == 0;
}

/* Fewest tokens per expert for the wgmma kernel (HCK_WG_MIN overrides). */
int64_t wg_min_rows()
{
    static const char *env = getenv("HCK_WG_MIN");
    if (env) return atoll(env);
    /* measured on the H200: with its warps on two tiles each, the 16-token
     * variant beats the small-M kernel from 1 token in all four formats */
    return 1;
}

/* Tokens per block of the wgmma kernel (HCK_WG_NTOK overrides): the smallest
 * wgmma N that holds the tokens up to 64, so that few tokens do not pay for
 * unused tensor-core work (memory-bound there); 128, then 256 above 128. */
int wg_tokens(int64_t max_rows)
{
    static const char *nt = getenv("HCK_WG_NTOK"); /* diagnostics */
    if (nt) return atoi(nt);
    return max_rows <= 16 ? 16 : max_rows <= 64 ? 64 : max_rows <= 128 ? 128 : 256;
}

/* Split K of the wgmma kernel (HCK_SPLITS overrides): while one more split
 * still fits the grid in one wave of resident blocks and each split keeps >=
 * 128 stages above 128 tokens, >= 64 from 33 tokens, >= 16 up to 32. Blocks of
 * four tiles leave 8192^2 with 32 blocks: 8 splits beat 4 at M = 16, two
 * splits beat one at M = 64 and, with split_sum's loads in flight together, at
 * M = 128 (measured, H200). The counters cover YMAX token blocks. */
int wg_splits(const hck_desc &d, int wf, int64_t max_rows, int ntok, int var)
{
    const int64_t ty = (max_rows + ntok - 1) / ntok;
    if (ty > small::YMAX) return 1; /* the split counters cover YMAX token blocks */
    if (const char *env = getenv("HCK_SPLITS")) return atoi(env) < 1 ? 1 : atoi(env); /* diagnostics */
    const bool cbf = d.out_bf16 && wf <= small::W_U4A8;
    const bool cbf8 = cbf && !hopper::var_f8(var);
    const void *f = (const void *)hopper::wg_fn(wf, cbf8, d.scale_perm == 32, d.transposed, ntok, var);
    const hopper::WgShape sh = hopper::wg_shape(wf, ntok, var);
    const int64_t slots = (int64_t)sm_count() * blocks_per_sm(f, hopper::nt_of(ntok, var), sh.smem, 1);
    const int bt = sh.tiles;
    const int64_t blocks = (d.Np / 64 + bt - 1) / bt * ty * d.E;
    /* 8192^2 M = 16 runs 4 splits faster than 8 only when timed after a flush
     * that leaves L2 dirty; with L2 clean (HCK_TIME_FLUSH=2, as after another
     * layer), under ncu and with the weights in L2, 8 splits win */
    const int64_t pairs = (d.Kp / 64 + 2) / 2, minp = max_rows <= 32 ? 8 : max_rows <= 128 ? 32 : 64;
    int64_t s = 1;
    while (blocks * (s + 1) <= slots && pairs / (s + 1) >= minp && s < 8) s++;
    return (int)s;
}

/* The 16-token variant for layers of format wf with at most max_rows tokens
 * per expert: lo8 where no block has more than 8 tokens (the mma of tokens
 * 8-15 left out; W8A8 did not gain, so it has none), quad (four consumer
 * warpgroups, one block per SM; uint4 x 16-bit) where each split runs at
 * least 2048 k: faster on the large shapes, slower at 8192^2 (1024 k per
 * split). HCK_WG_LO8=0 / HCK_WG_QUAD=0/1 override. */
int wg_sync_var(const hck_desc &d, int wf, int64_t max_rows)
{
    static const char *const lo8_env = getenv("HCK_WG_LO8"), *const quad_env = getenv("HCK_WG_QUAD");
    const bool cbf = d.out_bf16 && wf <= small::W_U4A8, sc = d.scale_perm == 32;
    const bool lo8 = max_rows <= 8 && (lo8_env == nullptr || atoi(lo8_env) != 0) &&
                     hopper::wg_fn(wf, cbf, sc, d.transposed, 16, hopper::V_LO8) != nullptr;
    bool quad = false;
    if (hopper::wg_fn(wf, cbf, sc, d.transposed, 16, hopper::V_QUAD) != nullptr)
        quad = quad_env ? atoi(quad_env) != 0 : d.Kp / wg_splits(d, wf, max_rows, 16, hopper::V_QUAD) >= 2048;
    return quad ? (lo8 ? hopper::V_QUAD_LO8 : hopper::V_QUAD) : lo8 ? hopper::V_LO8 : hopper::V_STD;
}

/* Whether 128-token blocks take two tiles per warpgroup (HCK_WG_WIDE=0/1
 * overrides): a variant for format wf, and the unsplit grid of the wide blocks
 * still fills 3/4 of the SMs: the wide form wins where its unsplit grid nearly
 * fills them (28672 x 8192 at M = 128), and split K does not rescue a small
 * wide grid (8192^2, 8192 x 28672 lose at every split count). */
bool wg_wide(const hck_desc &d, int wf, int64_t max_rows, int ntok)
{
    const bool cbf = d.out_bf16 && wf <= small::W_U4A8;
    if (ntok != 128 || hopper::wg_fn(wf, cbf, d.scale_perm == 32, d.transposed, 128, hopper::V_WIDE) == nullptr)
        return false;
    if (const char *env = getenv("HCK_WG_WIDE")) return atoi(env) != 0; /* diagnostics */
    const int bt = hopper::wg_shape(wf, 128, hopper::V_WIDE).tiles;
    const int64_t blocks = (d.Np / 64 + bt - 1) / bt * ((max_rows + 127) / 128) * d.E;
    return 4 * blocks >= 3 * (int64_t)sm_count();
}

/* Whether the layer can run on the fp8 variants (V_F8, V_F8W) as format wf:
 * e4m3 activations, uint4 with channel scales or groups of whole stage pairs,
 * or MXFP4 (fused offsets). */
bool wg_f8_format(const hck_desc &d, int wf)
{
    const bool sc = d.scale_perm == 32;
    if (hopper::wg_fn(wf, false, sc, d.transposed, 128, hopper::V_F8) == nullptr) return false;
    return d.act_quant == HCK_A_E4M3 && (wf != small::W_U4A8 || sc || d.group_size % 128 == 0);
}

/* Whether the fp8 variant (e4m3 wgmma, 128 or 256 tokens; HCK_WG_F8=0/1
 * overrides, at any token count) runs a layer wg_f8_format accepts: by default
 * where 128-token blocks run and the wide form does not (where it does, the fp8
 * wide variant runs), and wherever 256-token blocks run: measured faster than
 * the 16-bit blocks there (5-8% at 128 tokens, 13-24% at 256). */
bool wg_f8(const hck_desc &d, int wf, int64_t max_rows, int ntok)
{
    if (!wg_f8_format(d, wf)) return false;
    if (const char *env = getenv("HCK_WG_F8")) return atoi(env) != 0; /* diagnostics */
    return ntok == 256 || (ntok == 128 && !wg_wide(d, wf, max_rows, ntok));
}

/* Tokens per block of the fp8 variant where wg_tokens gave `ntok`: 256-token
 * blocks halve to 128 up to 256 tokens when their grid would leave SMs idle
 * with no split to fill them (HCK_WG_NTOK keeps the given count): at M = 256
 * the 64-block grid of 8192^2 is faster with 128 tokens, grids that fill the
 * SMs or split are faster with 256. */
int wg_f8_tokens(const hck_desc &d, int wf, int64_t max_rows, int ntok)
{
    if (ntok != 256) return 128;
    if (max_rows > 256 || getenv("HCK_WG_NTOK")) return 256;
    const int bt = hopper::wg_shape(wf, 256, hopper::V_F8).tiles;
    const int64_t blocks = (d.Np / 64 + bt - 1) / bt * d.E; /* one 256-token row of blocks */
    const bool idle = blocks < (int64_t)sm_count() && wg_splits(d, wf, max_rows, 256, hopper::V_F8) == 1;
    return idle ? 128 : 256;
}

/* Whether the wgmma plan sums its splits over a cluster (HCK_WG_CSUM=0/1
 * overrides): the 16-token KW kernels with two splits, a cluster of two CTAs
 * per tile group and token block; it beats partials in global memory and the
 * cooperative shared sum there. Clusters of 4 and 8 are slower (they do not
 * all fit at once), so more splits keep the partials in global memory.
 * HCK_WG_CSUM=1 takes 2-8 splits. */
bool wg_cluster_sum(const Plan &pl)
{
    static const char *const env = getenv("HCK_WG_CSUM");
    const int most = env ? (atoi(env) ? 8 : 1) : 2;
    /* 128 and 256 tokens with one tile per warpgroup, two splits */
    const bool big = pl.wg >= 128 && (pl.var == hopper::V_STD || pl.var == hopper::V_F8);
    return pl.splits > 1 && pl.splits <= most &&
           ((pl.wg == 16 && hopper::sync_kw(pl.wf)) || big);
}

/* The split sum of a wgmma plan's launch: 0 (the last block sums), or, as a
 * cooperative launch, HCK_SUM_COOP / HCK_SUM_POLL / -HCK_SUM_COOP.
 *
 * Whether the wgmma plan's splits share the split sum: a cooperative launch,
 * so that every split can wait for all the others' partials and then sum
 * 1 / splits of the tile group's columns, instead of the last one summing
 * them all through one SM; from HCK_COOP_MIN (default 8; uint4 x 16-bit 4)
 * tokens per expert, where the last block's sum costs more than the wait for
 * the slowest split, and only for a grid of `ctas` that kernel f (smem bytes)
 * can hold resident at once. HCK_WG_COOP=0/1 overrides the token rule (2: the
 * cooperative launch with the last block's sum, to time the launch alone).
 * Where it is shared, at 16 and 64 tokens with rows of whole float4s and at
 * most 8 splits, the polled sum (HCK_SUM_POLL; HCK_WG_POLL=0: off) takes the
 * counter's place: no fence or counter, faster from 8 tokens. uint4 x 16-bit
 * polls from 4 tokens (a tie at 1); the 8-bit-activation formats were slower
 * with it at 4 tokens and keep 8 (measured, H200). */
int wg_coop_sum(const Plan &pl, const hck_desc &d, int64_t max_rows, hopper::WgFn f, size_t smem, int64_t ctas)
{
    static const char *const env = getenv("HCK_WG_COOP"), *const least = getenv("HCK_COOP_MIN");
    static const char *const poll = getenv("HCK_WG_POLL");
    if (pl.splits < 2 || ctas > (int64_t)sm_count() * blocks_per_sm((const void *)f, hopper::nt_of(pl.wg, pl.var), smem, 0))
        return 0;
    if (env) return atoi(env) == 2 ? -HCK_SUM_COOP : atoi(env) ? HCK_SUM_COOP : 0;
    if (max_rows < (least ? atoll(least) : pl.wf == small::W_U4A16 ? 4 : 8)) return 0;
    const bool polled = pl.wg <= 64 && d.N % 4 == 0 && pl.splits <= 8 && (poll == nullptr || atoi(poll) != 0);
    return polled ? HCK_SUM_POLL : HCK_SUM_COOP;
}

/* Launches wgmma kernel f with the split sum `mode`: HCK_SUM_CLUSTER as
 * clusters of its pl.splits CTAs along z (wg_cluster_sum), HCK_SUM_COOP as a
 * cooperative launch (wg_coop_sum; -HCK_SUM_COOP: cooperative, but the last
 * block sums), HCK_SUM_LAST as a plain launch; a grid too large to be resident
 * at once falls back to the last-block sum. pdl: the launch may overlap
 * act16_kernel before it in the stream (programmatic dependent launch;
 * the kernel waits for it before reading its output; HCK_PDL=0: off); where
 * the attribute is refused, the launch goes without it. */
cudaError_t launch_wg_ex(hopper::WgFn f, int mode, bool pdl, dim3 grid, const Plan &pl, size_t smem,
                         const CUtensorMap &tm, const CUtensorMap &wm, const Dev &dev, const float *ts,
                         const int64_t *doff, uint16_t *dy, float *ws, cudaStream_t st)
{
    static const char *const pdl_env = getenv("HCK_PDL"); /* diagnostics */
    pdl = pdl && (pdl_env == nullptr || atoi(pdl_env) != 0);
    Dev dv = dev;
    dv.sum_mode = mode < 0 ? HCK_SUM_LAST : mode; /* -HCK_SUM_COOP: the launch without the shared sum */
    dv.pdl = pdl;
    cudaLaunchAttribute attr[2];
    unsigned na = 0;
    if (mode == HCK_SUM_CLUSTER) {
        attr[na].id = cudaLaunchAttributeClusterDimension;
        attr[na].val.clusterDim.x = 1, attr[na].val.clusterDim.y = 1, attr[na].val.clusterDim.z = (unsigned)pl.splits;
        na++;
    } else if (mode != HCK_SUM_LAST) {
        attr[na].id = cudaLaunchAttributeCooperative;
        attr[na].val.cooperative = 1;
        na++;
    }
    if (pdl) {
        attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[na].val.programmaticStreamSerializationAllowed = 1;
        na++;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid, cfg.blockDim = dim3((unsigned)hopper::nt_of(pl.wg, pl.var)), cfg.dynamicSmemBytes = smem;
    cfg.stream = st, cfg.attrs = attr, cfg.numAttrs = na;
    cudaError_t e = cudaLaunchKernelEx(&cfg, f, tm, wm, dv, ts, doff, dy, pl.splits, ws);
    if (e != cudaSuccess && pdl && e != cudaErrorCooperativeLaunchTooLarge) { /* refused: without it */
        (void)cudaGetLastError();
        cfg.numAttrs = na - 1, dv.pdl = 0;
        e = cudaLaunchKernelEx(&cfg, f, tm, wm, dv, ts, doff, dy, pl.splits, ws);
    }
    if (e == cudaErrorCooperativeLaunchTooLarge) {
        (void)cudaGetLastError();
        dv.sum_mode = HCK_SUM_LAST;
        cfg.attrs = pdl ? &attr[na - 1] : nullptr, cfg.numAttrs = pdl ? 1 : 0;
        e = cudaLaunchKernelEx(&cfg, f, tm, wm, dv, ts, doff, dy, pl.splits, ws);
    }
    return e;
}

Plan make_plan(const hck_desc &d, int64_t max_rows, int simt, int want_ws)
{
    Plan pl = {0, 1, 0, 0, 0, 0, hopper::V_STD};
    const int wf = simt || getenv("HCK_NO_SMALL") ? -1 : small_format(d);
    /* from wg_min_rows tokens per expert on sm_90a the wgmma kernel */
    if (wf >= 0 && max_rows >= wg_min_rows() && wg_ok(d, wf)) {
        pl.wf = wf;
        pl.wg = wg_tokens(max_rows);
        if (wg_f8(d, wf, max_rows, pl.wg)) pl.wg = wg_f8_tokens(d, wf, max_rows, pl.wg), pl.var = hopper::V_F8;
        else if (wg_wide(d, wf, max_rows, pl.wg)) /* the fp8 formats' wide form is the fp8 one */
            pl.var = wg_f8_format(d, wf) && !getenv("HCK_WG_F8") ? hopper::V_F8W : hopper::V_WIDE;
        else if (pl.wg == 16)
            pl.var = wg_sync_var(d, wf, max_rows);
        pl.splits = want_ws ? wg_splits(d, wf, max_rows, pl.wg, pl.var) : 1;
        return pl;
    }
    /* the small-M kernel for up to 4 tokens per expert with uint4 x 16-bit
     * (at 16 tokens its staged activations limit the splits on large K and
     * the fast path's MT = 1 kernel is as fast or faster) and
     * up to 16 YMAX = 256 for the 8-bit-activation formats, which have no other
     * fast path (one grid row per 16 tokens, each streaming the weights; far
     * better than the general kernel, not a large-M design). HCK_NO_SMALL: off. */
    if (wf >= 0 && max_rows <= (wf == small::W_U4A16 ? 4 : 16 * small::YMAX)) {
        const int64_t ytiles = (max_rows + 15) / 16;
        const int64_t blocks = (d.Np / 64) * d.E * ytiles, kr = d.Kp / (wf == small::W_U4A16 ? 16 : 32);
        int s = want_ws ? small_split_model(d, wf, max_rows, blocks) : 1;
        if (getenv("HCK_SPLITS") && want_ws) s = atoi(getenv("HCK_SPLITS")); /* diagnostics */
        if (s >= 1 && s <= kr && small_smem(d, wf, max_rows, s) <= small::SMEM_MAX) {
            pl.fast = 1;
            pl.small = 1;
            pl.wf = wf;
            pl.splits = s;
            pl.smem = small_smem(d, wf, max_rows, s);
            return pl;
        }
    }
    const bool fast = !simt && d.abits == 16 && d.wbits == 4 && d.wkind == HCK_W_INT &&
                      !d.weight_signed && !d.int2fp && d.zp_kind == HCK_Z_NONE && !d.fused_x2 &&
                      (d.scale_kind == HCK_S_F16 || d.scale_kind == HCK_S_BF16) &&
                      ((d.scale_perm == 64 && d.group_size % 16 == 0) ||
                       (d.scale_perm == 32 && d.G == 1)) &&
                      d.Np % 64 == 0 && d.Kp % 16 == 0 && getenv("HCK_NO_FAST") == nullptr;
    if (!fast) {
        pl.splits = want_ws ? split_count(d, max_rows) : 1;
        return pl;
    }
    /* tokens per block / 16: 16, 64, or 128 above 64 tokens (HCK_NO_BIG: 64) */
    pl.fast = max_rows <= 16 ? 1 : (max_rows <= 64 || getenv("HCK_NO_BIG")) ? 4 : 8;
    const int64_t blocks = ((d.Np / 64 + 3) / 4) * ((max_rows + 16 * pl.fast - 1) / (16 * pl.fast)) * d.E;
    const int64_t krows = d.Kp / 16;
    int64_t s = 1;
    if (getenv("HCK_SPLIT_OLD")) { /* the fixed-target rule, kept for A/B measurement */
        const int64_t target = (int64_t)sm_count() * (pl.fast == 1 ? 4 : 2);
        s = blocks > 0 ? (target + blocks - 1) / blocks : 1;
        if (s > krows / 4) s = krows / 4;
        if (s > 32) s = 32;
        if (pl.fast == 1) {
            const int64_t kr = fastw4::Shape<1>::KC / 16, smin = (krows + kr - 1) / kr;
            if (s < smin) s = smin;
        }
    } else if (want_ws) {
        s = fast_split_model(d, pl.fast, blocks, krows);
    }
    if (getenv("HCK_SPLITS")) s = atoi(getenv("HCK_SPLITS")); /* diagnostics */
    if (s < 1) s = 1;
    while (s < krows && fast_smem(d, pl.fast, (int)s) > fastw4::SMEM_MAX) s++; /* staged scales fit */
    if (!want_ws && s > 1) pl.fast = 0; /* no workspace: general kernel */
    pl.splits = pl.fast ? (int)s : 1;
    return pl;
}

/* cuTensorMapEncodeTiled, from the driver through the runtime (nothing links
 * libcuda); nullptr where the driver has none. */
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder()
{
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void *fn = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) ==
                cudaSuccess && q == cudaDriverEntryPointSuccess)
            encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    });
    return encode;
}

/* The wgmma kernel's view of the activations x (rows x cols valid of rows of
 * ld elements): boxes of 64 x ntok, zero outside; 16-bit elements with the
 * 128-byte swizzle, or (bytes: the fp8 variant's e4m3 codes) 64-byte rows with
 * the 64-byte swizzle. */
cudaError_t act_tensor_map(CUtensorMap *tm, const uint16_t *x, int64_t rows, int64_t cols, int64_t ld, int ntok,
                           bool bytes)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) return cudaErrorNotSupported;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)(rows > 0 ? rows : 1)};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * (bytes ? 1 : 2)};
    const cuuint32_t box[2] = {64, (cuuint32_t)ntok}, es[2] = {1, 1};
    const CUresult r = encode(tm, bytes ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 2,
                              (void *)x, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              bytes ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/* The wgmma kernel's view of the tile rows of format wf: words as (chunk of
 * wc <= 256, chunk of the row, tile row of every expert), boxes of one stage's
 * R rows x the block's tiles (hopper::wg_shape), zero outside. */
cudaError_t weight_tensor_map(CUtensorMap *tm, const hck_desc &d, const uint32_t *w, int wf, int ntok, int var)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
    if (encode == nullptr) return cudaErrorNotSupported;
    const int P = wf == small::W_U4A16 ? 16 : 32, B = wf == small::W_FP8A8 ? 8 : 4, tile_words = 2 * P * B;
    const int wc = tile_words < 256 ? tile_words : 256;
    const int64_t row_words = d.Np * P * B / 32;
    const cuuint64_t dims[3] = {(cuuint64_t)wc, (cuuint64_t)(row_words / wc), (cuuint64_t)(d.E * (d.Kp / P))};
    const cuuint64_t strides[2] = {(cuuint64_t)wc * 4, (cuuint64_t)row_words * 4};
    const cuuint32_t box[3] = {(cuuint32_t)wc, (cuuint32_t)HCK_WG_BOX_CHUNKS(hopper::wg_shape(wf, ntok, var).tiles, tile_words, wc),
                               (cuuint32_t)(64 / P)};
    const cuuint32_t es[3] = {1, 1, 1};
    const CUresult r = encode(tm, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, (void *)w, dims, strides, box, es,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

/* Enqueues layer L on `rows` tokens of dx (expert offsets doff, at most
 * max_rows per expert) into dy on stream st. ws: the plan's split workspace
 * (ws_bytes), from ws_alloc and used by this layer's plan only (the polled sum
 * needs it empty; a launch of another plan may leave partials in it); nullptr:
 * no splits. */
cudaError_t launch(const hck_layer *L, const uint16_t *dx, int64_t rows, const int64_t *doff,
                   int64_t max_rows, float *dcodes, float *dscales, uint16_t *dy, int simt,
                   float *ws, cudaStream_t st)
{
    const hck_desc &d = L->dev.d;
    const Plan pl = make_plan(d, max_rows, simt, ws != nullptr);
    cudaError_t e;
    if (pl.small || pl.wg) {
        static const bool trace = getenv("HCK_TRACE") != nullptr;
        static const char *const wname[4] = {"w4a16", "w4a8", "mxfp4a8", "w8a8fp8"};
        if (trace)
            fprintf(stderr, "HCK %s %s ntok=%d%s splits=%d smem=%zu E=%d N=%lld K=%lld rows=%lld bf16=%d tr=%d perm=%d gs=%lld\n",
                    pl.wg ? "wgmma" : "small", wname[pl.wf], pl.wg, hopper::var_name(pl.var), pl.splits, pl.smem, d.E, (long long)d.N,
                    (long long)d.K, (long long)rows, d.out_bf16, d.transposed, d.scale_perm,
                    (long long)d.group_size);
        if (max_rows == 0) return cudaSuccess;
        const bool f8 = pl.wg && hopper::var_f8(pl.var);
        const bool cbf = d.out_bf16 && pl.wf <= small::W_U4A8 && !f8;
        const uint16_t *xin = dx;
        int64_t xld = d.K;
        const float *ts = nullptr;
        if (pl.wf != small::W_U4A16) { /* per-token codes (de-interleaved) and scales */
            if (rows > 0)
                small::act16_kernel<<<(unsigned)rows, small::act16_threads(rows, d.Kp), 0, st>>>(
                    d.act_quant, d.out_bf16, cbf, f8, dx, d.K, d.Kp, (uint16_t *)dcodes, dscales);
            e = cudaGetLastError();
            if (e != cudaSuccess) return e;
            xin = (const uint16_t *)dcodes;
            xld = d.Kp;
            ts = dscales;
        }
        if (pl.wg) {
            hopper::WgFn f = hopper::wg_fn(pl.wf, cbf, d.scale_perm == 32, d.transposed, pl.wg, pl.var);
            if (f == nullptr) return cudaErrorInvalidValue;
            CUtensorMap tm;
            e = act_tensor_map(&tm, xin, rows, pl.wf == small::W_U4A16 ? d.K : d.Kp, xld, pl.wg, f8);
            if (e != cudaSuccess) return e;
            CUtensorMap wm;
            e = weight_tensor_map(&wm, d, L->dev.w, pl.wf, pl.wg, pl.var);
            if (e != cudaSuccess) return e;
            const hopper::WgShape sh = hopper::wg_shape(pl.wf, pl.wg, pl.var);
            dim3 grid((unsigned)((d.Np / 64 + sh.tiles - 1) / sh.tiles),
                      (unsigned)((max_rows + pl.wg - 1) / pl.wg), (unsigned)(d.E * pl.splits));
            const bool pdl = pl.wf != small::W_U4A16 && rows > 0; /* after act16_kernel */
            if (wg_cluster_sum(pl))
                return launch_wg_ex(f, HCK_SUM_CLUSTER, pdl, grid, pl, sh.smem, tm, wm, L->dev, ts, doff, dy, ws, st);
            /* not with a cooperative launch: there PDL made the polled sum's M = 16
             * cells slower, where M = 1 gains */
            if (const int mode = wg_coop_sum(pl, d, max_rows, f, sh.smem, (int64_t)grid.x * grid.y * grid.z))
                return launch_wg_ex(f, mode, false, grid, pl, sh.smem, tm, wm, L->dev, ts, doff, dy, ws, st);
            return launch_wg_ex(f, HCK_SUM_LAST, pdl, grid, pl, sh.smem, tm, wm, L->dev, ts, doff, dy, ws, st);
        }
        small::GemvFn f = small::gemv_fn(pl.wf, cbf, d.scale_perm == 32, d.transposed);
        if (f == nullptr) return cudaErrorInvalidValue;
        dim3 grid((unsigned)(d.Np / 64), (unsigned)((max_rows + 15) / 16), (unsigned)(d.E * pl.splits));
        f<<<grid, small::NT, pl.smem, st>>>(L->dev, xin, xld, ts, doff, dy, pl.splits, ws);
        return cudaGetLastError();
    }
    if (pl.fast) {
        const int splits = pl.splits;
        static const bool trace = getenv("HCK_TRACE") != nullptr;
        if (trace)
            fprintf(stderr, "HCK fast w4a16 mt=%d splits=%d E=%d N=%lld K=%lld rows=%lld bf16=%d tr=%d perm=%d gs=%lld\n",
                    pl.fast, splits, d.E, (long long)d.N, (long long)d.K, (long long)rows, d.out_bf16,
                    d.transposed, d.scale_perm, (long long)d.group_size);
        dim3 grid((unsigned)((d.Np / 64 + 3) / 4), (unsigned)((max_rows + 16 * pl.fast - 1) / (16 * pl.fast)),
                  (unsigned)(d.E * splits));
        if (grid.y == 0) return cudaSuccess;
        if (splits > 1) {
            e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st);
            if (e != cudaSuccess) return e;
        }
        const bool bf = d.out_bf16, onc = d.scale_perm == 32;
        const size_t smem = fast_smem(d, pl.fast, pl.splits);
#define HCK_FAST(BF, ONC, MT)                                                                      \
    do {                                                                                           \
        if (smem > fastw4::SMEM_MAX) return cudaErrorInvalidValue;                                 \
        fastw4::w4a16_kernel<BF, ONC, MT><<<grid, fastw4::WARPS * 32, smem, st>>>(L->dev, dx, doff, \
                                                                                 dy, splits, ws);  \
    } while (0)
        if (pl.fast == 1) {
            if (bf) { if (onc) HCK_FAST(true, true, 1); else HCK_FAST(true, false, 1); }
            else { if (onc) HCK_FAST(false, true, 1); else HCK_FAST(false, false, 1); }
        } else if (pl.fast == 8) {
#define HCK_FAST2(BF, ONC)                                                                         \
    do {                                                                                           \
        if (smem > fastw4::SMEM_MAX) return cudaErrorInvalidValue;                                 \
        fastw4::w4a16_kernel<BF, ONC, 4, 2><<<grid, fastw4::WARPS * 64, smem, st>>>(L->dev, dx, doff, \
                                                                                   dy, splits, ws); \
    } while (0)
            if (bf) { if (onc) HCK_FAST2(true, true); else HCK_FAST2(true, false); }
            else { if (onc) HCK_FAST2(false, true); else HCK_FAST2(false, false); }
#undef HCK_FAST2
        } else {
            if (bf) { if (onc) HCK_FAST(true, true, 4); else HCK_FAST(true, false, 4); }
            else { if (onc) HCK_FAST(false, true, 4); else HCK_FAST(false, false, 4); }
        }
#undef HCK_FAST
        e = cudaGetLastError();
        if (e != cudaSuccess || splits == 1) return e;
        finish_kernel<<<1024, 256, 0, st>>>(L->dev, ws, doff, rows, dy);
        return cudaGetLastError();
    }
    if (rows > 0) act_kernel<<<(unsigned)rows, 256, 0, st>>>(d.act_quant, d.out_bf16, dx, d.K, dcodes, dscales);
    e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    int splits = pl.splits;
    dim3 grid((unsigned)(d.Np / BN), (unsigned)((max_rows + BM - 1) / BM), (unsigned)(d.E * splits));
    if (grid.y == 0) return cudaSuccess;
    const float *ts = d.act_quant != HCK_A_NONE ? dscales : nullptr;
    if (splits > 1) {
        e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st);
        if (e != cudaSuccess) return e;
    }
    if (simt)
        gemm_kernel<true><<<grid, THREADS, smem_bytes(d), st>>>(L->dev, dcodes, ts, doff, dy, splits, ws);
    else
        gemm_kernel<false><<<grid, THREADS, smem_bytes(d), st>>>(L->dev, dcodes, ts, doff, dy, splits, ws);
    e = cudaGetLastError();
    if (e != cudaSuccess || splits == 1) return e;
    finish_kernel<<<1024, 256, 0, st>>>(L->dev, ws, doff, rows, dy);
    return cudaGetLastError();
}
}  // namespace

extern "C" int hck_gemm_host(hck_layer *L, const uint16_t *x, int64_t rows,
                             const int64_t *offsets, uint16_t *y, int simt, char *msg,
                             size_t msglen)
{
    const hck_desc &d = L->dev.d;
    std::vector<int64_t> off(d.E + 1, rows);
    off[0] = 0;
    if (offsets) off.assign(offsets, offsets + d.E + 1);
    int64_t max_rows = 0;
    for (int e = 0; e < d.E; e++) max_rows = std::max(max_rows, off[e + 1] - off[e]);
    uint16_t *dx = nullptr, *dy = nullptr;
    float *dc = nullptr, *ds = nullptr, *ws = nullptr;
    int64_t *doff = nullptr;
    int rc = -1;
    size_t xb = (size_t)rows * d.K * 2, yb = (size_t)rows * d.N * 2;
    CK(cudaMalloc((void **)&dx, xb + 2));
    CK(cudaMalloc((void **)&dy, yb + 2));
    CK(cudaMalloc((void **)&dc, codes_bytes(d, rows)));
    CK(cudaMalloc((void **)&ds, (size_t)rows * 4 + 4));
    CK(cudaMalloc((void **)&doff, off.size() * 8));
    {
        const size_t wb = ws_bytes(make_plan(d, max_rows, simt, 1), rows, d.N);
        CK(ws_alloc(&ws, wb));
    }
    CK(cudaMemcpy(dx, x, xb, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(doff, off.data(), off.size() * 8, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xff, yb)); /* poison: all-ones is NaN in fp16 and bf16 */
    CK(launch(L, dx, rows, doff, max_rows, dc, ds, dy, simt, ws, 0));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(y, dy, yb, cudaMemcpyDeviceToHost));
    rc = 0;
fail:
    cudaFree(ws);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(doff);
    return rc;
}

extern "C" int hck_quantize_host(int act_quant, int in_bf16, const uint16_t *x, int64_t rows,
                                 int64_t K, float *codes, float *scales, char *msg,
                                 size_t msglen)
{
    uint16_t *dx = nullptr;
    float *dc = nullptr, *ds = nullptr;
    int rc = -1;
    CK(cudaMalloc((void **)&dx, (size_t)rows * K * 2 + 2));
    CK(cudaMalloc((void **)&dc, (size_t)rows * K * 4 + 4));
    CK(cudaMalloc((void **)&ds, (size_t)rows * 4 + 4));
    CK(cudaMemcpy(dx, x, (size_t)rows * K * 2, cudaMemcpyHostToDevice));
    act_kernel<<<(unsigned)rows, 256>>>(act_quant, in_bf16, dx, K, dc, ds);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(codes, dc, (size_t)rows * K * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(scales, ds, (size_t)rows * 4, cudaMemcpyDeviceToHost));
    rc = 0;
fail:
    cudaFree(dx);
    cudaFree(dc);
    cudaFree(ds);
    return rc;
}

extern "C" int hck_gemm_time(hck_layer *L, int64_t rows, int iters, int simt, float *median_ms,
                             float *first_ms, char *msg, size_t msglen)
{
    const hck_desc &d = L->dev.d;
    uint16_t *dx = nullptr, *dy = nullptr;
    float *dc = nullptr, *ds = nullptr, *ws = nullptr;
    int64_t *doff = nullptr;
    int64_t off[2] = {0, rows};
    /* HCK_TIME_FLUSH=1: zero a 256 MB buffer before each timed launch, outside
     * its events, as triton's do_bench does (bench_ref.py times Humming so), so
     * that no weights stay in L2 between launches and dirty lines are written
     * back during the launch. HCK_TIME_FLUSH=2: read the buffer instead, which
     * leaves L2 as full but clean (as after a previous layer's weights). */
    const char *flush_env = getenv("HCK_TIME_FLUSH");
    const size_t flush_bytes = flush_env ? (size_t)256 << 20 : 0;
    const bool flush_read = flush_env && atoi(flush_env) == 2;
    void *flush = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    cudaStream_t st = nullptr;
    cudaGraph_t gr = nullptr;
    cudaGraphExec_t gx = nullptr;
    std::vector<float> t;
    int rc = -1;
    if (d.E != 1) {
        if (msg) snprintf(msg, msglen, "timing is for dense layers");
        return -1;
    }
    CK(cudaMalloc((void **)&dx, (size_t)rows * d.K * 2));
    CK(cudaMalloc((void **)&dy, (size_t)rows * d.N * 2));
    CK(cudaMalloc((void **)&dc, codes_bytes(d, rows)));
    CK(cudaMalloc((void **)&ds, (size_t)rows * 4 + 4));
    CK(cudaMalloc((void **)&doff, 16));
    CK(cudaMemcpy(doff, off, 16, cudaMemcpyHostToDevice));
    if (flush_bytes) CK(cudaMalloc(&flush, flush_bytes));
    if (flush_bytes) CK(cudaMemset(flush, 0, flush_bytes));
    {
        const size_t wb = ws_bytes(make_plan(d, rows, simt, 1), rows, d.N);
        CK(ws_alloc(&ws, wb));
    }
    random_kernel<<<1024, 256>>>(dx, rows * d.K, d.out_bf16, 12345u);
    CK(cudaGetLastError());
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    {
        /* first call alone (synchronized), then the timed launches back to back
         * with an event pair around each (as triton's do_bench): the host
         * enqueues ahead, so its launch latency stays out of the numbers. */
        CK(cudaEventRecord(e0));
        CK(launch(L, dx, rows, doff, rows, dc, ds, dy, simt, ws, 0));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(first_ms, e0, e1));
        for (int i = 0; i < 3; i++) CK(launch(L, dx, rows, doff, rows, dc, ds, dy, simt, ws, 0));
        /* st below does not wait for the legacy stream: without this, a warm-up
         * launch could still run beside the first replays on the same
         * workspace, where two instances of a polled split sum (HCK_WS_EMPTY)
         * take each other's partials and one polls until it traps */
        CK(cudaDeviceSynchronize());
        /* default: the launch sequence captured once as a CUDA graph and its
         * replays timed (no host launch gaps, as the Humming reference is
         * timed in bench/bench_ref.py); HCK_TIME_STREAM=1: plain launches. */
        const bool graph = getenv("HCK_TIME_STREAM") == nullptr;
        CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        if (graph) {
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            cudaError_t le = launch(L, dx, rows, doff, rows, dc, ds, dy, simt, ws, st);
            cudaError_t ce = cudaStreamEndCapture(st, &gr);
            CK(le);
            CK(ce);
            CK(cudaGraphInstantiate(&gx, gr, 0));
            for (int i = 0; i < 3; i++) CK(cudaGraphLaunch(gx, st));
        }
        std::vector<cudaEvent_t> ev(2 * (size_t)iters, nullptr);
        for (auto &v : ev) CK(cudaEventCreate(&v));
        for (int i = 0; i < iters; i++) {
            if (flush && flush_read) read_flush_kernel<<<1024, 256, 0, st>>>((const uint4 *)flush, flush_bytes / 16);
            else if (flush) CK(cudaMemsetAsync(flush, 0, flush_bytes, st));
            CK(cudaEventRecord(ev[2 * i], st));
            if (graph) CK(cudaGraphLaunch(gx, st));
            else CK(launch(L, dx, rows, doff, rows, dc, ds, dy, simt, ws, st));
            CK(cudaEventRecord(ev[2 * i + 1], st));
        }
        CK(cudaEventSynchronize(ev[2 * iters - 1]));
        for (int i = 0; i < iters; i++) {
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
            t.push_back(ms);
        }
        for (auto &v : ev) cudaEventDestroy(v);
    }
    std::sort(t.begin(), t.end());
    *median_ms = t.empty() ? 0.0f : t[t.size() / 2];
#ifdef HCK_TIMELINE
    hopper::timeline_report(); /* the last timed launch (kernels/hc_timeline.cuh) */
#endif
    rc = 0;
fail:
    if (gx) cudaGraphExecDestroy(gx);
    if (gr) cudaGraphDestroy(gr);
    if (st) cudaStreamDestroy(st);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(flush);
    cudaFree(ws);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(doff);
    return rc;
}
