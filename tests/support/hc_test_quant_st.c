/* hc_test_quant_st.c - see hc_test_quant_st.h. */
#include "hc_test_quant_st.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    uint8_t *buf = NULL;
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0) len = ftell(fp);
    if (len > 0 && fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len)) != NULL &&
        fread(buf, 1, (size_t)len, fp) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    *size = len > 0 ? (size_t)len : 0;
    return buf;
}

int hc_tq_open(const char *path, hc_tq_file *f)
{
    memset(f, 0, sizeof *f);
    f->buf = read_all(path, &f->size);
    if (!f->buf || f->size < 8) goto fail;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | f->buf[i];
    if (hlen > f->size - 8) goto fail;
    f->header = cJSON_ParseWithLength((const char *)f->buf + 8, (size_t)hlen);
    if (!f->header) goto fail;
    f->data_start = 8 + (size_t)hlen;
    return 0;
fail:
    hc_tq_close(f);
    return -1;
}

void hc_tq_close(hc_tq_file *f)
{
    cJSON_Delete(f->header);
    free(f->buf);
    memset(f, 0, sizeof *f);
}

int hc_tq_get(const hc_tq_file *f, const char *name, hc_tq_tensor *t)
{
    memset(t, 0, sizeof *t);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->header, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(shape) || cJSON_GetArraySize(off) != 2) return -1;
    snprintf(t->dtype, sizeof t->dtype, "%s", dt->valuestring);
    t->ndim = cJSON_GetArraySize(shape);
    if (t->ndim > 8) return -1;
    for (int i = 0; i < t->ndim; i++) t->shape[i] = (int64_t)cJSON_GetArrayItem(shape, i)->valuedouble;
    double b = cJSON_GetArrayItem(off, 0)->valuedouble, end = cJSON_GetArrayItem(off, 1)->valuedouble;
    if (b < 0 || end < b || f->data_start + (size_t)end > f->size) return -1;
    t->data = f->buf + f->data_start + (size_t)b;
    t->nbytes = (size_t)(end - b);
    return 0;
}

const char *hc_tq_metadata(const hc_tq_file *f, const char *key)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int64_t hc_tq_numel(const hc_tq_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static float half_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 31) u = s | 0x7F800000u | (m << 13);
    else if (e) u = s | ((e + 112) << 23) | (m << 13);
    else {
        float v = (float)m * 0x1p-24f;
        return s ? -v : v;
    }
    float x;
    memcpy(&x, &u, 4);
    return x;
}

int hc_tq_to_f32(const hc_tq_tensor *t, float *out)
{
    int64_t n = hc_tq_numel(t);
    int w = strcmp(t->dtype, "F32") == 0 ? 4 : 2;
    if ((size_t)(n * w) != t->nbytes) return -1;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = t->data + i * w;
        if (w == 4) {
            memcpy(&out[i], p, 4);
        } else {
            uint16_t h = (uint16_t)(p[0] | p[1] << 8);
            if (strcmp(t->dtype, "F16") == 0) out[i] = half_to_f32(h);
            else if (strcmp(t->dtype, "BF16") == 0) {
                uint32_t u = (uint32_t)h << 16;
                memcpy(&out[i], &u, 4);
            } else return -1;
        }
    }
    return 0;
}
