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
#include "hc_json.h"
#include "hc_model_config.h"
#include "hc_regex.h"

const char *hc_ckpt_method_name(hc_ckpt_method m)
{
    static const char *const names[] = {"none", "gptq", "awq", "compressed-tensors",
                                        "modelopt", "mxfp4", "fp8", "quark"};
    return m <= HC_CKPT_QUARK ? names[m] : "?";
}

/* Where a field sits, for messages: "config.json: quantization_config.bits". */
typedef struct {
    const char *file;   /* config.json, quantize_config.json, ... */
    const char *obj;    /* "quantization_config", "config_groups.group_0.weights", ... */
} jwhere;

/* Largest group or block size read from a config (as hc_model_config.c). */
#define MAX_GROUP (1LL << 20)

/* "file: obj.key" (obj empty for a side file's top level), for messages. */
static const char *field(const jwhere *w, const char *key, char buf[256])
{
    snprintf(buf, 256, "%s: %s%s%s", w->file, w->obj, w->obj[0] ? "." : "", key);
    return buf;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

/* o[key] as an integer in [lo, hi] (number or decimal string); def when absent. */
/* compressed-tensors' writer always adds "transform_config" ({} or null when
 * there is none): only one that holds something means rotated weights. */
static int has_transforms(const cJSON *t)
{
    if (t == NULL || cJSON_IsNull(t)) return 0;
    if (!cJSON_IsObject(t) && !cJSON_IsArray(t)) return 1;
    for (const cJSON *c = t->child; c; c = c->next)
        if (has_transforms(c) || (!cJSON_IsObject(c) && !cJSON_IsArray(c) && !cJSON_IsNull(c)))
            return 1;
    return 0;
}

static hc_status get_int(const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t def,
                         int64_t *out, const jwhere *w, hc_error *err)
{
    const cJSON *v = get(o, key);
    *out = def;
    const char *why = v ? hc_json_int(v, lo, hi, 1, out) : NULL;
    if (why == NULL) return HC_OK;
    char shown[64] = "";
    if (cJSON_IsNumber(v)) snprintf(shown, sizeof shown, " = %.17g", v->valuedouble);
    else if (cJSON_IsString(v)) snprintf(shown, sizeof shown, " = \"%.40s\"", v->valuestring);
    char f[256];
    HC_FAIL(err, HC_ERR_FORMAT, "%s%s %s (expected an integer in %lld..%lld)", field(w, key, f),
            shown, why, (long long)lo, (long long)hi);
}

/* A group size: -1 (one group over K) or 1..2^20; 0 and other negatives are refused. */
static hc_status get_group(const cJSON *o, const char *key, int64_t def, int64_t *out,
                           const jwhere *w, hc_error *err)
{
    char f[256];
    HC_TRY(get_int(o, key, -1, MAX_GROUP, def, out, w, err));
    if (*out == 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s = 0: expected -1 (one group over K) or a group size "
                "1..%lld", field(w, key, f), (long long)MAX_GROUP);
    return HC_OK;
}

static hc_status get_bool(const cJSON *o, const char *key, int def, int *out, const jwhere *w,
                          hc_error *err)
{
    const cJSON *v = get(o, key);
    char f[256];
    *out = v ? cJSON_IsTrue(v) : def;
    if (v && !cJSON_IsBool(v)) HC_FAIL(err, HC_ERR_FORMAT, "%s must be true or false", field(w, key, f));
    return HC_OK;
}

/* o[key] into dst when present; a non-string or a value too long for dst is refused. */
static hc_status get_str(const cJSON *o, const char *key, char *dst, size_t len,
                         const jwhere *w, hc_error *err)
{
    const cJSON *v = get(o, key);
    char f[256];
    if (v == NULL) return HC_OK;
    if (!cJSON_IsString(v)) HC_FAIL(err, HC_ERR_FORMAT, "%s must be a string", field(w, key, f));
    if (strlen(v->valuestring) >= len)
        HC_FAIL(err, HC_ERR_FORMAT, "%s = \"%.40s...\" is too long (no known value has %zu or "
                "more characters)", field(w, key, f), v->valuestring, len);
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return HC_OK;
}

/* [rows, cols] block sizes, each 1..2^20 (weight_block_size, block_structure). */
static hc_status get_block(const cJSON *o, const char *key, int64_t block[2], const jwhere *w,
                           hc_error *err)
{
    const cJSON *bs = get(o, key);
    char f[256];
    if (bs == NULL) return HC_OK;
    if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "%s must be an array of two block sizes [rows, cols]",
                field(w, key, f));
    for (int i = 0; i < 2; i++) {
        const char *why = hc_json_int(cJSON_GetArrayItem(bs, i), 1, MAX_GROUP, 0, &block[i]);
        if (why)
            HC_FAIL(err, HC_ERR_FORMAT, "%s[%d] %s (expected an integer in 1..%lld)",
                    field(w, key, f), i, why, (long long)MAX_GROUP);
    }
    return HC_OK;
}

/* Checks one pattern of a skip list or target list: it must fit its field
 * (a cut pattern would match other modules) and, as "re:...", pass the
 * regex guard (hc_regex.h). */
static hc_status check_pattern(const char *file, const char *key, const char *s, size_t room,
                               hc_error *err)
{
    size_t n = strlen(s);
    if (n >= room)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s entry '%.200s%s' is %zu bytes, longer than the "
                "%zu this reader holds", file, key, s, n > 200 ? "..." : "", n, room - 1);
    if (strncmp(s, "re:", 3) != 0) return HC_OK;
    hc_regex re;
    char why[256];
    if (hc_regex_compile(&re, s + 3, HC_RE_PYTHON, HC_RE_PREFIX, why, sizeof why) != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s entry '%s': bad regular expression: %s", file, key,
                s, why);
    hc_regex_free(&re);
    return HC_OK;
}

static hc_status add_skip(hc_ckpt_config *c, const char *key, const char *s, hc_error *err)
{
    if (c->n_skip >= HC_CKPT_MAX_SKIP)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: more than %d skip-list entries (%s, with the "
                "method's other lists) are not read; refused rather than matching only the "
                "first %d", c->source_file, HC_CKPT_MAX_SKIP, key, HC_CKPT_MAX_SKIP);
    HC_TRY(check_pattern(c->source_file, key, s, sizeof c->skip[0], err));
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

static hc_status parse_gptq(const cJSON *q, hc_ckpt_config *c, const jwhere *w, hc_error *err)
{
    int64_t bits = 4;
    c->method = HC_CKPT_GPTQ;
    HC_TRY(get_int(q, "bits", 1, 64, 4, &bits, w, err));
    c->bits = (int)bits;
    HC_TRY(get_group(q, "group_size", 128, &c->group_size, w, err));
    HC_TRY(get_bool(q, "desc_act", 0, &c->desc_act, w, err));
    HC_TRY(get_bool(q, "sym", 1, &c->sym, w, err));
    char fmt[32] = "gptq";
    int marlin = 0;
    HC_TRY(get_str(q, "checkpoint_format", fmt, sizeof fmt, w, err));
    HC_TRY(get_bool(q, "is_marlin_format", 0, &marlin, w, err));
    if (marlin || strcmp(fmt, "marlin") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Marlin-serialised GPTQ (checkpoint_format "
                "\"marlin\" / is_marlin_format) is not read; export the model as plain GPTQ",
                c->source_file);
    if (strcmp(fmt, "gptq") != 0 && strcmp(fmt, "gptq_v2") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: GPTQ checkpoint_format \"%s\": supported are "
                "\"gptq\" (v1 zeros, stored minus one) and \"gptq_v2\"", c->source_file, fmt);
    c->gptq_v2 = strcmp(fmt, "gptq_v2") == 0;
    /* pack_dtype is not read: the reader follows the qweight dtype */
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

static hc_status parse_awq(const cJSON *q, hc_ckpt_config *c, const jwhere *w, hc_error *err)
{
    int64_t wbit = 4, bits = 4, qgs = 128;
    c->method = HC_CKPT_AWQ;
    HC_TRY(get_int(q, "w_bit", 1, 64, 4, &wbit, w, err));
    HC_TRY(get_int(q, "bits", 1, 64, wbit, &bits, w, err));
    c->bits = (int)bits;
    HC_TRY(get_group(q, "q_group_size", 128, &qgs, w, err));
    HC_TRY(get_group(q, "group_size", qgs, &c->group_size, w, err));
    HC_TRY(get_bool(q, "zero_point", 1, &c->awq_zero_point, w, err));
    snprintf(c->awq_version, sizeof c->awq_version, "gemm");
    HC_TRY(get_str(q, "version", c->awq_version, sizeof c->awq_version, w, err));
    for (char *p = c->awq_version; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    char backend[32] = "";
    HC_TRY(get_str(q, "backend", backend, sizeof backend, w, err));
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

static int one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0) return 1;
    return 0;
}

/* A group's weights arguments: type, bits, strategy and its sizes. */
static hc_status parse_ct_weights(const cJSON *wt, hc_ckpt_ct_group *out, const jwhere *w,
                                  hc_error *err)
{
    static const char *const strategies[] = {"tensor", "channel", "group", "block",
                                             "tensor_group", NULL};
    int64_t bits = 8;
    HC_TRY(get_int(wt, "num_bits", 1, 8, 8, &bits, w, err));
    out->num_bits = (int)bits;
    HC_TRY(get_str(wt, "type", out->type, sizeof out->type, w, err));
    char f[256];
    if (strcmp(out->type, "int") != 0 && strcmp(out->type, "float") != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s \"%s\": expected \"int\" or \"float\"",
                field(w, "type", f), out->type);
    HC_TRY(get_int(wt, "group_size", -1, MAX_GROUP, 0, &out->group_size, w, err));
    HC_TRY(get_str(wt, "strategy", out->strategy, sizeof out->strategy, w, err));
    if (out->strategy[0] == '\0') /* as compressed-tensors: group if sized, else tensor */
        snprintf(out->strategy, sizeof out->strategy, out->group_size > 0 ? "group" : "tensor");
    if (!one_of(out->strategy, strategies))
        HC_FAIL(err, HC_ERR_FORMAT, "%s \"%s\": expected tensor, channel, group, block or "
                "tensor_group", field(w, "strategy", f), out->strategy);
    int grouped = !strcmp(out->strategy, "group") || !strcmp(out->strategy, "tensor_group");
    if (grouped && out->group_size <= 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: strategy %s needs a group_size of 1..%lld",
                field(w, "group_size", f), out->strategy, (long long)MAX_GROUP);
    HC_TRY(get_block(wt, "block_structure", out->block, w, err));
    if (!strcmp(out->strategy, "block") && out->block[0] <= 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: strategy block needs [rows, cols]",
                field(w, "block_structure", f));
    HC_TRY(get_bool(wt, "symmetric", 1, &out->symmetric, w, err));
    const cJSON *ao = get(wt, "actorder"); /* a string, or true meaning "group" */
    if (cJSON_IsBool(ao)) snprintf(out->actorder, sizeof out->actorder, cJSON_IsTrue(ao) ? "group" : "");
    else HC_TRY(get_str(wt, "actorder", out->actorder, sizeof out->actorder, w, err));
    return HC_OK;
}

static hc_status parse_ct_group(const cJSON *g, hc_ckpt_ct_group *out, const char *file,
                                hc_error *err)
{
    const cJSON *t, *it;
    char obj[160];
    memset(out, 0, sizeof *out);
    snprintf(obj, sizeof obj, "quantization_config.config_groups.%.60s", g->string ? g->string : "?");
    jwhere w = {file, obj};
    cJSON_ArrayForEach(it, (t = get(g, "targets"))) {
        if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof out->targets[0])
            HC_FAIL(err, HC_ERR_FORMAT, "%s: %s.targets: each target must be a string of at "
                    "most %zu characters", file, obj, sizeof out->targets[0] - 1);
        if (out->n_targets == 8)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: %s: more than 8 targets are not read", file, obj);
        HC_TRY(check_pattern(file, "config_groups targets", it->valuestring,
                             sizeof out->targets[0], err));
        snprintf(out->targets[out->n_targets++], sizeof out->targets[0], "%s", it->valuestring);
    }
    HC_TRY(get_str(g, "format", out->format, sizeof out->format, &w, err));
    snprintf(out->type, sizeof out->type, "int");
    const cJSON *wt = get(g, "weights");
    if (wt != NULL && !cJSON_IsObject(wt))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s.weights must be an object", file, obj);
    snprintf(obj + strlen(obj), sizeof obj - strlen(obj), ".weights");
    return parse_ct_weights(wt, out, &w, err);
}

/* compressed-tensors 0.18 made pack_to_int32 dense (3/5/6/7-bit codes
 * straddle words); "MAJOR.MINOR..." -> 1 from 0.18 on, 0 before, -1 unknown. */
static int ct_dense_from_version(const char *v)
{
    int major = 0, minor = 0;
    if (sscanf(v, "%d.%d", &major, &minor) != 2 || major < 0 || minor < 0) return -1;
    return major > 0 || minor >= 18;
}

static hc_status parse_ct(const cJSON *q, hc_ckpt_config *c, const jwhere *w, hc_error *err)
{
    c->method = HC_CKPT_CT;
    HC_TRY(get_str(q, "format", c->ct_format, sizeof c->ct_format, w, err));
    HC_TRY(get_str(q, "version", c->ct_version, sizeof c->ct_version, w, err));
    c->ct_dense = ct_dense_from_version(c->ct_version);
    char status[32] = "compressed";
    HC_TRY(get_str(q, "quantization_status", status, sizeof status, w, err));
    if (strcmp(status, "compressed") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors quantization_status is \"%s\"; "
                "only \"compressed\" checkpoints hold packed weights (a frozen / fakequant "
                "model is float: re-export it compressed)", c->source_file, status);
    if (has_transforms(get(q, "transform_config")))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors transform_config present: the "
                "weights are rotated and the runtime must apply matching online transforms, "
                "which Humming does not do; refused", c->source_file);
    const cJSON *sp = get(q, "sparsity_config");
    char sfmt[32] = "dense";
    if (sp) HC_TRY(get_str(sp, "format", sfmt, sizeof sfmt, w, err));
    if (sp && strcmp(sfmt, "dense") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors sparsity_config format \"%s\" "
                "changes the weight layout; refused", c->source_file, sfmt);
    if (strcmp(c->ct_format, "dense") == 0 || strcmp(c->ct_format, "fakequant") == 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: compressed-tensors format \"%s\" keeps float "
                "weights; refused (convert it as a float checkpoint)", c->source_file,
                c->ct_format);
    const cJSON *groups = get(q, "config_groups"), *it;
    cJSON_ArrayForEach(it, groups) {
        if (c->n_ct == HC_CKPT_MAX_GROUPS)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: more than %d compressed-tensors config_groups "
                    "are not read", c->source_file, HC_CKPT_MAX_GROUPS);
        HC_TRY(parse_ct_group(it, &c->ct[c->n_ct++], c->source_file, err));
    }
    if (c->n_ct == 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: compressed-tensors config has no config_groups",
                c->source_file);
    HC_TRY(add_skips(c, q, "ignore", err));
    c->dialect = HC_SKIP_CT;
    return HC_OK;
}

static hc_status parse_modelopt(const cJSON *q, hc_ckpt_config *c, const jwhere *w,
                                hc_error *err)
{
    c->method = HC_CKPT_MODELOPT;
    HC_TRY(get_str(q, "quant_algo", c->quant_algo, sizeof c->quant_algo, w, err));
    HC_TRY(get_int(q, "group_size", 1, MAX_GROUP, 16, &c->group_size, w, err));
    c->dialect = HC_SKIP_FNMATCH;
    HC_TRY(add_skips(c, q, "exclude_modules", err));
    return add_skips(c, q, "ignore", err);
}

static hc_status parse_fp8(const cJSON *q, hc_ckpt_config *c, const jwhere *w, hc_error *err)
{
    c->method = HC_CKPT_FP8;
    HC_TRY(get_block(q, "weight_block_size", c->block, w, err));
    c->dialect = HC_SKIP_SUBSTRING;
    HC_TRY(add_skips(c, q, "ignored_layers", err));
    return add_skips(c, q, "modules_to_not_convert", err);
}

/* 1 if s holds a character that makes an AutoRound extra_config key a regex
 * (vLLM's INC parser: *+?^$()[]{}|\). */
static int has_regex_chars(const char *s)
{
    return strpbrk(s, "*+?^$()[]{}|\\") != NULL;
}

/* One extra_config entry: its own bits / group_size / sym over the defaults. */
static hc_status parse_override(const cJSON *e, hc_ckpt_config *c, hc_error *err)
{
    char obj[200], dtype[32] = "int";
    snprintf(obj, sizeof obj, "quantization_config.extra_config.%.150s", e->string);
    const jwhere w = {c->source_file, obj};
    if (!cJSON_IsObject(e))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %s must be an object", c->source_file, obj);
    if (c->n_ovr == HC_CKPT_MAX_OVR)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: more than %d extra_config entries are not read",
                c->source_file, HC_CKPT_MAX_OVR);
    hc_ckpt_override *o = &c->ovr[c->n_ovr];
    int64_t bits;
    HC_TRY(get_int(e, "bits", 1, 64, c->bits, &bits, &w, err));
    HC_TRY(get_group(e, "group_size", c->group_size, &o->group_size, &w, err));
    HC_TRY(get_bool(e, "sym", c->sym, &o->sym, &w, err));
    HC_TRY(get_str(e, "data_type", dtype, sizeof dtype, &w, err));
    if (bits < 16 && strcmp(dtype, "int") != 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: %s: data_type \"%s\" with %lld bits in an integer "
                "(GPTQ/AWQ-packed) AutoRound checkpoint is not read", c->source_file, obj, dtype,
                (long long)bits);
    if (bits < 16 && (bits < 2 || bits > 8))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: %s.bits = %lld: AutoRound integer layers of 2..8 "
                "bits are read", c->source_file, obj, (long long)bits);
    o->bits = (int)bits;
    o->regex = has_regex_chars(e->string);
    HC_TRY(check_pattern(c->source_file, "extra_config", e->string, sizeof o->key, err));
    if (o->regex) { /* re.search: compiled as ".*(key)" from the start */
        hc_regex re;
        char why[256], *pat = malloc(strlen(e->string) + 8);
        HC_CHECK_ALLOC(err, pat, "extra_config key");
        sprintf(pat, ".*(%s)", e->string);
        int bad = hc_regex_compile(&re, pat, HC_RE_PYTHON, HC_RE_PREFIX, why, sizeof why);
        hc_regex_free(&re);
        free(pat);
        if (bad)
            HC_FAIL(err, HC_ERR_FORMAT, "%s: extra_config key '%s': bad regular expression: %s",
                    c->source_file, e->string, why);
    }
    snprintf(o->key, sizeof o->key, "%s", e->string);
    c->n_ovr++;
    return HC_OK;
}

/* AutoRound / INC ("auto-round", "intel/auto-round"): integer weights packed
 * as AutoGPTQ (v1 zeros, stored zero - 1), AutoAWQ GEMM, or AutoRound's own
 * QuantLinear (the GPTQ layout with true zeros, as GPTQModel's v2); bits 2..8
 * (5-7 as one little-endian bit stream, auto_round.utils.bit_packing). */
static hc_status parse_autoround(const cJSON *q, hc_ckpt_config *c, const jwhere *w,
                                 hc_error *err)
{
    char dtype[32] = "int", f[256];
    int64_t bits = 4;
    c->autoround = 1;
    snprintf(c->packing_format, sizeof c->packing_format, "auto_round:auto_gptq");
    HC_TRY(get_str(q, "backend", c->packing_format, sizeof c->packing_format, w, err));
    HC_TRY(get_str(q, "packing_format", c->packing_format, sizeof c->packing_format, w, err));
    HC_TRY(get_str(q, "data_type", dtype, sizeof dtype, w, err));
    HC_TRY(get_int(q, "bits", 1, 64, 4, &bits, w, err));
    c->bits = (int)bits;
    HC_TRY(get_group(q, "group_size", 128, &c->group_size, w, err));
    HC_TRY(get_bool(q, "sym", 1, &c->sym, w, err));
    const char *pf = c->packing_format;
    if (strcmp(dtype, "int") != 0 || strstr(pf, "fp8") || strstr(pf, "llm_compressor") ||
        strstr(pf, "marlin"))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: AutoRound data_type \"%s\" with packing_format "
                "\"%s\" is not read: only integer weights packed as auto_round:auto_gptq, "
                "auto_round:auto_awq or AutoRound's own GPTQ-layout QuantLinear are (export "
                "the model with one of those, or as compressed-tensors)", c->source_file,
                dtype, pf);
    if (c->bits < 2 || c->bits > 8)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s = %d: AutoRound integer layers of 2..8 bits are "
                "read", field(w, "bits", f), c->bits);
    if (strstr(pf, "awq")) {
        c->method = HC_CKPT_AWQ;
        c->awq_zero_point = 1; /* AutoRound's WQLinear_GEMM always writes qzeros */
        snprintf(c->awq_version, sizeof c->awq_version, "gemm");
    } else {
        c->method = HC_CKPT_GPTQ;
        c->gptq_v2 = strstr(pf, "gptq") == NULL || strstr(pf, "gptqmodel") != NULL;
    }
    c->dialect = HC_SKIP_SUBSTRING;
    const cJSON *ex = get(q, "extra_config"), *it;
    if (ex && !cJSON_IsObject(ex))
        HC_FAIL(err, HC_ERR_FORMAT, "%s must be an object", field(w, "extra_config", f));
    cJSON_ArrayForEach(it, ex) HC_TRY(parse_override(it, c, err));
    return add_skips(c, q, "modules_to_not_convert", err);
}

/* Quark's weight config: what vLLM 0.33 serves through Humming (W4A16
 * int4/uint4 per_group, FP8 per tensor / channel / block, OCP MXFP4), each
 * other combination refused with its cause. */
static hc_status parse_quark_weight(const cJSON *wt, int has_input, hc_ckpt_quark *k,
                                    const jwhere *w, hc_error *err)
{
    char scale_format[16] = "", f[256];
    HC_TRY(get_str(wt, "dtype", k->dtype, sizeof k->dtype, w, err));
    HC_TRY(get_str(wt, "qscheme", k->qscheme, sizeof k->qscheme, w, err));
    HC_TRY(get_str(wt, "scale_format", scale_format, sizeof scale_format, w, err));
    HC_TRY(get_int(wt, "group_size", 1, MAX_GROUP, 0, &k->group_size, w, err));
    HC_TRY(get_bool(wt, "symmetric", 1, &k->sym, w, err));
    const char *d = k->dtype, *qs = k->qscheme;
    int int4 = !strcmp(d, "int4") || !strcmp(d, "uint4");
    if (int4 && !strcmp(qs, "per_group") && k->group_size > 0 && !has_input &&
        (!strcmp(k->pack_method, "reorder") || !strcmp(k->pack_method, "order"))) {
        if (!strcmp(d, "uint4") && k->sym)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Quark uint4 symmetric: vLLM 0.33 reads "
                    "symmetric Quark int4 as two's-complement nibbles (XOR 8), which uint4 codes "
                    "are not; refused", field(w, "dtype", f));
        return HC_OK;
    }
    if (!strcmp(d, "fp8_e4m3") && (!strcmp(qs, "per_tensor") || !strcmp(qs, "per_channel")))
        return HC_OK;
    if (!strcmp(d, "fp8_e4m3") && !strcmp(qs, "per_block")) {
        HC_TRY(get_block(wt, "block_size", k->block, w, err));
        if (k->block[0] > 0) return HC_OK;
    }
    if (!strcmp(d, "fp4") && !strcmp(qs, "per_group") && k->group_size == 32 &&
        !strcmp(scale_format, "e8m0"))
        return HC_OK;
    HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Quark weight dtype \"%s\", qscheme \"%s\" (group_size "
            "%lld, scale_format \"%s\", pack_method \"%s\"%s) is not read: supported are what "
            "vLLM 0.33 serves through Humming: int4 / uint4 per_group weight-only (pack_method "
            "order / reorder), fp8_e4m3 per_tensor / per_channel / per_block, fp4 per_group 32 "
            "with e8m0 scales (MXFP4)", field(w, "dtype", f), d, qs, (long long)k->group_size,
            scale_format, k->pack_method, int4 && has_input ? ", with quantized activations" : "");
}

/* layer_quant_config entries with their own weight config (a KV-cache-only
 * entry has none and leaves the layer to the global config). */
static hc_status parse_quark_layers(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    const cJSON *g = get(q, "global_quant_config"), *it;
    cJSON_ArrayForEach(it, get(q, "layer_quant_config")) {
        const cJSON *wt = get(it, "weight");
        if (wt == NULL || cJSON_Compare(wt, get(g, "weight"), 1)) continue;
        if (cJSON_IsArray(wt) && cJSON_GetArraySize(wt) == 1) wt = cJSON_GetArrayItem(wt, 0);
        char obj[200];
        snprintf(obj, sizeof obj, "quantization_config.layer_quant_config.%.100s.weight",
                 it->string ? it->string : "?");
        const jwhere w = {c->source_file, obj};
        if (!cJSON_IsObject(wt))
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: %s is not a single weight config (a list of "
                    "two is NVFP4, which is not read)", c->source_file, obj);
        if (c->n_qlayers == HC_CKPT_MAX_QLAYERS)
            HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: more than %d Quark layer_quant_config entries "
                    "with their own weight config are not read", c->source_file,
                    HC_CKPT_MAX_QLAYERS);
        hc_ckpt_quark_layer *L = &c->qlayers[c->n_qlayers];
        HC_TRY(check_pattern(c->source_file, "layer_quant_config", it->string ? it->string : "",
                             sizeof L->pattern, err));
        snprintf(L->pattern, sizeof L->pattern, "%s", it->string ? it->string : "");
        snprintf(L->q.pack_method, sizeof L->q.pack_method, "%s", c->quark.pack_method);
        HC_TRY(parse_quark_weight(wt, get(it, "input_tensors") != NULL, &L->q, &w, err));
        c->n_qlayers++;
    }
    return HC_OK;
}

static hc_status parse_quark(const cJSON *q, hc_ckpt_config *c, hc_error *err)
{
    c->method = HC_CKPT_QUARK;
    c->dialect = HC_SKIP_CT; /* vLLM's should_ignore_layer: exact name or "re:" */
    snprintf(c->quark.pack_method, sizeof c->quark.pack_method, "reorder");
    const cJSON *ex = get(q, "export"), *g = get(q, "global_quant_config");
    const jwhere we = {c->source_file, "quantization_config.export"};
    if (ex) HC_TRY(get_str(ex, "pack_method", c->quark.pack_method, sizeof c->quark.pack_method, &we, err));
    const cJSON *wt = get(g, "weight"), *ltype = get(q, "layer_type_quant_config");
    if (cJSON_IsArray(wt) && cJSON_GetArraySize(wt) == 1) wt = cJSON_GetArrayItem(wt, 0);
    if (!cJSON_IsObject(wt))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Quark global_quant_config.weight is %s; read is "
                "one weight config (a list of two is NVFP4, which is not read)", c->source_file,
                wt ? "not a single config" : "missing");
    if (ltype && cJSON_GetArraySize(ltype) > 0)
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: Quark layer_type_quant_config (per-module-type "
                "weight configs) is not read", c->source_file);
    const jwhere ww = {c->source_file, "quantization_config.global_quant_config.weight"};
    HC_TRY(parse_quark_weight(wt, get(g, "input_tensors") != NULL, &c->quark, &ww, err));
    HC_TRY(parse_quark_layers(q, c, err));
    return add_skips(c, q, "exclude", err);
}

/* quantization_config object of config.json, or a side file's object (obj:
 * its name in messages, "" for a side file's top level). */
static hc_status parse_qconfig(const cJSON *q, hc_ckpt_config *c, const char *obj, hc_error *err)
{
    const jwhere w = {c->source_file, obj};
    const cJSON *qm = get(q, "quant_method");
    char m[32] = "";
    if (cJSON_IsString(qm)) snprintf(m, sizeof m, "%s", qm->valuestring); /* others: not ours */
    for (char *p = m; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    snprintf(c->quant_method, sizeof c->quant_method, "%s", m);
    if (strcmp(m, "gptq") == 0) return parse_gptq(q, c, &w, err);
    if (strcmp(m, "auto-round") == 0 || strcmp(m, "intel/auto-round") == 0)
        return parse_autoround(q, c, &w, err);
    if (strcmp(m, "awq") == 0) return parse_awq(q, c, &w, err);
    if (strcmp(m, "compressed-tensors") == 0) return parse_ct(q, c, &w, err);
    if (strcmp(m, "modelopt") == 0) return parse_modelopt(q, c, &w, err);
    if (strcmp(m, "fp8") == 0) return parse_fp8(q, c, &w, err);
    if (strcmp(m, "quark") == 0) return parse_quark(q, c, err);
    if (strcmp(m, "mxfp4") == 0) {
        c->method = HC_CKPT_MXFP4;
        c->dialect = HC_SKIP_FNMATCH;
        return add_skips(c, q, "modules_to_not_convert", err);
    }
    if (m[0] == '\0' && get(q, "w_bit")) return parse_awq(q, c, &w, err); /* old AutoAWQ file */
    if (m[0] == '\0' && get(q, "bits") && (get(q, "desc_act") || get(q, "sym")))
        return parse_gptq(q, c, &w, err); /* old AutoGPTQ quantize_config.json */
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
        st = parse_qconfig(q, cfg, "quantization_config", err);
    }
    cJSON_Delete(root);
    static const char *const sides[] = {"hf_quant_config.json", "quantize_config.json",
                                        "quant_config.json"};
    for (int i = 0; st == HC_OK && cfg->method == HC_CKPT_NONE && i < 3; i++) {
        cJSON *side = NULL;
        st = read_side(dir, sides[i], &side, err);
        if (st != HC_OK || side == NULL) continue;
        snprintf(cfg->source_file, sizeof cfg->source_file, "%s", sides[i]);
        const cJSON *pname = get(get(side, "producer"), "name"), *quant = get(side, "quantization");
        const cJSON *inner = get(side, "quantization_config");
        if (i == 0 && cJSON_IsString(pname) && strcmp(pname->valuestring, "modelopt") == 0 &&
            cJSON_IsObject(quant)) {
            const jwhere w = {cfg->source_file, "quantization"};
            st = parse_modelopt(quant, cfg, &w, err);
            snprintf(cfg->quant_method, sizeof cfg->quant_method, "modelopt");
        } else {
            st = parse_qconfig(cJSON_IsObject(inner) ? inner : side, cfg,
                               cJSON_IsObject(inner) ? "quantization_config" : "", err);
        }
        cJSON_Delete(side);
    }
    if (st == HC_OK && cfg->method == HC_CKPT_GPTQ && !cfg->autoround &&
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

/* Python re.search of pat in name (checked when the config was read). */
static int regex_search(const char *pat, const char *name)
{
    char buf[200];
    snprintf(buf, sizeof buf, ".*(%s)", pat);
    return regex_match_start(buf, name);
}

const hc_ckpt_override *hc_ckpt_override_for(const hc_ckpt_config *cfg, const char *module)
{
    size_t n = strlen(module);
    for (int i = 0; i < cfg->n_ovr; i++)
        if (strcmp(cfg->ovr[i].key, module) == 0) return &cfg->ovr[i];
    for (int i = 0; i < cfg->n_ovr; i++) {
        size_t k = strlen(cfg->ovr[i].key);
        if (k < n && module[n - k - 1] == '.' && strcmp(module + n - k, cfg->ovr[i].key) == 0)
            return &cfg->ovr[i];
    }
    for (int i = 0; i < cfg->n_ovr; i++)
        if (cfg->ovr[i].regex && regex_search(cfg->ovr[i].key, module)) return &cfg->ovr[i];
    return NULL;
}

const hc_ckpt_quark *hc_ckpt_quark_for(const hc_ckpt_config *cfg, const char *module)
{
    for (int i = 0; i < cfg->n_qlayers; i++) {
        const char *p = cfg->qlayers[i].pattern;
        if (strchr(p, '*') ? fnmatch(p, module, 0) == 0 : strstr(p, module) != NULL)
            return &cfg->qlayers[i].q;
    }
    return &cfg->quark;
}

int hc_ckpt_is_skipped(const hc_ckpt_config *cfg, const char *module)
{
    const hc_ckpt_override *o = cfg->n_ovr ? hc_ckpt_override_for(cfg, module) : NULL;
    if (o) return o->bits >= 16;
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

const hc_st_tensor *hc_ckpt_layer_bias(hc_st_model *model, hc_ckpt_kind kind, const char *prefix)
{
    const hc_st_tensor *b = hc_ckpt_find(model, prefix, kind == HC_CK_MXFP4 ? "_bias" : ".bias");
    return b && hc_ckpt_is_float_dtype(b->dtype) ? b : NULL;
}

