/* hc_quant_int.c - Humming's integer quantizer (humming-kernels 0.1.19,
 * quant_weight.cuh): symmetric scales with the negative scale of
 * positive-dominant groups, integer and float zero points, codes. */
#include <math.h>

#include "hc_quant_internal.h"

/* Symmetric: s = max(amax/(D+1), amin/D), each quotient taken in double and
 * rounded once to float32, as the kernel's float/double expression does; for
 * 1-bit weights (D = 0, no positive code) amax/(D+1.499) and amin/(D+0.499),
 * which send the positive side to code 0 and the negative side to -1.
 * Negative when the positive side dominates. */
/* fmaxf / fminf of values that are never NaN (group statistics of checked
 * inputs: mx >= 1e-30, |mn| >= 0) and never +0 against -0: the same value,
 * without the libm call fmaxf is on x86-64 (3% of a w4a16 run). */
static float max_nn(float a, float b) { return a > b ? a : b; }
static float min_nn(float a, float b) { return a < b ? a : b; }

float hq_int_sym_scale(const hq_ctx *c, float mx, float mn)
{
    float amax = max_nn(mx, fabsf(mn)), amin = min_nn(mx, fabsf(mn));
    int one_bit = c->bits == 1;
    float s1 = (float)((double)amax / (c->dmax + (one_bit ? 1.499 : 1.0)));
    float s2 = (float)((double)amin / (c->dmax + (one_bit ? 0.499 : 0.0)));
    float s = max_nn(s1, s2);
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

/* Zero point of a group from its scale g->s: zf = f32(-mn / s). An integer
 * zero point is rne(zf) (Humming does not clamp it: 0 <= zf <= 2^b-1 up to
 * rounding) and the codes are then taken from mn' = f32(z * -s); a float zero
 * point is zf cast to fp16 (fp16 scales) or bf16 (any other scale format) and
 * the codes are taken from mn itself. */
void hq_zp_params(const hq_ctx *c, float mn, hq_group *g)
{
    float zf = -mn / g->s;
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
 * q = rne(f32(f32(x - mn') * inv)); inv = f32(1 / s); clamped to 0..2^b-1.
 * The symmetric clamp triggers for RTN only with e8m0 scales (a
 * positive-dominant group whose scale lost its sign) and for clipped MSE
 * candidates. Where mn' or x - mn' overflows float32 (|x| near FLT_MAX, for
 * which Humming's own scale is already inf) x - mn' is taken in double. */
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
    double mn_wide = c->d.zero_point == HC_ZP_INT ? -(double)g->zq * g->s : g->mn_eff;
    for (int64_t i = 0; i < n; i++) {
        float d = x[i] - g->mn_eff;
        if (isinf(d)) codes[i] = (uint8_t)clamp_code(nearbyint(((double)x[i] - mn_wide) * inv),
                                                     c->qlo, c->qhi);
        else codes[i] = (uint8_t)clamp_code(nearbyintf(d * inv), c->qlo, c->qhi);
    }
}
