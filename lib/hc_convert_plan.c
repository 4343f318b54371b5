/* hc_convert_plan.c - finding quantized layers and planning their outputs. */
#include "hc_convert_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const hc_role_suffix[HC_ROLE_COUNT] = {".weight", ".weight_scale", ".zero_point",
                                                   ".global_scale", ".bias"};

void hc_conv_log(const hc_convert_options *opts, const char *fmt, ...)
{
    if (opts->log == NULL) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    opts->log(opts->log_ctx, line);
}

hc_dtype hc_format_storage_dtype(hc_format_id f)
{
    switch (f) {
    case HC_FMT_F16: return HC_DT_F16;
    case HC_FMT_BF16: return HC_DT_BF16;
    case HC_FMT_F8E4M3: return HC_DT_F8_E4M3;
    case HC_FMT_F8E5M2: return HC_DT_F8_E5M2;
    case HC_FMT_F8E8M0: return HC_DT_F8_E8M0;
    default: return HC_DT_F32;
    }
}

static void set_desc(hc_out_desc *d, hc_dtype dt, int ndim, const int64_t *shape)
{
    d->present = 1;
    d->dtype = dt;
    d->ndim = ndim;
    memcpy(d->shape, shape, (size_t)ndim * sizeof *shape);
    d->nbytes = hc_tensor_byte_size(dt, ndim, shape);
}

/* Output shape with an optional leading expert dim (spec 5.8). */
static void set_desc_e(hc_out_desc *d, hc_dtype dt, const hc_layer_meta *m, int64_t a, int64_t b)
{
    int64_t s3[3] = {m->E, a, b}, s2[2] = {a, b};
    if (m->is_moe) set_desc(d, dt, 3, s3);
    else set_desc(d, dt, 2, s2);
}

/* Shapes and dtypes of the kernel-ready tensors, from the plan alone (spec 5.8). */
static void describe_outputs(hc_conv_layer *L)
{
    const hc_layer_meta *m = &L->meta;
    const hc_layer_config *c = &L->cfg;
    int64_t Np = m->Np, Kp = m->Kp, P = 256 / m->act_bits;
    int64_t G = c->group_size > 0 ? Kp / c->group_size : 1;
    hc_dtype param = hc_format_storage_dtype(c->param_format);
    set_desc_e(&L->out[HC_ROLE_WEIGHT], HC_DT_I32, m, Kp / P, Np * P * m->weight_bits / 32);
    if (m->scale_type == HC_SCALE_BLOCK)
        set_desc_e(&L->out[HC_ROLE_SCALE], HC_DT_F32, m, Kp / c->group_size, Np / c->group_size_n);
    else if (m->scale_type != HC_SCALE_TENSOR)
        set_desc_e(&L->out[HC_ROLE_SCALE], hc_format_storage_dtype(m->scale_format), m, G, Np);
    if (L->pre[HC_ROLE_ZERO] && c->is_fp_zero_point) {
        set_desc_e(&L->out[HC_ROLE_ZERO], param, m, G, Np);
    } else if (L->pre[HC_ROLE_ZERO]) {
        int64_t zb = m->weight_bits <= 4 ? 4 : 8, shape[2] = {m->E * G, Np * zb / 32};
        set_desc(&L->out[HC_ROLE_ZERO], HC_DT_I32, 2, shape);
    }
    if (L->pre[HC_ROLE_GLOBAL] || m->use_fused_e8m0 || m->use_int_weight_scale) {
        int64_t shape[1] = {m->E};
        set_desc(&L->out[HC_ROLE_GLOBAL], HC_DT_F32, 1, shape);
    }
    if (L->pre[HC_ROLE_BIAS]) {
        int64_t s2[2] = {m->E, Np}, s1[1] = {Np};
        if (m->is_moe) set_desc(&L->out[HC_ROLE_BIAS], param, 2, s2);
        else set_desc(&L->out[HC_ROLE_BIAS], param, 1, s1);
    }
}

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

static hc_status plan_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
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
    if (hc_layer_plan(&L->cfg, is_moe, is_moe ? w->shape[0] : 1, w->shape[w->ndim - 2],
                      cols * 32 / b, &L->meta, err) != HC_OK)
        return hc_error_prefix(err, "layer %s: ", L->prefix);
    describe_outputs(L);
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
    return HC_OK;
}

static int64_t layer_out_bytes(const hc_conv_layer *L)
{
    int64_t total = 0;
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (L->out[r].present) total += L->out[r].nbytes;
    return total;
}

static int64_t layer_in_bytes(const hc_conv_layer *L)
{
    int64_t total = 0;
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (L->pre[r]) total += (int64_t)L->pre[r]->nbytes;
    return total;
}

/* Greedy shard assignment in output order; a shard holds at least one item. */
static void assign_shards(hc_conv_plan *plan, int64_t max_bytes)
{
    int shard = 0;
    int64_t fill = 0;
    for (int i = 0; i < plan->n_items; i++) {
        hc_conv_item *it = &plan->items[i];
        if (fill > 0 && fill + it->nbytes > max_bytes) {
            shard++;
            fill = 0;
        }
        it->shard = shard;
        fill += it->nbytes;
    }
    plan->n_shards = shard + 1;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
    return x < y ? -1 : x > y;
}

/* Layers in model order (their weight tensor's position); *item_of[i] is the
 * layer whose weight is tensor i, or -1. */
static hc_status find_layers(hc_st_model *model, hc_conv_plan *plan, int *item_of, hc_error *err)
{
    size_t count = hc_st_model_count(model);
    for (size_t i = 0; i < count; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        item_of[i] = -1;
        if (!is_layer_weight(t)) continue;
        hc_conv_layer *L = &plan->layers[plan->n_layers++];
        HC_TRY(collect_layer(model, t, L, err));
        item_of[i] = plan->n_layers - 1;
    }
    return HC_OK;
}

/* Sorted list of the tensors that belong to layers, so they are not copied too. */
static const void **consumed_tensors(const hc_conv_plan *plan, size_t *n_out)
{
    const void **list = malloc(((size_t)plan->n_layers * HC_ROLE_COUNT + 1) * sizeof *list);
    size_t n = 0;
    for (int i = 0; list && i < plan->n_layers; i++)
        for (int r = 0; r < HC_ROLE_COUNT; r++)
            if (plan->layers[i].pre[r]) list[n++] = plan->layers[i].pre[r];
    if (list) qsort(list, n, sizeof *list, cmp_ptr);
    *n_out = n;
    return list;
}

static hc_status build_items(hc_st_model *model, hc_conv_plan *plan, const int *item_of,
                             hc_error *err)
{
    size_t count = hc_st_model_count(model), n_used = 0;
    const void **used = consumed_tensors(plan, &n_used);
    HC_CHECK_ALLOC(err, used, "layer tensor list");
    for (size_t i = 0; i < count; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        hc_conv_item *it = &plan->items[plan->n_items];
        if (item_of[i] >= 0) {
            const hc_conv_layer *L = &plan->layers[item_of[i]];
            *it = (hc_conv_item){.layer = item_of[i], .nbytes = layer_out_bytes(L)};
            plan->bytes_in += layer_in_bytes(L);
        } else if (bsearch(&t, used, n_used, sizeof *used, cmp_ptr) == NULL) {
            *it = (hc_conv_item){.layer = -1, .copy = t, .nbytes = (int64_t)t->nbytes};
            plan->bytes_in += (int64_t)t->nbytes;
        } else {
            continue;
        }
        plan->bytes_out += it->nbytes;
        plan->n_items++;
    }
    free(used);
    return HC_OK;
}

hc_status hc_conv_plan_build(const hc_convert_options *opts, hc_st_model *model,
                             hc_conv_plan *plan, hc_error *err)
{
    size_t count = hc_st_model_count(model);
    plan->layers = calloc(count + 1, sizeof *plan->layers);
    plan->items = calloc(count + 1, sizeof *plan->items);
    int *item_of = malloc((count + 1) * sizeof *item_of);
    hc_status st = HC_OK;
    if (!plan->layers || !plan->items || !item_of)
        st = hc_error_set(err, HC_ERR_NOMEM, "out of memory planning %zu tensors", count);
    if (st == HC_OK) st = find_layers(model, plan, item_of, err);
    for (int i = 0; st == HC_OK && i < plan->n_layers; i++)
        st = plan_layer(opts, plan, &plan->layers[i], err);
    if (st == HC_OK && plan->n_layers == 0)
        st = hc_error_set(err, HC_ERR_FORMAT, "%s: no quantized layer found (no int32 tensor named "
                          "*.weight)", opts->in_dir);
    if (st == HC_OK) st = build_items(model, plan, item_of, err);
    if (st == HC_OK)
        assign_shards(plan, opts->max_shard_bytes > 0 ? opts->max_shard_bytes : (int64_t)4 << 30);
    free(item_of);
    return st;
}

void hc_conv_plan_free(hc_conv_plan *plan)
{
    for (int i = 0; plan->layers && i < plan->n_layers; i++) free(plan->layers[i].prefix);
    free(plan->layers);
    free(plan->items);
    memset(plan, 0, sizeof *plan);
}
