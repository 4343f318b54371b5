/* hc_report_md.c - humming_report.md: run summary and one table row per layer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hc_fs.h"
#include "hc_report.h"

static void md_num(FILE *f, double v, const char *fmt)
{
    if (isfinite(v)) fprintf(f, fmt, v);
    else fputs("n/a", f);
}

hc_status hc_report_write_md(const hc_report *r, const char *path, hc_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    HC_CHECK_ALLOC(err, f, "the Markdown report");
    fprintf(f, "# humming-convert accuracy report\n\n"
               "- status: **%s** (%d layers, %d passed, %d failed)\n"
               "- input: `%s`\n- output: `%s`\n- format: %s\n- arch: %s, activations: %s\n"
               "- verification: %s (backend %s), %d tokens, %s activations\n"
               "- bytes: %lld -> %lld\n- started %s, %.2f s\n\n",
            r->n_fail ? (r->allow_degraded ? "DEGRADED" : "FAIL") : "PASS", r->n_layers,
            r->n_pass, r->n_fail, r->input ? r->input : "", r->output ? r->output : "",
            r->format ? r->format : "", r->arch, r->activation, r->verify_mode,
            r->verify_backend, r->tokens, r->calib ? "calibration" : "random",
            (long long)r->bytes_in, (long long)r->bytes_out, r->started, r->seconds);
    fputs("| # | layer | format | weight rel err | gemm rel err | gemm SNR dB | q-act rel err | "
          "mismatches | status | reason | verified on |\n|---|---|---|---|---|---|---|---|---|---|---|\n", f);
    for (int i = 0; i < r->n_layers; i++) {
        const hc_report_layer *L = &r->layers[i];
        const hc_verify_metrics *m = &L->m;
        fprintf(f, "| %d | `%s` | %s | ", i + 1, L->name, L->format);
        if (!L->verified) {
            fputs("| | | | | skipped | verification off | |\n", f);
            continue;
        }
        md_num(f, m->weight_rel_err, "%.3g");
        fputs(" | ", f);
        md_num(f, m->gemm_rel_err, "%.3g");
        fputs(" | ", f);
        md_num(f, m->gemm_snr_db, "%.1f");
        fputs(" | ", f);
        md_num(f, m->has_qact ? m->qact_rel_err : NAN, "%.3g");
        fprintf(f, " | %s | %s | %s | %s |\n",
                m->lossless ? (m->lossless_mismatches ? "≠0" : "0") : "n/a",
                m->pass ? "pass" : "fail", m->reason, L->verify_source);
    }
    fclose(f);
    hc_status st = hc_fs_write_file(path, buf, len, err);
    free(buf);
    return st;
}
