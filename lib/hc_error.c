/* hc_error.c - error values (see hc_error.h). */
#include "hc_error.h"

#include <stdio.h>
#include <string.h>

hc_status hc_error_set(hc_error *err, hc_status status, const char *fmt, ...)
{
    if (err == NULL) return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

void hc_error_prefix(hc_error *err, const char *fmt, ...)
{
    if (err == NULL) return;
    char prefix[HC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[HC_ERROR_MSG_MAX];
    size_t lp = strnlen(prefix, sizeof joined - 1);
    size_t lm = strnlen(err->msg, sizeof joined - 1 - lp);
    memcpy(joined, prefix, lp);
    memcpy(joined + lp, err->msg, lm);
    joined[lp + lm] = '\0';
    memcpy(err->msg, joined, sizeof joined);
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
