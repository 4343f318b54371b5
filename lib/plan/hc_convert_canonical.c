/* hc_convert_canonical.c - the canonical output layout: Humming's pre-repack
 * tensors under the names vLLM 0.33's Humming path loads, and the
 * quantization_config keys it reads (docs/output-format.md).
 *
 * vLLM builds one Humming schema per module it loads, so the rules here are
 * vLLM's: q/k/v and gate/up are one fused module, every projection of an MoE
 * block is one FusedMoE module, and its FusedMoE loader reads experts one by
 * one ("X.experts.<e>.<proj>.<name>") with no zero points and no per-tensor
 * scales. */
#include "hc_conv_plan.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Canonical tensor name suffixes by role; a tensor-only scale is the layer's
 * weight_scale (Humming's weight_scale_type "tensor"). */
static const char *canonical_suffix(const hc_conv_layer *L, int role)
{
    static const char *const suffix[HC_ROLE_COUNT] = {".weight", ".weight_scale", ".zero_point",
                                                      ".weight_scale_2", ".bias"};
    if (role == HC_ROLE_GLOBAL && L->cfg.scale_type == HC_SCALE_TENSOR) return ".weight_scale";
    return suffix[role];
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Whether a checkpoint prefix names one expert's projection ("X.experts.<e>.Y"). */
static int is_expert_name(const char *prefix)
{
    const char *at = strstr(prefix, ".experts.");
    return at && at[9] >= '0' && at[9] <= '9';
}

/* The fused vLLM module kind of a checkpoint prefix: "qkv_proj" for q/k/v,
 * "gate_up_proj" for gate/up, "experts" for MoE experts, else NULL. */
static const char *fused_kind_of(const char *prefix, int is_moe)
{
    if (is_moe || is_expert_name(prefix)) return "experts";
    static const char *const qkv[] = {".q_proj", ".k_proj", ".v_proj", ".query", ".key", ".value"};
    static const char *const gu[] = {".gate_proj", ".up_proj"};
    for (int i = 0; i < 6; i++)
        if (ends_with(prefix, qkv[i])) return "qkv_proj";
    for (int i = 0; i < 2; i++)
        if (ends_with(prefix, gu[i])) return "gate_up_proj";
    return NULL;
}

static const char *fused_kind(const hc_conv_layer *L)
{
    return fused_kind_of(L->prefix, L->meta.is_moe);
}

/* Writes into buf the module vLLM loads a checkpoint prefix into: the fused
 * name ("...self_attn.qkv_proj", "...mlp.experts"), or the prefix itself. */
static void vllm_module_of(const char *prefix, int is_moe, char *buf, size_t len)
{
    const char *kind = fused_kind_of(prefix, is_moe);
    const char *cut = kind && !strcmp(kind, "experts") ? strstr(prefix, ".experts") : NULL;
    const char *dot = strrchr(prefix, '.');
    if (cut) snprintf(buf, len, "%.*s.experts", (int)(cut - prefix), prefix);
    else if (kind && dot) snprintf(buf, len, "%.*s.%s", (int)(dot - prefix), prefix, kind);
    else snprintf(buf, len, "%s", prefix);
}

static void vllm_module(const hc_conv_layer *L, char *buf, size_t len)
{
    vllm_module_of(L->prefix, L->meta.is_moe, buf, len);
}

/* Name prefix of expert e of MoE layer L ("X.experts.<e>.Y"), malloc'ed. */
static char *expert_prefix(const hc_conv_layer *L, int e)
{
    if (L->experts) {
        const char *n = L->experts[e]->name;
        size_t len = strlen(n);
        return ends_with(n, ".weight") ? strndup(n, len - 7) : NULL;
    }
    if (L->qexperts) return strdup(L->qexperts[e].prefix);
    const char *at = strstr(L->prefix, ".experts.");
    if (at == NULL) return NULL;
    size_t head = (size_t)(at - L->prefix) + 9, len = strlen(L->prefix) + 24;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%.*s%d.%s", (int)head, L->prefix, e, L->prefix + head);
    return p;
}

/* Shape of one expert's (or the dense layer's) canonical tensor of role r. */
static int role_desc(const hc_conv_layer *L, int r, hc_out_desc *d)
{
    const hc_layer_config *c = &L->cfg;
    const hc_layer_meta *m = &L->meta;
    int64_t N = m->N, K = m->K, b = m->weight_bits;
    int64_t G = c->group_size > 0 ? K / c->group_size : 1;
    int64_t NS = c->scale_type == HC_SCALE_BLOCK ? N / c->group_size_n : N;
    hc_dtype param = hc_dtype_of_format(c->param_format);
    int64_t s[2] = {0, 0};
    int ndim = 2;
    memset(d, 0, sizeof *d);
    switch (r) {
    case HC_ROLE_WEIGHT: d->dtype = HC_DT_I32, s[0] = N, s[1] = K * b / 32; break;
    case HC_ROLE_SCALE:
        if (c->scale_type == HC_SCALE_TENSOR) return 0;
        d->dtype = hc_dtype_of_format(c->scale_type == HC_SCALE_BLOCK ? HC_FMT_F32 : c->scale_format);
        s[0] = NS, s[1] = G;
        break;
    case HC_ROLE_ZERO:
        if (!L->has_zero) return 0;
        d->dtype = c->is_fp_zero_point ? param : HC_DT_I32;
        s[0] = c->is_fp_zero_point ? N : N * b / 32, s[1] = G;
        break;
    case HC_ROLE_GLOBAL: /* per tensor (1,) F32, or per channel (N,) in the model dtype */
        if (!L->has_global) return 0;
        d->dtype = c->scale_2_channel ? param : HC_DT_F32, ndim = 1, s[0] = c->scale_2_channel ? N : 1;
        break;
    default:
        if (!L->has_bias) return 0;
        d->dtype = param, ndim = 1, s[0] = N;
    }
    d->present = 1;
    d->ndim = ndim;
    memcpy(d->shape, s, sizeof s);
    d->nbytes = hc_tensor_byte_size(d->dtype, ndim, s);
    return 1;
}

const char *hc_conv_canonical_problem(const hc_conv_layer *L, int is_moe, int *fixable)
{
    const hc_layer_config *c = &L->cfg;
    const hc_format_info *sf = hc_format_get(c->scale_format);
    const char *kind = fused_kind_of(L->prefix, is_moe);
    /* a per-channel second scale loads like channel scales, also into fused modules */
    int tensor_scale = c->scale_type == HC_SCALE_TENSOR || (L->has_global && !c->scale_2_channel);
    *fixable = 0;
    if (strstr(L->prefix, "lm_head"))
        return "vLLM's Humming path always loads lm_head unquantized";
    if (L->extra)
        return "--act-order permute needs an input permutation, which vLLM's Humming path "
               "does not apply (use --act-order requant)";
    if (hc_format_get(c->act_format)->bits == 16 && c->act_format != c->param_format)
        return "16-bit activations must be the model dtype";
    if (c->act_format == HC_FMT_INT4 && c->sm >= 90) /* humming/tune: b4_allowed_dtypes */
        return "humming-kernels 0.1.19 runs int4 activations on sm75-sm89 only (vLLM would "
               "fail, or with allow_fallback run int8 activations): use w4a8-int8, or --arch "
               "sm80 / sm89 for those GPUs";
    if (is_moe && ((L->kind == HC_SRC_FLOAT && !L->experts) || ends_with(L->prefix, "gate_up_proj")))
        return "a fused 3-D expert stack has no per-expert gate/up names for vLLM's FusedMoE loader";
    /* the rest a requantization into another scale or zero-point form can fix */
    *fixable = 1;
    if (sf->bits == 16 && c->scale_type != HC_SCALE_BLOCK && c->scale_format != c->param_format)
        return "16-bit scales must be in the model dtype (vLLM requires bs_dtype to match it)";
    if (is_moe && L->has_zero)
        return "vLLM's FusedMoE loader reads no zero points";
    if (is_moe && tensor_scale)
        return "vLLM's FusedMoE loader cannot load per-tensor scales of gate/up experts";
    if (kind && !is_moe && tensor_scale)
        return "vLLM cannot load per-tensor scales into a fused q/k/v or gate/up module";
    if (kind && !is_moe && c->scale_type == HC_SCALE_BLOCK)
        return "vLLM cannot load block scales into a fused q/k/v or gate/up module";
    *fixable = 0;
    return NULL;
}

int hc_conv_canonical_s2_to_channel(const hc_conv_layer *L, int is_moe)
{
    return L->cfg.scale_type == HC_SCALE_GROUP_TENSOR && fused_kind_of(L->prefix, is_moe) != NULL;
}

static hc_status add_out(hc_conv_layer *L, const char *prefix, const char *suffix, int role,
                         int expert, const hc_out_desc *d, hc_error *err)
{
    hc_out_tensor *o = &L->outs[L->n_outs];
    size_t len = strlen(prefix) + strlen(suffix) + 1;
    o->name = malloc(len);
    HC_CHECK_ALLOC(err, o->name, "output tensor name");
    snprintf(o->name, len, "%s%s", prefix, suffix);
    o->role = role;
    o->expert = expert;
    o->desc = *d;
    L->n_outs++;
    return HC_OK;
}

static hc_status plan_canonical(hc_conv_layer *L, hc_error *err)
{
    int fixable;
    const char *why = hc_conv_canonical_problem(L, L->meta.is_moe, &fixable);
    if (why)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: the canonical layout (vLLM 0.33's Humming "
                "checkpoint format) cannot hold it: %s; keep it unquantized (recipe ignore) or "
                "write --layout tiles", L->prefix, why);
    int E = L->meta.is_moe ? (int)L->meta.E : 1;
    L->outs = calloc((size_t)E * HC_ROLE_COUNT, sizeof *L->outs);
    HC_CHECK_ALLOC(err, L->outs, "output tensor list");
    for (int e = 0; e < E; e++) {
        char *p = L->meta.is_moe ? expert_prefix(L, e) : strdup(L->prefix);
        if (p == NULL)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: expert %d has no per-expert name "
                    "(X.experts.<e>.Y) for the canonical layout", L->prefix, e);
        hc_status st = HC_OK;
        for (int r = 0; st == HC_OK && r < HC_ROLE_COUNT; r++) {
            hc_out_desc d;
            if (role_desc(L, r, &d))
                st = add_out(L, p, canonical_suffix(L, r), r, L->meta.is_moe ? e : -1, &d, err);
        }
        free(p);
        HC_TRY(st);
    }
    return HC_OK;
}

/* Tiles: named as vLLM holds them (the per-tensor scale is weight_scale_2,
 * or weight_scale when it is the only scale). */
static hc_status plan_tiles(hc_conv_layer *L, hc_error *err)
{
    L->outs = calloc(HC_ROLE_COUNT, sizeof *L->outs);
    HC_CHECK_ALLOC(err, L->outs, "output tensor list");
    for (int r = 0; r < HC_ROLE_COUNT; r++)
        if (L->out[r].present)
            HC_TRY(add_out(L, L->prefix, canonical_suffix(L, r), r, -1, &L->out[r], err));
    return HC_OK;
}

hc_status hc_conv_plan_outputs(const hc_convert_options *opts, const hc_conv_plan *plan,
                               hc_conv_layer *L, hc_error *err)
{
    hc_conv_outputs_free(L);
    (void)plan;
    return opts->layout == HC_LAYOUT_TILES ? plan_tiles(L, err) : plan_canonical(L, err);
}

void hc_conv_outputs_free(hc_conv_layer *L)
{
    for (int i = 0; i < L->n_outs; i++) free(L->outs[i].name);
    free(L->outs);
    L->outs = NULL;
    L->n_outs = 0;
}

const void *hc_conv_out_data(const hc_out_tensor *o, const hc_layer_tensors *src, size_t *len)
{
    const hc_tensor *t[HC_ROLE_COUNT] = {&src->weight, &src->weight_scale, &src->zero_point,
                                         &src->global_scale, &src->bias};
    const hc_tensor *x = t[o->role];
    size_t n = (size_t)o->desc.nbytes, at = o->expert >= 0 ? (size_t)o->expert * n : 0;
    if (x->data == NULL || at + n > x->nbytes || (o->expert < 0 && n != x->nbytes)) return NULL;
    /* the shape too, past the expert dim (an (E,) scale gives (1,) slices) */
    int skip = o->expert >= 0 && x->ndim > 1;
    if (x->ndim - skip != o->desc.ndim) return NULL;
    for (int d = 0; d < o->desc.ndim && !(o->expert >= 0 && x->ndim == 1); d++)
        if (x->shape[d + skip] != o->desc.shape[d]) return NULL;
    *len = n;
    return (const unsigned char *)x->data + at;
}

static const char *scale_type_key(hc_scale_type t)
{
    switch (t) {
    case HC_SCALE_CHANNEL: return "channel";
    case HC_SCALE_BLOCK: return "block";
    case HC_SCALE_TENSOR: return "tensor";
    default: return "group";
    }
}

cJSON *hc_conv_canonical_keys(const hc_conv_layer *L)
{
    const hc_layer_config *c = &L->cfg;
    int a_bits = hc_format_get(c->act_format)->bits;
    int sbits = hc_format_get(c->scale_format)->bits;
    int tensor_only = c->scale_type == HC_SCALE_TENSOR;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    cJSON_AddStringToObject(o, "quant_method", "humming");
    cJSON_AddStringToObject(o, "b_dtype", hc_format_get(c->weight_format)->name);
    /* 16-bit scales are the model dtype: vLLM fails on a bs_dtype that differs from it */
    if (!tensor_only && c->scale_type != HC_SCALE_BLOCK && sbits != 16)
        cJSON_AddStringToObject(o, "bs_dtype", hc_format_get(c->scale_format)->name);
    else cJSON_AddNullToObject(o, "bs_dtype");
    cJSON_AddNumberToObject(o, "weight_scale_group_size", (double)(c->group_size > 0 ? c->group_size : 0));
    cJSON_AddNumberToObject(o, "weight_scale_group_size_n",
                            (double)(c->scale_type == HC_SCALE_BLOCK ? c->group_size_n : 0));
    cJSON_AddStringToObject(o, "weight_scale_type", scale_type_key(c->scale_type));
    cJSON_AddStringToObject(o, "weight_scale_2_type", !L->has_global || tensor_only ? "none"
                                                      : c->scale_2_channel ? "channel" : "tensor");
    cJSON_AddBoolToObject(o, "has_zero_point", L->has_zero);
    cJSON_AddBoolToObject(o, "is_fp_zero_point", L->has_zero && c->is_fp_zero_point);
    if (a_bits < 16) { /* run exactly these activations: no silent fallback to 16 bits */
        cJSON_AddStringToObject(o, "a_dtype", hc_format_get(c->act_format)->name);
        cJSON_AddStringToObject(o, "input_quant_mode", "dynamic_token");
    } else {
        cJSON_AddNullToObject(o, "a_dtype");
        cJSON_AddNullToObject(o, "input_quant_mode");
    }
    cJSON_AddNumberToObject(o, "input_scale_group_size", 0);
    cJSON_AddBoolToObject(o, "allow_fallback", a_bits == 16);
    return o;
}

/* The canonical keys of L as one compact string (malloc'ed), for comparing. */
static char *keys_text(const hc_conv_layer *L)
{
    cJSON *k = hc_conv_canonical_keys(L);
    char *s = k ? cJSON_PrintUnformatted(k) : NULL;
    cJSON_Delete(k);
    return s;
}

/* "uint4 g128 float16-scale x float16"-style summary of L's format. */
static void format_summary(const hc_conv_layer *L, char *buf, size_t len)
{
    const hc_layer_config *c = &L->cfg;
    char g[32];
    if (c->scale_type == HC_SCALE_TENSOR) snprintf(g, sizeof g, "tensor");
    else if (c->group_size > 0) snprintf(g, sizeof g, "g%lld", (long long)c->group_size);
    else snprintf(g, sizeof g, "channel");
    snprintf(buf, len, "%s %s %s-scale%s%s x %s", hc_format_get(c->weight_format)->name, g,
             hc_format_get(c->scale_format)->name, L->has_zero ? " zero-point" : "",
             !L->has_global || c->scale_type == HC_SCALE_TENSOR ? ""
             : c->scale_2_channel ? " channel-scale_2" : " scale_2",
             hc_format_get(c->act_format)->name);
}

hc_status hc_conv_check_fused(const hc_convert_options *opts, const hc_conv_plan *plan,
                              hc_error *err)
{
    if (opts->layout == HC_LAYOUT_TILES) return HC_OK;
    for (int i = 0; i < plan->n_layers; i++) {
        const hc_conv_layer *A = &plan->layers[i];
        if (!fused_kind(A)) continue;
        char ma[4096], *ka = keys_text(A);
        HC_CHECK_ALLOC(err, ka, "layer keys");
        vllm_module(A, ma, sizeof ma);
        hc_status st = HC_OK;
        for (int j = i + 1; st == HC_OK && j < plan->n_layers; j++) {
            const hc_conv_layer *B = &plan->layers[j];
            char mb[4096];
            if (!fused_kind(B)) continue;
            vllm_module(B, mb, sizeof mb);
            if (strcmp(ma, mb) != 0) continue;
            char *kb = keys_text(B);
            if (kb == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
            else if (strcmp(ka, kb) != 0) {
                char fa[160], fb[160];
                format_summary(A, fa, sizeof fa);
                format_summary(B, fb, sizeof fb);
                st = hc_error_set(err, HC_ERR_UNSUPPORTED, "layers %s (%s) and %s (%s) get "
                                  "different formats, but vLLM loads both into one module (%s) "
                                  "with one format: give them the same target, or write "
                                  "--layout tiles", A->prefix, fa, B->prefix, fb, ma);
            }
            free(kb);
        }
        free(ka);
        HC_TRY(st);
    }
    return HC_OK;
}

/* Appends s to buf with regex metacharacters escaped; 0 if it did not fit. */
static int put_escaped(char *buf, size_t len, size_t *at, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        if (*at + 3 >= len) return 0;
        if (!plain) buf[(*at)++] = '\\';
        buf[(*at)++] = ch;
    }
    buf[*at] = '\0';
    return 1;
}

/* The "dynamic" key for vLLM module m ("+:" or "-:" and an anchored regex
 * matching both vLLM's module name, which vLLM matches, and the checkpoint's
 * own prefixes, which Humming's from_safetensors matches). */
static int dynamic_key(const char *sign, const char *m, char *buf, size_t len)
{
    static const struct { const char *kind, *alt; } alts[] = {
        {".qkv_proj", "(qkv_proj|q_proj|k_proj|v_proj|query|key|value)"},
        {".gate_up_proj", "(gate_up_proj|gate_proj|up_proj)"},
        {".experts", "experts(\\.[0-9]+\\.[^.]+)?"}};
    size_t at = (size_t)snprintf(buf, len, "%s^", sign);
    for (size_t i = 0; i < sizeof alts / sizeof alts[0]; i++)
        if (ends_with(m, alts[i].kind)) {
            size_t head = strlen(m) - strlen(alts[i].kind) + 1; /* keeps the dot */
            if (!put_escaped(buf, len, &at, m, head)) return 0;
            return (size_t)snprintf(buf + at, len - at, "%s$", alts[i].alt) < len - at;
        }
    if (!put_escaped(buf, len, &at, m, strlen(m))) return 0;
    return (size_t)snprintf(buf + at, len - at, "$") < len - at;
}

/* Index of the keys text that most layers share (ties: the first layer's). */
static int most_common(char *const *keys, int n)
{
    int best = 0, best_count = 0;
    for (int i = 0; i < n; i++) {
        int count = 0;
        for (int j = 0; j < n; j++) count += strcmp(keys[i], keys[j]) == 0;
        if (count > best_count) best = i, best_count = count;
    }
    return best;
}

/* A float linear weight copied unchanged ("P.weight", 2-D or 3-D): writes P. */
static int skipped_linear(const hc_conv_item *it, char *prefix, size_t len)
{
    if (it->layer >= 0 || it->copy->ndim < 2) return 0;
    hc_dtype d = it->copy->dtype;
    if (d != HC_DT_F16 && d != HC_DT_BF16 && d != HC_DT_F32) return 0;
    const char *n = it->copy->name;
    size_t l = strlen(n);
    if (!ends_with(n, ".weight") || l - 7 >= len) return 0;
    snprintf(prefix, len, "%.*s", (int)(l - 7), n);
    return 1;
}

/* "-:" rules for skipped float linear modules; refuses a vLLM module that
 * would hold both converted and unconverted checkpoint layers. */
static hc_status add_skips(const hc_conv_plan *plan, cJSON *dyn, hc_error *err)
{
    for (int i = 0; i < plan->n_items; i++) {
        char p[4096], m[4096], key[8192];
        if (!skipped_linear(&plan->items[i], p, sizeof p)) continue;
        vllm_module_of(p, 0, m, sizeof m);
        for (int l = 0; l < plan->n_layers; l++) {
            char ml[4096];
            vllm_module(&plan->layers[l], ml, sizeof ml);
            if (strcmp(ml, m) == 0)
                HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.weight stays unquantized but %s is "
                        "converted, and vLLM loads both into one module (%s) with one format: "
                        "convert both or neither", p, plan->layers[l].prefix, m);
        }
        if (!dynamic_key("-:", m, key, sizeof key))
            HC_FAIL(err, HC_ERR_ARG, "%s: module name too long", p);
        if (!cJSON_GetObjectItemCaseSensitive(dyn, key) && !cJSON_AddObjectToObject(dyn, key))
            HC_FAIL(err, HC_ERR_NOMEM, "out of memory");
    }
    return HC_OK;
}

/* Top-level keys from the default layer, "+:" rules for the others. */
static hc_status add_formats(const hc_conv_plan *plan, char *const *keys, cJSON *q, cJSON *dyn,
                             hc_error *err)
{
    int def = most_common(keys, plan->n_layers);
    cJSON *top = cJSON_Parse(keys[def]);
    HC_CHECK_ALLOC(err, top, "quantization_config");
    for (cJSON *k = top->child; k; k = k->next) {
        cJSON_DeleteItemFromObjectCaseSensitive(q, k->string);
        cJSON_AddItemToObject(q, k->string, cJSON_Duplicate(k, 1));
    }
    cJSON_Delete(top);
    for (int i = 0; i < plan->n_layers; i++) {
        char m[4096], key[8192];
        if (strcmp(keys[i], keys[def]) == 0) continue;
        vllm_module(&plan->layers[i], m, sizeof m);
        if (!dynamic_key("+:", m, key, sizeof key))
            HC_FAIL(err, HC_ERR_ARG, "layer %s: module name too long", plan->layers[i].prefix);
        if (cJSON_GetObjectItemCaseSensitive(dyn, key)) continue; /* fused: checked equal */
        cJSON *o = cJSON_Parse(keys[i]);
        HC_CHECK_ALLOC(err, o, "dynamic rule");
        cJSON_AddItemToObject(dyn, key, o);
    }
    return HC_OK;
}

hc_status hc_conv_canonical_config(const hc_conv_plan *plan, cJSON *q, hc_error *err)
{
    int n = plan->n_layers;
    char **keys = calloc((size_t)(n > 0 ? n : 1), sizeof *keys);
    cJSON *dyn = cJSON_CreateObject();
    hc_status st = keys && dyn ? HC_OK : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    for (int i = 0; st == HC_OK && i < n; i++)
        if ((keys[i] = keys_text(&plan->layers[i])) == NULL)
            st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    if (st == HC_OK && n > 0) st = add_formats(plan, keys, q, dyn, err);
    if (st == HC_OK) st = add_skips(plan, dyn, err);
    if (st == HC_OK && dyn->child) {
        cJSON_DeleteItemFromObjectCaseSensitive(q, "dynamic");
        cJSON_AddItemToObject(q, "dynamic", dyn);
        dyn = NULL;
    }
    cJSON_Delete(dyn);
    for (int i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
    return st;
}
