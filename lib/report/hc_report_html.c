/* hc_report_html.c - humming_report.html: one self-contained page (inline CSS,
 * inline SVG, inline script; nothing loaded from anywhere). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"
#include "hc_report.h"

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* The SNR shown per layer: with quantized activations the end-to-end one. */
static double layer_snr(const hc_report_layer *L)
{
    return L->m.has_qact ? L->m.qact_snr_db : L->m.gemm_snr_db;
}

static const char *status_of(const hc_report_layer *L)
{
    return !L->verified ? "skipped" : L->m.pass ? "pass" : "fail";
}

static void summary(FILE *f, const hc_report *r)
{
    double red = r->bytes_in > 0 ? 100.0 * (1.0 - (double)r->bytes_out / (double)r->bytes_in) : 0;
    fprintf(f, "<section class=cards>"
               "<div class=card><b>%d</b><span>layers</span></div>"
               "<div class='card ok'><b>%d</b><span>passed</span></div>"
               "<div class='card %s'><b>%d</b><span>failed</span></div>"
               "<div class=card><b>%.1f%%</b><span>size change (%lld &rarr; %lld bytes)</span></div>"
               "</section>\n",
            r->n_layers, r->n_pass, r->n_fail ? "bad" : "ok", r->n_fail, -red,
            (long long)r->bytes_in, (long long)r->bytes_out);
    fputs("<table class=meta>", f);
    const char *k[] = {"input", "output", "format", "recipe", "arch", "activation", "verify",
                       "started", "command"};
    char verify[96];
    snprintf(verify, sizeof verify, "%s (backend %s), %d tokens, %s activations", r->verify_mode,
             r->verify_backend, r->tokens, r->calib ? "calibration" : "random");
    const char *v[] = {r->input, r->output, r->format, r->recipe, r->arch, r->activation,
                       verify, r->started, r->command_line};
    for (int i = 0; i < 9; i++) {
        fprintf(f, "<tr><th>%s</th><td>", k[i]);
        esc(f, v[i] ? v[i] : "");
        fputs("</td></tr>", f);
    }
    fputs("</table>\n", f);
    /* worst layers: lowest SNR first */
    int n = r->n_layers, idx[5], used = 0;
    for (int w = 0; w < 5 && w < n; w++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            int taken = 0;
            for (int j = 0; j < used; j++) taken |= idx[j] == i;
            if (taken || !r->layers[i].verified) continue;
            if (best < 0 || layer_snr(&r->layers[i]) < layer_snr(&r->layers[best])) best = i;
        }
        if (best < 0) break;
        idx[used++] = best;
    }
    fputs("<h2>Worst layers</h2><ol class=worst>", f);
    for (int j = 0; j < used; j++) {
        const hc_report_layer *L = &r->layers[idx[j]];
        fputs("<li><code>", f);
        esc(f, L->name);
        fprintf(f, "</code> SNR %.1f dB, gemm rel err %.3g, %s: ", layer_snr(L),
                L->m.has_qact ? L->m.qact_rel_err : L->m.gemm_rel_err, status_of(L));
        esc(f, L->m.reason);
        fputs("</li>", f);
    }
    fputs("</ol>\n", f);
}

static void snr_chart(FILE *f, const hc_report *r)
{
    int n = r->n_layers, W = 900, H = 260, L0 = 50, B = 30;
    double top = 10;
    for (int i = 0; i < n; i++)
        if (r->layers[i].verified && layer_snr(&r->layers[i]) > top) top = layer_snr(&r->layers[i]);
    top = ceil(top / 20) * 20;
    double bw = n > 0 ? (double)(W - L0 - 10) / n : 1;
    fprintf(f, "<h2>SNR per layer (model order)</h2><svg class=chart viewBox='0 0 %d %d' "
               "width=%d height=%d role=img>", W, H, W, H);
    for (int t = 0; t <= 4; t++) {
        double v = top * t / 4, y = H - B - (H - B - 10) * v / top;
        fprintf(f, "<line x1=%d x2=%d y1=%.1f y2=%.1f class=grid /><text x=%d y=%.1f "
                   "class=ax text-anchor=end>%.0f</text>", L0, W - 10, y, y, L0 - 4, y + 4, v);
    }
    fprintf(f, "<text x=12 y=%d class=ax transform='rotate(-90 12 %d)'>dB</text>", H / 2, H / 2);
    for (int i = 0; i < n; i++) {
        const hc_report_layer *Ly = &r->layers[i];
        double v = Ly->verified ? layer_snr(Ly) : 0;
        if (v < 0) v = 0;
        double h = (H - B - 10) * v / top, x = L0 + i * bw;
        fprintf(f, "<rect x=%.1f y=%.1f width=%.1f height=%.1f class=%s><title>", x + bw * 0.1,
                H - B - h, bw * 0.8 > 1 ? bw * 0.8 : 1, h, status_of(Ly));
        esc(f, Ly->name);
        fprintf(f, ": %.1f dB%s</title></rect>", v, v >= 200 ? " (exact)" : "");
    }
    fprintf(f, "<text x=%d y=%d class=ax>layers 1..%d &rarr; (200 dB = bit-exact)</text></svg>\n",
            L0, H - 8, n);
}

static void histogram(FILE *f, const hc_report *r)
{
    static const char *labels[HC_VERIFY_HIST_BINS] = {"exact", "&lt;1e-7", "1e-7", "1e-6",
                                                      "1e-5", "1e-4", "1e-3", "1e-2", "&ge;1e-1"};
    double tot[HC_VERIFY_HIST_BINS] = {0}, mx = 1, all = 0;
    for (int i = 0; i < r->n_layers; i++)
        for (int b = 0; b < HC_VERIFY_HIST_BINS; b++) tot[b] += (double)r->layers[i].m.err_hist[b];
    for (int b = 0; b < HC_VERIFY_HIST_BINS; b++) {
        all += tot[b];
        if (tot[b] > mx) mx = tot[b];
    }
    int W = 900, H = 220, B = 40, L0 = 50;
    double bw = (double)(W - L0 - 10) / HC_VERIFY_HIST_BINS;
    fputs("<h2>Weight error histogram (|decoded &minus; source| / rms(source), all elements, log "
          "count)</h2>", f);
    fprintf(f, "<svg class=chart viewBox='0 0 %d %d' width=%d height=%d role=img>", W, H, W, H);
    double lmx = log10(mx + 1);
    for (int b = 0; b < HC_VERIFY_HIST_BINS; b++) {
        double h = (H - B - 20) * log10(tot[b] + 1) / lmx, x = L0 + b * bw;
        fprintf(f, "<rect x=%.1f y=%.1f width=%.1f height=%.1f class=hist><title>%s: %.0f"
                   "</title></rect><text x=%.1f y=%d class=ax text-anchor=middle>%s</text>"
                   "<text x=%.1f y=%.1f class=ax text-anchor=middle>%.3g%%</text>",
                x + bw * 0.1, H - B - h, bw * 0.8, h, labels[b], tot[b], x + bw / 2, H - B + 16,
                labels[b], x + bw / 2, H - B - h - 4, all > 0 ? 100.0 * tot[b] / all : 0.0);
    }
    fputs("</svg>\n", f);
}

static void cell_num(FILE *f, double v, const char *fmt)
{
    if (!isfinite(v)) {
        fputs("<td data-v='1e308'>n/a</td>", f);
        return;
    }
    fprintf(f, "<td data-v='%.17g'>", v);
    fprintf(f, fmt, v);
    fputs("</td>", f);
}

static void table(FILE *f, const hc_report *r)
{
    fputs("<h2>All layers</h2><p class=hint>Click a column header to sort.</p>"
          "<table id=layers class=sortable><thead><tr>", f);
    const char *cols[] = {"#", "layer", "shape", "format", "bytes in", "bytes out",
                          "weight rel err", "weight SNR dB", "gemm rel err", "gemm SNR dB",
                          "cosine", "max abs err", "q-act rel err", "non-finite", "mismatches",
                          "status", "reason", "verified on"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        fprintf(f, "<th onclick='sortBy(%zu)'>%s</th>", i, cols[i]);
    fputs("</tr></thead><tbody>\n", f);
    for (int i = 0; i < r->n_layers; i++) {
        const hc_report_layer *L = &r->layers[i];
        const hc_verify_metrics *m = &L->m;
        fprintf(f, "<tr class=%s><td data-v=%d>%d</td><td>", status_of(L), i, i + 1);
        esc(f, L->name);
        fputs("</td><td>", f);
        for (int d = 0; d < L->ndim; d++) fprintf(f, "%s%lld", d ? "&times;" : "", (long long)L->shape[d]);
        fputs("</td><td>", f);
        esc(f, L->format);
        fputs("</td>", f);
        cell_num(f, (double)L->bytes_in, "%.0f");
        cell_num(f, (double)L->bytes_out, "%.0f");
        cell_num(f, m->weight_rel_err, "%.3g");
        cell_num(f, m->weight_snr_db, "%.1f");
        cell_num(f, m->gemm_rel_err, "%.3g");
        cell_num(f, m->gemm_snr_db, "%.1f");
        cell_num(f, m->gemm_cosine, "%.6f");
        cell_num(f, m->gemm_max_abs_err, "%.3g");
        cell_num(f, m->has_qact ? m->qact_rel_err : NAN, "%.3g");
        cell_num(f, (double)m->nonfinite, "%.0f");
        cell_num(f, m->lossless ? (double)m->lossless_mismatches : NAN, "%.0f");
        fprintf(f, "<td>%s</td><td>", status_of(L));
        esc(f, L->verified ? m->reason : "verification off");
        fputs("</td><td>", f);
        esc(f, L->verify_source);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static const char *css =
    "body{font:14px system-ui,sans-serif;margin:24px;color:#222;background:#fafafa}"
    "h1{margin:0 0 12px}h2{margin:24px 0 8px;font-size:17px}"
    ".cards{display:flex;gap:12px}.card{background:#fff;border:1px solid #ddd;border-radius:8px;"
    "padding:10px 16px;min-width:120px}.card b{display:block;font-size:24px}"
    ".card span{color:#666}.card.ok b{color:#1a7f37}.card.bad b{color:#c62828}"
    "table{border-collapse:collapse;background:#fff}td,th{border:1px solid #ddd;padding:3px 6px;"
    "text-align:left}table.meta{margin-top:12px}table.meta th{background:#f0f0f0}"
    "#layers th{cursor:pointer;background:#eef;position:sticky;top:0}"
    "#layers td{font-variant-numeric:tabular-nums}tr.fail td{background:#fde8e8}"
    ".chart{background:#fff;border:1px solid #ddd}.grid{stroke:#eee}.ax{font-size:11px;fill:#555}"
    "rect.pass{fill:#2e7d32}rect.fail{fill:#c62828}rect.skipped{fill:#999}rect.hist{fill:#3f51b5}"
    ".hint{color:#666;margin:0 0 6px}code{font-size:13px}";

static const char *js =
    "var dir=1;function sortBy(c){var t=document.getElementById('layers').tBodies[0];"
    "var rows=Array.prototype.slice.call(t.rows);dir=-dir;rows.sort(function(a,b){"
    "var x=a.cells[c],y=b.cells[c];var u=x.getAttribute('data-v'),v=y.getAttribute('data-v');"
    "if(u!==null&&v!==null)return dir*(parseFloat(u)-parseFloat(v));"
    "return dir*x.textContent.localeCompare(y.textContent);});"
    "rows.forEach(function(r){t.appendChild(r);});}";

hc_status hc_report_write_html(const hc_report *r, const char *path, hc_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    HC_CHECK_ALLOC(err, f, "the HTML report");
    fprintf(f, "<!DOCTYPE html><html lang=en><head><meta charset='utf-8'>"
               "<title>humming-convert accuracy report</title><style>%s</style></head><body>\n"
               "<h1>humming-convert accuracy report: %s</h1>\n", css,
            r->n_fail ? (r->allow_degraded ? "DEGRADED" : "FAIL") : "PASS");
    summary(f, r);
    snr_chart(f, r);
    histogram(f, r);
    table(f, r);
    fprintf(f, "<script>%s</script></body></html>\n", js);
    fclose(f);
    hc_status st = hc_fs_write_file(path, buf, len, err);
    free(buf);
    return st;
}
