/* hc_st_crcs.h - the CRC-32 of a model's input files (the run journal and the
 * manifest record them) assembled from the CRCs of their tensors, noted while
 * the conversion reads each tensor, so that no input is read a second time. */
#ifndef HC_ST_CRCS_H
#define HC_ST_CRCS_H

#include <stdint.h>

#include "hc_safetensors.h"

typedef struct hc_st_crcs hc_st_crcs;

/* A table with one slot per tensor of every file of m (file order, indexed or
 * not), all empty. m must outlive it. Caller frees with hc_st_crcs_free. */
hc_status hc_st_crcs_new(const hc_st_model *m, hc_st_crcs **out, hc_error *err);
/* NULL is allowed; the model may already be closed. */
void hc_st_crcs_free(hc_st_crcs *c);

/* Records crc as the CRC-32 of t's bytes. t is one of the files' own
 * descriptors (a view, hc_st_model_add_views, is ignored: its base is taken
 * whole). Not safe to call for one tensor from two threads at once; c NULL:
 * nothing. */
void hc_st_crcs_note(hc_st_crcs *c, const hc_st_tensor *t, uint32_t crc);
/* Computes and records t's CRC from its mapping unless it is already there
 * (the tensor was just read: its pages are resident). c NULL: nothing. */
void hc_st_crcs_take(hc_st_crcs *c, const hc_st_tensor *t);

/* The CRC-32 and size of the model file whose base name is `name`: the
 * noted tensor CRCs combined in file order with the CRCs of the bytes no
 * tensor covers (the header, any gap or tail), the tensors not noted
 * computed from the mapping. *found = 0 (and nothing else set) when no file
 * of the model has that name. HC_ERR_IO when the file was cut short while
 * mapped (hc_st_check). */
hc_status hc_st_crcs_file(hc_st_crcs *c, const char *name, int *found, uint32_t *crc,
                          uint64_t *size, hc_error *err);

#endif
