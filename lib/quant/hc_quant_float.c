/* hc_quant_float.c - Humming's float-target code rounding (quant_weight.cuh):
 * re-bias into float32, candidates "truncate" and "add half an ulp then
 * truncate", ties toward zero, negative zero for small negative inputs. */
#include <math.h>
#include <string.h>

#include "hc_quant_internal.h"

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint32_t hc_quant_float_code_humming(const hc_format_info *f, float y)
{
    int e = f->exp_bits, m = f->man_bits, nb = f->bits;
    float ymax = (float)f->max_value;
    if (fabsf(y) > ymax) y = copysignf(ymax, y); /* identical to Humming for RTN */
    /* t = f32(y / 2^(128 - 2^(E-1))): one rounding of the exact quotient */
    double rebias = ldexp(1.0, 128 - (1 << (e - 1)));
    float t = (float)((double)y / rebias);
    uint32_t u = f32_bits(t);
    uint32_t fm = ((1u << (nb - 1)) - 1u) << (23 - m), sm = 0x80000000u;
    uint32_t rz = u & (fm | sm);
    uint32_t ru = (u + (1u << (22 - m))) & (fm | sm);
    uint32_t pick = fabsf(t - bits_f32(rz)) > fabsf(bits_f32(ru) - t) ? ru : rz;
    return ((pick & sm) >> (32 - nb)) | ((pick & fm) >> (23 - m));
}

/* y = f32(x * inv) with inv = f32(1 / s), then the code above. */
void hq_float_codes_humming(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                            uint8_t *codes)
{
    float inv = 1.0f / g->s;
    for (int64_t i = 0; i < n; i++)
        codes[i] = (uint8_t)hc_quant_float_code_humming(c->wf, x[i] * inv);
}
