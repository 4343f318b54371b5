/* hck_wgmma.cuh - what the Hopper wgmma families (hck_wg8.cu, hck_wg8pk.cu,
 * hck_wg16.cu) share: cp.async, mbarriers, bulk copies and TMA boxes, the K-major
 * shared-memory descriptors (unswizzled and 128-byte swizzled), the
 * accumulator operand lists of the inline wgmma instructions, the fence /
 * commit / wait steps and the fp8 families' epilogue. Device code for sm_90a
 * only (HCK_WGMMA); the kernels of other architectures are empty and never
 * launched. */
#ifndef HCK_WGMMA_CUH
#define HCK_WGMMA_CUH

#include <cstdint>

#include "hck_internal.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HCK_WGMMA 1
#endif

#ifdef HCK_WGMMA
namespace hck {
namespace wgmma {

/* 16 bytes global -> shared; bytes < 16 fills the rest with zeros */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes));
}

/* unswizzled K-major descriptor: 16-byte rows, 8-row core matrices 128 B
 * apart, the next core matrix along k lbo bytes on */
__device__ __forceinline__ uint64_t desc_k(uint32_t saddr, uint32_t lbo)
{
    return (uint64_t)((saddr & 0x3ffff) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(128 >> 4) << 32;
}

/* K-major descriptor with the 128-byte swizzle: rows of 128 bytes (64 k of
 * 16 bits), the 16-byte unit u of row r at u ^ (r % 8), 8-row groups 1024 B
 * apart from a 1024-aligned base; a k16 step starts 32 bytes on */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr)
{
    return (uint64_t)((saddr & 0x3ffff) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }

/* mbarriers in shared memory (warp-specialized rings): init with the
 * arrivals a phase takes; wait until the phase of parity `parity` has
 * completed; arrive */
__device__ __forceinline__ void mbar_init(uint32_t a, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t a, int parity)
{
    asm volatile("{\n.reg .pred P;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n"
                 "@!P bra WAIT;\n}\n" ::"r"(a),
                 "r"(parity)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t a)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(a) : "memory");
}
/* one arrival that also expects `bytes` more of bulk copies in this phase */
__device__ __forceinline__ void mbar_expect_tx(uint32_t a, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes) : "memory");
}
/* bytes (a multiple of 16, 16-byte aligned ends) global -> shared by the
 * bulk copy engine, completing them on the mbarrier at bar */
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* the box at coordinates (c0, c1) of the 2-D tensor map tm (a kernel
 * parameter) into shared memory by the TMA unit, completing on bar */
__device__ __forceinline__ void tma_box2(uint32_t dst, const void *tm, int c0, int c1, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"(tm), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

}  // namespace wgmma
}  // namespace hck

/* accumulator operand lists ("+f", d[0] ..) and their register strings */
#define HCK_D8(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define HCK_D32(d) HCK_D8(d), HCK_D8((d + 8)), HCK_D8((d + 16)), HCK_D8((d + 24))
#define HCK_D64(d) HCK_D32(d), HCK_D32((d + 32))
#define HCK_D128(d) HCK_D64(d), HCK_D64((d + 64))
/* the same lists write-only ("=f"), for a wgmma that does not add into d */
#define HCK_W8(d) "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]), "=f"(d[4]), "=f"(d[5]), "=f"(d[6]), "=f"(d[7])
#define HCK_W32(d) HCK_W8(d), HCK_W8((d + 8)), HCK_W8((d + 16)), HCK_W8((d + 24))
#define HCK_W64(d) HCK_W32(d), HCK_W32((d + 32))
#define HCK_R8(o) "%" #o "0, %" #o "1, %" #o "2, %" #o "3, %" #o "4, %" #o "5, %" #o "6, %" #o "7"
#define HCK_R10(o) HCK_R8(o) ", %" #o "8, %" #o "9"
#define HCK_D8_STR "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define HCK_D32_STR "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " HCK_R10(1) ", " HCK_R10(2) ", %30, %31}"
#define HCK_D64_STR                                                                                 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " HCK_R10(1) ", " HCK_R10(2) ", " HCK_R10(3) ", " \
    HCK_R10(4) ", " HCK_R10(5) ", %60, %61, %62, %63}"
#define HCK_D128_STR                                                                                \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " HCK_R10(1) ", " HCK_R10(2) ", " HCK_R10(3) ", " \
    HCK_R10(4) ", " HCK_R10(5) ", " HCK_R10(6) ", " HCK_R10(7) ", " HCK_R10(8) ", " HCK_R10(9) \
    ", " HCK_R10(10) ", " HCK_R10(11) ", %120, %121, %122, %123, %124, %125, %126, %127}"

namespace hck {
namespace wgmma {

/* The fp8 wgmma families' epilogue: the lane's rows n0 and n0 + 8 of a
 * 64 x NTOK tile (token 8 j + 2 tq + c of row n0 + 8 r at acc[4 j + 2 r + c])
 * times cs(n) and the token's scale, with the bias into y, or added into the
 * split-K workspace ws (splits > 1). */
template <int NTOK, class Scale>
__device__ __forceinline__ void store_rows(const hck_desc &d, const hck_ptrs &p, const float *acc, int e,
                                           int n0, int tq, int brows, int64_t bstart,
                                           const float *__restrict__ tscale, int splits, float *__restrict__ ws,
                                           uint16_t *__restrict__ y, Scale cs_of)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int64_t n = n0 + 8 * r;
        if (n >= d.N) continue;
        const float cs = cs_of(n);
        const float b = splits > 1 ? 0.0f : hck_bias(&d, &p, e, n);
#pragma unroll
        for (int j = 0; j < NTOK / 8; j++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int tl = 8 * j + 2 * tq + c;
                if (tl >= brows) continue;
                const int64_t m = bstart + tl;
                const float v = acc[4 * j + 2 * r + c] * cs * tscale[m];
                if (splits > 1) atomicAdd(ws + m * d.N + n, v);
                else y[m * d.N + n] = f2h(v + b, d.out_bf16);
            }
    }
}

/* keeps the compiler from reading or moving the N / 2 accumulators of a
 * 64 x N tile across the asynchronous window */
template <int N> __device__ __forceinline__ void fence_acc(float *d)
{
    if (N == 16) asm volatile("" : HCK_D8(d)::"memory");
    else if (N == 64) asm volatile("" : HCK_D32(d)::"memory");
    else if (N == 128) asm volatile("" : HCK_D64(d)::"memory");
    else asm volatile("" : HCK_D128(d)::"memory");
}

}  // namespace wgmma
}  // namespace hck
#endif

#endif
