/* hc_layout_layer.c - hc_layer_transform: humming-kernels 0.1.19's
 * transform_humming_tensors (pad, fused e8m0, weight repack - tiled,
 * packed-K, flat or raw -, scales with e8m0 re-biased for fp16 output or as
 * UMMA / MXMMA words, zero points, bias, second scale). Works on padded copies that always carry an expert dim; the
 * outputs drop it again for dense layers. */
#include <stdlib.h>
#include <string.h>

#include "hc_layout.h"
#include "hc_layout_check.h"
#include "hc_layout_ops.h"
#include "hc_repack.h"

/* Padded working copies, shapes (E, rows, cols). */
typedef struct {
    hc_tensor w, s, zp, bias, s2;  /* s2: a per-channel second scale (E, 1, Np) */
    uint8_t *zp_codes;   /* integer zero points (E, Np, G) */
    hc_bufpool *pool;    /* the tiled weight's buffer comes from here (NULL: malloc) */
} work_set;

static void work_free(work_set *wk)
{
    hc_tensor_free(&wk->w);
    hc_tensor_free(&wk->s);
    hc_tensor_free(&wk->zp);
    hc_tensor_free(&wk->bias);
    hc_tensor_free(&wk->s2);
    free(wk->zp_codes);
}

void hc_layer_tensors_free(hc_layer_tensors *t)
{
    if (t == NULL) return;
    hc_tensor_free(&t->weight);
    hc_tensor_free(&t->weight_scale);
    hc_tensor_free(&t->zero_point);
    hc_tensor_free(&t->global_scale);
    hc_tensor_free(&t->bias);
}

/* Right-pads src seen as (E, R, C) to (E, Rp, Cp); new elements are bytes `fill`. */
static hc_status pad3(const void *src, hc_dtype dt, int64_t E, int64_t R, int64_t C, int64_t Rp,
                      int64_t Cp, unsigned char fill, hc_tensor *dst, hc_error *err)
{
    int64_t shape[3] = {E, Rp, Cp};
    HC_TRY(hc_tensor_alloc(dst, dt, 3, shape, err));
    size_t es = (size_t)hc_dtype_bits(dt) / 8;
    if (fill) memset(dst->data, fill, dst->nbytes);
    const unsigned char *s = src;
    unsigned char *d = dst->data;
    for (int64_t e = 0; e < E; e++)
        for (int64_t r = 0; r < R; r++)
            memcpy(d + (size_t)((e * Rp + r) * Cp) * es, s + (size_t)((e * R + r) * C) * es,
                   (size_t)C * es);
    return HC_OK;
}

/* Allocates an output tensor of shape (E?, d0[, d1]). */
static hc_status alloc_out(hc_tensor *t, hc_dtype dt, const hc_layer_meta *m, int nd, int64_t d0,
                           int64_t d1, hc_error *err)
{
    int64_t shape[3];
    int n = 0;
    if (m->is_moe) shape[n++] = m->E;
    shape[n++] = d0;
    if (nd == 2) shape[n++] = d1;
    return hc_tensor_alloc(t, dt, n, shape, err);
}

/* Scale tensor dims (rows, cols) before and after padding. */
static void scale_dims(const hc_layer_meta *m, int64_t *r, int64_t *c, int64_t *rp, int64_t *cp)
{
    if (m->scale_type == HC_SCALE_BLOCK) {
        *r = m->N / m->group_size_n, *c = m->K / m->group_size;
        *rp = m->Np / m->group_size_n, *cp = m->Kp / m->group_size;
    } else {
        *r = m->N, *rp = m->Np, *cp = m->G;
        *c = m->G == 1 ? 1 : m->K / m->group_size;
    }
}

/* Scales padded; e8m0 padding is byte 127 (1.0). */
static hc_status pad_scales(const hc_layer_meta *m, const hc_tensor *s, work_set *wk,
                            hc_error *err)
{
    int64_t r, c, rp, cp;
    scale_dims(m, &r, &c, &rp, &cp);
    unsigned char fill = s->dtype == HC_DT_F8_E8M0 ? 127 : 0;
    return pad3(s->data, s->dtype, m->E, r, c, rp, cp, fill, &wk->s, err);
}

/* convert_symmetric_integer_weight: offset-binary codes c (none of them 0)
 * become sign-magnitude |c - 2^(b-1)| | sign << (b-1), before vLLM pads. */
static hc_status recode_e0m(const hc_layer_meta *m, const hc_tensor *w, hc_tensor *out,
                            hc_error *err)
{
    int b = m->weight_bits;
    int64_t shape[2] = {m->E * m->N, m->K * b / 32};
    HC_TRY(hc_tensor_alloc(out, HC_DT_I32, 2, shape, err));
    const uint32_t *in = w->data, mid = 1u << (b - 1);
    uint32_t *o = out->data;
    for (int64_t r = 0; r < shape[0]; r++)
        for (int64_t k = 0; k < m->K; k++) {
            uint32_t c = hc_stream_get(in + r * shape[1], k, b);
            uint32_t e0m = c >= mid ? c - mid : (mid - c) | mid;
            int64_t bit = k * b, at = r * shape[1] + bit / 32;
            int off = (int)(bit % 32);
            o[at] |= e0m << off;
            if (off + b > 32) o[at + 1] |= e0m >> (32 - off);
        }
    return HC_OK;
}

static hc_status pad_inputs(const hc_layer_config *cfg, const hc_layer_meta *m,
                            const hc_layer_tensors *pre, int e0m, work_set *wk, hc_error *err)
{
    int b = m->weight_bits;
    hc_tensor recoded = {0};
    if (!e0m && !m->use_fused_e8m0 && m->Np == m->N && m->Kp == m->K) {
        /* no padding, and not rewritten in place (the fused e8m0 step is):
         * the canonical codes themselves, not a copy */
        wk->w = pre->weight;
        wk->w.owned = 0;
    } else {
        if (e0m) HC_TRY(recode_e0m(m, &pre->weight, &recoded, err));
        hc_status st = pad3(e0m ? recoded.data : pre->weight.data, HC_DT_I32, m->E, m->N,
                            m->K * b / 32, m->Np, m->Kp * b / 32, 0, &wk->w, err);
        hc_tensor_free(&recoded);
        HC_TRY(st);
    }
    if (m->scale_type != HC_SCALE_TENSOR) HC_TRY(pad_scales(m, &pre->weight_scale, wk, err));
    const hc_tensor *z = &pre->zero_point;
    if (z->data && cfg->is_fp_zero_point)
        HC_TRY(pad3(z->data, z->dtype, m->E, m->N, m->G == 1 ? 1 : m->K / m->group_size, m->Np,
                    m->G, 0, &wk->zp, err));
    else if (z->data)
        HC_TRY(pad3(z->data, HC_DT_I32, m->E, m->N * b / 32, m->G == 1 ? 1 : m->K / m->group_size,
                    m->Np * b / 32, m->G, 0, &wk->zp, err));
    if (pre->bias.data)
        HC_TRY(pad3(pre->bias.data, pre->bias.dtype, m->E, 1, m->N, 1, m->Np, 0, &wk->bias, err));
    const hc_tensor *g = &pre->global_scale;
    if (cfg->scale_2_channel) /* padded with 0, as check_and_pad_tensors does */
        HC_TRY(pad3(g->data, g->dtype, m->E, 1, m->N, 1, m->Np, 0, &wk->s2, err));
    return HC_OK;
}

/* Integer zero points as codes, for their layout and the int->fp transform. */
static hc_status unpack_zero_points(const hc_layer_meta *m, work_set *wk, hc_error *err)
{
    size_t count = (size_t)(m->E * m->Np * m->G);
    wk->zp_codes = malloc(count);
    HC_CHECK_ALLOC(err, wk->zp_codes, "zero-point codes");
    hc_zp_unpack(wk->zp.data, wk->zp_codes, m->E, m->Np, m->G, m->weight_bits);
    return HC_OK;
}

/* The tiled weight (E?, Kp/P, Np*P*b/32): every word is written by the
 * repack, so a buffer from pool (not zeroed) serves. */
static hc_status alloc_tiles(hc_tensor *out, const hc_layer_meta *m, hc_bufpool *pool,
                             hc_error *err)
{
    int P = 256 / m->act_bits;
    int64_t shape[3];
    int n = 0;
    if (m->is_moe) shape[n++] = m->E;
    shape[n++] = m->Kp / P;
    shape[n++] = m->Np * P * m->weight_bits / 32;
    int64_t size = hc_tensor_byte_size(HC_DT_I32, n, shape);
    if (size <= 0) HC_FAIL(err, HC_ERR_ARG, "tiled weight: byte size overflows");
    memset(out, 0, sizeof *out);
    out->data = hc_bufpool_take(pool, (size_t)size);
    HC_CHECK_ALLOC(err, out->data, "tiled weight");
    out->dtype = HC_DT_I32;
    out->ndim = n;
    memcpy(out->shape, shape, (size_t)n * sizeof shape[0]);
    out->nbytes = (size_t)size;
    out->owned = 1;
    return HC_OK;
}

static hc_status repack(const hc_layer_meta *m, const work_set *wk, hc_bufpool *pool,
                        hc_tensor *out, hc_error *err)
{
    HC_TRY(alloc_tiles(out, m, pool, err));
    hc_repack_params p = {
        .bits = m->weight_bits, .act_bits = m->act_bits,
        .transposed = m->transposed_mini_block, .native = m->use_native_dequant,
        .E = m->E, .N = m->Np, .K = m->Kp,
        .code_xor = m->int8_byte_flip ? 0x80u : m->int4_nibble_flip ? 0x8u : 0u,
        .int2fp = m->preprocess_int2fp, .zp_groups = m->G,
        .zp = m->zp_in_repack ? wk->zp_codes : NULL,
    };
    return hc_repack_weight(&p, wk->w.data, out->data, err);
}

/* 0.1.19 flat and raw weights: signed codes, the top bit of each code flipped
 * (int8 minus 128, int4 minus 8, and the ldmatrix path's sign flip are all that). */
static uint32_t flat_xor(const hc_layer_meta *m)
{
    if (!m->use_ldmatrix_dequant && !m->int8_byte_flip && !m->int4_nibble_flip) return 0;
    uint32_t mask = 0;
    for (int bit = m->weight_bits - 1; bit < 32; bit += m->weight_bits) mask |= 1u << bit;
    return mask;
}

/* Flat, packed-K (the transposed tiles of 8-bit activations, rows paired)
 * or tiled (the normal mini-block order). */
static hc_status arrange_weight(const hc_layer_meta *m, const work_set *wk, hc_tensor *out,
                                hc_error *err)
{
    int b = m->weight_bits;
    if (m->use_flat_weight || m->use_raw_weight) {
        HC_TRY(alloc_out(out, HC_DT_I32, m, 2, m->Np, m->Kp * b / 32, err));
        if (m->use_raw_weight) hc_raw_weight(wk->w.data, out->data, (int64_t)(out->nbytes / 4), flat_xor(m));
        else hc_flat_weight(wk->w.data, out->data, m->E, m->Np, m->Kp, b, flat_xor(m));
        return HC_OK;
    }
    if (!m->use_packed_k_layout) return repack(m, wk, wk->pool, out, err);
    hc_tensor tiled = {0};
    HC_TRY(repack(m, wk, NULL, &tiled, err));
    hc_status st = alloc_out(out, HC_DT_I32, m, 2, m->Kp / 64, m->Np * 64 * b / 32, err);
    if (st == HC_OK) hc_packed_k_permute(tiled.data, out->data, m->E, m->Np, m->Kp, b);
    hc_tensor_free(&tiled);
    return st;
}

/* 5.4: block scales transposed; others (E, Np, G) -> (E?, G, Np) permuted;
 * 0.1.19 block-scaled MMA: UMMA / MXMMA words. */
static hc_status layout_scales(const hc_layer_meta *m, const work_set *wk, hc_tensor *out,
                               hc_error *err)
{
    const hc_tensor *s = &wk->s;
    size_t es = (size_t)hc_dtype_bits(s->dtype) / 8;
    if (m->scale_layout == HC_SCALES_UMMA) { /* e8m0 bytes of block-scaled MMA */
        HC_TRY(alloc_out(out, HC_DT_I32, m, 2, m->G / 4, m->Np, err));
        hc_umma_scales(s->data, out->data, m->E, m->Np, m->G);
        return HC_OK;
    }
    if (m->scale_layout == HC_SCALES_MXMMA) {
        HC_TRY(alloc_out(out, HC_DT_I32, m, 2, m->G / 2, m->Np / 2, err));
        hc_mxmma_scales(s->data, out->data, m->E, m->Np, m->G);
        return HC_OK;
    }
    HC_TRY(alloc_out(out, s->dtype, m, 2, s->shape[2], s->shape[1], err));
    if (m->scale_type == HC_SCALE_BLOCK)
        hc_transpose_last2(s->data, out->data, m->E, s->shape[1], s->shape[2], es);
    else
        hc_scales_permute(s->data, out->data, m->E, m->Np, m->G, es, m->to_apply_on_c ? 32 : 64);
    return HC_OK;
}

/* 5.5: float zero points like scales (perm64); integer ones as permuted codes
 * in a byte stream, shape (E?, G, Np*zb/32) exactly as Humming returns it. */
static hc_status layout_zero_point(const hc_layer_meta *m, const work_set *wk, hc_tensor *out,
                                   hc_error *err)
{
    if (wk->zp.dtype != HC_DT_I32) {
        HC_TRY(alloc_out(out, wk->zp.dtype, m, 2, m->G, m->Np, err));
        hc_scales_permute(wk->zp.data, out->data, m->E, m->Np, m->G, 2, 64);
        return HC_OK;
    }
    int zb = m->weight_bits <= 4 ? 4 : 8;
    size_t count = (size_t)(m->E * m->G * m->Np);
    uint8_t *perm = malloc(count);
    HC_CHECK_ALLOC(err, perm, "permuted zero points");
    hc_status st = alloc_out(out, HC_DT_I32, m, 2, m->G, m->Np * zb / 32, err);
    if (st == HC_OK) {
        hc_scales_permute(wk->zp_codes, perm, m->E, m->Np, m->G, 1, 64);
        hc_zp_pack_bytes(perm, out->data, (int64_t)count, m->weight_bits);
    }
    free(perm);
    return st;
}

/* 5.6: bias permuted with perm32 in chunks of 32 along N (transform_humming_bias);
 * so is a per-channel second scale. */
static hc_status layout_row_vector(const hc_layer_meta *m, const hc_tensor *v, hc_tensor *out,
                                   hc_error *err)
{
    HC_TRY(alloc_out(out, v->dtype, m, 1, m->Np, 0, err));
    hc_scales_permute(v->data, out->data, m->E, m->Np, 1, (size_t)hc_dtype_bits(v->dtype) / 8, 32);
    return HC_OK;
}

/* A per-tensor second scale: (E,) for MoE, (1,) dense, copied. */
static hc_status alloc_global(const hc_layer_meta *m, const hc_tensor *in, hc_tensor *out,
                              hc_error *err)
{
    int64_t n = m->is_moe ? m->E : 1;
    HC_TRY(hc_tensor_alloc(out, HC_DT_F32, 1, &n, err));
    memcpy(out->data, in->data, (size_t)n * sizeof(float));
    return HC_OK;
}

static hc_status run_steps(const hc_layer_config *cfg, const hc_layer_meta *plan,
                           const hc_layer_tensors *pre, hc_layer_tensors *post, work_set *wk,
                           hc_error *err)
{
    /* e0m weights are float codes: no int->fp preprocessing */
    hc_layer_meta e0m_meta = *plan;
    const hc_layer_meta *m = plan;
    post->weight_e0m = hc_layer_e0m_applies(cfg, plan, pre);
    if (post->weight_e0m) {
        e0m_meta.preprocess_int2fp = e0m_meta.zp_in_repack = 0;
        m = &e0m_meta;
    }
    HC_TRY(pad_inputs(cfg, m, pre, post->weight_e0m, wk, err));
    if (m->use_fused_e8m0) /* its second scale: the folded exponent base */
        HC_TRY(hc_fused_e8m0_step(cfg, m, &pre->global_scale, wk->w.data, wk->s.data, &wk->s2,
                                  &post->global_scale, err));
    else if (pre->global_scale.data && !m->scale2_channel)
        HC_TRY(alloc_global(m, &pre->global_scale, &post->global_scale, err));
    if (wk->zp.data && wk->zp.dtype == HC_DT_I32) HC_TRY(unpack_zero_points(m, wk, err));
    HC_TRY(arrange_weight(m, wk, &post->weight, err));
    if (m->fused_split_sign) hc_split_sign_words(post->weight.data, (int64_t)(post->weight.nbytes / 4));
    if (m->e8m0_as_e5m0 && wk->s.data) hc_e8m0_as_e5m0(wk->s.data, (int64_t)wk->s.nbytes);
    if (wk->s.data) HC_TRY(layout_scales(m, wk, &post->weight_scale, err));
    if (wk->zp.data) HC_TRY(layout_zero_point(m, wk, &post->zero_point, err));
    if (wk->bias.data) HC_TRY(layout_row_vector(m, &wk->bias, &post->bias, err));
    if (wk->s2.data) HC_TRY(layout_row_vector(m, &wk->s2, &post->global_scale, err));
    return HC_OK;
}

hc_status hc_layer_transform(const hc_layer_config *cfg, const hc_layer_meta *meta,
                             const hc_layer_tensors *pre, hc_layer_tensors *post,
                             hc_error *err)
{
    return hc_layer_transform_pooled(cfg, meta, pre, post, NULL, err);
}

hc_status hc_layer_transform_pooled(const hc_layer_config *cfg, const hc_layer_meta *meta,
                                    const hc_layer_tensors *pre, hc_layer_tensors *post,
                                    hc_bufpool *pool, hc_error *err)
{
    memset(post, 0, sizeof *post);
    if (meta->version != HC_HUMMING_0_1_19)
        HC_FAIL(err, HC_ERR_ARG, "a canonical layer plan has no kernel tensors (vLLM builds "
                "them at load): plan the layer for humming-kernels 0.1.19");
    HC_TRY(hc_layout_check_pre(cfg, meta, pre, err));
    HC_TRY(hc_layout_check_0119(cfg, meta, pre, err));
    work_set wk;
    memset(&wk, 0, sizeof wk);
    wk.pool = pool;
    hc_status st = run_steps(cfg, meta, pre, post, &wk, err);
    work_free(&wk);
    if (st != HC_OK) hc_layer_tensors_free(post);
    return st;
}
