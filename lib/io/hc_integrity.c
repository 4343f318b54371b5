/* hc_integrity.c - CRC-32 of output files and tensors, the manifest and
 * `check` (see hc_integrity.h, docs/robustness.md). */
#include "hc_integrity.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "hc_crc32.h"
#include "hc_fs.h"
#include "hc_json.h"
#include "hc_safetensors.h"

static uint32_t crc_update(uint32_t crc, const void *data, uint64_t len)
{
    return hc_crc32(crc, data, (size_t)len);
}

/* CRC of [begin, end) of fd; -1 when the file is shorter or a read fails. */
static int crc_range(int fd, uint64_t begin, uint64_t end, uint32_t *out)
{
    static const size_t chunk = 1 << 20;
    unsigned char *buf = malloc(chunk);
    if (buf == NULL) return -1;
    uint32_t crc = (uint32_t)crc32(0, NULL, 0);
    int rc = 0;
    for (uint64_t pos = begin; pos < end;) {
        size_t want = end - pos < chunk ? (size_t)(end - pos) : chunk;
        ssize_t got = pread(fd, buf, want, (off_t)pos);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { rc = -1; break; }
        crc = crc_update(crc, buf, (uint64_t)got);
        pos += (uint64_t)got;
    }
    free(buf);
    *out = crc;
    return rc;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

void hc_file_crc_free(hc_file_crc *f)
{
    if (f == NULL) return;
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->tensors);
    free(f->name);
    memset(f, 0, sizeof *f);
}

/* Whole-file CRC by reading. */
static hc_status crc_plain(const char *path, hc_file_crc *out, hc_error *err)
{
    int fd;
    struct stat sb;
    HC_TRY(hc_fs_open_regular(path, 0, &fd, &sb, err));
    int bad = crc_range(fd, 0, (uint64_t)sb.st_size, &out->crc) != 0;
    int saved = errno;
    close(fd);
    if (bad) HC_FAIL(err, HC_ERR_IO, "%s: read failed: %s", path, strerror(saved));
    out->size = (uint64_t)sb.st_size;
    return HC_OK;
}

/* Per-tensor CRCs from the mapping, combined with the header's into the file CRC. */
static hc_status crc_safetensors(const char *path, hc_file_crc *out, hc_error *err)
{
    hc_st_file *f = NULL;
    HC_TRY(hc_st_open(path, &f, err));
    size_t n = hc_st_count(f);
    uint64_t data_bytes = 0;
    out->tensors = calloc(n ? n : 1, sizeof *out->tensors);
    hc_status st = out->tensors ? HC_OK : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    int fd = -1;
    struct stat sb;
    if (st == HC_OK) st = hc_fs_open_regular(path, 0, &fd, &sb, err);
    for (size_t i = 0; st == HC_OK && i < n; i++) data_bytes += hc_st_tensor_at(f, i)->nbytes;
    if (st == HC_OK) {
        out->size = (uint64_t)sb.st_size;
        out->header_end = out->size - data_bytes;
        if (data_bytes > out->size || crc_range(fd, 0, out->header_end, &out->crc) != 0)
            st = hc_error_set(err, HC_ERR_IO, "%s: read failed", path);
        out->header_crc = out->crc;
    }
    for (size_t i = 0; st == HC_OK && i < n; i++) {
        const hc_st_tensor *t = hc_st_tensor_at(f, i);
        hc_tensor_crc *tc = &out->tensors[out->n_tensors];
        tc->name = strdup(t->name);
        if (tc->name == NULL) {
            st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
            break;
        }
        out->n_tensors++;
        tc->begin = out->header_end + t->offset;
        tc->end = tc->begin + t->nbytes;
        tc->crc = crc_update((uint32_t)crc32(0, NULL, 0), t->data, t->nbytes);
        out->crc = (uint32_t)crc32_combine(out->crc, tc->crc, (z_off_t)t->nbytes);
        hc_st_release(f, t);
    }
    if (st == HC_OK) st = hc_st_check(f, err); /* no CRC of zeros read past a truncation */
    if (fd >= 0) close(fd);
    hc_st_close(f);
    return st;
}

hc_status hc_file_crc_compute(const char *dir, const char *name, hc_file_crc *out, hc_error *err)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    HC_TRY(hc_path_join(path, sizeof path, dir, name, err));
    out->name = strdup(name);
    HC_CHECK_ALLOC(err, out->name, "file name");
    out->is_safetensors = has_suffix(name, ".safetensors");
    hc_status st = out->is_safetensors ? crc_safetensors(path, out, err) : crc_plain(path, out, err);
    if (st != HC_OK) hc_file_crc_free(out);
    return st;
}

/* ---- manifest ----------------------------------------------------------- */

static void add_crc(cJSON *o, const char *key, uint32_t crc)
{
    char hex[16];
    snprintf(hex, sizeof hex, "%08x", crc);
    cJSON_AddStringToObject(o, key, hex);
}

static cJSON *file_json(const hc_file_crc *f)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    cJSON_AddStringToObject(o, "name", f->name);
    cJSON_AddNumberToObject(o, "size", (double)f->size);
    add_crc(o, "crc32", f->crc);
    if (!f->is_safetensors) return o;
    cJSON_AddNumberToObject(o, "header_end", (double)f->header_end);
    add_crc(o, "header_crc32", f->header_crc);
    cJSON *arr = cJSON_AddArrayToObject(o, "tensors");
    for (size_t i = 0; arr && i < f->n_tensors; i++) {
        const hc_tensor_crc *t = &f->tensors[i];
        cJSON *e = cJSON_CreateObject();
        if (e == NULL) break;
        cJSON_AddStringToObject(e, "name", t->name);
        cJSON_AddNumberToObject(e, "begin", (double)t->begin);
        cJSON_AddNumberToObject(e, "end", (double)t->end);
        add_crc(e, "crc32", t->crc);
        cJSON_AddItemToArray(arr, e);
    }
    return o;
}

static cJSON *input_json(const hc_input_file *in)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL) return NULL;
    char mt[48], ct[48];
    snprintf(mt, sizeof mt, "%lld.%09lld", (long long)(in->mtime_ns / 1000000000),
             (long long)(in->mtime_ns % 1000000000));
    snprintf(ct, sizeof ct, "%lld.%09lld", (long long)(in->ctime_ns / 1000000000),
             (long long)(in->ctime_ns % 1000000000));
    cJSON_AddStringToObject(o, "name", in->name);
    cJSON_AddNumberToObject(o, "size", (double)in->size);
    cJSON_AddStringToObject(o, "mtime", mt);
    cJSON_AddStringToObject(o, "ctime", ct);
    if (in->has_crc) add_crc(o, "crc32", in->crc);
    else cJSON_AddNullToObject(o, "crc32");
    return o;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the regular files of dir, except the manifest and dot files. */
static hc_status list_files(const char *dir, char ***out, size_t *n_out, hc_error *err)
{
    DIR *d = opendir(dir);
    if (d == NULL) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    hc_status st = HC_OK;
    struct dirent *e;
    while (st == HC_OK && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, HC_MANIFEST_NAME) == 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (p == NULL) { st = hc_error_set(err, HC_ERR_NOMEM, "out of memory"); break; }
            names = p;
        }
        names[n] = strdup(e->d_name);
        if (names[n] == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
        else n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_name);
    *out = names;
    *n_out = n;
    return st;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

hc_status hc_manifest_write(const char *dir, const hc_file_crc *infos, size_t n_infos,
                            const hc_input_file *inputs, size_t n_inputs, hc_error *err)
{
    char **names = NULL;
    size_t n = 0;
    hc_status st = list_files(dir, &names, &n, err);
    cJSON *root = cJSON_CreateObject();
    cJSON *files = root ? cJSON_CreateArray() : NULL, *ins = root ? cJSON_CreateArray() : NULL;
    if (st == HC_OK && (!root || !files || !ins))
        st = hc_error_set(err, HC_ERR_NOMEM, "out of memory building the manifest");
    if (st == HC_OK) {
        cJSON_AddStringToObject(root, "format", "humming-manifest");
        cJSON_AddNumberToObject(root, "version", 1);
        cJSON_AddItemToObject(root, "files", files);
        cJSON_AddItemToObject(root, "inputs", ins);
        files = ins = NULL;
    }
    for (size_t i = 0; st == HC_OK && i < n; i++) {
        const hc_file_crc *known = NULL;
        for (size_t j = 0; j < n_infos && !known; j++)
            if (infos[j].name && strcmp(infos[j].name, names[i]) == 0) known = &infos[j];
        hc_file_crc fresh;
        memset(&fresh, 0, sizeof fresh);
        if (known == NULL) st = hc_file_crc_compute(dir, names[i], &fresh, err);
        cJSON *o = st == HC_OK ? file_json(known ? known : &fresh) : NULL;
        if (st == HC_OK && o == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
        if (o) cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "files"), o);
        hc_file_crc_free(&fresh);
    }
    for (size_t i = 0; st == HC_OK && i < n_inputs; i++) {
        cJSON *o = input_json(&inputs[i]);
        if (o == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
        else cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "inputs"), o);
    }
    char *text = st == HC_OK ? cJSON_Print(root) : NULL;
    if (st == HC_OK && text == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    char path[4096];
    if (st == HC_OK) st = hc_path_join(path, sizeof path, dir, HC_MANIFEST_NAME, err);
    if (st == HC_OK) st = hc_fs_write_file(path, text, strlen(text), err);
    free(text);
    cJSON_Delete(root);
    cJSON_Delete(files);
    cJSON_Delete(ins);
    free_names(names, n);
    return st;
}

/* Sets (or appends) the entry of files named f->name in the array. */
static hc_status set_entry(cJSON *files, const hc_file_crc *f, hc_error *err)
{
    cJSON *o = file_json(f);
    HC_CHECK_ALLOC(err, o, "manifest entry");
    int i = 0;
    for (cJSON *e = files->child; e; e = e->next, i++) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, f->name) == 0) {
            if (cJSON_ReplaceItemInArray(files, i, o)) return HC_OK;
            cJSON_Delete(o);
            HC_FAIL(err, HC_ERR_NOMEM, "out of memory updating the manifest");
        }
    }
    cJSON_AddItemToArray(files, o);
    return HC_OK;
}

/* The entry of dir/src (a staged file) under the name final. */
static hc_status staged_entry(const char *dir, const char *src, const char *final, cJSON *files,
                              hc_error *err)
{
    hc_file_crc f;
    HC_TRY(hc_file_crc_compute(dir, src, &f, err));
    free(f.name);
    f.name = strdup(final);
    hc_status st = f.name ? set_entry(files, &f, err)
                          : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    hc_file_crc_free(&f);
    return st;
}

hc_status hc_manifest_stage(const char *dir, const char *const *finals, const char *const *srcs,
                            size_t n, char *staged, size_t staged_len, hc_error *err)
{
    char path[4096], *text = NULL;
    staged[0] = '\0';
    HC_TRY(hc_path_join(path, sizeof path, dir, HC_MANIFEST_NAME, err));
    if (!hc_path_exists(path)) return HC_OK;
    HC_TRY(hc_fs_read_file(path, HC_FS_MAX_INDEX, 0, &text, NULL, err));
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    if (!cJSON_IsArray(files)) {
        cJSON_Delete(root);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: not a manifest (no \"files\" array)", path);
    }
    hc_status st = HC_OK;
    for (size_t i = 0; st == HC_OK && i < n; i++)
        st = staged_entry(dir, srcs[i], finals[i], files, err);
    char *out = st == HC_OK ? cJSON_Print(root) : NULL;
    if (st == HC_OK && out == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    if (st == HC_OK && snprintf(staged, staged_len, "%s/.%s.tmp-%ld", dir, HC_MANIFEST_NAME,
                                (long)getpid()) >= (int)staged_len)
        st = hc_error_set(err, HC_ERR_ARG, "path too long: %s", dir);
    if (st == HC_OK) {
        unlink(staged);
        st = hc_fs_write_file(staged, out, strlen(out), err);
    }
    if (st != HC_OK) staged[0] = '\0';
    free(out);
    cJSON_Delete(root);
    return st;
}

/* ---- check ---------------------------------------------------------------- */

static void problem(hc_check_fn fn, void *ctx, int *count, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void problem(hc_check_fn fn, void *ctx, int *count, const char *fmt, ...)
{
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    hc_vsnprintf_elide(line, sizeof line, fmt, ap);
    va_end(ap);
    (*count)++;
    if (fn) fn(ctx, line);
}

static int json_u64(const cJSON *o, const char *key, uint64_t *out)
{
    int64_t x = 0;
    if (hc_json_int(cJSON_GetObjectItemCaseSensitive(o, key), 0, HC_JSON_MAX_EXACT, 0, &x))
        return -1;
    *out = (uint64_t)x;
    return 0;
}

static int json_crc(const cJSON *o, const char *key, uint32_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char *end = NULL;
    if (!cJSON_IsString(v)) return -1;
    unsigned long x = strtoul(v->valuestring, &end, 16);
    if (end == v->valuestring || *end) return -1;
    *out = (uint32_t)x;
    return 0;
}

/* A shard whose CRC differs: which ranges (header, tensors) differ. */
static void locate_tensors(const char *path, const char *name, const cJSON *entry,
                           hc_check_fn fn, void *ctx, int *count)
{
    int fd;
    if (hc_fs_open_regular(path, 0, &fd, NULL, NULL) != HC_OK) return;
    uint64_t header_end = 0;
    uint32_t want_h, got_h;
    int found = 0;
    if (json_u64(entry, "header_end", &header_end) == 0 &&
        json_crc(entry, "header_crc32", &want_h) == 0) {
        if (crc_range(fd, 0, header_end, &got_h) != 0) {
            problem(fn, ctx, count, "%s: safetensors header (bytes [0, %llu)) missing (file "
                    "truncated)", name, (unsigned long long)header_end);
            found++;
        } else if (got_h != want_h) {
            problem(fn, ctx, count, "%s: safetensors header (bytes [0, %llu)) differs", name,
                    (unsigned long long)header_end);
            found++;
        }
    }
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(entry, "tensors");
    const cJSON *t;
    cJSON_ArrayForEach(t, tensors) {
        const cJSON *tn = cJSON_GetObjectItemCaseSensitive(t, "name");
        uint64_t b, e;
        uint32_t want, got;
        if (!cJSON_IsString(tn) || json_u64(t, "begin", &b) || json_u64(t, "end", &e) ||
            json_crc(t, "crc32", &want))
            continue;
        if (crc_range(fd, b, e, &got) != 0) {
            problem(fn, ctx, count, "%s: tensor %s: bytes [%llu, %llu) missing (file truncated)",
                    name, tn->valuestring, (unsigned long long)b, (unsigned long long)e);
            found++;
        } else if (got != want) {
            problem(fn, ctx, count, "%s: tensor %s: CRC-32 mismatch (expected %08x, got %08x) "
                    "in bytes [%llu, %llu)", name, tn->valuestring, want, got,
                    (unsigned long long)b, (unsigned long long)e);
            found++;
        }
    }
    close(fd);
    if (found == 0)
        problem(fn, ctx, count, "%s: the header and every tensor's bytes match: the "
                "difference is after the last tensor", name);
}

static void check_file(const char *dir, const cJSON *entry, hc_check_fn fn, void *ctx, int *count)
{
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(entry, "name");
    uint64_t size;
    uint32_t want, got = 0;
    if (!cJSON_IsString(nm) || json_u64(entry, "size", &size) || json_crc(entry, "crc32", &want)) {
        problem(fn, ctx, count, "%s: malformed manifest entry", HC_MANIFEST_NAME);
        return;
    }
    const char *name = nm->valuestring;
    char path[4096];
    struct stat sb;
    if (strchr(name, '/') || hc_path_join(path, sizeof path, dir, name, NULL) != HC_OK ||
        stat(path, &sb) != 0) {
        problem(fn, ctx, count, "%s: missing", name);
        return;
    }
    hc_error e;
    int fd;
    if (hc_fs_open_regular(path, 0, &fd, &sb, &e) != HC_OK) {
        problem(fn, ctx, count, "%s", e.msg); /* a FIFO or device: never waited on */
        return;
    }
    int bad = crc_range(fd, 0, (uint64_t)sb.st_size, &got) != 0;
    int saved = errno;
    close(fd);
    if (bad) {
        problem(fn, ctx, count, "%s: cannot read: %s", name, strerror(saved));
        return;
    }
    if ((uint64_t)sb.st_size != size)
        problem(fn, ctx, count, "%s: size %llu, expected %llu", name,
                (unsigned long long)sb.st_size, (unsigned long long)size);
    else if (got != want)
        problem(fn, ctx, count, "%s: CRC-32 mismatch (expected %08x, got %08x)", name, want, got);
    else
        return;
    if (cJSON_GetObjectItemCaseSensitive(entry, "tensors"))
        locate_tensors(path, name, entry, fn, ctx, count);
}

/* ---- what config.json and the index promise -------------------------- */

static const cJSON *entry_named(const cJSON *files, const char *name)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, files) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0) return e;
    }
    return NULL;
}

/* dir/name parsed, or NULL (unreadable or corrupt: its own entry says so). */
static cJSON *read_json(const char *dir, const char *name)
{
    char path[4096], *text = NULL;
    if (hc_path_join(path, sizeof path, dir, name, NULL) != HC_OK ||
        hc_fs_read_file(path, HC_FS_MAX_INDEX, 0, &text, NULL, NULL) != HC_OK)
        return NULL;
    cJSON *root = cJSON_Parse(text);
    free(text);
    return root;
}

/* Every shard the index names is in the manifest. */
static void check_index_shards(const char *dir, const cJSON *files, hc_check_fn fn, void *ctx,
                               int *count)
{
    cJSON *root = read_json(dir, "model.safetensors.index.json");
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map"), *e, *f;
    cJSON_ArrayForEach(e, wm) {
        if (!cJSON_IsString(e) || entry_named(files, e->valuestring)) continue;
        int first = 1; /* one line per shard, at its first tensor */
        cJSON_ArrayForEach(f, wm) {
            if (f == e) break;
            if (cJSON_IsString(f) && strcmp(f->valuestring, e->valuestring) == 0) first = 0;
        }
        if (first)
            problem(fn, ctx, count, "%s: named by model.safetensors.index.json (tensor %s) but "
                    "not in the manifest", e->valuestring, e->string);
    }
    cJSON_Delete(root);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct {
    const char **v;
    size_t n, cap;
} name_list;

/* Appends the names of one entry's "tensors"; -1 when out of memory. */
static int add_tensor_names(name_list *l, const cJSON *entry)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(entry, "tensors"), *t;
    cJSON_ArrayForEach(t, list) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(t, "name");
        if (!cJSON_IsString(nm)) continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 256;
            const char **g = realloc(l->v, cap * sizeof *g);
            if (g == NULL) return -1;
            l->v = g;
            l->cap = cap;
        }
        l->v[l->n++] = nm->valuestring;
    }
    return 0;
}

static int name_listed(const name_list *l, const char *name)
{
    return l->n && bsearch(&name, l->v, l->n, sizeof *l->v, cmp_cstr) != NULL;
}

/* The first weight tensor of layer `key` that no listed shard holds, in
 * `miss`; 0 when all are there. A MoE stack "X.experts.Y" of E experts is
 * either one stacked tensor (tiles) or E tensors "X.experts.<e>.Y.weight"
 * (canonical, the names vLLM's expert mapping loads). */
static int layer_missing(const name_list *l, const char *key, const cJSON *rec, char *miss,
                         size_t len)
{
    snprintf(miss, len, "%s.weight", key);
    if (name_listed(l, miss)) return 0;
    const cJSON *ne = cJSON_GetObjectItemCaseSensitive(rec, "num_experts");
    const char *p = strstr(key, ".experts.");
    long e_n = cJSON_IsNumber(ne) ? (long)ne->valuedouble : 0;
    if (p == NULL || e_n <= 0 || e_n > 1L << 20) return 1;
    char w[HC_ST_MAX_NAME + 32];
    for (long e = 0; e < e_n; e++) {
        snprintf(w, sizeof w, "%.*s.experts.%ld.%s.weight", (int)(p - key), key, e, p + 9);
        if (!name_listed(l, w)) {
            snprintf(miss, len, "%s", w);
            return 1;
        }
    }
    return 0;
}

/* Every layer config.json records has its weight tensor(s) in a listed shard. */
static void check_layers(const char *dir, const cJSON *files, hc_check_fn fn, void *ctx,
                         int *count)
{
    cJSON *root = read_json(dir, "config.json");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(q, "layers"), *e;
    name_list l = {NULL, 0, 0};
    int oom = 0;
    cJSON_ArrayForEach(e, files) oom = oom || add_tensor_names(&l, e) != 0;
    if (oom) problem(fn, ctx, count, "out of memory listing the manifest's tensors");
    if (l.n) qsort(l.v, l.n, sizeof *l.v, cmp_cstr);
    const cJSON *walk = oom || !cJSON_IsObject(layers) ? NULL : layers;
    cJSON_ArrayForEach(e, walk) {
        char w[HC_ST_MAX_NAME + 32];
        if (layer_missing(&l, e->string, e, w, sizeof w))
            problem(fn, ctx, count, "config.json: layer %s: its tensor %s is in no shard the "
                    "manifest lists", e->string, w);
    }
    free(l.v);
    cJSON_Delete(root);
}

/* A shard and its manifest entry both gone are noticed through what
 * config.json and the index (themselves checked above) promise. */
static void check_promises(const char *dir, const cJSON *files, hc_check_fn fn, void *ctx,
                           int *count)
{
    if (entry_named(files, "config.json") == NULL)
        problem(fn, ctx, count, "config.json: not in the manifest (every output has one)");
    if (entry_named(files, "model.safetensors.index.json"))
        check_index_shards(dir, files, fn, ctx, count);
    else if (entry_named(files, "model.safetensors") == NULL)
        problem(fn, ctx, count, "model.safetensors: not in the manifest, and no "
                "model.safetensors.index.json there names other shards");
    check_layers(dir, files, fn, ctx, count);
}

hc_status hc_check_dir(const char *dir, hc_check_fn fn, void *ctx, int *problems, hc_error *err)
{
    *problems = 0;
    if (!hc_path_is_dir(dir)) HC_FAIL(err, HC_ERR_IO, "%s: not a directory", dir);
    char path[4096], *text = NULL;
    HC_TRY(hc_path_join(path, sizeof path, dir, HC_MANIFEST_NAME, err));
    if (!hc_path_exists(path))
        HC_FAIL(err, HC_ERR_IO, "%s: missing (not a complete humming-convert output)", path);
    HC_TRY(hc_fs_read_file(path, HC_FS_MAX_INDEX, 0, &text, NULL, err));
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    if (!cJSON_IsArray(files) || cJSON_GetArraySize(files) == 0) {
        cJSON_Delete(root);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: not a manifest (%s)", path,
                files ? "it lists no files" : "no \"files\" array");
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, files) check_file(dir, e, fn, ctx, problems);
    check_promises(dir, files, fn, ctx, problems);
    char **names = NULL;
    size_t n = 0;
    hc_status st = list_files(dir, &names, &n, err);
    for (size_t i = 0; st == HC_OK && i < n; i++) {
        int listed = 0;
        cJSON_ArrayForEach(e, files) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
            if (cJSON_IsString(nm) && strcmp(nm->valuestring, names[i]) == 0) listed = 1;
        }
        if (!listed) problem(fn, ctx, problems, "%s: extra file (not in the manifest)", names[i]);
    }
    free_names(names, n);
    cJSON_Delete(root);
    return st;
}
