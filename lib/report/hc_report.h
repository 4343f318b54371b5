/* hc_report.h - the accuracy validation report (docs/report.md): one record
 * per converted layer plus run metadata, written as JSON, HTML and Markdown
 * into the output directory. The library fills and writes it; the CLI prints
 * the summary table. */
#ifndef HC_REPORT_H
#define HC_REPORT_H

#include <stdint.h>

#include "hc_error.h"
#include "hc_verify.h"

typedef struct {
    char *name;                   /* layer prefix */
    int ndim;
    int64_t shape[3];             /* (E?, N, K) unpadded */
    char weight_format[32], act_format[32], scale_type[16], variant[16];
    char format[96];              /* "uint4 g128 float16-scales" */
    int64_t bytes_in, bytes_out;
    int verified;                 /* 0: verification off */
    char verify_source[16];       /* what was decoded: "tiles-0.1.19" (written, or built
                                     from the canonical tensors) or "canonical" */
    hc_verify_metrics m;
    double seconds;               /* verification time */
} hc_report_layer;

typedef struct hc_report {
    char *tool_version, *command_line, *input, *output;
    char *format;                 /* source format summary */
    char *recipe;                 /* source quantization recipe */
    char arch[16], activation[32];
    char verify_mode[8];          /* requested */
    char verify_backend[8];       /* used: "gpu" (GPU kernels + CPU reference), "cpu" or "none" */
    int tokens;
    char *calib;                  /* NULL: random activations */
    int allow_degraded;
    char started[32], finished[32];  /* ISO 8601 UTC */
    double seconds;
    hc_report_layer *layers;
    int n_layers, cap;
    int n_pass, n_fail;
    int64_t bytes_in, bytes_out;
} hc_report;

hc_report *hc_report_new(void);
void hc_report_free(hc_report *r);
/* Appends a zeroed layer named `name`; NULL on allocation failure. */
hc_report_layer *hc_report_add_layer(hc_report *r, const char *name);
/* Recounts n_pass / n_fail / byte totals from the layers. */
void hc_report_tally(hc_report *r);
/* Sets a string field (copied). */
void hc_report_set(char **field, const char *value);
/* Current UTC time as ISO 8601 into buf[32]. */
void hc_report_now(char *buf);

/* Writers: dir/humming_report.json, .html, .md. */
hc_status hc_report_write_json(const hc_report *r, const char *path, hc_error *err);
hc_status hc_report_write_html(const hc_report *r, const char *path, hc_error *err);
hc_status hc_report_write_md(const hc_report *r, const char *path, hc_error *err);
/* All three reports into dir, all or nothing: each is written to a new dot
 * file and fsynced, an existing humming_manifest.json is staged with their
 * new entries (hc_manifest_stage), and only then are the files renamed into
 * place, the manifest last. A failure before the renames (a full disk)
 * removes the new files and leaves the old reports and manifest as they
 * were. */
hc_status hc_report_write_all(const hc_report *r, const char *dir, hc_error *err);

/* Reads "input" (the source directory) from dir/humming_report.json into a
 * malloc'ed string. */
hc_status hc_report_read_input(const char *dir, char **input, hc_error *err);

#endif
