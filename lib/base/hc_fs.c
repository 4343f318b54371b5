/* hc_fs.c - filesystem helpers (see hc_fs.h). */
#include "hc_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
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

/* What a non-regular file is, for messages. */
static const char *file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "a special file";
}

hc_status hc_fs_open_regular(const char *path, int flags, int *fd, struct stat *st,
                             hc_error *err)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    if (flags & HC_FS_NOFOLLOW) oflags |= O_NOFOLLOW;
    *fd = open(path, oflags);
    if (*fd < 0 && errno == ELOOP && (flags & HC_FS_NOFOLLOW))
        HC_FAIL(err, HC_ERR_IO, "%s: is a symbolic link, not a regular file (refused)", path);
    if (*fd < 0) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(*fd, &sb) != 0 || (S_ISREG(sb.st_mode) && fcntl(*fd, F_SETFL, O_RDONLY) != 0)) {
        int saved = errno;
        close(*fd);
        *fd = -1;
        HC_FAIL(err, HC_ERR_IO, "%s: cannot read: %s", path, strerror(saved));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(*fd);
        *fd = -1;
        HC_FAIL(err, HC_ERR_IO, "%s: is %s, not a regular file (refused)", path,
                file_kind(sb.st_mode));
    }
    if (st) *st = sb;
    return HC_OK;
}

/* Reads fd to its end into *buf (grown as needed, at most max + 1 bytes so
 * that a file past max is noticed); *len gets the bytes read. */
static int read_to_end(int fd, size_t hint, size_t max, char **buf, size_t *len)
{
    size_t cap = (hint < max ? hint : max) + 2, n = 0;
    char *b = malloc(cap);
    while (b != NULL) {
        if (n + 1 == cap) { /* full: n <= max here, so cap < max + 2 */
            size_t want = cap - 1 > max / 2 ? max + 2 : 2 * cap;
            char *g = realloc(b, want);
            if (g == NULL) {
                free(b);
                return -2;
            }
            b = g;
            cap = want;
        }
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            errno = e;
            return -1;
        }
        n += (size_t)r;
        if (r == 0 || n > max) break;
    }
    *buf = b;
    *len = n;
    return b ? 0 : -2; /* the first malloc failed */
}

hc_status hc_fs_read_file(const char *path, size_t max, int flags, char **out, size_t *len,
                          hc_error *err)
{
    *out = NULL;
    int fd;
    struct stat sb;
    HC_TRY(hc_fs_open_regular(path, flags, &fd, &sb, err));
    if ((uint64_t)sb.st_size > (uint64_t)max) {
        close(fd);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: %lld bytes, larger than the limit of %zu bytes for "
                "this file (refused)", path, (long long)sb.st_size, max);
    }
    char *buf = NULL;
    size_t n = 0;
    int rc = read_to_end(fd, (size_t)sb.st_size, max, &buf, &n);
    int saved = errno;
    close(fd);
    if (rc == -1) HC_FAIL(err, HC_ERR_IO, "%s: read failed: %s", path, strerror(saved));
    if (rc == -2) HC_FAIL(err, HC_ERR_NOMEM, "%s: out of memory reading it", path);
    if (n > max) {
        free(buf);
        HC_FAIL(err, HC_ERR_FORMAT, "%s: grew past the limit of %zu bytes while read (refused)",
                path, max);
    }
    buf[n] = '\0';
    *out = buf;
    if (len) *len = n;
    return HC_OK;
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
    if (bad) {
        unlink(path); /* ours (O_EXCL): no half-written file is left */
        HC_FAIL(err, HC_ERR_IO, "%s: write failed: %s", path, strerror(saved));
    }
    return HC_OK;
}

hc_status hc_fs_copy_file(const char *src, const char *dst, hc_error *err)
{
    int in;
    HC_TRY(hc_fs_open_regular(src, 0, &in, NULL, err));
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
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* never waits on a FIFO */
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
