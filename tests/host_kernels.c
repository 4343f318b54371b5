/* host_kernels.c - a host (CPU) stand-in for build/libhc_kernels.so with the
 * same C ABI (kernels/hc_kernels.h), so that the tests exercise `--verify gpu`
 * (lib/verify/hc_gpu.c's loading, the verifier's GPU thread, the comparison
 * and its errors) on a machine without a GPU. hck_gemm_host computes
 * y = x . dequant(W)^T (+ bias) with the kernels' own element mapping
 * (hck_decode) in float32, rounded once to the layer dtype; 16-bit
 * activations only. HC_HOST_KERNELS_FAIL=1 makes every GEMM fail with a
 * message. Test code: never built into the product. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_kernels.h"

struct hck_layer {
    hck_desc d; /* borrows the caller's host tensors until destroyed */
};

int hck_abi_version(void) { return HCK_ABI_VERSION; }

int hck_device_sm(char *msg, size_t msglen)
{
    (void)msg, (void)msglen;
    return 90;
}

int hck_layer_create(const hck_desc *d, hck_layer **out, char *msg, size_t msglen)
{
    *out = malloc(sizeof **out);
    if (*out == NULL) {
        snprintf(msg, msglen, "host kernels: out of memory");
        return -1;
    }
    (*out)->d = *d;
    return 0;
}

void hck_layer_destroy(hck_layer *L) { free(L); }

/* float -> fp16 / bf16 bits, round to nearest even (finite values) */
static uint16_t to_half(float v, int bf16)
{
    if (bf16) {
        uint32_t u;
        memcpy(&u, &v, 4);
        return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    _Float16 h = (_Float16)v;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
}

/* the decoded weights (E, Np, Kp) of the layer, or NULL */
static float *decode_all(const hck_desc *d)
{
    const hck_ptrs p = {d->weight, d->scale, d->zero, d->global, d->bias};
    float *W = malloc((size_t)(d->E * d->Np * d->Kp) * sizeof *W);
    if (W == NULL) return NULL;
    for (int e = 0; e < d->E; e++)
        for (int64_t n0 = 0; n0 < d->Np; n0 += HCK_BLOCK_N)
            for (int64_t k0 = 0; k0 < d->Kp; k0 += HCK_BLOCK_K)
                for (int t = 0; t < HCK_THREADS; t++) {
                    float val[HCK_LANE_VALUES];
                    int at[HCK_LANE_VALUES];
                    hck_decode(d, &p, e, n0, k0, t, val, at);
                    for (int i = 0; i < HCK_LANE_VALUES; i++)
                        W[((int64_t)e * d->Np + n0 + at[i] % HCK_BLOCK_N) * d->Kp + k0 + at[i] / HCK_BLOCK_N] =
                            val[i];
                }
    return W;
}

int hck_gemm_host(hck_layer *L, const uint16_t *x, int64_t rows, const int64_t *offsets, uint16_t *y,
                  char *msg, size_t msglen)
{
    const hck_desc *d = &L->d;
    const char *fail = getenv("HC_HOST_KERNELS_FAIL");
    if (fail && strcmp(fail, "1") == 0) {
        snprintf(msg, msglen, "host kernels: GEMM failed as asked (HC_HOST_KERNELS_FAIL=1)");
        return -1;
    }
    if (d->act_quant != HCK_A_NONE) {
        snprintf(msg, msglen, "host kernels: quantized activations are not emulated");
        return -1;
    }
    float *W = decode_all(d);
    if (W == NULL) {
        snprintf(msg, msglen, "host kernels: out of memory");
        return -1;
    }
    const hck_ptrs p = {d->weight, d->scale, d->zero, d->global, d->bias};
    for (int e = 0; e < d->E; e++) {
        const int64_t r0 = offsets ? offsets[e] : (e == 0 ? 0 : rows), r1 = offsets ? offsets[e + 1] : rows;
        for (int64_t m = r0; m < r1; m++)
            for (int64_t n = 0; n < d->N; n++) {
                const float *w = W + ((int64_t)e * d->Np + n) * d->Kp;
                float s = 0.0f;
                for (int64_t k = 0; k < d->K; k++) s += hck_half(x[m * d->K + k], d->out_bf16) * w[k];
                y[m * d->N + n] = to_half(s + hck_bias(d, &p, e, n), d->out_bf16);
            }
    }
    free(W);
    return 0;
}

int hck_quantize_host(int act_quant, int in_bf16, const uint16_t *x, int64_t rows, int64_t K, float *codes,
                      float *scales, char *msg, size_t msglen)
{
    (void)act_quant, (void)in_bf16, (void)x, (void)rows, (void)K, (void)codes, (void)scales;
    snprintf(msg, msglen, "host kernels: activation quantization is not emulated");
    return -1;
}

int hck_gemm_time(hck_layer *L, int64_t rows, int iters, int flush, float *median_ms, float *first_ms,
                  char *msg, size_t msglen)
{
    (void)L, (void)rows, (void)iters, (void)flush, (void)median_ms, (void)first_ms;
    snprintf(msg, msglen, "host kernels: no timing");
    return -1;
}
