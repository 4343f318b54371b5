# humming-convert build. `make` builds the library, CLI and tests;
# `make test`, `make asan`, `make demo`, `make bench` as in README.md.

BUILD      ?= build
CC         ?= cc
PYTHON     ?= python3
OPT        ?= -O2 -g
SHARED_DIR ?= $(abspath ../shared)

WARN    := -Wall -Wextra -Werror
# lib/ is one folder per pipeline stage (lib/README.md: the layer rule);
# headers are included by name, so every stage folder is on the path.
LIB_DIRS     := $(sort $(dir $(wildcard lib/*/*.c lib/*/*.h)))
CPPFLAGS_ALL := -Ilib $(patsubst %/,-I%,$(LIB_DIRS)) -Iformats -D_GNU_SOURCE
# -ffp-contract=off: the quantizer reproduces Humming's CUDA float32
# arithmetic bit for bit (docs/quantization.md), so a*b+c must stay two
# roundings. GCC's -std=c11 already implies it, clang's default ("on") fuses
# within an expression wherever FMA is available (aarch64, -march=native).
CFLAGS_ALL   := -std=c11 $(WARN) -ffp-contract=off -fopenmp $(OPT) $(EXTRA_CFLAGS)
LDLIBS_ALL   := -fopenmp -lcjson -lyaml -lz -lm $(EXTRA_LDFLAGS)

LIB_SRC  := $(wildcard lib/*.c lib/*/*.c) $(wildcard formats/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_A    := $(BUILD)/libhumming_convert.a
CLI_SRC  := $(wildcard cmd/humming-convert/*.c)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CLI      := $(BUILD)/humming-convert
EX_SRC   := $(wildcard examples/*.c)
EX_BIN   := $(EX_SRC:examples/%.c=$(BUILD)/examples/%)
TSUP_SRC := $(wildcard tests/support/*.c)
TSUP_OBJ := $(TSUP_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# a host stand-in for libhc_kernels.so (tests of --verify gpu without a GPU)
HOSTK    := $(BUILD)/tests/libhc_host_kernels.so
GPU_SRC  := $(wildcard tests/gpu/*.c)
GPU_BIN  := $(GPU_SRC:tests/gpu/%.c=$(BUILD)/tests/gpu/%)

# CUDA kernels: built ahead of time into $(BUILD)/libhc_kernels.so (cudart
# linked statically), opened at run time by lib/verify/hc_gpu.c. `make` builds them
# only where they can run: for the local GPU's architecture when nvcc and a GPU
# are present. `make kernels` builds them for every architecture below;
# `make kernels KERNEL_ARCHS=sm_90a` for a chosen list. Without them the
# library, CLI and tests still build; GPU paths then report "no GPU kernels".
NVCC       ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
ALL_KERNEL_ARCHS := sm_80 sm_86 sm_89 sm_90a sm_100 sm_120
# compute capability of GPU 0 ("9.0" -> sm_90a, the target `make kernels-check` builds)
LOCAL_GPU_ARCH := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | \
                    sed -n 's/^ *\([0-9]*\)\.\([0-9]\) *$$/sm_\1\2/p' | sed 's/^sm_90$$/sm_90a/')
KERNEL_ARCHS ?= $(LOCAL_GPU_ARCH)
# sm_90a -> -gencode=arch=compute_90a,code=sm_90a; the newest also as PTX for later GPUs
comma := ,
nvcc_gencode = $(foreach a,$(1),-gencode=arch=compute_$(a:sm_%=%)$(comma)code=$(a)) \
               $(if $(filter sm_120,$(1)),-gencode=arch=compute_120$(comma)code=compute_120)
NVCC_ARCH   = $(call nvcc_gencode,$(KERNEL_ARCHS))
NVCC_FLAGS ?= -O3 -std=c++17 -Xcompiler -fPIC -lineinfo
# Compiled with one job per architecture (--threads 0), linked without: in one
# parallel step, the device links of all architectures write one registration
# file (..._dlink.reg.c) at once, and a build failed reading it.
# One kernel family per .cu file (docs/kernels.md); the headers are shared.
KERNELS_CU    := kernels/hck_gemm.cu kernels/hck_w4a16.cu kernels/hck_small16.cu kernels/hck_a8.cu kernels/hck_wg8.cu kernels/hck_wg8pk.cu kernels/hck_wg16.cu kernels/hck_splitk.cu kernels/hck_act.cu kernels/hck_api.cu
KERNELS_O     := $(KERNELS_CU:kernels/%.cu=$(BUILD)/obj/kernels/%.o)
KERNELS_SO    := $(BUILD)/libhc_kernels.so
KERNELS_STAMP := $(BUILD)/obj/kernels/archs
KERNELS_SRC   := $(KERNELS_CU) $(wildcard kernels/*.cuh) kernels/hc_kernels.h formats/hc_format.h
KERNELS    := $(if $(NVCC),$(if $(KERNEL_ARCHS),$(KERNELS_SO),kernels-nogpu),kernels-skip)

# objects made through pattern chains are kept (no rebuild on every make)
.PRECIOUS: $(BUILD)/obj/%.o
.PHONY: all deps test asan valgrind demo bench clean kernels kernels-skip kernels-nogpu \
        kernels-check fuzz fuzz-build fuzz-deps FORCE
all: $(LIB_A) $(if $(CLI_SRC),$(CLI)) $(EX_BIN) $(TEST_BIN) $(GPU_BIN) $(HOSTK) $(KERNELS)

# The architecture list is part of the object: a change of list rebuilds it.
$(KERNELS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo "$(KERNEL_ARCHS)" | cmp -s - $@ || echo "$(KERNEL_ARCHS)" > $@

$(BUILD)/obj/kernels/%.o: kernels/%.cu $(KERNELS_SRC) $(KERNELS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC    $@ ($(KERNEL_ARCHS))"
	@$(NVCC) --threads 0 $(NVCC_FLAGS) $(NVCC_ARCH) -Ikernels -Iformats -c -o $@ $<

$(KERNELS_SO): $(KERNELS_O)
	@echo "  NVLD    $@"
	@$(NVCC) -shared -cudart static $(NVCC_ARCH) -o $@ $^

kernels:
	@test -n "$(NVCC)" || { echo "make kernels: nvcc not found" >&2; exit 1; }
	@$(MAKE) --no-print-directory $(KERNELS_SO) KERNEL_ARCHS="$(if $(filter command line,$(origin KERNEL_ARCHS)),$(KERNEL_ARCHS),$(ALL_KERNEL_ARCHS))"

# CI: the kernels compile (one architecture, no GPU needed) so that CUDA code cannot rot.
kernels-check:
	@test -n "$(NVCC)" || { echo "make kernels-check: nvcc not found" >&2; exit 1; }
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/kernels-check KERNEL_ARCHS=sm_90a \
	  $(BUILD)/kernels-check/libhc_kernels.so

kernels-skip:
	@echo "NOTICE: nvcc not found: GPU kernels (libhc_kernels.so) not built; GPU verification falls back to the CPU"

kernels-nogpu:
	@echo "NOTICE: no GPU here: GPU kernels not built (\`make kernels\` builds them for every architecture); GPU verification falls back to the CPU"

$(HOSTK): tests/host_kernels.c kernels/hc_kernels.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	@$(CC) $(CPPFLAGS_ALL) -Ikernels $(CFLAGS_ALL) -fPIC -shared -o $@ $< $(LDLIBS_ALL)

$(BUILD)/tests/gpu/%: $(BUILD)/obj/tests/gpu/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(LIB_A) $(LDLIBS_ALL)

deps:
	@bash scripts/install-deps.sh

# Library, CLI and example objects see lib/ (its stage folders) and formats/ only; tests also see
# their support code.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -Itests/support -Itests/fuzz -Icmd/humming-convert -MMD -MP -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(LIB_A)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(LIB_A) $(LDLIBS_ALL)

# bench/crc32_speed.c: GB/s of each CRC-32 form, printed by make bench.
$(BUILD)/crc32_speed: bench/crc32_speed.c $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(LIB_A) $(LDLIBS_ALL)

$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(LIB_A) $(LDLIBS_ALL)

# The corpus replay shares the fuzz targets' entry code (tests/fuzz/*_entry.c);
# fuzz_cli drives the CLI's argument parser (cli_args.c).
FUZZ_ENTRY_SRC := tests/fuzz/fuzz_common.c $(wildcard tests/fuzz/fuzz_*_entry.c) \
                  cmd/humming-convert/cli_args.c
$(BUILD)/tests/test_fuzz_regressions: $(BUILD)/obj/tests/test_fuzz_regressions.o \
    $(FUZZ_ENTRY_SRC:%.c=$(BUILD)/obj/%.o) $(TSUP_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $(filter %.o,$^) $(LIB_A) -lcmocka $(LDLIBS_ALL)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TSUP_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(TSUP_OBJ) $(LIB_A) -lcmocka $(LDLIBS_ALL)

# Unit tests (CMocka), then the Python-oracle tests; one summary line at the end.
test: deps
	@$(MAKE) --no-print-directory all
	@HC_BUILD=$(BUILD) HC_SHARED_DIR=$(SHARED_DIR) PYTHON=$(PYTHON) bash tests/run_tests.sh

# Same tests under AddressSanitizer + UBSan, in a separate build tree.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g" NVCC= \
	  EXTRA_CFLAGS="-fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined,float-cast-overflow" all
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 HC_SKIP_PYTHON=1 \
	  HC_BUILD=build-asan HC_SHARED_DIR=$(SHARED_DIR) PYTHON=$(PYTHON) bash tests/run_tests.sh

# The example conversion and `check` under valgrind (tests/valgrind.sh).
valgrind: deps
	@$(MAKE) --no-print-directory all
	@bash tests/valgrind.sh $(BUILD)

# The demo needs the CLI and the example generator only (no tests, no Python).
demo:
	@HC_NO_PYTHON_DEPS=1 bash scripts/install-deps.sh
	@$(MAKE) --no-print-directory $(CLI) $(EX_BIN) $(KERNELS)
	@bash examples/demo.sh $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/crc32_speed
	@$(BUILD)/crc32_speed
	@bash bench/convert_bench.sh $(BUILD)


# Fuzzing (libFuzzer via clang; tests/fuzz/README.md). The library is
# rebuilt with clang -fsanitize=fuzzer-no-link,address,undefined in its own
# tree; `make fuzz` runs every target FUZZ_SECONDS seconds from tests/corpus.
FUZZ_BUILD   ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := safetensors index config recipe format_field ckpt cli
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS  := -std=c11 $(WARN) -Wno-unknown-pragmas -O1 -g -fno-omit-frame-pointer \
                $(FUZZ_SAN) -fsanitize=fuzzer-no-link
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o) $(FUZZ_ENTRY_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
.SECONDARY: $(FUZZ_LIB_OBJ) $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o)

fuzz-deps:
	@bash scripts/install-fuzz-deps.sh

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -Itests/fuzz -Icmd/humming-convert -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -lcjson -lyaml -lz -lm

fuzz: fuzz-build
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run_fuzz.sh $(FUZZ_TARGETS)

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TSUP_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d) \
         $(FUZZ_ENTRY_SRC:%.c=$(BUILD)/obj/%.d)
-include $(GPU_SRC:tests/gpu/%.c=$(BUILD)/obj/tests/gpu/%.d) $(TEST_SRC:tests/%.c=$(BUILD)/obj/tests/%.d) $(EX_SRC:examples/%.c=$(BUILD)/obj/examples/%.d)
