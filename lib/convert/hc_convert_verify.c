/* hc_convert_verify.c - verification of every converted layer (the driver's
 * hook after each transform) and `report`: re-verifying an existing output
 * directory against its source. docs/verification.md, docs/report.md. */
#include "hc_convert_internal.h"
#include "hc_report_targets.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hc_fs.h"
#include "hc_gpu.h"
#include "hc_report.h"
#include "hc_version.h"

struct hc_conv_verify {
    const hc_convert_options *opts;
    const hc_conv_plan *plan;
    hc_report *report;
    hc_st_file *calib;
    int enabled;
    int use_gpu;                /* GPU kernels run next to the CPU reference */
    struct timespec t0;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *fname(hc_format_id f) { return hc_format_get(f)->name; }

/* What the output is and what serves it, for the report's format line. */
static const char *target_layout(const hc_conv_plan *plan)
{
    return plan->layout == HC_LAYOUT_TILES
               ? "humming-kernel-ready tiles (quant_method humming-convert-tiles)"
               : "humming canonical (quant_method humming): vLLM 0.33 with humming-kernels "
                 "0.1.19 runs each layer in the weight x activation format of the table "
                 "(allow_fallback false for 8- and 4-bit activations)";
}

static void describe_run(hc_conv_verify *v)
{
    const hc_convert_options *o = v->opts;
    const hc_humming_qconfig *q = &v->plan->qconfig;
    hc_report *r = v->report;
    char buf[PATH_MAX + 64];
    hc_report_set(&r->tool_version, HC_VERSION);
    hc_report_set(&r->command_line, o->command_line);
    hc_report_set(&r->input, realpath(o->in_dir, buf) ? buf : o->in_dir);
    hc_report_set(&r->output, o->out_dir);
    if (v->plan->kind == HC_SRC_HUMMING) {
        snprintf(buf, sizeof buf, "humming (row-packed, spec 7.8) -> %s", target_layout(v->plan));
        hc_report_set(&r->format, buf);
        snprintf(buf, sizeof buf, "%s weights, %s %s scales%s%s%s, group %lld, %s layers",
                 fname(q->weight_format), fname(q->scale_format), hc_scale_type_name(q->scale_type),
                 q->has_zero_point ? ", " : "",
                 q->has_zero_point ? (q->is_fp_zero_point ? "float" : "integer") : "",
                 q->has_zero_point ? " zero points" : ", symmetric", (long long)q->group_size,
                 fname(q->param_format));
    } else {
        snprintf(buf, sizeof buf, "%s (%s layers) -> %s",
                 v->plan->kind == HC_SRC_FLOAT ? "float checkpoint" : "quantized checkpoint",
                 fname(v->plan->param_format), target_layout(v->plan));
        hc_report_set(&r->format, buf);
        snprintf(buf, sizeof buf, "%s; per-layer formats in the table",
                 o->target_summary ? o->target_summary
                 : v->plan->kind == HC_SRC_FLOAT ? "targets as recorded in the output"
                                                 : "lossless repack unless a target was given");
    }
    hc_report_set(&r->recipe, buf);
    snprintf(r->arch, sizeof r->arch, "sm%d", o->sm);
    snprintf(r->activation, sizeof r->activation, "%s", fname(v->plan->activation));
    snprintf(r->verify_mode, sizeof r->verify_mode, "%s", hc_verify_mode_name(o->verify));
    snprintf(r->verify_backend, sizeof r->verify_backend, "%s", 
             !v->enabled ? "none" : v->use_gpu ? "gpu" : "cpu");
    r->tokens = o->verify_tokens > 0 ? o->verify_tokens : 16;
    hc_report_set(&r->calib, o->calib_path);
    r->allow_degraded = o->allow_degraded;
}

/* Whether the GPU kernels check the layers too (--verify auto / gpu, a GPU
 * present), with the reason in the log when not. */
static int use_gpu(const hc_convert_options *opts)
{
    if (opts->verify != HC_VERIFY_GPU && opts->verify != HC_VERIFY_AUTO) return 0;
    char why[256];
    int sm = hc_gpu_available(why, sizeof why);
    if (sm <= 0 && opts->verify == HC_VERIFY_GPU)
        hc_conv_log(opts, "verify: no GPU is available (%s); falling back to the CPU reference",
                    why);
    else if (sm > 0)
        hc_conv_log(opts, "verify: GPU sm%d: every layer's GEMM also runs on the GPU kernels, "
                    "on the humming-kernels 0.1.19 tensors, and is compared with the CPU "
                    "reference", sm);
    return sm > 0;
}

hc_status hc_conv_verify_begin(const hc_convert_options *opts, const hc_conv_plan *plan,
                               hc_conv_verify **out, hc_error *err)
{
    *out = NULL;
    hc_conv_verify *v = calloc(1, sizeof *v);
    HC_CHECK_ALLOC(err, v, "verification state");
    v->opts = opts;
    v->plan = plan;
    v->report = hc_report_new();
    v->enabled = opts->verify != HC_VERIFY_OFF;
    clock_gettime(CLOCK_MONOTONIC, &v->t0);
    if (v->report == NULL) {
        free(v);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory");
    }
    *out = v;
    hc_report_now(v->report->started);
    if (v->enabled) v->use_gpu = use_gpu(opts);
    if (v->enabled && opts->calib_path)
        HC_TRY_CTX(err, hc_st_open(opts->calib_path, &v->calib, err), "--calib: ");
    describe_run(v);
    for (int i = 0; i < plan->n_layers; i++) {
        const hc_conv_layer *L = &plan->layers[i];
        hc_report_layer *R = hc_report_add_layer(v->report, L->prefix);
        HC_CHECK_ALLOC(err, R, "report layers");
        const hc_layer_meta *m = &L->meta;
        R->ndim = 0;
        if (m->is_moe) R->shape[R->ndim++] = m->E;
        R->shape[R->ndim++] = m->N;
        R->shape[R->ndim++] = m->K;
        snprintf(R->weight_format, sizeof R->weight_format, "%s", fname(L->cfg.weight_format));
        snprintf(R->act_format, sizeof R->act_format, "%s", fname(L->cfg.act_format));
        snprintf(R->scale_type, sizeof R->scale_type, "%s", hc_scale_type_name(m->scale_type));
        snprintf(R->variant, sizeof R->variant, "%s", hc_layer_layout_name(m));
        char g[32] = "channel";
        if (L->cfg.group_size > 0) snprintf(g, sizeof g, "g%lld", (long long)L->cfg.group_size);
        snprintf(R->format, sizeof R->format, "%s %s %s-scale x %s", fname(L->cfg.weight_format),
                 g, fname(L->cfg.scale_format), fname(L->cfg.act_format));
        R->bytes_in = hc_conv_layer_in_bytes(L);
        R->bytes_out = hc_conv_layer_out_bytes(L);
    }
    hc_report_tally(v->report);
    return HC_OK;
}

void hc_conv_verify_free(hc_conv_verify *v)
{
    if (v == NULL) return;
    hc_report_free(v->report);
    hc_st_close(v->calib);
    free(v);
}

hc_report *hc_conv_verify_take_report(hc_conv_verify *v)
{
    hc_report *r = v->report;
    v->report = NULL;
    return r;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Rows of the calibration tensor named like the layer, as float32 (M', K). */
static hc_status calib_rows(hc_conv_verify *v, const hc_conv_layer *L, float **rows, int *n,
                            hc_error *err)
{
    *rows = NULL;
    *n = 0;
    const hc_st_tensor *t = v->calib ? hc_st_find(v->calib, L->prefix) : NULL;
    if (t == NULL) return HC_OK;
    int64_t K = L->meta.K, count = hc_shape_numel(t->ndim, t->shape);
    if (t->ndim < 1 || t->shape[t->ndim - 1] != K ||
        (t->dtype != HC_DT_F32 && t->dtype != HC_DT_F16 && t->dtype != HC_DT_BF16))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: calibration tensor %s must be float32/float16/bfloat16 "
                "(M, %lld)", hc_st_path(v->calib), L->prefix, (long long)K);
    *rows = malloc((size_t)count * sizeof(float) + 1);
    HC_CHECK_ALLOC(err, *rows, "calibration rows");
    const unsigned char *p = t->data;
    for (int64_t i = 0; i < count; i++) {
        if (t->dtype == HC_DT_F32) {
            memcpy(&(*rows)[i], p + i * 4, 4);
        } else {
            uint16_t h;
            memcpy(&h, p + i * 2, 2);
            (*rows)[i] = t->dtype == HC_DT_F16 ? hc_f16_to_f32(h) : hc_bf16_to_f32(h);
        }
    }
    *n = (int)(count / K);
    return HC_OK;
}

/* The pre bias (param dtype) as float32, for a float source whose weights
 * need no dequantization. */
static void bias_to_float(const hc_tensor *b, float *out, size_t n)
{
    const uint16_t *h = b->data;
    for (size_t i = 0; i < n; i++)
        out[i] = b->dtype == HC_DT_BF16 ? hc_bf16_to_f32(h[i]) : hc_f16_to_f32(h[i]);
}

/* The run's buffer pool (NULL: none): the 0.1.19 tiles built for verifying a
 * canonical layer take their weight buffer from it and give it back. */
static hc_bufpool *run_pool(const hc_conv_verify *v)
{
    return v->plan->run ? v->plan->run->pool : NULL;
}

/* The tiles humming-kernels 0.1.19 builds from a canonical layer at load
 * (our transform of canon, with the plan of 0.1.19 for the same arch and
 * activations), the tiled weight from pool. *ok = 0 where 0.1.19's transform
 * does not take the layer in our implementation: then the canonical tensors
 * are verified directly. */
static hc_status canonical_0119(const hc_conv_layer *L, const hc_layer_tensors *canon,
                                hc_bufpool *pool,
                                hc_layer_config *cfg, hc_layer_meta *m, hc_layer_tensors *post,
                                int *ok, hc_error *err)
{
    *ok = 0;
    *cfg = L->cfg;
    cfg->version = HC_HUMMING_0_1_19;
    hc_error why = {0};
    if (hc_layer_plan(cfg, L->meta.is_moe, L->meta.E, L->meta.N, L->meta.K, m, &why) != HC_OK)
        return HC_OK;
    if (!hc_layer_decodable(m)) return HC_OK; /* sm100 / sm120 block-scaled layouts */
    hc_status st = hc_layer_transform_pooled(cfg, m, canon, post, pool, &why);
    if (st == HC_ERR_UNSUPPORTED) return HC_OK;
    if (st != HC_OK) HC_FAIL(err, st, "layer %s (0.1.19 tiles of the canonical tensors): %s",
                             L->prefix, why.msg);
    *ok = 1;
    return HC_OK;
}

/* What a layer is verified through: post (the tiles written, canon NULL) or,
 * for a canonical output, the 0.1.19 tiles of canon where 0.1.19 takes the
 * layer, else canon itself, decoded from its meaning. Tiles the decoder does
 * not read (sm100 raw weights, block-scaled MMA scales) are verified through
 * the pre tensors they were built from. Sets *tiles (the decoded tensors are
 * tiles), *dec, cfg and m; t19 owns built tiles. */
static hc_status verify_target(const hc_conv_verify *v, const hc_conv_layer *L,
                               const hc_layer_tensors *pre,
                               const hc_layer_tensors *post,
                               const hc_layer_tensors *canon, hc_layer_config *cfg,
                               hc_layer_meta *m, hc_layer_tensors *t19,
                               const hc_layer_tensors **dec, int *tiles, hc_error *err)
{
    *cfg = L->cfg;
    *m = L->meta;
    *dec = post;
    *tiles = 1;
    if (canon == NULL && !hc_layer_decodable(m)) {
        *dec = pre;
        *tiles = 0;
    }
    if (canon == NULL) return HC_OK;
    HC_TRY(canonical_0119(L, canon, run_pool(v), cfg, m, t19, tiles, err));
    if (*tiles) {
        *dec = t19;
    } else {
        *cfg = L->cfg;
        *m = L->meta;
        *dec = canon;
    }
    return HC_OK;
}

/* Rows of the dequantized pre tensors (a quantized or Humming-format
 * source), for hc_verify_source.rows. */
typedef struct {
    const hc_layer_config *cfg;
    const hc_layer_meta *m;
    const hc_layer_tensors *pre;
} pre_rows;

static const float *pre_row(void *ctx, int64_t r, float *buf)
{
    const pre_rows *p = ctx;
    hc_dequant_pre_row(p->cfg, p->m, p->pre, r, buf);
    return buf;
}

static void pre_row_part(void *ctx, int64_t r, int64_t k0, int64_t k1, float *buf)
{
    const pre_rows *p = ctx;
    hc_dequant_pre_row_part(p->cfg, p->m, p->pre, r, k0, k1, 0, buf);
}

hc_status hc_conv_verify_layer(hc_conv_verify *v, const hc_conv_layer *L,
                               const hc_layer_tensors *pre, const hc_layer_tensors *post,
                               const hc_layer_tensors *canon, const float *ref,
                               const double *energy, hc_error *err)
{
    if (v == NULL || !v->enabled) return HC_OK;
    int li = (int)(L - v->plan->layers);
    hc_report_layer *R = &v->report->layers[li];
    const hc_layer_meta *m = &L->meta;
    double t0 = now_s();
    size_t nb = (size_t)(m->E * m->N);
    hc_layer_config cfg;
    hc_layer_meta mv;
    hc_layer_tensors t19;
    memset(&t19, 0, sizeof t19);
    const hc_layer_tensors *dec = NULL;
    int tiles = 1;
    HC_TRY(verify_target(v, L, pre, post, canon, &cfg, &mv, &t19, &dec, &tiles, err));
    snprintf(R->verify_source, sizeof R->verify_source, "%s",
             tiles ? "tiles-0.1.19" : "canonical");
    /* without ref, the source is read by rows as the verifier needs them: a
     * float source's rows converted, else the pre tensors' rows dequantized */
    const int by_rows = ref == NULL && hc_conv_float_rows_ok(L), fsrc = ref != NULL || by_rows;
    hc_conv_row_source rs;
    pre_rows pr = {&L->cfg, m, pre};
    if (by_rows) { /* the panels read 64 rows at a time (hc_verify.c) */
        hc_conv_row_source_init(L, &rs);
        hc_conv_row_source_blocks(v->plan->model, 64, &rs);
    }
    float *bias = pre->bias.data ? malloc(nb * sizeof(float)) : NULL;
    float *rows = NULL;
    int nrows = 0;
    hc_status st = HC_OK;
    if (pre->bias.data && bias == NULL)
        st = hc_error_set(err, HC_ERR_NOMEM, "out of memory verifying %s", L->prefix);
    if (st == HC_OK && !fsrc) st = hc_dequant_pre_check(&L->cfg, m, pre, err);
    if (st == HC_OK && !fsrc && bias) hc_dequant_pre_bias(&L->cfg, m, pre, bias);
    if (st == HC_OK && fsrc && bias) bias_to_float(&pre->bias, bias, nb);
    if (st == HC_OK) st = calib_rows(v, L, &rows, &nrows, err);
    if (st == HC_OK) st = hc_st_check(v->calib, err);
    if (st == HC_OK) {
        /* the canonical tensors decode exactly: a repacked source must match */
        int lossless = fsrc ? 0 : tiles ? hc_dequant_pre_lossless(&cfg, &mv, pre) : 1;
        hc_verify_source src = {ref, bias, lossless, fsrc,
                                fsrc && L->target.rounding == HC_TARGET_MSE ? 0.5 : 0.0,
                                ref ? NULL : by_rows ? hc_conv_source_row : pre_row,
                                by_rows ? (void *)&rs : (void *)&pr,
                                ref ? NULL : by_rows ? hc_conv_source_row_part : pre_row_part,
                                by_rows ? energy : NULL};
        hc_verify_params p = {.tokens = v->opts->verify_tokens, .act = rows, .act_rows = nrows,
                              .seed = fnv1a(L->prefix),
                              .use_gpu = v->use_gpu && tiles,
                              .canonical = !tiles};
        hc_error verr = {0};
        hc_status vs = hc_verify_layer(&cfg, &mv, dec, &src, &p, &R->m, &verr);
        if (vs == HC_ERR_FORMAT) { /* a malformed output tensor fails the layer */
            memset(&R->m, 0, sizeof R->m);
            size_t n = strlen(verr.msg);
            if (n >= sizeof R->m.reason) n = sizeof R->m.reason - 1;
            memcpy(R->m.reason, verr.msg, n);
            R->m.reason[n] = '\0';
        } else if (vs != HC_OK) {
            st = hc_error_set(err, vs, "verifying %s: %s", L->prefix, verr.msg);
        }
    }
    free(bias);
    free(rows);
    if (by_rows) hc_conv_row_source_blocks_free(&rs);
    if (t19.weight.owned && t19.weight.data) {
        hc_bufpool_put(run_pool(v), t19.weight.data, t19.weight.nbytes);
        t19.weight.data = NULL;
        t19.weight.owned = 0;
    }
    hc_layer_tensors_free(&t19);
    if (st != HC_OK) return st;
    R->verified = 1;
    R->seconds = now_s() - t0;
    const hc_verify_metrics *r = &R->m;
    char gpu[64] = "";
    if (r->has_gpu) snprintf(gpu, sizeof gpu, ", GPU vs CPU rel err %.3g", r->gpu_rel_err);
    hc_conv_log(v->opts, "verify %s: %s on %s (weight rel err %.3g, gemm SNR %.1f dB%s%s) %s",
                L->prefix, r->pass ? "pass" : "FAIL", R->verify_source, r->weight_rel_err,
                r->gemm_snr_db, r->has_qact ? ", with quantized activations" : "", gpu,
                r->pass ? "" : r->reason);
    return HC_OK;
}

hc_status hc_conv_verify_finish(hc_conv_verify *v, const char *dir, hc_error *err)
{
    hc_report *r = v->report;
    hc_report_tally(r);
    hc_report_now(r->finished);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    r->seconds = (double)(t.tv_sec - v->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - v->t0.tv_nsec);
    return hc_report_write_all(r, dir, err);
}

int hc_conv_verify_enabled(const hc_conv_verify *v)
{
    return v && v->enabled;
}

int hc_conv_verify_failed(const hc_conv_verify *v)
{
    return v && v->report ? v->report->n_fail : 0;
}

/* ---- humming-convert report OUT_DIR ----------------------------------- */

/* Arch, activation and layout recorded in OUT_DIR/config.json (outputs from
 * before the canonical layout record none: tiles). */
/* The Humming version a tiles output was written for (absent: tiles of a
 * layout this version does not read). */
static hc_status output_version(const cJSON *q, const char *path, hc_convert_options *opts,
                                hc_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, "humming_version");
    if (opts->layout != HC_LAYOUT_TILES) return HC_OK;
    if (!cJSON_IsString(v))
        HC_FAIL(err, HC_ERR_UNSUPPORTED, "%s: tiles without quantization_config.humming_version "
                "hold a layout this version does not read (it reads humming-kernels 0.1.19's): "
                "convert the input again", path);
    hc_humming_version ver;
    const char *release = NULL;
    HC_TRY(hc_humming_version_parse(v->valuestring, &ver, &release, err));
    opts->humming_version = release; /* static storage */
    return HC_OK;
}

/* Arch, activation, layout and Humming version of an existing output, from
 * its config.json, into opts and *act. */
static hc_status output_target(hc_convert_options *opts, hc_format_id *act, hc_error *err)
{
    const char *out_dir = opts->out_dir;
    char path[4096], *text = NULL;
    HC_TRY(hc_path_join(path, sizeof path, out_dir, "config.json", err));
    HC_TRY(hc_file_read_all(path, &text, NULL, err));
    cJSON *o = cJSON_Parse(text);
    free(text);
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(o, "quantization_config");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(q, "arch");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(q, "activation_dtype");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(q, "layout");
    opts->layout = cJSON_IsString(l) && !strcmp(l->valuestring, "canonical")
                       ? HC_LAYOUT_CANONICAL : HC_LAYOUT_TILES;
    hc_status st = HC_OK;
    if (!cJSON_IsString(a) || !cJSON_IsString(d))
        st = hc_error_set(err, HC_ERR_FORMAT, "%s: not a humming-convert output (no "
                          "quantization_config.arch / activation_dtype)", path);
    if (st == HC_OK) st = hc_arch_parse(a->valuestring, &opts->sm, err);
    if (st == HC_OK) st = hc_activation_parse(d->valuestring, act, err);
    if (st == HC_OK) st = output_version(q, path, opts, err);
    cJSON_Delete(o);
    return st;
}

/* Copies written tensor t into role tensor dst: whole, or as expert e's slice
 * of a stack of E (allocated on the first expert seen). */
static hc_status load_out(const hc_out_tensor *o, const hc_st_tensor *t, int64_t E, hc_tensor *dst,
                          hc_error *err)
{
    if (t->dtype != o->desc.dtype || (int64_t)t->nbytes != o->desc.nbytes)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: written as %s of %zu bytes, planned %s of %lld bytes",
                o->name, hc_dtype_name(t->dtype), t->nbytes, hc_dtype_name(o->desc.dtype),
                (long long)o->desc.nbytes);
    if (o->expert < 0) {
        HC_TRY(hc_tensor_alloc(dst, t->dtype, t->ndim, t->shape, err));
        memcpy(dst->data, t->data, t->nbytes);
        return HC_OK;
    }
    if (dst->data == NULL) {
        int64_t shape[HC_MAX_DIMS + 1] = {E};
        int scalar = o->desc.ndim == 1 && o->desc.shape[0] == 1, ndim = scalar ? 1 : o->desc.ndim + 1;
        if (!scalar) memcpy(shape + 1, o->desc.shape, (size_t)o->desc.ndim * sizeof *shape);
        HC_TRY(hc_tensor_alloc(dst, t->dtype, ndim, shape, err));
    }
    memcpy((unsigned char *)dst->data + (size_t)o->expert * t->nbytes, t->data, t->nbytes);
    return HC_OK;
}

/* The layer's tensors as written (pre tensors in the canonical layout, post
 * in tiles), from out_model (a finished output) or the shard file f. */
static hc_status load_written(const hc_conv_layer *L, const hc_st_model *out_model,
                              const hc_st_file *f, hc_layer_tensors *dst, hc_error *err)
{
    hc_tensor *role[HC_ROLE_COUNT] = {&dst->weight, &dst->weight_scale, &dst->zero_point,
                                      &dst->global_scale, &dst->bias};
    for (int i = 0; i < L->n_outs; i++) {
        const hc_out_tensor *o = &L->outs[i];
        const hc_st_tensor *t = out_model ? hc_st_model_find(out_model, o->name)
                                          : hc_st_find(f, o->name);
        if (t == NULL) HC_FAIL(err, HC_ERR_FORMAT, "%s: missing from the output", o->name);
        HC_TRY(load_out(o, t, L->meta.E, role[o->role], err));
    }
    return HC_OK;
}

/* Verifies layer L from its written tensors, found in out_model (a finished
 * output) or else in the shard file f (canonical tensors: hc_conv_verify_layer
 * picks what they are verified through). */
static hc_status verify_written(hc_conv_verify *v, const hc_conv_plan *plan, const hc_conv_layer *L,
                                const hc_st_model *out_model, const hc_st_file *f, hc_error *err)
{
    hc_layer_tensors pre, written, post;
    memset(&written, 0, sizeof written);
    memset(&post, 0, sizeof post);
    float *ref = NULL;
    double *energy = NULL;
    const int rows = hc_conv_float_rows_ok(L);
    hc_status st = hc_conv_load_pre(plan, L, &pre, rows ? NULL : &ref, rows ? &energy : NULL, err);
    if (st == HC_OK) st = load_written(L, out_model, f, &written, err);
    if (st == HC_OK && plan->layout == HC_LAYOUT_TILES) {
        post = written;
        memset(&written, 0, sizeof written);
        /* not in the file: what the transform of pre decides */
        post.weight_e0m = plan->weight_e0m[L - plan->layers] =
            hc_layer_e0m_applies(&L->cfg, &L->meta, &pre);
    }
    if (st == HC_OK)
        st = hc_conv_verify_layer(v, L, &pre, &post, plan->layout == HC_LAYOUT_TILES ? NULL : &written,
                                  ref, energy, err);
    /* at the layer boundary: nothing read past a truncation (hc_sigbus.h) */
    if (st == HC_OK) st = hc_st_model_check(plan->model, err);
    if (st == HC_OK) st = out_model ? hc_st_model_check(out_model, err) : hc_st_check(f, err);
    hc_layer_tensors_free(&pre);
    hc_layer_tensors_free(&written);
    hc_layer_tensors_free(&post);
    free(ref);
    free(energy);
    return st;
}

static hc_status verify_existing(hc_conv_verify *v, const hc_conv_plan *plan,
                                 const hc_st_model *out_model, hc_error *err)
{
    hc_status st = HC_OK;
    for (int i = 0; st == HC_OK && i < plan->n_layers; i++)
        st = verify_written(v, plan, &plan->layers[i], out_model, NULL, err);
    return st;
}

hc_status hc_conv_verify_shard_file(hc_conv_verify *v, const hc_conv_plan *plan, int shard,
                                    const char *path, hc_error *err)
{
    if (v == NULL || !v->enabled) return HC_OK;
    hc_st_file *f = NULL;
    HC_TRY(hc_st_open(path, &f, err));
    hc_status st = HC_OK;
    for (int i = 0; st == HC_OK && i < plan->n_items; i++) {
        const hc_conv_item *it = &plan->items[i];
        if (it->shard != shard || it->layer < 0) continue;
        st = verify_written(v, plan, &plan->layers[it->layer], NULL, f, err);
    }
    hc_st_close(f);
    return st;
}

hc_status hc_report_run(const hc_convert_options *opts_in, hc_convert_stats *stats, hc_error *err)
{
    hc_convert_options opts = *opts_in;
    char *input = NULL;
    if (stats) memset(stats, 0, sizeof *stats);
    if (opts.verify == HC_VERIFY_OFF) opts.verify = HC_VERIFY_AUTO;
    if (!hc_path_is_dir(opts.out_dir))
        HC_FAIL(err, HC_ERR_IO, "%s: not a directory", opts.out_dir);
    if (opts.in_dir == NULL) {
        HC_TRY(hc_report_read_input(opts.out_dir, &input, err));
        opts.in_dir = input;
    }
    hc_st_model *in_model = NULL, *out_model = NULL;
    hc_conv_plan plan;
    memset(&plan, 0, sizeof plan);
    hc_conv_verify *v = NULL;
    hc_recorded_targets *targets = NULL;
    opts.humming_version = NULL;
    hc_status st = output_target(&opts, &plan.activation, err);
    if (st == HC_OK) st = hc_conv_read_config(&opts, &plan, err);
    if (st == HC_OK) st = hc_recorded_targets_load(opts.out_dir, &targets, err);
    opts.has_activation = 1;
    opts.activation = plan.activation;
    opts.choose_target = hc_recorded_target;
    opts.choose_ctx = targets;
    if (st == HC_OK) st = hc_st_model_open(opts.in_dir, &in_model, err);
    if (st == HC_OK) st = hc_st_model_open(opts.out_dir, &out_model, err);
    if (st == HC_OK) st = hc_conv_plan_build(&opts, in_model, hc_conv_sources, &plan, err);
    if (st == HC_OK) st = hc_conv_verify_begin(&opts, &plan, &v, err);
    if (st == HC_OK) st = verify_existing(v, &plan, out_model, err);
    if (st == HC_OK) st = hc_conv_verify_finish(v, opts.out_dir, err);
    if (st == HC_OK && stats) {
        stats->layers = plan.n_layers;
        stats->bytes_in = plan.bytes_in;
        stats->bytes_out = plan.bytes_out;
    }
    int failed = st == HC_OK && hc_conv_verify_failed(v);
    if (st == HC_OK && failed && !opts.allow_degraded)
        st = hc_error_set(err, HC_ERR_VERIFY, "verification failed for %d of %d layers (see "
                          "%s/humming_report.json)", v->report->n_fail, plan.n_layers,
                          opts.out_dir);
    if (stats && v) stats->report = hc_conv_verify_take_report(v);
    hc_conv_verify_free(v);
    hc_conv_plan_free(&plan);
    hc_st_model_close(in_model);
    hc_st_model_close(out_model);
    hc_recorded_targets_free(targets);
    free(input);
    return st;
}
