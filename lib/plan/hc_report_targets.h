/* hc_report_targets.h - per-layer quantization targets recorded in an output. */
#ifndef HC_REPORT_TARGETS_H
#define HC_REPORT_TARGETS_H

#include <stddef.h>

#include "hc_error.h"
#include "hc_preset.h"

typedef struct hc_recorded_targets hc_recorded_targets;

/* Reads OUT_DIR/config.json's quantization_config.layers. Caller frees. */
hc_status hc_recorded_targets_load(const char *out_dir, hc_recorded_targets **out, hc_error *err);
void hc_recorded_targets_free(hc_recorded_targets *t);

/* An hc_target_fn (ctx: hc_recorded_targets): the recorded target of a layer;
 * layers without a record are skipped (they were copied, not converted). */
hc_status hc_recorded_target(void *ctx, const char *layer, hc_target *out, int *skip, char *why,
                             size_t why_len, hc_error *err);

#endif
