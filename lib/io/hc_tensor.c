/* hc_tensor.c - storage dtypes and owned tensors (see hc_tensor.h). */
#include "hc_tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int bits;
} dtype_traits[HC_DT_COUNT] = {
    [HC_DT_BOOL] = {"BOOL", 8},       [HC_DT_U8] = {"U8", 8},
    [HC_DT_I8] = {"I8", 8},           [HC_DT_F8_E5M2] = {"F8_E5M2", 8},
    [HC_DT_F8_E4M3] = {"F8_E4M3", 8}, [HC_DT_F8_E8M0] = {"F8_E8M0", 8},
    [HC_DT_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8}, [HC_DT_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8},
    [HC_DT_I16] = {"I16", 16},        [HC_DT_U16] = {"U16", 16},
    [HC_DT_F16] = {"F16", 16},        [HC_DT_BF16] = {"BF16", 16},
    [HC_DT_I32] = {"I32", 32},        [HC_DT_U32] = {"U32", 32},
    [HC_DT_F32] = {"F32", 32},        [HC_DT_C64] = {"C64", 64},
    [HC_DT_F64] = {"F64", 64},        [HC_DT_I64] = {"I64", 64},
    [HC_DT_U64] = {"U64", 64},        [HC_DT_F4] = {"F4", 4},
    [HC_DT_F6_E2M3] = {"F6_E2M3", 6}, [HC_DT_F6_E3M2] = {"F6_E3M2", 6},
};

const char *hc_dtype_name(hc_dtype dt)
{
    if ((int)dt < 0 || dt >= HC_DT_COUNT) return NULL;
    return dtype_traits[dt].name;
}

int hc_dtype_parse(const char *name, hc_dtype *out)
{
    for (int i = 0; i < HC_DT_COUNT; i++) {
        if (strcmp(dtype_traits[i].name, name) == 0) {
            *out = (hc_dtype)i;
            return 0;
        }
    }
    return -1;
}

int hc_dtype_bits(hc_dtype dt)
{
    if ((int)dt < 0 || dt >= HC_DT_COUNT) return 0;
    return dtype_traits[dt].bits;
}

hc_dtype hc_dtype_of_format(hc_format_id f)
{
    switch (f) {
    case HC_FMT_F16: return HC_DT_F16;
    case HC_FMT_BF16: return HC_DT_BF16;
    case HC_FMT_F8E4M3: return HC_DT_F8_E4M3;
    case HC_FMT_F8E5M2: return HC_DT_F8_E5M2;
    case HC_FMT_F8E8M0: return HC_DT_F8_E8M0;
    case HC_FMT_F32: return HC_DT_F32;
    default: return HC_DT_COUNT;
    }
}

int64_t hc_shape_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return -1;
        if (shape[i] != 0 && n > INT64_MAX / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}

int64_t hc_tensor_byte_size(hc_dtype dt, int ndim, const int64_t *shape)
{
    int64_t n = hc_shape_numel(ndim, shape);
    int bits = hc_dtype_bits(dt);
    if (n < 0 || bits == 0) return -1;
    if (n > INT64_MAX / bits) return -1;
    int64_t total_bits = n * bits;
    if (total_bits % 8 != 0) return -1;
    return total_bits / 8;
}

hc_status hc_tensor_alloc(hc_tensor *t, hc_dtype dt, int ndim, const int64_t *shape,
                          hc_error *err)
{
    memset(t, 0, sizeof *t);
    if (ndim < 0 || ndim > HC_MAX_DIMS)
        HC_FAIL(err, HC_ERR_ARG, "tensor rank %d outside 0..%d", ndim, HC_MAX_DIMS);
    int64_t size = hc_tensor_byte_size(dt, ndim, shape);
    if (size < 0) HC_FAIL(err, HC_ERR_ARG, "tensor byte size overflows or is fractional");
    t->data = calloc(size > 0 ? (size_t)size : 1, 1);
    HC_CHECK_ALLOC(err, t->data, "tensor data");
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->nbytes = (size_t)size;
    t->owned = 1;
    return HC_OK;
}

void hc_tensor_free(hc_tensor *t)
{
    if (t == NULL) return;
    if (t->owned) free(t->data);
    memset(t, 0, sizeof *t);
}

void hc_shape_format(int ndim, const int64_t *shape, char *buf, size_t len)
{
    size_t pos = 0;
    if (len == 0) return;
    buf[0] = '\0';
    pos += (size_t)snprintf(buf + pos, len - pos, "[");
    for (int i = 0; i < ndim && pos < len; i++)
        pos += (size_t)snprintf(buf + pos, len - pos, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (pos < len) snprintf(buf + pos, len - pos, "]");
}
