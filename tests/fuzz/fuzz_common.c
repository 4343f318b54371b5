/* fuzz_common.c - helpers shared by the fuzz entry functions. */
#include "fuzz_entry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *hc_fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL) return NULL;
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

int hc_fuzz_fail(char *why, const char *fmt, ...)
{
    if (why) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, HC_FUZZ_WHY_MAX, fmt, ap);
        va_end(ap);
    }
    return -1;
}
