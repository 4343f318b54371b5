/* hc_test_ckpt.h - fixtures for the quantized-checkpoint tests: a checkpoint
 * directory built in the test (config.json + model.safetensors written with
 * the project's writer), reading one layer back through hc_ckpt_read, and
 * running a whole conversion. */
#ifndef HC_TEST_CKPT_H
#define HC_TEST_CKPT_H

#include <stdint.h>

#include "hc_ckpt.h"
#include "hc_tensor.h"

#define TC_MAX 24

typedef struct {
    char *dir;
    hc_tensor t[TC_MAX];
    char *names[TC_MAX];
    int n;
} tc_ckpt;

/* New temp checkpoint dir. */
void tc_init(tc_ckpt *c, const char *tag);
/* Adds a zero-filled tensor and returns its data. */
void *tc_add(tc_ckpt *c, const char *name, hc_dtype dt, int ndim, const int64_t *shape);
/* Writes config.json (text) and model.safetensors; extra side file if name != NULL. */
void tc_write(tc_ckpt *c, const char *config_json, const char *side_name, const char *side_json);
void tc_free(tc_ckpt *c);

/* Deterministic pseudo-random numbers. */
uint32_t tc_rand(void);
void tc_seed(uint32_t s);

/* Reads layer `prefix` of the written checkpoint (detect + read). Returns the
 * status; on success *out is filled (free with hc_ckpt_layer_free) and
 * *values (if not NULL) gets hc_dequantize of the pre form (E*N*K floats). */
hc_status tc_read_layer(const char *dir, const char *prefix, hc_act_order ao, hc_ckpt_layer *out,
                        float **values, hc_error *err);
/* Reads layer `prefix` three times, through the readers' word-level code
 * paths, the same with code views (hc_ckpt_read_opts.code_views) and
 * through their element-by-element ones (general_codes), and returns how many
 * code words, scale bytes and zero-point words differ (0: bit-identical), or -1
 * if a read fails or the shapes differ. */
int64_t tc_codes_paths_differ(const char *dir, const char *prefix, hc_act_order ao);
/* 1 when reading layer `prefix` with code views takes a view of the input's
 * words, 0 when it copies, -1 if the read fails. */
int tc_codes_viewed(const char *dir, const char *prefix, hc_act_order ao);
/* Detection only. */
hc_status tc_detect(const char *dir, hc_ckpt_config *cfg, hc_error *err);
/* Number of elements where a and b differ (bitwise float compare, NaN==NaN). */
int64_t tc_diff(const float *a, const float *b, int64_t n);

/* "<dir>.<name>" (malloc'ed): an output directory beside the input, never
 * inside it (the converter refuses OUT_DIR inside IN_DIR). */
char *tc_out_dir(const char *dir, const char *name);

/* Runs hc_convert_run on dir -> dir.out (--layout tiles; the CLI run beside it
 * also checks the default canonical layout, see cli_agrees). format: NULL (lossless) or a preset
 * name; act_order as hc_act_order. Returns the status; err has the message.
 * On success *config (if not NULL) gets the output config.json text. */
hc_status tc_convert(const char *dir, const char *format, int act_order, char **config,
                     hc_error *err);
/* As tc_convert, but the output stays in dir.out (tc_free removes it with dir). */
hc_status tc_convert_keep(const char *dir, const char *format, int act_order, char **config,
                          hc_error *err);
/* Field of the output layer record, as JSON text ("true", "\"...\"", "64"), malloc'ed, or NULL. */
char *tc_layer_field(const char *config, const char *layer, const char *key);
/* Converts dir (no target) and asserts that layer's record has key == want
 * (the JSON text, e.g. "true" or "\"tensor\""); fails the test otherwise. */
void tc_expect_converted_field(const char *dir, const char *layer, const char *key,
                               const char *want);

/* Bit stream writer: sets `bits` bits of value v at bit position pos of words. */
void tc_put_bits(uint32_t *words, int64_t pos, int bits, uint32_t v);

#endif
