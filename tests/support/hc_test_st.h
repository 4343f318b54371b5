/* hc_test_st.h - a minimal, test-only safetensors reader (whole file in
 * memory, tensors copied out). The real reader lives elsewhere. */
#ifndef HC_TEST_ST_H
#define HC_TEST_ST_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "hc_format.h"
#include "hc_tensor.h"

typedef struct {
    unsigned char *buf;   /* whole file */
    size_t size;
    size_t data_start;    /* 8 + header length */
    cJSON *header;        /* parsed JSON header */
} hc_test_st_file;

/* Reads and parses path. Returns 0, or -1 (file missing/unreadable/malformed). */
int hc_test_st_open(const char *path, hc_test_st_file *f);
/* Whether the file has a tensor of that name. */
int hc_test_st_has(const hc_test_st_file *f, const char *name);
/* Copies tensor `name` into an owned tensor. Returns 0, or -1 if absent/malformed. */
int hc_test_st_get(const hc_test_st_file *f, const char *name, hc_tensor *out);
/* __metadata__[key] as a string, or NULL. */
const char *hc_test_st_meta(const hc_test_st_file *f, const char *key);
void hc_test_st_close(hc_test_st_file *f);

/* Format id of a canonical format name ("uint4", "bfloat16", ...); -1 if unknown. */
int hc_test_format_by_name(const char *name, hc_format_id *out);

#endif
