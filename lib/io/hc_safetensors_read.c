/* hc_safetensors_read.c - strict reader for one safetensors file (see
 * hc_safetensors.h; the checks are listed in docs/safetensors.md). */
#include "hc_safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hc_fs.h"
#include "hc_json.h"
#include "hc_sigbus.h"
#include "hc_utf8.h"

#define META_KEY "__metadata__"

struct hc_st_file {
    char *path;
    const unsigned char *map; /* whole file, PROT_READ (or the caller's buffer) */
    size_t size;
    int mapped;               /* 1: map is our mmap, 0: borrowed from hc_st_open_buffer */
    int guard;                /* hc_sigbus slot of the mapping, or -1 */
    int fd;                   /* the mapped file, kept for hc_st_pread, or -1 */
    dev_t dev;                /* the mapped file, for hc_st_check */
    ino_t ino;
    uint64_t hlen;            /* N: header bytes after the 8-byte prefix */
    cJSON *root;              /* parsed header; names and metadata point into it */
    const cJSON *meta;        /* "__metadata__" object or NULL */
    size_t nmeta;
    hc_st_tensor *tensors;    /* file order */
    size_t count;
    const hc_st_tensor **by_name; /* sorted by name for lookup */
};

typedef unsigned long long ull;

static uint64_t data_len(const hc_st_file *f) { return f->size - 8 - f->hlen; }

/* Maps the file read-only; messages name the path (hc_fs_open_regular's do). */
static hc_status map_file(hc_st_file *f, hc_error *err)
{
    int fd;
    struct stat st;
    HC_TRY(hc_fs_open_regular(f->path, 0, &fd, &st, err));
    if (st.st_size < 8) {
        close(fd);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: file is %lld bytes, shorter than the 8-byte header "
                "length", f->path, (long long)st.st_size);
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    /* kept for hc_st_pread while descriptors are plentiful (they are handed
     * out lowest first: a high number means many files are open) */
    if (p == MAP_FAILED || fd >= HC_ST_PREAD_MAX_FD) close(fd);
    else f->fd = fd;
    if (p == MAP_FAILED) HC_FAIL(err, HC_ERR_IO, "%s: cannot map file: %s", f->path, strerror(e));
    f->map = p;
    f->size = (size_t)st.st_size;
    f->mapped = 1;
    f->guard = hc_sigbus_watch(p, f->size);
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return HC_OK;
}

static hc_status check_prefix(hc_st_file *f, hc_error *err)
{
    if (f->size < 8)
        HC_FAIL(err, HC_ERR_FORMAT, "file is %zu bytes, shorter than the 8-byte header length",
                f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | f->map[i];
    if (n > HC_ST_MAX_HEADER)
        HC_FAIL(err, HC_ERR_FORMAT, "header length %llu exceeds the maximum of %llu bytes",
                (ull)n, (ull)HC_ST_MAX_HEADER);
    if (n > f->size - 8)
        HC_FAIL(err, HC_ERR_FORMAT, "header length %llu runs past the end of the file (%zu bytes)",
                (ull)n, f->size);
    f->hlen = n;
    return HC_OK;
}

static int is_json_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* cJSON treats every byte <= 0x20 as whitespace and allows raw control
 * characters in strings; JSON (and the reference reader) does not. */
static hc_status check_json_chars(const unsigned char *s, size_t len, hc_error *err)
{
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        if (in_str && c == '\\') {
            i++;
        } else if (in_str && c == '"') {
            in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c < 0x20 && (in_str || !is_json_space(c))) {
            HC_FAIL(err, HC_ERR_FORMAT, "header is not valid JSON: control character 0x%02x at "
                    "header byte %zu", c, i);
        }
    }
    return HC_OK;
}

static hc_status parse_header(hc_st_file *f, hc_error *err)
{
    const unsigned char *h = f->map + 8;
    size_t n = (size_t)f->hlen, bad = 0;
    if (!hc_utf8_valid(h, n, &bad))
        HC_FAIL(err, HC_ERR_FORMAT, "header is not valid UTF-8 (header byte %zu)", bad);
    if (n == 0 || h[0] != '{')
        HC_FAIL(err, HC_ERR_FORMAT, "header is not a JSON object (does not begin with '{')");
    const char *end = NULL;
    f->root = cJSON_ParseWithLengthOpts((const char *)h, n, &end, 0);
    if (f->root == NULL) {
        size_t at = end ? (size_t)((const unsigned char *)end - h) : 0;
        HC_FAIL(err, HC_ERR_FORMAT, "header is not valid JSON (near header byte %zu)", at);
    }
    if (!cJSON_IsObject(f->root)) HC_FAIL(err, HC_ERR_FORMAT, "header is not a JSON object");
    for (size_t i = (size_t)((const unsigned char *)end - h); i < n; i++)
        if (!is_json_space(h[i]))
            HC_FAIL(err, HC_ERR_FORMAT, "trailing bytes after the header JSON (header byte %zu)", i);
    return check_json_chars(h, (size_t)((const unsigned char *)end - h), err);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts names in place; returns the first name that occurs twice, or NULL. */
static const char *first_duplicate(const char **names, size_t n)
{
    qsort(names, n, sizeof *names, cmp_str_ptr);
    for (size_t i = 1; i < n; i++)
        if (strcmp(names[i - 1], names[i]) == 0) return names[i];
    return NULL;
}

static hc_status check_metadata(hc_st_file *f, const cJSON *m, hc_error *err)
{
    if (!cJSON_IsObject(m)) HC_FAIL(err, HC_ERR_FORMAT, "\"__metadata__\" is not an object");
    const char *note = cJSON_GetObjectItemCaseSensitive(m, "data_offsets")
                           ? " (\"__metadata__\" is reserved and cannot name a tensor)" : "";
    size_t n = (size_t)cJSON_GetArraySize(m), i = 0;
    for (const cJSON *c = m->child; c; c = c->next)
        if (!cJSON_IsString(c))
            HC_FAIL(err, HC_ERR_FORMAT, "\"__metadata__\" value of \"%s\" is not a string%s",
                    c->string, note);
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    HC_CHECK_ALLOC(err, keys, "metadata keys");
    for (const cJSON *c = m->child; c; c = c->next) keys[i++] = c->string;
    const char *dup = first_duplicate(keys, n);
    hc_status st = dup ? hc_error_set(err, HC_ERR_FORMAT, "duplicate \"__metadata__\" key \"%s\"", dup)
                       : HC_OK;
    free(keys);
    f->meta = m;
    f->nmeta = n;
    return st;
}

/* NULL if c is an integer in 0..2^53, else why not. */
static const char *json_uint(const cJSON *c, uint64_t *out)
{
    int64_t v = 0;
    const char *why = hc_json_int(c, 0, HC_JSON_MAX_EXACT, 0, &v);
    if (why == NULL) *out = (uint64_t)v;
    return why;
}

/* Exactly one member called key. */
static hc_status get_field(const cJSON *obj, const char *key, const cJSON **out, hc_error *err)
{
    int n = 0;
    for (const cJSON *c = obj->child; c; c = c->next)
        if (strcmp(c->string, key) == 0 && n++ == 0) *out = c;
    if (n == 0) HC_FAIL(err, HC_ERR_FORMAT, "missing \"%s\"", key);
    if (n > 1) HC_FAIL(err, HC_ERR_FORMAT, "duplicate key \"%s\"", key);
    return HC_OK;
}

static hc_status parse_shape(const cJSON *s, hc_st_tensor *t, hc_error *err)
{
    if (!cJSON_IsArray(s)) HC_FAIL(err, HC_ERR_FORMAT, "\"shape\" is not an array");
    int n = cJSON_GetArraySize(s), i = 0;
    if (n > HC_MAX_DIMS)
        HC_FAIL(err, HC_ERR_FORMAT, "shape has %d dimensions; at most %d are supported", n,
                HC_MAX_DIMS);
    for (const cJSON *c = s->child; c; c = c->next, i++) {
        uint64_t v = 0;
        const char *why = json_uint(c, &v);
        if (why) HC_FAIL(err, HC_ERR_FORMAT, "shape[%d] %s", i, why);
        t->shape[i] = (int64_t)v;
    }
    t->ndim = n;
    return HC_OK;
}

static hc_status parse_offsets(const cJSON *o, uint64_t off[2], hc_error *err)
{
    if (!cJSON_IsArray(o) || cJSON_GetArraySize(o) != 2)
        HC_FAIL(err, HC_ERR_FORMAT, "\"data_offsets\" is not an array of two integers");
    const cJSON *c = o->child;
    for (int i = 0; i < 2; i++, c = c->next) {
        const char *why = json_uint(c, &off[i]);
        if (why) HC_FAIL(err, HC_ERR_FORMAT, "data_offsets[%d] %s", i, why);
    }
    if (off[1] < off[0])
        HC_FAIL(err, HC_ERR_FORMAT, "data_offsets end %llu is before begin %llu", (ull)off[1],
                (ull)off[0]);
    return HC_OK;
}

/* Bytes of dtype x shape with checked multiplication. */
static hc_status byte_size(const hc_st_tensor *t, uint64_t *out, hc_error *err)
{
    char sh[256];
    hc_shape_format(t->ndim, t->shape, sh, sizeof sh);
    uint64_t n = 1, bits = (uint64_t)hc_dtype_bits(t->dtype);
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = (uint64_t)t->shape[i];
        if (d != 0 && n > UINT64_MAX / d)
            HC_FAIL(err, HC_ERR_FORMAT, "element count of shape %s overflows", sh);
        n *= d;
    }
    if (n > UINT64_MAX / bits)
        HC_FAIL(err, HC_ERR_FORMAT, "byte size of %s %s overflows", hc_dtype_name(t->dtype), sh);
    if ((n * bits) % 8 != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "%s %s is %llu bits, not a whole number of bytes",
                hc_dtype_name(t->dtype), sh, (ull)(n * bits));
    *out = n * bits / 8;
    return HC_OK;
}

static hc_status check_extent(const hc_st_file *f, hc_st_tensor *t, const uint64_t off[2],
                              hc_error *err)
{
    uint64_t need = 0;
    char sh[256];
    HC_TRY(byte_size(t, &need, err));
    hc_shape_format(t->ndim, t->shape, sh, sizeof sh);
    if (off[1] - off[0] != need)
        HC_FAIL(err, HC_ERR_FORMAT, "data_offsets [%llu, %llu] hold %llu bytes but %s %s needs "
                "%llu", (ull)off[0], (ull)off[1], (ull)(off[1] - off[0]),
                hc_dtype_name(t->dtype), sh, (ull)need);
    if (off[1] > data_len(f))
        HC_FAIL(err, HC_ERR_FORMAT, "data_offsets [%llu, %llu] run past the end of the data "
                "section (%llu bytes)", (ull)off[0], (ull)off[1], (ull)data_len(f));
    t->offset = off[0];
    t->nbytes = (size_t)need;
    t->data = f->map + 8 + f->hlen + off[0];
    return HC_OK;
}

static hc_status parse_entry(const hc_st_file *f, const cJSON *e, hc_st_tensor *t, hc_error *err)
{
    const cJSON *dt = NULL, *shape = NULL, *offs = NULL;
    uint64_t off[2];
    t->name = e->string;
    t->file = f->path;
    if (!cJSON_IsObject(e)) HC_FAIL(err, HC_ERR_FORMAT, "entry is not an object");
    HC_TRY(get_field(e, "dtype", &dt, err));
    if (!cJSON_IsString(dt)) HC_FAIL(err, HC_ERR_FORMAT, "\"dtype\" is not a string");
    if (hc_dtype_parse(dt->valuestring, &t->dtype) != 0)
        HC_FAIL(err, HC_ERR_FORMAT, "unknown dtype \"%s\"", dt->valuestring);
    HC_TRY(get_field(e, "shape", &shape, err));
    HC_TRY(parse_shape(shape, t, err));
    HC_TRY(get_field(e, "data_offsets", &offs, err));
    HC_TRY(parse_offsets(offs, off, err));
    return check_extent(f, t, off, err);
}

static hc_status collect(hc_st_file *f, hc_error *err)
{
    size_t n = 0;
    for (const cJSON *c = f->root->child; c; c = c->next) {
        if (strcmp(c->string, META_KEY) != 0) {
            n++;
        } else {
            if (f->meta) HC_FAIL(err, HC_ERR_FORMAT, "duplicate \"__metadata__\" entry");
            HC_TRY(check_metadata(f, c, err));
        }
    }
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    HC_CHECK_ALLOC(err, f->tensors, "tensor table");
    for (const cJSON *c = f->root->child; c; c = c->next) {
        if (strcmp(c->string, META_KEY) == 0) continue;
        size_t len = strlen(c->string);
        if (len > HC_ST_MAX_NAME)
            HC_FAIL(err, HC_ERR_FORMAT, "tensor '%.200s...': the name is %zu bytes, longer than "
                    "the limit of %d", c->string, len, HC_ST_MAX_NAME);
        HC_TRY_CTX(err, parse_entry(f, c, &f->tensors[f->count], err), "tensor '%s': ", c->string);
        f->count++;
    }
    return HC_OK;
}

static int cmp_offset(const void *a, const void *b)
{
    const hc_st_tensor *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_tensor_name(const void *a, const void *b)
{
    const hc_st_tensor *x = *(const hc_st_tensor *const *)a, *y = *(const hc_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* Sorts tensors into file order and builds the name index; rejects duplicates. */
static hc_status index_names(hc_st_file *f, hc_error *err)
{
    qsort(f->tensors, f->count, sizeof *f->tensors, cmp_offset);
    f->by_name = calloc(f->count ? f->count : 1, sizeof *f->by_name);
    HC_CHECK_ALLOC(err, f->by_name, "tensor name index");
    for (size_t i = 0; i < f->count; i++) f->by_name[i] = &f->tensors[i];
    qsort(f->by_name, f->count, sizeof *f->by_name, cmp_tensor_name);
    for (size_t i = 1; i < f->count; i++)
        if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0)
            HC_FAIL(err, HC_ERR_FORMAT, "tensor '%s': duplicate tensor name in the header",
                    f->by_name[i]->name);
    return HC_OK;
}

/* Tensors must tile the data section exactly: no holes, overlaps or tail. */
static hc_status check_layout(const hc_st_file *f, hc_error *err)
{
    uint64_t pos = 0;
    const hc_st_tensor *prev = NULL;
    for (size_t i = 0; i < f->count; i++) {
        const hc_st_tensor *t = &f->tensors[i];
        if (t->offset > pos && prev == NULL)
            HC_FAIL(err, HC_ERR_FORMAT, "tensor '%s': hole: the first tensor begins at offset "
                    "%llu, not 0", t->name, (ull)t->offset);
        if (t->offset > pos)
            HC_FAIL(err, HC_ERR_FORMAT, "tensor '%s': hole of %llu bytes after tensor '%s' "
                    "(which ends at offset %llu)", t->name, (ull)(t->offset - pos), prev->name,
                    (ull)pos);
        if (t->offset < pos)
            HC_FAIL(err, HC_ERR_FORMAT, "tensor '%s': data at offset %llu overlaps tensor '%s' "
                    "(which ends at offset %llu)", t->name, (ull)t->offset, prev->name, (ull)pos);
        pos = t->offset + t->nbytes;
        prev = t;
    }
    if (pos != data_len(f))
        HC_FAIL(err, HC_ERR_FORMAT, "%llu trailing bytes after the last tensor (tensors end at "
                "offset %llu of a %llu-byte data section)", (ull)(data_len(f) - pos), (ull)pos,
                (ull)data_len(f));
    return HC_OK;
}

/* Every check after the bytes are in f->map / f->size (shared by both openers). */
static hc_status validate(hc_st_file *f, hc_error *err)
{
    HC_TRY(check_prefix(f, err));
    HC_TRY(parse_header(f, err));
    HC_TRY(collect(f, err));
    HC_TRY(index_names(f, err));
    return check_layout(f, err);
}

/* Allocates the handle, gets the bytes (mapping path, or the caller's
 * buffer when data != NULL) and validates them. */
static hc_status open_common(const char *path, const void *data, size_t len, hc_st_file **out,
                             hc_error *err)
{
    *out = NULL;
    hc_st_file *f = calloc(1, sizeof *f);
    HC_CHECK_ALLOC(err, f, "safetensors handle");
    f->guard = -1;
    f->fd = -1;
    f->path = strdup(path);
    if (f->path == NULL) {
        free(f);
        HC_FAIL(err, HC_ERR_NOMEM, "%s: out of memory", path);
    }
    hc_status st;
    if (data != NULL) {
        f->map = data;
        f->size = len;
        st = validate(f, err);
    } else if ((st = map_file(f, err)) == HC_OK) {
        st = validate(f, err);
    } else { /* map_file's messages name the path already */
        hc_st_close(f);
        return st;
    }
    if (st != HC_OK) {
        hc_st_close(f);
        hc_error_prefix(err, "%s: ", path);
        return st;
    }
    *out = f;
    return HC_OK;
}

hc_status hc_st_open(const char *path, hc_st_file **out, hc_error *err)
{
    if (out == NULL || path == NULL) HC_FAIL(err, HC_ERR_ARG, "hc_st_open: NULL argument");
    return open_common(path, NULL, 0, out, err);
}

hc_status hc_st_open_buffer(const void *data, size_t len, const char *name, hc_st_file **out,
                            hc_error *err)
{
    if (out == NULL) HC_FAIL(err, HC_ERR_ARG, "hc_st_open_buffer: NULL argument");
    *out = NULL;
    if (data == NULL && len != 0) HC_FAIL(err, HC_ERR_ARG, "hc_st_open_buffer: NULL data");
    /* a non-NULL pointer for an empty buffer, so that open_common does not map */
    static const unsigned char empty[1];
    return open_common(name ? name : "<buffer>", data ? data : empty, data ? len : 0, out, err);
}

void hc_st_close(hc_st_file *f)
{
    if (f == NULL) return;
    hc_sigbus_unwatch(f->guard);
    if (f->map && f->mapped) munmap((void *)f->map, f->size);
    if (f->fd >= 0) close(f->fd);
    cJSON_Delete(f->root);
    free(f->tensors);
    free(f->by_name);
    free(f->path);
    free(f);
}

hc_status hc_st_check(const hc_st_file *f, hc_error *err)
{
    if (f == NULL || !f->mapped) return HC_OK;
    struct stat sb;
    int same = stat(f->path, &sb) == 0 && sb.st_dev == f->dev && sb.st_ino == f->ino;
    if (same && (uint64_t)sb.st_size < (uint64_t)f->size)
        HC_FAIL(err, HC_ERR_IO, "%s: truncated while being read (%zu -> %lld bytes); what was "
                "read from it is not used", f->path, f->size, (long long)sb.st_size);
    if (hc_sigbus_faults(f->guard))
        HC_FAIL(err, HC_ERR_IO, "%s: a read of the file failed (SIGBUS: truncated, or an I/O "
                "error of its storage); what was read from it is not used", f->path);
    return HC_OK;
}

int hc_st_holds(const hc_st_file *f, const hc_st_tensor *t)
{
    uintptr_t a = (uintptr_t)t, b = f ? (uintptr_t)f->tensors : 0;
    return f && t && f->count && a >= b && a < b + f->count * sizeof *f->tensors;
}

const char *hc_st_path(const hc_st_file *f) { return f->path; }

size_t hc_st_count(const hc_st_file *f) { return f->count; }

const unsigned char *hc_st_bytes(const hc_st_file *f, size_t *size)
{
    *size = f->size;
    return f->map;
}

const hc_st_tensor *hc_st_tensor_at(const hc_st_file *f, size_t i)
{
    return i < f->count ? &f->tensors[i] : NULL;
}

static int cmp_key_tensor(const void *key, const void *elem)
{
    return strcmp((const char *)key, (*(const hc_st_tensor *const *)elem)->name);
}

const hc_st_tensor *hc_st_find(const hc_st_file *f, const char *name)
{
    const hc_st_tensor *const *p =
        bsearch(name, f->by_name, f->count, sizeof *f->by_name, cmp_key_tensor);
    return p ? *p : NULL;
}

size_t hc_st_metadata_count(const hc_st_file *f) { return f->nmeta; }

int hc_st_metadata_at(const hc_st_file *f, size_t i, const char **key, const char **value)
{
    if (i >= f->nmeta) return -1;
    const cJSON *c = f->meta->child;
    while (i-- > 0) c = c->next;
    *key = c->string;
    *value = c->valuestring;
    return 0;
}

const char *hc_st_metadata_get(const hc_st_file *f, const char *key)
{
    if (f->meta == NULL) return NULL;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(f->meta, key);
    return c ? c->valuestring : NULL;
}

void hc_st_tensor_view(const hc_st_tensor *d, hc_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->dtype = d->dtype;
    out->ndim = d->ndim;
    memcpy(out->shape, d->shape, sizeof out->shape);
    out->data = (void *)(uintptr_t)d->data;
    out->nbytes = d->nbytes;
    out->owned = 0;
}

/* madvise(advice) over the pages of d's bytes, if they lie in f's mapping. */
static void advise(const hc_st_file *f, const hc_st_tensor *d, int advice)
{
    if (f == NULL || d == NULL || d->nbytes == 0 || f->map == NULL || !f->mapped) return;
    const unsigned char *p = d->data;
    if (p < f->map || p + d->nbytes > f->map + f->size) return; /* not our mapping */
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return;
    uintptr_t begin = (uintptr_t)p & ~(uintptr_t)(page - 1);
    if (begin < (uintptr_t)f->map) begin = (uintptr_t)f->map; /* the map is page aligned */
    (void)madvise((void *)begin, (uintptr_t)p + d->nbytes - begin, advice);
}

void hc_st_release(const hc_st_file *f, const hc_st_tensor *d)
{
    advise(f, d, MADV_DONTNEED);
}

void hc_st_willneed(const hc_st_file *f, const hc_st_tensor *d)
{
    advise(f, d, MADV_WILLNEED);
}

int hc_st_pread(const hc_st_file *f, const void *at, size_t len, void *dst)
{
    const unsigned char *p = at;
    if (f == NULL || f->fd < 0 || !f->mapped || p < f->map || len > f->size ||
        (size_t)(p - f->map) > f->size - len)
        return -1;
    unsigned char *d = dst;
    off_t off = (off_t)(p - f->map);
    while (len > 0) {
        ssize_t k = pread(f->fd, d, len, off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1; /* an error, or the file shrank: the mapping's checks say */
        d += k;
        off += k;
        len -= (size_t)k;
    }
    return 0;
}
