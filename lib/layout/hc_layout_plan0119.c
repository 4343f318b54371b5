/* hc_layout_plan0119.c - the decisions humming-kernels 0.1.19 makes for one
 * layer (LayerConfig in humming/config/config.py, is_humming_schema_compatible
 * in humming/schema/humming.py, transform_humming_weight in
 * humming/transform.py) for the GPUs whose layout we reproduce (sm75-sm90,
 * sm100, sm120), and vLLM 0.33's padding (N to a multiple of 256, K to 128). */
#include "hc_layout.h"
#include "hc_layout_ops.h"

#include <string.h>

static const hc_format_info *fmt(hc_format_id id) { return hc_format_get(id); }

static int is_int(hc_format_id id) { return fmt(id)->kind != HC_KIND_FLOAT; }

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* get_dtype_compatibility_error, the activations' minimum SM, and int4
 * activations only where 0.1.19 runs them. */
static hc_status check_dtypes(const hc_layer_config *c, hc_error *err)
{
    HC_TRY(hc_layout_check_dtypes(c, err));
    if (c->act_format == HC_FMT_INT4 && c->sm >= 90) /* humming/tune: b4_allowed_dtypes */
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "humming-kernels 0.1.19 runs int4 activations on "
                "sm75-sm89 only (vLLM would fall back to int8 activations)");
    return HC_OK;
}

/* MXFP4 x fp8 e4m3 / int8 (LayerConfig.use_fused_e8m0_scale): fp4 weights with
 * e8m0 group scales, unless the GPU's block-scaled MMA takes fp8 x fp4 natively. */
static int is_fused_e8m0(const hc_layer_config *c, int block_scaled_mma)
{
    return (c->act_format == HC_FMT_F8E4M3 || c->act_format == HC_FMT_INT8) &&
           c->weight_format == HC_FMT_F4E2M1 && c->scale_format == HC_FMT_F8E8M0 &&
           c->group_size > 0 && !(block_scaled_mma && c->act_format == HC_FMT_F8E4M3);
}

/* What 0.1.19's fused-e8m0 preprocessing can take: process_mxfp4_w4a8_weight
 * folds one e8m0 exponent per 32 codes (it asserts that count), and with int8
 * activations the second scale becomes per channel, which a per-tensor input
 * scale cannot be (check_and_pad_tensors expands it as float32 and its own
 * validation then refuses it). */
static hc_status check_fused_e8m0(const hc_layer_config *c, hc_error *err)
{
    if (c->group_size != 32)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "MXFP4 weights with %s activations need group size 32 "
                "(humming-kernels 0.1.19's fused-e8m0 path folds one scale per 32 codes; got "
                "%lld)", fmt(c->act_format)->name, (long long)c->group_size);
    if (c->scale_type != HC_SCALE_GROUP && c->scale_type != HC_SCALE_GROUP_TENSOR)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "MXFP4 weights with %s activations need group scales",
                fmt(c->act_format)->name);
    if (c->act_format == HC_FMT_INT8 && c->scale_type == HC_SCALE_GROUP_TENSOR)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "MXFP4 weights with a per-tensor weight_scale_2 and "
                "int8 activations: humming-kernels 0.1.19 makes the second scale per channel "
                "there and fails on a per-tensor one (check_and_pad_tensors)");
    return HC_OK;
}

/* Weights against integer activations (is_humming_schema_compatible). */
static hc_status check_int_act(const hc_layer_config *c, hc_error *err)
{
    const hc_format_info *a = fmt(c->act_format), *b = fmt(c->weight_format);
    if (is_fused_e8m0(c, 0)) return check_fused_e8m0(c, err);
    if (!is_int(c->weight_format))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s weights with %s activations: integer activations "
                "take integer weights, or MXFP4 (float4e2m1 with float8e8m0 scales per 32) "
                "with int8 activations", b->name, a->name);
    if (b->bits > a->bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit weights with %s activations", b->bits, a->name);
    if (c->has_zero_point && b->bits == a->bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit weights with %s activations take no zero "
                "point", b->bits, a->name);
    return HC_OK;
}

/* Weights against float activations: they must fit the MMA type. */
static hc_status check_float_act(const hc_layer_config *c, hc_error *err)
{
    const hc_format_info *a = fmt(c->act_format), *b = fmt(c->weight_format);
    /* float8e3m4 operands (sm100+) are not modelled in the tiles: e3m4 = 0 */
    hc_format_id mid = hc_layout_mma_b_type(c->act_format, c->weight_format, c->has_zero_point, 0);
    const hc_format_info *m = fmt(mid);
    if (mid == HC_FMT_F8E3M4) /* uses_undocumented_fp_operand: cubin patching, sm100+ */
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "float8e3m4 weights with %s activations need sm100+",
                a->name);
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
    if (b->exp_bits < 1 || b->man_bits > m->man_bits || b->exp_bits > m->exp_bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s weights with %s activations: float weights need "
                ">= 1 and <= %d exponent bits and <= %d mantissa bits", b->name, a->name,
                m->exp_bits, m->man_bits);
    return HC_OK;
}

/* LayerConfig.is_umma_supported (sm100 family) for per-token activations. */
static int umma_supported(const hc_layer_config *c)
{
    if (c->sm / 10 != 10 && c->sm / 10 != 11) return 0;
    const int block = c->scale_type == HC_SCALE_BLOCK, gs = (int)c->group_size;
    const int epilogue = gs == 0 && !block; /* no group / block weight scales */
    const int mx = !block && (gs == 0 || (gs == 32 && c->scale_format == HC_FMT_F8E8M0));
    const int fp8_act = c->act_format == HC_FMT_F8E4M3 || c->act_format == HC_FMT_F8E5M2;
    if (fmt(c->act_format)->bits == 16) return 1; /* f16 / bf16 UMMA */
    if (fp8_act) return epilogue || mx;
    return c->act_format == HC_FMT_INT8 && (c->sm == 100 || c->sm == 110) &&
           is_int(c->weight_format) && epilogue;
}

/* LayerConfig.mxmma_supported (sm120 family) for per-token activations. */
static int mxmma_supported(const hc_layer_config *c)
{
    if (c->sm / 10 != 12 || c->scale_type == HC_SCALE_BLOCK) return 0;
    if (c->act_format != HC_FMT_F8E4M3 && c->act_format != HC_FMT_F8E5M2) return 0;
    return c->group_size == 0 || (c->group_size == 32 && c->scale_format == HC_FMT_F8E8M0);
}

/* Whether 0.1.19's use_native_dequant depends on the CUDA compiler Humming
 * finds at run time, beyond what vLLM 0.33's CUDA 13 implies: bfloat16
 * activations with fp4 / fp6 / fp8 weights on sm100+ take it from NVRTC 13.2
 * (LayerConfig.use_native_dequant), and the slots of the tiles change. */
static int native_dequant_depends_on_nvrtc(const hc_layer_config *c)
{
    const hc_format_id b = c->weight_format;
    return c->sm >= 100 && c->act_format == HC_FMT_BF16 &&
           (b == HC_FMT_F4E2M1 || b == HC_FMT_F6E3M2 || b == HC_FMT_F6E2M3 || hc_layout_is_fp8(b));
}

static hc_status check_config(const hc_layer_config *c, hc_error *err)
{
    if (c->sm < 75 || (c->sm > 90 && c->sm != 100 && c->sm != 120))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "humming-kernels 0.1.19 tiles are implemented for "
                "sm75-sm90, sm100 and sm120 (got sm%d)", c->sm);
    HC_TRY(check_dtypes(c, err));
    if (native_dequant_depends_on_nvrtc(c))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s weights with bfloat16 activations on sm%d: "
                "humming-kernels 0.1.19 lays them out for native dequantization only when it "
                "compiles with NVRTC >= 13.2 (LayerConfig.use_native_dequant), so the tiles "
                "depend on the serving machine's toolchain; use float16 or the canonical layout",
                fmt(c->weight_format)->name, c->sm);
    const hc_format_info *b = fmt(c->weight_format);
    if (b->bits > 8 || b->bits > fmt(c->act_format)->bits)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%d-bit weights need %s activations", b->bits,
                b->bits > 4 ? "8- or 16-bit" : "4-, 8- or 16-bit");
    HC_TRY(is_int(c->act_format) ? check_int_act(c, err) : check_float_act(c, err));
    if (!is_int(c->act_format) && is_fused_e8m0(c, mxmma_supported(c) || umma_supported(c)))
        HC_TRY(check_fused_e8m0(c, err));
    return hc_layout_check_scales(c, err);
}

static hc_status check_shape(const hc_layer_config *c, hc_layer_meta *m, hc_error *err)
{
    HC_TRY(hc_layout_check_packing(c, m, err));
    if (c->group_size > 0 && (m->K % c->group_size || m->Kp % c->group_size))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "K=%lld (padded %lld) is not a multiple of the group "
                "size %lld", (long long)m->K, (long long)m->Kp, (long long)c->group_size);
    if (c->scale_type == HC_SCALE_BLOCK && (m->N % c->group_size_n || m->Np % c->group_size_n))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "block scales need N=%lld and its padding %lld to be "
                "multiples of the block height %lld", (long long)m->N, (long long)m->Np,
                (long long)c->group_size_n);
    return HC_OK;
}

/* sm100 / sm120: raw weights, block-scaled MMA and its scale layout. */
static void decide_blackwell(const hc_layer_config *c, hc_layer_meta *m)
{
    const int umma = umma_supported(c), a = m->act_bits, b = m->weight_bits;
    m->use_umma = umma;
    const hc_format_id w = c->weight_format;
    m->use_block_scaled_mma = mxmma_supported(c) ||
                              (umma && !is_int(c->act_format) && a <= 8 && c->group_size > 0);
    if (a == b) m->use_raw_weight = umma;
    else m->use_raw_weight = umma && hc_layout_is_fp8(c->act_format) &&
                             (w == HC_FMT_F4E2M1 || w == HC_FMT_F6E3M2 || w == HC_FMT_F6E2M3);
    if (m->use_block_scaled_mma && c->scale_type != HC_SCALE_CHANNEL &&
        c->scale_type != HC_SCALE_TENSOR)
        m->scale_layout = c->sm / 10 == 12 ? HC_SCALES_MXMMA : HC_SCALES_UMMA;
}

/* The LayerConfig properties that shape the tensors. */
static void decide(const hc_layer_config *c, hc_layer_meta *m)
{
    int a = m->act_bits, b = m->weight_bits, wint = is_int(c->weight_format);
    int aint = is_int(c->act_format), zp = c->has_zero_point;
    m->use_wgmma = c->sm / 10 == 9 && c->act_format != HC_FMT_INT4; /* default MMA only */
    if (c->sm >= 100) decide_blackwell(c, m);
    m->use_ldmatrix_dequant = !zp && wint && ((c->act_format == HC_FMT_INT8 && b == 4) ||
                                              (c->act_format == HC_FMT_INT4 && b == 2));
    m->use_flat_weight = m->use_ldmatrix_dequant || (a == b && !m->use_raw_weight);
    m->use_fused_e8m0 = is_fused_e8m0(c, m->use_block_scaled_mma);
    /* the fused path prefers packed-K only with input groups >= 128 (never per token) */
    m->use_packed_k_layout = c->sm / 10 == 9 && !m->use_flat_weight && a == 8 && b % 2 == 0 &&
                             c->group_size == 128 && !m->use_fused_e8m0;
    m->transposed_mini_block = m->use_packed_k_layout;
    /* float16 activations (bfloat16 ones on sm100+ are refused: NVRTC-dependent) */
    const hc_format_id w = c->weight_format;
    m->use_native_dequant = !m->use_flat_weight && !m->use_raw_weight && c->sm / 10 != 9 &&
                            c->sm >= 89 && c->act_format == HC_FMT_F16 &&
                            (w == HC_FMT_F8E4M3 || w == HC_FMT_F8E5M2 ||
                             (c->sm >= 100 && (w == HC_FMT_F4E2M1 || w == HC_FMT_F6E3M2 ||
                                               w == HC_FMT_F6E2M3)));
    /* should_apply_bs_on_c */
    if (m->use_fused_e8m0) m->to_apply_on_c = 0;
    else if (m->use_block_scaled_mma && c->sm / 10 == 12) m->to_apply_on_c = c->scale_type == HC_SCALE_CHANNEL;
    else m->to_apply_on_c = c->group_size == 0;
    m->kernel_weight_signed = wint && aint && a == b;
    m->int8_byte_flip = c->act_format == HC_FMT_INT8 && wint && b == 8;
    m->int4_nibble_flip = c->act_format == HC_FMT_INT4 && wint && b == 4;
    if (wint && !aint && !(zp && c->is_fp_zero_point))
        m->preprocess_int2fp = a < 16 || (c->act_format == HC_FMT_BF16 && b > (zp ? 6 : 7));
    m->zp_in_repack = m->preprocess_int2fp && zp && !c->is_fp_zero_point;
    m->e8m0_as_e5m0 = c->scale_format == HC_FMT_F8E8M0 && c->param_format == HC_FMT_F16 &&
                      c->scale_type != HC_SCALE_TENSOR && !m->use_fused_e8m0 &&
                      !m->use_block_scaled_mma;
    /* fused e8m0: fp8 activations repack with interleave mode 2; int8 ones get a
     * per-channel second scale (prepare_layer_config's use_channel_scale_2), as
     * does an input whose second scale is per channel */
    m->fused_split_sign = m->use_fused_e8m0 && c->act_format == HC_FMT_F8E4M3;
    m->scale2_channel = c->scale_2_channel || (m->use_fused_e8m0 && c->act_format == HC_FMT_INT8);
    m->scale_type = c->scale_type;
    m->scale_format = c->scale_format;
}

hc_status hc_layer_plan_0119(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                             int64_t K, hc_layer_meta *m, hc_error *err)
{
    memset(m, 0, sizeof *m);
    m->version = HC_HUMMING_0_1_19;
    HC_TRY(check_config(cfg, err));
    m->E = E;
    m->is_moe = is_moe != 0;
    m->N = N;
    m->K = K;
    m->act_bits = fmt(cfg->act_format)->bits;
    m->weight_bits = fmt(cfg->weight_format)->bits;
    m->Np = N > 0 && N < INT64_MAX / 64 ? round_up(N, 256) : N;
    m->Kp = K > 0 && K < INT64_MAX / 64 ? round_up(K, 128) : K;
    HC_TRY(check_shape(cfg, m, err));
    m->group_size = cfg->group_size > 0 ? cfg->group_size : m->Kp;
    m->group_size_n = cfg->scale_type == HC_SCALE_BLOCK ? cfg->group_size_n : 0;
    m->G = m->Kp / m->group_size;
    decide(cfg, m);
    return HC_OK;
}
