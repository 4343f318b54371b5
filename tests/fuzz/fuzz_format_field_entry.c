/* fuzz_format_field_entry.c - the CLI's format-field parsers (see fuzz_entry.h). */
#include "fuzz_entry.h"

#include <stdlib.h>
#include <string.h>

#include "hc_model_config.h"
#include "hc_recipe.h"

static int target_ok(const hc_target *t)
{
    int w = hc_format_get(t->weight_format) != NULL;
    int s = t->scale_format == HC_FMT_PARAM || hc_format_get(t->scale_format) != NULL;
    int a = t->activation == HC_FMT_PARAM || hc_format_get(t->activation) != NULL;
    return w && s && a && t->group_size >= -1 && t->group_size <= (1 << 20) &&
           t->group_size_n >= 0 && t->group_size_n <= (1 << 20);
}

static int check_err(hc_status st, const hc_error *err, const char *what, char *why)
{
    if (st != HC_OK && (err->status != st || err->msg[0] == '\0'))
        return hc_fuzz_fail(why, "%s: error %d without a message", what, (int)st);
    return 0;
}

/* Every parser on one string. */
static int parse_all(const char *s, char *why)
{
    hc_format_id f;
    if (hc_format_parse(s, &f) == 0 && hc_format_get(f) == NULL)
        return hc_fuzz_fail(why, "hc_format_parse('%s') gave id %d", s, (int)f);
    const hc_preset *p = hc_preset_find(s);
    if (p && (strcmp(p->name, s) != 0 || !target_ok(&p->target)))
        return hc_fuzz_fail(why, "hc_preset_find('%s') gave '%s'", s, p->name);
    hc_error err;
    hc_error_clear(&err);
    int sm = 0;
    hc_status st = hc_arch_parse(s, &sm, &err);
    if (check_err(st, &err, "hc_arch_parse", why)) return -1;
    if (st == HC_OK && (sm < 75 || sm > 120)) return hc_fuzz_fail(why, "arch %d", sm);
    hc_error_clear(&err);
    st = hc_activation_parse(s, &f, &err);
    if (check_err(st, &err, "hc_activation_parse", why)) return -1;
    if (st == HC_OK && hc_format_get(f) == NULL) return hc_fuzz_fail(why, "activation %d", (int)f);
    (void)hc_target_field_known(s);
    return 0;
}

int hc_fuzz_format_field(const uint8_t *data, size_t size, char *why)
{
    char *text = hc_fuzz_cstr(data, size);
    if (text == NULL) return 0;
    char *key = text, *value = text + strcspn(text, "=\n");
    if (*value) *value++ = '\0';
    int rc = parse_all(key, why);
    if (rc == 0) rc = parse_all(value, why);
    for (int i = 0; rc == 0 && i < hc_preset_count(); i++) {
        hc_target t = hc_preset_at(i)->target, before = t;
        hc_error err;
        hc_error_clear(&err);
        hc_status st = hc_target_set_field(&t, key, value, &err);
        if (check_err(st, &err, "hc_target_set_field", why)) rc = -1;
        else if (st != HC_OK && memcmp(&t, &before, sizeof t) != 0)
            rc = hc_fuzz_fail(why, "failed hc_target_set_field changed the target");
        else if (!target_ok(&t))
            rc = hc_fuzz_fail(why, "hc_target_set_field('%s', '%s') gave a bad target", key, value);
        else {
            char desc[128];
            hc_target_describe(&t, desc, sizeof desc);
            if (memchr(desc, 0, sizeof desc) == NULL) rc = hc_fuzz_fail(why, "describe overflow");
        }
        if (i > 2) break; /* a few bases are enough */
    }
    free(text);
    return rc;
}
