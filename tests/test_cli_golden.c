/* test_cli_golden - the shared golden vectors of Humming a6455de, end to end
 * through the CLI's canonical layout: only their pre.* (the canonical form,
 * which a6455de and 0.1.19 share) and src.weight are used; their post.*
 * tiles are of a layout no released engine runs (tests/test_layout_golden0119.c
 * checks the 0.1.19 tiles).
 *
 * For each file in $HC_SHARED_DIR/golden: a Humming-format checkpoint of its
 * pre.* tensors and weight config (a6455de's key names: dtype, group_size),
 * converted with the file's activation dtype, must come back as the same
 * canonical tensors bit for bit; and, where the file's quantizer rule is the
 * 0.1.19 one we follow, the float src.weight quantized with the same target
 * must give pre.* bit for bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"
#include "hc_test_util.h"
#include "hc_model_config.h"
#include "hc_safetensors.h"

static const char *const roles[] = {"weight", "weight_scale", "zero_point", "weight_scale_2", "bias"};

static const char *golden_dir(char *buf, size_t len)
{
    const char *shared = getenv("HC_SHARED_DIR");
    snprintf(buf, len, "%s/golden", shared ? shared : "../shared");
    return buf;
}

static char *make_temp_dir(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/hc-golden-XXXXXX", base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

/* config.json of the input: torch_dtype + the golden weight config. */
static void write_input_config(const char *dir, const cJSON *meta)
{
    const cJSON *wc = cJSON_GetObjectItem(meta, "weight_config");
    const cJSON *td = cJSON_GetObjectItem(meta, "torch_dtype");
    assert_true(cJSON_IsObject(wc) && cJSON_IsString(td));
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "torch_dtype", td->valuestring);
    cJSON_AddItemToObject(root, "quantization_config", cJSON_Duplicate(wc, 1));
    char *text = cJSON_Print(root), path[8192];
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(hc_fs_write_file(path, text, strlen(text), NULL), HC_OK);
    free(text);
    cJSON_Delete(root);
}

/* model.safetensors with "layer.<role>" = pre.<role> for every role present. */
static void write_input_tensors(const char *dir, const hc_st_file *g)
{
    hc_tensor tensors[5];
    char names[5][64];
    const char *name_ptrs[5];
    size_t n = 0;
    for (int r = 0; r < 5; r++) {
        char pre[64];
        snprintf(pre, sizeof pre, "pre.%s", roles[r]);
        const hc_st_tensor *t = hc_st_find(g, pre);
        if (t == NULL) continue;
        hc_st_tensor_view(t, &tensors[n]);
        snprintf(names[n], sizeof names[n], "layer.%s", roles[r]);
        name_ptrs[n] = names[n];
        n++;
    }
    char path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    hc_error err;
    hc_status st = hc_st_write_file(path, tensors, name_ptrs, n, NULL, &err);
    if (st != HC_OK) fail_msg("%s", err.msg);
}

static int run_cli(const char *in, const char *out, const char *act, const char *extra)
{
    const char *cli = getenv("HC_CLI");
    char cmd[40000];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --arch sm90 --activation %s --layout canonical -q %s",
             cli ? cli : "build/humming-convert", in, out, act, extra);
    return system(cmd);
}

static void compare_outputs(const char *file, const hc_st_file *g, const char *out_dir);

/* A float checkpoint holding layer.weight = src.weight. */
static void write_float_input(const char *dir, const hc_st_file *g, const cJSON *meta)
{
    const cJSON *td = cJSON_GetObjectItem(meta, "torch_dtype");
    char text[256], path[8400];
    snprintf(text, sizeof text, "{\"torch_dtype\": \"%s\"}", td->valuestring);
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(hc_fs_write_file(path, text, strlen(text), NULL), HC_OK);
    hc_tensor t;
    hc_st_tensor_view(hc_st_find(g, "src.weight"), &t);
    const char *name = "layer.weight";
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(hc_st_write_file(path, &t, &name, 1, NULL, NULL), HC_OK);
}

/* Flags that describe the golden weight config to the quantizer. */
static void quant_flags(const cJSON *meta, char *buf, size_t len)
{
    const cJSON *wc = cJSON_GetObjectItem(meta, "weight_config");
    const cJSON *gs = cJSON_GetObjectItem(wc, "group_size");
    const cJSON *sd = cJSON_GetObjectItem(wc, "scale_dtype");
    const char *g = cJSON_IsString(gs) ? gs->valuestring : "0";
    snprintf(buf, len, "--weight-dtype %s --group-size %s%s%s",
             cJSON_GetObjectItem(wc, "dtype")->valuestring, strcmp(g, "0") ? g : "channel",
             sd ? " --scale-dtype " : "", sd ? sd->valuestring : "");
}

/* Float src.weight -> our quantizer -> canonical == pre.*, for the files whose
 * quantizer rule (Humming a6455de's) is the 0.1.19 rule we follow: 1-bit
 * integers and float weights without e8m0 scales (test_quant_golden.c).
 * a6455de divides symmetric 2..8-bit integer scales by D + 1.499 where 0.1.19
 * uses D + 1, and rounds e8m0 scales down; those files keep their pre.* ->
 * canonical check only. */
static int check_requantized(const char *file, const hc_st_file *g, const cJSON *meta,
                             const char *tmp, const char *act)
{
    const cJSON *wc = cJSON_GetObjectItem(meta, "weight_config");
    const cJSON *sd = cJSON_GetObjectItem(wc, "scale_dtype");
    hc_format_id wf;
    assert_int_equal(hc_format_parse(cJSON_GetObjectItem(wc, "dtype")->valuestring, &wf), 0);
    const hc_format_info *fi = hc_format_get(wf);
    if ((sd && strcmp(sd->valuestring, "float8e8m0") == 0) ||
        (fi->kind != HC_KIND_FLOAT && fi->bits > 1)) {
        printf("    %s: src.weight not requantized (a6455de's quantizer rule is not ours)\n", file);
        return 0;
    }
    char in[8300], out[8300], flags[512];
    snprintf(in, sizeof in, "%s/float-in", tmp);
    snprintf(out, sizeof out, "%s/float-out", tmp);
    assert_int_equal(mkdir(in, 0755), 0);
    write_float_input(in, g, meta);
    quant_flags(meta, flags, sizeof flags);
    if (run_cli(in, out, act, flags) != 0) fail_msg("%s: humming-convert %s failed", file, flags);
    compare_outputs(file, g, out);
    printf("    %s: src.weight -> pre.* bit-exact (%s)\n", file, flags);
    return 1;
}

static void compare_outputs(const char *file, const hc_st_file *g, const char *out_dir)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors", out_dir);
    hc_st_file *o = NULL;
    hc_error err;
    if (hc_st_open(path, &o, &err) != HC_OK) fail_msg("%s", err.msg);
    int compared = 0;
    for (int r = 0; r < 5; r++) {
        char post[64], name[64];
        snprintf(post, sizeof post, "pre.%s", roles[r]);
        snprintf(name, sizeof name, "layer.%s", roles[r]);
        const hc_st_tensor *want = hc_st_find(g, post), *got = hc_st_find(o, name);
        if (want == NULL && got == NULL) continue;
        if (want == NULL || got == NULL)
            fail_msg("%s: %s present in %s only", file, roles[r], want ? "golden" : "output");
        assert_int_equal(got->dtype, want->dtype);
        assert_int_equal(got->ndim, want->ndim);
        assert_memory_equal(got->shape, want->shape, (size_t)want->ndim * sizeof want->shape[0]);
        assert_int_equal(got->nbytes, want->nbytes);
        if (memcmp(got->data, want->data, want->nbytes) != 0)
            fail_msg("%s: %s differs from pre.%s", file, name, roles[r]);
        compared++;
    }
    assert_true(compared >= 2);
    hc_st_close(o);
}

static void check_golden_file(const char *dir, const char *file, int *requantized)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    hc_st_file *g = NULL;
    hc_error err;
    if (hc_st_open(path, &g, &err) != HC_OK) fail_msg("%s", err.msg);
    cJSON *meta = cJSON_Parse(hc_st_metadata_get(g, "meta"));
    assert_non_null(meta);
    char *tmp = make_temp_dir(), in[4200], out[4200];
    snprintf(in, sizeof in, "%s/in", tmp);
    snprintf(out, sizeof out, "%s/out", tmp);
    assert_int_equal(mkdir(in, 0755), 0);
    write_input_config(in, meta);
    write_input_tensors(in, g);
    const char *act = cJSON_GetObjectItem(meta, "a_dtype")->valuestring;
    if (run_cli(in, out, act, "") != 0) fail_msg("%s: humming-convert failed", file);
    compare_outputs(file, g, out);
    printf("    %s: pre.* -> canonical output == pre.* bit-exact\n", file);
    *requantized += check_requantized(file, g, meta, tmp, act);
    hc_fs_remove_tree(tmp, NULL);
    free(tmp);
    cJSON_Delete(meta);
    hc_st_close(g);
}

static void test_golden_through_cli(void **state)
{
    (void)state;
    char dir[4096];
    DIR *d = opendir(golden_dir(dir, sizeof dir));
    if (d == NULL) {
        hc_test_skip_notice("golden", "%s not found: golden CLI test skipped", dir);
        skip();
        return; /* skip() does not always leave the test */
    }
    int files = 0, requantized = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 12 || strcmp(e->d_name + len - 12, ".safetensors") != 0) continue;
        check_golden_file(dir, e->d_name, &requantized);
        files++;
    }
    closedir(d);
    assert_int_equal(files, 8);
    assert_int_equal(requantized, 2); /* w1a16_uint1_ch, w8a8_fp8e4m3_ch */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_golden_through_cli)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
