/* test_crash - crash safety end to end (docs/robustness.md): the CLI is run
 * as a child and killed with SIGKILL at many points of a conversion (a
 * seeded list of delays spread over an uninterrupted run's duration, plus the
 * named pause points of HC_TEST_PAUSE_AT); after each kill OUT_DIR must not
 * exist or must pass `check`, and `--resume` must then finish with output
 * byte-identical to the uninterrupted run (humming_report.* excepted: they
 * hold timings; the manifest is compared without their entries). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hc_test_util.h"

enum { RANDOM_KILLS = 52 };

static const char *const pause_points[] = {"after_plan", "after_shard_1", "after_shard_5",
                                           "before_manifest", "before_publish"};

typedef struct {
    char *root, *in, *out, *partial, *ref, *log;
    const char *cli;
} fixture;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Starts `CLI IN OUT <args> [--resume]` with stdout/stderr to f->log. */
static pid_t spawn(const fixture *f, int resume, const char *pause)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    int fd = open(f->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (pause) setenv("HC_TEST_PAUSE_AT", pause, 1);
    else unsetenv("HC_TEST_PAUSE_AT");
    /* the same arguments every time: the first run's command line is recorded */
    execl(f->cli, f->cli, f->in, f->out, "--max-shard-size", "64K", "--verify", "cpu",
          resume ? "--resume" : (char *)NULL, (char *)NULL);
    _exit(127);
}

static int wait_rc(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_check(const fixture *f)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' check '%s' >>'%s' 2>&1", f->cli, f->out, f->log);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->root = hc_test_mkdtemp("crash");
    if (f->root == NULL) return -1;
    f->in = hc_test_path_join(f->root, "in");
    f->out = hc_test_path_join(f->root, "out");
    f->partial = hc_test_path_join(f->root, "out.partial");
    f->ref = hc_test_path_join(f->root, "ref");
    f->log = hc_test_path_join(f->root, "log.txt");
    f->cli = hc_test_cli();
    if (hc_test_gen_model(f->in, "--format humming --experts 0") != 0) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    hc_test_rm_rf(f->root);
    free(f->root), free(f->in), free(f->out), free(f->partial), free(f->ref), free(f->log);
    free(f);
    return 0;
}

static int is_report(const char *name) { return strncmp(name, "humming_report.", 15) == 0; }

/* The manifest without the report files' entries, printed. */
static char *manifest_core(const char *dir)
{
    char *path = hc_test_path_join(dir, "humming_manifest.json");
    char *text = hc_test_read_file(path, NULL);
    free(path);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    for (int i = cJSON_GetArraySize(files) - 1; i >= 0; i--) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, i), "name");
        if (cJSON_IsString(nm) && is_report(nm->valuestring)) cJSON_DeleteItemFromArray(files, i);
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

/* Files of dir, dot files (a journal left by a kill right after the publish
 * rename) not counted. */
static int visible_count(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* Every file of the reference byte for byte (reports excepted), same file set. */
static void assert_same_as_ref(const fixture *f, int point)
{
    assert_int_equal(visible_count(f->ref), visible_count(f->out));
    DIR *d = opendir(f->ref);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || is_report(e->d_name)) continue;
        char *a = hc_test_path_join(f->ref, e->d_name), *b = hc_test_path_join(f->out, e->d_name);
        size_t la = 0, lb = 0;
        char *da = NULL, *db = NULL;
        if (strcmp(e->d_name, "humming_manifest.json") == 0) {
            da = manifest_core(f->ref);
            db = manifest_core(f->out);
            la = strlen(da), lb = strlen(db);
        } else {
            da = hc_test_read_file(a, &la);
            db = hc_test_read_file(b, &lb);
        }
        if (db == NULL || la != lb || memcmp(da, db, la) != 0) {
            if (da && db && la < 100000 && lb < 100000) printf("--- ref:\n%s\n--- got:\n%s\n", da, db);
            fail_msg("kill point %d: %s differs from the uninterrupted run", point, e->d_name);
        }
        free(da), free(db), free(a), free(b);
    }
    closedir(d);
}

/* Waits (up to 60 s) until the paused child says so in the log. */
static int wait_paused(const fixture *f, pid_t pid)
{
    for (int i = 0; i < 6000; i++) {
        char *text = hc_test_read_file(f->log, NULL);
        int found = text && strstr(text, "test: paused at") != NULL;
        free(text);
        if (found) return 1;
        if (waitpid(pid, NULL, WNOHANG) == pid) return 0;
        usleep(10000);
    }
    return 0;
}

typedef struct {
    int absent, partial_resumed, complete;
} outcomes;

/* After a kill: OUT_DIR absent or valid; then --resume gives the reference. */
static void after_kill(const fixture *f, int point, outcomes *o)
{
    if (hc_test_exists(f->out)) {
        if (run_check(f) != 0) fail_msg("kill point %d: OUT_DIR exists but fails check", point);
        assert_false(hc_test_exists(f->partial));
        o->complete++;
    } else {
        o->absent++;
        o->partial_resumed += hc_test_exists(f->partial);
        int rc = wait_rc(spawn(f, 1, NULL));
        if (rc != 0) {
            char *log = hc_test_read_file(f->log, NULL);
            fail_msg("kill point %d: --resume exited %d:\n%s", point, rc, log ? log : "");
        }
        assert_int_equal(run_check(f), 0);
        assert_false(hc_test_exists(f->partial));
    }
    assert_same_as_ref(f, point);
    assert_int_equal(hc_test_rm_rf(f->out), 0);
}

static void test_kill_at_random_points(void **state)
{
    fixture *f = *state;
    double t0 = now_s();
    assert_int_equal(wait_rc(spawn(f, 0, NULL)), 0);
    double T = now_s() - t0;
    assert_int_equal(run_check(f), 0);
    assert_int_equal(rename(f->out, f->ref), 0);
    printf("uninterrupted run: %.3f s\n", T);

    outcomes o = {0, 0, 0};
    uint64_t s = 0x9E3779B97F4A7C15ull; /* fixed seed: the same delays every run */
    for (int k = 0; k < RANDOM_KILLS; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        /* stratified over [0, 1.1 T): every part of the run gets kills */
        double u = (double)(s >> 11) / 9007199254740992.0;
        double delay = T * 1.1 * ((double)k + u) / RANDOM_KILLS;
        pid_t pid = spawn(f, 0, NULL);
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        wait_rc(pid);
        after_kill(f, k, &o);
    }
    for (size_t p = 0; p < sizeof pause_points / sizeof pause_points[0]; p++) {
        char spec[64];
        snprintf(spec, sizeof spec, "%s:60", pause_points[p]);
        pid_t pid = spawn(f, 0, spec);
        if (!wait_paused(f, pid)) fail_msg("run did not reach pause point %s", pause_points[p]);
        kill(pid, SIGKILL);
        wait_rc(pid);
        assert_true(hc_test_exists(f->partial));
        after_kill(f, RANDOM_KILLS + (int)p, &o);
    }
    printf("kill points: %d (%d random, %zu at named points): OUT_DIR absent %d times "
           "(partial output resumed %d times), complete and valid %d times; every --resume "
           "matched the uninterrupted run\n",
           RANDOM_KILLS + (int)(sizeof pause_points / sizeof pause_points[0]), RANDOM_KILLS,
           sizeof pause_points / sizeof pause_points[0], o.absent, o.partial_resumed,
           o.complete);
    printf("total %.1f s\n", now_s() - t0);
}

/* Without --resume a run refuses a leftover partial dir; --force discards it;
 * --resume with different options is refused with a clear message. */
static void test_partial_guards(void **state)
{
    fixture *f = *state;
    pid_t pid = spawn(f, 0, "after_shard_2:60");
    assert_true(wait_paused(f, pid));
    kill(pid, SIGKILL);
    wait_rc(pid);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --max-shard-size 64K --verify cpu -q 2>'%s'",
             f->cli, f->in, f->out, f->log);
    int rc = system(cmd);
    assert_int_equal(WEXITSTATUS(rc), 2);
    char *log = hc_test_read_file(f->log, NULL);
    assert_non_null(strstr(log, "--resume"));
    free(log);
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --max-shard-size 32K --verify cpu -q --resume "
             "2>'%s'", f->cli, f->in, f->out, f->log);
    rc = system(cmd);
    assert_int_equal(WEXITSTATUS(rc), 2);
    log = hc_test_read_file(f->log, NULL);
    assert_non_null(strstr(log, "cannot resume"));
    free(log);
    assert_true(hc_test_exists(f->partial));
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --max-shard-size 64K --verify cpu -q --force "
             "2>'%s'", f->cli, f->in, f->out, f->log);
    assert_int_equal(system(cmd), 0);
    assert_false(hc_test_exists(f->partial));
    assert_int_equal(run_check(f), 0);
    hc_test_rm_rf(f->out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partial_guards),
        cmocka_unit_test(test_kill_at_random_points),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
