/* test_layout_golden.c - Humming's own pre -> post transform on the golden
 * vectors of shared/golden (H200, sm 90), compared bit for bit with
 * humming_bug_compat = 1; the plan's decisions are checked against the
 * layer_meta Humming recorded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_layout.h"
#include <cjson/cJSON.h>

#include "hc_test_st.h"
#include "hc_test_util.h"

static const char *const golden_files[] = {
    "w1a16_uint1_ch", "w2a16_uint2_g64", "w4a16_fp4e2m1_g32_e8m0_mxfp4",
    "w4a16_uint4_ch_bf16", "w4a16_uint4_g128", "w4a8_uint4_g128_fp8", "w8a16_uint8_ch",
    "w8a8_fp8e4m3_ch",
};

static const char *str_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Numbers are stored either as JSON numbers or as strings ("128"). */
static int64_t int_of(const cJSON *obj, const char *key, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNumber(v)) return (int64_t)v->valuedouble;
    if (cJSON_IsString(v)) return strtoll(v->valuestring, NULL, 10);
    return dflt;
}

static int bool_of(const cJSON *obj, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static hc_format_id format_of(const char *name)
{
    hc_format_id id = HC_FMT_COUNT;
    assert_non_null(name);
    if (strncmp(name, "torch.", 6) == 0) name += 6;
    if (strcmp(name, "float8_e4m3fn") == 0) name = "float8e4m3";
    assert_int_equal(hc_format_parse(name, &id), 0);
    return id;
}

static void config_from_meta(const cJSON *meta, const cJSON *lm, hc_layer_config *cfg)
{
    const cJSON *wc = cJSON_GetObjectItemCaseSensitive(meta, "weight_config");
    assert_non_null(wc);
    memset(cfg, 0, sizeof *cfg);
    cfg->weight_format = format_of(str_of(wc, "dtype"));
    cfg->act_format = format_of(str_of(meta, "a_dtype"));
    cfg->param_format = format_of(str_of(meta, "torch_dtype"));
    const char *sd = str_of(wc, "scale_dtype");
    cfg->scale_format = sd ? format_of(sd) : cfg->param_format;  /* Humming's default */
    cfg->group_size = int_of(wc, "group_size", 0);
    cfg->group_size_n = int_of(wc, "group_size_n", 0);
    cfg->scale_type = cfg->group_size_n > 1 ? HC_SCALE_BLOCK
                      : cfg->group_size == 0 ? HC_SCALE_CHANNEL : HC_SCALE_GROUP;
    cfg->has_zero_point = bool_of(lm, "has_zero_point");
    cfg->is_fp_zero_point = bool_of(lm, "is_fp_zero_point");
    cfg->sm = 90;
    cfg->humming_bug_compat = 1;
}

/* Our plan against the decisions Humming recorded in layer_meta. */
static void check_decisions(const cJSON *lm, const hc_layer_meta *m)
{
    assert_int_equal(m->use_fused_e8m0, bool_of(lm, "use_fused_e8m0_scale"));
    assert_int_equal(m->use_int_weight_scale, bool_of(lm, "use_int_weight_scale"));
    assert_string_equal(m->use_wgmma ? "wgmma" : "mma", str_of(lm, "mma_type"));
    assert_string_equal(hc_scale_type_name(m->scale_type), str_of(lm, "weight_scale_type"));
    assert_string_equal(hc_format_get(m->scale_format)->name, str_of(lm, "bs_dtype"));
    assert_int_equal(m->N, int_of(lm, "shape_n", -1));
    assert_int_equal(m->K, int_of(lm, "shape_k", -1));
    assert_int_equal(m->Np - m->N, int_of(lm, "pad_shape_n", -1));
    assert_int_equal(m->Kp - m->K, int_of(lm, "pad_shape_k", -1));
    const char *bd = str_of(lm, "b_dtype");
    if (hc_format_get(format_of(bd))->kind != HC_KIND_FLOAT)
        assert_int_equal(m->kernel_weight_signed, bd[0] == 'i');
}

static hc_tensor *role(hc_layer_tensors *t, int i)
{
    hc_tensor *all[5] = {&t->weight, &t->weight_scale, &t->zero_point, &t->global_scale,
                         &t->bias};
    return all[i];
}

static const char *const role_names[5] = {"weight", "weight_scale", "zero_point",
                                          "global_scale", "bias"};

static void load_tensors(const hc_test_st_file *f, const char *prefix, hc_layer_tensors *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.%s", prefix, role_names[i]);
        if (hc_test_st_has(f, name)) assert_int_equal(hc_test_st_get(f, name, role(t, i)), 0);
    }
}

/* Returns 0 when ours equals gold in presence, dtype, shape and bytes. */
static int compare_tensor(const char *file, const char *name, const hc_tensor *gold,
                          const hc_tensor *ours)
{
    char gs[96], os[96];
    hc_shape_format(gold->ndim, gold->shape, gs, sizeof gs);
    hc_shape_format(ours->ndim, ours->shape, os, sizeof os);
    if ((gold->data == NULL) != (ours->data == NULL)) {
        printf("%s: post.%s: %s in golden, %s in ours\n", file, name,
               gold->data ? "present" : "absent", ours->data ? "present" : "absent");
        return 1;
    }
    if (gold->data == NULL) return 0;
    if (gold->dtype != ours->dtype || strcmp(gs, os) != 0 || gold->nbytes != ours->nbytes) {
        printf("%s: post.%s: golden %s %s, ours %s %s\n", file, name, hc_dtype_name(gold->dtype),
               gs, hc_dtype_name(ours->dtype), os);
        return 1;
    }
    const unsigned char *g = gold->data, *o = ours->data;
    for (size_t i = 0; i < gold->nbytes; i++) {
        if (g[i] != o[i]) {
            printf("%s: post.%s: first differing byte %zu (golden %02x, ours %02x)\n", file, name,
                   i, g[i], o[i]);
            return 1;
        }
    }
    printf("%s: post.%s %s %s matches bit for bit\n", file, name, hc_dtype_name(gold->dtype), gs);
    return 0;
}

static const char *shared_dir(void)
{
    const char *d = getenv("HC_SHARED_DIR");
    return d && d[0] ? d : "../shared";
}

static void test_golden_file(void **state)
{
    const char *name = *state;
    char path[1024];
    snprintf(path, sizeof path, "%s/golden/%s.safetensors", shared_dir(), name);
    hc_test_st_file f;
    if (hc_test_st_open(path, &f) != 0) {
        hc_test_skip_notice("golden", "%s not readable: golden layout check skipped", path);
        skip();
        return; /* skip() does not always leave the test */
    }
    const char *meta_s = hc_test_st_meta(&f, "meta");
    printf("%s: meta %s\n", name, meta_s ? meta_s : "(none)");
    cJSON *meta = cJSON_Parse(meta_s ? meta_s : "");
    assert_non_null(meta);
    cJSON *lm = cJSON_Parse(str_of(meta, "layer_meta"));
    assert_non_null(lm);
    hc_layer_config cfg;
    config_from_meta(meta, lm, &cfg);
    int64_t E = int_of(lm, "num_experts", 0);
    hc_layer_meta m;
    hc_error err = {0};
    hc_status st = hc_layer_plan(&cfg, E > 0, E > 0 ? E : 1, int_of(meta, "n", 0),
                                 int_of(meta, "k", 0), &m, &err);
    if (st != HC_OK) fail_msg("%s: plan: %s", name, err.msg);
    check_decisions(lm, &m);
    hc_layer_tensors pre, gold, post;
    load_tensors(&f, "pre", &pre);
    load_tensors(&f, "post", &gold);
    st = hc_layer_transform(&cfg, &m, &pre, &post, &err);
    if (st != HC_OK) fail_msg("%s: transform: %s", name, err.msg);
    int bad = 0;
    for (int i = 0; i < 5; i++) bad += compare_tensor(name, role_names[i], role(&gold, i),
                                                      role(&post, i));
    hc_layer_tensors_free(&pre);
    hc_layer_tensors_free(&gold);
    hc_layer_tensors_free(&post);
    cJSON_Delete(lm);
    cJSON_Delete(meta);
    hc_test_st_close(&f);
    assert_int_equal(bad, 0);
}

int main(void)
{
    struct CMUnitTest tests[sizeof golden_files / sizeof golden_files[0]];
    for (size_t i = 0; i < sizeof golden_files / sizeof golden_files[0]; i++) {
        struct CMUnitTest t = cmocka_unit_test_prestate(test_golden_file, (void *)golden_files[i]);
        t.name = golden_files[i];
        tests[i] = t;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
