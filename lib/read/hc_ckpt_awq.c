/* hc_ckpt_awq.c - AWQ (formats spec 4). GEMM: qweight [K, N/8] packed along
 * N with the nibble interleave ORDER = [0,2,4,6,1,3,5,7] (column n sits in
 * nibble REV[n % 8] of word n / 8), qzeros [G, N/8] the same, scales [G, N];
 * true zero points (no +1). GEMV: qweight [N, K/8] natural order along K,
 * qzeros [N, Wz] along the group axis, scales [N, 8*Wz] (padding columns
 * cropped; every shape checked exactly). 4-bit only (AutoAWQ's only width; the 8-bit interleave is not
 * confirmed); zero_point false is refused (layout not confirmed). */
#include "hc_ckpt.h"
#include "hc_ckpt_simd.h"
#include "hc_parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int awq_rev[8] = {0, 4, 1, 5, 2, 6, 3, 7};
static const int awq_order[8] = {0, 2, 4, 6, 1, 3, 5, 7}; /* inverse of awq_rev */

static uint32_t nib(const hc_st_tensor *t, int64_t idx, int which)
{
    uint32_t w; /* qweight and qzeros are checked I32 */
    memcpy(&w, (const unsigned char *)t->data + 4 * (size_t)idx, 4);
    return (w >> (4 * which)) & 15u;
}

typedef struct {
    const hc_st_tensor *qw, *qz, *sc;
    int gemv;
    int64_t N, K, gs, G;
} awq_geom;

/* GEMM: qweight [K, N/8], qzeros [G, N/8], scales [G, N]. */
static hc_status gemm_shapes(awq_geom *g, hc_error *err)
{
    g->K = g->qw->shape[0];
    g->N = g->qw->shape[1] * 8;
    g->gs = g->gs > 0 ? g->gs : g->K;
    g->G = g->K / g->gs;
    if (g->K % g->gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): K=%lld is not a multiple of the group size "
                "%lld", g->qw->name, g->qw->file, (long long)g->K, (long long)g->gs);
    HC_TRY(hc_ckpt_check_shape(g->qz, 2, (int64_t[2]){g->G, g->N / 8}, "[K/group, N/8]; a "
                               "[N, K/8] qweight is the gemv layout", err));
    return hc_ckpt_check_shape(g->sc, 2, (int64_t[2]){g->G, g->N}, "[K/group, N]", err);
}

/* GEMV: qweight [N, K/8], qzeros [N, Wz] with Wz = ceil(G/8) rounded up to a
 * multiple of 1, 2 or 4 (AutoAWQ's calculate_zeros_width), scales [N, 8*Wz]. */
static hc_status gemv_shapes(awq_geom *g, hc_error *err)
{
    g->N = g->qw->shape[0];
    g->K = g->qw->shape[1] * 8;
    g->gs = g->gs > 0 ? g->gs : g->K;
    g->G = g->K / g->gs;
    if (g->K % g->gs)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): K=%lld is not a multiple of the group size "
                "%lld", g->qw->name, g->qw->file, (long long)g->K, (long long)g->gs);
    if (g->N % 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s (in %s): N=%lld: Humming packs the zero points "
                "along N and needs N*4 to be a multiple of 32", g->qw->name, g->qw->file,
                (long long)g->N);
    int64_t wz = g->qz->ndim == 2 ? g->qz->shape[1] : 0, base = (g->G + 7) / 8;
    if (g->qz->ndim != 2 || g->qz->shape[0] != g->N || wz < base || wz > base + 3)
        HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): expected [N, ceil(G/8) .. ceil(G/8)+3] = "
                "[%lld, %lld..%lld] (gemv)", g->qz->name, g->qz->file, (long long)g->N,
                (long long)base, (long long)base + 3);
    return hc_ckpt_check_shape(g->sc, 2, (int64_t[2]){g->N, 8 * wz}, "[N, 8 * qzeros columns]",
                               err);
}

static hc_status awq_shapes(const hc_ckpt_config *cfg, hc_st_model *model, const char *prefix,
                            awq_geom *g, hc_error *err)
{
    g->qw = hc_ckpt_find(model, prefix, ".qweight");
    g->qz = hc_ckpt_find(model, prefix, ".qzeros");
    g->sc = hc_ckpt_find(model, prefix, ".scales");
    if (cfg->bits != 4)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ %d-bit: only 4-bit AWQ is read (the 8-bit "
                "interleave is not confirmed by any producer)", prefix, cfg->bits);
    if (!cfg->awq_zero_point || !g->qz)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ without zero points (zero_point false): the "
                "on-disk layout is not confirmed; refused", prefix);
    if (hc_ckpt_find(model, prefix, ".scaled_zeros"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.scaled_zeros: AWQ gemv_fast layout refused", prefix);
    if (!g->qw || !g->sc || g->qw->dtype != HC_DT_I32 || g->qw->ndim != 2 ||
        g->qz->dtype != HC_DT_I32 || g->qz->ndim != 2 || !hc_ckpt_is_float_dtype(g->sc->dtype) ||
        g->sc->ndim != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: AWQ layer needs I32 qweight, I32 qzeros and float "
                "scales (2-D)", prefix);
    HC_TRY(hc_ckpt_check_dims(g->qw, err));
    HC_TRY(hc_ckpt_check_dims(g->qz, err));
    HC_TRY(hc_ckpt_check_dims(g->sc, err));
    g->gemv = strcmp(cfg->awq_version, "gemv") == 0;
    g->gs = cfg->group_size;
    return g->gemv ? gemv_shapes(g, err) : gemm_shapes(g, err);
}

/* Zero points and scales of every (n, g); scales checked (gemv: padding columns
 * skipped). general: the element path only (the tests compare the two). */
static hc_status awq_zeros_scales(const awq_geom *a, int general, hc_quant_result *q,
                                  hc_ckpt_layer *out, hc_error *err)
{
    int64_t N = a->N, G = a->G, zeros = 0;
    const int words = !general && !a->gemv && N % 8 == 0; /* GEMM qzeros: whole words */
    uint8_t *z = words ? NULL : malloc((size_t)(N * G) + 1);
    if (!words) HC_CHECK_ALLOC(err, z, "AWQ zeros");
    for (int64_t n = 0; !words && n < N; n++)
        for (int64_t g = 0; g < G; g++)
            z[n * G + g] = (uint8_t)(a->gemv ? nib(a->qz, n * a->qz->shape[1] + g / 8, (int)(g % 8))
                                             : nib(a->qz, g * (N / 8) + n / 8, awq_rev[n % 8]));
    if (words) hc_ckpt_zeros_from_n_packed(a->qz->data, N, G, awq_order, 0, q);
    hc_status st = HC_OK;
    int raw = !general && hc_ckpt_raw16_scales_copy(a->sc, N, G, a->gemv ? a->sc->shape[1] : 1,
                                                    a->gemv ? 1 : N, q, &zeros) == 0;
    for (int64_t n = 0; !raw && st == HC_OK && n < N; n++)
        for (int64_t g = 0; st == HC_OK && g < G; g++) {
            int64_t si = a->gemv ? n * a->sc->shape[1] + g : g * N + n;
            double s = hc_ckpt_float_at(a->sc, si);
            if (!isfinite(s)) /* negative: kept, as for every integer format */
                st = hc_error_set(err, HC_ERR_FORMAT, "%s (in %s): scale %g at element %lld is "
                                  "not finite; refused", a->sc->name, a->sc->file, s,
                                  (long long)si);
            zeros += s == 0;
            if (st == HC_OK && hc_ckpt_put_scale(q, n * G + g, s) != 0)
                st = hc_error_set(err, HC_ERR_INTERNAL, "%s: scale %lld not exact in its storage "
                                  "format", a->sc->name, (long long)si);
        }
    if (st == HC_OK && !words) st = hc_ckpt_pack_zeros(q, z, err);
    free(z);
    hc_ckpt_note_zero_scales(out, a->sc, zeros);
    return st;
}

/* Transposes the 8 x 8 nibble matrix a (nibble p of a[i] -> nibble i of a[p])
 * in three rounds of swaps: 4 x 4 blocks, 2 x 2, single nibbles. */
static void nibble_transpose8(uint32_t a[8])
{
    for (int i = 0; i < 4; i++) {
        uint32_t t = ((a[i] >> 16) ^ a[i + 4]) & 0x0000FFFFu;
        a[i] ^= t << 16;
        a[i + 4] ^= t;
    }
    for (int i = 0; i < 8; i += (i & 1) ? 3 : 1) { /* 0, 1, 4, 5 */
        uint32_t t = ((a[i] >> 8) ^ a[i + 2]) & 0x00FF00FFu;
        a[i] ^= t << 8;
        a[i + 2] ^= t;
    }
    for (int i = 0; i < 8; i += 2) {
        uint32_t t = ((a[i] >> 4) ^ a[i + 1]) & 0x0F0F0F0Fu;
        a[i] ^= t << 4;
        a[i + 1] ^= t;
    }
}

/* The words of block (j, w) into dst: input words k = 8w..8w+7 of word
 * column j hold output word w of rows n = 8j..8j+7, one nibble each; after
 * the transpose word p is column 8j + col[p]'s. */
static inline void gemm_word_block(const unsigned char *s, int64_t J, int64_t W, int64_t j,
                                   int64_t w, const int col[8], uint32_t *dst)
{
    uint32_t a[8];
    for (int i = 0; i < 8; i++) memcpy(&a[i], s + 4 * (size_t)((8 * w + i) * J + j), 4);
    nibble_transpose8(a);
    for (int p = 0; p < 8; p++) dst[(8 * j + col[p]) * W + w] = a[p];
}

#if HC_CKPT_X86
#define AWQ_AVX2 HC_CKPT_AVX2

/* nibble_transpose8 on 8 lanes at once (lane: a word column). */
AWQ_AVX2 static inline void nibble_transpose8_x8(__m256i a[8])
{
    const __m256i m16 = _mm256_set1_epi32(0x0000FFFF), m8 = _mm256_set1_epi32(0x00FF00FF),
                  m4 = _mm256_set1_epi32(0x0F0F0F0F);
    for (int i = 0; i < 4; i++) {
        __m256i t = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi32(a[i], 16), a[i + 4]), m16);
        a[i] = _mm256_xor_si256(a[i], _mm256_slli_epi32(t, 16));
        a[i + 4] = _mm256_xor_si256(a[i + 4], t);
    }
    for (int i = 0; i < 8; i += (i & 1) ? 3 : 1) {
        __m256i t = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi32(a[i], 8), a[i + 2]), m8);
        a[i] = _mm256_xor_si256(a[i], _mm256_slli_epi32(t, 8));
        a[i + 2] = _mm256_xor_si256(a[i + 2], t);
    }
    for (int i = 0; i < 8; i += 2) {
        __m256i t = _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi32(a[i], 4), a[i + 1]), m4);
        a[i] = _mm256_xor_si256(a[i], _mm256_slli_epi32(t, 4));
        a[i + 1] = _mm256_xor_si256(a[i + 1], t);
    }
}

/* Blocks (j, w) for j = j0..j0+7, w = w0..w0+7 at once, as gemm_word_block:
 * the nibble transposes 8 word columns wide, then per output word p an 8 x 8
 * word transpose (w x j -> j x w) so that each output row gets 8 words in
 * one store. */
AWQ_AVX2 static void gemm_words_8x8(const unsigned char *s, int64_t J, int64_t W, int64_t j0,
                                    int64_t w0, const int col[8], uint32_t *dst)
{
    __m256i by_p[8][8]; /* [p][w - w0], lanes j */
    for (int dw = 0; dw < 8; dw++) {
        __m256i a[8];
        for (int i = 0; i < 8; i++)
            a[i] = _mm256_loadu_si256(
                (const __m256i *)(s + 4 * (size_t)((8 * (w0 + dw) + i) * J + j0)));
        nibble_transpose8_x8(a);
        for (int p = 0; p < 8; p++) by_p[p][dw] = a[p];
    }
    for (int p = 0; p < 8; p++) {
        hc_ckpt_transpose8x8(by_p[p]); /* now [j - j0], lanes w */
        for (int dj = 0; dj < 8; dj++)
            _mm256_storeu_si256((__m256i *)(dst + (8 * (j0 + dj) + col[p]) * W + w0),
                                by_p[p][dj]);
    }
}

#else
static void gemm_words_8x8(const unsigned char *s, int64_t J, int64_t W, int64_t j0, int64_t w0,
                           const int col[8], uint32_t *dst)
{
    (void)s, (void)J, (void)W, (void)j0, (void)w0, (void)col, (void)dst;
}
#endif

/* Blocks of 16 w (one output cache line per row) keep the writes local; the
 * 128 input rows of a block stay in cache. With AVX2, 8 x 8 blocks at once
 * (gemm_words_8x8), the rest word by word (gemm_word_block). */
void hc_ckpt_words_from_n_packed(const void *src, int64_t N, int64_t K, const int col[8],
                                 uint32_t *dst)
{
    enum { WB = 16 };
    const unsigned char *s = src;
    const int64_t J = N / 8, W = K / 8, blocks = (W + WB - 1) / WB;
    const int vec = hc_ckpt_have_avx2();
#pragma omp parallel for schedule(static) if (HC_PARALLEL(N * K))
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t w0 = b * WB, w1 = w0 + WB < W ? w0 + WB : W;
        const int64_t wv = vec ? w0 + (w1 - w0) / 8 * 8 : w0, jv = vec ? J / 8 * 8 : 0;
        for (int64_t j = 0; j < jv; j += 8)
            for (int64_t w = w0; w < wv; w += 8) gemm_words_8x8(s, J, W, j, w, col, dst);
        for (int64_t j = 0; j < J; j++)
            for (int64_t w = j < jv ? wv : w0; w < w1; w++) gemm_word_block(s, J, W, j, w, col, dst);
    }
}

/* Codes [N, K] packed along K: GEMV's qweight already is (a copy), GEMM's by
 * hc_ckpt_words_from_n_packed (whole words: K a multiple of 8); otherwise, or with general
 * (the tests), element by element. */
static hc_status awq_codes(const awq_geom *a, const hc_ckpt_read_opts *opts, hc_quant_result *q,
                           hc_error *err)
{
    int64_t N = a->N, K = a->K;
    int general = opts->general_codes;
    if (!general && a->gemv) {
        hc_ckpt_codes_from(a->qw, (size_t)(N * K / 2), opts, q);
        return HC_OK;
    }
    if (!general && K % 8 == 0) {
        hc_ckpt_pooled_codes(opts, q); /* every word is written */
        hc_ckpt_words_from_n_packed(a->qw->data, N, K, awq_order, q->codes);
        return HC_OK;
    }
    uint8_t *codes = malloc((size_t)(N * K) + 1);
    HC_CHECK_ALLOC(err, codes, "AWQ codes");
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            codes[n * K + k] = (uint8_t)(a->gemv ? nib(a->qw, n * (K / 8) + k / 8, (int)(k % 8))
                                                 : nib(a->qw, k * (N / 8) + n / 8, awq_rev[n % 8]));
    hc_ckpt_pack_codes(q, codes);
    free(codes);
    return HC_OK;
}

hc_status hc_ckpt_read_awq(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err)
{
    (void)kind;
    awq_geom a = {0};
    HC_TRY(awq_shapes(cfg, model, prefix, &a, err));
    int64_t N = a.N, K = a.K;
    hc_quant_desc d = {.weight_format = HC_FMT_UINT4,
                       .scale_format = hc_ckpt_scale_format(a.sc->dtype, a.sc, opts),
                       .group_size = cfg->group_size > 0 ? (int)a.gs : HC_QUANT_GROUP_CHANNEL,
                       .zero_point = HC_ZP_INT};
    if (d.scale_format == HC_FMT_COUNT) /* NaN / Inf are not exact either: say which first */
        HC_TRY(hc_ckpt_check_scales(a.sc, NULL, err));
    if (d.scale_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s.scales: float32 scales not exact in 16 bits; "
                "requantize with --format", prefix);
    HC_TRY(hc_ckpt_alloc(&out->q, &d, 1, N, K, N, a.G, !opts->meta_only, err));
    HC_TRY(awq_zeros_scales(&a, opts->general_codes, &out->q, out, err));
    if (!opts->meta_only) HC_TRY(awq_codes(&a, opts, &out->q, err));
    snprintf(out->source_format, sizeof out->source_format, "awq %s uint4 g%lld zero-point",
             a.gemv ? "gemv" : "gemm", (long long)a.gs);
    return HC_OK;
}

static int awq_claims(const hc_ckpt_config *cfg, const hc_st_tensor *t)
{
    (void)t;
    return cfg->method == HC_CKPT_AWQ;
}

static const char *const awq_tensors[] = {".qweight", ".qzeros", ".scales", ".g_idx", NULL};
const hc_ckpt_reader hc_ckpt_reader_awq = {HC_CK_AWQ, ".qweight", awq_claims, awq_tensors,
                                           hc_ckpt_read_awq, NULL};
