/* test_quant_golden0119.c - the RTN quantizer against humming-kernels 0.1.19.
 *
 * For every $HC_SHARED_DIR/golden-0119/NAME.safetensors holding src.weight:
 * quantize it under the file's meta.weight_config and meta.torch_dtype and
 * compare every pre.* tensor (Humming's own quant_tensor output) with ours:
 * the same set of names, and each tensor's dtype, shape and bytes. Bit for
 * bit, except a weight_scale_2 that is a mean: Humming takes it with a CUDA
 * float32 reduction whose order cannot be reproduced on a CPU, so there the
 * test accepts 2 ulp and says so (docs/quantization.md).
 *
 * `test_quant_golden0119 --dump IN OUT` quantizes the cases of IN instead of
 * running tests, for the numpy oracle tests/py/test_quant_oracle.py: IN's
 * metadata "cases" is a JSON list of {"name", "weight_config",
 * "torch_dtype"}, tensor NAME.src the weight; OUT gets NAME.<tensor> in
 * quant_tensor's names, or metadata NAME.error when we refuse the case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_quant.h"
#include "hc_test_st.h"
#include "hc_test_util.h"

/* ---- weight config -> quantizer description --------------------------------- */

/* The first of name and its Humming aliases present in o (HummingWeightSchema
 * KWARGS_ALIAS order), or NULL. */
static const cJSON *field(const cJSON *o, const char *name, const char *a1, const char *a2)
{
    const char *keys[3] = {name, a1, a2};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = keys[i] ? cJSON_GetObjectItemCaseSensitive(o, keys[i]) : NULL;
        if (v && !cJSON_IsNull(v)) return v;
    }
    return NULL;
}

static int field_int(const cJSON *o, const char *name, const char *alias)
{
    const cJSON *v = field(o, name, alias, NULL);
    return cJSON_IsNumber(v) ? v->valueint : cJSON_IsString(v) ? atoi(v->valuestring) : 0;
}

static const char *field_str(const cJSON *o, const char *name, const char *a1, const char *a2)
{
    const cJSON *v = field(o, name, a1, a2);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

typedef struct {
    hc_quant_desc d;
    hc_format_id param; /* the model dtype */
} qconfig;

/* Scale type as HummingWeightSchema infers it when absent. */
static const char *scale_type(const cJSON *wc, int gs, int gsn)
{
    const char *t = field_str(wc, "weight_scale_type", "scale_type", NULL);
    return t ? t : gsn > 1 ? "block" : gs == 0 ? "channel" : "group";
}

/* 0, or -1 with the reason in why. */
static int parse_config(const cJSON *wc, const char *torch_dtype, qconfig *q, char *why, size_t len)
{
    memset(q, 0, sizeof *q);
    const char *b = field_str(wc, "b_dtype", "weight_dtype", "dtype");
    const char *bs = field_str(wc, "bs_dtype", "weight_scale_dtype", "scale_dtype");
    const char *s2 = field_str(wc, "weight_scale_2_type", "scale_2_type", NULL);
    int gs = field_int(wc, "weight_scale_group_size", "group_size");
    int gsn = field_int(wc, "weight_scale_group_size_n", "group_size_n");
    const char *st = scale_type(wc, gs, gsn);
    if (!b || hc_format_parse(b, &q->d.weight_format) != 0 || !torch_dtype ||
        hc_format_parse(torch_dtype, &q->param) != 0 ||
        (bs && hc_format_parse(bs, &q->d.scale_format) != 0)) {
        snprintf(why, len, "unknown dtype in the weight config");
        return -1;
    }
    if (!bs) q->d.scale_format = q->param;
    q->d.group_size = strcmp(st, "tensor") == 0 ? HC_QUANT_GROUP_TENSOR
                      : strcmp(st, "channel") == 0 ? HC_QUANT_GROUP_CHANNEL : gs;
    if (strcmp(st, "block") == 0) {
        q->d.group_size_n = gsn;
        q->d.scale_format = HC_FMT_F32;
    }
    const cJSON *zp = cJSON_GetObjectItemCaseSensitive(wc, "has_zero_point");
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(wc, "is_fp_zero_point");
    if (cJSON_IsTrue(zp)) q->d.zero_point = cJSON_IsTrue(fp) ? HC_ZP_FLOAT : HC_ZP_INT;
    q->d.global_scale = s2 && strcmp(s2, "tensor") == 0;
    q->d.scale_2_channel = s2 && strcmp(s2, "channel") == 0;
    q->d.scale_2_format = q->param;
    return 0;
}

/* ---- our result as quant_tensor's tensors ---------------------------------- */

enum { HC_CANON_MAX = 4 };

typedef struct {
    const char *names[HC_CANON_MAX];
    hc_tensor t[HC_CANON_MAX]; /* borrowing the result's buffers */
    int count;
} canon;

/* Adds a tensor of shape (E?, d1[, d2]); E is dropped for 2-D weights. */
static void canon_add(canon *c, const char *name, hc_dtype dt, const void *data, int moe,
                      int64_t E, int nd, int64_t d1, int64_t d2)
{
    hc_tensor *t = &c->t[c->count];
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    if (moe) t->shape[t->ndim++] = E;
    if (nd >= 1) t->shape[t->ndim++] = d1;
    if (nd >= 2) t->shape[t->ndim++] = d2;
    t->data = (void *)data;
    t->nbytes = (size_t)hc_tensor_byte_size(dt, t->ndim, t->shape);
    c->names[c->count++] = name;
}

/* Per-expert float32 scalars are (E,), also (1,) for a 2-D weight. */
static void canon_per_expert(canon *c, const char *name, const hc_quant_result *r)
{
    canon_add(c, name, HC_DT_F32, r->global_scale, 1, r->experts, 0, 0, 0);
}

static void to_canon(const hc_quant_result *r, int moe, canon *c)
{
    int64_t E = r->experts, NS = r->group_rows, G = r->groups;
    c->count = 0;
    canon_add(c, "weight", HC_DT_I32, r->codes, moe, E, 2, r->n, r->k * r->bits / 32);
    if (r->desc.group_size == HC_QUANT_GROUP_TENSOR) {
        canon_per_expert(c, "weight_scale", r);
        return;
    }
    canon_add(c, "weight_scale", hc_dtype_of_format(r->desc.scale_format), r->scales, moe, E, 2,
              NS, G);
    if (r->zero_points)
        canon_add(c, "zero_point", HC_DT_I32, r->zero_points, moe, E, 2, NS * r->bits / 32, G);
    if (r->zero_points_f)
        canon_add(c, "zero_point", hc_dtype_of_format(r->zp_float_format), r->zero_points_f, moe,
                  E, 2, NS, G);
    if (r->global_scale) canon_per_expert(c, "weight_scale_2", r);
    if (r->scale_2)
        canon_add(c, "weight_scale_2", hc_dtype_of_format(r->desc.scale_2_format), r->scale_2,
                  moe, E, 1, r->n, 0);
}

/* Quantizes weight w (2-D or 3-D, F16/BF16/F32) under q; 0 or -1 with err. */
static int quantize_tensor(const hc_tensor *w, const qconfig *q, hc_quant_result *r, hc_error *err)
{
    int moe = w->ndim == 3;
    int64_t E = moe ? w->shape[0] : 1, N = w->shape[w->ndim - 2], K = w->shape[w->ndim - 1];
    float *x = malloc((size_t)(E * N * K) * sizeof *x);
    if (!x || (w->ndim != 2 && w->ndim != 3) || hc_test_st_to_f32(w, x) != 0) {
        free(x);
        hc_error_set(err, HC_ERR_ARG, "src weight is not a 2-D or 3-D float tensor");
        return -1;
    }
    hc_status st = hc_quantize(&q->d, x, E, N, K, r, err);
    free(x);
    return st == HC_OK ? 0 : -1;
}

/* ---- comparison with the golden pre.* tensors ------------------------------- */

/* Distance in ulps of two finite floats of a 16- or 32-bit dtype, 999 if apart. */
static int64_t ulps(hc_dtype dt, const uint8_t *a, const uint8_t *b)
{
    int64_t x = 0, y = 0;
    int nb = dt == HC_DT_F32 ? 4 : 2;
    for (int i = nb - 1; i >= 0; i--) {
        x = x << 8 | a[i];
        y = y << 8 | b[i];
    }
    int64_t sign = (int64_t)1 << (8 * nb - 1);
    if ((x & sign) != (y & sign)) return x == y ? 0 : 999;
    return llabs(x - y);
}

/* 0 when equal; the ulp distance (1 or 2) of a weight_scale_2 within 2 ulp;
 * else -1. */
static int compare_bytes(const char *name, const hc_tensor *ours, const hc_st_tensor *gold)
{
    if (memcmp(ours->data, gold->data, gold->nbytes) == 0) return 0;
    if (strcmp(name, "weight_scale_2") != 0) return -1;
    int nb = hc_dtype_bits(gold->dtype) / 8;
    int64_t worst = 0;
    for (size_t i = 0; i < gold->nbytes; i += (size_t)nb) {
        int64_t u = ulps(gold->dtype, (const uint8_t *)ours->data + i, (const uint8_t *)gold->data + i);
        worst = u > worst ? u : worst;
    }
    return worst <= 2 ? (int)worst : -1;
}

/* Number of mismatches between our tensors and the file's pre.*, printed. */
static int compare_pre(const char *file, const hc_test_st_file *f, const canon *c)
{
    int bad = 0, golden_count = 0;
    for (size_t i = 0; hc_st_tensor_at(f->f, i); i++)
        golden_count += strncmp(hc_st_tensor_at(f->f, i)->name, "pre.", 4) == 0;
    for (int i = 0; i < c->count; i++) {
        char pre[64];
        snprintf(pre, sizeof pre, "pre.%s", c->names[i]);
        const hc_st_tensor *g = hc_st_find(f->f, pre);
        const hc_tensor *t = &c->t[i];
        char gs[64] = "-", os[64];
        hc_shape_format(t->ndim, t->shape, os, sizeof os);
        if (g) hc_shape_format(g->ndim, g->shape, gs, sizeof gs);
        int same = g && g->dtype == t->dtype && g->ndim == t->ndim && strcmp(gs, os) == 0 &&
                   g->nbytes == t->nbytes;
        int res = same ? compare_bytes(c->names[i], t, g) : -1;
        printf("  %s: %-16s %s %s: %s", file, pre, hc_dtype_name(t->dtype), os,
               !g ? "MISSING in the golden file" : !same ? "dtype or shape differs"
               : res == 0 ? "bit exact" : res < 0 ? "MISMATCH" : "");
        if (res > 0) printf("%d ulp apart (a CUDA float32 mean, not bit exact)", res);
        printf("\n");
        bad += res < 0;
    }
    if (golden_count != c->count) {
        printf("  %s: golden has %d pre.* tensors, we make %d\n", file, golden_count, c->count);
        bad++;
    }
    return bad;
}

static char golden_dir[1024];

static int has_golden(void)
{
    const char *s = getenv("HC_SHARED_DIR");
    snprintf(golden_dir, sizeof golden_dir, "%s/golden-0119", s && *s ? s : "../shared");
    DIR *d = opendir(golden_dir);
    if (!d) {
        hc_test_skip_notice("golden", "%s not found: 0.1.19 golden quantizer tests skipped",
                            golden_dir);
        return 0;
    }
    closedir(d);
    return 1;
}

/* Mismatches of one file; *compared = 0 when it has no src.weight or is a
 * crafted vector (codes not made by the quantizer). */
static int run_file(const char *path, const char *file, int *compared, void *ctx)
{
    (void)ctx;
    hc_test_st_file f = {0};
    hc_tensor src = {0};
    *compared = 0;
    if (hc_test_st_open(path, &f) != 0) {
        printf("  %s: unreadable\n", file);
        return 1;
    }
    cJSON *meta = cJSON_Parse(hc_test_st_meta(&f, "meta") ? hc_test_st_meta(&f, "meta") : "");
    const cJSON *qf = cJSON_GetObjectItemCaseSensitive(meta, "quantizer");
    const cJSON *crafted = cJSON_GetObjectItemCaseSensitive(qf, "crafted");
    qconfig q;
    char why[256] = "";
    int bad = 0;
    if (hc_test_st_get(&f, "src.weight", &src) != 0 || (crafted && !cJSON_IsNull(crafted))) {
        printf("  %s: no src.weight or a crafted vector: not a quantizer reference\n", file);
    } else if (parse_config(cJSON_GetObjectItemCaseSensitive(meta, "weight_config"),
                            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "torch_dtype")),
                            &q, why, sizeof why) != 0) {
        printf("  %s: %s\n", file, why);
        bad = 1;
    } else {
        hc_quant_result r;
        hc_error err = {0};
        *compared = 1;
        if (quantize_tensor(&src, &q, &r, &err) != 0) {
            printf("  %s: quantize failed: %s\n", file, err.msg);
            bad = 1;
        } else {
            canon c;
            to_canon(&r, src.ndim == 3, &c);
            bad = compare_pre(file, &f, &c);
            hc_quant_result_free(&r);
        }
    }
    cJSON_Delete(meta);
    hc_tensor_free(&src);
    hc_test_st_close(&f);
    return bad;
}

static void test_golden0119_files(void **state)
{
    (void)state;
    if (!has_golden()) {
        skip();
        return; /* skip() does not always leave the test */
    }
    int compared = 0;
    int failed = hc_test_golden_walk(golden_dir, run_file, "golden-0119", &compared);
    assert_true(failed >= 0);
    assert_true(compared > 0);
    assert_int_equal(failed, 0);
}

/* ---- --dump IN OUT: our tensors for the numpy oracle ------------------------- */

typedef struct {
    char name[128];
    hc_quant_result r;
    canon c;
    int ok;
    char error[sizeof(((hc_error *)0)->msg)];
} dump_case;

static void dump_quantize(const hc_test_st_file *f, const cJSON *item, dump_case *dc)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "name"));
    const char *td = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "torch_dtype"));
    char src[160];
    hc_tensor w = {0};
    qconfig q;
    hc_error err = {0};
    snprintf(dc->name, sizeof dc->name, "%s", name ? name : "?");
    snprintf(src, sizeof src, "%s.src", dc->name);
    if (hc_test_st_get(f, src, &w) != 0)
        snprintf(dc->error, sizeof dc->error, "no tensor %s", src);
    else if (parse_config(cJSON_GetObjectItemCaseSensitive(item, "weight_config"), td, &q,
                          dc->error, sizeof dc->error) == 0) {
        dc->ok = quantize_tensor(&w, &q, &dc->r, &err) == 0;
        if (dc->ok) to_canon(&dc->r, w.ndim == 3, &dc->c);
        else snprintf(dc->error, sizeof dc->error, "%s", err.msg);
    }
    hc_tensor_free(&w);
}

static hc_status dump_write(const char *out, dump_case *dc, int n, hc_error *err)
{
    hc_st_writer *w = NULL;
    char key[256];
    HC_TRY(hc_st_writer_open(out, &w, err));
    hc_status st = HC_OK;
    for (int i = 0; i < n && st == HC_OK; i++) {
        for (int j = 0; dc[i].ok && j < dc[i].c.count && st == HC_OK; j++) {
            snprintf(key, sizeof key, "%s.%s", dc[i].name, dc[i].c.names[j]);
            st = hc_st_writer_add(w, key, dc[i].c.t[j].dtype, dc[i].c.t[j].ndim,
                                  dc[i].c.t[j].shape, err);
        }
        snprintf(key, sizeof key, "%s.error", dc[i].name);
        if (!dc[i].ok && st == HC_OK) st = hc_st_writer_set_metadata(w, key, dc[i].error, err);
    }
    if (st == HC_OK) st = hc_st_writer_begin_data(w, err);
    size_t idx = 0;
    for (int i = 0; i < n && st == HC_OK; i++)
        for (int j = 0; dc[i].ok && j < dc[i].c.count && st == HC_OK; j++, idx++)
            st = hc_st_writer_write(w, idx, dc[i].c.t[j].data, dc[i].c.t[j].nbytes, err);
    if (st != HC_OK) {
        hc_st_writer_abort(w);
        return st;
    }
    return hc_st_writer_finish(w, err);
}

static int dump_main(const char *in, const char *out)
{
    hc_test_st_file f = {0};
    if (hc_test_st_open(in, &f) != 0) {
        fprintf(stderr, "test_quant_golden0119: cannot read %s\n", in);
        return 2;
    }
    cJSON *cases = cJSON_Parse(hc_test_st_meta(&f, "cases") ? hc_test_st_meta(&f, "cases") : "");
    int n = cJSON_GetArraySize(cases);
    dump_case *dc = calloc((size_t)(n > 0 ? n : 1), sizeof *dc);
    if (!dc || !cJSON_IsArray(cases)) {
        fprintf(stderr, "test_quant_golden0119: %s has no \"cases\" list\n", in);
        hc_test_st_close(&f);
        return 2;
    }
    for (int i = 0; i < n; i++) dump_quantize(&f, cJSON_GetArrayItem(cases, i), &dc[i]);
    hc_error err = {0};
    hc_status st = dump_write(out, dc, n, &err);
    if (st != HC_OK) fprintf(stderr, "test_quant_golden0119: writing %s: %s\n", out, err.msg);
    for (int i = 0; i < n; i++)
        if (dc[i].ok) hc_quant_result_free(&dc[i].r);
    free(dc);
    cJSON_Delete(cases);
    hc_test_st_close(&f);
    return st == HC_OK ? 0 : 2;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--dump") == 0) return dump_main(argv[2], argv[3]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden0119_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
