/* test_conv_energy.c - the row sums of squares a float layer's row source
 * takes as the quantizer reads its rows (hc_conv_row_source.row_energy) are
 * the doubles the verifier computes when it reads the source itself, in
 * parts of 1024 columns (hc_conv_source_row_part, hc_verify_row_energy_part)
 * or in the portable form: float16, bfloat16 and float32 tensors, dense and
 * per-expert stacks, K around the lanes and parts, rows read in any order
 * and more than once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "hc_conv_source.h"
#include "hc_format.h"
#include "hc_verify.h"

static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* n random elements of dtype dt (magnitudes over several binades, some zeros). */
static void *random_tensor(hc_dtype dt, int64_t n, uint64_t seed)
{
    const size_t es = dt == HC_DT_F32 ? 4 : 2;
    unsigned char *b = malloc((size_t)n * es);
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        float v = ((float)(next(&seed) % 20001) - 10000.0f) / 1000.0f;
        v = next(&seed) % 7 == 0 ? 0.0f : v * (float)(1 << next(&seed) % 6);
        uint16_t h = dt == HC_DT_BF16 ? hc_f32_to_bf16(v) : hc_f32_to_f16(v);
        if (dt == HC_DT_F32) memcpy(b + 4 * i, &v, 4);
        else memcpy(b + 2 * i, &h, 2);
    }
    return b;
}

/* The verifier's own reading of row r: parts of 1024 columns, lanes carried. */
static double energy_by_parts(hc_conv_row_source *rs, int64_t r, int64_t K, int portable)
{
    float part[1024];
    double l[8] = {0};
    for (int64_t k0 = 0; k0 < K; k0 += 1024) {
        const int64_t k1 = K - k0 < 1024 ? K : k0 + 1024;
        hc_conv_source_row_part(rs, r, k0, k1, part);
        hc_verify_row_energy_part(part, k1 - k0, l, portable);
    }
    return hc_verify_lanes_total(l);
}

/* Reads every row of L (E experts of N x K) through the quantizer's row
 * function, last row first and row 0 twice, and compares the energies. */
static void check_layer(const hc_conv_layer *L, int64_t rows, int64_t K)
{
    hc_conv_row_source rs;
    hc_conv_row_source_init(L, &rs);
    rs.row_energy = malloc((size_t)rows * sizeof *rs.row_energy);
    float *buf = malloc((size_t)K * sizeof *buf);
    assert_true(rs.row_energy && buf);
    for (int64_t r = 0; r < rows; r++) rs.row_energy[r] = -1;
    for (int64_t r = rows - 1; r >= 0; r--) hc_conv_source_row(&rs, r, buf);
    hc_conv_source_row(&rs, 0, buf);
    for (int64_t r = 0; r < rows; r++)
        for (int portable = 0; portable < 2; portable++) {
            const double want = energy_by_parts(&rs, r, K, portable);
            assert_memory_equal(&want, &rs.row_energy[r], sizeof want);
        }
    free(rs.row_energy);
    free(buf);
}

static void test_row_energy_as_verifier(void **state)
{
    (void)state;
    static const hc_dtype dts[] = {HC_DT_F16, HC_DT_BF16, HC_DT_F32};
    static const int64_t Ks[] = {1, 7, 8, 1023, 1024, 1031, 3000, 4096};
    for (size_t d = 0; d < 3; d++)
        for (size_t i = 0; i < sizeof Ks / sizeof Ks[0]; i++) {
            const int64_t N = 5, K = Ks[i], E = 3;
            /* dense (N, K), a fused stack (E, N, K), experts (N, K) each */
            void *w = random_tensor(dts[d], E * N * K, 11 + i);
            hc_st_tensor dense = {.dtype = dts[d], .ndim = 2, .shape = {N, K}, .data = w,
                                  .nbytes = (size_t)(N * K) * (dts[d] == HC_DT_F32 ? 4 : 2)};
            hc_st_tensor fused = dense, ex[3];
            fused.ndim = 3;
            fused.shape[0] = E;
            fused.shape[1] = N;
            fused.shape[2] = K;
            fused.nbytes *= E;
            const hc_st_tensor *exp[3] = {&ex[0], &ex[1], &ex[2]};
            for (int e = 0; e < E; e++) {
                ex[e] = dense;
                ex[e].data = (const unsigned char *)w + (size_t)e * dense.nbytes;
            }
            hc_conv_layer L;
            memset(&L, 0, sizeof L);
            L.kind = HC_SRC_FLOAT;
            L.pre[HC_ROLE_WEIGHT] = &dense;
            check_layer(&L, N, K);
            L.pre[HC_ROLE_WEIGHT] = &fused;
            check_layer(&L, E * N, K);
            L.pre[HC_ROLE_WEIGHT] = NULL;
            L.experts = exp;
            L.n_experts = E;
            check_layer(&L, E * N, K);
            free(w);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_energy_as_verifier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
