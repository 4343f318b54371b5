/* hc_format_table.c - the table of format traits (see hc_format.h). */
#include "hc_format.h"

#include <stddef.h>

#define HC_FORMAT_ROW_(id, nm, kd, b, e, m, sg, sp, bs, mx, mn)                  \
    [HC_FMT_##id] = {.name = nm, .kind = kd, .bits = b, .exp_bits = e,           \
                     .man_bits = m, .is_signed = sg, .specials = sp, .bias = bs, \
                     .max_value = mx, .min_subnormal = mn},

static const hc_format_info format_table[HC_FMT_COUNT] = {HC_FORMAT_LIST(HC_FORMAT_ROW_)};

const hc_format_info *hc_format_get(hc_format_id id)
{
    if ((int)id < 0 || id >= HC_FMT_COUNT) return NULL;
    return &format_table[id];
}

static const hc_block_scheme block_schemes[HC_BLOCK_COUNT] = {
    [HC_BLOCK_MX] = {"mx", 32, HC_FMT_F8E8M0, 0},
    [HC_BLOCK_NV] = {"nv", 16, HC_FMT_F8E4M3, 1},
};

const hc_block_scheme *hc_block_scheme_get(hc_block_scheme_id id)
{
    if ((int)id < 0 || id >= HC_BLOCK_COUNT) return NULL;
    return &block_schemes[id];
}
