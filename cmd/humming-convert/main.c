/* humming-convert - command line front end. Turns library errors into messages
 * and exit codes: 0 success, 1 failure, 2 usage error, 3 verification failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hc_integrity.h"
#include "hc_recipe.h"
#include "hc_report.h"
#include "hc_sigbus.h"

/* ctx is non-NULL under --quiet, which drops progress lines but never a
 * warning (such as a layer's reading note). */
static void log_line(void *ctx, const char *line)
{
    if (ctx == NULL || strncmp(line, "warning:", 8) == 0)
        fprintf(stderr, "humming-convert: %s\n", line);
}

static char *join_command_line(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = calloc(len, 1);
    for (int i = 0; s && i < argc; i++) {
        if (!strcmp(argv[i], "--resume")) continue; /* a resumed run writes the same bytes */
        if (i) strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static void print_done(const cli_args *a, const hc_convert_stats *stats)
{
    if (a->quiet || a->opts.dry_run) return;
    if (a->report) {
        fprintf(stderr, "humming-convert: report rewritten in %s\n", a->opts.out_dir);
        return;
    }
    fprintf(stderr, "humming-convert: done: %d layers converted, %d tensors copied, %d shard(s), "
            "%lld -> %lld bytes in %s\n", stats->layers, stats->tensors_copied, stats->shards,
            (long long)stats->bytes_in, (long long)stats->bytes_out, a->opts.out_dir);
}

/* Test hooks, read here only (the library has no global state):
 * HC_TEST_PAUSE_AT=POINT[:SECONDS] stalls the run at a named point. */
static void read_test_hooks(cli_args *a)
{
    static char point[64];
    const char *p = getenv("HC_TEST_PAUSE_AT");
    if (p == NULL || p[0] == '\0') return;
    snprintf(point, sizeof point, "%s", p);
    char *colon = strchr(point, ':');
    if (colon) {
        *colon = '\0';
        double secs = strtod(colon + 1, NULL);
        a->opts.test_pause_seconds = secs > 0 && secs <= 3600 ? secs : 0; /* 0: 30 s; never cast 1e300 */
    }
    a->opts.test_pause_at = point;
}

static void check_line(void *ctx, const char *line)
{
    (void)ctx;
    printf("corrupt: %s\n", line);
}

/* `humming-convert check OUT_DIR`: 0 clean, 1 corrupt or unreadable. */
static int run_check(const cli_args *a)
{
    hc_error err;
    hc_error_clear(&err);
    int problems = 0;
    if (hc_check_dir(a->opts.out_dir, check_line, NULL, &problems, &err) != HC_OK) {
        fprintf(stderr, "humming-convert: check: %s\n", err.msg);
        return HC_EXIT_FAIL;
    }
    if (problems) {
        fprintf(stderr, "humming-convert: check: %s: %d problem(s) found\n", a->opts.out_dir,
                problems);
        return HC_EXIT_FAIL;
    }
    printf("%s: every file matches %s\n", a->opts.out_dir, HC_MANIFEST_NAME);
    return HC_EXIT_OK;
}

static int run_convert(cli_args *a, int argc, char **argv)
{
    hc_error err;
    hc_error_clear(&err);
    char *cmdline = join_command_line(argc, argv);
    read_test_hooks(a);
    a->opts.command_line = cmdline;
    a->opts.log = log_line;
    a->opts.log_ctx = a->quiet ? (void *)a : NULL;
    a->opts.progress = a->quiet ? NULL : cli_progress;
    a->opts.progress_ctx = a;
    a->opts.choose_target = cli_choose_target;
    a->opts.choose_ctx = a;
    char summary[256];
    cli_target_summary(a, summary, sizeof summary);
    a->opts.target_summary = a->report ? NULL : summary; /* report: the recorded targets */
    hc_convert_stats stats;
    memset(&stats, 0, sizeof stats);
    cli_progress_start(a);
    hc_status st = a->report ? hc_report_run(&a->opts, &stats, &err)
                             : hc_convert_run(&a->opts, &stats, &err);
    free(cmdline);
    if (!a->quiet && (st == HC_OK || st == HC_ERR_VERIFY) && stats.report &&
        stats.report->verify_backend[0] && strcmp(stats.report->verify_backend, "none"))
        cli_print_summary(stats.report);
    hc_report_free(stats.report);
    if (st != HC_OK) {
        fprintf(stderr, "humming-convert: error: %s\n", err.msg);
        return st == HC_ERR_ARG ? HC_EXIT_USAGE : st == HC_ERR_VERIFY ? HC_EXIT_VERIFY : HC_EXIT_FAIL;
    }
    print_done(a, &stats);
    return HC_EXIT_OK;
}

int main(int argc, char **argv)
{
    /* reads of a truncated input become errors naming it, not SIGBUS */
    if (hc_sigbus_install() != 0)
        fprintf(stderr, "humming-convert: warning: cannot install the SIGBUS handler\n");
    cli_args a;
    memset(&a, 0, sizeof a);
    hc_error err;
    hc_error_clear(&err);
    int r = cli_parse_args(argc, argv, &a, &err);
    if (r < 0) fprintf(stderr, "humming-convert: %s\n", err.msg);
    if (r != 0) return r > 0 ? HC_EXIT_OK : HC_EXIT_USAGE;
    if (a.check) return run_check(&a);
    if (cli_resolve(&a, &err) != 0) {
        fprintf(stderr, "humming-convert: %s\n", err.msg);
        hc_recipe_free(a.recipe);
        return HC_EXIT_USAGE;
    }
    int rc = HC_EXIT_OK;
    if (a.list_formats) cli_list_formats(stdout, a.opts.sm);
    else rc = run_convert(&a, argc, argv);
    hc_recipe_free(a.recipe);
    return rc;
}
