/* hc_layout_config0119.c - the LayerConfig record of a 0.1.19 layer and the
 * Humming versions we accept. */
#include "hc_layout.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

hc_status hc_humming_version_parse(const char *name, hc_humming_version *out, const char **release,
                                   hc_error *err)
{
    static const char *const known[] = {"0.1.19", "0.1.20"};
    for (size_t i = 0; name && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i]) == 0) {
            *out = HC_HUMMING_0_1_19;
            if (release) *release = known[i];
            return HC_OK;
        }
    HC_FAIL(err, HC_ERR_ARG, "Humming version \"%s\": the tile layout is written for "
            "humming-kernels 0.1.19 (the version vLLM 0.33 pins) and 0.1.20 only",
            name ? name : "");
}

hc_status hc_humming_release_check(const char *release, const hc_layer_config *cfg,
                                   const hc_layer_meta *meta, const char *layer, hc_error *err)
{
    if (release == NULL || strcmp(release, "0.1.20") != 0) return HC_OK;
    const int64_t g = cfg->group_size;
    if (meta->use_fused_e8m0 && hc_format_get(cfg->act_format)->kind == HC_KIND_FLOAT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: humming-kernels 0.1.20 lays out MXFP4 weights "
                "with fp8 activations (fused e8m0 scales) unlike 0.1.19 (its padding rows and its "
                "per-channel second scale); use --humming-version 0.1.19", layer);
    if (meta->is_moe && cfg->is_fp_zero_point)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: humming-kernels 0.1.20 no longer recodes "
                "integer expert weights with a float zero point as float e0m (0.1.19 does); use "
                "--humming-version 0.1.19", layer);
    if (g > 0 && (g & (g - 1)) != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer %s: humming-kernels 0.1.20 splits groups of %lld "
                "(not a power of two) into groups of %lld; use --humming-version 0.1.19", layer,
                (long long)g, (long long)(g & -g));
    return HC_OK;
}

const char *hc_humming_version_name(hc_humming_version v)
{
    return v == HC_HUMMING_0_1_19 ? "0.1.19" : "canonical";
}

int hc_layer_decodable(const hc_layer_meta *meta)
{
    return !meta->use_raw_weight && meta->scale_layout == HC_SCALES_PERM;
}

const char *hc_layer_layout_name(const hc_layer_meta *meta)
{
    return meta->use_raw_weight ? "raw" : hc_layout_variant_name(meta);
}

static const char *fname(hc_format_id f) { return hc_format_get(f)->name; }

/* LayerConfig.b_dtype: integer weights are signed exactly when the
 * activations are integers of the same width (LayerConfig.__post_init__). */
static void b_dtype_name(const hc_layer_config *c, const hc_layer_meta *m, int e0m, char *buf,
                         size_t len)
{
    if (e0m)
        snprintf(buf, len, "float%de0m%d", m->weight_bits, m->weight_bits - 1);
    else if (hc_format_get(c->weight_format)->kind == HC_KIND_FLOAT)
        snprintf(buf, len, "%s", fname(c->weight_format));
    else
        snprintf(buf, len, "%sint%d", m->kernel_weight_signed ? "" : "u", m->weight_bits);
}

static const char *scale_type_name(hc_scale_type t)
{
    switch (t) {
    case HC_SCALE_CHANNEL: return "channel";
    case HC_SCALE_BLOCK: return "block";
    case HC_SCALE_TENSOR: return "tensor";
    default: return "group";
    }
}

/* bs_dtype as prepare_layer_config resolves it: the schema's, else c_dtype
 * (16-bit scales are the model dtype; block scales are float32). */
static const char *bs_dtype_name(const hc_layer_config *c)
{
    if (c->scale_type == HC_SCALE_BLOCK) return "float32";
    if (c->scale_type == HC_SCALE_TENSOR) return fname(c->param_format);
    return fname(c->scale_format);
}

static void add_shapes(cJSON *o, const hc_layer_config *c, const hc_layer_meta *m)
{
    cJSON_AddNumberToObject(o, "sm_version", c->sm);
    cJSON_AddNumberToObject(o, "shape_n", (double)m->Np);
    cJSON_AddNumberToObject(o, "shape_k", (double)m->Kp);
    cJSON_AddNumberToObject(o, "pad_shape_n", (double)(m->Np - m->N));
    cJSON_AddNumberToObject(o, "pad_shape_k", (double)(m->Kp - m->K));
    cJSON_AddNumberToObject(o, "num_experts", m->is_moe ? (double)m->E : 0);
}

static void add_dtypes(cJSON *o, const hc_layer_config *c, const hc_layer_meta *m, int e0m)
{
    char b[32];
    int quant_act = m->act_bits < 16;
    b_dtype_name(c, m, e0m, b, sizeof b);
    cJSON_AddStringToObject(o, "b_dtype", b);
    cJSON_AddStringToObject(o, "a_dtype", fname(c->act_format));
    cJSON_AddStringToObject(o, "c_dtype", fname(c->param_format));
    cJSON_AddStringToObject(o, "bs_dtype", bs_dtype_name(c));
    /* per-token dynamic activation scales, float32 (vLLM's only input mode here) */
    if (quant_act) cJSON_AddStringToObject(o, "as_dtype", "float32");
    else cJSON_AddNullToObject(o, "as_dtype");
    cJSON_AddStringToObject(o, "input_quant_mode", quant_act ? "dynamic_token" : "none");
}

static void add_scales(cJSON *o, const hc_layer_config *c, const hc_layer_meta *m, int has_bias,
                       int has_scale_2)
{
    /* fused e8m0 always has one: the folded exponent base, per channel with
     * int8 activations (meta->scale2_channel) */
    int s2 = c->scale_type == HC_SCALE_GROUP_TENSOR ||
             (has_scale_2 && c->scale_type != HC_SCALE_TENSOR) || m->use_fused_e8m0;
    const char *s2_type = !s2 ? "none" : m->scale2_channel ? "channel" : "tensor";
    cJSON_AddNumberToObject(o, "input_scale_group_size", 0);
    cJSON_AddNumberToObject(o, "weight_scale_group_size",
                            (double)(c->group_size > 0 ? c->group_size : 0));
    cJSON_AddNumberToObject(o, "weight_scale_group_size_n",
                            (double)(c->scale_type == HC_SCALE_BLOCK ? c->group_size_n : 0));
    cJSON_AddStringToObject(o, "weight_scale_type", scale_type_name(c->scale_type));
    cJSON_AddStringToObject(o, "weight_scale_2_type", s2_type);
    cJSON_AddBoolToObject(o, "use_int_weight_scale", m->use_int_weight_scale);
    cJSON_AddBoolToObject(o, "use_fused_e8m0_scale", m->use_fused_e8m0);
    cJSON_AddBoolToObject(o, "has_zero_point", c->has_zero_point);
    cJSON_AddBoolToObject(o, "is_fp_zero_point", c->has_zero_point && c->is_fp_zero_point);
    cJSON_AddBoolToObject(o, "has_bias", has_bias);
    cJSON_AddBoolToObject(o, "use_packed_k_layout", m->use_packed_k_layout);
}

char *hc_layer_config_json(const hc_layer_config *cfg, const hc_layer_meta *meta, int has_bias,
                           int has_scale_2, int weight_e0m)
{
    if (meta->version != HC_HUMMING_0_1_19) return NULL;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    /* in LayerConfig's field order, so the text reads like to_str()'s */
    add_shapes(o, cfg, meta);
    add_dtypes(o, cfg, meta, weight_e0m);
    add_scales(o, cfg, meta, has_bias, has_scale_2);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}
