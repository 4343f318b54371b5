/* test_fuzz_regressions - replays every input kept under tests/corpus/<target>/
 * (the fuzz targets' seed corpus and every finding) through the same entry
 * functions as the libFuzzer targets (tests/fuzz/fuzz_*_entry.c), without
 * libFuzzer. Each input must come back as a value: no crash (under `make
 * asan` no memory error, leak or UB either) and every error with a non-empty
 * message. HC_CORPUS_DIR overrides tests/corpus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_entry.h"
#include "hc_test_util.h"

typedef int (*entry_fn)(const uint8_t *, size_t, char *);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs fn on every regular file in corpus/<target>; returns how many. */
static int replay(const char *target, entry_fn fn, int min_files)
{
    const char *root = getenv("HC_CORPUS_DIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", root ? root : "tests/corpus", target);
    DIR *d = opendir(dir);
    if (d == NULL) fail_msg("cannot open corpus directory %s", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            assert_non_null(names);
        }
        names[n] = strdup(e->d_name);
        assert_non_null(names[n]);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        char *path = hc_test_path_join(dir, names[i]);
        assert_non_null(path);
        size_t len = 0;
        void *buf = hc_test_read_file(path, &len);
        if (buf == NULL) fail_msg("cannot read %s", path);
        /* an exact-size copy, so that ASan sees reads past the input */
        uint8_t *exact = malloc(len ? len : 1);
        assert_non_null(exact);
        memcpy(exact, buf, len);
        char why[HC_FUZZ_WHY_MAX] = "";
        if (fn(exact, len, why) != 0) {
            fprintf(stderr, "%s: %s\n", path, why);
            failures++;
        }
        free(exact);
        free(buf);
        free(path);
        free(names[i]);
    }
    free(names);
    assert_int_equal(failures, 0);
    if ((int)n < min_files) fail_msg("%s: only %zu corpus files (expected >= %d)", dir, n, min_files);
    return (int)n;
}

static void test_safetensors_corpus(void **state)
{
    (void)state;
    replay("safetensors", hc_fuzz_safetensors, 5);
}

static void test_index_corpus(void **state)
{
    (void)state;
    replay("index", hc_fuzz_index, 5);
}

static void test_config_corpus(void **state)
{
    (void)state;
    replay("config", hc_fuzz_config, 7);
}

static void test_recipe_corpus(void **state)
{
    (void)state;
    replay("recipe", hc_fuzz_recipe, 6);
}

static void test_format_field_corpus(void **state)
{
    (void)state;
    replay("format_field", hc_fuzz_format_field, 10);
}

static void test_ckpt_corpus(void **state)
{
    (void)state;
    replay("ckpt", hc_fuzz_ckpt, 12);
}

static void test_cli_corpus(void **state)
{
    (void)state;
    replay("cli", hc_fuzz_cli, 8);
}

/* The entries themselves must notice a broken contract: an empty input is
 * an error for every parser, and those errors carry messages. */
static void test_entries_on_empty_input(void **state)
{
    (void)state;
    static const uint8_t none[1] = {0};
    char why[HC_FUZZ_WHY_MAX];
    assert_int_equal(hc_fuzz_safetensors(none, 0, why), 0);
    assert_int_equal(hc_fuzz_index(none, 0, why), 0);
    assert_int_equal(hc_fuzz_config(none, 0, why), 0);
    assert_int_equal(hc_fuzz_recipe(none, 0, why), 0);
    assert_int_equal(hc_fuzz_format_field(none, 0, why), 0);
    assert_int_equal(hc_fuzz_ckpt(none, 0, why), 0);
    assert_int_equal(hc_fuzz_cli(none, 0, why), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_safetensors_corpus),
        cmocka_unit_test(test_index_corpus),
        cmocka_unit_test(test_config_corpus),
        cmocka_unit_test(test_recipe_corpus),
        cmocka_unit_test(test_format_field_corpus),
        cmocka_unit_test(test_ckpt_corpus),
        cmocka_unit_test(test_cli_corpus),
        cmocka_unit_test(test_entries_on_empty_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
