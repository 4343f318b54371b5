/* test_ckpt_hostile.c - quantized checkpoints that lie (issue 33): config
 * integers out of range, fractional or absurd (1e300, 4294967300), unknown
 * strategies and types. Each must be refused with a message naming the file,
 * the field or tensor and the reason - never a crash (SIGFPE, SIGSEGV), never
 * undefined behaviour (make asan runs this under float-cast-overflow), never
 * garbage accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hc_format.h"
#include "hc_test_ckpt.h"

/* ---- detection: every integer of the config range-checked ---------------- */

#define QC(body) "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": {" body "}}"
#define GPTQ(extra) QC("\"quant_method\": \"gptq\", \"group_size\": 128, \"sym\": true, " extra)
#define CT(weights) QC("\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\", " \
    "\"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {" weights "}}}")
#define FP8(bs) QC("\"quant_method\": \"fp8\", \"weight_block_size\": " bs)
#define MO_SIDE(q) "{\"producer\": {\"name\": \"modelopt\"}, \"quantization\": {" q "}}"

typedef struct {
    const char *config, *side_name, *side; /* side file: NULL for none */
    hc_status status;
    const char *what[3];                   /* each must be in the message */
} detect_case;

static const detect_case detect_cases[] = {
    {GPTQ("\"bits\": 4294967300"), NULL, NULL, HC_ERR_FORMAT,
     {"config.json", "quantization_config.bits", "too large"}},
    {GPTQ("\"bits\": -3"), NULL, NULL, HC_ERR_FORMAT, {"quantization_config.bits", "too small"}},
    {GPTQ("\"bits\": 1e300"), NULL, NULL, HC_ERR_FORMAT, {"quantization_config.bits", "too large"}},
    {GPTQ("\"bits\": 4.5"), NULL, NULL, HC_ERR_FORMAT, {"bits", "not an integer"}},
    {GPTQ("\"bits\": \"four\""), NULL, NULL, HC_ERR_FORMAT, {"bits", "not an integer"}},
    {GPTQ("\"bits\": 6"), NULL, NULL, HC_ERR_UNSUPPORTED, {"GPTQ bits 6"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 0"), NULL, NULL, HC_ERR_FORMAT,
     {"quantization_config.group_size = 0", "-1"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -7"), NULL, NULL, HC_ERR_FORMAT,
     {"group_size", "too small"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": -1e300"), NULL, NULL,
     HC_ERR_FORMAT, {"group_size", "too small"}},
    {QC("\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 1e19"), NULL, NULL,
     HC_ERR_FORMAT, {"group_size", "too large"}},
    {GPTQ("\"bits\": 4, \"desc_act\": \"no\""), NULL, NULL, HC_ERR_FORMAT,
     {"desc_act", "true or false"}},
    {GPTQ("\"bits\": 4, \"checkpoint_format\": 2"), NULL, NULL, HC_ERR_FORMAT,
     {"checkpoint_format", "must be a string"}},
    {"{}", "quant_config.json", "{\"w_bit\": 4294967300, \"q_group_size\": 128}", HC_ERR_FORMAT,
     {"quant_config.json", "w_bit", "too large"}},
    {"{}", "quant_config.json", "{\"w_bit\": 4, \"q_group_size\": 0.5}", HC_ERR_FORMAT,
     {"quant_config.json: q_group_size", "not an integer"}},
    {CT("\"num_bits\": 64, \"type\": \"int\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"config_groups.group_0.weights.num_bits", "too large", "1..8"}},
    {CT("\"num_bits\": 16, \"type\": \"int\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"num_bits", "too large"}},
    {CT("\"num_bits\": -3, \"type\": \"int\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"num_bits", "too small"}},
    {CT("\"num_bits\": 4, \"type\": \"uint\", \"strategy\": \"channel\""), NULL, NULL,
     HC_ERR_FORMAT, {"weights.type \"uint\""}},
    {CT("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"rows\""), NULL, NULL, HC_ERR_FORMAT,
     {"weights.strategy \"rows\""}},
    {CT("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\""), NULL, NULL, HC_ERR_FORMAT,
     {"weights.group_size", "strategy group needs"}},
    {CT("\"num_bits\": 4, \"type\": \"int\", \"strategy\": \"group\", \"group_size\": 1e300"),
     NULL, NULL, HC_ERR_FORMAT, {"weights.group_size", "too large"}},
    {CT("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\""), NULL, NULL,
     HC_ERR_FORMAT, {"block_structure", "strategy block needs"}},
    {CT("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", \"block_structure\": "
        "[1e300, 128]"), NULL, NULL, HC_ERR_FORMAT, {"block_structure[0]", "too large"}},
    {FP8("[1e300, 128]"), NULL, NULL, HC_ERR_FORMAT,
     {"config.json", "quantization_config.weight_block_size[0]", "too large"}},
    {FP8("[128, 0.5]"), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size[1]", "not an integer"}},
    {FP8("[128, 0]"), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size[1]", "too small"}},
    {FP8("[128]"), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size", "two block sizes"}},
    {FP8("\"128x128\""), NULL, NULL, HC_ERR_FORMAT, {"weight_block_size", "two block sizes"}},
    {"{}", "hf_quant_config.json", MO_SIDE("\"quant_algo\": \"NVFP4\", \"group_size\": 1e300"),
     HC_ERR_FORMAT, {"hf_quant_config.json", "quantization.group_size", "too large"}},
    {"{}", "hf_quant_config.json", MO_SIDE("\"quant_algo\": \"NVFP4\", \"group_size\": 0"),
     HC_ERR_FORMAT, {"quantization.group_size", "too small"}},
};

/* 1 (and a line on stderr) when status or message is not as expected. */
static int check_error(const char *label, hc_status st, const hc_error *err, hc_status want,
                       const char *const what[3])
{
    if (st != want) {
        fprintf(stderr, "%s: status %d, want %d: %s\n", label, (int)st, (int)want,
                st == HC_OK ? "(accepted)" : err->msg);
        return 1;
    }
    for (int k = 0; k < 3 && what[k]; k++)
        if (!strstr(err->msg, what[k])) {
            fprintf(stderr, "%s: message lacks \"%s\": %s\n", label, what[k], err->msg);
            return 1;
        }
    return 0;
}

static void test_detect_refuses_bad_numbers(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof detect_cases / sizeof detect_cases[0]; i++) {
        const detect_case *dc = &detect_cases[i];
        tc_ckpt c;
        tc_init(&c, "hostile-detect");
        tc_add(&c, "x", HC_DT_F32, 1, (int64_t[1]){4});
        tc_write(&c, dc->config, dc->side_name, dc->side);
        hc_ckpt_config cfg;
        hc_error err;
        hc_error_clear(&err);
        char label[512];
        snprintf(label, sizeof label, "detect case %zu (%s %s)", i, dc->config,
                 dc->side ? dc->side : "");
        bad += check_error(label, tc_detect(c.dir, &cfg, &err), &err, dc->status, dc->what);
        tc_free(&c);
    }
    assert_int_equal(bad, 0);
}

/* The forms producers really write still pass: quoted integers, -1, null. */
static void test_detect_accepts_valid_forms(void **state)
{
    (void)state;
    static const char *const ok[] = {
        GPTQ("\"bits\": \"4\", \"desc_act\": null"),
        QC("\"quant_method\": \"gptq\", \"bits\": 8, \"group_size\": -1, \"sym\": false"),
        CT("\"num_bits\": 4, \"type\": \"int\", \"group_size\": 128, \"actorder\": true"),
        CT("\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\", \"block_structure\": "
           "[128, 128]"),
        FP8("[128, 128]"),
        FP8("null"),
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tc_ckpt c;
        tc_init(&c, "hostile-ok");
        tc_add(&c, "x", HC_DT_F32, 1, (int64_t[1]){4});
        tc_write(&c, ok[i], NULL, NULL);
        hc_ckpt_config cfg;
        hc_error err;
        if (tc_detect(c.dir, &cfg, &err) != HC_OK) fail_msg("case %zu: %s", i, err.msg);
        tc_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_refuses_bad_numbers),
        cmocka_unit_test(test_detect_accepts_valid_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
