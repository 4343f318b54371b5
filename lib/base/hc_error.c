/* hc_error.c - error values (see hc_error.h). */
#include "hc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Moves a cut at s[i] forward off UTF-8 continuation bytes. */
static size_t char_start(const char *s, size_t i, size_t end)
{
    while (i < end && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    return i;
}

/* Copies src (n bytes) into buf[len]: whole if it fits, else its first
 * ~40% and its last ~60% around " ... " (the reason is at the end). */
static void elide_into(char *buf, size_t len, const char *src, size_t n)
{
    static const char mark[] = " ... ";
    size_t m = sizeof mark - 1;
    if (n < len || len < 2 * m + 2) {
        size_t k = n < len ? n : len - 1;
        memcpy(buf, src, k);
        buf[k] = '\0';
        return;
    }
    size_t room = len - 1 - m, head = room * 2 / 5, tail = room - head;
    size_t t = char_start(src, n - tail, n);
    while (head > 0 && ((unsigned char)src[head] & 0xC0) == 0x80) head--;
    memcpy(buf, src, head);
    memcpy(buf + head, mark, m);
    memcpy(buf + head + m, src + t, n - t);
    buf[head + m + (n - t)] = '\0';
}

void hc_vsnprintf_elide(char *buf, size_t len, const char *fmt, va_list ap)
{
    if (buf == NULL || len == 0) return;
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(buf, len, fmt, ap);
    if (n >= 0 && (size_t)n >= len) { /* did not fit: format in full, then elide */
        char *full = malloc((size_t)n + 1);
        if (full != NULL && vsnprintf(full, (size_t)n + 1, fmt, copy) == n)
            elide_into(buf, len, full, (size_t)n);
        free(full);
    }
    va_end(copy);
}

void hc_snprintf_elide(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hc_vsnprintf_elide(buf, len, fmt, ap);
    va_end(ap);
}

hc_status hc_error_set(hc_error *err, hc_status status, const char *fmt, ...)
{
    if (err == NULL) return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    hc_vsnprintf_elide(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

void hc_error_prefix(hc_error *err, const char *fmt, ...)
{
    if (err == NULL) return;
    char prefix[HC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    hc_vsnprintf_elide(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[2 * HC_ERROR_MSG_MAX];
    size_t lp = strlen(prefix), lm = strnlen(err->msg, sizeof err->msg);
    memcpy(joined, prefix, lp);
    memcpy(joined + lp, err->msg, lm);
    elide_into(err->msg, sizeof err->msg, joined, lp + lm);
}

void hc_error_clear(hc_error *err)
{
    if (err == NULL) return;
    err->status = HC_OK;
    err->msg[0] = '\0';
}

const char *hc_status_name(hc_status status)
{
    switch (status) {
    case HC_OK: return "ok";
    case HC_ERR_IO: return "I/O error";
    case HC_ERR_FORMAT: return "format error";
    case HC_ERR_UNSUPPORTED: return "unsupported";
    case HC_ERR_ARG: return "invalid argument";
    case HC_ERR_NOMEM: return "out of memory";
    case HC_ERR_VERIFY: return "verification failed";
    case HC_ERR_INTERNAL: return "internal error";
    }
    return "unknown error";
}
