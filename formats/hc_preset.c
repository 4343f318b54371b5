/* hc_preset.c - the preset table (see hc_preset.h). */
#include "hc_preset.h"

#include <stdio.h>
#include <string.h>

#define P_ HC_FMT_PARAM
/* name, {weight, scale, group, group_n, zero point, global, activation, rounding}, summary */
static const hc_preset presets[] = {
    {"w1a16", {HC_FMT_UINT1, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint1 group 128, 16-bit activations"},
    {"w2a16", {HC_FMT_UINT2, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint2 group 128, 16-bit activations"},
    {"w3a16", {HC_FMT_UINT3, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint3 group 128, 16-bit activations"},
    {"w4a16", {HC_FMT_UINT4, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint4 group 128 (GPTQ-like), 16-bit activations"},
    {"w5a16", {HC_FMT_UINT5, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint5 group 128, 16-bit activations"},
    {"w6a16", {HC_FMT_UINT6, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint6 group 128, 16-bit activations"},
    {"w7a16", {HC_FMT_UINT7, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint7 group 128, 16-bit activations"},
    {"w8a16", {HC_FMT_UINT8, P_, 128, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "uint8 group 128, 16-bit activations"},
    {"w4a8", {HC_FMT_UINT4, P_, 128, 0, HC_TARGET_ZP_NONE, 0, HC_FMT_F8E4M3, HC_TARGET_RTN}, "uint4 group 128, fp8 e4m3 activations"},
    {"w4a8-int8", {HC_FMT_UINT4, P_, 128, 0, HC_TARGET_ZP_NONE, 0, HC_FMT_INT8, HC_TARGET_RTN}, "uint4 group 128, int8 activations"},
    {"w8a8", {HC_FMT_F8E4M3, P_, 0, 0, HC_TARGET_ZP_NONE, 0, HC_FMT_F8E4M3, HC_TARGET_RTN}, "fp8 e4m3 per-channel weights, fp8 e4m3 activations"},
    {"w8a8-int8", {HC_FMT_INT8, P_, 0, 0, HC_TARGET_ZP_NONE, 0, HC_FMT_INT8, HC_TARGET_RTN}, "int8 per-channel weights, int8 activations"},
    {"w4a4", {HC_FMT_INT4, P_, 0, 0, HC_TARGET_ZP_NONE, 0, HC_FMT_INT4, HC_TARGET_RTN}, "int4 per-channel weights, int4 activations"},
    {"mxfp4", {HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "OCP MXFP4: fp4 e2m1, e8m0 scale per 32, 16-bit activations"},
    {"mxfp4-a8", {HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, HC_TARGET_ZP_NONE, 0, HC_FMT_F8E4M3, HC_TARGET_RTN}, "MXFP4 weights, fp8 e4m3 activations (fused e8m0)"},
    {"mxint4", {HC_FMT_INT4, HC_FMT_F8E8M0, 32, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "OCP MXINT4-style: int4, e8m0 scale per 32, 16-bit activations"},
    {"nvfp4", {HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, 0, HC_TARGET_ZP_NONE, 1, P_, HC_TARGET_RTN}, "NVFP4: fp4 e2m1, e4m3 scale per 16, fp32 global scale, 16-bit activations"},
    {"fp8", {HC_FMT_F8E4M3, P_, 0, 0, HC_TARGET_ZP_NONE, 0, P_, HC_TARGET_RTN}, "fp8 e4m3 per-channel weights, 16-bit activations"},
};
#undef P_

int hc_preset_count(void) { return (int)(sizeof presets / sizeof presets[0]); }

const hc_preset *hc_preset_at(int i)
{
    return i >= 0 && i < hc_preset_count() ? &presets[i] : NULL;
}

const hc_preset *hc_preset_find(const char *name)
{
    for (int i = 0; i < hc_preset_count(); i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

hc_target hc_target_resolve(hc_target t, hc_format_id param_format)
{
    if (t.scale_format == HC_FMT_PARAM) t.scale_format = param_format;
    if (t.activation == HC_FMT_PARAM) t.activation = param_format;
    return t;
}

static const char *fmt_or_param(hc_format_id f)
{
    return f == HC_FMT_PARAM ? "param" : hc_format_get(f)->name;
}

void hc_target_describe(const hc_target *t, char *buf, int len)
{
    char group[48];
    if (t->group_size_n > 1)
        snprintf(group, sizeof group, "block%lldx%lld", (long long)t->group_size_n,
                 (long long)t->group_size);
    else if (t->group_size > 0) snprintf(group, sizeof group, "g%lld", (long long)t->group_size);
    else snprintf(group, sizeof group, "%s", t->group_size == 0 ? "channel" : "tensor");
    snprintf(buf, (size_t)len, "%s %s %s-scales%s%s a=%s%s", hc_format_get(t->weight_format)->name,
             group, fmt_or_param(t->scale_format),
             t->zero_point == HC_TARGET_ZP_INT ? " int-zp" : t->zero_point == HC_TARGET_ZP_FLOAT ? " float-zp" : "",
             t->global_scale == HC_TARGET_S2_CHANNEL ? " +channel-global"
             : t->global_scale ? " +global" : "", fmt_or_param(t->activation),
             t->rounding == HC_TARGET_MSE ? " mse" : "");
}
