/* hc_ckpt_ct.c - compressed-tensors (formats spec 5).
 *   pack-quantized: pack_to_int32, offset binary (stored = q + 2^(b-1)).
 *     Before 0.18: weight_packed I32 [N, ceil(K/pack)], pack = 32/b values per
 *     word, no value straddles a word (3-bit: 10 per word). From 0.18: dense,
 *     one little-endian bit stream per row, [N, ceil(K*b/32)] (3/5/6/7-bit
 *     codes straddle words; 1/2/4/8 bits are the same in both).
 *     weight_zero_point I32 packed along N the same way ([words(N), G]);
 *     weight_shape (N, K); weight_g_idx (GPTQ's meaning; any -1: none).
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
#include "hc_parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ct_act_order(hc_st_model *model, const char *prefix, int64_t K, int64_t G,
                        const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err);

static const char *group_format(const hc_ckpt_config *cfg, const hc_ckpt_ct_group *g)
{
    return g->format[0] ? g->format : cfg->ct_format;
}

/* e2m1 code c (0..15) as a value. */
static double e2m1_value(unsigned c)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return c & 8 ? -mag[c & 7] : mag[c & 7];
}

/* compressed-tensors dequantizes nvfp4 as code * fp32(s / g); Humming (and
 * hc_dequantize) as fp32(code * s * fp32(1 / g)). Per (scale byte, code)
 * pair: 1 if the two float32 values differ, and the relative difference. */
static int nv_pair_differs(uint8_t sbyte, unsigned code, double g, float inv, double *rel)
{
    double s = hc_format_decode(HC_FMT_F8E4M3, sbyte), c = e2m1_value(code);
    float ct = (float)(c * (double)(float)(s / g)), hm = (float)(c * s * (double)inv);
    *rel = ct != 0 ? fabs((double)hm - ct) / fabs((double)ct) : fabs((double)hm);
    return ct != hm;
}

/* nvfp4: the one weight_global_scale (a divisor) -> Humming's multiplier
 * fp32(1/g), as vLLM's Humming path. Exact whenever every (scale, code) pair
 * the layer holds decodes to the same float32 both ways; otherwise the layer
 * is lossy and the note gives the measured difference (elements, max relative). */
static hc_status fp4_global(const hc_st_tensor *gsc, const hc_st_tensor *s, const hc_st_tensor *w,
                            const char *prefix, const char *fmt, hc_ckpt_layer *out, hc_error *err)
{
    double g = 0, rel, worst = 0;
    if (!gsc)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_global_scale: missing for nvfp4 (format %s)",
                prefix, fmt);
    HC_TRY(hc_ckpt_scalar_scale(gsc, 1, &g, err));
    float inv = (float)(1.0 / g);
    out->q.global_scale[0] = inv;
    if ((double)inv * g == 1.0) return HC_OK;
    uint8_t bad[256][16] = {{0}};
    int64_t nsc = (int64_t)s->nbytes, differ = 0, per = w ? (int64_t)(w->nbytes * 2) / nsc : 0;
    for (int64_t i = 0; i < nsc; i++) {
        uint8_t sb = ((const uint8_t *)s->data)[i];
        for (unsigned c = 0; c < 16; c++)
            if (!bad[sb][c] && nv_pair_differs(sb, c, g, inv, &rel)) {
                bad[sb][c] = 1;
                worst = rel > worst ? rel : worst;
            }
    }
    for (int64_t j = 0; w && j < per * nsc; j++) { /* elements j of scale block j / per */
        uint8_t byte = ((const uint8_t *)w->data)[j / 2];
        differ += bad[((const uint8_t *)s->data)[j / per]][j % 2 ? byte >> 4 : byte & 15];
    }
    if (worst == 0) return HC_OK;
    out->lossless = 0;
    hc_ckpt_note(out, "weight_global_scale %.9g is a divisor whose reciprocal is not exact in "
                 "float32: Humming's multiplier fp32(1/g) decodes some (scale, code) pairs one "
                 "float32 rounding away from compressed-tensors' code * fp32(s/g); measured: "
                 "max relative difference %.3g%s", g, worst, w ? "" : " (codes not read)");
    if (w) hc_ckpt_note(out, "%lld of %lld elements differ", (long long)differ,
                        (long long)(per * nsc));
    return HC_OK;
}

hc_status hc_ckpt_ct_source_values(hc_st_model *model, const char *prefix, float *out,
                                   hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight_packed");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const hc_st_tensor *gsc = hc_ckpt_find(model, prefix, ".weight_global_scale");
    double g = 0;
    if (!w || !s || !gsc || w->dtype != HC_DT_U8 || s->dtype != HC_DT_F8_E4M3 || w->ndim != 2 ||
        s->ndim != 2 || s->shape[0] != w->shape[0] || (w->shape[1] * 2) % s->shape[1])
        HC_FAIL(err, HC_ERR_FORMAT, "%s: not a compressed-tensors NVFP4 layer", prefix);
    HC_TRY(hc_ckpt_scalar_scale(gsc, 1, &g, err));
    int64_t N = w->shape[0], K = w->shape[1] * 2, per = K / s->shape[1];
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            uint8_t byte = ((const uint8_t *)w->data)[n * (K / 2) + k / 2];
            double sc = hc_format_decode(HC_FMT_F8E4M3, ((const uint8_t *)s->data)[
                                             n * s->shape[1] + k / per]);
            float eff = (float)(sc / g); /* compressed-tensors: scale / global_scale in fp32 */
            out[n * K + k] = (float)(e2m1_value(k % 2 ? byte >> 4 : byte & 15) * (double)eff);
        }
    return HC_OK;
}

/* FP4 weights (nvfp4 / mxfp4): U8 [N, K/2], the byte stream is the row stream. */
static hc_status read_fp4(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                          const hc_ckpt_ct_group *grp, const hc_ckpt_read_opts *opts,
                          hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight_packed");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const char *fmt = group_format(cfg, grp);
    if (strcmp(grp->type, "float") != 0 || grp->num_bits != 4)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_packed: U8 FP4 pairs, but the config group says "
                "%s%d (format %s)", prefix, grp->type, grp->num_bits, fmt);
    if (!s || w->ndim != 2 || s->ndim != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: FP4 layer needs weight_packed U8 [N, K/2] and a 2-D "
                "weight_scale", prefix);
    HC_TRY(hc_ckpt_check_dims(w, err));
    int nv = s->dtype == HC_DT_F8_E4M3;
    if (!nv && s->dtype != HC_DT_U8 && s->dtype != HC_DT_F8_E8M0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: FP4 scales must be F8_E4M3 (nvfp4) or "
                "U8 / F8_E8M0 (mxfp4)", prefix);
    int64_t N = w->shape[0], K = w->shape[1] * 2;
    int64_t gs = grp->group_size > 0 ? grp->group_size : nv ? 16 : 32;
    if (K % gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of the group size %lld",
                prefix, (long long)K, (long long)gs);
    HC_TRY(hc_ckpt_check_shape(s, 2, (int64_t[2]){N, K / gs}, "[N, K/group]", err));
    HC_TRY(hc_ckpt_check_scales(s, NULL, err)); /* zero block scales are normal here */
    hc_quant_desc d = {.weight_format = HC_FMT_F4E2M1,
                       .scale_format = nv ? HC_FMT_F8E4M3 : HC_FMT_F8E8M0,
                       .group_size = (int)gs, .global_scale = nv};
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, K / gs, !opts->meta_only, err));
    memcpy(out->q.scales, s->data, s->nbytes);
    if (!opts->meta_only) hc_ckpt_codes_from(w, w->nbytes, opts, &out->q);
    if (nv) HC_TRY(fp4_global(hc_ckpt_find(model, prefix, ".weight_global_scale"), s,
                              opts->meta_only ? NULL : w, prefix, fmt, out, err));
    snprintf(out->source_format, sizeof out->source_format, "compressed-tensors %s",
             nv ? "nvfp4-pack-quantized (global scale is a divisor)" : "mxfp4-pack-quantized");
    return HC_OK;
}

/* The scale tensor of an integer layer for its strategy, shape checked exactly:
 * tensor [] / [1], channel [N] / [N, 1], group [N, G]. Sets *G. */
static hc_status int_scale_shape(const hc_st_tensor *s, const hc_ckpt_ct_group *grp, int64_t N,
                                 int64_t K, int64_t *G, hc_error *err)
{
    const char *strat = grp->strategy;
    if (!hc_ckpt_is_float_dtype(s->dtype))
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): scale dtype %s; expected F32, F16 or BF16",
                s->name, s->file, hc_dtype_name(s->dtype));
    if (!strcmp(strat, "block") || !strcmp(strat, "tensor_group"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): integer weights with %s scales are not "
                "read", s->name, s->file, strat);
    int64_t gs = !strcmp(strat, "group") ? grp->group_size : 0, ns = hc_shape_numel(s->ndim, s->shape);
    if (gs > 0 && K % gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): K=%lld is not a multiple of the group size "
                "%lld", s->name, s->file, (long long)K, (long long)gs);
    *G = gs > 0 ? K / gs : 1;
    if (gs > 0) return hc_ckpt_check_shape(s, 2, (int64_t[2]){N, *G}, "[N, K/group]", err);
    if (!strcmp(strat, "tensor") ? ns == 1 && s->ndim <= 1
                                 : hc_ckpt_shape_is(s, 1, &N) || hc_ckpt_shape_is(s, 2, (int64_t[2]){N, 1}))
        return HC_OK;
    HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): %lld values for strategy %s; expected %s", s->name,
            s->file, (long long)ns, strat, !strcmp(strat, "tensor") ? "[] or [1]" : "[N] or [N, 1]");
}


/* Scales of an integer layer into q (one value repeated for a tensor scale);
 * checked finite before. [N, G] in the storage format's own 16 bits: a copy
 * (unless general, the tests' element path). */
static hc_status put_int_scales(const hc_st_tensor *s, int general, hc_quant_result *q,
                                hc_error *err)
{
    int64_t ns = hc_shape_numel(s->ndim, s->shape), N = q->n, G = q->groups;
    if (!general && ns == N * G && hc_ckpt_raw16_scales(s, q)) {
        memcpy(q->scales, s->data, (size_t)(N * G) * 2);
        return HC_OK;
    }
    for (int64_t i = 0; i < N * G; i++)
        if (hc_ckpt_put_scale(q, i, hc_ckpt_float_at(s, ns == 1 ? 0 : i)) != 0)
            HC_FAIL(err, HC_ERR_INTERNAL, "%s: scale %lld not exact in its storage format",
                    s->name, (long long)i);
    return HC_OK;
}

/* float-quantized: F8 weight, scales by the group's strategy (read_float8). */
static hc_status read_unpacked_float(const hc_st_tensor *w, const hc_st_tensor *s,
                                     const hc_st_tensor *zp, const hc_ckpt_ct_group *grp,
                                     const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                                     hc_error *err)
{
    hc_ckpt_fp8_geom g = {0};
    if (strcmp(grp->type, "float") != 0 || grp->num_bits != 8)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): a float8 weight, but the config group says "
                "%s%d", w->name, w->file, grp->type, grp->num_bits);
    if (zp) HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: float weights with zero points", zp->name);
    if (!strcmp(grp->strategy, "tensor_group"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: float8 weights with tensor_group scales are not "
                "read", w->name);
    if (strcmp(grp->strategy, "group") == 0) g.gs = grp->group_size;
    if (strcmp(grp->strategy, "block") == 0) { g.bn = grp->block[0]; g.bk = grp->block[1]; }
    g.strategy = grp->strategy;
    return hc_ckpt_read_float8(w, s, &g, opts, out, err);
}

/* Zero points I8 of the scale's shape, offset into uintB fields. */
static hc_status put_int_zeros(const hc_st_tensor *zp, const hc_st_tensor *s, int b,
                               hc_quant_result *q, hc_error *err)
{
    int64_t ns = hc_shape_numel(s->ndim, s->shape), n = q->n * q->groups;
    if (zp->dtype != HC_DT_I8 || !hc_ckpt_shape_is(zp, s->ndim, s->shape))
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected I8 of the scale's shape", zp->name,
                zp->file);
    if (ns == 1)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: per-tensor zero points are not held by Humming",
                zp->name);
    uint32_t half = 1u << (b - 1), mask = (1u << b) - 1;
    uint8_t *z = malloc((size_t)n + 1);
    HC_CHECK_ALLOC(err, z, "zero points");
    for (int64_t i = 0; i < n; i++)
        z[i] = (uint8_t)(((uint32_t)(int8_t)hc_ckpt_uint_at(zp, i) + half) & mask);
    hc_status st = hc_ckpt_pack_zeros(q, z, err);
    free(z);
    return st;
}

/* int8 in column order: every int8 value is a code (v + 128 = the byte XOR
 * 0x80), and Humming's row-packed 8-bit form holds four codes per word from
 * the low byte up, so the words are built straight from the bytes, into a
 * pooled buffer when the run has one (every word is written). */
static void put_int8_words(const hc_st_tensor *w, const hc_ckpt_read_opts *opts, hc_quant_result *q)
{
    const int64_t words = q->n * q->k / 4;
    hc_ckpt_pooled_codes(opts, q);
    const uint8_t *c = w->data;
    uint32_t *out = q->codes;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(words * 4))
    for (int64_t j = 0; j < words; j++)
        out[j] = (c[4 * j] | (uint32_t)c[4 * j + 1] << 8 | (uint32_t)c[4 * j + 2] << 16 |
                  (uint32_t)c[4 * j + 3] << 24) ^ 0x80808080u;
}

/* int-quantized / naive-quantized: I8 weight [N, K] holding intB values. */
static hc_status put_int_codes(const hc_st_tensor *w, int b, const int32_t *perm,
                               const hc_ckpt_read_opts *opts, hc_quant_result *q, hc_error *err)
{
    if (b == 8 && !perm && !opts->general_codes) {
        put_int8_words(w, opts, q);
        return HC_OK;
    }
    int64_t n = q->n * q->k;
    uint32_t half = 1u << (b - 1), mask = (1u << b) - 1;
    uint8_t *codes = malloc((size_t)n + 1);
    HC_CHECK_ALLOC(err, codes, "codes");
    for (int64_t i = 0; i < n; i++) {
        int v = (int8_t)((const uint8_t *)w->data)[i];
        if (v < -(int)half || v > (int)half - 1) {
            free(codes);
            HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): value %d at element %lld is outside int%d",
                    w->name, w->file, v, (long long)i, b);
        }
        codes[i] = (uint8_t)((uint32_t)(v + (int)half) & mask); /* int8: byte XOR 0x80 */
    }
    hc_status st = perm ? hc_ckpt_permute_columns(codes, q->n, q->k, perm, err) : HC_OK;
    if (st == HC_OK) hc_ckpt_pack_codes(q, codes);
    free(codes);
    return st;
}

/* What every integer layer shares once its geometry is known: act order
 * (*ao), the scale values, the pre-form description and buffers, the scales. */
static hc_status int_layer_begin(hc_st_model *model, const char *prefix, const hc_st_tensor *s,
                                 const hc_ckpt_ct_group *grp, int b, int zp, int64_t N, int64_t K,
                                 int64_t G, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                                 int *ao, hc_error *err)
{
    *ao = ct_act_order(model, prefix, K, G, opts, out, err);
    if (*ao < 0) return err ? err->status : HC_ERR_FORMAT;
    HC_TRY(hc_ckpt_check_int_scales(s, out, err));
    hc_quant_desc d = {.weight_format = (hc_format_id)(HC_FMT_UINT1 + b - 1),
                       .scale_format = hc_ckpt_scale_format(s->dtype, s, opts),
                       .group_size = strcmp(grp->strategy, "group") == 0
                                         ? (int)grp->group_size : HC_QUANT_GROUP_CHANNEL,
                       .zero_point = zp ? HC_ZP_INT : HC_ZP_NONE};
    if (d.scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.weight_scale: float32 scales not exact in 16 bits; "
                "requantize with --format", prefix);
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, G, !opts->meta_only, err));
    return put_int_scales(s, opts->general_codes, &out->q, err);
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
    HC_TRY(hc_ckpt_check_dims(w, err));
    if (w->dtype != HC_DT_I8) {
        HC_TRY(read_unpacked_float(w, s, zp, grp, opts, out, err));
        snprintf(out->source_format, sizeof out->source_format, "compressed-tensors %s fp8 %s",
                 fmt, grp->strategy);
        return HC_OK;
    }
    int b = grp->num_bits;
    if (strcmp(grp->type, "int") != 0 || b < 1 || b > 8)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): an I8 weight, but the config group says %s%d "
                "(int1..int8 expected)", w->name, w->file, grp->type, b);
    if (!s) HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: missing", prefix);
    int64_t N = w->shape[0], K = w->shape[1], G = 1;
    HC_TRY(int_scale_shape(s, grp, N, K, &G, err));
    if (K * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Humming row-packs %d-bit codes along K and needs "
                "K*%d to be a multiple of 32 (K=%lld)", prefix, b, b, (long long)K);
    if (zp && N * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: N*%d must be a multiple of 32 for N-packed zero "
                "points", prefix, b);
    int ao = 0;
    HC_TRY(int_layer_begin(model, prefix, s, grp, b, zp != NULL, N, K, G, opts, out, &ao, err));
    if (zp) HC_TRY(put_int_zeros(zp, s, b, &out->q, err));
    if (!opts->meta_only) HC_TRY(put_int_codes(w, b, out->perm, opts, &out->q, err));
    snprintf(out->source_format, sizeof out->source_format, "compressed-tensors %s int%d %s%s%s",
             fmt, b, grp->strategy, zp ? " asym" : "", ao ? " act-order" : "");
    return HC_OK;
}

/* Field of b bits at bit pos of the little-endian stream formed by words
 * base, base + stride, ... of t (I32): pack_to_int32's layout, dense or padded. */
static uint32_t stream_field(const hc_st_tensor *t, int64_t base, int64_t stride, int64_t pos,
                             int b)
{
    int64_t w = pos / 32;
    int sh = (int)(pos % 32);
    uint64_t v = hc_ckpt_uint_at(t, base + w * stride) >> sh;
    if (sh + b > 32) v |= hc_ckpt_uint_at(t, base + (w + 1) * stride) << (32 - sh);
    return (uint32_t)v & ((1u << b) - 1);
}

/* How pack_to_int32 laid out one packed row of `count` b-bit values. */
typedef struct {
    int dense;     /* 1: one bit stream (>= 0.18); 0: 32/b values per word, no straddling */
    int b;
} ct_pack;

/* Bit position of value i of a packed row. */
static int64_t pack_pos(const ct_pack *p, int64_t i)
{
    return p->dense ? i * p->b : (i / (32 / p->b)) * 32 + (i % (32 / p->b)) * p->b;
}

/* Words per packed row of count values. */
static int64_t pack_words(const ct_pack *p, int64_t count)
{
    return p->dense ? (count * p->b + 31) / 32 : (count + 32 / p->b - 1) / (32 / p->b);
}

/* The two layouts differ only for 3/5/6/7 bits. The packed width, which with
 * weight_shape's K fits one layout only whenever Humming can hold the layer,
 * decides; the config's version must agree; where the width fits both (or K
 * is unknown) the version decides, and without one the layer is refused. */
static hc_status pick_layout(const hc_ckpt_config *cfg, const hc_st_tensor *w, int64_t k,
                             ct_pack *p, hc_error *err)
{
    ct_pack pd = {1, p->b}, pp = {0, p->b};
    int64_t wc = w->shape[1];
    int fits_d = k > 0 ? pack_words(&pd, k) == wc : 1, fits_p = k > 0 ? pack_words(&pp, k) == wc : 1;
    const char *ver = cfg->ct_version[0] ? cfg->ct_version : "(none)";
    p->dense = 0;
    if (32 % p->b == 0) return HC_OK; /* 1/2/4/8 bits: the layouts are the same */
    if (!fits_d && !fits_p)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): %lld words per row do not hold K=%lld %d-bit "
                "values in either pack_to_int32 layout (%lld words dense, compressed-tensors "
                ">= 0.18; %lld padded, < 0.18)", w->name, w->file, (long long)wc, (long long)k,
                p->b, (long long)pack_words(&pd, k), (long long)pack_words(&pp, k));
    if (fits_d != fits_p) {
        p->dense = fits_d;
        if (cfg->ct_dense >= 0 && cfg->ct_dense != p->dense)
            HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): [%lld, %lld] is the %s %d-bit layout, but "
                    "the config's version %s writes the %s one; refused (inconsistent "
                    "checkpoint)", w->name, w->file, (long long)w->shape[0], (long long)wc,
                    p->dense ? "dense" : "padded", p->b, ver, p->dense ? "padded" : "dense");
        return HC_OK;
    }
    if (cfg->ct_dense < 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): %d-bit weight_packed [%lld, %lld] fits "
                "both pack_to_int32 layouts (%s) and %s has no readable compressed-tensors "
                "\"version\" (%s) to say which (>= 0.18 dense, < 0.18 padded); refused",
                w->name, w->file, p->b, (long long)w->shape[0], (long long)wc,
                k > 0 ? "for this K" : "no weight_shape", cfg->source_file, ver);
    p->dense = cfg->ct_dense;
    return HC_OK;
}

/* weight_shape (I64 or I32 [2]) -> N, K, and the packing layout; absent: K
 * from weight_packed. K is range-checked before any arithmetic on it. */
static hc_status read_shape(const hc_ckpt_config *cfg, const hc_st_tensor *ws,
                            const hc_st_tensor *w, ct_pack *p, int64_t *N, int64_t *K,
                            hc_error *err)
{
    int b = p->b;
    *N = w->shape[0];
    if (ws == NULL) {
        HC_TRY(pick_layout(cfg, w, 0, p, err));
        *K = p->dense ? w->shape[1] * 32 / b : w->shape[1] * (32 / b);
        return HC_OK;
    }
    if ((ws->dtype != HC_DT_I64 && ws->dtype != HC_DT_I32) || ws->ndim != 1 || ws->shape[0] != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected I64 / I32 [2] = (N, K), got %s with "
                "%lld elements", ws->name, ws->file, hc_dtype_name(ws->dtype),
                (long long)hc_shape_numel(ws->ndim, ws->shape));
    int64_t n = ws->dtype == HC_DT_I64 ? (int64_t)hc_ckpt_uint_at(ws, 0)
                                       : (int64_t)(int32_t)hc_ckpt_uint_at(ws, 0);
    int64_t k = ws->dtype == HC_DT_I64 ? (int64_t)hc_ckpt_uint_at(ws, 1)
                                       : (int64_t)(int32_t)hc_ckpt_uint_at(ws, 1);
    if (n != w->shape[0] || k < 1 || k > w->shape[1] * 32)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): (%lld, %lld) does not match weight_packed "
                "[%lld, %lld] with %d-bit values", ws->name, ws->file, (long long)n,
                (long long)k, (long long)w->shape[0], (long long)w->shape[1], b);
    HC_TRY(pick_layout(cfg, w, k, p, err));
    *K = k;
    return HC_OK;
}

/* Zero points I32 [words(N), G], packed along N like the weights along K. */
static hc_status put_packed_zeros(const hc_st_tensor *zp, const ct_pack *p, hc_quant_result *q,
                                  hc_error *err)
{
    int64_t N = q->n, G = q->groups;
    if (zp->dtype != HC_DT_I32)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected I32", zp->name, zp->file);
    HC_TRY(hc_ckpt_check_shape(zp, 2, (int64_t[2]){pack_words(p, N), G}, p->dense
                               ? "[ceil(N*bits/32), G], dense" : "[ceil(N/values per word), G]",
                               err));
    if (N * p->b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: N*%d must be a multiple of 32 for N-packed zero "
                "points", zp->name, p->b);
    uint8_t *z = malloc((size_t)(N * G) + 1);
    HC_CHECK_ALLOC(err, z, "zero points");
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) z[n * G + g] = (uint8_t)stream_field(zp, g, G, pack_pos(p, n), p->b);
    hc_status st = hc_ckpt_pack_zeros(q, z, err);
    free(z);
    return st;
}

/* Codes of I32 weight_packed [N, words(K)], in either layout. Rows of whole
 * words in one bit stream (dense, or 32 / b values per word with b dividing
 * 32) are already Humming's rows: without act order (and unless general, the
 * tests' element path) a copy. */
static hc_status put_packed_codes(const hc_st_tensor *w, const ct_pack *p, const int32_t *perm,
                                  const hc_ckpt_read_opts *opts, hc_quant_result *q,
                                  hc_error *err)
{
    int64_t N = q->n, K = q->k, wc = w->shape[1];
    if (!opts->general_codes && !perm && q->bits == p->b && (p->dense || 32 % p->b == 0) &&
        K * p->b == wc * 32) {
        hc_ckpt_codes_from(w, (size_t)(N * wc) * 4, opts, q);
        return HC_OK;
    }
    uint8_t *codes = malloc((size_t)(N * K) + 1);
    HC_CHECK_ALLOC(err, codes, "codes");
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            codes[n * K + k] = (uint8_t)stream_field(w, n * wc, 1, pack_pos(p, k), p->b);
    hc_status st = perm ? hc_ckpt_permute_columns(codes, N, K, perm, err) : HC_OK;
    if (st == HC_OK) hc_ckpt_pack_codes(q, codes);
    free(codes);
    return st;
}

/* weight_g_idx (activation ordering "group" / "dynamic"): the GPTQ reading
 * (hc_ckpt_act_order_perm). compressed-tensors treats a g_idx holding any -1
 * (never initialised) as column order, so that one is ignored here too.
 * Returns 1 act-order, 0 none, -1 with err set (also for a refusal). */
static int ct_act_order(hc_st_model *model, const char *prefix, int64_t K, int64_t G,
                        const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *gi = hc_ckpt_find(model, prefix, ".weight_g_idx");
    if (gi && gi->ndim == 1 && gi->shape[0] == K &&
        (gi->dtype == HC_DT_I32 || gi->dtype == HC_DT_I64))
        for (int64_t k = 0; k < K; k++)
            if ((gi->dtype == HC_DT_I64 ? (int64_t)hc_ckpt_uint_at(gi, k)
                                        : (int64_t)(int32_t)hc_ckpt_uint_at(gi, k)) == -1) {
                hc_ckpt_note(out, "%s holds -1 (not initialised): column order, as "
                             "compressed-tensors reads it", gi->name);
                return 0;
            }
    int32_t *perm = NULL; /* g_idx is checked for channel / tensor too: one group of K */
    int ao = hc_ckpt_act_order_perm(gi, K, K / G, G, prefix, &perm, err);
    if (ao < 0) return -1;
    if (ao && opts->act_order == HC_ACT_ORDER_REFUSE) {
        free(perm);
        hc_ckpt_refuse_act_order(prefix, err);
        return -1;
    }
    out->perm = perm;
    return ao;
}

static hc_status read_packed(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                             const hc_ckpt_ct_group *grp, const hc_ckpt_read_opts *opts,
                             hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight_packed");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const hc_st_tensor *zp = hc_ckpt_find(model, prefix, ".weight_zero_point");
    int b = grp->num_bits;
    if (strcmp(grp->type, "int") != 0 || b < 1 || b > 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: pack-quantized %s%d: supported are int1..int8",
                prefix, grp->type, b);
    if (w->dtype != HC_DT_I32 || w->ndim != 2 || !s)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: pack-quantized needs I32 weight_packed and "
                "weight_scale", prefix);
    HC_TRY(hc_ckpt_check_dims(w, err));
    int64_t N = 0, K = 0, G = 1;
    ct_pack pk = {0, b};
    HC_TRY(read_shape(cfg, hc_ckpt_find(model, prefix, ".weight_shape"), w, &pk, &N, &K, err));
    HC_TRY(int_scale_shape(s, grp, N, K, &G, err));
    if (K * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Humming row-packs %d-bit codes along K and needs "
                "K*%d to be a multiple of 32 (K=%lld)", prefix, b, b, (long long)K);
    int ao = 0;
    HC_TRY(int_layer_begin(model, prefix, s, grp, b, zp != NULL, N, K, G, opts, out, &ao, err));
    if (zp) HC_TRY(put_packed_zeros(zp, &pk, &out->q, err));
    if (!opts->meta_only) HC_TRY(put_packed_codes(w, &pk, out->perm, opts, &out->q,
                                                      err));
    snprintf(out->source_format, sizeof out->source_format,
             "compressed-tensors pack-quantized int%d %s%s%s%s", b, grp->strategy,
             zp ? " asym" : " sym", 32 % b ? (pk.dense ? " dense" : " padded") : "",
             ao ? " act-order" : "");
    return HC_OK;
}

hc_status hc_ckpt_read_ct(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                          const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                          hc_error *err)
{
    const hc_ckpt_ct_group *grp = &cfg->ct[hc_ckpt_ct_group_for(cfg, prefix)];
    /* actorder (group / dynamic) is read through weight_g_idx */
    switch (kind) {
    case HC_CK_CT_FP4: return read_fp4(cfg, model, prefix, grp, opts, out, err);
    case HC_CK_CT_UNPACKED: return read_unpacked(cfg, model, prefix, grp, opts, out, err);
    default: return read_packed(cfg, model, prefix, grp, opts, out, err);
    }
}

static int ct_packed_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    (void)cfg;
    return t->dtype != HC_DT_U8;
}

static int ct_fp4_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    (void)cfg;
    return t->dtype == HC_DT_U8;
}

static int ct_unpacked_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    return cfg->method == HC_CKPT_CT && hc_ckpt_is_quantized_weight(t);
}

static const char *const ct_tensors[] = {".weight_packed", ".weight", ".weight_scale",
                                         ".weight_zero_point", ".weight_g_idx", ".weight_shape",
                                         ".weight_global_scale", NULL};
const hc_ckpt_reader hc_ckpt_reader_ct_packed = {HC_CK_CT_PACKED, ".weight_packed",
                                                 ct_packed_claims, ct_tensors, hc_ckpt_read_ct,
                                                 NULL};
const hc_ckpt_reader hc_ckpt_reader_ct_fp4 = {HC_CK_CT_FP4, ".weight_packed", ct_fp4_claims,
                                              ct_tensors, hc_ckpt_read_ct,
                                              hc_ckpt_ct_source_values};
const hc_ckpt_reader hc_ckpt_reader_ct_unpacked = {HC_CK_CT_UNPACKED, ".weight",
                                                   ct_unpacked_claims, ct_tensors,
                                                   hc_ckpt_read_ct, NULL};
