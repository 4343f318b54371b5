/* test_sigbus - a safetensors file truncated while mapped (lib/base/hc_sigbus.c):
 * reads past the truncation, from the main thread and from OpenMP workers,
 * get zeros instead of SIGBUS, and hc_st_check then fails naming the file,
 * by its size or, when the size was restored, by the fault count; a SIGBUS
 * outside every watched mapping still kills the process. The end-to-end case
 * (an input shard truncated during a paused run) is in test_faults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hc_safetensors.h"
#include "hc_sigbus.h"
#include "hc_test_util.h"

enum { N = 1 << 20 }; /* floats: a 4 MiB tensor */

typedef struct {
    char *dir, *path;
    off_t size;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = hc_test_mkdtemp("sigbus");
    if (f->dir == NULL) return -1;
    f->path = hc_test_path_join(f->dir, "w.safetensors");
    float *w = malloc(N * sizeof *w);
    for (int i = 0; i < N; i++) w[i] = 1.0f;
    hc_tensor t = {.dtype = HC_DT_F32, .ndim = 1, .shape = {N}, .data = w, .nbytes = N * 4};
    const char *name = "w";
    hc_status st = hc_st_write_file(f->path, &t, &name, 1, NULL, NULL);
    free(w);
    struct stat sb;
    if (st != HC_OK || stat(f->path, &sb) != 0) return -1;
    f->size = sb.st_size;
    alarm(60);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    alarm(0);
    hc_test_rm_rf(f->dir);
    free(f->dir), free(f->path);
    free(f);
    return 0;
}

/* Sum of the tensor's floats, read in parallel chunks (memcpy: unaligned). */
static double parallel_sum(const hc_st_tensor *t)
{
    const unsigned char *p = t->data;
    double sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static) num_threads(4)
    for (int c = 0; c < 64; c++) {
        for (int i = c * (N / 64); i < (c + 1) * (N / 64); i++) {
            float x;
            memcpy(&x, p + 4 * (size_t)i, 4);
            sum += x;
        }
    }
    return sum;
}

static void test_truncated_while_mapped(void **state)
{
    fixture *f = *state;
    assert_int_equal(hc_sigbus_install(), 0);
    assert_int_equal(hc_sigbus_install(), 0); /* idempotent */
    hc_st_file *st = NULL;
    assert_int_equal(hc_st_open(f->path, &st, NULL), HC_OK);
    const hc_st_tensor *t = hc_st_find(st, "w");
    assert_non_null(t);
    assert_int_equal(hc_st_check(st, NULL), HC_OK);
    assert_true(parallel_sum(t) == (double)N);
    hc_st_release(st, t); /* the pages leave the resident set: the next reads fault */
    assert_int_equal(truncate(f->path, 65536), 0);
    double sum = parallel_sum(t); /* SIGBUS without the guard */
    printf("  sum after truncation to 64 KiB: %.0f of %d\n", sum, N);
    assert_true(sum < (double)N); /* zeros past the truncation */
    hc_error e;
    assert_int_equal(hc_st_check(st, &e), HC_ERR_IO);
    printf("  %s\n", e.msg);
    assert_non_null(strstr(e.msg, f->path));
    assert_non_null(strstr(e.msg, "truncated while being read"));
    /* the size restored (holes read as zeros): the fault count still tells */
    assert_int_equal(truncate(f->path, f->size), 0);
    assert_int_equal(hc_st_check(st, &e), HC_ERR_IO);
    printf("  %s\n", e.msg);
    assert_non_null(strstr(e.msg, f->path));
    assert_non_null(strstr(e.msg, "SIGBUS"));
    hc_st_close(st);
}

/* The guard only covers watched mappings: anything else dies as before. */
static void test_other_faults_still_kill(void **state)
{
    fixture *f = *state;
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGBUS, SIG_DFL); /* not CMocka's handler, which would longjmp */
        if (hc_sigbus_install() != 0) _exit(2);
        int fd = open(f->path, O_RDONLY);
        volatile const unsigned char *p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED || truncate(f->path, 4096) != 0) _exit(3);
        unsigned sum = 0;
        for (off_t i = 8192; i < f->size; i += 4096) sum += p[i];
        _exit(sum == 0 ? 4 : 5); /* reached only if the fault was swallowed */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status)) fail_msg("child exited %d instead of dying", WEXITSTATUS(status));
    assert_int_equal(WTERMSIG(status), SIGBUS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_truncated_while_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_faults_still_kill, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
