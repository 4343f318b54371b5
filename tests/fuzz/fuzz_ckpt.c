/* fuzz_ckpt.c - libFuzzer target; the body is hc_fuzz_ckpt (fuzz_ckpt_entry.c). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[HC_FUZZ_WHY_MAX];
    if (hc_fuzz_ckpt(data, size, why) != 0) {
        fprintf(stderr, "fuzz_ckpt: contract violated: %s\n", why);
        abort();
    }
    return 0;
}
