/* hc_ckpt_fp8.c - float8-element weights with tensor, channel, group (incl.
 * E8M0 MXFP8) or block scales, shared by compressed-tensors float-quantized,
 * ModelOpt FP8 and quant_method "fp8" (DeepSeek-V3 style 128x128 blocks
 * with weight_scale_inv, a multiplier despite its name; formats spec 8).
 *
 * Block scales: blocks are indexed n / bn, k / bk (edge blocks partial; the
 * block size is never derived from shape ratios). Humming's block scales are
 * float32 with blocks that divide N and K, so a grid of gcd(bn, N) x
 * gcd(bk, K) is used, each fine block repeating its source block's scale:
 * lossless. When gcd(bn, N) < 64 (Humming's minimum block height) the scales
 * are expanded per row into group scales if they are exact in 16 bits. */
#include "hc_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) { int64_t t = a % b; a = b; b = t; }
    return a;
}

/* 8-bit codes: the byte stream is the row stream. NaN / Inf codes (E4M3
 * 0x7F/0xFF, E5M2 exponent all ones) are refused: no quantizer writes them.
 * Checked when the codes are read (not at plan time, which reads no codes). */
/* Index of the first byte b of p[0, n) with (b & mask) == mask, else n.
 * Blocks of 64 bytes as 64-bit words first (a zero byte of (w & M) ^ M marks
 * such a byte; the test has no false positives), the block with one byte by
 * byte: a word loop the compiler vectorizes instead of a branch per byte. */
static size_t first_masked(const uint8_t *p, size_t n, uint8_t mask)
{
    const uint64_t M = 0x0101010101010101ull * mask, lo = 0x0101010101010101ull,
                   hi = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t any = 0;
        for (int j = 0; j < 8; j++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * j, 8);
            const uint64_t t = (w & M) ^ M;
            any |= (t - lo) & ~t & hi;
        }
        if (any) break;
    }
    for (; i < n; i++)
        if ((p[i] & mask) == mask) return i;
    return n;
}

static hc_status copy_codes(const hc_st_tensor *w, const hc_ckpt_read_opts *opts,
                            hc_quant_result *q, hc_error *err)
{
    const uint8_t *b = w->data;
    uint8_t mask = w->dtype == HC_DT_F8_E4M3 ? 0x7F : 0x7C;
    const size_t i = first_masked(b, w->nbytes, mask);
    if (i < w->nbytes)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): element %zu is a NaN / Inf code (0x%02x); "
                "refused", w->name, w->file, i, b[i]);
    hc_ckpt_codes_from(w, w->nbytes, opts, q);
    return HC_OK;
}

/* Block scales [RB, CB] or, as ModelOpt FP8_PB_WO writes, [RB, 1, CB, 1]. */
static hc_status check_block_shape(const hc_st_tensor *s, int64_t N, int64_t K,
                                   const hc_ckpt_fp8_geom *g, int64_t *RB, int64_t *CB,
                                   hc_error *err)
{
    if (g->bn > (1 << 20) || g->bk > (1 << 20))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: block %lldx%lld: block sizes above 2^20 are refused",
                s->name, (long long)g->bn, (long long)g->bk);
    *RB = (N + g->bn - 1) / g->bn;
    *CB = (K + g->bk - 1) / g->bk;
    if (hc_ckpt_shape_is(s, 2, (int64_t[2]){*RB, *CB}) ||
        hc_ckpt_shape_is(s, 4, (int64_t[4]){*RB, 1, *CB, 1}))
        return HC_OK;
    char sh[HC_CKPT_SHAPE_STR];
    HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): block scales for a [%lld, %lld] weight with "
            "%lldx%lld blocks must be [ceil(N/bn), ceil(K/bk)] = [%lld, %lld] (or [%lld, 1, "
            "%lld, 1]), got %s", s->name, s->file, (long long)N, (long long)K, (long long)g->bn,
            (long long)g->bk, (long long)*RB, (long long)*CB, (long long)*RB, (long long)*CB,
            hc_ckpt_shape_str(s, sh, sizeof sh));
}

/* Block scales (RB x CB source grid) as float32 fine blocks, or per-row group scales. */
static hc_status read_blocks(const hc_st_tensor *s, int64_t N, int64_t K,
                             const hc_ckpt_fp8_geom *g, const hc_ckpt_read_opts *opts,
                             hc_quant_desc *d, hc_ckpt_layer *out, hc_error *err)
{
    int64_t RB = 0, CB = 0;
    HC_TRY(check_block_shape(s, N, K, g, &RB, &CB, err));
    int64_t gn = gcd64(g->bn, N), gk = gcd64(g->bk, K);
    int per_row = gn < 64;
    if (per_row) {
        d->scale_format = hc_ckpt_scale_format(s->dtype, s, opts);
        if (d->scale_format == HC_FMT_COUNT)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: N=%lld leaves %lld-row edge blocks (Humming "
                    "block scales need blocks of >= 64 rows dividing N) and the float32 scales "
                    "are not exact in 16 bits for per-row group scales; requantize with "
                    "--format", s->name, (long long)N, (long long)gn);
        d->group_size = (int)gk;
        d->group_size_n = 0;
    } else {
        d->scale_format = HC_FMT_F32;
        d->group_size = (int)gk;
        d->group_size_n = (int)gn;
    }
    int64_t NS = per_row ? N : N / gn, G = K / gk;
    HC_TRY(hc_ckpt_alloc(&out->q, d, 1, N, K, NS, G, !opts->meta_only, err));
    for (int64_t i = 0; i < NS; i++)
        for (int64_t j = 0; j < G; j++) {
            int64_t n = per_row ? i : i * gn, k = j * gk;
            if (hc_ckpt_put_scale(&out->q, i * G + j,
                                  hc_ckpt_float_at(s, (n / g->bn) * CB + k / g->bk)) != 0)
                HC_FAIL(err, HC_ERR_INTERNAL, "%s: block scale not exact", s->name);
        }
    if (gn != g->bn || gk != g->bk)
        hc_ckpt_note(out, "%lldx%lld source blocks held as %s%lldx%lld blocks (partial edge "
                     "blocks)", (long long)g->bn, (long long)g->bk, per_row ? "per-row " : "",
                     (long long)(per_row ? 1 : gn), (long long)gk);
    return HC_OK;
}

/* One scale for the whole tensor: a float32 global scale (exact: the source is F32/F16/BF16). */
static hc_status read_tensor_scale(const hc_st_tensor *s, int64_t N, int64_t K,
                                   const hc_ckpt_read_opts *opts, hc_quant_desc *d,
                                   hc_ckpt_layer *out, hc_error *err)
{
    double v = 0;
    HC_TRY(hc_ckpt_scalar_scale(s, 0, &v, err));
    d->group_size = HC_QUANT_GROUP_TENSOR;
    HC_TRY(hc_ckpt_alloc(&out->q, d, 1, N, K, N, 1, !opts->meta_only, err));
    out->q.global_scale[0] = (float)v;
    return HC_OK;
}

/* One scale per output channel: [N] or [N, 1]. */
static hc_status read_channel_scales(const hc_st_tensor *s, int64_t N, int64_t K,
                                     const hc_ckpt_read_opts *opts, hc_quant_desc *d,
                                     hc_ckpt_layer *out, hc_error *err)
{
    char sh[HC_CKPT_SHAPE_STR];
    if (!hc_ckpt_shape_is(s, 1, &N) && !hc_ckpt_shape_is(s, 2, (int64_t[2]){N, 1}))
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): per-channel scales must be [N] or [N, 1] with "
                "N=%lld, got %s", s->name, s->file, (long long)N,
                hc_ckpt_shape_str(s, sh, sizeof sh));
    d->group_size = HC_QUANT_GROUP_CHANNEL;
    d->scale_format = hc_ckpt_scale_format(s->dtype, s, opts);
    if (d->scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: float32 per-channel scales are not exact in "
                "float16 / bfloat16 (Humming's channel scales); requantize with --format fp8 "
                "(dequantized exactly, 16-bit channel scales, the error in the report)",
                s->name);
    HC_TRY(hc_ckpt_alloc(&out->q, d, 1, N, K, N, 1, !opts->meta_only, err));
    for (int64_t n = 0; n < N; n++)
        if (hc_ckpt_put_scale(&out->q, n, hc_ckpt_float_at(s, n)) != 0)
            HC_FAIL(err, HC_ERR_INTERNAL, "%s: scale not exact", s->name);
    return HC_OK;
}

/* Group scales [N, K/gs] (E8M0 bytes kept as they are). */
static hc_status read_group_scales(const hc_st_tensor *s, int64_t N, int64_t K,
                                   const hc_ckpt_fp8_geom *g, const hc_ckpt_read_opts *opts,
                                   hc_quant_desc *d, hc_ckpt_layer *out, hc_error *err)
{
    if (K % g->gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of the group size %lld",
                s->name, (long long)K, (long long)g->gs);
    int64_t G = K / g->gs;
    HC_TRY(hc_ckpt_check_shape(s, 2, (int64_t[2]){N, G}, "[N, K/group]", err));
    d->group_size = (int)g->gs;
    d->scale_format = g->e8m0 ? HC_FMT_F8E8M0
                              : hc_ckpt_scale_format(s->dtype, s, opts);
    if (d->scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: float32 group scales not exact in 16 bits; "
                "requantize with --format", s->name);
    HC_TRY(hc_ckpt_alloc(&out->q, d, 1, N, K, N, G, !opts->meta_only, err));
    for (int64_t i = 0; i < N * G; i++) {
        if (g->e8m0) out->q.scales[i] = (uint8_t)hc_ckpt_uint_at(s, i);
        else if (hc_ckpt_put_scale(&out->q, i, hc_ckpt_float_at(s, i)) != 0)
            HC_FAIL(err, HC_ERR_INTERNAL, "%s: scale not exact", s->name);
    }
    return HC_OK;
}

/* The scale tensor's dtype: float (F32/F16/BF16/F8), or E8M0 bytes where expected. */
static hc_status check_scale_dtype(const hc_st_tensor *s, const hc_ckpt_fp8_geom *g,
                                   hc_error *err)
{
    int fl = hc_ckpt_is_float_dtype(s->dtype) || s->dtype == HC_DT_F8_E4M3 ||
             s->dtype == HC_DT_F8_E5M2;
    int e8 = s->dtype == HC_DT_U8 || s->dtype == HC_DT_F8_E8M0;
    if (g->e8m0 ? !e8 : !fl)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): scale dtype %s; expected %s", s->name, s->file,
                hc_dtype_name(s->dtype), g->e8m0 ? "U8 / F8_E8M0 (E8M0 exponents)"
                                                 : "F32, F16, BF16 or F8");
    return HC_OK;
}

hc_status hc_ckpt_read_float8(const hc_st_tensor *w, const hc_st_tensor *s,
                              const hc_ckpt_fp8_geom *g, const hc_ckpt_read_opts *opts,
                              hc_ckpt_layer *out, hc_error *err)
{
    if (w->ndim != 2 || (w->dtype != HC_DT_F8_E4M3 && w->dtype != HC_DT_F8_E5M2))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: expected a 2-D F8_E4M3 / F8_E5M2 weight", w->name);
    if (s == NULL)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: FP8 weight without a scale tensor (weight_scale / "
                "weight_scale_inv); reading it as plain float8 would give wrong weights, "
                "refused", w->name);
    HC_TRY(hc_ckpt_check_dims(w, err));
    HC_TRY(check_scale_dtype(s, g, err));
    HC_TRY(hc_ckpt_check_scales(s, NULL, err)); /* zero blocks are normal here */
    int64_t N = w->shape[0], K = w->shape[1], ns = hc_shape_numel(s->ndim, s->shape);
    hc_quant_desc d = {.weight_format = w->dtype == HC_DT_F8_E4M3 ? HC_FMT_F8E4M3 : HC_FMT_F8E5M2};
    int tensor = g->strategy ? !strcmp(g->strategy, "tensor") : ns == 1;
    if (g->bn > 0 && g->bk > 0) HC_TRY(read_blocks(s, N, K, g, opts, &d, out, err));
    else if (g->gs > 0) HC_TRY(read_group_scales(s, N, K, g, opts, &d, out, err));
    else if (tensor) HC_TRY(read_tensor_scale(s, N, K, opts, &d, out, err));
    else HC_TRY(read_channel_scales(s, N, K, opts, &d, out, err));
    if (!opts->meta_only) HC_TRY(copy_codes(w, opts, &out->q, err));
    return HC_OK;
}

hc_status hc_ckpt_read_fp8(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err)
{
    (void)kind;
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight");
    const hc_st_tensor *si = hc_ckpt_find(model, prefix, ".weight_scale_inv");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    hc_ckpt_fp8_geom g = {0};
    if (w == NULL) /* the layer was found by its scale tensor */
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight: missing (the layer has an FP8 scale tensor)",
                prefix);
    if (si) {
        if (cfg->block[0] <= 0 || cfg->block[1] <= 0)
            HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale_inv: present but config.json has no "
                    "weight_block_size", prefix);
        if (si->dtype != HC_DT_F32 && !hc_ckpt_is_float_dtype(si->dtype))
            HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale_inv: expected float", prefix);
        g.bn = cfg->block[0];
        g.bk = cfg->block[1];
        HC_TRY(hc_ckpt_read_float8(w, si, &g, opts, out, err));
        snprintf(out->source_format, sizeof out->source_format,
                 "fp8 e4m3 %lldx%lld blocks (weight_scale_inv multiplier)", (long long)g.bn,
                 (long long)g.bk);
        return HC_OK;
    }
    if (cfg->block[0] > 0 && s && hc_shape_numel(s->ndim, s->shape) > 1) {
        g.bn = cfg->block[0];
        g.bk = cfg->block[1];
    }
    HC_TRY(hc_ckpt_read_float8(w, s, &g, opts, out, err));
    snprintf(out->source_format, sizeof out->source_format, "fp8 %s",
             out->q.desc.group_size == HC_QUANT_GROUP_TENSOR ? "per-tensor" : "scaled");
    return HC_OK;
}

static int fp8_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    return cfg->method == HC_CKPT_FP8 && hc_ckpt_is_quantized_weight(t);
}

static const char *const fp8_tensors[] = {".weight", ".weight_scale", ".weight_scale_2",
                                          ".weight_scale_inv", NULL};
const hc_ckpt_reader hc_ckpt_reader_fp8 = {HC_CK_FP8, ".weight", fp8_claims, fp8_tensors,
                                           hc_ckpt_read_fp8, NULL};
