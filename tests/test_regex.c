/* test_regex - the one regex guard (lib/base/hc_regex.c) used by recipes and by
 * the checkpoint configs' patterns: patterns whose compile or match time
 * explodes in glibc are refused before regcomp, what passes matches a
 * subject of the maximum length well within a second, subjects past the
 * limit are never matched, and a bad "re:" pattern in a checkpoint config is
 * a clear error naming the file and key. Every test runs under an alarm: a
 * guard that lets a slow pattern through fails by SIGALRM, not by hanging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hc_ckpt.h"
#include "hc_recipe.h"
#include "hc_regex.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int setup(void **state)
{
    (void)state;
    alarm(60); /* the slow patterns below take minutes without the guard */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    alarm(0);
    return 0;
}

static void expect_refused(const char *pattern, hc_regex_dialect d, const char *reason)
{
    hc_regex re;
    char why[256] = "";
    double t0 = now_s();
    int rc = hc_regex_compile(&re, pattern, d, HC_RE_FULL, why, sizeof why);
    if (rc == 0 || strstr(why, reason) == NULL)
        fail_msg("'%s': expected a refusal with '%s', got rc %d: '%s'", pattern, reason, rc, why);
    assert_false(re.compiled);
    assert_true(now_s() - t0 < 0.1); /* refused before regcomp */
}

/* Shapes that take glibc minutes to compile or seconds to match: each
 * passed the recipe guard before this one (which only bounded the size). */
static void test_slow_shapes_refused(void **state)
{
    (void)state;
    expect_refused("((.*)*){40}", HC_RE_POSIX, "can match the empty string");
    expect_refused("(.?){4000}", HC_RE_POSIX, "can match the empty string");
    expect_refused("(([a-z.]*)?){400}", HC_RE_POSIX, "can match the empty string");
    expect_refused("(a|){9}", HC_RE_POSIX, "can match the empty string");
    expect_refused("a**", HC_RE_POSIX, "can match the empty string");
    expect_refused("(\\b)+", HC_RE_POSIX, "can match the empty string");
    expect_refused("(.{1,390})+", HC_RE_POSIX, "too complex");
    expect_refused("(.|..){333}", HC_RE_POSIX, "too complex");
    expect_refused("a{,9999}", HC_RE_POSIX, "too complex");
    expect_refused("(a)\\1", HC_RE_POSIX, "back-references");
    expect_refused("a)|(b", HC_RE_POSIX, "unbalanced");
    expect_refused("(a", HC_RE_POSIX, "unbalanced");
    expect_refused("[a", HC_RE_POSIX, "unbalanced");
    expect_refused("", HC_RE_POSIX, "empty pattern");
    char *long_pat = malloc(HC_REGEX_MAX_PATTERN + 2);
    memset(long_pat, 'a', HC_REGEX_MAX_PATTERN + 1);
    long_pat[HC_REGEX_MAX_PATTERN + 1] = '\0';
    expect_refused(long_pat, HC_RE_POSIX, "longer than the limit");
    free(long_pat);
    expect_refused("(?=x)", HC_RE_PYTHON, "(?=");
    expect_refused("((?:.*)*){40}", HC_RE_PYTHON, "can match the empty string");
}

/* The slowest accepted shapes found by a random search (cost just under the
 * limit) match subjects of HC_REGEX_MAX_SUBJECT bytes in well under a second. */
static void test_accepted_match_fast(void **state)
{
    (void)state;
    static const char *const pats[] = {
        "(.{100}.?)*.{290}", "(.{130}|.{131}|.{132})*", "([a-z.]+[ab]+){80}",
        "(([a-z.]{123}|(.x)+a)?.?[a-z.]{189})*.+x+.", "(.+a+){66}", ".{1,399}",
    };
    static const char *const fill[] = {"a", "ab", "a.", "abx."};
    char *s = malloc(HC_REGEX_MAX_SUBJECT + 1);
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
        hc_regex re;
        char why[256];
        double t0 = now_s();
        if (hc_regex_compile(&re, pats[p], HC_RE_POSIX, HC_RE_FULL, why, sizeof why) != 0)
            fail_msg("'%s' refused: %s", pats[p], why);
        for (size_t f = 0; f < sizeof fill / sizeof fill[0]; f++) {
            for (size_t i = 0; i < HC_REGEX_MAX_SUBJECT; i++) s[i] = fill[f][i % strlen(fill[f])];
            s[HC_REGEX_MAX_SUBJECT] = '\0';
            assert_true(hc_regex_match(&re, s) >= 0);
        }
        double t = now_s() - t0;
        printf("  %-48s %.3f s for 4 subjects of %d bytes\n", pats[p], t, HC_REGEX_MAX_SUBJECT);
        if (t > 1.0) fail_msg("'%s' took %.2f s", pats[p], t);
        hc_regex_free(&re);
    }
    free(s);
}

/* A subject past the limit is not matched at all; the recipe says why. */
static void test_subject_limit(void **state)
{
    (void)state;
    hc_regex re;
    char why[512];
    assert_int_equal(hc_regex_compile(&re, ".*", HC_RE_POSIX, HC_RE_FULL, why, sizeof why), 0);
    char *s = malloc(HC_REGEX_MAX_SUBJECT + 2);
    memset(s, 'a', HC_REGEX_MAX_SUBJECT);
    s[HC_REGEX_MAX_SUBJECT] = '\0';
    assert_int_equal(hc_regex_match(&re, s), 1);
    strcat(s, "a");
    assert_int_equal(hc_regex_match(&re, s), -1);
    hc_regex_free(&re);
    hc_recipe *r = NULL;
    assert_int_equal(hc_recipe_default(&r, NULL), HC_OK);
    hc_target base = {0}, out;
    int skip = 0;
    assert_int_equal(hc_recipe_resolve(r, s, &base, &out, &skip, why, sizeof why), HC_ERR_ARG);
    assert_non_null(strstr(why, "is longer than 4096 bytes"));
    assert_true(strlen(why) < 300); /* the name is cut, not the reason */
    hc_recipe_free(r);
    free(s);
}

static int py_match(const char *pattern, const char *subject)
{
    hc_regex re;
    char why[256];
    if (hc_regex_compile(&re, pattern, HC_RE_PYTHON, HC_RE_PREFIX, why, sizeof why) != 0)
        fail_msg("'%s' refused: %s", pattern, why);
    int m = hc_regex_match(&re, subject);
    hc_regex_free(&re);
    return m;
}

/* compressed-tensors / GPTQModel patterns: Python re.match semantics. */
static void test_python_dialect(void **state)
{
    (void)state;
    assert_int_equal(py_match(".*\\.mlp\\.gate$", "model.layers.3.mlp.gate"), 1);
    assert_int_equal(py_match(".*\\.mlp\\.gate$", "model.layers.3.mlp.gate_proj"), 0);
    assert_int_equal(py_match("model\\.layers\\.\\d+\\.", "model.layers.12.self_attn"), 1);
    assert_int_equal(py_match("model\\.layers\\.\\d+\\.", "model.layers.x.self_attn"), 0);
    assert_int_equal(py_match("(?:.*\\.)?(q|k)_proj", "a.b.k_proj.extra"), 1); /* prefix match */
    assert_int_equal(py_match(".*?down_proj", "x.down_proj"), 1);       /* lazy: same strings */
    assert_int_equal(py_match("[\\d.]+x", "1.2.3x"), 1);
    assert_int_equal(py_match("\\w+\\s\\S", "ab_9 z"), 1);
    assert_int_equal(py_match("a{2}?b", "aab"), 1);
}

static hc_status detect(const char *qc, hc_ckpt_config *cfg, hc_error *err)
{
    char json[2048];
    snprintf(json, sizeof json, "{\"torch_dtype\": \"float16\", \"quantization_config\": %s}", qc);
    hc_error_clear(err);
    return hc_ckpt_detect("/nonexistent-dir", json, cfg, err);
}

static void expect_detect_error(const char *qc, const char *needle)
{
    hc_error e;
    double t0 = now_s();
    hc_ckpt_config cfg;
    hc_status st = detect(qc, &cfg, &e);
    if (st != HC_ERR_FORMAT || !strstr(e.msg, "config.json") || !strstr(e.msg, needle))
        fail_msg("expected a format error naming config.json and '%s', got %d: '%s'", needle,
                 (int)st, e.msg);
    assert_true(now_s() - t0 < 0.5);
}

/* Checkpoint configs' patterns go through the same guard when the config is
 * read: a bad one is an error naming the file, the key and the reason (it
 * was compiled per layer, and a failure to compile silently matched nothing). */
static void test_checkpoint_patterns(void **state)
{
    (void)state;
    expect_detect_error("{\"quant_method\": \"compressed-tensors\", \"format\": "
                        "\"pack-quantized\", \"config_groups\": {\"g\": {\"targets\": "
                        "[\"Linear\"]}}, \"ignore\": [\"re:((.*)*){40}\"]}",
                        "ignore entry 're:((.*)*){40}': bad regular expression: a repetition");
    expect_detect_error("{\"quant_method\": \"compressed-tensors\", \"format\": "
                        "\"pack-quantized\", \"config_groups\": {\"g\": {\"targets\": "
                        "[\"re:(.?){4000}\"]}}}", "config_groups targets entry");
    expect_detect_error("{\"quant_method\": \"gptq\", \"bits\": 4, \"dynamic\": "
                        "{\"-:(?!x).*\": {}}}", "dynamic entry 're:(?!x).*'");
    char big[600];
    snprintf(big, sizeof big, "{\"quant_method\": \"awq\", \"modules_to_not_convert\": "
             "[\"%0300d\"]}", 0);
    expect_detect_error(big, "longer than the 159 this reader holds");
    hc_error e;
    hc_ckpt_config cfg;
    assert_int_equal(detect("{\"quant_method\": \"compressed-tensors\", \"format\": "
                            "\"pack-quantized\", \"config_groups\": {\"g\": {\"targets\": "
                            "[\"Linear\"]}}, \"ignore\": [\"lm_head\", "
                            "\"re:.*\\\\.mlp\\\\.gate$\"]}", &cfg, &e), HC_OK);
    assert_true(hc_ckpt_is_skipped(&cfg, "model.layers.1.mlp.gate"));
    assert_true(hc_ckpt_is_skipped(&cfg, "lm_head"));
    assert_false(hc_ckpt_is_skipped(&cfg, "model.layers.1.mlp.gate_proj"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_slow_shapes_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accepted_match_fast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_subject_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_python_dialect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_patterns, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
