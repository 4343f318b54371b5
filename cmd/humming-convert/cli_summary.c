/* cli_summary.c - the verification summary table printed at the end of a run. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hc_report.h"

/* The summary table: every layer when there are few, else the failed and the
 * ten with the lowest SNR. */
void cli_print_summary(const hc_report *r)
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

