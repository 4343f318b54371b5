/* hck_gemm.cu - the GEMM family: y = x . dequant(W)^T (+ bias) straight from
 * the bytes of humming-kernels 0.1.19's tiled, packed-K and flat layouts.
 *
 * A block of HCK_THREADS threads owns MT tokens of one expert x one 64-column
 * tile of N. Per 64 k it decodes the weights with hck_decode (hc_kernels.h:
 * the element mapping of the layout, zero point, scale, global scale, each
 * value rounded once to float32 as the CPU decoder does) into shared memory,
 * stages the tokens' activation codes, and accumulates in float32 FMA. The
 * token scale and bias are applied on the output. This is the verification
 * GEMM: correct for every layout and format, not tuned for speed. */
#include <cstdint>

#include "hck_internal.cuh"

namespace hck {
namespace {

template <int MT>
__global__ void __launch_bounds__(HCK_THREADS)
gemm_kernel(hck_desc d, hck_ptrs p, const float *__restrict__ codes, const float *__restrict__ scales,
            const int64_t *__restrict__ offsets, uint16_t *__restrict__ y)
{
    constexpr int TPT = MT / 2; /* tokens per thread: two groups of 64 threads */
    __shared__ float ws[HCK_BLOCK_K * HCK_BLOCK_N];
    __shared__ float xs[MT][HCK_BLOCK_K + 1];
    const int t = threadIdx.x, col = t % 64, half = t / 64;
    const int64_t e = blockIdx.z, r0 = offsets[e] + (int64_t)blockIdx.y * MT, rend = offsets[e + 1];
    if (r0 >= rend) return;
    const int64_t n0 = (int64_t)blockIdx.x * HCK_BLOCK_N;
    float acc[TPT];
#pragma unroll
    for (int i = 0; i < TPT; i++) acc[i] = 0.0f;
    for (int64_t k0 = 0; k0 < d.Kp; k0 += HCK_BLOCK_K) {
        float val[HCK_LANE_VALUES];
        int at[HCK_LANE_VALUES];
        hck_decode(&d, &p, e, n0, k0, t, val, at);
        __syncthreads(); /* the previous stage is read */
#pragma unroll
        for (int i = 0; i < HCK_LANE_VALUES; i++) ws[at[i]] = val[i];
        for (int i = t; i < MT * HCK_BLOCK_K; i += HCK_THREADS) {
            const int64_t r = r0 + i / HCK_BLOCK_K, k = k0 + i % HCK_BLOCK_K;
            xs[i / HCK_BLOCK_K][i % HCK_BLOCK_K] = r < rend && k < d.K ? codes[r * d.K + k] : 0.0f;
        }
        __syncthreads();
#pragma unroll 8
        for (int kk = 0; kk < HCK_BLOCK_K; kk++) {
            const float w = ws[kk * HCK_BLOCK_N + col];
#pragma unroll
            for (int i = 0; i < TPT; i++) acc[i] = fmaf(xs[half * TPT + i][kk], w, acc[i]);
        }
    }
    const int64_t n = n0 + col;
    if (n >= d.N) return;
    const float b = hck_bias(&d, &p, e, n);
#pragma unroll
    for (int i = 0; i < TPT; i++) {
        const int64_t r = r0 + half * TPT + i;
        if (r < rend) y[r * d.N + n] = f2h(acc[i] * (scales ? scales[r] : 1.0f) + b, d.out_bf16);
    }
}

/* The instantiations: tokens per block. */
#define HCK_GEMM_INSTANCES(X) X(16) X(64)

/* Tile-size choices per arch: the smallest instance whose token count covers
 * the largest expert's rows, else the last one. */
struct Tune {
    int64_t rows_max; /* up to this many rows per expert */
    int mt;           /* tokens per block */
};
constexpr Tune TUNE_SM80[] = {{16, 16}, {INT64_MAX, 64}};
constexpr Tune TUNE_SM89[] = {{16, 16}, {INT64_MAX, 64}};
constexpr Tune TUNE_SM90[] = {{16, 16}, {INT64_MAX, 64}};

/* one instance per row's token count */
#define HCK_GEMM_KEY_(M) TileKey{M, 0, 0},
constexpr TileKey KEYS[] = {HCK_GEMM_INSTANCES(HCK_GEMM_KEY_)};
#undef HCK_GEMM_KEY_
constexpr bool row_ok(const Tune &t) { return instances_of(KEYS, t.mt, 0) == 1; }
static_assert(all_rows(TUNE_SM80, row_ok) && all_rows(TUNE_SM89, row_ok) && all_rows(TUNE_SM90, row_ok),
              "a tuning row without its instance");

int tokens_per_block(int sm, int64_t rows)
{
    if (sm >= 90) return tune_pick(TUNE_SM90, rows).mt;
    if (sm >= 89) return tune_pick(TUNE_SM89, rows).mt;
    return tune_pick(TUNE_SM80, rows).mt;
}

}  // namespace

cudaError_t launch_gemm(const hck_layer *L, const float *codes, const float *scales,
                        const int64_t *offsets, int64_t max_rows, uint16_t *y, cudaStream_t st)
{
    if (max_rows == 0) return cudaSuccess;
    const int mt = tokens_per_block(L->sm, max_rows);
    const dim3 grid((unsigned)(L->d.Np / HCK_BLOCK_N), (unsigned)((max_rows + mt - 1) / mt), (unsigned)L->d.E);
    switch (mt) {
#define HCK_GEMM_CASE_(M)                                                                          \
    case M: gemm_kernel<M><<<grid, HCK_THREADS, 0, st>>>(L->d, L->p, codes, scales, offsets, y); break;
        HCK_GEMM_INSTANCES(HCK_GEMM_CASE_)
#undef HCK_GEMM_CASE_
    default: return cudaErrorInvalidConfiguration;
    }
    return cudaGetLastError();
}

}  // namespace hck
