# boxgate build. `make` builds build/boxgate and build/boxgate-agent;
# `make check` installs what is missing, builds and runs the unit and integration tests,
# several at a time (tests/run; BG_TEST_JOBS=N or TEST_JOBS=N sets how many);
# `make asan` does the same under AddressSanitizer and UBSan;
# `make test` (what CI runs) is builds (the normal, fuzz and ASan trees compiled side by
# side), check-smoke (the unit tests, the install and the README's main job on the normal build), asan (the whole suite, once), fuzz (each corpus replayed,
# then each target fuzzed 10 s, two at a time), lint and the format check;
# `make test-long` the soak variants: check with BG_TEST_LONG=1 and 5 minutes per fuzz target.

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

LIB_SRC   := $(sort $(wildcard base/*.c conf/*.c remote/*.c shim/*.c sync/*.c gate/client/*.c results/*.c measure/*.c campaign/*.c pool/*.c cli/*.c))
LIB_SRC   := $(filter-out cli/main.c,$(LIB_SRC))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
MAIN_OBJ  := $(BUILD)/obj/cli/main.o
UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/fuzz_*.c))
AGENT     := $(BUILD)/boxgate-agent
AGENT_SRC := $(BUILD)/gen/boxgate-agent.c

.PHONY: all builds check check-smoke test test-long asan bench install uninstall clean deps format format-check lint unit-bins fuzz fuzz-bins
# Builds inside check, asan and fuzz use every cpu.
NPROC     := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
TEST_JOBS ?=
RUN_TESTS  = tests/run $(if $(TEST_JOBS),-j$(TEST_JOBS))
all: $(BUILD)/boxgate $(AGENT) demo-gate

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DBOXGATE_VERSION='"$(VERSION)"' -c -o $@ $<

# The shell sync/ runs on a box (sync/sh/*.sh), embedded into the binary
# as C arrays ($(BUILD)/gen/sync/sh/NAME.sh.h defines sync_sh_NAME).
SYNC_SH   := $(sort $(wildcard sync/sh/*.sh))
SYNC_SH_H := $(SYNC_SH:%.sh=$(BUILD)/gen/%.sh.h)
SYNC_OBJ  := $(filter $(BUILD)/obj/sync/%,$(LIB_OBJ))
$(BUILD)/gen/sync/sh/%.sh.h: sync/sh/%.sh
	@mkdir -p $(dir $@)
	{ echo 'static const char sync_sh_$*[] = {'; od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } >$@.tmp && mv $@.tmp $@
$(SYNC_OBJ): $(SYNC_SH_H)
$(SYNC_OBJ): ALL_CFLAGS += -I$(BUILD)/gen

$(BUILD)/libboxgate.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# A sanitizer build with its runtimes linked in (make asan's, LSAN_ROOTS=yes) links
# tests/sanitizer/lsan_roots.c first into boxgate, the agent and the unit tests: the leak
# check at each exit scans the program's globals, not the runtime's (a third of a short
# process's cpu).
LSAN_ROOTS ?=
ifeq ($(LSAN_ROOTS),yes)
FIRST_OBJ := $(BUILD)/obj/tests/sanitizer/lsan_roots.o
UNIT_BIN  += $(BUILD)/tests/test_lsan_roots
endif

$(BUILD)/boxgate: $(FIRST_OBJ) $(MAIN_OBJ) $(BUILD)/libboxgate.a
	$(CC) $(CFLAGS) $(EXTRA_CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The agent is one C file with no dependency beyond libc (NVML via dlopen),
# joined from its parts by gen.sh: the file built here is the one a box compiles.
$(AGENT_SRC): gate/agent/gen.sh $(shell gate/agent/gen.sh --list)
	@mkdir -p $(dir $@)
	gate/agent/gen.sh >$@.tmp && mv -f $@.tmp $@

$(AGENT): $(AGENT_SRC) $(FIRST_OBJ)
	$(CC) $(WARN) $(CFLAGS) $(EXTRA_CFLAGS) -D_GNU_SOURCE $(LDFLAGS) -o $@ $(FIRST_OBJ) $< -ldl -lm

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libboxgate.a $(FIRST_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(FIRST_OBJ) $< $(BUILD)/libboxgate.a $(PKG_LIBS) -lcmocka

# the check that a sanitizer build's narrowed leak scan still finds a leak
$(BUILD)/tests/test_lsan_roots: tests/sanitizer/test_lsan_roots.c $(FIRST_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(FIRST_OBJ) $< -lcmocka

unit-bins: $(UNIT_BIN)

deps:
	@tests/install-deps

check:
	@tests/install-deps
	@$(MAKE) --no-print-directory -j$(NPROC) all unit-bins
	@$(RUN_TESTS) $(BUILD)

# The normal build's share of make test: every unit test, the install (t16) and the
# README's main job on the local box (t70, its watchdog t75); the integration suite runs
# under asan.
SMOKE_TESTS := t16 t70 t75
check-smoke:
	@tests/install-deps
	@$(MAKE) --no-print-directory -j$(NPROC) all unit-bins
	@TESTS='$(SMOKE_TESTS)' $(RUN_TESTS) $(BUILD)

# make test's first stage compiles its three trees, one make after the other (the normal
# build with the fuzz targets, then build-asan): each make keeps both cores busy, and two
# side by side took longer on 2 cores (107 s wall, 211 s cpu against 90 s and 177 s on a
# fresh clone). The ASan tree skips the CUDA gate here; the asan stage's own make copies
# it in.
builds:
	@tests/install-deps
	@$(MAKE) --no-print-directory -j$(NPROC) all unit-bins fuzz-bins
	@$(MAKE) --no-print-directory -j$(NPROC) $(ASAN_MAKE_VARS) HAVE_NVCC= all unit-bins

# Every stage runs even when one fails, so one CI run shows every failure. Stages joined by
# a comma run at once: lint and the format check beside the fuzzers, which fuzz for a set
# time whatever cpu they get (a group's output is printed whole, in order, once all end; a
# stage alone prints as it goes).
TEST_STAGES := builds check-smoke asan fuzz,lint,format-check
# Each stage's wall time is printed as it ends, and all of them at the close.
test:
	@tests/install-deps
	@mkdir -p $(BUILD); failed=; times=; for g in $(TEST_STAGES); do \
	  set -- $$(echo "$$g" | tr , ' '); \
	  if [ $$# = 1 ]; then echo "==== make $$1"; t0=$$(date +%s); \
	    $(MAKE) --no-print-directory $$1 || failed="$$failed $$1"; \
	    s=$$(($$(date +%s) - t0)); times="$$times $$1 $${s}s"; echo "==== make $$1: $$s s"; continue; fi; \
	  pids=; for t in "$$@"; do \
	    { t0=$$(date +%s); rc=0; $(MAKE) --no-print-directory $$t >$(BUILD)/stage-$$t.log 2>&1 || rc=$$?; \
	      echo $$rc $$(($$(date +%s) - t0)) >$(BUILD)/stage-$$t.rc; } & pids="$$pids $$!"; done; \
	  wait $$pids; \
	  for t in "$$@"; do echo "==== make $$t"; cat $(BUILD)/stage-$$t.log; read -r rc s <$(BUILD)/stage-$$t.rc; \
	    [ "$$rc" = 0 ] || failed="$$failed $$t"; times="$$times $$t $${s}s"; echo "==== make $$t: $$s s"; done; \
	done; \
	echo "make test: stage times:$$times"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi; \
	echo "make test: $$(echo '$(TEST_STAGES)' | tr , ' ') passed"

# Not in CI: the long soak variants of the tests that have them (BG_TEST_LONG=1) and
# longer fuzzing.
LONG_FUZZ_SECONDS ?= 300
test-long:
	@failed=; \
	BG_TEST_LONG=1 $(MAKE) --no-print-directory check || failed="$$failed check"; \
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(LONG_FUZZ_SECONDS) || failed="$$failed fuzz"; \
	if [ -n "$$failed" ]; then echo "make test-long: failed:$$failed"; exit 1; fi; \
	echo "make test-long: check fuzz passed"

# The sanitizers' runtimes are linked in (-static-libasan -static-libubsan): the same
# checks, but a process starts and ends in about half the cpu (no relocations of two
# shared runtimes, and LeakSanitizer no longer scans the separate UBSan runtime's 6 MB
# of globals at each exit): the suite starts boxgate thousands of times. Linked without
# PIE (the objects stay position-independent): a start pays no relocation of the 2 MB of
# sanitizer data, about a fifth of an ASan process's start-up cpu (25 -> 19.5 ms here).
ASAN_LDFLAGS := -static-libasan -static-libubsan -no-pie
ASAN_MAKE_VARS := BUILD=build-asan CFLAGS='-O1 -g -fno-omit-frame-pointer' \
  EXTRA_CFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined' \
  LDFLAGS='$(ASAN_LDFLAGS)' LSAN_ROOTS=yes
asan:
	@tests/install-deps
	@$(MAKE) --no-print-directory -j$(NPROC) $(ASAN_MAKE_VARS) all unit-bins
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=8 UBSAN_OPTIONS=print_stacktrace=1 $(RUN_TESTS) build-asan

bench: all
	@tests/bench/run

# PREFIX/bin/boxgate finds its agent, the agent's source and the demo gate in
# PREFIX/libexec/boxgate/; the man page and the bash and zsh completions go where
# man(1), bash-completion and zsh look under PREFIX/share. DESTDIR stages a package.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/libexec/boxgate
	install -m 755 $(BUILD)/boxgate $(DESTDIR)$(PREFIX)/bin/boxgate
	install -m 755 $(AGENT) $(DESTDIR)$(PREFIX)/libexec/boxgate/boxgate-agent
	install -m 644 $(AGENT_SRC) $(DESTDIR)$(PREFIX)/libexec/boxgate/boxgate-agent.c
	for f in $(DEMO_GATE_BINS); do install -m 755 $$f $(DESTDIR)$(PREFIX)/libexec/boxgate/; done
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions
	install -m 644 doc/boxgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/boxgate.1
	install -m 644 completion/boxgate.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/boxgate
	install -m 644 completion/_boxgate $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_boxgate

# Removes what install put there (the same PREFIX and DESTDIR), and nothing else.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/boxgate $(DESTDIR)$(PREFIX)/share/man/man1/boxgate.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/boxgate \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_boxgate
	rm -rf $(DESTDIR)$(PREFIX)/libexec/boxgate

# Fuzz targets (libFuzzer, clang): `make fuzz FUZZ_SECONDS=60` builds them, replays each
# one's corpus (tests/fuzz/corpus/NAME and what earlier runs kept in build/fuzz/corpus/),
# then fuzzes each for FUZZ_SECONDS, FUZZ_JOBS at a time; the library is compiled once.
FUZZ_SECONDS ?= 10
FUZZ_JOBS    ?= 2
FUZZ_DIR     := $(BUILD)/fuzz
FUZZ_CFLAGS  := -g -O1 -std=c11 -D_GNU_SOURCE -I. -I$(BUILD)/gen $(PKG_CFLAGS) -fsanitize=address,undefined -MMD -MP -DBOXGATE_VERSION='"$(VERSION)"'
# The targets parse (configuration, results, campaigns, the shim, quoting): they link
# nothing of the command line, the SSH transport or sync, which are left uncompiled.
FUZZ_LIB_SRC := $(filter-out cli/% remote/% sync/%,$(LIB_SRC))
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_DIR)/%)

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LIB_OBJ): | $(SYNC_SH_H)

$(FUZZ_DIR)/libboxgate.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/libboxgate.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_DIR)/libboxgate.a $(PKG_LIBS)

fuzz-bins: $(FUZZ_BIN)

fuzz:
	@$(MAKE) --no-print-directory -j$(NPROC) fuzz-bins
	@tests/fuzz/run $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_BIN)

# The shell scripts (tests/lint) and the folders' layering (tests/layers, the table
# ARCHITECTURE.md explains); both run, each prints its findings.
lint:
	@rc=0; tests/lint || rc=1; tests/layers || rc=1; exit $$rc

# clang-format 14 over every C source and header git lists; prints each difference.
CLANG_FORMAT ?= clang-format-14
format-check:
	@git ls-files '*.c' '*.h' | xargs $(CLANG_FORMAT) --dry-run -Werror

format:
	git ls-files '*.c' '*.h' | xargs $(CLANG_FORMAT) -i

clean:
	rm -rf build build-asan

# The demo gate (gate/demo/) adds its own targets and DEMO_GATE_BINS.
DEMO_GATE_BINS ?=
-include gate/demo/demo.mk
ifeq ($(DEMO_GATE_BINS),)
demo-gate: ;
else
demo-gate: $(DEMO_GATE_BINS)
endif

-include $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(UNIT_BIN:=.d) $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_BIN:=.d)
