/* test_recipe - recipes: every shipped recipe loads; resolution order and
 * precedence; the built-in ignore list on real tensor names of Llama,
 * Qwen3-MoE, Mixtral, DeepSeek-V3, gpt-oss and BERT; malformed recipes are
 * refused naming the line and reason; hc_target_set_field on every field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_recipe.h"
#include "hc_test_util.h"

static const char *recipes_dir(void)
{
    const char *d = getenv("HC_RECIPES_DIR");
    return d ? d : "recipes";
}

static hc_recipe *parse_ok(const char *text)
{
    hc_recipe *r = NULL;
    hc_error e;
    hc_error_clear(&e);
    hc_status st = hc_recipe_parse_text(text, "test.yaml", &r, &e);
    if (st != HC_OK) fprintf(stderr, "unexpected error: %s\n", e.msg);
    assert_int_equal(st, HC_OK);
    assert_non_null(r);
    return r;
}

static hc_recipe *load_shipped(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", recipes_dir(), name);
    hc_recipe *r = NULL;
    hc_error e;
    hc_error_clear(&e);
    hc_status st = hc_recipe_load(path, &r, &e);
    if (st != HC_OK) fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(st, HC_OK);
    return r;
}

static const hc_target *preset(const char *name)
{
    const hc_preset *p = hc_preset_find(name);
    assert_non_null(p);
    return &p->target;
}

/* ---- shipped recipes ---------------------------------------------------- */

static const char *const shipped[] = {"llama.yaml",  "qwen2.yaml",   "qwen3-moe.yaml",
                                      "deepseek-v3.yaml", "gpt-oss.yaml", "bert.yaml"};

static void test_shipped_recipes_load(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        hc_recipe *r = load_shipped(shipped[i]);
        assert_non_null(hc_recipe_name(r));
        char expect[64];
        snprintf(expect, sizeof expect, "%s", shipped[i]);
        *strstr(expect, ".yaml") = '\0';
        assert_string_equal(hc_recipe_name(r), expect);
        assert_null(hc_recipe_arch(r)); /* shipped recipes leave the GPU to --arch */
        assert_true(hc_recipe_rule_count(r) > 0);
        assert_true(hc_recipe_ignore_count(r) >= 8); /* the built-in list is kept */
        hc_recipe_free(r);
    }
}

/* Every .yaml file in the recipes directory loads, not only the ones named above. */
static void test_all_yaml_in_recipes_dir_load(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls %s/*.yaml 2>/dev/null", recipes_dir());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        hc_recipe *r = NULL;
        hc_error e;
        hc_error_clear(&e);
        if (hc_recipe_load(line, &r, &e) != HC_OK) fprintf(stderr, "%s\n", e.msg);
        assert_non_null(r);
        hc_recipe_free(r);
        n++;
    }
    pclose(p);
    assert_true(n >= 6);
}

typedef struct {
    const char *name;
    int skip;
    const char *why_has; /* substring of why, or NULL */
} plan_case;

static void check_plan(const hc_recipe *r, const plan_case *cases, size_t n, hc_target *last)
{
    for (size_t i = 0; i < n; i++) {
        hc_target out;
        int skip = -1;
        char why[512];
        assert_int_equal(hc_recipe_resolve(r, cases[i].name, preset("w4a16"), &out, &skip, why, sizeof why), HC_OK);
        if (skip != cases[i].skip || (cases[i].why_has && !strstr(why, cases[i].why_has)))
            fprintf(stderr, "%s: skip=%d why=\"%s\" (expected skip=%d, why containing \"%s\")\n",
                    cases[i].name, skip, why, cases[i].skip, cases[i].why_has ? cases[i].why_has : "");
        assert_int_equal(skip, cases[i].skip);
        if (cases[i].why_has) assert_non_null(strstr(why, cases[i].why_has));
        if (last) *last = out;
    }
}

static void test_shipped_recipe_plans(void **state)
{
    (void)state;
    hc_target t;
    hc_recipe *r = load_shipped("llama.yaml");
    plan_case llama[] = {
        {"model.layers.5.mlp.down_proj", 0, "rule 1 (targets .*\\.mlp\\.down_proj): group_size 64"},
        {"model.layers.5.self_attn.v_proj", 0, "recipe defaults: format w4a16"}, /* q/k/v alike */
        {"model.layers.5.self_attn.q_proj", 0, "recipe defaults: format w4a16"},
        {"lm_head", 1, "ignored by default: lm_head"},
    };
    check_plan(r, llama, 2, &t);
    assert_int_equal(t.weight_format, HC_FMT_UINT4);
    check_plan(r, llama, 1, &t);
    assert_int_equal(t.group_size, 64);
    check_plan(r, llama, sizeof llama / sizeof llama[0], NULL);
    hc_recipe_free(r);

    r = load_shipped("deepseek-v3.yaml");
    plan_case ds[] = {
        {"model.layers.3.mlp.shared_experts.up_proj", 0, "w8a16"},
        {"model.layers.3.mlp.experts.200.down_proj", 0, "group_size 64"},
        {"model.layers.1.mlp.down_proj", 0, "w8a16"},
        {"model.layers.7.self_attn.kv_a_proj_with_mqa", 0, "w8a16"},
        {"model.layers.61.eh_proj", 1, "rule 5"},
        {"model.layers.61.shared_head.head", 1, NULL},
        {"model.layers.3.mlp.gate", 1, "MoE router"},
    };
    check_plan(r, ds, sizeof ds / sizeof ds[0], NULL);
    hc_recipe_free(r);

    r = load_shipped("gpt-oss.yaml");
    plan_case oss[] = {
        {"model.layers.0.self_attn.q_proj", 1, "ignored by recipe"},
        {"model.layers.0.mlp.router", 1, "MoE router"},
        {"model.layers.0.mlp.experts.gate_up_proj", 0, "format mxfp4"},
    };
    check_plan(r, oss, sizeof oss / sizeof oss[0], &t);
    assert_int_equal(t.weight_format, HC_FMT_F4E2M1);
    assert_int_equal(t.group_size, 32);
    hc_recipe_free(r);

    r = load_shipped("bert.yaml");
    plan_case bert[] = {
        {"bert.encoder.layer.0.attention.self.query", 0, "rule 1"},
        {"bert.encoder.layer.11.output.dense", 0, "group_size 64"},
        {"bert.encoder.layer.11.attention.output.dense", 0, "rule 1"},
        {"bert.pooler.dense", 1, NULL},
        {"classifier", 1, NULL},
        {"cls.predictions.transform.dense", 1, "ignored by recipe"},
        {"bert.embeddings.word_embeddings", 1, "embedding"},
    };
    check_plan(r, bert, sizeof bert / sizeof bert[0], NULL);
    hc_recipe_free(r);

    r = load_shipped("qwen3-moe.yaml");
    plan_case moe[] = {
        {"model.layers.0.block_sparse_moe.experts.3.w2", 0, "group_size 64"},
        {"model.layers.0.block_sparse_moe.experts.3.w1", 0, "group_size 64"}, /* one MoE format */
        {"model.layers.0.block_sparse_moe.gate", 1, "MoE router"},
        {"model.layers.2.mlp.shared_expert_gate", 1, "MoE router"},
        {"model.layers.2.mlp.shared_expert.down_proj", 0, "w8a16"},
    };
    check_plan(r, moe, sizeof moe / sizeof moe[0], NULL);
    hc_recipe_free(r);
}

/* ---- resolution --------------------------------------------------------- */

static void test_resolution_order(void **state)
{
    (void)state;
    hc_recipe *r = parse_ok("defaults:\n"
                            "  format: w4a16\n"
                            "rules:\n"
                            "  - targets: ['.*_proj']\n"                        /* rule 1 */
                            "    group_size: 64\n"
                            "    quantizer: mse\n"
                            "  - targets: ['.*down_proj']\n"                    /* rule 2 */
                            "    weight_dtype: uint8\n"
                            "  - targets: ['.*down_proj']\n"                    /* rule 3 */
                            "    group_size: 32\n"
                            "  - targets: ['model\\.layers\\.1\\..*']\n"        /* rule 4 */
                            "    group_size: channel\n"
                            "    format: nvfp4\n");
    const hc_target *base = preset("w8a8");
    hc_target t;
    int skip;
    char why[512];

    /* Rules 1, 2, 3: later wins, field by field. */
    assert_int_equal(hc_recipe_resolve(r, "model.layers.0.mlp.down_proj", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 0);
    assert_int_equal(t.weight_format, HC_FMT_UINT8); /* rule 2 */
    assert_int_equal(t.group_size, 32);              /* rule 3 over rule 1 */
    assert_int_equal(t.rounding, HC_TARGET_MSE);     /* rule 1 kept */
    assert_int_equal(t.activation, HC_FMT_PARAM);    /* recipe default w4a16 over base w8a8 */
    assert_string_equal(why, "recipe defaults: format w4a16; "
                             "rule 1 (targets .*_proj): group_size 64, quantizer mse; "
                             "rule 2 (targets .*down_proj): weight_dtype uint8; "
                             "rule 3 (targets .*down_proj): group_size 32");

    /* Only rule 1. */
    assert_int_equal(hc_recipe_resolve(r, "model.layers.0.mlp.up_proj", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(t.weight_format, HC_FMT_UINT4);
    assert_int_equal(t.group_size, 64);

    /* Rule 4's format replaces everything earlier, then its own fields apply
     * on top whatever their order in the file. */
    assert_int_equal(hc_recipe_resolve(r, "model.layers.1.mlp.down_proj", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(t.weight_format, HC_FMT_F4E2M1);
    assert_int_equal(t.group_size, 0);
    assert_int_equal(t.global_scale, 1);
    assert_int_equal(t.rounding, HC_TARGET_RTN);
    assert_non_null(strstr(why, "rule 4 (targets model\\.layers\\.1\\..*): format nvfp4, group_size channel"));

    /* Whole-name matching: a prefix or a suffix alone does not match. */
    assert_int_equal(hc_recipe_resolve(r, "model.layers.10.mlp.down_proj_x", base, &t, &skip, why, sizeof why), HC_OK);
    assert_string_equal(why, "recipe defaults: format w4a16");
    assert_int_equal(hc_recipe_resolve(r, "model.layers.10", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(t.group_size, 128);
    hc_recipe_free(r);

    /* No recipe defaults: the base (preset + flags) shows through. */
    hc_target flags = *base;
    assert_int_equal(hc_target_set_field(&flags, "group-size", "256", NULL), HC_OK);
    r = parse_ok("rules:\n  - targets: [a\\.b]\n    zero_point: int\n");
    assert_int_equal(hc_recipe_resolve(r, "a.b", &flags, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(t.weight_format, HC_FMT_F8E4M3);
    assert_int_equal(t.group_size, 256);
    assert_int_equal(t.zero_point, HC_TARGET_ZP_INT);
    /* '.' is any character: "a.b" also matches "axb"; "a\.b" only "a.b". */
    assert_int_equal(hc_recipe_resolve(r, "axb", &flags, &t, &skip, why, sizeof why), HC_OK);
    assert_string_equal(why, "base target");
    assert_int_equal(hc_recipe_resolve(r, "c", &flags, &t, &skip, why, sizeof why), HC_OK);
    assert_string_equal(why, "base target");
    assert_int_equal(t.group_size, 256);
    hc_recipe_free(r);

    /* NULL recipe: base unchanged; a tiny why buffer is truncated safely. */
    assert_int_equal(hc_recipe_resolve(NULL, "x", base, &t, &skip, why, 3), HC_OK);
    assert_string_equal(why, "ba");
    assert_memory_equal(&t, base, sizeof t);
}

static void test_skip_and_ignore(void **state)
{
    (void)state;
    hc_recipe *r = parse_ok("ignore:\n"
                            "  - '.*\\.mlp\\.down_proj'\n"
                            "rules:\n"
                            "  - targets: [lm_head]\n"
                            "    skip: false\n"
                            "    format: w8a16\n"
                            "  - targets: ['model\\.layers\\.0\\..*']\n"
                            "    skip: true\n");
    hc_target t;
    int skip;
    char why[512];
    const hc_target *base = preset("w4a16");
    assert_int_equal(hc_recipe_resolve(r, "model.layers.3.mlp.down_proj", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 1);
    assert_string_equal(why, "ignored by recipe (line 2): .*\\.mlp\\.down_proj");
    /* skip: false opts lm_head in. */
    assert_int_equal(hc_recipe_resolve(r, "lm_head", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 0);
    assert_int_equal(t.weight_format, HC_FMT_UINT8);
    assert_string_equal(why, "rule 1 (targets lm_head): format w8a16, skip false");
    assert_int_equal(hc_recipe_resolve(r, "model.layers.0.mlp.up_proj", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 1);
    assert_string_equal(why, "rule 2 (targets model\\.layers\\.0\\..*): skip");
    /* Built-in list still there. */
    assert_int_equal(hc_recipe_resolve(r, "model.norm", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 1);
    assert_non_null(strstr(why, "ignored by default: norm"));
    hc_recipe_free(r);

    /* replace_default_ignore drops the built-in list. */
    r = parse_ok("replace_default_ignore: true\nignore: [lm_head]\n");
    assert_int_equal(hc_recipe_ignore_count(r), 1);
    assert_int_equal(hc_recipe_resolve(r, "model.embed_tokens", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 0);
    assert_int_equal(hc_recipe_resolve(r, "lm_head", base, &t, &skip, why, sizeof why), HC_OK);
    assert_int_equal(skip, 1);
    hc_recipe_free(r);
}

/* The built-in ignore list on real tensor names. */
static void test_default_ignore_real_names(void **state)
{
    (void)state;
    static const struct {
        const char *tensor;
        int ndim;
        int skip;
        const char *why_has;
    } cases[] = {
        /* Llama / Mistral / Qwen */
        {"model.embed_tokens.weight", 2, 1, "embedding"},
        {"model.layers.0.input_layernorm.weight", 1, 1, "1-D"},
        {"model.layers.0.post_attention_layernorm.weight", -1, 1, "norm"},
        {"model.layers.0.self_attn.q_norm.weight", -1, 1, "norm"},
        {"model.norm.weight", -1, 1, "norm"},
        {"lm_head.weight", 2, 1, "lm_head"},
        {"model.layers.0.self_attn.q_proj.weight", 2, 0, "base target"},
        {"model.layers.0.self_attn.k_proj.bias", 1, 1, "not a 2-D linear weight"},
        {"model.layers.0.mlp.gate_proj.weight", 2, 0, NULL},
        {"model.layers.31.mlp.down_proj.weight", 2, 0, NULL},
        {"model.layers.0.self_attn.rotary_emb.inv_freq", 1, 1, "not a 2-D"},
        /* Qwen3-MoE / Qwen2-MoE */
        {"model.layers.3.mlp.gate.weight", 2, 1, "MoE router"},
        {"model.layers.3.mlp.experts.7.down_proj.weight", 2, 0, NULL},
        {"model.layers.3.mlp.experts.127.gate_proj.weight", 2, 0, NULL},
        {"model.layers.3.mlp.shared_expert_gate.weight", 2, 1, "MoE router"},
        {"model.layers.3.mlp.shared_expert.up_proj.weight", 2, 0, NULL},
        /* Mixtral */
        {"model.layers.0.block_sparse_moe.gate.weight", 2, 1, "MoE router"},
        {"model.layers.0.block_sparse_moe.experts.0.w1.weight", 2, 0, NULL},
        {"model.layers.0.block_sparse_moe.experts.7.w2.weight", 2, 0, NULL},
        /* DeepSeek-V3 */
        {"model.layers.3.mlp.gate.e_score_correction_bias", 1, 1, "not a 2-D"},
        {"model.layers.3.mlp.shared_experts.up_proj.weight", 2, 0, NULL},
        {"model.layers.3.mlp.experts.255.down_proj.weight", 2, 0, NULL},
        {"model.layers.0.self_attn.kv_a_layernorm.weight", -1, 1, "norm"},
        {"model.layers.0.self_attn.q_a_proj.weight", 2, 0, NULL},
        {"model.layers.0.self_attn.kv_b_proj.weight", 2, 0, NULL},
        {"model.layers.61.shared_head.head.weight", 2, 1, "lm_head"},
        {"model.layers.61.enorm.weight", -1, 1, "norm"},
        {"model.layers.3.mlp.experts.0.down_proj.weight_scale_inv", 2, 1, "no .weight suffix"},
        /* gpt-oss (bf16 layout) */
        {"model.layers.0.self_attn.sinks", 1, 1, "not a 2-D"},
        {"model.layers.0.self_attn.sinks.weight", -1, 1, "attention sinks"},
        {"model.layers.0.mlp.router.weight", 2, 1, "MoE router"},
        {"model.layers.0.mlp.router.bias", 1, 1, "not a 2-D"},
        {"model.layers.0.mlp.experts.gate_up_proj", 3, 0, NULL},
        {"model.layers.0.mlp.experts.down_proj", 3, 0, NULL},
        {"model.layers.0.mlp.experts.gate_up_proj_bias", 2, 1, "not a 2-D"},
        {"model.layers.0.mlp.experts.down_proj", 2, 1, "2-D, no .weight"},
        {"model.layers.0.self_attn.o_proj.weight", 2, 0, NULL},
        /* GPT-2 */
        {"transformer.wte.weight", 2, 1, "embedding"},
        {"transformer.wpe.weight", 2, 1, "embedding"},
        {"transformer.h.0.ln_1.weight", 1, 1, NULL},
        {"transformer.ln_f.weight", -1, 1, "norm"},
        /* T5 */
        {"shared.weight", 2, 1, "embedding"},
        /* BERT */
        {"bert.embeddings.word_embeddings.weight", 2, 1, "embedding"},
        {"bert.embeddings.position_embeddings.weight", 2, 1, "embedding"},
        {"bert.embeddings.token_type_embeddings.weight", 2, 1, "embedding"},
        {"bert.embeddings.LayerNorm.weight", -1, 1, "norm"},
        {"bert.encoder.layer.0.attention.self.query.weight", 2, 0, NULL},
        {"bert.encoder.layer.0.attention.self.key.weight", 2, 0, NULL},
        {"bert.encoder.layer.0.attention.output.dense.weight", 2, 0, NULL},
        {"bert.encoder.layer.0.attention.output.LayerNorm.weight", -1, 1, "norm"},
        {"bert.encoder.layer.0.intermediate.dense.weight", 2, 0, NULL},
        {"bert.encoder.layer.0.output.dense.weight", 2, 0, NULL},
        {"bert.pooler.dense.weight", 2, 1, "classification head"},
        {"classifier.weight", 2, 1, "classification head"},
        /* Multimodal */
        {"model.visual.blocks.0.attn.qkv.weight", 2, 1, "vision"},
        {"vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", 2, 1, "vision"},
        {"multi_modal_projector.linear_1.weight", 2, 1, "vision"},
    };
    hc_recipe *r;
    assert_int_equal(hc_recipe_default(&r, NULL), HC_OK);
    assert_string_equal(hc_recipe_name(r), "default");
    assert_null(hc_recipe_arch(r));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hc_target t;
        int skip = -1;
        char why[512];
        assert_int_equal(hc_recipe_resolve_tensor(r, cases[i].tensor, cases[i].ndim, preset("w4a16"),
                                                  &t, &skip, why, sizeof why), HC_OK);
        if (skip != cases[i].skip || (cases[i].why_has && !strstr(why, cases[i].why_has)))
            fprintf(stderr, "%s: skip=%d why=\"%s\"\n", cases[i].tensor, skip, why);
        assert_int_equal(skip, cases[i].skip);
        if (cases[i].why_has) assert_non_null(strstr(why, cases[i].why_has));
    }
    hc_recipe_free(r);
}

/* ---- malformed recipes -------------------------------------------------- */

static void test_malformed_recipes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line;
        const char *reason;
    } bad[] = {
        {"rules:\n  - targets: [a]\n    gruop_size: 64\n", 3, "unknown key 'gruop_size'"},
        {"default:\n  format: w4a16\n", 1, "unknown top-level key 'default'"},
        {"defaults:\n  format: w4a16\n  bits: 4\n", 3, "defaults: unknown key 'bits'"},
        {"defaults:\n  format: w5a5\n", 2, "unknown preset 'w5a5'"},
        {"rules:\n  - targets: [a]\n    weight_dtype: uint9\n", 3, "unknown format 'uint9'"},
        {"rules:\n  - targets: [a]\n    weight_dtype: float16\n", 3, "not a weight format"},
        {"rules:\n  - targets: [a]\n    group_size: 96\n", 3, "96 is not a power of two"},
        {"rules:\n  - targets: [a]\n    group_size: -128\n", 3, "not a number"},
        {"rules:\n  - targets: [a]\n    group_size_n: 3\n", 3, "group_size_n: 3 is not a power of two"},
        {"rules:\n  - targets: [a]\n    scale_dtype: int8\n", 3, "scale_dtype: 'int8' is not allowed"},
        {"rules:\n  - targets: [a]\n    zero_point: yes\n", 3, "zero_point: 'yes'"},
        {"rules:\n  - targets: [a]\n    activation: float4e2m1\n", 3, "activation: 'float4e2m1'"},
        {"rules:\n  - targets: [a]\n    quantizer: gptq\n", 3, "expected rtn or mse"},
        {"rules:\n  - targets: [a]\n    global_scale: 1\n", 3, "expected true, tensor, channel"},
        {"rules:\n  - targets: ['model.(layers']\n    group_size: 64\n", 2, "bad regular expression"},
        {"rules:\n  - targets: ['a)b']\n    group_size: 64\n", 2, "unbalanced"},
        {"rules:\n  - targets: ['']\n    group_size: 64\n", 2, "empty pattern"},
        {"ignore:\n  - 'x['\n", 2, "bad regular expression"},
        {"rules:\n  - targets: a\n    group_size: 64\n", 2, "targets must be a list"},
        {"rules:\n  - targets: []\n    group_size: 64\n", 2, "targets is empty"},
        {"rules:\n  - group_size: 64\n", 2, "missing 'targets'"},
        {"rules:\n  - targets: [a]\n", 2, "sets nothing"},
        {"rules:\n  - targets: [a]\n    skip: maybe\n", 3, "skip must be true or false"},
        {"rules:\n  - targets: [a]\n    skip: true\n    format: w4a16\n", 2, "together with format fields"},
        {"rules:\n  targets: [a]\n", 2, "rules must be a list"},
        {"rules:\n  - [a, b]\n", 2, "rule 1 must be a mapping"},
        {"defaults: w4a16\n", 1, "defaults must be a mapping"},
        {"defaults:\n  format: [w4a16]\n", 2, "format must be a single value"},
        {"defaults:\n  format:\n", 2, "format has no value"},
        {"defaults:\n  format: w4a16\n  format: w8a16\n", 3, "duplicate key 'format' (first on line 2)"},
        {"ignore: lm_head\n", 1, "ignore must be a list"},
        {"replace_default_ignore: 2\n", 1, "must be true or false"},
        {"version: 2\n", 1, "unsupported recipe version"},
        {"- a\n- b\n", 1, "a recipe must be a mapping"},
        {"", 1, "empty recipe"},
        {"rules:\n  - targets: [a]\n    group_size: 64\n   bad: indent\n", 4, "YAML syntax error"},
        {"rules:\n  - targets: [\"a\\.b\"]\n", 2, "YAML syntax error"},
        {"defaults: {format: w4a16}\n---\nrules: []\n", 3, "more than one YAML document"},
        {"rules:\n  - targets: [a]\n    group_size: 64\n  - targets: [b]\n    weight_dtype: int9\n", 5,
         "rule 2: weight_dtype"},
        {"rules:\n  - targets: [a]\n    ? [x]\n    : 1\n", 3, "keys must be plain names"},
    };
    size_t n = sizeof bad / sizeof bad[0];
    assert_true(n >= 15);
    for (size_t i = 0; i < n; i++) {
        hc_recipe *r = (hc_recipe *)0x1;
        hc_error e;
        hc_error_clear(&e);
        hc_status st = hc_recipe_parse_text(bad[i].text, "bad.yaml", &r, &e);
        char where[64];
        snprintf(where, sizeof where, "bad.yaml:%d:", bad[i].line);
        if (st != HC_ERR_FORMAT || strncmp(e.msg, where, strlen(where)) != 0 || !strstr(e.msg, bad[i].reason))
            fprintf(stderr, "case %zu: status %d, message \"%s\"; expected \"%s...%s\"\n", i, (int)st,
                    e.msg, where, bad[i].reason);
        assert_int_equal(st, HC_ERR_FORMAT);
        assert_ptr_equal(r, (hc_recipe *)0x1); /* *out untouched on failure */
        assert_memory_equal(e.msg, where, strlen(where));
        assert_non_null(strstr(e.msg, bad[i].reason));
    }
}

static void test_load_errors(void **state)
{
    (void)state;
    hc_recipe *r = NULL;
    hc_error e;
    hc_error_clear(&e);
    assert_int_equal(hc_recipe_load("/nonexistent/recipe.yaml", &r, &e), HC_ERR_IO);
    assert_non_null(strstr(e.msg, "/nonexistent/recipe.yaml"));
    assert_null(r);
    assert_int_equal(hc_recipe_load("/", &r, &e), HC_ERR_IO);
    assert_non_null(strstr(e.msg, "not a regular file"));

    char *dir = hc_test_mkdtemp("recipe");
    assert_non_null(dir);
    char *path = hc_test_path_join(dir, "mine.yml");
    const char *text = "defaults:\n  format: w4a16\nrules:\n  - targets: [x]\n    group_size: 7\n";
    assert_int_equal(hc_test_write_file(path, text, strlen(text)), 0);
    assert_int_equal(hc_recipe_load(path, &r, &e), HC_ERR_FORMAT);
    char expect[4200];
    snprintf(expect, sizeof expect, "%s:5:17: rule 1: group_size: 7 is not a power of two", path);
    assert_memory_equal(e.msg, expect, strlen(expect));
    text = "defaults:\n  format: w4a16\n  arch: X\n";
    assert_int_equal(hc_test_write_file(path, text, strlen(text)), 0);
    assert_int_equal(hc_recipe_load(path, &r, &e), HC_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "unknown GPU arch 'X'"));
    text = "architectures: [LlamaForCausalLM]\ndefaults:\n  format: w4a16\n  arch: sm89\n";
    assert_int_equal(hc_test_write_file(path, text, strlen(text)), 0);
    assert_int_equal(hc_recipe_load(path, &r, &e), HC_OK);
    assert_string_equal(hc_recipe_name(r), "mine");
    assert_string_equal(hc_recipe_arch(r), "sm89");
    hc_recipe_free(r);
    hc_test_rm_rf(dir);
    free(path);
    free(dir);
}

/* ---- hc_target_set_field ------------------------------------------------ */

static void test_set_field(void **state)
{
    (void)state;
    hc_target t = *preset("w4a16"), before;
    hc_error e;
    hc_error_clear(&e);
#define GOOD(k, v) assert_int_equal(hc_target_set_field(&t, k, v, &e), HC_OK)
#define BAD(k, v, want)                                                                    \
    do {                                                                                   \
        before = t;                                                                        \
        assert_int_equal(hc_target_set_field(&t, k, v, &e), HC_ERR_ARG);                   \
        if (!strstr(e.msg, want)) fprintf(stderr, "%s=%s: \"%s\"\n", k, v, e.msg);          \
        assert_non_null(strstr(e.msg, want));                                              \
        assert_memory_equal(&t, &before, sizeof t);                                        \
    } while (0)

    GOOD("format", "nvfp4");
    assert_memory_equal(&t, preset("nvfp4"), sizeof t);
    BAD("format", "nvfp5", "format: unknown preset 'nvfp5' (known: w1a16");
    BAD("format", "", "format: empty value");

    GOOD("weight_dtype", "uint4");
    assert_int_equal(t.weight_format, HC_FMT_UINT4);
    GOOD("weight-dtype", "int8");
    assert_int_equal(t.weight_format, HC_FMT_INT8);
    GOOD("weight_dtype", "float8e4m3");
    assert_int_equal(t.weight_format, HC_FMT_F8E4M3);
    GOOD("weight_dtype", "float4e2m1");
    assert_int_equal(t.weight_format, HC_FMT_F4E2M1);
    BAD("weight_dtype", "uint9", "weight_dtype: unknown format 'uint9'");
    BAD("weight_dtype", "bfloat16", "not a weight format");
    BAD("weight_dtype", "float8e8m0", "not a weight format");

    GOOD("group_size", "64");
    assert_int_equal(t.group_size, 64);
    GOOD("group_size", "channel");
    assert_int_equal(t.group_size, 0);
    GOOD("group_size", "0");
    assert_int_equal(t.group_size, 0);
    GOOD("group_size", "tensor");
    assert_int_equal(t.group_size, -1);
    BAD("group_size", "100", "group_size: 100 is not a power of two");
    BAD("group_size", "64k", "not a number");
    BAD("group_size", "-1", "not a number");
    BAD("group_size", "99999999999999999999", "not a number");

    GOOD("group_size_n", "128");
    assert_int_equal(t.group_size_n, 128);
    GOOD("group_size_n", "none");
    assert_int_equal(t.group_size_n, 0);
    GOOD("group_size_n", "1");
    assert_int_equal(t.group_size_n, 0);
    BAD("group_size_n", "48", "group_size_n: 48 is not a power of two");
    BAD("group_size_n", "block", "not a number");

    static const struct { const char *v; hc_format_id id; } scales[] = {
        {"float16", HC_FMT_F16}, {"bfloat16", HC_FMT_BF16}, {"float8e4m3", HC_FMT_F8E4M3},
        {"float8e5m2", HC_FMT_F8E5M2}, {"float8e8m0", HC_FMT_F8E8M0}, {"float32", HC_FMT_F32},
        {"e8m0", HC_FMT_F8E8M0}, {"param", HC_FMT_PARAM}};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
        GOOD("scale_dtype", scales[i].v);
        assert_int_equal(t.scale_format, scales[i].id);
    }
    BAD("scale_dtype", "int8", "scale_dtype: 'int8' is not allowed");
    BAD("scale_dtype", "float4e2m1", "expected float16, bfloat16");

    GOOD("zero_point", "int");
    assert_int_equal(t.zero_point, HC_TARGET_ZP_INT);
    GOOD("zero_point", "float");
    assert_int_equal(t.zero_point, HC_TARGET_ZP_FLOAT);
    GOOD("zero_point", "none");
    assert_int_equal(t.zero_point, HC_TARGET_ZP_NONE);
    BAD("zero_point", "asym", "expected int, float or none");

    GOOD("global_scale", "true");
    assert_int_equal(t.global_scale, HC_TARGET_S2_TENSOR);
    GOOD("global_scale", "channel");
    assert_int_equal(t.global_scale, HC_TARGET_S2_CHANNEL);
    GOOD("global_scale", "tensor");
    assert_int_equal(t.global_scale, HC_TARGET_S2_TENSOR);
    GOOD("global_scale", "none");
    assert_int_equal(t.global_scale, HC_TARGET_S2_NONE);
    GOOD("global_scale", "false");
    assert_int_equal(t.global_scale, 0);
    BAD("global_scale", "yes", "expected true, tensor, channel, false or none");

    static const struct { const char *v; hc_format_id id; } acts[] = {
        {"float16", HC_FMT_F16}, {"bfloat16", HC_FMT_BF16}, {"float8e4m3", HC_FMT_F8E4M3},
        {"float8e5m2", HC_FMT_F8E5M2}, {"int8", HC_FMT_INT8}, {"int4", HC_FMT_INT4},
        {"param", HC_FMT_PARAM}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        GOOD("activation", acts[i].v);
        assert_int_equal(t.activation, acts[i].id);
    }
    BAD("activation", "uint4", "activation: 'uint4' is not allowed");
    BAD("activation", "float32", "int8, int4 or param");

    GOOD("quantizer", "mse");
    assert_int_equal(t.rounding, HC_TARGET_MSE);
    GOOD("quantizer", "rtn");
    assert_int_equal(t.rounding, HC_TARGET_RTN);
    BAD("quantizer", "awq", "quantizer: 'awq' is not allowed (expected rtn or mse)");

    BAD("bits", "4", "unknown field 'bits'");
    BAD("a_very_long_field_name_that_is_not_there", "4", "unknown field");
    assert_int_equal(hc_target_set_field(NULL, "format", "w4a16", &e), HC_ERR_ARG);
    assert_int_equal(hc_target_field_known("group_size"), 1);
    assert_int_equal(hc_target_field_known("group-size"), 0);
#undef GOOD
#undef BAD
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_recipes_load),
        cmocka_unit_test(test_all_yaml_in_recipes_dir_load),
        cmocka_unit_test(test_shipped_recipe_plans),
        cmocka_unit_test(test_resolution_order),
        cmocka_unit_test(test_skip_and_ignore),
        cmocka_unit_test(test_default_ignore_real_names),
        cmocka_unit_test(test_malformed_recipes),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_set_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
