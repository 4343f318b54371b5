/* test_ckpt_hostile.c - quantized checkpoints that lie (issue 33): config
 * integers out of range, fractional or absurd (1e300, 4294967300), unknown
 * strategies and types. Each must be refused with a message naming the file,
 * the field or tensor and the reason - never a crash (SIGFPE, SIGSEGV), never
 * undefined behaviour (make asan runs this under float-cast-overflow), never
 * garbage accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "hc_format.h"
#include "hc_test_ckpt.h"
#include "hc_test_util.h"

/* ---- detection: every integer of the config range-checked ---------------- */

#define QC(body) "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {" body "}}"
#define GPTQ(extra) QC("\"quant_method\": \"gptq\", \"group_size\": 128, \"sym\": true, " extra)
#define CT(weights) QC("\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\", " \
    "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {" weights "}}}")
#define FP8(bs) QC("\"quant_method\": \"fp8\", \"weight_block_size\": " bs)
#define MO_SIDE(q) "{\"producer\": {\"name\": \"modelopt\"}, \"quantization\": {" q "}}"

typedef struct {
    const char *config, *side_name, *side; /* side file: NULL for none */
    hc_status status;
    const char *what[3];                   /* each must be in the message */
} detect_case;

static const detect_case detect_cases[] = {
    {GPTQ("\"bits\": 4294967300"), NULL, NULL, HC_ERR_FORMAT,
     {"config.json", "quantization_config.bits", "too large"}},
    {GPTQ("\"bits\": -3"), NULL, NULL, HC_ERR_FORMAT, {"quantization_config.bits", "too small"}},
    {GPTQ("\"bits\": 1e300"), NULL, NULL, HC_ERR_FORMAT, {"quantization_config.bits", "too large"}},
    {GPTQ("\"bits\": 4.5"), NULL, NULL, HC_ERR_FORMAT, {"bits", "not an integer"}},
    {GPTQ("\"bits\": \"four\""), NULL, NULL, HC_ERR_FORMAT, {"bits", "not an integer"}},
    {GPTQ("\"bits\": 6"), NULL, NULL, HC_ERR_UNSUPPORTED, {"GPTQ bits 6"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 0"), NULL, NULL, HC_ERR_FORMAT,
     {"quantization_config.group_size = 0", "-1"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -7"), NULL, NULL, HC_ERR_FORMAT,
     {"group_size", "too small"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -1e300"), NULL, NULL,
     HC_ERR_FORMAT, {"group_size", "too small"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 1e19"), NULL, NULL,
     HC_ERR_FORMAT, {"group_size", "too large"}},
    {GPTQ("\"bits\": 4, \"desc_act\": \"no\""), NULL, NULL, HC_ERR_FORMAT,
     {"desc_act", "true or false"}},
    {GPTQ("\"bits\": 4, \"checkpoint_format\": 2"), NULL, NULL, HC_ERR_FORMAT,
     {"checkpoint_format", "must be a string"}},
    {"{}", "quant_config.json", "{\"w_bit\": 4294967300, \"q_group_size\": 128}", HC_ERR_FORMAT,
     {"quant_config.json", "w_bit", "too large"}},
    {"{}", "quant_config.json", "{\"w_bit\": 4, \"q_group_size\": 0.5}", HC_ERR_FORMAT,
     {"quant_config.json: q_group_size", "not an integer"}},
    {CT("\"num_bits\": 64, \"type\": \"int\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"config_groups.group_0.weights.num_bits", "too large", "1..8"}},
    {CT("\"num_bits\": 16, \"type\": \"int\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"num_bits", "too large"}},
    {CT("\"num_bits\": -3, \"type\": \"int\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"num_bits", "too small"}},
    {CT("\"num_bits\": 4, \"type\": \"uint\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"weights.type \"uint\""}},
    {CT("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"rows\""), NULL, NULL, HC_ERR_FORMAT,
     {"weights.strategy \"rows\""}},
    {CT("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\""), NULL, NULL, HC_ERR_FORMAT,
     {"weights.group_size", "strategy group needs"}},
    {CT("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 1e300"),
     NULL, NULL, HC_ERR_FORMAT, {"weights.group_size", "too large"}},
    {CT("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\""), NULL, NULL,
     HC_ERR_FORMAT, {"block_structure", "strategy block needs"}},
    {CT("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", \"block_structure\": "
        "[1e300, 128]"), NULL, NULL, HC_ERR_FORMAT, {"block_structure[0]", "too large"}},
    {FP8("[1e300, 128]"), NULL, NULL, HC_ERR_FORMAT,
     {"config.json", "quantization_config.weight_block_size[0]", "too large"}},
    {FP8("[128, 0.5]"), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size[1]", "not an integer"}},
    {FP8("[128, 0]"), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size[1]", "too small"}},
    {FP8("[128]"), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size", "two block sizes"}},
    {FP8("\"128x128\""), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size", "two block sizes"}},
    {"{}", "hf_quant_config.json", MO_SIDE("\"quant_algo\": \"NVFP4\", \"group_size\": 1e300"),
     HC_ERR_FORMAT, {"hf_quant_config.json", "quantization.group_size", "too large"}},
    {"{}", "hf_quant_config.json", MO_SIDE("\"quant_algo\": \"NVFP4\", \"group_size\": 0"),
     HC_ERR_FORMAT, {"quantization.group_size", "too small"}},
};

/* 1 (and a line on stderr) when status or message is not as expected. */
static int check_error(const char *label, hc_status st, const hc_error *err, hc_status want,
                       const char *const what[3])
{
    if (st != want) {
        fprintf(stderr, "%s: status %d, want %d: %s\n", label, (int)st, (int)want,
                st == HC_OK ? "(accepted)" : err->msg);
        return 1;
    }
    for (int k = 0; k < 3 && what[k]; k++)
        if (!strstr(err->msg, what[k])) {
            fprintf(stderr, "%s: message lacks \"%s\": %s\n", label, what[k], err->msg);
            return 1;
        }
    return 0;
}

static void test_detect_refuses_bad_numbers(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof detect_cases / sizeof detect_cases[0]; i++) {
        const detect_case *dc = &detect_cases[i];
        tc_ckpt c;
        tc_init(&c, "hostile-detect");
        tc_add(&c, "x", HC_DT_F32, 1, (int64_t[1]){4});
        tc_write(&c, dc->config, dc->side_name, dc->side);
        hc_ckpt_config cfg;
        hc_error err;
        hc_error_clear(&err);
        char label[512];
        snprintf(label, sizeof label, "detect case %zu (%s %s)", i, dc->config,
                 dc->side ? dc->side : "");
        bad += check_error(label, tc_detect(c.dir, &cfg, &err), &err, dc->status, dc->what);
        tc_free(&c);
    }
    assert_int_equal(bad, 0);
}

/* The forms producers really write still pass: quoted integers, -1, null. */
static void test_detect_accepts_valid_forms(void **state)
{
    (void)state;
    static const char *const ok[] = {
        GPTQ("\"bits\": \"4\", \"desc_act\": null"),
        QC("\"quant_method\": \"gptq\", \"bits\": 8, \"group_size\": -1, \"sym\": false"),
        CT("\"num_bits\": 4, \"type\": \"int\", \"group_size\": 128, \"actorder\": true"),
        CT("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", \"block_structure\": "
           "[128, 128]"),
        FP8("[128, 128]"),
        FP8("null"),
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tc_ckpt c;
        tc_init(&c, "hostile-ok");
        tc_add(&c, "x", HC_DT_F32, 1, (int64_t[1]){4});
        tc_write(&c, ok[i], NULL, NULL);
        hc_ckpt_config cfg;
        hc_error err;
        if (tc_detect(c.dir, &cfg, &err) != HC_OK) fail_msg("case %zu: %s", i, err.msg);
        tc_free(&c);
    }
}

/* ---- readers: shapes, counts and scale values ----------------------------- */

#define L0 "model.layers.0.mlp.up_proj"
#define F16_NAN 0x7E00
#define F16_INF 0x7C00
#define F16_NEG 0xA11F /* -0.0099 */

static const int64_t *dims2(int64_t a, int64_t b)
{
    static int64_t d[8][2];
    static int i;
    i = (i + 1) % 8;
    d[i][0] = a;
    d[i][1] = b;
    return d[i];
}

/* GPTQ 4-bit g32 sym v2: qweight [K/8, N], qzeros [G, N/8], scales F16 [G, N]. */
static uint16_t *gptq(tc_ckpt *c, int64_t K, int64_t N, int64_t G)
{
    uint32_t *qw = tc_add(c, L0 ".qweight", HC_DT_I32, 2, dims2(K / 8, N));
    uint32_t *qz = tc_add(c, L0 ".qzeros", HC_DT_I32, 2, dims2(G, N / 8));
    uint16_t *sc = tc_add(c, L0 ".scales", HC_DT_F16, 2, dims2(G, N));
    for (int64_t i = 0; i < K / 8 * N; i++) qw[i] = tc_rand();
    for (int64_t i = 0; i < G * N / 8; i++) qz[i] = 0x88888888u;
    for (int64_t i = 0; i < G * N; i++) sc[i] = hc_f32_to_f16(0.01f);
    return sc;
}
#define GPTQ_CFG(gs) QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": " #gs ", " \
                        "\"sym\": true, \"checkpoint_format\": \"gptq_v2\"")

static const char *gptq_k0(tc_ckpt *c) { gptq(c, 0, 64, 1); return GPTQ_CFG(-1); }
static const char *gptq_n0(tc_ckpt *c) { gptq(c, 128, 0, 4); return GPTQ_CFG(32); }
static const char *gptq_g0(tc_ckpt *c) { gptq(c, 128, 64, 0); return GPTQ_CFG(32); }
static const char *gptq_nan(tc_ckpt *c) { gptq(c, 128, 64, 4)[77] = F16_NAN; return GPTQ_CFG(32); }
static const char *gptq_inf(tc_ckpt *c) { gptq(c, 128, 64, 4)[3] = F16_INF; return GPTQ_CFG(32); }
static const char *gptq_zero(tc_ckpt *c) { gptq(c, 128, 64, 4)[5] = 0; return GPTQ_CFG(32); }
static const char *gptq_under_fp8(tc_ckpt *c) { gptq(c, 128, 64, 4); return FP8("[128, 128]"); }
static const char *ct_under_gptq(tc_ckpt *c)
{
    tc_add(c, L0 ".weight_packed", HC_DT_I32, 2, dims2(64, 16));
    tc_add(c, L0 ".weight_scale", HC_DT_BF16, 2, dims2(64, 4));
    return GPTQ_CFG(32);
}
static const char *gptq_qzeros_wide(tc_ckpt *c)
{
    tc_add(c, L0 ".qweight", HC_DT_I32, 2, dims2(16, 64));
    tc_add(c, L0 ".qzeros", HC_DT_I32, 2, dims2(4, 9)); /* [G, N*4/32] is [4, 8] */
    uint16_t *sc = tc_add(c, L0 ".scales", HC_DT_F16, 2, dims2(4, 64));
    for (int i = 0; i < 4 * 64; i++) sc[i] = hc_f32_to_f16(0.01f);
    return GPTQ_CFG(32);
}
static const char *gptq_gidx_2d(tc_ckpt *c)
{
    gptq(c, 128, 64, 4);
    tc_add(c, L0 ".g_idx", HC_DT_I32, 2, dims2(1, 128)); /* must be [K] */
    return GPTQ_CFG(32);
}
static const char *gptq_gidx_channel(tc_ckpt *c)
{
    gptq(c, 128, 64, 1);
    int32_t *gi = tc_add(c, L0 ".g_idx", HC_DT_I32, 1, (int64_t[1]){128});
    gi[9] = 3; /* one group over K: every entry 0 */
    return GPTQ_CFG(-1);
}

/* AWQ GEMM 4-bit: qweight [K, N/8], qzeros [G, N/8], scales F16 [G, N]. */
static uint16_t *awq(tc_ckpt *c, int64_t K, int64_t N, int64_t G)
{
    tc_add(c, L0 ".qweight", HC_DT_I32, 2, dims2(K, N / 8));
    tc_add(c, L0 ".qzeros", HC_DT_I32, 2, dims2(G, N / 8));
    uint16_t *sc = tc_add(c, L0 ".scales", HC_DT_F16, 2, dims2(G, N));
    for (int64_t i = 0; i < G * N; i++) sc[i] = hc_f32_to_f16(0.01f);
    return sc;
}
#define AWQ_CFG(v) QC("\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 32, \"version\": \"" v "\"")
static const char *awq_k0(tc_ckpt *c) { awq(c, 0, 64, 0); return AWQ_CFG("gemm"); }
static const char *awq_nan(tc_ckpt *c) { awq(c, 128, 64, 4)[64] = F16_NAN; return AWQ_CFG("gemm"); }
static const char *awq_gemv_n60(tc_ckpt *c)
{
    tc_add(c, L0 ".qweight", HC_DT_I32, 2, dims2(60, 16)); /* N = 60: zero points cannot pack */
    tc_add(c, L0 ".qzeros", HC_DT_I32, 2, dims2(60, 4));
    tc_add(c, L0 ".scales", HC_DT_F16, 2, dims2(60, 32));
    return AWQ_CFG("gemv");
}
static const char *awq_gemv_scales(tc_ckpt *c)
{
    tc_add(c, L0 ".qweight", HC_DT_I32, 2, dims2(64, 16));
    tc_add(c, L0 ".qzeros", HC_DT_I32, 2, dims2(64, 4));
    tc_add(c, L0 ".scales", HC_DT_F16, 2, dims2(64, 4)); /* [N, 8 * 4] expected */
    return AWQ_CFG("gemv");
}

/* compressed-tensors pack-quantized int4 group 32: weight_packed [N, K/8]. */
#define CT_CFG(fmt, bits, type, strat) QC("\"quant_method\": \"compressed-tensors\", \"format\": " \
    "\"" fmt "\", \"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": " \
    "{\"num_bits\": " #bits ", \"type\": \"" type "\", " strat "}}}")
#define CT_PACK4 CT_CFG("pack-quantized", 4, "int", "\"strategy\": \"group\", \"group_size\": 32")
static uint16_t *ct_packed(tc_ckpt *c, int64_t N, int64_t K)
{
    tc_add(c, L0 ".weight_packed", HC_DT_I32, 2, dims2(N, K / 8));
    uint16_t *sc = tc_add(c, L0 ".weight_scale", HC_DT_BF16, 2, dims2(N, K / 32));
    for (int64_t i = 0; i < N * K / 32; i++) sc[i] = hc_f32_to_bf16(0.01f);
    return sc;
}
static const char *ct_k0(tc_ckpt *c) { ct_packed(c, 64, 0); return CT_PACK4; }
static const char *ct_nan(tc_ckpt *c) { ct_packed(c, 64, 128)[9] = 0x7FC0; return CT_PACK4; }
static const char *ct_shape_empty(tc_ckpt *c)
{
    ct_packed(c, 64, 128);
    tc_add(c, L0 ".weight_shape", HC_DT_I64, 1, (int64_t[1]){0});
    return CT_PACK4;
}
static const char *ct_shape_huge(tc_ckpt *c)
{
    ct_packed(c, 64, 128);
    int64_t *ws = tc_add(c, L0 ".weight_shape", HC_DT_I64, 1, (int64_t[1]){2});
    ws[0] = 64;
    ws[1] = INT64_MAX; /* K + 7 would overflow */
    return CT_PACK4;
}
static const char *ct_int_scale_dtype(tc_ckpt *c)
{
    tc_add(c, L0 ".weight_packed", HC_DT_I32, 2, dims2(64, 16));
    tc_add(c, L0 ".weight_scale", HC_DT_I32, 2, dims2(64, 4)); /* integers, not scales */
    return CT_PACK4;
}
static const char *ct_int8_tensor(tc_ckpt *c)
{
    tc_add(c, L0 ".weight", HC_DT_I8, 2, dims2(64, 128));
    tc_add(c, L0 ".weight_scale", HC_DT_BF16, 2, dims2(64, 1)); /* channel, not tensor */
    return CT_CFG("int-quantized", 8, "int", "\"strategy\": \"tensor\"");
}

/* nvfp4-pack-quantized: U8 [N, K/2], E4M3 [N, K/16], weight_global_scale F32 [1]. */
#define CT_NVFP4 CT_CFG("nvfp4-pack-quantized", 4, "float", \
                        "\"strategy\": \"tensor_group\", \"group_size\": 16")
static uint8_t *nvfp4(tc_ckpt *c, int64_t N, int64_t K, int64_t gscale_len)
{
    tc_add(c, L0 ".weight_packed", HC_DT_U8, 2, dims2(N, K / 2));
    uint8_t *s = tc_add(c, L0 ".weight_scale", HC_DT_F8_E4M3, 2, dims2(N, K / 16));
    for (int64_t i = 0; i < N * K / 16; i++) s[i] = 0x38; /* 1.0 */
    float *g = tc_add(c, L0 ".weight_global_scale", HC_DT_F32, 1, (int64_t[1]){gscale_len});
    if (gscale_len) g[0] = 2.0f;
    /* the next tensor's bytes, which an unchecked read of an empty global scale would take */
    float *next = tc_add(c, "model.norm.weight", HC_DT_F32, 1, (int64_t[1]){4});
    for (int i = 0; i < 4; i++) next[i] = 1.0f;
    return s;
}
static const char *nvfp4_gs_empty(tc_ckpt *c) { nvfp4(c, 64, 128, 0); return CT_NVFP4; }
static const char *nvfp4_gs_two(tc_ckpt *c) { nvfp4(c, 64, 128, 2); return CT_NVFP4; }
static const char *nvfp4_k0(tc_ckpt *c) { nvfp4(c, 64, 0, 1); return CT_NVFP4; }
static const char *nvfp4_nan(tc_ckpt *c) { nvfp4(c, 64, 128, 1)[17] = 0x7F; return CT_NVFP4; }
static const char *nvfp4_neg(tc_ckpt *c) { nvfp4(c, 64, 128, 1)[17] = 0xB8; return CT_NVFP4; }

/* ModelOpt NVFP4 (config.json quant_method modelopt). */
#define MO_CFG(algo) QC("\"quant_method\": \"modelopt\", \"quant_algo\": \"" algo "\"")
static float *modelopt_nvfp4(tc_ckpt *c, int64_t N, int64_t K)
{
    tc_add(c, L0 ".weight", HC_DT_U8, 2, dims2(N, K / 2));
    uint8_t *s = tc_add(c, L0 ".weight_scale", HC_DT_F8_E4M3, 2, dims2(N, K / 16));
    for (int64_t i = 0; i < N * K / 16; i++) s[i] = 0x38;
    float *s2 = tc_add(c, L0 ".weight_scale_2", HC_DT_F32, 0, NULL);
    s2[0] = 0.5f;
    return s2;
}
static const char *mo_k0(tc_ckpt *c) { modelopt_nvfp4(c, 64, 0); return MO_CFG("NVFP4"); }
static const char *mo_s2_neg(tc_ckpt *c) { modelopt_nvfp4(c, 64, 128)[0] = -0.5f; return MO_CFG("NVFP4"); }
static const char *mo_mxfp8_k0(tc_ckpt *c)
{
    tc_add(c, L0 ".weight", HC_DT_F8_E4M3, 2, dims2(64, 0));
    tc_add(c, L0 ".weight_scale", HC_DT_U8, 2, dims2(64, 0));
    return MO_CFG("MXFP8");
}

/* gpt-oss MXFP4 stacks. */
#define MX_CFG QC("\"quant_method\": \"mxfp4\"")
#define MX_P "model.layers.0.mlp.experts.down_proj"
static const char *mx_g0(tc_ckpt *c)
{
    tc_add(c, MX_P "_blocks", HC_DT_U8, 4, (int64_t[4]){2, 64, 0, 16});
    tc_add(c, MX_P "_scales", HC_DT_U8, 3, (int64_t[3]){2, 64, 0});
    return MX_CFG;
}
static const char *mx_e0(tc_ckpt *c)
{
    tc_add(c, MX_P "_blocks", HC_DT_U8, 4, (int64_t[4]){0, 64, 2, 16});
    tc_add(c, MX_P "_scales", HC_DT_U8, 3, (int64_t[3]){0, 64, 2});
    return MX_CFG;
}

/* DeepSeek FP8 128x128 blocks. */
#define FP8_CFG FP8("[128, 128]")
static float *fp8_blocks(tc_ckpt *c, int64_t N, int64_t K, int64_t rb, int64_t cb)
{
    tc_add(c, L0 ".weight", HC_DT_F8_E4M3, 2, dims2(N, K));
    float *si = tc_add(c, L0 ".weight_scale_inv", HC_DT_F32, 2, dims2(rb, cb));
    for (int64_t i = 0; i < rb * cb; i++) si[i] = 0.001f;
    return si;
}
static const char *fp8_k0(tc_ckpt *c) { fp8_blocks(c, 128, 0, 1, 0); return FP8_CFG; }
static const char *fp8_n0(tc_ckpt *c) { fp8_blocks(c, 0, 128, 0, 1); return FP8_CFG; }
static const char *fp8_transposed(tc_ckpt *c) { fp8_blocks(c, 128, 256, 2, 1); return FP8_CFG; }
static const char *fp8_nan(tc_ckpt *c) { fp8_blocks(c, 256, 128, 2, 1)[1] = NAN; return FP8_CFG; }
static const char *fp8_nan_code(tc_ckpt *c)
{
    fp8_blocks(c, 256, 128, 2, 1);
    ((uint8_t *)c->t[0].data)[300] = 0xFF; /* E4M3 NaN */
    return FP8_CFG;
}
/* the scan goes by blocks of 64 bytes: a NaN in the last byte, after a 0x7E
 * (the largest finite magnitude) in every byte before it */
static const char *fp8_nan_code_last(tc_ckpt *c)
{
    fp8_blocks(c, 256, 128, 2, 1);
    memset(c->t[0].data, 0x7E, 256 * 128);
    ((uint8_t *)c->t[0].data)[256 * 128 - 1] = 0x7F; /* E4M3 NaN */
    return FP8_CFG;
}
static const char *fp8_e5m2_inf(tc_ckpt *c)
{
    uint8_t *w = tc_add(c, L0 ".weight", HC_DT_F8_E5M2, 2, dims2(64, 128));
    float *s = tc_add(c, L0 ".weight_scale", HC_DT_F32, 0, NULL);
    s[0] = 1.0f;
    w[4000] = 0x7C; /* E5M2 +Inf */
    return QC("\"quant_method\": \"fp8\"");
}
static const char *fp8_tensor_neg(tc_ckpt *c)
{
    tc_add(c, L0 ".weight", HC_DT_F8_E4M3, 2, dims2(64, 128));
    float *s = tc_add(c, L0 ".weight_scale", HC_DT_F32, 1, (int64_t[1]){1});
    s[0] = -1.0f;
    return QC("\"quant_method\": \"fp8\"");
}

typedef struct {
    const char *name;
    const char *(*build)(tc_ckpt *c);
    const char *prefix;
    hc_status status;
    const char *what[3]; /* each in the message (OK: in the layer's note) */
} read_case;

#define EMPTY "empty dimension"
static const read_case read_cases[] = {
    {"gptq K=0 (SIGFPE)", gptq_k0, L0, HC_ERR_FORMAT, {L0 ".qweight", EMPTY}},
    {"gptq N=0", gptq_n0, L0, HC_ERR_FORMAT, {L0 ".qweight", EMPTY}},
    {"gptq 0 groups", gptq_g0, L0, HC_ERR_FORMAT, {L0 ".scales", EMPTY}},
    {"gptq NaN scale", gptq_nan, L0, HC_ERR_FORMAT, {L0 ".scales", "element 77", "not finite"}},
    {"gptq Inf scale", gptq_inf, L0, HC_ERR_FORMAT, {L0 ".scales", "element 3", "not finite"}},
    {"gptq zero scale", gptq_zero, L0, HC_OK, {L0 ".scales", "1 scale(s) are 0"}},
    {"gptq tensors, fp8 config (SIGFPE: bits 0)", gptq_under_fp8, L0, HC_ERR_UNSUPPORTED,
     {"layer " L0, "GPTQ/AWQ", "config.json says the checkpoint is fp8"}},
    {"ct tensors, gptq config", ct_under_gptq, L0, HC_ERR_UNSUPPORTED,
     {"layer " L0, "compressed-tensors", "is gptq"}},
    {"gptq qzeros too wide", gptq_qzeros_wide, L0, HC_ERR_FORMAT, {L0 ".qzeros", "[4, 8]", "[4, 9]"}},
    {"gptq g_idx 2-D", gptq_gidx_2d, L0, HC_ERR_FORMAT, {L0 ".g_idx", "[K] = [128]"}},
    {"gptq channel g_idx", gptq_gidx_channel, L0, HC_ERR_FORMAT, {"g_idx[9] = 3", "outside 0..0"}},
    {"awq K=0 (SIGFPE)", awq_k0, L0, HC_ERR_FORMAT, {L0 ".qweight", EMPTY}},
    {"awq NaN scale", awq_nan, L0, HC_ERR_FORMAT, {L0 ".scales", "element 64", "not finite"}},
    {"awq gemv N=60", awq_gemv_n60, L0, HC_ERR_UNSUPPORTED, {L0 ".qweight", "N=60"}},
    {"awq gemv scales", awq_gemv_scales, L0, HC_ERR_FORMAT, {L0 ".scales", "[64, 32]"}},
    {"ct K=0 (SIGFPE)", ct_k0, L0, HC_ERR_FORMAT, {L0 ".weight_packed", EMPTY}},
    {"ct NaN scale", ct_nan, L0, HC_ERR_FORMAT, {L0 ".weight_scale", "element 9", "not finite"}},
    {"ct empty weight_shape", ct_shape_empty, L0, HC_ERR_FORMAT, {L0 ".weight_shape", "[2]"}},
    {"ct weight_shape K=2^63-1", ct_shape_huge, L0, HC_ERR_FORMAT, {L0 ".weight_shape", "does not match"}},
    {"ct I32 scales", ct_int_scale_dtype, L0, HC_ERR_FORMAT, {L0 ".weight_scale", "dtype I32"}},
    {"ct int8 tensor strategy", ct_int8_tensor, L0, HC_ERR_FORMAT, {L0 ".weight_scale", "strategy tensor"}},
    {"nvfp4 empty global scale", nvfp4_gs_empty, L0, HC_ERR_FORMAT, {L0 ".weight_global_scale", "one F32"}},
    {"nvfp4 two global scales", nvfp4_gs_two, L0, HC_ERR_FORMAT, {L0 ".weight_global_scale", "one F32"}},
    {"nvfp4 K=0 (SIGFPE)", nvfp4_k0, L0, HC_ERR_FORMAT, {L0 ".weight_packed", EMPTY}},
    {"nvfp4 NaN block scale", nvfp4_nan, L0, HC_ERR_FORMAT, {L0 ".weight_scale", "element 17", "not finite"}},
    {"nvfp4 negative block scale", nvfp4_neg, L0, HC_ERR_FORMAT, {L0 ".weight_scale", "element 17", "negative"}},
    {"modelopt nvfp4 K=0 (SIGFPE)", mo_k0, L0, HC_ERR_FORMAT, {L0 ".weight", EMPTY}},
    {"modelopt negative weight_scale_2", mo_s2_neg, L0, HC_ERR_FORMAT, {L0 ".weight_scale_2", "negative"}},
    {"modelopt mxfp8 K=0 (SIGFPE)", mo_mxfp8_k0, L0, HC_ERR_FORMAT, {L0 ".weight", EMPTY}},
    {"gpt-oss 0 groups (SIGFPE)", mx_g0, MX_P, HC_ERR_FORMAT, {MX_P "_blocks", EMPTY}},
    {"gpt-oss 0 experts", mx_e0, MX_P, HC_ERR_FORMAT, {MX_P "_blocks", EMPTY}},
    {"fp8 blocks K=0 (SIGFPE)", fp8_k0, L0, HC_ERR_FORMAT, {L0 ".weight", EMPTY}},
    {"fp8 blocks N=0", fp8_n0, L0, HC_ERR_FORMAT, {L0 ".weight", EMPTY}},
    {"fp8 block scales transposed", fp8_transposed, L0, HC_ERR_FORMAT, {L0 ".weight_scale_inv", "[1, 2]"}},
    {"fp8 NaN block scale", fp8_nan, L0, HC_ERR_FORMAT, {L0 ".weight_scale_inv", "element 1", "not finite"}},
    {"fp8 NaN weight code", fp8_nan_code, L0, HC_ERR_FORMAT, {L0 ".weight", "element 300", "0xff"}},
    {"fp8 NaN last weight code", fp8_nan_code_last, L0, HC_ERR_FORMAT, {L0 ".weight", "element 32767", "0x7f"}},
    {"fp8 e5m2 Inf weight code", fp8_e5m2_inf, L0, HC_ERR_FORMAT, {L0 ".weight", "element 4000", "0x7c"}},
    {"fp8 negative tensor scale", fp8_tensor_neg, L0, HC_ERR_FORMAT, {L0 ".weight_scale", "negative"}},
};

/* One case: reading the layer must give the status and name tensor and reason;
 * a whole conversion (library and CLI) must then fail the same way, leaving no output. */
static void run_read_case(void **state)
{
    const read_case *rc = *state;
    tc_ckpt c;
    tc_init(&c, "hostile-read");
    const char *cfg = rc->build(&c);
    tc_write(&c, cfg, NULL, NULL);
    hc_ckpt_layer l;
    hc_error err;
    hc_error_clear(&err);
    hc_status st = tc_read_layer(c.dir, rc->prefix, HC_ACT_ORDER_PERMUTE, &l, NULL, &err);
    if (st == HC_OK) snprintf(err.msg, sizeof err.msg, "%s", l.note);
    if (check_error(rc->name, st, &err, rc->status, rc->what)) fail_msg("%s", rc->name);
    if (st == HC_OK) hc_ckpt_layer_free(&l);
    if (st != HC_OK) {
        assert_int_not_equal(tc_convert(c.dir, NULL, 1, NULL, &err), HC_OK);
        char *out = tc_out_dir(c.dir, "out");
        assert_false(hc_test_exists(out));
        free(out);
    }
    tc_free(&c);
}

int main(void)
{
    enum { NR = sizeof read_cases / sizeof read_cases[0] };
    struct CMUnitTest tests[2 + NR] = {
        cmocka_unit_test(test_detect_refuses_bad_numbers),
        cmocka_unit_test(test_detect_accepts_valid_forms),
    };
    for (int i = 0; i < NR; i++) {
        struct CMUnitTest t = cmocka_unit_test_prestate(run_read_case, (void *)&read_cases[i]);
        t.name = read_cases[i].name;
        tests[2 + i] = t;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
