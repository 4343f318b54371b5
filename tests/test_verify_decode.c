/* test_verify_decode.c - the reference decoder against the forward transform
 * (humming-kernels 0.1.19's tensors) on random data: decode(transform(pre))
 * == dequant(pre), element by element, for every (b, a, arrangement, zero
 * point, scale type, scale format) the planner accepts; corrupted words
 * detected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_layout.h"
#include "hc_verify.h"

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}
static float frnd(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() % 100000) / 100000.0f; }

static void mk(hc_tensor *t, hc_dtype dt, int moe, int64_t E, int nd, int64_t d0, int64_t d1)
{
    int64_t s[3];
    int n = 0;
    if (moe) s[n++] = E;
    s[n++] = d0;
    if (nd == 2) s[n++] = d1;
    assert_int_equal(hc_tensor_alloc(t, dt, n, s, NULL), HC_OK);
}

/* A random finite scale in format f (sign random except e8m0). */
static void put_scale(hc_format_id f, void *data, int64_t i)
{
    float v = frnd(0.01f, 2.0f) * (rnd() & 1 ? -1.0f : 1.0f);
    switch (f) {
    case HC_FMT_F16: ((uint16_t *)data)[i] = hc_f32_to_f16(v); break;
    case HC_FMT_BF16: ((uint16_t *)data)[i] = hc_f32_to_bf16(v); break;
    case HC_FMT_F8E8M0: ((uint8_t *)data)[i] = (uint8_t)(126 + rnd() % 3); break;
    case HC_FMT_F32: ((float *)data)[i] = v; break;
    default: ((uint8_t *)data)[i] = (uint8_t)hc_format_encode(f, v); break;
    }
}

static void put_half(hc_format_id f, void *data, int64_t i, float v)
{
    ((uint16_t *)data)[i] = f == HC_FMT_BF16 ? hc_f32_to_bf16(v) : hc_f32_to_f16(v);
}

static void make_pre(const hc_layer_config *c, const hc_layer_meta *m, hc_layer_tensors *pre)
{
    int moe = m->is_moe, b = m->weight_bits;
    int64_t E = m->E, N = m->N, K = m->K, G0 = c->group_size > 0 ? K / c->group_size : 1;
    memset(pre, 0, sizeof *pre);
    mk(&pre->weight, HC_DT_I32, moe, E, 2, N, K * b / 32);
    uint32_t *w = pre->weight.data;
    for (size_t i = 0; i < pre->weight.nbytes / 4; i++) w[i] = rnd() ^ (rnd() << 16);
    if (c->scale_type == HC_SCALE_BLOCK) {
        mk(&pre->weight_scale, HC_DT_F32, moe, E, 2, N / c->group_size_n, K / c->group_size);
    } else if (c->scale_type != HC_SCALE_TENSOR) {
        mk(&pre->weight_scale, hc_dtype_of_format(c->scale_format), moe, E, 2, N, G0);
    }
    size_t ns = pre->weight_scale.data ? pre->weight_scale.nbytes * 8 /
                                             (size_t)hc_dtype_bits(pre->weight_scale.dtype) : 0;
    for (size_t i = 0; i < ns; i++) put_scale(c->scale_format, pre->weight_scale.data, (int64_t)i);
    if (c->has_zero_point && c->is_fp_zero_point) {
        mk(&pre->zero_point, hc_dtype_of_format(c->param_format), moe, E, 2, N, G0);
        for (size_t i = 0; i < pre->zero_point.nbytes / 2; i++)
            put_half(c->param_format, pre->zero_point.data, (int64_t)i,
                     frnd(0.0f, (float)((1 << b) - 1)));
    } else if (c->has_zero_point) {
        mk(&pre->zero_point, HC_DT_I32, moe, E, 2, N * b / 32, G0);
        uint32_t *z = pre->zero_point.data;
        for (size_t i = 0; i < pre->zero_point.nbytes / 4; i++) z[i] = rnd() ^ (rnd() << 16);
    }
    if (c->scale_2_channel) { /* per output row, in the layer dtype */
        mk(&pre->global_scale, hc_dtype_of_format(c->param_format), moe, E, 1, N, 0);
        for (int64_t i = 0; i < (moe ? E : 1) * N; i++)
            put_half(c->param_format, pre->global_scale.data, i, frnd(0.25f, 4.0f));
    } else if (c->scale_type == HC_SCALE_TENSOR || c->scale_type == HC_SCALE_GROUP_TENSOR ||
               (c->scale_type != HC_SCALE_BLOCK && !m->scale2_channel && rnd() % 3 == 0)) {
        /* (fused e8m0 x int8 makes the second scale per channel: no per-tensor input) */
        int64_t ge = moe ? E : 1;
        assert_int_equal(hc_tensor_alloc(&pre->global_scale, HC_DT_F32, 1, &ge, NULL), HC_OK);
        for (int64_t e = 0; e < ge; e++) ((float *)pre->global_scale.data)[e] = frnd(0.5f, 3.0f);
    }
    if (rnd() % 2) {
        mk(&pre->bias, hc_dtype_of_format(c->param_format), moe, E, 1, N, 0);
        for (size_t i = 0; i < pre->bias.nbytes / 2; i++)
            put_half(c->param_format, pre->bias.data, (int64_t)i, frnd(-4.0f, 4.0f));
    }
}

/* Equal as numbers, or both NaN (random fp8 weight codes include NaN). */
static int same(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

typedef struct {
    int combos, exact_checked;
} tally;

static void run_one(const hc_layer_config *c, int moe, int64_t E, int64_t N, int64_t K,
                    tally *t)
{
    hc_layer_meta m;
    hc_error err = {0};
    if (hc_layer_plan(c, moe, E, N, K, &m, &err) != HC_OK) return;
    hc_layer_tensors pre, post;
    make_pre(c, &m, &pre);
    if (hc_layer_transform(c, &m, &pre, &post, &err) != HC_OK)
        fail_msg("transform %s x %s: %s", hc_format_get(c->weight_format)->name,
                 hc_format_get(c->act_format)->name, err.msg);
    float *src = malloc((size_t)(E * N * K) * sizeof(float));
    float *dec = malloc((size_t)(E * m.Np * m.Kp) * sizeof(float));
    float *sb = calloc((size_t)(E * N), sizeof(float)), *db = calloc((size_t)(E * m.Np), sizeof(float));
    assert_true(src && dec && sb && db);
    assert_int_equal(hc_dequant_pre(c, &m, &pre, src, sb, &err), HC_OK);
    if (hc_verify_decode(c, &m, &post, dec, db, &err) != HC_OK) fail_msg("decode: %s", err.msg);
    int lossless = hc_dequant_pre_lossless(c, &m, &pre);
    int64_t bad = 0, first = -1;
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                float s = src[(e * N + n) * K + k], d = dec[(e * m.Np + n) * m.Kp + k];
                if (!same(s, d)) {
                    if (first < 0) first = (e * N + n) * K + k;
                    bad++;
                }
            }
    for (int64_t e = 0; pre.bias.data && e < E; e++)
        for (int64_t n = 0; n < N; n++) bad += !same(sb[e * N + n], db[e * m.Np + n]);
    /* int16 weight scales are never planned, and make_pre's e8m0 bytes (126..128)
     * fold without shifting a code */
    assert_true(lossless);
    {
        if (bad)
            fail_msg("%s x %s sm%d %s %s zp=%d fp=%d moe=%d: %lld mismatches (first flat %lld: "
                     "src %g dec %g)", hc_format_get(c->weight_format)->name,
                     hc_format_get(c->act_format)->name, c->sm,
                     hc_scale_type_name(c->scale_type), hc_format_get(c->scale_format)->name,
                     c->has_zero_point, c->is_fp_zero_point, moe, (long long)bad,
                     (long long)first, src[first], dec[(first / K / N) * m.Np * m.Kp +
                     (first / K % N) * m.Kp + first % K]);
        t->exact_checked++;
    }
    t->combos++;
    free(src);
    free(dec);
    free(sb);
    free(db);
    hc_layer_tensors_free(&pre);
    hc_layer_tensors_free(&post);
}

static const hc_format_id weights[] = {
    HC_FMT_UINT1, HC_FMT_UINT2, HC_FMT_UINT3, HC_FMT_UINT4, HC_FMT_UINT5, HC_FMT_UINT6,
    HC_FMT_UINT7, HC_FMT_UINT8, HC_FMT_F4E2M1, HC_FMT_F6E3M2, HC_FMT_F8E4M3, HC_FMT_F8E5M2,
    HC_FMT_F5E2M2};
static const hc_format_id acts[] = {HC_FMT_F16, HC_FMT_BF16, HC_FMT_F8E4M3,
                                    HC_FMT_F8E5M2, HC_FMT_INT8, HC_FMT_INT4};

typedef struct {
    hc_scale_type type;
    hc_format_id fmt;
    int64_t gs, gn;
} scale_case;

static const scale_case scales[] = {
    {HC_SCALE_CHANNEL, HC_FMT_F16, 0, 0},   {HC_SCALE_GROUP, HC_FMT_BF16, 128, 0},
    {HC_SCALE_GROUP, HC_FMT_F16, 64, 0},    {HC_SCALE_GROUP, HC_FMT_F8E4M3, 128, 0},
    {HC_SCALE_GROUP, HC_FMT_F8E8M0, 32, 0}, {HC_SCALE_GROUP, HC_FMT_F8E5M2, 128, 0},
    {HC_SCALE_BLOCK, HC_FMT_F32, 128, 64},  {HC_SCALE_TENSOR, HC_FMT_F16, 0, 0},
    {HC_SCALE_GROUP_TENSOR, HC_FMT_F8E4M3, 64, 0},
};

static void test_roundtrip_all(void **state)
{
    (void)state;
    tally t = {0};
    for (size_t wi = 0; wi < sizeof weights / sizeof weights[0]; wi++)
        for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
            for (int smi = 0; smi < 3; smi++)
                for (size_t si = 0; si < sizeof scales / sizeof scales[0]; si++)
                    for (int zp = 0; zp < 3; zp++) {
                        hc_layer_config c;
                        memset(&c, 0, sizeof c);
                        c.weight_format = weights[wi];
                        c.act_format = acts[ai];
                        c.param_format = (wi + si) % 2 ? HC_FMT_BF16 : HC_FMT_F16;
                        c.sm = smi == 2 ? 80 : smi ? 90 : 89;
                        c.scale_type = scales[si].type;
                        c.scale_format = scales[si].fmt;
                        c.group_size = scales[si].gs;
                        c.group_size_n = scales[si].gn;
                        c.has_zero_point = zp > 0;
                        c.is_fp_zero_point = zp == 2;
                        /* unsupported combinations (e.g. block scales with integer
                         * activations) are refused by hc_layer_plan inside run_one */
                        int moe = (wi + ai + si) % 4 == 0;
                        int64_t N = c.scale_type == HC_SCALE_BLOCK ? 128 : 96;
                        run_one(&c, moe, moe ? 2 : 1, N, 256, &t);
                    }
    printf("decoder round trip: %d combinations, all exact\n", t.combos);
    assert_true(t.combos > 300);
}

/* Padded shapes (N, K not multiples of vLLM's 256 / 128): MXFP4 x bf16 (e8m0
 * padding is 1.0), MXFP4 x fp8 / int8 (the fused-e8m0 path: K padding with
 * each row's largest exponent), uint3 with zero points. */
static void test_fused_and_padding(void **state)
{
    (void)state;
    tally t = {0};
    hc_format_id fa[] = {HC_FMT_F8E4M3, HC_FMT_INT8, HC_FMT_BF16};
    for (int i = 0; i < 3; i++)
        for (int moe = 0; moe < 2; moe++) {
            hc_layer_config c = {.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E8M0,
                                 .act_format = fa[i], .param_format = HC_FMT_BF16,
                                 .scale_type = HC_SCALE_GROUP, .group_size = 32, .sm = 90};
            run_one(&c, moe, moe ? 3 : 1, 80, 96, &t);
        }
    hc_layer_config c = {.weight_format = HC_FMT_UINT3, .scale_format = HC_FMT_F16,
                         .act_format = HC_FMT_F8E4M3, .param_format = HC_FMT_F16,
                         .scale_type = HC_SCALE_GROUP, .group_size = 32, .sm = 89,
                         .has_zero_point = 1};
    run_one(&c, 0, 1, 160, 96, &t);
    assert_int_equal(t.combos, 7);
}

/* A dense N x K layer planned and transformed from make_pre's tensors, with
 * its exact source (the dequantized pre tensors) for a lossless check. */
typedef struct {
    hc_layer_meta m;
    hc_layer_tensors pre, post;
    float *src, *bias;
    hc_verify_source s;
} lossless_layer;

static void lossless_open(const hc_layer_config *c, int64_t N, int64_t K, lossless_layer *L)
{
    hc_error err = {0};
    assert_int_equal(hc_layer_plan(c, 0, 1, N, K, &L->m, &err), HC_OK);
    make_pre(c, &L->m, &L->pre);
    assert_int_equal(hc_layer_transform(c, &L->m, &L->pre, &L->post, &err), HC_OK);
    L->src = malloc((size_t)(N * K) * sizeof(float));
    L->bias = calloc((size_t)N, sizeof(float));
    assert_true(L->src && L->bias);
    assert_int_equal(hc_dequant_pre(c, &L->m, &L->pre, L->src, L->bias, &err), HC_OK);
    hc_verify_source s = {L->src, L->pre.bias.data ? L->bias : NULL, 1, 0, 0.0,
                          NULL, NULL, NULL, NULL};
    L->s = s;
}

static void lossless_close(lossless_layer *L)
{
    free(L->src);
    free(L->bias);
    hc_layer_tensors_free(&L->pre);
    hc_layer_tensors_free(&L->post);
}

/* A per-channel second scale: exact round trip (tiles, flat, packed-K and
 * fused e8m0, dense and MoE, padded), and a changed row of it fails the layer. */
static void test_channel_scale_2(void **state)
{
    (void)state;
    tally t = {0};
    static const struct { hc_format_id w, s, a; int64_t gs; } cases[] = {
        {HC_FMT_F4E2M1, HC_FMT_F8E4M3, HC_FMT_BF16, 16},
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_BF16, 128},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F8E4M3, 128}, /* packed-K on sm90 */
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_INT8, 128},   /* flat */
        {HC_FMT_F4E2M1, HC_FMT_F8E8M0, HC_FMT_F8E4M3, 32}, /* fused e8m0: folded per row */
        {HC_FMT_F4E2M1, HC_FMT_F8E8M0, HC_FMT_INT8, 32},   /* fused e8m0: input x factor */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int moe = 0; moe < 2; moe++)
            for (int sm = 80; sm <= 90; sm += 10) {
                hc_layer_config c = {.weight_format = cases[i].w, .scale_format = cases[i].s,
                                     .act_format = cases[i].a, .param_format = HC_FMT_BF16,
                                     .scale_type = HC_SCALE_GROUP, .group_size = cases[i].gs,
                                     .scale_2_channel = 1, .sm = sm};
                if (cases[i].a == HC_FMT_F8E4M3) c.sm = sm == 80 ? 89 : 90;
                run_one(&c, moe, moe ? 2 : 1, 96, 256, &t);
            }
    assert_int_equal(t.combos, 24);
    hc_layer_config c = {.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E4M3,
                         .act_format = HC_FMT_F16, .param_format = HC_FMT_F16,
                         .scale_type = HC_SCALE_GROUP, .group_size = 16, .scale_2_channel = 1,
                         .sm = 90};
    lossless_layer L;
    lossless_open(&c, 256, 256, &L);
    hc_verify_params p = {.tokens = 8, .seed = 7};
    hc_verify_metrics r;
    hc_error err = {0};
    assert_int_equal(hc_verify_layer(&c, &L.m, &L.post, &L.s, &p, &r, &err), HC_OK);
    assert_true(r.pass);
    ((uint16_t *)L.post.global_scale.data)[40] ^= 0x0400; /* one row's scale off by 2^+-1 */
    assert_int_equal(hc_verify_layer(&c, &L.m, &L.post, &L.s, &p, &r, &err), HC_OK);
    assert_false(r.pass);
    assert_true(r.lossless_mismatches > 0);
    lossless_close(&L);
}

/* One flipped word in the tile layout is found by hc_verify_layer. */
static void test_corruption_detected(void **state)
{
    (void)state;
    hc_layer_config c = {.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_F16,
                         .act_format = HC_FMT_F16, .param_format = HC_FMT_F16,
                         .scale_type = HC_SCALE_GROUP, .group_size = 128, .sm = 90};
    lossless_layer L;
    lossless_open(&c, 128, 256, &L);
    hc_verify_params p = {.tokens = 8, .seed = 7};
    hc_verify_metrics r;
    hc_error err = {0};
    assert_int_equal(hc_verify_layer(&c, &L.m, &L.post, &L.s, &p, &r, &err), HC_OK);
    assert_true(r.pass);
    assert_int_equal(r.lossless_mismatches, 0);
    assert_true(r.gemm_rel_err == 0.0);
    ((uint32_t *)L.post.weight.data)[77] ^= 0xFFFFFFFFu;
    assert_int_equal(hc_verify_layer(&c, &L.m, &L.post, &L.s, &p, &r, &err), HC_OK);
    printf("flipped word: %lld mismatches, gemm_rel_err %g, reason: %s\n",
           (long long)r.lossless_mismatches, r.gemm_rel_err, r.reason);
    assert_false(r.pass);
    assert_true(r.lossless_mismatches > 0 && r.lossless_mismatches <= 8);
    /* a wrong global/scale (NaN) is reported as non-finite */
    ((uint32_t *)L.post.weight.data)[77] ^= 0xFFFFFFFFu;
    ((uint16_t *)L.post.weight_scale.data)[3] = 0x7E00;
    assert_int_equal(hc_verify_layer(&c, &L.m, &L.post, &L.s, &p, &r, &err), HC_OK);
    assert_false(r.pass);
    assert_true(r.nonfinite > 0);
    lossless_close(&L);
}

/* Source rows from an array: copied into buf for even rows, pointed at for
 * odd ones (the verifier takes both). */
typedef struct {
    const float *w;
    int64_t K;
} row_ctx;

static const float *array_row(void *ctx, int64_t r, float *buf)
{
    const row_ctx *rc = ctx;
    if (r % 2) return rc->w + r * rc->K;
    memcpy(buf, rc->w + r * rc->K, (size_t)rc->K * sizeof *buf);
    return buf;
}

/* Columns [k0, k1) of row r (a source read by parts). */
static void array_part(void *ctx, int64_t r, int64_t k0, int64_t k1, float *buf)
{
    const row_ctx *rc = ctx;
    memcpy(buf, rc->w + r * rc->K + k0, (size_t)(k1 - k0) * sizeof *buf);
}

/* Metrics of one layer verified in panels and as a whole weight, each with
 * the source in memory, read by rows, read by parts, and read by parts with
 * the rows' energies given. */
static void both_paths(const hc_layer_config *c, const hc_layer_meta *m,
                       const hc_layer_tensors *post, const hc_verify_source *s)
{
    hc_verify_params p = {.tokens = 7, .seed = 3};
    hc_verify_metrics a, b;
    hc_error err = {0};
    assert_int_equal(hc_verify_layer(c, m, post, s, &p, &a, &err), HC_OK);
    row_ctx rc = {s->weight, m->K};
    hc_verify_source by_rows = *s;
    by_rows.weight = NULL;
    by_rows.rows = array_row;
    by_rows.rows_ctx = &rc;
    hc_verify_source by_parts = by_rows;
    by_parts.part = array_part;
    /* the rows' energies given (as the quantizer's pass takes them) */
    const int64_t rows = m->E * m->N;
    double *energy = malloc((size_t)rows * sizeof *energy);
    assert_non_null(energy);
    for (int64_t r = 0; r < rows; r++)
        energy[r] = hc_verify_row_energy(s->weight + r * m->K, m->K, 0);
    hc_verify_source with_energy = by_parts;
    with_energy.energy = energy;
    /* i 3, 4: by parts, slab by slab in panels; 5, 6: with the energies */
    for (int i = 0; i < 7; i++) {
        p.whole_weight = i != 1 && i != 3 && i != 5;
        assert_int_equal(hc_verify_layer(c, m, post, i > 4 ? &with_energy : i > 2 ? &by_parts
                                                     : i ? &by_rows : s,
                                         &p, &b, &err), HC_OK);
        assert_memory_equal(&a, &b, sizeof a);
    }
    free(energy);
}

/* Panels (no padding) give the whole-weight path's metrics: lossless
 * sources (equal, and one element off), float sources, quantized
 * activations, bias, experts, and a corrupted word and scale. */
static void test_panels_equal_whole(void **state)
{
    (void)state;
    static const struct {
        hc_format_id w, s, a;
        hc_scale_type type;
        int64_t gs;
        int zp;
    } cases[] = {
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_BF16, HC_SCALE_GROUP, 128, 0},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_INT8, HC_SCALE_GROUP, 128, 1},
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_BF16, HC_SCALE_GROUP, 128, 2},
        {HC_FMT_UINT4, HC_FMT_F16, HC_FMT_F8E4M3, HC_SCALE_GROUP, 64, 0},
        {HC_FMT_UINT8, HC_FMT_BF16, HC_FMT_BF16, HC_SCALE_CHANNEL, 0, 0},
        {HC_FMT_F4E2M1, HC_FMT_F8E8M0, HC_FMT_BF16, HC_SCALE_GROUP, 32, 0},
        {HC_FMT_UINT4, HC_FMT_BF16, HC_FMT_INT8, HC_SCALE_GROUP, 128, 0}, /* flat */
        {HC_FMT_F4E2M1, HC_FMT_F8E4M3, HC_FMT_BF16, HC_SCALE_GROUP_TENSOR, 16, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int moe = 0; moe < 2; moe++) {
            hc_layer_config c = {.weight_format = cases[i].w, .scale_format = cases[i].s,
                                 .act_format = cases[i].a, .param_format = HC_FMT_BF16,
                                 .scale_type = cases[i].type, .group_size = cases[i].gs,
                                 .sm = 90, .has_zero_point = cases[i].zp > 0,
                                 .is_fp_zero_point = cases[i].zp == 2};
            const int64_t E = moe ? 2 : 1, N = 256, K = 2048, n = E * N * K; /* Np == N: panels */
            hc_layer_meta m;
            hc_error err = {0};
            assert_int_equal(hc_layer_plan(&c, moe, E, N, K, &m, &err), HC_OK);
            if (!m.use_flat_weight) /* else the panels would not run (unpadded only) */
                assert_int_equal(m.Np, m.N);
            hc_layer_tensors pre, post;
            make_pre(&c, &m, &pre);
            assert_int_equal(hc_layer_transform(&c, &m, &pre, &post, &err), HC_OK);
            float *src = malloc((size_t)n * sizeof(float)), *bias = calloc((size_t)(E * N), 4);
            assert_non_null(src);
            assert_non_null(bias);
            assert_int_equal(hc_dequant_pre(&c, &m, &pre, src, bias, &err), HC_OK);
            hc_verify_source s = {src, pre.bias.data ? bias : NULL, 1, 0, 0.0,
                                  NULL, NULL, NULL, NULL};
            both_paths(&c, &m, &post, &s);
            const float keep = src[5 * K + 9]; /* a lossless layer with one element off */
            src[5 * K + 9] = keep * 1.5f + 1.0f;
            both_paths(&c, &m, &post, &s);
            src[5 * K + 9] = keep;
            for (int64_t j = 0; j < n; j += 5) src[j] *= 1.001f; /* a float source */
            s.lossless = 0;
            s.float_source = 1;
            both_paths(&c, &m, &post, &s);
            ((uint32_t *)post.weight.data)[77] ^= 0xFFFFFFFFu;
            if (post.weight_scale.dtype == HC_DT_F16 || post.weight_scale.dtype == HC_DT_BF16)
                ((uint16_t *)post.weight_scale.data)[3] = 0x7FC0; /* NaN in both */
            both_paths(&c, &m, &post, &s);
            free(src);
            free(bias);
            hc_layer_tensors_free(&pre);
            hc_layer_tensors_free(&post);
        }
}

/* Panel decoding in slabs equals the whole-weight decoder, with the vector
 * forms (a quad of lanes at a time and the code tables, AVX-512 and AVX2,
 * where this CPU runs them) and the
 * element-by-element form: 16/8-bit activations, 1/2/3/4/8-bit codes,
 * packed-K (4 and 2 bits x fp8), integer and float zero points, experts, fused e8m0 (x fp8:
 * split-sign slots; x int8: per-channel second scale), a per-channel second
 * scale. (Flat layers, W8A8 and W4A4, are decoded whole.) */
static void test_panel_forms_equal_whole(void **state)
{
    (void)state;
    static const struct {
        hc_format_id w, a;
        int64_t gs;
        int zp, s2c;
    } cases[] = {
        {HC_FMT_UINT4, HC_FMT_F16, 128, 0, 0}, {HC_FMT_UINT4, HC_FMT_F8E4M3, 128, 1, 0},
        {HC_FMT_UINT2, HC_FMT_F16, 64, 1, 0},  {HC_FMT_UINT3, HC_FMT_F16, 128, 0, 0},
        {HC_FMT_UINT8, HC_FMT_F16, 128, 0, 0}, {HC_FMT_UINT2, HC_FMT_F8E4M3, 128, 0, 0},
        {HC_FMT_F4E2M1, HC_FMT_F16, 32, 0, 0}, {HC_FMT_F4E2M1, HC_FMT_F8E4M3, 32, 0, 0},
        {HC_FMT_F4E2M1, HC_FMT_INT8, 32, 0, 0}, {HC_FMT_UINT4, HC_FMT_F16, 128, 0, 1},
        {HC_FMT_UINT4, HC_FMT_F16, 128, 2, 0},  {HC_FMT_UINT4, HC_FMT_F16, 64, 1, 0},
        {HC_FMT_UINT1, HC_FMT_F16, 128, 0, 0},  {HC_FMT_UINT1, HC_FMT_F16, 128, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int moe = 0; moe < 2; moe++) {
            hc_layer_config c = {.weight_format = cases[i].w, .scale_format = HC_FMT_F16,
                                 .act_format = cases[i].a, .param_format = HC_FMT_F16,
                                 .scale_type = HC_SCALE_GROUP, .group_size = cases[i].gs,
                                 .sm = 90, .has_zero_point = cases[i].zp > 0,
                                 .is_fp_zero_point = cases[i].zp == 2,
                                 .scale_2_channel = cases[i].s2c};
            if (cases[i].w == HC_FMT_F4E2M1) c.scale_format = HC_FMT_F8E8M0;
            const int64_t E = moe ? 2 : 1, N = 128, K = 2048;
            hc_layer_meta m;
            hc_error err = {0};
            if (hc_layer_plan(&c, moe, E, N, K, &m, &err) != HC_OK)
                fail_msg("case %zu: not planned (%s)", i, err.msg);
            assert_false(m.use_flat_weight);
            assert_int_equal(m.use_fused_e8m0, cases[i].w == HC_FMT_F4E2M1 && cases[i].a != HC_FMT_F16);
            hc_layer_tensors pre, post;
            make_pre(&c, &m, &pre);
            assert_int_equal(hc_layer_transform(&c, &m, &pre, &post, &err), HC_OK);
            float *W = malloc((size_t)(E * m.Np * m.Kp) * sizeof(float));
            float *a = malloc((size_t)(64 * 1024) * sizeof(float)), *b = malloc((size_t)(64 * 1024) * sizeof(float));
            assert_true(W && a && b);
            assert_int_equal(hc_verify_decode(&c, &m, &post, W, NULL, &err), HC_OK);
            hc_verify_decoder *fast, *slow, *mid;
            assert_int_equal(hc_verify_decoder_open(&c, &m, &post, NULL, &fast, &err), HC_OK);
            assert_int_equal(hc_verify_decoder_open(&c, &m, &post, NULL, &slow, &err), HC_OK);
            assert_int_equal(hc_verify_decoder_open(&c, &m, &post, NULL, &mid, &err), HC_OK);
            hc_verify_decoder_portable(slow);
            hc_verify_decoder_avx2(mid);
            for (int64_t e = 0; e < E; e++)
                for (int64_t nb = 0; nb < m.Np / 64; nb++)
                    for (int64_t k0 = 0; k0 < m.Kp; k0 += 1024) {
                        hc_verify_decode_panel_part(fast, e, nb, k0, k0 + 1024, a, 1024);
                        hc_verify_decode_panel_part(slow, e, nb, k0, k0 + 1024, b, 1024);
                        assert_memory_equal(a, b, (size_t)(64 * 1024) * sizeof(float));
                        hc_verify_decode_panel_part(mid, e, nb, k0, k0 + 1024, b, 1024);
                        assert_memory_equal(a, b, (size_t)(64 * 1024) * sizeof(float));
                        for (int64_t r = 0; r < 64; r++)
                            assert_memory_equal(a + r * 1024, W + (e * m.Np + 64 * nb + r) * m.Kp + k0,
                                                1024 * sizeof(float));
                    }
            hc_verify_decoder_free(fast);
            hc_verify_decoder_free(slow);
            hc_verify_decoder_free(mid);
            free(W);
            free(a);
            free(b);
            hc_layer_tensors_free(&pre);
            hc_layer_tensors_free(&post);
        }
}

/* hc_dequant_pre_row_part gives the columns hc_dequant_pre gives, bit for
 * bit, in its fastest and its element-by-element forms, for parts that
 * start and end inside groups and words, span several or none: integer and
 * float zero points, float codes, 2-, 3- (straddling), 4- and 8-bit codes,
 * channel, block and tensor scales, a per-channel second scale, experts. A
 * part placed one column off, or a group's parameters taken for the wrong
 * group, fails. */
static void test_dequant_parts(void **state)
{
    (void)state;
    static const struct {
        hc_format_id w, s;
        hc_scale_type type;
        int64_t gs, gn;
        int zp, s2c;
    } cases[] = {
        {HC_FMT_UINT4, HC_FMT_F16, HC_SCALE_GROUP, 128, 0, 1, 0},
        {HC_FMT_UINT2, HC_FMT_F16, HC_SCALE_GROUP, 64, 0, 0, 0},
        {HC_FMT_UINT4, HC_FMT_F16, HC_SCALE_CHANNEL, 0, 0, 0, 0},
        {HC_FMT_UINT4, HC_FMT_F16, HC_SCALE_GROUP, 64, 0, 2, 0},
        {HC_FMT_UINT3, HC_FMT_F16, HC_SCALE_GROUP, 128, 0, 0, 0},
        {HC_FMT_UINT8, HC_FMT_F16, HC_SCALE_CHANNEL, 0, 0, 0, 0},
        {HC_FMT_F4E2M1, HC_FMT_F8E4M3, HC_SCALE_GROUP, 16, 0, 0, 1},
        {HC_FMT_F8E4M3, HC_FMT_F32, HC_SCALE_BLOCK, 128, 128, 0, 0},
        {HC_FMT_F8E4M3, HC_FMT_F32, HC_SCALE_TENSOR, 0, 0, 0, 0},
    };
    static const int64_t parts[][2] = {{0, 1024}, {1024, 2048}, {0, 2048}, {5, 77},
                                       {100, 300}, {127, 129}, {2000, 2048}, {64, 64}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int moe = 0; moe < 2; moe++) {
            hc_layer_config c = {.weight_format = cases[i].w, .scale_format = cases[i].s,
                                 .act_format = HC_FMT_F16, .param_format = HC_FMT_F16,
                                 .scale_type = cases[i].type, .group_size = cases[i].gs,
                                 .group_size_n = cases[i].gn, .sm = 90,
                                 .has_zero_point = cases[i].zp > 0,
                                 .is_fp_zero_point = cases[i].zp == 2,
                                 .scale_2_channel = cases[i].s2c};
            const int64_t E = moe ? 2 : 1, N = 128, K = 2048;
            hc_layer_meta m;
            hc_error err = {0};
            if (hc_layer_plan(&c, moe, E, N, K, &m, &err) != HC_OK)
                fail_msg("case %zu: not planned (%s)", i, err.msg);
            hc_layer_tensors pre;
            make_pre(&c, &m, &pre);
            float *W = malloc((size_t)(E * N * K) * sizeof(float)), out[2048];
            assert_non_null(W);
            assert_int_equal(hc_dequant_pre(&c, &m, &pre, W, NULL, &err), HC_OK);
            for (int64_t r = 0; r < E * N; r += 37)
                for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++) {
                    const int64_t k0 = parts[p][0], k1 = parts[p][1];
                    for (int portable = 0; portable < 2; portable++) {
                        hc_dequant_pre_row_part(&c, &m, &pre, r, k0, k1, portable, out);
                        for (int64_t k = k0; k < k1; k++)
                            if (memcmp(&out[k - k0], &W[r * K + k], sizeof out[0]) != 0)
                                fail_msg("case %zu moe %d row %lld k %lld portable %d: %g vs %g",
                                         i, moe, (long long)r, (long long)k, portable,
                                         out[k - k0], W[r * K + k]);
                    }
                }
            free(W);
            hc_layer_tensors_free(&pre);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all),
        cmocka_unit_test(test_fused_and_padding),
        cmocka_unit_test(test_corruption_detected),
        cmocka_unit_test(test_channel_scale_2),
        cmocka_unit_test(test_panels_equal_whole),
        cmocka_unit_test(test_panel_forms_equal_whole),
        cmocka_unit_test(test_dequant_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
