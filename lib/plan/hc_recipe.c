/* hc_recipe.c - loading and validating recipe YAML (see hc_recipe.h and
 * docs/recipes.md). Parsed with libyaml's document API; every node keeps its
 * start mark, so each error names the file, line and column. */
#include "hc_recipe.h"
#include "hc_fs.h"
#include "hc_model_config.h"
#include "hc_recipe_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Limits (docs/recipes.md, "Limits"): libyaml's loader takes time quadratic
 * in the nesting depth (100k levels: over a minute) and memory per node, and
 * every pattern is a compiled regex of tens of KiB in glibc (200k patterns:
 * 7 GB). A recipe needs 4 levels and a few dozen patterns. */
#define RECIPE_MAX_BYTES ((size_t)16 << 20)
#define RECIPE_MAX_DEPTH 64
#define RECIPE_MAX_NODES 100000
#define RECIPE_MAX_PATTERNS 4096

typedef struct {
    const char *file;     /* for messages */
    yaml_document_t *doc;
    hc_recipe *r;
    hc_error *err;
    int n_patterns;       /* compiled so far (an alias counts each time) */
} pctx;

static hc_status perr(pctx *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static hc_status perr(pctx *c, const yaml_node_t *n, const char *fmt, ...)
{
    char msg[HC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return hc_error_set(c->err, HC_ERR_FORMAT, "%s:%zu:%zu: %s", c->file,
                            (size_t)n->start_mark.line + 1, (size_t)n->start_mark.column + 1, msg);
    return hc_error_set(c->err, HC_ERR_FORMAT, "%s: %s", c->file, msg);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE: return "a scalar";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_MAPPING_NODE: return "a mapping";
    default: return "nothing";
    }
}

static int is_null_scalar(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
    const char *v = (const char *)n->data.scalar.value;
    return !strcmp(v, "") || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
           !strcmp(v, "NULL");
}

/* The text of a scalar node that must hold a value; error otherwise. */
static hc_status get_scalar(pctx *c, const yaml_node_t *n, const char *what, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return perr(c, n, "%s must be a single value, not %s", what, node_kind(n));
    if (is_null_scalar(n)) return perr(c, n, "%s has no value", what);
    if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
        return perr(c, n, "%s contains a NUL character", what);
    *out = (const char *)n->data.scalar.value;
    return HC_OK;
}

static hc_status get_bool(pctx *c, const yaml_node_t *n, const char *what, int *out)
{
    const char *v;
    HC_TRY(get_scalar(c, n, what, &v));
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) *out = 0;
    else return perr(c, n, "%s must be true or false, not '%s'", what, v);
    return HC_OK;
}

/* Iterates a mapping node's pairs, checking that keys are unique scalars. */
static hc_status mapping_key(pctx *c, const yaml_node_t *map, yaml_node_pair_t *pair,
                             const char *where, const char **key, yaml_node_t **value)
{
    yaml_node_t *k = yaml_document_get_node(c->doc, pair->key);
    yaml_node_t *v = yaml_document_get_node(c->doc, pair->value);
    if (k == NULL || v == NULL) return perr(c, map, "%s: broken mapping entry", where);
    if (k->type != YAML_SCALAR_NODE) return perr(c, k, "%s: keys must be plain names, not %s", where, node_kind(k));
    const char *ks = (const char *)k->data.scalar.value;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < pair; p++) {
        yaml_node_t *pk = yaml_document_get_node(c->doc, p->key);
        if (pk && pk->type == YAML_SCALAR_NODE && !strcmp((const char *)pk->data.scalar.value, ks))
            return perr(c, k, "%s: duplicate key '%s' (first on line %zu)", where, ks,
                        (size_t)pk->start_mark.line + 1);
    }
    *key = ks;
    *value = v;
    return HC_OK;
}

/* Records one format field of a patch (validated against a scratch target). */
static hc_status patch_field(pctx *c, hc_recipe_patch *p, const char *where, const char *key,
                             const yaml_node_t *vn)
{
    int idx = hc_target_field_index(key);
    const char *v;
    HC_TRY(get_scalar(c, vn, key, &v));
    hc_target scratch = {0};
    hc_error e;
    hc_error_clear(&e);
    if (hc_target_set_field(&scratch, key, v, &e) != HC_OK) return perr(c, vn, "%s: %s", where, e.msg);
    p->text[idx] = dupstr(v);
    HC_CHECK_ALLOC(c->err, p->text[idx], "recipe field");
    p->mask |= 1u << idx;
    return HC_OK;
}

/* After all fields of a patch are recorded: vals = format preset (if given)
 * with the other fields applied, regardless of their order in the file. */
static void patch_finish(hc_recipe_patch *p)
{
    hc_target t = {0};
    for (int i = 0; i < HC_TF_COUNT; i++)
        if (p->mask & (1u << i)) hc_target_set_field(&t, hc_target_field_name(i), p->text[i], NULL);
    p->vals = t;
}

static void patch_free(hc_recipe_patch *p)
{
    for (int i = 0; i < HC_TF_COUNT; i++) free(p->text[i]);
}

static const char *field_list =
    "format, weight_dtype, group_size, group_size_n, scale_dtype, zero_point, global_scale, "
    "activation, quantizer";

static hc_status parse_defaults(pctx *c, yaml_node_t *n)
{
    if (n->type != YAML_MAPPING_NODE) return perr(c, n, "defaults must be a mapping, not %s", node_kind(n));
    for (yaml_node_pair_t *pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
        const char *key;
        yaml_node_t *v;
        HC_TRY(mapping_key(c, n, pair, "defaults", &key, &v));
        if (!strcmp(key, "arch")) {
            const char *s;
            HC_TRY(get_scalar(c, v, "defaults.arch", &s));
            int sm = 0;
            if (hc_arch_parse(s, &sm, NULL) != HC_OK)
                return perr(c, v, "defaults.arch: unknown GPU arch '%s' (use sm75, sm80, sm86, "
                            "sm89, sm90, sm100 or sm120; model classes go in 'architectures')", s);
            free(c->r->arch);
            c->r->arch = dupstr(s);
            HC_CHECK_ALLOC(c->err, c->r->arch, "recipe arch");
        } else if (hc_target_field_known(key)) {
            HC_TRY(patch_field(c, &c->r->defaults, "defaults", key, v));
        } else {
            return perr(c, yaml_document_get_node(c->doc, pair->key),
                        "defaults: unknown key '%s' (expected arch, %s)", key, field_list);
        }
    }
    patch_finish(&c->r->defaults);
    return HC_OK;
}

/* architectures: model classes the recipe is written for (informational):
 * a string or a list of strings. */
static hc_status parse_architectures(pctx *c, yaml_node_t *n)
{
    if (n->type == YAML_SCALAR_NODE) return HC_OK;
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(c, n, "architectures must be a string or a list of strings, not %s", node_kind(n));
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        const char *s;
        HC_TRY(get_scalar(c, yaml_document_get_node(c->doc, *it), "architectures", &s));
    }
    return HC_OK;
}

static hc_status compile_or_fail(pctx *c, const yaml_node_t *n, const char *where,
                                 const char *pattern, hc_regex *re)
{
    char why[256];
    if (++c->n_patterns > RECIPE_MAX_PATTERNS)
        return perr(c, n, "%s: more than %d patterns in one recipe (ignore entries and targets "
                    "together)", where, RECIPE_MAX_PATTERNS);
    if (hc_recipe_compile(pattern, re, why, sizeof why) != 0)
        return perr(c, n, "%s: bad regular expression '%s': %s", where, pattern, why);
    return HC_OK;
}

static hc_status parse_ignore(pctx *c, yaml_node_t *n)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(c, n, "ignore must be a list of regular expressions, not %s", node_kind(n));
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = yaml_document_get_node(c->doc, *it);
        const char *pat;
        HC_TRY(get_scalar(c, e, "ignore entry", &pat));
        hc_recipe *r = c->r;
        if (r->n_ignore == r->cap_ignore) {
            int cap = r->cap_ignore ? 2 * r->cap_ignore : 16;
            hc_recipe_ignore *g = realloc(r->ignore, (size_t)cap * sizeof *g);
            HC_CHECK_ALLOC(c->err, g, "recipe ignore list");
            r->ignore = g;
            r->cap_ignore = cap;
        }
        hc_recipe_ignore *g = &r->ignore[r->n_ignore];
        memset(g, 0, sizeof *g);
        r->n_ignore++;
        g->line = (int)e->start_mark.line + 1;
        g->pattern = dupstr(pat);
        HC_CHECK_ALLOC(c->err, g->pattern, "recipe ignore entry");
        HC_TRY(compile_or_fail(c, e, "ignore", pat, &g->re));
    }
    return HC_OK;
}

static hc_status parse_rule(pctx *c, yaml_node_t *n, int number)
{
    char where[32];
    snprintf(where, sizeof where, "rule %d", number);
    if (n->type != YAML_MAPPING_NODE)
        return perr(c, n, "%s must be a mapping (targets: [...], fields), not %s", where, node_kind(n));
    hc_recipe *r = c->r;
    if (r->n_rules == r->cap_rules) {
        int cap = r->cap_rules ? 2 * r->cap_rules : 8;
        hc_recipe_rule *g = realloc(r->rules, (size_t)cap * sizeof *g);
        HC_CHECK_ALLOC(c->err, g, "recipe rules");
        r->rules = g;
        r->cap_rules = cap;
    }
    hc_recipe_rule *rule = &r->rules[r->n_rules++];
    memset(rule, 0, sizeof *rule);
    rule->line = (int)n->start_mark.line + 1;
    int have_targets = 0;
    for (yaml_node_pair_t *pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
        const char *key;
        yaml_node_t *v;
        HC_TRY(mapping_key(c, n, pair, where, &key, &v));
        if (!strcmp(key, "targets")) {
            have_targets = 1;
            if (v->type != YAML_SEQUENCE_NODE)
                return perr(c, v, "%s: targets must be a list of regular expressions, not %s", where,
                            node_kind(v));
            int cnt = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
            if (cnt == 0) return perr(c, v, "%s: targets is empty", where);
            rule->targets = calloc((size_t)cnt, sizeof *rule->targets);
            rule->res = calloc((size_t)cnt, sizeof *rule->res);
            HC_CHECK_ALLOC(c->err, rule->targets, "rule targets");
            HC_CHECK_ALLOC(c->err, rule->res, "rule targets");
            for (int i = 0; i < cnt; i++) {
                yaml_node_t *e = yaml_document_get_node(c->doc, v->data.sequence.items.start[i]);
                const char *pat;
                HC_TRY(get_scalar(c, e, "target", &pat));
                rule->targets[i] = dupstr(pat);
                rule->n_targets = i + 1;
                HC_CHECK_ALLOC(c->err, rule->targets[i], "rule target");
                HC_TRY(compile_or_fail(c, e, where, pat, &rule->res[i]));
            }
        } else if (!strcmp(key, "skip")) {
            HC_TRY(get_bool(c, v, "skip", &rule->skip));
            rule->skip_set = 1;
        } else if (hc_target_field_known(key)) {
            HC_TRY(patch_field(c, &rule->patch, where, key, v));
        } else {
            return perr(c, yaml_document_get_node(c->doc, pair->key),
                        "%s: unknown key '%s' (expected targets, skip, %s)", where, key, field_list);
        }
    }
    if (!have_targets) return perr(c, n, "%s: missing 'targets'", where);
    if (!rule->skip_set && rule->patch.mask == 0)
        return perr(c, n, "%s: sets nothing (give skip or at least one format field)", where);
    if (rule->skip_set && rule->skip && rule->patch.mask != 0)
        return perr(c, n, "%s: 'skip: true' together with format fields (a skipped layer keeps "
                    "its original dtype)", where);
    patch_finish(&rule->patch);
    return HC_OK;
}

static hc_status parse_root(pctx *c, yaml_node_t *root)
{
    if (root->type != YAML_MAPPING_NODE)
        return perr(c, root, "a recipe must be a mapping (defaults, ignore, rules), not %s",
                    node_kind(root));
    hc_recipe *r = c->r;
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top; pair++) {
        const char *key;
        yaml_node_t *v;
        HC_TRY(mapping_key(c, root, pair, "recipe", &key, &v));
        if (!strcmp(key, "version")) {
            const char *s;
            HC_TRY(get_scalar(c, v, "version", &s));
            if (strcmp(s, "1") != 0) return perr(c, v, "unsupported recipe version '%s' (expected 1)", s);
        } else if (!strcmp(key, "name") || !strcmp(key, "description")) {
            const char *s;
            HC_TRY(get_scalar(c, v, key, &s));
            char **slot = key[0] == 'n' ? &r->name : &r->description;
            free(*slot);
            *slot = dupstr(s);
            HC_CHECK_ALLOC(c->err, *slot, "recipe name");
        } else if (!strcmp(key, "architectures")) {
            HC_TRY(parse_architectures(c, v));
        } else if (!strcmp(key, "defaults")) {
            HC_TRY(parse_defaults(c, v));
        } else if (!strcmp(key, "ignore")) {
            HC_TRY(parse_ignore(c, v));
        } else if (!strcmp(key, "replace_default_ignore")) {
            HC_TRY(get_bool(c, v, "replace_default_ignore", &r->replace_default_ignore));
        } else if (!strcmp(key, "rules")) {
            if (v->type != YAML_SEQUENCE_NODE) return perr(c, v, "rules must be a list, not %s", node_kind(v));
            int number = 1;
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
                HC_TRY(parse_rule(c, yaml_document_get_node(c->doc, *it), number++));
        } else {
            return perr(c, yaml_document_get_node(c->doc, pair->key),
                        "unknown top-level key '%s' (expected version, name, description, defaults, "
                        "ignore, replace_default_ignore, rules)", key);
        }
    }
    return HC_OK;
}

/* Base name of path without a .yaml/.yml extension. */
static char *name_from_path(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = dupstr(b);
    if (s == NULL) return NULL;
    size_t n = strlen(s);
    if (n > 5 && !strcmp(s + n - 5, ".yaml")) s[n - 5] = '\0';
    else if (n > 4 && !strcmp(s + n - 4, ".yml")) s[n - 4] = '\0';
    return s;
}

/* Moves the recipe's own ignore entries after the built-in ones. */
static hc_status prepend_builtin(hc_recipe *r, hc_error *err)
{
    int own = r->n_ignore;
    HC_TRY(hc_recipe_add_builtin_ignore(r, err));
    int added = r->n_ignore - own;
    if (own == 0 || added == 0) return HC_OK;
    hc_recipe_ignore *tmp = malloc((size_t)r->n_ignore * sizeof *tmp);
    HC_CHECK_ALLOC(err, tmp, "recipe ignore list");
    memcpy(tmp, r->ignore + own, (size_t)added * sizeof *tmp);
    memcpy(tmp + added, r->ignore, (size_t)own * sizeof *tmp);
    memcpy(r->ignore, tmp, (size_t)r->n_ignore * sizeof *tmp);
    free(tmp);
    return HC_OK;
}

/* A first pass over the event stream, before libyaml builds the document:
 * refuses a stream nested deeper than RECIPE_MAX_DEPTH or holding more than
 * RECIPE_MAX_NODES nodes as soon as it gets there. Syntax errors are left
 * to the loader, which reports them with their position. */
static hc_status check_shape(const char *text, size_t len, const char *file, hc_error *err)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory starting the YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0;
    long nodes = 0;
    hc_status st = HC_OK;
    yaml_event_t ev;
    while (st == HC_OK && yaml_parser_parse(&p, &ev)) {
        yaml_event_type_t t = ev.type;
        size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT) break;
        depth += t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT;
        depth -= t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT;
        nodes += t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT ||
                 t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT;
        if (depth > RECIPE_MAX_DEPTH)
            st = hc_error_set(err, HC_ERR_FORMAT, "%s:%zu:%zu: nested more than %d levels deep "
                              "(a recipe needs 4)", file, line, col, RECIPE_MAX_DEPTH);
        else if (nodes > RECIPE_MAX_NODES)
            st = hc_error_set(err, HC_ERR_FORMAT, "%s:%zu:%zu: more than %d YAML nodes (values, "
                              "lists, mappings)", file, line, col, RECIPE_MAX_NODES);
    }
    yaml_parser_delete(&p);
    return st;
}

hc_status hc_recipe_parse_text(const char *text, const char *name_for_messages, hc_recipe **out,
                               hc_error *err)
{
    if (text == NULL || out == NULL) HC_FAIL(err, HC_ERR_ARG, "hc_recipe_parse_text: NULL argument");
    const char *file = name_for_messages ? name_for_messages : "<recipe>";
    size_t len = strnlen(text, RECIPE_MAX_BYTES + 1);
    if (len > RECIPE_MAX_BYTES)
        HC_FAIL(err, HC_ERR_FORMAT, "%s: larger than the limit of %zu bytes for a recipe", file,
                RECIPE_MAX_BYTES);
    HC_TRY(check_shape(text, len, file, err));
    hc_recipe *r = calloc(1, sizeof *r);
    HC_CHECK_ALLOC(err, r, "recipe");
    yaml_parser_t parser;
    yaml_document_t doc;
    pctx c = {file, &doc, r, err, 0};
    hc_status st = HC_OK;
    if (!yaml_parser_initialize(&parser)) {
        free(r);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory starting the YAML parser");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        st = hc_error_set(err, HC_ERR_FORMAT, "%s:%zu:%zu: YAML syntax error: %s%s%s", file,
                          (size_t)parser.problem_mark.line + 1, (size_t)parser.problem_mark.column + 1,
                          parser.problem ? parser.problem : "unknown problem",
                          parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        hc_recipe_free(r);
        return st;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root == NULL) {
        st = hc_error_set(err, HC_ERR_FORMAT, "%s:1:1: empty recipe (expected a mapping with "
                          "defaults, ignore, rules)", file);
    } else {
        st = parse_root(&c, root);
    }
    yaml_document_delete(&doc);
    if (st == HC_OK) {
        /* A second document in the stream is an error. */
        yaml_document_t doc2;
        if (!yaml_parser_load(&parser, &doc2)) {
            st = hc_error_set(err, HC_ERR_FORMAT, "%s:%zu:%zu: YAML syntax error: %s", file,
                              (size_t)parser.problem_mark.line + 1,
                              (size_t)parser.problem_mark.column + 1,
                              parser.problem ? parser.problem : "unknown problem");
        } else {
            yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
            if (r2 != NULL)
                st = hc_error_set(err, HC_ERR_FORMAT, "%s:%zu:%zu: more than one YAML document "
                                  "(a recipe is one document)", file,
                                  (size_t)r2->start_mark.line + 1, (size_t)r2->start_mark.column + 1);
            yaml_document_delete(&doc2);
        }
    }
    yaml_parser_delete(&parser);
    if (st == HC_OK && r->name == NULL) {
        r->name = name_from_path(file);
        if (r->name == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    }
    if (st == HC_OK && !r->replace_default_ignore) st = prepend_builtin(r, err);
    if (st != HC_OK) {
        hc_recipe_free(r);
        return st;
    }
    *out = r;
    return HC_OK;
}

hc_status hc_recipe_load(const char *path, hc_recipe **out, hc_error *err)
{
    if (path == NULL || out == NULL) HC_FAIL(err, HC_ERR_ARG, "hc_recipe_load: NULL argument");
    char *buf = NULL;
    size_t n = 0;
    HC_TRY_CTX(err, hc_fs_read_file(path, RECIPE_MAX_BYTES, 0, &buf, &n, err), "recipe ");
    if (strlen(buf) != n) {
        free(buf);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: recipe contains a NUL byte", path);
    }
    hc_status st = hc_recipe_parse_text(buf, path, out, err);
    free(buf);
    return st;
}

hc_status hc_recipe_default(hc_recipe **out, hc_error *err)
{
    if (out == NULL) HC_FAIL(err, HC_ERR_ARG, "hc_recipe_default: NULL argument");
    hc_recipe *r = calloc(1, sizeof *r);
    HC_CHECK_ALLOC(err, r, "recipe");
    r->name = dupstr("default");
    hc_status st = r->name ? hc_recipe_add_builtin_ignore(r, err)
                           : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    if (st != HC_OK) {
        hc_recipe_free(r);
        return st;
    }
    *out = r;
    return HC_OK;
}

void hc_recipe_free(hc_recipe *r)
{
    if (r == NULL) return;
    free(r->name);
    free(r->arch);
    free(r->description);
    patch_free(&r->defaults);
    for (int i = 0; i < r->n_ignore; i++) {
        hc_regex_free(&r->ignore[i].re);
        free(r->ignore[i].pattern);
    }
    free(r->ignore);
    for (int i = 0; i < r->n_rules; i++) {
        hc_recipe_rule *rule = &r->rules[i];
        for (int j = 0; j < rule->n_targets; j++) hc_regex_free(&rule->res[j]);
        for (int j = 0; j < rule->n_targets; j++) free(rule->targets[j]);
        free(rule->targets);
        free(rule->res);
        patch_free(&rule->patch);
    }
    free(r->rules);
    free(r);
}

const char *hc_recipe_name(const hc_recipe *r) { return r ? r->name : NULL; }
const char *hc_recipe_arch(const hc_recipe *r) { return r ? r->arch : NULL; }
int hc_recipe_rule_count(const hc_recipe *r) { return r ? r->n_rules : 0; }
int hc_recipe_ignore_count(const hc_recipe *r) { return r ? r->n_ignore : 0; }
