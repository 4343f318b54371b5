/* humming-convert - command line front end. Turns library errors into messages
 * and exit codes: 0 success, 1 failure, 2 usage error, 3 verification failed
 * (output and report written). Prints the verification summary table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_convert.h"
#include "hc_gpu_detect.h"
#include "hc_model_config.h"
#include "hc_report.h"
#include "hc_version.h"

enum { EXIT_USAGE = 2, EXIT_VERIFY = 3 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: humming-convert IN_DIR OUT_DIR [options]\n"
            "       humming-convert report OUT_DIR [--input IN_DIR] [verification options]\n"
            "\n"
            "Converts a Humming-format checkpoint (quant_method \"humming\", row-packed int32\n"
            "weights) into the kernel-ready tile layout of the Humming GEMM kernels.\n"
            "\n"
            "options:\n"
            "  --arch SM            target GPU: sm75 sm80 sm86 sm89 sm90 sm100 sm120\n"
            "                       (default: the local GPU, else sm90)\n"
            "  --activation DTYPE   float16 bfloat16 float8e4m3 float8e5m2 int8 int4\n"
            "                       (default: the checkpoint's torch_dtype)\n"
            "  --max-shard-size N   output shard size limit, bytes or with K/M/G suffix (default 4G)\n"
            "  --force              replace OUT_DIR if it exists\n"
            "  --dry-run            print the per-layer plan, write nothing\n"
            "  --humming-compat     reproduce Humming's bytes exactly where its transform\n"
            "                       disagrees with its kernel (see docs/layout.md)\n"
            "  --verify MODE        auto gpu cpu off: check every converted layer with a\n"
            "                       reference GEMM (default auto: GPU if present, else CPU)\n"
            "  --verify-tokens M    activation rows per layer (default 16)\n"
            "  --calib FILE         safetensors with activations keyed by layer name\n"
            "  --allow-degraded     layers over their error bound do not fail the run\n"
            "  --input IN_DIR       (report) the source; default: the one in the report\n"
            "  -q, --quiet          no progress lines\n"
            "  -h, --help           this text\n"
            "  --version            print the version\n");
}

static void log_line(void *ctx, const char *line)
{
    if (ctx == NULL) fprintf(stderr, "humming-convert: %s\n", line);
}

static int parse_size(const char *s, int64_t *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return -1;
    double mult = 1;
    if (*end == 'K' || *end == 'k') mult = 1024.0, end++;
    else if (*end == 'M' || *end == 'm') mult = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g') mult = 1024.0 * 1024 * 1024, end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') return -1;
    *out = (int64_t)(v * mult);
    return 0;
}

typedef struct {
    hc_convert_options opts;
    const char *arch, *activation, *shard_size, *verify, *tokens, *input;
    int quiet, report;
} cli_args;

/* Returns -1 on a usage error (message printed), 1 for --help/--version, 0 to run. */
static int parse_args(int argc, char **argv, cli_args *a)
{
    const char *pos[2] = {NULL, NULL};
    int npos = 0, first = 1;
    if (argc > 1 && !strcmp(argv[1], "report")) a->report = 1, first = 2;
    for (int i = first; i < argc; i++) {
        const char *s = argv[i];
        const char **value = NULL;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) { usage(stdout); return 1; }
        if (!strcmp(s, "--version")) { printf("humming-convert %s\n", HC_VERSION); return 1; }
        if (!strcmp(s, "--force")) a->opts.force = 1;
        else if (!strcmp(s, "--dry-run")) a->opts.dry_run = 1;
        else if (!strcmp(s, "--humming-compat")) a->opts.humming_bug_compat = 1;
        else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) a->quiet = 1;
        else if (!strcmp(s, "--arch")) value = &a->arch;
        else if (!strcmp(s, "--activation")) value = &a->activation;
        else if (!strcmp(s, "--max-shard-size")) value = &a->shard_size;
        else if (!strcmp(s, "--verify")) value = &a->verify;
        else if (!strcmp(s, "--verify-tokens")) value = &a->tokens;
        else if (!strcmp(s, "--calib")) value = &a->opts.calib_path;
        else if (!strcmp(s, "--input")) value = &a->input;
        else if (!strcmp(s, "--allow-degraded")) a->opts.allow_degraded = 1;
        else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "humming-convert: unknown option %s (see --help)\n", s);
            return -1;
        } else if (npos < 2) pos[npos++] = s;
        else {
            fprintf(stderr, "humming-convert: unexpected argument %s (see --help)\n", s);
            return -1;
        }
        if (value && ++i >= argc) {
            fprintf(stderr, "humming-convert: %s needs a value\n", s);
            return -1;
        }
        if (value) *value = argv[i];
    }
    if (a->report) {
        if (npos != 1) {
            fprintf(stderr, "humming-convert: report needs exactly OUT_DIR (see --help)\n");
            return -1;
        }
        a->opts.in_dir = a->input;
        a->opts.out_dir = pos[0];
        return 0;
    }
    if (npos != 2) {
        fprintf(stderr, "humming-convert: need IN_DIR and OUT_DIR (see --help)\n");
        return -1;
    }
    a->opts.in_dir = pos[0];
    a->opts.out_dir = pos[1];
    return 0;
}

/* Resolves --arch, --activation and --max-shard-size into opts. */
static int resolve_args(cli_args *a, hc_error *err)
{
    if (a->arch) {
        if (hc_arch_parse(a->arch, &a->opts.sm, err) != HC_OK) return -1;
    } else {
        int sm = hc_gpu_detect_sm();
        a->opts.sm = sm >= 75 ? (sm >= 120 ? 120 : sm >= 100 ? 100 : sm >= 90 ? 90
                                 : sm >= 89 ? 89 : sm >= 86 ? 86 : sm >= 80 ? 80 : 75) : 90;
    }
    if (a->activation) {
        if (hc_activation_parse(a->activation, &a->opts.activation, err) != HC_OK) return -1;
        a->opts.has_activation = 1;
    }
    if (a->verify && hc_verify_mode_parse(a->verify, &a->opts.verify) != 0) {
        hc_error_set(err, HC_ERR_ARG, "--verify: expected auto, gpu, cpu or off (got \"%s\")",
                     a->verify);
        return -1;
    }
    if (a->tokens) {
        char *end = NULL;
        long m = strtol(a->tokens, &end, 10);
        if (end == a->tokens || *end || m < 1 || m > 1 << 20) {
            hc_error_set(err, HC_ERR_ARG, "--verify-tokens: expected 1..1048576 (got \"%s\")",
                         a->tokens);
            return -1;
        }
        a->opts.verify_tokens = (int)m;
    }
    if (a->shard_size && parse_size(a->shard_size, &a->opts.max_shard_bytes) != 0) {
        hc_error_set(err, HC_ERR_ARG, "--max-shard-size: cannot parse \"%s\"", a->shard_size);
        return -1;
    }
    return 0;
}

static char *join_command_line(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++) len += strlen(argv[i]) + 1;
    char *s = calloc(len, 1);
    for (int i = 0; s && i < argc; i++) {
        if (i) strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* The summary table: every layer when there are few, else the failed and the
 * ten with the lowest SNR. */
static void print_summary(const hc_report *r)
{
    if (r == NULL || r->n_layers == 0) return;
    printf("\nverification (%s, %d tokens, %s activations):\n", r->verify_backend, r->tokens,
           r->calib ? "calibration" : "random");
    printf("  %-44s %-30s %10s %9s %9s  %s\n", "layer", "format", "w rel err", "gemm dB",
           "q-act dB", "status");
    int shown = 0;
    for (int i = 0; i < r->n_layers; i++) {
        const hc_report_layer *L = &r->layers[i];
        if (r->n_layers > 24 && L->m.pass && shown >= 10) continue;
        shown++;
        if (!L->verified) {
            printf("  %-44s %-30s %10s %9s %9s  skipped\n", L->name, L->format, "-", "-", "-");
            continue;
        }
        char q[16] = "-";
        if (L->m.has_qact) snprintf(q, sizeof q, "%.1f", L->m.qact_snr_db);
        printf("  %-44s %-30s %10.3g %9.1f %9s  %s%s%s\n", L->name, L->format,
               L->m.weight_rel_err, L->m.gemm_snr_db, q, L->m.pass ? "pass" : "FAIL",
               L->m.pass ? "" : ": ", L->m.pass ? "" : L->m.reason);
    }
    if (shown < r->n_layers) printf("  ... %d more passing layers\n", r->n_layers - shown);
    double red = r->bytes_in > 0 ? 100.0 * (double)r->bytes_out / (double)r->bytes_in : 0;
    printf("  %d layers: %d passed, %d failed; quantized layers %lld -> %lld bytes (%.1f%%)\n",
           r->n_layers, r->n_pass, r->n_fail, (long long)r->bytes_in, (long long)r->bytes_out,
           red);
}

int main(int argc, char **argv)
{
    cli_args a;
    memset(&a, 0, sizeof a);
    int r = parse_args(argc, argv, &a);
    if (r != 0) return r > 0 ? 0 : EXIT_USAGE;
    hc_error err;
    hc_error_clear(&err);
    if (resolve_args(&a, &err) != 0) {
        fprintf(stderr, "humming-convert: %s\n", err.msg);
        return EXIT_USAGE;
    }
    char *cmdline = join_command_line(argc, argv);
    a.opts.command_line = cmdline;
    a.opts.log = log_line;
    a.opts.log_ctx = a.quiet ? (void *)&a : NULL;
    hc_convert_stats stats;
    hc_status st = a.report ? hc_report_run(&a.opts, &stats, &err)
                            : hc_convert_run(&a.opts, &stats, &err);
    free(cmdline);
    if (!a.quiet && stats.report && stats.report->verify_backend[0] &&
        strcmp(stats.report->verify_backend, "none"))
        print_summary(stats.report);
    hc_report_free(stats.report);
    if (st != HC_OK) {
        fprintf(stderr, "humming-convert: error: %s\n", err.msg);
        return st == HC_ERR_ARG ? EXIT_USAGE : st == HC_ERR_VERIFY ? EXIT_VERIFY : 1;
    }
    if (a.report) {
        if (!a.quiet) fprintf(stderr, "humming-convert: report rewritten in %s\n", a.opts.out_dir);
        return 0;
    }
    if (!a.quiet && !a.opts.dry_run)
        fprintf(stderr, "humming-convert: done: %d layers converted, %d tensors copied, %d shard(s), "
                "%lld -> %lld bytes in %s\n", stats.layers, stats.tensors_copied, stats.shards,
                (long long)stats.bytes_in, (long long)stats.bytes_out, a.opts.out_dir);
    return 0;
}
