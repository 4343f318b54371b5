/* fuzz_safetensors_entry.c - one safetensors file from bytes (see fuzz_entry.h). */
#include "fuzz_entry.h"

#include <string.h>

#include "hc_safetensors.h"

int hc_fuzz_safetensors(const uint8_t *data, size_t size, char *why)
{
    hc_st_file *f = NULL;
    hc_error err;
    hc_error_clear(&err);
    hc_status st = hc_st_open_buffer(data, size, "fuzz.safetensors", &f, &err);
    if (st != HC_OK) {
        if (f != NULL) return hc_fuzz_fail(why, "failed open returned a handle");
        if (err.status != st || err.msg[0] == '\0')
            return hc_fuzz_fail(why, "error %d without a message", (int)st);
        return 0;
    }
    int rc = 0;
    uint64_t pos = 0;
    for (size_t i = 0; i < hc_st_count(f) && rc == 0; i++) {
        const hc_st_tensor *t = hc_st_tensor_at(f, i);
        if (t == NULL || hc_st_find(f, t->name) != t)
            rc = hc_fuzz_fail(why, "tensor %zu: lookup by name does not find it", i);
        else if (t->offset != pos)
            rc = hc_fuzz_fail(why, "tensor '%s' is not contiguous", t->name);
        else if (t->ndim < 0 || t->ndim > HC_MAX_DIMS)
            rc = hc_fuzz_fail(why, "tensor '%s' has rank %d", t->name, t->ndim);
        else {
            int64_t bytes = hc_tensor_byte_size(t->dtype, t->ndim, t->shape);
            if (bytes < 0 || (uint64_t)bytes != t->nbytes)
                rc = hc_fuzz_fail(why, "tensor '%s': nbytes %zu, shape says %lld", t->name,
                                  t->nbytes, (long long)bytes);
        }
        if (rc == 0 && t->nbytes) {
            /* touch both ends so that ASan sees an extent past the buffer */
            unsigned char a, b;
            memcpy(&a, t->data, 1);
            memcpy(&b, (const unsigned char *)t->data + t->nbytes - 1, 1);
            (void)a;
            (void)b;
        }
        if (rc == 0) {
            hc_tensor v;
            hc_st_tensor_view(t, &v);
            hc_tensor_free(&v); /* borrowed: a no-op */
            pos = t->offset + t->nbytes;
        }
    }
    if (rc == 0 && hc_st_tensor_at(f, hc_st_count(f)) != NULL)
        rc = hc_fuzz_fail(why, "tensor_at past the end is not NULL");
    for (size_t i = 0; rc == 0 && i < hc_st_metadata_count(f); i++) {
        const char *k = NULL, *v = NULL;
        if (hc_st_metadata_at(f, i, &k, &v) != 0 || k == NULL || v == NULL)
            rc = hc_fuzz_fail(why, "metadata %zu unreadable", i);
        else if (hc_st_metadata_get(f, k) == NULL)
            rc = hc_fuzz_fail(why, "metadata key '%s' not found by get", k);
    }
    if (rc == 0) (void)hc_st_find(f, "no such tensor");
    hc_st_close(f);
    return rc;
}
