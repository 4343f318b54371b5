/* hc_ckpt_quark.c - AMD Quark exports (quant_method "quark"), the subset
 * vLLM 0.33 serves through Humming (quark/schemes): the weight config of
 * global_quant_config, or of the layer_quant_config entry that names the
 * layer (hc_ckpt_quark_for).
 *   int4 / uint4 per_group (QuarkW4A16Int4): weight I32 [K, ceil(N/8)], the
 *     weight transposed and packed along N by quark.torch.utils.pack
 *     Pack_4_bits, 8 nibbles per word, column 8w + order[i] in nibble i
 *     (pack_method "reorder": order 0,2,4,6,1,3,5,7, AutoAWQ's; "order":
 *     natural); weight_scale [G, N]; asymmetric: weight_zero_point I32
 *     [G, ceil(N/8)] packed the same way. int4 nibbles are two's complement:
 *     code = nibble XOR 8 (for the zero point too, so q - z is unchanged).
 *   fp8_e4m3 per_tensor / per_channel / per_block (QuarkW8A8Fp8): weight
 *     F8_E4M3 [N, K], weight_scale a multiplier (scalar, [N] / [N, 1], or
 *     [ceil(N/bn), ceil(K/bk)]).
 *   fp4 per_group 32, e8m0 scales (QuarkOCP_MX MXFP4): weight U8 [N, K/2]
 *     (Pack_fp4: element 2j in the low nibble), weight_scale U8 [N, K/32].
 * Static activation scales (input_scale) are not carried: Humming's weight-
 * only path computes with 16-bit activations; the layer's note says so. */
#include "hc_ckpt.h"
#include "hc_parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int reorder_nibble[8] = {0, 4, 1, 5, 2, 6, 3, 7}; /* nibble of column n % 8 */

/* Nibble of column n of row r of an I32 [rows, ceil(N/8)] Pack_4_bits tensor. */
static uint8_t pack4_at(const hc_st_tensor *t, int64_t r, int64_t n, int reorder, int xor8)
{
    int64_t wc = t->shape[1];
    int nib = reorder ? reorder_nibble[n % 8] : (int)(n % 8);
    uint8_t v = (uint8_t)((hc_ckpt_uint_at(t, r * wc + n / 8) >> (4 * nib)) & 15u);
    return (uint8_t)(xor8 ? v ^ 8 : v);
}

typedef struct {
    const hc_st_tensor *w, *s, *zp;
    int64_t N, K, G, gs;
    int reorder, xor8;
} q4_geom;

/* Shapes of an int4 layer: N from the scales (the packed width may pad N). */
static hc_status q4_shapes(const hc_ckpt_quark *qk, hc_st_model *model, const char *prefix,
                           q4_geom *g, hc_error *err)
{
    g->w = hc_ckpt_find(model, prefix, ".weight");
    g->s = hc_ckpt_find(model, prefix, ".weight_scale");
    g->zp = hc_ckpt_find(model, prefix, ".weight_zero_point");
    g->reorder = strcmp(qk->pack_method, "reorder") == 0;
    g->xor8 = strcmp(qk->dtype, "int4") == 0;
    if (g->w->dtype != HC_DT_I32 || g->w->ndim != 2 || !g->s || g->s->ndim != 2 ||
        !hc_ckpt_is_float_dtype(g->s->dtype))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: Quark %s per_group needs weight I32 [K, N/8] and a "
                "float weight_scale [K/group, N]", prefix, qk->dtype);
    HC_TRY(hc_ckpt_check_dims(g->w, err));
    HC_TRY(hc_ckpt_check_dims(g->s, err));
    g->K = g->w->shape[0];
    g->N = g->s->shape[1];
    g->gs = qk->group_size;
    if (g->K % g->gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of the group size %lld",
                prefix, (long long)g->K, (long long)g->gs);
    g->G = g->K / g->gs;
    if ((g->N + 7) / 8 != g->w->shape[1])
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): [%lld, %lld] does not hold N=%lld (from "
                "weight_scale) 4-bit columns", g->w->name, g->w->file, (long long)g->K,
                (long long)g->w->shape[1], (long long)g->N);
    HC_TRY(hc_ckpt_check_shape(g->s, 2, (int64_t[2]){g->G, g->N}, "[K/group, N]", err));
    if (qk->sym && g->zp == NULL) return HC_OK;
    if (!g->zp || g->zp->dtype != HC_DT_I32)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_zero_point: asymmetric Quark %s needs I32 zero "
                "points [K/group, N/8]", prefix, qk->dtype);
    return hc_ckpt_check_shape(g->zp, 2, (int64_t[2]){g->G, g->w->shape[1]},
                               "[K/group, ceil(N/8)]", err);
}

/* The column (within 8) of each nibble of a Pack_4_bits word: the inverse
 * of reorder_nibble, or the nibble itself. */
static const int *col_of_nibble(const q4_geom *g)
{
    static const int col_reorder[8] = {0, 2, 4, 6, 1, 3, 5, 7}, col_order[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    return g->reorder ? col_reorder : col_order;
}

/* The codes of whole words (N and K multiples of 8) by the N-packed word
 * transpose (column of nibble p: the inverse of reorder_nibble, or p), into
 * a pooled buffer when the run has one (every word is written); int4's
 * two's complement nibbles XOR 8 afterwards, as pack4_at. */
static void put_words(const q4_geom *g, const hc_ckpt_read_opts *opts, hc_quant_result *q)
{
    const int64_t words = g->N * g->K / 8;
    hc_ckpt_pooled_codes(opts, q);
    hc_ckpt_words_from_n_packed(g->w->data, g->N, g->K, col_of_nibble(g), q->codes);
    if (!g->xor8) return;
    uint32_t *w = q->codes;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(words * 8))
    for (int64_t i = 0; i < words; i++) w[i] ^= 0x88888888u;
}

/* The element paths (the tests' general_codes, or codes whose N or K is not
 * whole words): a byte per zero point and / or code, then packed. */
static hc_status put_bytes(const q4_geom *g, int zeros, int codes, hc_quant_result *q, hc_error *err)
{
    const int64_t N = g->N, K = g->K, G = g->G;
    uint8_t *buf = malloc((size_t)(N * (K > G ? K : G)) + 1);
    HC_CHECK_ALLOC(err, buf, "Quark int4 codes");
    hc_status st = HC_OK;
    if (zeros) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < G; k++) buf[n * G + k] = pack4_at(g->zp, k, n, g->reorder, g->xor8);
        st = hc_ckpt_pack_zeros(q, buf, err);
    }
    if (st == HC_OK && codes) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) buf[n * K + k] = pack4_at(g->w, k, n, g->reorder, g->xor8);
        hc_ckpt_pack_codes(q, buf);
    }
    free(buf);
    return st;
}

/* int4 / uint4 per_group (W4A16). */
static hc_status read_int4(const hc_ckpt_quark *qk, hc_st_model *model, const char *prefix,
                           const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err)
{
    q4_geom g = {0};
    HC_TRY(q4_shapes(qk, model, prefix, &g, err));
    int64_t N = g.N, K = g.K, G = g.G;
    HC_TRY(hc_ckpt_check_int_scales(g.s, out, err));
    int asym = !qk->sym;
    hc_quant_desc d = {.weight_format = HC_FMT_UINT4,
                       .scale_format = hc_ckpt_scale_format(g.s->dtype, g.s, opts),
                       .group_size = (int)g.gs, .zero_point = asym ? HC_ZP_INT : HC_ZP_NONE};
    if (d.scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.weight_scale: float32 scales not exact in 16 bits; "
                "requantize with --format", prefix);
    if (asym && N % 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: N=%lld: N-packed zero points need N*4 to be a "
                "multiple of 32", prefix, (long long)N);
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, G, !opts->meta_only, err));
    const int raw = !opts->general_codes && hc_ckpt_raw16_scales_copy(g.s, N, G, 1, N, &out->q, NULL) == 0;
    for (int64_t k = 0; !raw && k < G; k++)
        for (int64_t n = 0; n < N; n++)
            if (hc_ckpt_put_scale(&out->q, n * G + k, hc_ckpt_float_at(g.s, k * N + n)) != 0)
                HC_FAIL(err, HC_ERR_INTERNAL, "%s: scale not exact in its storage format",
                        g.s->name);
    const int words = !opts->general_codes, code_words = words && N % 8 == 0 && K % 8 == 0;
    if (asym && words) /* N % 8 == 0 already (checked above) */
        hc_ckpt_zeros_from_n_packed(g.zp->data, N, G, col_of_nibble(&g), g.xor8 ? 0x88888888u : 0, &out->q);
    if (!opts->meta_only && code_words) put_words(&g, opts, &out->q);
    const int zero_bytes = asym && !words, code_bytes = !opts->meta_only && !code_words;
    if (zero_bytes || code_bytes) HC_TRY(put_bytes(&g, zero_bytes, code_bytes, &out->q, err));
    snprintf(out->source_format, sizeof out->source_format, "quark %s g%lld %s (pack_method %s)",
             qk->dtype, (long long)g.gs, asym ? "asym" : "sym", qk->pack_method);
    return HC_OK;
}

/* fp4 per_group 32 with e8m0 scales (OCP MXFP4). */
static hc_status read_mxfp4(hc_st_model *model, const char *prefix,
                            const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    if (w->dtype != HC_DT_U8 || w->ndim != 2 || !s ||
        (s->dtype != HC_DT_U8 && s->dtype != HC_DT_F8_E8M0))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: Quark MXFP4 needs weight U8 [N, K/2] and weight_scale "
                "U8 / F8_E8M0 [N, K/32]", prefix);
    HC_TRY(hc_ckpt_check_dims(w, err));
    int64_t N = w->shape[0], K = w->shape[1] * 2;
    if (K % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of 32", prefix,
                (long long)K);
    HC_TRY(hc_ckpt_check_shape(s, 2, (int64_t[2]){N, K / 32}, "[N, K/32]", err));
    HC_TRY(hc_ckpt_check_scales(s, NULL, err));
    hc_quant_desc d = {.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E8M0,
                       .group_size = 32};
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, K / 32, !opts->meta_only, err));
    memcpy(out->q.scales, s->data, s->nbytes);
    if (!opts->meta_only) memcpy(out->q.codes, w->data, w->nbytes);
    snprintf(out->source_format, sizeof out->source_format, "quark fp4 mxfp4 (e8m0 group 32)");
    return HC_OK;
}

/* fp8_e4m3 per_tensor / per_channel / per_block. */
static hc_status read_fp8(const hc_ckpt_quark *qk, hc_st_model *model, const char *prefix,
                          const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err)
{
    hc_ckpt_fp8_geom g = {0};
    if (!strcmp(qk->qscheme, "per_tensor")) g.strategy = "tensor";
    else if (!strcmp(qk->qscheme, "per_channel")) g.strategy = "channel";
    else { g.bn = qk->block[0]; g.bk = qk->block[1]; }
    HC_TRY(hc_ckpt_read_float8(hc_ckpt_find(model, prefix, ".weight"),
                               hc_ckpt_find(model, prefix, ".weight_scale"), &g, opts, out, err));
    snprintf(out->source_format, sizeof out->source_format, "quark fp8_e4m3 %s", qk->qscheme);
    return HC_OK;
}

hc_status hc_ckpt_read_quark(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err)
{
    (void)kind;
    const hc_ckpt_quark *qk = hc_ckpt_quark_for(cfg, prefix);
    hc_status st;
    if (!strcmp(qk->dtype, "int4") || !strcmp(qk->dtype, "uint4"))
        st = read_int4(qk, model, prefix, opts, out, err);
    else if (!strcmp(qk->dtype, "fp4"))
        st = read_mxfp4(model, prefix, opts, out, err);
    else
        st = read_fp8(qk, model, prefix, opts, out, err);
    if (st == HC_OK && (hc_ckpt_find(model, prefix, ".input_scale") ||
                        hc_ckpt_find(model, prefix, ".output_scale")))
        hc_ckpt_note(out, "Quark static activation scales (input_scale / output_scale) are "
                     "not carried: Humming computes with 16-bit activations");
    return st;
}

static int quark_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    return cfg->method == HC_CKPT_QUARK && t->ndim == 2 &&
           (t->dtype == HC_DT_I32 || t->dtype == HC_DT_U8 || t->dtype == HC_DT_F8_E4M3);
}

static const char *const quark_tensors[] = {".weight", ".weight_scale", ".weight_zero_point",
                                            ".input_scale", ".input_zero_point", ".output_scale",
                                            ".output_zero_point", NULL};
const hc_ckpt_reader hc_ckpt_reader_quark = {HC_CK_QUARK, ".weight", quark_claims, quark_tensors,
                                             hc_ckpt_read_quark, NULL};
