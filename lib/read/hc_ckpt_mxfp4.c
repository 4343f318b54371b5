/* hc_ckpt_mxfp4.c - gpt-oss MXFP4 expert stacks (formats spec 7.1):
 * P_blocks U8 [E, N, K/32, 16] (the [K/2] bytes of each row, low nibble =
 * even k) and P_scales U8 [E, N, K/32] E8M0 (2^(b-127); 0 is 2^-127, 0xFF is
 * NaN and refused). Humming: float4e2m1 codes, float8e8m0 group-32 scales,
 * byte for byte. Rows are kept in the checkpoint's order: for gate_up_proj
 * that is gpt-oss's interleave (even rows gate, odd rows up), recorded in the
 * layer record. */
#include "hc_ckpt.h"

#include <stdio.h>
#include <string.h>

hc_status hc_ckpt_read_mxfp4(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err)
{
    (void)kind;
    (void)cfg;
    const hc_st_tensor *b = hc_ckpt_find(model, prefix, "_blocks");
    const hc_st_tensor *s = hc_ckpt_find(model, prefix, "_scales");
    if (!s || (s->dtype != HC_DT_U8 && s->dtype != HC_DT_F8_E8M0))
        HC_FAIL(err, HC_ERR_FORMAT, "%s_scales: missing or not U8 / F8_E8M0", prefix);
    int moe = b->ndim == 4;
    if ((b->ndim != 4 && b->ndim != 3) || b->shape[b->ndim - 1] != 16)
        HC_FAIL(err, HC_ERR_FORMAT, "%s_blocks: expected U8 [E?, N, K/32, 16]", prefix);
    HC_TRY(hc_ckpt_check_dims(b, err));
    HC_TRY(hc_ckpt_check_shape(s, b->ndim - 1, b->shape, "the blocks' [E?, N, K/32]", err));
    HC_TRY(hc_ckpt_check_scales(s, NULL, err)); /* E8M0 0xFF is NaN */
    int64_t E = moe ? b->shape[0] : 1, N = b->shape[b->ndim - 3], G = b->shape[b->ndim - 2];
    int64_t K = G * 32;
    hc_quant_desc d = {.weight_format = HC_FMT_F4E2M1, .scale_format = HC_FMT_F8E8M0,
                       .group_size = 32};
    HC_TRY(hc_ckpt_alloc(&out->q, &d, E, N, K, N, G, !opts->meta_only, err));
    memcpy(out->q.scales, s->data, s->nbytes);
    if (!opts->meta_only) memcpy(out->q.codes, b->data, b->nbytes);
    out->is_moe = moe;
    const char *base = strrchr(prefix, '.');
    int gate_up = base && strstr(base, "gate_up") != NULL;
    snprintf(out->source_format, sizeof out->source_format, "mxfp4 (gpt-oss)%s",
             gate_up ? ", gate/up rows interleaved (even gate, odd up)" : "");
    return HC_OK;
}

static int mxfp4_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    (void)cfg;
    return t->dtype == HC_DT_U8 && t->ndim >= 3;
}

static const char *const mxfp4_tensors[] = {"_blocks", "_scales", NULL};
const hc_ckpt_reader hc_ckpt_reader_mxfp4 = {HC_CK_MXFP4, "_blocks", mxfp4_claims, mxfp4_tensors,
                                             hc_ckpt_read_mxfp4, NULL};
