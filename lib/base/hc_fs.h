/* hc_fs.h - filesystem helpers for crash-safe output.
 *
 * Output is assembled in a temporary directory beside the destination and
 * renamed into place only when complete, so a half-written output never
 * carries the final name. */
#ifndef HC_FS_H
#define HC_FS_H

#include <stddef.h>
#include <sys/stat.h>

#include "hc_error.h"

/* Size limits of whole-file reads (docs/robustness.md, "Limits"): a file past
 * its limit is refused, naming it, before anything is read. JSON and YAML
 * files other than the two below: config.json, side configs, the journal,
 * reports, recipes (those stop at 16 MiB, hc_recipe.c). */
#define HC_FS_MAX_JSON ((size_t)64 << 20)
/* model.safetensors.index.json and humming_manifest.json, which grow with
 * the number of tensors (about 150 bytes each). */
#define HC_FS_MAX_INDEX ((size_t)256 << 20)

/* Flags of hc_fs_open_regular / hc_fs_read_file. */
#define HC_FS_NOFOLLOW 1 /* refuse a symbolic link (files we wrote ourselves) */

/* Joins dir and name with one '/' into buf; fails (HC_ERR_ARG) if it does not fit. */
hc_status hc_path_join(char *buf, size_t len, const char *dir, const char *name, hc_error *err);

/* 1 if path exists (any type), 0 if not. */
int hc_path_exists(const char *path);
/* 1 if path is a directory. */
int hc_path_is_dir(const char *path);

/* Opens path read-only, refusing anything but a regular file without ever
 * blocking: the open uses O_NONBLOCK (a FIFO or device node would otherwise
 * wait for a writer or hardware), then fstat decides, then O_NONBLOCK is
 * cleared. HC_FS_NOFOLLOW in flags also refuses a symbolic link. Errors:
 * HC_ERR_IO naming path and what it is ("is a FIFO, not a regular file") or
 * the system error. On success the caller owns *fd; *st (may be NULL) gets
 * its fstat. */
hc_status hc_fs_open_regular(const char *path, int flags, int *fd, struct stat *st,
                             hc_error *err);

/* Reads the whole regular file path (opened as above) into a malloc'ed,
 * NUL-terminated buffer owned by the caller; *len (may be NULL) gets the
 * size without the NUL. A file over max bytes is refused (HC_ERR_FORMAT,
 * naming it, its size and the limit) before it is read, and so is one that
 * grows past max while being read. */
hc_status hc_fs_read_file(const char *path, size_t max, int flags, char **out, size_t *len,
                          hc_error *err);

/* Creates a new empty directory "<dest>.tmp-XXXXXX" beside dest; writes its
 * path into buf. */
hc_status hc_fs_make_temp_dir_beside(const char *dest, char *buf, size_t len, hc_error *err);

/* Removes path and everything under it (no error if it does not exist). */
hc_status hc_fs_remove_tree(const char *path, hc_error *err);

/* Copies the regular file src (hc_fs_open_regular: a FIFO or device is
 * refused, never waited on) to dst (created new, fsynced). */
hc_status hc_fs_copy_file(const char *src, const char *dst, hc_error *err);

/* Writes len bytes to a new file at path (created: an existing one is an
 * error) and fsyncs it; on failure the file is removed again. */
hc_status hc_fs_write_file(const char *path, const void *data, size_t len, hc_error *err);

/* fsyncs a file or directory by path. */
hc_status hc_fs_sync_path(const char *path, hc_error *err);

/* Moves the finished directory tmp to dest. If dest exists it must be removed
 * first by the caller's choice (replace != 0: the old dest is moved aside and
 * deleted only after tmp is in place). */
hc_status hc_fs_publish_dir(const char *tmp, const char *dest, int replace, hc_error *err);

#endif
