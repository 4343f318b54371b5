/* hc_quant_group.c - one group: statistics, scale, storage of scale and zero
 * point, codes and squared error. Dispatches to the per-kind rules. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "hc_quant_internal.h"

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* An 8-bit float scale format (not e8m0) encoded on float32 bits and decoded
 * by a table (c->scale8): hc_format_encode / decode per group (frexp, ldexp)
 * were a quarter of an NVFP4 run. */
static void scale_tables(hq_ctx *c, hc_format_id sf)
{
    const hc_format_info *f = hc_format_get(sf);
    if (!f || f->kind != HC_KIND_FLOAT || f->bits > 8 || f->specials == HC_SPECIAL_E8M0 ||
        f->man_bits < 1 || f->man_bits > 22 || 1 - f->bias < -126 || f->bias < 1)
        return;
    uint32_t codes = 1u << f->bits, mags = f->is_signed ? codes / 2 : codes;
    for (uint32_t b = 0; b < codes; b++) c->sdec[b] = hc_format_decode(sf, b);
    /* the largest finite magnitude code, all below it finite and increasing */
    c->smax = 0;
    for (uint32_t m = 1; m < mags && isfinite(c->sdec[m]) && c->sdec[m] > c->sdec[m - 1]; m++)
        c->smax = m;
    c->ssign = f->is_signed ? codes / 2 : 0;
    c->sman = f->man_bits;
    c->semin = 1 - f->bias;
    c->ssub = (float)ldexp(1.0, c->sman - c->semin);
    c->snorm = (float)ldexp(1.0, c->semin);
    c->slimit = (float)c->sdec[c->smax];
    c->scale8 = c->sdec[0] == 0.0 && c->smax > 0 && (double)c->slimit == c->sdec[c->smax];
}

/* hc_format_encode(sf, v) for |v| below the largest finite value (the rest:
 * the codec): the nearest code, ties to the even code, which is float32's
 * round-to-nearest-even of v to the format's mantissa bits (normal range)
 * or to multiples of its smallest subnormal. */
static uint32_t encode_scale8(const hq_ctx *c, hc_format_id sf, float v)
{
    float a = fabsf(v);
    if (!(a < c->slimit)) return hc_format_encode(sf, v); /* NaN, Inf, overflow */
    uint32_t m, u = f32_bits(a), M = (uint32_t)c->sman;
    if (a < c->snorm) { /* subnormal: a * 2^(M - emin) < 2^M, exact */
        float t = a * c->ssub;
        m = (uint32_t)((t + 0x1p23f) - 0x1p23f); /* round half to even */
    } else {
        uint32_t r = u + ((1u << (22 - M)) - 1u) + ((u >> (23 - M)) & 1u);
        int e = (int)(r >> 23) - 127; /* after a carry into the exponent */
        m = ((uint32_t)(e - c->semin + 1) << M) | ((r >> (23 - M)) & ((1u << M) - 1u));
    }
    return m | (c->ssign && signbit(v) ? c->ssign : 0);
}

void hq_ctx_init(hq_ctx *c, const hc_quant_desc *d, int isa)
{
    memset(c, 0, sizeof *c);
    c->d = *d;
    c->isa = isa;
    c->wf = hc_format_get(d->weight_format);
    c->e8m0 = d->group_size != HC_QUANT_GROUP_TENSOR && d->scale_format == HC_FMT_F8E8M0;
    c->is_float = c->wf->kind == HC_KIND_FLOAT;
    c->bits = c->wf->bits;
    c->tensor = d->group_size == HC_QUANT_GROUP_TENSOR;
    c->dmax = c->wf->max_value;
    c->qlo = 0;
    c->qhi = (int32_t)((1u << c->bits) - 1u);
    c->offset = c->is_float ? 0 : (int32_t)(1u << (c->bits - 1));
    for (uint32_t code = 0; code <= (uint32_t)c->qhi; code++) {
        if (c->is_float) c->lut[code] = hc_format_decode(d->weight_format, code);
        else if (d->zero_point == HC_ZP_NONE) c->lut[code] = (double)code - c->offset;
        else c->lut[code] = code;
    }
    c->lut_lo = c->lut_hi = c->lut[0];
    for (int32_t q = 1; q <= c->qhi; q++) {
        c->lut_lo = fmin(c->lut_lo, c->lut[q]);
        c->lut_hi = fmax(c->lut_hi, c->lut[q]);
    }
    scale_tables(c, d->scale_format);
}

float hq_raw_scale(const hq_ctx *c, float mx, float mn)
{
    if (c->is_float) return fmaxf(mx, fabsf(mn)) / (float)c->dmax;
    if (c->d.zero_point == HC_ZP_NONE) return hq_int_sym_scale(c, mx, mn);
    return hq_int_zp_scale(c, mx, mn);
}

void hq_store_scale(const hq_ctx *c, hc_format_id sf, float v, double mul, hq_group *g)
{
    uint32_t b;
    int table = c->scale8 && sf == c->d.scale_format;
    switch (sf) {
    case HC_FMT_F16: b = hc_f32_to_f16(v); break;
    case HC_FMT_BF16: b = hc_f32_to_bf16(v); break;
    case HC_FMT_F32: b = f32_bits(v); break;
    default: b = table ? encode_scale8(c, sf, v) : hc_format_encode(sf, v); break;
    }
    g->scale_bits = b;
    g->val = (table ? c->sdec[b & 0xFF] : hc_quant_scale_value(sf, b)) * mul;
    g->bad = !(fabs(g->val) <= FLT_MAX); /* the dequantization step is float32 */
}

void hq_store_zp_float(hc_format_id zf, float zp, hq_group *g)
{
    g->zf_bits = zf == HC_FMT_F16 ? hc_f32_to_f16(zp) : hc_f32_to_bf16(zp);
    g->zp_val = zf == HC_FMT_F16 ? hc_f16_to_f32(g->zf_bits) : hc_bf16_to_f32(g->zf_bits);
}

/* e8m0 scale as Humming's kernel makes it: |s| rounded up to a power of two
 * (float32 bits + 0x7FFFFF, exponent field kept, sign dropped); the codes
 * use the rounded scale. */
static void e8m0_scale(hq_group *g)
{
    g->scale_bits = hc_e8m0_encode_ceil(g->s);
    g->s = (float)hc_quant_scale_value(HC_FMT_F8E8M0, g->scale_bits);
    g->val = g->s;
    g->bad = !(fabs(g->val) <= FLT_MAX); /* the step must be a finite float32 */
}

/* Scale (raw float32, then e8m0-rounded or stored divided by the second
 * scale), then the zero point from the scale the codes use. Humming takes an
 * e8m0 group's zero point from the unrounded scale, which dequantization
 * with the rounded one does not undo; here it comes from the rounded scale. */
void hq_group_params(const hq_ctx *c, const float *x, int64_t n, float ratio, const hq_s2 *s2,
                     hq_group *g)
{
    float mx, mn;
    hq_stats_isa(c->isa, x, n, &mx, &mn);
    hq_group_params_stats(c, mx, mn, ratio, s2, g);
}

/* hq_group_params on the group's statistics, taken once for all clip ratios. */
void hq_group_params_stats(const hq_ctx *c, float mx, float mn, float ratio, const hq_s2 *s2,
                           hq_group *g)
{
    memset(g, 0, sizeof *g);
    mx *= ratio;
    mn *= ratio;
    g->s = hq_raw_scale(c, mx, mn);
    if (c->tensor) {
        g->scale_bits = f32_bits(g->s);
        g->val = g->s;
    } else if (c->e8m0) {
        e8m0_scale(g);
    } else {
        hq_store_scale(c, c->d.scale_format, g->s / s2->div, s2->mul, g);
    }
    if (c->d.zero_point != HC_ZP_NONE) hq_zp_params(c, mn, g);
}

/* Codes whose dequantized value would exceed float32 max (only possible for
 * inputs near FLT_MAX, where Humming's own scales are not finite) move toward
 * zero until it fits. Never changes a code whose value is finite, so it does
 * not affect bit exactness elsewhere. */
static void fix_overflow(const hq_ctx *c, const hq_group *g, int64_t n, uint8_t *codes)
{
    /* max |lut[q] - zp| over all codes: |v - zp| is largest at an end of the
     * lut's range, and rounding the differences keeps their order */
    double top = fmax(0.0, fmax(fabs(c->lut_lo - g->zp_val), fabs(c->lut_hi - g->zp_val)));
    if (top * fabs(g->val) <= FLT_MAX || !(fabs(g->val) <= FLT_MAX)) return; /* or refused */
    for (int64_t i = 0; i < n; i++) {
        double v;
        while (fabs((v = c->lut[codes[i]] - g->zp_val) * g->val) > FLT_MAX) {
            if (c->is_float) codes[i]--; /* sign-magnitude: one magnitude step down */
            else codes[i] = (uint8_t)(v > 0 ? codes[i] - 1 : codes[i] + 1);
        }
    }
}

void hq_group_codes(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                    uint8_t *codes)
{
    hq_codes_isa(c, g, x, n, codes);
    fix_overflow(c, g, n, codes);
}

double hq_group_sqerr(const hq_ctx *c, const hq_group *g, const float *x,
                      const uint8_t *codes, int64_t n)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = (c->lut[codes[i]] - g->zp_val) * g->val - (double)x[i];
        sum += d * d;
    }
    return sum;
}
