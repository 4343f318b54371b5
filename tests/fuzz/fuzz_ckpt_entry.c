/* fuzz_ckpt_entry.c - a quantized checkpoint from bytes (see fuzz_entry.h):
 *   byte 0: bits 0-1 name the side file (none, hf_quant_config.json,
 *           quantize_config.json, quant_config.json), bit 2 the param dtype
 *   then config.json text, a NUL, the side file's text, a NUL, and the rest
 *   is model.safetensors - or, when it starts with "HCT1", a compact list of
 *   tensors that is written as a valid safetensors file (so that mutations
 *   reach the readers instead of the header parser):
 *     count, then per tensor: name index (names[] below), dtype index
 *     (dtypes[]), ndim (0..4), one byte per dimension; the remaining bytes
 *     become the tensors' leading bytes in order, the rest of each tensor a
 *     benign value (1.0 for floats, 0 for integers).
 * The files go to a temporary directory made once per process; then
 * detection and every layer's reader run, plan-time (meta_only) and full. */
#include "fuzz_entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_ckpt.h"
#include "hc_quant.h"
#include "hc_safetensors.h"
#include "hc_tensor.h"

static const char *const side_names[] = {NULL, "hf_quant_config.json", "quantize_config.json",
                                         "quant_config.json"};
static const char *const all_names[] = {"config.json", "model.safetensors",
                                        "hf_quant_config.json", "quantize_config.json",
                                        "quant_config.json"};
enum { N_NAMES = sizeof all_names / sizeof all_names[0] };
static char dir[64];

static void remove_dir(void)
{
    char p[160];
    for (int i = 0; i < N_NAMES; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, all_names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static int make_dir(void)
{
    if (dir[0]) return 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/hc-fuzz-ckpt-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        dir[0] = '\0';
        return -1;
    }
    atexit(remove_dir);
    return 0;
}

#define P_ "model.layers.0.mlp.up_proj"
#define X_ "model.layers.0.mlp.experts.down_proj"
static const char *const names[] = {
    P_ ".qweight", P_ ".qzeros", P_ ".scales", P_ ".g_idx", P_ ".weight", P_ ".weight_packed",
    P_ ".weight_scale", P_ ".weight_zero_point", P_ ".weight_g_idx", P_ ".weight_shape",
    P_ ".weight_global_scale", P_ ".weight_scale_2", P_ ".weight_scale_inv", P_ ".bias",
    X_ "_blocks", X_ "_scales", X_ "_bias", P_ ".zeros", P_ ".scaled_zeros", "model.norm.weight"};
static const hc_dtype dtypes[] = {HC_DT_U8,  HC_DT_I8,  HC_DT_F8_E4M3, HC_DT_F8_E5M2,
                                  HC_DT_F8_E8M0, HC_DT_F16, HC_DT_BF16, HC_DT_F32,
                                  HC_DT_I32, HC_DT_U32, HC_DT_I64, HC_DT_I16};
enum { N_TNAMES = sizeof names / sizeof names[0], N_DTYPES = sizeof dtypes / sizeof dtypes[0],
       MAX_T = 16, MAX_BYTES = 1 << 20 };

/* The value a tensor holds where the input gives no bytes: 1.0 or 0. */
static void benign_fill(hc_tensor *t)
{
    static const uint8_t one16[2] = {0x00, 0x3C}, oneb16[2] = {0x80, 0x3F};
    static const uint8_t one32[4] = {0x00, 0x00, 0x80, 0x3F};
    const uint8_t *pat = NULL;
    size_t w = 1;
    uint8_t b = 0;
    switch (t->dtype) {
    case HC_DT_F16: pat = one16; w = 2; break;
    case HC_DT_BF16: pat = oneb16; w = 2; break;
    case HC_DT_F32: pat = one32; w = 4; break;
    case HC_DT_F8_E4M3: b = 0x38; break;
    case HC_DT_F8_E5M2: b = 0x3C; break;
    case HC_DT_F8_E8M0: b = 0x7F; break;
    default: break;
    }
    uint8_t *d = t->data;
    for (size_t i = 0; i < t->nbytes; i++) d[i] = pat ? pat[i % w] : b;
}

/* Decodes the compact tensor list (after "HCT1") into t / tn; returns the count. */
static int compact_tensors(const uint8_t *p, size_t n, hc_tensor *t, const char **tn)
{
    size_t o = 1, total = 0;
    int want = n ? p[0] % (MAX_T + 1) : 0, count = 0, used[N_TNAMES] = {0};
    for (int r = 0; r < want && o + 3 <= n; r++) {
        int name = p[o] % N_TNAMES, ndim = p[o + 2] % 5;
        hc_dtype dt = dtypes[p[o + 1] % N_DTYPES];
        int64_t shape[4] = {0};
        if (o + 3 + (size_t)ndim > n) break;
        for (int i = 0; i < ndim; i++) shape[i] = p[o + 3 + i];
        o += 3 + (size_t)ndim;
        int64_t bytes = hc_tensor_byte_size(dt, ndim, shape);
        if (used[name] || bytes < 0 || total + (size_t)bytes > MAX_BYTES ||
            hc_tensor_alloc(&t[count], dt, ndim, shape, NULL) != HC_OK)
            continue;
        used[name] = 1;
        total += (size_t)bytes;
        tn[count++] = names[name];
    }
    for (int i = 0; i < count; i++) { /* leading bytes from the input, then benign values */
        benign_fill(&t[i]);
        size_t take = n - o < t[i].nbytes ? n - o : t[i].nbytes;
        if (take) memcpy(t[i].data, p + o, take);
        o += take;
    }
    return count;
}

static int put_compact(const uint8_t *p, size_t n)
{
    hc_tensor t[MAX_T];
    const char *tn[MAX_T];
    char path[160];
    int count = compact_tensors(p, n, t, tn);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    hc_status st = hc_st_write_file(path, t, tn, (size_t)count, NULL, NULL);
    for (int i = 0; i < count; i++) hc_tensor_free(&t[i]);
    return st == HC_OK ? 0 : -1;
}

static int put(const char *name, const void *data, size_t len)
{
    char p[160];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "wb");
    if (fp == NULL) return -1;
    size_t n = len ? fwrite(data, 1, len, fp) : 0;
    return fclose(fp) == 0 && n == len ? 0 : -1;
}

/* Splits the input and writes the files; *config gets the config text (malloc'ed). */
static int write_input(const uint8_t *data, size_t size, char **config)
{
    char p[160];
    for (int i = 0; i < N_NAMES; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, all_names[i]);
        unlink(p);
    }
    int side = size ? data[0] & 3 : 0;
    const uint8_t *c = size ? data + 1 : data, *end = data + size;
    const uint8_t *z1 = memchr(c, 0, (size_t)(end - c));
    const uint8_t *s = z1 ? z1 + 1 : end;
    const uint8_t *z2 = memchr(s, 0, (size_t)(end - s));
    const uint8_t *st = z2 ? z2 + 1 : end;
    *config = hc_fuzz_cstr(c, (size_t)((z1 ? z1 : end) - c));
    if (*config == NULL || put("config.json", *config, strlen(*config)) != 0) return -1;
    if (side && put(side_names[side], s, (size_t)((z2 ? z2 : end) - s)) != 0) return -1;
    if (end - st >= 4 && memcmp(st, "HCT1", 4) == 0) {
        put_compact(st + 4, (size_t)(end - st - 4)); /* a file the writer refuses: none */
        return 0;
    }
    return put("model.safetensors", st, (size_t)(end - st));
}

static int check_error(hc_status st, const hc_error *err, const char *what, char *why)
{
    if (st != HC_OK && (err->status != st || err->msg[0] == '\0'))
        return hc_fuzz_fail(why, "%s: error %d without a message", what, (int)st);
    return 0;
}

/* A layer read back: consistent geometry, buffers present, a permutation. */
static int check_layer(const hc_ckpt_layer *l, int meta_only, const char *name, char *why)
{
    const hc_quant_result *q = &l->q;
    const hc_format_info *f = hc_format_get(q->desc.weight_format);
    if (f == NULL || f->bits < 1 || f->bits > 8 || q->bits != f->bits)
        return hc_fuzz_fail(why, "%s: weight format %d, bits %d", name, (int)q->desc.weight_format, q->bits);
    if (q->experts < 1 || q->n < 1 || q->k < 1 || q->groups < 1 || q->group_rows < 1 ||
        q->group_cols * q->groups != q->k || q->k * q->bits % 32 != 0)
        return hc_fuzz_fail(why, "%s: geometry E=%lld N=%lld K=%lld G=%lld NS=%lld", name,
                            (long long)q->experts, (long long)q->n, (long long)q->k,
                            (long long)q->groups, (long long)q->group_rows);
    if ((meta_only ? q->codes != NULL : q->codes == NULL) ||
        (q->desc.group_size != HC_QUANT_GROUP_TENSOR && q->scales == NULL))
        return hc_fuzz_fail(why, "%s: buffers missing or extra", name);
    if (l->perm) {
        char *seen = calloc((size_t)q->k, 1);
        for (int64_t j = 0; seen && j < q->k; j++) {
            if (l->perm[j] < 0 || l->perm[j] >= q->k || seen[l->perm[j]]) {
                free(seen);
                return hc_fuzz_fail(why, "%s: input_perm is not a permutation", name);
            }
            seen[l->perm[j]] = 1;
        }
        free(seen);
    }
    return 0;
}

/* One layer: plan-time read, then the full read and its dequantization. */
static int read_layer(const hc_ckpt_config *cfg, hc_st_model *m, hc_ckpt_kind kind,
                      const char *prefix, hc_format_id param, char *why)
{
    const hc_st_tensor *parts[16];
    (void)hc_ckpt_is_skipped(cfg, prefix);
    if (cfg->method == HC_CKPT_CT) (void)hc_ckpt_ct_group_for(cfg, prefix);
    (void)hc_ckpt_layer_tensors(m, kind, prefix, parts, 16);
    (void)hc_ckpt_layer_bias(m, kind, prefix);
    int rc = 0;
    for (int meta = 1; meta >= 0 && rc == 0; meta--) {
        hc_ckpt_read_opts ro = {.act_order = HC_ACT_ORDER_PERMUTE, .param_format = param,
                                .meta_only = meta};
        hc_ckpt_layer l;
        hc_error err;
        hc_error_clear(&err);
        hc_status st = hc_ckpt_read(cfg, m, kind, prefix, &ro, &l, &err);
        rc = check_error(st, &err, prefix, why);
        if (st != HC_OK) {
            if (rc == 0 && (l.q.codes || l.q.scales || l.perm))
                rc = hc_fuzz_fail(why, "%s: failed read left buffers", prefix);
            break;
        }
        rc = check_layer(&l, meta, prefix, why);
        int64_t n = l.q.experts * l.q.n * l.q.k;
        float *w = rc == 0 && !meta ? malloc((size_t)n * sizeof *w) : NULL;
        if (w) {
            st = hc_dequantize(&l.q, w, &err);
            rc = check_error(st, &err, "hc_dequantize", why);
        }
        free(w);
        hc_ckpt_layer_free(&l);
    }
    return rc;
}

int hc_fuzz_ckpt(const uint8_t *data, size_t size, char *why)
{
    if (make_dir() != 0) return hc_fuzz_fail(why, "cannot make the temporary checkpoint directory");
    char *config = NULL;
    if (write_input(data, size, &config) != 0) {
        free(config);
        return hc_fuzz_fail(why, "cannot write the checkpoint files in %s", dir);
    }
    hc_format_id param = size && (data[0] & 4) ? HC_FMT_F16 : HC_FMT_BF16;
    hc_ckpt_config cfg;
    hc_error err;
    hc_error_clear(&err);
    hc_status st = hc_ckpt_detect(dir, config, &cfg, &err);
    free(config);
    int rc = check_error(st, &err, "hc_ckpt_detect", why);
    if (rc != 0 || st != HC_OK || cfg.method == HC_CKPT_NONE) return rc;
    hc_st_model *m = NULL;
    hc_error_clear(&err);
    st = hc_st_model_open(dir, &m, &err);
    rc = check_error(st, &err, "hc_st_model_open", why);
    for (size_t i = 0; rc == 0 && st == HC_OK && i < hc_st_model_count(m); i++) {
        hc_ckpt_kind kind;
        char prefix[1024];
        if (hc_ckpt_layer_of(&cfg, hc_st_model_tensor_at(m, i), &kind, prefix, sizeof prefix))
            rc = read_layer(&cfg, m, kind, prefix, param, why);
    }
    hc_st_model_close(m);
    return rc;
}
