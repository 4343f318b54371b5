/* hc_half.c - float16 / bfloat16 <-> float32, round to nearest even. */
#include "hc_format.h"

#include <string.h>

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float hc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (man << 13));
    if (exp == 0) {
        /* subnormal: man * 2^-24, exact in float32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t hc_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t exp = (u >> 23) & 0xFF, man = u & 0x7FFFFF;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00 | (man ? 0x200 | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1F) return sign | 0x7C00;
    if (e <= 0) {
        if (e < -10) return sign; /* below half the smallest subnormal */
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t out = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (out & 1))) out++; /* may carry into Inf: correct */
    return (uint16_t)(sign | out);
}

float hc_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

uint16_t hc_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7FFFFFFF) > 0x7F800000) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    uint32_t lsb = (u >> 16) & 1;
    return (uint16_t)((u + 0x7FFF + lsb) >> 16);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

/* F16C from CPUID leaf 1: clang (make fuzz-build) has no __builtin_cpu_supports("f16c"). */
static int have_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

/* vcvtph2ps is exact (every half is a float); only used where the CPU has it. */
__attribute__((target("avx,f16c"))) static void f16_array_f16c(const void *p, float *dst,
                                                                int64_t n)
{
    const unsigned char *src = p;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + 2 * i))));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        dst[i] = hc_f16_to_f32(h);
    }
}
#endif

static void f16_array_plain(const void *src, float *dst, int64_t n)
{
    const unsigned char *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = hc_f16_to_f32(h);
    }
}

hc_f16_array_fn hc_f16_to_f32_array_impl(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx") && have_f16c()) return f16_array_f16c; /* avx: OS-enabled */
#endif
    return f16_array_plain;
}

void hc_f16_to_f32_array(const void *src, float *dst, int64_t n)
{
    hc_f16_to_f32_array_impl()(src, dst, n);
}

void hc_bf16_to_f32_array(const void *src, float *dst, int64_t n)
{
    const unsigned char *p = src;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        dst[i] = hc_bf16_to_f32(h);
    }
}
