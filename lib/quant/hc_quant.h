/* hc_quant.h - quantize float32 weights into Humming's pre-repack form, and
 * dequantize that form back.
 *
 * Input: float32 weights (E, N, K) row-major (a caller converts fp16/bf16
 * exactly). Output (Humming's canonical tensors, as humming-kernels 0.1.19's
 * HummingWeightSchema.quant_tensor returns them):
 *   codes         (E, N, K*b/32)        uint32 words, little-endian bit stream per row
 *   scales        (E, NS, G)            raw bits of the scale storage format
 *   int zero pts  (E, NS*b/32, G)       uint32 words, packed along NS
 *   float zero pts(E, NS, G)            fp16 bits if the scale format is F16, else bf16
 *   global scale  (E)                   float32: the tensor second scale, or the
 *                                       scale itself for tensor granularity
 *   channel scale_2 (E, N)              per-row second scale in the model dtype
 * with G = K/group_size groups along K and NS = N (or N/group_size_n for block
 * scales). Integer codes (uintB and intB alike) are stored offset-binary as
 * Humming's schema does: symmetric value = code - 2^(b-1).
 *
 * The rules (bit for bit with 0.1.19's quantizer where that is sound, and
 * where and why we deviate) are in docs/quantization.md. */
#ifndef HC_QUANT_H
#define HC_QUANT_H

#include <stdint.h>

#include "hc_bufpool.h"
#include "hc_error.h"
#include "hc_format.h"

#define HC_QUANT_GROUP_CHANNEL 0   /* one group per row: group = K */
#define HC_QUANT_GROUP_TENSOR (-1) /* one group per expert, scale = global scale */

typedef enum { HC_ZP_NONE, HC_ZP_INT, HC_ZP_FLOAT } hc_zp_mode;
typedef enum { HC_QUANTIZER_RTN, HC_QUANTIZER_MSE } hc_quantizer;

typedef struct {
    hc_format_id weight_format; /* uint1..8, int2..8, signed floatNeXmY (N <= 8) */
    hc_format_id scale_format;  /* F16, BF16, F8E4M3, F8E5M2, F8E8M0, F32; unused for tensor */
    int group_size;             /* > 0, HC_QUANT_GROUP_CHANNEL or HC_QUANT_GROUP_TENSOR */
    int group_size_n;           /* > 0: block scales group_size_n x group_size (F32 only) */
    hc_zp_mode zero_point;      /* integer weights only */
    int global_scale;           /* per-expert float32 second scale, Humming's
                                   weight_scale_2_type "tensor" (F16/BF16/F8E4M3/F8E5M2) */
    hc_quantizer quantizer;     /* RTN (Humming) or per-group clip-ratio MSE search */
    int scale_2_channel;        /* per-row second scale, weight_scale_2_type "channel"
                                   (group scales, not F8E8M0) */
    hc_format_id scale_2_format;/* F16/BF16 (the model dtype): storage of the per-row one */
} hc_quant_desc;

typedef struct {
    hc_quant_desc desc;
    int64_t experts, n, k;
    int bits;               /* weight bits b */
    int64_t group_rows;     /* NS: N, or N / group_size_n */
    int64_t group_cols;     /* elements per group along K */
    int64_t groups;         /* G = K / group_cols */
    uint32_t *codes;        /* experts * n * (k*b/32) words */
    int codes_view;         /* codes point into a read-only input mapping (a reader's view
                               of words already in Humming's order): not owned, never
                               written, not freed */
    uint8_t *scales;        /* experts * NS * G elements of scale_bytes each; NULL for tensor */
    int scale_bytes;        /* 1, 2 or 4 */
    uint32_t *zero_points;  /* int zp: experts * (NS*b/32) * G words, else NULL */
    uint16_t *zero_points_f;/* float zp: experts * NS * G half/bf16 bits, else NULL */
    hc_format_id zp_float_format; /* F16 or BF16 (float zero points) */
    float *global_scale;    /* experts values, or NULL */
    uint16_t *scale_2;      /* channel second scale: experts * n bits of
                               desc.scale_2_format, else NULL */
} hc_quant_result;

/* Checks that the description and shape are supported (HC_ERR_ARG / HC_ERR_UNSUPPORTED). */
hc_status hc_quant_check(const hc_quant_desc *d, int64_t experts, int64_t n, int64_t k,
                         hc_error *err);

/* Quantizes w (experts, n, k). NaN/Inf are rejected with HC_ERR_FORMAT naming
 * (expert, row, column); a stored scale that would not be finite (e.g. fp16
 * scales of values near float32 max) is HC_ERR_UNSUPPORTED. On success *out
 * owns its buffers (free with hc_quant_result_free); on failure *out is empty. */
hc_status hc_quantize(const hc_quant_desc *d, const float *w, int64_t experts, int64_t n,
                      int64_t k, hc_quant_result *out, hc_error *err);

/* Row r (0 <= r < experts * n) of a quantizer input as float32: a pointer
 * to its k values, either into the source or to buf (k floats, the
 * caller's thread's) after converting them there. Called from several
 * threads at once. */
typedef const float *(*hc_quant_row_fn)(void *ctx, int64_t row, float *buf);

/* Whether hc_quantize_rows takes d: groups along K only (group or channel
 * scales; with a second scale the rows are read twice, the first time for
 * the group scales the second scale is taken from). */
int hc_quant_rows_ok(const hc_quant_desc *d);

/* hc_quantize reading its input row by row through fn (so no float32 copy of
 * the whole tensor is needed); same results and errors. HC_ERR_ARG unless
 * hc_quant_rows_ok(d). */
hc_status hc_quantize_rows(const hc_quant_desc *d, hc_quant_row_fn fn, void *ctx,
                           int64_t experts, int64_t n, int64_t k, hc_quant_result *out,
                           hc_error *err);

/* hc_quantize_rows with the codes buffer taken from pool (hc_bufpool.h; NULL:
 * calloc); it is still the result's to free, or to give back to the pool. */
hc_status hc_quantize_rows_pool(const hc_quant_desc *d, hc_quant_row_fn fn, void *ctx,
                                int64_t experts, int64_t n, int64_t k, hc_bufpool *pool,
                                hc_quant_result *out, hc_error *err);

void hc_quant_result_free(hc_quant_result *r);

/* Dequantizes the pre-repack form into out (experts, n, k) float32, from the
 * meaning of the formats: (code - zp) * scale [* second scale],
 * decode(code) * scale [* second scale]. */
hc_status hc_dequantize(const hc_quant_result *r, float *out, hc_error *err);

/* Bytes of one stored scale of a scale format (1, 2 or 4); 0 if not a scale format. */
int hc_quant_scale_bytes(hc_format_id scale_format);

/* Value of one stored scale (raw bits of scale_format); NaN for NaN codes. */
double hc_quant_scale_value(hc_format_id scale_format, uint32_t bits);

/* Row packing (spec section 3): rows x len codes of `bits` bits each
 * (len*bits % 32 == 0) <-> rows x len*bits/32 little-endian words. */
void hc_pack_rows(const uint8_t *codes, int64_t rows, int64_t len, int bits, uint32_t *out);
/* One row of hc_pack_rows, on the calling thread. */
void hc_pack_row(const uint8_t *codes, int64_t len, int bits, uint32_t *out);
void hc_unpack_rows(const uint32_t *words, int64_t rows, int64_t len, int bits, uint8_t *out);

/* Humming's float-target code (quant_weight.cuh quant_buffer) of y = x * inv
 * already computed in float32: re-bias, truncate/round-up candidates, ties
 * toward zero, negative zero kept. |y| is saturated to the format max first
 * (which never changes an RTN code). */
uint32_t hc_quant_float_code_humming(const hc_format_info *f, float y);

#endif
