/* hc_test_ckpt.c - see hc_test_ckpt.h. */
#include "hc_test_ckpt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>

#include "hc_report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_convert.h"
#include "hc_model_config.h"
#include "hc_preset.h"
#include "hc_safetensors.h"
#include "hc_test_util.h"

static uint32_t tc_state = 12345;
void tc_seed(uint32_t s) { tc_state = s ? s : 1; }
uint32_t tc_rand(void)
{
    tc_state = tc_state * 1664525u + 1013904223u;
    return tc_state >> 8;
}

void tc_init(tc_ckpt *c, const char *tag)
{
    memset(c, 0, sizeof *c);
    c->dir = hc_test_mkdtemp(tag);
}

void *tc_add(tc_ckpt *c, const char *name, hc_dtype dt, int ndim, const int64_t *shape)
{
    static const int64_t scalar[1] = {1};
    if (c->n >= TC_MAX) return NULL;
    if (shape == NULL) shape = scalar; /* 0-d: shape unused */
    if (hc_tensor_alloc(&c->t[c->n], dt, ndim, shape, NULL) != HC_OK) return NULL;
    c->names[c->n] = strdup(name);
    return c->t[c->n++].data;
}

void tc_write(tc_ckpt *c, const char *config_json, const char *side_name, const char *side_json)
{
    char *p = hc_test_path_join(c->dir, "config.json");
    hc_test_write_file(p, config_json, strlen(config_json));
    free(p);
    if (side_name) {
        p = hc_test_path_join(c->dir, side_name);
        hc_test_write_file(p, side_json, strlen(side_json));
        free(p);
    }
    p = hc_test_path_join(c->dir, "model.safetensors");
    const char *meta[] = {"format", "pt", NULL};
    hc_error err;
    if (hc_st_write_file(p, c->t, (const char *const *)c->names, (size_t)c->n, meta, &err) != HC_OK)
        fprintf(stderr, "tc_write: %s\n", err.msg);
    free(p);
}

void tc_free(tc_ckpt *c)
{
    for (int i = 0; i < c->n; i++) {
        hc_tensor_free(&c->t[i]);
        free(c->names[i]);
    }
    if (c->dir) { /* and the outputs beside it (tc_out_dir) */
        hc_test_rm_rf(c->dir);
        const char *outs[] = {"out", "out-cli"};
        for (int i = 0; i < 2; i++) {
            char *o = tc_out_dir(c->dir, outs[i]);
            if (o) hc_test_rm_rf(o);
            free(o);
        }
    }
    free(c->dir);
    memset(c, 0, sizeof *c);
}

hc_status tc_detect(const char *dir, hc_ckpt_config *cfg, hc_error *err)
{
    char *p = hc_test_path_join(dir, "config.json");
    char *text = NULL;
    hc_status st = hc_file_read_all(p, &text, NULL, err);
    free(p);
    if (st == HC_OK) st = hc_ckpt_detect(dir, text, cfg, err);
    free(text);
    return st;
}

/* general: 0 word-level paths, 1 element paths, 2 word-level with code views
 * (hc_ckpt_read_opts.code_views; the codes are then copied out before the
 * model closes, and codes_view tells whether a view was taken). */
static hc_status read_layer(const char *dir, const char *prefix, hc_act_order ao, int general,
                            hc_ckpt_layer *out, float **values, hc_error *err)
{
    hc_ckpt_config cfg;
    memset(out, 0, sizeof *out);
    if (values) *values = NULL;
    HC_TRY(tc_detect(dir, &cfg, err));
    hc_st_model *m = NULL;
    HC_TRY(hc_st_model_open(dir, &m, err));
    hc_status st = HC_ERR_FORMAT;
    hc_error_set(err, HC_ERR_FORMAT, "layer %s not found", prefix);
    for (size_t i = 0; i < hc_st_model_count(m); i++) {
        hc_ckpt_kind kind;
        char pre[1024];
        if (!hc_ckpt_layer_of(&cfg, hc_st_model_tensor_at(m, i), &kind, pre, sizeof pre) ||
            strcmp(pre, prefix) != 0)
            continue;
        hc_ckpt_read_opts ro = {.act_order = ao, .param_format = HC_FMT_BF16, .meta_only = 0,
                                .general_codes = general == 1, .code_views = general == 2};
        st = hc_ckpt_read(&cfg, m, kind, prefix, &ro, out, err);
        if (st == HC_OK && out->q.codes_view) { /* a copy that outlives the mapping */
            size_t len = (size_t)(out->q.experts * out->q.n * out->q.k * out->q.bits / 32) * 4;
            uint32_t *copy = malloc(len + 4);
            if (copy) memcpy(copy, out->q.codes, len);
            out->q.codes = copy; /* codes_view stays set for the caller to see; owned now */
            if (!copy) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
        }
        break;
    }
    if (st == HC_OK && values) {
        int64_t n = out->q.experts * out->q.n * out->q.k;
        *values = malloc((size_t)n * sizeof(float) + 1);
        st = hc_dequantize(&out->q, *values, err);
    }
    hc_st_model_close(m);
    return st;
}

hc_status tc_read_layer(const char *dir, const char *prefix, hc_act_order ao, hc_ckpt_layer *out,
                        float **values, hc_error *err)
{
    return read_layer(dir, prefix, ao, 0, out, values, err);
}

int tc_codes_viewed(const char *dir, const char *prefix, hc_act_order ao)
{
    hc_ckpt_layer v;
    hc_error err;
    if (read_layer(dir, prefix, ao, 2, &v, NULL, &err) != HC_OK) return -1;
    int viewed = v.q.codes_view;
    v.q.codes_view = 0; /* the copy read_layer made is owned */
    hc_ckpt_layer_free(&v);
    return viewed;
}

/* Code words that differ between a reading with code views and one without. */
static int64_t views_differ(const char *dir, const char *prefix, hc_act_order ao,
                            const hc_ckpt_layer *a)
{
    hc_ckpt_layer v;
    hc_error err;
    if (read_layer(dir, prefix, ao, 2, &v, NULL, &err) != HC_OK) return -1;
    v.q.codes_view = 0;
    int64_t words = a->q.experts * a->q.n * a->q.k * a->q.bits / 32, d = 0;
    if (!v.q.codes || v.q.experts * v.q.n * v.q.k * v.q.bits / 32 != words) d = -1;
    for (int64_t i = 0; d >= 0 && i < words; i++) d += a->q.codes[i] != v.q.codes[i];
    hc_ckpt_layer_free(&v);
    return d;
}

int64_t tc_codes_paths_differ(const char *dir, const char *prefix, hc_act_order ao)
{
    hc_ckpt_layer a, b;
    hc_error err;
    if (read_layer(dir, prefix, ao, 0, &a, NULL, &err) != HC_OK) return -1;
    int64_t dv = a.q.codes ? views_differ(dir, prefix, ao, &a) : 0;
    if (dv != 0) {
        hc_ckpt_layer_free(&a);
        return dv < 0 ? -1 : dv;
    }
    if (read_layer(dir, prefix, ao, 1, &b, NULL, &err) != HC_OK) {
        hc_ckpt_layer_free(&a);
        return -1;
    }
    int64_t words = a.q.experts * a.q.n * a.q.k * a.q.bits / 32, d = -1;
    if (a.q.codes && b.q.codes && a.q.experts == b.q.experts && a.q.n == b.q.n &&
        a.q.k == b.q.k && a.q.bits == b.q.bits) {
        int64_t sb = a.q.scales ? a.q.experts * a.q.group_rows * a.q.groups * a.q.scale_bytes : 0;
        int64_t zw = a.q.zero_points ? a.q.experts * a.q.group_rows * a.q.bits / 32 * a.q.groups : 0;
        d = 0;
        for (int64_t i = 0; i < words; i++) d += a.q.codes[i] != b.q.codes[i];
        for (int64_t i = 0; i < sb; i++) d += !b.q.scales || a.q.scales[i] != b.q.scales[i];
        for (int64_t i = 0; i < zw; i++)
            d += !b.q.zero_points || a.q.zero_points[i] != b.q.zero_points[i];
    }
    hc_ckpt_layer_free(&a);
    hc_ckpt_layer_free(&b);
    return d;
}

int64_t tc_diff(const float *a, const float *b, int64_t n)
{
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) != 0 && !(a[i] != a[i] && b[i] != b[i])) d++;
    return d;
}

static hc_status pick(void *ctx, const char *layer, hc_target *out, int *skip, char *why,
                      size_t why_len, hc_error *err)
{
    const hc_preset *p = hc_preset_find((const char *)ctx);
    (void)layer;
    *skip = 0;
    snprintf(why, why_len, "test");
    if (!p) HC_FAIL(err, HC_ERR_ARG, "no preset %s", (const char *)ctx);
    *out = p->target;
    return HC_OK;
}

/* Every layer of OUT/humming_report.json passed, with zero lossless mismatches. */
static void assert_report_passes(const char *out)
{
    {
        char *p = hc_test_path_join(out, "humming_report.json");
        char *text = hc_test_read_file(p, NULL);
        cJSON *r = cJSON_Parse(text), *l;
        assert_non_null(r);
        cJSON_ArrayForEach(l, cJSON_GetObjectItem(r, "layers")) {
            const cJSON *mm = cJSON_GetObjectItem(l, "lossless_mismatches");
            if (strcmp(cJSON_GetObjectItem(l, "status")->valuestring, "pass") != 0 ||
                (mm && mm->valuedouble != 0))
                fail_msg("CLI report: layer %s: %s", cJSON_GetObjectItem(l, "name")->valuestring,
                         cJSON_GetObjectItem(l, "reason")->valuestring);
        }
        cJSON_Delete(r);
        free(text);
        free(p);
    }
}

/* No object in the JSON tree has a key twice (a JSON reader keeps one of them). */
static void assert_unique_keys(const cJSON *o, const char *file)
{
    for (const cJSON *a = o ? o->child : NULL; a; a = a->next) {
        if (cJSON_IsObject(o))
            for (const cJSON *b = a->next; b; b = b->next)
                if (a->string && b->string && strcmp(a->string, b->string) == 0)
                    fail_msg("%s: key \"%s\" twice in one object", file, a->string);
        assert_unique_keys(a, file);
    }
}

static void assert_config_keys_unique(const char *out)
{
    char *p = hc_test_path_join(out, "config.json");
    char *text = hc_test_read_file(p, NULL);
    cJSON *c = cJSON_Parse(text);
    assert_non_null(c);
    assert_unique_keys(c, p);
    cJSON_Delete(c);
    free(text);
    free(p);
}

/* With $HC_KEEP_CANONICAL set to a directory, a copy of each canonical output
 * goes there as NNN-<name>, for tests/gpu/canonical_humming.py to load with
 * the real humming-kernels on the GPU machine. */
static void keep_canonical(const char *out)
{
    static int n;
    const char *keep = getenv("HC_KEEP_CANONICAL");
    if (keep == NULL || keep[0] == '\0') return;
    const char *base = strrchr(out, '/');
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp -r '%s' '%s/%03d-%s'", keep, out, keep, n++,
             base ? base + 1 : out);
    if (system(cmd) != 0) fail_msg("cannot keep %s in %s", out, keep);
}

/* The same conversion through the CLI binary ($HC_CLI), into the tiles the
 * library wrote: it must succeed or fail with the library, and on success its
 * report must pass every layer, with zero lossless mismatches where the
 * repack is lossless. Then into the default canonical layout: where the tiles
 * succeed, the canonical output must pass the same way, or be refused before
 * any output with a message saying what the canonical layout cannot hold. */
static void cli_agrees(const char *dir, const char *format, int act_order, int lib_ok)
{
    static const char *const orders[] = {"refuse", "permute", "requant"};
    const char *cli = getenv("HC_CLI") ? getenv("HC_CLI") : "build/humming-convert";
    char *out = tc_out_dir(dir, "out-cli"), *log = tc_out_dir(dir, "log"), cmd[8192];
    for (int canonical = 0; canonical < 2 && lib_ok; canonical++) {
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --arch sm90 --force -q --act-order %s "
                 "--layout %s %s%s 2>'%s' >/dev/null", cli, dir, out, orders[act_order],
                 canonical ? "canonical" : "tiles", format ? "--format " : "", format ? format : "",
                 log);
        int rc = system(cmd);
        rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
        char *msg = hc_test_read_file(log, NULL);
        if (canonical && rc != 0 && msg && strstr(msg, "canonical layout")) {
            printf("  canonical layout refused, as it must be: %s", msg);
            assert_false(hc_test_exists(out));
        } else if ((rc == 0) != lib_ok) {
            fail_msg("CLI exit %d, library %s: %s: %s", rc, lib_ok ? "ok" : "error", cmd,
                     msg ? msg : "");
        } else if (rc == 0) {
            assert_report_passes(out);
            assert_config_keys_unique(out);
            if (canonical) keep_canonical(out);
        }
        free(msg);
        hc_test_rm_rf(out);
    }
    if (!lib_ok) { /* the CLI fails too */
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --arch sm90 --force -q --act-order %s "
                 "--layout tiles %s%s 2>/dev/null >/dev/null", cli, dir, out, orders[act_order],
                 format ? "--format " : "", format ? format : "");
        int rc = system(cmd);
        if (WIFEXITED(rc) && WEXITSTATUS(rc) == 0) fail_msg("CLI succeeded, library failed: %s", cmd);
        hc_test_rm_rf(out);
    }
    unlink(log);
    free(log);
    free(out);
}

char *tc_out_dir(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s.%s", dir, name);
    return p;
}

static hc_status run_convert(const char *dir, const char *format, int act_order, char **config,
                             int keep, hc_error *err)
{
    char *out = tc_out_dir(dir, "out");
    hc_convert_options o = {.in_dir = dir, .out_dir = out, .sm = 90, .force = 1,
                            .layout = HC_LAYOUT_TILES,
                            .act_order = act_order, .has_target = format != NULL,
                            .choose_target = pick, .choose_ctx = (void *)format};
    hc_convert_stats stats;
    hc_status st = hc_convert_run(&o, &stats, err);
    hc_report_free(stats.report);
    cli_agrees(dir, format, act_order, st == HC_OK);
    if (st == HC_OK && config) {
        char *p = hc_test_path_join(out, "config.json");
        *config = hc_test_read_file(p, NULL);
        free(p);
    }
    if (!keep) hc_test_rm_rf(out);
    free(out);
    return st;
}

hc_status tc_convert(const char *dir, const char *format, int act_order, char **config,
                     hc_error *err)
{
    return run_convert(dir, format, act_order, config, 0, err);
}

hc_status tc_convert_keep(const char *dir, const char *format, int act_order, char **config,
                          hc_error *err)
{
    return run_convert(dir, format, act_order, config, 1, err);
}

char *tc_layer_field(const char *config, const char *layer, const char *key)
{
    cJSON *root = cJSON_Parse(config);
    cJSON *q = cJSON_GetObjectItem(root, "quantization_config");
    cJSON *l = cJSON_GetObjectItem(cJSON_GetObjectItem(q, "layers"), layer);
    cJSON *v = cJSON_GetObjectItem(l, key);
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(root);
    return s;
}

void tc_put_bits(uint32_t *words, int64_t pos, int bits, uint32_t v)
{
    for (int i = 0; i < bits; i++) {
        int64_t p = pos + i;
        if ((v >> i) & 1u) words[p / 32] |= 1u << (p % 32);
        else words[p / 32] &= ~(1u << (p % 32));
    }
}

void tc_expect_converted_field(const char *dir, const char *layer, const char *key,
                               const char *want)
{
    char *out = NULL;
    hc_error err;
    if (tc_convert(dir, NULL, 0, &out, &err) != HC_OK) fail_msg("%s", err.msg);
    char *v = tc_layer_field(out, layer, key);
    assert_non_null(v);
    assert_string_equal(v, want);
    free(v);
    free(out);
}
