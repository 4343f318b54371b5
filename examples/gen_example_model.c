/* gen_example_model - writes a small deterministic Llama-shaped checkpoint:
 * by default 2 decoder layers (hidden 256, intermediate 512, 4 heads, 2 KV
 * heads), the last with a 4-expert MoE block (per-expert weights + router),
 * embeddings, norms, lm_head. `--format float16` writes fp16 weights;
 * `--format humming` writes the linear layers in Humming's row-packed uint4
 * group-128 form (fp16 scales), MoE experts as 3-D stacks.
 *
 * usage: gen_example_model OUT_DIR [--format float16|humming] [--seed N]
 *        [--hidden H] [--intermediate I] [--layers L] [--experts E (0: dense)] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hc_format.h"
#include "hc_fs.h"
#include "hc_safetensors.h"

enum { HEADS = 4, KV_HEADS = 2, VOCAB = 512, GROUP = 128 };

typedef struct {
    int64_t hidden, inter;
    int layers, experts;
} ex_dims;

typedef struct { uint64_t s; } rng;

static double rng_uniform(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return ((r->s >> 11) + 0.5) / 9007199254740992.0;
}

/* Roughly Gaussian (sum of uniforms), with a few outlier columns as real
 * checkpoints have, so that quantization error is realistic. */
static void fill_weights(rng *r, float *w, int64_t rows, int64_t cols, double std)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            double g = rng_uniform(r) + rng_uniform(r) + rng_uniform(r) - 1.5;
            w[i * cols + j] = (float)(g * 2.0 * std * (j % 97 == 5 ? 4.0 : 1.0));
        }
}

typedef struct {
    char name[320];
    hc_dtype dtype;
    int ndim;
    int64_t shape[3];
    void *data;
    size_t nbytes;
} ex_tensor;

typedef struct {
    ex_tensor *t;
    int n, cap;
} ex_list;

static ex_tensor *list_add(ex_list *l, const char *name, hc_dtype dt, int ndim, const int64_t *shape)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        ex_tensor *grown = realloc(l->t, (size_t)l->cap * sizeof *grown);
        if (!grown) { perror("realloc"); exit(1); }
        l->t = grown;
    }
    ex_tensor *t = &l->t[l->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->dtype = dt;
    t->ndim = ndim;
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->nbytes = (size_t)hc_tensor_byte_size(dt, ndim, shape);
    t->data = calloc(t->nbytes ? t->nbytes : 1, 1);
    if (!t->data) { perror("calloc"); exit(1); }
    return t;
}

/* Symmetric uint4 group-128 round to nearest: value = (code - 8) * scale. */
static void quantize_rows(const float *w, int64_t rows, int64_t cols, uint32_t *packed,
                          uint16_t *scales)
{
    int64_t groups = cols / GROUP;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t g = 0; g < groups; g++) {
            const float *x = w + i * cols + g * GROUP;
            float amax = 1e-30f;
            for (int j = 0; j < GROUP; j++) amax = fmaxf(amax, fabsf(x[j]));
            uint16_t s16 = hc_f32_to_f16(amax / 7.0f);
            float s = hc_f16_to_f32(s16);
            scales[i * groups + g] = s16;
            for (int j = 0; j < GROUP; j++) {
                float q = nearbyintf(x[j] / s) + 8.0f;
                uint32_t code = (uint32_t)fminf(fmaxf(q, 0.0f), 15.0f);
                int64_t k = g * GROUP + j, bit = (i * cols + k) * 4;
                packed[bit / 32] |= code << (bit % 32);
            }
        }
}

static void add_f16(ex_list *l, rng *r, const char *name, int ndim, const int64_t *shape,
                    double std, int ones)
{
    ex_tensor *t = list_add(l, name, HC_DT_F16, ndim, shape);
    int64_t n = hc_shape_numel(ndim, shape);
    float *w = malloc((size_t)n * sizeof *w);
    if (!w) { perror("malloc"); exit(1); }
    fill_weights(r, w, 1, n, std);
    for (int64_t i = 0; i < n; i++)
        ((uint16_t *)t->data)[i] = hc_f32_to_f16(ones ? 1.0f + 0.1f * w[i] : w[i]);
    free(w);
}

/* A linear layer "<prefix>.weight" [E?, rows, cols]: fp16, or Humming row-packed uint4. */
static void add_linear(ex_list *l, rng *r, const char *prefix, int64_t experts, int64_t rows,
                       int64_t cols, int humming)
{
    char name[320];
    int64_t e = experts ? experts : 1;
    int nd = experts ? 3 : 2;
    double std = 1.0 / sqrt((double)cols);
    if (!humming) {
        int64_t shape[3] = {experts, rows, cols};
        snprintf(name, sizeof name, "%s.weight", prefix);
        add_f16(l, r, name, nd, experts ? shape : shape + 1, std, 0);
        return;
    }
    int64_t wshape[3] = {experts, rows, cols / 8}, sshape[3] = {experts, rows, cols / GROUP};
    snprintf(name, sizeof name, "%s.weight", prefix);
    ex_tensor *w = list_add(l, name, HC_DT_I32, nd, experts ? wshape : wshape + 1);
    snprintf(name, sizeof name, "%s.weight_scale", prefix);
    ex_tensor *s = list_add(l, name, HC_DT_F16, nd, experts ? sshape : sshape + 1);
    float *f = malloc((size_t)(rows * cols) * sizeof *f);
    if (!f) { perror("malloc"); exit(1); }
    for (int64_t x = 0; x < e; x++) {
        fill_weights(r, f, rows, cols, std);
        quantize_rows(f, rows, cols, (uint32_t *)w->data + x * rows * cols / 8,
                      (uint16_t *)s->data + x * rows * (cols / GROUP));
    }
    free(f);
}

/* Float per-expert weights "experts.<e>.<proj>.weight"; Humming stacks are 3-D. */
static void add_experts(ex_list *l, rng *r, const char *prefix, const char *proj,
                        const ex_dims *d, int64_t rows, int64_t cols, int humming)
{
    char p[256];
    if (humming) {
        snprintf(p, sizeof p, "%s.experts.%s", prefix, proj);
        add_linear(l, r, p, d->experts, rows, cols, 1);
        return;
    }
    for (int e = 0; e < d->experts; e++) {
        snprintf(p, sizeof p, "%s.experts.%d.%s", prefix, e, proj);
        add_linear(l, r, p, 0, rows, cols, 0);
    }
}

static void build_layer(ex_list *l, rng *r, const ex_dims *d, int i, int humming)
{
    static const char *const attn[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    const int64_t H = d->hidden, I = d->inter;
    const int64_t attn_rows[4] = {H, H * KV_HEADS / HEADS, H * KV_HEADS / HEADS, H};
    char p[256];
    int64_t hidden[1] = {H};
    snprintf(p, sizeof p, "model.layers.%d.input_layernorm.weight", i);
    add_f16(l, r, p, 1, hidden, 1.0, 1);
    for (int j = 0; j < 4; j++) {
        snprintf(p, sizeof p, "model.layers.%d.self_attn.%s", i, attn[j]);
        add_linear(l, r, p, 0, attn_rows[j], H, humming);
    }
    snprintf(p, sizeof p, "model.layers.%d.post_attention_layernorm.weight", i);
    add_f16(l, r, p, 1, hidden, 1.0, 1);
    if (d->experts > 0 && i == d->layers - 1) {
        snprintf(p, sizeof p, "model.layers.%d.mlp", i);
        add_experts(l, r, p, "gate_proj", d, I, H, humming);
        add_experts(l, r, p, "up_proj", d, I, H, humming);
        add_experts(l, r, p, "down_proj", d, H, I, humming);
        int64_t router[2] = {d->experts, H};
        snprintf(p, sizeof p, "model.layers.%d.mlp.gate.weight", i);
        add_f16(l, r, p, 2, router, 0.05, 0);
        return;
    }
    snprintf(p, sizeof p, "model.layers.%d.mlp.gate_proj", i);
    add_linear(l, r, p, 0, I, H, humming);
    snprintf(p, sizeof p, "model.layers.%d.mlp.up_proj", i);
    add_linear(l, r, p, 0, I, H, humming);
    snprintf(p, sizeof p, "model.layers.%d.mlp.down_proj", i);
    add_linear(l, r, p, 0, H, I, humming);
}

static hc_status write_model(const ex_list *l, const char *path, hc_error *err)
{
    hc_st_writer *w = NULL;
    HC_TRY(hc_st_writer_open(path, &w, err));
    hc_status st = hc_st_writer_set_metadata(w, "format", "pt", err);
    for (int i = 0; st == HC_OK && i < l->n; i++)
        st = hc_st_writer_add(w, l->t[i].name, l->t[i].dtype, l->t[i].ndim, l->t[i].shape, err);
    if (st == HC_OK) st = hc_st_writer_begin_data(w, err);
    for (int i = 0; st == HC_OK && i < l->n; i++)
        st = hc_st_writer_write(w, (size_t)i, l->t[i].data, l->t[i].nbytes, err);
    if (st == HC_OK) return hc_st_writer_finish(w, err);
    hc_st_writer_abort(w);
    return st;
}

static hc_status write_text(const char *dir, const char *name, const char *text, hc_error *err)
{
    char path[4096];
    HC_TRY(hc_path_join(path, sizeof path, dir, name, err));
    return hc_fs_write_file(path, text, strlen(text), err);
}

static hc_status write_configs(const char *dir, const ex_dims *d, int humming, hc_error *err)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
             "  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n  \"num_hidden_layers\": %d,\n"
             "  \"num_attention_heads\": %d,\n  \"num_key_value_heads\": %d,\n"
             "  \"vocab_size\": %d,\n  \"num_local_experts\": %d,\n  \"rms_norm_eps\": 1e-05,\n"
             "  \"torch_dtype\": \"float16\"%s\n}\n",
             (int)d->hidden, (int)d->inter, d->layers, HEADS, KV_HEADS, VOCAB, d->experts,
             humming ? ",\n  \"quantization_config\": {\"quant_method\": \"humming\", "
                       "\"dtype\": \"uint4\", \"group_size\": 128}" : "");
    HC_TRY(write_text(dir, "config.json", cfg, err));
    HC_TRY(write_text(dir, "generation_config.json", "{\"bos_token_id\": 1, \"eos_token_id\": 2}\n", err));
    return write_text(dir, "tokenizer_config.json", "{\"model_max_length\": 4096}\n", err);
}

static int usage(void)
{
    fprintf(stderr, "usage: gen_example_model OUT_DIR [--format float16|humming] [--seed N]\n"
                    "       [--hidden H] [--intermediate I] [--layers L] [--experts E]\n"
                    "H and I must be multiples of 128; E = 0 makes every layer dense\n");
    return 2;
}

/* Parses the options; returns 0, or -1 on a usage error. */
static int parse_options(int argc, char **argv, const char **out, const char **format,
                         uint64_t *seed, ex_dims *d)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            if (*out) return -1;
            *out = a;
            continue;
        }
        if (v == NULL) return -1;
        i++;
        if (!strcmp(a, "--format")) *format = v;
        else if (!strcmp(a, "--seed")) *seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--hidden")) d->hidden = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--intermediate")) d->inter = strtoll(v, NULL, 10);
        else if (!strcmp(a, "--layers")) d->layers = atoi(v);
        else if (!strcmp(a, "--experts")) d->experts = atoi(v);
        else return -1;
    }
    int ok = *out && (!strcmp(*format, "humming") || !strcmp(*format, "float16")) &&
             d->hidden >= 128 && d->hidden % 128 == 0 && d->inter >= 128 && d->inter % 128 == 0 &&
             d->layers >= 1 && d->experts >= 0;
    return ok ? 0 : -1;
}

/* Refuses a folder that already holds any file this tool writes: the model
 * is written first, so a later refusal would have replaced it. */
static hc_status check_free(const char *dir, hc_error *err)
{
    static const char *const names[] = {"model.safetensors", "config.json", "generation_config.json",
                                        "tokenizer_config.json"};
    char path[4096];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        HC_TRY(hc_path_join(path, sizeof path, dir, names[i], err));
        if (hc_path_exists(path))
            return hc_error_set(err, HC_ERR_IO, "%s already exists: not overwritten", path);
    }
    return HC_OK;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *format = "humming";
    uint64_t seed = 1234;
    ex_dims d = {.hidden = 256, .inter = 512, .layers = 2, .experts = 4};
    if (parse_options(argc, argv, &out, &format, &seed, &d) != 0) return usage();
    int humming = !strcmp(format, "humming");
    rng r = {seed * 2654435761u + 88172645463325252ull};
    ex_list l = {0};
    int64_t emb[2] = {VOCAB, d.hidden}, hidden[1] = {d.hidden};
    add_f16(&l, &r, "model.embed_tokens.weight", 2, emb, 0.02, 0);
    for (int i = 0; i < d.layers; i++) build_layer(&l, &r, &d, i, humming);
    add_f16(&l, &r, "model.norm.weight", 1, hidden, 1.0, 1);
    add_f16(&l, &r, "lm_head.weight", 2, emb, 0.02, 0);
    hc_error err;
    hc_error_clear(&err);
    char path[4096];
    hc_status st = mkdir(out, 0755) == 0 || hc_path_is_dir(out) ? HC_OK
                   : hc_error_set(&err, HC_ERR_IO, "%s: cannot create directory", out);
    if (st == HC_OK) st = check_free(out, &err);
    if (st == HC_OK) st = hc_path_join(path, sizeof path, out, "model.safetensors", &err);
    if (st == HC_OK) st = write_model(&l, path, &err);
    if (st == HC_OK) st = write_configs(out, &d, humming, &err);
    for (int i = 0; i < l.n; i++) free(l.t[i].data);
    free(l.t);
    if (st != HC_OK) { fprintf(stderr, "gen_example_model: %s\n", err.msg); return 1; }
    printf("wrote %s (%s, %d tensors)\n", out, format, l.n);
    return 0;
}
