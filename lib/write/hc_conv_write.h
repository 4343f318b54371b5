/* hc_conv_write.h - the output files (lib/write/): shard declarations and
 * index, config.json, side files, and the crash-safety journal. */
#ifndef HC_CONV_WRITE_H
#define HC_CONV_WRITE_H

#include "hc_conv_plan.h"

/* Declares the tensors of shard `shard` in w (output order), with its metadata. */
hc_status hc_conv_declare_shard(hc_st_writer *w, const hc_conv_plan *plan, int shard,
                                hc_error *err);
/* Writes dir/model.safetensors.index.json (several shards). */
hc_status hc_conv_write_index(const hc_conv_plan *plan, const char *dir, hc_error *err);

/* Writes dir/config.json: the input's config with our quantization_config. */
hc_status hc_conv_write_config(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *dir, hc_error *err);

/* The text of config.json (malloc'ed) as hc_conv_write_config writes it. */
hc_status hc_conv_config_text(const hc_convert_options *opts, const hc_conv_plan *plan,
                              char **out, hc_error *err);

/* Crash safety (hc_convert_journal.c, docs/robustness.md). */
hc_status hc_conv_inputs_snapshot(const char *in_dir, hc_conv_run *run, hc_error *err);
hc_status hc_conv_inputs_check(const char *in_dir, const hc_conv_run *run, hc_error *err);
hc_status hc_conv_inputs_crc(const char *in_dir, hc_conv_run *run, int skip_weights,
                             hc_error *err);
hc_status hc_conv_fingerprint(const hc_convert_options *opts, const hc_conv_plan *plan,
                              hc_conv_run *run, hc_error *err);
/* Creates OUT_DIR.partial (or validates and cleans it for --resume). */
hc_status hc_conv_partial_prepare(const hc_convert_options *opts, hc_conv_run *run,
                                  hc_error *err);
hc_status hc_conv_journal_save(hc_conv_run *run, hc_error *err);
/* Removes the journal (called on OUT_DIR right after the publish rename). */
hc_status hc_conv_journal_finish(hc_conv_run *run, hc_error *err);
int hc_conv_shard_reusable(const hc_convert_options *opts, hc_conv_run *run, const char *name,
                           hc_file_crc *info);
void hc_conv_run_free(hc_conv_run *run);
void hc_conv_pause(const hc_convert_options *opts, const char *point);
/* Copies the input's non-weight files (tokenizer, generation config, ...) into dir. */
hc_status hc_conv_copy_side_files(const char *in_dir, const char *dir, hc_error *err);

/* Shard file name for shard i of n (model.safetensors when n == 1). */
void hc_conv_shard_name(int i, int n, char *buf, size_t len);


#endif
