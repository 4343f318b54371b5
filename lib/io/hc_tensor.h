/* hc_tensor.h - in-memory tensors and safetensors storage dtypes.
 *
 * Storage dtypes are how bytes are laid out in a file (safetensors' "dtype"
 * strings). Number formats (what a code means: uint4, float4e2m1, ...) live in
 * formats/hc_format.h; the two are kept apart on purpose. */
#ifndef HC_TENSOR_H
#define HC_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "hc_error.h"
#include "hc_format.h"

typedef enum {
    HC_DT_BOOL, HC_DT_U8, HC_DT_I8, HC_DT_F8_E5M2, HC_DT_F8_E4M3, HC_DT_F8_E8M0,
    HC_DT_F8_E4M3FNUZ, HC_DT_F8_E5M2FNUZ,
    HC_DT_I16, HC_DT_U16, HC_DT_F16, HC_DT_BF16,
    HC_DT_I32, HC_DT_U32, HC_DT_F32,
    HC_DT_C64, HC_DT_F64, HC_DT_I64, HC_DT_U64,
    HC_DT_F4, HC_DT_F6_E2M3, HC_DT_F6_E3M2,
    HC_DT_COUNT
} hc_dtype;

#define HC_MAX_DIMS 8

/* A dense row-major little-endian tensor. When `owned` is non-zero, data was
 * malloc'ed and hc_tensor_free releases it; otherwise data points into memory
 * owned by someone else (a mapped file) and must outlive the tensor. */
typedef struct {
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    void *data;
    size_t nbytes;
    int owned;
} hc_tensor;

/* safetensors spelling of a dtype ("BF16"); NULL for an invalid value. */
const char *hc_dtype_name(hc_dtype dt);
/* Parses a safetensors dtype string. Returns 0 and sets *out, or -1 if unknown. */
int hc_dtype_parse(const char *name, hc_dtype *out);
/* Bits per element (4 for F4, 6 for F6_*, 8 for BOOL). */
int hc_dtype_bits(hc_dtype dt);

/* Storage dtype of a scale or parameter format (F16, BF16, F8E4M3, F8E5M2,
 * F8E8M0, F32); HC_DT_COUNT for formats that have none of their own. */
hc_dtype hc_dtype_of_format(hc_format_id f);

/* Element count of a shape (1 for ndim 0). Returns -1 on overflow or a negative dim. */
int64_t hc_shape_numel(int ndim, const int64_t *shape);
/* Byte size of dtype x shape; -1 on overflow or when bits are not a whole number of bytes. */
int64_t hc_tensor_byte_size(hc_dtype dt, int ndim, const int64_t *shape);

/* Allocates a zero-filled owned tensor. Caller frees with hc_tensor_free. */
hc_status hc_tensor_alloc(hc_tensor *t, hc_dtype dt, int ndim, const int64_t *shape,
                          hc_error *err);
/* Releases an owned tensor's data and resets it; safe on a zeroed or borrowed tensor. */
void hc_tensor_free(hc_tensor *t);
/* Formats a shape as "[256, 1024]" into buf (always NUL-terminated). */
void hc_shape_format(int ndim, const int64_t *shape, char *buf, size_t len);

#endif
