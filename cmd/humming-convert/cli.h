/* cli.h - shared declarations of the humming-convert command-line program. */
#ifndef HC_CLI_H
#define HC_CLI_H

#include <stdio.h>

#include "hc_convert.h"
#include "hc_preset.h"

struct hc_recipe;

enum { HC_EXIT_OK = 0, HC_EXIT_FAIL = 1, HC_EXIT_USAGE = 2, HC_EXIT_VERIFY = 3 };

/* Field flags (--weight-dtype ...) in the order given; applied after --format. */
typedef struct {
    const char *key, *value;
} cli_field;

typedef struct {
    hc_convert_options opts;
    const char *arch, *activation, *shard_size, *format, *recipe_path, *act_order, *layout;
    const char *verify, *tokens, *input;  /* verification options; input: report's source */
    int report;                           /* `humming-convert report OUT_DIR` */
    int check;                            /* `humming-convert check OUT_DIR` */
    cli_field fields[16];
    int n_fields;
    int quiet, list_formats;
    /* resolved */
    int has_base;
    hc_target base;
    struct hc_recipe *recipe;
    double progress_start;   /* seconds, for the rate shown by cli_progress */
} cli_args;

/* Parses argv into a; returns -1 on a usage error (err says why; nothing is
 * printed), 1 when the program should exit 0 right away (--help, --version:
 * printed on stdout), else 0. */
int cli_parse_args(int argc, char **argv, cli_args *a, hc_error *err);

/* Resolves arch, activation, shard size, base target and recipe; 0 or -1 with err set. */
int cli_resolve(cli_args *a, hc_error *err);

/* The hc_target_fn for float layers: recipe (or built-in defaults) over the base. */
hc_status cli_choose_target(void *ctx, const char *layer, hc_target *out, int *skip, char *why,
                            size_t why_len, hc_error *err);

/* Prints the presets and the weight x activation support matrix for sm. */
void cli_list_formats(FILE *out, int sm);

/* Progress on stderr: a bar when it is a terminal, plain lines otherwise;
 * the rate is the bytes written over the time since cli_progress_start. */
void cli_progress(void *ctx, int done, int total, int64_t bytes_done, int64_t bytes_total,
                  const char *current);

/* Notes the start of the run, from which cli_progress measures its rate. */
void cli_progress_start(cli_args *a);

void cli_usage(FILE *out);

/* One line on how targets are chosen: recipe, preset/flags, built-in ignore list. */
void cli_target_summary(const cli_args *a, char *buf, size_t len);

struct hc_report;
/* The summary table: every layer when there are few, else failed + 10 worst. */
void cli_print_summary(const struct hc_report *r);

#endif
