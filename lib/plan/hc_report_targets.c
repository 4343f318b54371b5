/* hc_report_targets.c - the float layers' targets as recorded in an output's
 * config.json, so that `humming-convert report` rebuilds exactly the plan of
 * the run that wrote it. */
#include "hc_report_targets.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"
#include "hc_model_config.h"
#include "hc_recipe.h"

struct hc_recorded_targets {
    cJSON *root;
    const cJSON *layers;
};

hc_status hc_recorded_targets_load(const char *out_dir, hc_recorded_targets **out, hc_error *err)
{
    char path[4096], *text = NULL;
    HC_TRY(hc_path_join(path, sizeof path, out_dir, "config.json", err));
    HC_TRY(hc_file_read_all(path, &text, NULL, err));
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(q, "layers");
    if (!cJSON_IsObject(layers)) {
        cJSON_Delete(root);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: no quantization_config.layers: not a humming-convert "
                "output", path);
    }
    hc_recorded_targets *t = calloc(1, sizeof *t);
    if (t == NULL) cJSON_Delete(root);
    HC_CHECK_ALLOC(err, t, "recorded targets");
    t->root = root;
    t->layers = layers;
    *out = t;
    return HC_OK;
}

void hc_recorded_targets_free(hc_recorded_targets *t)
{
    if (t == NULL) return;
    cJSON_Delete(t->root);
    free(t);
}

hc_status hc_recorded_target(void *ctx, const char *layer, hc_target *out, int *skip, char *why,
                             size_t why_len, hc_error *err)
{
    const hc_recorded_targets *t = ctx;
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(t->layers, layer);
    const cJSON *qt = cJSON_GetObjectItemCaseSensitive(rec, "quant_target");
    *skip = qt == NULL;
    snprintf(why, why_len, "%s", qt ? "as recorded in the output" : "not converted in the output");
    if (qt == NULL) return HC_OK;
    *out = (hc_target){.weight_format = HC_FMT_UINT4, .scale_format = HC_FMT_PARAM,
                       .activation = HC_FMT_PARAM};
    for (const cJSON *f = qt->child; f; f = f->next) {
        if (!cJSON_IsString(f))
            HC_FAIL(err, HC_ERR_FORMAT, "layer %s: quant_target.%s is not a string", layer,
                    f->string);
        HC_TRY(hc_target_set_field(out, f->string, f->valuestring, err));
    }
    return HC_OK;
}
