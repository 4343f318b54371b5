/* hc_layout_check.c - validation of the pre-repack tensors against the plan
 * (shapes of spec 5.1 / 7.8, unpadded), each reported with its role. */
#include "hc_layout_check.h"

#include <string.h>

/* t must be dtype dt with shape (E?, d0[, d1]). */
static hc_status expect(const hc_tensor *t, const char *role, hc_dtype dt, const hc_layer_meta *m,
                        int nd, int64_t d0, int64_t d1, hc_error *err)
{
    int64_t want[3];
    int n = 0;
    if (m->is_moe) want[n++] = m->E;
    want[n++] = d0;
    if (nd == 2) want[n++] = d1;
    int ok = t->dtype == dt && t->ndim == n && t->data != NULL;
    for (int i = 0; ok && i < n; i++) ok = t->shape[i] == want[i];
    if (ok && t->nbytes != (size_t)hc_tensor_byte_size(dt, n, want)) ok = 0;
    if (ok) return HC_OK;
    char ws[96], gs[96];
    hc_shape_format(n, want, ws, sizeof ws);
    hc_shape_format(t->ndim, t->shape, gs, sizeof gs);
    const char *gd = hc_dtype_name(t->dtype);
    HC_FAIL(err, HC_ERR_FORMAT, "%s: expected %s %s, got %s %s", role, hc_dtype_name(dt), ws,
            gd ? gd : "?", gs);
}

static hc_status check_scale(const hc_layer_config *cfg, const hc_layer_meta *m,
                             const hc_tensor *s, hc_error *err)
{
    hc_dtype dt = hc_dtype_of_format(cfg->scale_format);
    switch (cfg->scale_type) {
    case HC_SCALE_TENSOR:
        if (s->data)
            HC_FAIL(err, HC_ERR_FORMAT, "weight_scale: the tensor scale type has no weight scale");
        return HC_OK;
    case HC_SCALE_CHANNEL:
        return expect(s, "weight_scale", dt, m, 2, m->N, 1, err);
    case HC_SCALE_BLOCK:
        return expect(s, "weight_scale", HC_DT_F32, m, 2, m->N / m->group_size_n,
                      m->K / m->group_size, err);
    default:
        if (m->K % m->group_size)
            HC_FAIL(err, HC_ERR_FORMAT, "weight_scale: K=%lld is not a multiple of the group "
                    "size %lld", (long long)m->K, (long long)m->group_size);
        return expect(s, "weight_scale", dt, m, 2, m->N, m->K / m->group_size, err);
    }
}

static hc_status check_zero_point(const hc_layer_config *cfg, const hc_layer_meta *m,
                                  const hc_tensor *z, hc_error *err)
{
    if (!cfg->has_zero_point) {
        if (z->data) HC_FAIL(err, HC_ERR_FORMAT, "zero_point: present but the config has none");
        return HC_OK;
    }
    int64_t G = cfg->group_size > 0 ? m->K / m->group_size : 1;
    if (!cfg->is_fp_zero_point)
        return expect(z, "zero_point", HC_DT_I32, m, 2, m->N * m->weight_bits / 32, G, err);
    hc_dtype dt = z->dtype == HC_DT_BF16 ? HC_DT_BF16 : HC_DT_F16;
    return expect(z, "zero_point", dt, m, 2, m->N, G, err);
}

hc_status hc_layout_check_pre(const hc_layer_config *cfg, const hc_layer_meta *m,
                              const hc_layer_tensors *pre, hc_error *err)
{
    HC_TRY(expect(&pre->weight, "weight", HC_DT_I32, m, 2, m->N, m->K * m->weight_bits / 32,
                  err));
    HC_TRY(check_scale(cfg, m, &pre->weight_scale, err));
    HC_TRY(check_zero_point(cfg, m, &pre->zero_point, err));
    if (pre->bias.data)
        HC_TRY(expect(&pre->bias, "bias", hc_dtype_of_format(cfg->param_format), m, 1,
                      m->N, 0, err));
    int needs_gs = (cfg->scale_type == HC_SCALE_TENSOR ||
                    cfg->scale_type == HC_SCALE_GROUP_TENSOR) &&
                   !m->use_fused_e8m0 && !m->use_int_weight_scale;
    if (cfg->scale_2_channel)
        return expect(&pre->global_scale, "weight_scale_2 (per channel)",
                      hc_dtype_of_format(cfg->param_format), m, 1, m->N, 0, err);
    if (pre->global_scale.data || needs_gs) {
        hc_layer_meta dense = *m;
        dense.is_moe = 0;  /* (E,) for MoE, (1,) for a dense layer */
        HC_TRY(expect(&pre->global_scale, "global_scale", HC_DT_F32, &dense, 1,
                      m->is_moe ? m->E : 1, 0, err));
    }
    return HC_OK;
}

/* Whether any code of the (E, N, K) row-packed b-bit weights is 0. */
static int uses_code_zero(const hc_tensor *w, int64_t rows, int64_t K, int b)
{
    const uint32_t *words = w->data;
    int64_t row_words = K * b / 32;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < K; k++) {
            int64_t bit = k * b, at = bit / 32;
            int off = (int)(bit % 32);
            uint32_t v = words[r * row_words + at] >> off;
            if (off + b > 32) v |= words[r * row_words + at + 1] << (32 - off);
            if ((v & ((1u << b) - 1u)) == 0) return 1;
        }
    return 0;
}

int hc_layer_e0m_applies(const hc_layer_config *cfg, const hc_layer_meta *m,
                         const hc_layer_tensors *pre)
{
    int b = m->weight_bits;
    if (m->version != HC_HUMMING_0_1_19 || !m->is_moe || b < 2 || pre->weight.data == NULL ||
        hc_format_get(cfg->act_format)->kind != HC_KIND_FLOAT ||
        hc_format_get(cfg->weight_format)->kind == HC_KIND_FLOAT ||
        (cfg->has_zero_point && !cfg->is_fp_zero_point))
        return 0;
    return !uses_code_zero(&pre->weight, m->E * m->N, m->K, b);
}

hc_status hc_layout_check_0119(const hc_layer_config *cfg, const hc_layer_meta *m,
                               const hc_layer_tensors *pre, hc_error *err)
{
    if (pre->global_scale.data && cfg->scale_type == HC_SCALE_BLOCK)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "weight_scale_2: humming-kernels 0.1.19 takes a second "
                "scale only with group scales or channel scales");
    if (pre->global_scale.data && m->scale2_channel && !cfg->scale_2_channel)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "weight_scale_2: MXFP4 weights with int8 activations "
                "take a per-channel second scale in humming-kernels 0.1.19 (its "
                "check_and_pad_tensors refuses a per-tensor one)");
    /* the recoding also moves float zero points; not implemented */
    if (cfg->has_zero_point && hc_layer_e0m_applies(cfg, m, pre))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "weight: the %s expert weights with float zero points "
                "never use code 0, so vLLM 0.33 recodes them as float%de0m%d with shifted zero "
                "points (convert_symmetric_integer_weight); that is not implemented for 0.1.19 "
                "tiles yet", hc_format_get(cfg->weight_format)->name, m->weight_bits,
                m->weight_bits - 1);
    return HC_OK;
}
