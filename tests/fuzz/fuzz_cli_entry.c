/* fuzz_cli_entry.c - humming-convert's command line from bytes (see
 * fuzz_entry.h): arguments separated by NUL or newline (at most 63), after
 * argv[0]. cli_parse_args, then cli_resolve and the target choice for a few
 * layer names. --recipe is not followed (a fuzzed path could name /dev/zero;
 * recipes have their own target) and a missing --arch is sm90 (no GPU probe). */
#include "fuzz_entry.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hc_recipe.h"

#define MAX_ARGS 64

static int check_error(int r, const hc_error *err, const char *what, char *why)
{
    if (r < 0 && (err->status != HC_ERR_ARG && err->status != HC_ERR_FORMAT &&
                  err->status != HC_ERR_UNSUPPORTED && err->status != HC_ERR_IO))
        return hc_fuzz_fail(why, "%s: failed with status %d", what, (int)err->status);
    if (r < 0 && err->msg[0] == '\0') return hc_fuzz_fail(why, "%s: failed without a message", what);
    return 0;
}

/* What a successful resolve promises. */
static int check_resolved(const cli_args *a, char *why)
{
    static const int sms[] = {75, 80, 86, 89, 90, 100, 120};
    int sm_ok = 0;
    for (size_t i = 0; i < sizeof sms / sizeof sms[0]; i++) sm_ok |= a->opts.sm == sms[i];
    if (!sm_ok) return hc_fuzz_fail(why, "resolved to sm%d", a->opts.sm);
    if (a->shard_size && (a->opts.max_shard_bytes < 1 || a->opts.max_shard_bytes > (1LL << 50)))
        return hc_fuzz_fail(why, "--max-shard-size \"%.64s\" gave %lld bytes", a->shard_size,
                            (long long)a->opts.max_shard_bytes);
    if (a->tokens && (a->opts.verify_tokens < 1 || a->opts.verify_tokens > (1 << 20)))
        return hc_fuzz_fail(why, "--verify-tokens gave %d", a->opts.verify_tokens);
    if (a->opts.act_order < 0 || a->opts.act_order > 2)
        return hc_fuzz_fail(why, "--act-order gave %d", a->opts.act_order);
    return 0;
}

static int choose_targets(cli_args *a, char *why)
{
    static const char *const layers[] = {"model.layers.0.mlp.down_proj", "lm_head",
                                         "model.layers.3.self_attn.q_proj"};
    char summary[256], reason[256];
    cli_target_summary(a, summary, sizeof summary);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        hc_target t;
        int skip = 0;
        hc_error err;
        hc_error_clear(&err);
        hc_status st = cli_choose_target(a, layers[i], &t, &skip, reason, sizeof reason, &err);
        if (st != HC_OK && err.msg[0] == '\0')
            return hc_fuzz_fail(why, "cli_choose_target(%s): error %d without a message",
                                layers[i], (int)st);
    }
    return 0;
}

int hc_fuzz_cli(const uint8_t *data, size_t size, char *why)
{
    char *buf = hc_fuzz_cstr(data, size), *argv[MAX_ARGS + 1];
    if (buf == NULL) return 0;
    int argc = 0;
    argv[argc++] = "humming-convert";
    size_t start = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS; i++) { /* buf[size] is the final NUL */
        if (i < size && buf[i] != '\0' && buf[i] != '\n') continue;
        buf[i] = '\0';
        argv[argc++] = buf + start;
        start = i + 1;
    }
    argv[argc] = NULL;
    cli_args a;
    memset(&a, 0, sizeof a);
    hc_error err;
    hc_error_clear(&err);
    int r = cli_parse_args(argc, argv, &a, &err), rc = check_error(r, &err, "cli_parse_args", why);
    if (rc == 0 && r == 0 && !a.check) {
        a.recipe_path = NULL;
        if (a.arch == NULL) a.arch = "sm90";
        hc_error_clear(&err);
        r = cli_resolve(&a, &err);
        rc = check_error(r, &err, "cli_resolve", why);
        if (rc == 0 && r == 0) rc = check_resolved(&a, why);
        if (rc == 0 && r == 0) rc = choose_targets(&a, why);
        hc_recipe_free(a.recipe);
    }
    free(buf);
    return rc;
}
