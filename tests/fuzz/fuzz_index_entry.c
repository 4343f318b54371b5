/* fuzz_index_entry.c - a sharded model directory whose index comes from the
 * fuzzer (see fuzz_entry.h). The directory and its two shards are made once
 * per process and removed at exit. */
#include "fuzz_entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_safetensors.h"

#define INDEX_NAME "model.safetensors.index.json"

static char dir[64];
static char index_path[128];

static void remove_dir(void)
{
    static const char *const names[] = {"a.safetensors", "b.safetensors", INDEX_NAME};
    char p[160];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* a.safetensors: "x" F32 [2], "y" U8 [3]; b.safetensors: "z" BF16 [1, 2]. */
static int make_dir(void)
{
    if (dir[0]) return 0;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/hc-fuzz-index-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        dir[0] = '\0';
        return -1;
    }
    atexit(remove_dir);
    snprintf(index_path, sizeof index_path, "%s/%s", dir, INDEX_NAME);
    float x[2] = {1.0f, -2.0f};
    uint8_t y[3] = {1, 2, 3};
    uint16_t z[2] = {0x3f80, 0xc000};
    hc_tensor ta[2] = {{.dtype = HC_DT_F32, .ndim = 1, .shape = {2}, .data = x, .nbytes = 8},
                       {.dtype = HC_DT_U8, .ndim = 1, .shape = {3}, .data = y, .nbytes = 3}};
    hc_tensor tb[1] = {{.dtype = HC_DT_BF16, .ndim = 2, .shape = {1, 2}, .data = z, .nbytes = 4}};
    const char *na[] = {"x", "y"}, *nb[] = {"z"};
    char p[160];
    hc_error err;
    snprintf(p, sizeof p, "%s/a.safetensors", dir);
    if (hc_st_write_file(p, ta, na, 2, NULL, &err) != HC_OK) return -1;
    snprintf(p, sizeof p, "%s/b.safetensors", dir);
    if (hc_st_write_file(p, tb, nb, 1, NULL, &err) != HC_OK) return -1;
    return 0;
}

int hc_fuzz_index(const uint8_t *data, size_t size, char *why)
{
    if (make_dir() != 0) return hc_fuzz_fail(why, "cannot make the temporary model directory");
    FILE *fp = fopen(index_path, "wb");
    if (fp == NULL) return hc_fuzz_fail(why, "cannot write %s", index_path);
    size_t put = fwrite(data, 1, size, fp);
    if (fclose(fp) != 0 || put != size) return hc_fuzz_fail(why, "cannot write %s", index_path);

    hc_st_model *m = NULL;
    hc_error err;
    hc_error_clear(&err);
    hc_status st = hc_st_model_open(dir, &m, &err);
    if (st != HC_OK) {
        if (m != NULL) return hc_fuzz_fail(why, "failed open returned a handle");
        if (err.status != st || err.msg[0] == '\0')
            return hc_fuzz_fail(why, "error %d without a message", (int)st);
        return 0;
    }
    int rc = 0;
    if (hc_st_model_count(m) > 3) rc = hc_fuzz_fail(why, "more tensors than the shards hold");
    for (size_t i = 0; rc == 0 && i < hc_st_model_count(m); i++) {
        const hc_st_tensor *t = hc_st_model_tensor_at(m, i);
        if (t == NULL || hc_st_model_find(m, t->name) != t)
            rc = hc_fuzz_fail(why, "tensor %zu: lookup by name does not find it", i);
    }
    for (size_t i = 0; rc == 0 && i < hc_st_model_file_count(m); i++)
        if (hc_st_model_file_at(m, i) == NULL) rc = hc_fuzz_fail(why, "file %zu missing", i);
    hc_st_model_close(m);
    return rc;
}
