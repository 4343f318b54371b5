/* hc_conv_experts.c - per-expert layers "X.experts.<i>.Y" grouped into one
 * MoE stack "X.experts.Y": the name rule, the order, and the numbering check
 * that the float and the quantized sources share. */
#include "hc_conv_source.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hc_conv_expert_key(const char *prefix, char *key, size_t key_len, long *index)
{
    const char *p = strstr(prefix, ".experts.");
    if (p == NULL) return 0;
    const char *digits = p + 9, *q = digits;
    while (isdigit((unsigned char)*q)) q++;
    if (q == digits || *q != '.' || q[1] == '\0' || q - digits > 6) return 0;
    *index = strtol(digits, NULL, 10);
    int n = snprintf(key, key_len, "%.*s.experts.%s", (int)(p - prefix), prefix, q + 1);
    return n > 0 && (size_t)n < key_len;
}

static int cmp_expert(const void *a, const void *b)
{
    const hc_conv_expert *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

void hc_conv_experts_sort(hc_conv_expert *e, size_t n)
{
    qsort(e, n, sizeof *e, cmp_expert);
}

size_t hc_conv_experts_group_end(const hc_conv_expert *e, size_t n, size_t i)
{
    size_t j = i + 1;
    while (j < n && strcmp(e[j].key, e[i].key) == 0) j++;
    return j;
}

hc_status hc_conv_experts_check(hc_st_model *model, const hc_conv_expert *e, size_t n,
                                const char *what, hc_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(model, e[i].tensor);
        if (e[i].index != (long)i)
            HC_FAIL(err, HC_ERR_FORMAT, "%s (in %s): %sexpert stack %s has %s expert %ld "
                    "(experts must be numbered 0..E-1 without gaps%s; found %zu, the highest "
                    "%ld)", t->name, t->file, what, e[0].key,
                    i > 0 && e[i].index == e[i - 1].index ? "a duplicate" : "no", (long)i,
                    *what ? ", and every expert quantized" : "", n, e[n - 1].index);
    }
    return HC_OK;
}
