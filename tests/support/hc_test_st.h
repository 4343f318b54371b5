/* hc_test_st.h - test conveniences over the real safetensors reader:
 * owned, aligned copies of tensors and float32 conversion. */
#ifndef HC_TEST_ST_H
#define HC_TEST_ST_H

#include "hc_safetensors.h"
#include "hc_tensor.h"

typedef struct {
    hc_st_file *f;
} hc_test_st_file;

/* 0 on success; -1 if the file cannot be read or is malformed. */
int hc_test_st_open(const char *path, hc_test_st_file *f);
/* 1 if the tensor exists. */
int hc_test_st_has(const hc_test_st_file *f, const char *name);
/* 0 and an owned aligned copy in *out (free with hc_tensor_free), else -1. */
int hc_test_st_get(const hc_test_st_file *f, const char *name, hc_tensor *out);
/* __metadata__[key] (borrowed), or NULL. */
const char *hc_test_st_meta(const hc_test_st_file *f, const char *key);
void hc_test_st_close(hc_test_st_file *f);
/* Converts an F16/BF16/F32 tensor to float32 (exact); -1 for other dtypes. */
int hc_test_st_to_f32(const hc_tensor *t, float *out);

#endif
