/* test_faults - fault injection end to end (docs/robustness.md): disk full
 * (a tiny tmpfs), a truncated input shard, an input changed during the run
 * (size, and mtime alone), permission denied, a shard named by the index
 * that is missing. Each gives exit 1 and a message naming the file; OUT_DIR
 * and OUT_DIR.partial are absent; the input is unchanged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cjson/cJSON.h>

#include "hc_integrity.h"
#include "hc_safetensors.h"
#include "hc_test_util.h"

typedef struct {
    char *root, *in, *out, *log;
    const char *cli;
    const char *format; /* --format for a float input; NULL: a Humming-format input */
    uint32_t in_sum;
} fixture;

/* CRC over every file of dir (names and contents, sorted order). */
static uint32_t dir_sum(const char *dir)
{
    struct dirent **list = NULL;
    int n = scandir(dir, &list, NULL, alphasort);
    uint32_t crc = (uint32_t)crc32(0, NULL, 0);
    for (int i = 0; i < n; i++) {
        char *p = hc_test_path_join(dir, list[i]->d_name);
        size_t len = 0;
        void *data = list[i]->d_name[0] == '.' ? NULL : hc_test_read_file(p, &len);
        crc = (uint32_t)crc32(crc, (const unsigned char *)list[i]->d_name,
                              (uInt)strlen(list[i]->d_name));
        if (data) crc = (uint32_t)crc32(crc, data, (uInt)len);
        free(data), free(p), free(list[i]);
    }
    free(list);
    return crc;
}

static int setup_input(void **state, const char *gen_args, const char *format)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL) return -1;
    f->root = hc_test_mkdtemp("faults");
    if (f->root == NULL) return -1;
    f->in = hc_test_path_join(f->root, "in");
    f->out = hc_test_path_join(f->root, "out");
    f->log = hc_test_path_join(f->root, "log.txt");
    f->cli = hc_test_cli();
    f->format = format;
    if (hc_test_gen_model(f->in, gen_args) != 0) return -1;
    f->in_sum = dir_sum(f->in);
    *state = f;
    return 0;
}

static int setup(void **state) { return setup_input(state, "--format humming --experts 0", NULL); }

/* A float16 input quantized to w4a16: its rows are read by the float row
 * source (pread into per-thread blocks, the mapping where pread falls short). */
static int setup_float(void **state)
{
    return setup_input(state, "--format float16 --experts 0", "w4a16");
}

static int teardown(void **state)
{
    fixture *f = *state;
    char *mnt = hc_test_path_join(f->root, "tiny");
    umount(mnt); /* in case the disk-full test failed before its own umount */
    free(mnt);
    chmod(f->in, 0755);
    hc_test_rm_rf(f->root);
    free(f->root), free(f->in), free(f->out), free(f->log);
    free(f);
    return 0;
}

static int run_cli(const fixture *f, const char *out, const char *env)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s '%s' '%s' '%s' --max-shard-size 64K --verify off -q 2>'%s'",
             env ? env : "", f->cli, f->in, out, f->log);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Exit 1, the message names `file` (and `what`), no output or partial left. */
static void assert_clean_failure(const fixture *f, const char *out, int rc, const char *file,
                                 const char *what)
{
    char *log = hc_test_read_file(f->log, NULL);
    printf("  message: %s", log ? log : "(none)\n");
    assert_int_equal(rc, 1);
    assert_non_null(log);
    if (strstr(log, file) == NULL) fail_msg("message does not name %s", file);
    if (what && strstr(log, what) == NULL) fail_msg("message does not say \"%s\"", what);
    free(log);
    char partial[8192];
    snprintf(partial, sizeof partial, "%s.partial", out);
    assert_false(hc_test_exists(out));
    assert_false(hc_test_exists(partial));
}

static void test_disk_full(void **state)
{
    fixture *f = *state;
    char *mnt = hc_test_path_join(f->root, "tiny");
    mkdir(mnt, 0755);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k") != 0) {
        hc_test_skip_notice("privilege", "cannot mount a tmpfs here (not root / no CAP_SYS_ADMIN): "
                            "disk-full case skipped");
        free(mnt);
        skip();
        return; /* skip() does not always leave the test */
    }
    char *out = hc_test_path_join(mnt, "out");
    int rc = run_cli(f, out, NULL);
    assert_clean_failure(f, out, rc, mnt, "No space left on device");
    assert_int_equal(hc_test_dir_count(mnt), 0); /* nothing left on the full disk */
    umount(mnt);
    assert_int_equal(dir_sum(f->in), f->in_sum);
    free(out), free(mnt);
}

static void test_truncated_input_shard(void **state)
{
    fixture *f = *state;
    char *shard = hc_test_path_join(f->in, "model.safetensors");
    struct stat sb;
    assert_int_equal(stat(shard, &sb), 0);
    assert_int_equal(truncate(shard, sb.st_size - 1000), 0);
    uint32_t sum = dir_sum(f->in);
    int rc = run_cli(f, f->out, NULL);
    assert_clean_failure(f, f->out, rc, "model.safetensors", NULL);
    assert_int_equal(dir_sum(f->in), sum);
    free(shard);
}

enum { CHANGE_SIZE, CHANGE_MTIME, CHANGE_BYTES_MTIME_KEPT, CHANGE_TRUNCATE };

/* Shard 2 of the run below ends with a copied tensor, shard 3 begins with a
 * layer: a truncation after shard 1 is met by write() from the mapping
 * (EFAULT), after shard 2 by the layer's reads (SIGBUS). */

/* Rewrites bytes in the middle of path in place (same size) and sets its
 * mtime back: only ctime tells. */
static void rewrite_keep_mtime(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char b[64];
    off_t at = sb.st_size / 2;
    assert_int_equal(pread(fd, b, sizeof b, at), (ssize_t)sizeof b);
    for (size_t i = 0; i < sizeof b; i++) b[i] ^= 0x5a;
    assert_int_equal(pwrite(fd, b, sizeof b, at), (ssize_t)sizeof b);
    close(fd);
    struct timespec ts[2] = {sb.st_atim, sb.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    struct stat after;
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_size, sb.st_size);
    assert_memory_equal(&after.st_mtim, &sb.st_mtim, sizeof sb.st_mtim);
}

/* Pauses the run after shard `after` (1-based), changes the input, lets it go on. */
static void change_during_run(fixture *f, int how, int after)
{
    char point[32], pause[40];
    snprintf(point, sizeof point, "after_shard_%d", after);
    snprintf(pause, sizeof pause, "%s:3", point);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(f->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        setenv("HC_TEST_PAUSE_AT", pause, 1);
        if (f->format)
            execl(f->cli, f->cli, f->in, f->out, "--max-shard-size", "64K", "--verify", "off",
                  "--format", f->format, (char *)NULL);
        else
            execl(f->cli, f->cli, f->in, f->out, "--max-shard-size", "64K", "--verify", "off",
                  (char *)NULL);
        _exit(127);
    }
    int paused = 0;
    for (int i = 0; i < 3000 && !paused; i++) {
        char *log = hc_test_read_file(f->log, NULL);
        paused = log && strstr(log, point) != NULL;
        free(log);
        if (!paused) usleep(10000);
    }
    assert_true(paused);
    const char *changed = how == CHANGE_SIZE ? "generation_config.json" : "model.safetensors";
    char *path = hc_test_path_join(f->in, changed);
    struct stat sb;
    if (how == CHANGE_TRUNCATE) { /* to 4 KiB: the next tensors' pages raise SIGBUS */
        assert_int_equal(stat(path, &sb), 0);
        assert_int_equal(truncate(path, 4096), 0);
    } else if (how == CHANGE_SIZE) {
        FILE *fp = fopen(path, "a");
        fputs("\n", fp);
        fclose(fp);
    } else if (how == CHANGE_MTIME) { /* same bytes, new mtime */
        struct timespec ts[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
    } else {
        rewrite_keep_mtime(path);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    assert_clean_failure(f, f->out, rc, changed,
                         how == CHANGE_TRUNCATE ? "truncated while being read"
                                                : "changed during the run");
    if (how == CHANGE_BYTES_MTIME_KEPT) {
        char *log = hc_test_read_file(f->log, NULL);
        assert_non_null(strstr(log, "ctime"));
        free(log);
    }
    free(path);
}

static void test_input_changed_size(void **state) { change_during_run(*state, CHANGE_SIZE, 1); }
static void test_input_changed_mtime(void **state) { change_during_run(*state, CHANGE_MTIME, 1); }
/* an input rewritten in place between shards with its mtime set back: the
 * output would mix two inputs */
static void test_input_rewritten_mtime_kept(void **state)
{
    change_during_run(*state, CHANGE_BYTES_MTIME_KEPT, 1);
}
/* the mapped input shard truncated between two output shards: the next
 * layer's read raised SIGBUS and killed the run (now it gets zeros and the
 * tensor boundary after it fails the run naming the input); a copied
 * tensor's write() failed with "Bad address" naming the output */
static void test_input_truncated_before_layer(void **state)
{
    change_during_run(*state, CHANGE_TRUNCATE, 2);
}
/* the same for a float input: the row source's pread falls short, its
 * fallback reads the mapping (zeros past the end) and the run fails naming
 * the input */
static void test_float_input_truncated_before_layer(void **state)
{
    change_during_run(*state, CHANGE_TRUNCATE, 2);
}
static void test_input_truncated_before_copy(void **state)
{
    change_during_run(*state, CHANGE_TRUNCATE, 1);
}

static void test_permission_denied(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0) {
        char *shard = hc_test_path_join(f->in, "model.safetensors");
        chmod(shard, 0);
        int rc = run_cli(f, f->out, NULL);
        chmod(shard, 0644);
        assert_clean_failure(f, f->out, rc, "model.safetensors", "Permission denied");
        free(shard);
        return;
    }
    /* root bypasses permission bits: an OUT_DIR whose parent is a regular file
     * cannot be created either, and must fail the same clean way */
    printf("NOTICE: running as root, which bypasses permission bits: testing an OUT_DIR that "
           "cannot be created (its parent is a regular file) instead of chmod 000\n");
    char *file = hc_test_path_join(f->root, "plainfile");
    assert_int_equal(hc_test_write_file(file, "x", 1), 0);
    char *out = hc_test_path_join(file, "out");
    int rc = run_cli(f, out, NULL);
    assert_clean_failure(f, out, rc, "plainfile/out", "Not a directory");
    assert_int_equal(dir_sum(f->in), f->in_sum);
    free(out), free(file);
}

static void test_missing_indexed_shard(void **state)
{
    fixture *f = *state;
    char *single = hc_test_path_join(f->in, "model.safetensors");
    char *first = hc_test_path_join(f->in, "model-00001-of-00002.safetensors");
    assert_int_equal(rename(single, first), 0);
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(first, &st, NULL), HC_OK);
    size_t n = hc_st_count(st), len = 0, cap = 64 + n * 600;
    char *index = malloc(cap);
    len += (size_t)snprintf(index + len, cap - len, "{\"metadata\": {}, \"weight_map\": {");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(index + len, cap - len, "%s\"%s\": \"model-0000%d-of-00002."
                                "safetensors\"", i ? ", " : "", hc_st_tensor_at(st, i)->name,
                                i == n - 1 ? 2 : 1);
    snprintf(index + len, cap - len, "}}");
    hc_st_close(st);
    char *ipath = hc_test_path_join(f->in, "model.safetensors.index.json");
    assert_int_equal(hc_test_write_file(ipath, index, strlen(index)), 0);
    uint32_t sum = dir_sum(f->in);
    int rc = run_cli(f, f->out, NULL);
    assert_clean_failure(f, f->out, rc, "model-00002-of-00002.safetensors", NULL);
    assert_int_equal(dir_sum(f->in), sum);
    free(index), free(ipath), free(single), free(first);
}

static int check_out(const fixture *f, const char *dir);

/* Fills the file system of dir: a file grown until ENOSPC. */
static void fill_disk(const char *dir)
{
    char *path = hc_test_path_join(dir, "filler");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    static char block[4096];
    while (write(fd, block, sizeof block) > 0) {}
    while (write(fd, block, 1) > 0) {}
    close(fd);
    free(path);
}

/* `report OUT` on a full disk: it fails, and the output is as it was (old
 * reports, old manifest, no temporary file); with room again it succeeds and
 * the manifest follows. It used to delete the old reports first. */
static void test_report_disk_full(void **state)
{
    fixture *f = *state;
    char *mnt = hc_test_path_join(f->root, "tiny");
    mkdir(mnt, 0755);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=4m") != 0) {
        hc_test_skip_notice("privilege", "cannot mount a tmpfs here (not root / no "
                            "CAP_SYS_ADMIN): report-on-a-full-disk case skipped");
        free(mnt);
        skip();
        return;
    }
    char *out = hc_test_path_join(mnt, "out"), cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --max-shard-size 64K --verify cpu -q 2>'%s'",
             f->cli, f->in, out, f->log);
    assert_int_equal(system(cmd), 0);
    uint32_t before = dir_sum(out);
    int files = hc_test_dir_count(out);
    fill_disk(mnt);
    snprintf(cmd, sizeof cmd, "'%s' report '%s' --verify cpu -q 2>'%s'", f->cli, out, f->log);
    int rc = system(cmd);
    char *log = hc_test_read_file(f->log, NULL);
    printf("  message: %s", log ? log : "(none)\n");
    assert_int_equal(WEXITSTATUS(rc), 1);
    assert_non_null(strstr(log, "No space left on device"));
    free(log);
    assert_int_equal(hc_test_dir_count(out), files); /* no temporary file left */
    assert_int_equal(dir_sum(out), before);          /* every file as it was */
    assert_int_equal(check_out(f, out), 0);
    char *filler = hc_test_path_join(mnt, "filler");
    unlink(filler);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(check_out(f, out), 0); /* new reports, manifest updated with them */
    assert_int_equal(hc_test_dir_count(out), files);
    umount(mnt);
    free(filler), free(out), free(mnt);
}

static int check_out(const fixture *f, const char *dir)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' check '%s' >'%s' 2>&1", f->cli, dir, f->log);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* `check` names the file and the tensor of a flipped byte, a truncated
 * shard, a missing and an extra file; `report` keeps the manifest valid. */
static void test_check_reports_corruption(void **state)
{
    fixture *f = *state;
    assert_int_equal(run_cli(f, f->out, NULL), 0);
    assert_int_equal(check_out(f, f->out), 0);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' report '%s' -q --verify cpu 2>/dev/null", f->cli, f->out);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(check_out(f, f->out), 0);
    /* flip one byte in the middle of shard 3's first tensor (header is < 4 KiB) */
    char *s3 = hc_test_path_join(f->out, "model-00003-of-00013.safetensors");
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(s3, &st, NULL), HC_OK);
    const hc_st_tensor *t = hc_st_tensor_at(st, 0);
    char tensor[512];
    snprintf(tensor, sizeof tensor, "tensor %s:", t->name);
    size_t len = 0;
    unsigned char *bytes = hc_test_read_file(s3, &len);
    long at = (long)(len - (size_t)hc_st_tensor_at(st, hc_st_count(st) - 1)->offset -
                     hc_st_tensor_at(st, hc_st_count(st) - 1)->nbytes) /* header end */ +
              (long)t->offset + (long)t->nbytes / 2;
    hc_st_close(st);
    bytes[at] ^= 0x40;
    assert_int_equal(hc_test_write_file(s3, bytes, len), 0);
    free(bytes);
    char *s5 = hc_test_path_join(f->out, "model-00005-of-00013.safetensors");
    assert_int_equal(truncate(s5, 100), 0);
    char *tok = hc_test_path_join(f->out, "generation_config.json");
    char *extra = hc_test_path_join(f->out, "notes.txt");
    unlink(tok);
    assert_int_equal(hc_test_write_file(extra, "x", 1), 0);
    assert_int_equal(check_out(f, f->out), 1);
    char *log = hc_test_read_file(f->log, NULL);
    printf("%s", log);
    assert_non_null(strstr(log, "model-00003-of-00013.safetensors: CRC-32 mismatch"));
    assert_non_null(strstr(log, tensor));
    assert_non_null(strstr(log, "model-00005-of-00013.safetensors: size 100"));
    assert_non_null(strstr(log, "generation_config.json: missing"));
    assert_non_null(strstr(log, "notes.txt: extra file"));
    free(log), free(s3), free(s5), free(tok), free(extra);
    snprintf(cmd, sizeof cmd, "'%s' check >/dev/null 2>&1", f->cli);
    int rc = system(cmd);
    assert_int_equal(WEXITSTATUS(rc), 2);
}

/* Edits dir's manifest: drops the entry named drop (may be NULL) and, when
 * refresh is not NULL, recomputes that file's entry from its bytes. */
static void edit_manifest(const char *dir, const char *drop, const char *refresh)
{
    char *path = hc_test_path_join(dir, "humming_manifest.json");
    char *text = hc_test_read_file(path, NULL);
    cJSON *root = cJSON_Parse(text), *files = cJSON_GetObjectItem(root, "files");
    for (int i = cJSON_GetArraySize(files) - 1; i >= 0; i--) {
        const char *nm = cJSON_GetObjectItem(cJSON_GetArrayItem(files, i), "name")->valuestring;
        if ((drop && !strcmp(nm, drop)) || (refresh && !strcmp(nm, refresh)))
            cJSON_DeleteItemFromArray(files, i);
    }
    if (refresh) {
        hc_file_crc c;
        assert_int_equal(hc_file_crc_compute(dir, refresh, &c, NULL), HC_OK);
        char crc[16];
        snprintf(crc, sizeof crc, "%08x", c.crc);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", refresh);
        cJSON_AddNumberToObject(o, "size", (double)c.size);
        cJSON_AddStringToObject(o, "crc32", crc);
        cJSON_AddItemToArray(files, o);
        hc_file_crc_free(&c);
    }
    char *out = cJSON_Print(root);
    assert_int_equal(hc_test_write_file(path, out, strlen(out)), 0);
    free(out), free(text), free(path);
    cJSON_Delete(root);
}

/* Removes every weight_map entry that names shard from dir's index. */
static void drop_from_index(const char *dir, const char *shard)
{
    char *path = hc_test_path_join(dir, "model.safetensors.index.json");
    char *text = hc_test_read_file(path, NULL);
    cJSON *root = cJSON_Parse(text), *wm = cJSON_GetObjectItem(root, "weight_map");
    for (int i = cJSON_GetArraySize(wm) - 1; i >= 0; i--)
        if (!strcmp(cJSON_GetArrayItem(wm, i)->valuestring, shard))
            cJSON_DeleteItemFromArray(wm, i);
    char *out = cJSON_Print(root);
    assert_int_equal(hc_test_write_file(path, out, strlen(out)), 0);
    free(out), free(text), free(path);
    cJSON_Delete(root);
}

static void check_expect(const fixture *f, const char *dir, int want, const char *needle)
{
    int rc = check_out(f, dir);
    char *log = hc_test_read_file(f->log, NULL);
    printf("  check exit %d: %s", rc, log ? log : "(no output)\n");
    assert_int_equal(rc, want);
    if (needle && (log == NULL || strstr(log, needle) == NULL))
        fail_msg("check does not say \"%s\"", needle);
    free(log);
}

/* A shard deleted together with its manifest entry (and its index entries)
 * still fails `check`: config.json and the index say what must be there.
 * An empty or missing manifest fails too. */
static void test_check_promises(void **state)
{
    fixture *f = *state;
    assert_int_equal(run_cli(f, f->out, NULL), 0);
    const char *s4 = "model-00004-of-00013.safetensors";
    char *p4 = hc_test_path_join(f->out, s4);
    assert_int_equal(unlink(p4), 0);
    edit_manifest(f->out, s4, NULL);
    check_expect(f, f->out, 1, "model-00004-of-00013.safetensors: named by "
                 "model.safetensors.index.json");
    /* the index rewritten to match (its entry recomputed): the layers remain */
    drop_from_index(f->out, s4);
    edit_manifest(f->out, NULL, "model.safetensors.index.json");
    check_expect(f, f->out, 1, "config.json: layer model.layers.0.mlp.gate_proj: its tensor "
                 "model.layers.0.mlp.gate_proj.weight is in no shard");
    /* a single-shard output without its shard and entry */
    char *one = hc_test_path_join(f->root, "one"), cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --verify off -q", f->cli, f->in, one);
    assert_int_equal(system(cmd), 0);
    check_expect(f, one, 0, NULL);
    char *single = hc_test_path_join(one, "model.safetensors");
    assert_int_equal(unlink(single), 0);
    edit_manifest(one, "model.safetensors", NULL);
    check_expect(f, one, 1, "model.safetensors: not in the manifest");
    /* an empty manifest file, a manifest listing nothing, none at all */
    char *man = hc_test_path_join(one, "humming_manifest.json");
    assert_int_equal(hc_test_write_file(man, "", 0), 0);
    check_expect(f, one, 1, "not a manifest");
    const char *nothing = "{\"format\": \"humming-manifest\", \"version\": 1, \"files\": []}";
    char *bare = hc_test_path_join(f->root, "bare");
    assert_int_equal(mkdir(bare, 0755), 0);
    char *bare_man = hc_test_path_join(bare, "humming_manifest.json");
    assert_int_equal(hc_test_write_file(bare_man, nothing, strlen(nothing)), 0);
    check_expect(f, bare, 1, "it lists no files");
    assert_int_equal(unlink(bare_man), 0);
    check_expect(f, bare, 1, "humming_manifest.json: missing");
    free(p4), free(one), free(single), free(man), free(bare), free(bare_man);
}

/* Drops the manifest's record of one tensor (the shard's bytes unchanged). */
static void forget_tensor(const char *dir, const char *tensor)
{
    char *path = hc_test_path_join(dir, "humming_manifest.json");
    char *text = hc_test_read_file(path, NULL);
    cJSON *root = cJSON_Parse(text), *files = cJSON_GetObjectItem(root, "files"), *e;
    int dropped = 0;
    cJSON_ArrayForEach(e, files) {
        cJSON *list = cJSON_GetObjectItem(e, "tensors");
        for (int i = cJSON_GetArraySize(list) - 1; i >= 0; i--)
            if (!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(list, i), "name")->valuestring,
                        tensor)) {
                cJSON_DeleteItemFromArray(list, i);
                dropped++;
            }
    }
    assert_int_equal(dropped, 1);
    char *out = cJSON_Print(root);
    assert_int_equal(hc_test_write_file(path, out, strlen(out)), 0);
    free(out), free(text), free(path);
    cJSON_Delete(root);
}

/* MoE stacks pass `check` in both layouts: canonical outputs hold one tensor
 * per expert ("X.experts.<e>.Y.weight"), tiles one stacked tensor; a missing
 * expert is named. */
static void test_check_moe_layers(void **state)
{
    fixture *f = *state;
    char *in = hc_test_path_join(f->root, "moe-in"), cmd[16384];
    assert_int_equal(hc_test_gen_model(in, "--format float16"), 0);
    const char *layouts[] = {"canonical", "tiles"};
    for (int i = 0; i < 2; i++) {
        char *out = hc_test_path_join(f->root, layouts[i]);
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --format w4a16 --layout %s --verify off -q "
                 "2>'%s'", f->cli, in, out, layouts[i], f->log);
        assert_int_equal(system(cmd), 0);
        check_expect(f, out, 0, NULL);
        free(out);
    }
    char *canon = hc_test_path_join(f->root, "canonical");
    forget_tensor(canon, "model.layers.1.mlp.experts.2.up_proj.weight");
    check_expect(f, canon, 1, "layer model.layers.1.mlp.experts.up_proj: its tensor "
                 "model.layers.1.mlp.experts.2.up_proj.weight is in no shard");
    free(canon), free(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_input_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_changed_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_changed_mtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_rewritten_mtime_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_truncated_before_layer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_float_input_truncated_before_layer, setup_float, teardown),
        cmocka_unit_test_setup_teardown(test_input_truncated_before_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_permission_denied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_indexed_shard, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_reports_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_promises, setup, teardown),
        cmocka_unit_test_setup_teardown(test_check_moe_layers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
