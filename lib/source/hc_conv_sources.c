/* hc_conv_sources.c - the table of conversion sources, and the one call that
 * loads a layer through its source. */
#include "hc_conv_source.h"

#include <stdlib.h>
#include <string.h>

static hc_status load_humming(const hc_conv_plan *plan, const hc_conv_layer *L,
                              hc_layer_tensors *pre, float **ref, double **energy,
                              hc_error *err)
{
    (void)plan;
    (void)ref; /* a lossless repack: verified against its own dequantization */
    (void)energy;
    return hc_conv_load_humming(L, pre, err);
}

static hc_status load_quantized(const hc_conv_plan *plan, const hc_conv_layer *L,
                                hc_layer_tensors *pre, float **ref, double **energy,
                                hc_error *err)
{
    (void)energy;
    HC_TRY(hc_conv_load_quantized(plan, L, pre, err));
    return ref ? hc_conv_quantized_ref(plan, L, ref, err) : HC_OK;
}

const hc_conv_source hc_conv_sources[HC_SRC_COUNT] = {
    [HC_SRC_HUMMING] = {HC_SRC_HUMMING, hc_conv_find_humming, hc_conv_plan_humming_layer,
                        load_humming},
    [HC_SRC_FLOAT] = {HC_SRC_FLOAT, hc_conv_find_float, hc_conv_plan_float_layer,
                      hc_conv_load_float},
    [HC_SRC_QUANTIZED] = {HC_SRC_QUANTIZED, hc_conv_find_quantized, hc_conv_plan_quantized_layer,
                          load_quantized},
};

hc_status hc_conv_load_pre(const hc_conv_plan *plan, const hc_conv_layer *L,
                           hc_layer_tensors *pre, float **ref, double **energy, hc_error *err)
{
    if (ref) *ref = NULL;
    if (energy) *energy = NULL;
    memset(pre, 0, sizeof *pre);
    hc_status st = plan->sources[L->kind].load(plan, L, pre, ref, energy, err);
    if (st != HC_OK) {
        hc_layer_tensors_free(pre);
        if (ref) {
            free(*ref);
            *ref = NULL;
        }
        if (energy) {
            free(*energy);
            *energy = NULL;
        }
    }
    return st;
}
