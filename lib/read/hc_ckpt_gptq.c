/* hc_ckpt_gptq.c - GPTQ (formats spec 3): qweight packed along K as one
 * little-endian bit stream per column (3-bit fields straddle words), qzeros
 * packed along N, scales [G, N], optional g_idx. Zero points: v1
 * ("gptq", stored = zero - 1) or gptq_v2 (stored = zero), with the common
 * mislabelled case (v1 label, v2 zeros) detected for symmetric files.
 *
 * Humming form: codes uintB row-packed along K (the same bit stream, one row
 * per output channel), symmetric -> no zero point (implicit 2^(b-1)),
 * otherwise integer zero points packed along N, or float zero points when a
 * true zero is 2^b (a v1 stored field of all ones) which b bits cannot hold. */
#include "hc_ckpt.h"
#include "hc_ckpt_simd.h"
#include "hc_parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Field of `bits` bits at bit position pos of the bit stream formed by the
 * words of column col (rows in increasing order) of a [rows, cols] tensor of
 * W-bit words. */
static uint32_t col_field(const hc_st_tensor *t, int64_t cols, int64_t col, int64_t pos, int bits)
{
    int W = hc_dtype_bits(t->dtype);
    uint32_t v = 0;
    for (int i = 0; i < bits; i++) {
        int64_t p = pos + i;
        uint64_t word = hc_ckpt_uint_at(t, (p / W) * cols + col);
        v |= (uint32_t)((word >> (p % W)) & 1u) << i;
    }
    return v;
}

/* Field of a row bit stream: element (row, pos) of a [rows, cols] tensor. */
static uint32_t row_field(const hc_st_tensor *t, int64_t cols, int64_t row, int64_t pos, int bits)
{
    int W = hc_dtype_bits(t->dtype);
    uint32_t v = 0;
    for (int i = 0; i < bits; i++) {
        int64_t p = pos + i;
        uint64_t word = hc_ckpt_uint_at(t, row * cols + p / W);
        v |= (uint32_t)((word >> (p % W)) & 1u) << i;
    }
    return v;
}

/* With 32-bit words and no act-order permutation, column n's bit stream is
 * already output row n's words (both little-endian, first code in the low
 * bits): the repack is a transpose of [rows, cols] words into [cols, rows].
 * Tiles of 64 x 64 words: with AVX2 as 8 x 8 blocks in registers, else
 * through a local copy (the strides of both sides are often powers of two,
 * whose lines collide in the same cache sets). */
#if HC_CKPT_X86
/* Tile (r0, c0) of nr x nc words, both multiples of 8, 8 x 8 at a time. */
HC_CKPT_AVX2 static void tile_avx2(const unsigned char *s, int64_t rows, int64_t cols, int64_t r0,
                                   int64_t c0, int64_t nr, int64_t nc, uint32_t *dst)
{
    for (int64_t r = r0; r < r0 + nr; r += 8)
        for (int64_t c = c0; c < c0 + nc; c += 8) {
            __m256i v[8];
            for (int i = 0; i < 8; i++)
                v[i] = _mm256_loadu_si256((const __m256i *)(s + 4 * (size_t)((r + i) * cols + c)));
            hc_ckpt_transpose8x8(v);
            for (int i = 0; i < 8; i++)
                _mm256_storeu_si256((__m256i *)(dst + (c + i) * rows + r), v[i]);
        }
}
#else
static void tile_avx2(const unsigned char *s, int64_t rows, int64_t cols, int64_t r0, int64_t c0,
                      int64_t nr, int64_t nc, uint32_t *dst)
{
    (void)s, (void)rows, (void)cols, (void)r0, (void)c0, (void)nr, (void)nc, (void)dst;
}
#endif

static void words_transpose(const void *src, int64_t rows, int64_t cols, uint32_t *dst)
{
    enum { T = 64 };
    const unsigned char *s = src;
    const int vec = hc_ckpt_have_avx2();
    int64_t tiles_r = (rows + T - 1) / T, tiles = tiles_r * ((cols + T - 1) / T);
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * cols))
    for (int64_t t = 0; t < tiles; t++) {
        uint32_t tile[T][T + 1];
        int64_t r0 = t % tiles_r * T, c0 = t / tiles_r * T;
        int64_t nr = r0 + T < rows ? T : rows - r0, nc = c0 + T < cols ? T : cols - c0;
        if (vec && nr % 8 == 0 && nc % 8 == 0) {
            tile_avx2(s, rows, cols, r0, c0, nr, nc, dst);
            continue;
        }
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < nc; c++)
                memcpy(&tile[r][c], s + 4 * (size_t)((r0 + r) * cols + c0 + c), 4);
        for (int64_t c = 0; c < nc; c++)
            for (int64_t r = 0; r < nr; r++) dst[(c0 + c) * rows + r0 + r] = tile[r][c];
    }
}

static int is_int_words(hc_dtype dt)
{
    return dt == HC_DT_I32 || dt == HC_DT_I16 || dt == HC_DT_I8 || dt == HC_DT_I64 ||
           dt == HC_DT_U32 || dt == HC_DT_U8 || dt == HC_DT_U16 || dt == HC_DT_U64;
}

/* Zero fields of 32-bit words whose width b divides 32 (no field straddles
 * two words): whole words, shifted out field by field. */
static void zeros_by_words(const hc_st_tensor *qz, int64_t G, int64_t N, int b, uint8_t *z)
{
    const unsigned char *base = qz->data;
    int64_t cols = qz->shape[1], per = 32 / b;
    uint32_t mask = b == 32 ? ~0u : (1u << b) - 1u;
    for (int64_t g = 0; g < G; g++)
        for (int64_t w = 0; w < cols && w * per < N; w++) {
            uint32_t word;
            memcpy(&word, base + 4 * (size_t)(g * cols + w), 4);
            for (int64_t i = 0; i < per && w * per + i < N; i++, word >>= b & 31)
                z[g * N + w * per + i] = (uint8_t)(word & mask);
        }
}

/* Decoded stored zero fields, [G, N]. qzeros must be [G, ceil(N*b/W)].
 * general: the element path only (the tests compare the two). */
static hc_status read_zeros(const hc_st_tensor *qz, int64_t G, int64_t N, int b, int general,
                            uint8_t **out, const char *prefix, hc_error *err)
{
    if (!qz) HC_FAIL(err, HC_ERR_FORMAT, "%s.qzeros: missing", prefix);
    int W = hc_dtype_bits(qz->dtype);
    if (!is_int_words(qz->dtype))
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected integer words, got %s", qz->name,
                qz->file, hc_dtype_name(qz->dtype));
    HC_TRY(hc_ckpt_check_shape(qz, 2, (int64_t[2]){G, (N * b + W - 1) / W},
                               "[G, ceil(N*bits/word bits)]", err));
    uint8_t *z = malloc((size_t)(G * N) + 1);
    HC_CHECK_ALLOC(err, z, "GPTQ zeros");
    if (!general && W == 32 && 32 % b == 0 && b <= 8) {
        zeros_by_words(qz, G, N, b, z);
        *out = z;
        return HC_OK;
    }
    for (int64_t g = 0; g < G; g++)
        for (int64_t n = 0; n < N; n++) z[g * N + n] = (uint8_t)row_field(qz, qz->shape[1], g, n * b, b);
    *out = z;
    return HC_OK;
}

/* 1 if every stored zero equals v. */
static int all_equal(const uint8_t *z, int64_t count, int v)
{
    for (int64_t i = 0; i < count; i++)
        if (z[i] != v) return 0;
    return 1;
}

typedef struct {
    const hc_st_tensor *qw, *qz, *sc, *gi;
    int b;
    int64_t N, K, gs, G;
} gptq_geom;

/* Tensors present with the right dtypes and every shape checked, before any
 * division: qweight [K*b/W, N], scales [G, N], g_idx [K]. */
static hc_status gptq_shapes(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                             gptq_geom *g, hc_error *err)
{
    g->qw = hc_ckpt_find(model, prefix, ".qweight");
    g->qz = hc_ckpt_find(model, prefix, ".qzeros");
    g->sc = hc_ckpt_find(model, prefix, ".scales");
    g->gi = hc_ckpt_find(model, prefix, ".g_idx");
    g->b = cfg->bits;
    if (hc_ckpt_find(model, prefix, ".zeros"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.zeros: very old GPTQ-for-LLaMa float zeros are not "
                "read", prefix);
    if (g->b < 1 || g->b > 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: GPTQ %d-bit: supported are 2, 3, 4 and 8", prefix, g->b);
    if (!g->qw || !g->sc || !is_int_words(g->qw->dtype) || g->qw->ndim != 2 ||
        !hc_ckpt_is_float_dtype(g->sc->dtype) || g->sc->ndim != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: GPTQ layer needs qweight (integer words [K*b/W, N]) "
                "and float scales [G, N]", prefix);
    HC_TRY(hc_ckpt_check_dims(g->qw, err));
    HC_TRY(hc_ckpt_check_dims(g->sc, err));
    int W = hc_dtype_bits(g->qw->dtype);
    g->N = g->qw->shape[1];
    g->K = g->qw->shape[0] * W / g->b;
    if (g->qw->shape[0] * W % g->b != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.qweight: %lld rows of %d-bit words are not whole %d-bit "
                "codes", prefix, (long long)g->qw->shape[0], W, g->b);
    g->gs = cfg->group_size > 0 ? cfg->group_size : g->K;
    g->G = (g->K + g->gs - 1) / g->gs;
    char what[96];
    snprintf(what, sizeof what, "[G, N] for group size %lld", (long long)cfg->group_size);
    HC_TRY(hc_ckpt_check_shape(g->sc, 2, (int64_t[2]){g->G, g->N}, what, err));
    if (g->K % g->gs != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of the group size %lld "
                "(a partial last group cannot be held by Humming's group scales)", prefix,
                (long long)g->K, (long long)g->gs);
    if (g->K * g->b % 32 != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K*%d must be a multiple of 32 (K=%lld)", prefix,
                g->b, (long long)g->K);
    return HC_OK;
}

/* 16-bit scales stored in their own format (hc_ckpt_raw16_scales: every finite
 * value is exact, its bits are what hc_ckpt_put_scale stores), [G, N] ->
 * [N, G] as bits. 0 done, 1 another format or a NaN / Inf (the element path
 * then decides). */
static int raw16_scales(const gptq_geom *g, hc_quant_result *q)
{
    if (!hc_ckpt_raw16_scales(g->sc, q)) return 1;
    uint16_t inf = g->sc->dtype == HC_DT_F16 ? 0x7C00u : 0x7F80u;
    uint16_t *dst = (uint16_t *)(void *)q->scales;
    const unsigned char *src = g->sc->data;
    for (int64_t k = 0; k < g->G; k++)
        for (int64_t n = 0; n < g->N; n++) {
            uint16_t b;
            memcpy(&b, src + 2 * (size_t)(k * g->N + n), 2);
            if ((b & inf) == inf) return 1;
            dst[n * g->G + k] = b;
        }
    return 0;
}

/* Scales (checked by the caller) into q, n-major. general: the element path
 * only (the tests compare the two). */
static hc_status put_scales(const gptq_geom *g, int general, hc_quant_result *q, hc_error *err)
{
    if (!general && raw16_scales(g, q) == 0) return HC_OK;
    for (int64_t k = 0; k < g->G; k++)
        for (int64_t n = 0; n < g->N; n++)
            if (hc_ckpt_put_scale(q, n * g->G + k, hc_ckpt_float_at(g->sc, k * g->N + n)) != 0)
                HC_FAIL(err, HC_ERR_INTERNAL, "%s: scale %lld not exact in its storage format",
                        g->sc->name, (long long)(k * g->N + n));
    return HC_OK;
}

hc_status hc_ckpt_read_gptq(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err)
{
    (void)kind;
    gptq_geom geo = {0};
    HC_TRY(gptq_shapes(cfg, model, prefix, &geo, err));
    HC_TRY(hc_ckpt_check_int_scales(geo.sc, out, err));
    const hc_st_tensor *qw = geo.qw, *sc = geo.sc, *gi = geo.gi;
    int b = geo.b;
    int64_t N = geo.N, K = geo.K, gs = geo.gs, G = geo.G;

    /* zero points: v1 / v2, mislabel detection */
    uint8_t *zs = NULL;
    HC_TRY(read_zeros(geo.qz, G, N, b, opts->general_codes, &zs, prefix, err));
    int half = 1 << (b - 1), v2 = cfg->gptq_v2;
    const char *label = v2 ? "gptq_v2" : "gptq (v1)";
    if (cfg->sym) {
        if (!v2 && all_equal(zs, G * N, half)) {
            v2 = 1;
            hc_ckpt_note(out, "checkpoint_format says \"gptq\" (v1) but every qzeros field is "
                         "%d = 2^(bits-1): mislabelled gptq_v2 zeros, read as v2 (reading them "
                         "as v1 would shift every weight by one scale step)", half);
        } else if (v2 && all_equal(zs, G * N, half - 1)) {
            v2 = 0;
            hc_ckpt_note(out, "checkpoint_format says \"gptq_v2\" but every qzeros field is %d "
                         "= 2^(bits-1)-1: v1 zeros, read as v1", half - 1);
        }
    }
    int off = v2 ? 0 : 1, need_zp = 0;
    int64_t overflow = 0;
    for (int64_t i = 0; i < G * N; i++) {
        int z = zs[i] + off;
        if (z != half) need_zp = 1;
        overflow += z > (1 << b) - 1;
    }
    if (cfg->sym && need_zp)
        hc_ckpt_note(out, "sym=true but qzeros are not the symmetric constant: zero points "
                     "kept as stored (%s)", v2 ? "v2" : "v1, +1");
    if (overflow) /* AutoGPTQ disagrees with itself here: docs/checkpoints.md */
        hc_ckpt_note(out, "%lld of %lld v1 qzeros fields are %d (all ones: AutoGPTQ stores zero "
                     "0 as -1, which also sets the higher fields of its word); read as zero %d "
                     "(field + 1), as AutoGPTQ's CUDA / exllama kernels and vLLM's gptq_gemm "
                     "compute, in float zero points; AutoGPTQ's old torch path reads 0 instead",
                     (long long)overflow, (long long)(G * N), (1 << b) - 1, 1 << b);

    /* act-order */
    int32_t *perm = NULL;
    int ao = hc_ckpt_act_order_perm(gi, K, gs, G, prefix, &perm, err); /* channel: G = 1 */
    if (ao < 0) { free(zs); return err ? err->status : HC_ERR_FORMAT; }
    if (ao && opts->act_order == HC_ACT_ORDER_REFUSE) {
        free(zs);
        free(perm);
        return hc_ckpt_refuse_act_order(prefix, err);
    }

    hc_quant_desc d = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                       .scale_format = hc_ckpt_scale_format(sc->dtype, sc, opts),
                       .group_size = cfg->group_size > 0 ? (int)gs : HC_QUANT_GROUP_CHANNEL,
                       .zero_point = !need_zp ? HC_ZP_NONE : overflow ? HC_ZP_FLOAT : HC_ZP_INT};
    hc_status st = HC_OK;
    if (d.scale_format == HC_FMT_COUNT)
        st = hc_error_set(err, HC_ERR_UNSUPPORTED, "%s.scales: float32 scales that are not "
                          "exact in float16 or bfloat16 cannot be held losslessly; requantize "
                          "with --format", prefix);
    if (st == HC_OK && d.zero_point == HC_ZP_INT && N * b % 32 != 0)
        st = hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: N*%d must be a multiple of 32 for "
                          "N-packed zero points (N=%lld)", prefix, b, (long long)N);
    if (st == HC_OK) st = hc_ckpt_alloc(&out->q, &d, 1, N, K, N, G, !opts->meta_only, err);
    if (st == HC_OK) st = put_scales(&geo, opts->general_codes, &out->q, err);
    if (st != HC_OK) { free(zs); free(perm); return st; }
    hc_quant_result *q = &out->q;
    q->zp_float_format = opts->param_format;
    if (d.zero_point != HC_ZP_NONE) {
        uint8_t *zt = malloc((size_t)(N * G) + 1);
        if (!zt) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory (zeros)");
        for (int64_t g = 0; zt && g < G; g++)
            for (int64_t n = 0; n < N; n++) {
                int z = zs[g * N + n] + off;
                if (d.zero_point == HC_ZP_FLOAT)
                    q->zero_points_f[n * G + g] = opts->param_format == HC_FMT_BF16
                                                      ? hc_f32_to_bf16((float)z)
                                                      : hc_f32_to_f16((float)z);
                else
                    zt[n * G + g] = (uint8_t)z;
            }
        if (zt && d.zero_point == HC_ZP_INT) st = hc_ckpt_pack_zeros(q, zt, err);
        free(zt);
    }
    free(zs);
    if (st == HC_OK && !opts->meta_only && perm == NULL && hc_dtype_bits(qw->dtype) == 32 &&
        !opts->general_codes) {
        /* every word is written: a pooled buffer serves (no fresh pages per layer) */
        hc_ckpt_pooled_codes(opts, q);
        words_transpose(qw->data, K * b / 32, N, q->codes);
    } else if (st == HC_OK && !opts->meta_only) {
        uint8_t *codes = malloc((size_t)(N * K) + 1);
        if (!codes) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory (GPTQ codes)");
        for (int64_t n = 0; codes && n < N; n++)
            for (int64_t k = 0; k < K; k++) codes[n * K + k] = (uint8_t)col_field(qw, N, n, k * b, b);
        if (codes && perm) st = hc_ckpt_permute_columns(codes, N, K, perm, err);
        if (codes && st == HC_OK) hc_ckpt_pack_codes(q, codes);
        free(codes);
    }
    out->perm = perm;
    snprintf(out->source_format, sizeof out->source_format, "gptq uint%d %s%s %s%s", b,
             cfg->group_size > 0 ? "g" : "channel", cfg->group_size > 0 ? "" : "",
             cfg->sym ? "sym" : "asym", v2 ? " (v2 zeros)" : " (v1 zeros)");
    if (cfg->group_size > 0) {
        char g[24];
        snprintf(g, sizeof g, "g%lld", (long long)gs);
        snprintf(out->source_format, sizeof out->source_format, "gptq uint%d %s %s %s%s", b, g,
                 cfg->sym ? "sym" : "asym", v2 ? "v2 zeros" : "v1 zeros",
                 ao ? " act-order" : "");
    }
    (void)label;
    return st;
}

static int gptq_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    (void)t;
    return cfg->method != HC_CKPT_AWQ; /* AutoRound's auto_gptq packing included */
}

static const char *const gptq_tensors[] = {".qweight", ".qzeros", ".scales", ".g_idx", NULL};
const hc_ckpt_reader hc_ckpt_reader_gptq = {HC_CK_GPTQ, ".qweight", gptq_claims, gptq_tensors,
                                            hc_ckpt_read_gptq, NULL};
