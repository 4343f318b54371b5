/* fuzz_entry.h - the bodies of the fuzz targets, shared by the libFuzzer
 * binaries (tests/fuzz/fuzz_<x>.c) and the CMocka replay of the corpus
 * (tests/test_fuzz_regressions.c).
 *
 * Each entry feeds one input to one parser and checks the contract that every
 * error comes back as a value: a failing call returns a status other than
 * HC_OK with a non-empty message, a succeeding call leaves consistent data.
 * Returns 0 when the contract held, -1 (and a description in why, when given)
 * when it did not. Memory errors, leaks and undefined behaviour are left to
 * the sanitizers. */
#ifndef HC_FUZZ_ENTRY_H
#define HC_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define HC_FUZZ_WHY_MAX 1200

/* bytes -> hc_st_open_buffer, then every lookup of the opened file */
int hc_fuzz_safetensors(const uint8_t *data, size_t size, char *why);
/* model.safetensors.index.json text, next to two small valid shards in a
 * temporary directory made once per process -> hc_st_model_open */
int hc_fuzz_index(const uint8_t *data, size_t size, char *why);
/* config.json text -> hc_model_info_parse and hc_humming_qconfig_parse */
int hc_fuzz_config(const uint8_t *data, size_t size, char *why);
/* recipe YAML -> hc_recipe_parse_text, then resolution of a few layer names */
int hc_fuzz_recipe(const uint8_t *data, size_t size, char *why);
/* "KEY=VALUE" (or KEY newline VALUE) -> hc_target_set_field, hc_format_parse,
 * hc_preset_find, hc_arch_parse, hc_activation_parse */
int hc_fuzz_format_field(const uint8_t *data, size_t size, char *why);

/* byte 0 (side-file selector, param dtype), config.json, NUL, side file,
 * NUL, model.safetensors, written to a temporary directory made once per
 * process -> hc_ckpt_detect, then hc_ckpt_read (plan-time and full) and
 * hc_dequantize of every layer */
int hc_fuzz_ckpt(const uint8_t *data, size_t size, char *why);
/* command-line arguments separated by NUL or newline -> cli_parse_args,
 * cli_resolve (no --recipe file, --arch sm90 unless given), cli_choose_target */
int hc_fuzz_cli(const uint8_t *data, size_t size, char *why);

/* Shared helpers (fuzz_common.c). */
/* NUL-terminated malloc'ed copy of data (NULL on allocation failure). */
char *hc_fuzz_cstr(const uint8_t *data, size_t size);
/* Formats why (if non-NULL) and returns -1. */
int hc_fuzz_fail(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
