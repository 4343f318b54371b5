/* hck_act.cu - per-token activation quantization (fp8 e4m3 / e5m2, int8,
 * int4), exactly as hc_verify_quantize_act: the same scale formulas with
 * reciprocal multiplication, RNE, saturation (docs/verification.md). */
#include <cuda_fp8.h>

#include "hck_internal.cuh"

namespace hck {
namespace {

constexpr int ACT_THREADS = 256;

/* The token's scale from each thread's max mx and min mn: a block-wide
 * reduction (red: 64 floats of shared memory); every thread gets it. */
__device__ float token_scale(int act_quant, float mx, float mn, float *red)
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
        const float top = act_quant == HCK_A_E4M3   ? 448.0f
                          : act_quant == HCK_A_E5M2 ? 57344.0f
                          : act_quant == HCK_A_INT8 ? 127.0f
                                                    : 7.0f;
        red[0] = fmaxf(__fdiv_rn(amax, top), 1e-30f);
    }
    __syncthreads();
    return red[0];
}

/* The scale of the token row xr (K values): each thread's max and min, then
 * token_scale; thread 0 stores it to *scale. Every thread returns it. */
__device__ float row_scale(int act_quant, int in_bf16, const uint16_t *__restrict__ xr, int64_t K,
                           float *scale)
{
    __shared__ float red[64];
    float mx = 0.0f, mn = 0.0f;
    if (K % 8 == 0 && (uintptr_t)xr % 16 == 0) { /* 16-byte loads: max and min do not depend on order */
        const uint4 *xv = (const uint4 *)xr;
#pragma unroll 4
        for (int64_t u = threadIdx.x; u < K / 8; u += blockDim.x) {
            const uint4 v = xv[u];
            const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const float f = h2f((uint16_t)(w[i / 2] >> (16 * (i % 2))), in_bf16);
                mx = fmaxf(mx, f), mn = fminf(mn, f);
            }
        }
    } else {
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
            const float v = h2f(xr[k], in_bf16);
            mx = fmaxf(mx, v), mn = fminf(mn, v);
        }
    }
    const float s = token_scale(act_quant, mx, mn, red);
    if (threadIdx.x == 0) *scale = s;
    return s;
}

/* The e4m3 / e5m2 code byte of t (RNE, saturating). */
__device__ __forceinline__ uint32_t fp8_byte(int act_quant, float t)
{
    return act_quant == HCK_A_E5M2 ? __nv_fp8_e5m2(t).__x : __nv_fp8_e4m3(t).__x;
}

/* One block per token. */
__global__ void __launch_bounds__(ACT_THREADS)
act_kernel(int act_quant, int in_bf16, const uint16_t *__restrict__ x, int64_t K,
           float *__restrict__ codes, float *__restrict__ scales)
{
    const int64_t row = blockIdx.x;
    const uint16_t *xr = x + row * K;
    float *cr = codes + row * K;
    if (act_quant == HCK_A_NONE) {
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) cr[k] = h2f(xr[k], in_bf16);
        return;
    }
    const float inv = __frcp_rn(row_scale(act_quant, in_bf16, xr, K, scales + row));
    const float lo = act_quant == HCK_A_INT8 ? -128.0f : -8.0f;
    const float hi = act_quant == HCK_A_INT8 ? 127.0f : 7.0f;
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
        const float t = __fmul_rn(h2f(xr[k], in_bf16), inv);
        float q;
        if (act_quant == HCK_A_E4M3) q = float(__nv_fp8_e4m3(t));
        else if (act_quant == HCK_A_E5M2) q = float(__nv_fp8_e5m2(t));
        else q = fminf(fmaxf(rintf(t), lo), hi);
        cr[k] = q;
    }
}

/* One block per token: fp8 codes as fp16 (exact), the row padded with zeros
 * to Kp, for the mma.sync families. */
__global__ void __launch_bounds__(ACT_THREADS)
act16_kernel(int act_quant, int in_bf16, const uint16_t *__restrict__ x, int64_t K, int64_t Kp,
             uint16_t *__restrict__ codes, float *__restrict__ scales)
{
    const int64_t row = blockIdx.x;
    const uint16_t *xr = x + row * K;
    uint16_t *cr = codes + row * Kp;
    const float inv = __frcp_rn(row_scale(act_quant, in_bf16, xr, K, scales + row));
    for (int64_t k = threadIdx.x; k < Kp; k += blockDim.x) {
        float q = 0.0f;
        if (k < K) {
            const float t = __fmul_rn(h2f(xr[k], in_bf16), inv);
            q = act_quant == HCK_A_E5M2 ? float(__nv_fp8_e5m2(t)) : float(__nv_fp8_e4m3(t));
        }
        cr[k] = __half_as_ushort(__float2half_rn(q));
    }
}

/* One block per token: e4m3 / e5m2 code bytes for the fp8 wgmma family,
 * stored as (Kp/16, rows, 16) (16 k of a token contiguous), zero past K. */
__global__ void __launch_bounds__(ACT_THREADS)
act8_kernel(int act_quant, int in_bf16, const uint16_t *__restrict__ x, int64_t rows, int64_t K,
            int64_t Kp, uint8_t *__restrict__ codes, float *__restrict__ scales)
{
    const int64_t row = blockIdx.x;
    const uint16_t *xr = x + row * K;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;"); /* a GEMM launched dependent may start its weight loads */
#endif
    const float inv = __frcp_rn(row_scale(act_quant, in_bf16, xr, K, scales + row));
    const bool vec = (uintptr_t)xr % 16 == 0;
    for (int64_t q = threadIdx.x; q < Kp / 16; q += blockDim.x) {
        uint32_t xw[8]; /* the unit's 16 values, 0 past K */
        if (vec && 16 * q + 16 <= K) {
            const uint4 a = ((const uint4 *)xr)[2 * q], b = ((const uint4 *)xr)[2 * q + 1];
            xw[0] = a.x, xw[1] = a.y, xw[2] = a.z, xw[3] = a.w, xw[4] = b.x, xw[5] = b.y, xw[6] = b.z, xw[7] = b.w;
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const int64_t k = 16 * q + 2 * i;
                xw[i] = (k < K ? xr[k] : 0u) | (k + 1 < K ? (uint32_t)xr[k + 1] << 16 : 0u);
            }
        }
        uint32_t wd[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < 16; i++) {
            uint32_t c = 0;
            if (16 * q + i < K) {
                const float t = __fmul_rn(h2f((uint16_t)(xw[i / 2] >> (16 * (i % 2))), in_bf16), inv);
                c = fp8_byte(act_quant, t);
            }
            wd[i / 4] |= c << (8 * (i % 4));
        }
        *(uint4 *)(codes + (q * rows + row) * 16) = make_uint4(wd[0], wd[1], wd[2], wd[3]);
    }
}

}  // namespace

cudaError_t launch_act8(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                        int64_t Kp, uint8_t *codes, float *scales, cudaStream_t st)
{
    if (rows == 0) return cudaSuccess;
    if (act_quant != HCK_A_E4M3 && act_quant != HCK_A_E5M2) return cudaErrorInvalidValue;
    act8_kernel<<<(unsigned)rows, ACT_THREADS, 0, st>>>(act_quant, in_bf16, x, rows, K, Kp, codes, scales);
    return cudaGetLastError();
}

cudaError_t launch_act16(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K, int64_t Kp,
                         uint16_t *codes, float *scales, cudaStream_t st)
{
    if (rows == 0) return cudaSuccess;
    if (act_quant != HCK_A_E4M3 && act_quant != HCK_A_E5M2) return cudaErrorInvalidValue;
    act16_kernel<<<(unsigned)rows, ACT_THREADS, 0, st>>>(act_quant, in_bf16, x, K, Kp, codes, scales);
    return cudaGetLastError();
}

cudaError_t launch_act(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                       float *codes, float *scales, cudaStream_t st)
{
    if (rows == 0) return cudaSuccess;
    act_kernel<<<(unsigned)rows, ACT_THREADS, 0, st>>>(act_quant, in_bf16, x, K, codes, scales);
    return cudaGetLastError();
}

}  // namespace hck
