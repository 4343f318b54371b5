/* hc_convert_config.c - the output config.json and the copied side files. */
#include "hc_conv_write.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hc_fs.h"
#include "hc_version.h"

/* Version of our tiles output: 2 = humming-kernels 0.1.19's tensors as vLLM
 * 0.33 holds them, with a LayerConfig per layer. */
#define HC_TILES_LAYOUT_VERSION 2

static const char *fmt_name(hc_format_id f) { return hc_format_get(f)->name; }

/* The kernel-level keys of a tiles record: how humming-kernels 0.1.19 laid
 * the tensors out. A canonical output has none: Humming decides them at load. */
static void kernel_keys(cJSON *o, const hc_layer_meta *m)
{
    cJSON_AddNumberToObject(o, "padded_n", (double)m->Np);
    cJSON_AddNumberToObject(o, "padded_k", (double)m->Kp);
    /* get_default_mma_type; the tuning may pick another over the same tensors */
    const int mxmma = m->use_block_scaled_mma && !m->use_umma;
    cJSON_AddStringToObject(o, "mma_type", m->use_wgmma ? "wgmma" : mxmma ? "mxmma"
                                           : m->use_umma ? "umma" : "mma");
    cJSON_AddStringToObject(o, "layout_variant", hc_layer_layout_name(m));
    if (m->scale_layout != HC_SCALES_PERM) /* int32 words of four or two e8m0 groups */
        cJSON_AddStringToObject(o, "weight_scale_layout",
                                m->scale_layout == HC_SCALES_UMMA ? "umma" : "mxmma");
    cJSON_AddBoolToObject(o, "kernel_weight_signed", m->kernel_weight_signed);
    cJSON_AddBoolToObject(o, "use_fused_e8m0_scale", m->use_fused_e8m0);
    cJSON_AddBoolToObject(o, "use_int_weight_scale", m->use_int_weight_scale);
    cJSON_AddBoolToObject(o, "scale_applied_on_c", m->to_apply_on_c);
    cJSON_AddBoolToObject(o, "int_to_fp_preprocessed", m->preprocess_int2fp);
}

/* The per-layer record of the output quantization_config (docs/output-format.md). */
static cJSON *layer_record(const hc_conv_plan *plan, const hc_conv_layer *L)
{
    const hc_layer_config *c = &L->cfg;
    const hc_layer_meta *m = &L->meta;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    cJSON_AddStringToObject(o, "weight_dtype", fmt_name(c->weight_format));
    cJSON_AddStringToObject(o, "activation_dtype", fmt_name(c->act_format));
    cJSON_AddStringToObject(o, "param_dtype", fmt_name(c->param_format));
    cJSON_AddStringToObject(o, "scale_dtype", fmt_name(m->scale_format));
    cJSON_AddStringToObject(o, "scale_type", hc_scale_type_name(m->scale_type));
    cJSON_AddNumberToObject(o, "group_size", (double)c->group_size);
    cJSON_AddNumberToObject(o, "group_size_n", (double)c->group_size_n);
    cJSON_AddBoolToObject(o, "has_zero_point", c->has_zero_point);
    cJSON_AddBoolToObject(o, "is_fp_zero_point", c->is_fp_zero_point);
    cJSON_AddBoolToObject(o, "has_bias", L->has_bias);
    cJSON_AddNumberToObject(o, "num_experts", m->is_moe ? (double)m->E : 0);
    cJSON_AddNumberToObject(o, "shape_n", (double)m->N);
    cJSON_AddNumberToObject(o, "shape_k", (double)m->K);
    char arch[16];
    snprintf(arch, sizeof arch, "sm%d", c->sm);
    cJSON_AddStringToObject(o, "arch", arch);
    if (plan->layout == HC_LAYOUT_TILES) kernel_keys(o, m);
    char *lc = hc_layer_config_json(c, m, L->has_bias,
                                    L->has_global && c->scale_type != HC_SCALE_TENSOR,
                                    plan->weight_e0m[L - plan->layers]);
    if (lc) cJSON_AddItemToObject(o, "layer_config", cJSON_Parse(lc)); /* LayerConfig(**obj) */
    free(lc);
    if (L->kind == HC_SRC_QUANTIZED) { /* docs/checkpoints.md */
        cJSON_AddStringToObject(o, "source_format", L->source_format);
        cJSON_AddBoolToObject(o, "lossless", L->lossless);
        cJSON_AddBoolToObject(o, "requantized", L->requant);
        if (L->extra) cJSON_AddStringToObject(o, "input_perm", L->extra->name);
        if (L->note[0]) cJSON_AddStringToObject(o, "note", L->note);
    }
    return o;
}

/* The float layer's quantization target as hc_target_set_field strings, so
 * that `humming-convert report` can rebuild the plan from the output alone. */
static cJSON *target_record(const hc_target *t)
{
    static const char *const zp[] = {"none", "int", "float"};
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    char g[32];
    if (t->group_size > 0) snprintf(g, sizeof g, "%lld", (long long)t->group_size);
    else snprintf(g, sizeof g, "%s", t->group_size == 0 ? "channel" : "tensor");
    cJSON_AddStringToObject(o, "weight_dtype", fmt_name(t->weight_format));
    cJSON_AddStringToObject(o, "group_size", g);
    snprintf(g, sizeof g, "%lld", (long long)t->group_size_n);
    cJSON_AddStringToObject(o, "group_size_n", g);
    cJSON_AddStringToObject(o, "scale_dtype", fmt_name(t->scale_format));
    cJSON_AddStringToObject(o, "zero_point", zp[t->zero_point]);
    cJSON_AddStringToObject(o, "global_scale", t->global_scale == HC_TARGET_S2_CHANNEL ? "channel"
                                               : t->global_scale ? "true" : "false");
    cJSON_AddStringToObject(o, "activation", fmt_name(t->activation));
    cJSON_AddStringToObject(o, "quantizer", t->rounding == HC_TARGET_MSE ? "mse" : "rtn");
    return o;
}

/* quantization_config: in the canonical layout, first the keys vLLM and
 * Humming read (hc_conv_canonical_config); then, for both layouts, our own
 * records under names that are no Humming field or alias. */
static hc_status quant_record(const hc_convert_options *opts, const hc_conv_plan *plan,
                              cJSON *source_qc, cJSON **out, hc_error *err)
{
    cJSON *q = cJSON_CreateObject(), *layers = cJSON_CreateObject();
    *out = NULL;
    if (q == NULL || layers == NULL) {
        cJSON_Delete(q);
        cJSON_Delete(layers);
        cJSON_Delete(source_qc);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory building quantization_config");
    }
    char arch[16];
    snprintf(arch, sizeof arch, "sm%d", opts->sm);
    int tiles = plan->layout == HC_LAYOUT_TILES;
    /* tiles: a name no stock engine takes for Humming's canonical form */
    cJSON_AddStringToObject(q, "quant_method", tiles ? "humming-convert-tiles" : "humming");
    hc_status st = tiles ? HC_OK : hc_conv_canonical_config(plan, q, err);
    if (st != HC_OK) {
        cJSON_Delete(q);
        cJSON_Delete(layers);
        cJSON_Delete(source_qc);
        return st;
    }
    cJSON_AddStringToObject(q, "format", tiles ? "humming-kernel-ready" : "humming-canonical");
    cJSON_AddStringToObject(q, "layout", tiles ? "tiles" : "canonical");
    cJSON_AddNumberToObject(q, "format_version", 2);
    if (tiles) { /* the tensors are those of this Humming; layout_version: ours of them */
        cJSON_AddStringToObject(q, "humming_version", plan->release);
        cJSON_AddNumberToObject(q, "layout_version", HC_TILES_LAYOUT_VERSION);
    }
    cJSON_AddStringToObject(q, "producer", "humming-convert " HC_VERSION);
    cJSON_AddStringToObject(q, "arch", arch);
    cJSON_AddStringToObject(q, "activation_dtype", fmt_name(plan->activation));
    if (opts->command_line) cJSON_AddStringToObject(q, "command_line", opts->command_line);
    if (source_qc) cJSON_AddItemToObject(q, "source_quantization_config", source_qc);
    for (int i = 0; i < plan->n_layers; i++) {
        const hc_conv_layer *L = &plan->layers[i];
        cJSON *rec = layer_record(plan, L);
        if (rec && L->kind == HC_SRC_FLOAT) {
            cJSON_AddStringToObject(rec, "source_format", "float");
            cJSON_AddItemToObject(rec, "quant_target", target_record(&L->target));
            cJSON_AddStringToObject(rec, "why", L->why);
        } else if (rec && L->kind == HC_SRC_HUMMING) { /* quantized: layer_record has it */
            cJSON_AddStringToObject(rec, "source_format", "humming");
        }
        if (rec) cJSON_AddItemToObject(layers, L->prefix, rec);
    }
    cJSON_AddItemToObject(q, "layers", layers);
    *out = q;
    return HC_OK;
}

hc_status hc_conv_config_text(const hc_convert_options *opts, const hc_conv_plan *plan,
                              char **out_text, hc_error *err)
{
    char in_path[4096], *text = NULL;
    HC_TRY(hc_path_join(in_path, sizeof in_path, opts->in_dir, "config.json", err));
    HC_TRY(hc_file_read_all(in_path, &text, NULL, err));
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (root == NULL) HC_FAIL(err, HC_ERR_FORMAT, "%s: not valid JSON", in_path);
    cJSON *source = cJSON_DetachItemFromObjectCaseSensitive(root, "quantization_config");
    if (plan->layout == HC_LAYOUT_CANONICAL) { /* the dtype the 16-bit scales were written in */
        static const char *const keys[] = {"torch_dtype", "dtype"};
        const char *param = hc_format_get(plan->param_format)->name;
        for (int i = 0; i < 2; i++)
            if (cJSON_GetObjectItemCaseSensitive(root, keys[i]) || i == 0) {
                cJSON_DeleteItemFromObjectCaseSensitive(root, keys[i]);
                cJSON_AddStringToObject(root, keys[i], param);
            }
    }
    cJSON *q = NULL;
    hc_status st = quant_record(opts, plan, source, &q, err);
    char *out = q ? (cJSON_AddItemToObject(root, "quantization_config", q), cJSON_Print(root)) : NULL;
    cJSON_Delete(root);
    HC_TRY(st);
    HC_CHECK_ALLOC(err, out, "config.json");
    *out_text = out;
    return HC_OK;
}

hc_status hc_conv_write_config(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *dir, hc_error *err)
{
    char out_path[4096], *out = NULL;
    HC_TRY(hc_path_join(out_path, sizeof out_path, dir, "config.json", err));
    HC_TRY(hc_conv_config_text(opts, plan, &out, err));
    hc_status st = hc_fs_write_file(out_path, out, strlen(out), err);
    free(out);
    return st;
}

/* Files we regenerate or that describe the input's quantization (an input
 * that is our own output has its manifest and report, which would clash
 * with the new ones). */
static int is_weight_or_config(const char *name)
{
    static const char *const skip[] = {"config.json", "model.safetensors.index.json",
                                       "quantize_config.json", "quant_config.json",
                                       "hf_quant_config.json", HC_MANIFEST_NAME, NULL};
    size_t len = strlen(name);
    if (len > 12 && strcmp(name + len - 12, ".safetensors") == 0) return 1;
    if (strncmp(name, "humming_report.", 15) == 0) return 1;
    for (int i = 0; skip[i]; i++)
        if (strcmp(name, skip[i]) == 0) return 1;
    return 0;
}

hc_status hc_conv_copy_side_files(const char *in_dir, const char *dir, hc_error *err)
{
    DIR *d = opendir(in_dir);
    if (d == NULL) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", in_dir, strerror(errno));
    struct dirent *e;
    hc_status st = HC_OK;
    while (st == HC_OK && (e = readdir(d)) != NULL) {
        char src[4096], dst[4096];
        struct stat sb;
        if (e->d_name[0] == '.' || is_weight_or_config(e->d_name)) continue;
        st = hc_path_join(src, sizeof src, in_dir, e->d_name, err);
        if (st != HC_OK || stat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        st = hc_path_join(dst, sizeof dst, dir, e->d_name, err);
        if (st == HC_OK) st = hc_fs_copy_file(src, dst, err);
    }
    closedir(d);
    return st;
}
