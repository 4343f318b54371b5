/* hc_out_guard.c - output paths checked against the input, and the run lock
 * (see hc_out_guard.h). */
#include "hc_out_guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* path without trailing slashes ("/" stays "/"); fails when it does not fit */
static hc_status trimmed(const char *path, char *buf, size_t len, hc_error *err)
{
    size_t n = strlen(path);
    if (n == 0) HC_FAIL(err, HC_ERR_ARG, "empty path");
    if (n >= len) HC_FAIL(err, HC_ERR_ARG, "path too long: %.200s...", path);
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
    return HC_OK;
}

hc_status hc_real_path(const char *path, char *buf, size_t len, hc_error *err)
{
    char p[PATH_MAX], r[PATH_MAX];
    HC_TRY(trimmed(path, p, sizeof p, err));
    if (realpath(p, r) == NULL) {
        if (errno != ENOENT)
            HC_FAIL(err, HC_ERR_IO, "%s: cannot resolve: %s", p, strerror(errno));
        char *slash = strrchr(p, '/');
        const char *name = slash ? slash + 1 : p;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            HC_FAIL(err, HC_ERR_ARG, "%s: cannot resolve \"%s\" below a missing directory", path,
                    name);
        char parent[PATH_MAX];
        if (slash == p) snprintf(parent, sizeof parent, "/");
        else if (slash) snprintf(parent, sizeof parent, "%.*s", (int)(slash - p), p);
        else snprintf(parent, sizeof parent, ".");
        HC_TRY(hc_real_path(parent, r, sizeof r, err));
        size_t rl = strlen(r);
        int n = snprintf(r + rl, sizeof r - rl, "%s%s", rl > 1 ? "/" : "", name);
        if (n < 0 || (size_t)n >= sizeof r - rl) /* checked here: gcc -O1 sees no other check */
            HC_FAIL(err, HC_ERR_ARG, "path too long: %.200s...", path);
    }
    if (strlen(r) >= len) HC_FAIL(err, HC_ERR_ARG, "path too long: %.200s...", path);
    memcpy(buf, r, strlen(r) + 1);
    return HC_OK;
}

/* 1 when the real path a is b or lies below b */
static int within(const char *a, const char *b)
{
    size_t n = strlen(b);
    if (strncmp(a, b, n) != 0) return 0;
    return a[n] == '\0' || a[n] == '/' || (n == 1 && b[0] == '/');
}

static hc_status check_one(const char *rin, const char *in_dir, const char *p, const char *role,
                           hc_error *err)
{
    char t[PATH_MAX], rp[PATH_MAX];
    HC_TRY(trimmed(p, t, sizeof t, err));
    struct stat st;
    if (lstat(t, &st) == 0 && S_ISLNK(st.st_mode))
        HC_FAIL(err, HC_ERR_ARG, "%s: the %s is a symbolic link; refusing to write through it "
                "(give the real directory)", t, role);
    HC_TRY(hc_real_path(t, rp, sizeof rp, err));
    if (strcmp(rp, rin) == 0)
        HC_FAIL(err, HC_ERR_ARG, "%s: the %s is the input directory %s; refusing to replace the "
                "input: choose another OUT_DIR", t, role, in_dir);
    if (within(rp, rin))
        HC_FAIL(err, HC_ERR_ARG, "%s: the %s lies inside the input directory %s; refusing to "
                "write into the input: choose an OUT_DIR outside it", t, role, in_dir);
    if (within(rin, rp))
        HC_FAIL(err, HC_ERR_ARG, "%s: the %s contains the input directory %s; replacing it "
                "would delete the input: choose another OUT_DIR", t, role, in_dir);
    return HC_OK;
}

hc_status hc_out_guard_paths(const char *in_dir, const char *out_dir, const char *partial,
                             hc_error *err)
{
    char rin[PATH_MAX];
    if (realpath(in_dir, rin) == NULL)
        HC_FAIL(err, HC_ERR_IO, "%s: cannot resolve the input directory: %s", in_dir,
                strerror(errno));
    HC_TRY(check_one(rin, in_dir, out_dir, "output directory", err));
    return check_one(rin, in_dir, partial, "temporary output directory", err);
}

hc_status hc_out_guard_replaceable(const char *dir, const char *marker, const char *what,
                                   hc_error *err)
{
    struct stat st;
    if (lstat(dir, &st) != 0) HC_FAIL(err, HC_ERR_IO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        HC_FAIL(err, HC_ERR_ARG, "%s: exists and is not a directory; refusing to delete it for "
                "%s", dir, what);
    DIR *d = opendir(dir);
    if (d == NULL) HC_FAIL(err, HC_ERR_IO, "%s: cannot open: %s", dir, strerror(errno));
    int entries = 0, ours = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        entries++;
        /* the marker or its temporary twin ("<marker>.tmp...": a run killed mid-write) */
        ours |= strncmp(e->d_name, marker, strlen(marker)) == 0;
    }
    closedir(d);
    if (entries > 0 && !ours)
        HC_FAIL(err, HC_ERR_ARG, "%s: exists and is not a humming-convert output (no %s); "
                "refusing to delete it for %s: remove it yourself or choose another OUT_DIR",
                dir, marker, what);
    return HC_OK;
}

/* the pid a holder wrote into the lock file, or 0 */
static long holder_pid(int fd)
{
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    return n > 0 ? strtol(buf, NULL, 10) : 0;
}

/* Opens and locks the lock file once: HC_OK and *fd, or *fd = -1 when the
 * file was replaced under us (the caller tries again). */
static hc_status lock_once(hc_out_lock *lock, const char *out, int *fd, hc_error *err)
{
    *fd = open(lock->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (*fd < 0)
        HC_FAIL(err, HC_ERR_IO, "%s: cannot create the lock file: %s", lock->path,
                strerror(errno));
    struct stat a, b;
    if (fstat(*fd, &a) != 0 || !S_ISREG(a.st_mode)) {
        close(*fd);
        HC_FAIL(err, HC_ERR_IO, "%s: the lock file is not a regular file", lock->path);
    }
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int saved = errno;
        long pid = holder_pid(*fd);
        close(*fd);
        if (saved == EWOULDBLOCK)
            HC_FAIL(err, HC_ERR_ARG, "%s: another humming-convert run (pid %ld) is writing this "
                    "output (lock %s held); wait for it to finish or stop it", out, pid,
                    lock->path);
        HC_FAIL(err, HC_ERR_IO, "%s: cannot lock: %s", lock->path, strerror(saved));
    }
    /* the holder before us removes the file as it lets go: ours must still be the one there */
    if (lstat(lock->path, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        close(*fd);
        *fd = -1;
    }
    return HC_OK;
}

hc_status hc_out_lock_take(const char *out_dir, hc_out_lock *lock, hc_error *err)
{
    char out[PATH_MAX];
    lock->fd = -1;
    HC_TRY(trimmed(out_dir, out, sizeof out, err));
    if ((size_t)snprintf(lock->path, sizeof lock->path, "%s.lock", out) >= sizeof lock->path)
        HC_FAIL(err, HC_ERR_ARG, "path too long: %.200s...", out_dir);
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 16; tries++) HC_TRY(lock_once(lock, out, &fd, err));
    if (fd < 0) HC_FAIL(err, HC_ERR_IO, "%s: the lock file keeps being replaced", lock->path);
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        int saved = errno;
        unlink(lock->path);
        close(fd);
        HC_FAIL(err, HC_ERR_IO, "%s: cannot write: %s", lock->path, strerror(saved));
    }
    lock->fd = fd;
    return HC_OK;
}

void hc_out_lock_release(hc_out_lock *lock)
{
    if (lock->fd < 0) return;
    unlink(lock->path); /* while still held: a waiting opener sees the file gone */
    close(lock->fd);
    lock->fd = -1;
}
