/* hc_quant_scale2.c - Humming's second scales (weight_scale_2), computed as
 * humming-kernels 0.1.19's quantize_weight does on the GPU from the float32
 * RTN group scales s:
 *   tensor, fp16/bf16 scales:  ts = mean|s| per expert
 *   tensor, fp8 scales:        ts1 = max(s) / Dscale, ts2 = mean|s| per expert;
 *                              ts1 for every expert if any expert has ts1 > ts2
 *   channel, fp8 scales:       ws2 = max(max|s| / Dscale, mean|s|) per row
 *   channel, other scales:     ws2 = mean|s| per row
 * with Dscale 448 (e4m3) or 57344 (e5m2). torch divides by that Python
 * number as x * f32(1 / Dscale) (its CUDA division by a CPU scalar), and
 * takes a mean as f32(sum) * f32(outputs / elements). The sum is a CUDA
 * float32 reduction whose order cannot be reproduced here: we take the
 * correctly rounded sum, which the GPU's usually equals or misses by an ulp. */
#include <math.h>

#include "hc_quant_internal.h"

static int fp8_scales(const hq_ctx *c)
{
    return c->d.scale_format == HC_FMT_F8E4M3 || c->d.scale_format == HC_FMT_F8E5M2;
}

/* f32(1 / Dscale) of an fp8 scale format. */
static float inv_scale_max(const hq_ctx *c)
{
    return 1.0f / (float)hc_format_get(c->d.scale_format)->max_value;
}

/* torch's mean of |v| over n values of a reduction with `outputs` results:
 * f32(sum) * (f32(outputs) / f32(outputs * n)). The sum is compensated
 * (Neumaier) in double, so its float32 rounding is the correct one. */
static float mean_abs(const float *v, int64_t n, int64_t outputs)
{
    double sum = 0.0, comp = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double x = fabs((double)v[i]), t = sum + x;
        comp += sum >= x ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    float factor = (float)outputs / (float)(outputs * n);
    return (float)(sum + comp) * factor;
}

static float max_signed(const float *v, int64_t n)
{
    float m = v[0];
    for (int64_t i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

static float max_abs(const float *v, int64_t n)
{
    float m = 0.0f;
    for (int64_t i = 0; i < n; i++) m = fabsf(v[i]) > m ? fabsf(v[i]) : m;
    return m;
}

void hq_tensor_scale2(const hq_ctx *c, const float *raw, int64_t E, int64_t ng, float *ts)
{
    int use_max = 0;
    for (int64_t e = 0; e < E; e++) {
        ts[e] = mean_abs(raw + e * ng, ng, E);
        if (fp8_scales(c) && max_signed(raw + e * ng, ng) * inv_scale_max(c) > ts[e]) use_max = 1;
    }
    if (!use_max) return;
    for (int64_t e = 0; e < E; e++) ts[e] = max_signed(raw + e * ng, ng) * inv_scale_max(c);
}

void hq_channel_scale2(const hq_ctx *c, const float *raw, int64_t rows, int64_t G, float *ws2)
{
    for (int64_t r = 0; r < rows; r++) {
        ws2[r] = mean_abs(raw + r * G, G, rows);
        if (fp8_scales(c)) ws2[r] = fmaxf(max_abs(raw + r * G, G) * inv_scale_max(c), ws2[r]);
    }
}
