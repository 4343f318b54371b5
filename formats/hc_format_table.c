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

/* The formats with roles beyond what their traits imply (a weight role for
 * every integer and signed float of at most 8 bits, a zero-point role for
 * uint codes). */
static const hc_format_role_info role_table[HC_FMT_COUNT] = {
    [HC_FMT_F16] = {HC_FROLE_SCALE | HC_FROLE_ACT | HC_FROLE_ZERO, 0.0f, 0.0},
    [HC_FMT_BF16] = {HC_FROLE_SCALE | HC_FROLE_ACT | HC_FROLE_ZERO, 0.0f, 0.0},
    [HC_FMT_F32] = {HC_FROLE_SCALE, 0.0f, 0.0},
    [HC_FMT_F8E8M0] = {HC_FROLE_SCALE, 0.0f, 0.0},
    [HC_FMT_F8E4M3] = {HC_FROLE_SCALE | HC_FROLE_ACT, 448.0f, 0.125},
    [HC_FMT_F8E5M2] = {HC_FROLE_SCALE | HC_FROLE_ACT, 57344.0f, 0.25},
    [HC_FMT_INT8] = {HC_FROLE_ACT, 127.0f, 8.0 / 128.0},
    [HC_FMT_INT4] = {HC_FROLE_ACT, 7.0f, 0.5},
};

hc_format_role_info hc_format_role(hc_format_id id)
{
    hc_format_role_info r = {0, 0.0f, 0.0};
    const hc_format_info *f = hc_format_get(id);
    if (f == NULL) return r;
    r = role_table[id];
    if (f->bits <= 8 && (f->kind != HC_KIND_FLOAT || f->is_signed)) r.roles |= HC_FROLE_WEIGHT;
    if (f->kind == HC_KIND_UINT) r.roles |= HC_FROLE_ZERO;
    return r;
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
