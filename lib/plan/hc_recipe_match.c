/* hc_recipe_match.c - the built-in ignore list, pattern compilation and
 * resolution of a layer name to a target (see hc_recipe.h). */
#include "hc_recipe.h"
#include "hc_recipe_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Built-in ignore list: layers kept in their original dtype unless a recipe
 * says replace_default_ignore: true or a rule says skip: false. Each pattern
 * matches a whole layer name; "(.*\.)?X" means "X as the last component(s)".
 * Documented in docs/recipes.md; keep the two in sync. */
static const struct {
    const char *label, *pattern;
} builtin_ignore[] = {
    {"embedding", "(.*\\.)?(embed_tokens|tok_embeddings|embedding|embeddings|wte|wpe|"
                  "word_embeddings|position_embeddings|token_type_embeddings|shared)"},
    {"norm", "(.*\\.)?[^.]*(norm|Norm|NORM)[^.]*"},
    {"norm", "(.*\\.)?(ln|ln_[^.]*)"},
    {"lm_head", "(.*\\.)?(lm_head|embed_out)|output|(.*\\.)?shared_head\\.head"},
    {"classification head", "(.*\\.)?(classifier|score|pooler\\.dense)"},
    {"MoE router", "(.*\\.)?(gate|router|shared_expert_gate|e_score_correction_bias)"},
    {"attention sinks", "(.*\\.)?sinks"},
    {"vision/audio tower", "(.*\\.)?(vision_tower|vision_model|visual|multi_modal_projector|"
                           "mm_projector|audio_tower)(\\..*)?"},
};

int hc_recipe_compile(const char *pattern, hc_regex *re, char *why, size_t why_len)
{
    return hc_regex_compile(re, pattern, HC_RE_POSIX, HC_RE_FULL, why, why_len);
}

hc_status hc_recipe_add_builtin_ignore(hc_recipe *r, hc_error *err)
{
    int n = (int)(sizeof builtin_ignore / sizeof builtin_ignore[0]);
    hc_recipe_ignore *g = realloc(r->ignore, (size_t)(r->n_ignore + n) * sizeof *g);
    HC_CHECK_ALLOC(err, g, "built-in ignore list");
    r->ignore = g;
    r->cap_ignore = r->n_ignore + n;
    for (int i = 0; i < n; i++) {
        hc_recipe_ignore *e = &r->ignore[r->n_ignore];
        memset(e, 0, sizeof *e);
        r->n_ignore++;
        e->label = builtin_ignore[i].label;
        e->pattern = malloc(strlen(builtin_ignore[i].pattern) + 1);
        HC_CHECK_ALLOC(err, e->pattern, "built-in ignore list");
        strcpy(e->pattern, builtin_ignore[i].pattern);
        char why[256];
        if (hc_recipe_compile(e->pattern, &e->re, why, sizeof why) != 0)
            HC_FAIL(err, HC_ERR_INTERNAL, "built-in ignore pattern '%s': %s", e->pattern, why);
    }
    return HC_OK;
}

void hc_recipe_patch_apply(const hc_recipe_patch *p, hc_target *t)
{
    for (int i = 0; i < HC_TF_COUNT; i++)
        if (p->mask & (1u << i)) hc_target_copy_field(t, &p->vals, i);
}

/* Bounded appending to a caller's buffer. */
typedef struct {
    char *buf;
    size_t len, used;
} sbuf;

static void sb_add(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(sbuf *s, const char *fmt, ...)
{
    if (s->buf == NULL || s->len == 0 || s->used + 1 >= s->len) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->buf + s->used, s->len - s->used, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    s->used += (size_t)n;
    if (s->used >= s->len) s->used = s->len - 1;
}

static void sb_patch(sbuf *s, const hc_recipe_patch *p)
{
    int first = 1;
    for (int i = 0; i < HC_TF_COUNT; i++)
        if (p->mask & (1u << i)) {
            sb_add(s, "%s%s %s", first ? "" : ", ", hc_target_field_name(i), p->text[i]);
            first = 0;
        }
}

static int matches(const hc_regex *re, const char *name)
{
    return hc_regex_match(re, name) == 1;
}

hc_status hc_recipe_resolve(const hc_recipe *r, const char *layer_name, const hc_target *base,
                            hc_target *out, int *skip, char *why, size_t why_len)
{
    if (layer_name == NULL || base == NULL || out == NULL || skip == NULL)
        return hc_error_set(NULL, HC_ERR_ARG, "hc_recipe_resolve: NULL argument");
    *out = *base;
    *skip = 0;
    sbuf plan = {why, why_len, 0};
    if (why && why_len) why[0] = '\0';
    size_t n = strnlen(layer_name, HC_REGEX_MAX_SUBJECT + 1);
    if (r != NULL && n > HC_REGEX_MAX_SUBJECT) { /* the regex guard would not match it */
        sb_add(&plan, "layer name '%.200s...' is longer than %d bytes", layer_name,
               HC_REGEX_MAX_SUBJECT);
        return HC_ERR_ARG;
    }
    if (r == NULL) {
        sb_add(&plan, "base target");
        return HC_OK;
    }
    char skip_why[512] = "";
    if (r->defaults.mask) {
        hc_recipe_patch_apply(&r->defaults, out);
        sb_add(&plan, "recipe defaults: ");
        sb_patch(&plan, &r->defaults);
    }
    for (int i = 0; i < r->n_ignore; i++) {
        const hc_recipe_ignore *g = &r->ignore[i];
        if (!matches(&g->re, layer_name)) continue;
        *skip = 1;
        if (g->label)
            snprintf(skip_why, sizeof skip_why, "ignored by default: %s (%s)", g->label, g->pattern);
        else
            snprintf(skip_why, sizeof skip_why, "ignored by recipe (line %d): %s", g->line, g->pattern);
        break;
    }
    for (int i = 0; i < r->n_rules; i++) {
        const hc_recipe_rule *rule = &r->rules[i];
        int hit = -1;
        for (int j = 0; j < rule->n_targets && hit < 0; j++)
            if (matches(&rule->res[j], layer_name)) hit = j;
        if (hit < 0) continue;
        hc_recipe_patch_apply(&rule->patch, out);
        if (rule->skip_set) {
            *skip = rule->skip;
            if (rule->skip)
                snprintf(skip_why, sizeof skip_why, "rule %d (targets %s): skip", i + 1,
                         rule->targets[hit]);
        }
        sb_add(&plan, "%srule %d (targets %s): ", plan.used ? "; " : "", i + 1, rule->targets[hit]);
        sb_patch(&plan, &rule->patch);
        if (rule->skip_set && !rule->skip) sb_add(&plan, "%sskip false", rule->patch.mask ? ", " : "");
    }
    if (*skip) {
        if (why && why_len) snprintf(why, why_len, "%s", skip_why);
    } else if (plan.used == 0) {
        sb_add(&plan, "base target");
    }
    return HC_OK;
}

/* 1 if name ends in "experts.<proj>" for a fused 3-D expert stack. */
static int is_fused_experts(const char *name)
{
    static const char *const projs[] = {"gate_up_proj", "gate_proj", "up_proj", "down_proj"};
    for (size_t i = 0; i < sizeof projs / sizeof projs[0]; i++) {
        char tail[32];
        snprintf(tail, sizeof tail, "experts.%s", projs[i]);
        size_t n = strlen(name), t = strlen(tail);
        if (n >= t && !strcmp(name + n - t, tail) && (n == t || name[n - t - 1] == '.')) return 1;
    }
    return 0;
}

hc_status hc_recipe_resolve_tensor(const hc_recipe *r, const char *tensor_name, int ndim,
                                   const hc_target *base, hc_target *out, int *skip,
                                   char *why, size_t why_len)
{
    if (tensor_name == NULL || base == NULL || out == NULL || skip == NULL)
        return hc_error_set(NULL, HC_ERR_ARG, "hc_recipe_resolve_tensor: NULL argument");
    size_t n = strlen(tensor_name);
    const char *suffix = ".weight";
    size_t sl = strlen(suffix);
    int has_weight = n > sl && !strcmp(tensor_name + n - sl, suffix);
    if (has_weight && (ndim < 0 || ndim == 2 || (ndim == 3 && strstr(tensor_name, "experts")))) {
        char layer[1024];
        if (n - sl >= sizeof layer) {
            if (why && why_len)
                snprintf(why, why_len, "tensor name '%.200s...' is longer than %zu bytes",
                         tensor_name, sizeof layer);
            return HC_ERR_ARG;
        }
        memcpy(layer, tensor_name, n - sl);
        layer[n - sl] = '\0';
        return hc_recipe_resolve(r, layer, base, out, skip, why, why_len);
    }
    if (!has_weight && (ndim < 0 || ndim == 3) && is_fused_experts(tensor_name))
        return hc_recipe_resolve(r, tensor_name, base, out, skip, why, why_len);
    *out = *base;
    *skip = 1;
    if (why && why_len) {
        if (ndim >= 0)
            snprintf(why, why_len, "not a 2-D linear weight (%d-D%s)", ndim,
                     has_weight ? "" : ", no .weight suffix");
        else
            snprintf(why, why_len, "not a 2-D linear weight (no .weight suffix)");
    }
    return HC_OK;
}
