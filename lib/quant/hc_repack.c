/* hc_repack.c - tile repack of row-packed weight codes (see hc_repack.h).
 *
 * Fast path: the inverse formulation of spec 4.10 - for every output lane,
 * gather its 32 codes, place them in the padded slots, compact. Every output
 * row (expert, k block) is independent, so rows run in parallel. */
#include "hc_repack.h"
#include "hc_parallel.h"
#include "hc_repack_internal.h"

#include <stddef.h>
#include <string.h>

int hc_repack_padded_bits(int b)
{
    return b <= 1 ? 1 : b <= 2 ? 2 : b <= 4 ? 4 : 8;
}

/* Inlined into the repack's per-element loop; hc_stream_get wraps it. */
static inline uint32_t stream_get(const uint32_t *words, int64_t idx, int b)
{
    int64_t bit = idx * b;
    int64_t w = bit >> 5;
    int off = (int)(bit & 31);
    uint32_t v = words[w] >> off;
    if (off + b > 32) v |= words[w + 1] << (32 - off);
    return v & ((1u << b) - 1u);
}

uint32_t hc_stream_get(const uint32_t *words, int64_t idx, int b)
{
    return stream_get(words, idx, b);
}

uint32_t hc_stream_get_truncated(const uint32_t *words, int64_t idx, int b)
{
    int64_t bit = idx * b;
    return (words[bit >> 5] >> (bit & 31)) & ((1u << b) - 1u);
}

uint32_t hc_int2fp_code(uint32_t v, uint32_t z, int b)
{
    uint32_t mask = (1u << b) - 1u;
    return v >= z ? v - z : mask - v;
}

/* One slot position of the compaction: the Bp values v[0..Bp-1] (b bits each)
 * are written as one stream into b fields of Bp bits. A value that does not fit
 * in the rest of a field puts its high bits there and its low bits at the
 * bottom of the next field (spec 4.5, all four widths follow this rule). */
static void compact_slot(int b, int bp, const uint32_t *v, uint32_t *f)
{
    int w = 0, fill = 0;
    for (int i = 0; i < b; i++) f[i] = 0;
    for (int p = 0; p < bp; p++) {
        int space = bp - fill;
        if (b <= space) {
            f[w] |= v[p] << fill;
            fill += b;
        } else {
            f[w] |= (v[p] >> (b - space)) << fill;
            w++;
            f[w] = v[p] & ((1u << (b - space)) - 1u);
            fill = b - space;
        }
        if (fill == bp) { w++; fill = 0; }
    }
}

void hc_repack_compact(int b, const uint32_t *padded, uint32_t *out)
{
    int bp = hc_repack_padded_bits(b);
    if (bp == b) {
        memcpy(out, padded, (size_t)b * sizeof *out);
        return;
    }
    uint32_t smask = (1u << bp) - 1u;
    for (int i = 0; i < b; i++) out[i] = 0;
    for (int s = 0; s < 32 / bp; s++) {
        uint32_t v[8], f[8];
        for (int p = 0; p < bp; p++) v[p] = (padded[p] >> (s * bp)) & smask;
        compact_slot(b, bp, v, f);
        for (int i = 0; i < b; i++) out[i] |= f[i] << (s * bp);
    }
}

/* Where value u (0..31) of a lane's group comes from and goes to (4.10). */
typedef struct {
    int b, bp, R, P, a;
    int64_t K, row_words, zp_gs;
    int n_of[32], k_of[32], word_of[32], shift_of[32];
} lane_map;

static void lane_map_init(const hc_repack_params *p, lane_map *m)
{
    m->b = p->bits;
    m->bp = hc_repack_padded_bits(p->bits);
    m->a = p->act_bits;
    m->R = 32 / p->act_bits;
    m->P = 256 / p->act_bits;
    m->K = p->K;
    m->row_words = p->K * p->bits / 32;
    m->zp_gs = p->zp ? p->K / p->zp_groups : 1;
    int nw = 32 / m->bp, gs = p->act_bits / m->bp;
    for (int u = 0; u < 32; u++) {
        int kk = u % m->R, rest = u / m->R;
        int lo = rest % 2, mid = (rest / 2) % 2, i3 = rest / 4;
        int i5 = p->transposed ? mid : lo;
        int i4 = p->transposed ? lo : mid;
        int o = u % nw;
        m->n_of[u] = 16 * i3 + 8 * i4;
        m->k_of[u] = 4 * m->R * i5 + kk;
        m->word_of[u] = u / nw;
        m->shift_of[u] = (p->native ? o : (o % m->R) * gs + o / m->R) * m->bp;
    }
}

static uint32_t fetch_code(const hc_repack_params *p, const lane_map *m,
                           const uint32_t *in_e, const uint8_t *zp_e, int64_t n, int64_t k)
{
    uint32_t v = (stream_get(in_e + n * m->row_words, k, m->b) ^ p->code_xor) &
                 ((1u << m->b) - 1u);
    if (!p->int2fp) return v;
    uint32_t z = zp_e ? zp_e[n * p->zp_groups + k / m->zp_gs] : 1u << (m->b - 1);
    return hc_int2fp_code(v, z, m->b);
}

/* Builds the b output words of one lane: rows from n0, k from k0. */
static void build_lane(const hc_repack_params *p, const lane_map *m, const uint32_t *in_e,
                       const uint8_t *zp_e, int64_t n0, int64_t k0, int lane, uint32_t *dst)
{
    uint32_t pad[8] = {0};
    int64_t nl = n0 + lane / 4, kl = k0 + (int64_t)m->R * (lane % 4);
    for (int u = 0; u < 32; u++) {
        uint32_t v = fetch_code(p, m, in_e, zp_e, nl + m->n_of[u], kl + m->k_of[u]);
        pad[m->word_of[u]] |= v << m->shift_of[u];
    }
    hc_repack_compact(m->b, pad, dst);
}

/* build_lane for widths that divide 32 (b == next_pow2(b): no straddle, no
 * compaction), inlined with b and int2fp constant: the same words, without
 * the general path's per-code branches (it was 14-19% of a verified run). */
static inline __attribute__((always_inline)) void
build_lane_fixed(const hc_repack_params *p, const lane_map *m, const uint32_t *in_e,
                 const uint8_t *zp_e, int64_t n0, int64_t k0, int lane, uint32_t *dst, int b,
                 int int2fp)
{
    uint32_t pad[8] = {0};
    const uint32_t mask = (1u << b) - 1u;
    const int64_t nl = n0 + lane / 4, kl = k0 + (int64_t)m->R * (lane % 4);
    for (int u = 0; u < 32; u++) {
        const int64_t n = nl + m->n_of[u], k = kl + m->k_of[u];
        const uint32_t *row = in_e + n * m->row_words;
        uint32_t v = ((row[(k * b) >> 5] >> ((k * b) & 31)) ^ p->code_xor) & mask;
        if (int2fp) {
            const uint32_t z = zp_e ? zp_e[n * p->zp_groups + k / m->zp_gs] : 1u << (b - 1);
            v = v >= z ? v - z : mask - v; /* hc_int2fp_code */
        }
        pad[m->word_of[u]] |= v << m->shift_of[u];
    }
    memcpy(dst, pad, (size_t)b * sizeof *dst);
}

/* 4-bit codes under 16-bit activations (the common case): a lane's 32 codes
 * are 16 byte pairs (k even, k + 1) of 8 rows. The whole per-code work of a
 * byte (XOR, 4.7 with z = 8, placing both codes) is one lookup in pair[],
 * built once per call when every pair's two slots are the same distance
 * apart (pair_delta). The same words as build_lane. */
static int pair_delta(const lane_map *m)
{
    const int d = m->shift_of[1] - m->shift_of[0];
    for (int u = 0; u < 32; u += 2)
        if (m->word_of[u] != m->word_of[u + 1] || m->shift_of[u + 1] - m->shift_of[u] != d ||
            m->k_of[u] % 2 || m->k_of[u + 1] != m->k_of[u] + 1 || m->n_of[u + 1] != m->n_of[u])
            return -1;
    return d;
}

static void pair_table(const hc_repack_params *p, int delta, uint32_t *pair)
{
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t v[2] = {((byte & 15) ^ p->code_xor) & 15, ((byte >> 4) ^ p->code_xor) & 15};
        for (int i = 0; p->int2fp && i < 2; i++) v[i] = hc_int2fp_code(v[i], 8, 4);
        pair[byte] = v[0] | v[1] << delta;
    }
}

static void build_lane_b4(const lane_map *m, const uint32_t *pair, const uint32_t *in_e,
                          int64_t n0, int64_t k0, int lane, uint32_t *dst)
{
    uint32_t pad[4] = {0};
    const int64_t nl = n0 + lane / 4, kl = k0 + 2 * (lane % 4);
    for (int u = 0; u < 32; u += 2) {
        const int64_t k = kl + m->k_of[u];
        const uint32_t *row = in_e + (nl + m->n_of[u]) * m->row_words;
        pad[m->word_of[u]] |= pair[(row[k >> 3] >> ((k & 7) * 4)) & 255] << m->shift_of[u];
    }
    memcpy(dst, pad, sizeof pad);
}

/* Output rows kb0..kb1-1 (k blocks) of expert e's tiles, each n tile through
 * all of them before the next: the input rows' cache lines are read once per
 * 8 k blocks instead of once per k block. b and int2fp are constants where
 * inlined (b = 0: the general path). */
static inline __attribute__((always_inline)) void
repack_rows(const hc_repack_params *p, const lane_map *m, const uint32_t *in_e,
            const uint8_t *zp_e, const uint32_t *pair, int64_t kb0, int64_t kb1, uint32_t *out_e,
            int b, int int2fp)
{
    const int chunks = 16 / m->a > 0 ? 16 / m->a : 1;
    const int64_t out_row = p->N * m->P * m->b / 32;
    for (int64_t nb = 0; nb < p->N / 64; nb++)
        for (int64_t kb = kb0; kb < kb1; kb++)
            for (int j = 0; j < chunks; j++)
                for (int lane = 0; lane < 32; lane++) {
                    const int64_t n0 = 64 * nb + 4 * m->a * j, k0 = kb * m->P;
                    uint32_t *dst = out_e + kb * out_row + nb * 2 * m->P * m->b +
                                    j * 32 * m->b + lane * m->b;
                    if (pair) build_lane_b4(m, pair, in_e, n0, k0, lane, dst);
                    else if (b == 0) build_lane(p, m, in_e, zp_e, n0, k0, lane, dst);
                    else build_lane_fixed(p, m, in_e, zp_e, n0, k0, lane, dst, b, int2fp);
                }
}

/* The byte-gather map of the pair path (hc_repack_internal.h) from the lane
 * map: 0 where its shape does not hold (then the pair path runs). */
static int gather_init(const hc_repack_params *p, const lane_map *m, int delta,
                       hc_tile_gather *g)
{
    static const int pos16[4] = {0, 2, 1, 3}; /* nibble j's byte in [B0 B2 B1 B3] */
    int nrows[8] = {0};
    uint8_t filled[512] = {0};
    if (delta != 4 && delta != 16) return 0;
    for (int lane = 0; lane < 32; lane++)
        for (int u = 0; u < 32; u += 2) {
            const int64_t n = lane / 4 + m->n_of[u], k = 2 * (lane % 4) + m->k_of[u];
            const int s = m->shift_of[u];
            if (n < 0 || n >= 64 || k < 0 || k >= 16 || s % (delta == 16 ? 4 : 8) || s >= 32)
                return 0;
            const int q = lane * 16 + m->word_of[u] * 4 + (delta == 16 ? pos16[s / 4] : s / 8);
            const int a = q / 64;
            int r = 0;
            while (r < nrows[a] && g->row[a][r] != n) r++;
            if (r == 8 || filled[q]) return 0;
            if (r == nrows[a]) g->row[a][nrows[a]++] = n;
            g->idx[a][q % 64] = (uint8_t)(r * 8 + k / 2);
            filled[q] = 1;
        }
    for (int a = 0; a < 8; a++)
        for (int r = nrows[a]; r < 8; r++) g->row[a][r] = 0;
    g->swap = delta == 16;
    g->plain = 1;
    for (uint32_t v = 0; v < 16; v++) {
        uint32_t t = (v ^ p->code_xor) & 15;
        if (p->int2fp) t = hc_int2fp_code(t, 8, 4);
        g->lut[v] = (uint8_t)t;
        g->plain &= t == v;
    }
    return 1;
}

static void repack_rows_any(const hc_repack_params *p, const lane_map *m, const uint32_t *in_e,
                            const uint8_t *zp_e, const uint32_t *pair, int64_t kb0, int64_t kb1,
                            uint32_t *out_e)
{
    if (pair) {
        repack_rows(p, m, in_e, zp_e, pair, kb0, kb1, out_e, 4, 0);
        return;
    }
    switch (m->b * 2 + (p->int2fp != 0)) {
    case 8: repack_rows(p, m, in_e, zp_e, NULL, kb0, kb1, out_e, 4, 0); break;
    case 9: repack_rows(p, m, in_e, zp_e, NULL, kb0, kb1, out_e, 4, 1); break;
    case 16: repack_rows(p, m, in_e, zp_e, NULL, kb0, kb1, out_e, 8, 0); break;
    case 17: repack_rows(p, m, in_e, zp_e, NULL, kb0, kb1, out_e, 8, 1); break;
    default: repack_rows(p, m, in_e, zp_e, NULL, kb0, kb1, out_e, 0, 0); break;
    }
}

static hc_status check_params(const hc_repack_params *p, hc_error *err)
{
    int a = p->act_bits, b = p->bits;
    if (a != 16 && a != 8 && a != 4)
        HC_FAIL(err, HC_ERR_ARG, "repack: activation bits %d not 16, 8 or 4", a);
    if (b < 1 || b > 8 || hc_repack_padded_bits(b) > a)
        HC_FAIL(err, HC_ERR_ARG, "repack: %d-bit weights with %d-bit activations", b, a);
    if (p->E < 1 || p->N <= 0 || p->N % 64 || p->K <= 0 || p->K % (512 / a))
        HC_FAIL(err, HC_ERR_ARG, "repack: E=%lld N=%lld K=%lld (need N %% 64 == 0, K %% %d == 0)",
                (long long)p->E, (long long)p->N, (long long)p->K, 512 / a);
    if (p->zp && (p->zp_groups <= 0 || p->K % p->zp_groups))
        HC_FAIL(err, HC_ERR_ARG, "repack: %lld zero-point groups do not divide K=%lld",
                (long long)p->zp_groups, (long long)p->K);
    return HC_OK;
}

hc_status hc_repack_weight(const hc_repack_params *p, const uint32_t *in, uint32_t *out,
                           hc_error *err)
{
    HC_TRY(check_params(p, err));
    lane_map m;
    lane_map_init(p, &m);
    const int64_t kblocks = p->K / m.P, out_row = p->N * m.P * m.b / 32;
    const int64_t E = p->E, N = p->N;
    uint32_t pair_lut[256];
    const int delta = m.b == 4 && m.a == 16 && p->zp == NULL ? pair_delta(&m) : -1;
    if (delta >= 0) pair_table(p, delta, pair_lut);
    const uint32_t *pair = delta >= 0 ? pair_lut : NULL;
    hc_tile_gather gather_map;
    int level = p->portable == 1 ? 0 : hc_tile_gather_available();
    if (p->portable == 2 && level > 1) level = 1;
    const hc_tile_gather *gather =
        pair && level && gather_init(p, &m, delta, &gather_map) ? &gather_map : NULL;
    if (gather) { /* spans of 8 n tiles */
        const int64_t spans = (N / 64 + 7) / 8;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * p->K))
        for (int64_t e = 0; e < E; e++)
            for (int64_t sp = 0; sp < spans; sp++)
                hc_tile_gather_rows(gather, level, in + e * N * m.row_words, m.row_words, 8 * sp,
                                    8 * sp + 8 < N / 64 ? 8 * sp + 8 : N / 64, kblocks, out_row,
                                    out + e * kblocks * out_row);
        return HC_OK;
    }
    const int64_t blocks = (kblocks + 7) / 8;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * p->K))
    for (int64_t e = 0; e < E; e++)
        for (int64_t kbb = 0; kbb < blocks; kbb++)
            repack_rows_any(p, &m, in + e * N * m.row_words,
                            p->zp ? p->zp + e * N * p->zp_groups : NULL, pair, 8 * kbb,
                            8 * kbb + 8 < kblocks ? 8 * kbb + 8 : kblocks,
                            out + e * kblocks * out_row);
    return HC_OK;
}
