# humming-convert build. `make` builds the library, CLI and tests;
# `make test`, `make asan`, `make demo`, `make bench` as in README.md.

BUILD      ?= build
CC         ?= cc
PYTHON     ?= python3
OPT        ?= -O2 -g
SHARED_DIR ?= $(abspath ../shared)

WARN    := -Wall -Wextra -Werror
CPPFLAGS_ALL := -Ilib -Iformats -D_GNU_SOURCE
CFLAGS_ALL   := -std=c11 $(WARN) -fopenmp $(OPT) $(EXTRA_CFLAGS)
LDLIBS_ALL   := -fopenmp -lcjson -lyaml -lz -lm $(EXTRA_LDFLAGS)

LIB_SRC  := $(wildcard lib/*.c) $(wildcard formats/*.c)
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

.PHONY: all deps test asan demo bench clean
all: $(LIB_A) $(if $(CLI_SRC),$(CLI)) $(EX_BIN) $(TEST_BIN)

deps:
	@bash scripts/install-deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -Itests/support -MMD -MP -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	@rm -f $@ && ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(LIB_A)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJ) $(LIB_A) $(LDLIBS_ALL)

$(BUILD)/examples/%: $(BUILD)/obj/examples/%.o $(LIB_A)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(LIB_A) $(LDLIBS_ALL)

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
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g" \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  EXTRA_LDFLAGS="-fsanitize=address,undefined" all
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 HC_SKIP_PYTHON=1 \
	  HC_BUILD=build-asan HC_SHARED_DIR=$(SHARED_DIR) PYTHON=$(PYTHON) bash tests/run_tests.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@bash examples/demo.sh $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory all
	@bash bench/convert_bench.sh $(BUILD)

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TSUP_OBJ:.o=.d)
-include $(TEST_SRC:tests/%.c=$(BUILD)/obj/tests/%.d) $(EX_SRC:examples/%.c=$(BUILD)/obj/examples/%.d)
