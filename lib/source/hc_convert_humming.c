/* hc_convert_humming.c - inputs already in Humming's row-packed format
 * (quant_method "humming"): found by name, repacked losslessly.
 *
 * Tensor names are Humming's canonical ones (what vLLM 0.33 loads and our
 * canonical layout writes): P.weight, P.weight_scale (a per-tensor scale when
 * weight_scale_type is "tensor"), P.zero_point, P.weight_scale_2, P.bias;
 * P.global_scale is read as weight_scale_2 (older inputs). MoE experts come
 * either as one stack (3-D P.weight) or one module per expert,
 * "X.experts.<i>.Y.*", gathered into the stack "X.experts.Y". */
#include "hc_conv_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-expert modules beyond this index are taken for a malformed name. */
#define MAX_EXPERTS 65536

/* Role r's tensor of expert e (a stack) or of the layer. */
static const hc_st_tensor *role_tensor(const hc_conv_layer *L, int e, int r)
{
    return L->hexperts ? L->hexperts[e * HC_ROLE_COUNT + r] : L->pre[r];
}

/* Checks that the layer's tensors match what the config says it has. */
static hc_status check_roles(const hc_conv_layer *L, const hc_humming_qconfig *q, hc_error *err)
{
    int needs_scale = q->scale_type != HC_SCALE_TENSOR;
    int needs_global = q->scale_type == HC_SCALE_TENSOR || q->scale_type == HC_SCALE_GROUP_TENSOR ||
                       q->has_scale_2;
    const char *global = q->scale_type == HC_SCALE_TENSOR ? "weight_scale" : "weight_scale_2";
    if (needs_scale && !role_tensor(L, 0, HC_ROLE_SCALE))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale: missing (scale type %s needs it)", L->prefix,
                hc_scale_type_name(q->scale_type));
    if (needs_global && !role_tensor(L, 0, HC_ROLE_GLOBAL))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.%s: missing (the config's scale types need it)",
                L->prefix, global);
    if (!needs_global && role_tensor(L, 0, HC_ROLE_GLOBAL))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight_scale_2: present but the config's "
                "weight_scale_2_type is none", L->prefix);
    if (q->has_zero_point && !role_tensor(L, 0, HC_ROLE_ZERO))
        HC_FAIL(err, HC_ERR_FORMAT, "%s.zero_point: missing (config has_zero_point is true)",
                L->prefix);
    if (!q->has_zero_point && role_tensor(L, 0, HC_ROLE_ZERO))
        HC_FAIL(err, HC_ERR_FORMAT,
                "%s.zero_point: present but the config says has_zero_point is false", L->prefix);
    return HC_OK;
}

hc_status hc_conv_plan_humming_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                     hc_conv_layer *L, hc_error *err)
{
    const hc_humming_qconfig *q = &plan->qconfig;
    const hc_st_tensor *w = role_tensor(L, 0, HC_ROLE_WEIGHT);
    int b = hc_format_get(q->weight_format)->bits, is_moe = w->ndim == 3 || L->hexperts;
    int64_t cols = w->shape[w->ndim - 1];
    int64_t E = L->hexperts ? L->n_hexperts : is_moe ? w->shape[0] : 1;
    if (cols * 32 % b != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s.weight: %lld packed words per row is not a whole number "
                "of %d-bit codes", L->prefix, (long long)cols, b);
    HC_TRY(check_roles(L, q, err));
    L->cfg = (hc_layer_config){
        .weight_format = q->weight_format, .scale_format = q->scale_format,
        .act_format = plan->activation, .param_format = q->param_format,
        .scale_type = q->scale_type, .group_size = q->group_size, .group_size_n = q->group_size_n,
        .has_zero_point = q->has_zero_point, .is_fp_zero_point = q->is_fp_zero_point,
        .scale_2_channel = q->scale_2_channel, .sm = opts->sm, .version = plan->version};
    HC_TRY_CTX(err, hc_layer_plan(&L->cfg, is_moe, E, w->shape[w->ndim - 2], cols * 32 / b,
                                  &L->meta, err),
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

/* The tensors of module `prefix` by role. A tensor-only scale (weight_scale_type
 * "tensor") is the module's weight_scale; the second scale is weight_scale_2
 * (or, in older inputs, global_scale). */
static void find_roles(const hc_st_model *model, const hc_humming_qconfig *q, const char *prefix,
                       const hc_st_tensor **out)
{
    static const char *const names[HC_ROLE_COUNT] = {".weight", ".weight_scale", ".zero_point",
                                                     ".weight_scale_2", ".bias"};
    char name[4096];
    for (int r = 0; r < HC_ROLE_COUNT; r++) {
        snprintf(name, sizeof name, "%s%s", prefix, names[r]);
        out[r] = hc_st_model_find(model, name);
    }
    if (out[HC_ROLE_GLOBAL] == NULL) {
        snprintf(name, sizeof name, "%s.global_scale", prefix);
        out[HC_ROLE_GLOBAL] = hc_st_model_find(model, name);
    }
    if (q->scale_type == HC_SCALE_TENSOR && out[HC_ROLE_GLOBAL] == NULL) {
        out[HC_ROLE_GLOBAL] = out[HC_ROLE_SCALE];
        out[HC_ROLE_SCALE] = NULL;
    }
}

static void set_flags(hc_conv_layer *L)
{
    L->kind = HC_SRC_HUMMING;
    L->has_zero = role_tensor(L, 0, HC_ROLE_ZERO) != NULL;
    L->has_global = role_tensor(L, 0, HC_ROLE_GLOBAL) != NULL;
    L->has_bias = role_tensor(L, 0, HC_ROLE_BIAS) != NULL;
}

/* The stack layer "X.experts.Y" (new at the end of plan->layers if absent). */
static hc_conv_layer *stack_layer(hc_conv_plan *plan, const char *key, int *created)
{
    *created = 0;
    for (int i = 0; i < plan->n_layers; i++)
        if (plan->layers[i].hexperts && strcmp(plan->layers[i].prefix, key) == 0)
            return &plan->layers[i];
    *created = 1;
    return &plan->layers[plan->n_layers++];
}

/* Files expert `index` of the module whose weight is w under its stack. */
static hc_status add_expert(const hc_st_model *model, hc_conv_plan *plan, const hc_st_tensor *w,
                            const char *key, long index, int *layer_of, size_t at, hc_error *err)
{
    if (index < 0 || index >= MAX_EXPERTS || w->ndim != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: expert %ld of a stack must be a 2-D weight below %d",
                w->name, index, MAX_EXPERTS);
    int created;
    hc_conv_layer *L = stack_layer(plan, key, &created);
    if (created) {
        L->prefix = strdup(key);
        HC_CHECK_ALLOC(err, L->prefix, "layer name");
        layer_of[at] = (int)(L - plan->layers);
    }
    if (index >= L->n_hexperts) {
        size_t n = (size_t)(index + 1) * HC_ROLE_COUNT, old = (size_t)L->n_hexperts * HC_ROLE_COUNT;
        const hc_st_tensor **grown = realloc(L->hexperts, n * sizeof *grown);
        HC_CHECK_ALLOC(err, grown, "expert list");
        memset(grown + old, 0, (n - old) * sizeof *grown);
        L->hexperts = grown;
        L->n_hexperts = (int)index + 1;
    }
    const hc_st_tensor **slot = L->hexperts + index * HC_ROLE_COUNT;
    if (slot[HC_ROLE_WEIGHT])
        HC_FAIL(err, HC_ERR_FORMAT, "%s: expert %ld appears twice", key, index);
    size_t plen = strlen(w->name) - 7;
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%.*s", (int)plen, w->name);
    find_roles(model, &plan->qconfig, prefix, slot);
    return HC_OK;
}

/* Every expert 0..E-1 present, each with the same tensors as expert 0. */
static hc_status check_stack(const hc_conv_layer *L, hc_error *err)
{
    for (int e = 0; e < L->n_hexperts; e++)
        for (int r = 0; r < HC_ROLE_COUNT; r++) {
            const hc_st_tensor *a = L->hexperts[r], *t = L->hexperts[e * HC_ROLE_COUNT + r];
            if (r == HC_ROLE_WEIGHT && t == NULL)
                HC_FAIL(err, HC_ERR_FORMAT, "%s: expert %d of %d is missing", L->prefix, e,
                        L->n_hexperts);
            int same = (a == NULL) == (t == NULL);
            if (same && a)
                same = a->dtype == t->dtype && a->ndim == t->ndim &&
                       !memcmp(a->shape, t->shape, (size_t)a->ndim * sizeof a->shape[0]);
            if (!same)
                HC_FAIL(err, HC_ERR_FORMAT, "%s: expert %d's %s differs from expert 0's in "
                        "presence, dtype or shape", L->prefix, e, hc_role_suffix[r] + 1);
        }
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
        char prefix[4096], key[4096];
        long index = -1;
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(t->name) - 7), t->name);
        if (hc_conv_expert_key(prefix, key, sizeof key, &index)) {
            HC_TRY(add_expert(model, plan, t, key, index, layer_of, i, err));
            continue;
        }
        hc_conv_layer *L = &plan->layers[plan->n_layers++];
        L->prefix = strdup(prefix);
        HC_CHECK_ALLOC(err, L->prefix, "layer name");
        find_roles(model, &plan->qconfig, prefix, L->pre);
        layer_of[i] = plan->n_layers - 1;
    }
    for (int l = 0; l < plan->n_layers; l++) {
        if (plan->layers[l].hexperts) HC_TRY(check_stack(&plan->layers[l], err));
        set_flags(&plan->layers[l]);
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

/* Role r of every expert, concatenated: (E, ...), or (E,) from (1,) scales. */
static hc_status load_stacked(const hc_conv_layer *L, int r, hc_tensor *out, hc_error *err)
{
    const hc_st_tensor *t0 = L->hexperts[r];
    int64_t shape[HC_MAX_DIMS + 1] = {L->n_hexperts};
    int scalar = t0->ndim == 1 && t0->shape[0] == 1, ndim = scalar ? 1 : t0->ndim + 1;
    if (!scalar) memcpy(shape + 1, t0->shape, (size_t)t0->ndim * sizeof *shape);
    HC_TRY(hc_tensor_alloc(out, t0->dtype, ndim, shape, err));
    for (int e = 0; e < L->n_hexperts; e++)
        memcpy((unsigned char *)out->data + (size_t)e * t0->nbytes,
               L->hexperts[e * HC_ROLE_COUNT + r]->data, t0->nbytes);
    return HC_OK;
}

hc_status hc_conv_load_humming(const hc_conv_layer *L, hc_layer_tensors *pre, hc_error *err)
{
    hc_tensor *dst[HC_ROLE_COUNT] = {&pre->weight, &pre->weight_scale, &pre->zero_point,
                                     &pre->global_scale, &pre->bias};
    for (int r = 0; r < HC_ROLE_COUNT; r++) {
        if (L->hexperts && L->hexperts[r]) HC_TRY(load_stacked(L, r, dst[r], err));
        else if (L->pre[r]) HC_TRY(load_owned(L->pre[r], dst[r], err));
    }
    return HC_OK;
}
