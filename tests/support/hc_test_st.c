/* hc_test_st.c - minimal test-only safetensors reader (see hc_test_st.h). */
#include "hc_test_st.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_all(const char *path, hc_test_st_file *f)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) return -1;
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
    if (len < 8 || fseek(fp, 0, SEEK_SET) != 0) { fclose(fp); return -1; }
    f->buf = malloc((size_t)len);
    f->size = (size_t)len;
    int ok = f->buf && fread(f->buf, 1, f->size, fp) == f->size;
    fclose(fp);
    return ok ? 0 : -1;
}

int hc_test_st_open(const char *path, hc_test_st_file *f)
{
    memset(f, 0, sizeof *f);
    if (read_all(path, f) != 0) { hc_test_st_close(f); return -1; }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->buf[i];
    if (n > f->size - 8) { hc_test_st_close(f); return -1; }
    f->data_start = 8 + (size_t)n;
    f->header = cJSON_ParseWithLength((const char *)f->buf + 8, (size_t)n);
    if (f->header == NULL) { hc_test_st_close(f); return -1; }
    return 0;
}

int hc_test_st_has(const hc_test_st_file *f, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(f->header, name) != NULL;
}

int hc_test_st_get(const hc_test_st_file *f, const char *name, hc_tensor *out)
{
    memset(out, 0, sizeof *out);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->header, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    hc_dtype dtype;
    if (!cJSON_IsString(dt) || hc_dtype_parse(dt->valuestring, &dtype) != 0) return -1;
    int64_t dims[HC_MAX_DIMS];
    int nd = cJSON_GetArraySize(shape);
    if (!cJSON_IsArray(shape) || nd > HC_MAX_DIMS || cJSON_GetArraySize(off) != 2) return -1;
    for (int i = 0; i < nd; i++) dims[i] = (int64_t)cJSON_GetArrayItem(shape, i)->valuedouble;
    size_t b = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    size_t e = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
    if (e < b || e > f->size - f->data_start) return -1;
    if (hc_tensor_alloc(out, dtype, nd, dims, NULL) != HC_OK) return -1;
    if (out->nbytes != e - b) { hc_tensor_free(out); return -1; }
    memcpy(out->data, f->buf + f->data_start + b, e - b);
    return 0;
}

const char *hc_test_st_meta(const hc_test_st_file *f, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

void hc_test_st_close(hc_test_st_file *f)
{
    free(f->buf);
    cJSON_Delete(f->header);
    memset(f, 0, sizeof *f);
}

int hc_test_format_by_name(const char *name, hc_format_id *out)
{
    for (int i = 0; i < HC_FMT_COUNT; i++) {
        if (strcmp(hc_format_get((hc_format_id)i)->name, name) == 0) {
            *out = (hc_format_id)i;
            return 0;
        }
    }
    return -1;
}
