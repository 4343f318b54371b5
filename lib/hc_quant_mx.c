/* hc_quant_mx.c - OCP Microscaling (MX v1.0) e8m0 scales, and codes computed
 * from a stored ("effective") scale: MX and fp8-scale x global-scale (NVFP4).
 *
 * MX scale: 2^(floor(log2(amax)) - emax_elem), emax_elem = floor(log2(element
 * max)); one exponent up when amax / scale would still exceed the element max,
 * so no element saturates. Exponents are clamped to the e8m0 range
 * [-127, 127]; an all-zero group gets 2^-127 (byte 0). Unlike Humming the
 * scale is positive and the codes use the stored power of two. */
#include <math.h>

#include "hc_quant_internal.h"

#define HQ_E8M0_MIN (-127)
#define HQ_E8M0_MAX 127

static int clamp_exp(int e)
{
    return e < HQ_E8M0_MIN ? HQ_E8M0_MIN : (e > HQ_E8M0_MAX ? HQ_E8M0_MAX : e);
}

/* floor(log2(v)) for v > 0 (exact, subnormals included). */
static int floor_log2(double v)
{
    int e;
    frexp(v, &e);
    return e - 1;
}

/* Smallest e with 2^e >= v, for v > 0. */
static int ceil_log2(double v)
{
    int e;
    double f = frexp(v, &e);
    return f == 0.5 ? e - 1 : e;
}

static int mx_sym_exponent(const hq_ctx *c, double amax)
{
    if (amax == 0.0) return HQ_E8M0_MIN;
    int e = floor_log2(amax) - floor_log2(c->dmax);
    if (ldexp(amax, -e) > c->dmax) e++;
    return clamp_exp(e);
}

/* Asymmetric (zero point) MX: the smallest power of two step that covers
 * [mn, mx] with 2^b - 1 steps. */
static int mx_zp_exponent(const hq_ctx *c, double mx, double mn)
{
    double range = mx - mn;
    if (range == 0.0) return HQ_E8M0_MIN;
    return clamp_exp(ceil_log2(range / (double)c->qhi));
}

void hq_mx_params(const hq_ctx *c, const float *x, int64_t n, float ratio, hq_group *g)
{
    float mx = 0.0f, mn = 0.0f;
    for (int64_t i = 0; i < n; i++) { /* finite inputs: plain compares vectorize */
        mx = x[i] > mx ? x[i] : mx;
        mn = x[i] < mn ? x[i] : mn;
    }
    mx *= ratio;
    mn *= ratio;
    int e = c->d.zero_point == HC_ZP_NONE ? mx_sym_exponent(c, fmax(mx, -(double)mn))
                                          : mx_zp_exponent(c, mx, mn);
    g->scale_bits = (uint32_t)(e + 127);
    g->val = ldexp(1.0, e);
    g->s = (float)g->val;
    if (c->d.zero_point != HC_ZP_NONE) hq_zp_params(c, mx, mn, g);
}

static int32_t clamp_q(double q, int32_t lo, int32_t hi)
{
    if (!(q >= lo)) return lo;
    if (q > hi) return hi;
    return (int32_t)q;
}

/* Codes from the stored step g->val: saturate to the element range, round to
 * nearest even (OCP conversion), keep the sign of zero for float elements. */
void hq_codes_effective(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                        uint8_t *codes)
{
    for (int64_t i = 0; i < n; i++) {
        double y = g->val != 0 ? (double)x[i] / g->val : 0.0 * x[i];
        if (c->is_float) {
            if (fabs(y) > c->dmax) y = copysign(c->dmax, y);
            codes[i] = (uint8_t)hc_format_encode(c->d.weight_format, (float)y);
        } else if (c->d.zero_point == HC_ZP_NONE) {
            codes[i] = (uint8_t)clamp_q(nearbyint(y) + c->offset, c->qlo, c->qhi);
        } else {
            codes[i] = (uint8_t)clamp_q(nearbyint(y + g->zp_val), c->qlo, c->qhi);
        }
    }
}
