/* hc_json.h - integers from JSON values without undefined behaviour.
 *
 * cJSON keeps every number as a double. Casting a double that is NaN, out
 * of the target type's range or fractional to an integer is undefined (or
 * silently truncates), so every JSON number that becomes an integer goes
 * through hc_json_int: range and integrality are checked on the double first. */
#ifndef HC_JSON_H
#define HC_JSON_H

#include <cjson/cJSON.h>
#include <stdint.h>

/* Largest integer a JSON number (a double) holds exactly: 2^53. */
#define HC_JSON_MAX_EXACT 9007199254740992LL

/* Reads v as an integer in [lo, hi]: a JSON number without a fractional
 * part or, when allow_string, a decimal string (some producers quote
 * integers). Returns NULL and sets *out, or a reason for the caller's
 * message and leaves *out alone: "is not a number", "is not an integer",
 * "is negative" (lo == 0), "is too small", "is too large". Magnitudes above
 * 2^53 are "too large" whatever hi is: their digits were lost in parsing. */
const char *hc_json_int(const cJSON *v, int64_t lo, int64_t hi, int allow_string, int64_t *out);

#endif
