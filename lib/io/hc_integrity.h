/* hc_integrity.h - output integrity: CRC-32 (zlib) of files and of each
 * tensor of a safetensors shard, the manifest humming_manifest.json and
 * `humming-convert check OUT_DIR` (docs/robustness.md). */
#ifndef HC_INTEGRITY_H
#define HC_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

#include "hc_error.h"
#include "hc_safetensors.h"

#define HC_MANIFEST_NAME "humming_manifest.json"

/* Byte range [begin, end) of one tensor in its file (absolute offsets) and
 * the CRC-32 of those bytes. */
typedef struct {
    char *name;
    uint64_t begin, end;
    uint32_t crc;
} hc_tensor_crc;

/* Size and CRC-32 of one file; for a safetensors file also the header range
 * [0, header_end) and every tensor (file order). */
typedef struct {
    char *name;             /* file name inside its directory */
    uint64_t size;
    uint32_t crc;
    int is_safetensors;
    uint64_t header_end;
    uint32_t header_crc;    /* CRC of [0, header_end) */
    hc_tensor_crc *tensors;
    size_t n_tensors;
} hc_file_crc;

/* Computes info for dir/name. A *.safetensors file is opened with the strict
 * reader (a malformed one is HC_ERR_FORMAT) and read once: per-tensor CRCs
 * are combined into the file CRC. Other files are read in chunks. */
hc_status hc_file_crc_compute(const char *dir, const char *name, hc_file_crc *out, hc_error *err);
void hc_file_crc_free(hc_file_crc *f);

/* hc_st_writer_finish, and on success *out (when not NULL) describes the
 * file as hc_file_crc_compute(dir, name) would, from the CRCs the writer
 * took of the bytes as it wrote them (the output is not read back). */
hc_status hc_st_writer_finish_crc(hc_st_writer *w, const char *name, hc_file_crc *out,
                                  hc_error *err);

/* One input file as recorded at plan time. ctime (and the inode) cannot be
 * set back by the writer, so a file rewritten in place with its size and
 * mtime restored is still noticed. */
typedef struct {
    char *name;             /* relative to IN_DIR */
    uint64_t size;
    int64_t mtime_ns, ctime_ns;
    uint64_t dev, ino;
    int has_crc;
    uint32_t crc;
} hc_input_file;

/* Writes dir/humming_manifest.json (fsynced): every regular file in dir
 * except the manifest itself and names starting with '.', sorted by name,
 * with size and CRC (infos: already computed shard infos to reuse, may be
 * NULL), and the inputs. */
hc_status hc_manifest_write(const char *dir, const hc_file_crc *infos, size_t n_infos,
                            const hc_input_file *inputs, size_t n_inputs, hc_error *err);

/* Stages a manifest update for files about to replace others in dir: for
 * each i, the entry named finals[i] gets the size and CRCs of the file
 * dir/srcs[i] (already written and fsynced; it is renamed to finals[i]
 * later). The updated manifest is written, fsynced, to a new dot file whose
 * path goes into staged (caller renames it over humming_manifest.json after
 * the files, or unlinks it). No manifest in dir: staged = "", HC_OK. On
 * failure nothing is left behind and the manifest is untouched. */
hc_status hc_manifest_stage(const char *dir, const char *const *finals, const char *const *srcs,
                            size_t n, char *staged, size_t staged_len, hc_error *err);

/* Receives one problem line from hc_check_dir. */
typedef void (*hc_check_fn)(void *ctx, const char *line);

/* Recomputes every file of dir against its manifest. *problems counts the
 * problems found (missing, extra, size, CRC, tensor CRC, and files or layers
 * that config.json and the index promise but the manifest does not list),
 * each reported to fn. HC_OK whenever the manifest could be read (problems
 * or not); HC_ERR_IO / HC_ERR_FORMAT when dir or its manifest cannot be read
 * or the manifest lists no files. */
hc_status hc_check_dir(const char *dir, hc_check_fn fn, void *ctx, int *problems, hc_error *err);

#endif
