/* hc_utf8.c - UTF-8 validation (see hc_utf8.h). */
#include "hc_utf8.h"

/* Length of the valid sequence starting at s[0] (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
    if (c < 0xE0) n = 2;
    else if (c < 0xF0) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        if (c == 0xED) hi = 0x9F;      /* surrogates */
    } else if (c < 0xF5) {
        n = 4;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        if (c == 0xF4) hi = 0x8F;      /* above U+10FFFF */
    } else
        return 0;
    if (avail < n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

int hc_utf8_valid(const unsigned char *s, size_t len, size_t *bad)
{
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_seq(s + i, len - i);
        if (n == 0) {
            if (bad) *bad = i;
            return 0;
        }
        i += n;
    }
    return 1;
}
