/* hc_test_util.h - small helpers shared by the CMocka tests: temporary
 * directories, whole-file I/O, paths. All return values the caller frees
 * with free(); failures return NULL / -1 and never abort. */
#ifndef HC_TEST_UTIL_H
#define HC_TEST_UTIL_H

#include <stddef.h>

/* Creates a new empty directory $TMPDIR/hc-<tag>-XXXXXX (/tmp when TMPDIR is
 * unset) and returns its path, or NULL. */
char *hc_test_mkdtemp(const char *tag);
/* Removes path and everything below it, like `rm -rf` (symlinks are not
 * followed). A missing path is success. Returns 0 or -1. */
int hc_test_rm_rf(const char *path);
/* Returns "dir/name" (malloc'ed) or NULL. */
char *hc_test_path_join(const char *dir, const char *name);
/* Creates or truncates path and writes len bytes. Returns 0 or -1. */
int hc_test_write_file(const char *path, const void *data, size_t len);
/* Reads a whole file into a malloc'ed buffer with one extra NUL byte after
 * the contents (so text can be used as a string); *len gets the size.
 * Returns NULL on failure. */
void *hc_test_read_file(const char *path, size_t *len);
/* 1 if path exists (any kind of file), else 0. */
int hc_test_exists(const char *path);
/* Number of entries in dir other than "." and "..", or -1. */
int hc_test_dir_count(const char *dir);

/* The humming-convert binary under test: $HC_CLI, else build/humming-convert. */
const char *hc_test_cli(void);

/* Writes the example model into dir with examples/gen_example_model (from
 * $HC_BUILD, else build) and its extra arguments (e.g. "--format float16").
 * Returns 0 on success. */
int hc_test_gen_model(const char *dir, const char *args);

/* Prints "SKIP[kind]: <reason>" on stdout, flushed. tests/run_tests.sh counts
 * skips by kind and fails the run on any kind not in $HC_ALLOW_SKIPS (default
 * "gpu isa"): a check that could not run is never reported as passed. kind is
 * one of gpu, isa, golden, oracle, pypi, privilege. The caller then calls skip(). */
void hc_test_skip_notice(const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Calls fn(path, name, &compared, ctx) for each "*.safetensors" file in dir
 * (readdir order); fn returns non-zero when that file failed and sets
 * compared to 1 when it held a reference it checked. *files and *compared
 * get the counts. Returns the number of failed files, or -1 when dir cannot
 * be opened. */
typedef int (*hc_test_file_fn)(const char *path, const char *name, int *compared, void *ctx);
int hc_test_each_safetensors(const char *dir, hc_test_file_fn fn, void *ctx, int *files,
                             int *compared);
/* hc_test_each_safetensors over dir, then one summary line "  LABEL: N files,
 * N references compared, N failed". Returns the failed count (-1: no dir). */
int hc_test_golden_walk(const char *dir, hc_test_file_fn fn, const char *label, int *compared);

#endif
