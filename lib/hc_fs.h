/* hc_fs.h - filesystem helpers for crash-safe output.
 *
 * Output is assembled in a temporary directory beside the destination and
 * renamed into place only when complete, so a half-written output never
 * carries the final name. */
#ifndef HC_FS_H
#define HC_FS_H

#include <stddef.h>

#include "hc_error.h"

/* Joins dir and name with one '/' into buf; fails (HC_ERR_ARG) if it does not fit. */
hc_status hc_path_join(char *buf, size_t len, const char *dir, const char *name, hc_error *err);

/* 1 if path exists (any type), 0 if not. */
int hc_path_exists(const char *path);
/* 1 if path is a directory. */
int hc_path_is_dir(const char *path);

/* Creates a new empty directory "<dest>.tmp-XXXXXX" beside dest; writes its
 * path into buf. */
hc_status hc_fs_make_temp_dir_beside(const char *dest, char *buf, size_t len, hc_error *err);

/* Removes path and everything under it (no error if it does not exist). */
hc_status hc_fs_remove_tree(const char *path, hc_error *err);

/* Copies the regular file src to dst (created new, fsynced). */
hc_status hc_fs_copy_file(const char *src, const char *dst, hc_error *err);

/* Writes len bytes to a new file at path and fsyncs it. */
hc_status hc_fs_write_file(const char *path, const void *data, size_t len, hc_error *err);

/* fsyncs a file or directory by path. */
hc_status hc_fs_sync_path(const char *path, hc_error *err);

/* Moves the finished directory tmp to dest. If dest exists it must be removed
 * first by the caller's choice (replace != 0: the old dest is moved aside and
 * deleted only after tmp is in place). */
hc_status hc_fs_publish_dir(const char *tmp, const char *dest, int replace, hc_error *err);

#endif
