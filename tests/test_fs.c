/* test_fs - only regular files are read, never waited on, and never past a
 * size limit (docs/robustness.md, "Limits"): a FIFO, a device (a link to
 * /dev/zero) or an oversized file where a shard, config.json, the index, a
 * recipe, the --calib file, the kernel library, the journal, the manifest or
 * a manifest entry is expected gives a prompt error naming the file. Every
 * CLI run here is under `timeout`, so a read that blocks fails the test
 * (exit 124) instead of hanging it, and (outside ASan) under a 4 GiB address
 * space limit, so a read that never ends fails instead of exhausting the
 * machine's memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hc_fs.h"
#include "hc_test_util.h"

typedef struct {
    char *root, *in, *out, *log;
    const char *cli;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->root = hc_test_mkdtemp("fs");
    if (f == NULL || f->root == NULL) return -1;
    f->in = hc_test_path_join(f->root, "in");
    f->out = hc_test_path_join(f->root, "out");
    f->log = hc_test_path_join(f->root, "log.txt");
    f->cli = hc_test_cli();
    if (hc_test_gen_model(f->in, "--format humming --experts 0 --layers 1") != 0) return -1;
    alarm(300); /* the CLI runs have their own timeouts; this bounds the test itself */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    alarm(0);
    hc_test_rm_rf(f->root);
    free(f->root), free(f->in), free(f->out), free(f->log);
    free(f);
    return 0;
}

/* Runs `CLI ARGS` with stdout and stderr to f->log; returns the exit code
 * (124: it had to be killed after 30 s). */
static int run(const fixture *f, const char *args)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "%s timeout -s KILL 30 '%s' %s >'%s' 2>&1; echo $? >'%s.rc'",
             getenv("ASAN_OPTIONS") ? "" : "ulimit -v 4194304;", f->cli, args, f->log, f->log);
    int rc = system(cmd);
    char rcpath[4200];
    snprintf(rcpath, sizeof rcpath, "%s.rc", f->log);
    char *text = hc_test_read_file(rcpath, NULL);
    rc = text ? atoi(text) : -1;
    free(text);
    return rc == 137 ? 124 : rc;
}

/* Exit code want, and the log names `file` and says `what`. */
static void expect(const fixture *f, int rc, int want, const char *file, const char *what)
{
    char *log = hc_test_read_file(f->log, NULL);
    printf("  exit %d: %s", rc, log ? log : "(no output)\n");
    if (rc == 124) fail_msg("the run blocked: killed after 30 s (reading %s)", file);
    assert_int_equal(rc, want);
    assert_non_null(log);
    if (strstr(log, file) == NULL) fail_msg("message does not name %s", file);
    if (strstr(log, what) == NULL) fail_msg("message does not say \"%s\"", what);
    free(log);
}

/* Replaces dir/name with a FIFO. */
static char *make_fifo(const char *dir, const char *name)
{
    char *p = hc_test_path_join(dir, name);
    unlink(p);
    assert_int_equal(mkfifo(p, 0644), 0);
    return p;
}

/* Replaces dir/name with a symbolic link to /dev/zero. */
static char *link_to_zero(const char *dir, const char *name)
{
    char *p = hc_test_path_join(dir, name);
    unlink(p);
    assert_int_equal(symlink("/dev/zero", p), 0);
    return p;
}

static void test_read_file_refuses_special_and_large(void **state)
{
    fixture *f = *state;
    char *text = NULL;
    hc_error e;
    char *fifo = make_fifo(f->root, "fifo");
    assert_int_equal(hc_fs_read_file(fifo, 100, 0, &text, NULL, &e), HC_ERR_IO);
    assert_non_null(strstr(e.msg, fifo));
    assert_non_null(strstr(e.msg, "is a FIFO, not a regular file"));
    char *zero = link_to_zero(f->root, "zero");
    assert_int_equal(hc_fs_read_file(zero, 100, 0, &text, NULL, &e), HC_ERR_IO);
    assert_non_null(strstr(e.msg, "is a character device"));
    assert_int_equal(hc_fs_read_file(zero, 100, HC_FS_NOFOLLOW, &text, NULL, &e), HC_ERR_IO);
    assert_non_null(strstr(e.msg, "is a symbolic link"));
    assert_int_equal(hc_fs_read_file(f->root, 100, 0, &text, NULL, &e), HC_ERR_IO);
    assert_non_null(strstr(e.msg, "is a directory"));
    char *big = hc_test_path_join(f->root, "big.json");
    char buf[101];
    memset(buf, ' ', sizeof buf);
    assert_int_equal(hc_test_write_file(big, buf, 101), 0);
    assert_int_equal(hc_fs_read_file(big, 100, 0, &text, NULL, &e), HC_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "101 bytes, larger than the limit of 100 bytes"));
    assert_null(text);
    size_t len = 0;
    assert_int_equal(hc_test_write_file(big, buf, 100), 0);
    assert_int_equal(hc_fs_read_file(big, 100, 0, &text, &len, &e), HC_OK);
    assert_int_equal(len, 100);
    assert_int_equal(text[100], '\0');
    free(text);
    free(fifo), free(zero), free(big);
}

/* A FIFO in each place the CLI reads a file: refused at once, named. */
static void test_fifo_inputs(void **state)
{
    fixture *f = *state;
    char args[8192];
    static const char *const in_files[] = {"model.safetensors", "config.json",
                                           "model.safetensors.index.json"};
    for (size_t i = 0; i < sizeof in_files / sizeof in_files[0]; i++) {
        char *saved = hc_test_path_join(f->root, "saved");
        char *p = hc_test_path_join(f->in, in_files[i]);
        int had = rename(p, saved) == 0;
        free(make_fifo(f->in, in_files[i]));
        snprintf(args, sizeof args, "'%s' '%s' --verify off", f->in, f->out);
        expect(f, run(f, args), 1, in_files[i], "is a FIFO, not a regular file");
        unlink(p);
        if (had) assert_int_equal(rename(saved, p), 0);
        assert_false(hc_test_exists(f->out));
        free(p), free(saved);
    }
    char *recipe = make_fifo(f->root, "recipe.yaml");
    snprintf(args, sizeof args, "'%s' '%s' --recipe '%s'", f->in, f->out, recipe);
    expect(f, run(f, args), 2, "recipe.yaml", "is a FIFO");
    char *calib = make_fifo(f->root, "calib.safetensors");
    snprintf(args, sizeof args, "'%s' '%s' --verify cpu --calib '%s'", f->in, f->out, calib);
    expect(f, run(f, args), 1, "calib.safetensors", "is a FIFO");
    assert_false(hc_test_exists(f->out));
    /* an explicit kernel library that is a FIFO: named, and the CPU verifies */
    char *lib = make_fifo(f->root, "libhc_kernels.so");
    snprintf(args, sizeof args, "'%s' '%s' --verify gpu", f->in, f->out);
    assert_int_equal(setenv("HC_KERNELS_LIB", lib, 1), 0);
    int rc = run(f, args);
    unsetenv("HC_KERNELS_LIB");
    expect(f, rc, 0, "libhc_kernels.so", "is a FIFO");
    free(recipe), free(calib), free(lib);
}

/* /dev/zero (through a link) and oversized files where JSON or YAML is read. */
static void test_endless_and_oversized_inputs(void **state)
{
    fixture *f = *state;
    char args[8192];
    char *saved = hc_test_path_join(f->root, "config.saved");
    char *cfg = hc_test_path_join(f->in, "config.json");
    assert_int_equal(rename(cfg, saved), 0);
    free(link_to_zero(f->in, "config.json"));
    snprintf(args, sizeof args, "'%s' '%s' --verify off", f->in, f->out);
    expect(f, run(f, args), 1, "config.json", "is a character device");
    unlink(cfg);
    free(link_to_zero(f->in, "model.safetensors.index.json"));
    expect(f, run(f, args), 1, "model.safetensors.index.json", "is a character device");
    char *index = hc_test_path_join(f->in, "model.safetensors.index.json");
    unlink(index);
    /* a sparse config.json one byte over 64 MiB: refused before it is read */
    int fd = open(cfg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)HC_FS_MAX_JSON + 1), 0);
    close(fd);
    expect(f, run(f, args), 1, "config.json", "larger than the limit of 67108864 bytes");
    assert_int_equal(rename(saved, cfg), 0);
    char *recipe = link_to_zero(f->root, "recipe.yaml");
    snprintf(args, sizeof args, "'%s' '%s' --recipe '%s'", f->in, f->out, recipe);
    expect(f, run(f, args), 2, "recipe.yaml", "is a character device");
    unlink(recipe);
    fd = open(recipe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_int_equal(ftruncate(fd, (off_t)(17 << 20)), 0);
    close(fd);
    expect(f, run(f, args), 2, "recipe.yaml", "larger than the limit of 16777216 bytes");
    assert_false(hc_test_exists(f->out));
    free(saved), free(cfg), free(index), free(recipe);
}

/* `check` and `--resume` read files of an output: a FIFO or an endless file
 * there is a problem reported, not a hang. */
static void test_output_side_files(void **state)
{
    fixture *f = *state;
    char args[8192];
    snprintf(args, sizeof args, "'%s' '%s' --verify off -q", f->in, f->out);
    assert_int_equal(run(f, args), 0);
    free(make_fifo(f->out, "generation_config.json"));
    snprintf(args, sizeof args, "check '%s'", f->out);
    expect(f, run(f, args), 1, "generation_config.json", "is a FIFO, not a regular file");
    free(link_to_zero(f->out, "humming_manifest.json"));
    expect(f, run(f, args), 1, "humming_manifest.json", "is a character device");
    /* a journal that is a link to /dev/zero: not followed, the run starts over */
    char *partial = hc_test_path_join(f->root, "out2.partial");
    assert_int_equal(mkdir(partial, 0755), 0);
    free(link_to_zero(partial, ".hc_journal.json"));
    snprintf(args, sizeof args, "'%s' '%s/out2' --verify off --resume", f->in, f->root);
    expect(f, run(f, args), 0, "out2.partial", "no usable journal: starting over");
    free(partial);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_read_file_refuses_special_and_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_endless_and_oversized_inputs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_side_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
