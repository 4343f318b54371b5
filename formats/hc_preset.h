/* hc_preset.h - quantization targets and the named presets (w4a16, nvfp4, ...).
 *
 * A target says what a layer becomes: element format, scale format and
 * granularity, zero point, global scale and the activation dtype the kernels
 * will run with. Presets are rows of one table; command-line flags and recipe
 * rules override single fields. Descriptions only: how a target is quantized
 * and laid out is decided elsewhere. */
#ifndef HC_PRESET_H
#define HC_PRESET_H

#include <stdint.h>

#include "hc_format.h"

/* Sentinel for "the checkpoint's param dtype (float16 or bfloat16)". */
#define HC_FMT_PARAM HC_FMT_COUNT

typedef enum { HC_TARGET_ZP_NONE, HC_TARGET_ZP_INT, HC_TARGET_ZP_FLOAT } hc_target_zp;
typedef enum { HC_TARGET_RTN, HC_TARGET_MSE } hc_target_rounding;
/* The second scale (Humming's weight_scale_2_type): none, a float32 one per
 * expert ("tensor") or one per output row in the model dtype ("channel"). */
typedef enum { HC_TARGET_S2_NONE, HC_TARGET_S2_TENSOR, HC_TARGET_S2_CHANNEL } hc_target_s2;

typedef struct {
    hc_format_id weight_format;  /* uintB, intB, signed floatNeXmY */
    hc_format_id scale_format;   /* F16/BF16/F8E4M3/F8E5M2/F8E8M0/F32 or HC_FMT_PARAM */
    int64_t group_size;          /* > 0 group along K; 0 channel; -1 tensor */
    int64_t group_size_n;        /* > 1: block scales group_size_n x group_size */
    hc_target_zp zero_point;
    hc_target_s2 global_scale;   /* second scale: NVFP4's is per tensor */
    hc_format_id activation;     /* F16/BF16/F8E4M3/F8E5M2/INT8/INT4 or HC_FMT_PARAM */
    hc_target_rounding rounding;
} hc_target;

typedef struct {
    const char *name;            /* "w4a16" */
    hc_target target;
    const char *summary;         /* one line for --list-formats */
} hc_preset;

/* Number of presets and the i-th one (static storage). */
int hc_preset_count(void);
const hc_preset *hc_preset_at(int i);
/* Preset by name (case-sensitive); NULL if none. */
const hc_preset *hc_preset_find(const char *name);

/* Replaces HC_FMT_PARAM in t by the checkpoint's param dtype. */
hc_target hc_target_resolve(hc_target t, hc_format_id param_format);

/* Short human description, e.g. "uint4 g128 float16-scales a=float8e4m3". */
void hc_target_describe(const hc_target *t, char *buf, int len);

#endif
