/* hc_convert_float.c - fp16/bf16/fp32 inputs: find the linear layers (dense,
 * per-expert stacks "X.experts.<i>.Y.weight", fused 3-D expert stacks), give
 * each its target, quantize it (hc_quant) into Humming's row-packed form. */
#include "hc_conv_source.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_crc32.h"
#include "hc_parallel.h"
#include "hc_quant.h"
#include "hc_verify.h"

static int is_float_dtype(hc_dtype dt)
{
    return dt == HC_DT_F16 || dt == HC_DT_BF16 || dt == HC_DT_F32;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* "X.experts.<i>.Y.weight" -> key "X.experts.Y" and index i; 0 if no match. */
/* "X.experts.<i>.Y.weight" -> the expert's key and index. */
static int parse_expert_name(const char *name, char *key, size_t key_len, long *index)
{
    char prefix[4096];
    size_t len = strlen(name);
    if (!ends_with(name, ".weight") || len - 7 >= sizeof prefix) return 0;
    memcpy(prefix, name, len - 7);
    prefix[len - 7] = '\0';
    return hc_conv_expert_key(prefix, key, key_len, index);
}

/* Asks opts->choose_target; fills L's target and reason. Returns skip flag in *skip. */
static hc_status choose(const hc_convert_options *opts, hc_conv_layer *L, int *skip,
                        hc_error *err)
{
    *skip = 0;
    if (opts->choose_target == NULL)
        HC_FAIL(err, HC_ERR_ARG, "float checkpoint %s: no target format given (use --format, "
                "--weight-dtype or --recipe)", opts->in_dir);
    HC_TRY_CTX(err, opts->choose_target(opts->choose_ctx, L->prefix, &L->target, skip, L->why,
                                        sizeof L->why, err),
               "layer %s: ", L->prefix);
    return HC_OK;
}

/* Starts a layer at plan->layers[plan->n_layers] (not yet counted). */
static hc_status begin_layer(hc_conv_plan *plan, const char *prefix, size_t prefix_len,
                             hc_conv_layer **out, hc_error *err)
{
    hc_conv_layer *L = &plan->layers[plan->n_layers];
    memset(L, 0, sizeof *L);
    L->kind = HC_SRC_FLOAT;
    L->prefix = strndup(prefix, prefix_len);
    HC_CHECK_ALLOC(err, L->prefix, "layer name");
    *out = L;
    return HC_OK;
}

/* Keeps the started layer if its target says so; frees it when skipped. */
static hc_status finish_layer(const hc_convert_options *opts, hc_conv_plan *plan,
                              hc_conv_layer *L, int *kept, hc_error *err)
{
    int skip = 0;
    hc_status st = choose(opts, L, &skip, err);
    *kept = st == HC_OK && !skip;
    if (*kept) {
        plan->n_layers++;
        return HC_OK;
    }
    free(L->prefix);
    free(L->experts);
    memset(L, 0, sizeof *L);
    return st;
}

/* A dense 2-D "P.weight" or a fused 3-D expert stack "...experts...". */
static hc_status add_single(const hc_convert_options *opts, hc_st_model *model,
                            hc_conv_plan *plan, const hc_st_tensor *t, int *kept, hc_error *err)
{
    size_t len = strlen(t->name), plen = ends_with(t->name, ".weight") ? len - 7 : len;
    hc_conv_layer *L = NULL;
    HC_TRY(begin_layer(plan, t->name, plen, &L, err));
    L->pre[HC_ROLE_WEIGHT] = t;
    char bias[4096];
    snprintf(bias, sizeof bias, t->ndim == 3 ? "%s_bias" : "%s.bias", L->prefix);
    const hc_st_tensor *b = hc_st_model_find(model, bias);
    if (b && is_float_dtype(b->dtype) && b->ndim == t->ndim - 1) L->pre[HC_ROLE_BIAS] = b;
    /* fused stacks of these families are stored [E, in, out] (used as x @ W) */
    L->transpose = t->ndim == 3 && (strcmp(plan->model_type, "llama4") == 0 ||
                                    strcmp(plan->model_type, "gpt_oss") == 0);
    return finish_layer(opts, plan, L, kept, err);
}

static int is_candidate(const hc_st_tensor *t)
{
    if (!is_float_dtype(t->dtype)) return 0;
    if (t->ndim == 2) return ends_with(t->name, ".weight");
    return t->ndim == 3 && strstr(t->name, "experts") != NULL;
}

/* Experts [first, last) of one sorted key must be 0..E-1, all of one shape and dtype. */
static hc_status check_stack(hc_st_model *model, const hc_conv_expert *e, size_t n,
                             hc_error *err)
{
    HC_TRY(hc_conv_experts_check(model, e, n, "", err));
    const hc_st_tensor *t0 = hc_st_model_tensor_at(model, e[0].tensor);
    for (size_t i = 0; i < n; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, e[i].tensor);
        if (t->dtype != t0->dtype || t->shape[0] != t0->shape[0] || t->shape[1] != t0->shape[1])
            HC_FAIL(err, HC_ERR_FORMAT, "%s: shape or dtype differs from %s in expert stack %s",
                    t->name, t0->name, e[0].key);
    }
    return HC_OK;
}

static hc_status add_stacks(const hc_convert_options *opts, hc_st_model *model,
                            hc_conv_plan *plan, hc_conv_expert *e, size_t n, int *layer_of,
                            hc_error *err)
{
    hc_conv_experts_sort(e, n);
    for (size_t i = 0, j; i < n; i = j) {
        j = hc_conv_experts_group_end(e, n, i);
        HC_TRY(check_stack(model, e + i, j - i, err));
        hc_conv_layer *L = NULL;
        HC_TRY(begin_layer(plan, e[i].key, strlen(e[i].key), &L, err));
        L->experts = malloc((j - i) * sizeof *L->experts);
        HC_CHECK_ALLOC(err, L->experts, "expert list");
        L->n_experts = (int)(j - i);
        for (size_t k = i; k < j; k++) L->experts[k - i] = hc_st_model_tensor_at(model, e[k].tensor);
        int kept = 0;
        HC_TRY(finish_layer(opts, plan, L, &kept, err));
        if (kept) layer_of[e[i].tensor] = plan->n_layers - 1;
    }
    return HC_OK;
}

hc_status hc_conv_find_float(const hc_convert_options *opts, hc_st_model *model,
                             hc_conv_plan *plan, int *layer_of, hc_error *err)
{
    size_t count = hc_st_model_count(model), n_experts = 0;
    hc_conv_expert *experts = calloc(count + 1, sizeof *experts);
    HC_CHECK_ALLOC(err, experts, "expert table");
    hc_status st = HC_OK;
    for (size_t i = 0; st == HC_OK && i < count; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        hc_conv_expert *x = &experts[n_experts];
        if (!is_candidate(t)) continue;
        if (t->ndim == 2 && parse_expert_name(t->name, x->key, sizeof x->key, &x->index)) {
            x->tensor = i;
            n_experts++;
            continue;
        }
        int kept = 0;
        st = add_single(opts, model, plan, t, &kept, err);
        if (st == HC_OK && kept) layer_of[i] = plan->n_layers - 1;
    }
    if (st == HC_OK) st = add_stacks(opts, model, plan, experts, n_experts, layer_of, err);
    free(experts);
    return st;
}

/* E, N, K of a float layer as the quantizer sees it ([E, out, in]). */
static void float_dims(const hc_conv_layer *L, int64_t *E, int64_t *N, int64_t *K)
{
    const hc_st_tensor *w = L->experts ? L->experts[0] : L->pre[HC_ROLE_WEIGHT];
    int nd = w->ndim;
    *E = L->experts ? L->n_experts : nd == 3 ? w->shape[0] : 1;
    *N = w->shape[nd - (L->transpose ? 1 : 2)];
    *K = w->shape[nd - (L->transpose ? 2 : 1)];
}

/* The quantizer's description of target t; a per-channel second scale is
 * stored in the layer dtype `param`. */
static hc_quant_desc quant_desc(const hc_target *t, hc_format_id param)
{
    hc_quant_desc d = {
        .weight_format = t->weight_format, .scale_format = t->scale_format,
        .group_size = t->group_size > 0 ? (int)t->group_size
                      : t->group_size == 0 ? HC_QUANT_GROUP_CHANNEL : HC_QUANT_GROUP_TENSOR,
        .group_size_n = (int)t->group_size_n,
        .zero_point = t->zero_point == HC_TARGET_ZP_INT ? HC_ZP_INT
                      : t->zero_point == HC_TARGET_ZP_FLOAT ? HC_ZP_FLOAT : HC_ZP_NONE,
        .global_scale = t->global_scale == HC_TARGET_S2_TENSOR,
        .scale_2_channel = t->global_scale == HC_TARGET_S2_CHANNEL, .scale_2_format = param,
        .quantizer = t->rounding == HC_TARGET_MSE ? HC_QUANTIZER_MSE : HC_QUANTIZER_RTN};
    return d;
}

static hc_scale_type target_scale_type(const hc_target *t)
{
    if (t->group_size_n > 1) return HC_SCALE_BLOCK;
    if (t->group_size < 0) return HC_SCALE_TENSOR;
    if (t->global_scale == HC_TARGET_S2_TENSOR) return HC_SCALE_GROUP_TENSOR;
    return t->group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP;
}

/* Humming stores signed integer codes offset-binary as uintB (spec 1.2). */
static hc_format_id stored_format(hc_format_id f)
{
    const hc_format_info *fi = hc_format_get(f);
    return fi->kind == HC_KIND_INT ? (hc_format_id)(HC_FMT_UINT1 + fi->bits - 1) : f;
}

void hc_conv_target_config(const hc_convert_options *opts, const hc_conv_plan *plan,
                           const hc_target *t, hc_layer_config *cfg)
{
    *cfg = (hc_layer_config){
        .weight_format = stored_format(t->weight_format), .scale_format = t->scale_format,
        .act_format = t->activation, .param_format = plan->param_format,
        .scale_type = target_scale_type(t), .group_size = t->group_size > 0 ? t->group_size : 0,
        .group_size_n = t->group_size_n, .has_zero_point = t->zero_point != HC_TARGET_ZP_NONE,
        .is_fp_zero_point = t->zero_point == HC_TARGET_ZP_FLOAT,
        .scale_2_channel = t->global_scale == HC_TARGET_S2_CHANNEL, .sm = opts->sm,
        .version = plan->version};
}

hc_status hc_conv_quantize_float(const hc_target *t, hc_format_id param, const float *w,
                                 int64_t E, int64_t N, int64_t K, int moe, hc_layer_tensors *pre,
                                 hc_error *err)
{
    hc_quant_desc d = quant_desc(t, param);
    hc_quant_result r;
    memset(&r, 0, sizeof r);
    hc_status st = hc_quantize(&d, w, E, N, K, &r, err);
    if (st == HC_OK) st = hc_conv_pre_from_result(&r, moe, pre, err);
    hc_quant_result_free(&r);
    return st;
}

hc_status hc_conv_plan_float_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                   hc_conv_layer *L, hc_error *err)
{
    L->target = hc_target_resolve(L->target, plan->param_format);
    const hc_target *t = &L->target;
    int64_t E, N, K;
    float_dims(L, &E, &N, &K);
    int moe = L->experts != NULL || L->pre[HC_ROLE_WEIGHT]->ndim == 3;
    hc_conv_target_config(opts, plan, t, &L->cfg);
    if (opts->layout == HC_LAYOUT_CANONICAL && hc_conv_canonical_s2_to_channel(L, moe)) {
        L->target.global_scale = HC_TARGET_S2_CHANNEL;
        hc_conv_target_config(opts, plan, t, &L->cfg);
        hc_conv_log(opts, "layer %s: second scale per channel (weight_scale_2_type channel): "
                    "vLLM loads no per-tensor one into a fused module", L->prefix);
    }
    hc_quant_desc d = quant_desc(t, plan->param_format);
    HC_TRY_CTX(err, hc_quant_check(&d, E, N, K, err), "layer %s [%lld x %lld]: ", L->prefix, (long long)N,
                               (long long)K);
    HC_TRY_CTX(err, hc_layer_plan(&L->cfg, moe, E, N, K, &L->meta, err), "layer %s: ", L->prefix);
    L->has_zero = L->cfg.has_zero_point;
    L->has_global = t->global_scale || t->group_size < 0;
    L->has_bias = L->pre[HC_ROLE_BIAS] != NULL;
    return HC_OK;
}

/* Converts n elements of a float tensor (unaligned bytes) from element
 * `offset` on to float32, exactly, on the calling thread; f16 is
 * hc_f16_to_f32_array_impl(). */
static void convert_floats(const hc_st_tensor *t, size_t offset, size_t n, float *dst,
                           hc_f16_array_fn f16)
{
    size_t esize = t->dtype == HC_DT_F32 ? 4 : 2;
    const unsigned char *base = (const unsigned char *)t->data + offset * esize;
    if (t->dtype == HC_DT_F32) memcpy(dst, base, 4 * n);
    else if (t->dtype == HC_DT_F16) f16(base, dst, (int64_t)n);
    else hc_bf16_to_f32_array(base, dst, (int64_t)n);
}

/* convert_floats in parallel chunks for large tensors. */
static void read_floats(const hc_st_tensor *t, size_t offset, size_t n, float *dst)
{
    const size_t chunk = 1 << 16;
    int64_t chunks = (int64_t)((n + chunk - 1) / chunk);
    hc_f16_array_fn f16 = hc_f16_to_f32_array_impl();
#pragma omp parallel for schedule(static) if (HC_PARALLEL(n))
    for (int64_t c = 0; c < chunks; c++) {
        size_t at = (size_t)c * chunk, len = n - at < chunk ? n - at : chunk;
        convert_floats(t, offset + at, len, dst + at, f16);
    }
}

/* The layer's weights as float32 (E, N, K). */
static hc_status read_source(const hc_conv_layer *L, int64_t E, int64_t N, int64_t K,
                             float **out, hc_error *err)
{
    size_t slab = (size_t)(N * K);
    float *w = malloc((size_t)E * slab * sizeof *w), *tmp = NULL;
    HC_CHECK_ALLOC(err, w, "layer weights");
    if (L->transpose && (tmp = malloc(slab * sizeof *tmp)) == NULL) {
        free(w);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory transposing %s", L->prefix);
    }
    for (int64_t e = 0; e < E; e++) {
        float *dst = w + (size_t)e * slab;
        if (L->experts) {
            read_floats(L->experts[e], 0, slab, dst);
        } else if (!L->transpose) {
            read_floats(L->pre[HC_ROLE_WEIGHT], (size_t)e * slab, slab, dst);
        } else { /* stored [K, N] per expert */
            read_floats(L->pre[HC_ROLE_WEIGHT], (size_t)e * slab, slab, tmp);
            for (int64_t k = 0; k < K; k++)
                for (int64_t n = 0; n < N; n++) dst[n * K + k] = tmp[k * N + n];
        }
    }
    free(tmp);
    *out = w;
    return HC_OK;
}

/* Allocates t as (E?, a, b) and copies len bytes from src. */
static hc_status make_tensor(hc_tensor *t, hc_dtype dt, int moe, int64_t E, int64_t a, int64_t b,
                             const void *src, size_t len, hc_error *err)
{
    int64_t s3[3] = {E, a, b};
    HC_TRY(hc_tensor_alloc(t, dt, moe ? 3 : 2, moe ? s3 : s3 + 1, err));
    if (t->nbytes != len)
        HC_FAIL(err, HC_ERR_INTERNAL, "quantizer output holds %zu bytes, expected %zu", len,
                t->nbytes);
    memcpy(t->data, src, len);
    return HC_OK;
}

/* t as (E?, a, b) int32 over *words (len bytes, at least), which it takes. */
static hc_status take_words(hc_tensor *t, int moe, int64_t E, int64_t a, int64_t b,
                            uint32_t **words, size_t len, int view, hc_error *err)
{
    int64_t s3[3] = {E, a, b};
    memset(t, 0, sizeof *t);
    t->dtype = HC_DT_I32;
    t->ndim = moe ? 3 : 2;
    memcpy(t->shape, moe ? s3 : s3 + 1, (size_t)t->ndim * sizeof *s3);
    if (*words == NULL || hc_tensor_byte_size(HC_DT_I32, t->ndim, t->shape) != (int64_t)len)
        HC_FAIL(err, HC_ERR_INTERNAL, "quantizer output codes differ from %zu bytes", len);
    t->data = *words;
    t->nbytes = len;
    t->owned = !view; /* a view stays the mapping's: the tensor borrows it */
    *words = NULL;
    return HC_OK;
}

hc_status hc_conv_pre_from_result(hc_quant_result *r, int moe, hc_layer_tensors *pre,
                                  hc_error *err)
{
    int64_t E = r->experts, NS = r->group_rows, G = r->groups, b = r->bits;
    HC_TRY(take_words(&pre->weight, moe, E, r->n, r->k * b / 32, &r->codes,
                      (size_t)(E * r->n * r->k * b / 32) * 4, r->codes_view, err));
    r->codes_view = 0;
    if (r->scales)
        HC_TRY(make_tensor(&pre->weight_scale, hc_dtype_of_format(r->desc.scale_format), moe,
                           E, NS, G, r->scales, (size_t)(E * NS * G * r->scale_bytes), err));
    if (r->zero_points)
        HC_TRY(make_tensor(&pre->zero_point, HC_DT_I32, moe, E, NS * b / 32, G, r->zero_points,
                           (size_t)(E * NS * b / 32 * G) * 4, err));
    if (r->zero_points_f)
        HC_TRY(make_tensor(&pre->zero_point, hc_dtype_of_format(r->zp_float_format), moe, E,
                           NS, G, r->zero_points_f, (size_t)(E * NS * G) * 2, err));
    if (r->global_scale) {
        int64_t shape[1] = {E};
        HC_TRY(hc_tensor_alloc(&pre->global_scale, HC_DT_F32, 1, shape, err));
        memcpy(pre->global_scale.data, r->global_scale, (size_t)E * sizeof(float));
    }
    if (r->scale_2) { /* per channel: (E?, N) in the model dtype */
        int64_t shape[2] = {E, r->n};
        HC_TRY(hc_tensor_alloc(&pre->global_scale, hc_dtype_of_format(r->desc.scale_2_format),
                               moe ? 2 : 1, moe ? shape : shape + 1, err));
        memcpy(pre->global_scale.data, r->scale_2, pre->global_scale.nbytes);
    }
    return HC_OK;
}

/* Bias converted to the param dtype, same shape as the source. */
hc_status hc_conv_load_bias(const hc_st_tensor *b, hc_format_id param, hc_tensor *out,
                            hc_error *err)
{
    hc_dtype dt = hc_dtype_of_format(param);
    HC_TRY(hc_tensor_alloc(out, dt, b->ndim, b->shape, err));
    size_t n = out->nbytes / 2;
    float *tmp = malloc((n ? n : 1) * sizeof *tmp);
    HC_CHECK_ALLOC(err, tmp, "bias");
    read_floats(b, 0, n, tmp);
    uint16_t *dst = out->data;
    for (size_t i = 0; i < n; i++)
        dst[i] = dt == HC_DT_BF16 ? hc_f32_to_bf16(tmp[i]) : hc_f32_to_f16(tmp[i]);
    free(tmp);
    return HC_OK;
}

int hc_conv_float_rows_ok(const hc_conv_layer *L)
{
    return L->kind == HC_SRC_FLOAT && !L->transpose;
}

void hc_conv_row_source_init(const hc_conv_layer *L, hc_conv_row_source *rs)
{
    int64_t E;
    memset(rs, 0, sizeof *rs);
    float_dims(L, &E, &rs->N, &rs->K);
    rs->L = L;
    rs->f16 = hc_f16_to_f32_array_impl();
}

/* A thread's block of consecutive rows of one tensor, read with pread: the
 * quantizer's threads each take a contiguous range of rows, so a block of
 * ~256 KiB serves the next rows from cache; first touching the input through
 * the mapping (page faults, then unmapping) cost about twice the copy. */
struct hc_conv_row_block {
    unsigned char *buf;
    const hc_st_tensor *t;
    int64_t first, count; /* rows of t held */
};

enum { ROW_BLOCK_BYTES = 256 << 10, ROW_BLOCK_MAX = 16 << 20 };

static size_t row_block_rows(const hc_conv_row_source *rs, size_t row_bytes)
{
    if (rs->block_rows > 0) {
        const size_t cap = row_bytes >= ROW_BLOCK_MAX ? 1 : ROW_BLOCK_MAX / row_bytes;
        return (size_t)rs->block_rows < cap ? (size_t)rs->block_rows : cap;
    }
    return row_bytes >= ROW_BLOCK_BYTES ? 1 : ROW_BLOCK_BYTES / row_bytes;
}

/* Row r of t (row_bytes each): from the calling thread's block, read when
 * it does not hold the row; the mapping where there is no block or pread
 * fails (its truncation checks then apply). */
static const unsigned char *row_bytes_at(const hc_conv_row_source *rs, const hc_st_tensor *t,
                                         int64_t r, size_t row_bytes)
{
    const unsigned char *map = (const unsigned char *)t->data + (size_t)r * row_bytes;
    int tid = hc_thread_id();
    if (rs->blocks == NULL || hc_thread_nesting() > 1 || tid >= rs->n_blocks) return map;
    hc_conv_row_block *b = &rs->blocks[tid];
    if (b->t == t && r >= b->first && r < b->first + b->count)
        return b->buf + (size_t)(r - b->first) * row_bytes;
    int64_t n = (int64_t)row_block_rows(rs, row_bytes), left = (int64_t)(t->nbytes / row_bytes) - r;
    n = n < left ? n : left;
    b->t = NULL;
    if (n <= 0 || hc_st_model_pread(rs->model, map, (size_t)n * row_bytes, b->buf) != 0) return map;
    b->t = t;
    b->first = r;
    b->count = n;
    return b->buf;
}

const float *hc_conv_source_row(void *ctx, int64_t row, float *buf)
{
    const hc_conv_row_source *rs = ctx;
    const hc_conv_layer *L = rs->L;
    int64_t e = row / rs->N, r = row % rs->N;
    const hc_st_tensor *t = L->experts ? L->experts[e] : L->pre[HC_ROLE_WEIGHT];
    size_t esize = t->dtype == HC_DT_F32 ? 4 : 2, rb = (size_t)rs->K * esize;
    const unsigned char *bytes = row_bytes_at(rs, t, L->experts ? r : row, rb);
    if (rs->row_crc && !rs->row_have[row]) { /* the bytes are in cache now: no second read */
        rs->row_crc[row] = hc_crc32(0, bytes, rb);
        rs->row_have[row] = 1;
    }
    hc_st_tensor in_cache = *t; /* convert_floats' view of the row's bytes */
    in_cache.data = bytes;
    convert_floats(&in_cache, 0, (size_t)rs->K, buf, rs->f16);
    if (rs->row_energy && rs->row_energy[row] < 0) /* the floats are in cache now */
        rs->row_energy[row] = hc_verify_row_energy(buf, rs->K, 0);
    return buf;
}

void hc_conv_source_row_part(void *ctx, int64_t row, int64_t k0, int64_t k1, float *buf)
{
    const hc_conv_row_source *rs = ctx;
    const hc_conv_layer *L = rs->L;
    int64_t e = row / rs->N, r = row % rs->N;
    const hc_st_tensor *t = L->experts ? L->experts[e] : L->pre[HC_ROLE_WEIGHT];
    size_t esize = t->dtype == HC_DT_F32 ? 4 : 2, rb = (size_t)rs->K * esize;
    hc_st_tensor in_cache = *t; /* convert_floats' view of the row's bytes */
    in_cache.data = row_bytes_at(rs, t, L->experts ? r : row, rb);
    convert_floats(&in_cache, (size_t)k0, (size_t)(k1 - k0), buf, rs->f16);
}

void hc_conv_row_source_blocks(const hc_st_model *model, int64_t rows, hc_conv_row_source *rs)
{
    const hc_st_tensor *t = rs->L->experts ? rs->L->experts[0] : rs->L->pre[HC_ROLE_WEIGHT];
    rs->block_rows = rows;
    size_t rb = (size_t)rs->K * (t->dtype == HC_DT_F32 ? 4 : 2), len = row_block_rows(rs, rb) * rb;
    int n = hc_thread_count();
    rs->blocks = calloc((size_t)n, sizeof *rs->blocks);
    for (int i = 0; rs->blocks && i < n; i++)
        if ((rs->blocks[i].buf = malloc(len)) == NULL) n = i;
    rs->n_blocks = rs->blocks ? n : 0;
    rs->model = model;
}

void hc_conv_row_source_blocks_free(hc_conv_row_source *rs)
{
    for (int i = 0; rs->blocks && i < rs->n_blocks; i++) free(rs->blocks[i].buf);
    free(rs->blocks);
    rs->blocks = NULL;
    rs->n_blocks = 0;
}

/* Row CRCs for the input CRC table (hc_st_crcs.h), or none without one. */
static hc_status row_crcs_alloc(hc_st_crcs *crcs, int64_t E, hc_conv_row_source *rs,
                                hc_error *err)
{
    if (crcs == NULL) return HC_OK;
    rs->row_crc = malloc((size_t)(E * rs->N) * sizeof *rs->row_crc);
    rs->row_have = calloc((size_t)(E * rs->N), 1);
    if (rs->row_crc && rs->row_have) return HC_OK;
    free(rs->row_crc);
    free(rs->row_have);
    HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating row CRCs");
}

/* Each source tensor's CRC from its rows' (all of them read), then noted. */
static void row_crcs_note(hc_st_crcs *crcs, const hc_conv_row_source *rs, int64_t E)
{
    const hc_conv_layer *L = rs->L;
    for (int64_t e = 0; e < E; e++) {
        const hc_st_tensor *t = L->experts ? L->experts[e] : L->pre[HC_ROLE_WEIGHT];
        int64_t rows = L->experts ? rs->N : E * rs->N, first = L->experts ? e * rs->N : 0;
        int whole = 1;
        for (int64_t i = 0; i < rows && whole; i++) whole = rs->row_have[first + i];
        uint64_t row_bytes = (uint64_t)rs->K * (t->dtype == HC_DT_F32 ? 4 : 2);
        if (whole && (uint64_t)rows * row_bytes == t->nbytes)
            hc_st_crcs_note(crcs, t, hc_crc32_concat(rs->row_crc + first, rows, row_bytes));
        if (!L->experts) break;
    }
}

/* Each row's sum of squares as the quantizer reads it (rs->row_energy,
 * energy not NULL), or none. */
static hc_status row_energy_alloc(double **energy, int64_t rows, hc_conv_row_source *rs,
                                  hc_error *err)
{
    if (energy == NULL) return HC_OK;
    rs->row_energy = malloc((size_t)rows * sizeof *rs->row_energy + 1);
    HC_CHECK_ALLOC(err, rs->row_energy, "row energies");
    for (int64_t i = 0; i < rows; i++) rs->row_energy[i] = -1;
    return HC_OK;
}

/* *energy = rs->row_energy where the quantizer read every row (else freed). */
static void row_energy_take(double **energy, int64_t rows, hc_conv_row_source *rs)
{
    int whole = rs->row_energy != NULL;
    for (int64_t i = 0; whole && i < rows; i++) whole = !(rs->row_energy[i] < 0);
    if (whole && energy) *energy = rs->row_energy;
    else free(rs->row_energy);
    rs->row_energy = NULL;
}

/* Quantizes L into r; the float32 weights into *ref when ref is given,
 * else, where the quantizer can, straight from the source rows (then the
 * rows' sums of squares into *energy when energy is given). */
static hc_status quantize_layer(const hc_conv_plan *plan, const hc_conv_layer *L, float **ref,
                                double **energy, hc_quant_result *r, hc_error *err)
{
    hc_conv_run *run = plan->run;
    int64_t E, N, K;
    float_dims(L, &E, &N, &K);
    hc_quant_desc d = quant_desc(&L->target, L->cfg.param_format);
    if (!ref && !L->transpose && hc_quant_rows_ok(&d)) {
        hc_conv_row_source rs;
        hc_st_crcs *crcs = run ? run->input_crcs : NULL;
        hc_conv_row_source_init(L, &rs);
        HC_TRY(row_crcs_alloc(crcs, E, &rs, err));
        hc_status st = row_energy_alloc(energy, E * N, &rs, err);
        hc_conv_row_source_blocks(plan->model, 0, &rs);
        if (st == HC_OK)
            st = hc_quantize_rows_pool(&d, hc_conv_source_row, &rs, E, N, K,
                                       run ? run->pool : NULL, r, err);
        if (st == HC_OK && crcs) row_crcs_note(crcs, &rs, E);
        row_energy_take(st == HC_OK ? energy : NULL, E * N, &rs);
        hc_conv_row_source_blocks_free(&rs);
        free(rs.row_crc);
        free(rs.row_have);
        return st;
    }
    float *w = NULL;
    HC_TRY(read_source(L, E, N, K, &w, err));
    hc_status st = hc_quantize(&d, w, E, N, K, r, err);
    if (st == HC_OK && ref) *ref = w;
    else free(w);
    return st;
}

hc_status hc_conv_load_float(const hc_conv_plan *plan, const hc_conv_layer *L,
                             hc_layer_tensors *pre, float **ref, double **energy,
                             hc_error *err)
{
    hc_quant_result r;
    memset(&r, 0, sizeof r);
    hc_status st = quantize_layer(plan, L, ref, energy, &r, err);
    if (st != HC_OK) hc_error_prefix(err, "layer %s: ", L->prefix);
    if (st == HC_OK) st = hc_conv_pre_from_result(&r, L->meta.is_moe, pre, err);
    if (st == HC_OK && L->pre[HC_ROLE_BIAS])
        st = hc_conv_load_bias(L->pre[HC_ROLE_BIAS], plan->param_format, &pre->bias, err);
    hc_quant_result_free(&r);
    return st;
}
