/* hc_ckpt_ct.c - compressed-tensors (formats spec 5).
 *   pack-quantized: weight_packed I32 [N, ceil(K/pack)], pack = 32/b values
 *     per word, no value straddles a word (3-bit: 10 per word), offset binary
 *     (stored = q + 2^(b-1)); weight_zero_point I32 [ceil(N/pack), G] packed
 *     along N with the same offset; weight_shape (N, K); weight_g_idx.
 *     Humming: the stored fields are the uintB codes (stored_q - stored_zp =
 *     q - zp), re-packed as Humming's straddling bit stream, so every width
 *     1..8 is lossless when K*b is a multiple of 32.
 *   int-quantized: weight I8 [N, K]; Humming code = byte XOR 0x80 (offset
 *     binary) - also for "naive-quantized", where Humming forgets the offset.
 *   float-quantized: weight F8 + tensor / channel / group / block scales.
 *   nvfp4-pack-quantized: U8 [N, K/2] (low nibble = even k), F8_E4M3 group
 *     16 scales, weight_global_scale a DIVISOR: Humming's global scale is
 *     fp32(1 / weight_global_scale), exact only when that reciprocal is.
 *   mxfp4-pack-quantized: U8 [N, K/2] and U8 E8M0 scales [N, K/32]. */
#include "hc_ckpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *group_format(const hc_ckpt_config *cfg, const hc_ckpt_ct_group *g)
{
    return g->format[0] ? g->format : cfg->ct_format;
}

static hc_status check_fp4_e8m0(const hc_st_tensor *s, hc_error *err)
{
    int64_t n = hc_shape_numel(s->ndim, s->shape);
    for (int64_t i = 0; i < n; i++)
        if (hc_ckpt_uint_at(s, i) == 0xFF)
            HC_FAIL(err, HC_ERR_FORMAT, "%s: E8M0 scale byte 0xFF (NaN) at element %lld; "
                    "refused", s->name, (long long)i);
    return HC_OK;
}

/* FP4 weights (nvfp4 / mxfp4): U8 [N, K/2], the byte stream is the row stream. */
static hc_status read_fp4(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                          const hc_ckpt_ct_group *grp, const hc_ckpt_read_opts *opts,
                          hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight_packed");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const hc_st_tensor *gsc = hc_ckpt_find(model, prefix, ".weight_global_scale");
    const char *fmt = group_format(cfg, grp);
    if (!s || w->ndim != 2 || s->ndim != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: FP4 layer needs weight_packed U8 [N, K/2] and a 2-D "
                "weight_scale", prefix);
    int nv = s->dtype == HC_DT_F8_E4M3;
    if (!nv && s->dtype != HC_DT_U8 && s->dtype != HC_DT_F8_E8M0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: FP4 scales must be F8_E4M3 (nvfp4) or "
                "U8 / F8_E8M0 (mxfp4)", prefix);
    if (nv && !gsc)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_global_scale: missing for nvfp4 (format %s)",
                prefix, fmt);
    int64_t N = w->shape[0], K = w->shape[1] * 2;
    int64_t gs = grp->group_size > 0 ? grp->group_size : nv ? 16 : 32;
    if (K % gs || s->shape[0] != N || s->shape[1] != K / gs)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: expected [%lld, %lld] (group %lld)", prefix,
                (long long)N, (long long)(K / gs), (long long)gs);
    if (!nv) HC_TRY(check_fp4_e8m0(s, err));
    hc_quant_desc d = {.weight_format = HC_FMT_F4E2M1,
                       .scale_format = nv ? HC_FMT_F8E4M3 : HC_FMT_F8E8M0,
                       .group_size = (int)gs, .global_scale = nv};
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, K / gs, !opts->meta_only, err));
    memcpy(out->q.scales, s->data, s->nbytes);
    if (!opts->meta_only) memcpy(out->q.codes, w->data, w->nbytes);
    if (nv) {
        double g = hc_ckpt_float_at(gsc, 0);
        if (!(g > 0) || !isfinite(g))
            HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_global_scale: %g is not a positive finite "
                    "divisor", prefix, g);
        float inv = (float)(1.0 / g);
        out->q.global_scale[0] = inv;
        if ((double)inv * g != 1.0) {
            out->lossless = 0;
            hc_ckpt_note(out, "weight_global_scale %.9g is a divisor whose reciprocal is not "
                         "exact in float32: Humming's multiplier 1/%.9g differs by at most one "
                         "float32 rounding per block scale", g, g);
        }
    }
    snprintf(out->source_format, sizeof out->source_format, "compressed-tensors %s",
             nv ? "nvfp4-pack-quantized (global scale is a divisor)" : "mxfp4-pack-quantized");
    return HC_OK;
}

/* int / float 8-bit unpacked (int-quantized, naive-quantized, float-quantized). */
static hc_status read_unpacked(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                               const hc_ckpt_ct_group *grp, const hc_ckpt_read_opts *opts,
                               hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const hc_st_tensor *zp = hc_ckpt_find(model, prefix, ".weight_zero_point");
    const char *fmt = group_format(cfg, grp);
    if (w->dtype != HC_DT_I8) { /* float-quantized */
        hc_ckpt_fp8_geom g = {0};
        if (strcmp(grp->strategy, "group") == 0) g.gs = grp->group_size;
        if (strcmp(grp->strategy, "block") == 0) { g.bn = grp->block[0]; g.bk = grp->block[1]; }
        if (zp) HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: float weights with zero points", prefix);
        HC_TRY(hc_ckpt_read_float8(w, s, &g, opts, out, err));
        snprintf(out->source_format, sizeof out->source_format, "compressed-tensors %s fp8 %s",
                 fmt, grp->strategy);
        return HC_OK;
    }
    int b = grp->num_bits > 0 ? grp->num_bits : 8;
    if (!s) HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: missing", prefix);
    int64_t N = w->shape[0], K = w->shape[1], ns = hc_shape_numel(s->ndim, s->shape);
    int64_t gs = strcmp(grp->strategy, "group") == 0 ? grp->group_size : 0;
    if (strcmp(grp->strategy, "block") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: integer weights with block scales are not read",
                prefix);
    int64_t G = gs > 0 ? K / gs : 1;
    if ((gs > 0 && (K % gs || ns != N * G)) || (gs <= 0 && ns != N && ns != 1) || K * b % 32)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: int-quantized shapes (weight [%lld, %lld], %lld "
                "scales, %d bits, strategy %s) do not agree", prefix, (long long)N, (long long)K,
                (long long)ns, b, grp->strategy);
    hc_quant_desc d = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                       .scale_format = hc_ckpt_scale_format(s->dtype, s, opts->param_format),
                       .group_size = gs > 0 ? (int)gs : HC_QUANT_GROUP_CHANNEL,
                       .zero_point = zp ? HC_ZP_INT : HC_ZP_NONE};
    if (d.scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.weight_scale: float32 scales not exact in 16 bits; "
                "requantize with --format", prefix);
    if (zp && (zp->dtype != HC_DT_I8 || hc_shape_numel(zp->ndim, zp->shape) != ns))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_zero_point: expected I8 of the scale's shape",
                prefix);
    if (zp && ns == 1)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: per-tensor zero points are not held by Humming",
                prefix);
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, G, !opts->meta_only, err));
    uint32_t half = 1u << (b - 1), mask = (1u << b) - 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++)
            hc_ckpt_put_scale(&out->q, n * G + g, hc_ckpt_float_at(s, ns == 1 ? 0 : n * G + g));
    if (zp) {
        uint8_t *z = malloc((size_t)(N * G) + 1);
        HC_CHECK_ALLOC(err, z, "zero points");
        for (int64_t i = 0; i < N * G; i++)
            z[i] = (uint8_t)(((uint32_t)(int8_t)hc_ckpt_uint_at(zp, i) + half) & mask);
        hc_ckpt_pack_zeros(&out->q, z);
        free(z);
    }
    if (!opts->meta_only) {
        uint8_t *codes = malloc((size_t)(N * K) + 1);
        HC_CHECK_ALLOC(err, codes, "codes");
        for (int64_t i = 0; i < N * K; i++) {
            int v = (int8_t)((const uint8_t *)w->data)[i];
            if (v < -(int)half || v > (int)half - 1) {
                free(codes);
                HC_FAIL(err, HC_ERR_FORMAT, "%s.weight: value %d at %lld is outside int%d",
                        prefix, v, (long long)i, b);
            }
            codes[i] = (uint8_t)((uint32_t)(v + (int)half) & mask); /* int8: byte XOR 0x80 */
        }
        hc_ckpt_pack_codes(&out->q, codes);
        free(codes);
    }
    snprintf(out->source_format, sizeof out->source_format, "compressed-tensors %s int%d %s%s",
             fmt, b, grp->strategy, zp ? " asym" : "");
    return HC_OK;
}

/* weight_shape -> N, K (I64 or I32). */
static hc_status read_shape(const hc_st_tensor *ws, const hc_st_tensor *w, int b, int64_t *N,
                            int64_t *K, const char *prefix, hc_error *err)
{
    int64_t pack = 32 / b;
    if (ws && hc_shape_numel(ws->ndim, ws->shape) == 2 &&
        (ws->dtype == HC_DT_I64 || ws->dtype == HC_DT_I32)) {
        *N = ws->dtype == HC_DT_I64 ? (int64_t)hc_ckpt_uint_at(ws, 0)
                                    : (int64_t)(int32_t)hc_ckpt_uint_at(ws, 0);
        *K = ws->dtype == HC_DT_I64 ? (int64_t)hc_ckpt_uint_at(ws, 1)
                                    : (int64_t)(int32_t)hc_ckpt_uint_at(ws, 1);
    } else {
        *N = w->shape[0];
        *K = w->shape[1] * pack;
    }
    if (*N != w->shape[0] || (*K + pack - 1) / pack != w->shape[1])
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_shape (%lld, %lld) does not match weight_packed "
                "[%lld, %lld] with %d-bit values", prefix, (long long)*N, (long long)*K,
                (long long)w->shape[0], (long long)w->shape[1], b);
    return HC_OK;
}

static hc_status read_packed(hc_st_model *model, const char *prefix,
                             const hc_ckpt_ct_group *grp, const hc_ckpt_read_opts *opts,
                             hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight_packed");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const hc_st_tensor *zp = hc_ckpt_find(model, prefix, ".weight_zero_point");
    const hc_st_tensor *gi = hc_ckpt_find(model, prefix, ".weight_g_idx");
    int b = grp->num_bits;
    if (strcmp(grp->type, "int") != 0 || b < 1 || b > 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: pack-quantized %s%d: supported are int1..int8",
                prefix, grp->type, b);
    if (w->dtype != HC_DT_I32 || w->ndim != 2 || !s)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: pack-quantized needs I32 weight_packed and "
                "weight_scale", prefix);
    int64_t N, K, pack = 32 / b;
    HC_TRY(read_shape(hc_ckpt_find(model, prefix, ".weight_shape"), w, b, &N, &K, prefix, err));
    const char *strat = grp->strategy;
    int64_t ns = hc_shape_numel(s->ndim, s->shape);
    int64_t gs = strcmp(strat, "group") == 0 || strcmp(strat, "tensor_group") == 0
                     ? grp->group_size : 0;
    if (strcmp(strat, "block") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: integer block scales are not read", prefix);
    if (gs > 0 && K % gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of the group size %lld",
                prefix, (long long)K, (long long)gs);
    int64_t G = gs > 0 ? K / gs : 1;
    if ((gs > 0 && ns != N * G) || (gs <= 0 && ns != N && ns != 1))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: %lld values for strategy %s (N=%lld, "
                "G=%lld)", prefix, (long long)ns, strat, (long long)N, (long long)G);
    if (K * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Humming row-packs %d-bit codes along K and needs "
                "K*%d to be a multiple of 32 (K=%lld)", prefix, b, b, (long long)K);
    if (zp && (zp->ndim != 2 || zp->shape[0] != (N + pack - 1) / pack || zp->shape[1] != G ||
               zp->dtype != HC_DT_I32))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_zero_point: expected I32 [ceil(N/%lld), %lld]",
                prefix, (long long)pack, (long long)G);
    if (zp && N * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: N*%d must be a multiple of 32 for N-packed zero "
                "points", prefix, b);
    int32_t *perm = NULL;
    int ao = gs > 0 ? hc_ckpt_act_order_perm(gi, K, gs, G, prefix, &perm, err) : 0;
    if (ao < 0) return err ? err->status : HC_ERR_FORMAT;
    if (ao && opts->act_order == HC_ACT_ORDER_REFUSE) {
        free(perm);
        return hc_ckpt_refuse_act_order(prefix, err);
    }
    out->perm = perm;
    hc_quant_desc d = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                       .scale_format = hc_ckpt_scale_format(s->dtype, s, opts->param_format),
                       .group_size = gs > 0 ? (int)gs : HC_QUANT_GROUP_CHANNEL,
                       .zero_point = zp ? HC_ZP_INT : HC_ZP_NONE};
    if (d.scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.weight_scale: float32 scales not exact in 16 bits; "
                "requantize with --format", prefix);
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, G, !opts->meta_only, err));
    uint32_t mask = (1u << b) - 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++)
            hc_ckpt_put_scale(&out->q, n * G + g, hc_ckpt_float_at(s, ns == 1 ? 0 : n * G + g));
    if (zp) {
        uint8_t *z = malloc((size_t)(N * G) + 1);
        HC_CHECK_ALLOC(err, z, "zero points");
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                z[n * G + g] = (uint8_t)((hc_ckpt_uint_at(zp, (n / pack) * G + g) >>
                                          (b * (n % pack))) & mask);
        hc_ckpt_pack_zeros(&out->q, z);
        free(z);
    }
    if (!opts->meta_only) {
        uint8_t *codes = malloc((size_t)(N * K) + 1);
        HC_CHECK_ALLOC(err, codes, "codes");
        int64_t wc = w->shape[1];
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                codes[n * K + k] = (uint8_t)((hc_ckpt_uint_at(w, n * wc + k / pack) >>
                                              (b * (k % pack))) & mask);
        hc_status st = perm ? hc_ckpt_permute_columns(codes, N, K, perm, err) : HC_OK;
        if (st == HC_OK) hc_ckpt_pack_codes(&out->q, codes);
        free(codes);
        HC_TRY(st);
    }
    snprintf(out->source_format, sizeof out->source_format,
             "compressed-tensors pack-quantized int%d %s%s%s", b, strat, zp ? " asym" : " sym",
             ao ? " act-order" : "");
    return HC_OK;
}

hc_status hc_ckpt_read_ct(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                          const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                          hc_error *err)
{
    const hc_ckpt_ct_group *grp = &cfg->ct[hc_ckpt_ct_group_for(cfg, prefix)];
    if (strcmp(grp->actorder, "group") == 0 || strcmp(grp->actorder, "dynamic") == 0) {
        /* handled through weight_g_idx; nothing else to check */
    }
    switch (kind) {
    case HC_CK_CT_FP4: return read_fp4(cfg, model, prefix, grp, opts, out, err);
    case HC_CK_CT_UNPACKED: return read_unpacked(cfg, model, prefix, grp, opts, out, err);
    default: return read_packed(model, prefix, grp, opts, out, err);
    }
}
