#!/usr/bin/env bash
# Optional: what `make fuzz` needs on top of scripts/install-deps.sh (clang and
# libFuzzer's runtime, libclang_rt.fuzzer, from Debian). `make test` never runs this.
set -u
bash "$(dirname "$0")/install-deps.sh" || exit 1
have_fuzzer() {
    printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){(void)d;(void)n;return 0;}\n' \
        | ${FUZZ_CC:-clang} -x c -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null
}
command -v "${FUZZ_CC:-clang}" >/dev/null 2>&1 && have_fuzzer && exit 0
ver=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
pkgs="clang"
[ -n "$ver" ] && pkgs="$pkgs libclang-rt-$ver-dev"
echo "install-fuzz-deps: installing Debian packages: $pkgs"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq || { echo "install-fuzz-deps: apt-get update failed" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $pkgs \
    || { echo "install-fuzz-deps: apt-get install failed" >&2; exit 1; }
if [ -z "$ver" ]; then
    ver=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
    have_fuzzer || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "libclang-rt-$ver-dev" || true
fi
have_fuzzer || { echo "install-fuzz-deps: clang cannot link -fsanitize=fuzzer (libclang-rt-$ver-dev?)" >&2; exit 1; }
exit 0
