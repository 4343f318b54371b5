/* hc_ckpt_modelopt.c - NVIDIA ModelOpt unified HF checkpoints (formats spec
 * 6). NVFP4: weight U8 [N, K/2] (low nibble = even k), weight_scale F8_E4M3
 * [N, K/16], weight_scale_2 F32 scalar, a direct MULTIPLIER (the inverse of
 * compressed-tensors' divisor) -> Humming global scale as is, lossless. A
 * 1-D U8 weight_scale is the cutlass-swizzled layout and is refused. FP8:
 * F8_E4M3 weight with a scalar (tensor), [N] / [N, 1] (per channel), 4-D
 * [N/128, 1, K/128, 1] (FP8_PB_WO blocks) or U8 E8M0 [N, K/32] (MXFP8) scale. */
#include "hc_ckpt.h"

#include <stdio.h>
#include <string.h>

static hc_status read_nvfp4(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                            const hc_ckpt_read_opts *opts, hc_ckpt_layer *out, hc_error *err)
{
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    const hc_st_tensor *s2 = hc_ckpt_find(model, prefix, ".weight_scale_2");
    if (!s || !s2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: ModelOpt NVFP4 needs weight_scale and weight_scale_2",
                prefix);
    if (s->ndim != 2 || s->dtype != HC_DT_F8_E4M3)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.weight_scale: expected F8_E4M3 [N, K/16]; a 1-D U8 "
                "scale is the cutlass-swizzled layout (ModelOpt under TensorRT-LLM), refused",
                prefix);
    HC_TRY(hc_ckpt_check_dims(w, err));
    int64_t N = w->shape[0], K = w->shape[1] * 2;
    int64_t gs = cfg->group_size > 0 ? cfg->group_size : 16;
    if (K % gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: K=%lld is not a multiple of the group size %lld",
                prefix, (long long)K, (long long)gs);
    HC_TRY(hc_ckpt_check_shape(s, 2, (int64_t[2]){N, K / gs}, "[N, K/group]", err));
    HC_TRY(hc_ckpt_check_scales(s, NULL, err)); /* zero block scales are normal */
    double g = 0;
    HC_TRY(hc_ckpt_scalar_scale(s2, 0, &g, err));
    if (s2->dtype != HC_DT_F32)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected one F32 value", s2->name, s2->file);
    hc_quant_desc d = {.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E4M3,
                       .group_size = (int)gs, .global_scale = 1};
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, K / gs, !opts->meta_only, err));
    memcpy(out->q.scales, s->data, s->nbytes);
    if (!opts->meta_only) memcpy(out->q.codes, w->data, w->nbytes);
    out->q.global_scale[0] = (float)g;
    snprintf(out->source_format, sizeof out->source_format,
             "modelopt nvfp4 (weight_scale_2 multiplier)");
    return HC_OK;
}

hc_status hc_ckpt_read_modelopt(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err)
{
    (void)kind;
    const hc_st_tensor *w = hc_ckpt_find(model, prefix, ".weight");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, ".weight_scale");
    if (w->dtype == HC_DT_U8) return read_nvfp4(cfg, model, prefix, opts, out, err);
    hc_ckpt_fp8_geom g = {0};
    if (s && s->ndim == 4) { /* FP8_PB_WO: [N/128, 1, K/128, 1] */
        g.bn = g.bk = 128; /* the documented block; never derived from shape ratios */
    } else if (s && (s->dtype == HC_DT_U8 || s->dtype == HC_DT_F8_E8M0)) {
        g.gs = 32;
        g.e8m0 = 1;
    }
    HC_TRY(hc_ckpt_read_float8(w, s, &g, opts, out, err));
    snprintf(out->source_format, sizeof out->source_format, "modelopt %s",
             cfg->quant_algo[0] ? cfg->quant_algo : "fp8");
    return HC_OK;
}

static int modelopt_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    return cfg->method == HC_CKPT_MODELOPT && hc_ckpt_is_quantized_weight(t);
}

static const char *const modelopt_tensors[] = {".weight", ".weight_scale", ".weight_scale_2",
                                               ".weight_scale_inv", NULL};
const hc_ckpt_reader hc_ckpt_reader_modelopt = {HC_CK_MODELOPT, ".weight", modelopt_claims,
                                                modelopt_tensors, hc_ckpt_read_modelopt, NULL};
