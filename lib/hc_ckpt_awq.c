/* hc_ckpt_awq.c - AWQ (formats spec 4). GEMM: qweight [K, N/8] packed along
 * N with the nibble interleave ORDER = [0,2,4,6,1,3,5,7] (column n sits in
 * nibble REV[n % 8] of word n / 8), qzeros [G, N/8] the same, scales [G, N];
 * true zero points (no +1). GEMV: qweight [N, K/8] natural order along K,
 * qzeros [N, Wz] along the group axis, scales [N, 8*Wz] (padding columns
 * cropped). 4-bit only (AutoAWQ's only width; the 8-bit interleave is not
 * confirmed); zero_point false is refused (layout not confirmed). */
#include "hc_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int awq_rev[8] = {0, 4, 1, 5, 2, 6, 3, 7};

static uint32_t nib(const hc_st_tensor *t, int64_t idx, int which)
{
    return (uint32_t)(hc_ckpt_uint_at(t, idx) >> (4 * which)) & 15u;
}

hc_status hc_ckpt_read_awq(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                           const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *qw = hc_ckpt_find(model, prefix, ".qweight");
    const hc_st_tensor *qz = hc_ckpt_find(model, prefix, ".qzeros");
    const hc_st_tensor *sc = hc_ckpt_find(model, prefix, ".scales");
    if (cfg->bits != 4)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ %d-bit: only 4-bit AWQ is read (the 8-bit "
                "interleave is not confirmed by any producer)", prefix, cfg->bits);
    if (!cfg->awq_zero_point || !qz)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ without zero points (zero_point false): the "
                "on-disk layout is not confirmed; refused", prefix);
    if (hc_ckpt_find(model, prefix, ".scaled_zeros"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.scaled_zeros: AWQ gemv_fast layout refused", prefix);
    if (!qw || !sc || qw->dtype != HC_DT_I32 || qw->ndim != 2 || qz->dtype != HC_DT_I32 ||
        qz->ndim != 2 || !hc_ckpt_is_float_dtype(sc->dtype) || sc->ndim != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: AWQ layer needs I32 qweight, I32 qzeros and float "
                "scales (2-D)", prefix);
    int gemv = strcmp(cfg->awq_version, "gemv") == 0;
    int64_t N, K, G, gs;
    if (!gemv) {
        K = qw->shape[0];
        N = qw->shape[1] * 8;
        gs = cfg->group_size > 0 ? cfg->group_size : K;
        G = K / gs;
        if (K % gs || qz->shape[0] != G || qz->shape[1] * 8 != N || sc->shape[0] != G ||
            sc->shape[1] != N)
            HC_FAIL(err, HC_ERR_FORMAT, "%s: AWQ GEMM shapes: qweight [K, N/8], qzeros and "
                    "scales [K/%lld, ...] do not agree (qweight [%lld, %lld], qzeros [%lld, "
                    "%lld], scales [%lld, %lld]); a [N, K/8] qweight is the gemv layout",
                    prefix, (long long)gs, (long long)qw->shape[0], (long long)qw->shape[1],
                    (long long)qz->shape[0], (long long)qz->shape[1], (long long)sc->shape[0],
                    (long long)sc->shape[1]);
    } else {
        N = qw->shape[0];
        K = qw->shape[1] * 8;
        gs = cfg->group_size > 0 ? cfg->group_size : K;
        G = K / gs;
        if (K % gs || qz->shape[0] != N || qz->shape[1] * 8 < G || sc->shape[0] != N ||
            sc->shape[1] < G)
            HC_FAIL(err, HC_ERR_FORMAT, "%s: AWQ GEMV shapes do not agree (qweight [N, K/8], "
                    "qzeros [N, >=G/8], scales [N, >=G])", prefix);
    }
    hc_quant_desc d = {.weight_format = HC_FMT_UINT4,
                       .scale_format = hc_ckpt_scale_format(sc->dtype, sc, opts->param_format),
                       .group_size = cfg->group_size > 0 ? (int)gs : HC_QUANT_GROUP_CHANNEL,
                       .zero_point = HC_ZP_INT};
    if (d.scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.scales: float32 scales not exact in 16 bits; "
                "requantize with --format", prefix);
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, G, !opts->meta_only, err));
    hc_quant_result *q = &out->q;
    uint8_t *z = malloc((size_t)(N * G) + 1);
    HC_CHECK_ALLOC(err, z, "AWQ zeros");
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            double s;
            if (!gemv) {
                z[n * G + g] = (uint8_t)nib(qz, g * (N / 8) + n / 8, awq_rev[n % 8]);
                s = hc_ckpt_float_at(sc, g * N + n);
            } else {
                z[n * G + g] = (uint8_t)nib(qz, n * qz->shape[1] + g / 8, (int)(g % 8));
                s = hc_ckpt_float_at(sc, n * sc->shape[1] + g);
            }
            hc_ckpt_put_scale(q, n * G + g, s);
        }
    hc_ckpt_pack_zeros(q, z);
    free(z);
    if (!opts->meta_only) {
        uint8_t *codes = malloc((size_t)(N * K) + 1);
        HC_CHECK_ALLOC(err, codes, "AWQ codes");
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++)
                codes[n * K + k] = (uint8_t)(gemv ? nib(qw, n * (K / 8) + k / 8, (int)(k % 8))
                                                  : nib(qw, k * (N / 8) + n / 8, awq_rev[n % 8]));
        hc_ckpt_pack_codes(q, codes);
        free(codes);
    }
    snprintf(out->source_format, sizeof out->source_format, "awq %s uint4 g%lld zero-point",
             gemv ? "gemv" : "gemm", (long long)gs);
    return HC_OK;
}
