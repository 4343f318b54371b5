/* hc_target_field.c - parse one format field of an hc_target from text
 * (see hc_target_set_field in hc_recipe.h). */
#include "hc_recipe.h"
#include "hc_recipe_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[] = {
    "format", "weight_dtype", "group_size", "group_size_n", "scale_dtype",
    "zero_point", "global_scale", "activation", "quantizer",
};
#define N_FIELDS ((int)(sizeof field_names / sizeof field_names[0]))

int hc_target_field_known(const char *key)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (key && strcmp(key, field_names[i]) == 0) return 1;
    return 0;
}

const char *hc_target_field_name(int idx)
{
    return idx >= 0 && idx < N_FIELDS ? field_names[idx] : NULL;
}

/* Field index of key, accepting '-' for '_'; -1 if unknown. */
int hc_target_field_index(const char *key)
{
    char norm[32];
    size_t n = strlen(key);
    if (n >= sizeof norm) return -1;
    for (size_t i = 0; i <= n; i++) norm[i] = key[i] == '-' ? '_' : key[i];
    for (int i = 0; i < N_FIELDS; i++)
        if (strcmp(norm, field_names[i]) == 0) return i;
    return -1;
}

/* Non-negative decimal integer filling the whole string; -1 otherwise. */
static long long parse_count(const char *s)
{
    if (s[0] < '0' || s[0] > '9') return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0') return -1;
    return v;
}

static int is_pow2(long long v) { return v > 0 && (v & (v - 1)) == 0; }

static hc_status parse_weight_dtype(const char *v, hc_format_id *out, hc_error *err)
{
    hc_format_id f;
    if (hc_format_parse(v, &f) != 0)
        HC_FAIL(err, HC_ERR_ARG,
                "weight_dtype: unknown format '%s' (expected uintB or intB with B 1..8, or a "
                "signed floatNeXmY such as float8e4m3, float4e2m1)", v);
    if (!(hc_format_role(f).roles & HC_FROLE_WEIGHT))
        HC_FAIL(err, HC_ERR_ARG,
                "weight_dtype: '%s' is not a weight format (at most 8 bits; float formats must "
                "be signed)", v);
    *out = f;
    return HC_OK;
}

/* A format name whose format has the role, or "param". */
static hc_status parse_role(const char *key, const char *v, unsigned role, const char *expected,
                            hc_format_id *out, hc_error *err)
{
    if (strcmp(v, "param") == 0) {
        *out = HC_FMT_PARAM;
        return HC_OK;
    }
    hc_format_id f;
    if (hc_format_parse(v, &f) == 0 && (hc_format_role(f).roles & role)) {
        *out = f;
        return HC_OK;
    }
    HC_FAIL(err, HC_ERR_ARG, "%s: '%s' is not allowed (expected %s)", key, v, expected);
}

hc_status hc_target_set_field(hc_target *t, const char *key, const char *value, hc_error *err)
{
    if (t == NULL || key == NULL || value == NULL)
        HC_FAIL(err, HC_ERR_ARG, "hc_target_set_field: NULL argument");
    int idx = hc_target_field_index(key);
    if (idx < 0)
        HC_FAIL(err, HC_ERR_ARG,
                "unknown field '%s' (expected format, weight_dtype, group_size, group_size_n, "
                "scale_dtype, zero_point, global_scale, activation or quantizer)", key);
    const char *name = field_names[idx];
    if (value[0] == '\0') HC_FAIL(err, HC_ERR_ARG, "%s: empty value", name);
    hc_target n = *t;
    switch (idx) {
    case HC_TF_FORMAT: { /* format */
        const hc_preset *p = hc_preset_find(value);
        if (p == NULL) {
            char list[512] = "";
            size_t used = 0;
            for (int i = 0; i < hc_preset_count() && used + 32 < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                         hc_preset_at(i)->name);
            HC_FAIL(err, HC_ERR_ARG, "format: unknown preset '%s' (known: %s)", value, list);
        }
        n = p->target;
        break;
    }
    case HC_TF_WEIGHT_DTYPE:
        HC_TRY(parse_weight_dtype(value, &n.weight_format, err));
        break;
    case HC_TF_GROUP_SIZE: { /* group_size */
        if (strcmp(value, "channel") == 0) n.group_size = 0;
        else if (strcmp(value, "tensor") == 0) n.group_size = -1;
        else {
            long long v = parse_count(value);
            if (v < 0)
                HC_FAIL(err, HC_ERR_ARG,
                        "group_size: '%s' is not a number, \"channel\" or \"tensor\"", value);
            if (v != 0 && (!is_pow2(v) || v > (1LL << 20)))
                HC_FAIL(err, HC_ERR_ARG,
                        "group_size: %lld is not a power of two (1 .. 1048576), 0 or \"channel\"", v);
            n.group_size = v;
        }
        break;
    }
    case HC_TF_GROUP_SIZE_N: { /* group_size_n */
        if (strcmp(value, "none") == 0) n.group_size_n = 0;
        else {
            long long v = parse_count(value);
            if (v < 0) HC_FAIL(err, HC_ERR_ARG, "group_size_n: '%s' is not a number or \"none\"", value);
            if (v > 1 && (!is_pow2(v) || v > (1LL << 20)))
                HC_FAIL(err, HC_ERR_ARG, "group_size_n: %lld is not a power of two (2 .. 1048576)", v);
            n.group_size_n = v > 1 ? v : 0;
        }
        break;
    }
    case HC_TF_SCALE_DTYPE: {
        HC_TRY(parse_role("scale_dtype", value, HC_FROLE_SCALE,
                               "float16, bfloat16, float8e4m3, float8e5m2, float8e8m0, float32 "
                               "or param", &n.scale_format, err));
        break;
    }
    case HC_TF_ZERO_POINT:
        if (strcmp(value, "int") == 0) n.zero_point = HC_TARGET_ZP_INT;
        else if (strcmp(value, "float") == 0) n.zero_point = HC_TARGET_ZP_FLOAT;
        else if (strcmp(value, "none") == 0) n.zero_point = HC_TARGET_ZP_NONE;
        else HC_FAIL(err, HC_ERR_ARG, "zero_point: '%s' is not allowed (expected int, float or none)", value);
        break;
    case HC_TF_GLOBAL_SCALE:
        if (strcmp(value, "true") == 0 || strcmp(value, "tensor") == 0)
            n.global_scale = HC_TARGET_S2_TENSOR;
        else if (strcmp(value, "channel") == 0) n.global_scale = HC_TARGET_S2_CHANNEL;
        else if (strcmp(value, "false") == 0 || strcmp(value, "none") == 0)
            n.global_scale = HC_TARGET_S2_NONE;
        else HC_FAIL(err, HC_ERR_ARG, "global_scale: '%s' is not allowed (expected true, tensor, "
                     "channel, false or none)", value);
        break;
    case HC_TF_ACTIVATION: {
        HC_TRY(parse_role("activation", value, HC_FROLE_ACT,
                               "float16, bfloat16, float8e4m3, float8e5m2, int8, int4 or param",
                               &n.activation, err));
        break;
    }
    case HC_TF_QUANTIZER:
        if (strcmp(value, "rtn") == 0) n.rounding = HC_TARGET_RTN;
        else if (strcmp(value, "mse") == 0) n.rounding = HC_TARGET_MSE;
        else HC_FAIL(err, HC_ERR_ARG, "quantizer: '%s' is not allowed (expected rtn or mse)", value);
        break;
    }
    *t = n;
    return HC_OK;
}

void hc_target_copy_field(hc_target *dst, const hc_target *src, int idx)
{
    switch (idx) {
    case HC_TF_FORMAT: *dst = *src; break;
    case HC_TF_WEIGHT_DTYPE: dst->weight_format = src->weight_format; break;
    case HC_TF_GROUP_SIZE: dst->group_size = src->group_size; break;
    case HC_TF_GROUP_SIZE_N: dst->group_size_n = src->group_size_n; break;
    case HC_TF_SCALE_DTYPE: dst->scale_format = src->scale_format; break;
    case HC_TF_ZERO_POINT: dst->zero_point = src->zero_point; break;
    case HC_TF_GLOBAL_SCALE: dst->global_scale = src->global_scale; break;
    case HC_TF_ACTIVATION: dst->activation = src->activation; break;
    case HC_TF_QUANTIZER: dst->rounding = src->rounding; break;
    default: break;
    }
}
