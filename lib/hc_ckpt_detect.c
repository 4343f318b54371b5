/* hc_ckpt_detect.c - which quantized-checkpoint format a directory holds
 * (config.json quantization_config, quantize_config.json, quant_config.json,
 * hf_quant_config.json; formats spec 1.6, 2), its skip lists with each
 * format's matching rule, and which tensors make up a layer (spec 10). */
#include "hc_ckpt.h"

#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"
#include "hc_model_config.h"
#include "hc_regex.h"

const char *hc_ckpt_method_name(hc_ckpt_method m)
{
    static const char *const names[] = {"none", "gptq", "awq", "compressed-tensors",
                                        "modelopt", "mxfp4", "fp8"};
    return m <= HC_CKPT_FP8 ? names[m] : "?";
}

static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int64_t get_int(const cJSON *o, const char *key, int64_t def)
{
    const cJSON *v = get(o, key);
    if (cJSON_IsNumber(v)) return (int64_t)v->valuedouble;
    if (cJSON_IsString(v)) return strtoll(v->valuestring, NULL, 10);
    return def;
}

static int get_bool(const cJSON *o, const char *key, int def)
{
    const cJSON *v = get(o, key);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return def;
}

static void get_str(const cJSON *o, const char *key, char *dst, size_t len)
{
    const cJSON *v = get(o, key);
    if (cJSON_IsString(v)) snprintf(dst, len, "%s", v->valuestring);
}

/* Checks one pattern of a skip list or target list: it must fit its field
 * (a cut pattern would match other modules) and, as "re:...", pass the
 * regex guard. */
static hc_status check_pattern(const hc_ckpt_config *c, const char *key, const char *s,
                               size_t room, hc_error *err)
{
    size_t n = strlen(s);
    if (n >= room)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s entry '%.200s%s' is %zu bytes, longer than the "
                "%zu this reader holds", c->source_file, key, s, n > 200 ? "..." : "", n,
                room - 1);
    if (strncmp(s, "re:", 3) != 0) return HC_OK;
    hc_regex re;
    char why[256];
    if (hc_regex_compile(&re, s + 3, HC_RE_PYTHON, HC_RE_PREFIX, why, sizeof why) != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s entry '%s': bad regular expression: %s",
                c->source_file, key, s, why);
    hc_regex_free(&re);
    return HC_OK;
}

static hc_status add_skip(hc_ckpt_config *c, const char *key, const char *s, hc_error *err)
{
    if (c->n_skip >= HC_CKPT_MAX_SKIP) return HC_OK;
    HC_TRY(check_pattern(c, key, s, sizeof c->skip[0], err));
    snprintf(c->skip[c->n_skip++], sizeof c->skip[0], "%s", s);
    return HC_OK;
}

/* The skip list under key: a single name or a list of names. */
static hc_status add_skips(hc_ckpt_config *c, const cJSON *q, const char *key, hc_error *err)
{
    const cJSON *list = get(q, key), *it;
    if (cJSON_IsString(list)) return add_skip(c, key, list->valuestring, err);
    cJSON_ArrayForEach(it, list)
        if (cJSON_IsString(it)) HC_TRY(add_skip(c, key, it->valuestring, err));
    return HC_OK;
}

static hc_status parse_gptq(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    c->method = HC_CKPT_GPTQ;
    c->bits = (int)get_int(q, "bits", 4);
    c->group_size = get_int(q, "group_size", 128);
    c->desc_act = get_bool(q, "desc_act", 0);
    c->sym = get_bool(q, "sym", 1);
    char fmt[32] = "gptq";
    get_str(q, "checkpoint_format", fmt, sizeof fmt);
    if (get_bool(q, "is_marlin_format", 0) || strcmp(fmt, "marlin") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Marlin-serialised GPTQ (checkpoint_format "
                "\"marlin\" / is_marlin_format) is not read; export the model as plain GPTQ",
                c->source_file);
    if (strcmp(fmt, "gptq") != 0 && strcmp(fmt, "gptq_v2") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: GPTQ checkpoint_format \"%s\": supported are "
                "\"gptq\" (v1 zeros, stored minus one) and \"gptq_v2\"", c->source_file, fmt);
    c->gptq_v2 = strcmp(fmt, "gptq_v2") == 0;
    char pack[16] = "int32";
    get_str(q, "pack_dtype", pack, sizeof pack);
    (void)pack; /* the reader follows the qweight dtype */
    HC_TRY(add_skips(c, q, "modules_to_not_convert", err));
    const cJSON *dyn = get(q, "dynamic"), *it;
    cJSON_ArrayForEach(it, dyn) { /* GPTQModel "-:regex" keys skip modules */
        if (it->string == NULL || strncmp(it->string, "-:", 2) != 0) continue;
        char *pat = malloc(strlen(it->string) + 2);
        HC_CHECK_ALLOC(err, pat, "dynamic key");
        sprintf(pat, "re:%s", it->string + 2);
        hc_status st = add_skip(c, "dynamic", pat, err);
        free(pat);
        HC_TRY(st);
    }
    return HC_OK;
}

static hc_status parse_awq(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    c->method = HC_CKPT_AWQ;
    c->bits = (int)get_int(q, "bits", get_int(q, "w_bit", 4));
    c->group_size = get_int(q, "group_size", get_int(q, "q_group_size", 128));
    c->awq_zero_point = get_bool(q, "zero_point", 1);
    snprintf(c->awq_version, sizeof c->awq_version, "gemm");
    get_str(q, "version", c->awq_version, sizeof c->awq_version);
    for (char *p = c->awq_version; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    char backend[32] = "";
    get_str(q, "backend", backend, sizeof backend);
    if (strcmp(c->awq_version, "gemv_fast") == 0 || strcmp(backend, "llm-awq") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ gemv_fast / llm-awq checkpoints store "
                "scaled_zeros = -(s*z) rounded to fp16, so (q - z) * s cannot be recovered "
                "exactly and the kernel's rounding is not pinned down; refused", c->source_file);
    if (strcmp(c->awq_version, "marlin") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ version \"marlin\" (Marlin-tiled tensors) is "
                "not read", c->source_file);
    if (strcmp(c->awq_version, "gemm") != 0 && strcmp(c->awq_version, "gemv") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AWQ version \"%s\": supported are gemm and gemv",
                c->source_file, c->awq_version);
    HC_TRY(add_skips(c, q, "modules_to_not_convert", err));
    c->dialect = HC_SKIP_SUBSTRING;
    return HC_OK;
}

static hc_status parse_ct_group(const hc_ckpt_config *c, const cJSON *g, hc_ckpt_ct_group *out,
                                hc_error *err)
{
    const cJSON *w = get(g, "weights"), *t, *it;
    memset(out, 0, sizeof *out);
    cJSON_ArrayForEach(it, (t = get(g, "targets"))) {
        if (!cJSON_IsString(it) || out->n_targets >= 8) continue;
        HC_TRY(check_pattern(c, "config_groups targets", it->valuestring, sizeof out->targets[0],
                             err));
        snprintf(out->targets[out->n_targets++], sizeof out->targets[0], "%s", it->valuestring);
    }
    get_str(g, "format", out->format, sizeof out->format);
    out->num_bits = (int)get_int(w, "num_bits", 8);
    snprintf(out->type, sizeof out->type, "int");
    get_str(w, "type", out->type, sizeof out->type);
    get_str(w, "strategy", out->strategy, sizeof out->strategy);
    out->group_size = get_int(w, "group_size", 0);
    out->symmetric = get_bool(w, "symmetric", 1);
    get_str(w, "actorder", out->actorder, sizeof out->actorder);
    const cJSON *bs = get(w, "block_structure");
    if (cJSON_IsArray(bs) && cJSON_GetArraySize(bs) == 2) {
        out->block[0] = (int64_t)cJSON_GetArrayItem(bs, 0)->valuedouble;
        out->block[1] = (int64_t)cJSON_GetArrayItem(bs, 1)->valuedouble;
    }
    return HC_OK;
}

static hc_status parse_ct(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    c->method = HC_CKPT_CT;
    get_str(q, "format", c->ct_format, sizeof c->ct_format);
    char status[32] = "compressed";
    get_str(q, "quantization_status", status, sizeof status);
    if (strcmp(status, "compressed") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors quantization_status is \"%s\"; "
                "only \"compressed\" checkpoints hold packed weights (a frozen / fakequant "
                "model is float: re-export it compressed)", c->source_file, status);
    if (get(q, "transform_config"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors transform_config present: the "
                "weights are rotated and the runtime must apply matching online transforms, "
                "which Humming does not do; refused", c->source_file);
    const cJSON *sp = get(q, "sparsity_config");
    char sfmt[32] = "dense";
    if (sp) get_str(sp, "format", sfmt, sizeof sfmt);
    if (sp && strcmp(sfmt, "dense") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors sparsity_config format \"%s\" "
                "changes the weight layout; refused", c->source_file, sfmt);
    if (strcmp(c->ct_format, "dense") == 0 || strcmp(c->ct_format, "fakequant") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors format \"%s\" keeps float "
                "weights; refused (convert it as a float checkpoint)", c->source_file,
                c->ct_format);
    const cJSON *groups = get(q, "config_groups"), *it;
    cJSON_ArrayForEach(it, groups)
        if (c->n_ct < HC_CKPT_MAX_GROUPS) HC_TRY(parse_ct_group(c, it, &c->ct[c->n_ct++], err));
    if (c->n_ct == 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: compressed-tensors config has no config_groups",
                c->source_file);
    HC_TRY(add_skips(c, q, "ignore", err));
    c->dialect = HC_SKIP_CT;
    return HC_OK;
}

static hc_status parse_modelopt(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    c->method = HC_CKPT_MODELOPT;
    get_str(q, "quant_algo", c->quant_algo, sizeof c->quant_algo);
    c->group_size = get_int(q, "group_size", 16);
    c->dialect = HC_SKIP_FNMATCH;
    HC_TRY(add_skips(c, q, "exclude_modules", err));
    return add_skips(c, q, "ignore", err);
}

static hc_status parse_fp8(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    c->method = HC_CKPT_FP8;
    const cJSON *bs = get(q, "weight_block_size");
    if (cJSON_IsArray(bs) && cJSON_GetArraySize(bs) == 2) {
        c->block[0] = (int64_t)cJSON_GetArrayItem(bs, 0)->valuedouble;
        c->block[1] = (int64_t)cJSON_GetArrayItem(bs, 1)->valuedouble;
    }
    c->dialect = HC_SKIP_SUBSTRING;
    HC_TRY(add_skips(c, q, "ignored_layers", err));
    return add_skips(c, q, "modules_to_not_convert", err);
}

/* quantization_config object of config.json, or a side file's object. */
static hc_status parse_qconfig(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    char m[32] = "";
    get_str(q, "quant_method", m, sizeof m);
    for (char *p = m; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    snprintf(c->quant_method, sizeof c->quant_method, "%s", m);
    if (strcmp(m, "gptq") == 0) return parse_gptq(q, c, err);
    if (strcmp(m, "awq") == 0) return parse_awq(q, c, err);
    if (strcmp(m, "compressed-tensors") == 0) return parse_ct(q, c, err);
    if (strcmp(m, "modelopt") == 0) return parse_modelopt(q, c, err);
    if (strcmp(m, "fp8") == 0) return parse_fp8(q, c, err);
    if (strcmp(m, "mxfp4") == 0) {
        c->method = HC_CKPT_MXFP4;
        c->dialect = HC_SKIP_FNMATCH;
        return add_skips(c, q, "modules_to_not_convert", err);
    }
    if (m[0] == '\0' && get(q, "w_bit")) return parse_awq(q, c, err); /* old AutoAWQ file */
    if (m[0] == '\0' && get(q, "bits") && (get(q, "desc_act") || get(q, "sym")))
        return parse_gptq(q, c, err); /* old AutoGPTQ quantize_config.json */
    return HC_OK;
}

/* Parses dir/name if it exists; *found tells. */
static hc_status read_side(const char *dir, const char *name, cJSON **out, hc_error *err)
{
    char path[4096], *text = NULL;
    *out = NULL;
    HC_TRY(hc_path_join(path, sizeof path, dir, name, err));
    if (!hc_path_exists(path)) return HC_OK;
    HC_TRY(hc_file_read_all(path, &text, NULL, err));
    *out = cJSON_Parse(text);
    free(text);
    if (*out == NULL) HC_FAIL(err, HC_ERR_FORMAT, "%s: not valid JSON", path);
    return HC_OK;
}

hc_status hc_ckpt_detect(const char *dir, const char *config_text, hc_ckpt_config *cfg,
                         hc_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    cJSON *root = cJSON_Parse(config_text);
    if (root == NULL) HC_FAIL(err, HC_ERR_FORMAT, "%s/config.json: not valid JSON", dir);
    const cJSON *q = get(root, "quantization_config");
    hc_status st = HC_OK;
    if (cJSON_IsObject(q)) {
        snprintf(cfg->source_file, sizeof cfg->source_file, "config.json");
        st = parse_qconfig(q, cfg, err);
    }
    cJSON_Delete(root);
    static const char *const sides[] = {"hf_quant_config.json", "quantize_config.json",
                                        "quant_config.json"};
    for (int i = 0; st == HC_OK && cfg->method == HC_CKPT_NONE && i < 3; i++) {
        cJSON *side = NULL;
        st = read_side(dir, sides[i], &side, err);
        if (st != HC_OK || side == NULL) continue;
        snprintf(cfg->source_file, sizeof cfg->source_file, "%s", sides[i]);
        const cJSON *producer = get(side, "producer"), *quant = get(side, "quantization");
        char pname[32] = "";
        if (producer) get_str(producer, "name", pname, sizeof pname);
        if (i == 0 && strcmp(pname, "modelopt") == 0 && cJSON_IsObject(quant)) {
            st = parse_modelopt(quant, cfg, err);
            snprintf(cfg->quant_method, sizeof cfg->quant_method, "modelopt");
        } else {
            st = parse_qconfig(cJSON_IsObject(get(side, "quantization_config"))
                                   ? get(side, "quantization_config") : side, cfg, err);
        }
        cJSON_Delete(side);
    }
    if (st == HC_OK && cfg->method == HC_CKPT_GPTQ &&
        (cfg->bits < 2 || cfg->bits > 8 || (cfg->bits > 4 && cfg->bits < 8)))
        st = hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: GPTQ bits %d: supported are 2, 3, 4 "
                          "and 8 (GPTQModel's planar 5-7 bit layouts are not pinned down)",
                          cfg->source_file, cfg->bits);
    return st;
}

/* ---- skip lists ---- */

/* Python re.match of pat (checked by check_pattern when the config was read). */
static int regex_match_start(const char *pat, const char *name)
{
    hc_regex re;
    char why[256];
    if (hc_regex_compile(&re, pat, HC_RE_PYTHON, HC_RE_PREFIX, why, sizeof why) != 0) return 0;
    int m = hc_regex_match(&re, name) == 1;
    hc_regex_free(&re);
    return m;
}

int hc_ckpt_ct_group_for(const hc_ckpt_config *cfg, const char *module)
{
    int fallback = -1;
    for (int i = 0; i < cfg->n_ct; i++)
        for (int t = 0; t < cfg->ct[i].n_targets; t++) {
            const char *x = cfg->ct[i].targets[t];
            if (strncmp(x, "re:", 3) == 0 ? regex_match_start(x + 3, module)
                                          : strcmp(x, module) == 0)
                return i;
            if (strchr(x, '.') == NULL && strncmp(x, "re:", 3) != 0 && fallback < 0)
                fallback = i; /* a module class name such as "Linear" */
        }
    return fallback >= 0 ? fallback : 0;
}

int hc_ckpt_is_skipped(const hc_ckpt_config *cfg, const char *module)
{
    for (int i = 0; i < cfg->n_skip; i++) {
        const char *s = cfg->skip[i];
        if (strncmp(s, "re:", 3) == 0) {
            if (regex_match_start(s + 3, module)) return 1;
            continue;
        }
        switch (cfg->dialect) {
        case HC_SKIP_CT:
            if (strcmp(s, module) == 0) return 1;
            break;
        case HC_SKIP_FNMATCH:
            if (fnmatch(s, module, 0) == 0 || strstr(module, s) != NULL) return 1;
            break;
        default:
            if (strstr(module, s) != NULL) return 1;
        }
    }
    return 0;
}

/* ---- layers from tensors (spec 10) ---- */

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int set_prefix(const char *name, const char *suf, char *prefix, size_t len)
{
    size_t n = strlen(name) - strlen(suf);
    if (n + 1 > len) return 0;
    memcpy(prefix, name, n);
    prefix[n] = '\0';
    return 1;
}

int hc_ckpt_layer_of(const hc_ckpt_config *cfg, const hc_st_tensor *t, hc_ckpt_kind *kind,
                     char *prefix, size_t prefix_len)
{
    const char *n = t->name;
    *kind = HC_CK_NONE;
    if (ends_with(n, ".qweight")) {
        if (!set_prefix(n, ".qweight", prefix, prefix_len)) return 0;
        *kind = cfg->method == HC_CKPT_AWQ ? HC_CK_AWQ : HC_CK_GPTQ;
        return 1;
    }
    if (ends_with(n, ".weight_packed")) {
        if (!set_prefix(n, ".weight_packed", prefix, prefix_len)) return 0;
        *kind = t->dtype == HC_DT_U8 ? HC_CK_CT_FP4 : HC_CK_CT_PACKED;
        return 1;
    }
    if (ends_with(n, "_blocks") && t->dtype == HC_DT_U8 && t->ndim >= 3) {
        if (!set_prefix(n, "_blocks", prefix, prefix_len)) return 0;
        *kind = HC_CK_MXFP4;
        return 1;
    }
    if (ends_with(n, ".weight") && !hc_ckpt_is_float_dtype(t->dtype) && t->ndim == 2 &&
        (t->dtype == HC_DT_U8 || t->dtype == HC_DT_I8 || t->dtype == HC_DT_F8_E4M3 ||
         t->dtype == HC_DT_F8_E5M2)) {
        if (!set_prefix(n, ".weight", prefix, prefix_len)) return 0;
        switch (cfg->method) {
        case HC_CKPT_CT: *kind = HC_CK_CT_UNPACKED; break;
        case HC_CKPT_MODELOPT: *kind = HC_CK_MODELOPT; break;
        case HC_CKPT_FP8: *kind = HC_CK_FP8; break;
        default: return 0;
        }
        return 1;
    }
    return 0;
}

const hc_st_tensor *hc_ckpt_layer_bias(hc_st_model *model, hc_ckpt_kind kind, const char *prefix)
{
    const hc_st_tensor *b = hc_ckpt_find(model, prefix, kind == HC_CK_MXFP4 ? "_bias" : ".bias");
    return b && hc_ckpt_is_float_dtype(b->dtype) ? b : NULL;
}

int hc_ckpt_layer_tensors(hc_st_model *model, hc_ckpt_kind kind, const char *prefix,
                          const hc_st_tensor **out, int max)
{
    static const char *const gptq[] = {".qweight", ".qzeros", ".scales", ".g_idx", NULL};
    static const char *const ct[] = {".weight_packed", ".weight", ".weight_scale",
                                     ".weight_zero_point", ".weight_g_idx", ".weight_shape",
                                     ".weight_global_scale", NULL};
    static const char *const mo[] = {".weight", ".weight_scale", ".weight_scale_2",
                                     ".weight_scale_inv", NULL};
    static const char *const mx[] = {"_blocks", "_scales", NULL};
    const char *const *list = kind == HC_CK_GPTQ || kind == HC_CK_AWQ ? gptq
                              : kind == HC_CK_MXFP4 ? mx
                              : kind == HC_CK_MODELOPT || kind == HC_CK_FP8 ? mo : ct;
    int n = 0;
    for (int i = 0; list[i] && n < max; i++) {
        const hc_st_tensor *t = hc_ckpt_find(model, prefix, list[i]);
        if (t) out[n++] = t;
    }
    return n;
}
