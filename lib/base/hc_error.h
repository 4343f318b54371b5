/* hc_error.h - errors as values.
 *
 * Every fallible library function returns an hc_status and, on failure, fills a
 * caller-owned hc_error with a message naming the file, tensor and reason.
 * The library never prints and never exits; the CLI turns errors into messages
 * and exit codes. */
#ifndef HC_ERROR_H
#define HC_ERROR_H

#include <stdarg.h>
#include <stddef.h>

typedef enum {
    HC_OK = 0,
    HC_ERR_IO,          /* open/read/write/rename failed */
    HC_ERR_FORMAT,      /* malformed input file or tensor */
    HC_ERR_UNSUPPORTED, /* valid input, combination we do not support */
    HC_ERR_ARG,         /* bad argument from the caller or the command line */
    HC_ERR_NOMEM,       /* allocation failed */
    HC_ERR_VERIFY,      /* verification found a mismatch or bound exceeded */
    HC_ERR_INTERNAL     /* a bug: an invariant did not hold */
} hc_status;

#define HC_ERROR_MSG_MAX 1024

typedef struct {
    hc_status status;
    char msg[HC_ERROR_MSG_MAX];
} hc_error;

/* Records status and a printf-style message in err (err may be NULL).
 * Returns status so that callers can write `return hc_error_set(...)`. */
hc_status hc_error_set(hc_error *err, hc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends context ("reading model.safetensors: ") to an error already set
 * (nothing if err is NULL). Returns nothing on purpose: a caller must return
 * the failing status it holds, which does not depend on err being NULL
 * (HC_TRY_CTX below does both). */
void hc_error_prefix(hc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* printf into buf (len bytes, always NUL-terminated). A result that does not
 * fit keeps its beginning and its end with " ... " between them, so that a
 * long name or path in the middle of a message never pushes out the reason
 * at its end. hc_error_set and hc_error_prefix format this way. */
void hc_snprintf_elide(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void hc_vsnprintf_elide(char *buf, size_t len, const char *fmt, va_list ap);

/* Clears err to HC_OK with an empty message. */
void hc_error_clear(hc_error *err);

/* Short name of a status, e.g. "format error". Never NULL. */
const char *hc_status_name(hc_status status);

/* Propagate a failing status with context prepended to its message. */
#define HC_TRY_CTX(err, expr, ...)                                             \
    do {                                                                       \
        hc_status hc_ctx_status_ = (expr);                                     \
        if (hc_ctx_status_ != HC_OK) {                                         \
            hc_error_prefix((err), __VA_ARGS__);                               \
            return hc_ctx_status_;                                             \
        }                                                                      \
    } while (0)

/* Propagate a failing status unchanged. */
#define HC_TRY(expr)                                                           \
    do {                                                                       \
        hc_status hc_try_status_ = (expr);                                     \
        if (hc_try_status_ != HC_OK) return hc_try_status_;                    \
    } while (0)

/* Set an error and return its status from the current function. */
#define HC_FAIL(err, status, ...) return hc_error_set((err), (status), __VA_ARGS__)

/* Fail with HC_ERR_NOMEM when ptr is NULL. */
#define HC_CHECK_ALLOC(err, ptr, what)                                         \
    do {                                                                       \
        if ((ptr) == NULL)                                                     \
            return hc_error_set((err), HC_ERR_NOMEM, "out of memory allocating %s", (what)); \
    } while (0)

#endif
