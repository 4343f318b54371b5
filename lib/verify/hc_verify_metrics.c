/* hc_verify_metrics.c - error metrics and the per-format bounds of
 * docs/verification.md. */
#include <math.h>
#include <stdlib.h>

#include "hc_parallel.h"
#include "hc_verify.h"

typedef struct {
    double err2, ref2, got2, dot, maxe;
    int64_t bad;
} cmp_sums;

#define HC_VERIFY_CHUNK ((int64_t)1 << 16)

static cmp_sums compare_chunk(const float *got, const float *ref, int64_t n)
{
    cmp_sums c = {0, 0, 0, 0, 0, 0};
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], r = ref[i];
        if (!isfinite(g)) {
            c.bad++;
            continue;
        }
        double d = g - r;
        c.err2 += d * d;
        c.ref2 += r * r;
        c.got2 += g * g;
        c.dot += g * r;
        if (fabs(d) > c.maxe) c.maxe = fabs(d);
    }
    return c;
}

static void add_sums(cmp_sums *t, const cmp_sums *p)
{
    t->err2 += p->err2;
    t->ref2 += p->ref2;
    t->got2 += p->got2;
    t->dot += p->dot;
    t->maxe = p->maxe > t->maxe ? p->maxe : t->maxe;
    t->bad += p->bad;
}

/* Sums over fixed chunks of 2^16 elements, computed in parallel and added in
 * chunk order: the result does not depend on the number of threads (the
 * serial fallback, without memory, adds the same chunks in the same order),
 * and one chunk (n <= 65536) is the plain serial sum. */
static cmp_sums compare_sums(const float *got, const float *ref, int64_t n)
{
    const int64_t chunk = HC_VERIFY_CHUNK, nc = (n + chunk - 1) / chunk;
    cmp_sums t = {0, 0, 0, 0, 0, 0};
    cmp_sums *part = nc > 1 ? malloc((size_t)nc * sizeof *part) : NULL;
    if (part) {
#pragma omp parallel for schedule(static) if (HC_PARALLEL(n))
        for (int64_t c = 0; c < nc; c++)
            part[c] = compare_chunk(got + c * chunk, ref + c * chunk,
                                    n - c * chunk < chunk ? n - c * chunk : chunk);
    }
    for (int64_t c = 0; c < nc; c++) {
        cmp_sums p = part ? part[c]
                          : compare_chunk(got + c * chunk, ref + c * chunk,
                                          n - c * chunk < chunk ? n - c * chunk : chunk);
        add_sums(&t, &p);
    }
    free(part);
    return t;
}

static void compare_metrics(const cmp_sums s, hc_verify_cmp *out);

void hc_verify_rows_metrics(const hc_verify_row_sums *t, hc_verify_cmp *out)
{
    const cmp_sums s = {t->err2, t->ref2, t->got2, t->dot, t->maxe, t->bad};
    compare_metrics(s, out);
}

void hc_verify_compare(const float *got, const float *ref, int64_t n, hc_verify_cmp *out)
{
    compare_metrics(compare_sums(got, ref, n), out);
}

static void compare_metrics(const cmp_sums s, hc_verify_cmp *out)
{
    const double err2 = s.err2, ref2 = s.ref2, got2 = s.got2;
    out->nonfinite = s.bad;
    out->max_abs_err = s.maxe;
    out->rel_err = ref2 > 0 ? sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0.0);
    out->snr_db = err2 == 0 ? 200.0 : ref2 == 0 ? -200.0 : 10.0 * log10(ref2 / err2);
    if (out->snr_db > 200.0) out->snr_db = 200.0;
    out->cosine = (ref2 > 0 && got2 > 0) ? s.dot / sqrt(ref2 * got2) : (err2 == 0 ? 1.0 : 0.0);
    if (s.bad) out->rel_err = INFINITY;
}

/* Relative RMS error bound of one quantization step: integers b bits
 * 1.5 * 2^-(b-1) (capped at 1), floats with M mantissa bits 2^-M (1 for M = 0);
 * lossless repacks must be exact (bound 0). */
double hc_verify_weight_bound(hc_format_id weight_format, int lossless)
{
    if (lossless) return 0.0;
    const hc_format_info *f = hc_format_get(weight_format);
    if (f == NULL) return 0.0;
    if (f->kind != HC_KIND_FLOAT) {
        double b = 1.5 * ldexp(1.0, -(f->bits - 1));
        return b > 1.0 ? 1.0 : b;
    }
    return f->man_bits == 0 ? 1.0 : ldexp(1.0, -f->man_bits);
}

/* Extra GEMM error from per-token activation quantization: floats 2^-M
 * (e4m3 0.125, e5m2 0.25), int8 8 * 2^-7 = 0.0625, int4 4 * 2^-3 = 0.5
 * (observed on the example model: e4m3 <= 0.026, e5m2 <= 0.053, int8 <= 0.034,
 * int4 <= 0.32). */
double hc_verify_act_bound(hc_format_id act_format)
{
    return hc_format_role(act_format).act_bound;
}

/* Largest rounding step of one element relative to its group's amax: an
 * integer step is amax/(2^(b-1)-1) (with a zero point (mx-mn)/(2^b-1), no
 * larger); a float's top-binade spacing is at most amax*2^-M. Scales stored
 * coarsely widen it: power-of-two (e8m0) scales up to 2x, fp8 scales 1/8. */
static double step_ratio(const hc_layer_config *cfg)
{
    const hc_format_info *f = hc_format_get(cfg->weight_format);
    double c = f->kind == HC_KIND_FLOAT ? ldexp(1.0, -f->man_bits)
               : f->bits == 1 ? 1.0 : 1.0 / (double)((1 << (f->bits - 1)) - 1);
    if (cfg->scale_format == HC_FMT_F8E8M0) c *= 2.0;
    else if (cfg->scale_format == HC_FMT_F8E4M3 || cfg->scale_format == HC_FMT_F8E5M2) c *= 1.125;
    else c *= 1.01;
    return c;
}

/* Walks the scale groups of W (E, N, K): sums (elements * amax^2) and w^2,
 * and, when got is given, counts elements of got farther from W than
 * limit * amax of their group. */
typedef struct {
    double amax_energy, energy;
    int64_t violations;
} group_stats;

/* Largest |w| of a group; NaN entries are skipped, as fmax would (a plain
 * comparison: the libm call was 4% of a verified run). */
static double group_amax(const float *W, int64_t K, int64_t n0, int64_t n1, int64_t k0, int64_t k1)
{
    double amax = 0;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t k = k0; k < k1; k++) {
            const double v = fabs(W[n * K + k]);
            amax = v > amax ? v : amax;
        }
    return amax;
}

/* The statistics of one row of groups (gn weight rows x all of K). */
static group_stats group_row(const float *We, const float *Ge, double limit, int64_t N,
                             int64_t K, int64_t n0, int64_t gn, int64_t gk)
{
    group_stats g = {0, 0, 0};
    const int64_t n1 = n0 + gn < N ? n0 + gn : N;
    for (int64_t k0 = 0; k0 < K; k0 += gk) {
        const int64_t k1 = k0 + gk < K ? k0 + gk : K;
        const double amax = group_amax(We, K, n0, n1, k0, k1);
        g.amax_energy += (double)((n1 - n0) * (k1 - k0)) * amax * amax;
        for (int64_t n = n0; n < n1; n++)
            for (int64_t k = k0; k < k1; k++) {
                const double w = We[n * K + k];
                g.energy += w * w;
                if (Ge && !(fabs(Ge[n * K + k] - w) <= limit * amax)) g.violations++;
            }
    }
    return g;
}

/* Sums over all groups. Rows of groups run in parallel into a per-row array
 * that is then added in row order, so the result does not depend on the
 * number of threads (the serial fallback, without memory, adds in the same
 * order). */
/* Columns per group along K (gk) and rows per group along N (gn). */
static void group_shape(const hc_layer_meta *m, int64_t N, int64_t K, int64_t *gk, int64_t *gn)
{
    *gk = m->scale_type == HC_SCALE_TENSOR ? K
          : m->group_size > 0 && m->group_size < K ? m->group_size : K;
    *gn = m->scale_type == HC_SCALE_TENSOR ? N : m->group_size_n > 1 ? m->group_size_n : 1;
}

static group_stats walk_groups(const hc_layer_meta *m, const float *W, const float *got,
                               double limit, int64_t E, int64_t N, int64_t K)
{
    int64_t gk, gn;
    group_shape(m, N, K, &gk, &gn);
    const int64_t nb = (N + gn - 1) / gn, rows = E * nb;
    group_stats g = {0, 0, 0};
    group_stats *part = rows > 0 ? malloc((size_t)rows * sizeof *part) : NULL;
    if (part) {
#pragma omp parallel for schedule(static) if (HC_PARALLEL(E * N * K))
        for (int64_t r = 0; r < rows; r++) {
            const int64_t e = r / nb;
            part[r] = group_row(W + e * N * K, got ? got + e * N * K : NULL, limit, N, K,
                                (r % nb) * gn, gn, gk);
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        const int64_t e = r / nb;
        const group_stats p = part ? part[r]
                                   : group_row(W + e * N * K, got ? got + e * N * K : NULL, limit,
                                               N, K, (r % nb) * gn, gn, gk);
        g.amax_energy += p.amax_energy;
        g.energy += p.energy;
        g.violations += p.violations;
    }
    free(part);
    return g;
}

static double bound_of(const hc_layer_config *cfg, const hc_layer_meta *m, group_stats g)
{
    if (g.energy <= 0) return 0.0;
    double b = step_ratio(cfg) * sqrt(g.amax_energy / g.energy);
    if (m->use_int_weight_scale) b += ldexp(1.0, -9); /* int16 scales: 2^-10 relative, twice */
    return b;
}

static double step_limit(const hc_layer_config *cfg, const hc_layer_meta *m, double clip)
{
    return step_ratio(cfg) + clip + (m->use_int_weight_scale ? ldexp(1.0, -9) : 0);
}

double hc_verify_quant_bound(const hc_layer_config *cfg, const hc_layer_meta *m, const float *W,
                             int64_t E, int64_t N, int64_t K)
{
    return bound_of(cfg, m, walk_groups(m, W, NULL, 0, E, N, K));
}

int64_t hc_verify_step_violations(const hc_layer_config *cfg, const hc_layer_meta *m,
                                  const float *W, const float *got, double clip, int64_t E,
                                  int64_t N, int64_t K)
{
    return walk_groups(m, W, got, step_limit(cfg, m, clip), E, N, K).violations;
}

void hc_verify_quant_check(const hc_layer_config *cfg, const hc_layer_meta *m, const float *W,
                           const float *got, double clip, int64_t E, int64_t N, int64_t K,
                           double *bound, int64_t *violations)
{
    group_stats g = walk_groups(m, W, got, step_limit(cfg, m, clip), E, N, K);
    *bound = bound_of(cfg, m, g);
    *violations = g.violations;
}

int hc_verify_group_rows_ok(const hc_layer_meta *m)
{
    return m->scale_type != HC_SCALE_TENSOR && !(m->group_size_n > 1);
}

int64_t hc_verify_group_width(const hc_layer_meta *m, int64_t K)
{
    int64_t gk, gn;
    group_shape(m, 1, K, &gk, &gn);
    return gk;
}

double hc_verify_step_limit(const hc_layer_config *cfg, const hc_layer_meta *m, double clip)
{
    return step_limit(cfg, m, clip);
}

double hc_verify_bound_of(const hc_layer_config *cfg, const hc_layer_meta *m,
                          double amax_energy, double energy)
{
    const group_stats g = {amax_energy, energy, 0};
    return bound_of(cfg, m, g);
}
