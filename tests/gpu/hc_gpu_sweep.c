/* hc_gpu_sweep.c - the GPU kernels against the CPU reference GEMM on random
 * data, on the humming-kernels 0.1.19 tensors of every preset and the
 * combinations listed below (sm80 / sm89 and sm90: tiled, packed-K and flat
 * layouts as 0.1.19 picks them), fp16 and bf16 layers, dense shapes that need
 * N and K padding with M = 1, 7, 16, 128, 1000, and MoE stacks (M = 7, 16,
 * 100). Prints one
 * line per case and a summary; exits 1 on any failure, 77 (skipped) with a
 * "SKIP[gpu]:" notice when no GPU is present.
 *
 *   hc_gpu_sweep [--quick] [--bench [--flush 0|1|2]]
 *
 * --bench: times the dense kernel for the benchmark shapes (bench/README);
 * --flush 1 zeroes 256 MB before each timed call (L2 dirty), 2 reads it (L2
 * clean). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_format.h"
#include "hc_gpu.h"
#include "hc_layout.h"
#include "hc_preset.h"
#include "hc_quant.h"
#include "hc_verify.h"

typedef struct {
    const char *name;
    hc_target t;
} combo;

#define P_ HC_FMT_PARAM
#define ZN HC_TARGET_ZP_NONE
#define ZI HC_TARGET_ZP_INT
#define ZF HC_TARGET_ZP_FLOAT
#define RTN HC_TARGET_RTN

/* Beyond the presets: every weight bit width with 16-bit activations and zero
 * points, int and fp8 activations, float eXmY weights, block/tensor scales,
 * and the combinations Humming's own kernels get wrong on the H200. */
static const combo extra[] = {
    {"uint1-ch", {HC_FMT_UINT1, P_, 0, 0, ZN, 0, P_, RTN}},
    {"uint2-g64-zpint", {HC_FMT_UINT2, P_, 64, 0, ZI, 0, P_, RTN}},
    {"uint3-g32-zpint", {HC_FMT_UINT3, P_, 32, 0, ZI, 0, P_, RTN}},
    {"uint4-g128-zpint", {HC_FMT_UINT4, P_, 128, 0, ZI, 0, P_, RTN}},
    /* the uint4 x 16-bit fast path: channel (perm32), other group sizes, a
     * scale dtype other than the layer's */
    {"uint4-ch", {HC_FMT_UINT4, P_, 0, 0, ZN, 0, P_, RTN}},
    {"uint4-g32", {HC_FMT_UINT4, P_, 32, 0, ZN, 0, P_, RTN}},
    {"uint4-g64-bf16scale", {HC_FMT_UINT4, HC_FMT_BF16, 64, 0, ZN, 0, P_, RTN}},
    {"uint4-g256", {HC_FMT_UINT4, P_, 256, 0, ZN, 0, P_, RTN}},
    {"uint4-g128-zpfloat", {HC_FMT_UINT4, P_, 128, 0, ZF, 0, P_, RTN}},
    {"uint5-ch-zpint", {HC_FMT_UINT5, P_, 0, 0, ZI, 0, P_, RTN}},
    {"uint6-g64", {HC_FMT_UINT6, P_, 64, 0, ZN, 0, P_, RTN}},
    {"uint7-g128-zpint", {HC_FMT_UINT7, P_, 128, 0, ZI, 0, P_, RTN}},
    {"uint8-ch-zpint", {HC_FMT_UINT8, P_, 0, 0, ZI, 0, P_, RTN}},
    {"uint4-g128-zpint-fp8", {HC_FMT_UINT4, P_, 128, 0, ZI, 0, HC_FMT_F8E4M3, RTN}},
    {"uint3-g64-zpint-fp8", {HC_FMT_UINT3, P_, 64, 0, ZI, 0, HC_FMT_F8E4M3, RTN}},
    {"uint4-ch-e5m2act", {HC_FMT_UINT4, P_, 0, 0, ZN, 0, HC_FMT_F8E5M2, RTN}},
    {"uint8-ch-int8", {HC_FMT_UINT8, P_, 0, 0, ZN, 0, HC_FMT_INT8, RTN}},
    {"uint4-ch-int8", {HC_FMT_UINT4, P_, 0, 0, ZN, 0, HC_FMT_INT8, RTN}},
    {"uint2-g128-int8", {HC_FMT_UINT2, P_, 128, 0, ZN, 0, HC_FMT_INT8, RTN}},
    {"int4-ch-int4-zpint", {HC_FMT_UINT4, P_, 0, 0, ZI, 0, HC_FMT_INT4, RTN}},
    {"e5m2-ch", {HC_FMT_F8E5M2, P_, 0, 0, ZN, 0, P_, RTN}},
    {"e5m2-ch-fp8", {HC_FMT_F8E5M2, P_, 0, 0, ZN, 0, HC_FMT_F8E4M3, RTN}},
    {"e3m2-g32", {HC_FMT_F6E3M2, P_, 32, 0, ZN, 0, P_, RTN}},
    {"e2m3-g64-e4m3scale", {HC_FMT_F6E2M3, HC_FMT_F8E4M3, 64, 0, ZN, 0, P_, RTN}},
    {"e1m1-ch", {HC_FMT_F3E1M1, P_, 0, 0, ZN, 0, P_, RTN}},
    {"e3m4-ch", {HC_FMT_F8E3M4, P_, 0, 0, ZN, 0, P_, RTN}},
    {"e4m3-block128-fp8", {HC_FMT_F8E4M3, HC_FMT_F32, 128, 128, ZN, 0, HC_FMT_F8E4M3, RTN}},
    {"e4m3-tensor-fp8", {HC_FMT_F8E4M3, HC_FMT_F32, -1, 0, ZN, 0, HC_FMT_F8E4M3, RTN}},
    {"mxfp4-int8", {HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_INT8, RTN}},
    {"mxint4-fp8", {HC_FMT_INT4, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_F8E4M3, RTN}},
    {"nvfp4-fp8", {HC_FMT_F4E2M1, HC_FMT_F8E4M3, 16, 0, ZN, 1, HC_FMT_F8E4M3, RTN}},
    {"e2m1-g32-bf16scale", {HC_FMT_F4E2M1, HC_FMT_BF16, 32, 0, ZN, 0, P_, RTN}},
};

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static double urand(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return ((rs >> 11) + 0.5) * 0x1.0p-53;
}
static double grand(void) { return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()); }

static hc_format_id stored_format(hc_format_id f)
{
    const hc_format_info *fi = hc_format_get(f);
    return fi->kind == HC_KIND_INT ? (hc_format_id)(HC_FMT_UINT1 + fi->bits - 1) : f;
}

static int tensor_from(hc_tensor *t, hc_dtype dt, int moe, int64_t E, int64_t a, int64_t b,
                       const void *src)
{
    int64_t s3[3] = {E, a, b};
    if (hc_tensor_alloc(t, dt, moe ? 3 : 2, moe ? s3 : s3 + 1, NULL) != HC_OK) return -1;
    memcpy(t->data, src, t->nbytes);
    return 0;
}

/* Random weights quantized with the library's quantizer into the pre form. */
static int make_pre(const hc_target *t, const hc_layer_config *c, int moe, int64_t E, int64_t N,
                    int64_t K, hc_layer_tensors *pre, hc_error *err)
{
    memset(pre, 0, sizeof *pre);
    hc_quant_desc d = {.weight_format = t->weight_format, .scale_format = t->scale_format,
                       .group_size = t->group_size > 0 ? (int)t->group_size
                                     : t->group_size == 0 ? HC_QUANT_GROUP_CHANNEL
                                                          : HC_QUANT_GROUP_TENSOR,
                       .group_size_n = (int)t->group_size_n,
                       .zero_point = t->zero_point == ZI ? HC_ZP_INT
                                     : t->zero_point == ZF ? HC_ZP_FLOAT : HC_ZP_NONE,
                       .global_scale = t->global_scale, .quantizer = HC_QUANTIZER_RTN};
    float *w = malloc((size_t)(E * N * K) * sizeof *w);
    if (!w) return -1;
    for (int64_t i = 0; i < E * N * K; i++) w[i] = (float)(0.05 * grand());
    hc_quant_result r;
    hc_status st = hc_quantize(&d, w, E, N, K, &r, err);
    free(w);
    if (st != HC_OK) return -1;
    int64_t NS = r.group_rows, G = r.groups, b = r.bits;
    int rc = tensor_from(&pre->weight, HC_DT_I32, moe, E, N, K * b / 32, r.codes);
    if (!rc && r.scales)
        rc = tensor_from(&pre->weight_scale, hc_dtype_of_format(t->scale_format), moe, E, NS,
                         G, r.scales);
    if (!rc && r.zero_points)
        rc = tensor_from(&pre->zero_point, HC_DT_I32, moe, E, NS * b / 32, G, r.zero_points);
    if (!rc && r.zero_points_f)
        rc = tensor_from(&pre->zero_point, hc_dtype_of_format(r.zp_float_format), moe, E, NS,
                         G, r.zero_points_f);
    if (!rc && r.global_scale) {
        int64_t ge = E;
        rc = hc_tensor_alloc(&pre->global_scale, HC_DT_F32, 1, &ge, NULL) != HC_OK;
        if (!rc) memcpy(pre->global_scale.data, r.global_scale, (size_t)E * 4);
    }
    if (!rc && urand() < 0.5) { /* bias (E?, N) on half the cases */
        int64_t bs[2] = {E, N};
        rc = hc_tensor_alloc(&pre->bias, c->param_format == HC_FMT_BF16 ? HC_DT_BF16 : HC_DT_F16,
                             moe ? 2 : 1, moe ? bs : bs + 1, NULL) != HC_OK;
        uint16_t *bb = rc ? NULL : pre->bias.data;
        for (int64_t i = 0; bb && i < E * N; i++)
            bb[i] = c->param_format == HC_FMT_BF16 ? hc_f32_to_bf16((float)grand())
                                                   : hc_f32_to_f16((float)grand());
    }
    hc_quant_result_free(&r);
    return rc;
}

typedef struct {
    int cases, failed, skipped;
    double worst[2][2]; /* [bf16][moe] */
} tally;

static const char *fname(hc_format_id f) { return f == HC_FMT_PARAM ? "param" : hc_format_get(f)->name; }

/* One (target, dtype, arch, shape): CPU reference on the decoded tensors vs
 * the GPU kernel for each M; N the dense width (0: the sweep's own). */
static void run_case(const char *name, const hc_target *t0, hc_format_id param, int sm, int moe,
                     const int *Ms, int nM, int64_t n_wide, tally *ty)
{
    hc_target t = hc_target_resolve(*t0, param);
    hc_layer_config c = {
        .weight_format = stored_format(t.weight_format), .scale_format = t.scale_format,
        .act_format = t.activation, .param_format = param,
        .scale_type = t.group_size_n > 1 ? HC_SCALE_BLOCK
                      : t.group_size < 0 ? HC_SCALE_TENSOR
                      : t.global_scale   ? HC_SCALE_GROUP_TENSOR
                      : t.group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP,
        .group_size = t.group_size > 0 ? t.group_size : 0, .group_size_n = t.group_size_n,
        .has_zero_point = t.zero_point != ZN, .is_fp_zero_point = t.zero_point == ZF, .sm = sm,
        .version = HC_HUMMING_0_1_19};
    int64_t gs = t.group_size > 0 ? t.group_size : 32, E = moe ? 3 : 1;
    int64_t K = gs >= 64 ? 3 * gs : 5 * (gs > 32 ? gs : 32);
    /* dense N = 288: padded to 320, five 64-column tiles, so blocks of two or four
     * tiles end part-filled (as N = 2880 does) */
    int64_t N = n_wide > 0 ? n_wide : t.group_size_n > 1 ? 2 * t.group_size_n : moe ? 96 : 288;
    if (moe && K % 64) K += 32; /* 160 -> 192 */
    if (getenv("HC_SWEEP_KMUL")) K *= atoi(getenv("HC_SWEEP_KMUL")); /* long k ranges (multi-chunk blocks) */
    hc_layer_meta m;
    hc_error err = {0};
    char label[160];
    snprintf(label, sizeof label, "%-22s %-8s sm%d %s", name, param == HC_FMT_BF16 ? "bf16" : "fp16",
             sm, moe ? "moe3" : "dense");
    if (hc_layer_plan(&c, moe, E, N, K, &m, &err) != HC_OK) {
        printf("SKIP %s: %s\n", label, err.msg);
        ty->skipped++;
        return;
    }
    hc_layer_tensors pre, post;
    memset(&post, 0, sizeof post);
    if (make_pre(&t, &c, moe, E, N, K, &pre, &err) != 0 ||
        hc_layer_transform(&c, &m, &pre, &post, &err) != HC_OK) {
        printf("FAIL %s: setup: %s\n", label, err.msg);
        ty->failed++;
        hc_layer_tensors_free(&pre);
        return;
    }
    int Mmax = Ms[nM - 1];
    float *W = malloc((size_t)(E * m.Np * m.Kp) * sizeof(float));
    float *bias = calloc((size_t)(E * m.Np), sizeof(float));
    float *x = malloc((size_t)Mmax * (size_t)K * sizeof(float));
    float *xq = malloc((size_t)Mmax * (size_t)K * sizeof(float));
    float *yref = malloc((size_t)(E * Mmax * N) * sizeof(float));
    float *yr = malloc((size_t)(E * Mmax * N) * sizeof(float));
    float *yg = malloc((size_t)(E * Mmax * N) * sizeof(float));
    if (!W || !bias || !x || !xq || !yref || !yr || !yg ||
        hc_verify_decode(&c, &m, &post, W, bias, &err) != HC_OK) {
        printf("FAIL %s: decode: %s\n", label, err.msg);
        ty->failed++;
        goto done;
    }
    hc_verify_random_act(x, Mmax, K, (uint64_t)(urand() * 1e9));
    hc_verify_round_act(param, x, (int64_t)Mmax * K);
    memcpy(xq, x, (size_t)Mmax * (size_t)K * sizeof(float));
    hc_verify_quantize_act(c.act_format, xq, Mmax, K);
    hc_verify_gemm(xq, Mmax, K, W, E, N, m.Np, m.Kp, post.bias.data ? bias : NULL, m.Np, yref);
    double bound = hc_gpu_bound(param);
    for (int i = 0; i < nM; i++) {
        int M = Ms[i];
        ty->cases++;
        if (hc_gpu_gemm(&c, &m, &post, x, M, yg, &err) != HC_OK) {
            printf("FAIL %s M=%d: %s\n", label, M, err.msg);
            ty->failed++;
            continue;
        }
        for (int64_t e = 0; e < E; e++) /* the reference's first M rows of each expert */
            memcpy(yr + e * M * N, yref + e * Mmax * N, (size_t)(M * N) * sizeof(float));
        hc_verify_cmp cmp;
        hc_verify_compare(yg, yr, E * M * N, &cmp);
        int ok = cmp.nonfinite == 0 && cmp.rel_err <= bound;
        int bf = param == HC_FMT_BF16;
        if (cmp.rel_err > ty->worst[bf][moe]) ty->worst[bf][moe] = cmp.rel_err;
        printf("%s %s %-9s Np=%lld Kp=%lld N=%lld K=%lld M=%-4d rel %.2e max_abs %.2e nonfinite %lld "
               "(bound %.1e)\n", ok ? "ok  " : "FAIL", label, hc_layout_variant_name(&m),
               (long long)m.Np, (long long)m.Kp, (long long)N, (long long)K, M, cmp.rel_err,
               cmp.max_abs_err, (long long)cmp.nonfinite, bound);
        if (!ok) ty->failed++;
    }
done:
    free(W), free(bias), free(x), free(xq), free(yref), free(yr), free(yg);
    hc_layer_tensors_free(&pre);
    hc_layer_tensors_free(&post);
}

static int check_quantizer(void)
{
    const hc_format_id fm[4] = {HC_FMT_F8E4M3, HC_FMT_F8E5M2, HC_FMT_INT8, HC_FMT_INT4};
    const int64_t M = 64, K = 1000;
    int bad_total = 0;
    float *x = malloc(M * K * sizeof(float)), *a = malloc(M * K * sizeof(float)),
          *b = malloc(M * K * sizeof(float));
    for (int p = 0; p < 2; p++)
        for (int f = 0; f < 4; f++) {
            hc_format_id param = p ? HC_FMT_BF16 : HC_FMT_F16;
            hc_verify_random_act(x, M, K, 77 + f);
            hc_verify_round_act(param, x, M * K);
            memcpy(a, x, M * K * sizeof(float));
            memcpy(b, x, M * K * sizeof(float));
            hc_verify_quantize_act(fm[f], a, M, K);
            hc_error err = {0};
            if (hc_gpu_quantize_act(fm[f], param, b, M, K, &err) != HC_OK) {
                printf("FAIL quantizer %s: %s\n", fname(fm[f]), err.msg);
                bad_total++;
                continue;
            }
            int64_t bad = 0;
            for (int64_t i = 0; i < M * K; i++) bad += a[i] != b[i];
            printf("%s act quantizer %-10s %s: %lld of %lld values differ from the CPU's\n",
                   bad ? "FAIL" : "ok  ", fname(fm[f]), p ? "bf16" : "fp16", (long long)bad,
                   (long long)(M * K));
            bad_total += bad != 0;
        }
    free(x), free(a), free(b);
    return bad_total;
}

/* Token counts to time: HC_BENCH_MS (comma list, any values) or the five of
 * the benchmark. Returns how many were written to ms (at most cap). */
static int bench_ms(int *ms, int cap)
{
    static const int def[5] = {1, 16, 128, 1024, 4096};
    const char *l = getenv("HC_BENCH_MS");
    int n = 0;
    if (l == NULL) {
        for (; n < 5 && n < cap; n++) ms[n] = def[n];
        return n;
    }
    for (const char *p = l; *p && n < cap;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (v > 0) ms[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* HC_BENCH_BIAS=0 / 1: the timed layer has no bias / a bias (default: as
 * make_pre drew it, on about half the layers). Humming is timed with none
 * (bench/bench_ref.py), and a bias costs the epilogue a load. */
static int bench_bias(hc_layer_tensors *pre, int64_t N)
{
    const char *env = getenv("HC_BENCH_BIAS");
    if (env == NULL) return 0;
    hc_tensor_free(&pre->bias);
    memset(&pre->bias, 0, sizeof pre->bias);
    if (atoi(env) == 0) return 0;
    if (hc_tensor_alloc(&pre->bias, HC_DT_F16, 1, &N, NULL) != HC_OK) return -1;
    uint16_t *bb = pre->bias.data;
    for (int64_t i = 0; i < N; i++) bb[i] = hc_f32_to_f16((float)grand());
    return 0;
}

/* Benchmark shapes: our kernel's median time per (format, N, K, M). */
static void bench(int flush)
{
    static const struct { const char *name; hc_target t; } f[] = {
        {"W4A16 uint4 g128", {HC_FMT_UINT4, P_, 128, 0, ZN, 0, P_, RTN}},
        {"W4A8 uint4 g128 fp8", {HC_FMT_UINT4, P_, 128, 0, ZN, 0, HC_FMT_F8E4M3, RTN}},
        {"MXFP4 x fp8", {HC_FMT_F4E2M1, HC_FMT_F8E8M0, 32, 0, ZN, 0, HC_FMT_F8E4M3, RTN}},
        {"W8A8 fp8 channel", {HC_FMT_F8E4M3, P_, 0, 0, ZN, 0, HC_FMT_F8E4M3, RTN}},
    };
    static const int64_t NK[3][2] = {{8192, 8192}, {28672, 8192}, {8192, 28672}};
    int Ms[16];
    const int nms = bench_ms(Ms, 16);
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        for (int s = 0; s < 3; s++) {
            /* the large shapes for W4A16 only unless HC_BENCH_ALL (device time) */
            if (i > 0 && s > 0 && !getenv("HC_BENCH_ALL")) continue;
            if (i > 0 && getenv("HC_BENCH_W4A16")) continue; /* W4A16 only */
            if (getenv("HC_BENCH_SHAPES") && s >= atoi(getenv("HC_BENCH_SHAPES"))) continue;
            if (getenv("HC_BENCH_SHAPE") && s != atoi(getenv("HC_BENCH_SHAPE"))) continue; /* one shape (profiling) */
            if (getenv("HC_BENCH_ONLY") && strstr(f[i].name, getenv("HC_BENCH_ONLY")) == NULL) continue;
            hc_target t = hc_target_resolve(f[i].t, HC_FMT_F16);
            hc_layer_config c = {
                .weight_format = t.weight_format, .scale_format = t.scale_format,
                .act_format = t.activation, .param_format = HC_FMT_F16,
                .scale_type = t.group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP,
                .group_size = t.group_size, .sm = 90, .version = HC_HUMMING_0_1_19};
            int64_t N = NK[s][0], K = NK[s][1];
            hc_layer_meta m;
            hc_error err = {0};
            hc_layer_tensors pre, post;
            memset(&post, 0, sizeof post);
            if (hc_layer_plan(&c, 0, 1, N, K, &m, &err) != HC_OK ||
                make_pre(&t, &c, 0, 1, N, K, &pre, &err) != 0 || bench_bias(&pre, N) != 0 ||
                hc_layer_transform(&c, &m, &pre, &post, &err) != HC_OK) {
                printf("BENCH %s %lldx%lld: setup failed: %s\n", f[i].name, (long long)N,
                       (long long)K, err.msg);
                continue;
            }
            /* HC_BENCH_ITERS: fewer timed calls for slow cells (device time) */
            const int iters = getenv("HC_BENCH_ITERS") ? atoi(getenv("HC_BENCH_ITERS")) : 20;
            for (int j = 0; j < nms; j++) {
                double med = 0, first = 0;
                if (hc_gpu_time(&c, &m, &post, Ms[j], iters > 0 ? iters : 20, flush, &med, &first, &err) != HC_OK) {
                    printf("BENCH %s: %s\n", f[i].name, err.msg);
                    continue;
                }
                double tflops = 2.0 * Ms[j] * N * K / (med * 1e-3) / 1e12;
                printf("BENCH ours %-22s N=%-6lld K=%-6lld M=%-5d median %.4f ms (%.1f TFLOP/s), "
                       "first %.3f ms\n", f[i].name, (long long)N, (long long)K, Ms[j], med,
                       tflops, first);
            }
            hc_layer_tensors_free(&pre);
            hc_layer_tensors_free(&post);
        }
}

int main(int argc, char **argv)
{
    int quick = 0, flush = 0, do_bench = 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines reach a log even if a timeout kills the run */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--flush") && i + 1 < argc) flush = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bench")) do_bench = 1;
    }
    char why[256];
    int sm = hc_gpu_available(why, sizeof why);
    if (sm <= 0) {
        printf("SKIP[gpu]: GPU sweep skipped: %s\n", why);
        return 77;
    }
    printf("GPU sm%d, kernels: the fast families where they apply (docs/kernels.md, \"Files\": "
           "small-M, wgmma and mma.sync), else the float32 verification GEMM\n", sm);
    if (do_bench) {
        bench(flush);
        return 0;
    }
    tally ty;
    memset(&ty, 0, sizeof ty);
    int qbad = check_quantizer();
    static const int Ms_full[5] = {1, 7, 16, 128, 1000}, Ms_moe[3] = {7, 16, 100};
    const int np = hc_preset_count(), ne = (int)(sizeof extra / sizeof extra[0]);
    for (int i = 0; i < np + ne; i++) {
        const char *name = i < np ? hc_preset_at(i)->name : extra[i - np].name;
        const hc_target *t = i < np ? &hc_preset_at(i)->target : &extra[i - np].t;
        if (getenv("HC_SWEEP_ONLY") && strstr(name, getenv("HC_SWEEP_ONLY")) == NULL) continue; /* by name */
        for (int p = 0; p < 2; p++)
            for (int a = 0; a < 2; a++) {
                hc_format_id param = p ? HC_FMT_BF16 : HC_FMT_F16;
                hc_format_id act = t->activation;
                int fp8 = act == HC_FMT_F8E4M3 || act == HC_FMT_F8E5M2;
                int sm_t = a ? 90 : fp8 ? 89 : 80; /* fp8 activations need sm89+ */
                /* all M on fp16/sm80 and sm90 (where the wgmma families take M > 16) */
                int full = !quick && (p == a || a == 1);
                run_case(name, t, param, sm_t, 0, full ? Ms_full : Ms_full + 2, full ? 5 : 1, 0, &ty);
                if (!quick || (p == 0 && a == 1))
                    run_case(name, t, param, sm_t, 1, Ms_moe, quick ? 2 : 3, 0, &ty);
            }
    }
    /* a wide W4A8 layer: more 128-column tiles (160, 320 at M = 300) than an
     * H200 has SMs (132), so hck_wg8pk.cu runs its stream-K schedule */
    static const hc_target wide = {HC_FMT_UINT4, P_, 128, 0, ZN, 0, HC_FMT_F8E4M3, RTN};
    static const int Ms_wide[4] = {128, 200, 256, 300};
    if (!quick && (!getenv("HC_SWEEP_ONLY") || strstr("w4a8 wide", getenv("HC_SWEEP_ONLY"))))
        for (int p = 0; p < 2; p++)
            run_case("w4a8 wide", &wide, p ? HC_FMT_BF16 : HC_FMT_F16, 90, 0, Ms_wide, 4, 20480, &ty);
    printf("SUMMARY: %d GEMM cases, %d failed, %d combinations refused by the plan; "
           "act quantizer mismatching sets %d; worst rel err fp16 dense %.2e moe %.2e, "
           "bf16 dense %.2e moe %.2e (bounds %.1e / %.1e)\n",
           ty.cases, ty.failed, ty.skipped, qbad, ty.worst[0][0], ty.worst[0][1], ty.worst[1][0],
           ty.worst[1][1], hc_gpu_bound(HC_FMT_F16), hc_gpu_bound(HC_FMT_BF16));
    return ty.failed || qbad ? 1 : 0;
}
