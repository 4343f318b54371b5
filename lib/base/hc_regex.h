/* hc_regex.h - every regular expression the tool compiles goes through here:
 * recipe ignore lists and rule targets, and the checkpoint configs' patterns
 * (GPTQ `dynamic` "-:" keys, compressed-tensors "re:" targets and ignore
 * entries). They run on glibc's regcomp/regexec, whose compile time and
 * memory grow exponentially with nested repetitions and whose matching time
 * grows with pattern size x subject length, so a pattern is checked before
 * regcomp sees it and a subject is checked before regexec does
 * (docs/robustness.md, "Limits"). */
#ifndef HC_REGEX_H
#define HC_REGEX_H

#include <regex.h>
#include <stddef.h>

/* Longest pattern accepted, in bytes as written. */
#define HC_REGEX_MAX_PATTERN 1024
/* Longest subject matched, in bytes (the safetensors reader's tensor name
 * limit, HC_ST_MAX_NAME, is the same). */
#define HC_REGEX_MAX_SUBJECT 4096

typedef enum {
    HC_RE_POSIX,  /* POSIX ERE as written (recipes) */
    HC_RE_PYTHON  /* Python `re` subset: \d \w \s (and capitals), (?:...), lazy
                   * quantifiers; other (?...) extensions are refused */
} hc_regex_dialect;

typedef enum {
    HC_RE_FULL,   /* the whole subject must match: ^(pattern)$ */
    HC_RE_PREFIX  /* a match from the start, as Python's re.match: ^(pattern) */
} hc_regex_anchor;

typedef struct {
    regex_t re;
    int compiled;
} hc_regex;

/* Checks pattern and compiles it into *re (which the caller frees with
 * hc_regex_free). Refuses, with the reason in why: an empty or overlong
 * pattern, unbalanced parentheses or brackets, back-references, a repetition
 * of something that can match the empty string ("(a*)*", "(x?){50}"), a
 * pattern whose repetitions expand past a few hundred elements, and what
 * regcomp itself rejects. Returns 0 or -1 (re->compiled is 0 then). */
int hc_regex_compile(hc_regex *re, const char *pattern, hc_regex_dialect dialect,
                     hc_regex_anchor anchor, char *why, size_t why_len);

/* 1 if subject matches, 0 if not, -1 if subject is longer than
 * HC_REGEX_MAX_SUBJECT (it is then not matched at all). */
int hc_regex_match(const hc_regex *re, const char *subject);

/* Frees a compiled pattern; safe on one that failed or was zeroed. */
void hc_regex_free(hc_regex *re);

#endif
