/* hc_format_codec.c - name parsing and the generic encode/decode of codes.
 *
 * Everything is driven by the hc_format_info row: one float path handles every
 * eXmY layout (sign, exponent field, mantissa field, bias) and the row's
 * specials; only e8m0 (no zero, no subnormals) and integers take their own
 * path. Arithmetic is done in double, where every finite code and every
 * float32 input is exact and power-of-two scaling never rounds. */
#include "hc_format.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------ */

static const struct {
    const char *alias;
    hc_format_id id;
} format_aliases[] = {
    {"half", HC_FMT_F16},  {"fp16", HC_FMT_F16},   {"bf16", HC_FMT_BF16},
    {"fp32", HC_FMT_F32},  {"float", HC_FMT_F32},  {"e8m0", HC_FMT_F8E8M0},
    {"ue8m0", HC_FMT_F8E8M0},
};

/* Reads 1..3 decimal digits without a leading zero; NULL if there are none. */
static const char *parse_small_uint(const char *s, int *out)
{
    int n = 0, v = 0;
    while (isdigit((unsigned char)s[n]) && n < 4) v = v * 10 + (s[n++] - '0');
    if (n == 0 || n > 3 || (s[0] == '0' && n > 1)) return NULL;
    *out = v;
    return s + n;
}

/* The float row with exactly these widths (sign bits = bits - E - M). */
static int find_float(int bits, int e, int m, hc_format_id *out)
{
    for (int i = 0; i < HC_FMT_COUNT; i++) {
        const hc_format_info *f = hc_format_get((hc_format_id)i);
        if (f->kind == HC_KIND_FLOAT && f->bits == bits && f->exp_bits == e &&
            f->man_bits == m) {
            *out = (hc_format_id)i;
            return 0;
        }
    }
    return -1;
}

/* "float<N>[_]e<E>m<M>[fn|fnu]". The torch suffixes are accepted only where
 * they are true: "fn" (finite, no Inf) on signed formats without IEEE Inf,
 * "fnu" (finite, unsigned) on e8m0. "fnuz" (AMD, different encoding) fails. */
static int parse_float_name(const char *s, hc_format_id *out)
{
    int n, e, m;
    hc_format_id id;
    if (strncmp(s, "float", 5) != 0 || !(s = parse_small_uint(s + 5, &n))) return -1;
    while (*s == '_') s++; /* Humming's regex: float(\d+)_*e(\d+)m(\d+) */
    if (*s++ != 'e' || !(s = parse_small_uint(s, &e))) return -1;
    if (*s++ != 'm' || !(s = parse_small_uint(s, &m))) return -1;
    if (find_float(n, e, m, &id) != 0) return -1;
    const hc_format_info *f = hc_format_get(id);
    int suffix_ok = *s == '\0' ||
                    (strcmp(s, "fn") == 0 && f->is_signed && f->specials != HC_SPECIAL_IEEE) ||
                    (strcmp(s, "fnu") == 0 && !f->is_signed);
    if (!suffix_ok) return -1;
    *out = id;
    return 0;
}

int hc_format_parse(const char *name, hc_format_id *out)
{
    char low[32];
    size_t len = name ? strlen(name) : sizeof low;
    if (len == 0 || len >= sizeof low || !out) return -1;
    for (size_t i = 0; i <= len; i++) low[i] = (char)tolower((unsigned char)name[i]);
    for (int i = 0; i < HC_FMT_COUNT; i++)
        if (strcmp(low, hc_format_get((hc_format_id)i)->name) == 0) {
            *out = (hc_format_id)i;
            return 0;
        }
    for (size_t i = 0; i < sizeof format_aliases / sizeof format_aliases[0]; i++)
        if (strcmp(low, format_aliases[i].alias) == 0) {
            *out = format_aliases[i].id;
            return 0;
        }
    /* intB/uintB are all canonical names (matched above); int1, uint9 fail. */
    return parse_float_name(low, out);
}

/* ---- decoding ----------------------------------------------------------- */

static uint32_t low_mask(int bits) { return bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1; }

static double decode_float(const hc_format_info *f, uint32_t code)
{
    uint32_t emax = low_mask(f->exp_bits), mmax = low_mask(f->man_bits);
    uint32_t e = (code >> f->man_bits) & emax, m = code & mmax;
    int neg = f->is_signed && ((code >> (f->bits - 1)) & 1);
    double v;
    if (f->specials == HC_SPECIAL_IEEE && e == emax)
        v = m ? NAN : INFINITY;
    else if (f->specials == HC_SPECIAL_FN && e == emax && m == mmax)
        v = NAN;
    else if (e == 0) /* subnormal: m ulps of the smallest normal binade */
        v = ldexp((double)m, 1 - f->bias - f->man_bits);
    else
        v = ldexp((double)(m + mmax + 1), (int)e - f->bias - f->man_bits);
    return neg ? -v : v;
}

double hc_format_decode(hc_format_id id, uint32_t code)
{
    const hc_format_info *f = hc_format_get(id);
    if (!f) return NAN;
    code &= low_mask(f->bits);
    switch (f->kind) {
    case HC_KIND_UINT:
        return (double)code;
    case HC_KIND_INT: /* sign-extend the b-bit two's complement pattern */
        return (double)code - ((code >> (f->bits - 1)) ? ldexp(1.0, f->bits) : 0.0);
    case HC_KIND_FLOAT:
        if (f->specials == HC_SPECIAL_E8M0) /* no zero, no subnormals */
            return code == 0xFF ? NAN : ldexp(1.0, (int)code - f->bias);
        return decode_float(f, code);
    }
    return NAN;
}

/* ---- encoding ----------------------------------------------------------- */

/* Round half to even of a non-negative integer-range double (integers). */
static double rne(double a)
{
    double fl = floor(a), frac = a - fl;
    if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
    return fl;
}

static uint32_t encode_int(const hc_format_info *f, float x)
{
    if (isnan(x)) return 0;
    double lo = f->kind == HC_KIND_INT ? -ldexp(1.0, f->bits - 1) : 0.0;
    double hi = f->kind == HC_KIND_INT ? ldexp(1.0, f->bits - 1) - 1 : ldexp(1.0, f->bits) - 1;
    double r = x < 0 ? -rne(-(double)x) : rne((double)x);
    r = r < lo ? lo : r > hi ? hi : r;
    return (uint32_t)(int64_t)r & low_mask(f->bits); /* two's complement code */
}

/* Largest finite magnitude code (sign bit clear) allowed by the specials. */
static uint32_t max_finite_code(const hc_format_info *f)
{
    uint32_t all = low_mask(f->exp_bits + f->man_bits);
    if (f->specials == HC_SPECIAL_IEEE) return all - (1u << f->man_bits);
    if (f->specials == HC_SPECIAL_FN) return all - 1;
    return all;
}

/* What a magnitude past the largest finite code becomes. */
static uint32_t overflow_code(const hc_format_info *f)
{
    if (f->specials == HC_SPECIAL_IEEE) return low_mask(f->exp_bits) << f->man_bits; /* Inf */
    if (f->specials == HC_SPECIAL_FN) return low_mask(f->exp_bits + f->man_bits);    /* NaN */
    return max_finite_code(f); /* saturate */
}

static uint32_t nan_code(const hc_format_info *f)
{
    if (f->specials == HC_SPECIAL_IEEE) /* quiet NaN: top mantissa bit set */
        return (low_mask(f->exp_bits) << f->man_bits) | (1u << (f->man_bits - 1));
    if (f->specials == HC_SPECIAL_FN) return low_mask(f->exp_bits + f->man_bits);
    return 0; /* every code is finite: nothing better than zero */
}

/* Magnitude code of a finite a >= 0, rounded to nearest with ties to the even
 * code; may exceed the exponent field (the caller checks overflow). Rounding
 * on the code rather than on the significand makes "even" well defined for
 * M = 0 formats too, where every significand is 1. */
static uint64_t encode_magnitude(const hc_format_info *f, double a)
{
    int M = f->man_bits, emin = 1 - f->bias, k;
    if (a == 0.0) return 0;
    frexp(a, &k); /* a = [0.5, 1) * 2^k, so its binade exponent is k - 1 */
    int e = k - 1 < emin ? emin : k - 1;
    double s = ldexp(a, M - e), t = floor(s); /* ulps of binade e, exact */
    uint64_t c = (uint64_t)t;
    if (c >= (1ull << M)) c = ((uint64_t)(e - emin + 1) << M) + (c - (1ull << M)); /* normal */
    /* c + 1 is the next value up, one ulp of binade e away even when it
     * starts the next binade, so the fraction decides between c and c + 1. */
    if (s - t > 0.5 || (s - t == 0.5 && (c & 1))) c++;
    return c;
}

static uint32_t encode_float(const hc_format_info *f, float x)
{
    uint32_t sign = (f->is_signed && signbit(x)) ? 1u << (f->bits - 1) : 0;
    if (isnan(x)) return f->specials == HC_SPECIAL_NONE ? 0 : nan_code(f) | sign;
    double a = fabs((double)x);
    /* Inputs beyond 2^130 overflow every format whose code fits; skip them
     * so the 64-bit code arithmetic never sees an absurd exponent. */
    uint64_t mag = isinf(a) || a > 0x1p130 ? UINT64_MAX : encode_magnitude(f, a);
    if (mag > max_finite_code(f)) mag = overflow_code(f);
    return sign | (uint32_t)mag;
}

uint32_t hc_format_encode(hc_format_id id, float x)
{
    const hc_format_info *f = hc_format_get(id);
    if (!f) return 0;
    if (f->kind != HC_KIND_FLOAT) return encode_int(f, x);
    if (f->specials == HC_SPECIAL_E8M0) return hc_e8m0_encode_round(x);
    return encode_float(f, x);
}

/* ---- e8m0 ----------------------------------------------------------------- */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

uint8_t hc_e8m0_encode_ceil(float x)
{
    return (uint8_t)(((f32_bits(x) + 0x007FFFFFu) & 0x7F800000u) >> 23);
}

uint8_t hc_e8m0_encode_round(float x)
{
    uint32_t u = f32_bits(x), e = (u >> 23) & 0xFF;
    if (e == 0xFF) return 0xFF; /* NaN and Inf */
    uint32_t g = (u >> 22) & 1, rs = u & 0x3FFFFF;
    /* Normal: mantissa >= 0.5 rounds up (ties up). Subnormal: the half point
     * 2^-127 is already exactly code 0, so only strictly above rounds up. */
    if (g && (rs || e > 0)) e++; /* 254 -> 255 (NaN) as PyTorch does */
    return (uint8_t)e;
}
