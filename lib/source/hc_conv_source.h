/* hc_conv_source.h - the sources of a conversion (lib/source/): float
 * weights to quantize, Humming row-packed inputs, already-quantized
 * checkpoints; each implements hc_conv_source (hc_conv_plan.h). */
#ifndef HC_CONV_SOURCE_H
#define HC_CONV_SOURCE_H

#include "hc_conv_plan.h"

/* The sources, indexed by hc_src_kind. */
extern const hc_conv_source hc_conv_sources[HC_SRC_COUNT];

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

/* Per-expert layers grouped into stacks (hc_conv_experts.c). */
/* One expert's layer "X.experts.<i>.Y", found at model tensor `tensor`. */
typedef struct {
    char key[512]; /* "X.experts.Y" */
    long index;
    int kind;      /* quantized sources: its hc_ckpt_kind */
    size_t tensor;
} hc_conv_expert;
/* "X.experts.<i>.Y" -> key "X.experts.Y" and i; 0 if prefix names no expert. */
int hc_conv_expert_key(const char *prefix, char *key, size_t key_len, long *index);
/* Sorts by key, then index: each stack's experts become one run. */
void hc_conv_experts_sort(hc_conv_expert *e, size_t n);
/* The end of the run of e[i]'s key (sorted e). */
size_t hc_conv_experts_group_end(const hc_conv_expert *e, size_t n, size_t i);
/* HC_ERR_FORMAT, naming the tensor, unless the n experts of one run are
 * numbered 0..n-1; what ("" or "quantized ") goes in the message. */
hc_status hc_conv_experts_check(hc_st_model *model, const hc_conv_expert *e, size_t n,
                                const char *what, hc_error *err);

/* Per-expert quantized stacks (hc_convert_qstack.c). */
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
/* Quantizes float32 (E, N, K) weights for target t into pre (moe: keep E
 * dim); a per-channel second scale is stored in the layer dtype `param`. */
hc_status hc_conv_quantize_float(const hc_target *t, hc_format_id param, const float *w,
                                 int64_t E, int64_t N, int64_t K, int moe, hc_layer_tensors *pre,
                                 hc_error *err);

/* Source-specific loaders behind hc_conv_load_pre. */
hc_status hc_conv_load_humming(const hc_conv_layer *L, hc_layer_tensors *pre, hc_error *err);
hc_status hc_conv_load_float(const hc_conv_plan *plan, const hc_conv_layer *L,
                             hc_layer_tensors *pre, float **ref, double **energy,
                             hc_error *err);

/* A float layer's source rows converted to float32 on demand (row r of the
 * E * N rows of (E, N, K), into buf of K floats; safe from several threads):
 * where hc_conv_float_rows_ok, verification reads the source this way
 * instead of a float32 copy of the layer. */
typedef struct hc_conv_row_block hc_conv_row_block;
typedef struct {
    const hc_conv_layer *L;
    int64_t N, K;
    hc_f16_array_fn f16;
    uint32_t *row_crc;       /* when not NULL: each row's input bytes' CRC-32, taken */
    unsigned char *row_have; /* the first time the row is read (row_have[row] set) */
    double *row_energy;      /* when not NULL: each row's hc_verify_row_energy, taken the
                                first time the row is read (negative until then) */
    /* when not NULL: rows read in blocks with pread, one block per thread of
     * a (non-nested) parallel region (hc_convert_float.c), from model */
    hc_conv_row_block *blocks;
    int n_blocks;
    int64_t block_rows; /* rows per block (0: ~256 KiB of them) */
    const hc_st_model *model;
} hc_conv_row_source;
int hc_conv_float_rows_ok(const hc_conv_layer *L);
void hc_conv_row_source_init(const hc_conv_layer *L, hc_conv_row_source *rs);
/* Gives rs one block of `rows` consecutive rows (0: ~256 KiB of them; at
 * most 16 MiB) per thread, read from model with pread when a row outside it
 * is asked for: no page of the input's mapping is touched (which the
 * release after the layer then has to unmap). Without memory for them the
 * rows are read through the mapping (nothing fails). Free with
 * hc_conv_row_source_blocks_free. */
void hc_conv_row_source_blocks(const hc_st_model *model, int64_t rows, hc_conv_row_source *rs);
void hc_conv_row_source_blocks_free(hc_conv_row_source *rs);
const float *hc_conv_source_row(void *ctx, int64_t row, float *buf);
/* Columns [k0, k1) of row `row` into buf (k1 - k0 floats), as
 * hc_conv_source_row converts them; takes no row CRCs (for readers whose
 * rs->row_crc is NULL: verification). */
void hc_conv_source_row_part(void *ctx, int64_t row, int64_t k0, int64_t k1, float *buf);

/* Produces the layer's pre-repack tensors (owned) through its source. For
 * float sources *ref receives the source weights as float32 (E, N, K), for an
 * inexact quantized reading the producer's dequantization (caller frees),
 * else NULL; ref NULL when the caller does not need them (no copy is made).
 * *energy (energy not NULL): a float source's row sums of squares where the
 * quantizer read its rows (hc_conv_source.load; caller frees), else NULL. */
hc_status hc_conv_load_pre(const hc_conv_plan *plan, const hc_conv_layer *L,
                           hc_layer_tensors *pre, float **ref, double **energy, hc_error *err);

#endif
