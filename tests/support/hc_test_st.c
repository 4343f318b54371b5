/* hc_test_st.c - test conveniences over the real safetensors reader. */
#include "hc_test_st.h"

#include <string.h>

#include "hc_format.h"

int hc_test_st_open(const char *path, hc_test_st_file *f)
{
    f->f = NULL;
    return hc_st_open(path, &f->f, NULL) == HC_OK ? 0 : -1;
}

int hc_test_st_has(const hc_test_st_file *f, const char *name)
{
    return hc_st_find(f->f, name) != NULL;
}

int hc_test_st_get(const hc_test_st_file *f, const char *name, hc_tensor *out)
{
    const hc_st_tensor *t = hc_st_find(f->f, name);
    if (t == NULL || hc_tensor_alloc(out, t->dtype, t->ndim, t->shape, NULL) != HC_OK) return -1;
    memcpy(out->data, t->data, t->nbytes);
    return 0;
}

const char *hc_test_st_meta(const hc_test_st_file *f, const char *key)
{
    return hc_st_metadata_get(f->f, key);
}

void hc_test_st_close(hc_test_st_file *f)
{
    hc_st_close(f->f);
    f->f = NULL;
}

int hc_test_st_to_f32(const hc_tensor *t, float *out)
{
    int64_t n = hc_shape_numel(t->ndim, t->shape);
    const uint16_t *h = t->data;
    if (t->dtype == HC_DT_F32) {
        memcpy(out, t->data, (size_t)n * sizeof *out);
        return 0;
    }
    if (t->dtype != HC_DT_F16 && t->dtype != HC_DT_BF16) return -1;
    for (int64_t i = 0; i < n; i++)
        out[i] = t->dtype == HC_DT_F16 ? hc_f16_to_f32(h[i]) : hc_bf16_to_f32(h[i]);
    return 0;
}
