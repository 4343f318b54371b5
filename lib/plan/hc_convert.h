/* hc_convert.h - whole-checkpoint conversion to Humming's kernel-ready layout.
 *
 * Reads a Humming-format checkpoint (row-packed int32 weights, spec 7.8),
 * transforms every quantized linear layer for the target arch and activation
 * dtype, copies every other tensor and file unchanged, and writes the result
 * into a temporary directory that is renamed to the output only when complete. */
#ifndef HC_CONVERT_H
#define HC_CONVERT_H

#include <stdint.h>

#include <stddef.h>

#include "hc_error.h"
#include "hc_format.h"
#include "hc_preset.h"
#include "hc_verify.h"

struct hc_report;

/* Receives one progress/log line (no trailing newline). The library never
 * prints; the CLI decides where lines go. */
typedef void (*hc_log_fn)(void *ctx, const char *line);

/* Chooses the target of one float layer (the CLI wires this to its recipe and
 * flags). Sets *skip to keep the layer in its original dtype; writes a short
 * reason into why. Returns an error for a bad rule. */
typedef hc_status (*hc_target_fn)(void *ctx, const char *layer, hc_target *out, int *skip,
                                  char *why, size_t why_len, hc_error *err);

/* Progress after each written layer or tensor: items done of total, bytes written. */
typedef void (*hc_progress_fn)(void *ctx, int done, int total, int64_t bytes_done,
                               int64_t bytes_total, const char *current);

/* What the output's quantized layers hold (docs/output-format.md). */
typedef enum {
    HC_LAYOUT_CANONICAL, /* Humming's canonical pre-repack tensors, quant_method "humming":
                            what stock vLLM loads (Humming repacks at load) */
    HC_LAYOUT_TILES      /* the tensors humming-kernels 0.1.19 builds at load (what vLLM 0.33
                            holds), quant_method "humming-convert-tiles" */
} hc_layout_kind;

typedef struct {
    const char *in_dir;
    const char *out_dir;
    int sm;                     /* target arch, e.g. 90 */
    hc_layout_kind layout;      /* default (0): canonical */
    int has_activation;         /* else the checkpoint's param dtype */
    hc_format_id activation;
    int force;                  /* replace an existing out_dir */
    int dry_run;                /* plan and print, write nothing */
    int64_t max_shard_bytes;    /* 0: default 4 GiB */
    const char *humming_version; /* tiles: the Humming whose post-transform tensors are
                                   written; NULL: "0.1.19" (the only one accepted,
                                   hc_humming_version_parse). Canonical: must be NULL */
    hc_target_fn choose_target; /* required for float inputs */
    int has_target;             /* quantized inputs: a target was given (--format, field
                                   flags, --recipe): layers whose target differs from the
                                   source format are requantized, float layers quantized */
    int act_order;              /* quantized act-order inputs: 0 refuse, 1 permute
                                   (writes P.input_perm), 2 requant (hc_act_order) */
    void *choose_ctx;
    hc_log_fn log;
    void *log_ctx;
    hc_progress_fn progress;    /* may be NULL */
    void *progress_ctx;
    const char *command_line;   /* recorded in the output config */
    const char *target_summary; /* float/quantized inputs: how targets were chosen
                                   (recipe name, preset), for the report; may be NULL */
    /* verification (docs/verification.md); zero values: auto, 16 tokens */
    hc_verify_mode verify;
    int verify_tokens;          /* activation rows per layer (0: 16) */
    const char *calib_path;     /* safetensors of activations keyed by layer name */
    int allow_degraded;         /* failed layers do not fail the run */
    int no_input_crc;           /* manifest: skip the CRC of the input weight files
                                   (a second read of the whole input) */
    /* crash safety (docs/robustness.md) */
    int resume;                 /* finish the interrupted run in OUT_DIR.partial */
    const char *test_pause_at;  /* tests only: stall at this named point
                                   (after_plan, after_shard_N, before_manifest,
                                   before_publish); the CLI reads HC_TEST_PAUSE_AT */
    double test_pause_seconds;  /* how long (0: 30 s) */
} hc_convert_options;

typedef struct {
    int layers;                 /* quantized layers transformed */
    int tensors_copied;         /* other tensors copied unchanged */
    int shards;
    int64_t bytes_in, bytes_out;
    struct hc_report *report;   /* the verification report, owned by the caller
                                   (hc_report_free); NULL when nothing ran */
} hc_convert_stats;

/* Runs the conversion. On failure nothing is left at out_dir (an existing
 * out_dir is untouched) and err names the file, tensor and reason. */
hc_status hc_convert_run(const hc_convert_options *opts, hc_convert_stats *stats, hc_error *err);

/* Verification: unless opts->verify is off, every layer is decoded back and
 * checked after its transform; OUT_DIR/humming_report.{json,html,md} are
 * written with the output. If a layer fails and !allow_degraded the output
 * and report are still published and the run returns HC_ERR_VERIFY. */

/* `humming-convert report OUT_DIR`: re-verifies the existing output
 * opts->out_dir against its source (opts->in_dir, or the input recorded in
 * OUT_DIR/humming_report.json) and rewrites the report there. Arch and
 * activation come from OUT_DIR/config.json. HC_ERR_VERIFY on failed layers
 * (unless allow_degraded). */
hc_status hc_report_run(const hc_convert_options *opts, hc_convert_stats *stats, hc_error *err);

/* `humming-convert check OUT_DIR` is hc_check_dir (hc_integrity.h). */

#endif
