/* test_out_guard - the input is never damaged by where the output goes
 * (lib/base/hc_out_guard.h): OUT_DIR or OUT_DIR.partial equal to, containing or
 * inside IN_DIR, symbolic links at either, --force over a directory that is
 * not ours, and two runs on one OUT_DIR. Each refusal exits 2 with a message
 * naming the path, and every file of the input and of the bystanders keeps
 * its bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "hc_out_guard.h"
#include "hc_test_util.h"

typedef struct {
    char *root, *in, *log;
    const char *cli;
    uint32_t in_sum;
} fixture;

/* CRC over the names and bytes of every file below dir, in sorted order. */
static uint32_t tree_sum(const char *dir, uint32_t crc)
{
    struct dirent **list = NULL;
    int n = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        char *p = hc_test_path_join(dir, name);
        struct stat st;
        crc = (uint32_t)crc32(crc, (const unsigned char *)name, (uInt)strlen(name));
        if (strcmp(name, ".") && strcmp(name, "..") && lstat(p, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                crc = tree_sum(p, crc);
            } else {
                size_t len = 0;
                void *data = hc_test_read_file(p, &len);
                if (data) crc = (uint32_t)crc32(crc, data, (uInt)len);
                free(data);
            }
        }
        free(p), free(list[i]);
    }
    free(list);
    return crc;
}

static char *at(const fixture *f, const char *name) { return hc_test_path_join(f->root, name); }

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL || (f->root = hc_test_mkdtemp("guard")) == NULL) return -1;
    f->in = at(f, "in");
    f->log = at(f, "log.txt");
    static char cli[PATH_MAX]; /* absolute: the runs happen in f->root */
    if (realpath(hc_test_cli(), cli) == NULL) return -1;
    f->cli = cli;
    if (hc_test_gen_model(f->in, "--format float16 --experts 0") != 0) return -1;
    f->in_sum = tree_sum(f->in, 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    hc_test_rm_rf(f->root);
    free(f->root), free(f->in), free(f->log);
    free(f);
    return 0;
}

/* Runs the CLI in f->root: IN OUT --format w4a16 --verify off -q EXTRA. */
static int run(const fixture *f, const char *in, const char *out, const char *extra)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' '%s' '%s' --format w4a16 --verify off -q %s 2>'%s'",
             f->root, f->cli, in, out, extra ? extra : "", f->log);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Exit 2 and a message that contains each of the given strings. */
static void assert_refused(const fixture *f, int rc, const char *a, const char *b)
{
    char *log = hc_test_read_file(f->log, NULL);
    printf("  rc %d, message: %s", rc, log ? log : "(none)\n");
    assert_int_equal(rc, 2);
    assert_non_null(log);
    if (a && strstr(log, a) == NULL) fail_msg("message does not say \"%s\"", a);
    if (b && strstr(log, b) == NULL) fail_msg("message does not say \"%s\"", b);
    free(log);
}

static void assert_input_intact(const fixture *f, const char *in)
{
    char *p = at(f, in);
    assert_int_equal(tree_sum(p, 0), f->in_sum);
    free(p);
}

static void test_out_is_in(void **state)
{
    fixture *f = *state;
    const char *outs[] = {"in", "in/", "./in", "in/.", "../$(basename \"$PWD\")/in"};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        char cmd[16384]; /* through the shell: the last spelling expands there */
        snprintf(cmd, sizeof cmd, "cd '%s' && '%s' in \"%s\" --format w4a16 --force -q 2>'%s'",
                 f->root, f->cli, outs[i], f->log);
        int rc = system(cmd);
        assert_refused(f, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, "the input directory", NULL);
        assert_input_intact(f, "in");
    }
}

static void test_out_contains_in(void **state)
{
    fixture *f = *state;
    char *box = at(f, "box"), *moved = at(f, "box/model");
    assert_int_equal(mkdir(box, 0755), 0);
    assert_int_equal(rename(f->in, moved), 0);
    assert_refused(f, run(f, "box/model", "box", "--force"), "contains the input directory", "box");
    assert_input_intact(f, "box/model");
    assert_int_equal(rename(moved, f->in), 0);
    assert_int_equal(rmdir(box), 0);
    free(box), free(moved);
}

static void test_out_inside_in(void **state)
{
    fixture *f = *state;
    assert_refused(f, run(f, "in", "in/sub", NULL), "lies inside the input directory", NULL);
    assert_refused(f, run(f, "in", "in/a/b/c", NULL), "lies inside the input directory", NULL);
    char *link = at(f, "alias");
    assert_int_equal(symlink("in", link), 0); /* alias/sub is in/sub */
    assert_refused(f, run(f, "in", "alias/sub", NULL), "lies inside the input directory", NULL);
    unlink(link);
    free(link);
    assert_input_intact(f, "in");
}

/* IN_DIR named X.partial for OUT_DIR X: every option the CLI could suggest is refused. */
static void test_in_is_partial(void **state)
{
    fixture *f = *state;
    char *p = at(f, "X.partial");
    assert_int_equal(rename(f->in, p), 0);
    const char *opts[] = {"", "--force", "--resume", "--resume --force"};
    for (size_t i = 0; i < 4; i++) {
        assert_refused(f, run(f, "X.partial", "X", opts[i]), "temporary output directory",
                       "is the input directory");
        assert_input_intact(f, "X.partial");
        char *x = at(f, "X");
        assert_false(hc_test_exists(x));
        free(x);
    }
    assert_int_equal(rename(p, f->in), 0);
    free(p);
}

static void test_symlinks_refused(void **state)
{
    fixture *f = *state;
    char *victim = at(f, "victim"), *file = at(f, "victim/precious"), *link = at(f, "o.partial");
    char *out_link = at(f, "o2"), *o = at(f, "o");
    assert_int_equal(mkdir(victim, 0755), 0);
    assert_int_equal(hc_test_write_file(file, "keep", 4), 0);
    uint32_t sum = tree_sum(victim, 0);
    assert_int_equal(symlink("victim", link), 0);
    assert_refused(f, run(f, "in", "o", "--resume"), "symbolic link", "o.partial");
    assert_refused(f, run(f, "in", "o", "--force"), "symbolic link", "o.partial");
    assert_false(hc_test_exists(o));
    assert_int_equal(symlink("victim", out_link), 0);
    assert_refused(f, run(f, "in", "o2", "--force"), "symbolic link", "o2");
    assert_int_equal(tree_sum(victim, 0), sum);
    unlink(link), unlink(out_link), hc_test_rm_rf(victim);
    free(victim), free(file), free(link), free(out_link), free(o);
    assert_input_intact(f, "in");
}

static void test_force_only_replaces_ours(void **state)
{
    fixture *f = *state;
    char *home = at(f, "home"), *file = at(f, "home/notes.txt"), *part = at(f, "p.partial");
    char *pfile = at(f, "p.partial/notes.txt"), *empty = at(f, "empty"), *p = at(f, "p");
    assert_int_equal(mkdir(home, 0755), 0);
    assert_int_equal(hc_test_write_file(file, "precious", 8), 0);
    assert_refused(f, run(f, "in", "home", "--force"), "not a humming-convert output", "home");
    assert_true(hc_test_exists(file));
    assert_int_equal(mkdir(part, 0755), 0); /* a partial without our journal */
    assert_int_equal(hc_test_write_file(pfile, "precious", 8), 0);
    assert_refused(f, run(f, "in", "p", "--force"), "not a humming-convert output", "p.partial");
    assert_true(hc_test_exists(pfile));
    /* an empty directory, and our own output (with a trailing slash), are replaced */
    assert_int_equal(mkdir(empty, 0755), 0);
    assert_int_equal(run(f, "in", "empty", "--force"), 0);
    assert_int_equal(run(f, "in", "empty/", "--force"), 0);
    char *manifest = at(f, "empty/humming_manifest.json");
    assert_true(hc_test_exists(manifest));
    hc_test_rm_rf(home), hc_test_rm_rf(part), hc_test_rm_rf(empty);
    free(home), free(file), free(part), free(pfile), free(empty), free(p), free(manifest);
    assert_input_intact(f, "in");
}

/* A second run on the OUT_DIR of a running one is refused; the first completes. */
static void test_second_run_locked_out(void **state)
{
    fixture *f = *state;
    char *log1 = at(f, "first.log"), *out = at(f, "locked");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("HC_TEST_PAUSE_AT", "after_plan:3", 1);
        if (freopen(log1, "w", stderr) == NULL) _exit(126);
        execl(f->cli, f->cli, f->in, out, "--format", "w4a16", "--verify", "off", (char *)NULL);
        _exit(127);
    }
    int paused = 0;
    for (int i = 0; i < 300 && !paused; i++) { /* up to 30 s for the child to reach its pause */
        char *text = hc_test_read_file(log1, NULL);
        paused = text && strstr(text, "test: paused at") != NULL;
        free(text);
        if (!paused) nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    assert_true(paused);
    assert_refused(f, run(f, "in", "locked", NULL), "another humming-convert run", "locked.lock");
    assert_refused(f, run(f, "in", "locked", "--force"), "another humming-convert run", NULL);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *manifest = at(f, "locked/humming_manifest.json"), *lock = at(f, "locked.lock");
    assert_true(hc_test_exists(manifest));
    assert_false(hc_test_exists(lock)); /* released and removed */
    hc_test_rm_rf(out);
    free(log1), free(out), free(manifest), free(lock);
}

static void test_real_path(void **state)
{
    fixture *f = *state;
    char buf[PATH_MAX], want[PATH_MAX + 64];
    hc_error err = {0};
    char root[PATH_MAX];
    assert_non_null(realpath(f->root, root));
    char *missing = at(f, "no/such/dir/");
    assert_int_equal(hc_real_path(missing, buf, sizeof buf, &err), HC_OK);
    snprintf(want, sizeof want, "%s/no/such/dir", root);
    assert_string_equal(buf, want);
    char *dots = at(f, "no/../in");
    assert_int_equal(hc_real_path(dots, buf, sizeof buf, &err), HC_ERR_ARG);
    char *through = at(f, "in/../in/config.json");
    assert_int_equal(hc_real_path(through, buf, sizeof buf, &err), HC_OK);
    snprintf(want, sizeof want, "%s/in/config.json", root);
    assert_string_equal(buf, want);
    assert_int_equal(hc_real_path("/", buf, sizeof buf, &err), HC_OK);
    assert_string_equal(buf, "/");
    assert_int_equal(hc_real_path("", buf, sizeof buf, &err), HC_ERR_ARG);
    free(missing), free(dots), free(through);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_out_is_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_contains_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_inside_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_in_is_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlinks_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_force_only_replaces_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_run_locked_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_path, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
