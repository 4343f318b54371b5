/* hc_utf8.h - UTF-8 validation (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). */
#ifndef HC_UTF8_H
#define HC_UTF8_H

#include <stddef.h>

/* Returns 1 if the len bytes at s are valid UTF-8, else 0 and, when bad is
 * not NULL, the offset of the first byte of the first invalid sequence. */
int hc_utf8_valid(const unsigned char *s, size_t len, size_t *bad);

#endif
