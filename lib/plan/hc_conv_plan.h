/* hc_conv_plan.h - the conversion plan: what every layer of the input becomes
 * (source, target, layout, output tensors), built before anything is written,
 * and the interface the sources (float, Humming, quantized) implement. */
#ifndef HC_CONV_PLAN_H
#define HC_CONV_PLAN_H

#include "hc_ckpt.h"
#include "hc_convert.h"
#include "hc_integrity.h"
#include "hc_layout.h"
#include "hc_model_config.h"
#include "hc_preset.h"
#include "hc_quant.h"
#include "hc_safetensors.h"
#include "hc_st_crcs.h"

/* Tensor roles of one quantized layer, in output order. */
enum { HC_ROLE_WEIGHT, HC_ROLE_SCALE, HC_ROLE_ZERO, HC_ROLE_GLOBAL, HC_ROLE_BIAS, HC_ROLE_COUNT };

extern const char *const hc_role_suffix[HC_ROLE_COUNT];

/* Shape and dtype of one output tensor, known before any data is computed. */
typedef struct {
    int present;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    int64_t nbytes;
} hc_out_desc;

/* One tensor a layer writes: the role's tensor (pre tensors in the canonical
 * layout, post tensors in tiles), whole or one expert's slice of it. */
typedef struct {
    char *name;                       /* full tensor name (owned) */
    int role;                         /* HC_ROLE_* */
    int expert;                       /* slice of the leading E dim, or -1: whole */
    hc_out_desc desc;
} hc_out_tensor;

typedef enum {
    HC_SRC_HUMMING, /* Humming row-packed tensors: repacked losslessly */
    HC_SRC_FLOAT,   /* fp16/bf16/fp32 weights: quantized, then repacked */
    HC_SRC_QUANTIZED, /* GPTQ / AWQ / compressed-tensors / ModelOpt / MXFP4 / FP8 (hc_ckpt.h):
                        repacked losslessly, or dequantized and requantized */
    HC_SRC_COUNT
} hc_src_kind;

struct hc_ckpt_config;

/* One expert of a quantized per-expert stack "X.experts.<i>.Y". */
typedef struct {
    char *prefix;                     /* "X.experts.3.Y" (owned) */
    const hc_st_tensor *carrier;      /* its weight-carrying tensor (names the file) */
    const hc_st_tensor *bias;         /* its float bias [N], or NULL */
} hc_conv_qexpert;

typedef struct {
    char *prefix;                     /* "model.layers.0.mlp.up_proj" */
    hc_src_kind kind;
    /* Humming: the pre tensors by role. Float: [WEIGHT] is the 2-D weight or
     * the fused 3-D expert stack, [BIAS] its bias; other roles NULL. */
    const hc_st_tensor *pre[HC_ROLE_COUNT];
    const hc_st_tensor **experts;     /* float per-expert stack: one 2-D weight per expert */
    int n_experts;
    int transpose;                    /* fused float stack stored [E, in, out] */
    hc_target target;                 /* float: resolved target */
    char why[192];                    /* float: why this target was chosen */
    int has_zero, has_global, has_bias; /* input roles present (or produced) */
    hc_layer_config cfg;
    hc_layer_meta meta;
    hc_out_desc out[HC_ROLE_COUNT];   /* tiles: the kernel-ready tensors by role */
    hc_out_tensor *outs;              /* what is written, in order (owned) */
    int n_outs;
    /* quantized sources (hc_convert_quantized.c) */
    int ck_kind;                      /* hc_ckpt_kind */
    const hc_st_tensor **src;         /* every checkpoint tensor of the layer (not copied) */
    int n_src;
    int has_choice, skip_target;      /* choose_target was asked; it said skip */
    int requant;                      /* dequantize exactly, quantize to target */
    int canonical_fix;                /* requant only because the canonical layout cannot
                                         hold the source format (reason in note) */
    int lossless;                     /* repacked, decoded values identical */
    char source_format[96];
    char note[320];
    hc_st_tensor *extra;              /* act-order permute: P.input_perm (owned) */
    hc_conv_qexpert *qexperts;        /* quantized per-expert stack, expert i at [i] (owned) */
    int n_qexperts;
    const hc_st_tensor **hexperts;    /* Humming per-expert stack "X.experts.<i>.Y": expert i's
                                         role r at [i * HC_ROLE_COUNT + r], NULL where absent
                                         (owned array); pre[] stays NULL */
    int n_hexperts;
} hc_conv_layer;

/* One output entry: a transformed layer, or a tensor copied unchanged. */
typedef struct {
    int layer;                        /* index into layers, or -1 */
    const hc_st_tensor *copy;    /* when layer < 0 */
    int shard;
    int64_t nbytes;
    int64_t bytes_through;            /* output bytes of items 0..this one */
} hc_conv_item;

typedef struct hc_conv_verify hc_conv_verify;

/* State of one run's crash-safe output (hc_convert_journal.c). */
typedef struct {
    char partial[4096];               /* OUT_DIR.partial */
    char fingerprint[24];             /* of inputs, options and plan */
    char *command_line;               /* recorded in the output: the first run's */
    int owned;                        /* this run created or resumed partial */
    int resumed;
    hc_input_file *inputs;            /* IN_DIR's files at the start (size, times, inode) */
    size_t n_inputs;
    hc_file_crc *shards;              /* per output shard once complete (name NULL before) */
    int n_shards;
    hc_file_crc *done;                /* from the journal: name, size, crc of complete shards */
    size_t n_done;
    hc_st_crcs *input_crcs;           /* the input tensors' CRCs, noted as they are read
                                         (owned; NULL with --no-input-crc) */
    hc_bufpool *pool;                 /* output weight buffers reused between layers
                                         (owned; NULL: none) */
} hc_conv_run;

typedef struct {
    hc_src_kind kind;                 /* of every layer in the input */
    hc_layout_kind layout;            /* of the output (opts->layout) */
    hc_humming_version version;       /* of every layer's plan: tiles 0.1.19, or canonical
                                         (validation and config.json records only) */
    const char *release;              /* tiles: the humming-kernels release written for,
                                         "0.1.19" or "0.1.20" (static); canonical: NULL */
    hc_humming_qconfig qconfig;       /* Humming inputs */
    hc_format_id param_format;        /* layer / output dtype: F16 or BF16 */
    char model_type[64];              /* config.json model_type, "" if absent */
    hc_format_id activation;
    struct hc_ckpt_config *ckpt;      /* quantized inputs: the detected format (owned) */
    hc_st_model *model;               /* the input (not owned): read at write time */
    hc_conv_layer *layers;
    int n_layers;
    int *weight_e0m;                  /* per layer: its transform recoded the weights as
                                         float{b}e0m{b-1} (post->weight_e0m); set when the
                                         layer is written or read back, for config.json */
    hc_conv_item *items;
    int n_items;
    int n_shards;
    int64_t bytes_in, bytes_out;
    hc_conv_verify *verify;      /* per-layer verification (hc_convert_verify.c), or NULL */
    hc_conv_run *run;                 /* crash-safe output state, or NULL (report) */
    const struct hc_conv_source *sources; /* indexed by hc_src_kind (hc_conv_plan_build) */
} hc_conv_plan;

/* One source kind (hc_source/: float, Humming, quantized) behind the plan:
 * find adds the layers of model to plan (layer_of[i]: the layer whose item sits
 * at model tensor i, else -1); plan_layer decides one layer's cfg and meta;
 * load produces its pre-repack tensors (owned), and with ref not NULL the
 * float32 (E, N, K) weights verification measures against (caller frees;
 * NULL when there are none); with energy not NULL, for a float source whose
 * rows the quantizer read, each row's sum of squares (E * N,
 * hc_verify_row_energy of the rows as read: verification then need not read
 * them for it; caller frees; NULL otherwise). */
typedef struct hc_conv_source {
    hc_src_kind kind;
    hc_status (*find)(const hc_convert_options *opts, hc_st_model *model, hc_conv_plan *plan,
                      int *layer_of, hc_error *err);
    hc_status (*plan_layer)(const hc_convert_options *opts, const hc_conv_plan *plan,
                            hc_conv_layer *L, hc_error *err);
    hc_status (*load)(const hc_conv_plan *plan, const hc_conv_layer *L, hc_layer_tensors *pre,
                      float **ref, double **energy, hc_error *err);
} hc_conv_source;

/* Finds the layers of model with the source of plan->kind (sources: one
 * entry per hc_src_kind, indexed by kind; plan keeps the pointer), plans each
 * one and the output shards. Fails before any output is written if any layer
 * is unsupported. */
hc_status hc_conv_plan_build(const hc_convert_options *opts, hc_st_model *model,
                             const hc_conv_source *sources, hc_conv_plan *plan, hc_error *err);
void hc_conv_plan_free(hc_conv_plan *plan);

/* Bytes a layer reads from the input (every source tensor) and writes. */
int64_t hc_conv_layer_in_bytes(const hc_conv_layer *L);
int64_t hc_conv_layer_out_bytes(const hc_conv_layer *L);
/* Fills L->out from L->cfg/L->meta and the role flags (spec 5.8). */
void hc_conv_describe_outputs(hc_conv_layer *L);

/* Canonical layout (hc_convert_canonical.c). */
/* Fills L->outs for opts->layout: tiles from L->out, canonical from the pre
 * shapes (per-expert names for MoE stacks). Fails (HC_ERR_UNSUPPORTED, with
 * the reason) for a layer the canonical form cannot hold. */
hc_status hc_conv_plan_outputs(const hc_convert_options *opts, const hc_conv_plan *plan,
                               hc_conv_layer *L, hc_error *err);
/* Why the canonical layout (what vLLM 0.33 loads) cannot hold L as planned in
 * L->cfg and its role flags, or NULL. *fixable: a requantization into scales in
 * the model dtype, without zero points or per-tensor / block scales, would fit. */
const char *hc_conv_canonical_problem(const hc_conv_layer *L, int is_moe, int *fixable);

/* 1 when L has group scales with a per-tensor second scale in a module vLLM
 * loads fused (q/k/v, gate/up, MoE experts), where vLLM 0.33 loads no
 * per-tensor scale but does load a per-channel one. */
int hc_conv_canonical_s2_to_channel(const hc_conv_layer *L, int is_moe);
/* Checks across layers that what vLLM loads as one module gets one format:
 * q/k/v, gate/up, and every projection of one MoE block. */
hc_status hc_conv_check_fused(const hc_convert_options *opts, const hc_conv_plan *plan,
                              hc_error *err);
/* The canonical quantization_config keys of L (b_dtype, bs_dtype, ...; no
 * aliases), as a new cJSON object (caller owns), or NULL when out of memory. */
struct cJSON *hc_conv_canonical_keys(const hc_conv_layer *L);
/* Adds the canonical keys (top level: the most common layer format; others as
 * "dynamic" "+:" rules; skipped float linear weights as "-:" rules) to q. */
hc_status hc_conv_canonical_config(const hc_conv_plan *plan, struct cJSON *q, hc_error *err);
/* The bytes of output tensor o of L: a pointer into src's role tensor (its
 * expert slice), and the byte count. */
const void *hc_conv_out_data(const hc_out_tensor *o, const hc_layer_tensors *src, size_t *len);
/* Frees L->outs. */
void hc_conv_outputs_free(hc_conv_layer *L);

/* printf-style line to opts->log, if set. */
void hc_conv_log(const hc_convert_options *opts, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
