/* hc_format.h - the number formats: one table of traits indexed by hc_format_id.
 *
 * Each row describes what a code means (integer, float eXmY, scale formats);
 * codecs (hc_format_encode/decode) are driven by the row. Execution choices
 * (layouts, kernels) live elsewhere and only read this table. Adding a format
 * is one X-macro line plus, if it needs one, a codec case. */
#ifndef HC_FORMAT_H
#define HC_FORMAT_H

#include <stdint.h>

typedef enum {
    HC_KIND_UINT,  /* unsigned integer code 0 .. 2^b-1 */
    HC_KIND_INT,   /* two's-complement integer code */
    HC_KIND_FLOAT  /* sign? + E exponent bits + M mantissa bits */
} hc_format_kind;

typedef enum {
    HC_SPECIAL_NONE, /* every code is a finite number (Humming's eXmY weights) */
    HC_SPECIAL_IEEE, /* all-ones exponent: Inf (mantissa 0) or NaN */
    HC_SPECIAL_FN,   /* no Inf; all-ones exponent and mantissa is NaN (E4M3FN, E3M4) */
    HC_SPECIAL_E8M0  /* unsigned power of two 2^(x-127); 0xFF is NaN */
} hc_format_specials;

/* X(id, name, kind, bits, exp_bits, man_bits, is_signed, specials, bias, max, min_pos)
 * bias: floats 2^(E-1)-1 (127 for e8m0); uint: implicit symmetric zero 2^(b-1).
 * max: largest finite magnitude (integers: the quantizer range 2^(b-1)-1).
 * min_pos: smallest positive value (subnormal for floats; 1 for integers).
 * The last three are derivable; tests check them against the formulas.
 * Floats: every signed floatNeXmY with 1 <= E and E + M <= 7, plus the wider
 * scale formats. float8e3m4 is FN (max 30, 0x7F NaN) because Humming's weight
 * and activation quantizers treat it so. */
#define HC_FORMAT_LIST(X)                                                        \
    X(UINT1, "uint1", HC_KIND_UINT, 1, 0, 0, 0, HC_SPECIAL_NONE, 1, 0x0.0p+0, 0x1.0000000000000p+0) \
    X(UINT2, "uint2", HC_KIND_UINT, 2, 0, 0, 0, HC_SPECIAL_NONE, 2, 0x1.0000000000000p+0, 0x1.0000000000000p+0) \
    X(UINT3, "uint3", HC_KIND_UINT, 3, 0, 0, 0, HC_SPECIAL_NONE, 4, 0x1.8000000000000p+1, 0x1.0000000000000p+0) \
    X(UINT4, "uint4", HC_KIND_UINT, 4, 0, 0, 0, HC_SPECIAL_NONE, 8, 0x1.c000000000000p+2, 0x1.0000000000000p+0) \
    X(UINT5, "uint5", HC_KIND_UINT, 5, 0, 0, 0, HC_SPECIAL_NONE, 16, 0x1.e000000000000p+3, 0x1.0000000000000p+0) \
    X(UINT6, "uint6", HC_KIND_UINT, 6, 0, 0, 0, HC_SPECIAL_NONE, 32, 0x1.f000000000000p+4, 0x1.0000000000000p+0) \
    X(UINT7, "uint7", HC_KIND_UINT, 7, 0, 0, 0, HC_SPECIAL_NONE, 64, 0x1.f800000000000p+5, 0x1.0000000000000p+0) \
    X(UINT8, "uint8", HC_KIND_UINT, 8, 0, 0, 0, HC_SPECIAL_NONE, 128, 0x1.fc00000000000p+6, 0x1.0000000000000p+0) \
    X(INT2, "int2", HC_KIND_INT, 2, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.0000000000000p+0, 0x1.0000000000000p+0) \
    X(INT3, "int3", HC_KIND_INT, 3, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.8000000000000p+1, 0x1.0000000000000p+0) \
    X(INT4, "int4", HC_KIND_INT, 4, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.c000000000000p+2, 0x1.0000000000000p+0) \
    X(INT5, "int5", HC_KIND_INT, 5, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.e000000000000p+3, 0x1.0000000000000p+0) \
    X(INT6, "int6", HC_KIND_INT, 6, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.f000000000000p+4, 0x1.0000000000000p+0) \
    X(INT7, "int7", HC_KIND_INT, 7, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.f800000000000p+5, 0x1.0000000000000p+0) \
    X(INT8, "int8", HC_KIND_INT, 8, 0, 0, 1, HC_SPECIAL_NONE, 0, 0x1.fc00000000000p+6, 0x1.0000000000000p+0) \
    X(F2E1M0, "float2e1m0", HC_KIND_FLOAT, 2, 1, 0, 1, HC_SPECIAL_NONE, 0, 0x1.0000000000000p+1, 0x1.0000000000000p+1) \
    X(F3E1M1, "float3e1m1", HC_KIND_FLOAT, 3, 1, 1, 1, HC_SPECIAL_NONE, 0, 0x1.8000000000000p+1, 0x1.0000000000000p+0) \
    X(F3E2M0, "float3e2m0", HC_KIND_FLOAT, 3, 2, 0, 1, HC_SPECIAL_NONE, 1, 0x1.0000000000000p+2, 0x1.0000000000000p+0) \
    X(F4E1M2, "float4e1m2", HC_KIND_FLOAT, 4, 1, 2, 1, HC_SPECIAL_NONE, 0, 0x1.c000000000000p+1, 0x1.0000000000000p-1) \
    X(F4E2M1, "float4e2m1", HC_KIND_FLOAT, 4, 2, 1, 1, HC_SPECIAL_NONE, 1, 0x1.8000000000000p+2, 0x1.0000000000000p-1) \
    X(F4E3M0, "float4e3m0", HC_KIND_FLOAT, 4, 3, 0, 1, HC_SPECIAL_NONE, 3, 0x1.0000000000000p+4, 0x1.0000000000000p-2) \
    X(F5E1M3, "float5e1m3", HC_KIND_FLOAT, 5, 1, 3, 1, HC_SPECIAL_NONE, 0, 0x1.e000000000000p+1, 0x1.0000000000000p-2) \
    X(F5E2M2, "float5e2m2", HC_KIND_FLOAT, 5, 2, 2, 1, HC_SPECIAL_NONE, 1, 0x1.c000000000000p+2, 0x1.0000000000000p-2) \
    X(F5E3M1, "float5e3m1", HC_KIND_FLOAT, 5, 3, 1, 1, HC_SPECIAL_NONE, 3, 0x1.8000000000000p+4, 0x1.0000000000000p-3) \
    X(F5E4M0, "float5e4m0", HC_KIND_FLOAT, 5, 4, 0, 1, HC_SPECIAL_NONE, 7, 0x1.0000000000000p+8, 0x1.0000000000000p-6) \
    X(F6E1M4, "float6e1m4", HC_KIND_FLOAT, 6, 1, 4, 1, HC_SPECIAL_NONE, 0, 0x1.f000000000000p+1, 0x1.0000000000000p-3) \
    X(F6E2M3, "float6e2m3", HC_KIND_FLOAT, 6, 2, 3, 1, HC_SPECIAL_NONE, 1, 0x1.e000000000000p+2, 0x1.0000000000000p-3) \
    X(F6E3M2, "float6e3m2", HC_KIND_FLOAT, 6, 3, 2, 1, HC_SPECIAL_NONE, 3, 0x1.c000000000000p+4, 0x1.0000000000000p-4) \
    X(F6E4M1, "float6e4m1", HC_KIND_FLOAT, 6, 4, 1, 1, HC_SPECIAL_NONE, 7, 0x1.8000000000000p+8, 0x1.0000000000000p-7) \
    X(F6E5M0, "float6e5m0", HC_KIND_FLOAT, 6, 5, 0, 1, HC_SPECIAL_NONE, 15, 0x1.0000000000000p+16, 0x1.0000000000000p-14) \
    X(F7E1M5, "float7e1m5", HC_KIND_FLOAT, 7, 1, 5, 1, HC_SPECIAL_NONE, 0, 0x1.f800000000000p+1, 0x1.0000000000000p-4) \
    X(F7E2M4, "float7e2m4", HC_KIND_FLOAT, 7, 2, 4, 1, HC_SPECIAL_NONE, 1, 0x1.f000000000000p+2, 0x1.0000000000000p-4) \
    X(F7E3M3, "float7e3m3", HC_KIND_FLOAT, 7, 3, 3, 1, HC_SPECIAL_NONE, 3, 0x1.e000000000000p+4, 0x1.0000000000000p-5) \
    X(F7E4M2, "float7e4m2", HC_KIND_FLOAT, 7, 4, 2, 1, HC_SPECIAL_NONE, 7, 0x1.c000000000000p+8, 0x1.0000000000000p-8) \
    X(F7E5M1, "float7e5m1", HC_KIND_FLOAT, 7, 5, 1, 1, HC_SPECIAL_NONE, 15, 0x1.8000000000000p+16, 0x1.0000000000000p-15) \
    X(F7E6M0, "float7e6m0", HC_KIND_FLOAT, 7, 6, 0, 1, HC_SPECIAL_NONE, 31, 0x1.0000000000000p+32, 0x1.0000000000000p-30) \
    X(F8E1M6, "float8e1m6", HC_KIND_FLOAT, 8, 1, 6, 1, HC_SPECIAL_NONE, 0, 0x1.fc00000000000p+1, 0x1.0000000000000p-5) \
    X(F8E2M5, "float8e2m5", HC_KIND_FLOAT, 8, 2, 5, 1, HC_SPECIAL_NONE, 1, 0x1.f800000000000p+2, 0x1.0000000000000p-5) \
    X(F8E3M4, "float8e3m4", HC_KIND_FLOAT, 8, 3, 4, 1, HC_SPECIAL_FN, 3, 0x1.e000000000000p+4, 0x1.0000000000000p-6) \
    X(F8E4M3, "float8e4m3", HC_KIND_FLOAT, 8, 4, 3, 1, HC_SPECIAL_FN, 7, 0x1.c000000000000p+8, 0x1.0000000000000p-9) \
    X(F8E5M2, "float8e5m2", HC_KIND_FLOAT, 8, 5, 2, 1, HC_SPECIAL_IEEE, 15, 0x1.c000000000000p+15, 0x1.0000000000000p-16) \
    X(F8E6M1, "float8e6m1", HC_KIND_FLOAT, 8, 6, 1, 1, HC_SPECIAL_NONE, 31, 0x1.8000000000000p+32, 0x1.0000000000000p-31) \
    X(F8E7M0, "float8e7m0", HC_KIND_FLOAT, 8, 7, 0, 1, HC_SPECIAL_NONE, 63, 0x1.0000000000000p+64, 0x1.0000000000000p-62) \
    X(F8E8M0, "float8e8m0", HC_KIND_FLOAT, 8, 8, 0, 0, HC_SPECIAL_E8M0, 127, 0x1.0000000000000p+127, 0x1.0000000000000p-127) \
    X(F16, "float16", HC_KIND_FLOAT, 16, 5, 10, 1, HC_SPECIAL_IEEE, 15, 0x1.ffc0000000000p+15, 0x1.0000000000000p-24) \
    X(BF16, "bfloat16", HC_KIND_FLOAT, 16, 8, 7, 1, HC_SPECIAL_IEEE, 127, 0x1.fe00000000000p+127, 0x1.0000000000000p-133) \
    X(F32, "float32", HC_KIND_FLOAT, 32, 8, 23, 1, HC_SPECIAL_IEEE, 127, 0x1.fffffe0000000p+127, 0x1.0000000000000p-149)

typedef enum {
#define HC_FORMAT_ENUM_(id, ...) HC_FMT_##id,
    HC_FORMAT_LIST(HC_FORMAT_ENUM_)
#undef HC_FORMAT_ENUM_
    HC_FMT_COUNT
} hc_format_id;

typedef struct {
    const char *name;          /* canonical lower-case name, e.g. "float4e2m1" */
    hc_format_kind kind;
    int bits;                  /* bits of one code */
    int exp_bits, man_bits;    /* floats only */
    int is_signed;
    hc_format_specials specials;
    int bias;                  /* floats: exponent bias 2^(E-1)-1 (127 for e8m0);
                                  uint: implicit symmetric zero 2^(b-1); int: 0 */
    double max_value;          /* largest finite magnitude; for integers the
                                  quantizer's range 2^(b-1)-1, as Humming uses */
    double min_subnormal;      /* smallest positive value (floats), 1 for ints */
} hc_format_info;

/* Roles a format takes in a layer (hc_format_role_info.roles). */
enum {
    HC_FROLE_WEIGHT = 1, /* weight codes: integers and signed floats of at most 8 bits */
    HC_FROLE_SCALE = 2,  /* group / channel / block scales */
    HC_FROLE_ACT = 4,    /* activations (16-bit, or quantized per token by the kernel) */
    HC_FROLE_ZERO = 8    /* zero points: uint codes, or 16-bit floats */
};

/* A format's roles and the parameters of each. Activations quantized per
 * token use the scale s = max(amax / act_max, 1e-30), act_max the format's
 * largest value (448, 127, ...), as humming-kernels 0.1.19 computes it; 0
 * for 16-bit activations, which are not quantized. act_bound: the relative
 * error of one quantized activation, worst case, that verification allows
 * for. */
typedef struct {
    unsigned roles;
    float act_max;
    double act_bound;
} hc_format_role_info;

/* Roles of id (all 0 for an id outside the table). */
hc_format_role_info hc_format_role(hc_format_id id);

/* Traits of a format; NULL for an id outside the table. Static storage. */
const hc_format_info *hc_format_get(hc_format_id id);

/* Parses a format name: canonical names, "floatN_eXmY", torch-style names with
 * fn/fnu suffixes ("float8_e4m3fn", "float8_e8m0fnu"), and the aliases
 * "half", "fp16", "bf16", "e8m0", "ue8m0". Returns 0 and sets *out, or -1. */
int hc_format_parse(const char *name, hc_format_id *out);

/* Exact value of a code (low `bits` bits of `code` are used). Integers give
 * their plain value (uint: 0..2^b-1, int: two's complement); NaN codes give NaN,
 * IEEE Inf codes give +-Inf. Every finite code of every format is exactly
 * representable in a double. */
double hc_format_decode(hc_format_id id, uint32_t code);

/* Nearest code to x, round half to even, as a PyTorch/ml_dtypes cast does.
 * Out-of-range: HC_SPECIAL_NONE floats and integers saturate to the largest
 * magnitude; IEEE gives Inf past the rounding boundary; FN gives NaN past it
 * (float8e4m3: |x| > 464 -> 0x7F with sign); E8M0 rounds as PyTorch's
 * float8_e8m0fnu cast (see hc_e8m0_encode_round). NaN maps to the format's NaN
 * code (or 0 for formats without one). Signed zero is kept for signed floats. */
uint32_t hc_format_encode(hc_format_id id, float x);

/* Humming's quant-kernel e8m0 encoder: the exponent field of
 * (float32 bits of x) + 0x7FFFFF, i.e. |x| rounded up to a power of two, sign
 * dropped (2^127 < |x| and Inf -> 0xFF; 0 and NaN -> 0; float32 subnormals
 * -> 1). */
uint8_t hc_e8m0_encode_ceil(float x);
/* PyTorch float8_e8m0fnu cast: exponent field, +1 when mantissa >= 0.5
 * (normal) or > 0.5 (subnormal); NaN/Inf -> 0xFF; sign ignored. */
uint8_t hc_e8m0_encode_round(float x);

/* Half / bfloat16 <-> float32 conversions (RNE), used everywhere scales and
 * activations are read or written. */
float hc_f16_to_f32(uint16_t h);
uint16_t hc_f32_to_f16(float f);
float hc_bf16_to_f32(uint16_t h);
uint16_t hc_f32_to_bf16(float f);

/* Bulk, exact conversions of n 16-bit values at src (any alignment) to
 * float32. The fp16 one uses the CPU's F16C instructions when present. */
void hc_f16_to_f32_array(const void *src, float *dst, int64_t n);
/* The implementation hc_f16_to_f32_array picks (F16C where the CPU has it),
 * for callers converting many short runs: the CPU check (a CPUID
 * instruction, slow in a virtual machine) is then made once. */
typedef void (*hc_f16_array_fn)(const void *src, float *dst, int64_t n);
hc_f16_array_fn hc_f16_to_f32_array_impl(void);
void hc_bf16_to_f32_array(const void *src, float *dst, int64_t n);

/* Block schemes: a group of `group_size` consecutive elements along K shares
 * one scale of `scale_format`; NV adds one float32 global scale per tensor. */
typedef enum { HC_BLOCK_MX, HC_BLOCK_NV, HC_BLOCK_COUNT } hc_block_scheme_id;

typedef struct {
    const char *name;            /* "mx", "nv" */
    int group_size;              /* 32, 16 */
    hc_format_id scale_format;   /* F8E8M0, F8E4M3 */
    int has_global_scale;        /* NV: 1 */
} hc_block_scheme;

const hc_block_scheme *hc_block_scheme_get(hc_block_scheme_id id);

#endif
