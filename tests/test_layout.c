/* test_layout.c - the weight repack (spec 3, 4): golden words of 4.9 and an
 * independent element-by-element reference (4.3 forward mapping, 4.4 closed
 * forms, 4.5 explicit compaction formulas) on random codes; the 0.1.19
 * layers whose weights are tiles (padding, int->fp transform, zero points)
 * against that reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_layout.h"
#include "hc_repack.h"
#include "hc_repack_internal.h"

/* ---- shared helpers ---------------------------------------------------- */

/* Row-packs codes (E, N, K) into (E, N, K*b/32) words, written out longhand
 * (bit by bit) so that it does not share code with the library. */
static uint32_t *pack_rows(const uint8_t *codes, int64_t rows, int64_t K, int b)
{
    int64_t rw = K * b / 32;
    uint32_t *w = calloc((size_t)(rows * rw), sizeof *w);
    assert_non_null(w);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < K; k++)
            for (int t = 0; t < b; t++) {
                int64_t bit = k * b + t;
                if ((codes[r * K + k] >> t) & 1) w[r * rw + bit / 32] |= 1u << (bit % 32);
            }
    return w;
}

static uint32_t *run_repack(const uint8_t *codes, int b, int a, int tr, int64_t E, int64_t N,
                            int64_t K)
{
    uint32_t *in = pack_rows(codes, E * N, K, b);
    uint32_t *out = calloc((size_t)(E * N * K * b / 32), sizeof *out);
    assert_non_null(out);
    hc_repack_params p = {.bits = b, .act_bits = a, .transposed = tr, .E = E, .N = N, .K = K};
    hc_error err = {0};
    assert_int_equal(hc_repack_weight(&p, in, out, &err), HC_OK);
    free(in);
    return out;
}

/* ---- (a) golden words of spec 4.9 --------------------------------------- */

typedef struct {
    int b, a, tr;
    uint32_t row0[8], row1[2];
} golden_words;

static const golden_words goldens[] = {
    {4, 16, 0, {0x2b97ec20, 0xa36fb4f8, 0x703c8c70, 0x4804594d, 0x0ec51a0e, 0xd692e7db,
                0xa36abfa3, 0x7b378c70}, {0xb42b7564, 0x814d9281}},
    {4, 16, 1, {0x29b7e2c0, 0xa63fbf48, 0x730c87c0, 0x4084549d, 0x0ce510ae, 0xd962ed7b,
                0xa63abaf3, 0x73b787c0}, {0xb24b7654, 0x841d9821}},
    {3, 16, 0, {0x239f6ca0, 0xe36b38f0, 0x9018a29a, 0x8e459a86, 0x56d66f57, 0xe76e19e1,
                0x34a87531, 0x8d39d68d}, {0x34ab7564, 0x45055e45}},
    {8, 16, 0, {0x89474200, 0x027bae2c, 0x76af1f58, 0xeae38b84, 0x631cf7b0, 0xd75068dc,
                0x5084d40d, 0xc4b84539}, {0x12cbc684, 0x0b84b735}},
    {5, 16, 0, {0x09c76260, 0x5a3f7e60, 0x1ae3bb84, 0xaf209178, 0x20c42ccd, 0x1cf5904e,
                0x240a352e, 0xbd565e17}, {0x522ba6a4, 0x93f4a385}},
    {4, 8, 0, {0xe57eb740, 0x7e3a4b5c, 0xb24bdf18, 0x46571324, 0xf68fc851, 0x8f905c6d,
               0x135ce579, 0xac68798a}, {0xb24b841d, 0x905c6d7e}},
    {8, 8, 0, {0xd58e4700, 0x5e17cb84, 0x1eca7b2c, 0x27d38435, 0x620baf58, 0xeb943de1,
               0xa647e384, 0xb455f192}, {0xe29b540d, 0x6b24d891}},
    {2, 4, 0, {0x23499e34, 0x788d2278, 0x9de3449e, 0xd27b8d22, 0x3449e334, 0x8dd2778d,
               0x9e3349ee, 0x678cd277}, {0x99e3749e, 0x788d2678}},
};

static void test_golden_words(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof goldens / sizeof goldens[0]; t++) {
        const golden_words *g = &goldens[t];
        int64_t N = 64, K = g->a == 4 ? 128 : 64;
        uint8_t *codes = malloc((size_t)(N * K));
        assert_non_null(codes);
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                codes[n * K + k] = (uint8_t)(((131 * n + 71 * k + n * k) % 251) % (1 << g->b));
        uint32_t *out = run_repack(codes, g->b, g->a, g->tr, 1, N, K);
        int64_t row = N * (256 / g->a) * g->b / 32;
        for (int w = 0; w < 8; w++) assert_int_equal(out[w], g->row0[w]);
        for (int w = 0; w < 2; w++) assert_int_equal(out[row + w], g->row1[w]);
        free(out);
        free(codes);
    }
}

/* ---- (b) independent reference: spec 4.3 forward mapping ------------------ */

typedef struct {
    int64_t nb, kb;
    int j, lane, i3, i4, i5, kk, u, pw, slot;
} ref_coord;

static int ref_bp(int b) { return b == 1 ? 1 : b == 2 ? 2 : b <= 4 ? 4 : 8; }

/* Element (n, k) -> tile, lane, padded word and slot, step by step as 4.3. */
static void ref_locate(int a, int b, int tr, int64_t n, int64_t k, ref_coord *c)
{
    int P = 256 / a, R = 32 / a, bp = ref_bp(b), nw = 32 / bp, gs = a / bp;
    int n64 = (int)(n % 64), kin = (int)(k % P);
    c->nb = n / 64;
    c->kb = k / P;
    c->j = n64 / (4 * a);
    c->i3 = (n64 % (4 * a)) / 16;
    c->i4 = (n64 / 8) % 2;
    c->lane = 4 * (n64 % 8) + (kin % (4 * R)) / R;
    c->i5 = kin / (4 * R);
    c->kk = kin % R;
    c->u = tr ? ((c->i3 * 2 + c->i5) * 2 + c->i4) * R + c->kk
              : ((c->i3 * 2 + c->i4) * 2 + c->i5) * R + c->kk;
    c->pw = c->u / nw;
    int o = c->u % nw;
    c->slot = (o % R) * gs + o / R;
}

/* 4.5 with the spec's explicit per-width formulas (one slot). */
static void ref_compact_slot(int b, const uint32_t *v, uint32_t *f)
{
    switch (b) {
    case 5:
        f[0] = v[0] | ((v[1] >> 2) & 7) << 5;
        f[1] = (v[1] & 3) | v[2] << 2 | ((v[3] >> 4) & 1) << 7;
        f[2] = (v[3] & 15) | ((v[4] >> 1) & 15) << 4;
        f[3] = (v[4] & 1) | v[5] << 1 | ((v[6] >> 3) & 3) << 6;
        f[4] = (v[6] & 7) | v[7] << 3;
        break;
    case 6:
        for (int h = 0; h < 2; h++) {
            const uint32_t *w = v + 4 * h;
            f[3 * h] = w[0] | ((w[1] >> 4) & 3) << 6;
            f[3 * h + 1] = (w[1] & 15) | ((w[2] >> 2) & 15) << 4;
            f[3 * h + 2] = (w[2] & 3) | w[3] << 2;
        }
        break;
    case 7:
        for (int i = 0; i < 7; i++)
            f[i] = (v[i] & ((1u << (7 - i)) - 1)) | (v[i + 1] >> (6 - i)) << (7 - i);
        break;
    }
}

/* The Bp padded words of one lane -> b final words. */
static void ref_compact(int b, const uint32_t *W, uint32_t *F)
{
    if (b == 3) {  /* the mask form of 4.5 */
        F[0] = (W[0] & 0x77777777u) | ((W[1] & 0x44444444u) << 1);
        F[1] = (W[1] & 0x33333333u) | ((W[2] & 0x66666666u) << 1);
        F[2] = (W[2] & 0x11111111u) | ((W[3] & 0x77777777u) << 1);
        return;
    }
    if (b == 1 || b == 2 || b == 4 || b == 8) {
        for (int i = 0; i < b; i++) F[i] = W[i];
        return;
    }
    for (int i = 0; i < b; i++) F[i] = 0;
    for (int s = 0; s < 4; s++) {
        uint32_t v[8], f[8];
        for (int p = 0; p < 8; p++) v[p] = (W[p] >> (8 * s)) & 0xffu;
        ref_compact_slot(b, v, f);
        for (int i = 0; i < b; i++) F[i] |= (f[i] & 0xffu) << (8 * s);
    }
}

/* Reference repack of codes (E, N, K) (one code per byte, transforms applied). */
static uint32_t *ref_repack(const uint8_t *codes, int b, int a, int tr, int64_t E, int64_t N,
                            int64_t K)
{
    int P = 256 / a, bp = ref_bp(b), chunks = a == 16 ? 1 : 16 / a;
    int64_t KB = K / P, NB = N / 64, lanes = E * KB * NB * chunks * 32;
    uint32_t *pad = calloc((size_t)(lanes * bp), sizeof *pad);
    uint32_t *out = calloc((size_t)(E * N * K * b / 32), sizeof *out);
    assert_non_null(pad);
    assert_non_null(out);
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                ref_coord c;
                ref_locate(a, b, tr, n, k, &c);
                int64_t lane = (((e * KB + c.kb) * NB + c.nb) * chunks + c.j) * 32 + c.lane;
                pad[lane * bp + c.pw] |= (uint32_t)codes[(e * N + n) * K + k] << (c.slot * bp);
            }
    for (int64_t l = 0; l < lanes; l++) {
        int64_t lane = l % 32, j = (l / 32) % chunks, nb = (l / 32 / chunks) % NB;
        int64_t ekb = l / 32 / chunks / NB;  /* e * KB + kb */
        ref_compact(b, pad + l * bp,
                    out + ekb * (N * P * b / 32) + nb * 2 * P * b + j * 32 * b + lane * b);
    }
    free(pad);
    return out;
}

/* 4.4 closed forms (normal variant): word within the row and bit of (n, k). */
static int closed_form(int a, int b, int64_t n, int64_t k, int64_t N, int64_t *word, int *bit)
{
    ref_coord c;
    ref_locate(a, b, 0, n, k, &c);
    int64_t tile = c.nb * 2 * (256 / a) * b;
    (void)N;
    if (a == 16 && b == 4) { *word = c.lane * 4 + c.i3; *bit = 4 * (4 * c.kk + 2 * c.i4 + c.i5); }
    else if (a == 16 && b == 8) { *word = c.lane * 8 + 2 * c.i3 + c.i4; *bit = 8 * (2 * c.kk + c.i5); }
    else if (a == 8 && b == 8) {
        *word = c.j * 256 + c.lane * 8 + 4 * c.i3 + 2 * c.i4 + c.i5; *bit = 8 * c.kk;
    } else if (a == 8 && b == 4) {
        *word = c.j * 128 + c.lane * 4 + 2 * c.i3 + c.i4; *bit = 4 * (2 * c.kk + c.i5);
    } else return 0;
    *word += tile;
    return 1;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static uint8_t *random_codes(int64_t count, int b)
{
    uint8_t *c = malloc((size_t)count);
    assert_non_null(c);
    for (int64_t i = 0; i < count; i++) c[i] = (uint8_t)(rnd() & ((1u << b) - 1));
    return c;
}

static void check_closed_forms(const uint8_t *codes, const uint32_t *out, int a, int b,
                               int64_t E, int64_t N, int64_t K)
{
    int64_t word;
    int bit;
    int P = 256 / a;
    if (!closed_form(a, b, 0, 0, N, &word, &bit)) return;
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                closed_form(a, b, n, k, N, &word, &bit);
                const uint32_t *row = out + (e * (K / P) + k / P) * (N * P * b / 32);
                assert_int_equal((row[word] >> bit) & ((1u << b) - 1),
                                 codes[(e * N + n) * K + k]);
            }
}

/* Every (b, a, variant), E = 1 and 2, two aligned shapes each. */
static void test_repack_vs_reference(void **state)
{
    (void)state;
    static const int acts[3] = {16, 8, 4};
    int combos = 0;
    for (int ai = 0; ai < 3; ai++)
        for (int b = 1; b <= 8; b++)
            for (int tr = 0; tr < 2; tr++)
                for (int64_t E = 1; E <= 2; E++)
                    for (int shape = 0; shape < 2; shape++) {
                        int a = acts[ai];
                        if (ref_bp(b) > a) continue;
                        int64_t N = shape ? 192 : 64, K = (shape ? 3 : 1) * (512 / a);
                        uint8_t *codes = random_codes(E * N * K, b);
                        uint32_t *got = run_repack(codes, b, a, tr, E, N, K);
                        uint32_t *want = ref_repack(codes, b, a, tr, E, N, K);
                        assert_memory_equal(got, want, (size_t)(E * N * K * b / 32) * 4);
                        if (!tr) check_closed_forms(codes, got, a, b, E, N, K);
                        free(got);
                        free(want);
                        free(codes);
                        combos++;
                    }
    assert_int_equal(combos, 2 * 2 * 2 * (8 + 8 + 4));
}

/* 4-bit codes under 16-bit activations run a byte-pair table when no zero
 * points are given; the general path (taken with zero points, here all equal
 * to the default 8) must give the same words for every variant and transform. */
static void test_repack_pair_path(void **state)
{
    (void)state;
    const int64_t E = 2, N = 128, K = 16 * 22; /* 22 k blocks: two blocks of 8 and a rest */
    uint8_t *codes = random_codes(E * N * K, 4);
    uint32_t *in = pack_rows(codes, E * N, K, 4);
    uint8_t zp[2 * 128];
    memset(zp, 8, sizeof zp);
    const size_t words = (size_t)(E * N * K * 4 / 32);
    uint32_t *fast = malloc(words * 4), *slow = malloc(words * 4);
    assert_non_null(fast);
    assert_non_null(slow);
    for (int v = 0; v < 16; v++) {
        hc_repack_params p = {.bits = 4, .act_bits = 16, .transposed = v & 1,
                              .native = (v >> 1) & 1,
                              .E = E, .N = N, .K = K, .code_xor = v & 4 ? 0x8 : 0,
                              .int2fp = (v >> 3) & 1};
        hc_error err = {0};
        assert_int_equal(hc_repack_weight(&p, in, fast, &err), HC_OK);
        p.zp = zp;
        p.zp_groups = 1;
        assert_int_equal(hc_repack_weight(&p, in, slow, &err), HC_OK);
        assert_memory_equal(fast, slow, words * 4);
    }
    free(fast);
    free(slow);
    free(in);
    free(codes);
}

/* The byte-gather repack (AVX2, AVX-512 VBMI) against the portable loops on
 * every 4-bit x 16-bit variant (transposed, native, XOR, int->fp), experts,
 * several n tiles, spans of 8 n tiles and 64 k blocks with a rest of each;
 * codes that cover every byte value. Skipped where the CPU has no such path. */
static void check_gather(int64_t E, int64_t N, int64_t K)
{
    uint8_t *codes = random_codes(E * N * K, 4);
    uint32_t *in = pack_rows(codes, E * N, K, 4);
    const size_t words = (size_t)(E * N * K * 4 / 32);
    uint32_t *vec = malloc(words * 4), *port = malloc(words * 4);
    assert_non_null(vec);
    assert_non_null(port);
    for (int v = 0; v < 16; v++) {
        hc_repack_params p = {.bits = 4, .act_bits = 16, .transposed = v & 1,
                              .native = (v >> 1) & 1, .E = E, .N = N, .K = K,
                              .code_xor = v & 4 ? 0x8 : 0, .int2fp = (v >> 3) & 1};
        hc_error err = {0};
        p.portable = 1;
        assert_int_equal(hc_repack_weight(&p, in, port, &err), HC_OK);
        for (int level = hc_tile_gather_available(); level >= 1; level--) {
            memset(vec, 0xA5, words * 4);
            p.portable = level == 1 ? 2 : 0; /* AVX2 at most, or the best */
            assert_int_equal(hc_repack_weight(&p, in, vec, &err), HC_OK);
            assert_memory_equal(vec, port, words * 4);
        }
    }
    free(vec);
    free(port);
    free(in);
    free(codes);
}

static void test_repack_gather_vs_portable(void **state)
{
    (void)state;
    if (!hc_tile_gather_available()) {
        printf("SKIP[isa]: no AVX2: the tile repack runs only its portable loops\n");
        skip();
    }
    check_gather(2, 192, 32 * 19);  /* 38 k blocks, 3 n tiles */
    check_gather(1, 64 * 9, 16 * 70); /* 70 k blocks, 9 n tiles: past a span of each */
}

/* ---- (b) through the layer API, with padding ------------------------------ */

static hc_format_id act_for_bits(int a)
{
    return a == 16 ? HC_FMT_F16 : a == 8 ? HC_FMT_INT8 : HC_FMT_INT4;
}

/* Zero-pads codes (E, N, K) to (E, Np, Kp). */
static uint8_t *pad_codes(const uint8_t *c, int64_t E, int64_t N, int64_t K, int64_t Np,
                          int64_t Kp)
{
    uint8_t *p = calloc((size_t)(E * Np * Kp), 1);
    assert_non_null(p);
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            memcpy(p + (e * Np + n) * Kp, c + (e * N + n) * K, (size_t)K);
    return p;
}

static void tensor_of(hc_tensor *t, hc_dtype dt, int moe, int64_t E, int64_t d0, int64_t d1,
                      void *data)
{
    int64_t shape[3];
    int n = 0;
    if (moe) shape[n++] = E;
    shape[n++] = d0;
    shape[n++] = d1;
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->ndim = n;
    memcpy(t->shape, shape, sizeof shape);
    t->nbytes = (size_t)hc_tensor_byte_size(dt, n, shape);
    t->data = data;
}

/* A channel-scale layer of b-bit codes with a-bit activations on sm, tiled
 * by 0.1.19 (flat layouts are test_layout_0119's): post.weight against the
 * reference repack of the zero-padded codes (N to 256, K to 128). */
static void layer_case(int b, int a, int sm, int64_t E, int64_t N, int64_t K)
{
    int moe = E > 1;
    hc_layer_config cfg = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                           .scale_format = HC_FMT_F16, .act_format = act_for_bits(a),
                           .param_format = HC_FMT_F16, .scale_type = HC_SCALE_CHANNEL,
                           .sm = sm, .version = HC_HUMMING_0_1_19};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, moe, E, N, K, &m, &err), HC_OK);
    if (m.use_flat_weight) return;
    assert_int_equal(m.Np, (N + 255) / 256 * 256);
    assert_int_equal(m.Kp, (K + 127) / 128 * 128);
    assert_false(m.transposed_mini_block); /* channel scales: never packed-K */
    uint8_t *codes = random_codes(E * N * K, b);
    uint32_t *packed = pack_rows(codes, E * N, K, b);
    uint16_t *scales = calloc((size_t)(E * N), 2);
    assert_non_null(scales);
    for (int64_t i = 0; i < E * N; i++) scales[i] = (uint16_t)(0x3c00 + i);
    hc_layer_tensors pre = {0}, post;
    tensor_of(&pre.weight, HC_DT_I32, moe, E, N, K * b / 32, packed);
    tensor_of(&pre.weight_scale, HC_DT_F16, moe, E, N, 1, scales);
    assert_int_equal(hc_layer_transform(&cfg, &m, &pre, &post, &err), HC_OK);
    uint8_t *pc = pad_codes(codes, E, N, K, m.Np, m.Kp);
    uint32_t *want = ref_repack(pc, b, a, 0, E, m.Np, m.Kp);
    assert_int_equal(post.weight.nbytes, (size_t)(E * m.Np * m.Kp * b / 8));
    assert_memory_equal(post.weight.data, want, post.weight.nbytes);
    assert_int_equal(post.weight.ndim, moe ? 3 : 2);
    assert_int_equal(post.weight_scale.shape[post.weight_scale.ndim - 1], m.Np);
    hc_layer_tensors_free(&post);
    free(want);
    free(pc);
    free(scales);
    free(packed);
    free(codes);
}

static void test_layer_padded_vs_reference(void **state)
{
    (void)state;
    static const int acts[3] = {16, 8, 4};
    for (int ai = 0; ai < 3; ai++)
        for (int b = 1; b <= 8; b++)
            for (int sm = 80; sm <= 90; sm += 10)
                for (int64_t E = 1; E <= 2; E++) {
                    /* 0.1.19 runs int4 activations below sm90 only */
                    if (ref_bp(b) > acts[ai] || (acts[ai] == 4 && sm == 90)) continue;
                    layer_case(b, acts[ai], sm, E, 80, 96);
                    layer_case(b, acts[ai], sm, E, 300, 160);
                }
}

/* ---- (c) weight transforms: int->fp, zero points, int8 flip, W4A4 ---------- */

static void test_int2fp_examples(void **state)
{
    (void)state;
    static const uint32_t v[5] = {8, 9, 15, 7, 0}, want[5] = {0, 1, 7, 8, 15};
    for (int i = 0; i < 5; i++) assert_int_equal(hc_int2fp_code(v[i], 8, 4), want[i]);
    static const uint32_t vz[4] = {5, 15, 4, 0}, wz[4] = {0, 10, 11, 15};
    for (int i = 0; i < 4; i++) assert_int_equal(hc_int2fp_code(vz[i], 5, 4), wz[i]);
}

/* N-packs zero codes (E, N, G) into (E, N*b/32, G) words, bit by bit. */
static uint32_t *pack_zp(const uint8_t *z, int64_t E, int64_t N, int64_t G, int b)
{
    uint32_t *w = calloc((size_t)(E * N * b / 32 * G), sizeof *w);
    assert_non_null(w);
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                for (int t = 0; t < b; t++) {
                    int64_t bit = n * b + t;
                    if ((z[(e * N + n) * G + g] >> t) & 1)
                        w[(e * (N * b / 32) + bit / 32) * G + g] |= 1u << (bit % 32);
                }
    return w;
}

typedef struct {
    int b, a_fmt, sm, zp;  /* zp: integer zero point */
    int64_t E, N, K, gs;
} xform_case;

/* Runs the layer (0.1.19, unpadded shapes) on random codes/zero points and
 * checks post.weight against the reference with the 4.7 transform applied
 * by hand with the true zero points; returns how many codes a zero point
 * truncated to its first word would change (what the whole read guards). */
static int run_xform_case(const xform_case *c)
{
    int moe = c->E > 1, b = c->b;
    int64_t G = c->K / c->gs;
    hc_layer_config cfg = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                           .scale_format = HC_FMT_BF16, .act_format = (hc_format_id)c->a_fmt,
                           .param_format = HC_FMT_BF16, .scale_type = HC_SCALE_GROUP,
                           .group_size = c->gs, .has_zero_point = c->zp, .sm = c->sm,
                           .version = HC_HUMMING_0_1_19};
    hc_layer_meta m;
    hc_error err = {0};
    if (hc_layer_plan(&cfg, moe, c->E, c->N, c->K, &m, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_true(m.preprocess_int2fp);
    assert_int_equal(m.zp_in_repack, c->zp);
    assert_int_equal(m.Np, c->N);
    assert_int_equal(m.Kp, c->K);
    uint8_t *codes = random_codes(c->E * c->N * c->K, b);
    uint8_t *zc = random_codes(c->E * c->N * G, b);
    uint32_t *packed = pack_rows(codes, c->E * c->N, c->K, b);
    uint32_t *zpw = pack_zp(zc, c->E, c->N, G, b);
    uint16_t *scales = calloc((size_t)(c->E * c->N * G), 2);
    assert_non_null(scales);
    hc_layer_tensors pre = {0}, post;
    tensor_of(&pre.weight, HC_DT_I32, moe, c->E, c->N, c->K * b / 32, packed);
    tensor_of(&pre.weight_scale, HC_DT_BF16, moe, c->E, c->N, G, scales);
    if (c->zp) tensor_of(&pre.zero_point, HC_DT_I32, moe, c->E, c->N * b / 32, G, zpw);
    assert_int_equal(hc_layer_transform(&cfg, &m, &pre, &post, &err), HC_OK);
    int straddled = 0;
    for (int64_t e = 0; e < c->E; e++)
        for (int64_t n = 0; n < c->N; n++)
            for (int64_t k = 0; k < c->K; k++) {
                int64_t g = k / c->gs, bit = n * b;
                uint32_t z = 1u << (b - 1), zt = z;
                if (c->zp) {
                    z = zc[(e * c->N + n) * G + g];
                    zt = (zpw[(e * (c->N * b / 32) + bit / 32) * G + g] >> (bit % 32)) &
                         ((1u << b) - 1);
                }
                uint8_t *v = &codes[(e * c->N + n) * c->K + k];
                uint32_t t = hc_int2fp_code(*v, z, b);
                straddled += t != hc_int2fp_code(*v, zt, b);
                *v = (uint8_t)t;
            }
    uint32_t *want = ref_repack(codes, b, m.act_bits, m.transposed_mini_block, c->E, c->N, c->K);
    assert_memory_equal(post.weight.data, want, post.weight.nbytes);
    hc_layer_tensors_free(&post);
    free(want); free(scales); free(zpw); free(packed); free(zc); free(codes);
    return straddled;
}

static void test_int2fp_layer(void **state)
{
    (void)state;
    /* no zero point: fp8 activations (always), bf16 only for uint8 */
    for (int b = 1; b <= 5; b++)
        run_xform_case(&(xform_case){b, HC_FMT_F8E4M3, 90, 0, 1, 256, 256, 64});
    for (int b = 1; b <= 4; b++)
        run_xform_case(&(xform_case){b, HC_FMT_F8E5M2, 89, 0, 2, 256, 128, 128});
    run_xform_case(&(xform_case){8, HC_FMT_BF16, 90, 0, 1, 256, 128, 32});
    /* integer zero points: uint1..4 with e4m3, MoE, group 64 */
    for (int b = 1; b <= 4; b++)
        run_xform_case(&(xform_case){b, HC_FMT_F8E4M3, b % 2 ? 90 : 89, 1, 2, 256, 256, 64});
    /* straddling widths: the whole zero point is used, where reading only
     * its first word would change codes */
    assert_true(run_xform_case(&(xform_case){3, HC_FMT_F8E4M3, 90, 1, 2, 256, 256, 64}) > 0);
    assert_true(run_xform_case(&(xform_case){7, HC_FMT_BF16, 80, 1, 1, 256, 256, 128}) > 0);
}

/* Every word of post.weight for an all-zero-code 64 x K layer must be equal;
 * returns it. */
static uint32_t first_word_of_zeros(const hc_layer_config *cfg, int64_t K)
{
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(cfg, 0, 1, 64, K, &m, &err), HC_OK);
    int b = m.weight_bits;
    uint32_t *w = calloc((size_t)(64 * K * b / 32), 4);
    uint16_t *s = calloc(64, 2);
    assert_non_null(w);
    assert_non_null(s);
    hc_layer_tensors pre = {0}, post;
    tensor_of(&pre.weight, HC_DT_I32, 0, 1, 64, K * b / 32, w);
    tensor_of(&pre.weight_scale, HC_DT_F16, 0, 1, 64, 1, s);
    assert_int_equal(hc_layer_transform(cfg, &m, &pre, &post, &err), HC_OK);
    const uint32_t *o = post.weight.data;
    for (size_t i = 0; i < post.weight.nbytes / 4; i++) assert_int_equal(o[i], o[0]);
    uint32_t first = o[0];
    hc_layer_tensors_free(&post);
    free(w);
    free(s);
    return first;
}

static void test_int8_flip_and_w4a4(void **state)
{
    (void)state;
    hc_layer_config cfg = {.weight_format = HC_FMT_UINT8, .scale_format = HC_FMT_F16,
                           .act_format = HC_FMT_INT8, .param_format = HC_FMT_F16,
                           .scale_type = HC_SCALE_CHANNEL, .sm = 80,
                           .version = HC_HUMMING_0_1_19};
    hc_layer_meta m;
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 64, &m, &err), HC_OK);
    assert_true(m.int8_byte_flip && m.kernel_weight_signed && !m.preprocess_int2fp);
    cfg.weight_format = HC_FMT_UINT4;
    cfg.act_format = HC_FMT_INT4;
    assert_int_equal(hc_layer_plan(&cfg, 0, 1, 64, 128, &m, &err), HC_OK);
    assert_true(m.int4_nibble_flip && m.kernel_weight_signed && !m.int8_byte_flip);
    /* offset-binary code 0 (= -8) becomes two's-complement nibble 0x8 */
    assert_int_equal(first_word_of_zeros(&cfg, 128), 0x88888888u);
    cfg.weight_format = HC_FMT_UINT8;
    cfg.act_format = HC_FMT_INT8;
    assert_int_equal(first_word_of_zeros(&cfg, 64), 0x80808080u);
}

/* Regression: block scales with integer activations used to reach a division
 * by zero in the tensor check. 0.1.19 takes them (int4 activations only
 * below sm90): planned and transformed, scales transposed. */
static void test_block_scales_int_act(void **state)
{
    (void)state;
    const hc_format_id acts[2] = {HC_FMT_INT8, HC_FMT_INT4};
    for (int i = 0; i < 2; i++) {
        hc_layer_config c = {.weight_format = HC_FMT_UINT2, .scale_format = HC_FMT_F32,
                             .act_format = acts[i], .param_format = HC_FMT_F16,
                             .scale_type = HC_SCALE_BLOCK, .group_size = 128,
                             .group_size_n = 128, .sm = 89, .version = HC_HUMMING_0_1_19};
        hc_layer_meta m;
        hc_error err = {0};
        assert_int_equal(hc_layer_plan(&c, 0, 1, 256, 256, &m, &err), HC_OK);
        uint32_t *w = calloc(256 * 256 * 2 / 32, 4);
        float *s = calloc(4, sizeof *s);
        assert_non_null(w);
        assert_non_null(s);
        hc_layer_tensors pre = {0}, post;
        tensor_of(&pre.weight, HC_DT_I32, 0, 1, 256, 256 * 2 / 32, w);
        tensor_of(&pre.weight_scale, HC_DT_F32, 0, 1, 2, 2, s);
        assert_int_equal(hc_layer_transform(&c, &m, &pre, &post, &err), HC_OK);
        assert_int_equal(post.weight_scale.shape[0], 2);
        assert_int_equal(post.weight_scale.shape[1], 2);
        hc_layer_tensors_free(&post);
        free(w);
        free(s);
        c.sm = 90;
        assert_int_equal(hc_layer_plan(&c, 0, 1, 256, 256, &m, &err),
                         i == 0 ? HC_OK : HC_ERR_UNSUPPORTED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_words),
        cmocka_unit_test(test_repack_vs_reference),
        cmocka_unit_test(test_repack_pair_path),
        cmocka_unit_test(test_repack_gather_vs_portable),
        cmocka_unit_test(test_layer_padded_vs_reference),
        cmocka_unit_test(test_int2fp_examples),
        cmocka_unit_test(test_int2fp_layer),
        cmocka_unit_test(test_int8_flip_and_w4a4),
        cmocka_unit_test(test_block_scales_int_act),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
