/* hc_test_util.c - shared test helpers (see hc_test_util.h). */
#include "hc_test_util.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *hc_test_mkdtemp(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (base == NULL || base[0] == '\0') base = "/tmp";
    size_t len = strlen(base) + strlen(tag) + 16;
    char *path = malloc(len);
    if (path == NULL) return NULL;
    snprintf(path, len, "%s/hc-%s-XXXXXX", base, tag);
    if (mkdtemp(path) == NULL) {
        free(path);
        return NULL;
    }
    return path;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = (flag == FTW_DP) ? rmdir(path) : unlink(path);
    return rc == 0 || errno == ENOENT ? 0 : -1;
}

int hc_test_rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

char *hc_test_path_join(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = malloc(len);
    if (p != NULL) snprintf(p, len, "%s/%s", dir, name);
    return p;
}

int hc_test_write_file(const char *path, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    if (fp == NULL) return -1;
    size_t put = len ? fwrite(data, 1, len, fp) : 0;
    int rc = fclose(fp);
    return (put == len && rc == 0) ? 0 : -1;
}

void *hc_test_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fileno(fp), &st) == 0) buf = malloc((size_t)st.st_size + 1);
    if (buf != NULL && fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf == NULL) return NULL;
    buf[st.st_size] = '\0';
    if (len) *len = (size_t)st.st_size;
    return buf;
}

int hc_test_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int hc_test_dir_count(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

const char *hc_test_cli(void)
{
    const char *cli = getenv("HC_CLI");
    return cli ? cli : "build/humming-convert";
}

int hc_test_gen_model(const char *dir, const char *args)
{
    const char *build = getenv("HC_BUILD") ? getenv("HC_BUILD") : "build";
    char cmd[8192];
    int n = snprintf(cmd, sizeof cmd, "'%s/examples/gen_example_model' '%s' %s >/dev/null", build,
                     dir, args ? args : "");
    return n > 0 && (size_t)n < sizeof cmd && system(cmd) == 0 ? 0 : -1;
}

void hc_test_skip_notice(const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("SKIP[%s]: ", kind);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

int hc_test_each_safetensors(const char *dir, hc_test_file_fn fn, void *ctx, int *files,
                             int *compared)
{
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    struct dirent *de;
    int failed = 0;
    *files = *compared = 0;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 12 || strcmp(de->d_name + len - 12, ".safetensors") != 0) continue;
        char path[4096];
        int cmp = 0;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        (*files)++;
        failed += fn(path, de->d_name, &cmp, ctx) != 0;
        *compared += cmp;
    }
    closedir(d);
    return failed;
}

int hc_test_golden_walk(const char *dir, hc_test_file_fn fn, const char *label, int *compared)
{
    int files = 0;
    int failed = hc_test_each_safetensors(dir, fn, NULL, &files, compared);
    printf("  %s: %d files, %d references compared, %d failed\n", label, files, *compared,
           failed);
    return failed;
}
