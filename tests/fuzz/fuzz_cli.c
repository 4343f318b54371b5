/* fuzz_cli.c - libFuzzer target; the body is hc_fuzz_cli (fuzz_cli_entry.c). */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_entry.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* --help and --version print on stdout; libFuzzer and the sanitizers use stderr. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (freopen("/dev/null", "w", stdout) == NULL) return 0;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[HC_FUZZ_WHY_MAX];
    if (hc_fuzz_cli(data, size, why) != 0) {
        fprintf(stderr, "fuzz_cli: contract violated: %s\n", why);
        abort();
    }
    return 0;
}
