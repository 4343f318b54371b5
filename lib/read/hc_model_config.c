/* hc_model_config.c - config.json reading for Humming-format checkpoints. */
#include "hc_model_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"
#include "hc_json.h"

hc_status hc_file_read_all(const char *path, char **out, size_t *len_out, hc_error *err)
{
    return hc_fs_read_file(path, HC_FS_MAX_JSON, 0, out, len_out, err);
}

/* Maps a torch/Humming dtype string to a format, dropping "torch." and fn/fnu. */
static int parse_dtype_name(const char *s, hc_format_id *out)
{
    if (strncmp(s, "torch.", 6) == 0) s += 6;
    return hc_format_parse(s, out);
}

static hc_status get_dtype_field(const cJSON *q, const char *key, const char *path,
                                 hc_format_id *out, int *present, hc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, key);
    *present = v != NULL && !cJSON_IsNull(v);
    if (!*present) return HC_OK;
    if (!cJSON_IsString(v))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s must be a string", path, key);
    if (parse_dtype_name(v->valuestring, out) != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s: unknown dtype \"%s\"", path,
                key, v->valuestring);
    return HC_OK;
}

/* Largest group size accepted from a config (the CLI allows the same). */
#define MAX_GROUP_SIZE (1LL << 20)

/* Integers may be JSON numbers or numeric strings (Humming writes both); the
 * value must lie in [lo, hi] (hc_json_int: no undefined casts). */
static hc_status get_int_field(const cJSON *q, const char *key, const char *path,
                               long long lo, long long hi, int64_t *out, hc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, key);
    if (v == NULL || cJSON_IsNull(v)) return HC_OK;
    const char *why = hc_json_int(v, lo, hi, 1, out);
    if (why == NULL) return HC_OK;
    if (!strcmp(why, "is not an integer") || !strcmp(why, "is not a number"))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s must be an integer", path, key);
    char shown[64];
    if (cJSON_IsNumber(v)) snprintf(shown, sizeof shown, "%g", v->valuedouble);
    else snprintf(shown, sizeof shown, "\"%.40s\"", v->valuestring);
    HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s = %s is out of range (%lld .. %lld)",
            path, key, shown, lo, hi);
}

static hc_status get_bool_field(const cJSON *q, const char *key, const char *path, int *out,
                                hc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, key);
    if (v == NULL || cJSON_IsNull(v)) return HC_OK;
    if (!cJSON_IsBool(v))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s must be true or false", path, key);
    *out = cJSON_IsTrue(v);
    return HC_OK;
}

/* First present key among aliases, e.g. b_dtype / weight_dtype / dtype. */
static const char *first_key(const cJSON *q, const char *const *keys)
{
    for (; *keys; keys++)
        if (cJSON_GetObjectItemCaseSensitive(q, *keys) != NULL) return *keys;
    return NULL;
}

static hc_status parse_scale_type(const cJSON *q, const char *path, hc_humming_qconfig *c,
                                  hc_error *err)
{
    static const struct { const char *name; hc_scale_type type; } names[] = {
        {"channel", HC_SCALE_CHANNEL}, {"group", HC_SCALE_GROUP}, {"block", HC_SCALE_BLOCK},
        {"tensor", HC_SCALE_TENSOR}, {"group_tensor", HC_SCALE_GROUP_TENSOR}};
    c->scale_type = c->group_size_n > 1 ? HC_SCALE_BLOCK
                    : c->group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP;
    static const char *const keys[] = {"weight_scale_type", "scale_type", NULL};
    const char *key = first_key(q, keys);
    const cJSON *v = key ? cJSON_GetObjectItemCaseSensitive(q, key) : NULL;
    if (v == NULL || cJSON_IsNull(v)) return HC_OK;
    if (cJSON_IsString(v)) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(v->valuestring, names[i].name) == 0) {
                c->scale_type = names[i].type;
                return HC_OK;
            }
    }
    HC_FAIL(err, HC_ERR_FORMAT,
            "%s: quantization_config.weight_scale_type must be one of channel, group, block, "
            "tensor, group_tensor", path);
}


/* weight_scale_2_type: "tensor" (a per-tensor weight_scale_2) next to group
 * or channel scales, or "channel" (one per output row, in the model dtype)
 * next to group scales (HummingWeightSchema's rule). */
static hc_status parse_scale_2_type(const cJSON *q, const char *path, hc_humming_qconfig *c,
                                    hc_error *err)
{
    static const char *const keys[] = {"weight_scale_2_type", "scale_2_type", NULL};
    const char *key = first_key(q, keys);
    const cJSON *v = key ? cJSON_GetObjectItemCaseSensitive(q, key) : NULL;
    if (v == NULL || cJSON_IsNull(v) || (cJSON_IsString(v) && !strcmp(v->valuestring, "none")))
        return HC_OK;
    if (!cJSON_IsString(v) || (strcmp(v->valuestring, "tensor") && strcmp(v->valuestring, "channel")))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s must be none, tensor or channel",
                path, key);
    c->has_scale_2 = 1;
    if (!strcmp(v->valuestring, "channel")) {
        if (c->scale_type != HC_SCALE_GROUP)
            HC_FAIL(err, HC_ERR_FORMAT, "%s: a per-channel weight_scale_2 needs group scales "
                    "(weight_scale_type is %s)", path, hc_scale_type_name(c->scale_type));
        c->scale_2_channel = 1;
        return HC_OK;
    }
    if (c->scale_type == HC_SCALE_GROUP) c->scale_type = HC_SCALE_GROUP_TENSOR;
    else if (c->scale_type != HC_SCALE_CHANNEL && c->scale_type != HC_SCALE_GROUP_TENSOR)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: a per-tensor weight_scale_2 needs group or channel "
                "scales (weight_scale_type is %s)", path, hc_scale_type_name(c->scale_type));
    return HC_OK;
}

/* The activations (HummingInputSchema: a_dtype / input_dtype; the shared
 * alias "dtype" names the weights here) and vLLM's allow_fallback. Only
 * per-token dynamic activation scales exist in our outputs. */
static hc_status parse_input(const cJSON *q, const char *path, hc_humming_qconfig *c,
                             hc_error *err)
{
    static const char *const act_keys[] = {"a_dtype", "input_dtype", NULL};
    static const char *const mode_keys[] = {"input_quant_mode", "quant_mode", "quantization_mode", NULL};
    const char *key = first_key(q, act_keys);
    if (key) HC_TRY(get_dtype_field(q, key, path, &c->act_format, &c->has_act, err));
    if (c->has_act)
        HC_TRY_CTX(err, hc_activation_parse(hc_format_get(c->act_format)->name, &c->act_format, err),
                   "%s: quantization_config.%s: ", path, key);
    c->allow_fallback = 1;
    HC_TRY(get_bool_field(q, "allow_fallback", path, &c->allow_fallback, err));
    int64_t igs = 0, hadamard = 0;
    HC_TRY(get_int_field(q, "input_scale_group_size", path, 0, MAX_GROUP_SIZE, &igs, err));
    HC_TRY(get_int_field(q, "hadamard_block_size", path, -1, MAX_GROUP_SIZE, &hadamard, err));
    key = first_key(q, mode_keys);
    const cJSON *m = key ? cJSON_GetObjectItemCaseSensitive(q, key) : NULL;
    int token_mode = m == NULL || cJSON_IsNull(m) ||
                     (cJSON_IsString(m) && (!strcmp(m->valuestring, "dynamic_token") ||
                                            !strcmp(m->valuestring, "none")));
    if (igs != 0 || !token_mode)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: only per-token dynamic activation scales are read "
                "(input_scale_group_size 0, input_quant_mode dynamic_token)", path);
    if (hadamard != 0 && hadamard != 1)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: hadamard_block_size %lld: Hadamard-rotated weights "
                "are not read", path, (long long)hadamard);
    return HC_OK;
}

/* "+:" rules of quantization_config.dynamic give layers their own format;
 * "-:" rules only skip modules, whose weights stay float and are copied. */
static hc_status check_dynamic(const cJSON *q, const char *path, hc_error *err)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(q, "dynamic"), *r;
    if (!cJSON_IsObject(d)) return HC_OK;
    cJSON_ArrayForEach(r, d)
        if (r->string && r->string[0] == '+')
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: quantization_config.dynamic rule \"%s\": "
                    "per-layer formats are not read yet (convert a checkpoint with one format)",
                    path, r->string);
    return HC_OK;
}

static hc_status parse_param_dtype(const cJSON *root, const char *path, hc_format_id *out,
                                   hc_error *err)
{
    static const char *const keys[] = {"torch_dtype", "dtype", NULL};
    const char *key = first_key(root, keys);
    *out = HC_FMT_F16;
    if (key == NULL) return HC_OK; /* transformers' default is float32; we need 16-bit */
    hc_format_id f;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!cJSON_IsString(v) || parse_dtype_name(v->valuestring, &f) != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s must be a dtype string", path, key);
    /* float32 models run with fp16 activations by default */
    *out = f == HC_FMT_BF16 ? HC_FMT_BF16 : HC_FMT_F16;
    return HC_OK;
}

static hc_status parse_weight_dtype(const cJSON *q, const char *path, hc_humming_qconfig *c,
                                    hc_error *err)
{
    static const char *const keys[] = {"b_dtype", "weight_dtype", "dtype", NULL};
    const char *key = first_key(q, keys);
    int present = 0;
    if (key == NULL)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config has no dtype (b_dtype/dtype/weight_dtype)",
                path);
    HC_TRY(get_dtype_field(q, key, path, &c->weight_format, &present, err));
    if (!present) HC_FAIL(err, HC_ERR_FORMAT, "%s: quantization_config.%s is null", path, key);
    const hc_format_info *f = hc_format_get(c->weight_format);
    if (f->kind == HC_KIND_INT) /* Humming stores signed ints as offset binary */
        c->weight_format = (hc_format_id)(HC_FMT_UINT1 + f->bits - 1);
    if (f->bits > 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: weight dtype %s: weights must be 1 to 8 bits", path,
                f->name);
    return HC_OK;
}

static hc_status parse_quant_fields(const cJSON *q, const char *path, hc_humming_qconfig *c,
                                    hc_error *err)
{
    static const char *const scale_keys[] = {"bs_dtype", "weight_scale_dtype", "scale_dtype", NULL};
    static const char *const gs_keys[] = {"weight_scale_group_size", "group_size", NULL};
    static const char *const gsn_keys[] = {"weight_scale_group_size_n", "group_size_n", NULL};
    HC_TRY(parse_weight_dtype(q, path, c, err));
    const char *key = first_key(q, gs_keys);
    /* group sizes <= 0 mean channel-wise (spec 7.8); huge ones are nonsense */
    if (key) HC_TRY(get_int_field(q, key, path, INT32_MIN, MAX_GROUP_SIZE, &c->group_size, err));
    if (c->group_size < 0) c->group_size = 0;
    key = first_key(q, gsn_keys);
    if (key) HC_TRY(get_int_field(q, key, path, 0, MAX_GROUP_SIZE, &c->group_size_n, err));
    HC_TRY(get_bool_field(q, "has_zero_point", path, &c->has_zero_point, err));
    HC_TRY(get_bool_field(q, "is_fp_zero_point", path, &c->is_fp_zero_point, err));
    HC_TRY(parse_scale_type(q, path, c, err));
    HC_TRY(parse_scale_2_type(q, path, c, err));
    HC_TRY(parse_input(q, path, c, err));
    int present = 0;
    key = first_key(q, scale_keys);
    if (key) HC_TRY(get_dtype_field(q, key, path, &c->scale_format, &present, err));
    if (!present) c->scale_format = c->param_format;
    if (c->scale_type == HC_SCALE_BLOCK) c->scale_format = HC_FMT_F32;
    return HC_OK;
}

hc_status hc_humming_qconfig_parse(const char *json_text, const char *path,
                                   hc_humming_qconfig *out, hc_error *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_Parse(json_text);
    if (root == NULL || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: not a valid JSON object", path);
    }
    hc_status st = parse_param_dtype(root, path, &out->param_format, err);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    const cJSON *m = q ? cJSON_GetObjectItemCaseSensitive(q, "quant_method") : NULL;
    if (st == HC_OK && !cJSON_IsObject(q))
        st = hc_error_set(err, HC_ERR_UNSUPPORTED,
                          "%s: no quantization_config: not a Humming-format checkpoint", path);
    else if (st == HC_OK && (!cJSON_IsString(m) || strcmp(m->valuestring, "humming") != 0))
        st = hc_error_set(err, HC_ERR_UNSUPPORTED,
                          "%s: quant_method is \"%s\"; this version reads only \"humming\"", path,
                          cJSON_IsString(m) ? m->valuestring : "(missing)");
    if (st == HC_OK) st = parse_quant_fields(q, path, out, err);
    if (st == HC_OK) st = check_dynamic(q, path, err);
    cJSON_Delete(root);
    return st;
}

static void copy_string_field(const cJSON *o, const char *key, char *dst, size_t len)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    snprintf(dst, len, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

hc_status hc_model_info_parse(const char *json_text, const char *path, hc_model_info *out,
                              hc_error *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_Parse(json_text);
    if (root == NULL || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: not a valid JSON object", path);
    }
    hc_status st = parse_param_dtype(root, path, &out->param_format, err);
    copy_string_field(root, "model_type", out->model_type, sizeof out->model_type);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    out->is_float = q == NULL || cJSON_IsNull(q);
    if (!out->is_float) {
        copy_string_field(q, "quant_method", out->quant_method, sizeof out->quant_method);
        if (out->quant_method[0] == '\0') snprintf(out->quant_method, sizeof out->quant_method, "%s", "(none)");
    }
    cJSON_Delete(root);
    return st;
}

hc_status hc_activation_parse(const char *name, hc_format_id *out, hc_error *err)
{
    hc_format_id f;
    const char *s = strncmp(name, "torch.", 6) == 0 ? name + 6 : name;
    if (hc_format_parse(s, &f) == 0 &&
        (f == HC_FMT_F16 || f == HC_FMT_BF16 || f == HC_FMT_F8E4M3 || f == HC_FMT_F8E5M2 ||
         f == HC_FMT_INT8 || f == HC_FMT_INT4)) {
        *out = f;
        return HC_OK;
    }
    HC_FAIL(err, HC_ERR_ARG,
            "unknown activation dtype \"%s\" (use float16, bfloat16, float8e4m3, float8e5m2, int8 "
            "or int4)", name);
}

hc_status hc_arch_parse(const char *name, int *sm_out, hc_error *err)
{
    static const int known[] = {75, 80, 86, 89, 90, 100, 120};
    const char *s = name;
    if (strncmp(s, "sm", 2) == 0) s += 2;
    if (*s == '_') s++;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end != s && (*end == '\0' || strcmp(end, "a") == 0 || strcmp(end, "f") == 0))
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (v == known[i]) {
                *sm_out = (int)v;
                return HC_OK;
            }
    HC_FAIL(err, HC_ERR_ARG,
            "unknown arch \"%s\" (use sm75, sm80, sm86, sm89, sm90, sm100 or sm120)", name);
}

hc_format_id hc_humming_qconfig_activation(const hc_humming_qconfig *q)
{
    if (!q->has_act) return q->param_format;
    /* check_and_fallback_input_schema: "prefer wna16 for groupwise weight" */
    if (q->allow_fallback && hc_format_get(q->act_format)->bits == 8 && q->group_size > 0)
        return q->param_format;
    return q->act_format;
}
