/* hc_gpu.c - loads build/libhc_kernels.so with dlopen and maps a layer's
 * humming-kernels 0.1.19 plan and post tensors onto the kernels' descriptor
 * (kernels/hc_kernels.h): layout, code kind and format ids, no tables. */
#include "hc_gpu.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/hc_kernels.h"
#include "hc_format.h"
#include "hc_fs.h"

typedef struct {
    void *lib;
    int sm;
    char why[256];
    int (*abi)(void);
    int (*device_sm)(char *, size_t);
    int (*create)(const hck_desc *, hck_layer **, char *, size_t);
    void (*destroy)(hck_layer *);
    int (*gemm)(hck_layer *, const uint16_t *, int64_t, const int64_t *, uint16_t *, char *, size_t);
    int (*quant)(int, int, const uint16_t *, int64_t, int64_t, float *, float *, char *, size_t);
    int (*time)(hck_layer *, int64_t, int, int, float *, float *, char *, size_t);
} kernels;

static kernels K;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* dlopen of a library file, checked to be a regular file first (dlopen of a
 * FIFO waits forever for a writer) and loaded through the descriptor that
 * was checked; NULL with the reason in why. */
static void *try_open(const char *path, char *why, size_t why_len)
{
    int fd;
    hc_error e;
    if (hc_fs_open_regular(path, 0, &fd, NULL, &e) != HC_OK) {
        snprintf(why, why_len, "%.180s", e.msg); /* why[200] below */
        return NULL;
    }
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
    void *lib = dlopen(access(self, R_OK) == 0 ? self : path, RTLD_NOW | RTLD_LOCAL);
    const char *d = lib ? NULL : dlerror();
    if (lib == NULL) snprintf(why, why_len, "%s: %s", path, d ? d : "cannot be loaded");
    close(fd);
    return lib;
}

static void load(void)
{
    char exe[PATH_MAX], path[PATH_MAX + 64];
    const char *env = getenv("HC_KERNELS_LIB");
    char why[200];
    if (env && env[0]) { /* asked for: that library or no GPU, never another one */
        K.lib = try_open(env, why, sizeof why);
        if (K.lib == NULL) {
            snprintf(K.why, sizeof K.why, "HC_KERNELS_LIB=%s cannot be loaded: %s", env, why);
            return;
        }
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (K.lib == NULL && n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            static const char *const up[3] = {"", "/..", "/../.."}; /* build/, build/tests/... */
            for (int i = 0; i < 3 && K.lib == NULL; i++) {
                snprintf(path, sizeof path, "%s%s/libhc_kernels.so", exe, up[i]);
                if (access(path, F_OK) == 0) K.lib = try_open(path, why, sizeof why);
            }
        }
    }
    if (K.lib == NULL) /* the loader's search path: cannot be checked first */
        K.lib = dlopen("libhc_kernels.so", RTLD_NOW | RTLD_LOCAL);
    if (K.lib == NULL) {
        snprintf(K.why, sizeof K.why, "no GPU kernels: libhc_kernels.so not found (built "
                 "without nvcc?)");
        return;
    }
    *(void **)&K.abi = dlsym(K.lib, "hck_abi_version");
    *(void **)&K.device_sm = dlsym(K.lib, "hck_device_sm");
    *(void **)&K.create = dlsym(K.lib, "hck_layer_create");
    *(void **)&K.destroy = dlsym(K.lib, "hck_layer_destroy");
    *(void **)&K.gemm = dlsym(K.lib, "hck_gemm_host");
    *(void **)&K.quant = dlsym(K.lib, "hck_quantize_host");
    *(void **)&K.time = dlsym(K.lib, "hck_gemm_time");
    if (!K.abi || !K.device_sm || !K.create || !K.destroy || !K.gemm || !K.quant || !K.time ||
        K.abi() != HCK_ABI_VERSION) {
        snprintf(K.why, sizeof K.why, "libhc_kernels.so: wrong ABI version or missing symbols");
        return;
    }
    K.sm = K.device_sm(K.why, sizeof K.why);
}

int hc_gpu_available(char *why, size_t whylen)
{
    pthread_once(&once, load);
    if (K.sm <= 0 && why && whylen) snprintf(why, whylen, "%s", K.why[0] ? K.why : "no GPU");
    return K.sm;
}

double hc_gpu_bound(hc_format_id param_format)
{
    /* two output roundings plus the 16-bit rounding of value x scale in the
     * uint4 x 16-bit families, mma.sync and wgmma (the verification GEMM's
     * float32 products are exact), relative; docs/kernels.md */
    double u_out = param_format == HC_FMT_BF16 ? 0x1p-8 : 0x1p-11;
    return 2.0 * u_out + 2.0 * 0x1p-11;
}

static int act_quant_of(hc_format_id f)
{
    switch (f) {
    case HC_FMT_F8E4M3: return HCK_A_E4M3;
    case HC_FMT_F8E5M2: return HCK_A_E5M2;
    case HC_FMT_INT8: return HCK_A_INT8;
    case HC_FMT_INT4: return HCK_A_INT4;
    default: return HCK_A_NONE;
    }
}

/* The weight code kind of the layer (hc_kernels.h HCK_W_*). */
static int weight_kind(const hc_layer_config *cfg, const hc_layer_meta *m, const hc_layer_tensors *post)
{
    if (post->weight_e0m) return HCK_W_E0M;
    if (hc_format_get(cfg->weight_format)->kind == HC_KIND_FLOAT) return HCK_W_FLOAT;
    if (m->use_flat_weight || m->kernel_weight_signed) return HCK_W_SIGNED;
    return m->preprocess_int2fp ? HCK_W_INT2FP : HCK_W_UINT;
}

static int scale_kind(const hc_layer_meta *m, const hc_tensor *s)
{
    if (m->scale_type == HC_SCALE_TENSOR || s->data == NULL) return HCK_S_NONE;
    if (m->scale_type == HC_SCALE_BLOCK) return HCK_S_BLOCK;
    if (m->use_fused_e8m0) return HCK_S_EXP;
    if (m->e8m0_as_e5m0) return HCK_S_E5M0;
    if (s->dtype == HC_DT_F16) return HCK_S_F16;
    if (s->dtype == HC_DT_BF16) return HCK_S_BF16;
    return HCK_S_BYTE;
}

void hc_gpu_describe(const hc_layer_config *cfg, const hc_layer_meta *m,
                     const hc_layer_tensors *post, struct hck_desc *d)
{
    memset(d, 0, sizeof *d);
    d->E = (int)m->E;
    d->N = m->N, d->K = m->K, d->Np = m->Np, d->Kp = m->Kp, d->G = m->G;
    d->group_size = m->group_size;
    d->group_size_n = m->group_size_n;
    d->wbits = m->weight_bits;
    d->abits = m->act_bits;
    d->layout = m->use_flat_weight ? HCK_L_FLAT : m->use_packed_k_layout ? HCK_L_PACKED_K : HCK_L_TILED;
    d->transposed = m->transposed_mini_block;
    d->native_dequant = m->use_native_dequant;
    d->wkind = weight_kind(cfg, m, post);
    d->weight_format = (int)cfg->weight_format;
    d->zp_in_repack = m->zp_in_repack;
    const hc_tensor *s = &post->weight_scale;
    d->scale_kind = scale_kind(m, s);
    d->scale_perm = m->to_apply_on_c ? 32 : 64;
    d->scale_format = (int)m->scale_format;
    const hc_tensor *z = &post->zero_point;
    d->zp_kind = z->data == NULL ? HCK_Z_NONE
                 : z->dtype == HC_DT_I32 ? HCK_Z_INT
                 : z->dtype == HC_DT_BF16 ? HCK_Z_BF16 : HCK_Z_F16;
    d->bias_kind = post->bias.data == NULL ? 0 : post->bias.dtype == HC_DT_BF16 ? 2 : 1;
    d->global_channel = post->global_scale.data && m->scale2_channel;
    d->global_count = post->global_scale.data && !m->scale2_channel ? (int)post->global_scale.shape[0] : 0;
    d->split_sign = m->fused_split_sign;
    d->scale_exp_add = m->use_fused_e8m0 && cfg->act_format == HC_FMT_INT8;
    d->out_bf16 = cfg->param_format == HC_FMT_BF16;
    d->act_quant = act_quant_of(cfg->act_format);
    d->weight = post->weight.data, d->weight_bytes = post->weight.nbytes;
    d->scale = s->data, d->scale_bytes = s->data ? s->nbytes : 0;
    d->zero = z->data, d->zero_bytes = z->data ? z->nbytes : 0;
    d->global = post->global_scale.data;
    d->global_bytes = post->global_scale.data ? post->global_scale.nbytes : 0;
    d->bias = post->bias.data, d->bias_bytes = post->bias.data ? post->bias.nbytes : 0;
}

static uint16_t to16(hc_format_id param, float v)
{
    return param == HC_FMT_BF16 ? hc_f32_to_bf16(v) : hc_f32_to_f16(v);
}

static float from16(hc_format_id param, uint16_t h)
{
    return param == HC_FMT_BF16 ? hc_bf16_to_f32(h) : hc_f16_to_f32(h);
}

static hc_status create(const hc_layer_config *cfg, const hc_layer_meta *meta,
                        const hc_layer_tensors *post, hck_layer **L, hc_error *err)
{
    char why[256];
    if (hc_gpu_available(why, sizeof why) <= 0) HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s", why);
    if (meta->version != HC_HUMMING_0_1_19)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "GPU: the kernels run humming-kernels 0.1.19 layouts only");
    hck_desc d;
    hc_gpu_describe(cfg, meta, post, &d);
    int rc = K.create(&d, L, why, sizeof why);
    if (rc != 0) HC_FAIL(err, HC_ERR_IO, "GPU: %s", why);
    return HC_OK;
}

hc_status hc_gpu_gemm(const hc_layer_config *cfg, const hc_layer_meta *meta,
                      const hc_layer_tensors *post, const float *x, int64_t M, float *y,
                      hc_error *err)
{
    hck_layer *L = NULL;
    HC_TRY(create(cfg, meta, post, &L, err));
    int64_t E = meta->E, N = meta->N, Kd = meta->K, rows = E * M;
    uint16_t *xh = malloc((size_t)(rows * Kd) * 2 + 2), *yh = malloc((size_t)(rows * N) * 2 + 2);
    int64_t *off = malloc((size_t)(E + 1) * sizeof *off);
    hc_status st = HC_OK;
    char why[256];
    if (!xh || !yh || !off) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory (GPU GEMM)");
    for (int64_t e = 0; st == HC_OK && e < E; e++) /* tokens grouped by expert */
        for (int64_t i = 0; i < M * Kd; i++) xh[e * M * Kd + i] = to16(cfg->param_format, x[i]);
    for (int64_t e = 0; st == HC_OK && e <= E; e++) off[e] = e * M;
    if (st == HC_OK && K.gemm(L, xh, rows, off, yh, why, sizeof why) != 0)
        st = hc_error_set(err, HC_ERR_IO, "GPU GEMM: %s", why);
    for (int64_t i = 0; st == HC_OK && i < rows * N; i++) y[i] = from16(cfg->param_format, yh[i]);
    free(xh);
    free(yh);
    free(off);
    K.destroy(L);
    return st;
}

hc_status hc_gpu_quantize_act(hc_format_id act, hc_format_id param, float *x, int64_t M,
                              int64_t Kd, hc_error *err)
{
    char why[256];
    if (hc_gpu_available(why, sizeof why) <= 0) HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s", why);
    int q = act_quant_of(act);
    if (q == HCK_A_NONE) return HC_OK;
    uint16_t *xh = malloc((size_t)(M * Kd) * 2 + 2);
    float *codes = malloc((size_t)(M * Kd) * 4 + 4), *sc = malloc((size_t)M * 4 + 4);
    hc_status st = HC_OK;
    if (!xh || !codes || !sc) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == HC_OK && i < M * Kd; i++) xh[i] = to16(param, x[i]);
    if (st == HC_OK && K.quant(q, param == HC_FMT_BF16, xh, M, Kd, codes, sc, why, sizeof why))
        st = hc_error_set(err, HC_ERR_IO, "GPU quantize: %s", why);
    for (int64_t i = 0; st == HC_OK && i < M * Kd; i++) x[i] = codes[i] * sc[i / Kd];
    free(xh);
    free(codes);
    free(sc);
    return st;
}

hc_status hc_gpu_time(const hc_layer_config *cfg, const hc_layer_meta *meta,
                      const hc_layer_tensors *post, int64_t M, int iters, int flush,
                      double *median_ms, double *first_ms, hc_error *err)
{
    hck_layer *L = NULL;
    HC_TRY(create(cfg, meta, post, &L, err));
    float med = 0, first = 0;
    char why[256];
    int rc = K.time(L, M, iters, flush, &med, &first, why, sizeof why);
    K.destroy(L);
    if (rc != 0) HC_FAIL(err, HC_ERR_IO, "GPU timing: %s", why);
    *median_ms = med;
    *first_ms = first;
    return HC_OK;
}
