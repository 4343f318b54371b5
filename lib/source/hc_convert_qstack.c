/* hc_convert_qstack.c - per-expert quantized tensors "X.experts.<i>.Y.*" read
 * as one MoE layer "X.experts.Y" (E, N, K), as the float path stacks
 * "X.experts.<i>.Y.weight". Humming's MoE tensors hold one format for the
 * whole stack, so every expert must read back with the same pre-form
 * description and shape; a mismatch is refused naming the expert. */
#include "hc_conv_source.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of one expert's part of each pre-form buffer. */
typedef struct {
    size_t codes, scales, zeros, zeros_f;
} slab_bytes;

static slab_bytes slabs_of(const hc_quant_result *q)
{
    int64_t ns = q->group_rows, G = q->groups;
    slab_bytes s = {.codes = (size_t)(q->n * q->k * q->bits / 32) * 4,
                    .scales = (size_t)(ns * G * q->scale_bytes),
                    .zeros = (size_t)(ns * q->bits / 32 * G) * 4,
                    .zeros_f = (size_t)(ns * G) * 2};
    return s;
}

static void *alloc_if(const void *present, size_t each, int64_t E, int *failed)
{
    if (present == NULL) return NULL;
    void *p = malloc(each * (size_t)E + 1);
    if (p == NULL) *failed = 1;
    return p;
}

/* out: expert 0's description with room for E experts (nothing copied yet). */
static hc_status stack_alloc(const hc_ckpt_layer *first, int64_t E, hc_ckpt_layer *out,
                             hc_error *err)
{
    const hc_quant_result *q = &first->q;
    slab_bytes s = slabs_of(q);
    int failed = 0;
    memset(out, 0, sizeof *out);
    out->q = *q;
    out->q.experts = E;
    out->q.codes_view = 0; /* a new stack of copies */
    out->q.codes = alloc_if(q->codes, s.codes, E, &failed);
    out->q.scales = alloc_if(q->scales, s.scales, E, &failed);
    out->q.zero_points = alloc_if(q->zero_points, s.zeros, E, &failed);
    out->q.zero_points_f = alloc_if(q->zero_points_f, s.zeros_f, E, &failed);
    out->q.global_scale = alloc_if(q->global_scale, sizeof(float), E, &failed);
    out->is_moe = 1;
    out->lossless = 1;
    snprintf(out->source_format, sizeof out->source_format, "%s", first->source_format);
    if (failed) {
        hc_quant_result_free(&out->q);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory stacking %lld experts", (long long)E);
    }
    return HC_OK;
}

/* Copies expert e into out (its act-order permutation moves when out has none). */
static void stack_put(hc_ckpt_layer *out, hc_ckpt_layer *one, int64_t e)
{
    const hc_quant_result *q = &one->q;
    hc_quant_result *d = &out->q;
    slab_bytes s = slabs_of(q);
    if (d->codes && q->codes) memcpy((char *)d->codes + (size_t)e * s.codes, q->codes, s.codes);
    if (d->scales) memcpy(d->scales + (size_t)e * s.scales, q->scales, s.scales);
    if (d->zero_points)
        memcpy((char *)d->zero_points + (size_t)e * s.zeros, q->zero_points, s.zeros);
    if (d->zero_points_f)
        memcpy((char *)d->zero_points_f + (size_t)e * s.zeros_f, q->zero_points_f, s.zeros_f);
    if (d->global_scale) d->global_scale[e] = q->global_scale[0];
    out->lossless = out->lossless && one->lossless;
    if (!out->perm) {
        out->perm = one->perm;
        one->perm = NULL;
    }
    if (e == 0) snprintf(out->note, sizeof out->note, "%s", one->note);
    else if (one->note[0] && strstr(out->note, one->note) == NULL)
        hc_ckpt_note(out, "expert %lld: %s", (long long)e, one->note);
    if (e > 0 && strcmp(one->source_format, out->source_format) != 0)
        hc_ckpt_note(out, "expert %lld read as %s", (long long)e, one->source_format);
}

static const char *group_text(const hc_quant_desc *d, char *buf, size_t len)
{
    if (d->group_size == HC_QUANT_GROUP_CHANNEL) return "channel";
    if (d->group_size == HC_QUANT_GROUP_TENSOR) return "tensor";
    if (d->group_size_n > 1) snprintf(buf, len, "%d x %d (block)", d->group_size_n, d->group_size);
    else snprintf(buf, len, "%d", d->group_size);
    return buf;
}

static const char *zp_text(hc_zp_mode z)
{
    return z == HC_ZP_INT ? "integer" : z == HC_ZP_FLOAT ? "float" : "none";
}

/* Why expert b cannot share a stack with expert a; "" if it can. */
static void mismatch(const hc_ckpt_layer *a, const hc_ckpt_layer *b, char *why, size_t len)
{
    const hc_quant_desc *x = &a->q.desc, *y = &b->q.desc;
    const hc_format_info *fx = hc_format_get(x->weight_format), *fy = hc_format_get(y->weight_format);
    char g1[32], g2[32];
    why[0] = '\0';
    if (b->is_moe || b->q.experts != 1)
        snprintf(why, len, "it is itself an expert stack");
    else if (y->weight_format != x->weight_format)
        snprintf(why, len, "weight format %s (%d bits) vs %s (%d bits)", fy->name, fy->bits,
                 fx->name, fx->bits);
    else if (y->group_size != x->group_size || y->group_size_n != x->group_size_n)
        snprintf(why, len, "group size %s vs %s", group_text(y, g1, sizeof g1),
                 group_text(x, g2, sizeof g2));
    else if (y->zero_point != x->zero_point)
        snprintf(why, len, "zero points %s vs %s (symmetric and asymmetric experts)",
                 zp_text(y->zero_point), zp_text(x->zero_point));
    else if (y->scale_format != x->scale_format || b->q.scale_bytes != a->q.scale_bytes)
        snprintf(why, len, "scales stored as %s vs %s", hc_format_get(y->scale_format)->name,
                 hc_format_get(x->scale_format)->name);
    else if ((y->global_scale != 0) != (x->global_scale != 0) ||
             (b->q.global_scale == NULL) != (a->q.global_scale == NULL))
        snprintf(why, len, "global scale %s vs %s", b->q.global_scale ? "present" : "absent",
                 a->q.global_scale ? "present" : "absent");
    else if (b->q.n != a->q.n || b->q.k != a->q.k || b->q.group_rows != a->q.group_rows ||
             b->q.groups != a->q.groups)
        snprintf(why, len, "shape [N=%lld, K=%lld] vs [N=%lld, K=%lld]", (long long)b->q.n,
                 (long long)b->q.k, (long long)a->q.n, (long long)a->q.k);
    else if (y->zero_point == HC_ZP_FLOAT && b->q.zp_float_format != a->q.zp_float_format)
        snprintf(why, len, "float zero points stored as %s vs %s",
                 hc_format_get(b->q.zp_float_format)->name,
                 hc_format_get(a->q.zp_float_format)->name);
}

static int same_perm(const int32_t *a, const int32_t *b, int64_t K)
{
    if (a == NULL || b == NULL) return a == b;
    return memcmp(a, b, (size_t)K * sizeof *a) == 0;
}

/* Refuses expert e when it cannot join the stack read so far in out. */
static hc_status stack_check(const hc_conv_layer *L, int e, const hc_ckpt_layer *out,
                             const hc_ckpt_layer *one, const hc_ckpt_read_opts *ro,
                             hc_error *err)
{
    const hc_conv_qexpert *x = &L->qexperts[e];
    char why[256];
    mismatch(out, one, why, sizeof why);
    if (!why[0] && ro->act_order == HC_ACT_ORDER_PERMUTE && !same_perm(out->perm, one->perm, one->q.k))
        snprintf(why, sizeof why, "its act-order permutation (g_idx) differs from the other "
                 "experts' and a stacked layer has one input_perm (use --act-order requant)");
    if (!why[0]) return HC_OK;
    HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): cannot stack expert %d into MoE layer %s: %s "
            "(expert 0: %s); every expert of a stack must share format, bits, group size, zero "
            "points, scale dtype and shape", x->carrier->name, x->carrier->file, e, L->prefix,
            why, out->source_format);
}

hc_status hc_conv_read_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                 const hc_ckpt_read_opts *ro, hc_ckpt_layer *out, hc_error *err)
{
    hc_ckpt_kind kind = (hc_ckpt_kind)L->ck_kind;
    if (L->qexperts == NULL)
        return hc_ckpt_read(plan->ckpt, plan->model, kind, L->prefix, ro, out, err);
    memset(out, 0, sizeof *out);
    hc_status st = HC_OK;
    for (int e = 0; st == HC_OK && e < L->n_qexperts; e++) {
        hc_ckpt_layer one;
        st = hc_ckpt_read(plan->ckpt, plan->model, kind, L->qexperts[e].prefix, ro, &one, err);
        if (st != HC_OK) break;
        st = e == 0 ? stack_alloc(&one, L->n_qexperts, out, err) : stack_check(L, e, out, &one, ro, err);
        if (st == HC_OK) stack_put(out, &one, e);
        hc_ckpt_layer_free(&one);
    }
    if (st != HC_OK) hc_ckpt_layer_free(out);
    return st;
}

/* Undoes a column permutation applied by the reader (w: rows x K). */
static hc_status unpermute(float *w, int64_t rows, int64_t K, const int32_t *perm, hc_error *err)
{
    float *tmp = malloc((size_t)K * sizeof *tmp);
    HC_CHECK_ALLOC(err, tmp, "unpermute row");
    for (int64_t r = 0; r < rows; r++) {
        float *row = w + r * K;
        for (int64_t j = 0; j < K; j++) tmp[perm[j]] = row[j];
        memcpy(row, tmp, (size_t)K * sizeof *tmp);
    }
    free(tmp);
    return HC_OK;
}

/* Experts are dequantized one by one: each may have its own act-order permutation. */
hc_status hc_conv_dequant_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                    const hc_ckpt_read_opts *ro, float *w, hc_error *err)
{
    int parts = L->qexperts ? L->n_qexperts : 1;
    int64_t N = L->meta.N, K = L->meta.K, total = L->meta.E * N * K, at = 0;
    for (int i = 0; i < parts; i++) {
        const char *prefix = L->qexperts ? L->qexperts[i].prefix : L->prefix;
        hc_ckpt_layer cl;
        HC_TRY(hc_ckpt_read(plan->ckpt, plan->model, (hc_ckpt_kind)L->ck_kind, prefix, ro, &cl,
                            err));
        int64_t rows = cl.q.experts * cl.q.n;
        hc_status st = HC_OK;
        if (cl.q.n != N || cl.q.k != K || at + rows * K > total)
            st = hc_error_set(err, HC_ERR_INTERNAL, "%s: shape changed since planning", prefix);
        if (st == HC_OK) st = hc_dequantize(&cl.q, w + at, err);
        if (st == HC_OK && cl.perm) st = unpermute(w + at, rows, K, cl.perm, err);
        at += rows * K;
        hc_ckpt_layer_free(&cl);
        HC_TRY(st);
    }
    return HC_OK;
}

hc_status hc_conv_load_bias_stack(const hc_conv_plan *plan, const hc_conv_layer *L,
                                  hc_tensor *out, hc_error *err)
{
    int64_t E = L->n_qexperts, N = L->meta.N, shape[2] = {E, N};
    HC_TRY(hc_tensor_alloc(out, hc_dtype_of_format(plan->param_format), 2, shape, err));
    size_t row = (size_t)N * 2;
    for (int64_t e = 0; e < E; e++) {
        const hc_st_tensor *b = L->qexperts[e].bias;
        hc_tensor one;
        memset(&one, 0, sizeof one);
        hc_status st = hc_conv_load_bias(b, plan->param_format, &one, err);
        if (st == HC_OK && one.nbytes != row)
            st = hc_error_set(err, HC_ERR_FORMAT, "%s: expert bias of %zu bytes, expected [%lld]",
                              b->name, one.nbytes, (long long)N);
        if (st == HC_OK) memcpy((char *)out->data + (size_t)e * row, one.data, row);
        hc_tensor_free(&one);
        if (st != HC_OK) {
            hc_tensor_free(out);
            return st;
        }
    }
    return HC_OK;
}
