/* hc_layout_check.h - validation of pre-repack layer tensors (internal). */
#ifndef HC_LAYOUT_CHECK_H
#define HC_LAYOUT_CHECK_H

#include "hc_layout.h"


/* Checks dtype and (unpadded) shape of every tensor of pre against the plan. */
hc_status hc_layout_check_pre(const hc_layer_config *cfg, const hc_layer_meta *m,
                              const hc_layer_tensors *pre, hc_error *err);

/* 0.1.19: what only the tensors tell: a second scale next to block scales,
 * and float zero points of MoE expert weights that vLLM would recode as
 * sign-magnitude float{b}e0m{b-1} (not implemented): both refused. */
hc_status hc_layout_check_0119(const hc_layer_config *cfg, const hc_layer_meta *m,
                               const hc_layer_tensors *pre, hc_error *err);

#endif
