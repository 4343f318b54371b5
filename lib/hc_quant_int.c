/* hc_quant_int.c - Humming's integer quantizer (spec 2.3 items 2-4, 2.4):
 * symmetric scales with the double-precision 1.499 / 0.499 constants and the
 * negative scale of positive-dominant groups, integer and float zero points. */
#include <math.h>

#include "hc_quant_internal.h"

/* Symmetric: s = max(amax/(D+1.499), amin/(D+0.499)) each rounded once from
 * double; negative when the positive side dominates. */
float hq_int_sym_scale(const hq_ctx *c, float mx, float mn)
{
    float amax = fmaxf(mx, fabsf(mn)), amin = fminf(mx, fabsf(mn));
    float s1 = (float)((double)amax / (c->dmax + 1.499));
    float s2 = (float)((double)amin / (c->dmax + 0.499));
    float s = fmaxf(s1, s2);
    return mx > fabsf(mn) ? -s : s;
}

/* Asymmetric: s = f32(f32(mx - mn) / (2^b - 1)). Where mx - mn overflows
 * float32 (Humming would give inf and NaN codes) the difference is taken in
 * double instead (documented deviation). */
float hq_int_zp_scale(const hq_ctx *c, float mx, float mn)
{
    float range = mx - mn;
    float levels = (float)(2.0 * c->dmax + 1.0);
    if (isinf(range)) return (float)(((double)mx - (double)mn) / levels);
    return range / levels;
}

static int32_t clamp_code(double q, int32_t lo, int32_t hi)
{
    if (!(q >= lo)) return lo; /* also catches NaN, which cannot occur */
    if (q > hi) return hi;
    return (int32_t)q;
}

/* Zero point of a group. Humming mode: zf = f32(-mn/s) from the float32 scale,
 * int zp rounded (RNE) and mn' = f32(z * -s); float zp keeps mn. Effective
 * and MX modes derive it from the stored step g->val instead. */
void hq_zp_params(const hq_ctx *c, float mx, float mn, hq_group *g)
{
    (void)mx;
    float zf;
    if (c->mode == HQ_HUMMING) {
        zf = -mn / g->s;
    } else {
        zf = g->val != 0 ? (float)(-(double)mn / g->val) : 0.0f;
    }
    if (c->d.zero_point == HC_ZP_INT) {
        g->zq = clamp_code(nearbyintf(zf), c->qlo, c->qhi);
        g->zp_val = g->zq;
        g->mn_eff = (float)g->zq * -g->s;
    } else {
        hq_store_zp_float(c->d.scale_format == HC_FMT_F16 ? HC_FMT_F16 : HC_FMT_BF16, zf, g);
        g->mn_eff = mn;
    }
}

/* Humming codes: symmetric q = rne(f32(x * inv)) + 2^(b-1); with a zero point
 * q = rne(f32(f32(x - mn') * inv)) clamped to 0..2^b-1. The clamp of the
 * symmetric case never triggers for RTN (spec 2.3) but does for clipped MSE
 * candidates. */
void hq_int_codes_humming(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                          uint8_t *codes)
{
    float inv = 1.0f / g->s;
    if (c->d.zero_point == HC_ZP_NONE) {
        for (int64_t i = 0; i < n; i++) {
            float q = nearbyintf(x[i] * inv);
            codes[i] = (uint8_t)clamp_code((double)q + c->offset, c->qlo, c->qhi);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float d = x[i] - g->mn_eff;
        codes[i] = (uint8_t)clamp_code(nearbyintf(d * inv), c->qlo, c->qhi);
    }
}
