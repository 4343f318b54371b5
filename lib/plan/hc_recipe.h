/* hc_recipe.h - recipes: which layers become which quantization target.
 *
 * A recipe is a YAML file (schema in docs/recipes.md): `defaults` (format,
 * arch, any format field), an `ignore` list and an ordered list of `rules`.
 * Targets and ignore entries are POSIX extended regular expressions matched
 * against the WHOLE layer name (the tensor name without ".weight"), i.e. as
 * ^(pattern)$. Precedence, lowest first: the base target (the CLI's --format
 * preset and flags) < the recipe's defaults < rules in file order; fields are
 * merged one by one, later wins. The built-in ignore list (embeddings, norms,
 * lm_head, MoE routers, attention sinks, vision/audio towers) applies unless
 * the recipe says `replace_default_ignore: true`; a rule with `skip: false`
 * can still opt an ignored layer in.
 *
 * Loading validates strictly; every error is HC_ERR_FORMAT with a message
 * "FILE:LINE:COL: reason". Nothing here prints or exits. */
#ifndef HC_RECIPE_H
#define HC_RECIPE_H

#include <stddef.h>

#include "hc_error.h"
#include "hc_preset.h"

typedef struct hc_recipe hc_recipe;

/* Reads and validates the recipe at path. *out is set only on success; free
 * it with hc_recipe_free. HC_ERR_IO if the file cannot be read. */
hc_status hc_recipe_load(const char *path, hc_recipe **out, hc_error *err);

/* Same from text in memory; name_for_messages replaces the path in messages
 * and gives the recipe name when the YAML has no `name`. */
hc_status hc_recipe_parse_text(const char *text, const char *name_for_messages,
                               hc_recipe **out, hc_error *err);

/* The built-in recipe: no defaults, no rules, the built-in ignore list. */
hc_status hc_recipe_default(hc_recipe **out, hc_error *err);

void hc_recipe_free(hc_recipe *r);

/* `name` from the YAML, else the file's base name without .yaml/.yml. */
const char *hc_recipe_name(const hc_recipe *r);
/* defaults.arch (e.g. "LlamaForCausalLM"), or NULL. */
const char *hc_recipe_arch(const hc_recipe *r);
/* Number of rules; number of ignore entries (built-in ones included). */
int hc_recipe_rule_count(const hc_recipe *r);
int hc_recipe_ignore_count(const hc_recipe *r);

/* What layer_name (a tensor name without ".weight") becomes: *out starts from
 * *base, then the recipe's defaults, then every matching rule in order. *skip
 * is 1 when the layer keeps its original dtype (ignore list or `skip: true`,
 * unless a later rule says `skip: false`). why (may be NULL) gets a short
 * explanation, e.g. "recipe default w4a16; rule 2 (targets .*down_proj):
 * group_size 64" or "ignored by default: lm_head (lm_head)". r may be NULL
 * (no recipe: *out = *base, nothing skipped). A name longer than
 * HC_REGEX_MAX_SUBJECT bytes is not matched: HC_ERR_ARG, why says so. */
hc_status hc_recipe_resolve(const hc_recipe *r, const char *layer_name, const hc_target *base,
                            hc_target *out, int *skip, char *why, size_t why_len);

/* The same for a checkpoint tensor: only 2-D tensors named "P.weight"
 * (layer P) and 3-D fused expert stacks named "...experts.{gate_up_proj,
 * gate_proj,up_proj,down_proj}" (layer = the full name) are candidates;
 * anything else (biases, norms' 1-D weights, sinks, scales, buffers) is
 * skipped with why "not a 2-D linear weight". ndim < 0 means unknown: the
 * name alone decides. */
hc_status hc_recipe_resolve_tensor(const hc_recipe *r, const char *tensor_name, int ndim,
                                   const hc_target *base, hc_target *out, int *skip,
                                   char *why, size_t why_len);

/* One format field, by name, from its text form; shared by the CLI flags and
 * the recipe parser so both accept the same values with the same messages.
 * Keys (a '-' may stand for '_', so CLI flag names work too):
 *   format        a preset name (replaces every field of *t)
 *   weight_dtype  uintB/intB (B 1..8) or a signed floatNeXmY (N <= 8)
 *   group_size    a power of two; 0 or "channel" (per channel); "tensor"
 *   group_size_n  a power of two >= 2 (block scales); 0 or "none": off
 *   scale_dtype   float16 bfloat16 float8e4m3 float8e5m2 float8e8m0 float32 param
 *   zero_point    int float none
 *   global_scale  true / tensor (per expert, float32), channel (per output row,
 *                 model dtype), false / none
 *   activation    float16 bfloat16 float8e4m3 float8e5m2 int8 int4 param
 *   quantizer     rtn mse
 * On a bad key or value returns HC_ERR_ARG ("KEY: reason") and leaves *t
 * unchanged. */
hc_status hc_target_set_field(hc_target *t, const char *key, const char *value, hc_error *err);

/* 1 if key (exact spelling with '_') is one of the field names above. */
int hc_target_field_known(const char *key);

#endif
