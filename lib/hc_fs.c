/* hc_fs.c - filesystem helpers (see hc_fs.h). */
#include "hc_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

hc_status hc_path_join(char *buf, size_t len, const char *dir, const char *name, hc_error *err)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len) HC_FAIL(err, HC_ERR_ARG, "path too long: %s/%s", dir, name);
    return HC_OK;
}

int hc_path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

int hc_path_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

hc_status hc_fs_make_temp_dir_beside(const char *dest, char *buf, size_t len, hc_error *err)
{
    char trimmed[4096];
    int n = snprintf(trimmed, sizeof trimmed, "%s", dest);
    if (n < 0 || (size_t)n >= sizeof trimmed) HC_FAIL(err, HC_ERR_ARG, "path too long: %s", dest);
    while (n > 1 && trimmed[n - 1] == '/') trimmed[--n] = '\0';
    n = snprintf(buf, len, "%s.tmp-XXXXXX", trimmed);
    if (n < 0 || (size_t)n >= len) HC_FAIL(err, HC_ERR_ARG, "path too long: %s", dest);
    if (mkdtemp(buf) == NULL)
        HC_FAIL(err, HC_ERR_IO, "%s: cannot create temporary output directory: %s", buf,
                strerror(errno));
    return HC_OK;
}

hc_status hc_fs_remove_tree(const char *path, hc_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) return HC_OK;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d == NULL) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        struct dirent *e;
        hc_status status = HC_OK;
        while (status == HC_OK && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char child[4096];
            status = hc_path_join(child, sizeof child, path, e->d_name, err);
            if (status == HC_OK) status = hc_fs_remove_tree(child, err);
        }
        closedir(d);
        HC_TRY(status);
        if (rmdir(path) != 0) HC_FAIL(err, HC_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
        return HC_OK;
    }
    if (unlink(path) != 0) HC_FAIL(err, HC_ERR_IO, "%s: cannot remove: %s", path, strerror(errno));
    return HC_OK;
}

/* Writes all of buf to fd, retrying short writes. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

hc_status hc_fs_write_file(const char *path, const void *data, size_t len, hc_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) HC_FAIL(err, HC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    int bad = write_all(fd, data, len) != 0 || fsync(fd) != 0;
    int saved = errno;
    if (close(fd) != 0 && !bad) { bad = 1; saved = errno; }
    if (bad) HC_FAIL(err, HC_ERR_IO, "%s: write failed: %s", path, strerror(saved));
    return HC_OK;
}

hc_status hc_fs_copy_file(const char *src, const char *dst, hc_error *err)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        close(in);
        HC_FAIL(err, HC_ERR_IO, "%s: cannot create: %s", dst, strerror(errno));
    }
    char buf[1 << 16];
    ssize_t r;
    int bad = 0;
    while (!bad && (r = read(in, buf, sizeof buf)) != 0) {
        if (r < 0 && errno == EINTR) continue;
        bad = r < 0 ? 1 : write_all(out, buf, (size_t)r) != 0 ? 2 : 0;
    }
    int saved = errno;
    if (!bad && fsync(out) != 0) { bad = 2; saved = errno; }
    close(in);
    if (close(out) != 0 && !bad) { bad = 2; saved = errno; }
    if (bad == 1) HC_FAIL(err, HC_ERR_IO, "%s: read failed: %s", src, strerror(saved));
    if (bad) HC_FAIL(err, HC_ERR_IO, "%s: write failed: %s", dst, strerror(saved));
    return HC_OK;
}

hc_status hc_fs_sync_path(const char *path, hc_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    int bad = fsync(fd) != 0;
    int saved = errno;
    close(fd);
    if (bad) HC_FAIL(err, HC_ERR_IO, "%s: fsync failed: %s", path, strerror(saved));
    return HC_OK;
}

/* fsyncs the directory holding path, so that a rename inside it is durable. */
static hc_status sync_parent(const char *path, hc_error *err)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    return hc_fs_sync_path(dirname(copy), err);
}

hc_status hc_fs_publish_dir(const char *tmp, const char *dest, int replace, hc_error *err)
{
    HC_TRY(hc_fs_sync_path(tmp, err));
    char old[4200] = "";
    if (hc_path_exists(dest)) {
        if (!replace) HC_FAIL(err, HC_ERR_ARG, "%s: already exists (use --force to replace it)", dest);
        snprintf(old, sizeof old, "%s.old-%ld", dest, (long)getpid());
        if (rename(dest, old) != 0)
            HC_FAIL(err, HC_ERR_IO, "%s: cannot move aside: %s", dest, strerror(errno));
    }
    if (rename(tmp, dest) != 0) {
        int saved = errno;
        if (old[0]) (void)rename(old, dest);
        HC_FAIL(err, HC_ERR_IO, "%s: cannot rename to %s: %s", tmp, dest, strerror(saved));
    }
    HC_TRY(sync_parent(dest, err));
    if (old[0]) HC_TRY(hc_fs_remove_tree(old, err));
    return HC_OK;
}
