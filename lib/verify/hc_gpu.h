/* hc_gpu.h - the GPU kernels (build/libhc_kernels.so), loaded at run time.
 *
 * The CLI and library link no CUDA: the kernel library is opened with dlopen
 * on first use, from $HC_KERNELS_LIB, else next to the executable (or one or
 * two folders up), else through the loader's search path. Without it, a driver or
 * a GPU of sm80+, hc_gpu_available() returns 0 and says why. docs/kernels.md. */
#ifndef HC_GPU_H
#define HC_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "hc_error.h"
#include "hc_layout.h"

/* Compute capability of the GPU the kernels run on (e.g. 90), or 0 with the
 * reason in why (may be NULL). */
int hc_gpu_available(char *why, size_t whylen);

/* y (E, M, N) float32 = x (M, K) . dequant(W_e)^T (+ bias), computed by the
 * GPU kernel straight from the post tensors of a humming-kernels 0.1.19 layer
 * (tiled, packed-K or flat; every token through every expert for an MoE
 * stack; the kernel itself takes tokens grouped by expert). x holds values of
 * the layer dtype; 8/4-bit activations are quantized per token on the GPU.
 * Values are the kernel's fp16/bf16 outputs; unwritten outputs stay NaN (the
 * output is poisoned first). Other versions: HC_ERR_UNSUPPORTED. */
hc_status hc_gpu_gemm(const hc_layer_config *cfg, const hc_layer_meta *meta,
                      const hc_layer_tensors *post, const float *x, int64_t M, float *y,
                      hc_error *err);

/* Per-token activation quantization on the GPU; x (M, K) values of the layer
 * dtype become the dequantized quantized values (codes * scale), in place, as
 * hc_verify_quantize_act does on the CPU. */
hc_status hc_gpu_quantize_act(hc_format_id act, hc_format_id param, float *x, int64_t M,
                              int64_t K, hc_error *err);

/* Median time (ms) of the dense GEMM with M random tokens, and the first
 * call's time. flush: 0 none, 1 zero 256 MB before each timed call (L2
 * dirty), 2 read 256 MB (L2 clean). */
hc_status hc_gpu_time(const hc_layer_config *cfg, const hc_layer_meta *meta,
                      const hc_layer_tensors *post, int64_t M, int iters, int flush,
                      double *median_ms, double *first_ms, hc_error *err);

struct hck_desc;
/* The kernels' descriptor (kernels/hc_kernels.h) of a humming-kernels 0.1.19
 * layer: layout, code kind, format ids, and pointers to the post tensors,
 * which d borrows. */
void hc_gpu_describe(const hc_layer_config *cfg, const hc_layer_meta *meta,
                     const hc_layer_tensors *post, struct hck_desc *d);

/* Relative error bound of the GPU GEMM against the CPU reference GEMM on the
 * decoded weights (same activations): output rounding plus the 16-bit
 * rounding of scaled weights in the mma.sync family (docs/kernels.md). */
double hc_gpu_bound(hc_format_id param_format);

#endif
