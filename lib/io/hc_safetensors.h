/* hc_safetensors.h - safetensors files: strict reader, sharded model
 * directories, and a streaming writer.
 *
 * Format (docs/safetensors.md has the full list of checks):
 *   u64 little-endian N | N bytes of UTF-8 JSON header | tensor bytes
 * Every tensor entry is {"dtype", "shape", "data_offsets": [begin, end)}
 * with offsets relative to the start of the tensor bytes.
 *
 * Errors: every fallible function returns an hc_status and fills the
 * caller's hc_error (which may be NULL). Malformed files give HC_ERR_FORMAT
 * with a message naming the file, the tensor (when there is one) and the
 * reason; failed system calls give HC_ERR_IO; allocation failure
 * HC_ERR_NOMEM; misuse of the API HC_ERR_ARG. Nothing here prints or exits.
 *
 * Threads: a handle may be read from several threads at once once opened;
 * writers are single-threaded. */
#ifndef HC_SAFETENSORS_H
#define HC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "hc_error.h"
#include "hc_tensor.h"

/* Largest header the reference implementation accepts (and we write). */
#define HC_ST_MAX_HEADER 100000000ULL
/* Longest tensor name read or written, in bytes: longer ones are refused
 * (real names are under 200 bytes; every regex runs on names up to this
 * length, HC_REGEX_MAX_SUBJECT, in bounded time). */
#define HC_ST_MAX_NAME 4096

/* One tensor of an open file. Owned by the file (or model) handle: valid
 * until that handle is closed. `data` points into a read-only mapping of the
 * file and is NOT aligned in general (files from other writers, odd-sized
 * predecessors): read elements with memcpy, never through a cast pointer,
 * and never write through it. For an empty tensor nbytes is 0 and data must
 * not be dereferenced. */
typedef struct {
    const char *name;       /* UTF-8, NUL-terminated */
    const char *file;       /* path of the file that holds the tensor */
    hc_dtype dtype;
    int ndim;               /* 0 for a scalar (one element) */
    int64_t shape[HC_MAX_DIMS];
    const void *data;       /* nbytes bytes, unaligned, read-only */
    size_t nbytes;
    uint64_t offset;        /* begin offset within the data section */
} hc_st_tensor;

/* ---- one file ---------------------------------------------------------- */

typedef struct hc_st_file hc_st_file;

/* Maps the file at `path` read-only and validates it completely (header
 * size, UTF-8, JSON syntax, every entry, exact contiguous layout). The file
 * is never modified. On success *out owns the mapping; release it with
 * hc_st_close. On failure *out is NULL and err says why. */
hc_status hc_st_open(const char *path, hc_st_file **out, hc_error *err);
/* Same checks on a file already in memory: data[0..len) holds the whole
 * file. The bytes are borrowed, not copied: they must stay valid and
 * unchanged until hc_st_close, and tensor data pointers point into them.
 * `name` (NULL: "<buffer>") stands for the path in messages and as the
 * tensors' `file`. Used by the fuzz targets and by callers that already hold
 * the bytes. */
hc_status hc_st_open_buffer(const void *data, size_t len, const char *name, hc_st_file **out,
                            hc_error *err);
/* Unmaps and frees; every descriptor and string from f becomes invalid.
 * NULL is allowed. */
void hc_st_close(hc_st_file *f);

/* Checks that the mapped file is still whole: not shorter than when mapped,
 * and no read of the mapping faulted (hc_sigbus.h: with the handler
 * installed, a read past a truncation gets zeros instead of SIGBUS). Call it
 * at tensor boundaries, after reading and before trusting what was read.
 * HC_ERR_IO naming the file; HC_OK for a buffer (hc_st_open_buffer). */
hc_status hc_st_check(const hc_st_file *f, hc_error *err);

/* 1 if t is one of f's tensor descriptors. */
int hc_st_holds(const hc_st_file *f, const hc_st_tensor *t);

/* The path given to hc_st_open (owned by f). */
const char *hc_st_path(const hc_st_file *f);
/* Number of tensors in the file. */
size_t hc_st_count(const hc_st_file *f);
/* The whole file's bytes (the mapping, or the buffer of hc_st_open_buffer),
 * owned by f; *size receives its length. */
const unsigned char *hc_st_bytes(const hc_st_file *f, size_t *size);
/* The i-th tensor in file order (increasing offset); NULL if i >= count. */
const hc_st_tensor *hc_st_tensor_at(const hc_st_file *f, size_t i);
/* The tensor called `name` (exact, case-sensitive); NULL if absent. */
const hc_st_tensor *hc_st_find(const hc_st_file *f, const char *name);

/* Number of "__metadata__" entries (0 when the header has none). */
size_t hc_st_metadata_count(const hc_st_file *f);
/* The i-th metadata entry in header order; returns 0 and sets *key and
 * *value (owned by f), or -1 if i is out of range. */
int hc_st_metadata_at(const hc_st_file *f, size_t i, const char **key, const char **value);
/* The metadata value for `key` (owned by f), or NULL. */
const char *hc_st_metadata_get(const hc_st_file *f, const char *key);

/* Fills *out with a borrowed view of d (owned = 0, data points into the
 * mapping and must not be written; hc_tensor_free on it is a no-op). */
void hc_st_tensor_view(const hc_st_tensor *d, hc_tensor *out);

/* Hints that a tensor's bytes are no longer needed, so that their pages of
 * the file's read-only mapping leave the resident set (a streaming conversion
 * then holds about one layer at a time). Reading the data again still works:
 * the pages come back from the page cache. Does nothing for a tensor whose
 * data is not inside a mapping this reader made (e.g. a tensor built in
 * memory), so it can never discard anyone's memory. Never fails. */
void hc_st_release(const hc_st_file *f, const hc_st_tensor *d);

/* Reads len bytes at `at` (inside f's mapping) from the file with pread into
 * dst: a copy into a small buffer costs less than faulting the mapping's
 * pages in (and out). Returns 0, or -1 where it cannot (no kept descriptor,
 * a buffer-backed file, a range outside the mapping, a failed or short read:
 * the caller then reads the mapping, whose checks report truncation). */
int hc_st_pread(const hc_st_file *f, const void *at, size_t len, void *dst);
/* Descriptors from this number on are not kept for hc_st_pread. */
#define HC_ST_PREAD_MAX_FD 512

/* Hints that a tensor's bytes will be read soon: the kernel starts reading
 * its pages of the mapping in the background (read-ahead of the next tensor
 * while the current one is converted). Same scope as hc_st_release; never
 * fails. */
void hc_st_willneed(const hc_st_file *f, const hc_st_tensor *d);


/* ---- a model directory (one file or shards) ---------------------------- */

typedef struct hc_st_model hc_st_model;

/* Opens the checkpoint in directory `dir`:
 *  1. if dir/model.safetensors.index.json exists, its "weight_map" (tensor
 *     name -> shard file name) is the authority: each shard is opened once,
 *     every indexed tensor must exist in the shard the index names, and the
 *     model holds exactly the indexed tensors (a tensor no index entry names
 *     is ignored). A name listed twice, or also held by another shard, is
 *     rejected naming both files. Shard names containing '/' or ".." are
 *     rejected;
 *  2. otherwise dir/model.safetensors alone;
 *  3. otherwise every dir/ *.safetensors (sorted by name); a tensor name in
 *     two files is an error.
 * On success *out owns every open shard; close with hc_st_model_close. */
hc_status hc_st_model_open(const char *dir, hc_st_model **out, hc_error *err);
/* Closes every shard; NULL is allowed. */
void hc_st_model_close(hc_st_model *m);

/* Number of tensors in the model. */
size_t hc_st_model_count(const hc_st_model *m);
/* The i-th tensor: shards in file-name order, then file order within a
 * shard. NULL if i >= count. */
const hc_st_tensor *hc_st_model_tensor_at(const hc_st_model *m, size_t i);
/* The tensor called `name`, or NULL. */
const hc_st_tensor *hc_st_model_find(const hc_st_model *m, const char *name);
/* Number of open files and the i-th of them (NULL if out of range). */
size_t hc_st_model_file_count(const hc_st_model *m);
const hc_st_file *hc_st_model_file_at(const hc_st_model *m, size_t i);

/* hc_st_check for every file of the model; the first failure. */
hc_status hc_st_model_check(const hc_st_model *m, hc_error *err);
/* hc_st_check for the file of the model that holds t (HC_OK if none). */
hc_status hc_st_model_check_tensor(const hc_st_model *m, const hc_st_tensor *t, hc_error *err);

/* Adds n tensor views to the model and hides the tensors hidden[0..nh) from
 * enumeration and lookup (their files stay open). View i is a descriptor
 * whose data lies inside bases[i] (a tensor of m): name, dtype, shape, data
 * and nbytes are the caller's; the descriptor and the name are copied and
 * owned by m, `file` becomes the base's. Views follow the remaining tensors
 * in model order; hc_st_model_check_tensor on a view checks its base's file.
 * Used to present one slice of a stacked tensor as a tensor of its own.
 * Once per model (HC_ERR_ARG otherwise, or for a view outside its base);
 * a view name that is already a tensor: HC_ERR_FORMAT naming it. On failure
 * the model must be closed, not used further. */
hc_status hc_st_model_add_views(hc_st_model *m, const hc_st_tensor *views,
                                const hc_st_tensor *const *bases, size_t n,
                                const hc_st_tensor *const *hidden, size_t nh, hc_error *err);

/* hc_st_pread from whichever of the model's files maps `at`. */
int hc_st_model_pread(const hc_st_model *m, const void *at, size_t len, void *dst);
/* hc_st_release for a tensor of any file of the model. */
void hc_st_model_release(const hc_st_model *m, const hc_st_tensor *d);
/* hc_st_willneed for a tensor of any file of the model. */
void hc_st_model_willneed(const hc_st_model *m, const hc_st_tensor *d);

/* ---- writer ------------------------------------------------------------ */

typedef struct hc_st_writer hc_st_writer;

/* Starts writing `path`. Data goes to a new temporary file in the same
 * directory ("<path>.tmp.<pid>.<n>"); nothing appears at `path` until
 * hc_st_writer_finish succeeds. Usage:
 *     open -> add (each tensor) / set_metadata -> begin_data
 *          -> write (all bytes, declaration order) -> finish
 * Call hc_st_writer_abort instead of finish to give up at any point. */
hc_status hc_st_writer_open(const char *path, hc_st_writer **out, hc_error *err);
/* Declares the next tensor (before begin_data). Tensors are laid out
 * contiguously in declaration order; the data section starts 8-byte
 * aligned, so a tensor is aligned to its element size when every tensor
 * declared before it has a size that is a multiple of that (declare wider
 * dtypes first to get this). Rejects "__metadata__", non-UTF-8 names,
 * ndim outside 0..HC_MAX_DIMS, dims above 2^53 and sizes that overflow or
 * are not a whole number of bytes (HC_ERR_ARG); a name declared twice is
 * rejected by begin_data. */
hc_status hc_st_writer_add(hc_st_writer *w, const char *name, hc_dtype dtype, int ndim,
                           const int64_t *shape, hc_error *err);
/* Sets (or replaces) a "__metadata__" string entry (before begin_data).
 * Both strings are copied and must be valid UTF-8. */
hc_status hc_st_writer_set_metadata(hc_st_writer *w, const char *key, const char *value,
                                    hc_error *err);
/* Writes the 8-byte length and the JSON header, padded with spaces so that
 * the data section starts at a multiple of 8. HC_ERR_ARG for duplicate
 * names or a header over HC_ST_MAX_HEADER. */
hc_status hc_st_writer_begin_data(hc_st_writer *w, hc_error *err);
/* Appends len bytes of tensor `index` (declaration order, 0-based). Each
 * tensor may arrive in several chunks; tensors must be completed in
 * declaration order (empty tensors need no call); a chunk that would pass
 * the tensor's size is HC_ERR_ARG. */
hc_status hc_st_writer_write(hc_st_writer *w, size_t index, const void *data, size_t len,
                             hc_error *err);
/* Called by the writer's thread once a chunk of hc_st_writer_write_async is
 * written (written = 1) or dropped (0: an earlier write failed, or the writer
 * was aborted); tensor_crc: the CRC-32 of the tensor's bytes up to the end of
 * this chunk (the whole tensor's after its last chunk). */
typedef void (*hc_st_write_done)(void *ctx, int written, uint32_t tensor_crc);
/* hc_st_writer_write, but the bytes are written by the writer's own thread
 * (started on first use) while the caller goes on: data must stay valid
 * and unchanged until done(ctx, ...) is called (done may be NULL). Chunks
 * are written in the order queued. Returns at once; errors of the checks
 * above, or of an earlier queued write; on error done has been called
 * already. The queue is not bounded: the caller bounds what it holds in
 * flight with hc_st_writer_flush. */
hc_status hc_st_writer_write_async(hc_st_writer *w, size_t index, const void *data, size_t len,
                                   hc_st_write_done done, void *ctx, hc_error *err);
/* hc_st_writer_write_async of bytes that lie in one of src's mappings (a
 * tensor copied unchanged; src NULL: as hc_st_writer_write_async): the
 * writer reads them with hc_st_model_pread into its staging buffer, not
 * through the mapping. src must outlive the write. */
hc_status hc_st_writer_copy_async(hc_st_writer *w, size_t index, const hc_st_model *src,
                                  const void *data, size_t len, hc_st_write_done done, void *ctx,
                                  hc_error *err);
/* Waits until every queued chunk is written; the first failed write. */
hc_status hc_st_writer_flush(hc_st_writer *w, hc_error *err);
/* Checks that every byte was written, fsyncs the file, renames it to the
 * final path and fsyncs the directory. Always frees w; on failure the
 * temporary file is removed and nothing is left at the final path by us.
 * Calls begin_data first if it was not called (files of empty tensors). */
hc_status hc_st_writer_finish(hc_st_writer *w, hc_error *err);
/* Removes the temporary file and frees w. NULL is allowed. */
void hc_st_writer_abort(hc_st_writer *w);

/* Writes `count` tensors (names[i] for tensors[i], in that order) and the
 * metadata given as key, value, key, value, ..., NULL (metadata may be NULL)
 * to `path` with the writer above. */
hc_status hc_st_write_file(const char *path, const hc_tensor *tensors, const char *const *names,
                           size_t count, const char *const *metadata, hc_error *err);

#endif
