/* hc_convert_plan.c - finding quantized layers and planning their outputs. */
#include "hc_conv_plan.h"

#include "hc_ckpt.h"

#include <cjson/cJSON.h>
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

/* The weight: tiles (E?, Kp/P, Np*P*b/32); 0.1.19 packed-K has P = 64 and
 * flat and raw weights keep the row-packed shape (E?, Np, Kp*b/32). */
static void describe_weight(hc_conv_layer *L)
{
    const hc_layer_meta *m = &L->meta;
    int64_t Np = m->Np, Kp = m->Kp, b = m->weight_bits;
    int64_t P = m->use_packed_k_layout ? 64 : 256 / m->act_bits;
    if (m->use_flat_weight || m->use_raw_weight)
        set_desc_e(&L->out[HC_ROLE_WEIGHT], HC_DT_I32, m, Np, Kp * b / 32);
    else set_desc_e(&L->out[HC_ROLE_WEIGHT], HC_DT_I32, m, Kp / P, Np * P * b / 32);
}

/* Shapes and dtypes of the kernel-ready tensors, from the plan alone (spec
 * 5.8); a canonical layer has none (hc_conv_plan_outputs describes it). */
void hc_conv_describe_outputs(hc_conv_layer *L)
{
    const hc_layer_meta *m = &L->meta;
    const hc_layer_config *c = &L->cfg;
    int64_t Np = m->Np, Kp = m->Kp;
    if (m->version == HC_HUMMING_CANONICAL) return;
    int64_t G = c->group_size > 0 ? Kp / c->group_size : 1;
    hc_dtype param = hc_dtype_of_format(c->param_format);
    describe_weight(L);
    if (m->scale_layout == HC_SCALES_UMMA) /* 0.1.19 block-scaled MMA: int32 words */
        set_desc_e(&L->out[HC_ROLE_SCALE], HC_DT_I32, m, G / 4, Np);
    else if (m->scale_layout == HC_SCALES_MXMMA)
        set_desc_e(&L->out[HC_ROLE_SCALE], HC_DT_I32, m, G / 2, Np / 2);
    else if (m->scale_type == HC_SCALE_BLOCK)
        set_desc_e(&L->out[HC_ROLE_SCALE], HC_DT_F32, m, Kp / c->group_size, Np / c->group_size_n);
    else if (m->scale_type != HC_SCALE_TENSOR)
        set_desc_e(&L->out[HC_ROLE_SCALE], hc_dtype_of_format(m->scale_format), m, G, Np);
    if (L->has_zero && c->is_fp_zero_point) {
        set_desc_e(&L->out[HC_ROLE_ZERO], param, m, G, Np);
    } else if (L->has_zero) {
        set_desc_e(&L->out[HC_ROLE_ZERO], HC_DT_I32, m, G, Np * (m->weight_bits <= 4 ? 4 : 8) / 32);
    }
    int64_t row2[2] = {m->E, Np}, row1[1] = {Np}; /* (E?, Np): bias, channel second scale */
    int has_s2 = L->has_global || m->use_fused_e8m0 || m->use_int_weight_scale;
    if (has_s2 && m->scale2_channel) {
        if (m->is_moe) set_desc(&L->out[HC_ROLE_GLOBAL], param, 2, row2);
        else set_desc(&L->out[HC_ROLE_GLOBAL], param, 1, row1);
    } else if (has_s2) {
        int64_t shape[1] = {m->E};
        set_desc(&L->out[HC_ROLE_GLOBAL], HC_DT_F32, 1, shape);
    }
    if (L->has_bias) {
        if (m->is_moe) set_desc(&L->out[HC_ROLE_BIAS], param, 2, row2);
        else set_desc(&L->out[HC_ROLE_BIAS], param, 1, row1);
    }
}

int64_t hc_conv_layer_out_bytes(const hc_conv_layer *L)
{
    int64_t total = 0;
    for (int i = 0; i < L->n_outs; i++) total += L->outs[i].desc.nbytes;
    return total;
}

int64_t hc_conv_layer_in_bytes(const hc_conv_layer *L)
{
    int64_t total = 0;
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (L->pre[r]) total += (int64_t)L->pre[r]->nbytes;
    for (int e = 0; e < L->n_experts; e++) total += (int64_t)L->experts[e]->nbytes;
    for (int s = 0; s < L->n_src; s++)
        if (L->src[s] != L->pre[HC_ROLE_BIAS]) total += (int64_t)L->src[s]->nbytes;
    for (int s = 0; s < L->n_hexperts * HC_ROLE_COUNT; s++)
        if (L->hexperts[s]) total += (int64_t)L->hexperts[s]->nbytes;
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
        it->bytes_through = it->nbytes + (i > 0 ? plan->items[i - 1].bytes_through : 0);
    }
    plan->n_shards = shard + 1;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;
    return x < y ? -1 : x > y;
}

/* Sorted list of the tensors that belong to layers, so they are not copied too. */
static const void **consumed_tensors(const hc_conv_plan *plan, size_t *n_out)
{
    size_t cap = 1;
    for (int i = 0; i < plan->n_layers; i++)
        cap += HC_ROLE_COUNT + (size_t)plan->layers[i].n_experts + (size_t)plan->layers[i].n_src +
               (size_t)plan->layers[i].n_hexperts * HC_ROLE_COUNT;
    const void **list = malloc(cap * sizeof *list);
    size_t n = 0;
    for (int i = 0; list && i < plan->n_layers; i++) {
        const hc_conv_layer *L = &plan->layers[i];
        for (int r = 0; r < HC_ROLE_COUNT; r++)
            if (L->pre[r]) list[n++] = L->pre[r];
        for (int e = 0; e < L->n_experts; e++) list[n++] = L->experts[e];
        for (int s = 0; s < L->n_src; s++) list[n++] = L->src[s];
        for (int s = 0; s < L->n_hexperts * HC_ROLE_COUNT; s++)
            if (L->hexperts[s]) list[n++] = L->hexperts[s];
    }
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
            *it = (hc_conv_item){.layer = item_of[i], .nbytes = hc_conv_layer_out_bytes(L)};
            plan->bytes_in += hc_conv_layer_in_bytes(L);
        } else if (bsearch(&t, used, n_used, sizeof *used, cmp_ptr) == NULL) {
            *it = (hc_conv_item){.layer = -1, .copy = t, .nbytes = (int64_t)t->nbytes};
            plan->bytes_in += (int64_t)t->nbytes;
        } else {
            continue;
        }
        plan->bytes_out += it->nbytes;
        plan->n_items++;
        const hc_st_tensor *extra = item_of[i] >= 0 ? plan->layers[item_of[i]].extra : NULL;
        if (extra) { /* e.g. P.input_perm, written right after its layer */
            plan->items[plan->n_items++] =
                (hc_conv_item){.layer = -1, .copy = extra, .nbytes = (int64_t)extra->nbytes};
            plan->bytes_out += (int64_t)extra->nbytes;
        }
    }
    free(used);
    return HC_OK;
}

/* The plan of every layer: the tiles are written for the requested Humming
 * version; canonical layers are validated against what vLLM 0.33 and
 * humming-kernels 0.1.19 load (hc_conv_verify_layer says what verifies them). */
static hc_status plan_version(const hc_convert_options *opts, hc_conv_plan *plan, hc_error *err)
{
    plan->version = HC_HUMMING_CANONICAL;
    if (opts->layout == HC_LAYOUT_TILES)
        return hc_humming_version_parse(opts->humming_version ? opts->humming_version : "0.1.19",
                                        &plan->version, &plan->release, err);
    if (opts->humming_version)
        HC_FAIL(err, HC_ERR_ARG, "--humming-version %s: the version selects the tile layout "
                "(--layout tiles); the canonical layout is what vLLM 0.33 loads and transforms "
                "itself", opts->humming_version);
    return HC_OK;
}

/* 0.1.19: a second scale next to block scales fails Humming's LayerConfig;
 * 0.1.20: the layers whose tensors differ from 0.1.19's. */
static hc_status check_0119_layer(const hc_conv_plan *plan, const hc_conv_layer *L, hc_error *err)
{
    if (plan->version == HC_HUMMING_0_1_19 && L->has_global && L->cfg.scale_type == HC_SCALE_BLOCK)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: humming-kernels 0.1.19 takes a second scale "
                "only with group scales or channel scales (this layer has block scales)",
                L->prefix);
    return hc_humming_release_check(plan->release, &L->cfg, &L->meta, L->prefix, err);
}

hc_status hc_conv_plan_build(const hc_convert_options *opts, hc_st_model *model,
                             const hc_conv_source *sources, hc_conv_plan *plan, hc_error *err)
{
    plan->model = model;
    plan->sources = sources;
    plan->layout = opts->layout;
    HC_TRY(plan_version(opts, plan, err));
    if (plan->kind == HC_SRC_QUANTIZED && plan->ckpt->method == HC_CKPT_CT) {
        int stacks = 0;
        HC_TRY(hc_ckpt_ct_unstack(model, &stacks, err));
        if (stacks)
            hc_conv_log(opts, "input: %d compressed-tensors 3-D expert stack(s), read expert by "
                        "expert", stacks);
    }
    size_t count = hc_st_model_count(model);
    plan->layers = calloc(count + 1, sizeof *plan->layers);
    plan->weight_e0m = calloc(count + 1, sizeof *plan->weight_e0m);
    plan->items = calloc(2 * count + 1, sizeof *plan->items); /* + one extra per layer */
    int *item_of = malloc((count + 1) * sizeof *item_of);
    hc_status st = HC_OK;
    if (!plan->layers || !plan->items || !item_of || !plan->weight_e0m)
        st = hc_error_set(err, HC_ERR_NOMEM, "out of memory planning %zu tensors", count);
    for (size_t i = 0; st == HC_OK && i < count; i++) item_of[i] = -1;
    if (st == HC_OK)
        st = sources[plan->kind].find(opts, model, plan, item_of, err);
    for (int i = 0; st == HC_OK && i < plan->n_layers; i++) {
        hc_conv_layer *L = &plan->layers[i];
        st = sources[L->kind].plan_layer(opts, plan, L, err);
        if (st == HC_OK) st = check_0119_layer(plan, L, err);
        if (st == HC_OK) hc_conv_describe_outputs(L);
        if (st == HC_OK) st = hc_conv_plan_outputs(opts, plan, L, err);
    }
    if (st == HC_OK) st = hc_conv_check_fused(opts, plan, err);
    if (st == HC_OK && plan->n_layers == 0)
        st = hc_error_set(err, HC_ERR_FORMAT, "%s: no layer to convert (%s%s%s)", opts->in_dir,
                          plan->ckpt ? plan->ckpt->quant_method : "", plan->ckpt ? " checkpoint: " : "",
                          plan->kind == HC_SRC_HUMMING
                              ? "no int32 tensor named *.weight"
                          : plan->kind == HC_SRC_QUANTIZED
                              ? "no quantized layer tensors (qweight, weight_packed, "
                                "weight + weight_scale, *_blocks) were found"
                              : "config.json has no quantization_config, so this is read as a "
                                "float checkpoint, and it has no float linear weight that the "
                                "recipe does not ignore");
    if (st == HC_OK) st = build_items(model, plan, item_of, err);
    if (st == HC_OK && plan->layout == HC_LAYOUT_CANONICAL) { /* refusals before any write */
        cJSON *scratch = cJSON_CreateObject();
        st = scratch ? hc_conv_canonical_config(plan, scratch, err)
                     : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
        cJSON_Delete(scratch);
    }
    if (st == HC_OK)
        assign_shards(plan, opts->max_shard_bytes > 0 ? opts->max_shard_bytes : (int64_t)4 << 30);
    free(item_of);
    return st;
}

void hc_conv_plan_free(hc_conv_plan *plan)
{
    for (int i = 0; plan->layers && i < plan->n_layers; i++) {
        hc_conv_outputs_free(&plan->layers[i]);
        free(plan->layers[i].prefix);
        free(plan->layers[i].experts);
        free(plan->layers[i].src);
        for (int e = 0; e < plan->layers[i].n_qexperts; e++) free(plan->layers[i].qexperts[e].prefix);
        free(plan->layers[i].qexperts);
        free(plan->layers[i].hexperts);
        hc_st_tensor *x = plan->layers[i].extra;
        if (x) {
            free((void *)x->name);
            free((void *)x->data);
            free(x);
        }
    }
    free(plan->ckpt);
    free(plan->weight_e0m);
    free(plan->layers);
    free(plan->items);
    memset(plan, 0, sizeof *plan);
}
