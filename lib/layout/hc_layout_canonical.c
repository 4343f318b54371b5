/* hc_layout_canonical.c - what a canonical (row-packed) layer must satisfy
 * for vLLM 0.33 to load it and humming-kernels 0.1.19 to build its kernel
 * tensors at load on the target GPU: is_humming_schema_compatible
 * (humming/schema/humming.py), get_dtype_compatibility_error and
 * get_mma_b_dtype (humming/config/mma.py), and the asserts of
 * HummingWeightSchema / LayerConfig.__post_init__. No tiles are built from
 * this plan: vLLM pads and transforms the layer itself. The limits of vLLM's
 * loaders (fused modules, MoE) are per module, in hc_conv_canonical_problem. */
#include "hc_layout.h"
#include "hc_layout_ops.h"

#include <string.h>

static const hc_format_info *fmt(hc_format_id id) { return hc_format_get(id); }

static int is_int(hc_format_id id) { return fmt(id)->kind != HC_KIND_FLOAT; }

/* supports_undocumented_fp_dtypes: the archs where Humming runs float8e3m4
 * operands (cubin patching, its default). */
static int runs_e3m4(int sm) { return sm == 100 || sm == 103 || sm == 120 || sm == 121; }

/* MXFP4: float4e2m1 codes with float8e8m0 scales in groups of 32. */
static int is_mxfp4(const hc_layer_config *c)
{
    return c->weight_format == HC_FMT_F4E2M1 && c->scale_format == HC_FMT_F8E8M0 &&
           c->group_size == 32;
}

/* Weights against integer activations. */
static hc_status check_int_act(const hc_layer_config *c, hc_error *err)
{
    const hc_format_info *a = fmt(c->act_format), *b = fmt(c->weight_format);
    int mx_int8 = c->act_format == HC_FMT_INT8 && is_mxfp4(c);
    if (!is_int(c->weight_format) && !mx_int8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s weights with %s activations: integer activations "
                "take integer weights%s", b->name, a->name,
                c->act_format == HC_FMT_INT8 ? " or MXFP4 (float4e2m1, float8e8m0 scales per 32)"
                                             : "");
    if (c->has_zero_point && b->bits == a->bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit weights with %s activations take no zero "
                "point", b->bits, a->name);
    return HC_OK;
}

/* Weights against float activations: they must fit the MMA type. */
static hc_status check_float_act(const hc_layer_config *c, hc_error *err)
{
    const hc_format_info *a = fmt(c->act_format), *b = fmt(c->weight_format);
    hc_format_id mid = hc_layout_mma_b_type(c->act_format, c->weight_format, c->has_zero_point,
                                            runs_e3m4(c->sm));
    const hc_format_info *m = fmt(mid);
    if (mid == HC_FMT_F8E3M4 && !runs_e3m4(c->sm)) /* uses_undocumented_fp_operand */
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "float8e3m4 weights with %s activations need sm100, "
                "sm103, sm120 or sm121 (target sm %d)", a->name, c->sm);
    if (is_int(c->weight_format)) {
        int cap = m->man_bits + (c->has_zero_point ? 1 : 2);
        if (b->bits >= m->bits || b->bits > cap)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit integer weights %s with %s activations: "
                    "supported up to %d bits", b->bits, c->has_zero_point ? "with zero point" :
                    "without zero point", a->name, cap < m->bits - 1 ? cap : m->bits - 1);
        return HC_OK;
    }
    if (c->has_zero_point)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "zero points need integer weights (got %s)", b->name);
    /* e0m weights are Humming's own recoding (MoE), not a checkpoint format here */
    if (b->exp_bits < 1 || !b->is_signed || b->man_bits > m->man_bits || b->exp_bits > m->exp_bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s weights with %s activations: float weights need "
                ">= 1 and <= %d exponent bits and <= %d mantissa bits", b->name, a->name,
                m->exp_bits, m->man_bits);
    return HC_OK;
}

/* The row-packed tensors' shapes: whole words, whole groups and blocks. */
static hc_status check_shape(const hc_layer_config *c, const hc_layer_meta *m, hc_error *err)
{
    HC_TRY(hc_layout_check_packing(c, m, err));
    if (c->group_size > 0 && m->K % c->group_size)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "K=%lld is not a multiple of the group size %lld",
                (long long)m->K, (long long)c->group_size);
    if (c->scale_type == HC_SCALE_BLOCK && m->N % c->group_size_n)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales need N=%lld to be a multiple of the "
                "block height %lld", (long long)m->N, (long long)c->group_size_n);
    return HC_OK;
}

hc_status hc_layer_plan_canonical(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                                  int64_t K, hc_layer_meta *m, hc_error *err)
{
    memset(m, 0, sizeof *m);
    m->version = HC_HUMMING_CANONICAL;
    HC_TRY(hc_layout_check_dtypes(cfg, err));
    const hc_format_info *b = fmt(cfg->weight_format);
    if (b->bits > 8 || b->bits > fmt(cfg->act_format)->bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit weights need %s activations", b->bits,
                b->bits > 4 ? "8- or 16-bit" : "4-, 8- or 16-bit");
    HC_TRY(is_int(cfg->act_format) ? check_int_act(cfg, err) : check_float_act(cfg, err));
    HC_TRY(hc_layout_check_scales(cfg, err));
    m->E = E;
    m->is_moe = is_moe != 0;
    m->N = m->Np = N;
    m->K = m->Kp = K;
    m->act_bits = fmt(cfg->act_format)->bits;
    m->weight_bits = b->bits;
    HC_TRY(check_shape(cfg, m, err));
    m->group_size = cfg->group_size > 0 ? cfg->group_size : K;
    m->group_size_n = cfg->scale_type == HC_SCALE_BLOCK ? cfg->group_size_n : 0;
    m->G = K / m->group_size;
    m->scale_type = cfg->scale_type;
    m->scale_format = cfg->scale_format;
    m->scale2_channel = cfg->scale_2_channel; /* kept as the input has it */
    return HC_OK;
}
