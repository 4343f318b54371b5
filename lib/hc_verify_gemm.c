/* hc_verify_gemm.c - the CPU GEMM of the reference path, activation
 * quantizers as the kernel's input kernel applies them (spec 6.2), and random
 * activations with a realistic per-channel spread. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hc_parallel.h"
#include "hc_verify.h"

/* Dot products of up to 4 token rows with one weight row, in double. Sixteen
 * independent partial sums (4 tokens x 4 k lanes) instead of one serial chain:
 * the chain's add latency, not arithmetic, limited the reference (the CPU section of bench/README.md);
 * the lanes vectorise without reassociating anything. */
static void dot4(const float *x, int64_t K, int64_t rows, const float *w, double *out)
{
    double acc[4][4] = {{0}};
    const float *xr[4];
    for (int t = 0; t < 4; t++) xr[t] = x + (t < rows ? t : 0) * K;
    int64_t k = 0;
    for (; k + 4 <= K; k += 4)
        for (int t = 0; t < 4; t++)
            for (int j = 0; j < 4; j++) acc[t][j] += (double)xr[t][k + j] * (double)w[k + j];
    for (int t = 0; t < 4; t++) {
        double tail = 0.0;
        for (int64_t kk = k; kk < K; kk++) tail += (double)xr[t][kk] * (double)w[kk];
        out[t] = ((acc[t][0] + acc[t][1]) + (acc[t][2] + acc[t][3])) + tail;
    }
}

void hc_verify_gemm(const float *x, int64_t M, int64_t K, const float *W, int64_t E,
                    int64_t N, int64_t Nw, int64_t Kw, const float *bias, int64_t Nb, float *y)
{
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * M * K / 16))
    for (int64_t e = 0; e < E; e++)
        for (int64_t n = 0; n < N; n++) {
            const float *w = W + (e * Nw + n) * Kw;
            const double b = bias ? bias[e * Nb + n] : 0.0;
            for (int64_t m = 0; m < M; m += 4) {
                const int64_t rows = M - m < 4 ? M - m : 4;
                double d[4];
                dot4(x + m * K, K, rows, w, d);
                for (int64_t t = 0; t < rows; t++) y[(e * M + m + t) * N + n] = (float)(d[t] + b);
            }
        }
}

void hc_verify_round_act(hc_format_id fmt, float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = fmt == HC_FMT_BF16 ? hc_bf16_to_f32(hc_f32_to_bf16(x[i]))
                                  : hc_f16_to_f32(hc_f32_to_f16(x[i]));
}

/* One token: scale from the row's range, values rounded to the grid (RNE). */
static void quantize_row(hc_format_id fmt, float *x, int64_t K)
{
    float mx = 1e-30f, mn = -1e-30f;
    for (int64_t k = 0; k < K; k++) {
        if (x[k] > mx) mx = x[k];
        if (x[k] < mn) mn = x[k];
    }
    float amax = mx > -mn ? mx : -mn, s;
    switch (fmt) {
    /* multiplication by the rounded reciprocal, as Humming's Triton kernel
     * does: fp8 e4m3 scales equal the golden x.scale bit for bit this way
     * (amax / 448 differs by one ulp in 13 of 16 tokens) */
    case HC_FMT_F8E4M3: s = amax * (1.0f / 448.0f); break;
    case HC_FMT_F8E5M2: s = amax * (1.0f / 57344.0f); break;
    case HC_FMT_INT8: s = fmaxf(mx * (1.0f / 127.49f), -mn * (1.0f / 128.49f)); break;
    case HC_FMT_INT4: s = fmaxf(mx * (1.0f / 7.49f), -mn * (1.0f / 8.49f)); break;
    default: return;
    }
    int is_int = fmt == HC_FMT_INT8 || fmt == HC_FMT_INT4;
    float lo = fmt == HC_FMT_INT8 ? -128.0f : -8.0f, hi = fmt == HC_FMT_INT8 ? 127.0f : 7.0f;
    for (int64_t k = 0; k < K; k++) {
        float t = x[k] / s, q;
        if (is_int) {
            q = nearbyintf(t);
            q = q < lo ? lo : q > hi ? hi : q;
        } else {
            q = (float)hc_format_decode(fmt, hc_format_encode(fmt, t));
        }
        x[k] = q * s;
    }
}

void hc_verify_quantize_act(hc_format_id fmt, float *x, int64_t M, int64_t K)
{
#pragma omp parallel for schedule(static) if (HC_PARALLEL(M * K))
    for (int64_t m = 0; m < M; m++) quantize_row(fmt, x + m * K, K);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) { return ((splitmix(s) >> 11) + 0.5) * 0x1.0p-53; }

static double gauss(uint64_t *s)
{
    double u = uniform01(s), v = uniform01(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* Channel k has spread exp(0.5*g_k) (log-normal, as activations of real
 * models), and one channel in 64 is an outlier with 6x that. */
void hc_verify_random_act(float *x, int64_t M, int64_t K, uint64_t seed)
{
    uint64_t s = seed ^ 0x5DEECE66Dull;
    for (int64_t k = 0; k < K; k++) {
        double c = exp(0.5 * gauss(&s));
        if (splitmix(&s) % 64 == 0) c *= 6.0;
        for (int64_t m = 0; m < M; m++) x[m * K + k] = (float)(gauss(&s) * c);
    }
}
