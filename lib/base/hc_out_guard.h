/* hc_out_guard.h - keeps a run's output away from its input and from other
 * runs.
 *
 * The output directory and its temporary twin (OUT_DIR.partial) are deleted
 * and renamed during a run, so before anything is written: neither may be,
 * contain, or lie inside the input directory (real paths compared, links
 * resolved), neither may be a symbolic link, and an existing one is replaced
 * only when it is recognisably ours. One run at a time holds an advisory lock
 * on OUT_DIR. */
#ifndef HC_OUT_GUARD_H
#define HC_OUT_GUARD_H

#include <stddef.h>

#include "hc_error.h"

/* Writes into buf the real path of path, which need not exist: its longest
 * existing prefix resolved with realpath(3), the missing components appended.
 * Fails (HC_ERR_ARG) on a ".." among the missing components or an overlong
 * path, HC_ERR_IO when the existing prefix cannot be resolved. */
hc_status hc_real_path(const char *path, char *buf, size_t len, hc_error *err);

/* Checks out_dir and partial (either may be missing) against in_dir: refuses
 * (HC_ERR_ARG, naming both paths) when one equals, contains or lies inside
 * in_dir, or is a symbolic link. */
hc_status hc_out_guard_paths(const char *in_dir, const char *out_dir, const char *partial,
                             hc_error *err);

/* Checks that the existing directory dir may be deleted to make room: it is
 * empty or holds the file `marker` (our manifest, or our journal), or a file
 * whose name begins with it (its temporary copy, left by a killed run). Refuses
 * (HC_ERR_ARG) anything else, and anything that is not a directory; `what`
 * names the role in the message ("--force", "the partial output"). */
hc_status hc_out_guard_replaceable(const char *dir, const char *marker, const char *what,
                                   hc_error *err);

/* An advisory lock on an output directory: the file "<out_dir>.lock" beside
 * it, flock(2)ed for as long as the run holds it. */
typedef struct {
    int fd;          /* -1 when not held */
    char path[4200]; /* the lock file */
} hc_out_lock;

/* Takes the lock of out_dir without waiting. Fails (HC_ERR_ARG) when another
 * process holds it, naming the lock file; HC_ERR_IO when it cannot be made.
 * On success the caller owns *lock and releases it with hc_out_lock_release. */
hc_status hc_out_lock_take(const char *out_dir, hc_out_lock *lock, hc_error *err);

/* Removes the lock file and releases the lock; a no-op when not held. */
void hc_out_lock_release(hc_out_lock *lock);

#endif
