/* hc_layout_plan.c - hc_layer_plan (the plan of the layer's version) and the
 * names of scale types and weight arrangements. */
#include "hc_layout.h"
#include "hc_layout_ops.h"

#include <string.h>

const char *hc_scale_type_name(hc_scale_type t)
{
    switch (t) {
    case HC_SCALE_CHANNEL: return "channel";
    case HC_SCALE_GROUP: return "group";
    case HC_SCALE_BLOCK: return "block";
    case HC_SCALE_TENSOR: return "tensor";
    case HC_SCALE_GROUP_TENSOR: return "group_tensor";
    }
    return "?";
}

const char *hc_layout_variant_name(const hc_layer_meta *meta)
{
    if (meta->version == HC_HUMMING_CANONICAL) return "canonical";
    return meta->use_flat_weight ? "flat" : meta->use_packed_k_layout ? "packed_k" : "tiled";
}

hc_status hc_layer_plan(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                        int64_t K, hc_layer_meta *meta, hc_error *err)
{
    memset(meta, 0, sizeof *meta);
    if (hc_format_get(cfg->weight_format) == NULL || hc_format_get(cfg->act_format) == NULL ||
        hc_format_get(cfg->scale_format) == NULL || hc_format_get(cfg->param_format) == NULL)
        HC_FAIL(err, HC_ERR_ARG, "layer config has an unknown format id");
    /* HummingWeightSchema: "secondary scales require group scales or channel
     * scales with a tensor secondary scale" */
    if (cfg->scale_2_channel && cfg->scale_type != HC_SCALE_GROUP)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "a per-channel second scale (weight_scale_2_type "
                "channel) needs group scales (got %s scales)", hc_scale_type_name(cfg->scale_type));
    if (cfg->version == HC_HUMMING_CANONICAL)
        return hc_layer_plan_canonical(cfg, is_moe, E, N, K, meta, err);
    if (cfg->version != HC_HUMMING_0_1_19)
        HC_FAIL(err, HC_ERR_ARG, "layer config has an unknown plan version %d", (int)cfg->version);
    return hc_layer_plan_0119(cfg, is_moe, E, N, K, meta, err);
}
