/* hc_repack.c - tile repack of row-packed weight codes (see hc_repack.h).
 *
 * Fast path: the inverse formulation of spec 4.10 - for every output lane,
 * gather its 32 codes, place them in the padded slots, compact. Every output
 * row (expert, k block) is independent, so rows run in parallel. */
#include "hc_repack.h"
#include "hc_parallel.h"

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
    const int chunks = 16 / m.a > 0 ? 16 / m.a : 1;
    const int64_t E = p->E, N = p->N;
#pragma omp parallel for collapse(2) schedule(static) if (HC_PARALLEL(E * N * p->K))
    for (int64_t e = 0; e < E; e++) {
        for (int64_t kb = 0; kb < kblocks; kb++) {
            const uint32_t *in_e = in + e * N * m.row_words;
            const uint8_t *zp_e = p->zp ? p->zp + e * N * p->zp_groups : NULL;
            uint32_t *row = out + (e * kblocks + kb) * out_row;
            for (int64_t nb = 0; nb < N / 64; nb++)
                for (int j = 0; j < chunks; j++)
                    for (int lane = 0; lane < 32; lane++)
                        build_lane(p, &m, in_e, zp_e, 64 * nb + 4 * m.a * j, kb * m.P, lane,
                                   row + nb * 2 * m.P * m.b + j * 32 * m.b + lane * m.b);
        }
    }
    return HC_OK;
}
