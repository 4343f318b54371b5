/* test_ckpt_moe.c - per-expert quantized tensors "X.experts.<i>.Y.*" (GPTQ,
 * compressed-tensors pack-quantized, AWQ GEMM, FP8 e4m3 with per-channel
 * scales, ModelOpt and compressed-tensors NVFP4 with a global scale per
 * expert, ModelOpt FP8 per tensor, compressed-tensors MXFP4, DeepSeek block
 * FP8) become one MoE layer "X.experts.Y"; so do compressed-tensors 3-D
 * stacks "X.experts.Y.weight_packed" [E, N, K/pack] (expert e = put_ct's tensors).
 * Oracles, each built here from the same codes, zeros and scales:
 *   lossless: a Humming row-packed fused stack (E, N, K*b/32) of those codes
 *             (layout spec 7.8) converts to byte-identical tensors;
 *   requant:  the float path's stacking of the dequantized weights, given as
 *             float32 per-expert weights, converts to byte-identical tensors.
 * Gaps and experts that disagree (bits, group size, symmetry, scale dtype,
 * storage kind) are refused with a message naming the expert tensor. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "hc_format.h"
#include "hc_safetensors.h"
#include "hc_test_ckpt.h"
#include "hc_test_util.h"

#define KEY "model.layers.0.mlp.experts.up_proj"
#define EMAX 4

enum { FMT_GPTQ, FMT_CT, FMT_AWQ, FMT_FP8 }; /* FP8: b = 8, gs = K (one channel scale) */

typedef struct {
    int fmt, E, N, K, b, gs, asym;
    int skip;           /* expert index left out (a gap), or -1 */
    int bias;           /* per-expert ".bias" [N]; 2: expert 1 has none */
    int act_order;      /* GPTQ g_idx shuffled: 1 per expert, 2 the same for all */
    int b1, gs1, asym1; /* compressed-tensors: expert 1's own config group, if b1 */
    int sdt1;           /* expert 1's scales in the other 16-bit float dtype */
    int kind1;          /* GPTQ: expert 1 stored as compressed-tensors weight_packed */
    int stack3d;        /* compressed-tensors: one 3-D stack KEY.* [E, ...]; 2..5: broken */
} moe_spec;

/* One expert's true codes q [N][K], zeros z [N][G] and raw 16-bit scales s [N][G]. */
typedef struct {
    int b, gs, G, asym, bf; /* bf: scales are bf16 (else fp16) */
    int *q, *z, *gi;    /* gi: group of each input column (g_idx) */
    uint16_t *s, *bias; /* bias: N bf16 values */
} expert_data;

/* Expert e's scales are bf16: compressed-tensors and FP8 store bf16, GPTQ and AWQ fp16. */
static int scales_bf16(const moe_spec *m, int e)
{
    int bf = m->fmt == FMT_CT || m->fmt == FMT_FP8;
    return m->sdt1 && e == 1 ? !bf : bf;
}

static uint16_t scale_bits(int bf, float v)
{
    return bf ? hc_f32_to_bf16(v) : hc_f32_to_f16(v);
}

static float scale_value(int bf, uint16_t s)
{
    return bf ? hc_bf16_to_f32(s) : hc_f16_to_f32(s);
}

static double e4m3(unsigned b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v = e == 0 ? m * ldexp(1, -9) : (8 + m) * ldexp(1, e - 10);
    return s ? -v : v;
}

static int rand_code(const moe_spec *m, int top)
{
    if (m->fmt != FMT_FP8) return (int)(tc_rand() % (uint32_t)(top + 1));
    unsigned b = tc_rand() % 256;
    return (int)((b & 0x7F) == 0x7F ? 0x10 : b); /* no NaN */
}

static void make_expert(const moe_spec *m, int e, expert_data *x)
{
    int own = m->b1 && e == 1;
    x->b = own ? m->b1 : m->b;
    x->gs = own ? m->gs1 : m->gs;
    x->asym = own ? m->asym1 : m->asym;
    x->G = m->K / x->gs;
    x->bf = scales_bf16(m, e);
    int top = (1 << x->b) - 1, N = m->N, K = m->K, G = x->G;
    x->q = malloc((size_t)(N * K) * sizeof *x->q);
    x->z = malloc((size_t)(N * G) * sizeof *x->z);
    x->s = malloc((size_t)(N * G) * sizeof *x->s);
    for (int i = 0; i < N * G; i++) {
        x->z[i] = x->asym ? 1 + (int)(tc_rand() % (uint32_t)top) : 1 << (x->b - 1);
        x->s[i] = scale_bits(x->bf, 0.0078125f * (float)(1 + tc_rand() % 16));
    }
    for (int i = 0; i < N * K; i++) x->q[i] = rand_code(m, top);
    x->gi = malloc((size_t)K * sizeof *x->gi);
    for (int k = 0; k < K; k++) x->gi[k] = k / x->gs;
    uint32_t same = 77; /* act_order 2: one shuffle for every expert */
    for (int k = K - 1; m->act_order && k > 0; k--) {
        same = same * 1664525u + 1013904223u;
        int j = (int)((m->act_order == 2 ? same >> 8 : tc_rand()) % (uint32_t)(k + 1)), t = x->gi[k];
        x->gi[k] = x->gi[j];
        x->gi[j] = t;
    }
    x->bias = malloc((size_t)N * sizeof *x->bias);
    for (int n = 0; n < N; n++) x->bias[n] = hc_f32_to_bf16((float)((int)(tc_rand() % 64) - 32) / 16);
}

static void free_expert(expert_data *x)
{
    free(x->q);
    free(x->z);
    free(x->s);
    free(x->bias);
    free(x->gi);
}

static float dequant(const moe_spec *m, const expert_data *x, int n, int k)
{
    int i = n * x->G + x->gi[k];
    double s = scale_value(x->bf, x->s[i]);
    if (m->fmt == FMT_FP8) return (float)(e4m3((unsigned)x->q[n * m->K + k]) * s);
    return (float)((double)(x->q[n * m->K + k] - x->z[i]) * s);
}

/* GPTQ v1: qweight [K*b/32, N] packed along K, qzeros [G, N*b/32] (zero - 1), scales [G, N]. */
static void put_gptq(tc_ckpt *c, const moe_spec *m, const char *p, const expert_data *x)
{
    int b = x->b, N = m->N, K = m->K, G = x->G;
    char name[256];
    snprintf(name, sizeof name, "%s.qweight", p);
    uint32_t *qw = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){K * b / 32, N});
    snprintf(name, sizeof name, "%s.qzeros", p);
    uint32_t *qz = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){G, N * b / 32});
    snprintf(name, sizeof name, "%s.scales", p);
    uint16_t *sc = tc_add(c, name, x->bf ? HC_DT_BF16 : HC_DT_F16, 2, (int64_t[2]){G, N});
    if (m->act_order) {
        snprintf(name, sizeof name, "%s.g_idx", p);
        memcpy(tc_add(c, name, HC_DT_I32, 1, (int64_t[1]){K}), x->gi, (size_t)K * 4);
    }
    uint32_t *col = calloc((size_t)(K * b / 32), 4);
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < K; k++) tc_put_bits(col, (int64_t)k * b, b, (uint32_t)x->q[n * K + k]);
        for (int r = 0; r < K * b / 32; r++) qw[(size_t)r * N + n] = col[r];
        for (int g = 0; g < G; g++) {
            tc_put_bits(qz + (size_t)g * (N * b / 32), (int64_t)n * b, b, (uint32_t)(x->z[n * G + g] - 1));
            sc[g * N + n] = x->s[n * G + g];
        }
    }
    free(col);
}

/* compressed-tensors pack-quantized: weight_packed [N, K/pack] along K, offset binary. */
static void put_ct(tc_ckpt *c, const moe_spec *m, const char *p, const expert_data *x)
{
    int b = x->b, pack = 32 / b, N = m->N, K = m->K, G = x->G;
    char name[256];
    snprintf(name, sizeof name, "%s.weight_packed", p);
    uint32_t *wp = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){N, K / pack});
    snprintf(name, sizeof name, "%s.weight_scale", p);
    uint16_t *sc = tc_add(c, name, HC_DT_BF16, 2, (int64_t[2]){N, G});
    snprintf(name, sizeof name, "%s.weight_shape", p);
    int64_t *shp = tc_add(c, name, HC_DT_I64, 1, (int64_t[1]){2});
    snprintf(name, sizeof name, "%s.weight_zero_point", p);
    uint32_t *zp = x->asym ? tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){N / pack, G}) : NULL;
    shp[0] = N;
    shp[1] = K;
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < K; k++)
            wp[n * (K / pack) + k / pack] |= (uint32_t)x->q[n * K + k] << (b * (k % pack));
        for (int g = 0; g < G; g++) {
            sc[n * G + g] = x->s[n * G + g];
            if (zp) zp[(n / pack) * G + g] |= (uint32_t)x->z[n * G + g] << (b * (n % pack));
        }
    }
}

/* compressed-tensors 3-D stack: expert e of KEY.weight_packed [E, N, K/pack],
 * weight_scale [E, N, G], weight_zero_point [E, N/pack, G] and weight_shape
 * [E, N, K] is what put_ct writes for expert e. stack3d 2: scales for E - 1
 * experts; 3: weight_shape [E + 1, N, K]; 4: an unknown tensor next to the
 * stack; 5: expert 0 also stored per expert; 6: float KEY with KEY_scale. */
static void put_ct3d(tc_ckpt *c, const moe_spec *m, const expert_data *x)
{
    int E = m->E, b = m->b, pack = 32 / b, N = m->N, K = m->K, G = x[0].G;
    if (m->stack3d == 6) { /* llm-compressor repack_moe: fused float weight + stacked qparams */
        tc_add(c, KEY, HC_DT_BF16, 3, (int64_t[3]){E, N, K});
        tc_add(c, KEY "_scale", HC_DT_BF16, 3, (int64_t[3]){E, N, G});
        return;
    }
    uint32_t *wp = tc_add(c, KEY ".weight_packed", HC_DT_I32, 3, (int64_t[3]){E, N, K / pack});
    uint16_t *sc = tc_add(c, KEY ".weight_scale", HC_DT_BF16, 3,
                          (int64_t[3]){m->stack3d == 2 ? E - 1 : E, N, G});
    int64_t *shp = tc_add(c, KEY ".weight_shape", HC_DT_I64, 1, (int64_t[1]){3});
    uint32_t *zp = m->asym ? tc_add(c, KEY ".weight_zero_point", HC_DT_I32, 3,
                                    (int64_t[3]){E, N / pack, G}) : NULL;
    if (m->stack3d == 4) tc_add(c, KEY ".weight_offset", HC_DT_BF16, 1, (int64_t[1]){E});
    if (m->stack3d == 5) put_ct(c, m, "model.layers.0.mlp.experts.0.up_proj", &x[0]);
    shp[0] = m->stack3d == 3 ? E + 1 : E;
    shp[1] = N;
    shp[2] = K;
    for (int e = 0; e < E; e++)
        for (int n = 0; n < N; n++) {
            uint32_t *row = wp + ((size_t)e * N + n) * (K / pack);
            for (int k = 0; k < K; k++) row[k / pack] |= (uint32_t)x[e].q[n * K + k] << (b * (k % pack));
            for (int g = 0; g < G; g++) {
                if (e < E - 1 || m->stack3d != 2) sc[((size_t)e * N + n) * G + g] = x[e].s[n * G + g];
                if (zp) zp[((size_t)e * (N / pack) + n / pack) * G + g] |=
                        (uint32_t)x[e].z[n * G + g] << (b * (n % pack));
            }
        }
}

/* AWQ GEMM: qweight [K, N/8] and qzeros [G, N/8] packed along N in the
 * 0 4 1 5 2 6 3 7 nibble order, zeros stored as is, scales [G, N]. */
static void put_awq(tc_ckpt *c, const moe_spec *m, const char *p, const expert_data *x)
{
    static const int rev[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    int N = m->N, K = m->K, G = x->G;
    char name[256];
    snprintf(name, sizeof name, "%s.qweight", p);
    uint32_t *qw = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){K, N / 8});
    snprintf(name, sizeof name, "%s.qzeros", p);
    uint32_t *qz = tc_add(c, name, HC_DT_I32, 2, (int64_t[2]){G, N / 8});
    snprintf(name, sizeof name, "%s.scales", p);
    uint16_t *sc = tc_add(c, name, x->bf ? HC_DT_BF16 : HC_DT_F16, 2, (int64_t[2]){G, N});
    for (int n = 0; n < N; n++) {
        int sh = 4 * rev[n % 8];
        for (int k = 0; k < K; k++) qw[k * (N / 8) + n / 8] |= (uint32_t)x->q[n * K + k] << sh;
        for (int g = 0; g < G; g++) {
            qz[g * (N / 8) + n / 8] |= (uint32_t)x->z[n * G + g] << sh;
            sc[g * N + n] = x->s[n * G + g];
        }
    }
}

/* quant_method fp8: weight [N, K] e4m3 bytes, weight_scale [N, 1] (per channel). */
static void put_fp8(tc_ckpt *c, const moe_spec *m, const char *p, const expert_data *x)
{
    int N = m->N, K = m->K;
    char name[256];
    snprintf(name, sizeof name, "%s.weight", p);
    uint8_t *w = tc_add(c, name, HC_DT_F8_E4M3, 2, (int64_t[2]){N, K});
    snprintf(name, sizeof name, "%s.weight_scale", p);
    uint16_t *sc = tc_add(c, name, x->bf ? HC_DT_BF16 : HC_DT_F16, 2, (int64_t[2]){N, 1});
    for (int i = 0; i < N * K; i++) w[i] = (uint8_t)x->q[i];
    memcpy(sc, x->s, (size_t)N * 2);
}

/* GPTQ and AWQ keep float16 scales: a float16 model, whose tiles
 * (humming-kernels 0.1.19 takes 16-bit scales only in the model dtype) hold
 * them losslessly; the other formats come with bfloat16 models. */
static const char *model_dtype(const moe_spec *m)
{
    return m->fmt == FMT_GPTQ || m->fmt == FMT_AWQ ? "float16" : "bfloat16";
}

static void quant_config(const moe_spec *m, char *buf, size_t len)
{
    if (m->fmt == FMT_AWQ) {
        snprintf(buf, len, "{\"torch_dtype\": \"float16\", \"quantization_config\": {"
                 "\"quant_method\": \"awq\", \"bits\": %d, \"group_size\": %d, "
                 "\"zero_point\": true, \"version\": \"gemm\"}}", m->b, m->gs);
        return;
    }
    if (m->fmt == FMT_FP8) {
        snprintf(buf, len, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {"
                 "\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", "
                 "\"activation_scheme\": \"dynamic\"}}");
        return;
    }
    if (m->fmt == FMT_GPTQ) {
        snprintf(buf, len, "{\"torch_dtype\": \"float16\", \"quantization_config\": {"
                 "\"quant_method\": \"gptq\", \"bits\": %d, \"group_size\": %d, \"sym\": %s, "
                 "\"desc_act\": %s, \"checkpoint_format\": \"gptq\"}}", m->b, m->gs,
                 m->asym ? "false" : "true", m->act_order ? "true" : "false");
        return;
    }
    char extra[256] = "";
    if (m->b1)
        snprintf(extra, sizeof extra, ", \"group_1\": {\"targets\": [\"re:.*experts\\\\.1\\\\..*\"], "
                 "\"weights\": {\"num_bits\": %d, \"type\": \"int\", \"strategy\": \"group\", "
                 "\"group_size\": %d, \"symmetric\": %s}}", m->b1, m->gs1, m->asym1 ? "false" : "true");
    snprintf(buf, len, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {"
             "\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\", "
             "\"quantization_status\": \"compressed\", \"config_groups\": {\"group_0\": {"
             "\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": %d, \"type\": \"int\", "
             "\"strategy\": \"group\", \"group_size\": %d, \"symmetric\": %s}}%s}}}",
             m->b, m->gs, m->asym ? "false" : "true", extra);
}

/* The three checkpoints of the same experts: per-expert quantized, a Humming
 * fused stack of the same codes, and the dequantized weights as float32. */
typedef struct {
    tc_ckpt quant, humming, fp;
} moe_set;

static void put_humming(tc_ckpt *c, const moe_spec *m, const expert_data *x)
{
    int E = m->E, N = m->N, K = m->K, b = m->b, G = x[0].G, fp8 = m->fmt == FMT_FP8;
    uint32_t *w = tc_add(c, KEY ".weight", HC_DT_I32, 3, (int64_t[3]){E, N, K * b / 32});
    uint16_t *s = tc_add(c, KEY ".weight_scale", x[0].bf ? HC_DT_BF16 : HC_DT_F16, 3,
                         (int64_t[3]){E, N, G});
    uint32_t *z = m->asym ? tc_add(c, KEY ".zero_point", HC_DT_I32, 3,
                                   (int64_t[3]){E, N * b / 32, G}) : NULL;
    /* the bias in the model dtype, as a Humming checkpoint holds it */
    int f16 = !strcmp(model_dtype(m), "float16");
    uint16_t *bias = m->bias ? tc_add(c, KEY ".bias", f16 ? HC_DT_F16 : HC_DT_BF16, 2,
                                      (int64_t[2]){E, N}) : NULL;
    for (int e = 0; bias && e < E; e++)
        for (int n = 0; n < N; n++)
            bias[(size_t)e * N + n] = f16 ? hc_f32_to_f16(hc_bf16_to_f32(x[e].bias[n])) : x[e].bias[n];
    for (int e = 0; e < E; e++)
        for (int n = 0; n < N; n++) {
            for (int k = 0; k < K; k++)
                tc_put_bits(w + (size_t)(e * N + n) * (K * b / 32), (int64_t)k * b, b,
                            (uint32_t)x[e].q[n * K + k]);
            for (int g = 0; g < G; g++) {
                s[(e * N + n) * G + g] = x[e].s[n * G + g];
                if (!z) continue;
                uint32_t col[EMAX * 64] = {0}; /* N*b/32 words of column g, packed along N */
                for (int r = 0; r < N; r++) tc_put_bits(col, (int64_t)r * b, b, (uint32_t)x[e].z[r * G + g]);
                for (int wd = 0; wd < N * b / 32; wd++) z[((size_t)e * (N * b / 32) + wd) * G + g] = col[wd];
            }
        }
    char cfg[512], dt[16];
    snprintf(dt, sizeof dt, fp8 ? "float8e4m3" : "uint%d", b);
    snprintf(cfg, sizeof cfg, "{\"torch_dtype\": \"%s\", \"quantization_config\": {"
             "\"quant_method\": \"humming\", \"b_dtype\": \"%s\", \"bs_dtype\": \"%s\", "
             "\"weight_scale_group_size\": %d, \"has_zero_point\": %s}}",
             model_dtype(m), dt, x[0].bf ? "bfloat16" : "float16",
             fp8 ? 0 : m->gs, m->asym ? "true" : "false");
    tc_write(c, cfg, NULL, NULL);
}

static void build_set(const moe_spec *m, moe_set *set)
{
    expert_data x[EMAX];
    char cfg[1024], p[128];
    tc_init(&set->quant, "moe-q");
    tc_init(&set->humming, "moe-h");
    tc_init(&set->fp, "moe-f");
    for (int e = 0; e < m->E; e++) {
        make_expert(m, e, &x[e]);
        snprintf(p, sizeof p, "model.layers.0.mlp.experts.%d.up_proj", e);
        static void (*const put[])(tc_ckpt *, const moe_spec *, const char *,
                                   const expert_data *) = {put_gptq, put_ct, put_awq, put_fp8};
        if (e != m->skip && !m->stack3d)
            put[m->kind1 && e == 1 ? FMT_CT : m->fmt](&set->quant, m, p, &x[e]);
        if (m->bias && !(m->bias == 2 && e == 1)) {
            char name[160];
            snprintf(name, sizeof name, "%s.bias", p);
            memcpy(tc_add(&set->quant, name, HC_DT_BF16, 1, (int64_t[1]){m->N}), x[e].bias,
                   (size_t)m->N * 2);
        }
        strcat(p, ".weight");
        float *w = tc_add(&set->fp, p, HC_DT_F32, 2, (int64_t[2]){m->N, m->K});
        for (int n = 0; n < m->N; n++)
            for (int k = 0; k < m->K; k++) w[n * m->K + k] = dequant(m, &x[e], n, k);
    }
    if (m->stack3d) put_ct3d(&set->quant, m, x);
    quant_config(m, cfg, sizeof cfg);
    tc_write(&set->quant, cfg, NULL, NULL);
    snprintf(cfg, sizeof cfg, "{\"torch_dtype\": \"%s\"}", model_dtype(m));
    tc_write(&set->fp, cfg, NULL, NULL);
    if (!m->b1 && !m->act_order) put_humming(&set->humming, m, x);
    for (int e = 0; e < m->E; e++) free_expert(&x[e]);
}

static void free_set(moe_set *set)
{
    tc_free(&set->quant);
    tc_free(&set->humming);
    tc_free(&set->fp);
}

/* Bytes of tensor name in dir.out/model.safetensors (malloc'ed), or NULL if absent. */
static void *out_tensor(const char *dir, const char *name, size_t *len)
{
    char *out = tc_out_dir(dir, "out"), *path = hc_test_path_join(out, "model.safetensors");
    free(out);
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(path, &st, NULL), HC_OK);
    const hc_st_tensor *t = hc_st_find(st, name);
    void *copy = NULL;
    *len = 0;
    if (t) {
        copy = malloc(t->nbytes + 1);
        memcpy(copy, t->data, t->nbytes);
        *len = t->nbytes;
    }
    hc_st_close(st);
    free(path);
    return copy;
}

/* Every output tensor of the stack in a equals the one in b; weight and scales
 * exist, zero points and bias as expected (bias < 0: not compared). */
static void assert_same_layer(const char *a, const char *b, int want_zero, int want_bias)
{
    static const char *const roles[] = {".weight", ".weight_scale", ".zero_point",
                                        ".weight_scale_2", ".bias"};
    for (int r = 0; r < (want_bias < 0 ? 4 : 5); r++) {
        size_t la, lb;
        char name[160];
        snprintf(name, sizeof name, KEY "%s", roles[r]);
        void *x = out_tensor(a, name, &la), *y = out_tensor(b, name, &lb);
        int expect = r < 2 || (r == 2 && want_zero) || (r == 4 && want_bias);
        if ((x != NULL) != expect || (y != NULL) != expect)
            fail_msg("%s: present %d / %d, expected %d", name, x != NULL, y != NULL, expect);
        if (x) {
            assert_int_equal(la, lb);
            if (memcmp(x, y, la) != 0) fail_msg("%s differs", name);
        }
        free(x);
        free(y);
    }
}

/* The report has exactly one layer, the stack (E, N, K), passed, 0 lossless mismatches. */
static void assert_report(const char *dir, const moe_spec *m, int lossless)
{
    char *out = tc_out_dir(dir, "out"), *path = hc_test_path_join(out, "humming_report.json");
    free(out);
    char *text = hc_test_read_file(path, NULL);
    cJSON *r = cJSON_Parse(text), *layers = cJSON_GetObjectItem(r, "layers");
    assert_int_equal(cJSON_GetArraySize(layers), 1);
    cJSON *l = cJSON_GetArrayItem(layers, 0), *shape = cJSON_GetObjectItem(l, "shape");
    assert_string_equal(cJSON_GetObjectItem(l, "name")->valuestring, KEY);
    assert_int_equal(cJSON_GetArraySize(shape), 3);
    assert_int_equal(cJSON_GetArrayItem(shape, 0)->valueint, m->E);
    assert_int_equal(cJSON_GetArrayItem(shape, 1)->valueint, m->N);
    assert_int_equal(cJSON_GetArrayItem(shape, 2)->valueint, m->K);
    assert_string_equal(cJSON_GetObjectItem(l, "status")->valuestring, "pass");
    const cJSON *mm = cJSON_GetObjectItem(l, "lossless_mismatches");
    if (lossless) {
        assert_non_null(mm);
        assert_int_equal(mm->valueint, 0);
    }
    cJSON_Delete(r);
    free(text);
    free(path);
}

static void check_record(const char *config, const moe_spec *m, const char *lossless)
{
    char want[16], *v = tc_layer_field(config, KEY, "num_experts");
    snprintf(want, sizeof want, "%d", m->E);
    assert_non_null(v);
    assert_string_equal(v, want);
    free(v);
    v = tc_layer_field(config, KEY, "lossless");
    assert_non_null(v);
    assert_string_equal(v, lossless);
    free(v);
    v = tc_layer_field(config, "model.layers.0.mlp.experts.0.up_proj", "num_experts");
    assert_null(v); /* no per-expert layer left */
}

/* Lossless repack == the Humming fused stack; requant == the float path's stack. */
static void run_stack(const moe_spec *m)
{
    moe_set set;
    hc_error err;
    char *cfg = NULL;
    build_set(m, &set);
    if (tc_convert_keep(set.quant.dir, NULL, 0, &cfg, &err) != HC_OK) fail_msg("%s", err.msg);
    check_record(cfg, m, "true");
    free(cfg);
    if (tc_convert_keep(set.humming.dir, NULL, 0, NULL, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_same_layer(set.quant.dir, set.humming.dir, m->asym, m->bias);
    assert_report(set.quant.dir, m, 1);
    size_t len;
    static const char *const gone[] = {".weight", ".qweight", ".weight_packed", ".bias"};
    for (int i = 0; i < 4; i++) { /* consumed by the stack, not copied */
        char name[160];
        snprintf(name, sizeof name, "model.layers.0.mlp.experts.0.up_proj%s", gone[i]);
        void *t = out_tensor(set.quant.dir, name, &len);
        if (t) fail_msg("%s copied to the output", name);
    }
    /* requantized to another format: as the float path stacks the dequantized weights */
    if (tc_convert_keep(set.quant.dir, "w8a16", 0, &cfg, &err) != HC_OK) fail_msg("%s", err.msg);
    check_record(cfg, m, "false");
    free(cfg);
    if (tc_convert_keep(set.fp.dir, "w8a16", 0, NULL, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_same_layer(set.quant.dir, set.fp.dir, 0, m->bias ? -1 : 0); /* float: no expert bias */
    assert_report(set.quant.dir, m, 0);
    free_set(&set);
}

static void test_gptq_stack(void **state)
{
    (void)state;
    tc_seed(11);
    run_stack(&(moe_spec){.fmt = FMT_GPTQ, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32, .skip = -1,
                          .bias = 1});
    run_stack(&(moe_spec){.fmt = FMT_GPTQ, .E = 4, .N = 64, .K = 128, .b = 4, .gs = 64,
                          .asym = 1, .skip = -1});
}

static void test_ct_stack(void **state)
{
    (void)state;
    tc_seed(12);
    run_stack(&(moe_spec){.fmt = FMT_CT, .E = 4, .N = 64, .K = 128, .b = 4, .gs = 32,
                          .asym = 1, .skip = -1});
    run_stack(&(moe_spec){.fmt = FMT_CT, .E = 2, .N = 64, .K = 256, .b = 8, .gs = 64, .skip = -1});
}

static void test_awq_stack(void **state)
{
    (void)state;
    tc_seed(15);
    run_stack(&(moe_spec){.fmt = FMT_AWQ, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                          .asym = 1, .skip = -1, .bias = 1});
    run_stack(&(moe_spec){.fmt = FMT_AWQ, .E = 4, .N = 128, .K = 256, .b = 4, .gs = 128,
                          .asym = 1, .skip = -1});
}

static void test_fp8_stack(void **state)
{
    (void)state;
    tc_seed(16);
    run_stack(&(moe_spec){.fmt = FMT_FP8, .E = 3, .N = 64, .K = 128, .b = 8, .gs = 128,
                          .skip = -1});
    run_stack(&(moe_spec){.fmt = FMT_FP8, .E = 2, .N = 128, .K = 256, .b = 8, .gs = 256,
                          .skip = -1, .bias = 1});
}

/* Refused before any output, the message naming the expert tensor and the reason. */
static void expect_refusal(const moe_spec *m, const char *tensor, const char *reason)
{
    moe_set set;
    hc_error err;
    build_set(m, &set);
    hc_status st = tc_convert(set.quant.dir, NULL, 0, NULL, &err);
    if (st == HC_OK) fail_msg("converted; expected a refusal naming %s (%s)", tensor, reason);
    if (!strstr(err.msg, tensor) || !strstr(err.msg, reason) || !strstr(err.msg, KEY))
        fail_msg("message lacks %s / %s / " KEY ": %s", tensor, reason, err.msg);
    char *out = tc_out_dir(set.quant.dir, "out");
    assert_false(hc_test_exists(out));
    free(out);
    free_set(&set);
}

static void test_stack_refusals(void **state)
{
    (void)state;
    tc_seed(13);
    expect_refusal(&(moe_spec){.fmt = FMT_GPTQ, .E = 4, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = 2},
                   "model.layers.0.mlp.experts.3.up_proj.qweight", "no expert 2");
    expect_refusal(&(moe_spec){.fmt = FMT_CT, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = -1, .b1 = 8, .gs1 = 32},
                   "model.layers.0.mlp.experts.1.up_proj.weight_packed",
                   "weight format uint8 (8 bits) vs uint4 (4 bits)");
    expect_refusal(&(moe_spec){.fmt = FMT_CT, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = -1, .b1 = 4, .gs1 = 64},
                   "model.layers.0.mlp.experts.1.up_proj.weight_packed", "group size 64 vs 32");
    expect_refusal(&(moe_spec){.fmt = FMT_CT, .E = 2, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = -1, .b1 = 4, .gs1 = 32, .asym1 = 1},
                   "model.layers.0.mlp.experts.1.up_proj.weight_packed", "zero points integer vs none");
    expect_refusal(&(moe_spec){.fmt = FMT_GPTQ, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = -1, .bias = 2},
                   "model.layers.0.mlp.experts.1.up_proj.qweight", "has no bias and expert 0 has one");
    expect_refusal(&(moe_spec){.fmt = FMT_GPTQ, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = -1, .sdt1 = 1},
                   "model.layers.0.mlp.experts.1.up_proj.qweight",
                   "scales stored as bfloat16 vs float16");
    expect_refusal(&(moe_spec){.fmt = FMT_FP8, .E = 3, .N = 64, .K = 128, .b = 8, .gs = 128,
                               .skip = -1, .sdt1 = 1},
                   "model.layers.0.mlp.experts.1.up_proj.weight",
                   "scales stored as float16 vs bfloat16");
    expect_refusal(&(moe_spec){.fmt = FMT_GPTQ, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                               .skip = -1, .kind1 = 1},
                   "model.layers.0.mlp.experts.1.up_proj.weight_packed",
                   "expert 1 of stack " KEY " is stored as another kind of quantized layer");
}

/* Float-element experts, each with its own tensor-wide scale g: NVFP4 (U8
 * e2m1 pairs, e4m3 scales per 16) from ModelOpt (weight_scale_2, a
 * multiplier) and compressed-tensors (weight_global_scale, a divisor; powers
 * of two, so lossless), ModelOpt FP8 per tensor (e4m3, a scalar
 * weight_scale), compressed-tensors MXFP4 (e8m0 scales per 32, no global) and
 * DeepSeek block FP8 (weight_scale_inv per 128 x 128 block: g, 1.5 g, ...),
 * ModelOpt FP8 per channel (F32 [N]: g (1 + (n % 7) / 8)), MXFP8 (U8 e8m0
 * per 32) and FP8_PB_WO (F32 [N/128, 1, K/128, 1], as DeepSeek's), and
 * compressed-tensors int- / naive-quantized int8 (BF16 [N, 1]) and
 * float-quantized fp8 (F32 [N, 1]) with the same channel scales.
 * Oracles: lossless, every slice of the stack equals the same expert converted
 * alone as a dense layer; requant, the float path's stack of the dequantized
 * values. */
enum { NV_MO, NV_CT, FP8_MO, MX_CT, FP8_BLK, FP8_MO_CH, MXFP8_MO, FP8_PB_WO, CT_INT8, CT_NAIVE8, CT_FP8_CH };
#define MO_CONFIG "{\"producer\": {\"name\": \"modelopt\", \"version\": \"0.2\"}, " \
                  "\"quantization\": {\"quant_algo\": \"NVFP4\", \"group_size\": 16}}"
#define CT_FP4(fmt, strategy, gs) "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": " \
    "\"compressed-tensors\", \"format\": \"" fmt "\", \"quantization_status\": " \
    "\"compressed\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": " \
    "{\"num_bits\": 4, \"type\": \"float\", \"strategy\": \"" strategy "\", \"group_size\": " #gs "}}}}}"
#define MO_FP8(algo) "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": " \
    "\"modelopt\", \"quant_algo\": \"" algo "\"}}"
#define CT_8(fmt, type) "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": " \
    "\"compressed-tensors\", \"format\": \"" fmt "\", \"quantization_status\": \"compressed\", " \
    "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, " \
    "\"type\": \"" type "\", \"strategy\": \"channel\", \"symmetric\": true}}}}}"
static double e2m1_value(unsigned c)
{
    static const double mag[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    return (c & 8 ? -1 : 1) * mag[c & 7];
}

/* channel n's scale for an expert's g (a power of two): exact in 16 bits */
static float channel_scale(float g, int n) { return g * (1.0f + (float)(n % 7) / 8.0f); }
static int channel_kind(int kind)
{
    return kind == FP8_MO_CH || kind == CT_INT8 || kind == CT_NAIVE8 || kind == CT_FP8_CH;
}

static void put_fp_expert(tc_ckpt *c, int kind, const char *p, int N, int K, const uint8_t *w,
                          const uint8_t *s, float g)
{
    char name[160];
    const int ct = kind == NV_CT || kind == MX_CT;
    if (kind == FP8_BLK || kind == FP8_PB_WO) { /* [N/128, K/128] or [N/128, 1, K/128, 1] */
        snprintf(name, sizeof name, "%s.weight", p);
        memcpy(tc_add(c, name, HC_DT_F8_E4M3, 2, (int64_t[2]){N, K}), w, (size_t)N * K);
        snprintf(name, sizeof name, "%s.%s", p, kind == FP8_BLK ? "weight_scale_inv" : "weight_scale");
        float *si = kind == FP8_BLK ? tc_add(c, name, HC_DT_F32, 2, (int64_t[2]){N / 128, K / 128})
                                    : tc_add(c, name, HC_DT_F32, 4, (int64_t[4]){N / 128, 1, K / 128, 1});
        for (int i = 0; i < (N / 128) * (K / 128); i++) si[i] = g * (1.0f + 0.5f * (float)i);
        return;
    }
    if (channel_kind(kind) || kind == MXFP8_MO) {
        const int i8 = kind == CT_INT8 || kind == CT_NAIVE8;
        snprintf(name, sizeof name, "%s.weight", p);
        memcpy(tc_add(c, name, i8 ? HC_DT_I8 : HC_DT_F8_E4M3, 2, (int64_t[2]){N, K}), w, (size_t)N * K);
        snprintf(name, sizeof name, "%s.weight_scale", p);
        if (kind == MXFP8_MO) {
            memcpy(tc_add(c, name, HC_DT_U8, 2, (int64_t[2]){N, K / 32}), s, (size_t)N * K / 32);
            return;
        }
        if (i8) {
            uint16_t *sc = tc_add(c, name, HC_DT_BF16, 2, (int64_t[2]){N, 1});
            for (int n = 0; n < N; n++) sc[n] = hc_f32_to_bf16(channel_scale(g, n));
            return;
        }
        float *sc = kind == CT_FP8_CH ? tc_add(c, name, HC_DT_F32, 2, (int64_t[2]){N, 1})
                                      : tc_add(c, name, HC_DT_F32, 1, (int64_t[1]){N});
        for (int n = 0; n < N; n++) sc[n] = channel_scale(g, n);
        return;
    }
    if (kind == MX_CT) {
        snprintf(name, sizeof name, "%s.weight_packed", p);
        memcpy(tc_add(c, name, HC_DT_U8, 2, (int64_t[2]){N, K / 2}), w, (size_t)N * K / 2);
        snprintf(name, sizeof name, "%s.weight_scale", p);
        memcpy(tc_add(c, name, HC_DT_U8, 2, (int64_t[2]){N, K / 32}), s, (size_t)N * K / 32);
        return;
    }
    if (kind == FP8_MO) {
        snprintf(name, sizeof name, "%s.weight", p);
        memcpy(tc_add(c, name, HC_DT_F8_E4M3, 2, (int64_t[2]){N, K}), w, (size_t)N * K);
        snprintf(name, sizeof name, "%s.weight_scale", p);
        *(float *)tc_add(c, name, HC_DT_F32, 0, NULL) = g;
        snprintf(name, sizeof name, "%s.input_scale", p);
        *(float *)tc_add(c, name, HC_DT_F32, 0, NULL) = 1.0f;
        return;
    }
    snprintf(name, sizeof name, "%s.%s", p, ct ? "weight_packed" : "weight");
    memcpy(tc_add(c, name, HC_DT_U8, 2, (int64_t[2]){N, K / 2}), w, (size_t)N * K / 2);
    snprintf(name, sizeof name, "%s.weight_scale", p);
    memcpy(tc_add(c, name, HC_DT_F8_E4M3, 2, (int64_t[2]){N, K / 16}), s, (size_t)N * K / 16);
    snprintf(name, sizeof name, "%s.%s", p, ct ? "weight_global_scale" : "weight_scale_2");
    if (ct) *(float *)tc_add(c, name, HC_DT_F32, 1, (int64_t[1]){1}) = g;
    else *(float *)tc_add(c, name, HC_DT_F32, 0, NULL) = g;
}

static void write_fp_ckpt(tc_ckpt *c, int kind)
{
    if (kind == NV_CT) tc_write(c, CT_FP4("nvfp4-pack-quantized", "tensor_group", 16), NULL, NULL);
    else if (kind == MX_CT) tc_write(c, CT_FP4("mxfp4-pack-quantized", "group", 32), NULL, NULL);
    else if (kind == FP8_BLK)
        tc_write(c, "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {\"quant_method\": \"fp8\", "
                    "\"fmt\": \"e4m3\", \"activation_scheme\": \"dynamic\", \"weight_block_size\": [128, 128]}}",
                 NULL, NULL);
    else if (kind == NV_MO) tc_write(c, "{\"torch_dtype\": \"bfloat16\"}", "hf_quant_config.json", MO_CONFIG);
    else if (kind == CT_INT8) tc_write(c, CT_8("int-quantized", "int"), NULL, NULL);
    else if (kind == CT_NAIVE8) tc_write(c, CT_8("naive-quantized", "int"), NULL, NULL);
    else if (kind == CT_FP8_CH) tc_write(c, CT_8("float-quantized", "float"), NULL, NULL);
    else if (kind == MXFP8_MO) tc_write(c, MO_FP8("MXFP8"), NULL, NULL);
    else if (kind == FP8_PB_WO) tc_write(c, MO_FP8("FP8_PB_WO"), NULL, NULL);
    else tc_write(c, MO_FP8("FP8"), NULL, NULL);
}

/* Dequantized value (n, k) of an expert's codes w, block scales s, global g. */
static float fp_expert_value(int kind, int K, const uint8_t *w, const uint8_t *s, float g, int n, int k)
{
    if (kind == FP8_MO) return (float)(e4m3(w[n * K + k]) * (double)g);
    if (kind == FP8_MO_CH || kind == CT_FP8_CH) return (float)(e4m3(w[n * K + k]) * (double)channel_scale(g, n));
    if (kind == CT_INT8 || kind == CT_NAIVE8) return (float)((int8_t)w[n * K + k] * (double)channel_scale(g, n));
    if (kind == MXFP8_MO) return (float)(e4m3(w[n * K + k]) * ldexp(1.0, s[n * (K / 32) + k / 32] - 127));
    if (kind == FP8_BLK || kind == FP8_PB_WO) {
        const float si = g * (1.0f + 0.5f * (float)((n / 128) * (K / 128) + k / 128)); /* as stored */
        return (float)(e4m3(w[n * K + k]) * (double)si);
    }
    const uint8_t byte = w[n * (K / 2) + k / 2];
    if (kind == MX_CT) return (float)(e2m1_value(k % 2 ? byte >> 4 : byte & 15) * ldexp(1.0, s[n * (K / 32) + k / 32] - 127));
    const double v = e2m1_value(k % 2 ? byte >> 4 : byte & 15) * e4m3(s[n * (K / 16) + k / 16]);
    return (float)(kind == NV_CT ? v / (double)g : v * (double)g);
}

/* For every tensor role, the stack has it iff the dense layer (expert e alone)
 * has it, and bytes [e * n, (e + 1) * n) of the stack's equal the dense one's n
 * bytes. Returns how many roles were compared. */
static int assert_slices(const char *stack_dir, const char *dense_dir, int e)
{
    static const char *const roles[] = {".weight", ".weight_scale", ".zero_point", ".weight_scale_2", ".bias"};
    int compared = 0;
    for (int r = 0; r < 5; r++) {
        char a[160], b[160];
        size_t la, lb;
        snprintf(a, sizeof a, KEY "%s", roles[r]);
        snprintf(b, sizeof b, "model.layers.0.mlp.up_proj%s", roles[r]);
        uint8_t *x = out_tensor(stack_dir, a, &la), *y = out_tensor(dense_dir, b, &lb);
        if ((x != NULL) != (y != NULL)) fail_msg("%s: in the stack %d, dense %d", roles[r], x != NULL, y != NULL);
        if (x) {
            assert_int_equal(la % lb, 0);
            if (memcmp(x + (size_t)e * lb, y, lb) != 0)
                fail_msg("%s of expert %d differs from the dense layer", roles[r], e);
            compared++;
        }
        free(x), free(y);
    }
    return compared;
}

/* roles: how many output tensors the stack shares with the dense layer */
static void run_fp_stack(int kind, int N, int K, int roles)
{
    const moe_spec m = {.E = 3, .N = N, .K = K, .skip = -1};
    tc_ckpt q, fp, dense[3];
    tc_init(&q, "moe-mo");
    tc_init(&fp, "moe-mo-f");
    uint8_t *w = malloc((size_t)N * K), *s = malloc((size_t)N * K / 16);
    assert_true(w && s);
    for (int e = 0; e < m.E; e++) {
        /* channel scales kept as they are must be exact in 16 bits: powers of two x 1.xxx */
        const float g = kind == NV_CT ? (float)(256 << e)
                        : channel_kind(kind) ? ldexpf(1.0f, -8 - e) : 0.00123f * (float)(e + 1);
        for (int i = 0; i < N * K; i++) {
            w[i] = (uint8_t)(tc_rand() % 256);
            if ((w[i] & 0x7f) == 0x7f) w[i] = 0x10; /* no e4m3 NaN */
        }
        for (int i = 0; i < N * K / 16; i++) /* moderate, finite e4m3; e8m0 2^-17 .. 2^12 */
            s[i] = (uint8_t)(kind == MX_CT || kind == MXFP8_MO ? 110 + tc_rand() % 30 : 0x20 + tc_rand() % 0x30);
        char p[96];
        snprintf(p, sizeof p, "model.layers.0.mlp.experts.%d.up_proj", e);
        put_fp_expert(&q, kind, p, N, K, w, s, g);
        tc_init(&dense[e], "moe-mo-d");
        put_fp_expert(&dense[e], kind, "model.layers.0.mlp.up_proj", N, K, w, s, g);
        write_fp_ckpt(&dense[e], kind);
        strcat(p, ".weight");
        float *f = tc_add(&fp, p, HC_DT_F32, 2, (int64_t[2]){N, K});
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++) f[n * K + k] = fp_expert_value(kind, K, w, s, g, n, k);
    }
    write_fp_ckpt(&q, kind);
    tc_write(&fp, "{\"torch_dtype\": \"bfloat16\"}", NULL, NULL);
    hc_error err;
    char *cfg = NULL;
    if (tc_convert_keep(q.dir, NULL, 0, &cfg, &err) != HC_OK) fail_msg("%s", err.msg);
    check_record(cfg, &m, "true");
    free(cfg);
    assert_report(q.dir, &m, 1);
    for (int e = 0; e < m.E; e++) {
        if (tc_convert_keep(dense[e].dir, NULL, 0, NULL, &err) != HC_OK) fail_msg("%s", err.msg);
        assert_int_equal(assert_slices(q.dir, dense[e].dir, e), roles);
        tc_free(&dense[e]);
    }
    if (tc_convert_keep(q.dir, "w8a16", 0, &cfg, &err) != HC_OK) fail_msg("%s", err.msg);
    check_record(cfg, &m, "false");
    free(cfg);
    if (tc_convert_keep(fp.dir, "w8a16", 0, NULL, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_same_layer(q.dir, fp.dir, 0, -1);
    free(w), free(s);
    tc_free(&q);
    tc_free(&fp);
}

/* A 3-D compressed-tensors stack reads as the same experts stored one by one. */
static void test_ct_3d_stack(void **state)
{
    (void)state;
    tc_seed(17);
    run_stack(&(moe_spec){.fmt = FMT_CT, .E = 4, .N = 64, .K = 128, .b = 4, .gs = 32,
                          .skip = -1, .stack3d = 1});
    run_stack(&(moe_spec){.fmt = FMT_CT, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32,
                          .asym = 1, .skip = -1, .stack3d = 1});
    run_stack(&(moe_spec){.fmt = FMT_CT, .E = 2, .N = 64, .K = 256, .b = 8, .gs = 64,
                          .skip = -1, .stack3d = 1});
}

static void test_ct_3d_refusals(void **state)
{
    (void)state;
    tc_seed(18);
    moe_spec m = {.fmt = FMT_CT, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32, .skip = -1};
    m.stack3d = 2;
    expect_refusal(&m, KEY ".weight_scale", "first dimension is not the number of experts");
    m.stack3d = 3;
    expect_refusal(&m, KEY ".weight_shape", "weight_shape must be [3] = [E, N, K]");
    m.stack3d = 4;
    expect_refusal(&m, KEY ".weight_offset", "not a tensor compressed-tensors stores");
    m.stack3d = 5;
    expect_refusal(&m, "model.layers.0.mlp.experts.0.up_proj.weight_packed", "both hold expert 0");
    m.stack3d = 6;
    expect_refusal(&m, KEY "_scale", "repack_moe");
}

static void test_fp_element_stacks(void **state)
{
    (void)state;
    tc_seed(17);
    run_fp_stack(NV_MO, 64, 128, 3);  /* weight, block scales, global */
    run_fp_stack(NV_CT, 64, 128, 3);
    run_fp_stack(FP8_MO, 64, 128, 2); /* weight, tensor scale */
    run_fp_stack(MX_CT, 64, 128, 2);  /* weight, e8m0 scales */
    run_fp_stack(FP8_BLK, 256, 256, 2);
    run_fp_stack(FP8_MO_CH, 64, 128, 2); /* weight, channel scales */
    run_fp_stack(MXFP8_MO, 64, 128, 2);
    run_fp_stack(FP8_PB_WO, 256, 256, 2);
    run_fp_stack(CT_INT8, 64, 128, 2);
    run_fp_stack(CT_NAIVE8, 64, 128, 2);
    run_fp_stack(CT_FP8_CH, 64, 128, 2);
}

/* Act-order experts: one input_perm per stack, so permute needs equal
 * permutations; requant unpermutes each expert with its own. */
static void test_act_order_stack(void **state)
{
    (void)state;
    tc_seed(14);
    moe_spec m = {.fmt = FMT_GPTQ, .E = 3, .N = 64, .K = 128, .b = 4, .gs = 32, .skip = -1,
                  .act_order = 1};
    moe_set set;
    hc_error err;
    char *cfg = NULL;
    build_set(&m, &set);
    assert_int_equal(tc_convert(set.quant.dir, NULL, HC_ACT_ORDER_PERMUTE, NULL, &err),
                     HC_ERR_UNSUPPORTED);
    if (!strstr(err.msg, "experts.1.up_proj.qweight") || !strstr(err.msg, "act-order permutation"))
        fail_msg("%s", err.msg);
    if (tc_convert_keep(set.quant.dir, "w8a16", HC_ACT_ORDER_REQUANT, NULL, &err) != HC_OK ||
        tc_convert_keep(set.fp.dir, "w8a16", 0, NULL, &err) != HC_OK)
        fail_msg("%s", err.msg);
    assert_same_layer(set.quant.dir, set.fp.dir, 0, 0);
    free_set(&set);
    m.act_order = 2;
    build_set(&m, &set);
    if (tc_convert_keep(set.quant.dir, NULL, HC_ACT_ORDER_PERMUTE, &cfg, &err) != HC_OK)
        fail_msg("%s", err.msg);
    check_record(cfg, &m, "true");
    free(cfg);
    assert_report(set.quant.dir, &m, 1);
    size_t len;
    int32_t *perm = out_tensor(set.quant.dir, KEY ".input_perm", &len);
    char *path = hc_test_path_join(set.quant.dir, "model.safetensors");
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(path, &st, NULL), HC_OK);
    const hc_st_tensor *gi = hc_st_find(st, "model.layers.0.mlp.experts.0.up_proj.g_idx");
    assert_non_null(perm);
    assert_int_equal(len, (size_t)m.K * 4);
    for (int j = 0; j < m.K; j++) /* groups made contiguous */
        assert_int_equal(((const int32_t *)gi->data)[perm[j]], j / m.gs);
    hc_st_close(st);
    free(path);
    free(perm);
    free_set(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gptq_stack),
        cmocka_unit_test(test_ct_stack),
        cmocka_unit_test(test_ct_3d_stack),
        cmocka_unit_test(test_ct_3d_refusals),
        cmocka_unit_test(test_awq_stack),
        cmocka_unit_test(test_fp8_stack),
        cmocka_unit_test(test_fp_element_stacks),
        cmocka_unit_test(test_stack_refusals),
        cmocka_unit_test(test_act_order_stack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
