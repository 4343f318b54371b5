/* hc_test_quant_st.h - a minimal, test-only safetensors reader for the quantizer
 * golden tests (whole file in memory, header parsed with cJSON). Not the
 * project's reader; no validation beyond bounds checks. */
#ifndef HC_TEST_QUANT_ST_H
#define HC_TEST_QUANT_ST_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char dtype[16];
    int ndim;
    int64_t shape[8];
    const uint8_t *data;
    size_t nbytes;
} hc_tq_tensor;

typedef struct {
    uint8_t *buf;
    size_t size;
    size_t data_start;
    void *header; /* cJSON * */
} hc_tq_file;

/* 0 on success; -1 if the file cannot be read or its header is malformed. */
int hc_tq_open(const char *path, hc_tq_file *f);
void hc_tq_close(hc_tq_file *f);
/* 0 and fills t if the tensor exists and lies inside the file, else -1. */
int hc_tq_get(const hc_tq_file *f, const char *name, hc_tq_tensor *t);
/* __metadata__[key] as a string (borrowed), or NULL. */
const char *hc_tq_metadata(const hc_tq_file *f, const char *key);
/* Converts an F16/BF16/F32 tensor to float32 (exact); -1 for other dtypes. */
int hc_tq_to_f32(const hc_tq_tensor *t, float *out);
/* Element count of t. */
int64_t hc_tq_numel(const hc_tq_tensor *t);

#endif
