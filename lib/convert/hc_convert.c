/* hc_convert.c - the conversion run: plan, write into a temp dir, publish. */
#include "hc_convert_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_ckpt.h"
#include "hc_fs.h"
#include "hc_integrity.h"
#include "hc_out_guard.h"

hc_status hc_conv_read_config(const hc_convert_options *opts, hc_conv_plan *plan, hc_error *err)
{
    char path[4096], *text = NULL;
    HC_TRY(hc_path_join(path, sizeof path, opts->in_dir, "config.json", err));
    HC_TRY(hc_file_read_all(path, &text, NULL, err));
    hc_model_info info;
    hc_status st = hc_model_info_parse(text, path, &info, err);
    int is_humming = st == HC_OK && strcmp(info.quant_method, "humming") == 0;
    if (st == HC_OK && !is_humming) { /* GPTQ, AWQ, compressed-tensors, ... (hc_ckpt.h) */
        plan->ckpt = calloc(1, sizeof *plan->ckpt);
        st = plan->ckpt ? hc_ckpt_detect(opts->in_dir, text, plan->ckpt, err)
                        : hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    }
    int quantized = st == HC_OK && plan->ckpt && plan->ckpt->method != HC_CKPT_NONE;
    if (st == HC_OK && !info.is_float && !is_humming && !quantized)
        st = hc_error_set(err, HC_ERR_UNSUPPORTED, "%s: quant_method is \"%s\"; this version "
                          "reads float checkpoints, \"humming\" ones and gptq, awq, "
                          "compressed-tensors, modelopt, mxfp4 and fp8", path, info.quant_method);
    if (st == HC_OK && is_humming) st = hc_humming_qconfig_parse(text, path, &plan->qconfig, err);
    free(text);
    HC_TRY(st);
    plan->kind = quantized ? HC_SRC_QUANTIZED : info.is_float ? HC_SRC_FLOAT : HC_SRC_HUMMING;
    if (quantized)
        hc_conv_log(opts, "input: %s checkpoint (from %s)", hc_ckpt_method_name(plan->ckpt->method),
                    plan->ckpt->source_file);
    plan->param_format = info.param_format;
    snprintf(plan->model_type, sizeof plan->model_type, "%s", info.model_type);
    return HC_OK;
}

static void log_plan(const hc_convert_options *opts, const hc_conv_plan *plan)
{
    for (int i = 0; i < plan->n_layers; i++) {
        const hc_conv_layer *L = &plan->layers[i];
        int64_t in = hc_conv_layer_in_bytes(L), out = hc_conv_layer_out_bytes(L);
        hc_conv_log(opts, "layer %s: %s%lld x %lld -> %s x %s, %s, %s layout, %lld -> %lld bytes%s%s",
                    L->prefix, L->meta.is_moe ? "experts " : "",
                    (long long)L->meta.N, (long long)L->meta.K,
                    hc_format_get(L->cfg.weight_format)->name,
                    hc_format_get(L->cfg.act_format)->name, hc_scale_type_name(L->meta.scale_type),
                    plan->layout == HC_LAYOUT_TILES ? hc_layer_layout_name(&L->meta) : "canonical",
                    (long long)in, (long long)out,
                    L->why[0] ? "; " : "", L->why);
    }
    hc_conv_log(opts, "plan: %d layers, %d tensors, %d shard(s), %lld -> %lld bytes",
                plan->n_layers, plan->n_items, plan->n_shards, (long long)plan->bytes_in,
                (long long)plan->bytes_out);
}

/* Everything that goes into the temporary directory, then the manifest. */
static hc_status write_outputs(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *tmp, hc_error *err)
{
    hc_conv_run *run = plan->run;
    hc_conv_pause(opts, "after_plan");
    HC_TRY(hc_conv_write_shards(opts, plan, tmp, err));
    HC_TRY(hc_conv_write_config(opts, plan, tmp, err));
    HC_TRY(hc_conv_copy_side_files(opts->in_dir, tmp, err));
    if (plan->verify) HC_TRY(hc_conv_verify_finish(plan->verify, tmp, err));
    hc_conv_pause(opts, "before_manifest");
    HC_TRY(hc_conv_inputs_crc(opts->in_dir, run, opts->no_input_crc, err));
    HC_TRY(hc_conv_inputs_check(opts->in_dir, run, err));
    HC_TRY(hc_manifest_write(tmp, run->shards, (size_t)run->n_shards, run->inputs, run->n_inputs,
                             err));
    HC_TRY(hc_fs_sync_path(tmp, err));
    hc_conv_pause(opts, "before_publish");
    return hc_conv_inputs_check(opts->in_dir, run, err);
}

/* The run proper, under the output's lock: into OUT_DIR.partial, then published. */
static hc_status write_locked(hc_convert_options *opts, hc_conv_plan *plan, hc_error *err)
{
    if (hc_path_exists(opts->out_dir) && !opts->force)
        HC_FAIL(err, HC_ERR_ARG, "%s: already exists (use --force to replace it)%s", opts->out_dir,
                opts->resume ? "; there is nothing to resume" : "");
    if (hc_path_exists(opts->out_dir))
        HC_TRY(hc_out_guard_replaceable(opts->out_dir, HC_MANIFEST_NAME, "--force", err));
    hc_conv_run *run = plan->run;
    run->n_shards = plan->n_shards;
    run->shards = calloc((size_t)plan->n_shards, sizeof *run->shards);
    HC_CHECK_ALLOC(err, run->shards, "shard table");
    HC_TRY(hc_conv_fingerprint(opts, plan, run, err));
    HC_TRY(hc_conv_partial_prepare(opts, run, err));
    /* recorded in config.json and the report: the first run's, so that a
     * resumed run writes the same bytes */
    opts->command_line = run->command_line;
    hc_status st = hc_conv_verify_begin(opts, plan, &plan->verify, err);
    /* reused weight buffers: the codes being written, the ones the next layer
     * fills, and the 0.1.19 tiles a canonical layer is verified through (the
     * verified 512 MiB run: 9% less time, peak RSS 1.64x -> 1.92x its largest
     * tensor, inside the 2x + 64 MiB bound) */
    if (st == HC_OK) st = hc_bufpool_new(3, &run->pool, err);
    if (st == HC_OK) st = write_outputs(opts, plan, run->partial, err);
    if (st == HC_OK) st = hc_fs_publish_dir(run->partial, opts->out_dir, opts->force, err);
    if (st == HC_OK) { /* published: the journal (a dot file, outside the manifest) goes */
        run->owned = 0;
        snprintf(run->partial, sizeof run->partial, "%s", opts->out_dir);
        st = hc_conv_journal_finish(run, err);
    }
    if (st != HC_OK && run->owned)
        hc_fs_remove_tree(run->partial, NULL); /* best effort: keep the first error */
    return st;
}

static hc_status convert_model(hc_convert_options *opts, hc_st_model *model, hc_conv_plan *plan,
                               hc_error *err)
{
    HC_TRY(hc_conv_read_config(opts, plan, err));
    plan->activation = opts->has_activation ? opts->activation : plan->param_format;
    if (!opts->has_activation && plan->kind == HC_SRC_HUMMING) { /* as vLLM would run it */
        plan->activation = hc_humming_qconfig_activation(&plan->qconfig);
        if (plan->qconfig.has_act && plan->activation != plan->qconfig.act_format)
            hc_conv_log(opts, "activations: %s, as vLLM runs a_dtype %s with group-wise weight "
                        "scales when allow_fallback is not false",
                        hc_format_get(plan->activation)->name,
                        hc_format_get(plan->qconfig.act_format)->name);
    }
    HC_TRY(hc_conv_plan_build(opts, model, hc_conv_sources, plan, err));
    log_plan(opts, plan);
    if (opts->dry_run) return HC_OK;
    char partial[4200];
    if ((size_t)snprintf(partial, sizeof partial, "%s.partial", opts->out_dir) >= sizeof partial)
        HC_FAIL(err, HC_ERR_ARG, "path too long: %.200s...", opts->out_dir);
    HC_TRY(hc_out_guard_paths(opts->in_dir, opts->out_dir, partial, err));
    hc_out_lock lock;
    HC_TRY(hc_out_lock_take(opts->out_dir, &lock, err));
    hc_status st = write_locked(opts, plan, err);
    hc_out_lock_release(&lock);
    return st;
}

hc_status hc_convert_run(const hc_convert_options *opts_in, hc_convert_stats *stats,
                         hc_error *err)
{
    hc_convert_options o = *opts_in, *opts = &o;
    if (stats) memset(stats, 0, sizeof *stats);
    /* "out/" and "out" name one directory: "out/.old-PID" would lie inside it */
    char out_dir[4096];
    size_t n = opts->out_dir ? strlen(opts->out_dir) : 0;
    if (n == 0 || n >= sizeof out_dir) HC_FAIL(err, HC_ERR_ARG, "OUT_DIR is empty or too long");
    memcpy(out_dir, opts->out_dir, n + 1);
    while (n > 1 && out_dir[n - 1] == '/') out_dir[--n] = '\0';
    o.out_dir = out_dir;
    if (!hc_path_is_dir(opts->in_dir))
        HC_FAIL(err, HC_ERR_IO, "%s: not a directory", opts->in_dir);
    hc_conv_run run;
    memset(&run, 0, sizeof run);
    /* sizes and mtimes before anything is mapped: a file changed later is caught */
    hc_status st = hc_conv_inputs_snapshot(opts->in_dir, &run, err);
    hc_st_model *model = NULL;
    if (st == HC_OK) st = hc_st_model_open(opts->in_dir, &model, err);
    if (st == HC_OK && !opts->no_input_crc && !opts->dry_run)
        st = hc_st_crcs_new(model, &run.input_crcs, err);
    if (st != HC_OK) {
        hc_conv_run_free(&run);
        return st;
    }
    hc_conv_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.run = &run;
    st = convert_model(opts, model, &plan, err);
    if (st == HC_OK && hc_conv_verify_failed(plan.verify) && !opts->allow_degraded)
        st = hc_error_set(err, HC_ERR_VERIFY, "verification failed for %d of %d layers; the "
                          "output and its report are in %s (humming_report.json)",
                          hc_conv_verify_failed(plan.verify), plan.n_layers, opts->out_dir);
    if (stats && plan.verify) stats->report = hc_conv_verify_take_report(plan.verify);
    hc_conv_verify_free(plan.verify);
    if ((st == HC_OK || st == HC_ERR_VERIFY) && stats) {
        stats->layers = plan.n_layers;
        stats->tensors_copied = plan.n_items - plan.n_layers;
        stats->shards = plan.n_shards;
        stats->bytes_in = plan.bytes_in;
        stats->bytes_out = plan.bytes_out;
    }
    hc_conv_plan_free(&plan);
    hc_st_model_close(model);
    hc_conv_run_free(&run);
    return st;
}
