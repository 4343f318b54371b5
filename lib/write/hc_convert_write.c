/* hc_convert_write.c - the safetensors shards' declarations and index. */
#include "hc_conv_write.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_fs.h"

void hc_conv_shard_name(int i, int n, char *buf, size_t len)
{
    if (n == 1) snprintf(buf, len, "model.safetensors");
    else snprintf(buf, len, "model-%05d-of-%05d.safetensors", i + 1, n);
}

static hc_status declare_layer(hc_st_writer *w, const hc_conv_layer *L, hc_error *err)
{
    for (int i = 0; i < L->n_outs; i++) {
        const hc_out_tensor *o = &L->outs[i];
        HC_TRY(hc_st_writer_add(w, o->name, o->desc.dtype, o->desc.ndim, o->desc.shape, err));
    }
    return HC_OK;
}

hc_status hc_conv_declare_shard(hc_st_writer *w, const hc_conv_plan *plan, int shard,
                                hc_error *err)
{
    HC_TRY(hc_st_writer_set_metadata(w, "format", "pt", err));
    for (int i = 0; i < plan->n_items; i++) {
        const hc_conv_item *it = &plan->items[i];
        if (it->shard != shard) continue;
        if (it->layer >= 0) {
            HC_TRY(declare_layer(w, &plan->layers[it->layer], err));
        } else {
            const hc_st_tensor *t = it->copy;
            HC_TRY(hc_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, err));
        }
    }
    return HC_OK;
}

static hc_status add_index_entry(cJSON *map, const char *name, const char *shard, hc_error *err)
{
    if (cJSON_AddStringToObject(map, name, shard) == NULL)
        HC_FAIL(err, HC_ERR_NOMEM, "out of memory building the shard index");
    return HC_OK;
}

static hc_status fill_weight_map(const hc_conv_plan *plan, cJSON *map, hc_error *err)
{
    for (int i = 0; i < plan->n_items; i++) {
        const hc_conv_item *it = &plan->items[i];
        char shard[64];
        hc_conv_shard_name(it->shard, plan->n_shards, shard, sizeof shard);
        if (it->layer < 0) {
            HC_TRY(add_index_entry(map, it->copy->name, shard, err));
            continue;
        }
        const hc_conv_layer *L = &plan->layers[it->layer];
        for (int o = 0; o < L->n_outs; o++) HC_TRY(add_index_entry(map, L->outs[o].name, shard, err));
    }
    return HC_OK;
}

/* model.safetensors.index.json: {"metadata": {"total_size": N}, "weight_map": {...}}. */
hc_status hc_conv_write_index(const hc_conv_plan *plan, const char *dir, hc_error *err)
{
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "metadata");
    cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
    hc_status st = HC_OK;
    if (!meta || !cJSON_AddNumberToObject(meta, "total_size", (double)plan->bytes_out) || !map)
        st = hc_error_set(err, HC_ERR_NOMEM, "out of memory building the shard index");
    if (st == HC_OK) st = fill_weight_map(plan, map, err);
    char *text = st == HC_OK ? cJSON_Print(root) : NULL;
    if (st == HC_OK && text == NULL) st = hc_error_set(err, HC_ERR_NOMEM, "out of memory");
    char path[4096];
    if (st == HC_OK) st = hc_path_join(path, sizeof path, dir, "model.safetensors.index.json", err);
    if (st == HC_OK) st = hc_fs_write_file(path, text, strlen(text), err);
    free(text);
    cJSON_Delete(root);
    return st;
}
