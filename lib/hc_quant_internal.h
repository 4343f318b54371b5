/* hc_quant_internal.h - the per-group quantizer shared by the hc_quant_*.c files.
 *
 * One group is a contiguous float buffer (gathered by the driver). A group is
 * quantized in two steps: hq_group_params (scale, zero point, stored bits)
 * and hq_group_codes (one code per element, <= 8 bits). hq_group_sqerr is the
 * squared error of the dequantized group, used by the MSE search. */
#ifndef HC_QUANT_INTERNAL_H
#define HC_QUANT_INTERNAL_H

#include <stdint.h>

#include "hc_quant.h"

typedef enum {
    HQ_HUMMING,   /* Humming's rules: codes from the float32 scale (bit exact) */
    HQ_MX,        /* e8m0 scales, OCP MX rules: codes from the stored 2^e */
    HQ_EFFECTIVE  /* fp8 scales x global scale: codes from decode(stored) * global */
} hq_mode;

typedef struct {
    hc_quant_desc d;
    const hc_format_info *wf;
    hq_mode mode;
    int is_float;      /* float target */
    int bits;
    int tensor;        /* tensor granularity: the scale is the global scale */
    double dmax;       /* Humming's D: float max or 2^(b-1)-1 */
    int32_t qlo, qhi;  /* integer code range after offset: 0 .. 2^b-1 */
    int32_t offset;    /* 2^(b-1) for symmetric integers */
    double lut[256];   /* symmetric meaning of a code (zp modes: the code itself) */
} hq_ctx;

typedef struct {
    float s;           /* Humming: the float32 scale the codes are computed with */
    float mn_eff;      /* Humming int zp: mn' ; float zp: mn */
    double val;        /* decoded stored scale (x global): the dequantization step */
    uint32_t scale_bits;
    int32_t zq;        /* int zero point */
    uint16_t zf_bits;  /* float zero point bits (fp16/bf16) */
    double zp_val;     /* zero point as dequantization uses it */
    int bad;           /* stored scale is not finite */
} hq_group;

/* Context from a checked description. */
void hq_ctx_init(hq_ctx *c, const hc_quant_desc *d);

/* Humming's group statistics (spec 2.2), with both ends scaled by ratio. */
void hq_stats(const float *x, int64_t n, float ratio, float *mx, float *mn);

/* Unrounded float32 scale of a group (Humming rules), used for global scales. */
float hq_raw_scale(const hq_ctx *c, float mx, float mn);

/* Parameters of one group; gs is the expert's global scale (1 if none). */
void hq_group_params(const hq_ctx *c, const float *x, int64_t n, float ratio, float gs,
                     hq_group *g);
void hq_group_codes(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                    uint8_t *codes);
double hq_group_sqerr(const hq_ctx *c, const hq_group *g, const float *x,
                      const uint8_t *codes, int64_t n);

/* Per-kind parts (hc_quant_int.c, hc_quant_float.c, hc_quant_mx.c). */
float hq_int_sym_scale(const hq_ctx *c, float mx, float mn);
float hq_int_zp_scale(const hq_ctx *c, float mx, float mn);
void hq_zp_params(const hq_ctx *c, float mx, float mn, hq_group *g);
void hq_int_codes_humming(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                          uint8_t *codes);
void hq_float_codes_humming(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                            uint8_t *codes);
void hq_mx_params(const hq_ctx *c, const float *x, int64_t n, float ratio, hq_group *g);
void hq_codes_effective(const hq_ctx *c, const hq_group *g, const float *x, int64_t n,
                        uint8_t *codes);

/* Stores v in the scale format: sets g->scale_bits, g->val (= decoded * gs), g->bad. */
void hq_store_scale(hc_format_id sf, float v, float gs, hq_group *g);
/* Stores a float zero point in fp16/bf16: sets zf_bits and zp_val. */
void hq_store_zp_float(hc_format_id zf, float zp, hq_group *g);

#endif
