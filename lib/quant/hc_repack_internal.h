/* hc_repack_internal.h - the byte-gather form of the 4-bit tile repack
 * (hc_repack.c builds the map from the lane map, hc_repack_vec.c runs it).
 *
 * Under 16-bit activations a k block of 64 rows x 16 codes (8 bytes a row)
 * becomes 512 contiguous output bytes, and every source byte (a code pair k
 * even, k + 1) lands whole in one output 32-bit word: its low code at nibble
 * j, its high code at nibble j + d (the pair distance, 4 or 16). So a tile is
 * a byte permutation followed by the same nibble move in every word, the
 * per-code transform (XOR, int->fp with z = 8) a 16-entry table. Output
 * bytes [64a, 64a + 64) come from at most 8 rows (their 8 bytes each). */
#ifndef HC_REPACK_INTERNAL_H
#define HC_REPACK_INTERNAL_H

#include <stdint.h>

typedef struct {
    int64_t row[8][8];   /* block a's source rows (from the tile's first) */
    uint8_t idx[8][64];  /* output byte q of block a <- byte idx of row[a][idx / 8] */
    int swap;            /* d == 16: words [B0 B2 B1 B3] -> nibbles l0 l1 l2 l3 h0 h1 h2 h3 */
    int plain;           /* the code transform is the identity */
    uint8_t lut[16];     /* the code transform */
} hc_tile_gather;

/* The best form of hc_tile_gather_rows this CPU runs: 0 none, 1 AVX2 (per
 * 32 output bytes four byte shuffles of broadcast 16-byte pieces), 2 AVX-512
 * VBMI (one byte permute per 64). */
int hc_tile_gather_available(void);

/* Tiles (nb, kb) for nb0 <= nb < nb1 and every kb < kblocks of one expert:
 * in_e rows of row_words words, out_e rows of out_row words
 * (hc_repack_weight's layout), in form `level` (1 or 2, at most
 * hc_tile_gather_available()). */
void hc_tile_gather_rows(const hc_tile_gather *g, int level, const uint32_t *in_e,
                         int64_t row_words, int64_t nb0, int64_t nb1, int64_t kblocks,
                         int64_t out_row, uint32_t *out_e);

#endif
