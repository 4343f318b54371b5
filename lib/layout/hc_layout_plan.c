/* hc_layout_plan.c - kernel-level decisions (spec 5.2, 4.1), the support
 * matrix (6.1) and our deterministic padding rule. */
#include "hc_layout.h"
#include "hc_layout_ops.h"

#include <stddef.h>
#include <string.h>

static int fmt_is_int(hc_format_id id)
{
    const hc_format_info *f = hc_format_get(id);
    return f && f->kind != HC_KIND_FLOAT;
}

static const char *fmt_name(hc_format_id id)
{
    const hc_format_info *f = hc_format_get(id);
    return f ? f->name : "?";
}

static int64_t gcd64(int64_t x, int64_t y)
{
    while (y) { int64_t t = x % y; x = y; y = t; }
    return x;
}

static int64_t lcm64(int64_t x, int64_t y) { return x / gcd64(x, y) * y; }

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

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
    if (meta->version == HC_HUMMING_0_1_19)
        return meta->use_flat_weight ? "flat" : meta->use_packed_k_layout ? "packed_k" : "tiled";
    if (meta->use_fused_e8m0) return "fused_e8m0";
    return meta->transposed_mini_block ? "transposed" : "normal";
}

/* Activation formats the kernels take, with their minimum SM (spec 1.5). */
static hc_status check_activation(const hc_layer_config *cfg, hc_error *err)
{
    int min_sm;
    switch (cfg->act_format) {
    case HC_FMT_F16: case HC_FMT_INT8: min_sm = 75; break;
    case HC_FMT_BF16: case HC_FMT_INT4: min_sm = 80; break;
    case HC_FMT_F8E4M3: case HC_FMT_F8E5M2: min_sm = 89; break;
    default:
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "activation format %s: supported are float16, "
                "bfloat16, float8e4m3, float8e5m2, int8 and int4", fmt_name(cfg->act_format));
    }
    if (cfg->sm < min_sm)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s activations need sm >= %d (target sm %d)",
                fmt_name(cfg->act_format), min_sm, cfg->sm);
    if (cfg->param_format != HC_FMT_F16 && cfg->param_format != HC_FMT_BF16)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "layer dtype %s: supported are float16 and bfloat16",
                fmt_name(cfg->param_format));
    return HC_OK;
}

/* Integer weights (6.1): vs integer activations and vs float activations. */
static hc_status check_int_weight(const hc_layer_config *cfg, int b, hc_error *err)
{
    const hc_format_info *a = hc_format_get(cfg->act_format);
    int zp = cfg->has_zero_point;
    if (a->kind != HC_KIND_FLOAT) {
        if (zp && a->bits == b)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "zero points need unsigned kernel weights: "
                    "%d-bit weights with %s activations are signed; use fewer weight bits",
                    b, a->name);
        return HC_OK;
    }
    int cap = a->man_bits + (zp ? 1 : 2);
    if (cap > 8) cap = 8;
    if (b > cap)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit integer weights %s with %s activations: "
                "supported up to %d bits", b, zp ? "with zero point" : "without zero point",
                a->name, cap);
    if (zp && cfg->is_fp_zero_point && a->bits != 16)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "float zero points need float16 or bfloat16 "
                "activations (got %s)", a->name);
    return HC_OK;
}

static int is_fused_e8m0(const hc_layer_config *cfg)
{
    return (cfg->act_format == HC_FMT_F8E4M3 || cfg->act_format == HC_FMT_INT8) &&
           cfg->group_size > 0 && cfg->weight_format == HC_FMT_F4E2M1 &&
           cfg->scale_format == HC_FMT_F8E8M0;
}

/* Float weights (6.1): E/M bounds against float activations; with integer
 * activations only MXFP4 x int8 through the fused-e8m0 path. */
static hc_status check_float_weight(const hc_layer_config *cfg, const hc_format_info *w,
                                    hc_error *err)
{
    const hc_format_info *a = hc_format_get(cfg->act_format);
    if (cfg->has_zero_point)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "zero points need unsigned integer weights (got %s)",
                w->name);
    if (!w->is_signed || w->exp_bits < 1)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "float weights must be signed with >= 1 exponent bit "
                "(got %s)", w->name);
    if (a->kind != HC_KIND_FLOAT) {
        if (is_fused_e8m0(cfg)) return HC_OK;
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "float weights with integer activations: only MXFP4 "
                "(float4e2m1 with float8e8m0 group scales) with int8 activations");
    }
    if (w->exp_bits > a->exp_bits || w->man_bits > a->man_bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s weights with %s activations: float weights need "
                "exponent bits <= %d and mantissa bits <= %d", w->name, a->name, a->exp_bits,
                a->man_bits);
    return HC_OK;
}

static hc_status check_bits(const hc_layer_config *cfg, hc_error *err)
{
    const hc_format_info *w = hc_format_get(cfg->weight_format);
    if (w == NULL || w->bits > 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "weight format %s: supported are integer and float "
                "formats of 1 to 8 bits", w ? w->name : "?");
    int a = hc_format_get(cfg->act_format)->bits;
    if (w->bits > a)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit weights need %s activations", w->bits,
                w->bits > 4 ? "8- or 16-bit" : "4-, 8- or 16-bit");
    return fmt_is_int(cfg->weight_format) ? check_int_weight(cfg, w->bits, err)
                                          : check_float_weight(cfg, w, err);
}

static int is_group_scale_format(hc_format_id f)
{
    return f == HC_FMT_F16 || f == HC_FMT_BF16 || f == HC_FMT_F8E4M3 || f == HC_FMT_F8E5M2 ||
           f == HC_FMT_F8E8M0;
}

/* Scale type, scale format and group sizes (6.1; group lookup needs gs | 64
 * or 64 | gs, spec 4.7). */
static hc_status check_scales(const hc_layer_config *cfg, int a, hc_error *err)
{
    int64_t gs = cfg->group_size;
    hc_scale_type t = cfg->scale_type;
    if (t == HC_SCALE_CHANNEL && gs != 0)
        HC_FAIL(err, HC_ERR_ARG, "channel scales with group size %lld (must be 0)",
                (long long)gs);
    if ((t == HC_SCALE_GROUP || t == HC_SCALE_GROUP_TENSOR || t == HC_SCALE_BLOCK) && gs <= 0)
        HC_FAIL(err, HC_ERR_ARG, "%s scales need a group size > 0", hc_scale_type_name(t));
    if (gs < 0 || (gs > 0 && (gs < 256 / a || (64 % gs != 0 && gs % 64 != 0))))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "group size %lld with %d-bit activations: supported "
                "are 0 (channel) and sizes >= %d that divide 64 or are multiples of 64",
                (long long)gs, a, 256 / a);
    if (t == HC_SCALE_BLOCK) {
        if (cfg->group_size_n < 64 || cfg->has_zero_point)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales need group_size_n >= 64 (got %lld) "
                    "and no zero point", (long long)cfg->group_size_n);
        if (cfg->scale_format != HC_FMT_F32)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales must be float32");
        if (cfg->act_format == HC_FMT_INT8 || cfg->act_format == HC_FMT_INT4)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales with %s activations are not "
                    "supported (integer activations need group or channel scales, which the "
                    "kernel turns into int16 weight scales)", hc_format_get(cfg->act_format)->name);
    } else if (cfg->group_size_n > 1) {
        HC_FAIL(err, HC_ERR_ARG, "group_size_n %lld needs the block scale type",
                (long long)cfg->group_size_n);
    } else if (t != HC_SCALE_TENSOR && !is_group_scale_format(cfg->scale_format)) {
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s scales must be float16, bfloat16, float8e4m3, "
                "float8e5m2 or float8e8m0", hc_scale_type_name(t));
    }
    if (t == HC_SCALE_TENSOR && cfg->has_zero_point)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "zero points need group or channel scales");
    return HC_OK;
}

/* 4.1 step 3: int->fp preprocessing of integer weights for float activations. */
static int wants_int2fp(const hc_layer_config *cfg, int b, int a_bits)
{
    if (!fmt_is_int(cfg->weight_format) || fmt_is_int(cfg->act_format)) return 0;
    if (cfg->has_zero_point && cfg->is_fp_zero_point) return 0;
    if (a_bits < 16) return 1;
    if (cfg->act_format == HC_FMT_BF16) return cfg->has_zero_point ? b > 6 : b > 7;
    return 0;
}

/* 5.2 and 4.1: everything that follows from the (validated) config. */
static void decide(const hc_layer_config *cfg, hc_layer_meta *m)
{
    int b = m->weight_bits, a = m->act_bits, is_int = fmt_is_int(cfg->weight_format);
    int int_act = fmt_is_int(cfg->act_format);
    m->use_wgmma = cfg->sm / 10 == 9;
    m->kernel_weight_signed = is_int && int_act && a == b;
    m->use_fused_e8m0 = is_fused_e8m0(cfg);
    m->use_int_weight_scale = !m->use_fused_e8m0 && int_act && cfg->group_size > 0;
    m->scale_type = cfg->scale_type;
    m->scale_format = cfg->scale_format;
    if (m->use_fused_e8m0 || m->use_int_weight_scale) m->scale_type = HC_SCALE_GROUP_TENSOR;
    if (m->use_int_weight_scale) m->scale_format = cfg->param_format;
    if (m->use_fused_e8m0)
        m->to_apply_on_c = 0;
    else if (m->use_wgmma)
        m->to_apply_on_c = cfg->group_size == 0;
    else
        m->to_apply_on_c = cfg->group_size == 0 || a != 16;
    m->transposed_mini_block = m->use_wgmma && !m->use_fused_e8m0;
    m->preprocess_int2fp = wants_int2fp(cfg, b, a);
    m->zp_in_repack = m->preprocess_int2fp && cfg->has_zero_point && !cfg->is_fp_zero_point;
    m->int8_byte_flip = cfg->act_format == HC_FMT_INT8 && is_int && b == 8;
    m->int4_nibble_flip = cfg->act_format == HC_FMT_INT4 && is_int && b == 4 &&
                          !cfg->humming_bug_compat;
}

/* Our padding: N to a multiple of 64 (and of gn), K to a multiple of
 * lcm(512/a, group size, 64 for MoE stacks). */
static hc_status pad_shapes(const hc_layer_config *cfg, hc_layer_meta *m, hc_error *err)
{
    int64_t kmul = 512 / m->act_bits, nmul = 64;
    if (cfg->group_size > 0) kmul = lcm64(kmul, cfg->group_size);
    if (m->is_moe) kmul = lcm64(kmul, 64);
    if (m->scale_type == HC_SCALE_BLOCK) nmul = lcm64(nmul, cfg->group_size_n);
    if (m->N > INT64_MAX / 4 - nmul || m->K > INT64_MAX / 4 - kmul)
        HC_FAIL(err, HC_ERR_ARG, "layer shape N=%lld K=%lld too large", (long long)m->N,
                (long long)m->K);
    m->Np = round_up(m->N, nmul);
    m->Kp = round_up(m->K, kmul);
    m->group_size = cfg->group_size > 0 ? cfg->group_size : m->Kp;
    m->group_size_n = m->scale_type == HC_SCALE_BLOCK ? cfg->group_size_n : 0;
    m->G = m->Kp / m->group_size;
    return HC_OK;
}

static hc_status check_shape(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                             int64_t K, hc_error *err)
{
    int b = hc_format_get(cfg->weight_format)->bits;
    if (E < 1 || (!is_moe && E != 1) || N < 1 || K < 1)
        HC_FAIL(err, HC_ERR_ARG, "bad layer shape E=%lld N=%lld K=%lld (dense layers have E=1)",
                (long long)E, (long long)N, (long long)K);
    if (K * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "row-packed %d-bit weights need K*%d to be a multiple "
                "of 32 (K=%lld)", b, b, (long long)K);
    if (cfg->has_zero_point && !cfg->is_fp_zero_point && N * b % 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "N-packed %d-bit zero points need N*%d to be a "
                "multiple of 32 (N=%lld)", b, b, (long long)N);
    if (cfg->scale_type == HC_SCALE_BLOCK && cfg->group_size_n > 0 &&
        (N % cfg->group_size_n || K % cfg->group_size))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales need N and K to be multiples of the "
                "block (%lld x %lld)", (long long)cfg->group_size_n, (long long)cfg->group_size);
    return HC_OK;
}

hc_status hc_layer_plan(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                        int64_t K, hc_layer_meta *meta, hc_error *err)
{
    memset(meta, 0, sizeof *meta);
    if (hc_format_get(cfg->weight_format) == NULL || hc_format_get(cfg->act_format) == NULL ||
        hc_format_get(cfg->scale_format) == NULL)
        HC_FAIL(err, HC_ERR_ARG, "layer config has an unknown format id");
    if (cfg->version == HC_HUMMING_0_1_19) return hc_layer_plan_0119(cfg, is_moe, E, N, K, meta, err);
    HC_TRY(check_activation(cfg, err));
    HC_TRY(check_bits(cfg, err));
    meta->act_bits = hc_format_get(cfg->act_format)->bits;
    meta->weight_bits = hc_format_get(cfg->weight_format)->bits;
    HC_TRY(check_scales(cfg, meta->act_bits, err));
    HC_TRY(check_shape(cfg, is_moe, E, N, K, err));
    meta->E = E;
    meta->is_moe = is_moe != 0;
    meta->N = N;
    meta->K = K;
    decide(cfg, meta);
    return pad_shapes(cfg, meta, err);
}
