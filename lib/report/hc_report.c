/* hc_report.c - report records and the JSON writer (schema: docs/report.md). */
#include "hc_report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>

#include "hc_fs.h"
#include "hc_integrity.h"
#include "hc_model_config.h"

hc_report *hc_report_new(void) { return calloc(1, sizeof(hc_report)); }

void hc_report_free(hc_report *r)
{
    if (r == NULL) return;
    for (int i = 0; i < r->n_layers; i++) free(r->layers[i].name);
    free(r->layers);
    free(r->tool_version);
    free(r->command_line);
    free(r->input);
    free(r->output);
    free(r->format);
    free(r->recipe);
    free(r->calib);
    free(r);
}

void hc_report_set(char **field, const char *value)
{
    free(*field);
    *field = value ? strdup(value) : NULL;
}

hc_report_layer *hc_report_add_layer(hc_report *r, const char *name)
{
    if (r->n_layers == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        hc_report_layer *l = realloc(r->layers, (size_t)cap * sizeof *l);
        if (l == NULL) return NULL;
        r->layers = l;
        r->cap = cap;
    }
    hc_report_layer *L = &r->layers[r->n_layers];
    memset(L, 0, sizeof *L);
    L->name = strdup(name);
    if (L->name == NULL) return NULL;
    r->n_layers++;
    return L;
}

void hc_report_tally(hc_report *r)
{
    r->n_pass = r->n_fail = 0;
    r->bytes_in = r->bytes_out = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const hc_report_layer *L = &r->layers[i];
        if (L->verified) {
            if (L->m.pass) r->n_pass++;
            else r->n_fail++;
        }
        r->bytes_in += L->bytes_in;
        r->bytes_out += L->bytes_out;
    }
}

void hc_report_now(char *buf)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* JSON has no Inf/NaN: non-finite numbers are written as null. */
static void num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

static void str(cJSON *o, const char *k, const char *v)
{
    if (v) cJSON_AddStringToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

static cJSON *layer_json(const hc_report_layer *L)
{
    cJSON *o = cJSON_CreateObject();
    const hc_verify_metrics *m = &L->m;
    str(o, "name", L->name);
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int i = 0; i < L->ndim; i++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)L->shape[i]));
    str(o, "format", L->format);
    str(o, "weight_dtype", L->weight_format);
    str(o, "activation_dtype", L->act_format);
    str(o, "scale_type", L->scale_type);
    str(o, "layout_variant", L->variant);
    num(o, "bytes_in", (double)L->bytes_in);
    num(o, "bytes_out", (double)L->bytes_out);
    if (L->verified) {
        str(o, "verify_source", L->verify_source);
        num(o, "weight_rel_err", m->weight_rel_err);
        num(o, "weight_snr_db", m->weight_snr_db);
        num(o, "gemm_rel_err", m->gemm_rel_err);
        num(o, "gemm_snr_db", m->gemm_snr_db);
        num(o, "gemm_cosine", m->gemm_cosine);
        num(o, "gemm_max_abs_err", m->gemm_max_abs_err);
        if (m->has_qact) {
            num(o, "qact_gemm_rel_err", m->qact_rel_err);
            num(o, "qact_gemm_snr_db", m->qact_snr_db);
            num(o, "qact_gemm_cosine", m->qact_cosine);
            num(o, "qact_gemm_max_abs_err", m->qact_max_abs_err);
        }
        if (m->has_gpu) {
            num(o, "gpu_gemm_rel_err", m->gpu_rel_err);
            num(o, "gpu_gemm_max_abs_err", m->gpu_max_abs_err);
        }
        num(o, "nonfinite", (double)m->nonfinite);
        cJSON_AddBoolToObject(o, "lossless", m->lossless);
        if (m->lossless) num(o, "lossless_mismatches", (double)m->lossless_mismatches);
        else num(o, "step_violations", (double)m->step_violations);
        cJSON *b = cJSON_AddObjectToObject(o, "bounds");
        num(b, "weight_rel_err", m->weight_bound);
        num(b, "gemm_rel_err", m->gemm_bound);
        if (m->has_qact) num(b, "qact_gemm_rel_err", m->qact_bound);
        if (m->has_gpu) num(b, "gpu_gemm_rel_err", m->gpu_bound);
        num(o, "tokens", m->tokens);
        str(o, "activations", m->calibrated ? "calibration" : "random");
        num(o, "verify_seconds", L->seconds);
        str(o, "status", m->pass ? "pass" : "fail");
        str(o, "reason", m->reason);
    } else {
        str(o, "status", "skipped");
        str(o, "reason", "verification off");
    }
    return o;
}

static cJSON *report_json(const hc_report *r)
{
    cJSON *o = cJSON_CreateObject(), *run = cJSON_AddObjectToObject(o, "run");
    str(o, "schema", "humming-report/1");
    str(run, "tool", "humming-convert");
    str(run, "tool_version", r->tool_version);
    str(run, "command_line", r->command_line);
    str(run, "input", r->input);
    str(run, "output", r->output);
    str(run, "format", r->format);
    str(run, "recipe", r->recipe);
    str(run, "arch", r->arch);
    str(run, "activation_dtype", r->activation);
    str(run, "verify_mode", r->verify_mode);
    str(run, "verify_backend", r->verify_backend);
    num(run, "verify_tokens", r->tokens);
    str(run, "calibration", r->calib);
    cJSON_AddBoolToObject(run, "allow_degraded", r->allow_degraded);
    str(run, "started", r->started);
    str(run, "finished", r->finished);
    num(run, "seconds", r->seconds);
    cJSON *s = cJSON_AddObjectToObject(o, "summary");
    num(s, "layers", r->n_layers);
    num(s, "passed", r->n_pass);
    num(s, "failed", r->n_fail);
    num(s, "bytes_in", (double)r->bytes_in);
    num(s, "bytes_out", (double)r->bytes_out);
    str(s, "status", r->n_fail ? (r->allow_degraded ? "degraded" : "fail") : "pass");
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int i = 0; i < r->n_layers; i++) cJSON_AddItemToArray(layers, layer_json(&r->layers[i]));
    return o;
}

hc_status hc_report_write_json(const hc_report *r, const char *path, hc_error *err)
{
    cJSON *o = report_json(r);
    char *text = o ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    HC_CHECK_ALLOC(err, text, "the JSON report");
    hc_status st = hc_fs_write_file(path, text, strlen(text), err);
    free(text);
    return st;
}

static const char *const report_names[] = {"humming_report.json", "humming_report.html",
                                           "humming_report.md"};
enum { N_REPORTS = 3 };

/* The three reports into new dot files dir/.NAME.tmp-PID (fsynced). */
static hc_status write_temps(const hc_report *r, const char *dir, char tmp[][4200],
                             hc_error *err)
{
    for (int i = 0; i < N_REPORTS; i++)
        if (snprintf(tmp[i], 4200, "%s/.%s.tmp-%ld", dir, report_names[i], (long)getpid()) >= 4200)
            HC_FAIL(err, HC_ERR_ARG, "path too long: %s", dir);
    for (int i = 0; i < N_REPORTS; i++) unlink(tmp[i]); /* a stale one of a killed run */
    HC_TRY(hc_report_write_json(r, tmp[0], err));
    HC_TRY(hc_report_write_html(r, tmp[1], err));
    return hc_report_write_md(r, tmp[2], err);
}

/* Renames src over dst. */
static hc_status replace(const char *src, const char *dst, hc_error *err)
{
    if (rename(src, dst) != 0)
        HC_FAIL(err, HC_ERR_IO, "%s: cannot rename to %s: %s", src, dst, strerror(errno));
    return HC_OK;
}

hc_status hc_report_write_all(const hc_report *r, const char *dir, hc_error *err)
{
    char tmp[N_REPORTS][4200] = {""}, manifest[4300] = "", final[4096];
    const char *srcs[N_REPORTS];
    hc_status st = write_temps(r, dir, tmp, err);
    for (int i = 0; st == HC_OK && i < N_REPORTS; i++) srcs[i] = strrchr(tmp[i], '/') + 1;
    if (st == HC_OK)
        st = hc_manifest_stage(dir, report_names, srcs, N_REPORTS, manifest, sizeof manifest, err);
    if (st != HC_OK) { /* nothing replaced: the old reports and manifest stand */
        for (int i = 0; i < N_REPORTS; i++) unlink(tmp[i]);
        return st;
    }
    /* every byte is on disk: only renames are left, the manifest last */
    for (int i = 0; st == HC_OK && i < N_REPORTS; i++) {
        st = hc_path_join(final, sizeof final, dir, report_names[i], err);
        if (st == HC_OK) st = replace(tmp[i], final, err);
    }
    if (st == HC_OK && manifest[0]) {
        st = hc_path_join(final, sizeof final, dir, HC_MANIFEST_NAME, err);
        if (st == HC_OK) st = replace(manifest, final, err);
    }
    if (st != HC_OK && manifest[0]) unlink(manifest);
    return st == HC_OK ? hc_fs_sync_path(dir, err) : st;
}

hc_status hc_report_read_input(const char *dir, char **input, hc_error *err)
{
    char path[4096], *text = NULL;
    *input = NULL;
    HC_TRY(hc_path_join(path, sizeof path, dir, "humming_report.json", err));
    HC_TRY(hc_file_read_all(path, &text, NULL, err));
    cJSON *o = cJSON_Parse(text);
    free(text);
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(o, "run");
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(run, "input");
    if (cJSON_IsString(in)) *input = strdup(in->valuestring);
    cJSON_Delete(o);
    if (*input == NULL)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: no run.input (the source directory)", path);
    return HC_OK;
}
