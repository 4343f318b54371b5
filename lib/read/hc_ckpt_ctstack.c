/* hc_ckpt_ctstack.c - compressed-tensors 3-D expert stacks.
 *
 * compressed-tensors >= 0.18 packs a weight of any rank slice by slice
 * (pack_to_int32 on [E, N, K] int8 codes stacks E 2-D packings), so an MoE
 * block whose experts are one module "X.experts.Y" is stored as
 *   X.experts.Y.weight_packed [E, N, ceil(K*b/32)]  (or .weight for int8 / fp8)
 *   X.experts.Y.weight_scale [E, N, G], weight_zero_point [E, ceil(N*b/32), G],
 *   weight_shape [E, N, K], weight_global_scale [E] or [E, 1], ...
 * Expert e of each is exactly the 2-D tensor compressed-tensors writes for a
 * per-expert Linear "X.experts.<e>.Y", so each stack is presented as those
 * per-expert tensors (views into the mapping, nothing copied) and the
 * per-expert MoE path reads and stacks them (hc_convert_qstack.c). */
#include "hc_ckpt.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What compressed-tensors stores for one quantized Linear; a stack holds each
 * with a leading expert dimension. Anything else next to a stack is refused. */
static const char *const SUFFIXES[] = {"weight_packed", "weight", "weight_scale",
                                       "weight_zero_point", "weight_shape",
                                       "weight_global_scale", "weight_g_idx",
                                       "input_global_scale", "input_scale", "bias"};
#define N_SUFFIXES (sizeof SUFFIXES / sizeof *SUFFIXES)
#define MAX_EXPERTS 65536

/* The views collected so far (grown by push). */
typedef struct {
    hc_st_tensor *views;
    const hc_st_tensor **bases, **hidden;
    char **names;
    size_t n, cap, nh;
} view_set;

/* Length of the stem "X.experts.Y" of name "X.experts.Y.<suffix>" (Y one
 * component, not an expert index), or 0. */
static size_t stack_stem(const char *name)
{
    const char *at = strstr(name, ".experts.");
    if (at == NULL || isdigit((unsigned char)at[9]) || at[9] == '.' || at[9] == '\0') return 0;
    const char *dot = strchr(at + 9, '.');
    if (dot == NULL || strchr(dot + 1, '.') != NULL) return 0;
    return (size_t)(dot - name);
}

static int known_suffix(const char *s)
{
    for (size_t i = 0; i < N_SUFFIXES; i++)
        if (strcmp(s, SUFFIXES[i]) == 0) return 1;
    return 0;
}

static hc_status push(view_set *v, const hc_st_tensor *view, const hc_st_tensor *base,
                      char *name, hc_error *err)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        hc_st_tensor *a = realloc(v->views, cap * sizeof *a);
        if (a) v->views = a;
        const hc_st_tensor **b = a ? realloc(v->bases, cap * sizeof *b) : NULL;
        if (b) v->bases = b;
        char **c = b ? realloc(v->names, cap * sizeof *c) : NULL;
        if (c) v->names = c;
        if (c == NULL) {
            free(name);
            HC_FAIL(err, HC_ERR_NOMEM, "out of memory splitting expert stacks");
        }
        v->cap = cap;
    }
    v->views[v->n] = *view;
    v->views[v->n].name = name;
    v->bases[v->n] = base;
    v->names[v->n++] = name;
    return HC_OK;
}

/* Expert e's slice of t (stack stem of length sl, E experts), or its
 * [N, K] part of a weight_shape [E, N, K]. */
static hc_status add_slice(hc_st_model *model, view_set *v, const hc_st_tensor *t, size_t sl,
                           int64_t E, int64_t e, int is_shape, hc_error *err)
{
    const char *at = strstr(t->name, ".experts.");
    int need = snprintf(NULL, 0, "%.*s.experts.%lld.%s", (int)(at - t->name), t->name,
                        (long long)e, at + 9);
    char *name = malloc((size_t)need + 1);
    HC_CHECK_ALLOC(err, name, "view name");
    snprintf(name, (size_t)need + 1, "%.*s.experts.%lld.%s", (int)(at - t->name), t->name,
             (long long)e, at + 9);
    if (hc_st_model_find(model, name)) {
        hc_error_set(err, HC_ERR_FORMAT, "%s (in %s): compressed-tensors expert stack %.*s and "
                     "the per-expert tensor %s both hold expert %lld; refused: the copies may "
                     "differ", t->name, t->file, (int)sl, t->name, name, (long long)e);
        free(name);
        return HC_ERR_FORMAT;
    }
    hc_st_tensor view = *t;
    size_t esize = (size_t)hc_dtype_bits(t->dtype) / 8;
    if (is_shape) {
        view.shape[0] = 2;
        view.data = (const char *)t->data + esize;
        view.nbytes = 2 * esize;
    } else {
        view.ndim = t->ndim > 1 ? t->ndim - 1 : 1;
        for (int d = 0; d < view.ndim; d++) view.shape[d] = t->ndim > 1 ? t->shape[d + 1] : 1;
        view.nbytes = t->nbytes / (size_t)E;
        view.data = (const char *)t->data + (size_t)e * view.nbytes;
    }
    return push(v, &view, t, name, err);
}

/* weight_shape of a stack: I64 / I32 [3] holding [E, N, K]. */
static int shape_ok(const hc_st_tensor *t, int64_t E)
{
    if (t->ndim != 1 || t->shape[0] != 3 || (t->dtype != HC_DT_I64 && t->dtype != HC_DT_I32))
        return 0;
    int64_t e0 = 0;
    if (t->dtype == HC_DT_I64) memcpy(&e0, t->data, 8);
    else {
        int32_t x;
        memcpy(&x, t->data, 4);
        e0 = x;
    }
    return e0 == E;
}

/* Every tensor "stem.<suffix>" split into E per-expert views. */
static hc_status split_stack(hc_st_model *model, view_set *v, const hc_st_tensor *main, size_t sl,
                             hc_error *err)
{
    int64_t E = main->shape[0];
    if (E < 1 || E > MAX_EXPERTS)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): a compressed-tensors expert stack of %lld "
                "experts (1..%d read)", main->name, main->file, (long long)E, MAX_EXPERTS);
    size_t n = hc_st_model_count(model);
    for (size_t i = 0; i < n; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        if (strncmp(t->name, main->name, sl) != 0 || t->name[sl] != '.') continue;
        const char *suffix = t->name + sl + 1;
        int is_shape = strcmp(suffix, "weight_shape") == 0;
        const char *why = !known_suffix(suffix)        ? "not a tensor compressed-tensors stores"
                          : is_shape && !shape_ok(t, E) ? "weight_shape must be [3] = [E, N, K]"
                          : !is_shape && (t->ndim < 1 || t->shape[0] != E || t->nbytes % (size_t)E)
                              ? "its first dimension is not the number of experts"
                              : NULL;
        if (why)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): next to the compressed-tensors 3-D "
                    "expert stack %.*s (%lld experts, from %s): %s", t->name, t->file, (int)sl,
                    main->name, (long long)E, main->name, why);
        for (int64_t e = 0; e < E; e++) HC_TRY(add_slice(model, v, t, sl, E, e, is_shape, err));
        v->hidden[v->nh++] = t;
    }
    return HC_OK;
}

/* The weight of a stack: 3-D weight_packed, or a 3-D weight with a weight_scale
 * (a 3-D float stack without one is a float checkpoint's, left alone). */
static int is_stack_weight(hc_st_model *model, const hc_st_tensor *t, size_t *sl)
{
    *sl = stack_stem(t->name);
    if (*sl == 0 || t->ndim != 3) return 0;
    const char *suffix = t->name + *sl + 1;
    if (strcmp(suffix, "weight_packed") == 0) return 1;
    if (strcmp(suffix, "weight") != 0) return 0;
    char sib[HC_ST_MAX_NAME + 32];
    snprintf(sib, sizeof sib, "%.*s.weight_packed", (int)*sl, t->name);
    if (hc_st_model_find(model, sib)) return 0; /* split with weight_packed */
    snprintf(sib, sizeof sib, "%.*s.weight_scale", (int)*sl, t->name);
    return hc_st_model_find(model, sib) != NULL;
}

/* llm-compressor's repack_moe saves a fused expert parameter "X.experts.Y" (one
 * name component after "experts") still in float with the experts' qparams
 * stacked beside it as "X.experts.Y_scale"
 * (compressed-tensors compresses Linear modules only): no quantized codes. */
static hc_status refuse_repacked(hc_st_model *model, const hc_st_tensor *t, hc_error *err)
{
    static const char *const qp[] = {"_scale", "_zero_point", "_global_scale", "_g_idx"};
    const char *at = strstr(t->name, ".experts.");
    if (at == NULL) return HC_OK;
    size_t len = strlen(t->name);
    for (size_t i = 0; i < sizeof qp / sizeof *qp; i++) {
        size_t q = strlen(qp[i]);
        if (len <= q || strcmp(t->name + len - q, qp[i]) != 0 || t->name + len - q <= at + 9)
            continue;
        char base[HC_ST_MAX_NAME + 1];
        snprintf(base, sizeof base, "%.*s", (int)(len - q), t->name);
        const hc_st_tensor *w = strchr(base + (at + 9 - t->name), '.') ? NULL
                                : hc_st_model_find(model, base);
        if (w && w->ndim == 3 && (w->dtype == HC_DT_BF16 || w->dtype == HC_DT_F16 ||
                                  w->dtype == HC_DT_F32))
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): quantization parameters stacked beside "
                    "the fused float expert weight %s (llm-compressor repack_moe layout): the "
                    "weights were never compressed, so there are no codes to read; save the "
                    "experts linearized (per-expert Linear modules) or convert the float model",
                    t->name, t->file, base);
    }
    return HC_OK;
}

static void view_set_free(view_set *v)
{
    for (size_t i = 0; i < v->n; i++) free(v->names[i]);
    free(v->views);
    free(v->bases);
    free(v->names);
    free(v->hidden);
}

hc_status hc_ckpt_ct_unstack(hc_st_model *model, int *n_stacks, hc_error *err)
{
    view_set v;
    memset(&v, 0, sizeof v);
    *n_stacks = 0;
    size_t n = hc_st_model_count(model), sl;
    v.hidden = calloc(n + 1, sizeof *v.hidden);
    HC_CHECK_ALLOC(err, v.hidden, "expert stack list");
    hc_status st = HC_OK;
    for (size_t i = 0; st == HC_OK && i < n; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, i);
        st = refuse_repacked(model, t, err);
        if (st != HC_OK || !is_stack_weight(model, t, &sl)) continue;
        st = split_stack(model, &v, t, sl, err);
        ++*n_stacks;
    }
    if (st == HC_OK && v.n)
        st = hc_st_model_add_views(model, v.views, v.bases, v.n, v.hidden, v.nh, err);
    view_set_free(&v);
    return st;
}
