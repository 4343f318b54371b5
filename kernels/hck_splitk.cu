/* hck_splitk.cu - the last step of a split-K launch, shared by the mma.sync
 * and wgmma families: the float32 workspace the splits added into, plus the
 * bias, rounded to the 16-bit output. */
#include "hck_internal.cuh"

namespace hck {
namespace {

__global__ void finish_kernel(hck_desc d, hck_ptrs p, const float *__restrict__ ws,
                              const int64_t *__restrict__ offsets, int64_t rows, uint16_t *__restrict__ y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * d.N;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t m = i / d.N, n = i % d.N;
        int e = 0;
        while (e + 1 < d.E && m >= offsets[e + 1]) e++;
        y[i] = f2h(ws[i] + hck_bias(&d, &p, e, n), d.out_bf16);
    }
}

}  // namespace

cudaError_t launch_splitk_finish(const hck_layer *L, const float *ws, const int64_t *offsets,
                                 int64_t rows, uint16_t *y, cudaStream_t st)
{
    const int64_t blocks = (rows * L->d.N + 255) / 256;
    if (blocks == 0) return cudaSuccess;
    finish_kernel<<<(unsigned)(blocks < 1024 ? blocks : 1024), 256, 0, st>>>(L->d, L->p, ws, offsets,
                                                                             rows, y);
    return cudaGetLastError();
}

}  // namespace hck
