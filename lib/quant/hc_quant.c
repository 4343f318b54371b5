/* hc_quant.c - the quantizer driver: checks, input scan, second scales, the
 * parallel loop over groups (RTN or clip-ratio MSE search) and packing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hc_parallel.h"
#include "hc_quant_internal.h"

#define HQ_MSE_STEPS 51 /* clip ratios 1.00, 0.99, ..., 0.50 */

typedef struct {
    int64_t n, k;   /* rows and columns of one expert */
    int64_t gn, gk; /* rows and columns of one group */
    int64_t ns, g;  /* groups along N and along K */
} hq_geom;

static int is_scale_format(hc_format_id f) { return hc_quant_scale_bytes(f) != 0; }

static hc_status check_weight(const hc_quant_desc *d, hc_error *err)
{
    const hc_format_info *wf = hc_format_get(d->weight_format);
    if (!wf) HC_FAIL(err, HC_ERR_ARG, "quantize: unknown weight format %d", (int)d->weight_format);
    if (wf->bits > 8 || (wf->kind == HC_KIND_FLOAT && !wf->is_signed))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: %s is not a weight format (1..8 bit "
                "integers or signed floats)", wf->name);
    if (d->zero_point != HC_ZP_NONE && wf->kind == HC_KIND_FLOAT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: zero points need an integer weight format, "
                "not %s", wf->name);
    if ((unsigned)d->zero_point > HC_ZP_FLOAT || (unsigned)d->quantizer > HC_QUANTIZER_MSE)
        HC_FAIL(err, HC_ERR_ARG, "quantize: bad zero-point mode or quantizer");
    return HC_OK;
}

static hc_status check_tensor(const hc_quant_desc *d, hc_error *err)
{
    if (d->group_size_n != 0 || d->zero_point != HC_ZP_NONE || d->global_scale ||
        d->scale_2_channel)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: tensor granularity takes no block "
                "scales, zero point or second scale");
    return HC_OK;
}

/* Second scales Humming's quantize_weight computes soundly: not with e8m0
 * scales (its e8m0(s / ts) * ts is not the power of two the codes used) nor
 * with float32 tensor scales (it then drops the second scale). */
static hc_status check_scale_2(const hc_quant_desc *d, const char *sn, hc_error *err)
{
    if (d->global_scale && d->scale_2_channel)
        HC_FAIL(err, HC_ERR_ARG, "quantize: a tensor and a channel second scale at once");
    if (d->global_scale && (d->scale_format == HC_FMT_F32 || d->scale_format == HC_FMT_F8E8M0))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: no global scale with %s scales", sn);
    if (!d->scale_2_channel) return HC_OK;
    if (d->group_size <= 0 || d->group_size_n > 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: a channel second scale needs group scales");
    if (d->scale_format == HC_FMT_F8E8M0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: no channel second scale with %s scales", sn);
    if (d->scale_2_format != HC_FMT_F16 && d->scale_2_format != HC_FMT_BF16)
        HC_FAIL(err, HC_ERR_ARG, "quantize: the channel second scale is stored as float16 or "
                "bfloat16 (the model dtype)");
    return HC_OK;
}

static hc_status check_scales(const hc_quant_desc *d, int bits, hc_error *err)
{
    if (d->group_size == HC_QUANT_GROUP_TENSOR) return check_tensor(d, err);
    const char *sn = hc_format_get(d->scale_format) ? hc_format_get(d->scale_format)->name : "?";
    if (!is_scale_format(d->scale_format))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: %s is not a scale format", sn);
    if (d->group_size_n > 0 && (d->scale_format != HC_FMT_F32 || d->global_scale))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: block scales are float32, without global scale");
    if (d->scale_format == HC_FMT_F8E8M0 && bits == 1 && d->zero_point == HC_ZP_NONE)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: symmetric 1-bit weights have no e8m0 scale "
                "(Humming drops the scale's sign, which 1-bit codes need)");
    return check_scale_2(d, sn, err);
}

static hc_status check_shape(const hc_quant_desc *d, int bits, int64_t e, int64_t n, int64_t k,
                             hc_error *err)
{
    if (e <= 0 || n <= 0 || k <= 0 || e > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        HC_FAIL(err, HC_ERR_ARG, "quantize: bad shape (%lld, %lld, %lld)", (long long)e,
                (long long)n, (long long)k);
    if (d->group_size < HC_QUANT_GROUP_TENSOR || d->group_size_n < 0)
        HC_FAIL(err, HC_ERR_ARG, "quantize: bad group size %d x %d", d->group_size_n,
                d->group_size);
    if (d->group_size > 0 && k % d->group_size != 0)
        HC_FAIL(err, HC_ERR_ARG, "quantize: K = %lld is not a multiple of group size %d",
                (long long)k, d->group_size);
    int64_t ns = d->group_size_n > 0 ? n / d->group_size_n : n;
    if (d->group_size_n > 0 && n % d->group_size_n != 0)
        HC_FAIL(err, HC_ERR_ARG, "quantize: N = %lld is not a multiple of group_size_n %d",
                (long long)n, d->group_size_n);
    if (k * bits % 32 != 0)
        HC_FAIL(err, HC_ERR_ARG, "quantize: K * bits = %lld is not a multiple of 32",
                (long long)(k * bits));
    if (d->zero_point == HC_ZP_INT && ns * bits % 32 != 0)
        HC_FAIL(err, HC_ERR_ARG, "quantize: integer zero points need scale rows * bits "
                "(%lld) to be a multiple of 32", (long long)(ns * bits));
    return HC_OK;
}

hc_status hc_quant_check(const hc_quant_desc *d, int64_t e, int64_t n, int64_t k, hc_error *err)
{
    if (!d) HC_FAIL(err, HC_ERR_ARG, "quantize: no description");
    HC_TRY(check_weight(d, err));
    int bits = hc_format_get(d->weight_format)->bits;
    HC_TRY(check_scales(d, bits, err));
    return check_shape(d, bits, e, n, k, err);
}

static hc_status nonfinite_error(double v, int64_t first, int64_t n, int64_t k, hc_error *err)
{
    HC_FAIL(err, HC_ERR_FORMAT, "quantize: non-finite weight %g at expert %lld, row %lld, "
            "column %lld", v, (long long)(first / (n * k)), (long long)(first / k % n),
            (long long)(first % k));
}

/* Rejects NaN/Inf, naming the first one's position. */
static hc_status check_finite(int isa, const float *w, int64_t e, int64_t n, int64_t k,
                              hc_error *err)
{
    int64_t first = INT64_MAX;
#pragma omp parallel for reduction(min : first) schedule(static) if (HC_PARALLEL(e * n * k))
    for (int64_t row = 0; row < e * n; row++) {
        int64_t i = hq_first_nonfinite(isa, w + row * k, k);
        if (i < k && row * k + i < first) first = row * k + i;
    }
    if (first == INT64_MAX) return HC_OK;
    return nonfinite_error((double)w[first], first, n, k, err);
}

static hq_geom make_geom(const hc_quant_desc *d, int64_t n, int64_t k)
{
    hq_geom g = {n, k, 1, k, n, 1};
    if (d->group_size == HC_QUANT_GROUP_TENSOR) {
        g.gn = n;
        g.ns = 1;
        return g;
    }
    if (d->group_size > 0) g.gk = d->group_size;
    if (d->group_size_n > 0) g.gn = d->group_size_n;
    g.ns = n / g.gn;
    g.g = k / g.gk;
    return g;
}

/* Where the rows come from: w (E, N, K) float32, or fn row by row. */
typedef struct {
    const float *w;
    hc_quant_row_fn fn;
    void *ctx;
} hq_src;

static const float *src_row(const hq_src *src, int64_t row, int64_t k, float *buf)
{
    return src->w ? src->w + row * k : src->fn(src->ctx, row, buf);
}

/* Copies group idx of one expert into buf (gn rows of gk). */
static void gather(const hq_geom *q, const float *w, int64_t idx, float *buf)
{
    int64_t r0 = idx / q->g * q->gn, c0 = idx % q->g * q->gk;
    for (int64_t i = 0; i < q->gn; i++)
        memcpy(buf + i * q->gk, w + (r0 + i) * q->k + c0, (size_t)q->gk * sizeof *buf);
}

static void scatter(const hq_geom *q, uint8_t *codes, int64_t idx, const uint8_t *buf)
{
    int64_t r0 = idx / q->g * q->gn, c0 = idx % q->g * q->gk;
    for (int64_t i = 0; i < q->gn; i++)
        memcpy(codes + (r0 + i) * q->k + c0, buf + i * q->gk, (size_t)q->gk);
}

/* The RTN float32 scale of every group of one expert's weights w into
 * raw[ns * g]. */
static hc_status raw_scales(const hq_ctx *c, const hq_geom *q, const float *w, float *raw,
                            hc_error *err)
{
    int64_t ng = q->ns * q->g, gsz = q->gn * q->gk;
    int nomem = 0;
#pragma omp parallel reduction(| : nomem) if (HC_PARALLEL(ng * gsz))
    {
        float *buf = malloc((size_t)gsz * sizeof *buf);
        nomem |= buf == NULL;
#pragma omp for schedule(static)
        for (int64_t idx = 0; idx < ng; idx++) {
            if (!buf) continue;
            float mx, mn;
            gather(q, w, idx, buf);
            hq_stats_isa(c->isa, buf, gsz, &mx, &mn);
            raw[idx] = hq_raw_scale(c, mx, mn);
        }
        free(buf);
    }
    if (nomem) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating quantize scratch");
    return HC_OK;
}

/* raw_scales of every expert from a row source (groups along K only): each
 * row converted once; *nonfinite = first NaN/Inf (INT64_MAX if none), whose
 * rows are skipped. */
static hc_status raw_scales_rows(const hq_ctx *c, const hq_geom *q, const hq_src *src,
                                 int64_t rows, float *raw, int64_t *nonfinite, hc_error *err)
{
    int64_t first = INT64_MAX;
    int nomem = 0;
#pragma omp parallel reduction(min : first) reduction(| : nomem) if (HC_PARALLEL(rows * q->k))
    {
        float *buf = malloc((size_t)q->k * sizeof *buf);
        nomem |= buf == NULL;
#pragma omp for schedule(static)
        for (int64_t row = 0; row < rows; row++) {
            if (!buf) continue;
            const float *x = src_row(src, row, q->k, buf);
            int64_t i = hq_raw_row(c, x, q->g, q->gk, raw + row * q->g);
            if (i < q->k && row * q->k + i < first) first = row * q->k + i;
        }
        free(buf);
    }
    if (nomem) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating quantize scratch");
    *nonfinite = first;
    return HC_OK;
}

/* Second scales into s2 (E values for a tensor one, E * N for a channel
 * one) from the RTN scales raw (E * ns * g, filled here) of all experts (the
 * tensor rule looks at every expert); the channel ones are also stored in
 * the model dtype. */
static hc_status second_scales(const hq_ctx *c, const hq_geom *q, const hq_src *src,
                               hc_quant_result *r, float *s2, float *raw, hc_error *err)
{
    int64_t E = r->experts, ng = q->ns * q->g, nonfinite = INT64_MAX;
    hc_status st = HC_OK;
    if (!src->w) st = raw_scales_rows(c, q, src, E * q->n, raw, &nonfinite, err);
    for (int64_t e = 0; src->w && e < E && st == HC_OK; e++)
        st = raw_scales(c, q, src->w + e * q->n * q->k, raw + e * ng, err);
    if (st == HC_OK && nonfinite != INT64_MAX) { /* the value, for the message */
        float *buf = malloc((size_t)q->k * sizeof *buf);
        st = buf ? nonfinite_error((double)src_row(src, nonfinite / q->k, q->k, buf)[nonfinite % q->k],
                                   nonfinite, q->n, q->k, err)
                 : hc_error_set(err, HC_ERR_NOMEM, "out of memory allocating quantize scratch");
        free(buf);
    }
    if (st == HC_OK && c->d.global_scale) {
        hq_tensor_scale2(c, raw, E, ng, s2);
        memcpy(r->global_scale, s2, (size_t)E * sizeof *s2);
    } else if (st == HC_OK) {
        hq_channel_scale2(c, raw, E * q->n, q->g, s2);
        for (int64_t i = 0; i < E * q->n; i++)
            r->scale_2[i] = c->d.scale_2_format == HC_FMT_F16 ? hc_f32_to_f16(s2[i])
                                                              : hc_f32_to_bf16(s2[i]);
    }
    return st;
}

/* The second scale over group idx of expert e. */
static hq_s2 group_s2(const hq_ctx *c, const hq_geom *q, const hc_quant_result *r,
                      const float *s2, int64_t e, int64_t idx)
{
    hq_s2 v = {1.0f, 1.0};
    if (c->d.global_scale) {
        v.div = s2[e];
        v.mul = s2[e];
    } else if (c->d.scale_2_channel) {
        int64_t row = e * q->n + idx / q->g;
        v.div = s2[row];
        v.mul = hc_quant_scale_value(c->d.scale_2_format, r->scale_2[row]);
    }
    return v;
}

/* RTN parameters and codes, or the best clip ratio by squared error (ratio
 * 1.0, the RTN result, first; a candidate replaces it only when strictly
 * better, so MSE is never worse than RTN on any group). */
static void choose(const hq_ctx *c, const float *x, int64_t n, const hq_s2 *s2, hq_group *best,
                   uint8_t *bc, uint8_t *tmp)
{
    float mx, mn; /* the statistics once, for every clip ratio */
    hq_stats_isa(c->isa, x, n, &mx, &mn);
    hq_group_params_stats(c, mx, mn, 1.0f, s2, best);
    hq_group_codes(c, best, x, n, bc);
    if (c->d.quantizer != HC_QUANTIZER_MSE || best->bad) return;
    double be = hq_group_sqerr(c, best, x, bc, n);
    for (int i = 1; i < HQ_MSE_STEPS; i++) {
        hq_group g;
        hq_group_params_stats(c, mx, mn, 1.0f - 0.01f * (float)i, s2, &g);
        if (g.bad) continue;
        hq_group_codes(c, &g, x, n, tmp);
        double e = hq_group_sqerr(c, &g, x, tmp, n);
        if (e < be) {
            be = e;
            *best = g;
            memcpy(bc, tmp, (size_t)n);
        }
    }
}

typedef struct {
    uint8_t *codes8;  /* (E, N, K) one code per byte */
    uint8_t *zq;      /* (E, NS, G) integer zero points, or NULL */
    hc_quant_result *r;
} hq_sink;

static void store_group(const hq_ctx *c, hq_sink *s, int64_t e, int64_t idx, const hq_group *g)
{
    hc_quant_result *r = s->r;
    int64_t gi = e * r->group_rows * r->groups + idx;
    if (c->tensor) r->global_scale[e] = (float)g->val;
    uint8_t *p = r->scales ? r->scales + gi * r->scale_bytes : NULL;
    switch (p ? r->scale_bytes : 0) { /* little-endian, in stores of constant width */
    case 4:
        p[3] = (uint8_t)(g->scale_bits >> 24);
        p[2] = (uint8_t)(g->scale_bits >> 16);
        /* fall through */
    case 2: p[1] = (uint8_t)(g->scale_bits >> 8); /* fall through */
    case 1: p[0] = (uint8_t)g->scale_bits; break;
    default:
        for (int b = 0; p && b < r->scale_bytes; b++) p[b] = (uint8_t)(g->scale_bits >> (8 * b));
    }
    if (s->zq) s->zq[gi] = (uint8_t)g->zq;
    if (r->zero_points_f) r->zero_points_f[gi] = g->zf_bits;
}

/* Quantizes every group of expert e under the second scales s2 (NULL if
 * none); *bad = first group whose stored scale is not finite (INT64_MAX if
 * none). */
static hc_status quantize_expert(const hq_ctx *c, const hq_geom *q, const float *w, int64_t e,
                                 const float *s2, hq_sink *s, int64_t *bad, hc_error *err)
{
    int64_t ng = q->ns * q->g, gsz = q->gn * q->gk, first = INT64_MAX;
    int nomem = 0;
#pragma omp parallel reduction(min : first) reduction(| : nomem) if (HC_PARALLEL(ng * gsz))
    {
        float *buf = malloc((size_t)gsz * sizeof *buf);
        uint8_t *bc = malloc((size_t)gsz), *tmp = malloc((size_t)gsz);
        nomem |= !buf || !bc || !tmp;
#pragma omp for schedule(dynamic, 16)
        for (int64_t idx = 0; idx < ng; idx++) {
            if (!buf || !bc || !tmp) continue;
            hq_group g;
            hq_s2 gs2 = group_s2(c, q, s->r, s2, e, idx);
            gather(q, w, idx, buf);
            choose(c, buf, gsz, &gs2, &g, bc, tmp);
            if (g.bad && idx < first) first = idx;
            store_group(c, s, e, idx, &g);
            scatter(q, s->codes8 + e * q->n * q->k, idx, bc);
        }
        free(buf);
        free(bc);
        free(tmp);
    }
    if (nomem) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating quantize scratch");
    *bad = first;
    return HC_OK;
}

/* The refusal of group idx of expert e, whose gn x gk values are x. */
static hc_status bad_group_error(const hq_ctx *c, const hq_geom *q, const float *x,
                                 const hc_quant_result *r, const float *s2, int64_t e,
                                 int64_t idx, hc_error *err)
{
    hq_group g;
    hq_s2 gs2 = group_s2(c, q, r, s2, e, idx);
    hq_group_params(c, x, q->gn * q->gk, 1.0f, &gs2, &g);
    HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: scale %g of group (expert %lld, scale row %lld, "
            "group %lld) does not fit %s; use a wider scale format or a global scale",
            (double)g.s, (long long)e, (long long)(idx / q->g), (long long)(idx % q->g),
            hc_format_get(c->d.scale_format)->name);
}

static hc_status bad_scale_error(const hq_ctx *c, const hq_geom *q, const float *w,
                                 const hc_quant_result *r, const float *s2, int64_t e,
                                 int64_t idx, hc_error *err)
{
    float *buf = malloc((size_t)(q->gn * q->gk) * sizeof *buf);
    HC_CHECK_ALLOC(err, buf, "quantize scratch");
    gather(q, w, idx, buf);
    hc_status st = bad_group_error(c, q, buf, r, s2, e, idx, err);
    free(buf);
    return st;
}

/* The groups of global row `row` (group_size_n 1: they lie side by side in
 * x); codes into bc, the first bad group's global index into *bad. */
static void quantize_row(const hq_ctx *c, const hq_geom *q, const float *x, int64_t row,
                         const float *s2, hq_sink *s, uint8_t *bc, uint8_t *tmp, int64_t *bad)
{
    int64_t e = row / q->n, r = row % q->n;
    for (int64_t gi = 0; gi < q->g; gi++) {
        int64_t idx = r * q->g + gi;
        hq_s2 gs2 = group_s2(c, q, s->r, s2, e, idx);
        hq_group g;
        choose(c, x + gi * q->gk, q->gk, &gs2, &g, bc + gi * q->gk, tmp);
        if (g.bad && row * q->g + gi < *bad) *bad = row * q->g + gi;
        store_group(c, s, e, idx, &g);
    }
}

/* RTN over global row `row`: its first NaN/Inf into *nonfinite (returns 0),
 * or the groups stored, codes into bc, the first bad group into *bad
 * (returns 1); g holds q->g groups. */
static int rtn_row(const hq_ctx *c, const hq_geom *q, const float *x, int64_t row,
                    const float *s2, const float *raw, hq_sink *s, hq_group *g, uint8_t *bc,
                    int64_t *bad, int64_t *nonfinite)
{
    int64_t e = row / q->n, r = row % q->n;
    hq_s2 gs2 = group_s2(c, q, s->r, s2, e, r * q->g); /* the same over a row */
    int64_t i = hq_rtn_row(c, x, q->g, q->gk, &gs2, raw ? raw + row * q->g : NULL, g, bc);
    if (i < q->k) {
        if (row * q->k + i < *nonfinite) *nonfinite = row * q->k + i;
        return 0;
    }
    for (int64_t gi = 0; gi < q->g; gi++) {
        if (g[gi].bad && row * q->g + gi < *bad) *bad = row * q->g + gi;
        store_group(c, s, e, r * q->g + gi, &g[gi]);
    }
    return 1;
}

/* After the row pass: the first NaN/Inf, else the first group whose scale
 * does not fit (both global indices, INT64_MAX if none). */
static hc_status rows_verdict(const hq_ctx *c, const hq_geom *q, const hq_src *src,
                              const float *s2, hq_sink *s, int64_t nonfinite, int64_t bad,
                              hc_error *err)
{
    if (nonfinite == INT64_MAX && bad == INT64_MAX) return HC_OK;
    float *buf = malloc((size_t)q->k * sizeof *buf);
    HC_CHECK_ALLOC(err, buf, "quantize scratch");
    hc_status st;
    if (nonfinite != INT64_MAX) {
        const float *x = src_row(src, nonfinite / q->k, q->k, buf);
        st = nonfinite_error((double)x[nonfinite % q->k], nonfinite, q->n, q->k, err);
    } else {
        int64_t row = bad / q->g, e = row / q->n, idx = bad % (q->n * q->g);
        const float *x = src_row(src, row, q->k, buf);
        st = bad_group_error(c, q, x + bad % q->g * q->gk, s->r, s2, e, idx, err);
    }
    free(buf);
    return st;
}

/* Groups along K only: one pass per row, which is read (or converted) once,
 * checked finite, quantized group by group and packed straight into the
 * output words; per-thread scratch of one row. raw: NULL, or the RTN scales
 * second_scales took from the same rows (hq_rtn_row). */
static hc_status quantize_rows(const hq_ctx *c, const hq_geom *q, const hq_src *src,
                               const float *s2, const float *raw, hq_sink *s, hc_error *err)
{
    int64_t rows = s->r->experts * q->n, words = q->k * c->bits / 32;
    int64_t bad = INT64_MAX, nonfinite = INT64_MAX;
    /* chunks of ~1 MiB of 16-bit source: a thread slowed by another (the
     * writer's) takes fewer instead of the others waiting for it at the
     * end; long enough for the row source's blocks of consecutive rows */
    const int64_t chunk = q->k < (1 << 15) ? (1 << 19) / q->k : 16;
    (void)chunk; /* read by the pragma only, where OpenMP is built (not in the fuzz targets) */
    int nomem = 0;
#pragma omp parallel reduction(min : bad, nonfinite) reduction(| : nomem) \
    if (HC_PARALLEL(rows * q->k))
    {
        float *buf = src->w ? NULL : malloc((size_t)q->k * sizeof *buf);
        uint8_t *bc = malloc((size_t)q->k), *tmp = malloc((size_t)q->gk);
        hq_group *g = malloc((size_t)q->g * sizeof *g);
        int ok = bc && tmp && g && (src->w || buf);
        nomem |= !ok;
#pragma omp for schedule(dynamic, chunk)
        for (int64_t row = 0; row < rows; row++) {
            if (!ok) continue;
            const float *x = src_row(src, row, q->k, buf);
            if (c->d.quantizer == HC_QUANTIZER_RTN) {
                if (rtn_row(c, q, x, row, s2, raw, s, g, bc, &bad, &nonfinite))
                    hq_pack_row_isa(c->isa, bc, q->k, c->bits, s->r->codes + row * words);
                continue;
            }
            int64_t i = hq_first_nonfinite(c->isa, x, q->k);
            if (i < q->k) {
                if (row * q->k + i < nonfinite) nonfinite = row * q->k + i;
                continue;
            }
            quantize_row(c, q, x, row, s2, s, bc, tmp, &bad);
            hq_pack_row_isa(c->isa, bc, q->k, c->bits, s->r->codes + row * words);
        }
        free(buf);
        free(bc);
        free(tmp);
        free(g);
    }
    if (nomem) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating quantize scratch");
    return rows_verdict(c, q, src, s2, s, nonfinite, bad, err);
}

void hc_quant_result_free(hc_quant_result *r)
{
    if (!r) return;
    if (!r->codes_view) free(r->codes);
    free(r->scales);
    free(r->zero_points);
    free(r->zero_points_f);
    free(r->global_scale);
    free(r->scale_2);
    memset(r, 0, sizeof *r);
}

/* Groups along K only (group_size_n 1, not tensor granularity): the
 * quantize_rows pass. */
static int row_groups(const hq_ctx *c, const hq_geom *q)
{
    return q->gn == 1 && !c->tensor;
}

static hc_status alloc_result(const hq_ctx *c, const hq_geom *q, int64_t e, hc_bufpool *pool,
                              hc_quant_result *r, hc_error *err)
{
    int64_t ngroups = e * q->ns * q->g;
    r->desc = c->d;
    r->experts = e;
    r->n = q->n;
    r->k = q->k;
    r->bits = c->bits;
    r->group_rows = q->ns;
    r->group_cols = q->gk;
    r->groups = q->g;
    r->zp_float_format = c->d.scale_format == HC_FMT_F16 ? HC_FMT_F16 : HC_FMT_BF16;
    size_t code_bytes = (size_t)(e * q->n * q->k * c->bits / 32) * sizeof *r->codes;
    /* the row pass writes every word (or fails and frees them): no zeroing */
    r->codes = row_groups(c, q) ? hc_bufpool_take(pool, code_bytes)
                                : hc_bufpool_calloc(pool, code_bytes);
    HC_CHECK_ALLOC(err, r->codes, "quantized codes");
    if (!c->tensor) {
        r->scale_bytes = hc_quant_scale_bytes(c->d.scale_format);
        r->scales = calloc((size_t)ngroups, (size_t)r->scale_bytes);
        HC_CHECK_ALLOC(err, r->scales, "scales");
    }
    if (c->tensor || c->d.global_scale) {
        r->global_scale = calloc((size_t)e, sizeof *r->global_scale);
        HC_CHECK_ALLOC(err, r->global_scale, "global scales");
    }
    if (c->d.scale_2_channel) {
        r->scale_2 = calloc((size_t)(e * q->n), sizeof *r->scale_2);
        HC_CHECK_ALLOC(err, r->scale_2, "channel second scales");
    }
    if (c->d.zero_point == HC_ZP_INT) {
        r->zero_points = calloc((size_t)(ngroups * c->bits / 32), sizeof *r->zero_points);
        HC_CHECK_ALLOC(err, r->zero_points, "zero points");
    }
    if (c->d.zero_point == HC_ZP_FLOAT) {
        r->zero_points_f = calloc((size_t)ngroups, sizeof *r->zero_points_f);
        HC_CHECK_ALLOC(err, r->zero_points_f, "float zero points");
    }
    return HC_OK;
}

/* Integer zero points (E, NS, G) -> packed along NS: (E, NS*b/32, G). */
static hc_status pack_zero_points(hc_quant_result *r, const uint8_t *zq, hc_error *err)
{
    int64_t ns = r->group_rows, G = r->groups, wpc = ns * r->bits / 32;
    uint8_t *col = malloc((size_t)ns);
    uint32_t *words = malloc((size_t)wpc * sizeof *words);
    if (!col || !words) {
        free(col);
        free(words);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating zero-point packing");
    }
    for (int64_t e = 0; e < r->experts; e++)
        for (int64_t g = 0; g < G; g++) {
            for (int64_t i = 0; i < ns; i++) col[i] = zq[(e * ns + i) * G + g];
            hc_pack_rows(col, 1, ns, r->bits, words);
            for (int64_t w = 0; w < wpc; w++) r->zero_points[(e * wpc + w) * G + g] = words[w];
        }
    free(col);
    free(words);
    return HC_OK;
}

/* A stored channel second scale that is not finite (fp16 model dtype). */
static hc_status check_scale_2_rows(const hc_quant_result *r, hc_error *err)
{
    for (int64_t i = 0; r->scale_2 && i < r->experts * r->n; i++)
        if (!isfinite(hc_quant_scale_value(r->desc.scale_2_format, r->scale_2[i])))
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "quantize: channel second scale of (expert %lld, "
                    "row %lld) does not fit %s", (long long)(i / r->n), (long long)(i % r->n),
                    hc_format_get(r->desc.scale_2_format)->name);
    return HC_OK;
}

/* Every expert's groups; the raw scales of the second-scale pass in a buffer
 * of the pool (NULL: malloc), given back at the end. */
static hc_status run_experts(const hq_ctx *c, const hq_geom *q, const hq_src *src, hq_sink *s,
                             hc_bufpool *pool, hc_error *err)
{
    hc_quant_result *r = s->r;
    float *s2 = NULL, *raw = NULL;
    const size_t raw_bytes = (size_t)(r->experts * q->ns * q->g) * sizeof *raw;
    if (c->d.global_scale || c->d.scale_2_channel) {
        s2 = malloc((size_t)(c->d.global_scale ? r->experts : r->experts * q->n) * sizeof *s2);
        raw = hc_bufpool_take(pool, raw_bytes);
        if (!s2 || !raw) {
            free(s2);
            free(raw);
            HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating second scales");
        }
    }
    hc_status st = s2 ? second_scales(c, q, src, r, s2, raw, err) : HC_OK;
    if (st == HC_OK) st = check_scale_2_rows(r, err);
    /* the RTN row pass takes the raw scales again (its statistics skipped) */
    const float *rtn_raw = c->d.quantizer == HC_QUANTIZER_RTN ? raw : NULL;
    if (st == HC_OK && row_groups(c, q)) st = quantize_rows(c, q, src, s2, rtn_raw, s, err);
    if (raw) hc_bufpool_put(pool, raw, raw_bytes);
    for (int64_t e = 0; !row_groups(c, q) && e < r->experts && st == HC_OK; e++) {
        const float *we = src->w + e * q->n * q->k;
        int64_t bad = INT64_MAX;
        st = quantize_expert(c, q, we, e, s2, s, &bad, err);
        if (st == HC_OK && bad != INT64_MAX) st = bad_scale_error(c, q, we, r, s2, e, bad, err);
    }
    free(s2);
    return st;
}

/* Scratch of the group-at-a-time path: codes one per byte, integer zero points. */
static hc_status alloc_sink(const hq_ctx *c, const hq_geom *q, int64_t e, hq_sink *s,
                            hc_error *err)
{
    if (!row_groups(c, q)) s->codes8 = malloc((size_t)(e * q->n * q->k));
    if (c->d.zero_point == HC_ZP_INT) s->zq = malloc((size_t)(e * q->ns * q->g));
    if ((!row_groups(c, q) && !s->codes8) || (c->d.zero_point == HC_ZP_INT && !s->zq))
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating quantize codes");
    return HC_OK;
}

static hc_status quantize_src(const hc_quant_desc *d, const hq_src *src, int64_t e, int64_t n,
                              int64_t k, int isa, hc_bufpool *pool, hc_quant_result *out,
                              hc_error *err)
{
    if (!out) HC_FAIL(err, HC_ERR_ARG, "quantize: missing output");
    memset(out, 0, sizeof *out);
    HC_TRY(hc_quant_check(d, e, n, k, err));
    hq_ctx c;
    hq_ctx_init(&c, d, isa);
    hq_geom q = make_geom(d, n, k);
    int s2 = d->global_scale || d->scale_2_channel;
    if (!src->w && !row_groups(&c, &q))
        HC_FAIL(err, HC_ERR_ARG, "quantize: a row source takes groups along K only");
    /* the row passes check their rows themselves; the group path reads every row first */
    if (src->w && (!row_groups(&c, &q) || s2)) HC_TRY(check_finite(isa, src->w, e, n, k, err));
    hq_sink s = {NULL, NULL, out};
    hc_status st = alloc_result(&c, &q, e, pool, out, err);
    if (st == HC_OK) st = alloc_sink(&c, &q, e, &s, err);
    if (st == HC_OK) st = run_experts(&c, &q, src, &s, pool, err);
    if (st == HC_OK && s.codes8) hc_pack_rows(s.codes8, e * n, k, c.bits, out->codes);
    if (st == HC_OK && s.zq) st = pack_zero_points(out, s.zq, err);
    free(s.codes8);
    free(s.zq);
    if (st != HC_OK) hc_quant_result_free(out);
    return st;
}

hc_status hq_quantize_isa(const hc_quant_desc *d, const float *w, int64_t e, int64_t n,
                          int64_t k, int isa, hc_quant_result *out, hc_error *err)
{
    if (!w) HC_FAIL(err, HC_ERR_ARG, "quantize: missing input");
    hq_src src = {w, NULL, NULL};
    return quantize_src(d, &src, e, n, k, isa, NULL, out, err);
}

hc_status hc_quantize(const hc_quant_desc *d, const float *w, int64_t e, int64_t n, int64_t k,
                      hc_quant_result *out, hc_error *err)
{
    return hq_quantize_isa(d, w, e, n, k, hq_isa_detect(), out, err);
}

int hc_quant_rows_ok(const hc_quant_desc *d)
{
    return d->group_size != HC_QUANT_GROUP_TENSOR && d->group_size_n <= 1;
}

hc_status hc_quantize_rows_pool(const hc_quant_desc *d, hc_quant_row_fn fn, void *ctx, int64_t e,
                                int64_t n, int64_t k, hc_bufpool *pool, hc_quant_result *out,
                                hc_error *err)
{
    if (!fn) HC_FAIL(err, HC_ERR_ARG, "quantize: missing input");
    hq_src src = {NULL, fn, ctx};
    return quantize_src(d, &src, e, n, k, hq_isa_detect(), pool, out, err);
}

hc_status hc_quantize_rows(const hc_quant_desc *d, hc_quant_row_fn fn, void *ctx, int64_t e,
                           int64_t n, int64_t k, hc_quant_result *out, hc_error *err)
{
    return hc_quantize_rows_pool(d, fn, ctx, e, n, k, NULL, out, err);
}
