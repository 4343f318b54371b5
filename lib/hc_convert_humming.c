/* hc_convert_humming.c - inputs already in Humming's row-packed format
 * (quant_method "humming", layout spec 7.8): found by name, repacked losslessly. */
#include "hc_convert_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks that the layer's tensors match what the config says it has. */
static hc_status check_roles(const hc_conv_layer *L, const hc_humming_qconfig *q, hc_error *err)
{
    int needs_scale = q->scale_type != HC_SCALE_TENSOR;
    int needs_global = q->scale_type == HC_SCALE_TENSOR || q->scale_type == HC_SCALE_GROUP_TENSOR;
    if (needs_scale && !L->pre[HC_ROLE_SCALE])
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: missing (scale type %s needs it)", L->prefix,
                hc_scale_type_name(q->scale_type));
    if (needs_global && !L->pre[HC_ROLE_GLOBAL])
        HC_FAIL(err, HC_ERR_FORMAT, "%s.global_scale: missing (scale type %s needs it)", L->prefix,
                hc_scale_type_name(q->scale_type));
    if (q->has_zero_point && !L->pre[HC_ROLE_ZERO])
        HC_FAIL(err, HC_ERR_FORMAT, "%s.zero_point: missing (config has_zero_point is true)",
                L->prefix);
    if (!q->has_zero_point && L->pre[HC_ROLE_ZERO])
        HC_FAIL(err, HC_ERR_FORMAT,
                "%s.zero_point: present but the config says has_zero_point is false", L->prefix);
    return HC_OK;
}

hc_status hc_conv_plan_humming_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                     hc_conv_layer *L, hc_error *err)
{
    const hc_humming_qconfig *q = &plan->qconfig;
    const hc_st_tensor *w = L->pre[HC_ROLE_WEIGHT];
    int b = hc_format_get(q->weight_format)->bits, is_moe = w->ndim == 3;
    int64_t cols = w->shape[w->ndim - 1];
    if (cols * 32 % b != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight: %lld packed words per row is not a whole number "
                "of %d-bit codes", L->prefix, (long long)cols, b);
    HC_TRY(check_roles(L, q, err));
    L->cfg = (hc_layer_config){
        .weight_format = q->weight_format, .scale_format = q->scale_format,
        .act_format = plan->activation, .param_format = q->param_format,
        .scale_type = q->scale_type, .group_size = q->group_size, .group_size_n = q->group_size_n,
        .has_zero_point = q->has_zero_point, .is_fp_zero_point = q->is_fp_zero_point,
        .sm = opts->sm, .humming_bug_compat = opts->humming_bug_compat};
    HC_TRY_CTX(err,
               hc_layer_plan(&L->cfg, is_moe, is_moe ? w->shape[0] : 1, w->shape[w->ndim - 2],
                             cols * 32 / b, &L->meta, err),
               "layer %s: ", L->prefix);
    return HC_OK;
}

/* A quantized layer is a 2-D or 3-D int32 tensor named "<prefix>.weight". */
static int is_layer_weight(const hc_st_tensor *t)
{
    size_t len = strlen(t->name);
    return t->dtype == HC_DT_I32 && (t->ndim == 2 || t->ndim == 3) && len > 7 &&
           strcmp(t->name + len - 7, ".weight") == 0;
}

/* Fills L's tensors by name. */
static hc_status collect_layer(hc_st_model *model, const hc_st_tensor *w, hc_conv_layer *L,
                               hc_error *err)
{
    size_t plen = strlen(w->name) - 7;
    L->prefix = strndup(w->name, plen);
    HC_CHECK_ALLOC(err, L->prefix, "layer name");
    for (int r = 0; r < HC_ROLE_COUNT; r++) {
        char name[4096];
        snprintf(name, sizeof name, "%s%s", L->prefix, hc_role_suffix[r]);
        L->pre[r] = hc_st_model_find(model, name);
    }
    L->kind = HC_SRC_HUMMING;
    L->has_zero = L->pre[HC_ROLE_ZERO] != NULL;
    L->has_global = L->pre[HC_ROLE_GLOBAL] != NULL;
    L->has_bias = L->pre[HC_ROLE_BIAS] != NULL;
    return HC_OK;
}


hc_status hc_conv_find_humming(const hc_convert_options *opts, hc_st_model *model,
                               hc_conv_plan *plan, int *layer_of, hc_error *err)
{
    (void)opts;
    size_t count = hc_st_model_count(model);
    for (size_t i = 0; i < count; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        if (!is_layer_weight(t)) continue;
        hc_conv_layer *L = &plan->layers[plan->n_layers++];
        HC_TRY(collect_layer(model, t, L, err));
        layer_of[i] = plan->n_layers - 1;
    }
    return HC_OK;
}

/* Copies a (possibly unaligned, mapped) input tensor into an owned aligned one. */
static hc_status load_owned(const hc_st_tensor *t, hc_tensor *out, hc_error *err)
{
    HC_TRY(hc_tensor_alloc(out, t->dtype, t->ndim, t->shape, err));
    memcpy(out->data, t->data, t->nbytes);
    return HC_OK;
}

hc_status hc_conv_load_humming(const hc_conv_layer *L, hc_layer_tensors *pre, hc_error *err)
{
    hc_tensor *dst[HC_ROLE_COUNT] = {&pre->weight, &pre->weight_scale, &pre->zero_point,
                                     &pre->global_scale, &pre->bias};
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (L->pre[r]) HC_TRY(load_owned(L->pre[r], dst[r], err));
    return HC_OK;
}
