/* hc_crc32.h - CRC-32 (the zlib / gzip / PNG polynomial, reflected), the
 * checksum of the manifest and the run journal.
 *
 * On x86-64 CPUs with PCLMULQDQ and SSE4.1 the bulk of a buffer is folded
 * with carry-less multiplications (128-bit lanes, sixteen at a time on
 * 256-bit or 512-bit registers where the CPU has VPCLMULQDQ, then a Barrett
 * reduction), several times faster than zlib 1.2's table-driven crc32;
 * elsewhere, and for the last bytes, zlib's crc32. Both give the same value
 * (tests/test_crc32.c). */
#ifndef HC_CRC32_H
#define HC_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 of len bytes at p continuing crc (0 to start), as zlib's
 * crc32(crc, p, len) with any length. */
uint32_t hc_crc32(uint32_t crc, const void *p, size_t len);

/* hc_crc32 with at most the given implementation (tests compare them): 3
 * VPCLMULQDQ on 512-bit registers where the CPU has it (AVX-512), 2 on
 * 256-bit ones (AVX2), 1 PCLMULQDQ on 128-bit ones, 0 zlib; a level the CPU
 * lacks falls back to the next one below. */
uint32_t hc_crc32_level(int level, uint32_t crc, const void *p, size_t len);

/* The same with zlib alone (the portable path; tests compare the two). */
uint32_t hc_crc32_zlib(uint32_t crc, const void *p, size_t len);

/* CRC-32 of the concatenation of n pieces of piece_bytes bytes each, from
 * the pieces' own CRCs (starting from 0), as zlib's crc32_combine would
 * chain them; 0 for n = 0. */
uint32_t hc_crc32_concat(const uint32_t *piece_crc, int64_t n, uint64_t piece_bytes);

#endif
