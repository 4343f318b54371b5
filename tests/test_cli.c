/* test_cli - humming-convert end to end: malformed inputs are refused with a
 * message naming the file and leave no output; refusal paths; --force;
 * sharding; side files; the input is never modified. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "hc_fs.h"
#include "hc_model_config.h"
#include "hc_safetensors.h"

typedef struct {
    char root[4096], in[4200], out[4200], log[4200];
} fixture;

static const char *config_uint4 =
    "{\"torch_dtype\": \"float16\", \"quantization_config\": "
    "{\"quant_method\": \"humming\", \"dtype\": \"uint4\", \"group_size\": 128}}";

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    assert_int_equal(hc_fs_write_file(path, text, strlen(text), NULL), HC_OK);
}

/* A valid one-layer checkpoint: layer.weight uint4 N=64 K=128, fp16 scales,
 * one fp16 norm tensor, config.json and a tokenizer file. */
static void write_valid_model(const char *dir, int64_t n, int64_t k, int bits)
{
    hc_tensor t[3];
    int64_t ws[2] = {n, k * bits / 32}, ss[2] = {n, k / 128}, ns[1] = {k};
    assert_int_equal(hc_tensor_alloc(&t[0], HC_DT_I32, 2, ws, NULL), HC_OK);
    assert_int_equal(hc_tensor_alloc(&t[1], HC_DT_F16, 2, ss, NULL), HC_OK);
    assert_int_equal(hc_tensor_alloc(&t[2], HC_DT_F16, 1, ns, NULL), HC_OK);
    for (size_t i = 0; i < t[0].nbytes / 4; i++) ((uint32_t *)t[0].data)[i] = (uint32_t)(i * 2654435761u);
    for (size_t i = 0; i < t[1].nbytes / 2; i++) ((uint16_t *)t[1].data)[i] = 0x2E66; /* ~0.1 */
    for (size_t i = 0; i < t[2].nbytes / 2; i++) ((uint16_t *)t[2].data)[i] = 0x3C00;
    const char *names[3] = {"layer.weight", "layer.weight_scale", "norm.weight"};
    char path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    assert_int_equal(hc_st_write_file(path, t, names, 3, NULL, NULL), HC_OK);
    for (int i = 0; i < 3; i++) hc_tensor_free(&t[i]);
    char cfg[512];
    snprintf(cfg, sizeof cfg,
             "{\"torch_dtype\": \"float16\", \"quantization_config\": {\"quant_method\": "
             "\"humming\", \"dtype\": \"uint%d\", \"group_size\": 128}}", bits);
    write_text(dir, "config.json", cfg);
    write_text(dir, "tokenizer.json", "{\"version\": \"1.0\"}");
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *base = getenv("TMPDIR");
    snprintf(f->root, sizeof f->root, "%s/hc-cli-XXXXXX", base ? base : "/tmp");
    if (mkdtemp(f->root) == NULL) return -1;
    snprintf(f->in, sizeof f->in, "%s/in", f->root);
    snprintf(f->out, sizeof f->out, "%s/out", f->root);
    snprintf(f->log, sizeof f->log, "%s/stderr.txt", f->root);
    mkdir(f->in, 0755);
    write_valid_model(f->in, 64, 128, 4);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    hc_fs_remove_tree(f->root, NULL);
    free(f);
    return 0;
}

/* Runs the CLI with extra arguments; returns its exit code; stderr goes to f->log. */
static int run_cli(const fixture *f, const char *in, const char *out, const char *extra)
{
    const char *cli = getenv("HC_CLI");
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %s 2>'%s'", cli ? cli : "build/humming-convert", in,
             out, extra ? extra : "", f->log);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *read_log(const fixture *f)
{
    char *text = NULL;
    assert_int_equal(hc_file_read_all(f->log, &text, NULL, NULL), HC_OK);
    return text;
}

/* No OUT_DIR and no temporary sibling left in the fixture root. */
static void assert_no_output(const fixture *f)
{
    assert_false(hc_path_exists(f->out));
    DIR *d = opendir(f->root);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "out.", 4) == 0) fail_msg("left behind: %s", e->d_name);
    closedir(d);
}

/* Writes dir/name as a safetensors file from raw parts: an 8-byte length
 * (header_len, or the real length when 0), the header text and data_len bytes. */
static void write_raw_st(const char *dir, const char *name, uint64_t header_len,
                         const char *header, size_t data_len)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    uint64_t n = header_len ? header_len : strlen(header);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(n >> (8 * i));
    fwrite(len8, 1, 8, fp);
    fputs(header, fp);
    for (size_t i = 0; i < data_len; i++) fputc((int)(i * 7 & 0xFF), fp);
    fclose(fp);
}

#define W_OK_ "\"layer.weight\":{\"dtype\":\"I32\",\"shape\":[64,16],\"data_offsets\":[0,4096]}"
#define S_OK_ "\"layer.weight_scale\":{\"dtype\":\"F16\",\"shape\":[64,1],\"data_offsets\":[4096,4224]}"

typedef struct {
    const char *what;        /* the defect */
    uint64_t header_len;     /* 0: the real length */
    const char *header;
    size_t data_len;
    const char *reason;      /* substring expected in the message (case-insensitive) */
} bad_file;

static const bad_file bad_files[] = {
    {"too short for the length field", 0, "", 0, NULL},
    {"header length over 100 MB", 200000000, "{}", 16, "header"},
    {"header beyond end of file", 5000, "{" W_OK_ "}", 16, "header"},
    {"header not JSON", 0, "{\"layer.weight\": {\"dtype\": ", 0, "JSON"},
    {"header a JSON array", 0, "[1, 2, 3]", 0, NULL},
    {"unknown dtype", 0, "{\"layer.weight\":{\"dtype\":\"Q7\",\"shape\":[64,16],\"data_offsets\":[0,4096]}}", 4096, "Q7"},
    {"offsets past the data", 0, "{\"layer.weight\":{\"dtype\":\"I32\",\"shape\":[64,16],\"data_offsets\":[0,4096]}}", 100, "layer.weight"},
    {"overlapping tensors", 0, "{" W_OK_ ",\"layer.weight_scale\":{\"dtype\":\"F16\",\"shape\":[64,1],\"data_offsets\":[4000,4128]}}", 4128, NULL},
    {"hole between tensors", 0, "{" W_OK_ ",\"layer.weight_scale\":{\"dtype\":\"F16\",\"shape\":[64,1],\"data_offsets\":[4100,4228]}}", 4228, NULL},
    {"byte size differs from dtype x shape", 0, "{\"layer.weight\":{\"dtype\":\"I32\",\"shape\":[64,16],\"data_offsets\":[0,4000]}}", 4000, "layer.weight"},
    {"trailing bytes after the data", 0, "{" W_OK_ "," S_OK_ "}", 4224 + 10, NULL},
    {"duplicate tensor name", 0, "{" W_OK_ ",\"layer.weight\":{\"dtype\":\"F16\",\"shape\":[64,1],\"data_offsets\":[4096,4224]}}", 4224, "layer.weight"},
    {"invalid UTF-8 in a name", 0, "{\"layer.\xff\xfe\":{\"dtype\":\"I32\",\"shape\":[64,16],\"data_offsets\":[0,4096]}}", 4096, "UTF-8"},
    {"negative dimension", 0, "{\"layer.weight\":{\"dtype\":\"I32\",\"shape\":[-64,16],\"data_offsets\":[0,4096]}}", 4096, "layer.weight"},
    {"metadata value not a string", 0, "{\"__metadata__\":{\"format\":1}," W_OK_ "}", 4096, "__metadata__"},
    {"missing data_offsets", 0, "{\"layer.weight\":{\"dtype\":\"I32\",\"shape\":[64,16]}}", 4096, "data_offsets"},
    {"shape not a list", 0, "{\"layer.weight\":{\"dtype\":\"I32\",\"shape\":64,\"data_offsets\":[0,256]}}", 256, "shape"},
    {"offsets reversed", 0, "{\"layer.weight\":{\"dtype\":\"I32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, "layer.weight"},
};

static int contains_ci(const char *hay, const char *needle)
{
    return strcasestr(hay, needle) != NULL;
}

static void test_malformed_safetensors(void **state)
{
    fixture *f = *state;
    size_t n = sizeof bad_files / sizeof bad_files[0];
    assert_true(n >= 15);
    for (size_t i = 0; i < n; i++) {
        const bad_file *b = &bad_files[i];
        char path[8192];
        snprintf(path, sizeof path, "%s/model.safetensors", f->in);
        unlink(path);
        if (i == 0) {
            assert_int_equal(hc_fs_write_file(path, "\x01\x02\x03", 3, NULL), HC_OK);
        } else {
            write_raw_st(f->in, "model.safetensors", b->header_len, b->header, b->data_len);
        }
        int rc = run_cli(f, f->in, f->out, "-q");
        char *log = read_log(f);
        if (rc != 1 || !contains_ci(log, "model.safetensors") ||
            (b->reason && !contains_ci(log, b->reason)))
            fail_msg("case '%s': exit %d, message: %s", b->what, rc, log);
        printf("    refused (%s): %s", b->what, log);
        free(log);
        assert_no_output(f);
    }
}

static void expect_refusal(fixture *f, const char *extra, int want_rc, const char *needle)
{
    int rc = run_cli(f, f->in, f->out, extra);
    char *log = read_log(f);
    if (rc != want_rc || !contains_ci(log, needle))
        fail_msg("expected exit %d mentioning '%s', got %d: %s", want_rc, needle, rc, log);
    printf("    refused: %s", log);
    free(log);
    assert_no_output(f);
}

static void test_bad_index(void **state)
{
    fixture *f = *state;
    char path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors", f->in);
    char shard[8192];
    snprintf(shard, sizeof shard, "%s/model-00001-of-00002.safetensors", f->in);
    assert_int_equal(rename(path, shard), 0);
    write_text(f->in, "model.safetensors.index.json",
               "{\"metadata\": {}, \"weight_map\": {\"layer.weight\": \"model-00001-of-00002.safetensors\", "
               "\"layer.weight_scale\": \"model-00002-of-00002.safetensors\"}}");
    expect_refusal(f, "-q", 1, "model-00002-of-00002.safetensors");
    write_text(f->in, "model.safetensors.index.json", "{\"weight_map\": {\"layer.weight\": ");
    expect_refusal(f, "-q", 1, "model.safetensors.index.json");
    write_text(f->in, "model.safetensors.index.json",
               "{\"weight_map\": {\"layer.missing\": \"model-00001-of-00002.safetensors\"}}");
    expect_refusal(f, "-q", 1, "layer.missing");
    write_text(f->in, "model.safetensors.index.json",
               "{\"weight_map\": {\"layer.weight\": \"../escape.safetensors\"}}");
    expect_refusal(f, "-q", 1, "escape");
}

static void test_config_errors(void **state)
{
    fixture *f = *state;
    write_text(f->in, "config.json", "{\"torch_dtype\": \"float16\"}");
    expect_refusal(f, "-q", 1, "quantization_config");
    write_text(f->in, "config.json",
               "{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4}}");
    expect_refusal(f, "-q", 1, "gptq");
    write_text(f->in, "config.json", "{\"torch_dtype\": ");
    expect_refusal(f, "-q", 1, "config.json");
    write_text(f->in, "config.json",
               "{\"quantization_config\": {\"quant_method\": \"humming\", \"dtype\": \"uint4\", "
               "\"group_size\": 128, \"has_zero_point\": true}}");
    expect_refusal(f, "-q", 1, "layer.zero_point");
    write_text(f->in, "config.json", config_uint4);
    expect_refusal(f, "-q --activation int2", 2, "activation");
    expect_refusal(f, "-q --arch sm42", 2, "sm42");
    expect_refusal(f, "-q --bogus", 2, "--bogus");
}

static void test_unsupported_combination(void **state)
{
    fixture *f = *state;
    write_valid_model(f->in, 64, 128, 5);
    expect_refusal(f, "-q --activation int4", 1, "5-bit");
    assert_int_equal(run_cli(f, f->in, f->out, "-q --activation float16"), 0);
}

/* CRC-like fingerprint of every file in dir, to prove the input is untouched. */
static uint64_t dir_fingerprint(const char *dir)
{
    uint64_t h = 1469598103934665603ull;
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[8192], *text = NULL;
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_int_equal(hc_file_read_all(path, &text, &len, NULL), HC_OK);
        for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
        for (const char *c = e->d_name; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
        free(text);
    }
    closedir(d);
    return h;
}

static void test_success_force_and_input_untouched(void **state)
{
    fixture *f = *state;
    uint64_t before = dir_fingerprint(f->in);
    assert_int_equal(run_cli(f, f->in, f->out, "-q --arch sm80 --layout tiles"), 0);
    assert_int_equal(dir_fingerprint(f->in), before);
    char path[8192];
    snprintf(path, sizeof path, "%s/tokenizer.json", f->out);
    assert_true(hc_path_exists(path));
    snprintf(path, sizeof path, "%s/model.safetensors", f->out);
    hc_st_file *o = NULL;
    assert_int_equal(hc_st_open(path, &o, NULL), HC_OK);
    const hc_st_tensor *w = hc_st_find(o, "layer.weight"), *n = hc_st_find(o, "norm.weight");
    assert_non_null(w);
    assert_non_null(n);
    assert_int_equal(w->shape[0], 128 / 16); /* K/P rows for 16-bit activations */
    assert_int_equal(w->shape[1], 256 * 16 * 4 / 32); /* N = 64 padded to 256, as vLLM does */
    hc_st_close(o);
    uint64_t out_before = dir_fingerprint(f->out);
    int rc = run_cli(f, f->in, f->out, "-q");
    assert_int_equal(rc, 2); /* exists without --force */
    assert_int_equal(dir_fingerprint(f->out), out_before);
    assert_int_equal(run_cli(f, f->in, f->out, "-q --force --arch sm90 --layout tiles"), 0);
    assert_true(dir_fingerprint(f->out) != out_before); /* replaced: LayerConfig sm_version 90 */
    assert_int_equal(dir_fingerprint(f->in), before);
}

static void test_sharded_output(void **state)
{
    fixture *f = *state;
    assert_int_equal(run_cli(f, f->in, f->out, "-q --max-shard-size 1K"), 0);
    hc_st_model *m = NULL;
    hc_error err;
    if (hc_st_model_open(f->out, &m, &err) != HC_OK) fail_msg("%s", err.msg);
    assert_int_equal(hc_st_model_count(m), 3);
    assert_true(hc_st_model_file_count(m) >= 2);
    assert_non_null(hc_st_model_find(m, "layer.weight_scale"));
    hc_st_model_close(m);
    char path[8192];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", f->out);
    assert_true(hc_path_exists(path));
}

/* An input that holds a humming_manifest.json and reports (an earlier
 * output converted again, or a copy of one): those are not side files; the
 * run writes its own, and the result passes `check`. It used to fail
 * creating the manifest over the copied one. */
static void test_our_files_in_input_not_copied(void **state)
{
    fixture *f = *state;
    write_text(f->in, "humming_manifest.json", "{\"files\": [{\"name\": \"stale\"}]}");
    write_text(f->in, "humming_report.json", "{\"stale\": true}");
    write_text(f->in, "humming_report.md", "stale");
    uint64_t before = dir_fingerprint(f->in);
    int rc = run_cli(f, f->in, f->out, "-q --verify off");
    char *log = read_log(f);
    if (rc != 0) fail_msg("exit %d: %s", rc, log);
    free(log);
    assert_int_equal(dir_fingerprint(f->in), before);
    char path[8192], cmd[16384];
    snprintf(path, sizeof path, "%s/humming_report.json", f->out);
    char *report = NULL;
    assert_int_equal(hc_file_read_all(path, &report, NULL, NULL), HC_OK);
    assert_null(strstr(report, "stale"));
    free(report);
    const char *cli = getenv("HC_CLI");
    snprintf(cmd, sizeof cmd, "'%s' check '%s' >/dev/null 2>&1", cli ? cli : "build/humming-convert",
             f->out);
    assert_int_equal(system(cmd), 0);
}

/* --max-shard-size: whole bytes with an optional K/M/G/T/P (and B / iB);
 * nan, fractions of a byte, exponents, signs, 0 and absurd sizes are usage
 * errors naming the option and the reason (nan used to be cast to int64). */
static void test_max_shard_size(void **state)
{
    fixture *f = *state;
    static const char *const good[] = {"5GB", "500MB", "64K", "1.5G", "4096", "0.5K", "2GiB", "1P"};
    static const char *const bad[][2] = {
        {"nan", "expected digits"}, {"inf", "expected digits"}, {"0.5", "whole number of bytes"},
        {"1e300", "unexpected characters"}, {"-5", "expected digits"}, {"0", "at least 1 byte"},
        {"0x10", "unexpected characters"}, {"", "expected digits"}, {"2P", "too large"},
        {"99999999999999999999999", "too large"}, {"1.0001G", "at most 3 decimals"},
    };
    char extra[256];
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        snprintf(extra, sizeof extra, "--dry-run -q --max-shard-size '%s'", good[i]);
        if (run_cli(f, f->in, f->out, extra) != 0) fail_msg("%s refused", good[i]);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(extra, sizeof extra, "--dry-run -q --max-shard-size '%s'", bad[i][0]);
        int rc = run_cli(f, f->in, f->out, extra);
        char *log = read_log(f);
        if (rc != 2 || !strstr(log, "--max-shard-size") || !strstr(log, bad[i][1]))
            fail_msg("'%s': exit %d, want 2 and \"%s\": %s", bad[i][0], rc, bad[i][1], log);
        free(log);
    }
    assert_no_output(f);
}

static void test_dry_run_writes_nothing(void **state)
{
    fixture *f = *state;
    assert_int_equal(run_cli(f, f->in, f->out, "--dry-run"), 0);
    char *log = read_log(f);
    assert_true(contains_ci(log, "layer.weight") || contains_ci(log, "layer layer"));
    free(log);
    assert_no_output(f);
}

/* An explicit HC_KERNELS_LIB that cannot be loaded is named in the fallback
 * message; no other kernel library is taken in its place. */
static void test_kernels_lib_missing(void **state)
{
    fixture *f = *state;
    assert_int_equal(setenv("HC_KERNELS_LIB", "/nonexistent/libhc_kernels_x.so", 1), 0);
    int rc = run_cli(f, f->in, f->out, "--verify gpu");
    unsetenv("HC_KERNELS_LIB");
    assert_int_equal(rc, 0);
    char *log = read_log(f);
    assert_non_null(strstr(log, "HC_KERNELS_LIB=/nonexistent/libhc_kernels_x.so cannot be loaded"));
    assert_non_null(strstr(log, "falling back to the CPU"));
    free(log);
}

/* The host stand-in of the kernel library (tests/host_kernels.c, next to
 * the tests' binaries), for --verify gpu without a GPU. */
static void set_host_kernels(void)
{
    const char *cli = getenv("HC_CLI");
    char path[4200];
    snprintf(path, sizeof path, "%s", cli ? cli : "build/humming-convert");
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
             "tests/libhc_host_kernels.so");
    assert_int_equal(setenv("HC_KERNELS_LIB", path, 1), 0);
}

/* --verify gpu runs each layer's GEMM through the kernel library on the
 * verifier's helper thread and compares it with the CPU reference: with the
 * host stand-in the layer passes with its GPU metrics in the report; a GEMM
 * that fails fails the run, naming the layer and the library's message, and
 * leaves no output. */
static void test_verify_gpu_thread(void **state)
{
    fixture *f = *state;
    set_host_kernels();
    int rc = run_cli(f, f->in, f->out, "--verify gpu");
    char *log = read_log(f);
    if (rc != 0) fail_msg("exit %d: %s", rc, log);
    assert_null(strstr(log, "falling back"));
    free(log);
    char path[8192], *report = NULL;
    snprintf(path, sizeof path, "%s/humming_report.json", f->out);
    assert_int_equal(hc_file_read_all(path, &report, NULL, NULL), HC_OK);
    assert_non_null(strstr(report, "\"gpu_gemm_rel_err\""));
    const char *b = strstr(report, "\"verify_backend\":");
    assert_non_null(b);
    b += strlen("\"verify_backend\":");
    assert_int_equal(strncmp(b + strspn(b, " \t"), "\"gpu\"", 5), 0);
    free(report);
    assert_int_equal(hc_fs_remove_tree(f->out, NULL), HC_OK);

    assert_int_equal(setenv("HC_HOST_KERNELS_FAIL", "1", 1), 0);
    rc = run_cli(f, f->in, f->out, "--verify gpu");
    unsetenv("HC_HOST_KERNELS_FAIL");
    unsetenv("HC_KERNELS_LIB");
    assert_int_not_equal(rc, 0);
    log = read_log(f);
    assert_non_null(strstr(log, "verifying layer: GPU GEMM: host kernels: GEMM failed as asked"));
    free(log);
    assert_no_output(f);
}

/* The progress lines' rate is the bytes written over the run's time so far
 * (it once divided the first item's bytes by the time since that item ended:
 * terabytes per second). No conversion here writes 100 GB/s. */
static void test_progress_rate(void **state)
{
    fixture *f = *state;
    write_valid_model(f->in, 2048, 2048, 4);
    assert_int_equal(run_cli(f, f->in, f->out, "--verify off"), 0);
    char *log = read_log(f), *save = NULL;
    int lines = 0;
    for (char *line = strtok_r(log, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        const char *m = strstr(line, " MB, "); /* "(%.1f MB, %.1f MB/s)" */
        if (m == NULL || strstr(m, " MB/s)") == NULL) continue;
        const double mbs = strtod(m + 5, NULL);
        if (!(mbs > 0 && mbs < 1e5)) fail_msg("progress rate %.1f MB/s: %s", mbs, line);
        lines++;
    }
    assert_int_equal(lines, 2); /* the layer, the copied norm */
    free(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_malformed_safetensors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_combination, setup, teardown),
        cmocka_unit_test_setup_teardown(test_success_force_and_input_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sharded_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_our_files_in_input_not_copied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_shard_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernels_lib_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_gpu_thread, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
