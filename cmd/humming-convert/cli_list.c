/* cli_list.c - --list-formats: the presets, and which weight x activation
 * combinations the canonical layout (the default) takes for an arch (asked of
 * hc_layer_plan, so the list cannot drift from what the converter accepts). */
#include <string.h>

#include "cli.h"
#include "hc_layout.h"

static const hc_format_id activations[] = {HC_FMT_F16, HC_FMT_BF16, HC_FMT_F8E4M3,
                                           HC_FMT_F8E5M2, HC_FMT_INT8, HC_FMT_INT4};

/* Channel-wise, no zero point, fp16/bf16 scale: the most permissive case. */
static int supported(hc_format_id w, hc_format_id act, int sm)
{
    hc_layer_config cfg = {.weight_format = w, .scale_format = HC_FMT_BF16, .act_format = act,
                           .param_format = HC_FMT_BF16, .scale_type = HC_SCALE_CHANNEL, .sm = sm,
                           .version = HC_HUMMING_CANONICAL};
    if (act == HC_FMT_F16) cfg.scale_format = cfg.param_format = HC_FMT_F16;
    hc_layer_meta meta;
    return hc_layer_plan(&cfg, 0, 1, 256, 1024, &meta, NULL) == HC_OK;
}

static void print_presets(FILE *out)
{
    fprintf(out, "presets:\n");
    for (int i = 0; i < hc_preset_count(); i++) {
        const hc_preset *p = hc_preset_at(i);
        char desc[160];
        hc_target_describe(&p->target, desc, sizeof desc);
        fprintf(out, "  %-10s %-58s (%s)\n", p->name, p->summary, desc);
    }
}

void cli_list_formats(FILE *out, int sm)
{
    print_presets(out);
    fprintf(out, "\nweight x activation support on sm%d (channel scales; Y = supported):\n", sm);
    fprintf(out, "  %-12s", "weight");
    for (size_t a = 0; a < sizeof activations / sizeof activations[0]; a++)
        fprintf(out, " %-10s", hc_format_get(activations[a])->name);
    fprintf(out, "\n");
    for (int f = 0; f < HC_FMT_COUNT; f++) {
        const hc_format_info *fi = hc_format_get((hc_format_id)f);
        if (fi->bits > 8 || fi->kind == HC_KIND_INT || (!fi->is_signed && fi->kind == HC_KIND_FLOAT))
            continue; /* signed ints are stored as their uint row; e8m0 is a scale */
        fprintf(out, "  %-12s", fi->name);
        for (size_t a = 0; a < sizeof activations / sizeof activations[0]; a++)
            fprintf(out, " %-10s", supported((hc_format_id)f, activations[a], sm) ? "Y" : "-");
        fprintf(out, "\n");
    }
    fprintf(out, "\nsigned intB weights are stored as uintB (offset binary); zero points,\n"
                 "group sizes and block scales narrow these further (docs/cli.md).\n");
}
