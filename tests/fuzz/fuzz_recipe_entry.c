/* fuzz_recipe_entry.c - recipe YAML text (see fuzz_entry.h). */
#include "fuzz_entry.h"

#include <stdlib.h>
#include <string.h>

#include "hc_recipe.h"

/* Layer and tensor names of the kinds a checkpoint has. */
static const char *const layers[] = {
    "model.layers.0.self_attn.q_proj", "model.layers.7.mlp.down_proj", "lm_head",
    "model.embed_tokens", "model.layers.1.input_layernorm", "model.layers.3.mlp.gate",
    "model.layers.2.mlp.experts.12.up_proj", "",
};
static const char *const tensors[] = {
    "model.layers.0.mlp.experts.gate_up_proj", "model.layers.0.self_attn.o_proj.weight",
    "model.layers.0.self_attn.o_proj.bias", ".weight",
};

static int target_ok(const hc_target *t)
{
    return hc_format_get(t->weight_format) != NULL && t->group_size >= -1 &&
           t->group_size <= (1 << 20) && t->group_size_n >= 0 && t->group_size_n <= (1 << 20);
}

int hc_fuzz_recipe(const uint8_t *data, size_t size, char *why)
{
    char *text = hc_fuzz_cstr(data, size);
    if (text == NULL) return 0;
    hc_recipe *r = NULL;
    hc_error err;
    hc_error_clear(&err);
    hc_status st = hc_recipe_parse_text(text, "fuzz.yaml", &r, &err);
    free(text);
    if (st != HC_OK) {
        if (r != NULL) return hc_fuzz_fail(why, "failed parse returned a recipe");
        if (err.status != st || err.msg[0] == '\0')
            return hc_fuzz_fail(why, "error %d without a message", (int)st);
        return 0;
    }
    int rc = 0;
    const hc_target base = hc_preset_at(0)->target;
    if (hc_recipe_name(r) == NULL) rc = hc_fuzz_fail(why, "recipe without a name");
    if (hc_recipe_rule_count(r) < 0 || hc_recipe_ignore_count(r) < 0)
        rc = hc_fuzz_fail(why, "negative counts");
    char expl[256], desc[128];
    for (size_t i = 0; rc == 0 && i < sizeof layers / sizeof layers[0]; i++) {
        hc_target t;
        int skip = -1;
        if (hc_recipe_resolve(r, layers[i], &base, &t, &skip, expl, sizeof expl) != HC_OK)
            rc = hc_fuzz_fail(why, "resolve '%s' failed", layers[i]);
        else if ((skip != 0 && skip != 1) || !target_ok(&t) || memchr(expl, 0, sizeof expl) == NULL)
            rc = hc_fuzz_fail(why, "resolve '%s': bad result", layers[i]);
        else
            hc_target_describe(&t, desc, sizeof desc);
    }
    for (size_t i = 0; rc == 0 && i < sizeof tensors / sizeof tensors[0]; i++) {
        hc_target t;
        int skip = -1;
        if (hc_recipe_resolve_tensor(r, tensors[i], i == 0 ? 3 : 2, &base, &t, &skip, expl,
                                     sizeof expl) != HC_OK || !target_ok(&t))
            rc = hc_fuzz_fail(why, "resolve tensor '%s' failed", tensors[i]);
    }
    /* a tiny explanation buffer must still be terminated */
    if (rc == 0) {
        hc_target t;
        int skip;
        char small[4];
        hc_recipe_resolve(r, layers[1], &base, &t, &skip, small, sizeof small);
        if (memchr(small, 0, sizeof small) == NULL) rc = hc_fuzz_fail(why, "why not terminated");
    }
    hc_recipe_free(r);
    return rc;
}
