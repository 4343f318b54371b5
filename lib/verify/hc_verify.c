/* hc_verify.c - one layer: decode the post tensors, compare the weight with
 * the source, run the GEMMs, apply the bounds (docs/verification.md). */
#include "hc_parallel.h"
#include "hc_verify.h"

#include "hc_gpu.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hc_verify_mode_parse(const char *s, hc_verify_mode *out)
{
    static const char *const names[] = {"auto", "gpu", "cpu", "off"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (hc_verify_mode)i;
            return 0;
        }
    return -1;
}

const char *hc_verify_mode_name(hc_verify_mode m)
{
    switch (m) {
    case HC_VERIFY_AUTO: return "auto";
    case HC_VERIFY_GPU: return "gpu";
    case HC_VERIFY_CPU: return "cpu";
    case HC_VERIFY_OFF: return "off";
    }
    return "?";
}

/* The GPU GEMM of a layer (hc_gpu_gemm), run on a helper thread from the
 * moment the activations exist until gemm_metrics needs its output, so that
 * it overlaps the CPU reference; its inputs are read-only meanwhile. */
typedef struct {
    const hc_layer_config *cfg;
    const hc_layer_meta *m;
    const hc_layer_tensors *post;
    const float *x;
    int64_t M;
    float *y;      /* (E, M, N), owned by the buffers */
    pthread_t thread;
    int running;   /* thread started and not yet joined */
    hc_status st;  /* hc_gpu_gemm's status, err its message */
    hc_error err;
} gpu_job;

typedef struct {
    float *Wd, *bd, *Wu, *x, *xq, *yref, *y, *yq;
    hc_verify_row_sums *rows;       /* the weight checks' sums per row (E * N) */
    double *energy;                 /* the source's sum of squares per row */
    hc_verify_act ax, axq;          /* x and xq for hc_verify_gemm_acc (panels) */
    int yref_done;                  /* panels: yref computed with them */
    gpu_job gpu;                    /* with --verify gpu (gpu.y set) */
} buffers;

static void *gpu_job_run(void *arg)
{
    gpu_job *j = arg;
    j->st = hc_gpu_gemm(j->cfg, j->m, j->post, j->x, j->M, j->y, &j->err);
    return NULL;
}

/* Starts the GPU GEMM of the layer on b->x where the run asks for it (else
 * does nothing); where no thread can be started it runs here. */
static hc_status gpu_job_start(const hc_layer_config *cfg, const hc_layer_meta *m,
                               const hc_layer_tensors *post, const hc_verify_params *p, int M,
                               buffers *b, hc_error *err)
{
    if (!p || !p->use_gpu || p->canonical) return HC_OK;
    gpu_job *j = &b->gpu;
    j->y = malloc((size_t)(m->E * M * m->N) * sizeof(float));
    if (!j->y) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating the GPU GEMM's output");
    j->cfg = cfg, j->m = m, j->post = post, j->x = b->x, j->M = M;
    j->running = pthread_create(&j->thread, NULL, gpu_job_run, j) == 0;
    if (!j->running) gpu_job_run(j);
    return HC_OK;
}

/* Waits for the GPU GEMM (if running); its status, its message into err. */
static hc_status gpu_job_join(gpu_job *j, hc_error *err)
{
    if (j->running) pthread_join(j->thread, NULL);
    j->running = 0;
    if (j->st != HC_OK && err) *err = j->err;
    return j->st;
}

static void buffers_free(buffers *b)
{
    gpu_job_join(&b->gpu, NULL); /* an early error return: the thread still reads the inputs */
    free(b->gpu.y);
    free(b->Wd);
    free(b->bd);
    if (b->Wu != b->Wd) free(b->Wu);
    free(b->x);
    free(b->xq);
    free(b->yref);
    free(b->y);
    free(b->yq);
    free(b->rows);
    free(b->energy);
    hc_verify_act_free(&b->ax);
    hc_verify_act_free(&b->axq);
}

/* Panels (run_panels): no full decoded weights. */
static hc_status alloc_buffers(const hc_layer_meta *m, int M, int qact, int panels,
                               buffers *b, hc_error *err)
{
    size_t wd = (size_t)(m->E * m->Np * m->Kp), wu = (size_t)(m->E * m->N * m->K);
    size_t xs = (size_t)M * (size_t)m->K, ys = (size_t)(m->E * M * m->N);
    b->rows = malloc((size_t)(m->E * m->N + 1) * sizeof *b->rows);
    b->energy = malloc((size_t)(m->E * m->N + 1) * sizeof *b->energy);
    if (!panels) {
        b->Wd = malloc(wd * sizeof(float));
        /* unpadded: the decoded weights are already (E, N, K) */
        b->Wu = m->Np == m->N && m->Kp == m->K ? b->Wd : malloc(wu * sizeof(float));
    }
    b->bd = calloc((size_t)(m->E * m->Np), sizeof(float));
    b->x = malloc(xs * sizeof(float));
    b->xq = qact ? malloc(xs * sizeof(float)) : NULL;
    b->yref = malloc(ys * sizeof(float));
    b->y = malloc(ys * sizeof(float));
    b->yq = qact ? malloc(ys * sizeof(float)) : NULL;
    if (!b->rows || !b->energy || (!panels && (!b->Wd || !b->Wu)) || !b->bd ||
        !b->x || (qact && (!b->xq || !b->yq)) || !b->yref || !b->y)
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating verification buffers");
    return HC_OK;
}

static int64_t count_nonfinite(const float *v, int64_t n)
{
    int64_t c = 0;
#pragma omp parallel for reduction(+ : c) schedule(static) if (HC_PARALLEL(n))
    for (int64_t i = 0; i < n; i++) c += !isfinite(v[i]);
    return c;
}

static void fill_activations(const hc_layer_config *cfg, const hc_verify_params *p, int M,
                             int64_t K, float *x)
{
    if (p && p->act && p->act_rows > 0) {
        for (int m = 0; m < M; m++)
            memcpy(x + (int64_t)m * K, p->act + (int64_t)(m % p->act_rows) * K,
                   (size_t)K * sizeof(float));
    } else {
        hc_verify_random_act(x, M, K, p ? p->seed : 1);
    }
    /* the kernel's input is the layer dtype (fp16/bf16) */
    hc_verify_round_act(cfg->param_format, x, (int64_t)M * K);
}

static void judge(hc_verify_metrics *r)
{
    char *s = r->reason;
    size_t n = sizeof r->reason;
    r->pass = 0;
    if (r->nonfinite > 0)
        snprintf(s, n, "%lld non-finite values (NaN/Inf)", (long long)r->nonfinite);
    else if (r->lossless && r->lossless_mismatches > 0)
        snprintf(s, n, "lossless repack: %lld elements differ from the source",
                 (long long)r->lossless_mismatches);
    else if (r->step_violations > 0)
        snprintf(s, n, "%lld weights off by more than one quantization step of their group",
                 (long long)r->step_violations);
    else if (r->weight_rel_err > r->weight_bound)
        snprintf(s, n, "weight_rel_err %.3g exceeds bound %.3g", r->weight_rel_err,
                 r->weight_bound);
    else if (r->gemm_rel_err > r->gemm_bound)
        snprintf(s, n, "gemm_rel_err %.3g exceeds bound %.3g", r->gemm_rel_err, r->gemm_bound);
    else if (r->has_qact && r->qact_rel_err > r->qact_bound)
        snprintf(s, n, "quantized-activation gemm rel err %.3g exceeds bound %.3g",
                 r->qact_rel_err, r->qact_bound);
    else if (r->has_gpu && !(r->gpu_rel_err <= r->gpu_bound))
        snprintf(s, n, "GPU gemm rel err %.3g vs the CPU reference exceeds bound %.3g",
                 r->gpu_rel_err, r->gpu_bound);
    else {
        snprintf(s, n, "ok");
        r->pass = 1;
    }
}

void hc_verify_hist_thresholds(double rms, double *thr)
{
    for (int j = 0; j < HC_VERIFY_HIST_BINS; j++) thr[j] = j < 2 ? 0 : rms * pow(10.0, j - 9);
}

static void unpad(const hc_layer_meta *m, const float *Wd, float *Wu)
{
    for (int64_t e = 0; e < m->E; e++)
        for (int64_t n = 0; n < m->N; n++)
            memcpy(Wu + (e * m->N + n) * m->K, Wd + (e * m->Np + n) * m->Kp,
                   (size_t)m->K * sizeof(float));
}

/* The GEMM metrics from b->y (16-bit activations) and b->yq (quantized
 * activations), the bounds, the GPU comparison (b->gpu, joined here) and the
 * verdict. b->x and b->xq hold the activations; quant_bound is the float
 * source's bound. */
static hc_status gemm_metrics(const hc_layer_config *cfg, const hc_layer_meta *m,
                              const hc_verify_source *src, double quant_bound, hc_verify_metrics *r,
                              buffers *b, hc_error *err)
{
    const int M = r->tokens, qact = m->act_bits < 16;
    const int64_t E = m->E, N = m->N, K = m->K;
    hc_verify_cmp c;
    if (!b->yref_done) hc_verify_gemm(b->x, M, K, src->weight, E, N, N, K, src->bias, N, b->yref);
    hc_verify_compare(b->y, b->yref, E * M * N, &c);
    r->gemm_rel_err = c.rel_err;
    r->gemm_snr_db = c.snr_db;
    r->gemm_cosine = c.cosine;
    r->gemm_max_abs_err = c.max_abs_err;
    r->nonfinite += c.nonfinite;
    r->weight_bound = src->float_source ? quant_bound
                                        : hc_verify_weight_bound(cfg->weight_format, src->lossless);
    /* a GEMM mixes the weight errors with activations of uneven channel
     * scale: allow twice the weight bound (plus fp16/bf16 output rounding) */
    r->gemm_bound = src->lossless ? 1e-6 : src->float_source ? 2 * r->weight_bound + 4e-3
                                                             : r->weight_bound;
    if (qact) {
        hc_verify_compare(b->yq, b->yref, E * M * N, &c);
        r->has_qact = 1;
        r->qact_rel_err = c.rel_err;
        r->qact_snr_db = c.snr_db;
        r->qact_cosine = c.cosine;
        r->qact_max_abs_err = c.max_abs_err;
        r->nonfinite += c.nonfinite;
        r->qact_bound = r->gemm_bound + hc_verify_act_bound(cfg->act_format);
    }
    if (b->gpu.y) { /* against the CPU GEMM on the decoded weights, last activations */
        HC_TRY(gpu_job_join(&b->gpu, err));
        hc_verify_compare(b->gpu.y, qact ? b->yq : b->y, E * M * N, &c);
        r->has_gpu = 1;
        r->gpu_rel_err = c.rel_err;
        r->gpu_max_abs_err = c.max_abs_err;
        r->gpu_bound = hc_gpu_bound(cfg->param_format);
        r->nonfinite += c.nonfinite;
    }
    judge(r);
    return HC_OK;
}

/* The activations: b->x, and b->xq quantized as the kernel does. */
static void activations(const hc_layer_config *cfg, const hc_layer_meta *m,
                        const hc_verify_params *p, int M, buffers *b)
{
    fill_activations(cfg, p, M, m->K, b->x);
    if (m->act_bits < 16) {
        memcpy(b->xq, b->x, (size_t)M * (size_t)m->K * sizeof(float));
        hc_verify_quantize_act(cfg->act_format, b->xq, M, m->K);
    }
}

/* Bias mismatches against the source (the lossless check). */
static int64_t bias_mismatches(const hc_layer_meta *m, const hc_verify_source *src,
                               const float *bd)
{
    int64_t mism = 0;
    for (int64_t e = 0; src->bias && e < m->E; e++)
        for (int64_t n = 0; n < m->N; n++) mism += !(bd[e * m->Np + n] == src->bias[e * m->N + n]);
    return mism;
}

/* Columns per part of a source read in parts (source_energy): in L1. */
#define HC_VERIFY_PART 1024

/* Row r's sum of squares, a source given by parts read HC_VERIFY_PART
 * columns at a time into buf (the lanes carried from part to part). */
static double energy_by_parts(const hc_verify_source *src, int64_t r, int64_t K, float *buf)
{
    double l[8] = {0};
    for (int64_t k0 = 0; k0 < K; k0 += HC_VERIFY_PART) {
        const int64_t k1 = K - k0 < HC_VERIFY_PART ? K : k0 + HC_VERIFY_PART;
        src->part(src->rows_ctx, r, k0, k1, buf);
        hc_verify_row_energy_part(buf, k1 - k0, l, 0);
    }
    return hc_verify_lanes_total(l);
}

/* Each row's sum of squares into energy, rows read in parallel (a source
 * given by rows or parts read into a buffer per thread). */
static hc_status read_energy(const hc_verify_source *src, int64_t rows, int64_t K,
                             double *energy, hc_error *err)
{
    int fail = 0;
    const int parts = !src->weight && src->part;
#pragma omp parallel reduction(+ : fail) if (HC_PARALLEL(rows * K))
    {
        float *buf = src->weight ? NULL
                     : malloc((size_t)(parts && K > HC_VERIFY_PART ? HC_VERIFY_PART : K) *
                              sizeof *buf);
        fail += !src->weight && !buf;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++)
            if (src->weight || buf)
                energy[r] = parts ? energy_by_parts(src, r, K, buf)
                            : hc_verify_row_energy(src->weight ? src->weight + r * K
                                                   : src->rows(src->rows_ctx, r, buf), K, 0);
        free(buf);
    }
    if (fail) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating a source row");
    return HC_OK;
}

/* The source's sum of squares per row (b->energy): those given with the
 * source (hc_verify_row_energy of the same floats: the same doubles), else
 * read; *rms from them, added in row order. */
static hc_status source_energy(const hc_verify_source *src, int64_t rows, int64_t K, buffers *b,
                               double *rms, hc_error *err)
{
    if (src->energy) memcpy(b->energy, src->energy, (size_t)rows * sizeof *b->energy);
    else HC_TRY(read_energy(src, rows, K, b->energy, err));
    double total = 0;
    for (int64_t r = 0; r < rows; r++) total += b->energy[r];
    *rms = rows * K > 0 ? sqrt(total / (double)(rows * K)) : 0;
    return HC_OK;
}

/* The row checks' options: group statistics for a float source whose
 * groups are one row high (others walk their groups: hc_verify_quant_check). */
static void row_opts(const hc_layer_config *cfg, const hc_layer_meta *m,
                     const hc_verify_source *src, double rms, hc_verify_row_opts *o)
{
    memset(o, 0, sizeof *o);
    if (src->float_source && hc_verify_group_rows_ok(m)) {
        o->gk = hc_verify_group_width(m, m->K);
        o->limit = hc_verify_step_limit(cfg, m, src->clip);
    }
    o->rms = rms;
    hc_verify_hist_thresholds(rms, o->thr);
}

/* The rows' sums added in row order into *t, and the weight metrics:
 * weight_rel_err / snr, lossless mismatches (bias too) and, for a float
 * source with per-row groups, the bound (*quant_bound) and violations. */
static void rows_finish(const hc_layer_config *cfg, const hc_layer_meta *m,
                        const hc_verify_source *src, const buffers *b, hc_verify_metrics *r,
                        hc_verify_row_sums *t, double *quant_bound)
{
    double energy = 0;
    memset(t, 0, sizeof *t);
    for (int64_t i = 0; i < m->E * m->N; i++) {
        const hc_verify_row_sums *p = &b->rows[i];
        t->err2 += p->err2;
        t->ref2 += p->ref2;
        t->got2 += p->got2;
        t->dot += p->dot;
        t->maxe = p->maxe > t->maxe ? p->maxe : t->maxe;
        t->amax_energy += p->amax_energy;
        t->bad += p->bad;
        t->mism += p->mism;
        t->violations += p->violations;
        energy += src->float_source ? b->energy[i] : 0; /* read for float sources only */
    }
    hc_verify_cmp c;
    hc_verify_rows_metrics(t, &c);
    r->weight_rel_err = c.rel_err;
    r->weight_snr_db = c.snr_db;
    r->lossless_mismatches = src->lossless ? t->mism + bias_mismatches(m, src, b->bd) : 0;
    if (src->float_source && hc_verify_group_rows_ok(m)) {
        *quant_bound = hc_verify_bound_of(cfg, m, t->amax_energy, energy);
        r->step_violations = t->violations;
    }
}

/* The whole decoded weight in memory: every layout, with padding. */
static hc_status run(const hc_layer_config *cfg, const hc_layer_meta *m,
                     const hc_layer_tensors *post, const hc_verify_source *src,
                     const hc_verify_params *p, hc_verify_metrics *r, buffers *b, hc_error *err)
{
    int M = p && p->tokens > 0 ? p->tokens : 16;
    int qact = m->act_bits < 16;
    int64_t E = m->E, N = m->N, K = m->K;
    HC_TRY(alloc_buffers(m, M, qact, 0, b, err));
    activations(cfg, m, p, M, b);
    HC_TRY(gpu_job_start(cfg, m, post, p, M, b, err));
    if (p && p->canonical) HC_TRY(hc_dequant_pre(cfg, m, post, b->Wd, b->bd, err));
    else HC_TRY(hc_verify_decode(cfg, m, post, b->Wd, b->bd, err));
    if (src->bias && !post->bias.data) HC_FAIL(err, HC_ERR_FORMAT, "post bias: missing");
    r->tokens = M;
    r->calibrated = p && p->act != NULL;
    r->lossless = src->lossless;
    r->nonfinite = count_nonfinite(b->Wd, E * m->Np * m->Kp) +
                   count_nonfinite(b->bd, E * m->Np);
    if (b->Wu != b->Wd) unpad(m, b->Wd, b->Wu);
    double rms, quant_bound = 0.0;
    HC_TRY(source_energy(src, E * N, K, b, &rms, err));
    hc_verify_row_opts o;
    row_opts(cfg, m, src, rms, &o);
    int64_t hist[HC_VERIFY_HIST_BINS] = {0};
#pragma omp parallel for reduction(+ : hist[:HC_VERIFY_HIST_BINS]) schedule(static) \
    if (HC_PARALLEL(E * N * K))
    for (int64_t i = 0; i < E * N; i++)
        hc_verify_row_check(&o, b->Wu + i * K, src->weight + i * K, K, &b->rows[i], hist);
    memcpy(r->err_hist, hist, sizeof hist);
    hc_verify_row_sums t;
    rows_finish(cfg, m, src, b, r, &t, &quant_bound);
    if (src->float_source && !hc_verify_group_rows_ok(m)) /* groups over several rows */
        hc_verify_quant_check(cfg, m, src->weight, b->Wu, src->clip, E, N, K, &quant_bound,
                              &r->step_violations);
    const float *bias = post->bias.data ? b->bd : NULL;
    hc_verify_gemm(b->x, M, K, b->Wd, E, N, m->Np, m->Kp, bias, m->Np, b->y);
    if (qact) hc_verify_gemm(b->xq, M, K, b->Wd, E, N, m->Np, m->Kp, bias, m->Np, b->yq);
    return gemm_metrics(cfg, m, src, quant_bound, r, b, err);
}

/* Panels of 64 weight rows are decoded and checked one at a time, without a
 * full float32 copy of the decoded weight: tile layouts without padding and,
 * for a float source, groups one row high. The row sums are those run
 * forms, added in the same order, so the metrics are equal. */
static int panels_apply(const hc_layer_meta *m, const hc_verify_source *src)
{
    return !m->use_flat_weight && m->Np == m->N && m->Kp == m->K && m->N % 64 == 0 &&
           (!src->float_source || hc_verify_group_rows_ok(m));
}

/* Source rows row0.. row0 + count - 1 (K each) into buf. */
static void source_rows(const hc_verify_source *src, int64_t row0, int64_t count, int64_t K,
                        float *buf)
{
    for (int64_t r = 0; r < count; r++) {
        const float *p = src->rows(src->rows_ctx, row0 + r, buf + r * K);
        if (p != buf + r * K) memcpy(buf + r * K, p, (size_t)K * sizeof *buf);
    }
}

/* Whether a panel's decoded bias (or none) and source bias (or none) are
 * the same 64 floats bit for bit. */
static int same_bias(const float *bd, const float *bs)
{
    return bd == NULL ? bs == NULL : bs != NULL && memcmp(bd, bs, 64 * sizeof *bd) == 0;
}

/* Columns of k per slab: a panel is decoded, checked and multiplied a slab
 * of 64 x HC_VERIFY_SLAB floats (256 KiB, in L2) at a time. A slab holds
 * whole GEMM blocks (64 k), tile rows (256 / act_bits k) and scale groups
 * (the row checks' groups, and the decoder's tables, one per group); where
 * the groups do not divide it (channel-wise), the slab is the whole row. */
#define HC_VERIFY_SLAB 1024

static int64_t slab_width(const hc_layer_meta *m, const hc_verify_row_opts *o)
{
    if (m->K <= HC_VERIFY_SLAB || (o->gk > 0 && HC_VERIFY_SLAB % o->gk != 0) ||
        (m->group_size > 0 && HC_VERIFY_SLAB % m->group_size != 0))
        return m->K;
    return HC_VERIFY_SLAB;
}

/* A thread's panel buffers: a slab of the decoded panel, the source rows
 * (when read by rows), the rows' check states and the three GEMMs' sums. */
typedef struct {
    int64_t ks, acc_len;
    float *P, *S;
    hc_verify_row_state *st;
    double *acc; /* y, yq, yref: acc_len each */
} panel_ws;

static int ws_alloc(const hc_layer_meta *m, const hc_verify_source *src, int64_t ks, int M,
                    panel_ws *w)
{
    w->ks = ks;
    w->acc_len = hc_verify_gemm_acc_len(64, M);
    /* 64-byte aligned (64 rows of floats: a whole number of lines): a
     * 32-byte load at a malloc'ed large block's 16-byte offset splits a
     * cache line every second time, which cost the GEMM a fifth */
    w->P = aligned_alloc(64, (size_t)(64 * ks) * sizeof(float));
    w->S = src->weight ? NULL
                       : aligned_alloc(64, (size_t)(64 * (src->part ? ks : m->K)) * sizeof(float));
    w->st = malloc(64 * sizeof *w->st);
    w->acc = aligned_alloc(64, (size_t)(3 * w->acc_len) * sizeof(double)); /* 8 per (row, token) */
    return w->P && (src->weight || w->S) && w->st && w->acc;
}

static void ws_free(panel_ws *w)
{
    free(w->P);
    free(w->S);
    free(w->st);
    free(w->acc);
}

/* Slab [k0, k0 + kw) of panel (e, nb): decoded, checked against the source
 * rows ref (column k0 of the panel's first row, row stride lds), added to
 * the GEMMs' sums. While the panel equals its
 * source (*equal), the source GEMM's sums are the decoded GEMM's (the same
 * operations on the same values; lanes start at +0, so not even the sign
 * of a zero differs): they are copied at the first slab that differs. */
static void panel_slab(const hc_verify_decoder *dec,
                       const hc_verify_row_opts *o, const buffers *b, int64_t e,
                       int64_t nb, const float *ref, int64_t lds, int64_t k0, int64_t kw,
                       panel_ws *w, int *equal)
{
    const int64_t ks = w->ks, len = w->acc_len;
    double *acc_y = w->acc, *acc_yq = w->acc + len, *acc_ref = w->acc + 2 * len;
    hc_verify_decode_panel_part(dec, e, nb, k0, k0 + kw, w->P, ks);
    int64_t mism = 0;
    for (int64_t r = 0; r < 64; r++) {
        const int64_t before = w->st[r].mism;
        hc_verify_row_part(o, w->P + r * ks, ref + r * lds, kw, &w->st[r]);
        mism += w->st[r].mism - before;
    }
    if (*equal && mism) {
        memcpy(acc_ref, acc_y, (size_t)len * sizeof *acc_ref);
        *equal = 0;
    }
    if (!*equal) hc_verify_gemm_acc(&b->ax, k0, k0 + kw, ref, 64, lds, acc_ref);
    hc_verify_gemm_acc(&b->ax, k0, k0 + kw, w->P, 64, ks, acc_y);
    if (b->yq) hc_verify_gemm_acc(&b->axq, k0, k0 + kw, w->P, 64, ks, acc_yq);
}

/* Panel i (rows n0.. n0 + 63 of expert e) slab by slab: its rows' sums into
 * b->rows, histogram into hist, its columns of y, yq and yref. */
static void one_panel(const hc_layer_meta *m, const hc_layer_tensors *post,
                      const hc_verify_source *src, const hc_verify_decoder *dec,
                      const hc_verify_row_opts *o, int M, buffers *b, int64_t i, panel_ws *w,
                      int64_t *hist)
{
    const int64_t tiles = m->N / 64, e = i / tiles, n0 = 64 * (i % tiles), K = m->K, N = m->N;
    const int64_t row0 = e * N + n0, len = w->acc_len;
    const float *bias = post->bias.data ? b->bd + e * m->Np + n0 : NULL;
    const float *sbias = src->bias ? src->bias + e * N + n0 : NULL;
    /* the source: whole rows (in memory, or read by rows), or read by parts
     * slab by slab */
    const int parts = !src->weight && src->part;
    const float *ref = src->weight ? src->weight + row0 * K : w->S;
    const int64_t lds = parts ? w->ks : K;
    if (!src->weight && !parts) source_rows(src, row0, 64, K, w->S);
    for (int64_t r = 0; r < 64; r++) hc_verify_row_begin(&w->st[r]);
    memset(w->acc, 0, (size_t)(3 * len) * sizeof *w->acc);
    int equal = 1;
    for (int64_t k0 = 0; k0 < K; k0 += w->ks) {
        const int64_t kw = K - k0 < w->ks ? K - k0 : w->ks;
        for (int64_t r = 0; parts && r < 64; r++)
            src->part(src->rows_ctx, row0 + r, k0, k0 + kw, w->S + r * lds);
        panel_slab(dec, o, b, e, i % tiles, parts ? ref : ref + k0, lds, k0, kw, w, &equal);
    }
    for (int64_t r = 0; r < 64; r++) hc_verify_row_end(o, &w->st[r], &b->rows[row0 + r], hist);
    const int64_t at = e * M * N + n0;
    hc_verify_gemm_end(w->acc, M, 64, bias, b->y + at, N);
    if (b->yq) hc_verify_gemm_end(w->acc + len, M, 64, bias, b->yq + at, N);
    if (equal && same_bias(bias, sbias))
        for (int64_t t = 0; t < M; t++)
            memcpy(b->yref + at + t * N, b->y + at + t * N, 64 * sizeof(float));
    else
        hc_verify_gemm_end(equal ? w->acc : w->acc + 2 * len, M, 64, sbias, b->yref + at, N);
}

/* Decodes and checks every panel in parallel, buffers per thread. */
static hc_status check_panels(const hc_layer_meta *m, const hc_layer_tensors *post,
                              const hc_verify_source *src, const hc_verify_decoder *dec,
                              const hc_verify_row_opts *o, int M, buffers *b, int64_t *hist,
                              hc_error *err)
{
    const int64_t panels = m->E * (m->N / 64), ks = slab_width(m, o);
    int fail = 0;
#pragma omp parallel reduction(+ : fail, hist[:HC_VERIFY_HIST_BINS]) if (panels > 1)
    {
        panel_ws w;
        const int ok = ws_alloc(m, src, ks, M, &w);
        fail += !ok;
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < panels; i++)
            if (ok) one_panel(m, post, src, dec, o, M, b, i, &w, hist);
        ws_free(&w);
    }
    if (fail) HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating verification panels");
    return HC_OK;
}

static hc_status run_panels(const hc_layer_config *cfg, const hc_layer_meta *m,
                            const hc_layer_tensors *post, const hc_verify_source *src,
                            const hc_verify_params *p, hc_verify_metrics *r, buffers *b,
                            hc_verify_decoder **dec, hc_error *err)
{
    const int M = p && p->tokens > 0 ? p->tokens : 16;
    const int64_t E = m->E, N = m->N, K = m->K;
    HC_TRY(alloc_buffers(m, M, m->act_bits < 16, 1, b, err));
    HC_TRY(hc_verify_decoder_open(cfg, m, post, b->bd, dec, err));
    if (src->bias && !post->bias.data) HC_FAIL(err, HC_ERR_FORMAT, "post bias: missing");
    r->tokens = M;
    r->calibrated = p && p->act != NULL;
    r->lossless = src->lossless;
    b->yref_done = 1;
    activations(cfg, m, p, M, b);
    HC_TRY(gpu_job_start(cfg, m, post, p, M, b, err));
    hc_verify_act_init(&b->ax, b->x, M, K, 0);
    if (b->xq) hc_verify_act_init(&b->axq, b->xq, M, K, 0);
    /* a lossless layer's histogram needs the source rms only for elements
     * that differ (the layer then fails): read the source for it, and check
     * again, only then */
    double rms = 0, quant_bound = 0.0;
    hc_verify_row_opts o;
    int64_t hist[HC_VERIFY_HIST_BINS] = {0};
    if (!src->lossless) HC_TRY(source_energy(src, E * N, K, b, &rms, err));
    row_opts(cfg, m, src, rms, &o);
    HC_TRY(check_panels(m, post, src, *dec, &o, M, b, hist, err));
    if (src->lossless && hist[HC_VERIFY_HIST_BINS - 1] > 0) {
        HC_TRY(source_energy(src, E * N, K, b, &rms, err));
        row_opts(cfg, m, src, rms, &o);
        memset(hist, 0, sizeof hist);
        HC_TRY(check_panels(m, post, src, *dec, &o, M, b, hist, err));
    }
    memcpy(r->err_hist, hist, sizeof hist);
    hc_verify_row_sums t;
    rows_finish(cfg, m, src, b, r, &t, &quant_bound);
    r->nonfinite = t.bad + count_nonfinite(b->bd, E * m->Np);
    return gemm_metrics(cfg, m, src, quant_bound, r, b, err);
}

/* A source given by rows, read once into a float32 copy (*W, caller frees)
 * for the whole-weight path. */
static hc_status materialize(const hc_layer_meta *m, hc_verify_source *src, float **W,
                             hc_error *err)
{
    const int64_t rows = m->E * m->N, K = m->K;
    *W = malloc((size_t)(rows * K) * sizeof(float) + 1);
    HC_CHECK_ALLOC(err, *W, "the source weights");
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * K))
    for (int64_t r = 0; r < rows; r++) source_rows(src, r, 1, K, *W + r * K);
    src->weight = *W;
    return HC_OK;
}

hc_status hc_verify_layer(const hc_layer_config *cfg, const hc_layer_meta *meta,
                          const hc_layer_tensors *post, const hc_verify_source *src,
                          const hc_verify_params *params, hc_verify_metrics *out,
                          hc_error *err)
{
    memset(out, 0, sizeof *out);
    buffers b;
    memset(&b, 0, sizeof b);
    hc_verify_decoder *dec = NULL;
    hc_verify_source s = *src;
    float *W = NULL;
    hc_status st = HC_OK;
    hc_layer_meta unpadded = *meta; /* canonical tensors are (E, N, K): no padding */
    if (params && params->canonical) {
        unpadded.Np = meta->N;
        unpadded.Kp = meta->K;
        meta = &unpadded;
    }
    /* panels decode tiles; canonical tensors are decoded whole (hc_dequant_pre) */
    if (panels_apply(meta, src) && !(params && (params->whole_weight || params->canonical)))
        st = run_panels(cfg, meta, post, &s, params, out, &b, &dec, err);
    else if (s.weight != NULL || (st = materialize(meta, &s, &W, err)) == HC_OK)
        st = run(cfg, meta, post, &s, params, out, &b, err);
    hc_verify_decoder_free(dec);
    free(W);
    buffers_free(&b);
    return st;
}
