/* hc_safetensors_write.c - streaming safetensors writer (see hc_safetensors.h).
 *
 * The header is built by hand (not with cJSON) so that integers are printed
 * exactly and the bytes are deterministic: {"__metadata__":{...}, then the
 * tensors in declaration order with contiguous offsets}, right-padded with
 * spaces so that 8 + N is a multiple of 8. */
#include "hc_safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "hc_crc32.h"
#include "hc_integrity.h"
#include "hc_st_direct.h"
#include "hc_utf8.h"

#define MAX_EXACT_DIM 9007199254740992LL /* 2^53, the largest dim readers take */

typedef unsigned long long ull;

typedef struct {
    char *name;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    uint64_t nbytes, written;
    uint32_t crc;        /* of the bytes written so far (by the writer's thread once
                            it runs) */
} wtensor;

/* One chunk queued by hc_st_writer_write_async. */
typedef struct job {
    struct job *next;
    wtensor *t;
    const unsigned char *data;
    size_t len;
    hc_st_write_done done;
    void *ctx;
    const hc_st_model *src; /* data lies in src's mappings: read with pread */
} job;

/* The thread that writes queued chunks (started by the first async write). */
typedef struct {
    pthread_t id;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    job *head, *tail;
    int busy, stop;
    hc_status st;        /* the first failed write, or HC_OK */
    hc_error err;
} wthread;

struct hc_st_writer {
    char *path, *tmp;
    int fd;
    int created;         /* tmp exists and is ours to remove */
    int begun;           /* header written */
    wtensor *t;
    size_t n, cap;
    char **meta;         /* key, value, key, value, ... */
    size_t nmeta, metacap;
    size_t cur;          /* first tensor that may still be incomplete */
    uint64_t header_end; /* 8 + header length, once begun */
    uint32_t header_crc;
    uint64_t pos;        /* bytes handed to write() so far */
    hc_st_direct direct; /* staged direct writes (direct.buf[0] NULL: write() as it comes) */
    wthread th;
};

/* ---- growable string ---------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

static void sb_u64(sbuf *b, unsigned long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%llu", v);
    sb_add(b, tmp, (size_t)n);
}

/* A JSON string literal; s is valid UTF-8, so only quote, backslash and
 * control characters need escapes. */
static void sb_json(sbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            sb_add(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            sb_add(b, esc, 6);
        } else {
            sb_add(b, (const char *)p, 1);
        }
    }
    sb_add(b, "\"", 1);
}

/* ---- helpers ------------------------------------------------------------ */

static int valid_utf8_str(const char *s)
{
    return hc_utf8_valid((const unsigned char *)s, strlen(s), NULL);
}

static hc_status write_all(int fd, const void *data, size_t len, hc_error *err)
{
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t k = write(fd, p, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) HC_FAIL(err, HC_ERR_IO, "write failed: %s", k < 0 ? strerror(errno) : "no progress");
        p += k;
        len -= (size_t)k;
    }
    return HC_OK;
}

/* len bytes at the end of the file: staged for direct writes, else write(). */
static hc_status append(hc_st_writer *w, const void *p, size_t len, hc_error *err)
{
    if (w->direct.buf[0]) return hc_st_direct_put(&w->direct, p, len, err);
    return write_all(w->fd, p, len, err);
}

/* len bytes of a model's mapping at p into the direct stages, each piece
 * read with pread into the stage (the mapping's pages never faulted in; a
 * failed pread copies from the mapping, whose truncation checks apply), its
 * CRC-32 taken there. */
static hc_status put_from(hc_st_writer *w, wtensor *t, const hc_st_model *src,
                          const unsigned char *p, size_t len, hc_error *err)
{
    while (len > 0) {
        size_t room = 0;
        unsigned char *dst = hc_st_direct_room(&w->direct, &room);
        size_t n = len < room ? len : room;
        if (hc_st_model_pread(src, p, n, dst) != 0) memcpy(dst, p, n);
        t->crc = hc_crc32(t->crc, dst, n);
        HC_TRY(hc_st_direct_commit(&w->direct, n, err));
        w->pos += n;
        p += n;
        len -= n;
    }
    return HC_OK;
}

/* len bytes of t at the end of the file, CRC-32 taken on the way, in pieces
 * that stay in cache between the two; written by write(), the kernel is then
 * asked to start writing them back, so that finish's fsync waits for little. */
static hc_status put_bytes(hc_st_writer *w, wtensor *t, const unsigned char *p, size_t len,
                           hc_error *err)
{
    const size_t piece = (size_t)1 << 20;
    uint64_t start = w->pos;
    while (len > 0) {
        size_t n = len < piece ? len : piece;
        t->crc = hc_crc32(t->crc, p, n);
        HC_TRY(append(w, p, n, err));
        w->pos += n;
        p += n;
        len -= n;
    }
    if (w->pos > start && !w->direct.buf[0])
        (void)sync_file_range(w->fd, (off_t)start, (off_t)(w->pos - start),
                              SYNC_FILE_RANGE_WRITE);
    return HC_OK;
}

static void *thread_main(void *arg)
{
    hc_st_writer *w = arg;
    wthread *th = &w->th;
    pthread_mutex_lock(&th->mu);
    for (;;) {
        while (th->head == NULL && !th->stop) pthread_cond_wait(&th->wake, &th->mu);
        job *j = th->head;
        if (j == NULL) break;
        th->head = j->next;
        if (th->head == NULL) th->tail = NULL;
        th->busy = 1;
        int skip = th->st != HC_OK || th->stop;
        pthread_mutex_unlock(&th->mu);
        hc_error e;
        hc_error_clear(&e);
        hc_status st = skip                          ? HC_OK
                       : j->src && w->direct.buf[0] ? put_from(w, j->t, j->src, j->data, j->len, &e)
                                                    : put_bytes(w, j->t, j->data, j->len, &e);
        if (j->done) j->done(j->ctx, !skip && st == HC_OK, j->t->crc);
        pthread_mutex_lock(&th->mu);
        if (st != HC_OK && th->st == HC_OK) {
            th->st = st;
            th->err = e;
        }
        th->busy = 0;
        free(j);
        pthread_cond_broadcast(&th->idle);
    }
    pthread_mutex_unlock(&th->mu);
    return NULL;
}

/* Stops and joins the thread; queued chunks still pending are dropped
 * (their done callbacks run). */
static void thread_stop(hc_st_writer *w)
{
    wthread *th = &w->th;
    if (!th->started) return;
    pthread_mutex_lock(&th->mu);
    th->stop = 1;
    pthread_cond_broadcast(&th->wake);
    pthread_mutex_unlock(&th->mu);
    pthread_join(th->id, NULL);
    pthread_mutex_destroy(&th->mu);
    pthread_cond_destroy(&th->wake);
    pthread_cond_destroy(&th->idle);
    th->started = 0;
}

static void writer_free(hc_st_writer *w)
{
    thread_stop(w);
    hc_st_direct_close(&w->direct);
    if (w->fd >= 0) close(w->fd);
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < 2 * w->nmeta; i++) free(w->meta[i]);
    free(w->t);
    free(w->meta);
    free(w->path);
    free(w->tmp);
    free(w);
}

/* ---- open --------------------------------------------------------------- */

static hc_status create_temp(hc_st_writer *w, size_t cap, hc_error *err)
{
    static atomic_uint counter;
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(w->tmp, cap, "%s.tmp.%ld.%u", w->path, (long)getpid(),
                 atomic_fetch_add(&counter, 1u));
        w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd >= 0) {
            w->created = 1;
            (void)hc_st_direct_open(&w->direct, w->tmp, w->fd);
            return HC_OK;
        }
        if (errno != EEXIST)
            HC_FAIL(err, HC_ERR_IO, "cannot create temporary file %s: %s", w->tmp, strerror(errno));
    }
    HC_FAIL(err, HC_ERR_IO, "cannot find a free temporary file name next to the output");
}

hc_status hc_st_writer_open(const char *path, hc_st_writer **out, hc_error *err)
{
    *out = NULL;
    hc_st_writer *w = calloc(1, sizeof *w);
    HC_CHECK_ALLOC(err, w, "safetensors writer");
    w->fd = -1;
    size_t cap = strlen(path) + 64;
    w->path = strdup(path);
    w->tmp = malloc(cap);
    hc_status st = (w->path && w->tmp) ? create_temp(w, cap, err)
                                       : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    if (st != HC_OK) {
        writer_free(w);
        hc_error_prefix(err, "writing %s: ", path);
        return st;
    }
    *out = w;
    return HC_OK;
}

/* ---- declarations ------------------------------------------------------- */

static hc_status check_decl(const char *name, hc_dtype dtype, int ndim, const int64_t *shape,
                            hc_error *err)
{
    if (!valid_utf8_str(name)) HC_FAIL(err, HC_ERR_ARG, "name is not valid UTF-8");
    if (strlen(name) > HC_ST_MAX_NAME)
        HC_FAIL(err, HC_ERR_ARG, "name is %zu bytes, longer than the limit of %d", strlen(name),
                HC_ST_MAX_NAME);
    if (strcmp(name, "__metadata__") == 0)
        HC_FAIL(err, HC_ERR_ARG, "\"__metadata__\" is reserved and cannot name a tensor");
    if (hc_dtype_name(dtype) == NULL) HC_FAIL(err, HC_ERR_ARG, "invalid dtype %d", (int)dtype);
    if (ndim < 0 || ndim > HC_MAX_DIMS)
        HC_FAIL(err, HC_ERR_ARG, "rank %d outside 0..%d", ndim, HC_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || shape[i] > MAX_EXACT_DIM)
            HC_FAIL(err, HC_ERR_ARG, "shape[%d] = %lld is negative or too large", i,
                    (long long)shape[i]);
    if (hc_tensor_byte_size(dtype, ndim, shape) < 0)
        HC_FAIL(err, HC_ERR_ARG, "%s size overflows or is not a whole number of bytes",
                hc_dtype_name(dtype));
    return HC_OK;
}

static hc_status add_impl(hc_st_writer *w, const char *name, hc_dtype dtype, int ndim,
                          const int64_t *shape, hc_error *err)
{
    if (w->begun) HC_FAIL(err, HC_ERR_ARG, "declared after hc_st_writer_begin_data");
    HC_TRY(check_decl(name, dtype, ndim, shape, err));
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        wtensor *t = realloc(w->t, cap * sizeof *t);
        HC_CHECK_ALLOC(err, t, "tensor declarations");
        w->t = t;
        w->cap = cap;
    }
    wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    HC_CHECK_ALLOC(err, t->name, "tensor name");
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->nbytes = (uint64_t)hc_tensor_byte_size(dtype, ndim, shape);
    w->n++;
    return HC_OK;
}

hc_status hc_st_writer_add(hc_st_writer *w, const char *name, hc_dtype dtype, int ndim,
                           const int64_t *shape, hc_error *err)
{
    HC_TRY_CTX(err, add_impl(w, name, dtype, ndim, shape, err), "writing %s: tensor '%s': ", w->path,
               name);
    return HC_OK;
}

static hc_status meta_impl(hc_st_writer *w, const char *key, const char *value, hc_error *err)
{
    if (w->begun) HC_FAIL(err, HC_ERR_ARG, "set after hc_st_writer_begin_data");
    if (!valid_utf8_str(key) || !valid_utf8_str(value))
        HC_FAIL(err, HC_ERR_ARG, "key or value is not valid UTF-8");
    char *v = strdup(value);
    HC_CHECK_ALLOC(err, v, "metadata value");
    for (size_t i = 0; i < w->nmeta; i++) {
        if (strcmp(w->meta[2 * i], key) == 0) {
            free(w->meta[2 * i + 1]);
            w->meta[2 * i + 1] = v;
            return HC_OK;
        }
    }
    if (w->nmeta == w->metacap) {
        size_t cap = w->metacap ? 2 * w->metacap : 8;
        char **m = realloc(w->meta, 2 * cap * sizeof *m);
        if (m == NULL) free(v);
        HC_CHECK_ALLOC(err, m, "metadata");
        w->meta = m;
        w->metacap = cap;
    }
    char *k = strdup(key);
    if (k == NULL) free(v);
    HC_CHECK_ALLOC(err, k, "metadata key");
    w->meta[2 * w->nmeta] = k;
    w->meta[2 * w->nmeta + 1] = v;
    w->nmeta++;
    return HC_OK;
}

hc_status hc_st_writer_set_metadata(hc_st_writer *w, const char *key, const char *value,
                                    hc_error *err)
{
    HC_TRY_CTX(err, meta_impl(w, key, value, err), "writing %s: metadata \"%s\": ", w->path, key);
    return HC_OK;
}

/* ---- header ------------------------------------------------------------- */

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static hc_status check_unique_names(const hc_st_writer *w, hc_error *err)
{
    const char **names = malloc((w->n ? w->n : 1) * sizeof *names);
    HC_CHECK_ALLOC(err, names, "name list");
    for (size_t i = 0; i < w->n; i++) names[i] = w->t[i].name;
    qsort(names, w->n, sizeof *names, cmp_str_ptr);
    hc_status st = HC_OK;
    for (size_t i = 1; i < w->n && st == HC_OK; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            st = hc_error_set(err, HC_ERR_ARG, "tensor '%s' declared twice", names[i]);
    free(names);
    return st;
}

static void build_tensor_json(sbuf *b, const wtensor *t, uint64_t begin)
{
    sb_json(b, t->name);
    sb_str(b, ":{\"dtype\":");
    sb_json(b, hc_dtype_name(t->dtype));
    sb_str(b, ",\"shape\":[");
    for (int d = 0; d < t->ndim; d++) {
        if (d) sb_str(b, ",");
        sb_u64(b, (ull)t->shape[d]);
    }
    sb_str(b, "],\"data_offsets\":[");
    sb_u64(b, (ull)begin);
    sb_str(b, ",");
    sb_u64(b, (ull)(begin + t->nbytes));
    sb_str(b, "]}");
}

/* Header JSON after the 8-byte prefix, space-padded to a multiple of 8. */
static void build_header(const hc_st_writer *w, sbuf *b)
{
    int first = 1;
    sb_str(b, "{");
    if (w->nmeta > 0) {
        sb_str(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->nmeta; i++) {
            if (i) sb_str(b, ",");
            sb_json(b, w->meta[2 * i]);
            sb_str(b, ":");
            sb_json(b, w->meta[2 * i + 1]);
        }
        sb_str(b, "}");
        first = 0;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n; i++, first = 0) {
        if (!first) sb_str(b, ",");
        build_tensor_json(b, &w->t[i], off);
        off += w->t[i].nbytes;
    }
    sb_str(b, "}");
    while (b->len % 8 != 0) sb_str(b, " ");
}

static hc_status begin_impl(hc_st_writer *w, hc_error *err)
{
    if (w->begun) HC_FAIL(err, HC_ERR_ARG, "hc_st_writer_begin_data called twice");
    HC_TRY(check_unique_names(w, err));
    sbuf b = {0};
    build_header(w, &b);
    if (b.oom) {
        free(b.p);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory building the header");
    }
    unsigned char prefix[8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((uint64_t)b.len >> (8 * i));
    hc_status st = HC_OK;
    if (b.len > HC_ST_MAX_HEADER)
        st = hc_error_set(err, HC_ERR_ARG, "header of %zu bytes exceeds the maximum of %llu",
                          b.len, (ull)HC_ST_MAX_HEADER);
    if (st == HC_OK) st = append(w, prefix, 8, err);
    if (st == HC_OK) st = append(w, b.p, b.len, err);
    if (st == HC_OK) {
        w->header_crc = hc_crc32(hc_crc32(0, prefix, 8), b.p, b.len);
        w->header_end = w->pos = 8 + (uint64_t)b.len;
        w->begun = 1;
    }
    free(b.p);
    return st;
}

hc_status hc_st_writer_begin_data(hc_st_writer *w, hc_error *err)
{
    HC_TRY_CTX(err, begin_impl(w, err), "writing %s: ", w->path);
    return HC_OK;
}

/* ---- data --------------------------------------------------------------- */

/* Checks that len bytes of tensor index may come next and counts them. */
static hc_status claim(hc_st_writer *w, size_t index, size_t len, hc_error *err)
{
    if (!w->begun) HC_FAIL(err, HC_ERR_ARG, "data written before hc_st_writer_begin_data");
    if (index >= w->n) HC_FAIL(err, HC_ERR_ARG, "tensor index %zu out of range (%zu declared)",
                               index, w->n);
    while (w->cur < index && w->t[w->cur].written == w->t[w->cur].nbytes) w->cur++;
    wtensor *t = &w->t[index];
    if (index < w->cur && len == 0) return HC_OK;
    if (index < w->cur)
        HC_FAIL(err, HC_ERR_ARG, "tensor '%s' is already complete", t->name);
    if (index > w->cur)
        HC_FAIL(err, HC_ERR_ARG, "tensor '%s' written before tensor '%s' is complete (%llu of "
                "%llu bytes)", t->name, w->t[w->cur].name, (ull)w->t[w->cur].written,
                (ull)w->t[w->cur].nbytes);
    if (len > t->nbytes - t->written)
        HC_FAIL(err, HC_ERR_ARG, "tensor '%s': chunk of %zu bytes overruns its size (%llu of "
                "%llu bytes written)", t->name, len, (ull)t->written, (ull)t->nbytes);
    t->written += len;
    return HC_OK;
}

/* Waits for the queue to empty; the first failed queued write. */
static hc_status flush_impl(hc_st_writer *w, hc_error *err)
{
    wthread *th = &w->th;
    if (!th->started) return HC_OK;
    pthread_mutex_lock(&th->mu);
    while (th->head || th->busy) pthread_cond_wait(&th->idle, &th->mu);
    hc_status st = th->st;
    if (st != HC_OK && err) *err = th->err;
    pthread_mutex_unlock(&th->mu);
    return st;
}

hc_status hc_st_writer_flush(hc_st_writer *w, hc_error *err)
{
    HC_TRY_CTX(err, flush_impl(w, err), "writing %s: ", w->path);
    return HC_OK;
}

hc_status hc_st_writer_write(hc_st_writer *w, size_t index, const void *data, size_t len,
                             hc_error *err)
{
    HC_TRY(hc_st_writer_flush(w, err)); /* chunks go out in order */
    HC_TRY_CTX(err, claim(w, index, len, err), "writing %s: ", w->path);
    if (len == 0) return HC_OK;
    HC_TRY_CTX(err, put_bytes(w, &w->t[index], data, len, err), "writing %s: ", w->path);
    return HC_OK;
}

static hc_status thread_start(hc_st_writer *w, hc_error *err)
{
    wthread *th = &w->th;
    if (th->started) return HC_OK;
    memset(th, 0, sizeof *th);
    if (pthread_mutex_init(&th->mu, NULL) != 0)
        HC_FAIL(err, HC_ERR_NOMEM, "cannot create the writer thread's lock");
    if (pthread_cond_init(&th->wake, NULL) != 0) {
        pthread_mutex_destroy(&th->mu);
        HC_FAIL(err, HC_ERR_NOMEM, "cannot create the writer thread's condition");
    }
    if (pthread_cond_init(&th->idle, NULL) != 0) {
        pthread_cond_destroy(&th->wake);
        pthread_mutex_destroy(&th->mu);
        HC_FAIL(err, HC_ERR_NOMEM, "cannot create the writer thread's condition");
    }
    int rc = pthread_create(&th->id, NULL, thread_main, w);
    if (rc != 0) {
        pthread_cond_destroy(&th->idle);
        pthread_cond_destroy(&th->wake);
        pthread_mutex_destroy(&th->mu);
        HC_FAIL(err, HC_ERR_NOMEM, "cannot start the writer thread: %s", strerror(rc));
    }
    th->started = 1;
    return HC_OK;
}

static hc_status async_impl(hc_st_writer *w, size_t index, const void *data, size_t len,
                            const hc_st_model *src, hc_st_write_done done, void *ctx,
                            hc_error *err)
{
    HC_TRY(claim(w, index, len, err));
    HC_TRY(thread_start(w, err));
    job *j = malloc(sizeof *j);
    HC_CHECK_ALLOC(err, j, "write queue entry");
    *j = (job){NULL, &w->t[index], data, len, done, ctx, src};
    wthread *th = &w->th;
    pthread_mutex_lock(&th->mu);
    hc_status st = th->st;
    if (st != HC_OK && err) *err = th->err;
    if (st == HC_OK) {
        if (th->tail) th->tail->next = j;
        else th->head = j;
        th->tail = j;
        pthread_cond_signal(&th->wake);
    }
    pthread_mutex_unlock(&th->mu);
    if (st != HC_OK) free(j);
    return st;
}

hc_status hc_st_writer_write_async(hc_st_writer *w, size_t index, const void *data, size_t len,
                                   hc_st_write_done done, void *ctx, hc_error *err)
{
    return hc_st_writer_copy_async(w, index, NULL, data, len, done, ctx, err);
}

hc_status hc_st_writer_copy_async(hc_st_writer *w, size_t index, const hc_st_model *src,
                                  const void *data, size_t len, hc_st_write_done done, void *ctx,
                                  hc_error *err)
{
    hc_status st = async_impl(w, index, data, len, src, done, ctx, err);
    if (st != HC_OK) {
        if (done) done(ctx, 0, 0);
        hc_error_prefix(err, "writing %s: ", w->path);
    }
    return st;
}

/* ---- finish / abort ------------------------------------------------------ */

/* Best effort: makes the rename durable where the file system allows it. */
static void sync_parent_dir(const char *path)
{
    char *dir = strdup(path);
    if (dir == NULL) return;
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

static hc_status finish_impl(hc_st_writer *w, hc_error *err)
{
    HC_TRY(flush_impl(w, err));
    thread_stop(w);
    if (!w->begun) HC_TRY(begin_impl(w, err));
    for (size_t i = 0; i < w->n; i++)
        if (w->t[i].written != w->t[i].nbytes)
            HC_FAIL(err, HC_ERR_ARG, "tensor '%s' is incomplete: %llu of %llu bytes written",
                    w->t[i].name, (ull)w->t[i].written, (ull)w->t[i].nbytes);
    if (w->direct.buf[0]) HC_TRY(hc_st_direct_finish(&w->direct, err));
    if (fsync(w->fd) != 0) HC_FAIL(err, HC_ERR_IO, "fsync failed: %s", strerror(errno));
    int rc = close(w->fd);
    w->fd = -1;
    if (rc != 0) HC_FAIL(err, HC_ERR_IO, "close failed: %s", strerror(errno));
    if (rename(w->tmp, w->path) != 0)
        HC_FAIL(err, HC_ERR_IO, "cannot rename %s into place: %s", w->tmp, strerror(errno));
    w->created = 0;
    sync_parent_dir(w->path);
    return HC_OK;
}

/* The file's size and CRCs from what was written (hc_integrity.h's layout). */
static hc_status fill_crc(const hc_st_writer *w, const char *name, hc_file_crc *out,
                          hc_error *err)
{
    memset(out, 0, sizeof *out);
    out->name = strdup(name);
    out->tensors = calloc(w->n ? w->n : 1, sizeof *out->tensors);
    if (out->name == NULL || out->tensors == NULL) {
        hc_file_crc_free(out);
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory");
    }
    out->is_safetensors = 1;
    out->header_end = w->header_end;
    out->header_crc = out->crc = w->header_crc;
    uint64_t at = w->header_end;
    for (size_t i = 0; i < w->n; i++, out->n_tensors++) {
        hc_tensor_crc *tc = &out->tensors[i];
        tc->name = strdup(w->t[i].name);
        if (tc->name == NULL) {
            hc_file_crc_free(out);
            HC_FAIL(err, HC_ERR_NOMEM, "out of memory");
        }
        tc->begin = at;
        tc->end = at += w->t[i].nbytes;
        tc->crc = w->t[i].crc;
        out->crc = (uint32_t)crc32_combine(out->crc, tc->crc, (z_off_t)w->t[i].nbytes);
    }
    out->size = at;
    return HC_OK;
}

hc_status hc_st_writer_finish_crc(hc_st_writer *w, const char *name, hc_file_crc *out,
                                  hc_error *err)
{
    hc_status st = finish_impl(w, err);
    if (st == HC_OK && out) st = fill_crc(w, name, out, err);
    if (st != HC_OK) {
        hc_error_prefix(err, "writing %s: ", w->path);
        hc_st_writer_abort(w);
        return st;
    }
    writer_free(w);
    return HC_OK;
}

hc_status hc_st_writer_finish(hc_st_writer *w, hc_error *err)
{
    return hc_st_writer_finish_crc(w, NULL, NULL, err);
}

void hc_st_writer_abort(hc_st_writer *w)
{
    if (w == NULL) return;
    thread_stop(w); /* before the descriptor it writes to is closed */
    hc_st_direct_close(&w->direct);
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->created) unlink(w->tmp);
    writer_free(w);
}

/* ---- one call ----------------------------------------------------------- */

static hc_status write_file_steps(hc_st_writer *w, const hc_tensor *tensors,
                                  const char *const *names, size_t count,
                                  const char *const *metadata, hc_error *err)
{
    for (size_t i = 0; metadata && metadata[i]; i += 2) {
        if (metadata[i + 1] == NULL)
            HC_FAIL(err, HC_ERR_ARG, "writing %s: metadata key \"%s\" has no value", w->path,
                    metadata[i]);
        HC_TRY(hc_st_writer_set_metadata(w, metadata[i], metadata[i + 1], err));
    }
    for (size_t i = 0; i < count; i++)
        HC_TRY(hc_st_writer_add(w, names[i], tensors[i].dtype, tensors[i].ndim,
                                tensors[i].shape, err));
    HC_TRY(hc_st_writer_begin_data(w, err));
    for (size_t i = 0; i < count; i++)
        HC_TRY(hc_st_writer_write(w, i, tensors[i].data, tensors[i].nbytes, err));
    return HC_OK;
}

hc_status hc_st_write_file(const char *path, const hc_tensor *tensors, const char *const *names,
                           size_t count, const char *const *metadata, hc_error *err)
{
    hc_st_writer *w = NULL;
    HC_TRY(hc_st_writer_open(path, &w, err));
    hc_status st = write_file_steps(w, tensors, names, count, metadata, err);
    if (st != HC_OK) {
        hc_st_writer_abort(w);
        return st;
    }
    return hc_st_writer_finish(w, err);
}
