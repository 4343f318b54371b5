/* hc_model_config.h - what a checkpoint's config.json says about quantization.
 *
 * Reads config.json (torch_dtype, quantization_config) of a Humming-format
 * checkpoint (quant_method "humming", layout spec section 7.8). */
#ifndef HC_MODEL_CONFIG_H
#define HC_MODEL_CONFIG_H

#include <stdint.h>

#include "hc_error.h"
#include "hc_format.h"
#include "hc_layout.h"

/* The weight description of a Humming-format checkpoint: the canonical keys
 * of humming-kernels 0.1.19's HummingWeightSchema / HummingInputSchema (each
 * field name first, then its aliases in Humming's order), with Humming's
 * defaults for absent fields. */
typedef struct {
    hc_format_id weight_format;    /* signed ints already mapped to unsigned */
    hc_format_id scale_format;     /* default: the param dtype */
    hc_format_id param_format;     /* torch_dtype: F16 or BF16 */
    hc_scale_type scale_type;      /* default from group sizes; group scales with
                                      weight_scale_2_type "tensor": GROUP_TENSOR */
    int has_scale_2;               /* a weight_scale_2 (weight_scale_2_type "tensor" or "channel") */
    int scale_2_channel;           /* it is per output row ("channel"), with group scales */
    int64_t group_size;            /* 0: channel-wise (<= 0 in the file) */
    int64_t group_size_n;          /* > 1: block scales */
    int has_zero_point;
    int is_fp_zero_point;
    int has_act;                   /* a_dtype given: the activations to plan for */
    hc_format_id act_format;
    int allow_fallback;            /* vLLM's allow_fallback (default true) */
} hc_humming_qconfig;

/* What config.json says about the checkpoint as a whole. */
typedef struct {
    hc_format_id param_format;     /* torch_dtype (float32 models: F16) */
    char model_type[64];           /* "" if absent */
    char quant_method[64];         /* quantization_config.quant_method, "" if none */
    int is_float;                  /* no quantization_config */
} hc_model_info;

/* Parses config.json text for hc_model_info (path used in messages only).
 * HC_ERR_FORMAT on malformed JSON. */
hc_status hc_model_info_parse(const char *json_text, const char *path, hc_model_info *out,
                              hc_error *err);

/* Parses the JSON text of config.json (`path` is used in messages only).
 * Fails with HC_ERR_FORMAT on malformed JSON or fields of the wrong type, and
 * HC_ERR_UNSUPPORTED when quant_method is not "humming" or the config asks
 * for what we do not read: per-layer "+:" dynamic rules, static or grouped
 * activation scales, Hadamard rotation. */
hc_status hc_humming_qconfig_parse(const char *json_text, const char *path,
                                   hc_humming_qconfig *out, hc_error *err);

/* Reads a whole JSON file into a NUL-terminated malloc'ed buffer (caller
 * frees): hc_fs_read_file with the HC_FS_MAX_JSON limit (a FIFO, device or
 * file over 64 MiB is refused, naming it). *len_out (may be NULL) receives
 * the length without the NUL. */
hc_status hc_file_read_all(const char *path, char **out, size_t *len_out, hc_error *err);

/* The activations vLLM 0.33 runs a Humming checkpoint's layers with on
 * sm: the config's a_dtype, or the model dtype when there is none or when
 * vLLM's allow_fallback (default on) prefers 16-bit activations, which it
 * does for 8-bit ones next to group-wise weight scales. */
hc_format_id hc_humming_qconfig_activation(const hc_humming_qconfig *q);

/* Parses an activation dtype name (float16, bfloat16, float8e4m3, float8e5m2,
 * int8, int4; torch spellings accepted). */
hc_status hc_activation_parse(const char *name, hc_format_id *out, hc_error *err);

/* Parses an arch name: "sm75", "sm_90", "90", "sm90a" ... into 75..120. */
hc_status hc_arch_parse(const char *name, int *sm_out, hc_error *err);

#endif
