/* hc_recipe_internal.h - field table shared by hc_target_field.c and
 * hc_recipe.c; not part of the public API. */
#ifndef HC_RECIPE_INTERNAL_H
#define HC_RECIPE_INTERNAL_H

#include "hc_error.h"
#include "hc_preset.h"
#include "hc_regex.h"

/* Field indices, in the order of hc_target_field_name(). */
enum {
    HC_TF_FORMAT, HC_TF_WEIGHT_DTYPE, HC_TF_GROUP_SIZE, HC_TF_GROUP_SIZE_N, HC_TF_SCALE_DTYPE,
    HC_TF_ZERO_POINT, HC_TF_GLOBAL_SCALE, HC_TF_ACTIVATION, HC_TF_QUANTIZER, HC_TF_COUNT
};

/* Canonical name of field idx, or NULL. */
const char *hc_target_field_name(int idx);
/* Index of key ('-' accepted for '_'), or -1. */
int hc_target_field_index(const char *key);
/* Copies field idx from src to dst (HC_TF_FORMAT: the whole target). */
void hc_target_copy_field(hc_target *dst, const hc_target *src, int idx);

/* Field overrides: bit i of mask set = field i given. vals holds the values
 * (when HC_TF_FORMAT is set, the preset's full target with the other given
 * fields on top); text the values as written, for explanations. */
typedef struct {
    unsigned mask;
    hc_target vals;
    char *text[HC_TF_COUNT];
} hc_recipe_patch;

typedef struct {
    char *pattern;     /* as written */
    const char *label; /* built-in entries: "lm_head", "norm", ...; NULL for the recipe's */
    int line;          /* 1-based line in the recipe; 0 for built-ins */
    hc_regex re;       /* ^(pattern)$ */
} hc_recipe_ignore;

typedef struct {
    int line;
    int n_targets;
    char **targets;
    hc_regex *res;
    int skip_set, skip;
    hc_recipe_patch patch;
} hc_recipe_rule;

struct hc_recipe {
    char *name;
    char *arch;
    char *description;
    hc_recipe_patch defaults;
    int replace_default_ignore;
    int n_ignore, cap_ignore;
    hc_recipe_ignore *ignore;
    int n_rules, cap_rules;
    hc_recipe_rule *rules;
};

/* Compiles ^(pattern)$ into *re through the regex guard (hc_regex.h); on
 * failure writes the reason into why. 0 or -1. */
int hc_recipe_compile(const char *pattern, hc_regex *re, char *why, size_t why_len);
/* Appends the built-in ignore list to r. */
hc_status hc_recipe_add_builtin_ignore(struct hc_recipe *r, hc_error *err);
/* Applies p to t. */
void hc_recipe_patch_apply(const hc_recipe_patch *p, hc_target *t);

#endif
