# hoard: GNU Makefile. `make` builds build/bin/{hoardd,hoard}; see `make help`.
SAN ?=
ifeq ($(SAN),)
BUILD ?= build
SANFLAGS :=
else ifeq ($(SAN),asan)
BUILD ?= build-asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# ASan keeps freed blocks in a quarantine (256 MiB by default) that counts in RSS; the relay's
# memory bound (test_relay: proxy RSS under 64 MiB through a 1 GiB GET) is about hoard, so
# the quarantine is kept small. Use-after-free of recently freed blocks is still caught.
export ASAN_OPTIONS ?= quarantine_size_mb=8
else ifeq ($(SAN),tsan)
BUILD ?= build-tsan
SANFLAGS := -fsanitize=thread
else
$(error SAN must be asan or tsan)
endif

CC ?= cc
PKGS := libmicrohttpd gnutls libcurl openssl libuv sqlite3 jansson expat libxxhash libarchive zlib msgpack
# Asked of pkg-config when first used, not when the Makefile is read: `make run` and `make
# test` install the libraries (deps) before anything is compiled, and a missing library stops
# the build here with a clear message instead of a link with half the flags.
pkg = $(if $(shell pkg-config --exists $(PKGS) && echo ok),$(shell pkg-config $(1) $(PKGS)),\
      $(error pkg-config does not find all of: $(PKGS). Run `make deps` (installs them)))
PKG_CFLAGS = $(eval PKG_CFLAGS := $(call pkg,--cflags))$(PKG_CFLAGS)
PKG_LIBS = $(eval PKG_LIBS := $(call pkg,--libs))$(PKG_LIBS)
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 \
        -Wno-unused-parameter
ifdef CI
WARN += -Werror
endif
OPT ?= -O2
CFLAGS = -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) $(SANFLAGS) -I. $(PKG_CFLAGS) $(DEFS) $(EXTRA_CFLAGS)
LDFLAGS := $(SANFLAGS) $(EXTRA_LDFLAGS)
LIBS = $(PKG_LIBS) -lpthread -lm

COMMON_SRC := $(wildcard common/*.c)
PROXY_SRC := $(wildcard proxy/*/*.c)
TARGET_SRC := $(wildcard target/*/*.c)
SERVER_SRC := $(wildcard server/*.c)
TOOLS_SRC := $(wildcard tools/hoard/*.c)
BENCH_TOOL_SRC := $(wildcard tools/bench/*.c)
UNIT_SRC := $(wildcard test/unit/*.c)
FUZZ_SRC := $(wildcard test/fuzz/fuzz_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

.PHONY: all deps test unit integration test-deploy chart-check image test-image test-fresh lint format check-deps \
        bench run fuzz fuzz-run clean help
all: $(BUILD)/bin/hoardd $(BUILD)/bin/hoard $(BUILD)/bin/hoard-bench

help:
	@echo "make [all|deps|test|unit|integration|test-deploy|lint|format|check-deps|bench|run|fuzz|clean] [SAN=asan|tsan]"
	@echo "make chart-check    test_chart.py only: helm lint/template, schemas, yamllint, hoard.conf vs hoardd (builds hoardd; helm etc. from make deps; no cluster, no network)"
	@echo "make test-deploy    chart-check + multi-host test (network namespaces, needs root)"
	@echo "make image          container image hoard:latest (deploy/docker/build.sh, needs root)"
	@echo "make test-image     image + smoke test of 1 proxy + 2 targets from it"
	@echo "make test-fresh     README's first run (make run, make unit; HOARD_FRESH_FULL=1: make test) in a debootstrap'd Debian root (root; downloads hundreds of MB)"

deps:
	@bash deploy/local/install-deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/lib/libhdcommon.a: $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@)
	@rm -f $@ # afresh: a renamed or deleted source must not linger as a member
	$(AR) rcs $@ $^

$(BUILD)/lib/libhdroles.a: $(call obj,$(PROXY_SRC) $(TARGET_SRC))
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

# hoard_build_info{commit}: the commit server/main.c was compiled at (`git describe`)
$(BUILD)/obj/server/main.o: DEFS = -DHD_COMMIT='"$(shell git describe --always --dirty 2>/dev/null || echo unknown)"'

$(BUILD)/bin/hoardd: $(call obj,$(SERVER_SRC)) $(BUILD)/lib/libhdroles.a $(BUILD)/lib/libhdcommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bin/hoard: $(call obj,$(TOOLS_SRC)) $(BUILD)/lib/libhdcommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bin/hoard-bench: $(call obj,$(BENCH_TOOL_SRC))
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bin/unit-tests: $(call obj,$(UNIT_SRC) tools/hoard/cli_fmt.c) $(BUILD)/lib/libhdroles.a $(BUILD)/lib/libhdcommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# `make test` and `make run` compile with one job per CPU (their sub-makes get -j; a plain
# `make` stays serial unless asked)
JOBS := -j$(shell nproc 2>/dev/null || echo 2)

test: deps
	@$(MAKE) --no-print-directory $(JOBS) $(BUILD)/bin/unit-tests all
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory integration
	@bash test/deploy/image_test.sh
	@$(MAKE) --no-print-directory test-deploy

unit: $(BUILD)/bin/unit-tests
	cd test/unit && ../../$(BUILD)/bin/unit-tests

integration: all
	HOARD_BUILD=$(BUILD) bash test/integration/run.sh

# Deployment: chart checks and the multi-host test (test/deploy/run.sh), container image.
test-deploy: all
	HOARD_BUILD=$(BUILD) bash test/deploy/run.sh

chart-check: all
	HOARD_BUILD=$(BUILD) bash test/deploy/run.sh test/deploy/test_chart.py

image:
	bash deploy/docker/build.sh

# Not part of `make test`: run it whenever the build or install steps change
test-fresh:
	bash test/fresh/run.sh

test-image: image
	bash test/deploy/image_smoke.sh

check-deps: all
	@HOARD_BUILD=$(BUILD) bash tools/check-deps.sh

lint: check-deps
	@bash tools/lint.sh

format:
	clang-format -i $(COMMON_SRC) $(PROXY_SRC) $(TARGET_SRC) $(SERVER_SRC) $(TOOLS_SRC) $(BENCH_TOOL_SRC) \
	    $(UNIT_SRC) $(FUZZ_SRC) $(wildcard */*.h */*/*.h tools/hoard/*.h test/unit/*.h)

bench: deps
	@$(MAKE) --no-print-directory all
	HOARD_BUILD=$(BUILD) bash test/bench/run.sh

# deps first, then a make of its own: the libraries exist when the flags are computed.
# exec: make passes a SIGTERM on to its recipe's process, which must be run.sh (it stops the
# cluster), not a shell that would die and leave the nodes running
run: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	HOARD_BUILD=$(BUILD) exec bash deploy/local/run.sh

# libFuzzer drivers: make fuzz; make fuzz-run FUZZ_SECONDS=60
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build-fuzz
# libFuzzer (-fsanitize=fuzzer) is clang's; gcc has none
FUZZ_CC ?= clang
fuzz:
	@mkdir -p $(FUZZ_BUILD)/bin
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  echo "  FUZZ $$n"; \
	  $(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 -I. $(PKG_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    $$f $(COMMON_SRC) -o $(FUZZ_BUILD)/bin/$$n $(LIBS) || exit 1; done
fuzz-run: fuzz
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
	  $(FUZZ_BUILD)/bin/$$n -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    $(FUZZ_BUILD)/corpus/$$n test/fuzz/corpus/$$n || exit 1; done

clean:
	rm -rf build build-asan build-tsan build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
