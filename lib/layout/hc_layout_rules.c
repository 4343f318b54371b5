/* hc_layout_rules.c - the rules of humming-kernels 0.1.19 that both the
 * canonical validator (hc_layout_canonical.c) and the 0.1.19 tiles plan
 * (hc_layout_plan0119.c) apply: get_mma_b_dtype and
 * get_dtype_compatibility_error (humming/config/mma.py) with the activations'
 * minimum SM (humming/schema/humming.py), and the scale rules of
 * LayerConfig.__post_init__ with the group-size limits. */
#include "hc_layout_ops.h"

#include <stdint.h>

static const hc_format_info *fmt(hc_format_id id) { return hc_format_get(id); }

int hc_layout_is_fp8(hc_format_id id)
{
    return id == HC_FMT_F8E4M3 || id == HC_FMT_F8E5M2 || id == HC_FMT_F8E3M4;
}

hc_format_id hc_layout_mma_b_type(hc_format_id a, hc_format_id b, int zp, int e3m4)
{
    const hc_format_info *bf = fmt(b);
    if (hc_layout_is_fp8(a) && hc_layout_is_fp8(b)) return b;
    if (!hc_layout_is_fp8(a) || bf->bits >= fmt(a)->bits) return a;
    const hc_format_id cand[3] = {a, HC_FMT_F8E4M3, HC_FMT_F8E3M4};
    for (int i = 0; i < 2 + (e3m4 != 0); i++) {
        const hc_format_info *t = fmt(cand[i]);
        if (bf->kind != HC_KIND_FLOAT ? bf->bits <= t->man_bits + (zp ? 1 : 2)
                                      : bf->man_bits <= t->man_bits && bf->exp_bits <= t->exp_bits)
            return cand[i];
    }
    return a;
}

hc_status hc_layout_check_dtypes(const hc_layer_config *c, hc_error *err)
{
    static const struct { hc_format_id a; int sm; } min_sm[] = {
        {HC_FMT_F16, 75}, {HC_FMT_BF16, 80}, {HC_FMT_INT8, 75}, {HC_FMT_INT4, 75},
        {HC_FMT_F8E4M3, 89}, {HC_FMT_F8E5M2, 89}};
    const hc_format_info *a = fmt(c->act_format);
    int need = 0;
    for (size_t i = 0; i < sizeof min_sm / sizeof min_sm[0]; i++)
        if (min_sm[i].a == c->act_format) need = min_sm[i].sm;
    if (need == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "activation format %s: supported are float16, "
                "bfloat16, float8e4m3, float8e5m2, int8 and int4", a->name);
    if (c->sm < need)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s activations need sm >= %d (target sm %d)", a->name,
                need, c->sm);
    if (c->param_format != HC_FMT_F16 && c->param_format != HC_FMT_BF16)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer dtype %s: supported are float16 and bfloat16",
                fmt(c->param_format)->name);
    if (a->bits == 16 && c->act_format != c->param_format)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "16-bit activations must be the layer dtype (%s)",
                fmt(c->param_format)->name);
    if (c->act_format == HC_FMT_F8E5M2 && c->param_format != HC_FMT_BF16)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "float8e5m2 activations need a bfloat16 layer dtype");
    if (a->bits == 16 && fmt(c->scale_format)->bits == 16 && c->scale_format != c->act_format &&
        c->scale_type != HC_SCALE_TENSOR && c->scale_type != HC_SCALE_BLOCK)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "16-bit scales must be the activation dtype %s "
                "(humming-kernels 0.1.19 refuses %s scales)", a->name, fmt(c->scale_format)->name);
    return HC_OK;
}

hc_status hc_layout_check_scales(const hc_layer_config *c, hc_error *err)
{
    int64_t gs = c->group_size;
    int a = fmt(c->act_format)->bits;
    hc_scale_type t = c->scale_type;
    if ((t == HC_SCALE_CHANNEL || t == HC_SCALE_TENSOR) && gs != 0)
        HC_FAIL(err, HC_ERR_ARG, "%s scales with group size %lld (must be 0)",
                hc_scale_type_name(t), (long long)gs);
    if ((t == HC_SCALE_GROUP || t == HC_SCALE_GROUP_TENSOR || t == HC_SCALE_BLOCK) && gs <= 0)
        HC_FAIL(err, HC_ERR_ARG, "%s scales need a group size > 0", hc_scale_type_name(t));
    int64_t min_gs = c->act_format == HC_FMT_INT4 ? 64 : a == 8 ? 32 : 16;
    if (gs > 0 && gs < min_gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "group size %lld with %s activations: the smallest "
                "is %lld", (long long)gs, fmt(c->act_format)->name, (long long)min_gs);
    if (t == HC_SCALE_BLOCK && (c->group_size_n < 2 || c->scale_format != HC_FMT_F32))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales need group_size_n > 1 and float32 scales");
    if (t != HC_SCALE_BLOCK && c->group_size_n > 1)
        HC_FAIL(err, HC_ERR_ARG, "group_size_n %lld needs the block scale type",
                (long long)c->group_size_n);
    if (c->has_zero_point && t != HC_SCALE_GROUP && t != HC_SCALE_CHANNEL)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "zero points need group or channel scales");
    if (t == HC_SCALE_GROUP || t == HC_SCALE_CHANNEL || t == HC_SCALE_GROUP_TENSOR) {
        hc_format_id s = c->scale_format;
        if (s != HC_FMT_F16 && s != HC_FMT_BF16 && s != HC_FMT_F8E4M3 && s != HC_FMT_F8E5M2 &&
            s != HC_FMT_F8E8M0)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s scales must be float16, bfloat16, float8e4m3, "
                    "float8e5m2 or float8e8m0", hc_scale_type_name(t));
    }
    return HC_OK;
}

hc_status hc_layout_check_packing(const hc_layer_config *c, const hc_layer_meta *m, hc_error *err)
{
    int b = m->weight_bits;
    if (m->E < 1 || (!m->is_moe && m->E != 1) || m->N < 1 || m->K < 1 ||
        m->N > INT64_MAX / 64 || m->K > INT64_MAX / 64)
        HC_FAIL(err, HC_ERR_ARG, "bad layer shape E=%lld N=%lld K=%lld (dense layers have E=1)",
                (long long)m->E, (long long)m->N, (long long)m->K);
    if (m->K * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "row-packed %d-bit weights need K*%d to be a multiple "
                "of 32 (K=%lld)", b, b, (long long)m->K);
    if (c->has_zero_point && !c->is_fp_zero_point && m->N * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "N-packed %d-bit zero points need N*%d to be a "
                "multiple of 32 (N=%lld)", b, b, (long long)m->N);
    return HC_OK;
}
