/* hc_regex.c - the guarded regular expressions (see hc_regex.h).
 *
 * glibc's regcomp builds an NFA in which E+ is two copies of E, E{m,n} n
 * copies, and its epsilon closures blow up exponentially when a repetition
 * can repeat the empty string ("((.*)*){40}" takes minutes to compile); its
 * regexec simulates that NFA, so matching costs about pattern size x subject
 * length and more when repeated empty matches multiply the active states
 * ("(.?){4000}" takes 10 s on a 1 KiB name). The checks below parse the ERE
 * once and refuse those shapes before regcomp: no repetition of anything
 * that can match the empty string, and an expanded size (copies included)
 * of at most MAX_COST elements. What passes compiles in about a millisecond
 * and matches a subject of HC_REGEX_MAX_SUBJECT bytes well under a second
 * (measured; docs/robustness.md). */
#include "hc_regex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest expanded size (elements, repetition copies counted). */
#define MAX_COST 400.0
/* Deepest group nesting. */
#define MAX_DEPTH 32

typedef struct {
    double cost;  /* elements once repetitions are expanded */
    int nullable; /* can match the empty string */
} shape;

typedef struct {
    const char *p;
    size_t i;
    int depth;
    int bad;
    char *why;
    size_t why_len;
} scan;

static void fail(scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(scan *s, const char *fmt, ...)
{
    if (s->bad) return;
    s->bad = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, s->why_len, fmt, ap);
    va_end(ap);
}

/* A bracket expression starting at p[i] == '['; returns the index of its
 * closing ']', or 0 when it does not close. */
static size_t skip_bracket(const char *p, size_t i)
{
    size_t j = i + 1;
    if (p[j] == '^') j++;
    if (p[j] == ']') j++; /* a leading ']' is literal */
    while (p[j] && p[j] != ']') {
        if (p[j] == '[' && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
            char close = p[j + 1];
            const char *e = p + j + 2;
            while (*e && !(e[0] == close && e[1] == ']')) e++;
            if (!*e) return 0;
            j = (size_t)(e - p) + 2;
        } else {
            j++;
        }
    }
    return p[j] ? j : 0;
}

/* An interval "{m}", "{m,}", "{m,n}" or glibc's "{,n}" at p[i]; returns the
 * index of its '}' and sets *factor to the copies glibc builds (n, or m + 1
 * when open) and *min to m, or returns 0 if p[i] does not start one. */
static size_t parse_interval(const char *p, size_t i, double *factor, double *min)
{
    size_t j = i + 1;
    double m = 0, n = -1;
    int digits = 0;
    for (; p[j] >= '0' && p[j] <= '9'; j++, digits++) m = m * 10 + (p[j] - '0');
    if (p[j] == ',') {
        j++;
        if (p[j] >= '0' && p[j] <= '9') {
            n = 0;
            while (p[j] >= '0' && p[j] <= '9') n = n * 10 + (p[j++] - '0');
        }
    } else if (digits == 0) {
        return 0;
    } else {
        n = m;
    }
    if (p[j] != '}') return 0;
    *factor = n < 0 ? m + 1 : n;
    *min = m;
    return j;
}

/* A back-reference anywhere outside brackets (exponential to match). */
static int has_backref(const char *p, char *why, size_t why_len)
{
    for (size_t i = 0; p[i]; i++) {
        size_t end;
        if (p[i] == '[' && (end = skip_bracket(p, i)) != 0) {
            i = end;
        } else if (p[i] == '\\' && p[i + 1]) {
            if (p[i + 1] >= '1' && p[i + 1] <= '9') {
                snprintf(why, why_len, "back-references (\\%c) are not supported", p[i + 1]);
                return 1;
            }
            i++;
        }
    }
    return 0;
}

static shape parse_alt(scan *s);

/* One atom: a group, a bracket expression, an escape, an anchor or a character. */
static shape parse_atom(scan *s)
{
    const char *p = s->p;
    char c = p[s->i];
    if (c == '(') {
        if (++s->depth > MAX_DEPTH) fail(s, "groups nested more than %d deep", MAX_DEPTH);
        s->i++;
        shape in = parse_alt(s);
        if (p[s->i] != ')') fail(s, "unbalanced parentheses or brackets");
        else s->i++;
        s->depth--;
        return (shape){in.cost + 1, in.nullable};
    }
    if (c == '[') {
        size_t end = skip_bracket(p, s->i);
        if (end == 0) fail(s, "unbalanced parentheses or brackets");
        s->i = end ? end + 1 : s->i + 1;
        return (shape){1, 0};
    }
    if (c == '\\') {
        char e = p[s->i + 1];
        if (e == '\0') {
            fail(s, "trailing backslash");
            s->i++;
            return (shape){1, 0};
        }
        s->i += 2; /* GNU's \b \B \< \> \` \' match the empty string */
        return (shape){1, strchr("bB<>`'", e) != NULL};
    }
    s->i++;
    return (shape){1, c == '^' || c == '$'};
}

/* Repetitions after an atom: each multiplies its cost by the copies glibc
 * makes; repeating something that can match the empty string is refused. */
static shape parse_repeats(scan *s, shape a)
{
    const char *p = s->p;
    for (;;) {
        char c = p[s->i];
        double factor = 1, min = 1;
        size_t end = 0;
        if (c == '{') end = parse_interval(p, s->i, &factor, &min);
        if (c != '*' && c != '+' && c != '?' && end == 0) return a;
        if (a.nullable)
            fail(s, "a repetition of something that can match the empty string (as in "
                 "\"(a*)*\" or \"(x?){8}\") at byte %zu", s->i);
        if (c == '*' || c == '?') min = 0;
        if (c == '+') factor = 2;
        a.cost *= factor > 1 ? factor : 1;
        a.nullable = min == 0;
        s->i = end ? end + 1 : s->i + 1;
    }
}

static void check_cost(scan *s, double cost)
{
    if (cost > MAX_COST)
        fail(s, "pattern too complex (more than %.0f elements once repetitions are expanded)",
             MAX_COST);
}

/* A branch: pieces up to '|', ')' or the end. */
static shape parse_branch(scan *s)
{
    shape b = {0, 1};
    while (!s->bad && s->p[s->i] && s->p[s->i] != '|' && s->p[s->i] != ')') {
        shape a = parse_repeats(s, parse_atom(s));
        b.cost += a.cost;
        b.nullable = b.nullable && a.nullable;
        check_cost(s, b.cost);
    }
    return b;
}

static shape parse_alt(scan *s)
{
    shape r = parse_branch(s);
    while (!s->bad && s->p[s->i] == '|') {
        s->i++;
        shape b = parse_branch(s);
        r.cost += b.cost;
        r.nullable = r.nullable || b.nullable;
        check_cost(s, r.cost);
    }
    return r;
}

/* 1 if the ERE p passes every check; else 0 with the reason in why. */
static int ere_ok(const char *p, char *why, size_t why_len)
{
    if (has_backref(p, why, why_len)) return 0;
    scan s = {p, 0, 0, 0, why, why_len};
    parse_alt(&s);
    if (!s.bad && p[s.i] == ')') fail(&s, "unbalanced parentheses or brackets");
    return !s.bad;
}

/* ---- Python re -> ERE ----------------------------------------------------- */

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static int put(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) return -1;
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return 0;
}

/* The members of class \d \w \s inside a bracket, or NULL. */
static const char *class_members(char e)
{
    return e == 'd' ? "0-9" : e == 'w' ? "A-Za-z0-9_" : e == 's' ? " \t\n\r\f\v" : NULL;
}

/* Copies a bracket expression at p[*i], translating \d \w \s inside it. */
static int py_bracket(const char *p, size_t *i, sbuf *b, char *why, size_t why_len)
{
    size_t j = *i + 1;
    put(b, "[", 1);
    if (p[j] == '^') put(b, p + j++, 1);
    if (p[j] == ']') put(b, p + j++, 1);
    for (; p[j] && p[j] != ']'; j++) {
        if (p[j] != '\\') {
            put(b, p + j, 1);
            continue;
        }
        char e = p[++j];
        const char *members = class_members(e);
        if (members) {
            put(b, members, strlen(members));
        } else if (e == '\0' || strchr("]^-DWS", e)) {
            snprintf(why, why_len, "'\\%c' inside [...] is not supported", e ? e : ' ');
            return -1;
        } else {
            put(b, p + j, 1);
        }
    }
    if (p[j] == ']') put(b, "]", 1);
    *i = p[j] ? j : j - 1;
    return 0;
}

/* Escapes outside brackets: \d \w \s and their complements. */
static int py_escape(char e, sbuf *b)
{
    const char *members = class_members((char)(e | 0x20));
    if (members == NULL) return 0;
    put(b, e >= 'a' ? "[" : "[^", e >= 'a' ? 1 : 2);
    put(b, members, strlen(members));
    put(b, "]", 1);
    return 1;
}

/* Translates the Python-style pattern p into an ERE in b. */
static int from_python(const char *p, sbuf *b, char *why, size_t why_len)
{
    int after_repeat = 0;
    for (size_t i = 0; p[i]; i++) {
        char c = p[i];
        double f, m;
        size_t end = c == '{' ? parse_interval(p, i, &f, &m) : 0;
        if (c == '?' && after_repeat) { /* lazy: the same strings match */
            after_repeat = 0;
            continue;
        }
        after_repeat = c == '*' || c == '+' || c == '?' || end != 0;
        if (c == '\\' && p[i + 1] && py_escape(p[i + 1], b)) {
            i++;
        } else if (c == '\\' && p[i + 1]) {
            put(b, p + i, 2);
            i++;
        } else if (c == '(' && p[i + 1] == '?') {
            if (p[i + 2] != ':') {
                snprintf(why, why_len, "the Python extension '(?%c' is not supported",
                         p[i + 2] ? p[i + 2] : ' ');
                return -1;
            }
            put(b, "(", 1);
            i += 2;
        } else if (c == '[') {
            if (py_bracket(p, &i, b, why, why_len) != 0) return -1;
        } else if (end) {
            put(b, p + i, end - i + 1);
            i = end;
        } else {
            put(b, p + i, 1);
        }
    }
    return 0;
}

/* ---- public --------------------------------------------------------------- */

int hc_regex_compile(hc_regex *re, const char *pattern, hc_regex_dialect dialect,
                     hc_regex_anchor anchor, char *why, size_t why_len)
{
    memset(re, 0, sizeof *re);
    size_t n = strlen(pattern);
    if (n == 0) return snprintf(why, why_len, "empty pattern"), -1;
    if (n > HC_REGEX_MAX_PATTERN)
        return snprintf(why, why_len, "pattern of %zu bytes is longer than the limit of %d", n,
                        HC_REGEX_MAX_PATTERN), -1;
    size_t cap = 12 * n + 8; /* "\w" (2 bytes) -> "[A-Za-z0-9_]" (12) at most */
    sbuf ere = {malloc(cap), 0, cap};
    if (ere.buf == NULL) return snprintf(why, why_len, "out of memory"), -1;
    put(&ere, "^(", 2);
    int rc = dialect == HC_RE_PYTHON ? from_python(pattern, &ere, why, why_len)
                                     : put(&ere, pattern, n);
    /* checked alone, so that "a)|(b" cannot balance against the anchors */
    if (rc == 0 && !ere_ok(ere.buf + 2, why, why_len)) rc = -1;
    if (rc == 0) put(&ere, anchor == HC_RE_FULL ? ")$" : ")", anchor == HC_RE_FULL ? 2 : 1);
    if (rc == 0 && (rc = regcomp(&re->re, ere.buf, REG_EXTENDED | REG_NOSUB)) != 0) {
        regerror(rc, &re->re, why, why_len);
        rc = -1;
    }
    free(ere.buf);
    re->compiled = rc == 0;
    return rc == 0 ? 0 : -1;
}

int hc_regex_match(const hc_regex *re, const char *subject)
{
    if (strnlen(subject, HC_REGEX_MAX_SUBJECT + 1) > HC_REGEX_MAX_SUBJECT) return -1;
    return re->compiled && regexec(&re->re, subject, 0, NULL, 0) == 0;
}

void hc_regex_free(hc_regex *re)
{
    if (re->compiled) regfree(&re->re);
    re->compiled = 0;
}
