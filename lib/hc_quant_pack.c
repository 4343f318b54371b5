/* hc_quant_pack.c - row packing of b-bit codes into little-endian 32-bit words
 * (Humming's pack_weight layout, spec section 3). */
#include <string.h>

#include "hc_parallel.h"
#include "hc_quant.h"

void hc_pack_row(const uint8_t *c, int64_t len, int bits, uint32_t *w)
{
    int64_t words = len * bits / 32;
    uint32_t mask = (1u << bits) - 1u;
    if (bits == 4 || bits == 8) { /* whole codes per word: no straddling */
        int per = 32 / bits;
        for (int64_t j = 0; j < words; j++) {
            uint32_t v = 0;
            for (int i = 0; i < per; i++) v |= (c[j * per + i] & mask) << (i * bits);
            w[j] = v;
        }
        return;
    }
    memset(w, 0, (size_t)words * sizeof *w);
    for (int64_t i = 0; i < len; i++) {
        uint64_t bit = (uint64_t)i * (uint64_t)bits;
        uint32_t v = c[i] & mask;
        unsigned off = (unsigned)(bit & 31u);
        w[bit >> 5] |= v << off;
        if (off + (unsigned)bits > 32u) w[(bit >> 5) + 1] |= v >> (32u - off);
    }
}

void hc_pack_rows(const uint8_t *codes, int64_t rows, int64_t len, int bits, uint32_t *out)
{
    int64_t words = len * bits / 32;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * len))
    for (int64_t r = 0; r < rows; r++) hc_pack_row(codes + r * len, len, bits, out + r * words);
}

void hc_unpack_rows(const uint32_t *words, int64_t rows, int64_t len, int bits, uint8_t *out)
{
    int64_t nw = len * bits / 32;
    uint32_t mask = (1u << bits) - 1u;
#pragma omp parallel for schedule(static) if (HC_PARALLEL(rows * len))
    for (int64_t r = 0; r < rows; r++) {
        const uint32_t *w = words + r * nw;
        for (int64_t i = 0; i < len; i++) {
            uint64_t bit = (uint64_t)i * (uint64_t)bits;
            unsigned off = (unsigned)(bit & 31u);
            uint64_t pair = w[bit >> 5];
            if (off + (unsigned)bits > 32u) pair |= (uint64_t)w[(bit >> 5) + 1] << 32;
            out[r * len + i] = (uint8_t)((pair >> off) & mask);
        }
    }
}
