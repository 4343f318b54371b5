/* hc_layout.h - from Humming's row-packed form to the kernel-ready tensors.
 *
 * Implements sections 4 and 5 of shared/docs/humming-layout-spec.md on the CPU:
 * kernel-level decisions (5.2), padding (5.1), fused e8m0 (5.3), weight repack
 * into the tile layout (4), scale / zero-point / bias permutations (5.4-5.6)
 * and integer weight scales (5.7). Dense layers (E = 0 in tensors: no expert
 * dim) and MoE expert stacks (leading E dim) alike. */
#ifndef HC_LAYOUT_H
#define HC_LAYOUT_H

#include <stdint.h>

#include "hc_error.h"
#include "hc_format.h"
#include "hc_tensor.h"

typedef enum {
    HC_SCALE_CHANNEL,      /* (E?, N, 1) */
    HC_SCALE_GROUP,        /* (E?, N, K/gs) */
    HC_SCALE_BLOCK,        /* (E?, N/gn, K/gk) float32 */
    HC_SCALE_TENSOR,       /* global scale only */
    HC_SCALE_GROUP_TENSOR  /* group scales and a float32 global scale */
} hc_scale_type;

/* What the checkpoint says about one layer, plus the target. */
typedef struct {
    hc_format_id weight_format;  /* as stored; signed ints are treated as unsigned */
    hc_format_id scale_format;   /* F16, BF16, F8E4M3, F8E5M2, F8E8M0, F32 */
    hc_format_id act_format;     /* F16, BF16, F8E4M3, F8E5M2, INT8, INT4 */
    hc_format_id param_format;   /* layer / output dtype: F16 or BF16 */
    hc_scale_type scale_type;
    int64_t group_size;          /* 0: channel-wise */
    int64_t group_size_n;        /* block scales only, else 0 */
    int has_zero_point;
    int is_fp_zero_point;
    int sm;                      /* target arch: 75, 80, 86, 89, 90, 100, 120 */
    int humming_bug_compat;      /* 0 (default): write what makes Humming's kernel
                                    compute the right values (true straddling zero
                                    points in the int->fp transform, two's-complement
                                    nibbles for W4A4). 1: reproduce Humming's bytes
                                    exactly, bugs included (spec 8 items 3 and 4). */
} hc_layer_config;

/* Kernel-level decisions and shapes for one layer (spec 5.2, 4.1). */
typedef struct {
    int64_t E;                   /* experts; 1 for a dense layer */
    int is_moe;                  /* tensors carry a leading E dim */
    int64_t N, K;                /* unpadded */
    int64_t Np, Kp;              /* padded */
    int weight_bits, act_bits;
    int kernel_weight_signed;    /* int weight with act bits == weight bits */
    int use_wgmma;
    int transposed_mini_block;
    int use_fused_e8m0;
    int use_int_weight_scale;
    int to_apply_on_c;
    int preprocess_int2fp;
    int zp_in_repack;            /* integer zero point used by the int->fp transform */
    int int8_byte_flip;
    int int4_nibble_flip;        /* W4A4 fix: offset-binary -> two's complement
                                    nibbles (never with humming_bug_compat) */
    int64_t group_size;          /* along K; Kp for channel-wise */
    int64_t group_size_n;        /* block scales only, else 0 */
    int64_t G;                   /* scale groups along Kp (1 for channel) */
    hc_scale_type scale_type;    /* after 5.2 adjustments */
    hc_format_id scale_format;   /* after 5.2 adjustments (int weight scale: param) */
} hc_layer_meta;

/* The tensors of one layer. Absent tensors have data == NULL. */
typedef struct {
    hc_tensor weight, weight_scale, zero_point, global_scale, bias;
} hc_layer_tensors;

/* Validates cfg for the given shapes and decides the kernel-level options.
 * N, K are the unpadded sizes, E the expert count (is_moe: tensors have an
 * expert dim). Pads N to a multiple of 64 (and of gn for block scales) and K
 * to a multiple of lcm(512/a, group size, 64 for MoE stacks). cfg->sm picks the
 * tile variant (WGMMA transposed mini-blocks iff sm / 10 == 9). Fails with HC_ERR_UNSUPPORTED (message saying what is
 * supported) for combinations the kernels do not support. */
hc_status hc_layer_plan(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                        int64_t K, hc_layer_meta *meta, hc_error *err);

/* Produces the kernel-ready tensors from the row-packed ones. `pre` is only
 * read; `post` receives newly allocated owned tensors (free each with
 * hc_tensor_free, or hc_layer_tensors_free). Shapes/dtypes of `pre` are
 * checked against meta and reported with the tensor's role on mismatch. */
hc_status hc_layer_transform(const hc_layer_config *cfg, const hc_layer_meta *meta,
                             const hc_layer_tensors *pre, hc_layer_tensors *post,
                             hc_error *err);

/* Frees every owned tensor in t. */
void hc_layer_tensors_free(hc_layer_tensors *t);

/* "normal" or "transposed" (mini-block variant) / "fused_e8m0". */
const char *hc_layout_variant_name(const hc_layer_meta *meta);
/* Name of a scale type as in Humming's schema: "channel", "group", ... */
const char *hc_scale_type_name(hc_scale_type t);

#endif
