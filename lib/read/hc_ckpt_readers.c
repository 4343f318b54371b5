/* hc_ckpt_readers.c - the registry of quantized-layer readers: which tensor
 * opens a layer of which kind, the layer's tensors, and its reader. */
#include "hc_ckpt.h"

#include <string.h>

/* Match order: the first reader whose suffix ends the name and which claims
 * the tensor wins (.weight is claimed by the reader of the detected method). */
const hc_ckpt_reader *const hc_ckpt_readers[] = {
    &hc_ckpt_reader_gptq,     &hc_ckpt_reader_awq,         &hc_ckpt_reader_ct_packed,
    &hc_ckpt_reader_ct_fp4,   &hc_ckpt_reader_mxfp4,       &hc_ckpt_reader_quark,
    &hc_ckpt_reader_ct_unpacked, &hc_ckpt_reader_modelopt, &hc_ckpt_reader_fp8,
    NULL,
};

const hc_ckpt_reader *hc_ckpt_reader_of(hc_ckpt_kind kind)
{
    for (int i = 0; hc_ckpt_readers[i]; i++)
        if (hc_ckpt_readers[i]->kind == kind) return hc_ckpt_readers[i];
    return NULL;
}

int hc_ckpt_is_quantized_weight(const hc_st_tensor *t)
{
    return t->ndim == 2 && (t->dtype == HC_DT_U8 || t->dtype == HC_DT_I8 ||
                            t->dtype == HC_DT_F8_E4M3 || t->dtype == HC_DT_F8_E5M2);
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int hc_ckpt_layer_of(const hc_ckpt_config *cfg, const hc_st_tensor *t, hc_ckpt_kind *kind,
                     char *prefix, size_t prefix_len)
{
    *kind = HC_CK_NONE;
    for (int i = 0; hc_ckpt_readers[i]; i++) {
        const hc_ckpt_reader *r = hc_ckpt_readers[i];
        if (!ends_with(t->name, r->suffix) || (r->claims && !r->claims(cfg, t))) continue;
        size_t n = strlen(t->name) - strlen(r->suffix);
        if (n + 1 > prefix_len) return 0;
        memcpy(prefix, t->name, n);
        prefix[n] = '\0';
        *kind = r->kind;
        return 1;
    }
    return 0;
}

int hc_ckpt_layer_tensors(hc_st_model *model, hc_ckpt_kind kind, const char *prefix,
                          const hc_st_tensor **out, int max)
{
    const hc_ckpt_reader *r = hc_ckpt_reader_of(kind);
    int n = 0;
    for (int i = 0; r && r->tensors[i] && n < max; i++) {
        const hc_st_tensor *t = hc_ckpt_find(model, prefix, r->tensors[i]);
        if (t) out[n++] = t;
    }
    return n;
}
