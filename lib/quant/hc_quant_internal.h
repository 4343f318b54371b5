/* hc_quant_internal.h - the per-group quantizer shared by the hc_quant_*.c files.
 *
 * One group is a contiguous float buffer (gathered by the driver). A group is
 * quantized in two steps: hq_group_params (scale, zero point, stored bits)
 * and hq_group_codes (one code per element, <= 8 bits). hq_group_sqerr is the
 * squared error of the dequantized group, used by the MSE search. The rules
 * are humming-kernels 0.1.19's quant_weight kernel and quantize_weight
 * (docs/quantization.md), in float32 as there. */
#ifndef HC_QUANT_INTERNAL_H
#define HC_QUANT_INTERNAL_H

#include <stdint.h>

#include "hc_quant.h"

typedef struct {
    hc_quant_desc d;
    const hc_format_info *wf;
    int is_float;      /* float target */
    int e8m0;          /* e8m0 scales: the scale is rounded up to a power of two */
    int bits;
    int tensor;        /* tensor granularity: the scale is the global scale */
    double dmax;       /* Humming's D: float max or 2^(b-1)-1 */
    int32_t qlo, qhi;  /* integer code range after offset: 0 .. 2^b-1 */
    int32_t offset;    /* 2^(b-1) for symmetric integers */
    double lut[256];   /* symmetric meaning of a code (zp modes: the code itself) */
    double lut_lo, lut_hi; /* smallest and largest lut entry */
    int isa;           /* HQ_ISA_*: which implementation of the element loops runs */
    /* a float scale format of at most 8 bits (not e8m0): its codec as tables */
    int scale8;
    uint32_t smax;     /* largest finite magnitude code */
    uint32_t ssign;    /* the sign bit, 0 for an unsigned format */
    int sman, semin;   /* mantissa bits, exponent of the smallest normal */
    float ssub;        /* 2^(sman - semin): subnormal magnitudes to codes */
    float snorm;       /* 2^semin, the smallest normal */
    float slimit;      /* value of code smax: encoded here below it only */
    double sdec[256];  /* hc_format_decode of every code */
} hq_ctx;

/* Implementations of the element loops (hc_quant_row.c); every one gives
 * bit-identical results. AVX512: the AVX2 loops, float-target codes 16 at a
 * time on AVX-512F. */
enum { HQ_ISA_GENERIC = 0, HQ_ISA_AVX2 = 1, HQ_ISA_AVX512 = 2 };

/* The best implementation this CPU runs (AVX2: with F16C). */
int hq_isa_detect(void);

/* The second scale over a group (Humming's weight_scale_2), 1 if none. */
typedef struct {
    float div;         /* float32 value the group scale is divided by before storing */
    double mul;        /* value dequantization multiplies by (the stored one) */
} hq_s2;

typedef struct {
    float s;           /* the float32 scale the codes are computed with */
    float mn_eff;      /* int zp: z * -s ; float zp: mn */
    double val;        /* decoded stored scale x second scale: the dequantization step */
    uint32_t scale_bits;
    int32_t zq;        /* int zero point */
    uint16_t zf_bits;  /* float zero point bits (fp16/bf16) */
    double zp_val;     /* zero point as dequantization uses it */
    int bad;           /* stored scale is not finite */
} hq_group;

/* Context from a checked description, for the element loops of isa. */
void hq_ctx_init(hq_ctx *c, const hc_quant_desc *d, int isa);

/* Humming's group statistics in isa's implementation: max starting at
 * 1e-30, min at -1e-30 (plain compares: inputs are checked finite). The MSE
 * search scales both by its clip ratio afterwards. */
void hq_stats_isa(int isa, const float *x, int64_t n, float *mx, float *mn);
/* Index of the first NaN/Inf of x[0..n), n if none. */
int64_t hq_first_nonfinite(int isa, const float *x, int64_t n);
/* Codes of one group (without the overflow fix of hq_group_codes). */
void hq_codes_isa(const hq_ctx *c, const hq_group *g, const float *x, int64_t n, uint8_t *codes);

/* RTN over one row x of ng groups of gk along K under second scale s2:
 * hq_group_params (ratio 1) and hq_group_codes of every group into g[0..ng)
 * and codes[0..ng*gk), in c->isa's implementation (hc_quant_chain.c). Returns
 * the index of x's first NaN/Inf, ng*gk if none (g and codes are then
 * meaningless). raw: NULL, or the row's hq_raw_row output under the same c
 * (x found finite), which the vector chain then takes for float formats
 * without zero point instead of computing the statistics again. */
int64_t hq_rtn_row(const hq_ctx *c, const float *x, int64_t ng, int64_t gk, const hq_s2 *s2,
                   const float *raw, hq_group *g, uint8_t *codes);

/* hq_raw_scale of the statistics of each of the ng groups of gk along K of
 * row x into raw[0..ng), in c->isa's implementation; returns the index of x's
 * first NaN/Inf, ng*gk if none (raw then meaningless). */
int64_t hq_raw_row(const hq_ctx *c, const float *x, int64_t ng, int64_t gk, float *raw);

/* Codes of 8 groups of n at x, group j's f32(1 / s) in inv[j] and its codes at
 * codes + j * n, as hq_codes_isa gives them (symmetric integer and float
 * targets); returns the mask of the groups done (0: none, where c->isa has no
 * loop for them), the others left to hq_codes_isa. */
int hq_codes8_isa(const hq_ctx *c, const float *inv, const float *x, int64_t n, uint8_t *codes);

/* hc_pack_row in isa's implementation. */
void hq_pack_row_isa(int isa, const uint8_t *c, int64_t len, int bits, uint32_t *w);

/* hc_quantize with the element loops of isa (tests compare the isas). */
hc_status hq_quantize_isa(const hc_quant_desc *d, const float *w, int64_t e, int64_t n,
                          int64_t k, int isa, hc_quant_result *out, hc_error *err);


/* Humming's float32 group scale before any e8m0 rounding. */
float hq_raw_scale(const hq_ctx *c, float mx, float mn);

/* Parameters of one group under second scale s2. */
void hq_group_params(const hq_ctx *c, const float *x, int64_t n, float ratio, const hq_s2 *s2,
                     hq_group *g);
/* hq_group_params from the group's statistics mx, mn (hq_stats_isa). */
void hq_group_params_stats(const hq_ctx *c, float mx, float mn, float ratio, const hq_s2 *s2,
                           hq_group *g);
void hq_group_codes(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                    uint8_t *codes);
double hq_group_sqerr(const hq_ctx *c, const hq_group *g, const float *x,
                      const uint8_t *codes, int64_t n);

/* Per-kind parts (hc_quant_int.c, hc_quant_float.c). */
float hq_int_sym_scale(const hq_ctx *c, float mx, float mn);
float hq_int_zp_scale(const hq_ctx *c, float mx, float mn);
void hq_zp_params(const hq_ctx *c, float mn, hq_group *g);
void hq_int_codes_humming(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                          uint8_t *codes);
void hq_float_codes_humming(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                            uint8_t *codes);

/* Stores v in the scale format: sets g->scale_bits, g->val (= decoded * mul), g->bad. */
void hq_store_scale(const hq_ctx *c, hc_format_id sf, float v, double mul, hq_group *g);
/* Stores a float zero point in fp16/bf16: sets zf_bits and zp_val. */
void hq_store_zp_float(hc_format_id zf, float zp, hq_group *g);

/* Second scales (hc_quant_scale2.c) from the float32 RTN group scales raw.
 * Tensor: one per expert from raw (E, ng); channel: one per row from raw
 * (rows, G). Humming's rules per scale format; means as torch's mean. */
/* sum |v[i]| rounded to double, then to float32 (each to nearest even: the
 * value of math.fsum cast to float32, which the tests' oracle takes, and
 * which the compensated double sum this replaces gave) into *sum, and max
 * v[i] into *mx, in parallel: each |v| is m 2^(e-150) (m its 24-bit
 * significand, e its biased exponent, 1 for a subnormal), so the sum is
 * sum_e S_e 2^(e-150) with S_e the integer sum of the m of exponent e, exact
 * in any order (below 2^39 values). Returns 1, setting nothing, if a value
 * is NaN / Inf or the maximum is a zero (whose sign the order would pick). */
int hq_abs_sum_exact(const float *v, int64_t n, float *sum, float *mx);
void hq_tensor_scale2(const hq_ctx *c, const float *raw, int64_t E, int64_t ng, float *ts);
void hq_channel_scale2(const hq_ctx *c, const float *raw, int64_t rows, int64_t G, float *ws2);

#endif
