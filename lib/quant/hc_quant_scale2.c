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
 * float32 reduction whose order cannot be reproduced here: we take the exact
 * sum rounded to double, then to float (math.fsum's value cast to float32),
 * which the GPU's usually equals or misses by an ulp. */
#include <math.h>
#include <string.h>

#include "hc_parallel.h"
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

/* The sum of |v[i]| in double, compensated (Neumaier): a row's few values. */
static double abs_sum_serial(const float *v, int64_t n)
{
    double sum = 0.0, comp = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double x = fabs((double)v[i]), t = sum + x;
        comp += sum >= x ? (sum - t) + x : (x - t) + sum;
        sum = t;
    }
    return sum + comp;
}

/* Exact sums and rounding of hq_abs_sum_exact: the integer I = sum_e S_e 2^(e-1)
 * in 6 words (e <= 254, S_e < 2^63: below 2^318). */
typedef struct {
    uint64_t w[6];
} wide_int;

static void wide_add(wide_int *a, int at, uint64_t v)
{
    for (; v && at < 6; at++) {
        const uint64_t t = a->w[at] + v;
        v = t < v; /* the carry */
        a->w[at] = t;
    }
}

static int wide_bit(const wide_int *a, int i) { return (int)(a->w[i / 64] >> (i % 64) & 1u); }

/* I * 2^-149 rounded to double, to nearest even (as math.fsum rounds an
 * exact sum). */
static double wide_round(const wide_int *a)
{
    int top = -1;
    for (int i = 5; i >= 0 && top < 0; i--)
        if (a->w[i]) top = 64 * i + 63 - __builtin_clzll(a->w[i]);
    if (top < 53) return ldexp((double)a->w[0], -149); /* below 2^53: exact */
    uint64_t mant = 0;
    for (int i = top; i > top - 53; i--) mant = mant << 1 | (uint64_t)wide_bit(a, i);
    int sticky = 0;
    for (int i = 0; i < top - 53 && !sticky; i++) sticky = wide_bit(a, i);
    if (wide_bit(a, top - 53) && (sticky || (mant & 1u))) mant++;
    return ldexp((double)mant, top - 52 - 149); /* mant <= 2^53: exact */
}

int hq_abs_sum_exact(const float *v, int64_t n, float *sum, float *mx)
{
    uint64_t total[256] = {0};
    float best = -INFINITY;
    int bad = 0;
#pragma omp parallel if (HC_PARALLEL(n))
    {
        uint64_t bin[256] = {0};
        float m = -INFINITY;
        int b = 0;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, v + i, 4);
            const uint32_t e = u >> 23 & 0xFFu, f = u & 0x7FFFFFu;
            b |= e == 0xFFu;
            bin[e ? e : 1] += e ? f | 0x800000u : f;
            m = v[i] > m ? v[i] : m;
        }
#pragma omp critical(hq_abs_sum)
        {
            for (int e = 0; e < 256; e++) total[e] += bin[e];
            best = m > best ? m : best;
            bad |= b;
        }
    }
    if (bad || best == 0.0f) return 1;
    wide_int a;
    memset(&a, 0, sizeof a);
    for (int e = 1; e < 255; e++) {
        const int sh = e - 1;
        wide_add(&a, sh / 64, total[e] << (sh % 64));
        if (sh % 64) wide_add(&a, sh / 64 + 1, total[e] >> (64 - sh % 64));
    }
    *sum = (float)wide_round(&a);
    *mx = best;
    return 0;
}

/* torch's mean of |v| over n values of a reduction with `outputs` results:
 * f32(sum) * (f32(outputs) / f32(outputs * n)), the sum rounded to double and
 * then to float (hq_abs_sum_exact; where it declines, the compensated double
 * sum). *mx: max v[i]. */
static float mean_abs_max(const float *v, int64_t n, int64_t outputs, float *mx)
{
    float sum;
    if (hq_abs_sum_exact(v, n, &sum, mx) != 0) {
        sum = (float)abs_sum_serial(v, n);
        *mx = v[0];
        for (int64_t i = 1; i < n; i++) *mx = v[i] > *mx ? v[i] : *mx;
    }
    return sum * ((float)outputs / (float)(outputs * n));
}

/* mean_abs_max for a row's few values: serial. */
static float mean_abs(const float *v, int64_t n, int64_t outputs)
{
    return (float)abs_sum_serial(v, n) * ((float)outputs / (float)(outputs * n));
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
        float mx;
        ts[e] = mean_abs_max(raw + e * ng, ng, E, &mx);
        if (fp8_scales(c) && mx * inv_scale_max(c) > ts[e]) use_max = 1;
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
