/* hc_convert_journal.c - crash safety of a conversion run (docs/robustness.md):
 * the deterministic temporary directory OUT_DIR.partial, its journal
 * (.hc_journal.json: plan fingerprint, first command line, completed shards
 * with their CRC-32), --resume, the input snapshot (size, mtime, ctime,
 * inode) re-checked while the run goes on, and the test-only pause points. */
#include "hc_conv_write.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "hc_fs.h"
#include "hc_json.h"
#include "hc_out_guard.h"
#include "hc_version.h"

#define JOURNAL_NAME ".hc_journal.json"
#define JOURNAL_TMP ".hc_journal.json.tmp"

void hc_conv_run_free(hc_conv_run *run)
{
    if (run == NULL) return;
    for (size_t i = 0; i < run->n_inputs; i++) free(run->inputs[i].name);
    free(run->inputs);
    for (int i = 0; i < run->n_shards; i++) hc_file_crc_free(&run->shards[i]);
    free(run->shards);
    for (size_t i = 0; i < run->n_done; i++) free(run->done[i].name);
    free(run->done);
    free(run->command_line);
    hc_st_crcs_free(run->input_crcs);
    hc_bufpool_free(run->pool);
    memset(run, 0, sizeof *run);
}

/* ---- input snapshot ------------------------------------------------------ */

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

/* A recorded time as "seconds.nanoseconds" in buf[32]. */
static const char *ts(int64_t t, char *buf)
{
    snprintf(buf, 32, "%lld.%09lld", (long long)(t / 1000000000), (long long)(t % 1000000000));
    return buf;
}

static int cmp_input(const void *a, const void *b)
{
    return strcmp(((const hc_input_file *)a)->name, ((const hc_input_file *)b)->name);
}

static int is_safetensors(const char *name)
{
    size_t n = strlen(name);
    return n >= 12 && strcmp(name + n - 12, ".safetensors") == 0;
}

hc_status hc_conv_inputs_snapshot(const char *in_dir, hc_conv_run *run, hc_error *err)
{
    DIR *d = opendir(in_dir);
    if (d == NULL) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", in_dir, strerror(errno));
    size_t cap = 0;
    hc_status st = HC_OK;
    struct dirent *e;
    while (st == HC_OK && (e = readdir(d)) != NULL) {
        char path[4096];
        struct stat sb;
        if (e->d_name[0] == '.') continue;
        st = hc_path_join(path, sizeof path, in_dir, e->d_name, err);
        if (st != HC_OK || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (run->n_inputs == cap) {
            cap = cap ? 2 * cap : 16;
            hc_input_file *p = realloc(run->inputs, cap * sizeof *p);
            if (p == NULL) { st = hc_error_set(err, HC_ERR_NOMEM, "out of memory"); break; }
            run->inputs = p;
        }
        hc_input_file *in = &run->inputs[run->n_inputs];
        memset(in, 0, sizeof *in);
        in->name = strdup(e->d_name);
        if (in->name == NULL) { st = hc_error_set(err, HC_ERR_NOMEM, "out of memory"); break; }
        in->size = (uint64_t)sb.st_size;
        in->mtime_ns = ns(sb.st_mtim);
        in->ctime_ns = ns(sb.st_ctim);
        in->dev = (uint64_t)sb.st_dev;
        in->ino = (uint64_t)sb.st_ino;
        run->n_inputs++;
    }
    closedir(d);
    if (run->n_inputs) qsort(run->inputs, run->n_inputs, sizeof *run->inputs, cmp_input);
    return st;
}

/* What differs between the recorded input and sb, or NULL: size, mtime,
 * ctime (a rewrite in place with the mtime set back), inode (replaced). */
static const char *input_change(const hc_input_file *in, const struct stat *sb, char *buf,
                                size_t len)
{
    char a[32], b[32];
    if ((uint64_t)sb->st_size != in->size)
        snprintf(buf, len, "size %llu -> %llu", (unsigned long long)in->size,
                 (unsigned long long)sb->st_size);
    else if (ns(sb->st_mtim) != in->mtime_ns)
        snprintf(buf, len, "mtime %s -> %s", ts(in->mtime_ns, a), ts(ns(sb->st_mtim), b));
    else if ((uint64_t)sb->st_dev != in->dev || (uint64_t)sb->st_ino != in->ino)
        snprintf(buf, len, "replaced by another file (inode %llu -> %llu)",
                 (unsigned long long)in->ino, (unsigned long long)sb->st_ino);
    else if (ns(sb->st_ctim) != in->ctime_ns)
        snprintf(buf, len, "ctime %s -> %s: rewritten or changed in place, its size and mtime "
                 "kept", ts(in->ctime_ns, a), ts(ns(sb->st_ctim), b));
    else
        return NULL;
    return buf;
}

hc_status hc_conv_inputs_check(const char *in_dir, const hc_conv_run *run, hc_error *err)
{
    for (size_t i = 0; i < run->n_inputs; i++) {
        const hc_input_file *in = &run->inputs[i];
        char path[4096], what[160];
        struct stat sb;
        HC_TRY(hc_path_join(path, sizeof path, in_dir, in->name, err));
        if (stat(path, &sb) != 0)
            HC_FAIL(err, HC_ERR_IO, "%s: input file changed during the run (it is gone: %s); "
                    "no output was published", path, strerror(errno));
        if (input_change(in, &sb, what, sizeof what))
            HC_FAIL(err, HC_ERR_IO, "%s: input file changed during the run (%s); no output was "
                    "published", path, what);
    }
    return HC_OK;
}

/* CRC-32 of every input file, the *.safetensors shards too unless skip_weights
 * (--no-input-crc; size + mtime, the strict reader and per-layer verification
 * still cover the shards). The model's files are assembled from the CRCs of
 * their tensors noted while the run read them (run->input_crcs), not read
 * again; other files (config, tokenizer, ...) are read. */
hc_status hc_conv_inputs_crc(const char *in_dir, hc_conv_run *run, int skip_weights,
                             hc_error *err)
{
    for (size_t i = 0; i < run->n_inputs; i++) {
        hc_input_file *in = &run->inputs[i];
        if (skip_weights && is_safetensors(in->name)) continue;
        int found = 0;
        uint64_t size = 0;
        HC_TRY(hc_st_crcs_file(run->input_crcs, in->name, &found, &in->crc, &size, err));
        if (found && size != in->size)
            HC_FAIL(err, HC_ERR_IO, "%s/%s: input file changed during the run (size %llu -> "
                    "%llu); no output was published", in_dir, in->name,
                    (unsigned long long)in->size, (unsigned long long)size);
        if (found) {
            in->has_crc = 1;
            continue;
        }
        hc_file_crc f;
        HC_TRY(hc_file_crc_compute(in_dir, in->name, &f, err));
        in->has_crc = 1;
        in->crc = f.crc;
        hc_file_crc_free(&f);
    }
    return HC_OK;
}

/* ---- fingerprint ----------------------------------------------------------- */

static uint64_t fnv_add(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint64_t fnv_str(uint64_t h, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return fnv_add(h, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

hc_status hc_conv_fingerprint(const hc_convert_options *opts, const hc_conv_plan *plan,
                              hc_conv_run *run, hc_error *err)
{
    uint64_t h = 1469598103934665603ull;
    h = fnv_str(h, "humming-convert %s\n", HC_VERSION);
    for (size_t i = 0; i < run->n_inputs; i++)
        h = fnv_str(h, "in %s %llu %lld %lld\n", run->inputs[i].name,
                    (unsigned long long)run->inputs[i].size, (long long)run->inputs[i].mtime_ns,
                    (long long)run->inputs[i].ctime_ns);
    h = fnv_str(h, "opts sm%d act%d shard%lld layout%d humming %s actorder%d target%d verify%d tokens%d "
                "degraded%d calib %s\n", opts->sm, (int)plan->activation,
                (long long)opts->max_shard_bytes, (int)opts->layout,
                plan->release ? plan->release : hc_humming_version_name(plan->version),
                opts->act_order,
                opts->has_target, (int)opts->verify, opts->verify_tokens, opts->allow_degraded,
                opts->calib_path ? opts->calib_path : "-");
    for (int i = 0; i < plan->n_items; i++) {
        const hc_conv_item *it = &plan->items[i];
        h = fnv_str(h, "item %s %d %lld\n",
                    it->layer >= 0 ? plan->layers[it->layer].prefix : it->copy->name, it->shard,
                    (long long)it->nbytes);
    }
    /* every per-layer decision (formats, targets, layout) as config.json records it */
    hc_convert_options o = *opts;
    o.command_line = NULL;
    char *cfg = NULL;
    HC_TRY(hc_conv_config_text(&o, plan, &cfg, err));
    h = fnv_add(h, cfg, strlen(cfg));
    free(cfg);
    snprintf(run->fingerprint, sizeof run->fingerprint, "%016llx", (unsigned long long)h);
    return HC_OK;
}

/* ---- journal ------------------------------------------------------------------ */

hc_status hc_conv_journal_save(hc_conv_run *run, hc_error *err)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    hc_status st = root && arr ? HC_OK : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    if (st == HC_OK) {
        cJSON_AddStringToObject(root, "fingerprint", run->fingerprint);
        if (run->command_line) cJSON_AddStringToObject(root, "command_line", run->command_line);
        cJSON_AddItemToObject(root, "shards", arr);
        arr = NULL;
    }
    cJSON *shards = cJSON_GetObjectItemCaseSensitive(root, "shards");
    for (int i = 0; st == HC_OK && i < run->n_shards; i++) {
        const hc_file_crc *f = &run->shards[i];
        if (f->name == NULL) continue;
        cJSON *o = cJSON_CreateObject();
        char hex[16];
        snprintf(hex, sizeof hex, "%08x", f->crc);
        if (o == NULL) { st = hc_error_set(err, HC_ERR_NOMEM, "out of memory"); break; }
        cJSON_AddStringToObject(o, "name", f->name);
        cJSON_AddNumberToObject(o, "size", (double)f->size);
        cJSON_AddStringToObject(o, "crc32", hex);
        cJSON_AddItemToArray(shards, o);
    }
    char *text = st == HC_OK ? cJSON_Print(root) : NULL;
    if (st == HC_OK && text == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    char tmp[4096], path[4096];
    if (st == HC_OK) st = hc_path_join(tmp, sizeof tmp, run->partial, JOURNAL_TMP, err);
    if (st == HC_OK) st = hc_path_join(path, sizeof path, run->partial, JOURNAL_NAME, err);
    /* the first journal is created under its own name, so that a kill before
     * it is complete leaves the directory empty or holding (a piece of) our
     * journal, which a new run recognises; later ones replace it atomically */
    int first = st == HC_OK && !hc_path_exists(path);
    if (st == HC_OK && first) {
        st = hc_fs_write_file(path, text, strlen(text), err);
    } else if (st == HC_OK) {
        unlink(tmp);
        st = hc_fs_write_file(tmp, text, strlen(text), err);
        if (st == HC_OK && rename(tmp, path) != 0)
            st = hc_error_set(err, HC_ERR_IO, "%s: cannot rename to %s: %s", tmp, path,
                              strerror(errno));
    }
    if (st == HC_OK) st = hc_fs_sync_path(run->partial, err);
    free(text);
    cJSON_Delete(root);
    cJSON_Delete(arr);
    return st;
}

/* Reads the journal; 0 when it is usable, -1 when absent or unreadable. */
static int journal_load(hc_conv_run *run, char fingerprint[24])
{
    char path[4096], *text = NULL;
    if (hc_path_join(path, sizeof path, run->partial, JOURNAL_NAME, NULL) != HC_OK ||
        hc_fs_read_file(path, HC_FS_MAX_JSON, HC_FS_NOFOLLOW, &text, NULL, NULL) != HC_OK)
        return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(root, "fingerprint");
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "command_line");
    const cJSON *shards = cJSON_GetObjectItemCaseSensitive(root, "shards");
    int rc = cJSON_IsString(fp) && cJSON_IsArray(shards) ? 0 : -1;
    if (rc == 0) snprintf(fingerprint, 24, "%s", fp->valuestring);
    if (rc == 0 && cJSON_IsString(cl)) run->command_line = strdup(cl->valuestring);
    int n = rc == 0 ? cJSON_GetArraySize(shards) : 0;
    run->done = calloc((size_t)n + 1, sizeof *run->done);
    if (run->done == NULL) rc = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, shards) {
        if (rc != 0) break;
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(e, "size");
        const cJSON *crc = cJSON_GetObjectItemCaseSensitive(e, "crc32");
        int64_t size = 0;
        if (!cJSON_IsString(nm) || hc_json_int(sz, 0, HC_JSON_MAX_EXACT, 0, &size) ||
            !cJSON_IsString(crc) || strchr(nm->valuestring, '/'))
            continue; /* not a usable entry: that shard is written again */
        hc_file_crc *d = &run->done[run->n_done];
        d->name = strdup(nm->valuestring);
        if (d->name == NULL) break;
        d->size = (uint64_t)size;
        d->crc = (uint32_t)strtoul(crc->valuestring, NULL, 16);
        run->n_done++;
    }
    cJSON_Delete(root);
    return rc;
}

/* Removes every entry of the partial directory except the journal and the
 * shards it lists as complete (temporary shard files of a killed run,
 * config, index, side files and reports are all rewritten). */
static hc_status clean_partial(const hc_conv_run *run, hc_error *err)
{
    DIR *d = opendir(run->partial);
    if (d == NULL) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", run->partial, strerror(errno));
    struct dirent *e;
    hc_status st = HC_OK;
    while (st == HC_OK && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            !strcmp(e->d_name, JOURNAL_NAME))
            continue;
        int keep = 0;
        for (size_t i = 0; i < run->n_done && !keep; i++)
            keep = strcmp(run->done[i].name, e->d_name) == 0;
        char path[4096];
        if (!keep && (st = hc_path_join(path, sizeof path, run->partial, e->d_name, err)) == HC_OK)
            st = hc_fs_remove_tree(path, err);
    }
    closedir(d);
    return st;
}

hc_status hc_conv_partial_prepare(const hc_convert_options *opts, hc_conv_run *run,
                                  hc_error *err)
{
    int n = snprintf(run->partial, sizeof run->partial, "%s", opts->out_dir);
    if (n < 0 || (size_t)n >= sizeof run->partial - 16)
        HC_FAIL(err, HC_ERR_ARG, "path too long: %s", opts->out_dir);
    while (n > 1 && run->partial[n - 1] == '/') run->partial[--n] = '\0';
    strcat(run->partial, ".partial");
    if (hc_path_exists(run->partial)) {
        char fp[24] = "";
        if (!opts->resume && !opts->force)
            HC_FAIL(err, HC_ERR_ARG, "%s: the partial output of an interrupted run exists: use "
                    "--resume to finish it, or --force to discard it and start over",
                    run->partial);
        if (opts->resume && journal_load(run, fp) == 0) {
            if (strcmp(fp, run->fingerprint) != 0)
                HC_FAIL(err, HC_ERR_ARG, "%s: cannot resume: the input files or the options "
                        "that change the output differ from the interrupted run's (plan "
                        "fingerprint %s, now %s); run with --force to start over",
                        run->partial, fp, run->fingerprint);
            run->resumed = 1;
            hc_conv_log(opts, "resuming %s: %zu shard(s) recorded complete", run->partial,
                        run->n_done);
            return clean_partial(run, err);
        }
        if (opts->resume)
            hc_conv_log(opts, "%s has no usable journal: starting over", run->partial);
        HC_TRY(hc_out_guard_replaceable(run->partial, JOURNAL_NAME, "a new run", err));
        HC_TRY(hc_fs_remove_tree(run->partial, err));
    } else if (opts->resume) {
        hc_conv_log(opts, "nothing to resume (%s does not exist): starting a full run",
                    run->partial);
    }
    if (mkdir(run->partial, 0755) != 0)
        HC_FAIL(err, HC_ERR_IO, "%s: cannot create temporary output directory: %s", run->partial,
                strerror(errno));
    run->owned = 1;
    if (opts->command_line) {
        run->command_line = strdup(opts->command_line);
        HC_CHECK_ALLOC(err, run->command_line, "command line");
    }
    return hc_conv_journal_save(run, err);
}

hc_status hc_conv_journal_finish(hc_conv_run *run, hc_error *err)
{
    char path[4096];
    HC_TRY(hc_path_join(path, sizeof path, run->partial, JOURNAL_NAME, err));
    if (unlink(path) != 0 && errno != ENOENT)
        HC_FAIL(err, HC_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    return hc_fs_sync_path(run->partial, err);
}

/* 1 when shard `name` is recorded complete and the file still has that size
 * and CRC (*info then holds its tensors' CRCs). */
int hc_conv_shard_reusable(const hc_convert_options *opts, hc_conv_run *run, const char *name,
                           hc_file_crc *info)
{
    memset(info, 0, sizeof *info);
    const hc_file_crc *d = NULL;
    for (size_t i = 0; i < run->n_done && !d; i++)
        if (strcmp(run->done[i].name, name) == 0) d = &run->done[i];
    if (d == NULL) return 0;
    hc_error e;
    if (hc_file_crc_compute(run->partial, name, info, &e) == HC_OK && info->size == d->size &&
        info->crc == d->crc)
        return 1;
    hc_conv_log(opts, "resume: %s does not match its journal entry: rewriting it", name);
    hc_file_crc_free(info);
    char path[4096];
    if (hc_path_join(path, sizeof path, run->partial, name, NULL) == HC_OK) unlink(path);
    return 0;
}

void hc_conv_pause(const hc_convert_options *opts, const char *point)
{
    if (opts->test_pause_at == NULL || strcmp(opts->test_pause_at, point) != 0) return;
    hc_conv_log(opts, "test: paused at %s", point);
    double s = opts->test_pause_seconds > 0 ? opts->test_pause_seconds : 30;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}
