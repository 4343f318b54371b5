/* hc_verify.h - CPU reference for the kernel-ready tensors: decoder, GEMM,
 * metrics (docs/verification.md).
 *
 * The decoder reads the post tensors (tile layout, permuted scales, zero
 * points, global scale, bias) and inverts spec 4.3-4.7 and 5.3-5.7 on its own:
 * it shares no code with the writer (hc_repack.c, hc_layout_scales.c). It
 * serves as the reference GPU kernels are checked against and as the fallback
 * where no GPU exists. Values are computed as the spec's meaning says,
 * (code - zero) * scale * global, in double and rounded once to float32 (spec
 * checkpoint-formats 11: "recommended reader arithmetic"). */
#ifndef HC_VERIFY_H
#define HC_VERIFY_H

#include <stdint.h>

#include "hc_error.h"
#include "hc_layout.h"

typedef enum { HC_VERIFY_AUTO, HC_VERIFY_GPU, HC_VERIFY_CPU, HC_VERIFY_OFF } hc_verify_mode;

/* "auto", "gpu", "cpu", "off" -> mode; returns 0 or -1. */
int hc_verify_mode_parse(const char *s, hc_verify_mode *out);
const char *hc_verify_mode_name(hc_verify_mode m);

#define HC_VERIFY_HIST_BINS 9

/* Per-layer results. JSON keys in docs/report.md are the field names. */
typedef struct {
    double weight_rel_err, weight_snr_db;       /* decoded vs source weight */
    double gemm_rel_err, gemm_snr_db, gemm_cosine, gemm_max_abs_err; /* 16-bit activations */
    int has_qact;                               /* 8/4-bit activations: the same with */
    double qact_rel_err, qact_snr_db, qact_cosine, qact_max_abs_err; /* quantized x */
    int64_t nonfinite;                          /* NaN/Inf in decoded W, bias, GEMM outputs */
    int has_gpu;                                /* the GPU kernel ran on the post tensors: */
    double gpu_rel_err, gpu_max_abs_err;        /* its output vs the CPU GEMM on the decoded */
    double gpu_bound;                           /* weights (same, quantized, activations) */
    int lossless;                               /* lossless_mismatches is meaningful */
    int64_t lossless_mismatches;
    int64_t step_violations;                    /* float source: elements off by more
                                                   than one step of their group */
    double weight_bound, gemm_bound, qact_bound;  /* the bounds applied */
    int tokens;                                 /* activation rows used */
    int calibrated;                             /* rows came from a calibration file */
    int64_t err_hist[HC_VERIFY_HIST_BINS]; /* |decoded - source| / rms(source) per
                                              element: exact, <1e-7, [1e-7,1e-6), ...,
                                              [1e-2,1e-1), >=1e-1 */
    int pass;
    char reason[256];                           /* why it failed, or "ok" */
} hc_verify_metrics;

/* Row r (0 <= r < E * N) of a source (E, N, K) as K floats: in buf (K
 * floats), or a pointer elsewhere. Called from several threads at once. */
typedef const float *(*hc_verify_row_fn)(void *ctx, int64_t r, float *buf);
/* Columns [k0, k1) of that row into buf (k1 - k0 floats): the floats the
 * row function gives there. Called from several threads at once. */
typedef void (*hc_verify_part_fn)(void *ctx, int64_t r, int64_t k0, int64_t k1, float *buf);

/* The source a layer is compared with: W (E, N, K) float32, optional bias
 * (E, N). `lossless`: the repack must reproduce W exactly. weight may be
 * NULL when rows is given: then the rows are read through it, 64 at a time
 * where panels apply, else once into a float32 copy. */
typedef struct {
    const float *weight;
    const float *bias;
    int lossless;
    int float_source;  /* weight is the original float checkpoint: judge the
                          quantization error with hc_verify_quant_bound */
    double clip;       /* float source: largest clipping, as a fraction of a group's
                          amax, the quantizer may apply (0 rtn, 0.5 mse) */
    hc_verify_row_fn rows;  /* with weight NULL: the source rows */
    void *rows_ctx;
    hc_verify_part_fn part; /* optional, with rows: parts of a row (same ctx), read a
                               slab of a panel at a time (in cache) instead of whole rows */
    const double *energy;   /* optional (E * N): each row's hc_verify_row_energy, taken
                               where the rows were read before (the quantizer's pass);
                               NULL: the verifier reads the source for them */
} hc_verify_source;

typedef struct {
    int tokens;            /* M activation rows (default 16 when <= 0) */
    const float *act;      /* optional (act_rows, K) rows; NULL: random */
    int act_rows;          /* rows available in act; fewer than tokens are cycled */
    uint64_t seed;         /* for random activations */
    int use_gpu;           /* also run the GPU kernel (lib/verify/hc_gpu.h) and compare */
    int canonical;         /* post holds canonical (row-packed, pre) tensors: decoded
                              from their meaning (hc_dequant_pre), not from tiles */
    int whole_weight;      /* decode the whole weight at once even where panels of 64
                              rows apply (the same metrics; tests compare the two) */
} hc_verify_params;

/* Verifies one layer: decodes post (tiles, or canonical tensors where
 * params->canonical), compares with the source, runs both
 * GEMMs (and the quantized-activation GEMM for 8/4-bit activations), fills
 * *out including pass/fail against the format's bound. A failed check is not
 * an error: the function returns HC_OK and out->pass == 0. Errors are for
 * malformed post tensors (shape/dtype) and allocation failure. */
hc_status hc_verify_layer(const hc_layer_config *cfg, const hc_layer_meta *meta,
                          const hc_layer_tensors *post, const hc_verify_source *src,
                          const hc_verify_params *params, hc_verify_metrics *out,
                          hc_error *err);

/* ---- building blocks (hc_verify_decode.c, hc_dequant_pre.c, ...) ------- */

/* Decodes the post tensors into W (E, Np, Kp) float32 (caller-allocated) and,
 * if bias is non-NULL and post has a bias, the un-permuted bias (E, Np). */
hc_status hc_verify_decode(const hc_layer_config *cfg, const hc_layer_meta *meta,
                           const hc_layer_tensors *post, float *W, float *bias,
                           hc_error *err);

/* The decoder of one layer's tile weights, read panel by panel (64 rows of
 * N at a time) so that no full float32 copy of the weights is needed. Opening
 * checks post (hc_verify_check_post), decodes scales and zero points, and,
 * if bias is non-NULL and post has a bias, fills bias (E, Np). Flat weights
 * (0.1.19 use_flat_weight) are refused with HC_ERR_ARG. post must outlive
 * the decoder; free with hc_verify_decoder_free (NULL is fine). */
typedef struct hc_verify_decoder hc_verify_decoder;
hc_status hc_verify_decoder_open(const hc_layer_config *cfg, const hc_layer_meta *meta,
                                 const hc_layer_tensors *post, float *bias,
                                 hc_verify_decoder **out, hc_error *err);
/* Rows 64 nb .. 64 nb + 63 of expert e into W (64, Kp): the values
 * hc_verify_decode puts there. Safe to call from several threads. */
void hc_verify_decode_panel(const hc_verify_decoder *d, int64_t e, int64_t nb, float *W);
/* Columns [k0, k1) of that panel (multiples of the tile's 256 / act_bits
 * rows of k) into W (64 rows, stride ldw, column 0 at k0). */
void hc_verify_decode_panel_part(const hc_verify_decoder *d, int64_t e, int64_t nb, int64_t k0,
                                 int64_t k1, float *W, int64_t ldw);
void hc_verify_decoder_free(hc_verify_decoder *d);
/* Tests: decode panels element by element only (the vector forms give the
 * same floats). */
void hc_verify_decoder_portable(hc_verify_decoder *d);
/* Tests: decode panels with at most the AVX2 forms (the same floats). */
void hc_verify_decoder_avx2(hc_verify_decoder *d);

/* Checks dtype and shape of every post tensor against the plan. */
hc_status hc_verify_check_post(const hc_layer_config *cfg, const hc_layer_meta *meta,
                               const hc_layer_tensors *post, hc_error *err);

/* Dequantizes the row-packed (pre) tensors of a Humming-format layer from
 * their meaning into W (E, N, K) float32 and, if bias != NULL and pre has a
 * bias, bias (E, N). */
hc_status hc_dequant_pre(const hc_layer_config *cfg, const hc_layer_meta *meta,
                         const hc_layer_tensors *pre, float *W, float *bias, hc_error *err);

/* hc_dequant_pre in pieces: the checks of pre (HC_ERR_FORMAT as
 * hc_dequant_pre), then row r (0 <= r < E * N) into out (K floats) on
 * checked tensors (safe from several threads), and the bias (E, N) when pre
 * has one. */
hc_status hc_dequant_pre_check(const hc_layer_config *cfg, const hc_layer_meta *meta,
                               const hc_layer_tensors *pre, hc_error *err);
void hc_dequant_pre_row(const hc_layer_config *cfg, const hc_layer_meta *meta,
                        const hc_layer_tensors *pre, int64_t r, float *out);
/* Columns [k0, k1) of that row into out (k1 - k0 floats): the same floats.
 * portable 1: element by element only (tests; 0 the fastest form). */
void hc_dequant_pre_row_part(const hc_layer_config *cfg, const hc_layer_meta *meta,
                             const hc_layer_tensors *pre, int64_t r, int64_t k0, int64_t k1,
                             int portable, float *out);
void hc_dequant_pre_bias(const hc_layer_config *cfg, const hc_layer_meta *meta,
                         const hc_layer_tensors *pre, float *bias);

/* Whether the repack of these pre tensors is lossless: everything except
 * int16 weight scales (5.7) and fused e8m0 groups that must be shifted (5.3). */
int hc_dequant_pre_lossless(const hc_layer_config *cfg, const hc_layer_meta *meta,
                            const hc_layer_tensors *pre);

/* Dot products of up to `rows` (<= 4) token rows of x (stride K) with one
 * weight row w, in hc_verify_gemm's blocked float32 arithmetic; out[t] for
 * t < rows. hc_verify_dot4_impl(1) is the portable form, (0) the fastest
 * this CPU runs; both give the same results. */
typedef void (*hc_dot4_fn)(const float *x, int64_t K, int64_t rows, const float *w,
                           double *out);
hc_dot4_fn hc_verify_dot4_impl(int portable);

/* y (E, M, N) = x (M, K) . W(E, N, Kw)^T [+ bias (E, Nb)], over the first N rows
 * and K columns of W (row stride Kw, expert stride Nw*Kw): float32 FMA within
 * blocks of 64 k, double across blocks (hc_dot4_fn), OpenMP over (e, n). */
void hc_verify_gemm(const float *x, int64_t M, int64_t K, const float *W, int64_t E,
                    int64_t N, int64_t Nw, int64_t Kw, const float *bias, int64_t Nb, float *y);
/* The same sums for `rows` consecutive weight rows W (row stride Kw), in
 * passes over K so that the tokens' slice stays in cache: y[t * y_stride + r]
 * = x_t . W_r [+ bias[r]] for t < M, r < rows, equal to hc_verify_gemm's.
 * Serial; HC_ERR_NOMEM (nothing written) when its sums cannot be allocated. */
hc_status hc_verify_gemm_rows(const float *x, int64_t M, int64_t K, const float *W,
                              int64_t rows, int64_t Kw, const float *bias, float *y,
                              int64_t y_stride);

/* Activations for hc_verify_gemm_acc: x (M, K), kept (it must outlive a:
 * the K % 8 tails are read from it) and a 64-byte aligned copy of its
 * first K / 8 * 8 columns: where the AVX-512 form runs, the tokens
 * interleaved in pairs (8 k of token 2p, then the same 8 k of token
 * 2p + 1: one 512-bit register holds both tokens' lanes), else the rows,
 * each 64 bytes further apart than K (no two tokens' rows in one cache
 * set). form 0: the fastest this CPU runs (AVX-512, else AVX2+FMA), 1
 * portable (fmaf), 2 at most AVX2+FMA; every form gives the same doubles.
 * Where a copy cannot be allocated the AVX2 form reads x in place
 * (nothing fails). Free with hc_verify_act_free. */
typedef struct {
    const float *x;  /* the activations (M, K) */
    const float *xb; /* the rows the AVX2 / portable blocks read, stride xs */
    int64_t M, K, xs;
    int form;
    float *pairs, *xpad; /* owned: the AVX-512 pairs, the padded rows */
} hc_verify_act;
void hc_verify_act_init(hc_verify_act *a, const float *x, int64_t M, int64_t K, int form);
void hc_verify_act_free(hc_verify_act *a);

/* hc_verify_gemm_rows in parts along K: acc (hc_verify_gemm_acc_len
 * doubles, zeroed) takes the sums of columns [k0, k1) (k0 a multiple of 64:
 * the blocks fall where they fall in one call) of the activations a and W
 * (rows, ldw), whose column 0 is k0; parts in k order; end writes
 * y[t * y_stride + r] [+ bias[r]]. The same floats as hc_verify_gemm_rows. */
int64_t hc_verify_gemm_acc_len(int64_t rows, int64_t M);
void hc_verify_gemm_acc(const hc_verify_act *a, int64_t k0, int64_t k1, const float *W,
                        int64_t rows, int64_t ldw, double *acc);
void hc_verify_gemm_end(const double *acc, int64_t M, int64_t rows, const float *bias, float *y,
                        int64_t y_stride);

/* Per-token activation quantization as the kernel does (spec 6.2), in place:
 * x (M, K) becomes the dequantized quantized values. fmt: F8E4M3, F8E5M2,
 * INT8, INT4; others leave x unchanged. */
void hc_verify_quantize_act(hc_format_id fmt, float *x, int64_t M, int64_t K);

/* Rounds x to the 16-bit param format (F16/BF16) in place. */
void hc_verify_round_act(hc_format_id fmt, float *x, int64_t n);

/* Random activations (M, K) with per-channel spread, deterministic in seed. */
void hc_verify_random_act(float *x, int64_t M, int64_t K, uint64_t seed);

/* Metrics of `got` against `ref` (n values). snr_db is capped at 200 (exact). */
typedef struct {
    double rel_err, snr_db, cosine, max_abs_err;
    int64_t nonfinite;     /* in got */
} hc_verify_cmp;
void hc_verify_compare(const float *got, const float *ref, int64_t n, hc_verify_cmp *out);

/* Error bounds (docs/verification.md). */
double hc_verify_weight_bound(hc_format_id weight_format, int lossless);
double hc_verify_act_bound(hc_format_id act_format);
/* Bound on weight_rel_err for a layer quantized from the float weights W
 * (E, N, K): every element's rounding error is at most one step of its
 * group, a step at most c * amax(group), so rel_err <= c * sqrt(sum over
 * groups of n_g * amax_g^2) / ||W||. Holds for rtn and for mse (which never
 * exceeds rtn's error per group). docs/verification.md. */
double hc_verify_quant_bound(const hc_layer_config *cfg, const hc_layer_meta *m, const float *W,
                             int64_t E, int64_t N, int64_t K);
/* Elements of got (E, N, K) farther from W than one step (+ clip) of their
 * group's amax: rounding never moves an element more than that, a corrupted
 * code almost always does. */
int64_t hc_verify_step_violations(const hc_layer_config *cfg, const hc_layer_meta *m,
                                  const float *W, const float *got, double clip, int64_t E,
                                  int64_t N, int64_t K);
/* Both of the above in one walk over the groups: *bound and *violations
 * (groups over several rows; groups one row high: hc_verify_row_check). */
void hc_verify_quant_check(const hc_layer_config *cfg, const hc_layer_meta *m, const float *W,
                           const float *got, double clip, int64_t E, int64_t N, int64_t K,
                           double *bound, int64_t *violations);
/* The weight checks of one row in one pass (docs/verification.md, "Weight
 * sums"): sums over the elements where got is finite, in 8 double lanes
 * (element k in lane k mod 8) added in a fixed tree; counts of bad (non-
 * finite got), mism (got != ref, NaN included), violations (|got - ref| >
 * limit * amax of the element's group) and the error histogram, added to
 * hist: bin 0 exact, bin j for 10^(j-9) <= d/rms < 10^(j-8) (clamped), the
 * last also for NaN/Inf d. portable 1 runs the plain loop, 2 at most AVX2,
 * 0 the fastest this CPU runs (AVX-512): the same bits. */
typedef struct {
    double err2, ref2, got2, dot, maxe;
    double amax_energy;  /* sum over the row's groups of n_g * amax_g^2 (gk > 0) */
    int64_t bad, mism, violations;
} hc_verify_row_sums;
typedef struct {
    int64_t gk;      /* group width along the row; 0: no group statistics */
    double limit;    /* step limit, a fraction of the group amax (hc_verify_step_limit) */
    double rms, thr[HC_VERIFY_HIST_BINS];  /* hc_verify_hist_thresholds */
    int portable;
} hc_verify_row_opts;
void hc_verify_row_check(const hc_verify_row_opts *o, const float *got, const float *ref,
                         int64_t K, hc_verify_row_sums *out, int64_t *hist);
/* hc_verify_row_check in parts along the row: begin, parts of the row in
 * order (every part but the last a multiple of 8 and of the group width
 * long: its groups start at its start), end. The same bits as one call. */
typedef struct {
    double err2[8], ref2[8], got2[8], dot[8], maxe[8], amax_energy;
    int64_t n, bad, mism, viol, zero, valid, inf, reach[HC_VERIFY_HIST_BINS];
} hc_verify_row_state;
void hc_verify_row_begin(hc_verify_row_state *s);
void hc_verify_row_part(const hc_verify_row_opts *o, const float *got, const float *ref,
                        int64_t n, hc_verify_row_state *s);
void hc_verify_row_end(const hc_verify_row_opts *o, const hc_verify_row_state *s,
                       hc_verify_row_sums *out, int64_t *hist);
/* Sum of squares of one row in the same lanes and tree. */
double hc_verify_row_energy(const float *ref, int64_t K, int portable);
/* hc_verify_row_energy in parts: elements [k0, k0 + n) of the row (k0 a
 * multiple of 8) added to the 8 lanes l (zeroed at the row's start); the
 * tree of the lanes after the last part is hc_verify_row_energy's value. */
void hc_verify_row_energy_part(const float *ref, int64_t n, double *l, int portable);
double hc_verify_lanes_total(const double *l);
/* The histogram thresholds of an rms (thr[j] = rms * 10^(j-9), j >= 2). */
void hc_verify_hist_thresholds(double rms, double *thr);
/* Groups one row high (channel, group): the per-row group statistics apply. */
int hc_verify_group_rows_ok(const hc_layer_meta *m);
/* Group width along K and the step limit of a float source. */
int64_t hc_verify_group_width(const hc_layer_meta *m, int64_t K);
double hc_verify_step_limit(const hc_layer_config *cfg, const hc_layer_meta *m, double clip);
/* The bound of weight_rel_err from a layer's sum of n_g * amax_g^2 and its
 * source energy (sum of w^2). */
double hc_verify_bound_of(const hc_layer_config *cfg, const hc_layer_meta *m,
                          double amax_energy, double energy);
/* hc_verify_compare's metrics from the total of row sums (added in row order). */
void hc_verify_rows_metrics(const hc_verify_row_sums *total, hc_verify_cmp *out);


#endif
