/* hc_fused_e8m0.c - MXFP4 weights with FP8-e4m3 / INT8 activations (spec 5.3):
 * per-expert exponent range folding into small scale offsets, fp4 codes
 * shifted down by the per-group delta, and the global scale. */
#include <math.h>
#include <stdlib.h>

#include "hc_layout_ops.h"
#include "hc_parallel.h"

/* fp4 e2m1 magnitudes in units of 0.5: 0, 0.5, 1, 1.5, 2, 3, 4, 6. */
static const int64_t fp4_halves[8] = {0, 1, 2, 3, 4, 6, 8, 12};

uint32_t hc_fp4_shift_down(uint32_t code, int d)
{
    if (d <= 0) return code & 15u;
    if (d > 24) return code & 8u;  /* at most 6 / 2^25: rounds to zero */
    int64_t h = fp4_halves[code & 7];
    int best = 0;
    /* nearest grid point to h / 2^d, compared as g * 2^d vs h; on a tie the
     * later (larger) candidate wins: ties away from zero */
    for (int i = 1; i < 8; i++) {
        int64_t di = llabs(fp4_halves[i] * ((int64_t)1 << d) - h);
        int64_t db = llabs(fp4_halves[best] * ((int64_t)1 << d) - h);
        if (di <= db) best = i;
    }
    return (code & 8u) | (uint32_t)best;
}

/* New nibbles of one word of a group raised by d exponent steps. */
static uint32_t shift_word(uint32_t w, int d)
{
    uint32_t out = 0;
    for (int t = 0; t < 8; t++) {
        uint32_t c = (w >> (4 * t)) & 15u;
        if (c == 8u) c = 0u;  /* negative zero becomes +0 first */
        out |= hc_fp4_shift_down(c, d) << (4 * t);
    }
    return out;
}

static int expert_base(const uint8_t *s, int64_t count, int rmax)
{
    int hi = 0, lo = 255;
    for (int64_t i = 0; i < count; i++) {
        if (s[i] > hi) hi = s[i];
        if (s[i] < lo) lo = s[i];
    }
    int rng = hi - lo < rmax ? hi - lo : rmax;
    return hi - rng;
}

void hc_fused_e8m0(uint32_t *w, uint8_t *scales, int64_t E, int64_t N, int64_t K, int64_t G,
                   int int8_act, const float *gs_in, float *gs_out)
{
    int64_t row_words = K / 8, group_words = K / G / 8;
    for (int64_t e = 0; e < E; e++) {
        uint8_t *s_e = scales + e * N * G;
        int base = expert_base(s_e, N * G, int8_act ? 3 : 12);
        gs_out[e] = (gs_in ? gs_in[e] : 1.0f) * ldexpf(1.0f, base - 127);
        if (int8_act) gs_out[e] *= 0.5f;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(N * K))
        for (int64_t n = 0; n < N; n++) {
            for (int64_t g = 0; g < G; g++) {
                int x = s_e[n * G + g], xm = x > base ? x : base;
                uint32_t *gw = w + (e * N + n) * row_words + g * group_words;
                for (int64_t i = 0; i < group_words; i++) gw[i] = shift_word(gw[i], xm - x);
                s_e[n * G + g] = (uint8_t)(xm - base);
            }
        }
    }
}
