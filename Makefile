# boxgate build. `make` builds build/boxgate and build/boxgate-agent;
# `make test` installs what is missing, builds and runs every test;
# `make asan` does the same under AddressSanitizer and UBSan.

BUILD     ?= build
CC        ?= cc
PKGS      := libssh2 inih libcjson
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lcrypto -lpthread -lm
WARN      := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers -Wno-format-truncation
CFLAGS    ?= -O2 -g
ALL_CFLAGS = $(WARN) $(CFLAGS) $(EXTRA_CFLAGS) -D_GNU_SOURCE -I. $(PKG_CFLAGS) -MMD -MP
LDFLAGS   ?=
PREFIX    ?= /usr/local
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

LIB_SRC   := $(sort $(wildcard base/*.c conf/*.c remote/*.c shim/*.c sync/*.c gate/*.c cli/*.c))
LIB_SRC   := $(filter-out cli/main.c,$(LIB_SRC))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ  := $(BUILD)/obj/cli/main.o
UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
AGENT     := $(BUILD)/boxgate-agent
AGENT_SRC := $(BUILD)/gen/boxgate-agent.c

.PHONY: all test asan bench install clean deps format unit-bins fuzz
all: $(BUILD)/boxgate $(AGENT) demo-gate

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DBOXGATE_VERSION='"$(VERSION)"' -c -o $@ $<

$(BUILD)/libboxgate.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/boxgate: $(MAIN_OBJ) $(BUILD)/libboxgate.a
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The agent is one C file with no dependency beyond libc (NVML via dlopen),
# joined from its parts by gen.sh: the file built here is the one a box compiles.
$(AGENT_SRC): gate/agent/gen.sh $(shell gate/agent/gen.sh --list)
	@mkdir -p $(dir $@)
	gate/agent/gen.sh >$@.tmp && mv -f $@.tmp $@

$(AGENT): $(AGENT_SRC)
	$(CC) $(WARN) $(CFLAGS) $(EXTRA_CFLAGS) -D_GNU_SOURCE -o $@ $< -ldl -lm

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libboxgate.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libboxgate.a $(PKG_LIBS) -lcmocka

unit-bins: $(UNIT_BIN)

deps:
	@tests/install-deps

test:
	@tests/install-deps
	@$(MAKE) --no-print-directory all unit-bins
	@tests/run $(BUILD)

asan:
	@tests/install-deps
	@$(MAKE) --no-print-directory BUILD=build-asan CFLAGS='-O1 -g -fno-omit-frame-pointer' \
	  EXTRA_CFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined' all unit-bins
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=8 UBSAN_OPTIONS=print_stacktrace=1 tests/run build-asan

bench: all
	@tests/bench/run

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/boxgate
	install -m 755 $(BUILD)/boxgate $(DESTDIR)$(PREFIX)/bin/boxgate
	install -m 755 $(AGENT) $(DESTDIR)$(PREFIX)/libexec/boxgate/boxgate-agent
	install -m 644 $(AGENT_SRC) $(DESTDIR)$(PREFIX)/libexec/boxgate/boxgate-agent.c
	for f in $(DEMO_GATE_BINS); do install -m 755 $$f $(DESTDIR)$(PREFIX)/libexec/boxgate/; done
	if [ -f doc/boxgate.1 ]; then install -d $(DESTDIR)$(PREFIX)/share/man/man1; \
	  install -m 644 doc/boxgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/; fi

# Fuzz targets (libFuzzer, clang): `make fuzz FUZZ_SECONDS=60` builds and runs each.
FUZZ_SECONDS ?= 30
FUZZ_LIB_SRC := $(filter-out cli/%,$(LIB_SRC))
fuzz:
	@mkdir -p $(BUILD)/fuzz/artifacts
	@for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  echo "== $$n"; \
	  clang -g -O1 -std=c11 -D_GNU_SOURCE -I. $(PKG_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/$$n $$f $(FUZZ_LIB_SRC) $(PKG_LIBS) || exit 1; \
	  c=tests/fuzz/corpus/$${n#fuzz_}; dirs=; \
	  if [ -d $$c ]; then mkdir -p $(BUILD)/fuzz/corpus/$$n; dirs="$(BUILD)/fuzz/corpus/$$n $$c"; fi; \
	  $(BUILD)/fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    -artifact_prefix=$(BUILD)/fuzz/artifacts/$$n- $$dirs >$(BUILD)/fuzz/$$n.log 2>&1; \
	  rc=$$?; tail -3 $(BUILD)/fuzz/$$n.log; [ $$rc = 0 ] || exit 1; \
	done

format:
	clang-format -i $(LIB_SRC) cli/main.c $(UNIT_SRC) gate/agent/*.c gate/agent/*.h $(wildcard */*.h)

clean:
	rm -rf build build-asan

# The demo gate (gate/cuda/) adds its own targets and DEMO_GATE_BINS.
DEMO_GATE_BINS ?=
-include gate/cuda/cuda.mk
ifeq ($(DEMO_GATE_BINS),)
demo-gate: ;
else
demo-gate: $(DEMO_GATE_BINS)
endif

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d)
