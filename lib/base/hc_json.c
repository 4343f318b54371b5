/* hc_json.c - see hc_json.h. */
#include "hc_json.h"

#include <errno.h>
#include <stdlib.h>

static const char *below(int64_t lo) { return lo == 0 ? "is negative" : "is too small"; }

static const char *from_string(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return "is not an integer";
    if (errno == ERANGE) return x < 0 ? below(lo) : "is too large";
    if (x < lo || x < -HC_JSON_MAX_EXACT) return below(lo);
    if (x > hi || x > HC_JSON_MAX_EXACT) return "is too large";
    *out = x;
    return NULL;
}

const char *hc_json_int(const cJSON *v, int64_t lo, int64_t hi, int allow_string, int64_t *out)
{
    if (allow_string && cJSON_IsString(v)) return from_string(v->valuestring, lo, hi, out);
    if (!cJSON_IsNumber(v)) return "is not a number";
    double d = v->valuedouble;
    if (d != d) return "is not a number";
    /* compare as doubles within +-2^53 (exact there) before any cast */
    if (d < -(double)HC_JSON_MAX_EXACT) return below(lo);
    if (d > (double)HC_JSON_MAX_EXACT) return "is too large";
    int64_t x = (int64_t)d;
    if ((double)x != d) return "is not an integer";
    if (x < lo) return below(lo);
    if (x > hi) return "is too large";
    *out = x;
    return NULL;
}
