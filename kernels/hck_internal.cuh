/* hck_internal.cuh - what the kernel files of libhc_kernels.so share: the
 * layer on the device, 16-bit conversions and the launchers of each kernel
 * family (hck_gemm.cu, hck_w4a16.cu, hck_small16.cu, hck_a8.cu, hck_wg8.cu,
 * hck_wg8pk.cu, hck_wg16.cu, hck_act.cu, hck_splitk.cu), called by the C API
 * (hck_api.cu). */
#ifndef HCK_INTERNAL_CUH
#define HCK_INTERNAL_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "hc_kernels.h"

struct hck_layer {
    hck_desc d;  /* host pointers of d are not used after creation */
    hck_ptrs p;  /* device copies of the tensors */
    int sm;      /* compute capability the launches are tuned for */
    int sms;     /* multiprocessors */
    void *tmap_encode; /* the driver's cuTensorMapEncodeTiled (sm90), or null */
};

namespace hck {

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

/* d (16 x 8, float32) += a (16 x k16) . (b0, b1) (k16 x 8) on fp16 / bf16:
 * the mma.sync of the uint4 x 16-bit families (hck_w4a16.cu, hck_small16.cu) */
template <bool BF>
__device__ __forceinline__ void mma16816(float *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    if (BF)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* uint4 x 16-bit decoding, shared by the mma.sync (hck_w4a16.cu) and wgmma
 * (hck_wg16.cu) families: a b + c on fp16 / bf16 pairs */
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

/* raw 16-bit scale (fp16 or bf16) -> the compute type, as the low half */
template <bool BF>
__device__ __forceinline__ uint32_t conv16(uint32_t raw, int sbf)
{
    if (sbf == (int)BF) return raw & 0xffffu;
    return f2h(h2f((uint16_t)raw, sbf), BF);
}

/* Per-token quantization of x (rows, K) 16-bit: codes (rows, K) as floats
 * and scales (rows); HCK_A_NONE: the values, scales untouched. */
cudaError_t launch_act(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                       float *codes, float *scales, cudaStream_t st);

/* The same for fp8 activations (HCK_A_E4M3 / E5M2): the codes as fp16,
 * rows padded with zeros to Kp, for the mma.sync families. */
cudaError_t launch_act16(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K, int64_t Kp,
                         uint16_t *codes, float *scales, cudaStream_t st);

/* The same as e4m3 / e5m2 bytes laid out (Kp/16, rows, 16) for the fp8
 * wgmma family. */
cudaError_t launch_act8(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K,
                        int64_t Kp, uint8_t *codes, float *scales, cudaStream_t st);

/* Raises kernel's dynamic shared-memory limit to bytes unless e already
 * holds an error, which it then keeps: each family's one-time setup runs it
 * for every instance of its table. */
template <class Kernel>
void smem_limit(cudaError_t &e, Kernel *kernel, size_t bytes)
{
    if (e == cudaSuccess) e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

/* The row of a tuning table (rows_max ascending) that takes `rows` tokens;
 * the last row past them all. */
template <class T, size_t N>
const T &tune_pick(const T (&tab)[N], int64_t rows)
{
    for (size_t i = 0; i < N; i++)
        if (rows <= tab[i].rows_max) return tab[i];
    return tab[N - 1];
}

/* The tile sizes of an instance (a family's own choice of up to three of its
 * template arguments), listed from its X-macro table, and how many of a
 * family's instances have sizes (a, b, c). */
struct TileKey {
    int a, b, c;
};
template <size_t N>
constexpr int instances_of(const TileKey (&keys)[N], int a, int b, int c = 0)
{
    int n = 0;
    for (size_t i = 0; i < N; i++) n += keys[i].a == a && keys[i].b == b && keys[i].c == c;
    return n;
}

/* Whether ok(row) holds for every row of a tuning table. Each family asserts
 * with it that every row's tile sizes have their instances: a row without
 * one would launch nothing. */
template <class T, size_t N>
constexpr bool all_rows(const T (&tab)[N], bool (*ok)(const T &))
{
    for (size_t i = 0; i < N; i++)
        if (!ok(tab[i])) return false;
    return true;
}

/* The split-K wave model of every fast family: K is `steps`
 * units, a block costs (its steps + fixed) units, blocks run in waves of
 * `slots` (SMs x resident blocks), a split adds `reduce`; returns the split s
 * in [1, min(steps / min_steps, 32)] of least cost, ties within 3% to fewer,
 * skipping the s for which fits(s) is false (0: none fits). */
template <class Fits>
int split_waves(int64_t steps, int64_t min_steps, double fixed, double reduce, int64_t blocks,
                int64_t slots, Fits fits)
{
    int64_t cap = steps / min_steps < 32 ? steps / min_steps : 32, bs = 0;
    if (cap < 1) cap = 1;
    double best = -1;
    for (int64_t s = 1; s <= cap; s++) {
        if (!fits(s)) continue;
        const int64_t waves = (blocks * s + slots - 1) / slots;
        const double c = (double)waves * ((double)steps / s + fixed) + (s > 1 ? reduce : 0.0);
        if (best < 0 || c < best * 0.97) best = c, bs = s;
    }
    return (int)bs;
}

inline int split_waves(int64_t steps, int64_t min_steps, double fixed, double reduce, int64_t blocks,
                       int64_t slots)
{
    return split_waves(steps, min_steps, fixed, reduce, blocks, slots, [](int64_t) { return true; });
}

/* The wgmma families' split: rounds of 128 k, a block costs its rounds + 2,
 * a split 1 more, at least 2 rounds per split. */
inline int split_wgmma(int64_t Kp, int64_t blocks, int64_t slots)
{
    return split_waves(Kp / 128, 2, 2.0, 1.0, blocks, slots);
}

/* Stream-K for a wgmma family that has it (one expert): `slots` resident
 * blocks take equal ranges of all tiles' rounds (of 128 k), so the last wave
 * is not part-empty. A block costs its rounds + 2, a tile split between two
 * blocks 1 more (its partial sums through the workspace). Taken only past one
 * full wave of tiles (each block's range at least a tile: a tile has at most
 * two parts) and where it is cheaper than the split K of `splits`. Returns
 * the blocks, 0 for split K. */
inline int stream_k_wgmma(int64_t Kp, int64_t tiles, int64_t slots, int splits)
{
    const int64_t R = Kp / 128;
    if (tiles <= slots || R < 2 || tiles * R >= ((int64_t)1 << 31)) return 0; /* int units */
    const double sk = (double)((tiles * R + slots - 1) / slots) + 3.0;
    const int64_t waves = (tiles * splits + slots - 1) / slots;
    const double sp = (double)waves * ((double)R / splits + 2.0) + (splits > 1 ? 1.0 : 0.0);
    return sk < sp * 0.97 ? (int)slots : 0;
}

/* The stream-K workspace (floats): a flag per block and consumer warpgroup
 * (up to 4), zeroed before each launch, then each block's partial sums. */
__host__ __device__ inline int64_t stream_k_flags(int64_t blocks) { return (blocks * 4 + 63) / 64 * 64; }

/* y (rows, N) 16-bit = the split-K workspace ws (rows, N) float32 + bias, the
 * rows of each expert by offsets[E+1] (hck_splitk.cu). */
cudaError_t launch_splitk_finish(const hck_layer *L, const float *ws, const int64_t *offsets,
                                 int64_t rows, uint16_t *y, cudaStream_t st);

/* The fp8 wgmma families' launch (hck_wg8.cu, hck_wg8pk.cu) around their
 * kernel: the activation codes (xa, tscale), then over nx x ny (max_rows /
 * ntok) x E tiles with `slots` resident blocks either stream-K (a family
 * with stream_k, one expert, where stream_k_wgmma takes it: its flags
 * zeroed, kernel(dim3(sk), 1, sk, ny)) or the split by the wave model (its
 * workspace zeroed, kernel(grid, splits, 0, ny), then the split-K finish). */
template <class Kernel>
cudaError_t launch_fp8_wgmma(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                             int64_t max_rows, int64_t nx, int ntok, int64_t slots, bool stream_k, uint16_t *y,
                             uint8_t *xa, float *tscale, float *ws, cudaStream_t st, Kernel kernel)
{
    const hck_desc &d = L->d;
    if (max_rows == 0) return cudaSuccess;
    cudaError_t e = launch_act8(d.act_quant, d.out_bf16, x, rows, d.K, d.Kp, xa, tscale, st);
    if (e != cudaSuccess) return e;
    const int64_t ny = (max_rows + ntok - 1) / ntok;
    const int splits = split_wgmma(d.Kp, nx * ny * d.E, slots);
    const int sk = stream_k && d.E == 1 ? stream_k_wgmma(d.Kp, nx * ny, slots, splits) : 0;
    if (sk > 0) {
        if ((e = cudaMemsetAsync(ws, 0, (size_t)stream_k_flags(sk) * sizeof(float), st)) != cudaSuccess) return e;
        kernel(dim3((unsigned)sk), 1, sk, (int)ny);
        return cudaGetLastError();
    }
    const dim3 grid((unsigned)nx, (unsigned)ny, (unsigned)(d.E * splits));
    if (splits > 1 && (e = cudaMemsetAsync(ws, 0, (size_t)rows * d.N * sizeof(float), st)) != cudaSuccess)
        return e;
    kernel(grid, splits, 0, (int)ny);
    if ((e = cudaGetLastError()) != cudaSuccess || splits == 1) return e;
    return launch_splitk_finish(L, ws, offsets, rows, y, st);
}

/* Their split-K workspace for `rows` tokens (bytes). */
inline size_t fp8_wgmma_ws_bytes(const hck_layer *L, int64_t rows)
{
    return (size_t)rows * L->d.N * sizeof(float) + 4;
}

/* y (rows, N) 16-bit = codes . dequant(W_e)^T x token scale (+ bias) for the
 * rows of each expert (offsets[E+1] on the device, max_rows the largest
 * expert's rows); scales NULL: 1. */
cudaError_t launch_gemm(const hck_layer *L, const float *codes, const float *scales,
                        const int64_t *offsets, int64_t max_rows, uint16_t *y, cudaStream_t st);

/* The mma.sync uint4 x 16-bit family (hck_w4a16.cu): whether it takes the
 * layer, its one-time setup (shared memory limits), the workspace its split
 * K needs for `rows` tokens, and the launch on 16-bit x (rows, K). */
bool w4a16_takes(const hck_desc &d);
/* w4a16_takes on an sm90 device, with what the sm90 families of the same
 * layers (hck_small16.cu, hck_wg16.cu) also need: Kp a multiple of
 * kp_multiple (their k step), K % 8 == 0 (16-byte activation copies), and
 * channel scales or groups of a multiple of 64. */
bool w4a16_sm90_takes(const hck_desc &d, int sm, int64_t kp_multiple);
cudaError_t w4a16_init();
size_t w4a16_ws_bytes(const hck_layer *L, int64_t rows);
cudaError_t launch_w4a16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                         int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st);

/* The Hopper 16-bit wgmma family (hck_wg16.cu, sm_90a): the layers of the
 * uint4 x 16-bit family on an sm90 device with the driver's tensor-map
 * encoder, where its tuning table takes max_rows tokens. Whether it takes
 * the launch, its setup, and the launch on 16-bit x (rows, K), 16-byte
 * aligned (ws: w4a16_ws_bytes). */
bool wg16_takes(const hck_layer &L, int64_t max_rows);
cudaError_t wg16_init();
cudaError_t launch_wg16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                        int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st);

/* The small-M family (hck_small16.cu, sm90): the layers of the uint4 x
 * 16-bit family with group sizes a multiple of 64 (or channel scales) and
 * K % 8 == 0, on an sm90 device where its tuning table takes max_rows tokens
 * (up to 16). Whether it takes the launch, its setup, its split-K workspace
 * (zeroed before the first launch, left zeroed by each), and the launch on
 * 16-bit x (rows, K). */
bool small16_takes(const hck_desc &d, int sm, int64_t max_rows);
cudaError_t small16_init();
size_t small16_ws_bytes(const hck_layer *L, int64_t rows);
cudaError_t launch_small16(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                           int64_t max_rows, uint16_t *y, float *ws, cudaStream_t st);

/* The small-M family's e4m3 form (hck_small16.cu, sm90): the packed-K W4A8
 * layers of the fp8 wgmma family with perm64 group scales, where the tuning
 * table takes max_rows tokens (up to 16). Whether it takes the launch, and
 * the launch on 16-bit x (rows, K), activation quantization included (xa:
 * rows x Kp code bytes, tscale: rows token scales; ws: small16_ws_bytes,
 * zeroed before the first launch and left zeroed). */
bool small8_takes(const hck_desc &d, int sm, int64_t max_rows);
cudaError_t launch_small8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                          int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st);

/* The mma.sync fp8-activation family (hck_a8.cu): packed-K uint4 and flat
 * fp8 weights. Whether it takes the layer, its setup, its split-K workspace,
 * and the launch on 16-bit x (rows, K), activation quantization included
 * (xq: rows x Kp fp16 codes, tscale: rows token scales). */
bool a8_takes(const hck_desc &d);
cudaError_t a8_init();
size_t a8_ws_bytes(const hck_layer *L, int64_t rows);
cudaError_t launch_a8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                      int64_t max_rows, uint16_t *y, uint16_t *xq, float *tscale, float *ws, cudaStream_t st);

/* The fp8 wgmma family (hck_wg8.cu, sm_90a): flat e4m3 weights with e4m3
 * activations (W8A8 fp8). Whether it takes the layer on a device of
 * compute capability sm, its setup, and the launch on 16-bit x (rows, K),
 * activation quantization included (xa: rows x Kp code bytes, tscale: rows
 * token scales; ws: fp8_wgmma_ws_bytes). */
bool wg8_takes(const hck_desc &d, int sm);
cudaError_t wg8_init();
cudaError_t launch_wg8(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                       int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st);

/* The warp-specialized fp8 wgmma family (hck_wg8pk.cu, sm_90a): packed-K
 * uint4 weights with group scales and e4m3 activations (W4A8). The same
 * entries as the fp8 wgmma family's, and the workspace its split K or
 * stream-K needs for `rows` tokens (bytes). */
bool wg8pk_takes(const hck_desc &d, int sm);
cudaError_t wg8pk_init();
size_t wg8pk_ws_bytes(const hck_layer *L, int64_t rows);
cudaError_t launch_wg8pk(const hck_layer *L, const uint16_t *x, const int64_t *offsets, int64_t rows,
                         int64_t max_rows, uint16_t *y, uint8_t *xa, float *tscale, float *ws, cudaStream_t st);

}  // namespace hck

#endif
