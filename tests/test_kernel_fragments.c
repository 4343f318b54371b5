/* test_kernel_fragments.c - the register-level claims the GPU small-M kernel
 * (kernels/hc_kernels.cu, namespace small) and the Hopper wgmma kernel
 * (kernels/hc_wgmma.cuh; docs/kernels.md) make about the tile layout, checked
 * on the CPU so that CI without a GPU still guards them.
 *
 * The kernel feeds mma.m16n8k16 B fragments straight from a lane's words: for
 * n8 block c and k16 step st, register b0 holds B[k = 2t, 2t + 1][n = g] and b1
 * holds B[k = 2t + 8, 2t + 9][n = g] (lane = 4 g + t, low half first). With
 * 8-bit activations a 32-k tile row is two steps and the activations are
 * stored de-interleaved per 16-k block (position p < 8 holds k = 2p, p >= 8
 * holds 2 (p - 8) + 1), so virtual k p of a step is real k deint(p). This test
 * repacks random codes with the library (hc_repack_weight, itself checked
 * against the spec in test_layout.c), then, for every (tile row, tile, lane,
 * block, step, register half), extracts the code exactly where the kernel
 * reads it and compares it with the code at the (n, k) the mma multiplies it
 * with. A wrong word, nibble, byte or k order fails. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_layout_ops.h"
#include "hc_repack.h"
#include "../kernels/hc_kernels.h"

enum { U4A16, U4A8, FP8A8 }; /* the kernel's placement families (W_FP4A8 uses U4A8's) */

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Row-packs codes (N, K) into (N, K*b/32) little-endian bit streams (spec 3). */
static uint32_t *pack_rows(const uint8_t *codes, int64_t N, int64_t K, int b)
{
    const int64_t rw = K * b / 32;
    uint32_t *w = calloc((size_t)(N * rw), sizeof *w);
    assert_non_null(w);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            w[n * rw + k * b / 32] |= (uint32_t)codes[n * K + k] << (k * b % 32);
    return w;
}

/* virtual k of a 16-k step -> real k offset inside the step */
static int real_k(int fam, int p)
{
    if (fam == U4A16) return p;
    return p < 8 ? 2 * p : 2 * (p - 8) + 1;
}

/* The lane's words of one tile row, in the kernel's order (Fmt<WF>::piece). */
static void lane_words(int fam, const uint32_t *tile, int lane, uint32_t *wv)
{
    if (fam == U4A16) {
        for (int i = 0; i < 4; i++) wv[i] = tile[lane * 4 + i];
    } else if (fam == U4A8) {
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < 4; i++) wv[4 * q + i] = tile[q * 128 + lane * 4 + i];
    } else {
        for (int q = 0; q < 4; q++)
            for (int i = 0; i < 4; i++) wv[4 * q + i] = tile[(q / 2) * 256 + lane * 8 + (q % 2) * 4 + i];
    }
}

typedef struct { /* where one B register half comes from */
    uint32_t word;
    int field, width; /* nibble or byte index, bits */
} src_t;

/* The kernel's source of register half h (0 low, 1 high) of b (0: b0, 1: b1)
 * for n8 block c and step st; returns 0 if the kernel issues no such mma. */
static int kernel_source(int fam, int tr, const uint32_t *wv, int c, int st, int b, int h, src_t *s)
{
    if (fam == U4A16) { /* word i3 = c / 2; nibble pairs q[i] = (i, i + 4) */
        if (st != 0) return 0;
        const int i4 = c % 2;
        /* i4 = 0: (q0, tr ? q2 : q1); i4 = 1: (tr ? q1 : q2, q3) */
        const int pair = i4 == 0 ? (b == 0 ? 0 : (tr ? 2 : 1)) : (b == 0 ? (tr ? 1 : 2) : 3);
        *s = (src_t){wv[c / 2], pair + 4 * h, 4};
        return 1;
    }
    if (fam == U4A8) { /* b0 = q[st], b1 = q[2 + st] of word c; transposed: word c & ~1 + st */
        if (!tr) {
            *s = (src_t){wv[c], (b == 0 ? st : 2 + st) + 4 * h, 4};
        } else {
            const int i4 = c % 2; /* (q0, q2) for the even block, (q1, q3) for the odd one */
            *s = (src_t){wv[(c & ~1) + st], (b == 0 ? i4 : 2 + i4) + 4 * h, 4};
        }
        return 1;
    }
    const int wi = tr ? 8 * (c / 4) + 4 * ((c / 2) % 2) + 2 * st + c % 2 : 2 * c + st;
    *s = (src_t){wv[wi], b + 2 * h, 8}; /* b0 = bytes (0, 2), b1 = bytes (1, 3) */
    return 1;
}

typedef struct { /* random codes (N, K) of a family and their repacked tile rows */
    int bits, P;
    int64_t N, K, row_words, tile_words;
    uint8_t *codes;
    uint32_t *out;
} tiles_t;

static tiles_t make_tiles(int fam, int tr)
{
    const int a = fam == U4A16 ? 16 : 8, bits = fam == FP8A8 ? 8 : 4, P = 256 / a;
    const int64_t N = 128, K = 3 * (int64_t)P * (a == 8 ? 2 : 4); /* K % (512 / a) == 0 */
    tiles_t t = {bits, P, N, K, N * P * bits / 32, 2 * P * bits, malloc((size_t)(N * K)), NULL};
    assert_non_null(t.codes);
    for (int64_t i = 0; i < N * K; i++) t.codes[i] = (uint8_t)(next_u32() & ((1u << bits) - 1));
    uint32_t *in = pack_rows(t.codes, N, K, bits);
    t.out = calloc((size_t)(N * K * bits / 32), sizeof *t.out);
    assert_non_null(t.out);
    hc_repack_params p = {.bits = bits, .act_bits = a, .transposed = tr, .E = 1, .N = N, .K = K};
    hc_error err = {0};
    assert_int_equal(hc_repack_weight(&p, in, t.out, &err), HC_OK);
    free(in);
    return t;
}

static void check_family(int fam, int tr)
{
    tiles_t T = make_tiles(fam, tr);
    const int P = T.P;
    const int64_t N = T.N, K = T.K, row_words = T.row_words, tile_words = T.tile_words;
    const uint8_t *codes = T.codes;
    const uint32_t *out = T.out;
    int64_t checked = 0, bad = 0;
    for (int64_t kb = 0; kb < K / P; kb++)
        for (int64_t nb = 0; nb < N / 64; nb++)
            for (int lane = 0; lane < 32; lane++) {
                uint32_t wv[16];
                lane_words(fam, out + kb * row_words + nb * tile_words, lane, wv);
                const int g = lane / 4, t = lane % 4;
                for (int c = 0; c < 8; c++)
                    for (int st = 0; st < P / 16; st++)
                        for (int b = 0; b < 2; b++)
                            for (int h = 0; h < 2; h++) {
                                src_t s;
                                if (!kernel_source(fam, tr, wv, c, st, b, h, &s)) continue;
                                const uint32_t got = (s.word >> (s.field * s.width)) & ((1u << s.width) - 1);
                                const int vk = 2 * t + 8 * b + h; /* virtual k of the step */
                                const int64_t n = 64 * nb + 8 * c + g;
                                const int64_t k = P * kb + 16 * st + real_k(fam, vk);
                                bad += got != codes[n * K + k];
                                checked++;
                            }
            }
    /* every code of the matrix is read exactly once */
    assert_int_equal(checked, N * K);
    assert_int_equal(bad, 0);
    free(T.codes), free(T.out);
}

/* uint4 x 16-bit A register r of a word: nibble pair (i, i + 4) u4a16_pair[tr][r],
 * a = {q0, tr ? q1 : q2, tr ? q2 : q1, q3} (hopper::decode_row) */
static const int u4a16_pair[2][4] = {{0, 2, 1, 3}, {0, 1, 2, 3}};

/* The wgmma kernel (hopper::decode_row) runs y^T = W x^T: warp w of a
 * warpgroup reads its words of a tile row at Geo::piece and builds the A
 * fragment of rows n = 16 w + g (+ 8 for registers 1, 3), k = 2t (+ 8 for
 * registers 2, 3) of each step. Source of register r, half h: */
static src_t wgmma_source_at(int fam, int tr, const uint32_t *wv, int st, int r, int h)
{
    const int row8 = r % 2, khi = r / 2;
    if (fam == U4A16) /* one word */
        return (src_t){wv[0], u4a16_pair[tr][r] + 4 * h, 4};
    if (fam == U4A8) /* two words: normal a[st] = {q0[st], q1[st], q0[st+2], q1[st+2]}; tr a[st][r] = q_st[r] */
        return tr ? (src_t){wv[st], r + 4 * h, 4} : (src_t){wv[row8], st + 2 * khi + 4 * h, 4};
    /* four words: u = wv[tr ? 2 st : st], v = wv[tr ? 2 st + 1 : 2 + st]; a = {u0, v0, u1, v1} of byte pairs */
    const int wi = row8 == 0 ? (tr ? 2 * st : st) : (tr ? 2 * st + 1 : 2 + st);
    return (src_t){wv[wi], khi + 2 * h, 8};
}

/* the same for warp w's piece of a tile row (spec 4.4 closed forms, Geo::piece) */
static src_t wgmma_source(int fam, int tr, const uint32_t *tile, int w, int lane, int st, int r, int h)
{
    const int64_t at = fam == U4A16 ? lane * 4 + w
                     : fam == U4A8  ? (w / 2) * 128 + lane * 4 + 2 * (w % 2)
                                    : (w / 2) * 256 + lane * 8 + (w % 2) * 4;
    return wgmma_source_at(fam, tr, tile + at, st, r, h);
}

static void check_wgmma_family(int fam, int tr)
{
    tiles_t T = make_tiles(fam, tr);
    int64_t checked = 0, bad = 0;
    for (int64_t kb = 0; kb < T.K / T.P; kb++)
        for (int64_t nb = 0; nb < T.N / 64; nb++)
            for (int w = 0; w < 4; w++)
                for (int lane = 0; lane < 32; lane++)
                    for (int st = 0; st < T.P / 16; st++)
                        for (int r = 0; r < 4; r++)
                            for (int h = 0; h < 2; h++) {
                                const src_t s = wgmma_source(fam, tr, T.out + kb * T.row_words + nb * T.tile_words,
                                                             w, lane, st, r, h);
                                const uint32_t got = (s.word >> (s.field * s.width)) & ((1u << s.width) - 1);
                                const int64_t n = 64 * nb + 16 * w + lane / 4 + 8 * (r % 2);
                                const int64_t k = T.P * kb + 16 * st + real_k(fam, 2 * (lane % 4) + 8 * (r / 2) + h);
                                bad += got != T.codes[n * T.K + k];
                                checked++;
                            }
    assert_int_equal(checked, T.N * T.K); /* every code read exactly once */
    assert_int_equal(bad, 0);
    free(T.codes), free(T.out);
}

static void test_u4a16_normal(void **st) { (void)st; check_family(U4A16, 0); }
static void test_u4a16_transposed(void **st) { (void)st; check_family(U4A16, 1); }
static void test_u4a8_normal(void **st) { (void)st; check_family(U4A8, 0); }
static void test_u4a8_transposed(void **st) { (void)st; check_family(U4A8, 1); }
static void test_fp8a8_normal(void **st) { (void)st; check_family(FP8A8, 0); }
static void test_fp8a8_transposed(void **st) { (void)st; check_family(FP8A8, 1); }
/* The wgmma kernel's 16-token variant multiplies with mma.sync, its B pairs
 * read by ldmatrix.x4 from the stage as TMA wrote it. Emulates both: the
 * 128-byte swizzle (16 tokens x 64 k of 16-bit values; chunk c of row r at
 * chunk c ^ (r % 8)) and ldmatrix (lanes 8 i .. 8 i + 7 address the rows of
 * matrix i; lane l receives 32-bit word l % 4 of row l / 4 of each). Register
 * j of lane 4 g + t must hold token g (+ 8 for j >= 2) at k 2t, 2t + 1 (+ 8 for
 * odd j) of the step, and every (token, k) of the stage is read once. */
static void test_sync16_b_fragments(void **st)
{
    (void)st;
    uint8_t smem[16 * 128];
    int seen[16 * 64] = {0};
    for (int r = 0; r < 16; r++)
        for (int k = 0; k < 64; k++) {
            const int off = r * 128 + (((k / 8) ^ (r % 8)) * 16) + (k % 8) * 2, v = r * 64 + k;
            smem[off] = (uint8_t)v, smem[off + 1] = (uint8_t)(v >> 8);
        }
    int bad = 0;
    for (int s = 0; s < 4; s++)
        for (int lane = 0; lane < 32; lane++)
            for (int j = 0; j < 4; j++) {
                const int off = HCK_SYNC16_LDSM_OFFSET(8 * j + lane / 4, s) + (lane % 4) * 4;
                assert_true(off >= 0 && off + 4 <= (int)sizeof smem);
                const int tok = lane / 4 + 8 * (j / 2), k = 16 * s + 2 * (lane % 4) + 8 * (j % 2);
                for (int h = 0; h < 2; h++) {
                    const int v = smem[off + 2 * h] | smem[off + 2 * h + 1] << 8;
                    bad += v != tok * 64 + k + h;
                    seen[v]++;
                }
            }
    assert_int_equal(bad, 0);
    for (int i = 0; i < 16 * 64; i++) assert_int_equal(seen[i], 1);
}

/* The wgmma kernel's weight stage: emulates the TMA copy of one box of the
 * 3-D weight map (dims: wc-word chunks, chunks per tile row, tile rows of
 * every expert; box: wc x HCK_WG_BOX_CHUNKS x R, written densely in box order,
 * zero past the tensor) and checks that the word the consumer reads for tile
 * t, row rr (HCK_WG_STAGE_WORD, split as the kernel splits it) is that tile
 * row's word, zero for tiles past
 * Np. Every format's (tile words, chunk), blocks of 2 and 4 tiles, a
 * part-filled last block and a stage past the first. */
static void check_stage_box(int tile_words, int P, int bt)
{
    const int wc = tile_words < 256 ? tile_words : 256, R = 64 / P, ntiles = 5, rows = 8;
    const int64_t row_words = (int64_t)ntiles * tile_words;
    const int chunks = HCK_WG_BOX_CHUNKS(bt, tile_words, wc);
    uint32_t *glob = malloc((size_t)(rows * row_words) * sizeof *glob);
    uint32_t *stage = malloc((size_t)(R * chunks * wc) * sizeof *stage);
    assert_non_null(glob), assert_non_null(stage);
    for (int64_t i = 0; i < rows * row_words; i++) glob[i] = (uint32_t)i + 1;
    for (int blk = 0; blk * bt < ntiles; blk++)
        for (int stg = 0; stg < rows / R; stg++) {
            const int c1 = blk * bt * tile_words / wc, c2 = stg * R; /* the kernel's box coordinates */
            uint32_t *o = stage;
            for (int z = 0; z < R; z++)
                for (int y = 0; y < chunks; y++)
                    for (int x = 0; x < wc; x++) {
                        const int64_t cy = c1 + y, cz = c2 + z;
                        *o++ = cy < row_words / wc && cz < rows ? glob[cz * row_words + cy * wc + x] : 0;
                    }
            int bad = 0;
            for (int t = 0; t < bt; t++)
                for (int rr = 0; rr < R; rr++)
                    for (int w = 0; w < tile_words; w++) {
                        const int nb = blk * bt + t;
                        const uint32_t want = nb < ntiles ? glob[(int64_t)(c2 + rr) * row_words + (int64_t)nb * tile_words + w] : 0;
                        /* as the kernel reads it: the tile's base, then the row's step */
                        const int at = HCK_WG_STAGE_WORD(t, 0, bt, tile_words) + HCK_WG_STAGE_WORD(0, rr, bt, tile_words);
                        bad += stage[at + w] != want;
                    }
            assert_int_equal(bad, 0);
        }
    free(glob), free(stage);
}

static void test_wgmma_stage_box(void **st)
{
    (void)st;
    static const int fmt[3][2] = {{128, 16}, {256, 32}, {512, 32}}; /* u4a16, u4a8 / mxfp4a8, w8a8fp8 */
    for (int f = 0; f < 3; f++)
        for (int bt = 2; bt <= 4; bt += 2) check_stage_box(fmt[f][0], fmt[f][1], bt);
}

static void test_wgmma_u4a16(void **st) { (void)st; check_wgmma_family(U4A16, 0), check_wgmma_family(U4A16, 1); }
static void test_wgmma_u4a8(void **st) { (void)st; check_wgmma_family(U4A8, 0), check_wgmma_family(U4A8, 1); }
static void test_wgmma_fp8a8(void **st) { (void)st; check_wgmma_family(FP8A8, 0), check_wgmma_family(FP8A8, 1); }

/* The int->fp codes (spec 4.7, z = 8) of the W4A8 path go back to offset
 * binary with w ^ 0x88888888 ^ 7 * (sign bits), eight nibbles at once. */
static void test_u4a8_int2fp_inverse(void **st)
{
    (void)st;
    for (int rep = 0; rep < 2000; rep++) {
        uint32_t v[8], w = 0;
        for (int i = 0; i < 8; i++) {
            v[i] = next_u32() & 15;
            w |= hc_int2fp_code(v[i], 8, 4) << (4 * i);
        }
        const uint32_t m = (w >> 3) & 0x11111111u, back = w ^ 0x88888888u ^ (m * 7u);
        for (int i = 0; i < 8; i++) assert_int_equal((back >> (4 * i)) & 15, v[i]);
    }
}

/* The e2m1 and e4m3 bit placements into fp16 give value x 2^-14 and x 2^-8
 * for every code (the kernel multiplies the sums by 2^14 / 2^8). */
static float f16_value(uint32_t h)
{
    const int e = (h >> 10) & 31, m = h & 1023;
    const float v = e == 0 ? (float)m / 1024.0f * 6.103515625e-05f
                           : (1.0f + (float)m / 1024.0f) * (float)(1u << e) / 32768.0f;
    return (h & 0x8000) ? -v : v;
}

static void test_fp_placement(void **st)
{
    (void)st;
    static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (uint32_t c = 0; c < 16; c++) {
        const uint32_t h = ((c & 7) << 9) | ((c & 8) << 12);
        const float want = (c & 8 ? -1.0f : 1.0f) * e2m1[c & 7];
        assert_true(f16_value(h) * 16384.0f == want);
    }
    for (uint32_t c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f) continue; /* NaN */
        const int e = (c >> 3) & 15, m = c & 7;
        const float mag = e == 0 ? (float)m / 8.0f / 64.0f : (1.0f + (float)m / 8.0f) * (float)(1u << e) / 128.0f;
        const uint32_t h = ((c & 0x7f) << 7) | ((c & 0x80) << 8);
        assert_true(f16_value(h) * 256.0f == ((c & 0x80) ? -mag : mag));
    }
}

/* e4m3 byte -> value, from the format's definition (not the kernel's tables) */
static float e4m3_value(uint32_t c)
{
    const int e = (c >> 3) & 15, m = c & 7;
    const float mag = e == 0 ? (float)m / 8.0f / 64.0f : (1.0f + (float)m / 8.0f) * (float)(1u << e) / 128.0f;
    return (c & 0x80) ? -mag : mag;
}

/* The fp8 variant's A fragment (hck_f8_fragment: the code the kernel runs) for
 * every (tile row, tile, warp, lane): byte i of register r must be the code at
 * n = 16 w + g + 8 (r % 2), k = 4 t + i + 16 (r / 2), as e4m3 of x 2^-9 for
 * uint4 int->fp codes (x from the library's own encoder, hc_int2fp_code) or of
 * fp4 2^(x' - 6) for MXFP4 with random fused offsets x' in [0, 12]. */
static void check_f8_family(int fp4, int tr)
{
    static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    tiles_t T = make_tiles(U4A8, tr);
    int8_t x_of[16];
    for (int v = 0; v < 16; v++) x_of[hc_int2fp_code((uint32_t)v, 8, 4)] = (int8_t)(v - 8);
    uint8_t *xo = malloc((size_t)(T.N * (T.K / 32)));
    assert_non_null(xo);
    for (int64_t i = 0; i < T.N * (T.K / 32); i++) xo[i] = (uint8_t)(next_u32() % 13);
    int64_t checked = 0, bad = 0;
    for (int64_t kb = 0; kb < T.K / 32; kb++)
        for (int64_t nb = 0; nb < T.N / 64; nb++)
            for (int w = 0; w < 4; w++)
                for (int lane = 0; lane < 32; lane++) {
                    const uint32_t *wv = T.out + kb * T.row_words + nb * T.tile_words + (w / 2) * 128 + lane * 4 + 2 * (w % 2);
                    const int64_t n0 = 64 * nb + 16 * w + lane / 4;
                    uint32_t t0[2], t1[2], a[4];
                    hck_fp4_e4m3_table(xo[n0 * (T.K / 32) + kb], t0);
                    hck_fp4_e4m3_table(xo[(n0 + 8) * (T.K / 32) + kb], t1);
                    hck_f8_fragment(wv, fp4, tr, t0, t1, a);
                    for (int r = 0; r < 4; r++)
                        for (int i = 0; i < 4; i++) {
                            const int64_t n = n0 + 8 * (r % 2), k = 32 * kb + 4 * (lane % 4) + i + 16 * (r / 2);
                            const uint32_t c = T.codes[n * T.K + k], byte = (a[r] >> (8 * i)) & 0xffu;
                            const float want = fp4 ? (c & 8 ? -1.0f : 1.0f) * e2m1[c & 7] *
                                                         ldexpf(1.0f, xo[n * (T.K / 32) + kb] - 6)
                                                   : ldexpf((float)x_of[c], -9);
                            bad += (byte & 0x7f) == 0x7f || e4m3_value(byte) != want;
                            checked++;
                        }
                }
    assert_int_equal(checked, T.N * T.K); /* every code read exactly once */
    assert_int_equal(bad, 0);
    free(xo), free(T.codes), free(T.out);
}

static void test_f8_fragment_u4(void **st) { (void)st; check_f8_family(0, 0), check_f8_family(0, 1); }
static void test_f8_fragment_mxfp4(void **st) { (void)st; check_f8_family(1, 0); }

/* hck_byte_perm's host emulation against the PTX definition on fixed cases */
static void test_byte_perm(void **st)
{
    (void)st;
    assert_int_equal(hck_byte_perm(0x33221100u, 0x77665544u, 0x7531), 0x77553311u);
    assert_int_equal(hck_byte_perm(0x33221100u, 0x77665544u, 0x0020), 0x00002200u);
    assert_int_equal(hck_byte_perm(0x0C080400u, 0x1C181410u, 0x7654), 0x1C181410u);
}

/* hck_e8m0_pair, the MXFP4 kernels' scale pairs (one prmt and one IMAD),
 * against the plain shift-and-or form ((e + 15) << 10 in each half), for
 * every byte value in every byte position, the other bytes set; where the
 * exponent fits (e <= 15) each half is the fp16 power of two 2^e */
static void test_e8m0_pair(void **st)
{
    (void)st;
    for (uint32_t e = 0; e < 256; e++)
        for (int k = 0; k < 4; k++) {
            const uint32_t raw = (0xA5C3E1F7u & ~(0xffu << (8 * k))) | e << (8 * k);
            const uint32_t want = ((e + 15) << 10) | ((e + 15) << 26);
            assert_int_equal(hck_e8m0_pair(raw, k), want);
            if (e <= 15) {
                assert_int_equal(hck_e8m0_pair(raw, k) & 0xffffu, (e + 15) << 10);
                assert_int_equal(hck_e8m0_pair(raw, k) >> 16, (e + 15) << 10);
            }
        }
}

/* The wgmma epilogue's staging (HCK_EPI_*), for every token count: each
 * accumulator register lands on the float of its own (token, column) as the
 * C / D fragment layouts place them (stated here from the PTX ISA, not from
 * the macro), every float of the [tokens][64] tile is written once, a warp's
 * store hits 32 distinct banks, and the 16-byte reads cover every float once
 * from 16-byte aligned offsets. */
static void check_epilogue_staging(int ntok)
{
    const int floats = ntok * HCK_EPI_STRIDE;
    unsigned char *seen = calloc((size_t)floats, 1);
    assert_non_null(seen);
    for (int w = 0; w < 4; w++)
        for (int j = 0; j < ntok / 8; j++)
            for (int c = 0; c < 4; c++) {
                unsigned banks = 0;
                for (int lane = 0; lane < 32; lane++) {
                    const int g = lane / 4, t = lane % 4;
                    /* m16n8 C / m64nN D: c0, c1 row g, c2, c3 row g + 8; columns 2t, 2t + 1 */
                    const int token = 8 * j + 2 * t + (c % 2), col = 16 * w + g + (c < 2 ? 0 : 8);
                    const int at = HCK_EPI_STAGE_INDEX(j, c, w, g, t);
                    assert_int_equal(at / HCK_EPI_STRIDE, token);
                    assert_int_equal(at % HCK_EPI_STRIDE, col);
                    assert_int_equal(seen[at]++, 0);
                    banks |= 1u << (at % 32);
                }
                assert_int_equal(banks, 0xffffffffu);
            }
    for (int tid = 0; tid < 128; tid++)
        for (int token = tid / 16; token < ntok; token += 8) {
            const int at = HCK_EPI_READ_INDEX(token, 4 * (tid % 16));
            assert_int_equal(at % 4, 0);
            for (int q = 0; q < 4; q++) assert_int_equal(seen[at + q]++, 1);
        }
    for (int i = 0; i < floats; i++) assert_int_equal(seen[i], i % HCK_EPI_STRIDE < 64 ? 2 : 0);
    free(seen);
}

static void test_wgmma_epilogue_staging(void **st)
{
    (void)st;
    static const int ntoks[] = {16, 64, 128, 256}; /* the variants */
    for (size_t i = 0; i < sizeof ntoks / sizeof ntoks[0]; i++) check_epilogue_staging(ntoks[i]);
}

/* Codes of n16 block i of tile nb, tile row `row`, that the lane's words at
 * HCK_KW_WORD(lane, i, rw) do not give at their (n, k); *checked counts the
 * codes read. */
static int64_t kw_block_bad(const tiles_t *T, int fam, int tr, int64_t row, int64_t nb, int lane, int i, int rw,
                            int64_t *checked)
{
    const uint32_t *tile = T->out + row * T->row_words + nb * T->tile_words;
    int64_t bad = 0;
    for (int s = 0; s < T->P / 16; s++)
        for (int reg = 0; reg < 4; reg++)
            for (int h = 0; h < 2; h++) {
                const src_t src = wgmma_source_at(fam, tr, tile + HCK_KW_WORD(lane, i, rw), s, reg, h);
                const uint32_t got = (src.word >> (src.field * src.width)) & ((1u << src.width) - 1);
                const int64_t n = 64 * nb + 16 * i + lane / 4 + 8 * (reg % 2);
                const int64_t k = T->P * row + 16 * s + real_k(fam, 2 * (lane % 4) + 8 * (reg / 2) + h);
                bad += got != T->codes[n * T->K + k];
                (*checked)++;
            }
    return bad;
}

/* perm[j]: the column the library's perm64 scale order (hc_scales_permute) puts
 * at entry j of two 64-column tiles */
static void perm64_columns(uint16_t perm[128])
{
    uint16_t col[128];
    for (int n = 0; n < 128; n++) col[n] = (uint16_t)n;
    hc_scales_permute(col, perm, 1, 128, 1, sizeof col[0], 64);
}

/* The 16-token 4-bit variants' split of a stage (HCK_KW_*: uint4 x 16-bit,
 * uint4 and fp4 x 8-bit): the four warps of a warpgroup cover its one or
 * two tiles' rows once; a lane's words of n16 block i of a tile row,
 * HCK_KW_WORD(lane, i, rw), lie in one or two 16-byte loads (a quarter warp on
 * 32 distinct banks each) and give that block's A fragments, every code of a
 * repacked matrix read once at its (n, k), in both layouts; the 16 bytes of
 * group scales at HCK_KW_SCALE_ENTRY are those rows' scales after the
 * library's perm64 (hc_scales_permute). */
static void check_kw_family(int fam, int tr, int tpw)
{
    tiles_t T = make_tiles(fam, tr);
    const int rows = 64 / T.P, rw = fam == U4A16 ? 1 : 2, krw = rows * tpw / 4;
    int64_t checked = 0, bad = 0;
    int cover[2][4] = {{0}};
    for (int w = 0; w < 4; w++)
        for (int r = 0; r < krw; r++) cover[HCK_KW_TILE(w, tpw)][HCK_KW_ROW(w, r, tpw, rows)]++;
    for (int t = 0; t < tpw; t++)
        for (int rr = 0; rr < rows; rr++) assert_int_equal(cover[t][rr], 1);
    for (int q = 0; q < rw; q++) { /* load q: blocks 4 q / rw ..., 16-byte aligned, conflict free */
        const int i0 = 4 * q / rw;
        for (int lane = 0; lane < 32; lane++) {
            assert_int_equal(HCK_KW_WORD(lane, i0, rw) % 4, 0);
            for (int i = i0; i < i0 + 4 / rw; i++)
                assert_int_equal(HCK_KW_WORD(lane, i, rw), HCK_KW_WORD(lane, i0, rw) + (i - i0) * rw);
        }
        for (int qw = 0; qw < 4; qw++) {
            unsigned banks = 0;
            for (int lane = 8 * qw; lane < 8 * qw + 8; lane++)
                for (int j = 0; j < 4; j++) banks |= 1u << ((HCK_KW_WORD(lane, i0, rw) + j) % 32);
            assert_int_equal(banks, 0xffffffffu);
        }
    }
    for (int64_t st = 0; st < T.K / 64; st++)
        for (int64_t nb = 0; nb < T.N / 64; nb++)
            for (int w = 0; w < 4; w++) {
                if (HCK_KW_TILE(w, tpw) != nb % tpw) continue; /* tile nb of its warpgroup's tpw */
                for (int r = 0; r < krw; r++) {
                    const int64_t row = rows * st + HCK_KW_ROW(w, r, tpw, rows);
                    for (int lane = 0; lane < 32; lane++)
                        for (int i = 0; i < 4; i++) bad += kw_block_bad(&T, fam, tr, row, nb, lane, i, rw, &checked);
                }
            }
    assert_int_equal(checked, T.N * T.K);
    assert_int_equal(bad, 0);
    uint16_t perm[128];
    perm64_columns(perm);
    for (int nb = 0; nb < 2; nb++)
        for (int lane = 0; lane < 32; lane++) {
            assert_int_equal(HCK_KW_SCALE_ENTRY(lane, 0, 0) % 8, 0); /* 16-byte aligned (8 bytes for e8m0) */
            for (int i = 0; i < 4; i++)
                for (int h = 0; h < 2; h++) {
                    const int at = HCK_KW_SCALE_ENTRY(lane, i, h);
                    assert_int_equal(at, HCK_KW_SCALE_ENTRY(lane, 0, 0) + 2 * i + h);
                    assert_int_equal(perm[64 * nb + at], 64 * nb + 16 * i + lane / 4 + 8 * h);
                }
        }
    free(T.codes), free(T.out);
}

/* KW2 (uint4 x 16-bit, 16 tokens, group scales): warp w takes tile
 * HCK_KW_TILE(w, 2) and n16 blocks HCK_KW2_BLOCK(w, 0..1) over all four k16
 * rows of a stage. The warps cover each (tile, block) once; a lane's two words
 * are one 8-byte aligned load and give those blocks' A fragments, every code
 * of a repacked matrix read once at its (n, k), in both layouts; its 4 scale
 * entries are one 8-byte aligned load of those rows' perm64 scales. */
static void check_kw2(int tr)
{
    tiles_t T = make_tiles(U4A16, tr);
    int64_t checked = 0, bad = 0;
    int cover[2][4] = {{0}};
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < 2; i++) cover[HCK_KW_TILE(w, 2)][HCK_KW2_BLOCK(w, i)]++;
    for (int t = 0; t < 2; t++)
        for (int b = 0; b < 4; b++) assert_int_equal(cover[t][b], 1);
    for (int w = 0; w < 4; w++)
        for (int lane = 0; lane < 32; lane++) {
            const int w0 = HCK_KW_WORD(lane, HCK_KW2_BLOCK(w, 0), 1);
            assert_int_equal(w0 % 2, 0);
            assert_int_equal(HCK_KW_WORD(lane, HCK_KW2_BLOCK(w, 1), 1), w0 + 1);
            assert_int_equal(HCK_KW_SCALE_ENTRY(lane, HCK_KW2_BLOCK(w, 0), 0) % 4, 0);
        }
    for (int64_t row = 0; row < T.K / T.P; row++)
        for (int64_t nb = 0; nb < T.N / 64; nb++)
            for (int w = 0; w < 4; w++) {
                if (HCK_KW_TILE(w, 2) != nb % 2) continue;
                for (int lane = 0; lane < 32; lane++)
                    for (int j = 0; j < 2; j++)
                        bad += kw_block_bad(&T, U4A16, tr, row, nb, lane, HCK_KW2_BLOCK(w, j), 1, &checked);
            }
    assert_int_equal(checked, T.N * T.K);
    assert_int_equal(bad, 0);
    uint16_t perm[128];
    perm64_columns(perm);
    for (int nb = 0; nb < 2; nb++)
        for (int w = 0; w < 4; w++)
            for (int lane = 0; lane < 32; lane++)
                for (int j = 0; j < 2; j++)
                    for (int h = 0; h < 2; h++) {
                        const int i = HCK_KW2_BLOCK(w, j), at = HCK_KW_SCALE_ENTRY(lane, i, h);
                        assert_int_equal(at, HCK_KW_SCALE_ENTRY(lane, HCK_KW2_BLOCK(w, 0), 0) + 2 * j + h);
                        assert_int_equal(perm[64 * nb + at], 64 * nb + 16 * i + lane / 4 + 8 * h);
                    }
    free(T.codes), free(T.out);
}

static void test_wgmma_kw(void **st)
{
    (void)st;
    for (int tr = 0; tr < 2; tr++) {
        for (int tpw = 1; tpw <= 2; tpw++) check_kw_family(U4A16, tr, tpw);
        check_kw_family(U4A8, tr, 2); /* uint4 and fp4 x 8-bit: two tiles per warpgroup only */
        check_kw2(tr);
    }
}

/* The split sum over a cluster (HCK_CSUM_*; 16, 128 and 256 tokens):
 * for 1-4 tiles per CTA, 1-16 tokens and the 128/256-token blocks' counts, and
 * 2-8 splits, the CTAs' shares cover every staged (tile, token, column) exactly
 * once, and each read lies in its tile's staging rows, clear of the token
 * scales kept after them (NTOK * EST floats into the area). */
static void test_wgmma_cluster_sum(void **st)
{
    (void)st;
    static const int big[] = {17, 31, 64, 100, 127, 128, 129, 200, 255, 256};
    static int seen[4][256][64];
    for (int bt = 1; bt <= 4; bt++)
        for (int mi = 0; mi < 16 + (int)(sizeof big / sizeof big[0]); mi++)
            for (int splits = 2; splits <= 8; splits++) {
                const int mrows = mi < 16 ? mi + 1 : big[mi - 16], ntok = mrows <= 16 ? 16 : mrows <= 128 ? 128 : 256;
                const int total = bt * mrows * 16;
                memset(seen, 0, sizeof seen);
                assert_int_equal(HCK_CSUM_BEGIN(total, 0, splits), 0);
                assert_int_equal(HCK_CSUM_BEGIN(total, splits, splits), total);
                for (int s = 0; s < splits; s++) {
                    assert_true(HCK_CSUM_BEGIN(total, s, splits) <= HCK_CSUM_BEGIN(total, s + 1, splits));
                    for (int g = HCK_CSUM_BEGIN(total, s, splits); g < HCK_CSUM_BEGIN(total, s + 1, splits); g++) {
                        const int t = HCK_CSUM_TILE(g, mrows), tok = HCK_CSUM_TOKEN(g, mrows), col = HCK_CSUM_COL(g);
                        assert_true(t < bt && tok < mrows && col % 4 == 0 && col < 64);
                        assert_true(HCK_EPI_READ_INDEX(tok, col) + 3 < ntok * HCK_EPI_STRIDE);
                        for (int c = 0; c < 4; c++) seen[t][tok][col + c]++;
                    }
                }
                for (int t = 0; t < bt; t++)
                    for (int tok = 0; tok < mrows; tok++)
                        for (int col = 0; col < 64; col++) assert_int_equal(seen[t][tok][col], 1);
            }
}

/* The cooperative split sum: the splits' column shares partition each
 * token row, and the counter protocol lets no split sum before all are in and
 * leaves the counter zero, whatever order the splits run in. */
static void test_wgmma_coop_sum(void **st)
{
    (void)st;
    uint32_t rng = 12345u;
    for (int bt = 1; bt <= 4; bt++)
        for (int splits = 2; splits <= 8; splits++) {
            const int q = 16 * bt;
            int seen[64] = {0};
            for (int s = 0; s < splits; s++)
                for (int g = HCK_CSUM_BEGIN(q, s, splits); g < HCK_CSUM_BEGIN(q, s + 1, splits); g++) seen[g]++;
            for (int g = 0; g < q; g++) assert_int_equal(seen[g], 1);
            for (int trial = 0; trial < 50; trial++) { /* random interleavings of in / wait / out */
                int ctr = 0, state[8] = {0}, arrived = 0, resets = 0, done = 0;
                while (done < splits) {
                    rng = rng * 1664525u + 1013904223u;
                    const int s = (int)(rng >> 16) % splits;
                    if (state[s] == 0) ctr++, arrived++, state[s] = 1;
                    else if (state[s] == 1 && HCK_COOP_ALL_IN(ctr, splits)) assert_int_equal(arrived, splits), state[s] = 2;
                    else if (state[s] == 2) {
                        if (HCK_COOP_LAST_OUT(ctr++, splits)) ctr = 0, resets++;
                        state[s] = 3, done++;
                    }
                }
                assert_int_equal(ctr, 0);
                assert_int_equal(resets, 1);
            }
        }
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The polled split sum's empty marker: a NaN with the quiet bit clear,
 * so that no arithmetic result (IEEE makes quiet NaNs, also from a signalling
 * operand) can equal it; a partial equal to it would make a poller wait
 * forever. Then the protocol: in any interleaving of the splits' stores and
 * polls, a split sums its share only when every split's value has arrived, in
 * split order, and leaves the workspace empty. */
static void test_ws_empty_marker(void **st)
{
    (void)st;
    const uint32_t m = HCK_WS_EMPTY;
    assert_int_equal(m & 0x7f800000u, 0x7f800000u);
    assert_int_equal(m & HCK_NAN_QUIET, 0);
    assert_true((m & 0x007fffffu) != 0);
    float e;
    memcpy(&e, &m, 4);
    volatile float snan = e, zero = 0.0f, inf = INFINITY, one = 1.0f;
    const float made[] = {snan * one, snan + zero, fmaf(snan, one, zero), zero * inf, inf - inf, -(inf - inf),
                          sqrtf(-one), snan * inf};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        assert_true(isnan(made[i]));
        assert_int_equal(f32_bits(made[i]) & HCK_NAN_QUIET, HCK_NAN_QUIET);
        assert_true(f32_bits(made[i]) != m);
    }
    uint32_t rng = 777u;
    for (int splits = 2; splits <= 8; splits++) {
        enum { Q = 12 };
        uint32_t ws[8][Q];
        for (int s = 0; s < splits; s++)
            for (int g = 0; g < Q; g++) ws[s][g] = m;
        for (int trial = 0; trial < 40; trial++) {
            int stored[8] = {0}, summed[8] = {0}, done = 0;
            while (done < splits) {
                rng = rng * 1664525u + 1013904223u;
                const int s = (int)(rng >> 16) % splits;
                if (!stored[s]) { /* split s stores its partials (value s + g / 16) */
                    for (int g = 0; g < Q; g++) ws[s][g] = f32_bits((float)s + (float)g / 16.0f);
                    stored[s] = 1;
                    continue;
                }
                if (summed[s]) continue;
                const int g0 = HCK_CSUM_BEGIN(Q, s, splits), g1 = HCK_CSUM_BEGIN(Q, s + 1, splits);
                int ready = 1;
                for (int g = g0; g < g1; g++)
                    for (int j = 0; j < splits; j++) ready &= ws[j][g] != m;
                if (!ready) continue;
                for (int j = 0; j < splits; j++) assert_true(stored[j]);
                for (int g = g0; g < g1; g++) {
                    float v = 0.0f, want = 0.0f;
                    for (int j = 0; j < splits; j++) {
                        float x;
                        memcpy(&x, &ws[j][g], 4);
                        v += x, want += (float)j + (float)g / 16.0f;
                        ws[j][g] = m;
                    }
                    assert_true(v == want);
                }
                summed[s] = 1, done++;
            }
            for (int s = 0; s < splits; s++)
                for (int g = 0; g < Q; g++) assert_int_equal(ws[s][g], m);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_u4a16_normal),     cmocka_unit_test(test_u4a16_transposed),
        cmocka_unit_test(test_u4a8_normal),      cmocka_unit_test(test_u4a8_transposed),
        cmocka_unit_test(test_fp8a8_normal),     cmocka_unit_test(test_fp8a8_transposed),
        cmocka_unit_test(test_sync16_b_fragments), cmocka_unit_test(test_wgmma_stage_box),
        cmocka_unit_test(test_wgmma_u4a16),      cmocka_unit_test(test_wgmma_u4a8),
        cmocka_unit_test(test_wgmma_fp8a8),
        cmocka_unit_test(test_u4a8_int2fp_inverse), cmocka_unit_test(test_fp_placement),
        cmocka_unit_test(test_f8_fragment_u4),   cmocka_unit_test(test_f8_fragment_mxfp4),
        cmocka_unit_test(test_byte_perm),        cmocka_unit_test(test_e8m0_pair),
        cmocka_unit_test(test_wgmma_epilogue_staging),
        cmocka_unit_test(test_wgmma_kw),         cmocka_unit_test(test_wgmma_cluster_sum),
        cmocka_unit_test(test_wgmma_coop_sum),   cmocka_unit_test(test_ws_empty_marker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
