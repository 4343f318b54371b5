/* cli_progress.c - progress on stderr: a redrawn bar on a terminal, plain
 * lines otherwise (so logs stay readable). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cli_progress_start(cli_args *a) { a->progress_start = now_seconds(); }

void cli_progress(void *ctx, int done, int total, int64_t bytes_done, int64_t bytes_total,
                  const char *current)
{
    cli_args *a = ctx;
    if (a->progress_start == 0) cli_progress_start(a);
    double elapsed = now_seconds() - a->progress_start, rate = elapsed > 0 ? bytes_done / elapsed : 0;
    double eta = rate > 0 ? (bytes_total - bytes_done) / rate : 0;
    if (!isatty(STDERR_FILENO)) {
        fprintf(stderr, "humming-convert: [%d/%d] %s (%.1f MB, %.1f MB/s)\n", done, total,
                current, bytes_done / 1e6, rate / 1e6);
        return;
    }
    int width = 30, fill = total > 0 ? width * done / total : width;
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : ' ';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] %d/%d layers+tensors %.1f/%.1f MB %.1f MB/s ETA %.0fs  ", bar, done,
            total, bytes_done / 1e6, bytes_total / 1e6, rate / 1e6, eta);
    if (done == total) fprintf(stderr, "\n");
}
