/* hc_convert_quantized.c - already-quantized inputs (hc_ckpt.h): finding the
 * layers by tensor presence, deciding lossless repack vs requantization,
 * and producing each layer's pre-repack tensors at write time.
 *
 * Lossless repack is the default (no --format / recipe), and also whenever
 * the requested target equals the source format. Otherwise, and for
 * --act-order requant, the layer is dequantized exactly to float32 (one
 * rounding of the exact product) and quantized by the float path's
 * quantizer. Float weights of a quantized checkpoint (skipped modules,
 * layers the producer left unquantized) are copied unchanged unless a
 * target was given and the module is not in the checkpoint's skip list. */
#include "hc_conv_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_ckpt.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static hc_status ask_target(const hc_convert_options *opts, hc_conv_layer *L, hc_error *err)
{
    int skip = 0;
    HC_TRY_CTX(err, opts->choose_target(opts->choose_ctx, L->prefix, &L->target, &skip, L->why,
                                        sizeof L->why, err),
               "layer %s: ", L->prefix);
    L->has_choice = 1;
    L->skip_target = skip;
    return HC_OK;
}

/* Starts (and counts, so hc_conv_plan_free frees it) a quantized layer. */
static hc_status begin_quant_layer(hc_conv_plan *plan, hc_ckpt_kind kind, const char *prefix,
                                   size_t n_src_max, hc_conv_layer **out, hc_error *err)
{
    hc_conv_layer *L = &plan->layers[plan->n_layers];
    memset(L, 0, sizeof *L);
    L->kind = HC_SRC_QUANTIZED;
    L->ck_kind = kind;
    L->prefix = strdup(prefix);
    L->src = calloc(n_src_max, sizeof *L->src);
    if (!L->prefix || !L->src) {
        free(L->prefix);
        free(L->src);
        memset(L, 0, sizeof *L);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory planning %s", prefix);
    }
    plan->n_layers++;
    *out = L;
    return HC_OK;
}

static hc_status finish_quant_layer(const hc_convert_options *opts, hc_conv_layer *L,
                                    int skipped, hc_error *err)
{
    if (skipped)
        hc_conv_log(opts, "note: %s is in the checkpoint's skip list but holds quantized "
                    "tensors; the tensors decide (converted as quantized)", L->prefix);
    if (opts->has_target && opts->choose_target) HC_TRY(ask_target(opts, L, err));
    return HC_OK;
}

static hc_status add_quant_layer(const hc_convert_options *opts, hc_conv_plan *plan,
                                 hc_ckpt_kind kind, const char *prefix, hc_error *err)
{
    hc_conv_layer *L = NULL;
    HC_TRY(begin_quant_layer(plan, kind, prefix, 16, &L, err));
    L->n_src = hc_ckpt_layer_tensors(plan->model, kind, prefix, L->src, 16);
    L->pre[HC_ROLE_BIAS] = hc_ckpt_layer_bias(plan->model, kind, prefix);
    return finish_quant_layer(opts, L, hc_ckpt_is_skipped(plan->ckpt, prefix), err);
}

/* A float 2-D "P.weight" that is not part of a quantized layer. */
static hc_status maybe_float_layer(const hc_convert_options *opts, hc_conv_plan *plan,
                                   const hc_st_tensor *t, int *kept, hc_error *err)
{
    *kept = 0;
    if (!opts->has_target || !opts->choose_target || t->ndim != 2 ||
        !hc_ckpt_is_float_dtype(t->dtype) || !ends_with(t->name, ".weight"))
        return HC_OK;
    size_t plen = strlen(t->name) - 7;
    char *prefix = strndup(t->name, plen);
    HC_CHECK_ALLOC(err, prefix, "layer name");
    if (hc_ckpt_is_skipped(plan->ckpt, prefix)) { /* honoured: stays as stored */
        free(prefix);
        return HC_OK;
    }
    hc_conv_layer *L = &plan->layers[plan->n_layers];
    memset(L, 0, sizeof *L);
    L->kind = HC_SRC_FLOAT;
    L->prefix = prefix;
    L->pre[HC_ROLE_WEIGHT] = t;
    char bias[4096];
    snprintf(bias, sizeof bias, "%s.bias", prefix);
    const hc_st_tensor *b = hc_st_model_find(plan->model, bias);
    if (b && hc_ckpt_is_float_dtype(b->dtype) && b->ndim == 1) L->pre[HC_ROLE_BIAS] = b;
    int skip = 0;
    hc_status st = opts->choose_target(opts->choose_ctx, prefix, &L->target, &skip, L->why,
                                       sizeof L->why, err);
    if (st != HC_OK || skip) {
        free(L->prefix);
        memset(L, 0, sizeof *L);
        if (st != HC_OK) hc_error_prefix(err, "layer %s: ", t->name);
        return st;
    }
    plan->n_layers++;
    *kept = 1;
    return HC_OK;
}

/* Tensors that belong to a quantized layer but do not carry it. */
static int is_part_of_quant_layer(hc_st_model *model, const hc_ckpt_config *c,
                                  const hc_st_tensor *t)
{
    if (!ends_with(t->name, ".weight")) return 0;
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(t->name) - 7), t->name);
    (void)c; /* CT: P.weight next to P.weight_packed is never a float layer */
    return hc_ckpt_find(model, prefix, ".weight_packed") != NULL;
}

/* Experts of one key must be numbered 0..E-1 and stored as one kind (as the float path). */
static hc_status check_qstack(const hc_conv_plan *plan, const hc_conv_expert *e, size_t n,
                              hc_error *err)
{
    HC_TRY(hc_conv_experts_check(plan->model, e, n, "quantized ", err));
    const hc_st_tensor *t0 = hc_st_model_tensor_at(plan->model, e[0].tensor);
    for (size_t i = 0; i < n; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(plan->model, e[i].tensor);
        if (e[i].kind != e[0].kind)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): expert %ld of stack %s is stored as "
                    "another kind of quantized layer than expert 0 (%s)", t->name, t->file,
                    (long)i, e[0].key, t0->name);
    }
    return HC_OK;
}

/* Expert i's own prefix and bias (all experts have one, or none). */
static hc_status add_qexpert(hc_conv_plan *plan, hc_conv_layer *L, const hc_conv_expert *x,
                             int i, size_t n_src_max, hc_error *err)
{
    hc_conv_qexpert *q = &L->qexperts[i];
    hc_ckpt_kind kind;
    char name[4096];
    q->carrier = hc_st_model_tensor_at(plan->model, x->tensor);
    if (!hc_ckpt_layer_of(plan->ckpt, q->carrier, &kind, name, sizeof name))
        HC_FAIL(err, HC_ERR_INTERNAL, "%s: not a layer tensor", q->carrier->name);
    q->prefix = strdup(name);
    HC_CHECK_ALLOC(err, q->prefix, "expert name");
    q->bias = hc_ckpt_layer_bias(plan->model, kind, name);
    L->n_src += hc_ckpt_layer_tensors(plan->model, kind, name, L->src + L->n_src,
                                      (int)n_src_max - L->n_src);
    if (q->bias && L->n_src < (int)n_src_max) L->src[L->n_src++] = q->bias; /* not copied */
    if ((q->bias != NULL) != (L->qexperts[0].bias != NULL))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): expert %d of stack %s %s and expert 0 %s; "
                "a stacked layer has a bias for every expert or none", q->carrier->name,
                q->carrier->file, i, L->prefix, q->bias ? "has a bias" : "has no bias",
                q->bias ? "has none" : "has one");
    return HC_OK;
}

static hc_status add_quant_stack(const hc_convert_options *opts, hc_conv_plan *plan,
                                 const hc_conv_expert *e, size_t n, hc_error *err)
{
    hc_conv_layer *L = NULL;
    size_t n_src_max = 16 * n;
    HC_TRY(begin_quant_layer(plan, (hc_ckpt_kind)e[0].kind, e[0].key, n_src_max, &L, err));
    L->qexperts = calloc(n, sizeof *L->qexperts);
    HC_CHECK_ALLOC(err, L->qexperts, "expert list");
    L->n_qexperts = (int)n;
    int skipped = 0;
    for (size_t i = 0; i < n; i++) {
        HC_TRY(add_qexpert(plan, L, &e[i], (int)i, n_src_max, err));
        skipped |= hc_ckpt_is_skipped(plan->ckpt, L->qexperts[i].prefix);
    }
    return finish_quant_layer(opts, L, skipped, err);
}

static hc_status add_quant_stacks(const hc_convert_options *opts, hc_conv_plan *plan,
                                  hc_conv_expert *e, size_t n, int *layer_of, hc_error *err)
{
    hc_conv_experts_sort(e, n);
    for (size_t i = 0, j; i < n; i = j) {
        j = hc_conv_experts_group_end(e, n, i);
        HC_TRY(check_qstack(plan, e + i, j - i, err));
        HC_TRY(add_quant_stack(opts, plan, e + i, j - i, err));
        layer_of[e[i].tensor] = plan->n_layers - 1; /* the stack sits at expert 0 */
    }
    return HC_OK;
}

hc_status hc_conv_find_quantized(const hc_convert_options *opts, hc_st_model *model,
                                 hc_conv_plan *plan, int *layer_of, hc_error *err)
{
    plan->model = model;
    size_t count = hc_st_model_count(model), n_ex = 0;
    hc_conv_expert *ex = calloc(count + 1, sizeof *ex);
    HC_CHECK_ALLOC(err, ex, "expert table");
    hc_status st = HC_OK;
    for (size_t i = 0; st == HC_OK && i < count; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        hc_ckpt_kind kind;
        char prefix[4096];
        int kept = 0;
        if (hc_ckpt_layer_of(plan->ckpt, t, &kind, prefix, sizeof prefix)) {
            hc_conv_expert *x = &ex[n_ex];
            if (hc_conv_expert_key(prefix, x->key, sizeof x->key, &x->index)) {
                x->kind = kind;
                x->tensor = i;
                n_ex++;
                continue;
            }
            st = add_quant_layer(opts, plan, kind, prefix, err);
            kept = st == HC_OK;
        } else if (!is_part_of_quant_layer(model, plan->ckpt, t)) {
            st = maybe_float_layer(opts, plan, t, &kept, err);
        }
        if (st == HC_OK && kept) layer_of[i] = plan->n_layers - 1;
    }
    if (st == HC_OK) st = add_quant_stacks(opts, plan, ex, n_ex, layer_of, err);
    free(ex);
    return st;
}

static hc_scale_type desc_scale_type(const hc_quant_desc *d)
{
    if (d->group_size_n > 1) return HC_SCALE_BLOCK;
    if (d->group_size == HC_QUANT_GROUP_TENSOR) return HC_SCALE_TENSOR;
    if (d->global_scale) return HC_SCALE_GROUP_TENSOR;
    return d->group_size == HC_QUANT_GROUP_CHANNEL ? HC_SCALE_CHANNEL : HC_SCALE_GROUP;
}

/* The source format as a target (used for --act-order requant without --format). */
static hc_target source_target(const hc_quant_desc *d, hc_format_id act)
{
    hc_target t = {.weight_format = d->weight_format, .scale_format = d->scale_format,
                   .group_size = d->group_size == HC_QUANT_GROUP_CHANNEL ? 0 : d->group_size,
                   .group_size_n = d->group_size_n,
                   .zero_point = d->zero_point == HC_ZP_INT     ? HC_TARGET_ZP_INT
                                 : d->zero_point == HC_ZP_FLOAT ? HC_TARGET_ZP_FLOAT
                                                                : HC_TARGET_ZP_NONE,
                   .global_scale = d->global_scale, .activation = act};
    return t;
}

static hc_format_id stored(hc_format_id f)
{
    const hc_format_info *fi = hc_format_get(f);
    return fi->kind == HC_KIND_INT ? (hc_format_id)(HC_FMT_UINT1 + fi->bits - 1) : f;
}

/* 1 if target t describes exactly the source's stored format. */
static int same_format(const hc_target *t, const hc_quant_desc *d)
{
    hc_target s = source_target(d, t->activation);
    return stored(t->weight_format) == d->weight_format && t->group_size == s.group_size &&
           (t->group_size_n > 1 ? t->group_size_n : 0) == s.group_size_n &&
           t->zero_point == s.zero_point && (t->global_scale != 0) == (s.global_scale != 0) &&
           (d->group_size == HC_QUANT_GROUP_TENSOR || t->scale_format == d->scale_format);
}

static hc_status make_perm_tensor(hc_conv_layer *L, int32_t *perm, int64_t K, hc_error *err)
{
    hc_st_tensor *x = calloc(1, sizeof *x);
    char *name = malloc(strlen(L->prefix) + 16);
    if (!x || !name) {
        free(x);
        free(name);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory (input_perm)");
    }
    sprintf(name, "%s.input_perm", L->prefix);
    x->name = name;
    x->file = "";
    x->dtype = HC_DT_I32;
    x->ndim = 1;
    x->shape[0] = K;
    x->data = perm; /* little-endian int32 on the hosts we build for */
    x->nbytes = (size_t)K * 4;
    L->extra = x;
    return HC_OK;
}

/* The lossless repack of L as its source format would be, in L->cfg and the role flags. */
static void lossless_config(const hc_convert_options *opts, const hc_conv_plan *plan,
                            hc_conv_layer *L, const hc_quant_desc *d, hc_format_id act, int global)
{
    L->cfg = (hc_layer_config){
        .weight_format = d->weight_format,
        .scale_format = d->group_size == HC_QUANT_GROUP_TENSOR ? HC_FMT_F32 : d->scale_format,
        .act_format = act, .param_format = plan->param_format,
        .scale_type = desc_scale_type(d),
        .group_size = d->group_size > 0 ? d->group_size : 0,
        .group_size_n = d->group_size_n > 1 ? d->group_size_n : 0,
        .has_zero_point = d->zero_point != HC_ZP_NONE,
        .is_fp_zero_point = d->zero_point == HC_ZP_FLOAT, .sm = opts->sm,
        .version = plan->version};
    L->has_zero = L->cfg.has_zero_point;
    L->has_global = global;
}

/* The source format made canonical: scales in the model dtype, per channel
 * where they were per tensor or per block, no second scale, and for experts
 * symmetric. */
static hc_target canonical_target(const hc_conv_plan *plan, const hc_quant_desc *d,
                                  hc_format_id act, int moe)
{
    hc_target t = source_target(d, act);
    if (hc_format_get(t.scale_format)->bits == 16 || t.group_size < 0 || t.group_size_n > 1 ||
        t.global_scale)
        t.scale_format = plan->param_format;
    if (t.group_size < 0 || t.group_size_n > 1) t.group_size = 0, t.group_size_n = 0;
    if (moe) t.zero_point = HC_TARGET_ZP_NONE;
    t.global_scale = 0;
    return t;
}

/* A value of the layer dtype f as float (f: F16 or BF16). */
static float param_round(hc_format_id f, float v)
{
    return f == HC_FMT_F16 ? hc_f16_to_f32(hc_f32_to_f16(v)) : hc_bf16_to_f32(hc_f32_to_bf16(v));
}

/* Canonical layout, group scales with a per-tensor second scale in a module
 * vLLM loads fused: where the layer dtype holds every global scale exactly,
 * the second scale becomes per channel (lossless; humming-kernels 0.1.19
 * converts fused shards with different global scales the same way,
 * HummingWeightSchema._convert_humming). A rounded one would be less exact
 * than the requantization into model-dtype scales (canonical_target), so it
 * is not taken. With `note`, L->note says so. Returns whether it applied. */
static int s2_to_channel(const hc_convert_options *opts, hc_conv_layer *L,
                         const hc_quant_result *q, int moe, int note)
{
    if (opts->layout != HC_LAYOUT_CANONICAL || !hc_conv_canonical_s2_to_channel(L, moe) ||
        q->global_scale == NULL)
        return 0;
    for (int64_t e = 0; e < q->experts; e++)
        if (param_round(L->cfg.param_format, q->global_scale[e]) != q->global_scale[e]) return 0;
    L->cfg.scale_type = HC_SCALE_GROUP;
    L->cfg.scale_2_channel = 1;
    size_t n = strlen(L->note);
    if (note)
        snprintf(L->note + n, sizeof L->note - n, "%sweight_scale_2 per channel in %s (vLLM "
                 "loads no per-tensor one into a fused module; exact)", n ? "; " : "",
                 hc_format_get(L->cfg.param_format)->name);
    return 1;
}

/* Where the canonical layout cannot hold the source format exactly but a
 * close one (scales in the model dtype, symmetric, per channel instead of per
 * tensor or block, no second scale) fits: that target in L->target, the reason
 * in L->note; returns 1. A per-tensor second scale in a fused module is made
 * per channel instead (s2_to_channel), where nothing else is in the way. */
static int canonical_requant(const hc_convert_options *opts, const hc_conv_plan *plan,
                             hc_conv_layer *L, const hc_quant_result *q, hc_format_id act, int moe)
{
    int fixable = 0;
    const hc_quant_desc *d = &q->desc;
    lossless_config(opts, plan, L, d, act, d->global_scale || d->group_size == HC_QUANT_GROUP_TENSOR);
    const char *why = hc_conv_canonical_problem(L, moe, &fixable);
    if (why && fixable && s2_to_channel(opts, L, q, moe, 0)) {
        why = hc_conv_canonical_problem(L, moe, &fixable);
        if (why) /* requantized as the per-tensor form would be */
            lossless_config(opts, plan, L, d, act, 1), why = hc_conv_canonical_problem(L, moe, &fixable);
    }
    if (why == NULL || !fixable) return 0;
    L->target = canonical_target(plan, d, act, moe);
    L->canonical_fix = 1;
    size_t n = strlen(L->note);
    snprintf(L->note + n, sizeof L->note - n, "%srequantized for the canonical layout: %s",
             n ? "; " : "", why);
    return 1;
}

/* 0.1.19 tiles: with 16-bit activations humming-kernels 0.1.19 takes 16-bit
 * scales only in the model dtype (get_dtype_compatibility_error), so a
 * source with others (GPTQ's float16 scales in a bfloat16 model) is
 * requantized with scales in the model dtype, its form otherwise kept, as
 * the canonical layout does. vLLM's loader limits (MoE zero points, per-tensor
 * scales on fused modules) do not bind tiles, which are written per module. */
static int tiles_requant(const hc_convert_options *opts, const hc_conv_plan *plan,
                         hc_conv_layer *L, const hc_quant_desc *d, hc_format_id act)
{
    lossless_config(opts, plan, L, d, act, d->global_scale || d->group_size == HC_QUANT_GROUP_TENSOR);
    const hc_layer_config *c = &L->cfg;
    if (plan->version != HC_HUMMING_0_1_19 || hc_format_get(act)->bits != 16 ||
        hc_format_get(c->scale_format)->bits != 16 || c->scale_format == plan->param_format ||
        c->scale_type == HC_SCALE_BLOCK || c->scale_type == HC_SCALE_TENSOR)
        return 0;
    L->target = source_target(d, act);
    L->target.scale_format = plan->param_format;
    L->canonical_fix = 1;
    size_t n = strlen(L->note);
    snprintf(L->note + n, sizeof L->note - n, "%srequantized with %s scales: humming-kernels "
             "0.1.19 takes 16-bit scales only in the model dtype", n ? "; " : "",
             hc_format_get(plan->param_format)->name);
    return 1;
}

static hc_ckpt_read_opts read_opts(const hc_convert_options *opts, const hc_conv_plan *plan,
                                   int meta_only)
{
    /* with a target, scales no 16-bit dtype holds are read exactly: a requantization follows */
    hc_ckpt_read_opts r = {.act_order = (hc_act_order)opts->act_order,
                           .param_format = plan->param_format, .meta_only = meta_only,
                           .float32_scales = opts->has_target};
    return r;
}

/* Each expert's bias must be a vector of the stack's N outputs. */
static hc_status check_stack_bias(const hc_conv_layer *L, int64_t N, hc_error *err)
{
    for (int e = 0; e < L->n_qexperts; e++) {
        const hc_st_tensor *b = L->qexperts[e].bias;
        if (b && (b->ndim != 1 || b->shape[0] != N))
            HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expert bias must be [%lld] (the layer's "
                    "outputs)", b->name, b->file, (long long)N);
    }
    return HC_OK;
}

hc_status hc_conv_plan_quantized_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                       hc_conv_layer *L, hc_error *err)
{
    hc_ckpt_layer cl;
    hc_ckpt_read_opts ro = read_opts(opts, plan, 1);
    HC_TRY_CTX(err, hc_conv_read_quantized(plan, L, &ro, &cl, err), "%s (%s): ", opts->in_dir,
               hc_ckpt_method_name(plan->ckpt->method));
    snprintf(L->source_format, sizeof L->source_format, "%s", cl.source_format);
    snprintf(L->note, sizeof L->note, "%s", cl.note);
    const hc_quant_desc *d = &cl.q.desc;
    int64_t E = cl.q.experts, N = cl.q.n, K = cl.q.k;
    hc_format_id act = plan->activation;
    int want_target = L->has_choice && !L->skip_target;
    if (want_target) {
        L->target = hc_target_resolve(L->target, plan->param_format);
        act = L->target.activation;
    }
    L->requant = (want_target && !same_format(&L->target, d)) ||
                 (cl.perm && opts->act_order == HC_ACT_ORDER_REQUANT);
    if (!L->requant && opts->layout == HC_LAYOUT_CANONICAL)
        L->requant = canonical_requant(opts, plan, L, &cl.q, act, cl.is_moe);
    else if (!L->requant)
        L->requant = tiles_requant(opts, plan, L, d, act);
    hc_status st = HC_OK;
    if (L->requant) {
        if (!want_target && !L->canonical_fix) /* act-order requant: the source's format */
            L->target = opts->layout == HC_LAYOUT_CANONICAL ? canonical_target(plan, d, act, cl.is_moe)
                                                            : source_target(d, act);
        hc_conv_target_config(opts, plan, &L->target, &L->cfg);
        if (opts->layout == HC_LAYOUT_CANONICAL && hc_conv_canonical_s2_to_channel(L, cl.is_moe)) {
            L->target.global_scale = HC_TARGET_S2_CHANNEL; /* vLLM loads it into fused modules */
            hc_conv_target_config(opts, plan, &L->target, &L->cfg);
        }
        L->has_zero = L->cfg.has_zero_point;
        L->has_global = L->target.global_scale || L->target.group_size < 0;
        L->lossless = 0;
        free(cl.perm); /* requant works in the source order */
        cl.perm = NULL;
    } else {
        lossless_config(opts, plan, L, d, act, cl.q.global_scale != NULL);
        L->lossless = cl.lossless;
        s2_to_channel(opts, L, &cl.q, cl.is_moe, 1);
        if (cl.perm) {
            st = make_perm_tensor(L, cl.perm, K, err);
            if (st == HC_OK) cl.perm = NULL;
        }
    }
    L->has_bias = L->qexperts ? L->qexperts[0].bias != NULL : L->pre[HC_ROLE_BIAS] != NULL;
    if (st == HC_OK && L->qexperts) st = check_stack_bias(L, N, err);
    int moe = cl.is_moe;
    hc_ckpt_layer_free(&cl);
    HC_TRY(st);
    if (L->note[0]) hc_conv_log(opts, "warning: layer %s: %s", L->prefix, L->note);
    HC_TRY_CTX(err, hc_layer_plan(&L->cfg, moe, E, N, K, &L->meta, err), "layer %s (%s, %s): ",
               L->prefix, L->source_format, L->requant ? "requantized" : "lossless repack");
    snprintf(L->why, sizeof L->why, "%s: %s", L->source_format,
             L->requant ? "dequantized exactly and requantized" : L->lossless
                 ? "repacked losslessly" : "repacked (see note)");
    return HC_OK;
}

/* The per-expert float32 second scale (E,) as the per-channel one the plan
 * chose (s2_to_channel): every row of an expert gets its value, rounded to
 * the layer dtype. */
static hc_status expand_s2(const hc_conv_layer *L, hc_layer_tensors *pre, hc_error *err)
{
    hc_tensor g = pre->global_scale;
    const int64_t E = L->meta.E, N = L->meta.N;
    int64_t shape[2] = {E, N};
    hc_format_id f = L->cfg.param_format;
    memset(&pre->global_scale, 0, sizeof pre->global_scale);
    hc_status st = hc_tensor_alloc(&pre->global_scale, hc_dtype_of_format(f), L->meta.is_moe ? 2 : 1,
                                   L->meta.is_moe ? shape : shape + 1, err);
    const float *in = g.data;
    uint16_t *out = pre->global_scale.data;
    for (int64_t e = 0; st == HC_OK && e < E; e++)
        for (int64_t n = 0; n < N; n++)
            out[e * N + n] = f == HC_FMT_F16 ? hc_f32_to_f16(in[e]) : hc_f32_to_bf16(in[e]);
    hc_tensor_free(&g);
    return st;
}

/* The layer's pre tensors from its reading; codes that are already
 * Humming's words stay a view of the input (hc_ckpt_read_opts.code_views):
 * the writer writes them from the mapping. */
static hc_status repack_pre(const hc_conv_plan *plan, const hc_conv_layer *L,
                            const hc_ckpt_read_opts *ro, hc_layer_tensors *pre, hc_error *err)
{
    hc_ckpt_layer cl;
    hc_ckpt_read_opts views = *ro;
    views.code_views = 1;
    views.pool = plan->run ? plan->run->pool : NULL;
    HC_TRY(hc_conv_read_quantized(plan, L, &views, &cl, err));
    hc_status st = hc_conv_pre_from_result(&cl.q, L->meta.is_moe, pre, err);
    hc_ckpt_layer_free(&cl);
    if (st == HC_OK && L->cfg.scale_2_channel && pre->global_scale.dtype == HC_DT_F32)
        st = expand_s2(L, pre, err);
    return st;
}

static hc_status requant_pre(const hc_conv_plan *plan, const hc_conv_layer *L,
                             const hc_ckpt_read_opts *ro, hc_layer_tensors *pre, hc_error *err)
{
    int64_t E = L->meta.E, N = L->meta.N, K = L->meta.K;
    float *w = malloc((size_t)(E * N * K) * sizeof *w + 1);
    if (!w) HC_FAIL(err, HC_ERR_NOMEM, "out of memory dequantizing %s", L->prefix);
    hc_status st = hc_conv_dequant_quantized(plan, L, ro, w, err);
    if (st == HC_OK) st = hc_conv_quantize_float(&L->target, L->cfg.param_format, w, E, N, K,
                                                    L->meta.is_moe, pre, err);
    if (st != HC_OK) hc_error_prefix(err, "layer %s (requantize): ", L->prefix);
    free(w);
    return st;
}

hc_status hc_conv_load_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                 hc_layer_tensors *pre, hc_error *err)
{
    hc_ckpt_read_opts ro = {.act_order = L->requant ? HC_ACT_ORDER_REQUANT
                                         : L->extra ? HC_ACT_ORDER_PERMUTE : HC_ACT_ORDER_REFUSE,
                            .param_format = plan->param_format, .meta_only = 0,
                            .float32_scales = L->requant};
    HC_TRY(L->requant ? requant_pre(plan, L, &ro, pre, err) : repack_pre(plan, L, &ro, pre, err));
    if (L->qexperts && L->has_bias) return hc_conv_load_bias_stack(plan, L, &pre->bias, err);
    if (L->pre[HC_ROLE_BIAS])
        return hc_conv_load_bias(L->pre[HC_ROLE_BIAS], plan->param_format, &pre->bias, err);
    return HC_OK;
}

hc_status hc_conv_quantized_ref(const hc_conv_plan *plan, const hc_conv_layer *L, float **ref,
                                hc_error *err)
{
    *ref = NULL;
    if (L->lossless || L->requant || L->qexperts) return HC_OK; /* stacks: per expert, not done */
    float *r = malloc((size_t)(L->meta.N * L->meta.K) * sizeof *r + 1);
    HC_CHECK_ALLOC(err, r, "source values");
    hc_status st = hc_ckpt_source_values(plan->ckpt, plan->model, (hc_ckpt_kind)L->ck_kind,
                                         L->prefix, r, err);
    if (st == HC_ERR_UNSUPPORTED) { /* the reader has none: measured against its reading */
        free(r);
        return HC_OK;
    }
    if (st != HC_OK) { free(r); return st; }
    *ref = r;
    return HC_OK;
}
