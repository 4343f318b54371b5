/* hc_wgmma.cuh - Hopper (sm_90a) wgmma kernel, included by
 * hc_kernels.cu (one translation unit). docs/kernels.md.
 *
 * The product runs transposed: y^T = W . x^T, so the weights are the wgmma A
 * operand, taken from registers, and the activations the B operand, read by
 * the tensor cores from shared memory. This fits the tile layout: the lane's
 * B-fragment pairs of the mma.sync kernels are exactly the A fragment of
 * wgmma's 16-row warp slice (rows gq and gq + 8 = n8 blocks 2w and 2w + 1 of a
 * 64-column tile, warp w of the warpgroup), so each warp decodes only its
 * quarter of each tile row with the small-M kernel's codecs.
 *
 * A block is NWG consumer warpgroups, one 64-column tile each (two with 16
 * tokens and 4-bit weights, Geo::TPW), on NTOK tokens (16, 64, 128 or 256, the
 * wgmma N; 16 multiplies with mma.sync), plus a
 * producer: from 128 tokens a warpgroup that hands its registers to the
 * consumers (setmaxnreg; with a lone producer warp, a scheduler holding 3 warps
 * caps every thread at 168 registers, too few for n256), below one warp. K runs in stages of 64, S buffers deep: one producer thread (with 16 tokens,
 * lane 0 of each of two producer warps, alternating stages) loads a
 * stage with a TMA copy of the activations (128-byte swizzled as the wgmma
 * descriptor expects; zero past the tensor's edge), a TMA copy of the stage's
 * tile rows of the block's tiles (3-D weight map) and a bulk copy per scale group,
 * all completing on the stage's "full" mbarrier. The consumers decode the
 * stage, issue its four wgmmas, and release the previous stage's buffer on its
 * "empty" mbarrier once its wgmmas are done (wait_group 1), so the decode of
 * stage kt overlaps the wgmmas of stage kt - 1 (A registers double-buffered by
 * stage parity). One producer and one TMA copy per operand keep the copies'
 * addressing out of the consumers' instruction stream and the producer's
 * issue path short (cp.async from every thread, or one bulk copy per tile
 * row, were slower). */
namespace hopper {
#include "hc_timeline.cuh"
/* The 16-token variant's shape (-D overrides for diagnostic builds): tiles
 * per warpgroup with 4-bit weights, main loop unrolled by a ring turn (buffer
 * offsets become constants), blocks per SM the registers must allow, stages. */
#ifndef HCK_SYNC_TPW
#define HCK_SYNC_TPW 2
#endif
#ifndef HCK_SYNC_UNROLL
#define HCK_SYNC_UNROLL 1
#endif
#ifndef HCK_SYNC_MINB
#define HCK_SYNC_MINB 2
#endif
#ifndef HCK_SYNC_NPW
#define HCK_SYNC_NPW 2 /* producer warps: warp w issues stages w, w + NPW, ... */
#endif
#ifndef HCK_BIG_NPW
#define HCK_BIG_NPW 2 /* producer warps issuing in the 128/256-token uint4 variants (of their four) */
#endif
#ifndef HCK_SYNC_KW
#define HCK_SYNC_KW 1 /* uint4 x 16-bit: warps split a stage by tile and k (0: by columns) */
#endif
#ifndef HCK_BIG_EVICT_FIRST
#define HCK_BIG_EVICT_FIRST 1 /* 64-256 tokens: weights evict-first where the grid has one token block */
#endif
#ifndef HCK_KW_POST
#define HCK_KW_POST 1 /* KW, uint4 x 16-bit, <= 8 tokens or KW2, group 128: scales after the group's sums */
#endif
#ifndef HCK_KW2
#define HCK_KW2 1 /* KW, uint4 x 16-bit, group scales: two n16 blocks per warp (lo8 too) */
#endif
#ifndef HCK_SYNC_KW8
#define HCK_SYNC_KW8 1 /* uint4 and fp4 x 8-bit as well (0: by columns) */
#endif
#ifndef HCK_SYNC_EVICT_FIRST
#define HCK_SYNC_EVICT_FIRST 1 /* 16 tokens: the weights' TMA copies tagged L2 evict-first */
#endif
#ifndef HCK_SYNC_SMAX
#define HCK_SYNC_SMAX 8 /* at most this many stages (10 gained only ~1% on the large shapes) */
#endif
#ifndef HCK_SYNC_SMAX_U4A16
#define HCK_SYNC_SMAX_U4A16 6 /* uint4 x 16-bit (KW): 6 stages beat 8 in 10 of 12 M <= 16 cells
                               * (the memory system, not the ring's depth, limits there; 4 were slower) */
#endif
#ifndef HCK_SYNC_RING
#define HCK_SYNC_RING (96 * 1024) /* ring bytes of the 16-token variant (2 blocks per SM
                                      * with 8 stages beat 3 with 6) */
#endif

/* Tokens per block (16, 64, 128 or 256, the wgmma N): stages in flight (16: Geo::S),
 * activation bytes per stage, producer warps (threads and blocks per SM: Blk).
 * Up to 64 tokens the accumulators are few: one producer warp, no register
 * hand-over, and several blocks per SM keep more weight bytes in flight
 * (memory-bound there); from 128 tokens a producer warpgroup gives its
 * registers to the consumers (setmaxnreg needs whole warpgroups). */
template <int NTOK> struct Tok {
    static constexpr bool BIG = NTOK >= 128;
    static constexpr int S = NTOK == 256 ? 5 : 8, XB = NTOK * 128;
    /* producer warps of which lane 0 issues copies: 16 tokens, HCK_SYNC_NPW */
    static constexpr int NPW = NTOK == 16 ? HCK_SYNC_NPW : 1;
    /* 16 tokens: mma.sync m16n8k16 instead of wgmma (the A fragments and the
     * accumulators have the same layout; a chain of m64n16k16 wgmmas and their
     * wait per stage was slower) */
    static constexpr bool SYNC = NTOK == 16;
};
/* Variants of a (format, tokens) kernel: standard; wide (two tiles per
 * warpgroup, 4-bit weights, 128 tokens); fp8 (e4m3 x e4m3 wgmma k32 for the
 * fp8-activation 4-bit formats, 128 or 256 tokens); fp8 wide (the fp8
 * variant with two tiles per warpgroup, 128 tokens); at 16 tokens: lo8
 * (every block has at most 8 tokens: no mma for tokens 8-15),
 * quad (uint4 x 16-bit: four consumer warpgroups, one block per SM) and
 * both. The host picks (wg_wide, wg_f8, wg_sync_var). */
enum { V_STD = 0, V_WIDE = 1, V_F8 = 2, V_F8W = 3, V_LO8 = 4, V_QUAD = 5, V_QUAD_LO8 = 6, V_COUNT = 7 };
/* whether variant v runs on the e4m3 tensor cores (activations as bytes) */
inline constexpr bool var_f8(int v) { return v == V_F8 || v == V_F8W; }
/* variant v's suffix in traces (ntok=16lo8) */
inline const char *var_name(int v)
{
    static const char *const names[V_COUNT] = {"", "w", "f8", "f8w", "lo8", "quad", "quadlo8"};
    return v >= 0 && v < V_COUNT ? names[v] : "?";
}
/* whether variant v's blocks hold at most 8 tokens, or four consumer warpgroups */
__host__ __device__ inline constexpr bool var_lo8(int v) { return v == V_LO8 || v == V_QUAD_LO8; }
__host__ __device__ inline constexpr bool var_quad(int v) { return v == V_QUAD || v == V_QUAD_LO8; }
/* A block of variant VAR for NTOK tokens: consumer warpgroups, threads, blocks
 * per SM the registers must allow. The quad variant's one block per SM has
 * the 16 consumer warps of two standard ones, but they share one ring: two
 * blocks on one SM do not progress alike (the one launched first ends its
 * loop well before the other, timeline) */
template <int NTOK, int VAR> struct Blk {
    static constexpr int NWG = var_quad(VAR) ? 4 : 2;
    static constexpr int NT = NWG * 128 + (Tok<NTOK>::BIG ? 128 : 32 * Tok<NTOK>::NPW);
    static constexpr int MINB = Tok<NTOK>::BIG || var_quad(VAR) ? 1 : NTOK == 16 ? HCK_SYNC_MINB : 2;
};
/* threads of the variant var for ntok tokens */
inline int nt_of(int ntok, int var)
{
    return ntok >= 128 ? Blk<128, V_STD>::NT : ntok == 64 ? Blk<64, V_STD>::NT
         : var_quad(var) ? Blk<16, V_QUAD>::NT : Blk<16, V_STD>::NT;
}
/* whether the 16-token kernels of format wf split a stage by tile and k (KW):
 * the 4-bit formats with two tiles per warpgroup (uint4 x 16-bit also with one) */
__host__ __device__ inline constexpr bool sync_kw(int wf)
{
    return HCK_SYNC_KW && (wf == small::W_U4A16 ||
                           (HCK_SYNC_KW8 && HCK_SYNC_TPW == 2 && (wf == small::W_U4A8 || wf == small::W_FP4A8)));
}

template <int WF, int NTOK, int VAR = V_STD> struct Geo {
    using F = small::Fmt<WF>;
    static constexpr int P = F::P, R = 64 / P;           /* k per tile row, tile rows per stage */
    static constexpr int RW = F::B * P / 64;             /* words per lane, row and warp */
    static constexpr int TB = F::TILE_WORDS * 4;         /* bytes of one tile row */
    static constexpr int WSB = R * TB;                   /* weight bytes per tile and stage */
    static constexpr int WC = F::TILE_WORDS < 256 ? F::TILE_WORDS : 256; /* words per weight-map chunk */
    static constexpr bool SBYTE = WF == small::W_FP4A8;  /* e8m0 byte scales */
    /* tiles per consumer warpgroup: with mma.sync (16 tokens) a warp takes its rows
     * of two tiles, so one ldmatrix of activations feeds both and a barrier round
     * moves twice the weights (8-bit weights keep one: four tiles of theirs would
     * leave 4 stages in the ring); V_WIDE (128 tokens): a warpgroup's two tiles
     * share one activation stage, halving the activation bytes read through L2 per
     * weight byte, but the grid has half the blocks (the host picks, wg_wide) */
    static constexpr int TPW = F::B != 4 ? 1 : Tok<NTOK>::SYNC ? HCK_SYNC_TPW : VAR == V_WIDE || VAR == V_F8W ? 2 : 1;
    static constexpr int BT = Blk<NTOK, VAR>::NWG * TPW; /* tiles per block */
    /* fp8: the activations are e4m3 bytes in k order, 64-byte rows (64-byte swizzle) */
    static constexpr bool F8 = var_f8(VAR);
    static constexpr int XB = F8 ? NTOK * 64 : Tok<NTOK>::XB;
    /* stage stride: activations, BT tiles' rows, BT x 256 bytes of scales (two groups at most) */
    static constexpr int SST = (XB + BT * (WSB + 256) + 1023) / 1024 * 1024;
    /* stages in flight: 16 tokens fill HCK_SYNC_RING bytes (MINB blocks per SM; the
     * quad variant's one block twice that) */
    static constexpr int SR = HCK_SYNC_RING * (var_quad(VAR) ? 2 : 1) / SST;
    /* the fp8 variant's 256-token stages are half the size of the 16-bit ones: 8 fit */
    static constexpr int SMAX = WF == small::W_U4A16 ? HCK_SYNC_SMAX_U4A16 : HCK_SYNC_SMAX;
    static constexpr int S = Tok<NTOK>::SYNC ? (SR > SMAX ? SMAX : SR < 4 ? 4 : SR)
                           : F8 ? 8 : Tok<NTOK>::S;
    static_assert(!Tok<NTOK>::SYNC || S % 2 == 0, "the unrolled ring turn runs stage pairs");
    /* word offset of warp w's piece of a tile row (spec 4.4 closed forms) */
    __device__ static int piece(int w, int lane)
    {
        if (WF == small::W_U4A16) return lane * 4 + w;
        if (F::B == 4) return (w / 2) * 128 + lane * 4 + 2 * (w % 2);
        return (w / 2) * 256 + lane * 8 + (w % 2) * 4;
    }
};

/* dynamic shared memory: S stage buffers, 2 S mbarriers, 1024 bytes of alignment slack */
template <int WF, int NTOK, int VAR> constexpr size_t smem_bytes()
{
    using G = Geo<WF, NTOK, VAR>;
    return (size_t)G::S * G::SST + 16 * G::S + 1024;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HCK_WGMMA 1
#define HCK_D64(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define HCK_D64_STR "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

#define HCK_D8(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define HCK_D8_STR "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define HCK_D32(d) HCK_D8(d), HCK_D8((d + 8)), HCK_D8((d + 16)), HCK_D8((d + 24))
#define HCK_D32_STR "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define HCK_D128(d) HCK_D64(d), HCK_D64((d + 64))
#define HCK_D128_STR "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

/* shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups 1024 B apart */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr)
{
    return (uint64_t)((saddr & 0x3ffff) >> 4) | (uint64_t)1 << 16 | (uint64_t)(1024 >> 4) << 32 |
           (uint64_t)1 << 62;
}

/* one wgmma m64nNk16, fp32 accumulators d (DOPS / DSTR), A in registers a[0..3]
 * (operands A0..A0 + 3), B by descriptor (A0 + 4), scale-d predicate from A0 + 5 */
#define HCK_WGMMA_RS(N, TY, DSTR, DOPS, A0, A1, A2, A3, DESC, SD)                                   \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SD ", 0;\n"                                  \
                 "wgmma.mma_async.sync.aligned.m64n" N "k16.f32." TY "." TY " " DSTR                \
                 ", {%" A0 ", %" A1 ", %" A2 ", %" A3 "}, %" DESC ", p, 1, 1, 0;\n}\n"               \
                 : DOPS(d)                                                                        \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1))

/* d (64 x NTOK fp32 per warpgroup) += a (registers, 64 x 16) . B (smem, 16 x NTOK) */
template <int NTOK, bool BF>
__device__ __forceinline__ void wgmma_rs(float *d, const uint32_t *a, uint64_t desc)
{
    if (NTOK == 16) {
        if (BF) HCK_WGMMA_RS("16", "bf16", HCK_D8_STR, HCK_D8, "8", "9", "10", "11", "12", "13");
        else HCK_WGMMA_RS("16", "f16", HCK_D8_STR, HCK_D8, "8", "9", "10", "11", "12", "13");
    } else if (NTOK == 64) {
        if (BF) HCK_WGMMA_RS("64", "bf16", HCK_D32_STR, HCK_D32, "32", "33", "34", "35", "36", "37");
        else HCK_WGMMA_RS("64", "f16", HCK_D32_STR, HCK_D32, "32", "33", "34", "35", "36", "37");
    } else if (NTOK == 128) {
        if (BF) HCK_WGMMA_RS("128", "bf16", HCK_D64_STR, HCK_D64, "64", "65", "66", "67", "68", "69");
        else HCK_WGMMA_RS("128", "f16", HCK_D64_STR, HCK_D64, "64", "65", "66", "67", "68", "69");
    } else {
        if (BF) HCK_WGMMA_RS("256", "bf16", HCK_D128_STR, HCK_D128, "128", "129", "130", "131", "132", "133");
        else HCK_WGMMA_RS("256", "f16", HCK_D128_STR, HCK_D128, "128", "129", "130", "131", "132", "133");
    }
}

/* shared-memory matrix descriptor: K-major, 64-byte swizzle (fp8 rows of 64 k), 8-row groups 512 B apart */
__device__ __forceinline__ uint64_t desc_sw64(uint32_t saddr)
{
    return (uint64_t)((saddr & 0x3ffff) >> 4) | (uint64_t)1 << 16 | (uint64_t)(512 >> 4) << 32 |
           (uint64_t)2 << 62;
}

/* d (64 x 128 fp32 per warpgroup) (+)= a (registers, 64 x 32 e4m3) . B (smem, 32 x 128 e4m3);
 * ACC = 0 overwrites d (the first k32 step of a promotion round) */
template <int ACC>
__device__ __forceinline__ void wgmma_e4m3_n128(float *d, const uint32_t *a, uint64_t desc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " HCK_D64_STR
                 ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : HCK_D64(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(ACC));
}

/* keeps the compiler from touching the accumulators across the async window */
template <int NTOK> __device__ __forceinline__ void fence_acc(float *d)
{
    if (NTOK == 256) asm volatile("" : HCK_D128(d)::"memory");
    else if (NTOK == 128) asm volatile("" : HCK_D64(d)::"memory");
    else if (NTOK == 64) asm volatile("" : HCK_D32(d)::"memory");
    else asm volatile("" : HCK_D8(d)::"memory");
}

/* the 8 A registers of an fp8 stage (two k32 steps), as pin_a below */
__device__ __forceinline__ void pin_a8(uint32_t (*a)[4])
{
    asm volatile("" : "+r"(a[0][0]), "+r"(a[0][1]), "+r"(a[0][2]), "+r"(a[0][3]), "+r"(a[1][0]), "+r"(a[1][1]),
                      "+r"(a[1][2]), "+r"(a[1][3]));
}
/* the 16 A registers of a stage: defined here as far as the compiler knows, so
 * that no decode instruction lands between the wgmmas (ptxas would serialize) */
__device__ __forceinline__ void pin_a(uint32_t (*a)[4])
{
    asm volatile("" : "+r"(a[0][0]), "+r"(a[0][1]), "+r"(a[0][2]), "+r"(a[0][3]), "+r"(a[1][0]), "+r"(a[1][1]),
                      "+r"(a[1][2]), "+r"(a[1][3]), "+r"(a[2][0]), "+r"(a[2][1]), "+r"(a[2][2]), "+r"(a[2][3]),
                      "+r"(a[3][0]), "+r"(a[3][1]), "+r"(a[3][2]), "+r"(a[3][3]));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity)
{
    asm volatile("{\n.reg .pred p;\nWAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/* every non-exited thread of the cluster; orders shared-memory writes before
 * the barrier with reads of them (in any CTA of the cluster) after it */
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
/* the 16 bytes at shared offset saddr of the cluster's CTA `rank` */
__device__ __forceinline__ float4 ld_cluster_f4(uint32_t saddr, uint32_t rank)
{
    float4 v;
    asm volatile("{\n.reg .b32 r;\nmapa.shared::cluster.u32 r, %4, %5;\n"
                 "ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [r];\n}"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(saddr), "r"(rank) : "memory");
    return v;
}
/* Programmatic dependent launch: waits until the grid this one depends on
 * (act16_kernel, which writes the activation codes and token scales) has
 * finished and its writes are visible; returns at once in a launch without the
 * attribute. */
__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
/* bytes (multiple of 16) global -> shared, completing on bar */
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
/* the box at (c0, c1, c2) of a 3-D tensor map */
__device__ __forceinline__ void tma_box3(uint32_t dst, const CUtensorMap *tm, int c0, int c1, int c2, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(dst), "l"(tm), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
/* tma_box3 with an L2 cache policy (createpolicy) */
__device__ __forceinline__ void tma_box3_hint(uint32_t dst, const CUtensorMap *tm, int c0, int c1, int c2, uint32_t bar,
                                              uint64_t pol)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3, %4}], [%5], %6;"
                 ::"r"(dst), "l"(tm), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(pol) : "memory");
}
/* an L2 policy for the lines a copy tags: evicted first, or as untagged lines are */
__device__ __forceinline__ uint64_t l2_policy(bool evict_first)
{
    uint64_t pol;
    if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
/* the (64 k x NTOK rows) box at (k0, row0) of the activation tensor map */
__device__ __forceinline__ void tma_box(uint32_t dst, const CUtensorMap *tm, int k0, int row0, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(dst), "l"(tm), "r"(k0), "r"(row0), "r"(bar) : "memory");
}
/* One token's 16-bit outputs at columns n .. n + 3 from value(c) (an
 * expression of c), at dst: one 8-byte store where rows are 8-byte aligned
 * (v4), else columns < d.N one by one. A statement macro, not a function: a
 * function helper changed the generated code of the kernels using it. Uses n,
 * d and v4 of the caller. */
#define HCK_STORE_OUT4(dst_expr, value_c)                                                           \
    do {                                                                                            \
        uint16_t o_[4];                                                                             \
        _Pragma("unroll") for (int c = 0; c < 4; c++) o_[c] = f2h(value_c, d.out_bf16);             \
        uint16_t *dst_ = (dst_expr);                                                                \
        if (v4) *(uint2 *)dst_ = make_uint2(o_[0] | (uint32_t)o_[1] << 16, o_[2] | (uint32_t)o_[3] << 16); \
        else                                                                                        \
            _Pragma("unroll") for (int c = 0; c < 4; c++) if (n + c < d.N) dst_[c] = o_[c];         \
    } while (0)
/* The split sum of a cooperative launch (HCK_SUM_COOP; the protocol at
 * HCK_COOP_ALL_IN in hc_kernels.h): this split's partials are stored and
 * fenced; it counts itself in at ctr, waits for all `splits`, sums its share
 * of each token row's q column quads from c0 (split_sum: in split order, plus
 * the bias) and counts itself out. Waiting is safe only when the whole grid is
 * resident, which the cooperative launch guarantees. */
template <int U>
__device__ __forceinline__ void coop_split_sum(const Dev &p, int e, const float *ws, uint16_t *__restrict__ y,
                                               int64_t r0, int mrows, int64_t c0, int q, int64_t stride, int *ctr,
                                               int split, int splits, int tid, int nt)
{
    if (tid == 0) {
        atomicAdd(ctr, 1);
        int seen;
        do {
            asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(seen) : "l"(ctr) : "memory");
            if (!HCK_COOP_ALL_IN(seen, splits)) __nanosleep(32);
        } while (!HCK_COOP_ALL_IN(seen, splits));
    }
    asm volatile("bar.sync 1, %0;" ::"r"(nt) : "memory");
    __threadfence();
    const int qb = HCK_CSUM_BEGIN(q, split, splits), qe = HCK_CSUM_BEGIN(q, split + 1, splits);
    split_sum<U>(p, e, ws, y, r0, mrows, c0 + 4 * qb, 4 * (qe - qb), stride, splits, tid, nt);
    if (tid == 0 && HCK_COOP_LAST_OUT(atomicAdd(ctr, 1), splits)) atomicExch(ctr, 0);
}

/* 16 bytes at gpu scope, relaxed: the polled split sum's partials (a weak
 * access would race with the pollers in the memory model) */
__device__ __forceinline__ float4 ld_relaxed_f4(const float *src)
{
    float4 v;
    asm volatile("ld.relaxed.gpu.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(src) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed_f4(float *dst, float4 v)
{
    asm volatile("st.relaxed.gpu.global.v4.f32 [%0], {%1, %2, %3, %4};"
                 ::"l"(dst), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory");
}
__device__ __forceinline__ bool ws_empty4(float4 v)
{
    return __float_as_uint(v.x) == HCK_WS_EMPTY || __float_as_uint(v.y) == HCK_WS_EMPTY ||
           __float_as_uint(v.z) == HCK_WS_EMPTY || __float_as_uint(v.w) == HCK_WS_EMPTY;
}
/* The lines of this split's share (as poll_split_sum) of every split's plane
 * into L2, issued when the main loop ends: the share's lines not yet written
 * this launch sit in DRAM, and without this the poll's first round waits a
 * DRAM round trip; the epilogue's staging (about 1.3 us) hides it. At the
 * kernel's entry it gains less: the DRAM is busiest then. */
__device__ __forceinline__ void poll_prefetch(const Dev &p, const float *ws, int64_t r0, int mrows, int64_t c0,
                                              int q, int64_t stride, int split, int splits, int tid, int nt)
{
    const int qb = HCK_CSUM_BEGIN(q, split, splits), nq = HCK_CSUM_BEGIN(q, split + 1, splits) - qb;
    const int64_t f0 = c0 + 4 * qb, f1 = min(c0 + 4 * (qb + nq), p.d.N); /* floats of a row */
    if (f1 <= f0) return;
    const int lines = (int)((f1 - f0) / 32) + 2; /* 128-byte lines a row's share may touch, at most */
    for (int i = tid; i < splits * mrows * lines; i += nt) {
        const int j = i % splits, row = i / splits % mrows, l = i / (splits * mrows);
        const float *r = ws + j * stride + (r0 + row) * p.d.N;
        const uintptr_t a = ((uintptr_t)(r + f0) & ~(uintptr_t)127) + 128u * (uintptr_t)l;
        if (a < (uintptr_t)(r + f1)) asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
    }
}

/* The polled split sum (HCK_SUM_POLL, protocol at HCK_WS_EMPTY; a
 * cooperative launch, every split resident; rows 4-column aligned): this
 * split's share of each token row's q column quads from c0 (HCK_CSUM_BEGIN),
 * polled in every split's plane (stride floats apart) until all of it has
 * arrived, summed in split order plus the bias (as split_sum), written to y;
 * the share is then emptied for the next launch. No fence, counter or barrier:
 * a partial's arrival is its own signal. A poll that has not ended after 2^24
 * rounds (seconds) traps (a lost partial would otherwise hang the GPU). */
__device__ __forceinline__ void poll_split_sum(const Dev &p, int e, float *ws, uint16_t *__restrict__ y,
                                               int64_t r0, int mrows, int64_t c0, int q, int64_t stride,
                                               int split, int splits, int tid, int nt)
{
    const hck_desc &d = p.d;
    const bool v4 = true; /* HCK_STORE_OUT4 */
    const int qb = HCK_CSUM_BEGIN(q, split, splits), nq = HCK_CSUM_BEGIN(q, split + 1, splits) - qb;
    const float e4 = __uint_as_float(HCK_WS_EMPTY);
    for (int g = tid; g < mrows * nq; g += nt) {
        const int64_t row = r0 + g / nq, n = c0 + 4 * (qb + g % nq);
        if (n >= d.N) continue;
        float *src = ws + row * d.N + n;
        float4 t[8];
        unsigned pending = (1u << splits) - 1u;
        for (int spin = 0; pending; spin++) {
            /* a round's loads all in flight before any test: testing each as it
             * comes makes the next load wait for it, 8 L2 round trips per round */
            const unsigned round = pending;
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (round >> j & 1u) t[j] = ld_relaxed_f4(src + j * stride);
#pragma unroll
            for (int j = 0; j < 8; j++)
                if ((round >> j & 1u) && !ws_empty4(t[j])) pending &= ~(1u << j);
            if (pending) {
                if (spin > (1 << 24)) __trap();
                __nanosleep(32);
            }
            HCK_TL_SPINS(g == 0, spin + 1);
        }
        if (g == 0) HCK_TL_STAMP(TL_SYNCED);
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < 8; j++) /* in split order */
            if (j < splits) v[0] += t[j].x, v[1] += t[j].y, v[2] += t[j].z, v[3] += t[j].w;
        HCK_STORE_OUT4(y + row * d.N + n, v[c] + bias_at(p, e, n + c));
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < splits) st_relaxed_f4(src + j * stride, make_float4(e4, e4, e4, e4));
    }
}

/* The split-K sum of a cluster of `splits` CTAs (one per split, cluster
 * rank = split) through distributed shared memory, in place of fp32 partials
 * in global memory and a last-arriving block. Each CTA has staged its partial
 * sums of its bt tiles at shared offsets stage0 + 4 t area (fp32, token-major,
 * HCK_EPI_READ_INDEX; token scales not applied) and passed a cluster barrier;
 * CTA `split` then sums 1 / splits of the (tile, token, 4 columns) groups
 * (HCK_CSUM_*) over the ranks in split order (the order split_sum adds), adds
 * the bias and stores y. The caller passes a cluster barrier before it exits,
 * so that no CTA's shared memory goes while a peer reads it. The host takes
 * it for two splits only (wg_cluster_sum). */
__device__ __forceinline__ void cluster_split_sum(const Dev &p, int e, uint32_t stage0, int area, int bt,
                                                  const float *tsm, uint16_t *__restrict__ y, int64_t r0,
                                                  int mrows, int nb0, int ntiles, int split, int splits, int tid,
                                                  int nt)
{
    const hck_desc &d = p.d;
    const bool v4 = (d.N & 3) == 0 && ((uintptr_t)y & 7) == 0;
    const int total = bt * mrows * 16, g1 = HCK_CSUM_BEGIN(total, split + 1, splits);
    for (int g = HCK_CSUM_BEGIN(total, split, splits) + tid; g < g1; g += nt) {
        const int t = HCK_CSUM_TILE(g, mrows), ml = HCK_CSUM_TOKEN(g, mrows), nl = HCK_CSUM_COL(g);
        const int64_t n = (int64_t)(nb0 + t) * 64 + nl;
        if (nb0 + t >= ntiles || n >= d.N) continue;
        const uint32_t a = stage0 + 4u * (uint32_t)(t * area + HCK_EPI_READ_INDEX(ml, nl));
        float4 q[8];
#pragma unroll
        for (int r = 0; r < 8; r++) /* every load in flight before the sum */
            if (r < splits) q[r] = ld_cluster_f4(a, (uint32_t)r);
        const float ts = tsm ? tsm[ml] : 1.0f;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int r = 0; r < 8; r++)
            if (r < splits) {
                if (tsm) q[r].x *= ts, q[r].y *= ts, q[r].z *= ts, q[r].w *= ts;
                v[0] += q[r].x, v[1] += q[r].y, v[2] += q[r].z, v[3] += q[r].w;
            }
        HCK_STORE_OUT4(y + (r0 + ml) * d.N + n, v[c] + (n + c < d.N ? bias_at(p, e, n + c) : 0.0f));
    }
}
#endif

/* The warp's A fragments (k16 steps st) of one tile row from its RW words:
 * a[st] = {row gq k lo, row gq + 8 k lo, row gq k hi, row gq + 8 k hi}, i.e.
 * the B pairs of n8 blocks 2w and 2w + 1 of the mma.sync kernels, scaled. */
template <int WF, bool CBF, bool TR>
__device__ __forceinline__ void decode_row(const uint32_t *wv, uint32_t s0, uint32_t s1,
                                           bool scale, uint32_t (*a)[4])
{
    using small::fp4_pair;
    using small::fp8_pair;
    if (WF == small::W_U4A16) {
        uint32_t q[4];
        small::dq4<CBF>(wv[0], q);
        a[0][0] = q[0], a[0][1] = TR ? q[1] : q[2], a[0][2] = TR ? q[2] : q[1], a[0][3] = q[3];
    } else if (WF == small::W_FP8A8) {
#pragma unroll
        for (int st = 0; st < 2; st++) {
            const uint32_t u = wv[TR ? 2 * st : st], v = wv[TR ? 2 * st + 1 : 2 + st];
            a[st][0] = fp8_pair(u, 0), a[st][1] = fp8_pair(v, 0);
            a[st][2] = fp8_pair(u, 1), a[st][3] = fp8_pair(v, 1);
        }
    } else {
        uint32_t q[2][4];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            if (WF == small::W_U4A8) {
                const uint32_t m = (wv[h] >> 3) & 0x11111111u; /* int->fp codes to offset binary */
                small::dq4<CBF>(wv[h] ^ 0x88888888u ^ (m * 7u), q[h]);
            } else {
#pragma unroll
                for (int i = 0; i < 4; i++) q[h][i] = fp4_pair(wv[h], i);
            }
        }
#pragma unroll
        for (int st = 0; st < 2; st++) {
            if (TR) {
#pragma unroll
                for (int i = 0; i < 4; i++) a[st][i] = q[st][i];
            } else {
                a[st][0] = q[0][st], a[st][1] = q[1][st], a[st][2] = q[0][st + 2], a[st][3] = q[1][st + 2];
            }
        }
    }
    if (scale) {
#pragma unroll
        for (int st = 0; st < small::Fmt<WF>::P / 16; st++) {
            a[st][0] = fastw4::fma2<CBF>(a[st][0], s0, 0x80008000u);
            a[st][2] = fastw4::fma2<CBF>(a[st][2], s0, 0x80008000u);
            a[st][1] = fastw4::fma2<CBF>(a[st][1], s1, 0x80008000u);
            a[st][3] = fastw4::fma2<CBF>(a[st][3], s1, 0x80008000u);
        }
    }
}

/* tm: the activations (16-bit values, or per-token codes de-interleaved per
 * 16 k with tok_scale) as a 2-D tensor map, boxes of 64 k x NTOK rows, 128-byte
 * swizzle (V_F8: e4m3 bytes in k order, 64-byte swizzle). Group scales need
 * group_size % 64 == 0 (V_F8: % 128). */
template <int WF, bool CBF, bool SCALE_C, bool TR, int NTOK, int VAR>
__global__ void __launch_bounds__(Blk<NTOK, VAR>::NT, Blk<NTOK, VAR>::MINB)
wg_kernel(const __grid_constant__ CUtensorMap tm, const __grid_constant__ CUtensorMap wm, Dev p, const float *__restrict__ tok_scale,
          const int64_t *__restrict__ offsets, uint16_t *__restrict__ y, int splits, float *__restrict__ ws)
{
#if defined(HCK_WGMMA)
    using G = Geo<WF, NTOK, VAR>;
    constexpr int P = G::P, R = G::R, TB = G::TB, WSB = G::WSB, SST = G::SST, S = G::S, XB = G::XB;
    constexpr int TPW = G::TPW, BT = G::BT, NWG = Blk<NTOK, VAR>::NWG;
    const hck_desc &d = p.d;
    const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) % 4, lane = tid % 32, gq = lane / 4;
    const int e = blockIdx.z / splits, split = blockIdx.z % splits;
    const int64_t r0 = offsets[e] + (int64_t)blockIdx.y * NTOK, r1 = offsets[e + 1];
    if (r0 >= r1) return;
    const int mrows = (int)min((int64_t)NTOK, r1 - r0);
    const bool hi8 = !var_lo8(VAR) && mrows > 8; /* 16 tokens: the mma of tokens 8-15 */
    HCK_TL_BEGIN(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * e)); /* the split group */
    /* an even stage count: the consumer loop runs stage pairs with no branch between
     * the wgmmas (a conditional second stage makes ptxas serialize them); a stage
     * past K reads zero activations */
    const int ntiles = (int)(d.Np / 64), rows = (int)(d.Kp / P), npair = ((rows + R - 1) / R + 1) / 2;
    /* split-K: this block's stages [sa, sa + nst), whole pairs */
    const int sa = 2 * (int)((int64_t)npair * split / splits);
    const int nst = 2 * (int)((int64_t)npair * (split + 1) / splits) - sa;
    extern __shared__ uint8_t smem_raw[];
    /* 1024-aligned for the swizzle; an offset from smem_raw keeps the shared state space */
    uint8_t *smem = smem_raw + ((1024 - (__cvta_generic_to_shared(smem_raw) & 1023)) & 1023);
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t full = sbase + S * SST, empty = full + 8 * S; /* mbarriers, 8 bytes each */
    if (tid == 0) {
        for (int i = 0; i < S; i++) mbar_init(full + 8 * i, 1), mbar_init(empty + 8 * i, NWG * 4);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == NWG) { /* producer: gives its registers to the consumers; lane 0 of each producer warp issues */
        if (Tok<NTOK>::BIG) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        /* with 16 tokens, warp pw issues stages pw, pw + NPW, ...: one thread's issue
         * path took ~90% of a stage's time (clock64: it waited on `empty` 10%) */
        /* 128/256 tokens: two for uint4 weights (faster at M = 128 and 1024);
         * MXFP4 and fp8 weights did not gain (0-4% slower), so they keep one */
        constexpr bool BIG2 = WF == small::W_U4A16 || WF == small::W_U4A8;
        constexpr int NPW = !Tok<NTOK>::BIG ? Tok<NTOK>::NPW : BIG2 && S % HCK_BIG_NPW == 0 ? HCK_BIG_NPW : 1;
        static_assert(S % NPW == 0, "each ring buffer has one producer");
        /* NPW = 1 keeps the one-thread form: the general form changes the 64- to
         * 256-token kernels' register allocation and costs them 8-13% */
        const int pw = NPW == 1 ? 0 : (tid - NWG * 128) / 32;
        if (NPW == 1 ? tid != NWG * 128 : tid % 32 != 0 || pw >= NPW) return;
        const int gs = (int)d.group_size, ngs = !SCALE_C && gs == 32 ? 2 : 1; /* groups per stage */
        const int spg = SCALE_C || gs < 64 ? 1 : gs / 64;                     /* stages per group */
        constexpr uint32_t SCB = G::SBYTE ? 64 : 128;                         /* scale bytes per group and tile */
        const int nb0 = blockIdx.x * BT, ntl = min(BT, ntiles - nb0);         /* the block's valid tiles */
        const uint32_t bytes = XB + R * BT * TB + (SCALE_C ? 0 : ngs * ntl * SCB);
        /* 16 tokens read each weight byte once (one token block per expert): tagged
         * evict-first, the weight lines replace each other in L2 rather than lines
         * others still need or dirty lines that must be written back first.
         * 64-256 tokens do where the grid has one token block (a little faster
         * after a dirty flush, clean unchanged); with more, the token blocks
         * share the weight lines, so they keep the normal policy */
        constexpr bool EVICT_FIRST = Tok<NTOK>::SYNC ? HCK_SYNC_EVICT_FIRST : HCK_BIG_EVICT_FIRST;
        const uint64_t pol = EVICT_FIRST ? l2_policy(Tok<NTOK>::SYNC || gridDim.y == 1) : 0;
        /* the stage's R tile rows of the BT tiles into buffer buf; zero past the
         * weight tensor, and rows past this expert's K meet zero activations */
        auto wg_load_weights = [&](uint32_t buf, uint32_t bar, int st) {
            if (EVICT_FIRST)
                tma_box3_hint(buf + XB, &wm, 0, nb0 * G::F::TILE_WORDS / G::WC, e * rows + st * R, bar, pol);
            else
                tma_box3(buf + XB, &wm, 0, nb0 * G::F::TILE_WORDS / G::WC, e * rows + st * R, bar);
            if (!SCALE_C)
                for (int j = 0; j < ngs; j++) { /* the valid tiles' entries are contiguous */
                    const int64_t g = min((int64_t)(ngs == 2 ? 2 * st + j : st / spg), d.G - 1);
                    bulk_copy(buf + XB + BT * WSB + j * BT * SCB,
                              p.s + ((e * d.G + g) * d.Np + (int64_t)nb0 * 64) * (G::SBYTE ? 1 : 2), ntl * SCB, bar);
                }
        };
        HCK_TL_WAITS(pwait);
        /* 8-bit activations come from act16_kernel; launched as its programmatic
         * dependent, the first S stages' weights and scales are requested before
         * the wait for it, their activations after. Otherwise the stages go in
         * order (weights first, without the overlap, only delays the first
         * stage's activations) */
        const bool weights_first = WF != small::W_U4A16 && p.pdl;
        if (weights_first) {
            for (int i = pw; i < nst && i < S; i += NPW) {
                const uint32_t buf = sbase + i * SST, bar = full + 8 * i;
                mbar_expect(bar, bytes);
                wg_load_weights(buf, bar, sa + i);
            }
            griddep_wait();
            for (int i = pw; i < nst && i < S; i += NPW) tma_box(sbase + i * SST, &tm, (sa + i) * 64, (int)r0, full + 8 * i);
        }
        for (int i = pw + (weights_first ? S : 0); i < nst; i += NPW) { /* i: buffer use, st: stage of K */
            const int b = i % S, st = sa + i;
            HCK_TL_TIMED_WAIT(pwait, if (i >= S) mbar_wait(empty + 8 * b, ((i / S) - 1) & 1));
            const uint32_t buf = sbase + b * SST, bar = full + 8 * b;
            mbar_expect(bar, bytes);
            tma_box(buf, &tm, st * 64, (int)r0, bar);
            wg_load_weights(buf, bar, st);
        }
        HCK_TL_SAVE(pwait, 0, pw == 0);
        return;
    }

    if (Tok<NTOK>::BIG) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;"); /* 128 x 40 + 256 x 232 <= 64K */
    if (WF != small::W_U4A16 && p.pdl) griddep_wait(); /* act16_kernel's token scales (the epilogue reads them) */
    HCK_TL_EXIT_GUARD();
    /* 16 tokens, 4-bit weights (KW: uint4 x 16-bit, uint4 and fp4 x 8-bit):
     * the warpgroup's four warps split a stage by tile and k (HCK_KW_*: TPW tiles,
     * 4 / TPW warps along k), each taking all 64 columns of its tile. A lane's
     * words of a tile row (spec 4.4) are then one or two conflict-free 16-byte
     * loads, where a split by columns took four 4-byte (or 8-byte) loads, bank
     * conflicted, and its scales one 16-byte load; the epilogue sums the k
     * slices. acc[i]: n16 block i. */
    constexpr bool KW = Tok<NTOK>::SYNC && sync_kw(WF);
    constexpr int KRW = KW ? R * TPW / 4 : 1; /* KW: tile rows per warp and stage */
    static_assert(!KW || ((R == 4 || R == 2) && R * TPW % 4 == 0 && KRW * P <= 32 && G::RW <= 2),
                  "KW: four k16 or two k32 tile rows per stage, split evenly; a warp's rows in one k32 group");
    /* KW2 (16 tokens and lo8): uint4 x 16-bit with group scales: a warp
     * takes two n16 blocks of its tile (the half warp / TPW) over all the stage's
     * k rows, in place of four blocks over half the rows. Half the accumulators,
     * so the group sums fit beside them and the scales go after the sums
     * (KW_POST) at 16 tokens too, and the epilogue has no k-slice pass; for twice
     * the activation ldmatrix per mma and 8-byte weight loads. */
    constexpr bool KW2 = KW && HCK_KW2 && NTOK == 16 && WF == small::W_U4A16 && !SCALE_C;
    static_assert(!KW2 || (G::RW == 1 && TPW == 2), "KW2: one word per lane, n16 block and k16 row; two k halves");
    constexpr int KNB = KW2 ? 2 : 4;       /* KW: n16 blocks per warp */
    constexpr int KROWS = KW2 ? R : KRW;   /* KW: tile rows per warp and stage */
    const int kblk0 = KW2 ? HCK_KW2_BLOCK(warp, 0) : 0; /* the warp's first n16 block */
    constexpr int NACC = KW ? KNB : TPW;
    float acc[NACC][NTOK / 2];
#pragma unroll
    for (int t = 0; t < NACC; t++)
#pragma unroll
        for (int i = 0; i < NTOK / 2; i++) acc[t][i] = 0.0f;
    uint32_t afr[2][TPW][R * (P / 16)][4];
    const int pofs = G::piece(warp, lane), sbf = d.scale_kind == HCK_S_BF16;
    const bool two = !SCALE_C && d.group_size == 32; /* a group per 32 k: the second half of a stage */

    /* decode stage st (buffer b = st % S, phase (st / S) & 1) into afr[par], issue its
     * wgmmas, release stage st - 1 */
    auto compute = [&](int st, int par, int b, int ph) {
        mbar_wait(full + 8 * b, ph);
        const uint8_t *bp = smem + b * SST;
#pragma unroll
        for (int t = 0; t < TPW; t++) {
            const int tile = wg * TPW + t; /* of the block */
            uint32_t sc[2][2] = {{0, 0}, {0, 0}}; /* [group of the stage][row half] */
            if (!SCALE_C)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    if (j == 1 && !two) break;
                    const int i = 8 * gq + 2 * warp; /* entries of n8 blocks 2w, 2w + 1 (perm64) */
                    const uint8_t *sg = bp + XB + BT * WSB + (j * BT + tile) * (G::SBYTE ? 64 : 128);
                    if (G::SBYTE) { /* entries i, i + 1: one 2-byte load (i is even) */
                        const uint32_t raw = *(const uint16_t *)(sg + i);
                        sc[j][0] = hck_e8m0_pair(raw, 0), sc[j][1] = hck_e8m0_pair(raw, 1);
                    } else {
                        const uint32_t raw = *(const uint32_t *)(sg + 2 * i);
                        const uint32_t s0 = fastw4::conv16<CBF>(raw & 0xffffu, sbf), s1 = fastw4::conv16<CBF>(raw >> 16, sbf);
                        sc[j][0] = s0 | s0 << 16, sc[j][1] = s1 | s1 << 16;
                    }
                }
            /* the stage word of the tile's row rr: HCK_WG_STAGE_WORD(tile, rr), split into
             * the tile's base and the row's step */
            const uint32_t *wsm = (const uint32_t *)(bp + XB + 4 * HCK_WG_STAGE_WORD(tile, 0, BT, TB / 4)) + pofs;
#pragma unroll
            for (int rr = 0; rr < R; rr++) {
                uint32_t wv[G::RW];
                if (G::RW == 4) {
                    const uint4 v = *(const uint4 *)(wsm + HCK_WG_STAGE_WORD(0, rr, BT, TB / 4));
                    wv[0] = v.x, wv[1] = v.y, wv[G::RW > 2 ? 2 : 0] = v.z, wv[G::RW > 3 ? 3 : 0] = v.w;
                } else if (G::RW == 2) {
                    const uint2 v = *(const uint2 *)(wsm + HCK_WG_STAGE_WORD(0, rr, BT, TB / 4));
                    wv[0] = v.x, wv[G::RW > 1 ? 1 : 0] = v.y;
                } else {
                    wv[0] = wsm[HCK_WG_STAGE_WORD(0, rr, BT, TB / 4)];
                }
                const bool hi = two && rr * P >= 32; /* selects, not an index: sc stays in registers */
                decode_row<WF, CBF, TR>(wv, hi ? sc[1][0] : sc[0][0], hi ? sc[1][1] : sc[0][1], !SCALE_C,
                                        &afr[par][t][rr * (P / 16)]);
            }
        }
        const uint32_t xs = sbase + b * SST;
        if (Tok<NTOK>::SYNC) {
            /* the 16 tokens as two n8 blocks read from the swizzled rows with ldmatrix
             * (once for the warp's TPW tiles), then the stage's buffer is free */
#pragma unroll
            for (int s = 0; s < 4; s++) {
                uint32_t bx[4];
                fastw4::ldsm4(bx, smem + b * SST + HCK_SYNC16_LDSM_OFFSET(lane, s));
#pragma unroll
                for (int t = 0; t < TPW; t++) {
                    fastw4::mma16816<CBF>(acc[t], afr[par][t][s], bx[0], bx[1]);
                    if (hi8) fastw4::mma16816<CBF>(acc[t] + 4, afr[par][t][s], bx[2], bx[3]);
                }
            }
            if (lane == 0) mbar_arrive(empty + 8 * b);
        } else {
#pragma unroll
            for (int t = 0; t < TPW; t++) pin_a(afr[par][t]); /* every A register defined before the first wgmma */
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
            for (int s = 0; s < 4; s++)
#pragma unroll
                for (int t = 0; t < TPW; t++) wgmma_rs<NTOK, CBF>(acc[t], afr[par][t][s], desc_sw128(xs + 32 * s));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            if (st > 0 && lane == 0) mbar_arrive(empty + 8 * ((b + S - 1) % S));
        }
    };
    /* KW: stage buffer b (phase ph). mode (KW_POST): 0 the group scales
     * multiply each decoded weight pair; 1 and 2, the first and second stage of a
     * 128-k group: the codes (exact in 16 bits) go unscaled into the group's
     * fp32 sums ktmp (stage 1 starts them with C = 0), which stage 2 multiplies
     * by the group scales into acc, so a word's decode is 9 instructions, not
     * 13, and the products are not rounded to 16 bits after scaling. With KW2's
     * two blocks per warp (16 tokens and lo8), or with HCK_KW2=0 where every
     * block has at most 8 tokens (ktmp then takes acc's registers of tokens 8-15) */
    HCK_TL_WAITS(cwait);
    constexpr bool KW_POST = KW && HCK_KW_POST && (var_lo8(VAR) || KW2) && WF == small::W_U4A16 && !SCALE_C;
    constexpr int KTV = KW2 && !var_lo8(VAR) ? 8 : 4; /* group sums per n16 block: 16 tokens, or lo8's 8 */
    float ktmp[KNB][KTV] = {};
    /* the group scales of the warp's n16 blocks at scale area sg: entries 8 gq +
     * 2 i + {0, 1} are rows 16 i + gq and + 8 (perm64); KW2's two blocks are
     * entries 8 gq + 2 kblk0 + {0 .. 3}, one 8-byte load */
    auto kw_scale_words = [&](const uint8_t *sg, uint32_t *rw) {
        if constexpr (KNB == 4) {
            const uint4 raw = *(const uint4 *)(sg + 2 * HCK_KW_SCALE_ENTRY(lane, 0, 0));
            rw[0] = raw.x, rw[1] = raw.y, rw[2] = raw.z, rw[3] = raw.w;
        } else {
            const uint2 raw = *(const uint2 *)(sg + 2 * HCK_KW_SCALE_ENTRY(lane, kblk0, 0));
            rw[0] = raw.x, rw[1] = raw.y;
        }
    };
    /* sc[i]: block i's scales (row halves) as 16-bit pairs, from group grp of stage bp */
    auto kw_scales = [&](const uint8_t *bp, int grp, int tile, uint32_t (*sc)[2]) {
        const uint8_t *sg = bp + XB + BT * WSB + (grp * BT + tile) * (G::SBYTE ? 64 : 128);
        if constexpr (G::SBYTE) { /* 8 e8m0 bytes: entry (i, h) is byte 2 (i % 2) + h of word i / 2 */
            const uint2 raw = *(const uint2 *)(sg + HCK_KW_SCALE_ENTRY(lane, 0, 0));
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) sc[i][h] = hck_e8m0_pair(i < 2 ? raw.x : raw.y, 2 * (i % 2) + h);
        } else {
            uint32_t rw[KNB];
            kw_scale_words(sg, rw);
            if (sbf != (int)CBF) /* scales of the other 16-bit type (rare): a branch, not predicated */
#pragma unroll
                for (int i = 0; i < KNB; i++)
                    rw[i] = fastw4::conv16<CBF>(rw[i] & 0xffffu, sbf) | fastw4::conv16<CBF>(rw[i] >> 16, sbf) << 16;
#pragma unroll
            for (int i = 0; i < KNB; i++) sc[i][0] = __byte_perm(rw[i], 0, 0x1010), sc[i][1] = __byte_perm(rw[i], 0, 0x3232);
        }
    };
    auto compute_kw = [&](int b, int ph, auto mode) {
        constexpr int MODE = decltype(mode)::value;
        constexpr bool PS = MODE != 0;
        HCK_TL_TIMED_WAIT(cwait, mbar_wait(full + 8 * b, ph));
        const uint8_t *bp = smem + b * SST;
        const int row0 = KW2 ? 0 : HCK_KW_ROW(warp, 0, TPW, R), tile = wg * TPW + HCK_KW_TILE(warp, TPW);
        uint32_t sc[KNB][2] = {}; /* [n16 block][row half], as pairs */
        /* KW: the warp's rows lie in one group of 32 k; KW2's cross into the second at k 32 */
        if (!SCALE_C && !PS) kw_scales(bp, two ? row0 * P / 32 : 0, tile, sc);
        const uint32_t *wsm = (const uint32_t *)(bp + XB) + HCK_WG_STAGE_WORD(tile, row0, BT, TB / 4) +
                              HCK_KW_WORD(lane, kblk0, G::RW);
#pragma unroll
        for (int r = 0; r < KROWS; r++) {
            if (KW2 && !SCALE_C && !PS && r * P == 32 && two) kw_scales(bp, 1, tile, sc);
            uint32_t wv[KNB * G::RW]; /* n16 block i: words G::RW i + {0, 1} */
            if constexpr (KW2) { /* the lane's words of blocks kblk0, kblk0 + 1: adjacent */
                const uint2 v = *(const uint2 *)(wsm + HCK_WG_STAGE_WORD(0, r, BT, TB / 4));
                wv[0] = v.x, wv[1] = v.y;
            } else {
#pragma unroll
                for (int q = 0; q < G::RW; q++) {
                    const uint4 v = *(const uint4 *)(wsm + HCK_WG_STAGE_WORD(0, r, BT, TB / 4) + HCK_KW_WORD(0, 4 * q / G::RW, G::RW));
                    wv[4 * q] = v.x, wv[4 * q + 1] = v.y, wv[4 * q + 2] = v.z, wv[4 * q + 3] = v.w;
                }
            }
            uint32_t a[KNB][P / 16][4];
#pragma unroll
            for (int i = 0; i < KNB; i++) decode_row<WF, CBF, TR>(&wv[G::RW * i], sc[i][0], sc[i][1], !SCALE_C && !PS, a[i]);
            const int krow = KW2 ? r : HCK_KW_ROW(warp, r, TPW, R);
#pragma unroll
            for (int s = 0; s < P / 16; s++) { /* k16 step s of the row */
                uint32_t bx[4];
                fastw4::ldsm4(bx, smem + b * SST + HCK_SYNC16_LDSM_OFFSET(lane, krow * (P / 16) + s));
#pragma unroll
                for (int i = 0; i < KNB; i++) {
                    if (MODE == 1 && r == 0 && s == 0) {
                        fastw4::mma16816_zc<CBF>(ktmp[i], a[i][s], bx[0], bx[1]);
                        if constexpr (KTV == 8) /* without tokens 8-15 their sums stay 0 */
                            if (hi8) fastw4::mma16816_zc<CBF>(ktmp[i] + 4, a[i][s], bx[2], bx[3]);
                    } else if (PS) {
                        fastw4::mma16816<CBF>(ktmp[i], a[i][s], bx[0], bx[1]);
                        if constexpr (KTV == 8)
                            if (hi8) fastw4::mma16816<CBF>(ktmp[i] + 4, a[i][s], bx[2], bx[3]);
                    } else {
                        fastw4::mma16816<CBF>(acc[i], a[i][s], bx[0], bx[1]);
                        if (hi8) fastw4::mma16816<CBF>(acc[i] + 4, a[i][s], bx[2], bx[3]);
                    }
                }
            }
        }
        if (MODE == 2) { /* the group's scales (rows 16 i + gq and + 8) times its sums, in fp32 */
            uint32_t rw[KNB];
            kw_scale_words(bp + XB + BT * WSB + tile * 128, rw);
#pragma unroll
            for (int i = 0; i < KNB; i++) {
                const float s0 = h2f((uint16_t)(rw[i] & 0xffffu), sbf), s1 = h2f((uint16_t)(rw[i] >> 16), sbf);
#pragma unroll
                for (int v = 0; v < KTV; v += 4) { /* tokens 8 (v / 4) + 2 tq + {0, 1} */
                    acc[i][v] = fmaf(ktmp[i][v], s0, acc[i][v]), acc[i][v + 1] = fmaf(ktmp[i][v + 1], s0, acc[i][v + 1]);
                    acc[i][v + 2] = fmaf(ktmp[i][v + 2], s1, acc[i][v + 2]);
                    acc[i][v + 3] = fmaf(ktmp[i][v + 3], s1, acc[i][v + 3]);
                }
            }
        }
        if (lane == 0) mbar_arrive(empty + 8 * b);
    };
    using kw_std = std::integral_constant<int, 0>;
    using kw_first = std::integral_constant<int, 1>;
    using kw_second = std::integral_constant<int, 2>;
    /* fp8 (V_F8): a stage's two k32 wgmmas accumulate into tmp, which is
     * promoted into acc (times the group scale) once per stage pair, so fp32 adds
     * every 128 k (the fp8 tensor cores keep fewer accumulator bits); the even stage
     * waits for the previous pair before it overwrites tmp, the other consumer
     * warpgroup keeps the tensor cores busy meanwhile. Two halves: tmp
     * holds one half of the warpgroup's accumulators at a time (acc 128 + tmp 64
     * registers fit, a second 128-register set would not): with 256 tokens the
     * pair's A registers, decoded once, run tokens 0-127 and then 128-255, so a
     * weight byte's decode serves twice the products; with two tiles (V_F8W) the
     * stage's activations run tile 0 and then tile 1 (decoded once the first
     * tile's wgmmas are done), as the 16-bit wide form. */
    constexpr int H = NTOK / 128 * TPW;
    float tmp[64];
#pragma unroll
    for (int i = 0; i < 64; i++) tmp[i] = 0.0f;
    float ps[2] = {1.0f, 1.0f}, pn[2] = {1.0f, 1.0f}; /* promotion scales (rows gq, gq + 8): pair in tmp, next */
    uint32_t a8[2][2][4];                              /* [stage parity][tile row] A registers */
    auto promote = [&](auto half) { /* tmp (half `half`: tokens or tile) into acc */
        if constexpr (G::F8) {
            constexpr int h = decltype(half)::value, t = TPW == 2 ? h : 0, o = TPW == 2 ? 0 : 64 * h;
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            fence_acc<128>(tmp);
#pragma unroll
            for (int i = 0; i < 64; i++) acc[t][o + i] = fmaf(tmp[i], ps[(i >> 1) & 1], acc[t][o + i]);
        }
    };
    using last_half = std::integral_constant<int, H - 1>;
    /* tile `tile` of stage bp into a8[par]: fp4 tables per tile row, or (W4A8,
     * first stage of a pair: a group covers the pair, group_size % 128 == 0) pn */
    auto decode8 = [&](int tile, const uint8_t *bp, int par) {
        const uint8_t *sg = bp + XB + BT * WSB;
        const int i = 8 * gq + 2 * warp; /* scale entries of rows gq, gq + 8 (perm64) */
        uint32_t tb[2][2][2] = {};       /* fp4 tables [tile row][row half] */
        if (WF == small::W_FP4A8) {
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const uint8_t *sj = sg + ((two ? j : 0) * BT + tile) * 64;
                hck_fp4_e4m3_table(sj[i], tb[j][0]);
                hck_fp4_e4m3_table(sj[i + 1], tb[j][1]);
            }
        } else if (!SCALE_C && par == 0) {
            const uint32_t raw = *(const uint32_t *)(sg + tile * 128 + 2 * i);
            pn[0] = h2f((uint16_t)(raw & 0xffffu), sbf), pn[1] = h2f((uint16_t)(raw >> 16), sbf);
        }
        const uint32_t *wsm = (const uint32_t *)(bp + XB + 4 * HCK_WG_STAGE_WORD(tile, 0, BT, TB / 4)) + pofs;
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            const uint2 v = *(const uint2 *)(wsm + HCK_WG_STAGE_WORD(0, rr, BT, TB / 4));
            const uint32_t wv[2] = {v.x, v.y};
            hck_f8_fragment(wv, WF == small::W_FP4A8, TR, tb[rr][0], tb[rr][1], a8[par][rr]);
        }
    };
    /* a[2][4] pinned, then one stage's two k32 wgmmas on the activations at x into
     * tmp, one commit group; first = 0 overwrites tmp (a new promotion round) */
    using zero = std::integral_constant<int, 0>;
    using one = std::integral_constant<int, 1>;
    auto mma8 = [&](auto first, uint32_t (*a)[4], uint32_t x) {
        if constexpr (G::F8) {
            pin_a8(a);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            wgmma_e4m3_n128<decltype(first)::value>(tmp, a[0], desc_sw64(x));
            wgmma_e4m3_n128<1>(tmp, a[1], desc_sw64(x + 32));
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        }
    };
    auto compute8 = [&](int st, int par, int b, int ph) {
        if constexpr (G::F8) {
            mbar_wait(full + 8 * b, ph);
            if (H == 2 && par == 0) { /* the previous pair's last wgmmas read a8: wait first (at st = 0
                                          * tmp is zero: an unconditional wait keeps ptxas's wgmma pipeline whole) */
                promote(last_half{});
                if (lane == 0 && st > 0)
                    mbar_arrive(empty + 8 * ((b + S - 1) % S)), mbar_arrive(empty + 8 * ((b + S - 2) % S));
            }
            const uint8_t *bp = smem + b * SST;
            decode8(wg * TPW, bp, par);
            if (H == 1 && par == 0 && st > 0) { /* the previous pair's wgmmas are done: into acc */
                promote(last_half{});
                if (lane == 0) mbar_arrive(empty + 8 * ((b + S - 1) % S));
            }
            if (par == 0) ps[0] = pn[0], ps[1] = pn[1];
            const uint32_t xs = sbase + b * SST;
            if (par == 0) mma8(zero{}, a8[0], xs); /* a new pair overwrites tmp */
            else mma8(one{}, a8[1], xs);
            if (H == 1 && par == 1) { /* the pair's first stage is done */
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (lane == 0) mbar_arrive(empty + 8 * ((b + S - 1) % S));
            }
            if (H == 2 && par == 1) { /* first half into acc, then the pair's second half */
                promote(zero{});
                const int b0 = (b + S - 1) % S;
                if constexpr (TPW == 2) { /* the second tile's A, stage by stage, on the same rows */
                    const uint32_t xs0 = sbase + b0 * SST;
                    decode8(wg * TPW + 1, smem + b0 * SST, 0);
                    ps[0] = pn[0], ps[1] = pn[1];
                    mma8(zero{}, a8[0], xs0);
                    decode8(wg * TPW + 1, bp, 1);
                    mma8(one{}, a8[1], xs);
                } else { /* 256 tokens: the same A on rows 128-255 of the stages */
                    const uint32_t xs0 = sbase + b0 * SST + 128 * 64, xs1 = xs + 128 * 64;
                    pin_a8(a8[0]), pin_a8(a8[1]);
                    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                    wgmma_e4m3_n128<0>(tmp, a8[0][0], desc_sw64(xs0));
                    wgmma_e4m3_n128<1>(tmp, a8[0][1], desc_sw64(xs0 + 32));
                    wgmma_e4m3_n128<1>(tmp, a8[1][0], desc_sw64(xs1));
                    wgmma_e4m3_n128<1>(tmp, a8[1][1], desc_sw64(xs1 + 32));
                    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                }
            }
        }
    };
    if constexpr (G::F8) {
        static_assert(H <= 2 && (NTOK == 128 || NTOK == 256), "the fp8 variant: 128 or 256 tokens, at most two halves");
        for (int kt = 0; kt < nst; kt += 2) {
            compute8(kt, 0, kt % S, (kt / S) & 1);
            compute8(kt + 1, 1, (kt + 1) % S, ((kt + 1) / S) & 1);
        }
        promote(last_half{});
    } else if (KW) {
        HCK_TL_FIRST_STAGE(full);
        auto kw_ring = [&](auto post) { /* post: a 128-k group per stage pair (sa, nst and S are even) */
            constexpr bool PO = decltype(post)::value;
            for (int k0 = 0; k0 < nst; k0 += S) {
                const int ph = (k0 / S) & 1;
#pragma unroll
                for (int u = 0; u < S; u += PO ? 2 : 1) {
                    if (k0 + u >= nst) break;
                    if constexpr (PO) compute_kw(u, ph, kw_first{}), compute_kw(u + 1, ph, kw_second{});
                    else compute_kw(u, ph, kw_std{});
                }
            }
        };
        if (KW_POST && d.group_size == 128) kw_ring(std::integral_constant<bool, KW_POST>{});
        else kw_ring(std::false_type{});
    } else if (Tok<NTOK>::SYNC && HCK_SYNC_UNROLL) {
        /* a ring turn per iteration: buffer offsets are constants */
        for (int k0 = 0; k0 < nst; k0 += S) {
            const int ph = (k0 / S) & 1;
#pragma unroll
            for (int u = 0; u < S; u += 2) {
                if (k0 + u >= nst) break;
                compute(k0 + u, 0, u, ph);
                compute(k0 + u + 1, 1, u + 1, ph);
            }
        }
    } else {
        for (int kt = 0; kt < nst; kt += 2) {
            compute(kt, 0, kt % S, (kt / S) & 1);
            compute(kt + 1, 1, (kt + 1) % S, ((kt + 1) / S) & 1);
        }
    }
    HCK_TL_STAMP(TL_LOOP);
    HCK_TL_SAVE(cwait, 2, tid == 0);
    /* before the staging, which hides it; 16 tokens only (the 64-token kernels spill with it) */
    if (Tok<NTOK>::SYNC && p.sum_mode == HCK_SUM_POLL && splits > 1)
        poll_prefetch(p, ws, r0, mrows, (int64_t)blockIdx.x * BT * 64, BT * 16, offsets[d.E] * d.N, split, splits, tid,
                      NWG * 128);
    if (!Tok<NTOK>::SYNC && !G::F8) {
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
        for (int t = 0; t < TPW; t++) fence_acc<NTOK>(acc[t]);
    }

    /* epilogue, per tile: the accumulators (rows n0 = 16 w + gq and n0 + 8,
     * tokens 8 j + 2 tq + {0, 1}) times the channel scale are staged as fp32
     * [token][EST] in the ring, which every consumer has left (named barrier 1),
     * then each thread takes 4 consecutive columns of one token per pass: the token
     * scale, then 16-byte stores of partial sums or 8-byte stores of outputs with
     * bias (the same arithmetic in the same order as per-element stores, which
     * would take 20-25% of the fp8 kernels' stall samples at M >= 128). A
     * warpgroup with no tile (odd tile count, last block) stores nothing but
     * stays for the named barriers, which count every consumer thread. */
    const int tq = lane % 4, tl = tid % 128, nl = 4 * (tl % 16);
    const int64_t Mtot = offsets[d.E];
    /* the powers of two the decoders leave out (fp8: x * 2^-9, fp4 * 2^-6) */
    const float pow2 = G::F8 ? (WF == small::W_FP4A8 ? 64.0f : 512.0f)
                             : WF == small::W_FP4A8 ? 16384.0f : WF == small::W_FP8A8 ? 256.0f : 1.0f;
    const float gscale = pow2 * (d.global_count == 0 ? 1.0f : p.gl[d.global_count == 1 ? 0 : e]);
    constexpr int EST = HCK_EPI_STRIDE; /* staging row stride (floats): the quad's four tokens on distinct banks */
    static_assert((size_t)NWG * NTOK * (EST + 1) * 4 <= (size_t)S * SST, "the staged tiles fit the ring");
    /* the warpgroup's staging area, then its copy of the token scales (one load
     * per token up front: a load per pass would leave each thread waiting out one
     * L2 round trip per token) */
    float *stg = (float *)smem + wg * NTOK * (EST + 1), *tsm = stg + NTOK * EST;
    const bool v4 = (d.N & 3) == 0 && ((uintptr_t)y & 7) == 0; /* rows of y and ws 8- and 16-byte aligned */
    /* the channel scale of column n of tile nb (times gscale) */
    auto chan_scale = [&](int nb, int64_t n) {
        float cs = gscale;
        if (SCALE_C && nb < ntiles)
            cs *= h2f(((const uint16_t *)p.s)[(int64_t)e * d.Np + (n / 32) * 32 + inv_perm(32, (int)(n % 32))], sbf);
        return cs;
    };
    /* KW: tile t's staging area, after the warpgroups' own (the token scales stay put) */
    auto kw_stage = [&](int t) { return (float *)smem + (NWG + wg * TPW + t) * NTOK * (EST + 1); };
    static_assert(!KW || (size_t)NWG * (1 + TPW) * NTOK * (EST + 1) * 4 <= (size_t)S * SST, "KW staging fits the ring");
    asm volatile("bar.sync 1, %0;" ::"n"(NWG * 128) : "memory");
    if (KW) { /* each tile's k slices: the first stores, the others add in turn (KW2: one pass, by block) */
        const int kslice = warp / TPW, nb = blockIdx.x * BT + wg * TPW + HCK_KW_TILE(warp, TPW);
        float *kst = kw_stage(HCK_KW_TILE(warp, TPW)), cs[KNB][2];
#pragma unroll
        for (int i = 0; i < KNB; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) cs[i][h] = chan_scale(nb, (int64_t)nb * 64 + 16 * (kblk0 + i) + gq + 8 * h);
        if (tok_scale)
            for (int i = tl; i < mrows; i += 128) tsm[i] = tok_scale[r0 + i];
#pragma unroll
        for (int pass = 0; pass < (KW2 ? 1 : 4 / TPW); pass++) {
            if (KW2 || kslice == pass)
#pragma unroll
                for (int j = 0; j < NTOK / 8; j++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
#pragma unroll
                        for (int i = 0; i < KNB; i++) {
                            float *dst = kst + HCK_EPI_STAGE_INDEX(j, c, kblk0 + i, gq, tq);
                            const float v = acc[i][4 * j + c] * cs[i][c >> 1];
                            *dst = pass ? *dst + v : v;
                        }
            asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
        }
    }
    HCK_TL_STAMP(TL_STAGED);
    /* 128 and 256 tokens, one tile per warpgroup: with two splits the block's
     * two tiles stay staged (warpgroup w's at its own area) and the splits sum
     * over the cluster as KW does, in place of partials in global memory (a
     * quarter of the kernel's time at 8192^2 M = 128, timeline) */
    constexpr bool BIG_CSUM = Tok<NTOK>::BIG && TPW == 1 && !KW;
    if (KW && p.sum_mode == HCK_SUM_CLUSTER && splits > 1) { /* launched as clusters of the splits */
        cluster_sync();                        /* every split's tiles staged */
        HCK_TL_STAMP(TL_SYNCED);
        cluster_split_sum(p, e, sbase + 4u * (uint32_t)(NWG * NTOK * (EST + 1)), NTOK * (EST + 1), BT,
                          tok_scale ? tsm : nullptr, y, r0, mrows, blockIdx.x * BT, ntiles, split, splits, tid,
                          NWG * 128);
        cluster_sync(); /* the peers are done reading this CTA's tiles */
        return;
    }
#pragma unroll
    for (int t = 0; t < TPW; t++) {
        const int nb = blockIdx.x * BT + wg * TPW + t;
        float *src = stg;
        if (KW) {
            src = kw_stage(t);
        } else {
            float cs[2];
#pragma unroll
            for (int h = 0; h < 2; h++) cs[h] = chan_scale(nb, (int64_t)nb * 64 + 16 * warp + gq + 8 * h);
            if (t > 0) asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory"); /* tile t - 1 read */
            else if (tok_scale)
                for (int i = tl; i < mrows; i += 128) tsm[i] = tok_scale[r0 + i];
#pragma unroll
            for (int j = 0; j < NTOK / 8; j++)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    stg[HCK_EPI_STAGE_INDEX(j, c, warp, gq, tq)] = acc[t][4 * j + c] * cs[c >> 1];
            asm volatile("bar.sync %0, 128;" ::"r"(2 + wg) : "memory");
            if (BIG_CSUM && p.sum_mode == HCK_SUM_CLUSTER && splits > 1) break; /* summed below */
        }
        const int64_t n = (int64_t)nb * 64 + nl;
        if (nb >= ntiles || n >= d.N) continue;
        float bs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (splits == 1)
#pragma unroll
            for (int c = 0; c < 4; c++) bs[c] = n + c < d.N ? bias_at(p, e, n + c) : 0.0f;
        for (int ml = tl / 16; ml < mrows; ml += 8) {
            float4 v = *(const float4 *)(src + HCK_EPI_READ_INDEX(ml, nl));
            if (tok_scale) {
                const float ts = tsm[ml];
                v.x *= ts, v.y *= ts, v.z *= ts, v.w *= ts;
            }
            const float vv[4] = {v.x, v.y, v.z, v.w};
            if (splits > 1) {
                float *dst = ws + ((int64_t)split * Mtot + r0 + ml) * d.N + n;
                if (!Tok<NTOK>::BIG && p.sum_mode == HCK_SUM_POLL) st_relaxed_f4(dst, v); /* v4 */
                else if (v4) *(float4 *)dst = v;
                else
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        if (n + c < d.N) dst[c] = vv[c];
            } else {
                HCK_STORE_OUT4(y + (r0 + ml) * d.N + n, vv[c] + bs[c]);
            }
        }
    }
    if (BIG_CSUM && p.sum_mode == HCK_SUM_CLUSTER && splits > 1) {
        cluster_sync(); /* every split's tiles staged */
        cluster_split_sum(p, e, sbase, NTOK * (EST + 1), BT, tok_scale ? (const float *)smem + NTOK * EST : nullptr,
                          y, r0, mrows, blockIdx.x * BT, ntiles, split, splits, tid, NWG * 128);
        cluster_sync(); /* the peers are done reading this CTA's tiles */
        return;
    }
    if (splits == 1) return;
    if (!Tok<NTOK>::BIG && p.sum_mode == HCK_SUM_POLL) { /* no fence, no counter (128 and 256 tokens
                                                            * spill with it) */
        HCK_TL_STAMP(TL_FENCED); /* here: the partials stored */
        poll_split_sum(p, e, ws, y, r0, mrows, (int64_t)blockIdx.x * BT * 64, BT * 16, Mtot * d.N, split, splits,
                       tid, NWG * 128);
        return;
    }
    /* the last block of this tile to arrive sums the partials in split order (as
     * the small-M kernel; the producer warpgroup has left: a named barrier) */
    __shared__ int s_last;
    __threadfence();
    asm volatile("bar.sync 1, %0;" ::"n"(NWG * 128) : "memory");
    HCK_TL_STAMP(TL_FENCED);
    int *ctr = p.counters + ((int64_t)e * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    if (p.sum_mode == HCK_SUM_COOP) { /* every split resident; each sums a share of the columns */
        coop_split_sum<Tok<NTOK>::BIG ? 4 : 1>(p, e, ws, y, r0, mrows, (int64_t)blockIdx.x * BT * 64, BT * 16,
                                                Mtot * d.N, ctr, split, splits, tid, NWG * 128);
        return;
    }
    if (tid == 0) s_last = atomicAdd(ctr, 1) == splits - 1;
    asm volatile("bar.sync 1, %0;" ::"n"(NWG * 128) : "memory");
    HCK_TL_STAMP(TL_SYNCED);
    if (!s_last) return;
    __threadfence();
    /* four groups per thread where registers allow (16 and 64 tokens: 2-3 blocks
     * per SM, they spill with four; 8 loads in flight instead of 4 at 16 tokens
     * gained nothing) */
    split_sum<Tok<NTOK>::BIG ? 4 : 1>(p, e, ws, y, r0, mrows, (int64_t)blockIdx.x * BT * 64, BT * 64, Mtot * d.N, splits, tid, NWG * 128);
    if (tid == 0) *ctr = 0;
#endif
}

/* The instantiated variants, by (format, bf16 compute, scale on C, transposed,
 * tokens, variant); nullptr: none. V_WIDE exists for 4-bit weights at 128
 * tokens; V_F8 at 128 and 256 tokens and V_F8W at 128 for uint4 x fp8 (fp16
 * compute) and MXFP4 x fp8. */
using WgFn = void (*)(const CUtensorMap, const CUtensorMap, Dev, const float *, const int64_t *, uint16_t *, int,
                      float *);
template <int WF, bool CBF, int NTOK, int V>
inline WgFn wg_fn_sc_tr(bool sc, bool tr)
{
    if (sc) return tr ? wg_kernel<WF, CBF, true, true, NTOK, V> : wg_kernel<WF, CBF, true, false, NTOK, V>;
    return tr ? wg_kernel<WF, CBF, false, true, NTOK, V> : wg_kernel<WF, CBF, false, false, NTOK, V>;
}
template <int WF, int NTOK, int V>
inline WgFn wg_fn_of(bool cbf, bool sc, bool tr)
{
    return cbf ? wg_fn_sc_tr<WF, true, NTOK, V>(sc, tr) : wg_fn_sc_tr<WF, false, NTOK, V>(sc, tr);
}
template <int NTOK, int V>
inline WgFn wg_fn_n(int wf, bool cbf, bool sc, bool tr)
{
    if constexpr (var_quad(V)) { /* uint4 x 16-bit only */
        return wf == small::W_U4A16 ? wg_fn_of<small::W_U4A16, NTOK, V>(cbf, sc, tr) : nullptr;
    } else {
        switch (wf) {
        case small::W_U4A16:
            if constexpr (var_f8(V)) return nullptr;
            else return wg_fn_of<small::W_U4A16, NTOK, V>(cbf, sc, tr);
        case small::W_U4A8:
            if constexpr (var_f8(V)) return cbf ? nullptr : wg_fn_sc_tr<small::W_U4A8, false, NTOK, V>(sc, tr);
            else return wg_fn_of<small::W_U4A8, NTOK, V>(cbf, sc, tr);
        case small::W_FP4A8: return cbf || sc || tr ? nullptr : wg_kernel<small::W_FP4A8, false, false, false, NTOK, V>;
        case small::W_FP8A8: /* lo8 did not speed up W8A8: the standard kernel only */
            return cbf || V != V_STD ? nullptr : wg_fn_sc_tr<small::W_FP8A8, false, NTOK, V_STD>(sc, tr);
        }
        return nullptr;
    }
}
inline WgFn wg_fn(int wf, bool cbf, bool sc, bool tr, int ntok, int var)
{
    switch (ntok) {
    case 16:
        return var == V_STD ? wg_fn_n<16, V_STD>(wf, cbf, sc, tr) : var == V_LO8 ? wg_fn_n<16, V_LO8>(wf, cbf, sc, tr)
             : var == V_QUAD ? wg_fn_n<16, V_QUAD>(wf, cbf, sc, tr)
             : var == V_QUAD_LO8 ? wg_fn_n<16, V_QUAD_LO8>(wf, cbf, sc, tr) : nullptr;
    case 64: return var ? nullptr : wg_fn_n<64, V_STD>(wf, cbf, sc, tr);
    case 128:
        return var == V_F8 ? wg_fn_n<128, V_F8>(wf, cbf, sc, tr) : var == V_F8W ? wg_fn_n<128, V_F8W>(wf, cbf, sc, tr)
             : var == V_WIDE ? wg_fn_n<128, V_WIDE>(wf, cbf, sc, tr) : wg_fn_n<128, V_STD>(wf, cbf, sc, tr);
    case 256: return var == V_F8 ? wg_fn_n<256, V_F8>(wf, cbf, sc, tr) : var != V_STD ? nullptr : wg_fn_n<256, V_STD>(wf, cbf, sc, tr);
    }
    return nullptr;
}
/* Host view of a variant's shape: 64-column tiles per block, dynamic shared memory. */
struct WgShape {
    int tiles;
    size_t smem;
};
template <int NTOK, int V>
inline WgShape wg_shape_n(int wf)
{
    switch (wf) {
    case small::W_U4A16: return {Geo<small::W_U4A16, NTOK, V>::BT, smem_bytes<small::W_U4A16, NTOK, V>()};
    case small::W_U4A8: return {Geo<small::W_U4A8, NTOK, V>::BT, smem_bytes<small::W_U4A8, NTOK, V>()};
    case small::W_FP4A8: return {Geo<small::W_FP4A8, NTOK, V>::BT, smem_bytes<small::W_FP4A8, NTOK, V>()};
    default: return {Geo<small::W_FP8A8, NTOK, V_STD>::BT, smem_bytes<small::W_FP8A8, NTOK, V_STD>()};
    }
}
/* the shape of format wf's variant var for ntok tokens */
inline WgShape wg_shape(int wf, int ntok, int var)
{
    switch (ntok) {
    case 16: return var_quad(var) ? wg_shape_n<16, V_QUAD>(wf) : wg_shape_n<16, V_STD>(wf); /* lo8: as std */
    case 64: return wg_shape_n<64, V_STD>(wf);
    case 128:
        return var == V_F8 ? wg_shape_n<128, V_F8>(wf) : var == V_F8W ? wg_shape_n<128, V_F8W>(wf)
             : var == V_WIDE ? wg_shape_n<128, V_WIDE>(wf) : wg_shape_n<128, V_STD>(wf);
    default: return var == V_F8 ? wg_shape_n<256, V_F8>(wf) : wg_shape_n<256, V_STD>(wf);
    }
}
}  // namespace hopper
