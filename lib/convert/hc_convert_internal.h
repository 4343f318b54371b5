/* hc_convert_internal.h - the driver (lib/convert/): the run, shard by
 * shard and layer by layer (source -> layout -> verify -> write), and the
 * verification records of each written layer. */
#ifndef HC_CONVERT_INTERNAL_H
#define HC_CONVERT_INTERNAL_H

#include "hc_conv_plan.h"
#include "hc_conv_source.h"
#include "hc_conv_write.h"

/* Reads IN_DIR/config.json: the input kind (float or Humming row-packed),
 * param dtype, model type and, for Humming inputs, the weight description. */
hc_status hc_conv_read_config(const hc_convert_options *opts, hc_conv_plan *plan, hc_error *err);

/* Writes every shard (and the index when there are several) into dir. */
hc_status hc_conv_write_shards(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *dir, hc_error *err);

/* Verifies the layers of shard `shard` from the already written file path
 * (a shard skipped by --resume still appears in the report). */
hc_status hc_conv_verify_shard_file(hc_conv_verify *v, const hc_conv_plan *plan, int shard,
                                    const char *path, hc_error *err);

/* Verification of each written layer (hc_convert_verify.c). */
hc_status hc_conv_verify_begin(const hc_convert_options *opts, const hc_conv_plan *plan,
                               hc_conv_verify **out, hc_error *err);
/* ref: the float source weights (E, N, K) of a float input (quantization
 * error is measured against them), or NULL to compare with the dequantized
 * pre tensors (a lossless repack). canon: the canonical tensors as written
 * (canonical layout; NULL for tiles, post unused otherwise): the layer is
 * verified through the humming-kernels 0.1.19 tensors built from them where
 * 0.1.19 takes it, else through canon itself, decoded from its meaning (CPU);
 * the report's verify_source says which. energy: the float source rows'
 * sums of squares the quantizer took (hc_conv_load_pre), or NULL. */
hc_status hc_conv_verify_layer(hc_conv_verify *v, const hc_conv_layer *L,
                               const hc_layer_tensors *pre, const hc_layer_tensors *post,
                               const hc_layer_tensors *canon, const float *ref,
                               const double *energy, hc_error *err);
/* Writes the reports into dir. */
hc_status hc_conv_verify_finish(hc_conv_verify *v, const char *dir, hc_error *err);
/* Number of failed layers. */
int hc_conv_verify_failed(const hc_conv_verify *v);
/* Whether layers are verified (v may be NULL: no). */
int hc_conv_verify_enabled(const hc_conv_verify *v);
struct hc_report *hc_conv_verify_take_report(hc_conv_verify *v);
void hc_conv_verify_free(hc_conv_verify *v);

#endif
