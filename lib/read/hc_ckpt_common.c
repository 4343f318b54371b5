/* hc_ckpt_common.c - helpers shared by the quantized-checkpoint readers:
 * element access on mapped tensors, the pre-form buffers, exact scale
 * storage, act-order permutations, and the reader dispatch. */
#include "hc_ckpt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const hc_st_tensor *hc_ckpt_find(hc_st_model *model, const char *prefix, const char *suffix)
{
    char name[4096];
    int n = snprintf(name, sizeof name, "%s%s", prefix, suffix);
    if (n < 0 || (size_t)n >= sizeof name) return NULL;
    return hc_st_model_find(model, name);
}

uint64_t hc_ckpt_uint_at(const hc_st_tensor *t, int64_t i)
{
    int nb = hc_dtype_bits(t->dtype) / 8;
    const unsigned char *p = (const unsigned char *)t->data + (size_t)i * (size_t)nb;
    uint64_t v = 0;
    for (int b = nb - 1; b >= 0; b--) v = (v << 8) | p[b];
    return v;
}

int hc_ckpt_is_float_dtype(hc_dtype dt)
{
    return dt == HC_DT_F16 || dt == HC_DT_BF16 || dt == HC_DT_F32;
}

double hc_ckpt_float_at(const hc_st_tensor *t, int64_t i)
{
    uint64_t u = hc_ckpt_uint_at(t, i);
    float f;
    uint32_t u32 = (uint32_t)u;
    switch (t->dtype) {
    case HC_DT_F16: return hc_f16_to_f32((uint16_t)u);
    case HC_DT_BF16: return hc_bf16_to_f32((uint16_t)u);
    case HC_DT_F32: memcpy(&f, &u32, 4); return f;
    case HC_DT_F8_E4M3: return hc_format_decode(HC_FMT_F8E4M3, u32);
    case HC_DT_F8_E5M2: return hc_format_decode(HC_FMT_F8E5M2, u32);
    case HC_DT_F8_E8M0: case HC_DT_U8: return hc_format_decode(HC_FMT_F8E8M0, u32);
    default: return 0.0 / 0.0;
    }
}

const char *hc_ckpt_shape_str(const hc_st_tensor *t, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    o += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < t->ndim && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (o < len) snprintf(buf + o, len - o, "]");
    return buf;
}

hc_status hc_ckpt_check_dims(const hc_st_tensor *t, hc_error *err)
{
    char sh[HC_CKPT_SHAPE_STR];
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] < 1)
            HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): shape %s has an empty dimension; a quantized "
                    "layer needs at least one row, column and group", t->name, t->file,
                    hc_ckpt_shape_str(t, sh, sizeof sh));
    return HC_OK;
}

int hc_ckpt_shape_is(const hc_st_tensor *t, int ndim, const int64_t *dims)
{
    if (t->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != dims[i]) return 0;
    return 1;
}

hc_status hc_ckpt_check_shape(const hc_st_tensor *t, int ndim, const int64_t *dims,
                              const char *meaning, hc_error *err)
{
    if (hc_ckpt_shape_is(t, ndim, dims)) return HC_OK;
    char want[HC_CKPT_SHAPE_STR], got[HC_CKPT_SHAPE_STR];
    hc_st_tensor w = {.ndim = ndim};
    for (int i = 0; i < ndim; i++) w.shape[i] = dims[i];
    HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected shape %s (%s), got %s", t->name, t->file,
            hc_ckpt_shape_str(&w, want, sizeof want), meaning, hc_ckpt_shape_str(t, got, sizeof got));
}

static int is_e8m0(hc_dtype dt) { return dt == HC_DT_U8 || dt == HC_DT_F8_E8M0; }

hc_status hc_ckpt_scale_ok(const hc_st_tensor *s, int64_t i, double v, hc_error *err)
{
    if (is_e8m0(s->dtype) && hc_ckpt_uint_at(s, i) == 0xFF)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): E8M0 scale byte 0xFF (NaN) at element %lld; a "
                "NaN scale makes its whole group NaN, refused", s->name, s->file, (long long)i);
    if (!isfinite(v))
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): scale %g at element %lld is not finite; "
                "refused", s->name, s->file, v, (long long)i);
    if (v < 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): scale %g at element %lld is negative (no "
                "producer writes negative scales: its groups would decode sign-flipped); "
                "refused", s->name, s->file, v, (long long)i);
    return HC_OK;
}

hc_status hc_ckpt_check_scales(const hc_st_tensor *s, int64_t *zeros, hc_error *err)
{
    int64_t n = hc_shape_numel(s->ndim, s->shape), z = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = hc_ckpt_float_at(s, i);
        HC_TRY(hc_ckpt_scale_ok(s, i, v, err));
        z += v == 0;
    }
    if (zeros) *zeros = z;
    return HC_OK;
}

hc_status hc_ckpt_scalar_scale(const hc_st_tensor *t, int divisor, double *out, hc_error *err)
{
    char sh[HC_CKPT_SHAPE_STR];
    if (hc_shape_numel(t->ndim, t->shape) != 1 || !hc_ckpt_is_float_dtype(t->dtype))
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected one F32 / F16 / BF16 value, got %s %s",
                t->name, t->file, hc_dtype_name(t->dtype), hc_ckpt_shape_str(t, sh, sizeof sh));
    double v = hc_ckpt_float_at(t, 0);
    HC_TRY(hc_ckpt_scale_ok(t, 0, v, err));
    if (divisor && v == 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): 0 is not a divisor; refused", t->name, t->file);
    *out = v;
    return HC_OK;
}

/* Counts zeros and negatives of F16 / BF16 scales on their bits (-0 is a zero,
 * not a negative). Returns 1 (nothing counted) for other dtypes or on a NaN /
 * Inf, which the element loop then reports. */
static int count_raw16_scales(const hc_st_tensor *s, int64_t n, int64_t *zeros, int64_t *neg)
{
    if (s->dtype != HC_DT_F16 && s->dtype != HC_DT_BF16) return 1;
    uint16_t inf = s->dtype == HC_DT_F16 ? 0x7C00u : 0x7F80u;
    const unsigned char *p = s->data;
    int64_t z = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t b;
        memcpy(&b, p + 2 * (size_t)i, 2);
        if ((b & inf) == inf) return 1;
        z += (b & 0x7FFFu) == 0;
        m += (b & 0x8000u) && (b & 0x7FFFu);
    }
    *zeros = z;
    *neg = m;
    return 0;
}

hc_status hc_ckpt_check_int_scales(const hc_st_tensor *s, hc_ckpt_layer *l, hc_error *err)
{
    int64_t n = hc_shape_numel(s->ndim, s->shape), zeros = 0, neg = 0;
    int raw = count_raw16_scales(s, n, &zeros, &neg) == 0;
    for (int64_t i = 0; !raw && i < n; i++) {
        double v = hc_ckpt_float_at(s, i);
        if (!isfinite(v))
            HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): scale %g at element %lld is not finite; "
                    "refused", s->name, s->file, v, (long long)i);
        zeros += v == 0;
        neg += v < 0;
    }
    hc_ckpt_note_zero_scales(l, s, zeros);
    if (neg > 0)
        hc_ckpt_note(l, "%s: %lld scale(s) are negative (auto-round's symmetric RTN keeps the "
                     "sign of each group's extreme value): kept as stored, each group decodes "
                     "as scale * (q - z)", s->name, (long long)neg);
    return HC_OK;
}

void hc_ckpt_note_zero_scales(hc_ckpt_layer *l, const hc_st_tensor *s, int64_t zeros)
{
    if (zeros > 0)
        hc_ckpt_note(l, "%s: %lld scale(s) are 0 (the producer normally clamps scales above 0): "
                     "those groups decode to 0, kept as stored", s->name, (long long)zeros);
}

hc_status hc_ckpt_alloc(hc_quant_result *q, const hc_quant_desc *d, int64_t E, int64_t N,
                        int64_t K, int64_t NS, int64_t G, int with_codes, hc_error *err)
{
    memset(q, 0, sizeof *q);
    q->desc = *d;
    q->experts = E;
    q->n = N;
    q->k = K;
    q->bits = hc_format_get(d->weight_format)->bits;
    q->group_rows = NS;
    q->groups = G;
    q->group_cols = K / G;
    q->zp_float_format = HC_FMT_F16;
    if (with_codes) {
        q->codes = calloc((size_t)(E * N * K * q->bits / 32) + 1, sizeof *q->codes);
        HC_CHECK_ALLOC(err, q->codes, "layer codes");
    }
    if (d->group_size != HC_QUANT_GROUP_TENSOR) {
        q->scale_bytes = hc_quant_scale_bytes(d->scale_format);
        q->scales = calloc((size_t)(E * NS * G) + 1, (size_t)q->scale_bytes);
        HC_CHECK_ALLOC(err, q->scales, "layer scales");
    }
    if (d->group_size == HC_QUANT_GROUP_TENSOR || d->global_scale) {
        q->global_scale = calloc((size_t)E, sizeof *q->global_scale);
        HC_CHECK_ALLOC(err, q->global_scale, "global scales");
    }
    if (d->zero_point == HC_ZP_INT) {
        q->zero_points = calloc((size_t)(E * NS * q->bits / 32 * G) + 1, sizeof *q->zero_points);
        HC_CHECK_ALLOC(err, q->zero_points, "zero points");
    }
    if (d->zero_point == HC_ZP_FLOAT) {
        q->zero_points_f = calloc((size_t)(E * NS * G) + 1, sizeof *q->zero_points_f);
        HC_CHECK_ALLOC(err, q->zero_points_f, "float zero points");
    }
    return HC_OK;
}

/* Raw bits of v in format f if exact, else -1. */
static int64_t encode_exact(hc_format_id f, double v)
{
    float x = (float)v;
    uint32_t bits;
    if ((double)x != v && v == v) return -1;
    switch (f) {
    case HC_FMT_F32: memcpy(&bits, &x, 4); return bits;
    case HC_FMT_F16:
        bits = hc_f32_to_f16(x);
        return hc_f16_to_f32((uint16_t)bits) == x ? (int64_t)bits : -1;
    case HC_FMT_BF16:
        bits = hc_f32_to_bf16(x);
        return hc_bf16_to_f32((uint16_t)bits) == x ? (int64_t)bits : -1;
    default:
        bits = hc_format_encode(f, x);
        return hc_format_decode(f, bits) == v ? (int64_t)bits : -1;
    }
}

int hc_ckpt_raw16_scales(const hc_st_tensor *s, const hc_quant_result *q)
{
    return q->scale_bytes == 2 &&
           ((s->dtype == HC_DT_F16 && q->desc.scale_format == HC_FMT_F16) ||
            (s->dtype == HC_DT_BF16 && q->desc.scale_format == HC_FMT_BF16));
}

int hc_ckpt_raw16_scales_copy(const hc_st_tensor *s, int64_t N, int64_t G, int64_t sn, int64_t sg,
                              hc_quant_result *q, int64_t *zeros)
{
    if (!hc_ckpt_raw16_scales(s, q)) return 1;
    const uint16_t inf = s->dtype == HC_DT_F16 ? 0x7C00u : 0x7F80u;
    uint16_t *dst = (uint16_t *)(void *)q->scales;
    const unsigned char *src = s->data;
    int64_t z = 0;
    for (int64_t g = 0; g < G; g++)
        for (int64_t n = 0; n < N; n++) {
            uint16_t b;
            memcpy(&b, src + 2 * (size_t)(n * sn + g * sg), 2);
            if ((b & inf) == inf) return 1;
            z += (b & 0x7FFFu) == 0;
            dst[n * G + g] = b;
        }
    if (zeros) *zeros = z;
    return 0;
}

void hc_ckpt_pooled_codes(const hc_ckpt_read_opts *opts, hc_quant_result *q)
{
    const size_t bytes = (size_t)(q->experts * q->n * q->k * q->bits / 32) * 4;
    uint32_t *pooled = opts->pool ? hc_bufpool_take(opts->pool, bytes) : NULL;
    if (pooled) {
        free(q->codes);
        q->codes = pooled;
    }
}

void hc_ckpt_zeros_from_n_packed(const void *src, int64_t N, int64_t G, const int col[8],
                                 uint32_t flip, hc_quant_result *q)
{
    const unsigned char *s = src;
    const int64_t J = N / 8;
    for (int64_t g = 0; g < G; g++)
        for (int64_t j = 0; j < J; j++) {
            uint32_t in, out = 0;
            memcpy(&in, s + 4 * (size_t)(g * J + j), 4);
            for (int p = 0; p < 8; p++) out |= ((in >> (4 * p)) & 15u) << (4 * col[p]);
            q->zero_points[j * G + g] = out ^ flip;
        }
}

int hc_ckpt_put_scale(hc_quant_result *q, int64_t idx, double v)
{
    int64_t bits = encode_exact(q->desc.scale_format, v);
    if (bits < 0) return -1;
    unsigned char *p = q->scales + (size_t)idx * (size_t)q->scale_bytes;
    for (int b = 0; b < q->scale_bytes; b++) p[b] = (unsigned char)((uint64_t)bits >> (8 * b));
    return 0;
}

static int all_exact(const hc_st_tensor *t, hc_format_id f)
{
    int64_t n = hc_shape_numel(t->ndim, t->shape);
    for (int64_t i = 0; i < n; i++)
        if (encode_exact(f, hc_ckpt_float_at(t, i)) < 0) return 0;
    return 1;
}

hc_format_id hc_ckpt_scale_format(hc_dtype src, const hc_st_tensor *t,
                                  const hc_ckpt_read_opts *opts)
{
    hc_format_id param = opts->param_format;
    switch (src) {
    case HC_DT_F16: return HC_FMT_F16;
    case HC_DT_BF16: return HC_FMT_BF16;
    case HC_DT_F8_E4M3: return HC_FMT_F8E4M3;
    case HC_DT_F8_E5M2: return HC_FMT_F8E5M2;
    case HC_DT_F8_E8M0: case HC_DT_U8: return HC_FMT_F8E8M0;
    case HC_DT_F32: {
        hc_format_id other = param == HC_FMT_BF16 ? HC_FMT_F16 : HC_FMT_BF16;
        if (all_exact(t, param)) return param;
        if (all_exact(t, other)) return other;
        return opts->float32_scales ? HC_FMT_F32 : HC_FMT_COUNT;
    }
    default: return HC_FMT_COUNT;
    }
}

void hc_ckpt_pack_codes(hc_quant_result *q, const uint8_t *codes)
{
    hc_pack_rows(codes, q->experts * q->n, q->k, q->bits, q->codes);
}

hc_status hc_ckpt_pack_zeros(hc_quant_result *q, const uint8_t *z, hc_error *err)
{
    int64_t ns = q->group_rows, G = q->groups, wpc = ns * q->bits / 32;
    uint8_t col[4096];
    uint32_t words[4096];
    uint8_t *cbuf = ns <= 4096 ? col : malloc((size_t)ns);
    uint32_t *wbuf = wpc <= 4096 ? words : malloc((size_t)wpc * sizeof *wbuf);
    if (!cbuf || !wbuf) {
        if (cbuf != col) free(cbuf);
        if (wbuf != words) free(wbuf);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory packing zero points");
    }
    for (int64_t e = 0; e < q->experts; e++)
        for (int64_t g = 0; g < G; g++) {
            for (int64_t r = 0; r < ns; r++) cbuf[r] = z[(e * ns + r) * G + g];
            hc_pack_rows(cbuf, 1, ns, q->bits, wbuf);
            for (int64_t w = 0; w < wpc; w++) q->zero_points[(e * wpc + w) * G + g] = wbuf[w];
        }
    if (cbuf != col) free(cbuf);
    if (wbuf != words) free(wbuf);
    return HC_OK;
}

int hc_ckpt_act_order_perm(const hc_st_tensor *g_idx, int64_t K, int64_t gs, int64_t G,
                           const char *prefix, int32_t **perm_out, hc_error *err)
{
    *perm_out = NULL;
    if (g_idx == NULL) return 0;
    if (g_idx->ndim != 1 || g_idx->shape[0] != K ||
        (g_idx->dtype != HC_DT_I32 && g_idx->dtype != HC_DT_I64))
        return hc_error_set(err, HC_ERR_FORMAT, "%s (in %s): g_idx must be an I32/I64 tensor "
                            "[K] = [%lld]", g_idx->name, g_idx->file, (long long)K), -1;
    int trivial = 1;
    int64_t *count = calloc((size_t)G + 1, sizeof *count);
    if (!count) return hc_error_set(err, HC_ERR_NOMEM, "out of memory (g_idx)"), -1;
    for (int64_t k = 0; k < K; k++) {
        int64_t g = (int64_t)(int32_t)hc_ckpt_uint_at(g_idx, k);
        if (g_idx->dtype == HC_DT_I64) g = (int64_t)hc_ckpt_uint_at(g_idx, k);
        if (g < 0 || g >= G) {
            free(count);
            return hc_error_set(err, HC_ERR_FORMAT, "%s (in %s): g_idx[%lld] = %lld is outside "
                                "0..%lld (groups of layer %s)", g_idx->name, g_idx->file,
                                (long long)k, (long long)g, (long long)G - 1, prefix), -1;
        }
        count[g]++;
        if (g != k / gs) trivial = 0;
    }
    if (trivial) { free(count); return 0; }
    for (int64_t g = 0; g < G; g++)
        if (count[g] != gs) {
            long long c = count[g];
            free(count);
            return hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: act-order group %lld has %lld "
                                "members, not the group size %lld; its groups cannot be made "
                                "contiguous", prefix, (long long)g, c, (long long)gs), -1;
        }
    /* counting sort, stable: start offsets per group */
    int64_t acc = 0;
    for (int64_t g = 0; g < G; g++) { int64_t c = count[g]; count[g] = acc; acc += c; }
    int32_t *perm = malloc((size_t)K * sizeof *perm);
    if (!perm) { free(count); return hc_error_set(err, HC_ERR_NOMEM, "out of memory (perm)"), -1; }
    for (int64_t k = 0; k < K; k++) {
        int64_t g = g_idx->dtype == HC_DT_I64 ? (int64_t)hc_ckpt_uint_at(g_idx, k)
                                              : (int64_t)(int32_t)hc_ckpt_uint_at(g_idx, k);
        perm[count[g]++] = (int32_t)k;
    }
    free(count);
    *perm_out = perm;
    return 1;
}

hc_status hc_ckpt_permute_columns(uint8_t *codes, int64_t rows, int64_t K, const int32_t *perm,
                                  hc_error *err)
{
    uint8_t *tmp = malloc((size_t)K);
    HC_CHECK_ALLOC(err, tmp, "permutation row");
    for (int64_t r = 0; r < rows; r++) {
        uint8_t *row = codes + r * K;
        for (int64_t j = 0; j < K; j++) tmp[j] = row[perm[j]];
        memcpy(row, tmp, (size_t)K);
    }
    free(tmp);
    return HC_OK;
}

hc_status hc_ckpt_refuse_act_order(const char *prefix, hc_error *err)
{
    HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: act-order checkpoint (desc_act / g_idx: input "
            "channels are not in group order); Humming needs contiguous groups. Use "
            "--act-order permute (lossless: K is permuted so groups are contiguous and the "
            "permutation is written as %s.input_perm, int32, which the runtime must apply to "
            "the activations: x[:, input_perm]) or --act-order requant (dequantize exactly and "
            "requantize with contiguous groups)", prefix, prefix);
}

void hc_ckpt_note(hc_ckpt_layer *l, const char *fmt, ...)
{
    size_t used = strlen(l->note);
    if (used && used + 2 < sizeof l->note) {
        strcat(l->note, "; ");
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->note + used, sizeof l->note - used, fmt, ap);
    va_end(ap);
}

void hc_ckpt_codes_from(const hc_st_tensor *w, size_t len, const hc_ckpt_read_opts *opts,
                        hc_quant_result *q)
{
    if (opts->code_views && ((uintptr_t)w->data & 3) == 0 && len <= w->nbytes && !q->codes_view) {
        free(q->codes);
        q->codes = (uint32_t *)(uintptr_t)w->data; /* read only: codes_view */
        q->codes_view = 1;
        return;
    }
    memcpy(q->codes, w->data, len);
}

void hc_ckpt_layer_free(hc_ckpt_layer *l)
{
    if (!l) return;
    hc_quant_result_free(&l->q);
    free(l->perm);
    memset(l, 0, sizeof *l);
}

/* What every reader must hand on: whole groups along K, and rows of whole
 * 32-bit words (the row-packed form), whatever the source's own shapes allowed. */
static hc_status check_geometry(const char *prefix, const hc_quant_result *q, hc_error *err)
{
    if (q->groups < 1 || q->group_cols * q->groups != q->k)
        HC_FAIL(err, HC_ERR_FORMAT, "layer %s: K = %lld is not a whole number of scale groups "
                "(%lld groups of %lld)", prefix, (long long)q->k, (long long)q->groups,
                (long long)q->group_cols);
    if (q->k * q->bits % 32 != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: K = %lld %d-bit codes do not fill whole "
                "32-bit words; Humming's row-packed form cannot hold this layer", prefix,
                (long long)q->k, q->bits);
    return HC_OK;
}

hc_status hc_ckpt_read(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                       const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                       hc_error *err)
{
    memset(out, 0, sizeof *out);
    out->lossless = 1;
    /* GPTQ / AWQ / compressed-tensors readers take their bits and groups from
     * the config: a .qweight or .weight_packed under another method has none */
    int gptq_like = kind == HC_CK_GPTQ || kind == HC_CK_AWQ;
    int ct_like = kind == HC_CK_CT_PACKED || kind == HC_CK_CT_FP4 || kind == HC_CK_CT_UNPACKED;
    if ((gptq_like && cfg->method != HC_CKPT_GPTQ && cfg->method != HC_CKPT_AWQ) ||
        (ct_like && cfg->method != HC_CKPT_CT))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: its tensors are %s, but %s says the checkpoint "
                "is %s; refused (mixed formats are not read)", prefix,
                gptq_like ? "GPTQ/AWQ's (.qweight)" : "compressed-tensors' (.weight_packed)",
                cfg->source_file[0] ? cfg->source_file : "the config",
                hc_ckpt_method_name(cfg->method));
    /* every reader dereferences its layer's main tensor: it must be there */
    const char *main_suffix = gptq_like ? ".qweight" : kind == HC_CK_MXFP4 ? "_blocks"
                              : kind == HC_CK_CT_PACKED || kind == HC_CK_CT_FP4 ? ".weight_packed"
                                                                                : ".weight";
    if (prefix[0] == '\0' || hc_ckpt_find(model, prefix, main_suffix) == NULL)
        HC_FAIL(err, HC_ERR_FORMAT, "layer \"%s\": no tensor \"%s%s\" (a layer needs a name "
                "and its main tensor)", prefix, prefix, main_suffix);
    hc_status st;
    hc_ckpt_config *own = NULL; /* an AutoRound extra_config entry: the layer's own bits */
    const hc_ckpt_override *o = gptq_like && cfg->n_ovr ? hc_ckpt_override_for(cfg, prefix) : NULL;
    if (o && o->bits >= 16)
        HC_FAIL(err, HC_ERR_FORMAT, "layer %s: packed (.qweight), but %s's extra_config entry "
                "'%s' says %d bits (unquantized); refused", prefix, cfg->source_file, o->key,
                o->bits);
    if (o) {
        own = malloc(sizeof *own);
        HC_CHECK_ALLOC(err, own, "layer config");
        *own = *cfg;
        own->bits = o->bits;
        own->group_size = o->group_size;
        own->sym = o->sym;
        cfg = own;
    }
    const hc_ckpt_reader *r = hc_ckpt_reader_of(kind);
    st = r ? r->read(cfg, model, kind, prefix, opts, out, err)
           : hc_error_set(err, HC_ERR_INTERNAL, "%s: unknown layer kind", prefix);
    if (st == HC_OK) st = check_geometry(prefix, &out->q, err);
    if (st == HC_OK && o)
        hc_ckpt_note(out, "extra_config '%s': %d bits, group %lld, %s", o->key, o->bits,
                     (long long)o->group_size, o->sym ? "sym" : "asym");
    if (st == HC_OK && cfg->autoround) {
        char sf[256];
        snprintf(sf, sizeof sf, "auto-round %s: %s", cfg->packing_format, out->source_format);
        snprintf(out->source_format, sizeof out->source_format, "%.95s", sf);
    }
    free(own);
    if (st != HC_OK) hc_ckpt_layer_free(out);
    return st;
}

hc_status hc_ckpt_source_values(const hc_ckpt_config *cfg, hc_st_model *model,
                                hc_ckpt_kind kind, const char *prefix, float *out,
                                hc_error *err)
{
    (void)cfg;
    const hc_ckpt_reader *r = hc_ckpt_reader_of(kind);
    if (r && r->source_values) return r->source_values(model, prefix, out, err);
    HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: this reader's readings are exact; no separate "
            "source values", prefix);
}
