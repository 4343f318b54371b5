/* hc_convert_internal.h - the conversion plan shared by the hc_convert_*.c files. */
#ifndef HC_CONVERT_INTERNAL_H
#define HC_CONVERT_INTERNAL_H

#include "hc_ckpt.h"
#include "hc_convert.h"
#include "hc_integrity.h"
#include "hc_layout.h"
#include "hc_model_config.h"
#include "hc_preset.h"
#include "hc_quant.h"
#include "hc_safetensors.h"

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
    HC_SRC_QUANTIZED /* GPTQ / AWQ / compressed-tensors / ModelOpt / MXFP4 / FP8 (hc_ckpt.h):
                        repacked losslessly, or dequantized and requantized */
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
} hc_conv_run;

typedef struct {
    hc_src_kind kind;                 /* of every layer in the input */
    hc_layout_kind layout;            /* of the output (opts->layout) */
    hc_humming_version version;       /* of every layer's transform: tiles 0.1.19; canonical
                                         a6455de, the tiles kernels/ verifies them through */
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
} hc_conv_plan;

/* Reads IN_DIR/config.json: the input kind (float or Humming row-packed),
 * param dtype, model type and, for Humming inputs, the weight description. */
hc_status hc_conv_read_config(const hc_convert_options *opts, hc_conv_plan *plan, hc_error *err);

/* Finds the layers of model (kind from plan->kind), plans each one and the
 * output shards. Fails before any output is written if any layer is unsupported. */
hc_status hc_conv_plan_build(const hc_convert_options *opts, hc_st_model *model,
                             hc_conv_plan *plan, hc_error *err);
void hc_conv_plan_free(hc_conv_plan *plan);

/* Adds the layers of a Humming-format input to plan->layers; *layer_of[i] is
 * the layer whose item sits at model tensor i (else -1). */
hc_status hc_conv_find_humming(const hc_convert_options *opts, hc_st_model *model,
                               hc_conv_plan *plan, int *layer_of, hc_error *err);
/* Same for a float input: dense weights, per-expert stacks, fused stacks,
 * each given its target by opts->choose_target (skipped ones are copied). */
hc_status hc_conv_find_float(const hc_convert_options *opts, hc_st_model *model,
                             hc_conv_plan *plan, int *layer_of, hc_error *err);
/* Decides cfg and meta of one layer (hc_layer_plan) for its source kind. */
hc_status hc_conv_plan_humming_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                     hc_conv_layer *L, hc_error *err);
hc_status hc_conv_plan_float_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                   hc_conv_layer *L, hc_error *err);

/* Bytes a layer reads from the input (every source tensor) and writes. */
int64_t hc_conv_layer_in_bytes(const hc_conv_layer *L);
int64_t hc_conv_layer_out_bytes(const hc_conv_layer *L);
/* Same for an already-quantized input (plan->ckpt): quantized layers by
 * tensor presence, plus float weights to quantize when opts->has_target. */
hc_status hc_conv_find_quantized(const hc_convert_options *opts, hc_st_model *model,
                                 hc_conv_plan *plan, int *layer_of, hc_error *err);
hc_status hc_conv_plan_quantized_layer(const hc_convert_options *opts, const hc_conv_plan *plan,
                                       hc_conv_layer *L, hc_error *err);
/* A repacked quantized layer whose reading is not exact (L->lossless clear,
 * not requantized): *ref = the producer's own dequantization (malloc'ed,
 * E*N*K), which verification then measures the output against; else NULL. */
hc_status hc_conv_quantized_ref(const hc_conv_plan *plan, const hc_conv_layer *L, float **ref,
                                hc_error *err);
hc_status hc_conv_load_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                 hc_layer_tensors *pre, hc_error *err);

/* Per-expert quantized stacks (hc_convert_qstack.c). */
/* "X.experts.<i>.Y" -> key "X.experts.Y" and i; 0 if prefix names no expert. */
int hc_conv_expert_key(const char *prefix, char *key, size_t key_len, long *index);
/* Reads L's checkpoint tensors in pre form: one checkpoint layer, or for a
 * stack every expert, checked to agree, concatenated along E (is_moe set). */
hc_status hc_conv_read_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                 const hc_ckpt_read_opts *ro, hc_ckpt_layer *out, hc_error *err);
/* Dequantizes L exactly into w (E, N, K), each part in its source column order. */
hc_status hc_conv_dequant_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                    const hc_ckpt_read_opts *ro, float *w, hc_error *err);
/* A stack's biases [N] each as one (E, N) tensor in the param dtype. */
hc_status hc_conv_load_bias_stack(const hc_conv_plan *plan, const hc_conv_layer *L,
                                  hc_tensor *out, hc_error *err);

/* Shared with the quantized path (hc_convert_float.c). The codes move from
 * r into pre->weight (r->codes becomes NULL); the rest is copied. */
hc_status hc_conv_pre_from_result(hc_quant_result *r, int moe, hc_layer_tensors *pre,
                                  hc_error *err);
hc_status hc_conv_load_bias(const hc_st_tensor *b, hc_format_id param, hc_tensor *out,
                            hc_error *err);
/* Layer config for a float target (param dtype already resolved). */
void hc_conv_target_config(const hc_convert_options *opts, const hc_conv_plan *plan,
                           const hc_target *t, hc_layer_config *cfg);
/* Quantizes float32 (E, N, K) weights for target t into pre (moe: keep E dim). */
hc_status hc_conv_quantize_float(const hc_target *t, const float *w, int64_t E, int64_t N,
                                 int64_t K, int moe, hc_layer_tensors *pre, hc_error *err);

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

/* Source-specific loaders behind hc_conv_load_pre. */
hc_status hc_conv_load_humming(const hc_conv_layer *L, hc_layer_tensors *pre, hc_error *err);
hc_status hc_conv_load_float(const hc_conv_plan *plan, const hc_conv_layer *L,
                             hc_layer_tensors *pre, float **ref, hc_error *err);

/* A float layer's source rows converted to float32 on demand (row r of the
 * E * N rows of (E, N, K), into buf of K floats; safe from several threads):
 * where hc_conv_float_rows_ok, verification reads the source this way
 * instead of a float32 copy of the layer. */
typedef struct {
    const hc_conv_layer *L;
    int64_t N, K;
    hc_f16_array_fn f16;
} hc_conv_row_source;
int hc_conv_float_rows_ok(const hc_conv_layer *L);
void hc_conv_row_source_init(const hc_conv_layer *L, hc_conv_row_source *rs);
const float *hc_conv_source_row(void *ctx, int64_t row, float *buf);

/* Produces the layer's pre-repack tensors (owned). For float sources *ref
 * receives the source weights as float32 (E, N, K) (caller frees), else NULL;
 * ref NULL when the caller does not need them (no float32 copy is made). */
hc_status hc_conv_load_pre(const hc_conv_plan *plan, const hc_conv_layer *L,
                           hc_layer_tensors *pre, float **ref, hc_error *err);

/* Writes every shard (and the index when there are several) into dir. */
hc_status hc_conv_write_shards(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *dir, hc_error *err);

/* Writes dir/config.json: the input's config with our quantization_config. */
hc_status hc_conv_write_config(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *dir, hc_error *err);

/* The text of config.json (malloc'ed) as hc_conv_write_config writes it. */
hc_status hc_conv_config_text(const hc_convert_options *opts, const hc_conv_plan *plan,
                              char **out, hc_error *err);

/* Crash safety (hc_convert_journal.c, docs/robustness.md). */
hc_status hc_conv_inputs_snapshot(const char *in_dir, hc_conv_run *run, hc_error *err);
hc_status hc_conv_inputs_check(const char *in_dir, const hc_conv_run *run, hc_error *err);
hc_status hc_conv_inputs_crc(const char *in_dir, hc_conv_run *run, int skip_weights,
                             hc_error *err);
hc_status hc_conv_fingerprint(const hc_convert_options *opts, const hc_conv_plan *plan,
                              hc_conv_run *run, hc_error *err);
/* Creates OUT_DIR.partial (or validates and cleans it for --resume). */
hc_status hc_conv_partial_prepare(const hc_convert_options *opts, hc_conv_run *run,
                                  hc_error *err);
hc_status hc_conv_journal_save(hc_conv_run *run, hc_error *err);
/* Removes the journal (called on OUT_DIR right after the publish rename). */
hc_status hc_conv_journal_finish(hc_conv_run *run, hc_error *err);
int hc_conv_shard_reusable(const hc_convert_options *opts, hc_conv_run *run, const char *name,
                           hc_file_crc *info);
void hc_conv_run_free(hc_conv_run *run);
void hc_conv_pause(const hc_convert_options *opts, const char *point);
/* Verifies the layers of shard `shard` from the already written file path
 * (a shard skipped by --resume still appears in the report). */
hc_status hc_conv_verify_shard_file(hc_conv_verify *v, const hc_conv_plan *plan, int shard,
                                    const char *path, hc_error *err);

/* Copies the input's non-weight files (tokenizer, generation config, ...) into dir. */
hc_status hc_conv_copy_side_files(const char *in_dir, const char *dir, hc_error *err);

/* Shard file name for shard i of n (model.safetensors when n == 1). */
void hc_conv_shard_name(int i, int n, char *buf, size_t len);


/* Verification of each written layer (hc_convert_verify.c). */
hc_status hc_conv_verify_begin(const hc_convert_options *opts, const hc_conv_plan *plan,
                               hc_conv_verify **out, hc_error *err);
/* ref: the float source weights (E, N, K) of a float input (quantization
 * error is measured against them), or NULL to compare with the dequantized
 * pre tensors (a lossless repack). canon: the canonical tensors as written
 * (canonical layout; NULL for tiles): the layer is verified through the
 * humming-kernels 0.1.19 tensors built from them where 0.1.19 takes it, else
 * through post (CPU only), which is built here from canon when NULL. */
hc_status hc_conv_verify_layer(hc_conv_verify *v, const hc_conv_layer *L,
                               const hc_layer_tensors *pre, const hc_layer_tensors *post,
                               const hc_layer_tensors *canon, const float *ref, hc_error *err);
/* Writes the reports into dir. */
hc_status hc_conv_verify_finish(hc_conv_verify *v, const char *dir, hc_error *err);
/* Number of failed layers. */
int hc_conv_verify_failed(const hc_conv_verify *v);
/* Whether layers are verified (v may be NULL: no). */
int hc_conv_verify_enabled(const hc_conv_verify *v);
struct hc_report *hc_conv_verify_take_report(hc_conv_verify *v);
void hc_conv_verify_free(hc_conv_verify *v);

/* printf-style line to opts->log, if set. */
void hc_conv_log(const hc_convert_options *opts, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
