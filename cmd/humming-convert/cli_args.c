/* cli_args.c - command-line parsing and resolution into conversion options. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hc_gpu_detect.h"
#include "hc_model_config.h"
#include "hc_recipe.h"
#include "hc_verify.h"
#include "hc_version.h"

void cli_usage(FILE *out)
{
    fprintf(out,
            "usage: humming-convert IN_DIR OUT_DIR [options]\n"
            "       humming-convert report OUT_DIR [--input IN_DIR] [verification options]\n"
            "       humming-convert check OUT_DIR\n"
            "       humming-convert --list-formats [--arch SM]\n"
            "\n"
            "Quantizes a float checkpoint, or repacks an already quantized one, into a\n"
            "Humming checkpoint that vLLM serves (canonical layout, quant_method humming),\n"
            "or into the kernel-ready tile layout of the Humming GEMM kernels.\n"
            "\n"
            "target (float checkpoints):\n"
            "  --format PRESET      w4a16 w8a16 w4a8 w4a8-int8 w8a8 w8a8-int8 w4a4 mxfp4\n"
            "                       mxfp4-a8 mxint4 nvfp4 fp8 ... (see --list-formats)\n"
            "  --weight-dtype D     uint4 int8 float8e4m3 float4e2m1 ... (any format-table name)\n"
            "  --group-size G       power of two, 0 or channel, tensor\n"
            "  --scale-dtype D      float16 bfloat16 float8e4m3 float8e5m2 float8e8m0 float32\n"
            "  --zero-point Z       int, float or none\n"
            "  --global-scale S     second scale: tensor (float32 per tensor, NVFP4's), channel\n"
            "                       (one per output row, in the model dtype) or none\n"
            "  --quantizer Q        rtn (default; Humming's rounding) or mse (clip search)\n"
            "  --recipe FILE        per-layer YAML recipe (docs/recipes.md)\n"
            "quantized checkpoints (GPTQ, AWQ, compressed-tensors, ModelOpt, MXFP4, FP8,\n"
            "AutoRound, Quark):\n"
            "  repacked losslessly by default; a target above requantizes (docs/checkpoints.md)\n"
            "  --act-order MODE     act-order (desc_act / g_idx) layers: refuse (default),\n"
            "                       permute (writes P.input_perm) or requant\n"
            "common:\n"
            "  --layout L           canonical (default: Humming's pre-repack checkpoint, what\n"
            "                       stock vLLM 0.33 loads) or tiles (the tensors Humming\n"
            "                       builds from it at load, as vLLM 0.33 holds them)\n"
            "  --humming-version V  tiles: the humming-kernels release whose tensors are\n"
            "                       written: 0.1.19 (default, the one vLLM 0.33 pins) or\n"
            "                       0.1.20 (the same tensors; some layers refused)\n"
            "  --arch SM            sm75 sm80 sm86 sm89 sm90 sm100 sm120\n"
            "                       (default: the recipe's, else the local GPU, else sm90)\n"
            "  --activation DTYPE   float16 bfloat16 float8e4m3 float8e5m2 int8 int4\n"
            "  --max-shard-size N   output shard size limit, bytes or K/M/G (default 4G)\n"
            "  --force              replace OUT_DIR if it exists (and discard OUT_DIR.partial)\n"
            "  --no-input-crc       manifest: no CRC of the input weight files (saves the\n"
            "                       CRC work over the input; sizes and mtimes are kept)\n"
            "  --resume             finish an interrupted run from OUT_DIR.partial\n"
            "  --dry-run            print the per-layer plan, write nothing\n"

            "verification:\n"
            "  --verify MODE        auto gpu cpu off: check every converted layer with a\n"
            "                       reference GEMM (default auto: GPU if present, else CPU)\n"
            "  --verify-tokens M    activation rows per layer (default 16)\n"
            "  --calib FILE         safetensors with activations keyed by layer name\n"
            "  --allow-degraded     layers over their error bound do not fail the run\n"
            "  --input IN_DIR       (report) the source; default: the one in the report\n"
            "other:\n"
            "  -q, --quiet          no progress output (warnings still printed)\n"
            "  -h, --help, --version\n"
            "exit codes: 0 ok, 1 failure, 2 usage, 3 a layer failed verification\n");
}

static const char *const field_flags[][2] = {
    {"--weight-dtype", "weight_dtype"}, {"--group-size", "group_size"},
    {"--scale-dtype", "scale_dtype"},   {"--zero-point", "zero_point"},
    {"--quantizer", "quantizer"},       {"--group-size-n", "group_size_n"},
    {"--global-scale", "global_scale"},
};

/* Returns the address where the value of option s goes, or NULL for a flag. */
static const char **value_slot(cli_args *a, const char *s, int *is_option)
{
    *is_option = 1;
    if (!strcmp(s, "--arch")) return &a->arch;
    if (!strcmp(s, "--activation")) return &a->activation;
    if (!strcmp(s, "--max-shard-size")) return &a->shard_size;
    if (!strcmp(s, "--format")) return &a->format;
    if (!strcmp(s, "--recipe")) return &a->recipe_path;
    if (!strcmp(s, "--verify")) return &a->verify;
    if (!strcmp(s, "--verify-tokens")) return &a->tokens;
    if (!strcmp(s, "--calib")) return &a->opts.calib_path;
    if (!strcmp(s, "--input")) return &a->input;
    if (!strcmp(s, "--act-order")) return &a->act_order;
    if (!strcmp(s, "--layout")) return &a->layout;
    if (!strcmp(s, "--humming-version")) return &a->opts.humming_version;
    for (size_t i = 0; i < sizeof field_flags / sizeof field_flags[0]; i++)
        if (!strcmp(s, field_flags[i][0]) && a->n_fields < 16) {
            a->fields[a->n_fields].key = field_flags[i][1];
            return &a->fields[a->n_fields++].value;
        }
    *is_option = 0;
    return NULL;
}

static int set_flag(cli_args *a, const char *s)
{
    if (!strcmp(s, "--force")) a->opts.force = 1;
    else if (!strcmp(s, "--resume")) a->opts.resume = 1;
    else if (!strcmp(s, "--dry-run")) a->opts.dry_run = 1;
    else if (!strcmp(s, "--list-formats")) a->list_formats = 1;
    else if (!strcmp(s, "--allow-degraded")) a->opts.allow_degraded = 1;
    else if (!strcmp(s, "--no-input-crc")) a->opts.no_input_crc = 1;
    else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) a->quiet = 1;
    else return 0;
    return 1;
}

/* One argument at argv[*i] (an option consumes the next one too). */
static int parse_one(int argc, char **argv, int *i, cli_args *a, const char **pos, int *npos,
                     hc_error *err)
{
    const char *s = argv[*i];
    int is_option = 0;
    if (!strcmp(s, "-h") || !strcmp(s, "--help")) { cli_usage(stdout); return 1; }
    if (!strcmp(s, "--version")) { printf("humming-convert %s\n", HC_VERSION); return 1; }
    if (set_flag(a, s)) return 0;
    const char **slot = value_slot(a, s, &is_option);
    if (is_option) {
        if (slot == NULL)
            return hc_error_set(err, HC_ERR_ARG, "%s: at most 16 field flags (--weight-dtype, "
                                "--group-size, ...) may be given", s), -1;
        if (++*i >= argc) return hc_error_set(err, HC_ERR_ARG, "%s needs a value", s), -1;
        *slot = argv[*i];
    } else if (s[0] == '-' && s[1] != '\0') {
        hc_error_set(err, HC_ERR_ARG, "unknown option %.200s (see --help)", s);
        return -1;
    } else if (*npos < 2) {
        pos[(*npos)++] = s;
    } else {
        hc_error_set(err, HC_ERR_ARG, "unexpected argument %.200s (see --help)", s);
        return -1;
    }
    return 0;
}

int cli_parse_args(int argc, char **argv, cli_args *a, hc_error *err)
{
    const char *pos[2] = {NULL, NULL};
    int npos = 0, first = 1;
    if (argc > 1 && !strcmp(argv[1], "report")) a->report = 1, first = 2;
    if (argc > 1 && !strcmp(argv[1], "check")) {
        if (argc != 3 || argv[2][0] == '-')
            return hc_error_set(err, HC_ERR_ARG, "check needs exactly OUT_DIR (see --help)"), -1;
        a->check = 1;
        a->opts.out_dir = argv[2];
        return 0;
    }
    for (int i = first; i < argc; i++) {
        int r = parse_one(argc, argv, &i, a, pos, &npos, err);
        if (r != 0) return r;
    }
    if (a->report) {
        if (npos != 1)
            return hc_error_set(err, HC_ERR_ARG, "report needs exactly OUT_DIR (see --help)"), -1;
        a->opts.in_dir = a->input;
        a->opts.out_dir = pos[0];
        return 0;
    }
    if (npos != 2 && !(a->list_formats && npos == 0))
        return hc_error_set(err, HC_ERR_ARG, "need IN_DIR and OUT_DIR (see --help)"), -1;
    a->opts.in_dir = pos[0];
    a->opts.out_dir = pos[1];
    return 0;
}

/* Largest --max-shard-size: 1 PiB (a bigger shard is a typo, not a plan). */
#define MAX_SHARD_SIZE (1LL << 50)

/* "500M", "5GB", "5GiB", "64K", "1.5G", "4096": a whole number of bytes in
 * 1..2^50, digits only (no sign, exponent, hex, nan or inf), up to 3 decimals
 * where the suffix makes them whole bytes. NULL, or why not. Integer
 * arithmetic only: no float-to-int cast. */
static const char *parse_size(const char *s, int64_t *out)
{
    int64_t whole = 0, frac = 0, scale = 1, mult = 1;
    const char *p = s;
    if (*p < '0' || *p > '9') return "expected digits";
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > MAX_SHARD_SIZE) return "too large (at most 1P = 2^50 bytes)";
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++) {
            if (scale == 1000) return "at most 3 decimals"; /* frac * 2^50 fits int64 */
            frac = frac * 10 + (*p - '0');
            scale *= 10;
        }
    }
    switch (*p) {
    case 'K': case 'k': mult = 1LL << 10; p++; break;
    case 'M': case 'm': mult = 1LL << 20; p++; break;
    case 'G': case 'g': mult = 1LL << 30; p++; break;
    case 'T': case 't': mult = 1LL << 40; p++; break;
    case 'P': case 'p': mult = 1LL << 50; p++; break;
    default: break;
    }
    if (mult > 1 && *p == 'i' && (p[1] == 'B' || p[1] == 'b')) p++; /* "GiB" */
    if (*p == 'B' || *p == 'b') p++;
    if (*p != '\0') return "unexpected characters";
    if (whole > MAX_SHARD_SIZE / mult) return "too large (at most 1P = 2^50 bytes)";
    if (frac * mult % scale != 0) return "not a whole number of bytes";
    int64_t v = whole * mult + frac * mult / scale;
    if (v < 1) return "must be at least 1 byte";
    if (v > MAX_SHARD_SIZE) return "too large (at most 1P = 2^50 bytes)";
    *out = v;
    return NULL;
}

/* The base target: --format, then field flags, then --activation. The
 * weight format stays HC_FMT_COUNT ("unset") when nothing names one. */
static int resolve_base(cli_args *a, hc_error *err)
{
    const hc_preset *p = a->format ? hc_preset_find(a->format) : NULL;
    if (a->format && p == NULL) {
        hc_error_set(err, HC_ERR_ARG, "unknown format \"%s\" (see --list-formats)", a->format);
        return -1;
    }
    a->base = p ? p->target
                : (hc_target){.weight_format = HC_FMT_COUNT, .scale_format = HC_FMT_PARAM,
                              .group_size = 128, .activation = HC_FMT_PARAM};
    for (int i = 0; i < a->n_fields; i++)
        if (hc_target_set_field(&a->base, a->fields[i].key, a->fields[i].value, err) != HC_OK)
            return -1;
    if (a->opts.has_activation) a->base.activation = a->opts.activation;
    a->has_base = a->base.weight_format != HC_FMT_COUNT;
    return 0;
}

static int resolve_arch(cli_args *a, hc_error *err)
{
    const char *arch = a->arch ? a->arch : a->recipe ? hc_recipe_arch(a->recipe) : NULL;
    if (arch) return hc_arch_parse(arch, &a->opts.sm, err) == HC_OK ? 0 : -1;
    int sm = hc_gpu_detect_sm();
    static const int known[] = {120, 100, 90, 89, 86, 80, 75};
    a->opts.sm = 90;
    for (size_t i = 0; sm >= 75 && i < sizeof known / sizeof known[0]; i++)
        if (sm >= known[i]) { a->opts.sm = known[i]; break; }
    return 0;
}

static int resolve_verify(cli_args *a, hc_error *err)
{
    if (a->verify && hc_verify_mode_parse(a->verify, &a->opts.verify) != 0) {
        hc_error_set(err, HC_ERR_ARG, "--verify: expected auto, gpu, cpu or off (got \"%s\")",
                     a->verify);
        return -1;
    }
    if (a->tokens) {
        char *end = NULL;
        long m = strtol(a->tokens, &end, 10);
        if (end == a->tokens || *end || m < 1 || m > 1 << 20) {
            hc_error_set(err, HC_ERR_ARG, "--verify-tokens: expected 1..1048576 (got \"%s\")",
                         a->tokens);
            return -1;
        }
        a->opts.verify_tokens = (int)m;
    }
    return 0;
}

int cli_resolve(cli_args *a, hc_error *err)
{
    if (resolve_verify(a, err) != 0) return -1;
    if (a->activation) {
        if (hc_activation_parse(a->activation, &a->opts.activation, err) != HC_OK) return -1;
        a->opts.has_activation = 1;
    }
    const char *why = a->shard_size ? parse_size(a->shard_size, &a->opts.max_shard_bytes) : NULL;
    if (why) {
        hc_error_set(err, HC_ERR_ARG, "--max-shard-size \"%.64s\" is not a size (%s): give "
                     "bytes with an optional K, M, G, T or P suffix (powers of 1024), e.g. 500M, "
                     "5GB", a->shard_size, why);
        return -1;
    }
    hc_status st = a->recipe_path ? hc_recipe_load(a->recipe_path, &a->recipe, err)
                                  : hc_recipe_default(&a->recipe, err);
    if (st != HC_OK) return -1;
    if (resolve_arch(a, err) != 0) return -1;
    if (a->act_order) {
        static const char *const modes[] = {"refuse", "permute", "requant"};
        int found = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(a->act_order, modes[i])) found = i;
        if (found < 0) {
            hc_error_set(err, HC_ERR_ARG, "--act-order: \"%s\" is not refuse, permute or "
                         "requant", a->act_order);
            return -1;
        }
        a->opts.act_order = found;
    }
    if (a->layout && strcmp(a->layout, "canonical") && strcmp(a->layout, "tiles")) {
        hc_error_set(err, HC_ERR_ARG, "--layout: \"%s\" is not canonical or tiles", a->layout);
        return -1;
    }
    a->opts.layout = a->layout && !strcmp(a->layout, "tiles") ? HC_LAYOUT_TILES : HC_LAYOUT_CANONICAL;
    if (resolve_base(a, err) != 0) return -1;
    a->opts.has_target = a->has_base || a->recipe_path != NULL;
    return 0;
}

hc_status cli_choose_target(void *ctx, const char *layer, hc_target *out, int *skip, char *why,
                            size_t why_len, hc_error *err)
{
    cli_args *a = ctx;
    hc_status st = hc_recipe_resolve(a->recipe, layer, &a->base, out, skip, why, why_len);
    if (st != HC_OK) HC_FAIL(err, st, "%s", why);
    if (!*skip && out->weight_format == HC_FMT_COUNT)
        HC_FAIL(err, HC_ERR_ARG, "no target format (use --format, --weight-dtype or a recipe "
                "with defaults.format)");
    return HC_OK;
}

void cli_target_summary(const cli_args *a, char *buf, size_t len)
{
    char base[160] = "";
    if (a->format) snprintf(base, sizeof base, ", preset %s", a->format);
    else if (a->has_base) {
        base[0] = ',';
        base[1] = ' ';
        hc_target_describe(&a->base, base + 2, (int)sizeof base - 2);
    }
    snprintf(buf, len, "%s%s%s", a->recipe_path ? "recipe " : "built-in ignore list",
             a->recipe_path ? hc_recipe_name(a->recipe) : "", base);
}
