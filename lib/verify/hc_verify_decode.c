/* hc_verify_decode.c - the kernel-ready tensors back to float weights.
 *
 * Written from the spec alone (humming-layout-spec 4.3-4.7, 5.3-5.7), as the
 * inverse of the element -> (word, bit) mapping: for every lane of every tile
 * the b final words are expanded back into Bp padded words (inverse of the
 * 4.5 compaction), each of the 32 slots is read and placed at its (n, k).
 * Scales, zero points and bias are read through the inverse of perm64/perm32.
 * humming-kernels 0.1.19 layers (docs/layout.md) are read from that text too:
 * packed-K rows pair two tile rows, flat weights are row-packed signed codes
 * in 64-row x 128-bit chunks, native-dequant words keep codes in order, and
 * e8m0 scales of fp16 layers are padded E5M0 bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hc_verify.h"
#include "hc_parallel.h"
#include "../kernels/hc_kernels.h" /* host/device code shared with the kernels */

static int next_pow2(int b)
{
    int p = 1;
    while (p < b) p <<= 1;
    return p;
}

/* Inverse of perm64 / perm32 (spec 5.4): position j in the chunk that holds
 * original index i. perm64[j] = 8*(j%8) + j/8; perm32[j] = T[j%8] + 2*(j/8). */
static void inverse_perm(int L, int *inv)
{
    static const int t32[8] = {0, 1, 8, 9, 16, 17, 24, 25};
    for (int j = 0; j < L; j++) {
        int orig = L == 64 ? 8 * (j % 8) + j / 8 : t32[j % 8] + 2 * (j / 8);
        inv[orig] = j;
    }
}

static uint32_t rd32(const void *base, int64_t i)
{
    uint32_t v;
    memcpy(&v, (const unsigned char *)base + i * 4, 4);
    return v;
}

static uint16_t rd16(const void *base, int64_t i)
{
    uint16_t v;
    memcpy(&v, (const unsigned char *)base + i * 2, 2);
    return v;
}

static float rdf32(const void *base, int64_t i)
{
    float v;
    memcpy(&v, (const unsigned char *)base + i * 4, 4);
    return v;
}

static hc_format_id half_format(hc_dtype dt) { return dt == HC_DT_BF16 ? HC_FMT_BF16 : HC_FMT_F16; }

/* Value of a raw 16-bit float element. */
static double half_value(hc_dtype dt, uint16_t raw)
{
    return hc_format_decode(half_format(dt), raw);
}

/* Everything the per-element value needs, un-permuted into (E, Np, G). */
typedef struct {
    const hc_layer_config *cfg;
    const hc_layer_meta *m;
    double *scale;      /* (E, Np, G), or block (E, Np/gn, Kp/gk); NULL: 1 */
    double *zero;       /* (E, Np, G) zero point as a number; NULL: none */
    int *zcode;         /* (E, Np, G) integer zero-point codes (int zp only) */
    double *global;     /* (E); NULL: 1 (a per-channel one is folded into scale) */
    /* the 32 values of a lane (spec 4.3 inverted), fixed per layer: the value u
     * sits at n = 64 nb + 4 a j + lane / 4 + dn[u], k = P kb + R (lane % 4) + dk[u],
     * in padded word wd[u] at bit sh[u] */
    int dn[32], dk[32], wd[32], sh[32];
    int shm[32];        /* fused e8m0 x fp8 (fused_split_sign): the slot of the
                           magnitude bits of value u, in order (sh[u] keeps the sign) */
    int is_float;
    double flut[256];   /* float weight codes -> value (is_float) */
    int e0m;            /* 0.1.19 MoE: sign-magnitude codes (post->weight_e0m) */
    /* the lane map seen from the output (quad_map): four lanes 4q..4q+3 fill,
     * for each of their row classes c (rows 4 a j + q + qdn[c]), the P values
     * of a tile row; value i = c P + k comes from word qw[i] of the quad's
     * padded words (lane-major) at bit qsh[i]. quad_ok: the map was found. */
    int quad_ok, quad_rows, qdn[32];
    int32_t qw[128], qsh[128];
    /* code_values' vector form (codes of at most 4 bits): 1 x of each code
     * fixed per layer (xc), 2 x = code - zero (a float zero point); 0 none */
    int xvec;
    double xc[16];
    int portable;       /* tests: 1 the element-by-element panel decoding only,
                           2 at most the AVX2 quads */
} decode_ctx;

/* The lane map inverted per quad of lanes (decode_ctx): every (lane of the
 * quad, value u) lands on one (row class, k < P), each exactly once, or the
 * map is not used. */
static void quad_map(decode_ctx *c)
{
    const hc_layer_meta *m = c->m;
    const int a = m->act_bits, P = 256 / a, R = 32 / a, Bp = next_pow2(m->weight_bits);
    int seen[128] = {0}, rows = 0;
    c->quad_ok = 0;
    for (int u = 0; u < 32; u++) { /* the distinct row offsets, in order */
        int at = 0;
        while (at < rows && c->qdn[at] < c->dn[u]) at++;
        if (at < rows && c->qdn[at] == c->dn[u]) continue;
        memmove(c->qdn + at + 1, c->qdn + at, (size_t)(rows - at) * sizeof *c->qdn);
        c->qdn[at] = c->dn[u];
        rows++;
    }
    if (rows * P != 128) return;
    for (int l = 0; l < 4; l++)
        for (int u = 0; u < 32; u++) {
            int cls = 0, k = R * l + c->dk[u];
            while (c->qdn[cls] != c->dn[u]) cls++;
            if (k >= P || seen[cls * P + k]++) return;
            c->qw[cls * P + k] = l * Bp + c->wd[u];
            c->qsh[cls * P + k] = c->sh[u];
        }
    c->quad_rows = rows;
    c->quad_ok = 1;
}

/* Fills the per-layer lane map and the float code table. */
static void lane_map(decode_ctx *c)
{
    const hc_layer_meta *m = c->m;
    const int a = m->act_bits, b = m->weight_bits, Bp = next_pow2(b);
    const int R = 32 / a, Nw = 32 / Bp, Gs = a / Bp;
    for (int u = 0; u < 32; u++) {
        const int kk = u % R, rest = u / R, i3 = rest / 4;
        int i4, i5;
        if (m->transposed_mini_block) i4 = rest % 2, i5 = (rest / 2) % 2;
        else i5 = rest % 2, i4 = (rest / 2) % 2;
        const int o = u % Nw, slot = m->use_native_dequant ? o : (o % R) * Gs + o / R;
        c->dn[u] = 16 * i3 + 8 * i4;
        c->dk[u] = 4 * R * i5 + kk;
        c->wd[u] = u / Nw;
        c->sh[u] = slot * Bp;
        c->shm[u] = (m->fused_split_sign ? o : slot) * Bp;
    }
    c->is_float = hc_format_get(c->cfg->weight_format)->kind == HC_KIND_FLOAT;
    for (uint32_t v = 0; c->is_float && v < 256 && v < (1u << b); v++)
        c->flut[v] = hc_format_decode(c->cfg->weight_format, v);
}

static hc_status decode_scales(decode_ctx *c, const hc_tensor *s, hc_error *err)
{
    const hc_layer_meta *m = c->m;
    int64_t E = m->E;
    if (m->scale_type == HC_SCALE_TENSOR || s->data == NULL) return HC_OK;
    if (m->scale_type == HC_SCALE_BLOCK) {
        int64_t Rb = m->Np / m->group_size_n, Cb = m->Kp / m->group_size;
        c->scale = malloc((size_t)(E * Rb * Cb) * sizeof(double));
        HC_CHECK_ALLOC(err, c->scale, "decoded block scales");
        /* post: (E, Cb, Rb) transposed */
        for (int64_t e = 0; e < E; e++)
            for (int64_t r = 0; r < Rb; r++)
                for (int64_t q = 0; q < Cb; q++)
                    c->scale[(e * Rb + r) * Cb + q] = rdf32(s->data, (e * Cb + q) * Rb + r);
        return HC_OK;
    }
    int64_t Np = m->Np, G = m->G;
    int L = m->to_apply_on_c ? 32 : 64, inv[64];
    inverse_perm(L, inv);
    c->scale = malloc((size_t)(E * Np * G) * sizeof(double));
    HC_CHECK_ALLOC(err, c->scale, "decoded scales");
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * G * Np))
    for (int64_t e = 0; e < E; e++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t n = 0; n < Np; n++) {
                int64_t src = (e * G + g) * Np + (n / L) * L + inv[n % L];
                double v;
                if (m->use_int_weight_scale) {
                    v = (double)(int16_t)rd16(s->data, src);        /* 5.7: int16 bits */
                } else if (m->use_fused_e8m0) {
                    v = ldexp(1.0, ((const uint8_t *)s->data)[src]); /* 5.3: offsets */
                } else if (m->e8m0_as_e5m0) { /* exponent + 15 in bits 3..7 */
                    v = ldexp(1.0, (((const uint8_t *)s->data)[src] >> 3) - 15);
                } else if (s->dtype == HC_DT_F16 || s->dtype == HC_DT_BF16) {
                    v = half_value(s->dtype, rd16(s->data, src));
                } else {
                    v = hc_format_decode(m->scale_format, ((const uint8_t *)s->data)[src]);
                }
                c->scale[(e * Np + n) * G + g] = v;
            }
    return HC_OK;
}

static hc_status decode_zero(decode_ctx *c, const hc_tensor *z, hc_error *err)
{
    const hc_layer_meta *m = c->m;
    if (z->data == NULL) return HC_OK;
    int64_t E = m->E, Np = m->Np, G = m->G;
    int inv[64];
    inverse_perm(64, inv);
    c->zero = malloc((size_t)(E * Np * G) * sizeof(double));
    HC_CHECK_ALLOC(err, c->zero, "decoded zero points");
    int is_int = z->dtype == HC_DT_I32;
    if (is_int) {
        c->zcode = malloc((size_t)(E * Np * G) * sizeof(int));
        HC_CHECK_ALLOC(err, c->zcode, "decoded zero-point codes");
    }
    int zb = m->weight_bits <= 4 ? 4 : 8;
    const uint8_t *bytes = z->data;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * G * Np))
    for (int64_t e = 0; e < E; e++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t n = 0; n < Np; n++) {
                int64_t t = (e * G + g) * Np + (n / 64) * 64 + inv[n % 64];
                int64_t d = (e * Np + n) * G + g;
                if (!is_int) {
                    c->zero[d] = half_value(z->dtype, rd16(z->data, t));
                    continue;
                }
                int code = zb == 8 ? bytes[t] : (bytes[t / 2] >> (4 * (t % 2))) & 15;
                c->zcode[d] = code;
                c->zero[d] = code;
            }
    return HC_OK;
}

/* Code of value u of a lane from its padded words Wd. */
static inline uint32_t lane_code(const decode_ctx *c, const uint32_t *Wd, int u, uint32_t mask)
{
    const uint32_t w = Wd[c->wd[u]];
    if (!c->m->fused_split_sign) return (w >> c->sh[u]) & mask;
    const uint32_t top = (mask >> 1) + 1;
    return ((w >> c->shm[u]) & (mask >> 1)) | ((w >> c->sh[u]) & top);
}

static void ctx_free(decode_ctx *c)
{
    free(c->scale);
    free(c->zero);
    free(c->zcode);
    free(c->global);
}

/* The integer value x (before scales) of a stored code at (e, n, g). */
static inline __attribute__((always_inline)) double
int_value(const decode_ctx *c, uint32_t code, int64_t e, int64_t n, int64_t g)
{
    const hc_layer_meta *m = c->m;
    int b = m->weight_bits;
    uint32_t mask = (1u << b) - 1;
    int64_t d = (e * m->Np + n) * m->G + g;
    if (m->kernel_weight_signed) /* W8A8 / W4A4: two's complement codes */
        return (double)((int32_t)(code << (32 - b)) >> (32 - b));
    if (m->preprocess_int2fp) {  /* 4.7, inverted: v' <= mask - z held v - z */
        uint32_t z = m->zp_in_repack && c->zcode ? (uint32_t)c->zcode[d] : 1u << (b - 1);
        uint32_t v = code <= mask - z ? code + z : mask - code;
        return (double)v - (double)z;
    }
    if (c->zero) return (double)code - c->zero[d];
    return (double)code - (double)(1u << (b - 1));
}

static inline __attribute__((always_inline)) double
elem_scale(const decode_ctx *c, int64_t e, int64_t n, int64_t k, int64_t g)
{
    const hc_layer_meta *m = c->m;
    if (c->scale == NULL) return 1.0;
    if (m->scale_type == HC_SCALE_BLOCK) {
        int64_t Rb = m->Np / m->group_size_n, Cb = m->Kp / m->group_size;
        return c->scale[(e * Rb + n / m->group_size_n) * Cb + k / m->group_size];
    }
    return c->scale[(e * m->Np + n) * m->G + g];
}

/* One lane of one tile: b words -> 32 values placed in W (row stride ldw,
 * column 0 at k = kofs). */
static void decode_lane(const decode_ctx *c, const uint32_t *F, int64_t e, int64_t kb,
                        int64_t nb, int j, int lane, int64_t row0, float *W, int64_t ldw,
                        int64_t kofs)
{
    const hc_layer_meta *m = c->m;
    const int a = m->act_bits, b = m->weight_bits;
    const int P = 256 / a, R = 32 / a;
    uint32_t Wd[8];
    hck_uncompact(b, F, Wd); /* the kernels' own inverse of the 4.5 compaction */
    const uint32_t mask = (1u << b) - 1;
    const int64_t n0 = 64 * nb + 4 * a * j + lane / 4, k0 = (int64_t)P * kb + R * (lane % 4);
    /* 5.3 with int8 activations: the kernel multiplies fp4 values by 2 to make
     * them integers; the global scale carries the 0.5. */
    const double x2 = m->use_fused_e8m0 && c->cfg->act_format == HC_FMT_INT8 ? 2.0 : 1.0;
    const double gl = c->global ? c->global[e] : 1.0;
    /* a whole tile row lies in one group when the group size is a multiple of P */
    const int64_t g_row = m->group_size % P == 0 ? (int64_t)P * kb / m->group_size : -1;
    for (int u = 0; u < 32; u++) {
        const int64_t n = n0 + c->dn[u], k = k0 + c->dk[u];
        const uint32_t code = lane_code(c, Wd, u, mask);
        const int64_t g = g_row >= 0 ? g_row : k / m->group_size;
        const uint32_t mag = code & (mask >> 1);
        const double x = c->e0m ? (code > mask >> 1 ? -(double)mag : (double)mag)
                         : c->is_float ? c->flut[code] : int_value(c, code, e, n, g);
        double v = x * x2 * elem_scale(c, e, n, k, g);
        if (c->global) v *= gl;
        W[(e * m->Np + n - row0) * ldw + k - kofs] = (float)v;
    }
}

/* Index of word w of (expert e, tile row kb, n tile nb, chunk j, lane) in
 * the weight tensor: the kernels' own index (kernels/hc_kernels.h). */
static int64_t tile_word(const hc_layer_meta *m, int64_t e, int64_t kb, int64_t nb, int j,
                         int lane, int w)
{
    return hck_tile_word_at(m->weight_bits, m->act_bits, m->use_packed_k_layout, m->Np, m->Kp, e,
                            kb, nb, j, lane, w);
}

/* Tile row kb of n tile nb of expert e into W, whose first row is row0
 * (counted in (e, n) rows), row stride ldw, column 0 at k = kofs. */
static void decode_tile(const decode_ctx *c, const void *words, int64_t e, int64_t kb,
                        int64_t nb, int64_t row0, float *W, int64_t ldw, int64_t kofs)
{
    const int b = c->m->weight_bits, chunks = 16 / c->m->act_bits;
    for (int j = 0; j < chunks; j++)
        for (int lane = 0; lane < 32; lane++) {
            uint32_t F[8];
            for (int w = 0; w < b; w++) F[w] = rd32(words, tile_word(c->m, e, kb, nb, j, lane, w));
            decode_lane(c, F, e, kb, nb, j, lane, row0, W, ldw, kofs);
        }
}

static void decode_tiles(const decode_ctx *c, const void *words, float *W)
{
    const hc_layer_meta *m = c->m;
    const int64_t rows = m->Kp / (256 / m->act_bits), E = m->E, tiles = m->Np / 64;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * m->Kp * m->Np))
    for (int64_t e = 0; e < E; e++)
        for (int64_t kb = 0; kb < rows; kb++)
            for (int64_t nb = 0; nb < tiles; nb++) decode_tile(c, words, e, kb, nb, 0, W, m->Kp, 0);
}

/* 0.1.19 flat weights: row n's K*b/32 row-packed words, cut into 128-bit
 * chunks, stored chunk-major as (E, chunk, Np/64, 64, 4). Integer codes are
 * two's complement (offset binary with the top bit flipped). */
static void decode_flat(const decode_ctx *c, const void *words, float *W)
{
    const hc_layer_meta *m = c->m;
    const int b = m->weight_bits;
    const int64_t Np = m->Np, Kp = m->Kp, row_words = Kp * b / 32, NB = Np / 64;
    const uint32_t mask = (1u << b) - 1;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(m->E * Np * Kp))
    for (int64_t e = 0; e < m->E; e++)
        for (int64_t n = 0; n < Np; n++)
            for (int64_t k = 0; k < Kp; k++) {
                const int64_t wi = k * b / 32, chunk = wi / 4;
                const int64_t at = e * Np * row_words + ((chunk * NB + n / 64) * 64 + n % 64) * 4 + wi % 4;
                const uint32_t code = (rd32(words, at) >> (k * b % 32)) & mask;
                const int64_t g = k / m->group_size;
                double x = c->is_float ? c->flut[code]
                                       : (double)((int32_t)(code << (32 - b)) >> (32 - b));
                double v = x * elem_scale(c, e, n, k, g);
                if (c->global) v *= c->global[e];
                W[(e * Np + n) * Kp + k] = (float)v;
            }
}

/* A per-channel second scale (E?, Np), permuted as a bias (perm32), folded
 * into the group scales: in double, s * ws2 and the code times it are exact
 * (at most 11 + 11 + 8 significant bits; fused e8m0's s is a power of two), so
 * the value equals code * s * ws2 and c->global stays per expert. */
static void fold_scale_2(decode_ctx *c, const hc_tensor *g)
{
    const hc_layer_meta *m = c->m;
    int inv[32];
    inverse_perm(32, inv);
    for (int64_t e = 0; e < m->E; e++)
        for (int64_t n = 0; n < m->Np; n++) {
            double v = half_value(g->dtype, rd16(g->data, e * m->Np + (n / 32) * 32 + inv[n % 32]));
            for (int64_t gi = 0; gi < m->G; gi++) c->scale[(e * m->Np + n) * m->G + gi] *= v;
        }
}

/* The number a code stands for before scales at (e, n, g), as decode_lane
 * takes it. */
static inline double code_x(const decode_ctx *c, uint32_t code, int64_t e, int64_t n, int64_t g)
{
    const uint32_t mask = (1u << c->m->weight_bits) - 1, mag = code & (mask >> 1);
    return c->e0m ? (code > mask >> 1 ? -(double)mag : (double)mag)
           : c->is_float ? c->flut[code] : int_value(c, code, e, n, g);
}

/* Which vector form code_values may take (decode_ctx.xvec), and the fixed
 * numbers of the codes. */
static void code_x_fixed(decode_ctx *c)
{
    const hc_layer_meta *m = c->m;
    const int b = m->weight_bits;
    c->xvec = 0;
    if (b > 4) return;
    if (!c->e0m && !c->is_float && !m->kernel_weight_signed && !m->preprocess_int2fp && c->zero) {
        c->xvec = 2;
        return;
    }
    if (!c->e0m && !c->is_float && !m->kernel_weight_signed &&
        (m->preprocess_int2fp ? m->zp_in_repack && c->zcode : c->zero != NULL))
        return; /* x depends on the group's zero point */
    for (uint32_t code = 0; code < (1u << b); code++) c->xc[code] = code_x(c, code, 0, 0, 0);
    c->xvec = 1;
}

/* Checks the post tensors and fills c (scales, zero points, global scales
 * un-permuted); c is freed with ctx_free, also on failure. */
static hc_status ctx_open(const hc_layer_config *cfg, const hc_layer_meta *meta,
                          const hc_layer_tensors *post, decode_ctx *c, hc_error *err)
{
    memset(c, 0, sizeof *c);
    HC_TRY(hc_verify_check_post(cfg, meta, post, err));
    c->cfg = cfg;
    c->m = meta;
    c->e0m = post->weight_e0m;
    lane_map(c);
    quad_map(c);
    HC_TRY(decode_scales(c, &post->weight_scale, err));
    HC_TRY(decode_zero(c, &post->zero_point, err));
    const hc_tensor *gs = &post->global_scale;
    if (gs->data && meta->scale2_channel) {
        if (c->scale == NULL)
            HC_FAIL(err, HC_ERR_FORMAT, "post weight_scale_2: per channel without group scales");
        fold_scale_2(c, gs);
    } else if (gs->data) {
        c->global = malloc((size_t)meta->E * sizeof(double));
        HC_CHECK_ALLOC(err, c->global, "decoded global scales");
        for (int64_t e = 0; e < meta->E; e++)
            c->global[e] = rdf32(gs->data, gs->shape[0] == 1 ? 0 : e);
    }
    code_x_fixed(c);
    return HC_OK;
}

/* The un-permuted bias (E, Np) of post, which has one. */
static void decode_bias(const hc_layer_meta *meta, const hc_layer_tensors *post, float *bias)
{
    int inv[32];
    inverse_perm(32, inv);
    for (int64_t e = 0; e < meta->E; e++)
        for (int64_t n = 0; n < meta->Np; n++)
            bias[e * meta->Np + n] = (float)half_value(
                post->bias.dtype, rd16(post->bias.data, e * meta->Np + (n / 32) * 32 + inv[n % 32]));
}

hc_status hc_verify_decode(const hc_layer_config *cfg, const hc_layer_meta *meta,
                           const hc_layer_tensors *post, float *W, float *bias,
                           hc_error *err)
{
    decode_ctx c;
    hc_status st = ctx_open(cfg, meta, post, &c, err);
    if (st != HC_OK) {
        ctx_free(&c);
        return st;
    }
    if (meta->use_flat_weight) decode_flat(&c, post->weight.data, W);
    else decode_tiles(&c, post->weight.data, W);
    if (bias && post->bias.data) decode_bias(meta, post, bias);
    ctx_free(&c);
    return HC_OK;
}

struct hc_verify_decoder {
    decode_ctx c;
    const hc_layer_tensors *post;
};

hc_status hc_verify_decoder_open(const hc_layer_config *cfg, const hc_layer_meta *meta,
                                 const hc_layer_tensors *post, float *bias,
                                 hc_verify_decoder **out, hc_error *err)
{
    *out = NULL;
    if (meta->use_flat_weight)
        HC_FAIL(err, HC_ERR_ARG, "panel decoding reads tile layouts only, not flat weights");
    hc_verify_decoder *d = malloc(sizeof *d);
    HC_CHECK_ALLOC(err, d, "verification decoder");
    d->post = post;
    hc_status st = ctx_open(cfg, meta, post, &d->c, err);
    if (st != HC_OK) {
        hc_verify_decoder_free(d);
        return st;
    }
    if (bias && post->bias.data) decode_bias(meta, post, bias);
    *out = d;
    return HC_OK;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* code_values for at most 16 codes, eight doubles at a time: the same
 * products in the same order, each rounded once to float. */
__attribute__((target("avx512f,avx512vl"))) static void
code_values_avx512(const decode_ctx *c, int64_t e, int64_t n, int64_t g, double x2, double sc,
                   float *T)
{
    const hc_layer_meta *m = c->m;
    const int codes = 1 << m->weight_bits;
    __m512d xl, xh;
    if (c->xvec == 1) {
        xl = _mm512_loadu_pd(c->xc);
        xh = _mm512_loadu_pd(c->xc + 8);
    } else {
        const __m512d z = _mm512_set1_pd(c->zero[(e * m->Np + n) * m->G + g]);
        xl = _mm512_sub_pd(_mm512_set_pd(7, 6, 5, 4, 3, 2, 1, 0), z);
        xh = _mm512_sub_pd(_mm512_set_pd(15, 14, 13, 12, 11, 10, 9, 8), z);
    }
    __m512d vl = _mm512_mul_pd(_mm512_mul_pd(xl, _mm512_set1_pd(x2)), _mm512_set1_pd(sc));
    __m512d vh = _mm512_mul_pd(_mm512_mul_pd(xh, _mm512_set1_pd(x2)), _mm512_set1_pd(sc));
    if (c->global) {
        vl = _mm512_mul_pd(vl, _mm512_set1_pd(c->global[e]));
        vh = _mm512_mul_pd(vh, _mm512_set1_pd(c->global[e]));
    }
    _mm256_mask_storeu_ps(T, (__mmask8)(codes >= 8 ? 0xFF : (1u << codes) - 1),
                          _mm512_cvtpd_ps(vl));
    if (codes == 16) _mm256_storeu_ps(T + 8, _mm512_cvtpd_ps(vh));
}

/* code_values_avx512 with AVX2: four doubles at a time, the same products
 * in the same order, each rounded once to float. */
__attribute__((target("avx2"))) static void
code_values_avx2(const decode_ctx *c, int64_t e, int64_t n, int64_t g, double x2, double sc,
                 float *T)
{
    const hc_layer_meta *m = c->m;
    const int codes = 1 << m->weight_bits;
    const __m256d z = _mm256_set1_pd(c->xvec == 1 ? 0.0 : c->zero[(e * m->Np + n) * m->G + g]);
    float out[16];
    for (int q = 0; q < codes; q += 4) {
        const __m256d x = c->xvec == 1 ? _mm256_loadu_pd(c->xc + q)
                          : _mm256_sub_pd(_mm256_set_pd(q + 3, q + 2, q + 1, q), z);
        __m256d v = _mm256_mul_pd(_mm256_mul_pd(x, _mm256_set1_pd(x2)), _mm256_set1_pd(sc));
        if (c->global) v = _mm256_mul_pd(v, _mm256_set1_pd(c->global[e]));
        _mm_storeu_ps(out + q, _mm256_cvtpd_ps(v));
    }
    memcpy(T, out, (size_t)codes * sizeof *T);
}
#endif

/* The values decode_lane gives the 2^b codes at (e, n) in group g, by the
 * same operations, into T. */
static void code_values(const decode_ctx *c, int64_t e, int64_t n, int64_t g, float *T)
{
    const hc_layer_meta *m = c->m;
    const uint32_t mask = (1u << m->weight_bits) - 1;
    const double x2 = m->use_fused_e8m0 && c->cfg->act_format == HC_FMT_INT8 ? 2.0 : 1.0;
    const double sc = elem_scale(c, e, n, 0, g), gl = c->global ? c->global[e] : 1.0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (c->xvec && !c->portable && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl")) {
        code_values_avx512(c, e, n, g, x2, sc, T);
        return;
    }
    if (c->xvec && c->portable != 1 && __builtin_cpu_supports("avx2")) {
        code_values_avx2(c, e, n, g, x2, sc, T);
        return;
    }
#endif
    for (uint32_t code = 0; code <= mask; code++) {
        double v = code_x(c, code, e, n, g) * x2 * sc;
        if (c->global) v *= gl;
        T[code] = (float)v;
    }
}

/* Panel decoding by table: where a tile row lies in one group and scales are
 * per (n, group), a value depends only on (row, group, code), so each of the
 * panel's 64 rows gets a table of its 2^b values per group, and the group's
 * tile rows are decoded by lookup (the values decode_lane computes). */
static int table_applies(const decode_ctx *c)
{
    const hc_layer_meta *m = c->m;
    const int P = 256 / m->act_bits;
    /* fused e8m0 x fp8 takes a code's magnitude and sign from two slots
     * (lane_code): decode_lane reads it, the table's lookups do not */
    return m->scale_type != HC_SCALE_BLOCK && m->group_size > 0 && m->group_size % P == 0 &&
           m->weight_bits <= 8 && !m->fused_split_sign;
}

/* The words of lane `lane` of chunk j of the tile whose word 0 is at base
 * (tiles other than packed-K: a tile's words are contiguous, lane-major). */
static void lane_words(const hc_layer_meta *m, const void *words, int64_t base, int64_t e,
                       int64_t kb, int64_t nb, int j, int lane, uint32_t *F)
{
    const int b = m->weight_bits;
    if (m->use_packed_k_layout)
        for (int w = 0; w < b; w++) F[w] = rd32(words, tile_word(m, e, kb, nb, j, lane, w));
    else
        for (int w = 0; w < b; w++) F[w] = rd32(words, base + ((int64_t)j * 32 + lane) * b + w);
}

/* Tile rows [kb0, kb1) of n tile nb into W (64 rows, stride ldw, column 0
 * at k = P kb0). */
/* One quad of lanes (4q..4q+3) of chunk j of tile (kb, nb): for each row
 * class the tile row's P values, by table T (64 rows x 2^b codes), into W
 * (stride ldw, column 0 at the tile row's first k). */
typedef void (*quad_fn)(const decode_ctx *c, const void *words, int64_t base, int64_t e,
                        int64_t kb, int64_t nb, int j, int q, const float *T, float *W,
                        int64_t ldw);

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The quad's 4 lanes' padded words (lane-major, Bp each): in place where
 * they are neither compacted nor packed-K (4 and 8 bits), else into Q. */
static const uint32_t *quad_words(const decode_ctx *c, const void *words, int64_t base,
                                  int64_t e, int64_t kb, int64_t nb, int j, int q, uint32_t *Q)
{
    const hc_layer_meta *m = c->m;
    const int b = m->weight_bits, Bp = next_pow2(b);
    if ((b == 4 || b == 8) && !m->use_packed_k_layout)
        return (const uint32_t *)words + base + ((int64_t)j * 32 + 4 * q) * b;
    memset(Q, 0, 32 * sizeof *Q);
    for (int l = 0; l < 4; l++) {
        uint32_t F[8];
        lane_words(m, words, base, e, kb, nb, j, 4 * q + l, F);
        hck_uncompact(b, F, Q + l * Bp);
    }
    return Q;
}

/* Eight values at a time: the words by a gather from the quad's padded
 * words, the codes by shifts, the values by a gather from the table (the
 * floats the element loop stores). */
__attribute__((target("avx2"))) static void quad_avx2(const decode_ctx *c, const void *words,
                                                      int64_t base, int64_t e, int64_t kb,
                                                      int64_t nb, int j, int q, const float *T,
                                                      float *W, int64_t ldw)
{
    const hc_layer_meta *m = c->m;
    const int a = m->act_bits, b = m->weight_bits, P = 256 / a;
    const int codes = 1 << b;
    uint32_t Q[32];
    const uint32_t *QW = quad_words(c, words, base, e, kb, nb, j, q, Q);
    const __m256i mask = _mm256_set1_epi32(codes - 1);
    const int r0 = 4 * a * j + q;
    if (b <= 4) { /* 16 words, 16 values a row: permutes of two registers, no gathers */
        const __m256i w_lo = _mm256_loadu_si256((const __m256i *)QW);
        const __m256i w_hi = _mm256_loadu_si256((const __m256i *)(QW + 8));
        const __m256i eight = _mm256_set1_epi32(8);
        for (int cls = 0; cls < c->quad_rows; cls++) {
            const int row = r0 + c->qdn[cls];
            const float *Tr = T + row * codes;
            const __m256 t_lo = _mm256_loadu_ps(Tr), t_hi = codes > 8 ? _mm256_loadu_ps(Tr + 8) : t_lo;
            float *out = W + (int64_t)row * ldw;
            for (int k = 0; k < P; k += 8) {
                const int i = cls * P + k;
                const __m256i wi = _mm256_loadu_si256((const __m256i *)(c->qw + i));
                const __m256i hi_w = _mm256_cmpgt_epi32(eight, wi); /* wi < 8 */
                const __m256i w = _mm256_blendv_epi8(_mm256_permutevar8x32_epi32(w_hi, wi),
                                                     _mm256_permutevar8x32_epi32(w_lo, wi), hi_w);
                const __m256i code = _mm256_and_si256(
                    _mm256_srlv_epi32(w, _mm256_loadu_si256((const __m256i *)(c->qsh + i))), mask);
                const __m256 lo_c = _mm256_castsi256_ps(_mm256_cmpgt_epi32(eight, code));
                _mm256_storeu_ps(out + k, _mm256_blendv_ps(_mm256_permutevar8x32_ps(t_hi, code),
                                                           _mm256_permutevar8x32_ps(t_lo, code), lo_c));
            }
        }
        return;
    }
    for (int cls = 0; cls < c->quad_rows; cls++) {
        const int row = r0 + c->qdn[cls];
        const float *Tr = T + row * codes;
        float *out = W + (int64_t)row * ldw;
        for (int k = 0; k < P; k += 8) {
            const int i = cls * P + k;
            const __m256i w = _mm256_i32gather_epi32((const int *)QW,
                                                     _mm256_loadu_si256((const __m256i *)(c->qw + i)), 4);
            const __m256i code = _mm256_and_si256(
                _mm256_srlv_epi32(w, _mm256_loadu_si256((const __m256i *)(c->qsh + i))), mask);
            _mm256_storeu_ps(out + k, _mm256_i32gather_ps(Tr, code, 4));
        }
    }
}

/* quad_avx2 with AVX-512 for codes of at most 4 bits: the quad's 16 padded
 * words in one register and the row's 2^b table values in one, so each 16
 * values are two permutes, a shift and a mask (no blends of two halves);
 * the same words and table: the same floats. Wider codes: quad_avx2. */
__attribute__((target("avx512f,avx512vl,avx2"))) static void
quad_avx512(const decode_ctx *c, const void *words, int64_t base, int64_t e, int64_t kb,
            int64_t nb, int j, int q, const float *T, float *W, int64_t ldw)
{
    const hc_layer_meta *m = c->m;
    const int a = m->act_bits, b = m->weight_bits, P = 256 / a;
    if (b > 4 || P % 16 != 0) {
        quad_avx2(c, words, base, e, kb, nb, j, q, T, W, ldw);
        return;
    }
    const int codes = 1 << b;
    uint32_t Q[32];
    const __m512i w16 = _mm512_loadu_si512(quad_words(c, words, base, e, kb, nb, j, q, Q));
    const __m512i mask = _mm512_set1_epi32(codes - 1);
    const int r0 = 4 * a * j + q;
    for (int cls = 0; cls < c->quad_rows; cls++) {
        const int row = r0 + c->qdn[cls];
        const __m512 t = _mm512_maskz_loadu_ps((__mmask16)((1u << codes) - 1), T + row * codes);
        float *out = W + (int64_t)row * ldw;
        for (int k = 0; k < P; k += 16) {
            const int i = cls * P + k;
            const __m512i w = _mm512_permutexvar_epi32(_mm512_loadu_si512(c->qw + i), w16);
            const __m512i code =
                _mm512_and_si512(_mm512_srlv_epi32(w, _mm512_loadu_si512(c->qsh + i)), mask);
            _mm512_storeu_ps(out + k, _mm512_permutexvar_ps(code, t));
        }
    }
}
#endif

static quad_fn quad_impl(const decode_ctx *c)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (c->quad_ok && !c->portable && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl"))
        return quad_avx512;
    if (c->quad_ok && c->portable != 1 && __builtin_cpu_supports("avx2")) return quad_avx2;
#endif
    (void)c;
    return NULL;
}

static void decode_panel_table(const decode_ctx *c, const void *words, int64_t e, int64_t nb,
                               int64_t kb0, int64_t kb1, float *W, int64_t ldw)
{
    const hc_layer_meta *m = c->m;
    const int a = m->act_bits, b = m->weight_bits, P = 256 / a, R = 32 / a;
    const int codes = 1 << b, chunks = 16 / a;
    const uint32_t mask = (1u << b) - 1;
    const int64_t rows = kb1, n_base = 64 * nb;
    float T[64 * 256];
    int64_t off[32], tix[32], table_g = -1;
    const quad_fn quad = quad_impl(c);
    for (int u = 0; u < 32; u++) { /* the lane map as offsets into W and the table */
        off[u] = c->dn[u] * ldw + c->dk[u];
        tix[u] = (int64_t)c->dn[u] * codes;
    }
    for (int64_t kb = kb0; kb < rows; kb++) {
        const int64_t g = (int64_t)P * kb / m->group_size;
        for (int r = 0; g != table_g && r < 64; r++) code_values(c, e, n_base + r, g, T + r * codes);
        table_g = g;
        const int64_t base = m->use_packed_k_layout ? 0 : tile_word(m, e, kb, nb, 0, 0, 0);
        if (!m->use_packed_k_layout && kb + 2 < rows) /* the tile two rows on: 2 P b words */
            for (int64_t at = tile_word(m, e, kb + 2, nb, 0, 0, 0), w = 0; w < 2 * P * b; w += 16)
                __builtin_prefetch((const uint32_t *)words + at + w);
        if (quad) {
            for (int j = 0; j < chunks; j++)
                for (int q = 0; q < 8; q++)
                    quad(c, words, base, e, kb, nb, j, q, T, W + (int64_t)P * (kb - kb0), ldw);
            continue;
        }
        for (int j = 0; j < chunks; j++)
            for (int lane = 0; lane < 32; lane++) {
                uint32_t F[8], Wd[8];
                lane_words(m, words, base, e, kb, nb, j, lane, F);
                hck_uncompact(b, F, Wd);
                const int r0 = 4 * a * j + lane / 4;
                float *out = W + (int64_t)r0 * ldw + (int64_t)P * (kb - kb0) + R * (lane % 4);
                const float *Tr = T + r0 * codes;
                for (int u = 0; u < 32; u++)
                    out[off[u]] = Tr[tix[u] + ((Wd[c->wd[u]] >> c->sh[u]) & mask)];
            }
    }
}

void hc_verify_decode_panel_part(const hc_verify_decoder *d, int64_t e, int64_t nb, int64_t k0,
                                 int64_t k1, float *W, int64_t ldw)
{
    const hc_layer_meta *m = d->c.m;
    const int64_t P = 256 / m->act_bits;
    if (table_applies(&d->c)) {
        decode_panel_table(&d->c, d->post->weight.data, e, nb, k0 / P, k1 / P, W, ldw);
        return;
    }
    for (int64_t kb = k0 / P; kb < k1 / P; kb++)
        decode_tile(&d->c, d->post->weight.data, e, kb, nb, e * m->Np + 64 * nb, W, ldw, k0);
}

void hc_verify_decode_panel(const hc_verify_decoder *d, int64_t e, int64_t nb, float *W)
{
    hc_verify_decode_panel_part(d, e, nb, 0, d->c.m->Kp, W, d->c.m->Kp);
}

void hc_verify_decoder_portable(hc_verify_decoder *d) { d->c.portable = 1; }

void hc_verify_decoder_avx2(hc_verify_decoder *d) { d->c.portable = 2; }

void hc_verify_decoder_free(hc_verify_decoder *d)
{
    if (d == NULL) return;
    ctx_free(&d->c);
    free(d);
}

/* ---- shape / dtype checks of the post tensors (spec 5.8) -------------- */

static hc_status expect(const char *role, const hc_tensor *t, int present, hc_dtype dt, int nd,
                        const int64_t *shape, hc_error *err)
{
    if (!present) {
        if (t->data) HC_FAIL(err, HC_ERR_FORMAT, "post %s: present but not expected", role);
        return HC_OK;
    }
    if (t->data == NULL) HC_FAIL(err, HC_ERR_FORMAT, "post %s: missing", role);
    int ok = t->dtype == dt && t->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = t->shape[i] == shape[i];
    if (!ok) {
        char got[96], want[96];
        hc_shape_format(t->ndim, t->shape, got, sizeof got);
        hc_shape_format(nd, shape, want, sizeof want);
        HC_FAIL(err, HC_ERR_FORMAT, "post %s: %s %s, expected %s %s", role,
                hc_dtype_name(t->dtype), got, hc_dtype_name(dt), want);
    }
    return HC_OK;
}

/* Shape with an optional leading expert dim. */
static int shp(const hc_layer_meta *m, int64_t *s, int64_t a, int64_t b, int two)
{
    int n = 0;
    if (m->is_moe) s[n++] = m->E;
    s[n++] = a;
    if (two) s[n++] = b;
    return n;
}

hc_status hc_verify_check_post(const hc_layer_config *cfg, const hc_layer_meta *m,
                               const hc_layer_tensors *post, hc_error *err)
{
    int64_t s[4];
    int P = 256 / m->act_bits, nd;
    hc_dtype param = hc_dtype_of_format(cfg->param_format);
    if (m->use_flat_weight) nd = shp(m, s, m->Np, m->Kp * m->weight_bits / 32, 1);
    else if (m->use_packed_k_layout) nd = shp(m, s, m->Kp / 64, m->Np * 64 * m->weight_bits / 32, 1);
    else nd = shp(m, s, m->Kp / P, m->Np * P * m->weight_bits / 32, 1);
    HC_TRY(expect("weight", &post->weight, 1, HC_DT_I32, nd, s, err));
    if (m->scale_type == HC_SCALE_BLOCK) {
        nd = shp(m, s, m->Kp / m->group_size, m->Np / m->group_size_n, 1);
        HC_TRY(expect("weight_scale", &post->weight_scale, 1, HC_DT_F32, nd, s, err));
    } else {
        nd = shp(m, s, m->G, m->Np, 1);
        HC_TRY(expect("weight_scale", &post->weight_scale, m->scale_type != HC_SCALE_TENSOR,
                      hc_dtype_of_format(m->scale_format), nd, s, err));
    }
    if (post->zero_point.data || cfg->has_zero_point) {
        if (cfg->is_fp_zero_point) {
            nd = shp(m, s, m->G, m->Np, 1);
            HC_TRY(expect("zero_point", &post->zero_point, 1, param, nd, s, err));
        } else {
            nd = shp(m, s, m->G, m->Np * (m->weight_bits <= 4 ? 4 : 8) / 32, 1);
            HC_TRY(expect("zero_point", &post->zero_point, cfg->has_zero_point, HC_DT_I32, nd, s,
                          err));
        }
    }
    if (post->global_scale.data && m->scale2_channel) {
        nd = shp(m, s, m->Np, 0, 0);
        HC_TRY(expect("weight_scale_2", &post->global_scale, 1, param, nd, s, err));
    } else if (m->scale2_channel) {
        HC_FAIL(err, HC_ERR_FORMAT, "post weight_scale_2: missing (per channel)");
    } else if (post->global_scale.data) {
        int64_t gs[1] = {m->E};
        HC_TRY(expect("global_scale", &post->global_scale, 1, HC_DT_F32, 1, gs, err));
    } else if (m->use_fused_e8m0 || m->use_int_weight_scale || m->scale_type == HC_SCALE_TENSOR) {
        HC_FAIL(err, HC_ERR_FORMAT, "post global_scale: missing");
    }
    if (post->bias.data) {
        nd = shp(m, s, m->Np, 0, 0);
        HC_TRY(expect("bias", &post->bias, 1, param, nd, s, err));
    }
    return HC_OK;
}
