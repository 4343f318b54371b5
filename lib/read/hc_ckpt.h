/* hc_ckpt.h - already-quantized checkpoints (GPTQ, AWQ, compressed-tensors,
 * ModelOpt, gpt-oss MXFP4, FP8): format detection from the config files and
 * per-layer readers that turn a layer's checkpoint tensors into Humming's
 * pre-repack form (shared/docs/checkpoint-formats-spec.md, layout spec 7).
 *
 * Every reader produces the exact pre form as an hc_quant_result: packed
 * row-major codes (E, N, K*b/32), scales (E, NS, G) in their storage format,
 * integer zero points packed along N or float zero points, per-expert global
 * scales. hc_dequantize() of that result is the source's canonical value
 * (spec 11, "recommended reader arithmetic"), element for element, whenever
 * `lossless` is set. Where Humming's schema cannot hold a layer exactly the
 * reader refuses with a message saying why (or, where the difference is a
 * documented fp32 rounding, clears `lossless` and says so in `note`). */
#ifndef HC_CKPT_H
#define HC_CKPT_H

#include <stdint.h>

#include "hc_bufpool.h"
#include "hc_error.h"
#include "hc_format.h"
#include "hc_quant.h"
#include "hc_safetensors.h"
#include "hc_tensor.h"

typedef enum {
    HC_CKPT_NONE,
    HC_CKPT_GPTQ,
    HC_CKPT_AWQ,
    HC_CKPT_CT,        /* compressed-tensors */
    HC_CKPT_MODELOPT,
    HC_CKPT_MXFP4,     /* gpt-oss */
    HC_CKPT_FP8,       /* quant_method fp8: DeepSeek block scales or per-tensor */
    HC_CKPT_QUARK      /* AMD Quark */
} hc_ckpt_method;

/* How a skip list (modules_to_not_convert, ignore, exclude_modules) matches. */
typedef enum {
    HC_SKIP_SUBSTRING, /* AWQ / GPTQ / HF: entry is a substring of the module name */
    HC_SKIP_CT,        /* compressed-tensors: exact name, or "re:" regex from the start */
    HC_SKIP_FNMATCH    /* ModelOpt / gpt-oss: shell wildcards (also substring, as vLLM) */
} hc_skip_dialect;

typedef enum { HC_ACT_ORDER_REFUSE, HC_ACT_ORDER_PERMUTE, HC_ACT_ORDER_REQUANT } hc_act_order;

#define HC_CKPT_MAX_SKIP 1024 /* more is refused (a MoE ignore list names a gate per layer) */
#define HC_CKPT_MAX_GROUPS 8
#define HC_CKPT_MAX_OVR 256   /* AutoRound extra_config entries; more is refused */

/* AutoRound extra_config entry: a layer name (exact, or a suffix after '.')
 * or a regex (a key holding regex characters, searched anywhere, as vLLM's
 * INC config parser) with the layer's own bits / group_size / sym. */
typedef struct {
    char key[160];
    int regex;
    int bits;              /* >= 16: the layer is left unquantized */
    int64_t group_size;
    int sym;
} hc_ckpt_override;

/* One compressed-tensors config group (its weights QuantizationArgs). */
typedef struct {
    char targets[8][128];
    int n_targets;
    char format[32];       /* the group's own format, "" = global */
    int num_bits;
    char type[8];          /* "int" / "float" */
    char strategy[16];     /* tensor channel group block tensor_group */
    int64_t group_size;
    int64_t block[2];
    int symmetric;
    char actorder[16];
} hc_ckpt_ct_group;

/* AMD Quark: the one weight config (global_quant_config.weight) read here. */
typedef struct {
    char dtype[16];        /* int4 uint4 fp8_e4m3 fp4 */
    char qscheme[16];      /* per_group per_channel per_tensor per_block */
    char pack_method[16];  /* export.pack_method: reorder / order */
    int64_t group_size;
    int64_t block[2];
    int sym;
} hc_ckpt_quark;

#define HC_CKPT_MAX_QLAYERS 64 /* Quark layer_quant_config entries with their own weights */

/* A Quark layer_quant_config entry with its own weight config. */
typedef struct {
    char pattern[160];     /* fnmatch pattern ('*'), else a substring of which the name is */
    hc_ckpt_quark q;
} hc_ckpt_quark_layer;

typedef struct hc_ckpt_config {
    hc_ckpt_method method;
    char quant_method[32];   /* as written */
    char source_file[32];    /* config.json, quantize_config.json, ... */
    /* GPTQ / AWQ */
    int bits;
    int64_t group_size;      /* -1: one group over K */
    int sym, desc_act;
    int gptq_v2;             /* checkpoint_format gptq_v2 */
    int awq_zero_point;
    char awq_version[16];    /* gemm gemv gemv_fast */
    /* AutoRound / INC (quant_method auto-round): read as GPTQ or AWQ */
    int autoround;
    char packing_format[48];
    hc_ckpt_override ovr[HC_CKPT_MAX_OVR];
    int n_ovr;
    /* compressed-tensors */
    char ct_format[32];
    char ct_version[32];     /* "version": the compressed-tensors release that wrote it */
    int ct_dense;            /* pack_to_int32 layout by that version: 1 dense (>= 0.18),
                                0 padded (< 0.18), -1 unknown (no or unreadable version) */
    hc_ckpt_ct_group ct[HC_CKPT_MAX_GROUPS];
    int n_ct;
    /* ModelOpt */
    char quant_algo[32];
    hc_ckpt_quark quark;     /* global_quant_config.weight */
    hc_ckpt_quark_layer qlayers[HC_CKPT_MAX_QLAYERS];
    int n_qlayers;
    /* FP8 */
    int64_t block[2];        /* weight_block_size, 0 if none */
    /* skipped modules */
    char skip[HC_CKPT_MAX_SKIP][160];
    int n_skip;
    hc_skip_dialect dialect;
} hc_ckpt_config;

/* Reads config.json text (already loaded) and the side files in dir
 * (quantize_config.json, quant_config.json, hf_quant_config.json). Sets
 * cfg->method = HC_CKPT_NONE when none of them describes a format read here.
 * Fails with HC_ERR_UNSUPPORTED (message says why and what to do) for
 * recognised-but-refused layouts: Marlin-serialised GPTQ, AWQ gemv_fast,
 * compressed-tensors with transform_config, sparsity or a status other
 * than "compressed". */
hc_status hc_ckpt_detect(const char *dir, const char *config_text, hc_ckpt_config *cfg,
                         hc_error *err);

/* Short name of the method ("gptq", "awq", ...). */
const char *hc_ckpt_method_name(hc_ckpt_method m);

/* 1 if module (no ".weight" suffix) is in the checkpoint's skip list, by
 * the method's own matching rule. */
int hc_ckpt_is_skipped(const hc_ckpt_config *cfg, const char *module);

/* The AutoRound extra_config entry for module (exact name, then a key that
 * is a '.'-suffix of it, then the first regex found in it), or NULL. */
const hc_ckpt_override *hc_ckpt_override_for(const hc_ckpt_config *cfg, const char *module);

/* The Quark weight config of module: the first layer_quant_config entry
 * matching it as vLLM 0.33 matches them (a pattern with '*' by fnmatch,
 * otherwise when module is a substring of the pattern), else the global one. */
const hc_ckpt_quark *hc_ckpt_quark_for(const hc_ckpt_config *cfg, const char *module);

/* Index of the compressed-tensors config group that targets module. */
int hc_ckpt_ct_group_for(const hc_ckpt_config *cfg, const char *module);

/* Layer kinds, from the tensors present (spec 10). */
typedef enum {
    HC_CK_NONE,
    HC_CK_GPTQ,        /* P.qweight [K*b/32, N] + qzeros + scales (+ g_idx) */
    HC_CK_AWQ,         /* P.qweight [K, N/8] (gemm) or [N, K/8] (gemv) */
    HC_CK_CT_PACKED,   /* P.weight_packed I32 + weight_shape */
    HC_CK_CT_FP4,      /* P.weight_packed U8 (nvfp4 / mxfp4) */
    HC_CK_CT_UNPACKED, /* P.weight I8 / F8 + weight_scale (int-/float-quantized) */
    HC_CK_MODELOPT,    /* P.weight U8 or F8 + weight_scale (+ weight_scale_2) */
    HC_CK_FP8,         /* P.weight F8 + weight_scale_inv / weight_scale */
    HC_CK_MXFP4,       /* P_blocks + P_scales (gpt-oss expert stacks) */
    HC_CK_QUARK,       /* P.weight I32 / F8 / U8 + weight_scale (AMD Quark) */
    HC_CK_COUNT
} hc_ckpt_kind;

struct hc_ckpt_layer;
struct hc_ckpt_read_opts;

/* One reader of a quantized layer kind: a row of hc_ckpt_readers. A layer
 * opens at a tensor named P + suffix that claims accepts (cfg: the detected
 * checkpoint; claims NULL: any); tensors lists the suffixes of P's tensors
 * (NULL-terminated); read decodes the layer (hc_ckpt_read's contract);
 * source_values, where a reading can be inexact, gives the producer's own
 * values (hc_ckpt_source_values), else NULL. */
typedef struct {
    hc_ckpt_kind kind;
    const char *suffix;
    int (*claims)(const hc_ckpt_config *cfg, const hc_st_tensor *t);
    const char *const *tensors;
    hc_status (*read)(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                      const char *prefix, const struct hc_ckpt_read_opts *opts,
                      struct hc_ckpt_layer *out, hc_error *err);
    hc_status (*source_values)(hc_st_model *model, const char *prefix, float *out,
                               hc_error *err);
} hc_ckpt_reader;

/* The readers, in the order layers are matched (first claim wins), NULL-ended:
 * adding a reader is its file and one row here (hc_ckpt_readers.c). */
extern const hc_ckpt_reader *const hc_ckpt_readers[];
/* The reader of kind, or NULL. */
const hc_ckpt_reader *hc_ckpt_reader_of(hc_ckpt_kind kind);
/* A 2-D tensor of 8-bit codes (U8 / I8 / F8): what the FP8 / int8 readers
 * claim as P.weight. */
int hc_ckpt_is_quantized_weight(const hc_st_tensor *t);

/* The layer whose weight-carrying tensor is t, if any: sets *kind and the
 * layer prefix (module name, or "..._proj" for gpt-oss stacks). */
int hc_ckpt_layer_of(const hc_ckpt_config *cfg, const hc_st_tensor *t, hc_ckpt_kind *kind,
                     char *prefix, size_t prefix_len);

/* Every checkpoint tensor that belongs to the layer (so it is not copied),
 * the bias included; returns the count (at most max). */
int hc_ckpt_layer_tensors(hc_st_model *model, hc_ckpt_kind kind, const char *prefix,
                          const hc_st_tensor **out, int max);
/* The layer's bias tensor (float, (E?, N)), or NULL. */
const hc_st_tensor *hc_ckpt_layer_bias(hc_st_model *model, hc_ckpt_kind kind, const char *prefix);

typedef struct hc_ckpt_read_opts {
    hc_act_order act_order;
    hc_format_id param_format; /* F16/BF16: where fp32 scales must go, float zero points */
    int meta_only;             /* describe only: no codes (plan time) */
    int float32_scales;        /* float32 scales no 16-bit dtype holds are read as F32, not
                                  refused: a target was given, they are requantized */
    int general_codes;         /* 1: codes and scales element by element even where a
                                  word-level path exists (tests compare the two bit for bit) */
    int code_views;            /* 1: codes that are a plain copy of an input tensor's words
                                  (4-byte aligned) are a view of it instead
                                  (hc_quant_result.codes_view): the caller keeps the model
                                  open and reads them only */
    hc_bufpool *pool;          /* where a word-level path writes every code word (GPTQ's
                                  transpose), its codes buffer comes from here
                                  (hc_bufpool_take); NULL: allocated */
} hc_ckpt_read_opts;

/* len bytes of w's data as q's codes (allocated by hc_ckpt_alloc): a view of
 * them where opts->code_views allows and they are 4-byte aligned, else a copy. */
void hc_ckpt_codes_from(const hc_st_tensor *w, size_t len, const hc_ckpt_read_opts *opts,
                        hc_quant_result *q);

/* One layer in Humming's pre form. */
typedef struct hc_ckpt_layer {
    hc_quant_result q;        /* codes NULL when meta_only */
    int is_moe;
    int32_t *perm;            /* act-order permute: column j of q = source column perm[j] */
    int lossless;             /* hc_dequantize(q) == canonical source value */
    char source_format[96];   /* e.g. "gptq uint4 g128 sym (v1 zeros)" */
    char note[320];           /* warnings to log, "" if none */
} hc_ckpt_layer;

/* Reads one layer. HC_ERR_UNSUPPORTED for layouts that cannot be held
 * exactly (message says why and how to requantize instead). */
hc_status hc_ckpt_read(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                       const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                       hc_error *err);
void hc_ckpt_layer_free(hc_ckpt_layer *l);

/* compressed-tensors 3-D expert stacks: every "X.experts.Y.weight_packed"
 * (or ".weight" with a ".weight_scale") of rank 3 [E, ...] and the tensors
 * next to it (scales, zero points, weight_shape [E, N, K], global scales,
 * ...) become E per-expert views "X.experts.<e>.Y.*" of the model
 * (hc_st_model_add_views), which the per-expert MoE path reads as one stack.
 * *n_stacks: how many stacks were split. Refused naming the tensor: a tensor
 * next to a stack whose first dimension is not E or that compressed-tensors
 * does not store, a weight_shape other than [E, N, K], a stack that
 * per-expert tensors of the same names also hold, and qparams "X.experts.Y_scale"
 * beside a float 3-D "X.experts.Y" (no codes). Call once, before planning. */
hc_status hc_ckpt_ct_unstack(hc_st_model *model, int *n_stacks, hc_error *err);

/* The producer's own dequantization of a layer whose reading is not exact
 * (hc_ckpt_read cleared `lossless`), as float32 (N, K) into out (the caller's
 * N*K floats), for the report to measure the reading against. Only the
 * readers that can be inexact have one (compressed-tensors NVFP4: code *
 * fp32(s / weight_global_scale)); others: HC_ERR_UNSUPPORTED. */
hc_status hc_ckpt_source_values(const hc_ckpt_config *cfg, hc_st_model *model,
                                hc_ckpt_kind kind, const char *prefix, float *out,
                                hc_error *err);
hc_status hc_ckpt_ct_source_values(hc_st_model *model, const char *prefix, float *out,
                                   hc_error *err);

/* ---- helpers shared by the readers (hc_ckpt_common.c) ----------------- */

/* The tensor "prefix" + suffix, or NULL. */
const hc_st_tensor *hc_ckpt_find(hc_st_model *model, const char *prefix, const char *suffix);
/* Little-endian unsigned element i of an integer tensor (1, 2, 4 or 8 bytes). */
uint64_t hc_ckpt_uint_at(const hc_st_tensor *t, int64_t i);
/* Value of element i of a float tensor (F16, BF16, F32, F8_E4M3, F8_E5M2,
 * F8_E8M0/U8 as e8m0 when as_e8m0). */
double hc_ckpt_float_at(const hc_st_tensor *t, int64_t i);
/* 1 if t is a floating-point tensor (F16/BF16/F32). */
int hc_ckpt_is_float_dtype(hc_dtype dt);

/* Validation before any arithmetic (every message names tensor and file). */
#define HC_CKPT_SHAPE_STR 128
/* "[a, b, c]" into buf; returns buf. */
const char *hc_ckpt_shape_str(const hc_st_tensor *t, char *buf, size_t len);
/* Every dimension of t is >= 1: an empty one leaves the others unchecked (0
 * bytes either way) and makes every later division one by zero. */
hc_status hc_ckpt_check_dims(const hc_st_tensor *t, hc_error *err);
/* 1 if t's shape is exactly dims (ndim of them). */
int hc_ckpt_shape_is(const hc_st_tensor *t, int ndim, const int64_t *dims);
/* HC_ERR_FORMAT unless t's shape is exactly dims; meaning ("[G, N]") goes in
 * the message. */
hc_status hc_ckpt_check_shape(const hc_st_tensor *t, int ndim, const int64_t *dims,
                              const char *meaning, hc_error *err);
/* Element i (value v) of scale tensor s: refuses NaN / Inf (E8M0 0xFF) and
 * negative values, naming the element. Zero is allowed (an all-zero group). */
hc_status hc_ckpt_scale_ok(const hc_st_tensor *s, int64_t i, double v, hc_error *err);
/* hc_ckpt_scale_ok on every element; *zeros (if not NULL) counts zeros. */
hc_status hc_ckpt_check_scales(const hc_st_tensor *s, int64_t *zeros, hc_error *err);
struct hc_ckpt_layer;
/* Scales of an integer layer (GPTQ, AWQ, compressed-tensors, Quark), which
 * decode as scale * (q - z): NaN / Inf refused naming the element; zero and
 * negative values kept, each counted in a note on l. */
hc_status hc_ckpt_check_int_scales(const hc_st_tensor *s, struct hc_ckpt_layer *l,
                                   hc_error *err);
/* The value of a per-tensor scale: exactly one F32/F16/BF16 element, finite,
 * >= 0, and > 0 when it is a divisor. */
hc_status hc_ckpt_scalar_scale(const hc_st_tensor *t, int divisor, double *out, hc_error *err);
/* Notes zero scales of integer formats, whose producers clamp scales above 0. */
void hc_ckpt_note_zero_scales(struct hc_ckpt_layer *l, const hc_st_tensor *s, int64_t zeros);

/* Allocates q's buffers for (E, N, K), bits, NS x G scales of scale_format,
 * zero points as desc says; codes only when with_codes. */
hc_status hc_ckpt_alloc(hc_quant_result *q, const hc_quant_desc *d, int64_t E, int64_t N,
                        int64_t K, int64_t NS, int64_t G, int with_codes, hc_error *err);
/* Stores a float scale value (exactly representable in fmt) as raw bits at
 * scale index idx of q. Returns 0, or -1 when v is not exact in q's format. */
int hc_ckpt_put_scale(hc_quant_result *q, int64_t idx, double v);
/* 1 if q stores scales in s's own 16-bit format (F16 -> F16, BF16 -> BF16):
 * hc_ckpt_put_scale then stores every finite value as its source bits, so a
 * copy of the checked bits is the same. */
int hc_ckpt_raw16_scales(const hc_st_tensor *s, const hc_quant_result *q);
/* Where hc_ckpt_raw16_scales holds: the scale of every (n, g), element
 * n * sn + g * sg of s, copied as its 16 bits to q's scale n * G + g; returns 0
 * and counts the zero scales in *zeros (may be NULL). Returns 1, deciding
 * nothing, for another storage format or a NaN / Inf (the caller's element
 * path then reports it). */
int hc_ckpt_raw16_scales_copy(const hc_st_tensor *s, int64_t N, int64_t G, int64_t sn, int64_t sg,
                              hc_quant_result *q, int64_t *zeros);
/* Picks the storage format for float scales of source dtype src: F16/BF16/
 * E4M3/E8M0 as is; F32 -> opts->param_format if every value in t is exact in
 * it, else the other 16-bit format, else F32 when opts->float32_scales (a
 * requantization follows), else HC_FMT_COUNT (not representable). */
hc_format_id hc_ckpt_scale_format(hc_dtype src, const hc_st_tensor *t,
                                  const hc_ckpt_read_opts *opts);
/* Packs unpacked codes (rows x K, one per byte) into q->codes at row offset. */
void hc_ckpt_pack_codes(hc_quant_result *q, const uint8_t *codes);
/* 4-bit codes packed along N, I32 [K, N/8] with column 8 j + col[p] in nibble
 * p of word j of row k (AutoAWQ's GEMM packing, Quark's Pack_4_bits), into
 * dst as rows [N, K/8] packed along K (Humming's rows). N and K multiples of
 * 8; every word of dst is written. hc_ckpt_awq.c. */
void hc_ckpt_words_from_n_packed(const void *src, int64_t N, int64_t K, const int col[8],
                                 uint32_t *dst);
/* For a reader that writes every code word: q->codes (allocated by
 * hc_ckpt_alloc) replaced by a kept buffer of the same size from opts->pool
 * when there is one (no fresh pages per layer); else left as it is. */
void hc_ckpt_pooled_codes(const hc_ckpt_read_opts *opts, hc_quant_result *q);
/* 4-bit zero points packed along N as codes are in hc_ckpt_words_from_n_packed,
 * I32 [G, N/8] (column 8 j + col[p] in nibble p of word j), each nibble XOR
 * flip's, into q->zero_points (one expert, 4-bit, N rows; N a multiple of 8):
 * a word's nibbles put in column order, the words transposed to [N/8, G]. */
void hc_ckpt_zeros_from_n_packed(const void *src, int64_t N, int64_t G, const int col[8],
                                 uint32_t flip, hc_quant_result *q);
/* Packs integer zero points z (E, NS, G) (values < 2^bits) into q->zero_points
 * (HC_ERR_NOMEM when its column buffers cannot be had: never half-packed). */
hc_status hc_ckpt_pack_zeros(hc_quant_result *q, const uint8_t *z, hc_error *err);
/* Act-order: g_idx (K entries, groups of exactly gs members) -> permutation
 * sorting the columns by group (stable). Returns 1 if non-trivial, 0 if
 * g_idx[k] == k / gs everywhere, -1 (err set) if malformed. */
int hc_ckpt_act_order_perm(const hc_st_tensor *g_idx, int64_t K, int64_t gs, int64_t G,
                           const char *prefix, int32_t **perm_out, hc_error *err);
/* Applies perm to the columns of unpacked codes (rows x K). */
hc_status hc_ckpt_permute_columns(uint8_t *codes, int64_t rows, int64_t K, const int32_t *perm,
                                  hc_error *err);
/* Refusal for act-order layers without --act-order. */
hc_status hc_ckpt_refuse_act_order(const char *prefix, hc_error *err);
/* Appends a sentence to l->note. */
void hc_ckpt_note(hc_ckpt_layer *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Per-format readers behind hc_ckpt_read (their rows: hc_ckpt_reader_<name>). */
extern const hc_ckpt_reader hc_ckpt_reader_gptq, hc_ckpt_reader_awq, hc_ckpt_reader_ct_packed,
    hc_ckpt_reader_ct_fp4, hc_ckpt_reader_ct_unpacked, hc_ckpt_reader_modelopt,
    hc_ckpt_reader_fp8, hc_ckpt_reader_mxfp4, hc_ckpt_reader_quark;
hc_status hc_ckpt_read_gptq(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err);
hc_status hc_ckpt_read_awq(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err);
hc_status hc_ckpt_read_ct(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                          const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                          hc_error *err);
hc_status hc_ckpt_read_modelopt(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err);
hc_status hc_ckpt_read_mxfp4(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err);
hc_status hc_ckpt_read_fp8(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err);
hc_status hc_ckpt_read_quark(const hc_ckpt_config *cfg, hc_st_model *model, hc_ckpt_kind kind,
                  const char *prefix, const hc_ckpt_read_opts *opts, hc_ckpt_layer *out,
                  hc_error *err);

/* Shared by the FP8-element readers: a float8 weight [N, K] (one byte per
 * code) with scales of one of these geometries. scale == NULL is refused.
 *   tensor: 1 element (shape [] or [1]) -> tensor scale (float32 global)
 *   channel: N elements ([N] or [N, 1])
 *   group: [N, K/gs]            (gs > 0)
 *   block: [ceil(N/bn), ceil(K/bk)] or [ceil(N/bn), 1, ceil(K/bk), 1] (bn, bk
 *          in 1..2^20), edge blocks partial
 * Every shape is checked exactly; scales must be finite and not negative. */
typedef struct {
    int64_t gs, bn, bk;
    int e8m0;                 /* U8 scales are E8M0 exponents */
    const char *strategy;     /* "tensor" / "channel": the scale must be that; NULL: by its size */
} hc_ckpt_fp8_geom;
hc_status hc_ckpt_read_float8(const hc_st_tensor *w, const hc_st_tensor *scale,
                              const hc_ckpt_fp8_geom *g, const hc_ckpt_read_opts *opts,
                              hc_ckpt_layer *out, hc_error *err);

#endif
