/* hc_layout.h - from Humming's row-packed form to the kernel-ready tensors.
 *
 * Two plans (docs/layout.md):
 * - humming-kernels 0.1.19, the Humming vLLM 0.33 runs: its LayerConfig
 *   decisions, vLLM's padding (N to 256, K to 128) and the tensors vLLM holds
 *   after load (tiled, packed-K or flat weights). `--layout tiles` writes it.
 * - the canonical checkpoint: what a row-packed layer must satisfy for vLLM
 *   0.33 to load it and humming-kernels 0.1.19 to transform it at load on
 *   the target GPU. Validation only: no tiles are built from it.
 * Dense layers (E = 0 in tensors: no expert dim) and MoE expert stacks
 * (leading E dim) alike. */
#ifndef HC_LAYOUT_H
#define HC_LAYOUT_H

#include <stdint.h>

#include "hc_bufpool.h"
#include "hc_error.h"
#include "hc_format.h"
#include "hc_tensor.h"

/* Which plan a layer config follows. */
typedef enum {
    HC_HUMMING_0_1_19,    /* humming-kernels 0.1.19 as vLLM 0.33 loads it (tiles) */
    HC_HUMMING_CANONICAL  /* the canonical checkpoint vLLM 0.33 transforms itself: no tiles */
} hc_humming_version;

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
    int scale_2_channel;         /* the second scale is per output row: (E?, N) in the
                                    layer dtype (weight_scale_2_type "channel", with
                                    group scales only); else per tensor (E?,) F32 */
    int sm;                      /* target arch: 75, 80, 86, 89, 90, 100, 120 */
    hc_humming_version version;
} hc_layer_config;

/* 0.1.19 weight_scale layout of group scales (transform_humming_weight_scale). */
typedef enum {
    HC_SCALES_PERM = 0,  /* (E?, G, Np) permuted in chunks of 64 / 32 */
    HC_SCALES_UMMA = 1,  /* sm100 block-scaled: int32 (E?, G/4, Np), 4 groups per word */
    HC_SCALES_MXMMA = 2  /* sm120 block-scaled, one scale per 32 k: int32 (E?, G/2, Np/2) */
} hc_scale_layout;

/* Kernel-level decisions and shapes for one layer: 0.1.19's LayerConfig
 * properties. A canonical plan sets only the shapes (unpadded: Np = N,
 * Kp = K), the bits, the groups, the scale type and format and
 * scale2_channel. */
typedef struct {
    int64_t E;                   /* experts; 1 for a dense layer */
    int is_moe;                  /* tensors carry a leading E dim */
    int64_t N, K;                /* unpadded */
    int64_t Np, Kp;              /* padded */
    int weight_bits, act_bits;
    int kernel_weight_signed;    /* int weight with act bits == weight bits */
    int use_wgmma;               /* sm90's default MMA (not with int4 activations) */
    int transposed_mini_block;   /* the tiles' transposed mini-block order (packed-K) */
    int use_fused_e8m0;          /* use_fused_e8m0_scale: MXFP4 x fp8 / int8 (hc_layout_e8m0.c) */
    int use_int_weight_scale;    /* never in 0.1.19 for the layers we plan */
    int to_apply_on_c;           /* should_apply_bs_on_c: channel scales */
    int preprocess_int2fp;
    int zp_in_repack;            /* integer zero point used by the int->fp transform */
    int int8_byte_flip;
    int int4_nibble_flip;        /* W4A4: offset-binary -> two's complement nibbles */
    int64_t group_size;          /* along K; Kp for channel-wise */
    int64_t group_size_n;        /* block scales only, else 0 */
    int64_t G;                   /* scale groups along Kp (1 for channel) */
    hc_scale_type scale_type;
    hc_format_id scale_format;
    hc_humming_version version;  /* cfg->version */
    int use_flat_weight;         /* (E?, Np, Kp*b/32) row-packed, 64 x 128-bit chunks */
    int use_ldmatrix_dequant;    /* flat int4 x int8 / int2 x int4: top bit of each code flipped */
    int use_packed_k_layout;     /* sm90, 8-bit activations, even b, group 128: P = 64 rows */
    int use_native_dequant;      /* fp8 weights x fp16 on sm89: no slot interleave */
    int e8m0_as_e5m0;            /* e8m0 scales with fp16 output: re-biased bytes */
    int fused_split_sign;        /* fused e8m0 x fp8 (interleave mode 2): each tile slot
                                    holds the magnitude of the code in slot order and the
                                    sign of the interleaved one */
    int scale2_channel;          /* the output's second scale is per channel: (E?, Np)
                                    in the layer dtype, perm32 as a bias (canonical:
                                    (E?, N) unpermuted). Set by the plan from
                                    cfg->scale_2_channel and for fused e8m0 x int8;
                                    the one flag every consumer of outputs reads */
    int use_umma;                /* sm100 LayerConfig.is_umma_supported */
    int use_raw_weight;          /* sm100 UMMA: padded row-packed words (E?, Np, Kp*b/32) */
    int use_block_scaled_mma;    /* sm100 UMMA / sm120 MXMMA with block-scaled operands */
    hc_scale_layout scale_layout; /* group scales of block-scaled MMA */
} hc_layer_meta;

/* The tensors of one layer. Absent tensors have data == NULL. */
typedef struct {
    hc_tensor weight, weight_scale, zero_point, bias;
    hc_tensor global_scale;  /* the second scale: (E,) / (1,) F32, or per channel
                                (pre: cfg->scale_2_channel) (E?, N) in the layer
                                dtype; post: meta->scale2_channel, (E?, Np)
                                permuted as a bias */
    int weight_e0m;  /* post, 0.1.19: the symmetric integer codes were recoded as
                        sign-magnitude float{b}e0m{b-1} (hc_layer_e0m_applies) */
} hc_layer_tensors;

/* Validates cfg for the given shapes and decides the kernel-level options.
 * N, K are the unpadded sizes, E the expert count (is_moe: tensors have an
 * expert dim). 0.1.19: vLLM's padding (N to 256, K to 128) and the
 * LayerConfig decisions of humming-kernels 0.1.19 for sm75-sm90, sm100 and
 * sm120 (fused e8m0 included). Canonical:
 * the checks of humming-kernels 0.1.19's schema and LayerConfig for cfg->sm
 * (hc_layout_canonical.c), no padding and no kernel decisions. Fails with
 * HC_ERR_UNSUPPORTED (message saying what is supported) for combinations the
 * plan does not support or that are not implemented. */
hc_status hc_layer_plan(const hc_layer_config *cfg, int is_moe, int64_t E, int64_t N,
                        int64_t K, hc_layer_meta *meta, hc_error *err);

/* Produces the 0.1.19 kernel-ready tensors from the row-packed ones. `pre`
 * is only read; `post` receives newly allocated owned tensors (free each with
 * hc_tensor_free, or hc_layer_tensors_free). Shapes/dtypes of `pre` are
 * checked against meta and reported with the tensor's role on mismatch; a
 * canonical plan is refused (HC_ERR_ARG: it has no tiles). */
hc_status hc_layer_transform(const hc_layer_config *cfg, const hc_layer_meta *meta,
                             const hc_layer_tensors *pre, hc_layer_tensors *post,
                             hc_error *err);
/* hc_layer_transform with the tiled weight's buffer taken from pool
 * (hc_bufpool_take; NULL: malloc): the caller may give post->weight's data
 * back with hc_bufpool_put once written. */
hc_status hc_layer_transform_pooled(const hc_layer_config *cfg, const hc_layer_meta *meta,
                                    const hc_layer_tensors *pre, hc_layer_tensors *post,
                                    hc_bufpool *pool, hc_error *err);

/* 0.1.19: Humming's LayerConfig of the planned layer as the JSON object
 * `humming.config.LayerConfig(**obj)` accepts (LayerConfig.to_str()'s keys and
 * values), malloc'ed compact text; NULL when out of memory or for a canonical
 * plan (vLLM decides the LayerConfig at load).
 * has_bias / has_scale_2: the layer has a bias / a second scale (per tensor,
 * or per channel: meta->scale2_channel). */
char *hc_layer_config_json(const hc_layer_config *cfg, const hc_layer_meta *meta, int has_bias,
                           int has_scale_2, int weight_e0m);

/* 0.1.19: whether vLLM 0.33's MoE path (convert_humming ->
 * convert_symmetric_integer_weight) recodes these expert weights as
 * sign-magnitude float{b}e0m{b-1}: symmetric uint2..uint8 codes of which none
 * is 0. Only float activations see it: Humming turns the codes back for
 * integer ones. hc_layer_transform then sets post->weight_e0m. */
int hc_layer_e0m_applies(const hc_layer_config *cfg, const hc_layer_meta *meta,
                         const hc_layer_tensors *pre);

/* "0.1.19" and "0.1.20" -> HC_HUMMING_0_1_19 (0.1.20 builds the same tensors
 * and LayerConfig but for the layers hc_humming_release_check refuses), the
 * release's name (static storage) in *release when release is not NULL.
 * Every other version is refused with HC_ERR_ARG. */
hc_status hc_humming_version_parse(const char *name, hc_humming_version *out, const char **release,
                                   hc_error *err);
/* HC_ERR_UNSUPPORTED, naming `layer`, where humming-kernels `release` builds
 * other tensors than 0.1.19 for the layer (cfg, its plan meta): 0.1.20 for
 * fused e8m0 with fp8 activations (MXFP4 x fp8), float zero points of expert
 * stacks (0.1.19 recodes them as e0m) and groups that are not a power of
 * two. HC_OK for 0.1.19 or NULL. */
hc_status hc_humming_release_check(const char *release, const hc_layer_config *cfg,
                                   const hc_layer_meta *meta, const char *layer, hc_error *err);
const char *hc_humming_version_name(hc_humming_version v);

/* Frees every owned tensor in t. */
void hc_layer_tensors_free(hc_layer_tensors *t);

/* 0.1.19: "tiled", "packed_k" or "flat"; "canonical" for a canonical plan. */
const char *hc_layout_variant_name(const hc_layer_meta *meta);
/* Name of a scale type as in Humming's schema: "channel", "group", ... */
const char *hc_scale_type_name(hc_scale_type t);

/* Whether the verifier's decoder and our GPU kernels read the layer's 0.1.19
 * tensors: not the sm100 raw weights nor the block-scaled MMA scale layouts
 * (such layers are verified from their canonical tensors). */
int hc_layer_decodable(const hc_layer_meta *meta);

/* The weight layout's name in records and logs: hc_layout_variant_name, or
 * "raw" for 0.1.19's sm100 raw weights. */
const char *hc_layer_layout_name(const hc_layer_meta *meta);

#endif
