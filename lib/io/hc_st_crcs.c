/* hc_st_crcs.c - input file CRCs from the tensors' CRCs (hc_st_crcs.h). */
#include "hc_st_crcs.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hc_crc32.h"

typedef struct {
    uint32_t crc;
    int have;
} slot;

struct hc_st_crcs {
    const hc_st_model *m;
    size_t nfiles;
    slot **files; /* per model file, one slot per tensor in file order */
};

void hc_st_crcs_free(hc_st_crcs *c)
{
    if (c == NULL) return;
    for (size_t i = 0; c->files && i < c->nfiles; i++) free(c->files[i]);
    free(c->files);
    free(c);
}

hc_status hc_st_crcs_new(const hc_st_model *m, hc_st_crcs **out, hc_error *err)
{
    *out = NULL;
    hc_st_crcs *c = calloc(1, sizeof *c);
    HC_CHECK_ALLOC(err, c, "input CRC table");
    c->m = m;
    size_t nf = hc_st_model_file_count(m);
    c->files = calloc(nf ? nf : 1, sizeof *c->files);
    c->nfiles = c->files ? nf : 0;
    for (size_t i = 0; c->files && i < nf; i++) {
        size_t n = hc_st_count(hc_st_model_file_at(m, i));
        c->files[i] = calloc(n ? n : 1, sizeof *c->files[i]);
        if (c->files[i] == NULL) {
            hc_st_crcs_free(c);
            HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating the input CRC table");
        }
    }
    if (c->files == NULL) {
        hc_st_crcs_free(c);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory allocating the input CRC table");
    }
    *out = c;
    return HC_OK;
}

/* t's slot, or NULL when t is no file's own descriptor. */
static slot *slot_of(hc_st_crcs *c, const hc_st_tensor *t)
{
    for (size_t i = 0; c && t && i < hc_st_model_file_count(c->m); i++) {
        const hc_st_file *f = hc_st_model_file_at(c->m, i);
        if (hc_st_holds(f, t)) return &c->files[i][t - hc_st_tensor_at(f, 0)];
    }
    return NULL;
}

void hc_st_crcs_note(hc_st_crcs *c, const hc_st_tensor *t, uint32_t crc)
{
    slot *s = slot_of(c, t);
    if (s == NULL) return;
    s->crc = crc;
    s->have = 1;
}

void hc_st_crcs_take(hc_st_crcs *c, const hc_st_tensor *t)
{
    slot *s = slot_of(c, t);
    if (s == NULL || s->have) return;
    s->crc = t->nbytes ? hc_crc32(0, t->data, t->nbytes) : 0;
    s->have = 1;
}

/* The file's CRC: bytes between tensors (header, gaps, tail) read from the
 * mapping, each tensor's noted CRC (or its bytes) combined in file order. */
static uint32_t file_crc(const hc_st_file *f, const slot *slots)
{
    size_t size = 0, n = hc_st_count(f);
    const unsigned char *base = hc_st_bytes(f, &size);
    uint64_t data = 0, pos = 0;
    for (size_t i = 0; i < n; i++) data += hc_st_tensor_at(f, i)->nbytes;
    uint64_t header_end = size - data; /* the data section is the file's end */
    uint32_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        const hc_st_tensor *t = hc_st_tensor_at(f, i);
        uint64_t begin = header_end + t->offset;
        if (t->nbytes == 0) continue;
        if (begin < pos || begin + t->nbytes > size) return hc_crc32(0, base, size);
        crc = hc_crc32(crc, base + pos, (size_t)(begin - pos));
        uint32_t tc = slots[i].have ? slots[i].crc : hc_crc32(0, t->data, t->nbytes);
        crc = (uint32_t)crc32_combine(crc, tc, (z_off_t)t->nbytes);
        pos = begin + t->nbytes;
    }
    return hc_crc32(crc, base + pos, (size_t)(size - pos));
}

hc_status hc_st_crcs_file(hc_st_crcs *c, const char *name, int *found, uint32_t *crc,
                          uint64_t *size, hc_error *err)
{
    *found = 0;
    for (size_t i = 0; c && i < hc_st_model_file_count(c->m); i++) {
        const hc_st_file *f = hc_st_model_file_at(c->m, i);
        const char *path = hc_st_path(f), *slash = strrchr(path, '/');
        if (strcmp(slash ? slash + 1 : path, name) != 0) continue;
        size_t len = 0;
        (void)hc_st_bytes(f, &len);
        *crc = file_crc(f, c->files[i]);
        *size = len;
        *found = 1;
        return hc_st_check(f, err); /* no CRC of zeros read past a truncation */
    }
    return HC_OK;
}
