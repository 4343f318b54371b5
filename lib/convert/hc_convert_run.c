/* hc_convert_run.c - the run: shard by shard, item by item, each layer loaded
 * by its source, transformed, verified and written, in that order; input
 * read-ahead and truncation checks per item, --resume's reuse of complete
 * shards. */
#include "hc_convert_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"

static hc_status check_output(const hc_conv_layer *L, int r, const hc_tensor *t, hc_error *err)
{
    const hc_out_desc *d = &L->out[r];
    int same = (t->data != NULL) == d->present;
    if (same && d->present)
        same = t->dtype == d->dtype && t->ndim == d->ndim && (int64_t)t->nbytes == d->nbytes &&
               memcmp(t->shape, d->shape, (size_t)d->ndim * sizeof d->shape[0]) == 0;
    if (!same)
        HC_FAIL(err, HC_ERR_INTERNAL, "%s%s: transform output differs from the planned shape",
                L->prefix, hc_role_suffix[r]);
    return HC_OK;
}

typedef struct {
    hc_status st;
    hc_error *err;
    int release;
    int prefetch;       /* only ask for read-ahead (hc_st_model_willneed) */
    hc_st_crcs *crcs;   /* note the CRCs of tensors the source did not, or NULL */
    int copy;           /* a copied tensor, written from the mapping by the writer */
    int check;          /* check the tensor's file is whole (hc_st_model_check_tensor) */
} item_pass;

static void item_inputs(const hc_conv_plan *plan, const hc_conv_item *it, item_pass *p);

/* A layer's tensors while the writer's thread writes them; when some are
 * views of the input (release), the item's input pages are dropped (and
 * their CRCs noted) once they are written, not before. */
typedef struct {
    hc_layer_tensors pre, post;
    float *ref;
    double *energy; /* the source rows' sums of squares, taken by the quantizer */
    const hc_conv_plan *plan;
    const hc_conv_item *it;
    int release;
} layer_out;

/* The canonical weight (the quantizer's codes, a reader's) back to the run's
 * pool: the next layer of that size reuses the buffer (a view of the input,
 * not owned, is not). */
static void pool_put_weight(const hc_conv_plan *plan, hc_tensor *w)
{
    if (!w->owned || w->data == NULL) return;
    hc_bufpool_put(plan->run ? plan->run->pool : NULL, w->data, w->nbytes);
    w->data = NULL;
    w->owned = 0;
}

static void layer_out_free(layer_out *o)
{
    pool_put_weight(o->plan, &o->pre.weight);
    pool_put_weight(o->plan, &o->post.weight); /* the transform's tiles */
    hc_layer_tensors_free(&o->pre);
    hc_layer_tensors_free(&o->post);
    free(o->ref);
    free(o->energy);
    free(o);
}

/* hc_st_write_done of a layer's last output tensor: its buffers go. */
static void layer_out_done(void *ctx, int written, uint32_t crc)
{
    layer_out *o = ctx;
    (void)crc;
    if (o->release) {
        item_pass p = {HC_OK, NULL, 1, 0, NULL, 0, 0};
        if (written && o->plan->run) p.crcs = o->plan->run->input_crcs;
        item_inputs(o->plan, o->it, &p);
    }
    layer_out_free(o);
}

/* Whether a tensor of t borrows the input mapping (a reader's view). */
static int borrows_input(const hc_layer_tensors *t)
{
    const hc_tensor *all[] = {&t->weight, &t->weight_scale, &t->zero_point, &t->global_scale,
                              &t->bias};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->data && !all[i]->owned) return 1;
    return 0;
}

/* Queues the layer's output tensors on w's thread (which then frees o), once
 * the previous item's are written: one item in flight while the next is
 * computed. */
static hc_status queue_layer(hc_st_writer *w, const hc_conv_layer *L, layer_out *o,
                             const hc_layer_tensors *src, size_t *index, hc_error *err)
{
    hc_status st = hc_st_writer_flush(w, err);
    int handed = 0;
    for (int i = 0; st == HC_OK && i < L->n_outs; i++) {
        size_t len = 0;
        const void *data = hc_conv_out_data(&L->outs[i], src, &len);
        int last = i == L->n_outs - 1;
        if (data == NULL) {
            st = hc_error_set(err, HC_ERR_INTERNAL, "%s: the layer's %s tensor differs from "
                              "the planned shape", L->outs[i].name,
                              src == &o->pre ? "canonical" : "kernel-ready");
            break;
        }
        /* a view of the input (whole-word codes) is read from its file */
        st = hc_st_writer_copy_async(w, (*index)++, o->plan->model, data, len,
                                     last ? layer_out_done : NULL, last ? o : NULL, err);
        handed = last;
    }
    if (!handed) { /* chunks already queued may still read o's buffers */
        (void)hc_st_writer_flush(w, NULL);
        layer_out_free(o);
    }
    return st;
}

/* One layer through the pipeline: loaded by its source, transformed into the
 * kernel tensors (layout), verified, then queued on w's thread; *index
 * counts the tensors written so far in declaration order. */
static hc_status write_layer(hc_st_writer *w, const hc_conv_plan *plan, const hc_conv_item *it,
                             size_t *index, int *deferred, hc_error *err)
{
    const hc_conv_layer *L = &plan->layers[it->layer];
    layer_out *o = calloc(1, sizeof *o);
    HC_CHECK_ALLOC(err, o, "layer output");
    o->plan = plan;
    o->it = it;
    hc_layer_tensors *pre = &o->pre, *post = &o->post;
    hc_tensor *post_t[HC_ROLE_COUNT] = {&post->weight, &post->weight_scale, &post->zero_point,
                                        &post->global_scale, &post->bias};
    float **ref = &o->ref;
    /* the canonical layout writes pre; the verifier builds the tiles it
     * decodes from it (humming-kernels 0.1.19's, or else the plan's) */
    int tiles = plan->layout == HC_LAYOUT_TILES;
    /* verification reads a float source's rows itself where it can, and
     * takes their sums of squares from the quantizer's pass */
    int verify = hc_conv_verify_enabled(plan->verify);
    int want_ref = verify && !hc_conv_float_rows_ok(L);
    hc_status st = hc_conv_load_pre(plan, L, pre, want_ref ? ref : NULL,
                                    verify && !want_ref ? &o->energy : NULL, err);
    if (st == HC_OK && tiles) {
        st = hc_layer_transform_pooled(&L->cfg, &L->meta, pre, post,
                                       plan->run ? plan->run->pool : NULL, err);
        if (st != HC_OK) hc_error_prefix(err, "layer %s: ", L->prefix);
    }
    for (int r = 0; st == HC_OK && tiles && r < HC_ROLE_COUNT; r++)
        st = check_output(L, r, post_t[r], err);
    if (st == HC_OK)
        plan->weight_e0m[L - plan->layers] =
            tiles ? post->weight_e0m : hc_layer_e0m_applies(&L->cfg, &L->meta, pre);
    if (st == HC_OK) st = hc_conv_verify_layer(plan->verify, L, pre, tiles ? post : NULL,
                                               tiles ? NULL : pre, *ref, o->energy, err);
    if (st != HC_OK) {
        layer_out_free(o);
        return st;
    }
    if (tiles) pool_put_weight(plan, &pre->weight); /* transformed and verified: not written */
    o->release = *deferred = borrows_input(tiles ? post : pre);
    return queue_layer(w, L, o, tiles ? post : pre, index, err);
}

/* A piece of a copied input tensor while the writer's thread writes it from
 * the mapping: `piece` describes its bytes (inside t) for dropping its pages. */
typedef struct {
    const hc_st_model *model;
    const hc_st_tensor *t;
    hc_st_tensor piece;
    int last;
    hc_st_crcs *crcs;
} copy_out;

/* hc_st_write_done of a piece of a copy: its pages are dropped (a copied
 * embedding is not held whole while the next layer is computed); after the
 * last piece the CRC the writer took of the output is the input tensor's too. */
static void copy_done(void *ctx, int written, uint32_t crc)
{
    copy_out *c = ctx;
    if (written && c->last) hc_st_crcs_note(c->crcs, c->t, crc);
    hc_st_model_release(c->model, &c->piece);
    free(c);
}

/* Queues a copied tensor in pieces of 16 MiB once the previous item's outputs
 * are written. */
static hc_status write_copy(hc_st_writer *w, const hc_conv_plan *plan, const hc_st_tensor *t,
                            size_t *index, hc_error *err)
{
    const size_t piece = (size_t)16 << 20;
    HC_TRY(hc_st_writer_flush(w, err));
    size_t at = 0, idx = (*index)++;
    do {
        size_t len = t->nbytes - at < piece ? t->nbytes - at : piece;
        copy_out *c = malloc(sizeof *c);
        HC_CHECK_ALLOC(err, c, "copy");
        *c = (copy_out){plan->model, t, *t, at + len == t->nbytes,
                        plan->run ? plan->run->input_crcs : NULL};
        c->piece.data = (const unsigned char *)t->data + at;
        c->piece.nbytes = len;
        HC_TRY(hc_st_writer_copy_async(w, idx, plan->model, c->piece.data, len, copy_done, c,
                                       err));
        at += len;
    } while (at < t->nbytes);
    return HC_OK;
}

/* Progress after item i: items and bytes done so far in output order. */
static void report_progress(const hc_convert_options *opts, const hc_conv_plan *plan, int i)
{
    if (opts->progress == NULL) return;
    const hc_conv_item *it = &plan->items[i];
    opts->progress(opts->progress_ctx, i + 1, plan->n_items, it->bytes_through, plan->bytes_out,
                   it->layer >= 0 ? plan->layers[it->layer].prefix : it->copy->name);
}

/* One input tensor of an item: checked (hc_st_model_check_tensor), its CRC
 * noted unless the source noted it (hc_st_crcs_take), then its pages dropped
 * (hc_st_model_release), each when asked. */
static void item_tensor(const hc_conv_plan *plan, const hc_st_tensor *t, item_pass *p)
{
    if (t == NULL) return;
    if (p->prefetch) {
        hc_st_model_willneed(plan->model, t);
        return;
    }
    if (p->check && p->st == HC_OK) p->st = hc_st_model_check_tensor(plan->model, t, p->err);
    /* while its pages are still mapped and resident: no second read later */
    if (p->st == HC_OK && p->crcs) hc_st_crcs_take(p->crcs, t);
    if (p->copy) return; /* the writer's thread notes its CRC and drops its pages */
    if (p->release) hc_st_model_release(plan->model, t);
}

/* Every input tensor of an item. */
static void item_inputs(const hc_conv_plan *plan, const hc_conv_item *it, item_pass *p)
{
    if (it->layer < 0) {
        item_tensor(plan, it->copy, p);
        return;
    }
    const hc_conv_layer *L = &plan->layers[it->layer];
    for (int r = 0; r < HC_ROLE_COUNT; r++) item_tensor(plan, L->pre[r], p);
    for (int e = 0; e < L->n_experts; e++) item_tensor(plan, L->experts[e], p);
    for (int s = 0; s < L->n_src; s++) item_tensor(plan, L->src[s], p);
    for (int s = 0; s < L->n_hexperts * HC_ROLE_COUNT; s++)
        if (L->hexperts[s]) item_tensor(plan, L->hexperts[s], p);
}

/* After an item, at a tensor boundary: the files it was read from must
 * still be whole (a read past a truncation got zeros, hc_sigbus.h); then its
 * input pages are dropped. A broken input wins over the item's own error,
 * which it usually caused (write() from a truncated mapping: EFAULT). */
static hc_status item_done(const hc_conv_plan *plan, const hc_conv_item *it, hc_status st,
                           int deferred, hc_error *err)
{
    hc_error e;
    hc_error_clear(&e);
    /* deferred: the writer drops the pages (and notes the CRCs) after writing */
    item_pass p = {HC_OK, &e, st == HC_OK && !deferred, 0, NULL, it->layer < 0, 1};
    if (st == HC_OK && plan->run && it->layer >= 0 && !deferred) p.crcs = plan->run->input_crcs;
    item_inputs(plan, it, &p);
    if (p.st == HC_OK) return st;
    if (err) *err = e;
    return p.st;
}

static hc_status write_shard_items(const hc_convert_options *opts, hc_st_writer *w,
                                   const hc_conv_plan *plan, int shard, hc_error *err)
{
    size_t index = 0;
    for (int i = 0; i < plan->n_items; i++) {
        const hc_conv_item *it = &plan->items[i];
        if (it->shard != shard) continue;
        /* the next item's input is read from disk while this one is converted */
        for (int j = i + 1; j < plan->n_items; j++)
            if (plan->items[j].shard == shard) {
                item_pass ahead = {HC_OK, NULL, 0, 1, NULL, 0, 0};
                item_inputs(plan, &plan->items[j], &ahead);
                break;
            }
        int deferred = 0;
        hc_status st = it->layer >= 0 ? write_layer(w, plan, it, &index, &deferred, err)
                                      : write_copy(w, plan, it->copy, &index, err);
        HC_TRY(item_done(plan, it, st, deferred, err));
        report_progress(opts, plan, i);
    }
    return HC_OK;
}

/* Writes shard `shard` into dir; *info (when not NULL) receives its size and
 * CRCs as the writer took them. */
static hc_status write_shard(const hc_convert_options *opts, const hc_conv_plan *plan, int shard,
                             const char *dir, hc_file_crc *info, hc_error *err)
{
    char name[64], path[4096];
    hc_conv_shard_name(shard, plan->n_shards, name, sizeof name);
    HC_TRY(hc_path_join(path, sizeof path, dir, name, err));
    hc_st_writer *w = NULL;
    HC_TRY(hc_st_writer_open(path, &w, err));
    hc_status st = hc_conv_declare_shard(w, plan, shard, err);
    if (st == HC_OK) st = hc_st_writer_begin_data(w, err);
    if (st == HC_OK) st = write_shard_items(opts, w, plan, shard, err);
    if (st == HC_OK) st = hc_st_writer_flush(w, err);
    /* every file, once a shard; a broken input wins over the write error
     * (EFAULT from a truncated mapping) it caused */
    hc_error e;
    hc_error_clear(&e);
    hc_status broken = hc_st_model_check(plan->model, &e);
    if (broken != HC_OK) {
        if (err) *err = e;
        st = broken;
    }
    if (st == HC_OK) st = hc_st_writer_finish_crc(w, name, info, err);
    else hc_st_writer_abort(w);
    if (st == HC_OK) hc_conv_log(opts, "wrote %s", name);
    return st;
}

/* Progress for the items of a shard that --resume found complete. */
static void skip_shard_items(const hc_convert_options *opts, const hc_conv_plan *plan, int shard)
{
    for (int i = 0; i < plan->n_items; i++)
        if (plan->items[i].shard == shard) report_progress(opts, plan, i);
}

/* The layers of a shard reused from an interrupted run were not transformed
 * in this one: whether their MoE weights were recoded as e0m (config.json
 * records it) comes from their pre tensors again. */
static hc_status e0m_of_shard(const hc_conv_plan *plan, int shard, hc_error *err)
{
    for (int i = 0; i < plan->n_items; i++) {
        const hc_conv_item *it = &plan->items[i];
        if (it->shard != shard || it->layer < 0) continue;
        const hc_conv_layer *L = &plan->layers[it->layer];
        if (L->meta.version != HC_HUMMING_0_1_19 || !L->meta.is_moe) continue;
        hc_layer_tensors pre;
        HC_TRY(hc_conv_load_pre(plan, L, &pre, NULL, NULL, err));
        plan->weight_e0m[it->layer] = hc_layer_e0m_applies(&L->cfg, &L->meta, &pre);
        hc_layer_tensors_free(&pre);
    }
    return HC_OK;
}

/* A shard recorded complete by an interrupted run whose bytes still match:
 * not rewritten, but its layers are verified again from the file. */
static hc_status reuse_shard(const hc_convert_options *opts, const hc_conv_plan *plan, int s,
                             const char *dir, const char *name, int *reused, hc_error *err)
{
    hc_conv_run *run = plan->run;
    *reused = 0;
    if (run == NULL || !run->resumed ||
        !hc_conv_shard_reusable(opts, run, name, &run->shards[s]))
        return HC_OK;
    *reused = 1;
    char path[4096];
    HC_TRY(hc_path_join(path, sizeof path, dir, name, err));
    HC_TRY(hc_conv_verify_shard_file(plan->verify, plan, s, path, err));
    HC_TRY(e0m_of_shard(plan, s, err));
    skip_shard_items(opts, plan, s);
    hc_conv_log(opts, "resume: %s already complete (CRC-32 %08x checked)", name,
                run->shards[s].crc);
    return HC_OK;
}

hc_status hc_conv_write_shards(const hc_convert_options *opts, const hc_conv_plan *plan,
                               const char *dir, hc_error *err)
{
    hc_conv_run *run = plan->run;
    for (int s = 0; s < plan->n_shards; s++) {
        char name[64];
        int reused = 0;
        hc_conv_shard_name(s, plan->n_shards, name, sizeof name);
        HC_TRY(reuse_shard(opts, plan, s, dir, name, &reused, err));
        if (!reused) {
            HC_TRY(write_shard(opts, plan, s, dir, run ? &run->shards[s] : NULL, err));
            if (run) HC_TRY(hc_conv_journal_save(run, err));
        }
        if (run) {
            HC_TRY(hc_conv_inputs_check(opts->in_dir, run, err));
            char point[32];
            snprintf(point, sizeof point, "after_shard_%d", s + 1);
            hc_conv_pause(opts, point);
        }
    }
    if (plan->n_shards > 1) HC_TRY(hc_conv_write_index(plan, dir, err));
    return HC_OK;
}
