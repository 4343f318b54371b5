/* hc_safetensors_model.c - a checkpoint directory: indexed shards, a single
 * model.safetensors, or every *.safetensors file (see hc_safetensors.h). */
#include "hc_safetensors.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hc_fs.h"

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

typedef struct {
    size_t file;             /* index into files */
    const hc_st_tensor *t;
} entry;

struct hc_st_model {
    char *dir;
    hc_st_file **files;      /* sorted by file name */
    size_t nfiles;
    entry *list;             /* model order: file order within files order */
    size_t count;
    const hc_st_tensor **by_name;
    hc_st_tensor *views;     /* hc_st_model_add_views: descriptors, their names, bases */
    char **view_names;
    const hc_st_tensor **view_base;
    size_t nviews;
};

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p == NULL) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Present as any kind of file: one that is not a regular file is then
 * refused by name when opened, not silently passed over. */
static int is_present(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Opens dir/names[i] for every i into m->files (names sorted by caller). */
static hc_status open_files(hc_st_model *m, const char *const *names, size_t n, hc_error *err)
{
    m->files = calloc(n ? n : 1, sizeof *m->files);
    HC_CHECK_ALLOC(err, m->files, "shard table");
    for (size_t i = 0; i < n; i++) {
        char *p = path_join(m->dir, names[i]);
        HC_CHECK_ALLOC(err, p, "shard path");
        hc_status st = hc_st_open(p, &m->files[i], err);
        free(p);
        HC_TRY(st);
        m->nfiles++;
    }
    return HC_OK;
}

/* Every tensor of every file, in file order. */
static hc_status list_all(hc_st_model *m, hc_error *err)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < m->nfiles; i++) n += hc_st_count(m->files[i]);
    m->list = calloc(n ? n : 1, sizeof *m->list);
    HC_CHECK_ALLOC(err, m->list, "tensor list");
    for (size_t i = 0; i < m->nfiles; i++)
        for (size_t j = 0; j < hc_st_count(m->files[i]); j++)
            m->list[k++] = (entry){i, hc_st_tensor_at(m->files[i], j)};
    m->count = n;
    return HC_OK;
}

/* ---- index.json --------------------------------------------------------- */

static int shard_name_ok(const char *s)
{
    return s[0] != '\0' && strchr(s, '/') == NULL && strstr(s, "..") == NULL;
}

/* First weight_map key whose shard is `shard` (for error messages). */
static const char *tensor_for_shard(const cJSON *wm, const char *shard)
{
    for (const cJSON *c = wm->child; c; c = c->next)
        if (strcmp(c->valuestring, shard) == 0) return c->string;
    return "?";
}

static hc_status check_weight_map(const char *ipath, const cJSON *root, const cJSON **out,
                                  hc_error *err)
{
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(wm))
        HC_FAIL(err, HC_ERR_FORMAT, "%s: missing \"weight_map\" object", ipath);
    for (const cJSON *c = wm->child; c; c = c->next) {
        if (!cJSON_IsString(c))
            HC_FAIL(err, HC_ERR_FORMAT, "%s: tensor '%s': shard name is not a string", ipath,
                    c->string);
        if (!shard_name_ok(c->valuestring))
            HC_FAIL(err, HC_ERR_FORMAT, "%s: tensor '%s': shard name '%s' is not a plain file "
                    "name in the directory (contains '/' or '..', or is empty)", ipath,
                    c->string, c->valuestring);
    }
    *out = wm;
    return HC_OK;
}

/* Sorted distinct shard names (pointing into wm). */
static hc_status shard_names(const cJSON *wm, const char ***out, size_t *n, hc_error *err)
{
    size_t total = (size_t)cJSON_GetArraySize(wm), k = 0;
    const char **names = calloc(total ? total : 1, sizeof *names);
    HC_CHECK_ALLOC(err, names, "shard names");
    for (const cJSON *c = wm->child; c; c = c->next) names[k++] = c->valuestring;
    qsort(names, total, sizeof *names, cmp_str_ptr);
    k = 0;
    for (size_t i = 0; i < total; i++)
        if (k == 0 || strcmp(names[k - 1], names[i]) != 0) names[k++] = names[i];
    *out = names;
    *n = k;
    return HC_OK;
}

static hc_status open_shards(hc_st_model *m, const char *ipath, const cJSON *wm,
                             const char **names, size_t n, hc_error *err)
{
    const hc_status st = open_files(m, names, n, err);
    if (st == HC_OK) return HC_OK;
    const char *shard = names[m->nfiles];
    hc_error_prefix(err, "%s maps tensor '%s' to shard '%s': ", ipath, tensor_for_shard(wm, shard),
                    shard);
    return st;
}

/* One entry per weight_map key, looked up in the shard the index names. */
static hc_status list_indexed(hc_st_model *m, const char *ipath, const cJSON *wm,
                              const char **names, hc_error *err)
{
    m->list = calloc(m->nfiles + (size_t)cJSON_GetArraySize(wm) + 1, sizeof *m->list);
    HC_CHECK_ALLOC(err, m->list, "tensor list");
    for (const cJSON *c = wm->child; c; c = c->next) {
        const char *const *s = bsearch(&c->valuestring, names, m->nfiles, sizeof *names,
                                       cmp_str_ptr);
        size_t fi = (size_t)(s - names);
        const hc_st_tensor *t = hc_st_find(m->files[fi], c->string);
        if (t == NULL)
            HC_FAIL(err, HC_ERR_FORMAT, "%s maps tensor '%s' to shard '%s', which does not "
                    "contain it", ipath, c->string, c->valuestring);
        m->list[m->count++] = (entry){fi, t};
    }
    return HC_OK;
}

static int cmp_entry_order(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->file != y->file) return x->file < y->file ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1; /* same file's table: file order */
    return 0;
}

static hc_status load_index(hc_st_model *m, const char *ipath, const cJSON *root, hc_error *err)
{
    const cJSON *wm = NULL;
    const char **names = NULL;
    size_t n = 0;
    if (!cJSON_IsObject(root)) HC_FAIL(err, HC_ERR_FORMAT, "%s: not a JSON object", ipath);
    HC_TRY(check_weight_map(ipath, root, &wm, err));
    HC_TRY(shard_names(wm, &names, &n, err));
    hc_status st = open_shards(m, ipath, wm, names, n, err);
    if (st == HC_OK) st = list_indexed(m, ipath, wm, names, err);
    free(names);
    if (st == HC_OK) qsort(m->list, m->count, sizeof *m->list, cmp_entry_order);
    return st;
}

static hc_status open_indexed(hc_st_model *m, const char *ipath, hc_error *err)
{
    char *text = NULL;
    size_t len = 0;
    HC_TRY(hc_fs_read_file(ipath, HC_FS_MAX_INDEX, 0, &text, &len, err));
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (root == NULL) HC_FAIL(err, HC_ERR_FORMAT, "%s: not valid JSON", ipath);
    hc_status st = load_index(m, ipath, root, err);
    cJSON_Delete(root);
    return st;
}

/* ---- no index ----------------------------------------------------------- */

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a > b && strcmp(s + a - b, suffix) == 0;
}

static hc_status scan_dir(const char *dir, char ***out, size_t *n, hc_error *err)
{
    DIR *d = opendir(dir);
    if (d == NULL) HC_FAIL(err, HC_ERR_IO, "cannot open directory: %s", strerror(errno));
    char **names = NULL;
    size_t k = 0, cap = 0;
    hc_status st = HC_OK;
    for (struct dirent *e; st == HC_OK && (e = readdir(d)) != NULL;) {
        if (!has_suffix(e->d_name, ".safetensors")) continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (p == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory listing files");
            else names = p;
        }
        if (st == HC_OK && (names[k] = strdup(e->d_name)) == NULL)
            st = hc_error_set(err, HC_ERR_NOMEM, "out of memory listing files");
        else if (st == HC_OK) k++;
    }
    closedir(d);
    *out = names;
    *n = k;
    if (st == HC_OK && k == 0)
        st = hc_error_set(err, HC_ERR_IO, "no " INDEX_NAME ", " SINGLE_NAME " or *.safetensors "
                          "file found");
    if (st == HC_OK) qsort(names, k, sizeof *names, cmp_str_ptr);
    return st;
}

static hc_status open_unindexed(hc_st_model *m, hc_error *err)
{
    char *single = path_join(m->dir, SINGLE_NAME);
    HC_CHECK_ALLOC(err, single, "path");
    int have_single = is_present(single);
    free(single);
    if (have_single) {
        const char *one = SINGLE_NAME;
        HC_TRY(open_files(m, &one, 1, err));
        return list_all(m, err);
    }
    char **names = NULL;
    size_t n = 0;
    hc_status st = scan_dir(m->dir, &names, &n, err);
    if (st == HC_OK) st = open_files(m, (const char *const *)names, n, err);
    if (st == HC_OK) st = list_all(m, err);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

/* ---- common ------------------------------------------------------------- */

static int cmp_tensor_name(const void *a, const void *b)
{
    const hc_st_tensor *x = *(const hc_st_tensor *const *)a, *y = *(const hc_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

static hc_status index_names(hc_st_model *m, hc_error *err)
{
    m->by_name = calloc(m->count ? m->count : 1, sizeof *m->by_name);
    HC_CHECK_ALLOC(err, m->by_name, "name index");
    for (size_t i = 0; i < m->count; i++) m->by_name[i] = m->list[i].t;
    qsort(m->by_name, m->count, sizeof *m->by_name, cmp_tensor_name);
    for (size_t i = 1; i < m->count; i++) {
        const hc_st_tensor *a = m->by_name[i - 1], *b = m->by_name[i];
        if (a == b)
            HC_FAIL(err, HC_ERR_FORMAT, INDEX_NAME " lists tensor '%s' twice (both times in %s)",
                    a->name, a->file);
        if (strcmp(a->name, b->name) == 0)
            HC_FAIL(err, HC_ERR_FORMAT, "tensor '%s' appears in both %s and %s", a->name,
                    a->file, b->file);
    }
    return HC_OK;
}

/* Indexed: a shard holding a copy of a tensor the index maps to another shard
 * is refused, naming both; which copy was meant cannot be known. */
static hc_status check_copies(const hc_st_model *m, hc_error *err)
{
    for (size_t i = 0; i < m->nfiles; i++)
        for (size_t j = 0; j < hc_st_count(m->files[i]); j++) {
            const hc_st_tensor *t = hc_st_tensor_at(m->files[i], j);
            const hc_st_tensor *mapped = hc_st_model_find(m, t->name);
            if (mapped && mapped != t)
                HC_FAIL(err, HC_ERR_FORMAT, "tensor '%s' appears in both %s and %s (" INDEX_NAME
                        " maps it to %s); refused: the copies may differ", t->name, mapped->file,
                        t->file, mapped->file);
        }
    return HC_OK;
}

static hc_status open_model(hc_st_model *m, hc_error *err)
{
    char *ipath = path_join(m->dir, INDEX_NAME);
    HC_CHECK_ALLOC(err, ipath, "path");
    int indexed = is_present(ipath);
    hc_status st = indexed ? open_indexed(m, ipath, err) : open_unindexed(m, err);
    free(ipath);
    HC_TRY(st);
    HC_TRY(index_names(m, err));
    return indexed ? check_copies(m, err) : HC_OK;
}

hc_status hc_st_model_open(const char *dir, hc_st_model **out, hc_error *err)
{
    *out = NULL;
    hc_st_model *m = calloc(1, sizeof *m);
    HC_CHECK_ALLOC(err, m, "model handle");
    m->dir = strdup(dir);
    hc_status st = m->dir ? open_model(m, err) : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    if (st != HC_OK) {
        hc_st_model_close(m);
        hc_error_prefix(err, "model directory %s: ", dir);
        return st;
    }
    *out = m;
    return HC_OK;
}

void hc_st_model_close(hc_st_model *m)
{
    if (m == NULL) return;
    for (size_t i = 0; i < m->nfiles; i++) hc_st_close(m->files[i]);
    free(m->files);
    free(m->list);
    free(m->by_name);
    for (size_t i = 0; i < m->nviews; i++) free(m->view_names[i]);
    free(m->views);
    free(m->view_names);
    free(m->view_base);
    free(m->dir);
    free(m);
}

static size_t file_of(const hc_st_model *m, const hc_st_tensor *t)
{
    for (size_t i = 0; i < m->nfiles; i++)
        if (hc_st_holds(m->files[i], t)) return i;
    return m->nfiles;
}

static int is_hidden(const hc_st_tensor *t, const hc_st_tensor *const *hidden, size_t nh)
{
    for (size_t i = 0; i < nh; i++)
        if (hidden[i] == t) return 1;
    return 0;
}

/* Copies the view descriptors and their names into m (nothing listed yet). */
static hc_status take_views(hc_st_model *m, const hc_st_tensor *views,
                            const hc_st_tensor *const *bases, size_t n, hc_error *err)
{
    m->views = calloc(n + 1, sizeof *m->views);
    m->view_names = calloc(n + 1, sizeof *m->view_names);
    m->view_base = calloc(n + 1, sizeof *m->view_base);
    HC_CHECK_ALLOC(err, m->views && m->view_names && m->view_base ? m : NULL, "tensor views");
    for (size_t i = 0; i < n; i++, m->nviews++) {
        const hc_st_tensor *b = bases[i];
        const char *lo = b->data, *p = views[i].data;
        if (file_of(m, b) == m->nfiles || (views[i].nbytes && (p < lo || p + views[i].nbytes >
                                                               lo + b->nbytes)))
            HC_FAIL(err, HC_ERR_ARG, "view '%s' lies outside its base tensor", views[i].name);
        m->view_names[i] = strdup(views[i].name);
        HC_CHECK_ALLOC(err, m->view_names[i], "view name");
        m->views[i] = views[i];
        m->views[i].name = m->view_names[i];
        m->views[i].file = b->file;
        m->view_base[i] = b;
    }
    return HC_OK;
}

hc_status hc_st_model_add_views(hc_st_model *m, const hc_st_tensor *views,
                                const hc_st_tensor *const *bases, size_t n,
                                const hc_st_tensor *const *hidden, size_t nh, hc_error *err)
{
    if (m->views) HC_FAIL(err, HC_ERR_ARG, "model views are already set");
    HC_TRY(take_views(m, views, bases, n, err));
    entry *list = calloc(m->count + n + 1, sizeof *list);
    HC_CHECK_ALLOC(err, list, "tensor list");
    size_t k = 0;
    for (size_t i = 0; i < m->count; i++)
        if (!is_hidden(m->list[i].t, hidden, nh)) list[k++] = m->list[i];
    for (size_t i = 0; i < n; i++) list[k++] = (entry){file_of(m, bases[i]), &m->views[i]};
    free(m->list);
    free(m->by_name);
    m->by_name = NULL;
    m->list = list;
    m->count = k;
    return index_names(m, err);
}

size_t hc_st_model_count(const hc_st_model *m) { return m->count; }

const hc_st_tensor *hc_st_model_tensor_at(const hc_st_model *m, size_t i)
{
    return i < m->count ? m->list[i].t : NULL;
}

static int cmp_key_tensor(const void *key, const void *elem)
{
    return strcmp((const char *)key, (*(const hc_st_tensor *const *)elem)->name);
}

const hc_st_tensor *hc_st_model_find(const hc_st_model *m, const char *name)
{
    const hc_st_tensor *const *p =
        bsearch(name, m->by_name, m->count, sizeof *m->by_name, cmp_key_tensor);
    return p ? *p : NULL;
}

size_t hc_st_model_file_count(const hc_st_model *m) { return m->nfiles; }

const hc_st_file *hc_st_model_file_at(const hc_st_model *m, size_t i)
{
    return i < m->nfiles ? m->files[i] : NULL;
}

hc_status hc_st_model_check(const hc_st_model *m, hc_error *err)
{
    for (size_t i = 0; m && i < m->nfiles; i++) HC_TRY(hc_st_check(m->files[i], err));
    return HC_OK;
}

hc_status hc_st_model_check_tensor(const hc_st_model *m, const hc_st_tensor *t, hc_error *err)
{
    for (size_t i = 0; m && i < m->nviews; i++) /* a view: its base's file */
        if (t == &m->views[i]) t = m->view_base[i];
    for (size_t i = 0; m && t && i < m->nfiles; i++)
        if (hc_st_holds(m->files[i], t)) return hc_st_check(m->files[i], err);
    return HC_OK;
}

void hc_st_model_release(const hc_st_model *m, const hc_st_tensor *d)
{
    for (size_t i = 0; m && d && i < hc_st_model_file_count(m); i++)
        hc_st_release(hc_st_model_file_at(m, i), d);
}

void hc_st_model_willneed(const hc_st_model *m, const hc_st_tensor *d)
{
    for (size_t i = 0; m && d && i < hc_st_model_file_count(m); i++)
        hc_st_willneed(hc_st_model_file_at(m, i), d);
}

int hc_st_model_pread(const hc_st_model *m, const void *at, size_t len, void *dst)
{
    for (size_t i = 0; m && i < hc_st_model_file_count(m); i++)
        if (hc_st_pread(hc_st_model_file_at(m, i), at, len, dst) == 0) return 0;
    return -1;
}
