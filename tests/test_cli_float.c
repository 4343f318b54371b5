/* test_cli_float - float checkpoints end to end through humming-convert:
 * every preset converts and verifies with plausible accuracy ordering, a
 * corrupted output is caught by `report`, recipes and --dry-run explain the
 * plan, bad inputs (NaN weights, K not a multiple of the group) are
 * refused before any output exists, and a canonical output converted again
 * into tiles equals the tiles converted from the float model; canonical
 * layers without 0.1.19 tiles are verified on their decoded canonical tensors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

#include "hc_format.h"
#include "hc_safetensors.h"
#include "hc_test_util.h"

typedef struct {
    char *root, *model;
} fixture;

static int sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static const char *cli(void) { return hc_test_cli(); }

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->root = hc_test_mkdtemp("cli-float");
    f->model = hc_test_path_join(f->root, "model");
    if (hc_test_gen_model(f->model, "--format float16") != 0) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    hc_test_rm_rf(f->root);
    free(f->root);
    free(f->model);
    free(f);
    return 0;
}

/* Mean of a numeric key over the report's layers; -1 when absent. */
static double report_mean(const char *out, const char *key, int *passed, int *layers)
{
    char *path = hc_test_path_join(out, "humming_report.json");
    size_t len = 0;
    char *text = hc_test_read_file(path, &len);
    free(path);
    assert_non_null(text);
    cJSON *r = cJSON_Parse(text);
    free(text);
    const cJSON *L = cJSON_GetObjectItem(r, "layers"), *l;
    double sum = 0;
    *passed = *layers = 0;
    cJSON_ArrayForEach(l, L) {
        sum += cJSON_GetObjectItem(l, key)->valuedouble;
        *passed += !strcmp(cJSON_GetObjectItem(l, "status")->valuestring, "pass");
        (*layers)++;
    }
    cJSON_Delete(r);
    return *layers ? sum / *layers : -1;
}

/* Kernel-level keys belong to tiles records only: a canonical output leaves
 * the layout to Humming at load. */
static void check_kernel_keys(const char *out, int tiles)
{
    char *p = hc_test_path_join(out, "config.json");
    size_t len;
    char *text = hc_test_read_file(p, &len);
    assert_non_null(text);
    cJSON *c = cJSON_Parse(text), *l;
    const cJSON *L = cJSON_GetObjectItem(cJSON_GetObjectItem(c, "quantization_config"), "layers");
    assert_non_null(L);
    cJSON_ArrayForEach(l, L) {
        assert_int_equal(cJSON_HasObjectItem(l, "layout_variant"), tiles);
        assert_int_equal(cJSON_HasObjectItem(l, "padded_n"), tiles);
        assert_int_equal(cJSON_HasObjectItem(l, "layer_config"), tiles);
    }
    cJSON_Delete(c);
    free(text);
    free(p);
}

static double convert_snr_at(fixture *f, const char *name, const char *where, const char *flags)
{
    char *out = hc_test_path_join(f->root, name);
    int rc = sh("'%s' '%s' '%s' %s -q %s", cli(), f->model, out, where, flags);
    if (rc != 0) fail_msg("%s %s: exit %d", where, flags, rc);
    int passed, layers;
    double snr = report_mean(out, "weight_snr_db", &passed, &layers);
    assert_int_equal(layers, 14);
    assert_int_equal(passed, layers);
    check_kernel_keys(out, strstr(where, "--layout tiles") != NULL);
    printf("    %-40s weight SNR %6.2f dB, %d/%d layers pass (%s)\n", flags, snr, passed, layers,
           where);
    free(out);
    return snr;
}

/* tiles: every preset humming-kernels 0.1.19's tiles take on sm90, nvfp4's
 * per-tensor scale on q/k/v included (the canonical layout makes that one per
 * channel; tests/py/test_canonical_vllm.py) */
static double convert_snr(fixture *f, const char *name, const char *flags)
{
    return convert_snr_at(f, name, "--arch sm90 --layout tiles", flags);
}

/* Where 0.1.19 tiles do not go, e.g. int4 activations on sm90 (0.1.19 runs
 * them on sm75-sm89 only): refused with the reason, nothing written (the
 * NVRTC-dependent sm100 / sm120 layers: tests/test_layout_golden0119.c). */
static void expect_tiles_refusal(fixture *f, const char *flags, const char *why)
{
    char *out = hc_test_path_join(f->root, "refused"), *log = hc_test_path_join(f->root, "refused.log");
    int rc = sh("'%s' '%s' '%s' --layout tiles -q %s 2>'%s'", cli(), f->model, out, flags, log);
    char *msg = hc_test_read_file(log, NULL);
    if (rc == 0 || msg == NULL || strstr(msg, why) == NULL)
        fail_msg("%s: exit %d: %s", flags, rc, msg ? msg : "");
    assert_false(hc_test_exists(out));
    free(msg);
    free(log);
    free(out);
}

/* Every preset converts and verifies; accuracy orders as the formats do. */
static void test_presets(void **state)
{
    fixture *f = *state;
    static const char *const presets[] = {"w8a16", "w4a16", "w3a16", "w2a16", "w4a8",
                                          "w4a8-int8", "w8a8", "w8a8-int8", "w4a4", "mxfp4",
                                          "mxfp4-a8", "mxint4", "nvfp4", "fp8"};
    double snr[14];
    char flags[64];
    for (int i = 0; i < 14; i++) {
        snprintf(flags, sizeof flags, "--format %s", presets[i]);
        if (i == 8) snr[i] = convert_snr_at(f, presets[i], "--arch sm80 --layout tiles", flags);
        else snr[i] = convert_snr(f, presets[i], flags);
    }
    expect_tiles_refusal(f, "--arch sm90 --format w4a4", "int4 activations on sm75-sm89 only");
    double g32 = convert_snr(f, "g32", "--weight-dtype uint4 --group-size 32");
    double g16 = convert_snr(f, "g16", "--weight-dtype uint4 --group-size 16");
    double mse = convert_snr(f, "mse", "--format w4a16 --quantizer mse");
    assert_true(snr[0] > snr[1] + 15 && snr[1] > snr[2] + 3 && snr[2] > snr[3] + 3);
    assert_true(snr[7] > snr[1] + 15 && snr[13] > snr[1] + 10); /* int8, fp8 >> int4 */
    assert_true(fabs(snr[9] - g32) < 4 && fabs(snr[12] - g16) < 4); /* MXFP4, NVFP4 */
    assert_true(mse >= snr[1]);
    printf("    mse over rtn (w4a16): %+.2f dB\n", mse - snr[1]);
}

/* Every tensor of model dir a equals dir b's of the same name (and b has no other). */
static void assert_same_tensors(const char *a, const char *b)
{
    hc_st_model *x = NULL, *y = NULL;
    assert_int_equal(hc_st_model_open(a, &x, NULL), HC_OK);
    assert_int_equal(hc_st_model_open(b, &y, NULL), HC_OK);
    assert_int_equal(hc_st_model_count(x), hc_st_model_count(y));
    for (size_t i = 0; i < hc_st_model_count(x); i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(x, i), *u = hc_st_model_find(y, t->name);
        if (u == NULL) fail_msg("%s: only in %s", t->name, a);
        assert_int_equal(t->dtype, u->dtype);
        assert_int_equal(t->nbytes, u->nbytes);
        if (memcmp(t->data, u->data, t->nbytes) != 0) fail_msg("%s differs", t->name);
    }
    hc_st_model_close(x);
    hc_st_model_close(y);
}

/* The layers' LayerConfig records of two tiles outputs are equal. */
static void assert_same_layer_configs(const char *a, const char *b)
{
    char *pa = hc_test_path_join(a, "config.json"), *pb = hc_test_path_join(b, "config.json");
    char *ta = hc_test_read_file(pa, NULL), *tb = hc_test_read_file(pb, NULL);
    cJSON *ca = cJSON_Parse(ta), *cb = cJSON_Parse(tb), *l;
    const cJSON *la = cJSON_GetObjectItem(cJSON_GetObjectItem(ca, "quantization_config"), "layers");
    const cJSON *lb = cJSON_GetObjectItem(cJSON_GetObjectItem(cb, "quantization_config"), "layers");
    int n = 0;
    cJSON_ArrayForEach(l, la) {
        const cJSON *m = cJSON_GetObjectItem(lb, l->string);
        if (!cJSON_Compare(cJSON_GetObjectItem(l, "layer_config"),
                           cJSON_GetObjectItem(m, "layer_config"), 1))
            fail_msg("%s: layer_config differs", l->string);
        n++;
    }
    assert_int_equal(n, cJSON_GetArraySize((cJSON *)lb));
    assert_true(n > 0);
    cJSON_Delete(ca), cJSON_Delete(cb);
    free(ta), free(tb), free(pa), free(pb);
}

/* Our canonical output read back as a Humming checkpoint (per-expert MoE
 * modules, weight_scale_2, a_dtype with allow_fallback false) gives the same
 * 0.1.19 tiles as the float model converted to tiles directly. */
static void test_canonical_to_tiles(void **state)
{
    fixture *f = *state;
    /* w4a8: packed-K, a_dtype read; nvfp4 with weight_scale_2 per channel */
    static const char *const formats[] = {"w4a16", "w4a8", "nvfp4 --global-scale channel"};
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "c2t-%d", i);
        char *canon = hc_test_path_join(f->root, name), *direct, *tiles;
        snprintf(name, sizeof name, "c2t-%d-direct", i);
        direct = hc_test_path_join(f->root, name);
        snprintf(name, sizeof name, "c2t-%d-tiles", i);
        tiles = hc_test_path_join(f->root, name);
        assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm90 --format %s", cli(), f->model, canon,
                            formats[i]), 0);
        assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm90 --layout tiles", cli(), canon, tiles), 0);
        assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm90 --layout tiles --format %s", cli(),
                            f->model, direct, formats[i]), 0);
        assert_same_tensors(direct, tiles);
        assert_same_layer_configs(direct, tiles);
        printf("    --format %s: float -> canonical -> tiles == float -> tiles\n", formats[i]);
        free(canon), free(direct), free(tiles);
    }
}

/* File offset of a tensor's data: 8 + header length + its begin offset. */
static long data_offset(const char *path, const char *name)
{
    hc_st_file *f = NULL;
    assert_int_equal(hc_st_open(path, &f, NULL), HC_OK);
    const hc_st_tensor *t = hc_st_find(f, name);
    assert_non_null(t);
    long off = (long)t->offset + (long)(t->nbytes / 2 / 4) * 4;
    hc_st_close(f);
    FILE *fp = fopen(path, "rb");
    unsigned char len8[8];
    assert_int_equal(fread(len8, 1, 8, fp), 8);
    fclose(fp);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | len8[i];
    return 8 + (long)hlen + off;
}

/* One flipped word in a float-source output is caught by `report`. */
static void test_corruption_detected(void **state)
{
    fixture *f = *state;
    char *out = hc_test_path_join(f->root, "corrupt");
    assert_int_equal(sh("'%s' '%s' '%s' -q --format w4a16", cli(), f->model, out), 0);
    assert_int_equal(sh("'%s' report '%s' -q", cli(), out), 0);
    char *path = hc_test_path_join(out, "model.safetensors");
    long off = data_offset(path, "model.layers.0.mlp.up_proj.weight");
    FILE *fp = fopen(path, "r+b");
    uint32_t word;
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    assert_int_equal(fread(&word, 4, 1, fp), 1);
    word ^= 0x88888888u; /* flip the top bit of every 4-bit code in the word */
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    assert_int_equal(fwrite(&word, 4, 1, fp), 1);
    fclose(fp);
    assert_int_equal(sh("'%s' report '%s' -q", cli(), out), 3);
    int passed, layers;
    report_mean(out, "weight_snr_db", &passed, &layers);
    assert_int_equal(passed, layers - 1);
    free(path);
    free(out);
}

/* The report's layers of out (owned by the returned object). */
static cJSON *report_layers(const char *out)
{
    char *path = hc_test_path_join(out, "humming_report.json");
    char *text = hc_test_read_file(path, NULL);
    free(path);
    assert_non_null(text);
    cJSON *r = cJSON_Parse(text);
    free(text);
    assert_non_null(cJSON_GetObjectItem(r, "layers"));
    return r;
}

static const char *layer_str(const cJSON *l, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(l, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double layer_num(const cJSON *l, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(l, key);
    if (!cJSON_IsNumber(v)) fail_msg("%s: no %s", layer_str(l, "name"), key);
    return v->valuedouble;
}

/* Every layer of out passed and was verified on `source`; returns the count. */
static int expect_verified_on(const char *out, const char *source)
{
    cJSON *r = report_layers(out);
    const cJSON *l;
    int n = 0;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(r, "layers")) {
        if (strcmp(layer_str(l, "verify_source"), source) || strcmp(layer_str(l, "status"), "pass"))
            fail_msg("%s %s: verified on '%s', %s", out, layer_str(l, "name"),
                     layer_str(l, "verify_source"), layer_str(l, "status"));
        n++;
    }
    cJSON_Delete(r);
    return n;
}

/* Canonical layers whose 0.1.19 tensors the decoder does not read (sm100 raw
 * weights, UMMA scale words) are verified on the canonical tensors decoded
 * from their meaning: the metrics equal those of the same layers verified
 * through the 0.1.19 flat tiles on sm90 (an independent decoder, same
 * activations), a lossless repack of them shows no mismatch, and a corrupted
 * code fails. */
static void test_canonical_decode_verified(void **state)
{
    fixture *f = *state;
    char *c100 = hc_test_path_join(f->root, "cd-sm100"), *c90 = hc_test_path_join(f->root, "cd-sm90");
    char *mx = hc_test_path_join(f->root, "cd-mxfp4-a8"), *mx2 = hc_test_path_join(f->root, "cd-mx2");
    assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm100 --format w8a8", cli(), f->model, c100), 0);
    assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm90 --format w8a8", cli(), f->model, c90), 0);
    check_kernel_keys(c100, 0);
    check_kernel_keys(c90, 0);
    assert_int_equal(expect_verified_on(c100, "canonical"), 14);
    assert_int_equal(expect_verified_on(c90, "tiles-0.1.19"), 14);
    cJSON *a = report_layers(c100), *b = report_layers(c90);
    static const char *const keys[] = {"weight_rel_err", "gemm_rel_err", "gemm_snr_db",
                                       "qact_gemm_rel_err"};
    for (int i = 0; i < 14; i++) {
        const cJSON *la = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "layers"), i);
        const cJSON *lb = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "layers"), i);
        assert_string_equal(layer_str(la, "name"), layer_str(lb, "name"));
        assert_true(layer_num(la, "weight_rel_err") > 0.005); /* a real fp8 error */
        for (int k = 0; k < 4; k++)
            if (layer_num(la, keys[k]) != layer_num(lb, keys[k]))
                fail_msg("%s %s: canonical %.17g, 0.1.19 tiles %.17g", layer_str(la, "name"),
                         keys[k], layer_num(la, keys[k]), layer_num(lb, keys[k]));
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* sm100 MXFP4 x fp8 (raw weights, UMMA scales): float -> canonical, then
     * that output repacked losslessly */
    assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm100 --format mxfp4-a8", cli(), f->model, mx), 0);
    assert_int_equal(expect_verified_on(mx, "canonical"), 14);
    assert_int_equal(sh("'%s' '%s' '%s' -q --arch sm100", cli(), mx, mx2), 0);
    assert_int_equal(expect_verified_on(mx2, "canonical"), 14);
    cJSON *r = report_layers(mx2);
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(r, "layers")) {
        assert_true(layer_num(l, "weight_rel_err") == 0.0);
        assert_true(layer_num(l, "lossless_mismatches") == 0.0);
        assert_true(layer_num(l, "qact_gemm_rel_err") > 0.0); /* fp8 activations quantized */
    }
    cJSON_Delete(r);
    /* one flipped word of sm100 codes fails exactly that layer */
    char *path = hc_test_path_join(c100, "model.safetensors");
    long off = data_offset(path, "model.layers.0.mlp.up_proj.weight");
    FILE *fp = fopen(path, "r+b");
    uint32_t word;
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    assert_int_equal(fread(&word, 4, 1, fp), 1);
    word ^= 0x88888888u;
    assert_int_equal(fseek(fp, off, SEEK_SET), 0);
    assert_int_equal(fwrite(&word, 4, 1, fp), 1);
    fclose(fp);
    assert_int_equal(sh("'%s' report '%s' -q", cli(), c100), 3);
    int passed, layers;
    report_mean(c100, "weight_snr_db", &passed, &layers);
    assert_int_equal(passed, layers - 1);
    printf("    sm100 w8a8 and mxfp4-a8 canonical layers verified on their canonical "
           "tensors; sm100 metrics == sm90 0.1.19-tile metrics\n");
    free(path), free(c100), free(c90), free(mx), free(mx2);
}

static char *run_capture(fixture *f, int *rc, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char *log = hc_test_path_join(f->root, "log.txt");
    *rc = sh("'%s' %s 2>'%s'", cli(), args, log);
    char *text = hc_test_read_file(log, NULL);
    free(log);
    assert_non_null(text);
    return text;
}

static void test_recipe_dry_run(void **state)
{
    fixture *f = *state;
    char *out = hc_test_path_join(f->root, "dry");
    int rc;
    char *log = run_capture(f, &rc, "'%s' '%s' --recipe recipes/llama.yaml --dry-run", f->model, out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(log, "model.layers.0.mlp.down_proj: 256 x 512 -> uint8"));
    assert_non_null(strstr(log, "rule 2 (targets"));
    assert_non_null(strstr(log, "model.layers.1.mlp.experts.gate_proj: experts 512 x 256"));
    assert_null(strstr(log, "lm_head: ")); /* ignored by default, not a layer */
    assert_false(hc_test_exists(out));
    free(log);
    free(out);
}

/* A one-layer float checkpoint [n x k] with an optional NaN at (row 3, col 5). */
static char *one_layer_model(fixture *f, const char *name, int64_t n, int64_t k, int nan)
{
    char *dir = hc_test_path_join(f->root, name);
    assert_int_equal(sh("mkdir -p '%s'", dir), 0);
    hc_tensor t;
    int64_t shape[2] = {n, k};
    assert_int_equal(hc_tensor_alloc(&t, HC_DT_F32, 2, shape, NULL), HC_OK);
    float *w = t.data;
    for (int64_t i = 0; i < n * k; i++) w[i] = (float)sin((double)i * 0.37) * 0.05f;
    if (nan) w[3 * k + 5] = NAN;
    const char *names[1] = {"proj.weight"};
    char *path = hc_test_path_join(dir, "model.safetensors");
    assert_int_equal(hc_st_write_file(path, &t, names, 1, NULL, NULL), HC_OK);
    hc_tensor_free(&t);
    free(path);
    path = hc_test_path_join(dir, "config.json");
    const char *cfg = "{\"torch_dtype\": \"float32\"}";
    assert_int_equal(hc_test_write_file(path, cfg, strlen(cfg)), 0);
    free(path);
    return dir;
}

static void test_bad_float_inputs(void **state)
{
    fixture *f = *state;
    char *nan = one_layer_model(f, "nan", 64, 256, 1), *out = hc_test_path_join(f->root, "o");
    int rc;
    char *log = run_capture(f, &rc, "'%s' '%s' --format w4a16", nan, out);
    if (rc != 1 || !strstr(log, "proj") || !strstr(log, "row 3, column 5"))
        fail_msg("NaN weight: exit %d: %s", rc, log);
    assert_false(hc_test_exists(out));
    free(log);
    char *ok = one_layer_model(f, "k256", 64, 256, 0);
    log = run_capture(f, &rc, "'%s' '%s' --weight-dtype uint4 --group-size 512", ok, out);
    if (rc == 0 || !strstr(log, "proj") || !strstr(log, "512"))
        fail_msg("group 512 on K=256: exit %d: %s", rc, log);
    assert_false(hc_test_exists(out));
    free(log);
    log = run_capture(f, &rc, "'%s' '%s'", ok, out); /* no target at all */
    if (rc == 0 || !strstr(log, "--format")) fail_msg("no target: exit %d: %s", rc, log);
    free(log);
    free(nan);
    free(ok);
    free(out);
}

enum { FE = 2, FN = 256, FK = 128 };

static float fused_value(int64_t e, int64_t n, int64_t k)
{
    return (float)(sin((double)(e * 7919 + n * 131 + k) * 0.01) * 0.1);
}

/* The same expert weights stored three ways: per-expert 2-D, a fused
 * [E, out, in] stack, and a gpt-oss style [E, in, out] stack with a bias. */
static char *expert_model(fixture *f, const char *name, int form)
{
    char *dir = hc_test_path_join(f->root, name);
    assert_int_equal(sh("mkdir -p '%s'", dir), 0);
    hc_tensor t[FE + 1];
    char names[FE + 1][96];
    const char *np[FE + 1];
    int count = form == 0 ? FE : 1;
    for (int i = 0; i < count; i++) {
        int64_t s2[2] = {FN, FK}, s3[3] = {FE, form == 2 ? FK : FN, form == 2 ? FN : FK};
        assert_int_equal(hc_tensor_alloc(&t[i], HC_DT_BF16, form ? 3 : 2, form ? s3 : s2, NULL), HC_OK);
        uint16_t *d = t[i].data;
        for (int64_t e = 0; e < (form ? FE : 1); e++)
            for (int64_t n = 0; n < FN; n++)
                for (int64_t k = 0; k < FK; k++) {
                    int64_t at = form == 2 ? (e * FK + k) * FN + n : (e * FN + n) * FK + k;
                    d[at] = hc_f32_to_bf16(fused_value(form ? e : i, n, k));
                }
        if (form == 0) snprintf(names[i], sizeof names[i], "model.layers.0.mlp.experts.%d.gate_up_proj.weight", i);
        else snprintf(names[i], sizeof names[i], "model.layers.0.mlp.experts.gate_up_proj");
        np[i] = names[i];
    }
    if (form == 2) {
        int64_t sb[2] = {FE, FN};
        assert_int_equal(hc_tensor_alloc(&t[1], HC_DT_BF16, 2, sb, NULL), HC_OK);
        snprintf(names[1], sizeof names[1], "model.layers.0.mlp.experts.gate_up_proj_bias");
        np[1] = names[1];
        count = 2;
    }
    char *path = hc_test_path_join(dir, "model.safetensors");
    assert_int_equal(hc_st_write_file(path, t, np, (size_t)count, NULL, NULL), HC_OK);
    for (int i = 0; i < count; i++) hc_tensor_free(&t[i]);
    free(path);
    path = hc_test_path_join(dir, "config.json");
    const char *cfg = form == 2 ? "{\"torch_dtype\": \"bfloat16\", \"model_type\": \"gpt_oss\"}"
                                : "{\"torch_dtype\": \"bfloat16\", \"model_type\": \"qwen3_moe\"}";
    assert_int_equal(hc_test_write_file(path, cfg, strlen(cfg)), 0);
    free(path);
    return dir;
}

static void *expert_output(fixture *f, const char *in, const char *name, size_t *len, int *has_bias)
{
    char *out = hc_test_path_join(f->root, name);
    assert_int_equal(sh("'%s' '%s' '%s' -q --format w4a16 --arch sm80 --layout tiles", cli(), in,
                        out), 0);
    char *path = hc_test_path_join(out, "model.safetensors");
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(path, &st, NULL), HC_OK);
    const hc_st_tensor *w = hc_st_find(st, "model.layers.0.mlp.experts.gate_up_proj.weight");
    assert_non_null(w);
    assert_int_equal(w->ndim, 3);
    assert_int_equal(w->shape[0], FE);
    *has_bias = hc_st_find(st, "model.layers.0.mlp.experts.gate_up_proj.bias") != NULL;
    void *copy = malloc(w->nbytes);
    memcpy(copy, w->data, w->nbytes);
    *len = w->nbytes;
    hc_st_close(st);
    free(path);
    free(out);
    return copy;
}

static void test_expert_stack_forms(void **state)
{
    fixture *f = *state;
    char *dirs[3] = {expert_model(f, "per-expert", 0), expert_model(f, "fused", 1),
                     expert_model(f, "gpt-oss", 2)};
    size_t len[3];
    int bias[3];
    void *w[3];
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "out-%d", i);
        w[i] = expert_output(f, dirs[i], name, &len[i], &bias[i]);
    }
    assert_int_equal(len[0], len[1]);
    assert_int_equal(len[0], len[2]);
    assert_memory_equal(w[0], w[1], len[0]);
    assert_memory_equal(w[0], w[2], len[0]);
    assert_true(!bias[0] && !bias[1] && bias[2]);
    for (int i = 0; i < 3; i++) {
        free(w[i]);
        free(dirs[i]);
    }
}

/* The manifest's CRC of an input file, as an unsigned number; -1 for null. */
static long long manifest_input_crc(const char *out, const char *name)
{
    char *path = hc_test_path_join(out, "humming_manifest.json");
    char *text = hc_test_read_file(path, NULL);
    cJSON *m = cJSON_Parse(text), *in;
    long long crc = -2;
    cJSON_ArrayForEach(in, cJSON_GetObjectItem(m, "inputs"))
        if (!strcmp(cJSON_GetObjectItem(in, "name")->valuestring, name)) {
            const cJSON *c = cJSON_GetObjectItem(in, "crc32");
            crc = cJSON_IsString(c) ? strtoll(c->valuestring, NULL, 16) : -1;
        }
    cJSON_Delete(m);
    free(text);
    free(path);
    return crc;
}

static void test_manifest_input_crc(void **state)
{
    fixture *f = *state;
    char *in = hc_test_path_join(f->model, "model.safetensors");
    size_t len = 0;
    unsigned char *bytes = hc_test_read_file(in, &len);
    uLong want = crc32(crc32(0L, Z_NULL, 0), bytes, (uInt)len);
    char *out = hc_test_path_join(f->root, "crc"), *out2 = hc_test_path_join(f->root, "nocrc");
    assert_int_equal(sh("'%s' '%s' '%s' -q --format w4a16 --verify off", cli(), f->model, out), 0);
    assert_int_equal(manifest_input_crc(out, "model.safetensors"), (long long)want);
    assert_int_equal(sh("'%s' '%s' '%s' -q --format w4a16 --verify off --no-input-crc", cli(),
                        f->model, out2), 0);
    assert_int_equal(manifest_input_crc(out2, "model.safetensors"), -1);
    assert_true(manifest_input_crc(out2, "config.json") >= 0);
    free(bytes);
    free(in);
    free(out);
    free(out2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_presets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corruption_detected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recipe_dry_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_float_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expert_stack_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_manifest_input_crc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_canonical_to_tiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_canonical_decode_verified, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
