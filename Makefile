# fsbroker — build, test, demo, bench, install.
#
#   make                 build build/fsbroker and build/fsbroker-init
#   make clients         build the client library, build/clients/libfsbclient.a,
#                        the brokered toybox (make toybox) and zsh (make zsh)
#   make toybox          build/clients/toybox from Debian's toybox source, its
#                        dispatcher and shims in build/clients/bin
#   make zsh             build/clients/zsh from Debian's zsh source
#   make test            C unit tests, Lua specs, cppcheck (make lint), the
#                        command line and host hooks (test-cli), the JSON
#                        shapes, integration tests, the
#                        clients' external suites (toybox-tests, zsh-tests)
#                        and the npm package's suite (node-test)
#   make lint            cppcheck over core/ (one TAP point)
#   make test-cli        every command's --help and unknown options, the
#                        manual pages against them, bash and zsh completion,
#                        make install and uninstall, make deb
#   make test-version    VERSION against package.json, the rockspec, the binary
#   make test-browser    fsbroker ui in Debian's headless Chromium (skipped
#                        without /usr/bin/chromium; npm ci in tests/browser)
#   make test-workloads  real programs under fsbroker run against the same
#                        command bare, then restored (tests/workloads/);
#                        again attached to a core, restored before the commit
#   make toybox-tests    toybox's own tests of the shimmed applets, stock and
#                        brokered: the pass counts must be equal
#   make zsh-tests       zsh's own Test/ files (A01grammar, A04redirect, B01cd,
#                        C02cond, D02glob), a stock build and the brokered
#                        one: the pass counts must be equal
#   make demo            the main job under `fsbroker run`, then `fsbroker serve`
#   make bench           ratios against a bare Unix-socket round trip, the
#                        runtime's costs against bare and bwrap-alone runs,
#                        and the brokered clients against stock ones
#   make bench-peers     the runtime's workloads under srt and codex too (npm;
#                        never in CI)
#   make fuzz            libFuzzer harnesses, FUZZ_SECONDS (60) each
#   make test-valgrind   serve and backup integration suites, core under valgrind
#   make deps            install missing Debian packages (root) or name them
#   make install         everything a user runs or reads under DESTDIR/PREFIX
#                        (/usr/local); make uninstall (same DESTDIR and
#                        PREFIX) removes exactly what it installed
#   make deb             build/fsbroker_VERSION_ARCH.deb (dpkg-buildpackage, debian/)
#   make man             build/man/fsbroker.1 (from the commands' --help texts)
#                        and build/man/fsbroker-pack.5 (from docs/rule-packs.md)
#   WERROR=1             warnings are errors
#   SANITIZE=address,undefined   build into build/san-address-undefined with the
#                                sanitizers (SANITIZE=thread: build/san-thread)

PREFIX   ?= /usr/local
DESTDIR  ?=

CC       ?= cc
PKGS     := lua5.4 libuv libcjson libcrypto libmicrohttpd libzstd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libmicrohttpd is not linked: `fsbroker ui` loads it (core/ui_mhd.c), by
# the soname of the library its headers came with.
PKG_LIBS   := $(shell pkg-config --libs $(filter-out libmicrohttpd,$(PKGS)) 2>/dev/null)
MHD_SONAME := $(shell objdump -p "$$(pkg-config --variable=libdir libmicrohttpd 2>/dev/null)/libmicrohttpd.so" 2>/dev/null | awk '/SONAME/ { print $$2 }')
# Debian's lua-lpeg ships the module as a shared library with no link name;
# linking it lets the core preload lpeg without enabling package.loadlib.
LPEG_LIB := -l:liblua5.4-lpeg.so.2
INIT_LIBS  := $(shell pkg-config --libs libcjson 2>/dev/null)

# Messages are cut to fixed buffers on purpose; paths are built with their
# snprintf result checked, so the truncation warning is only noise here.
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Werror=implicit-function-declaration -Wno-format-truncation
CFLAGS   ?= -O2 -g
# core/store/ (the backup store) and core/linux/ (the Linux runtime) are
# families of their own (DESIGN §1): their headers are included by name
# from core/ as from the family itself. -iquote, not -I: core/linux/ must
# not stand in for <linux/...> (the kernel's landlock.h is not ours).
CFLAGS   += -std=gnu11 -D_GNU_SOURCE $(WARN) $(PKG_CFLAGS) -iquote core -iquote core/store -iquote core/linux
CFLAGS   += -DFSB_MHD_SONAME='"$(or $(MHD_SONAME),libmicrohttpd.so.12)"'
LDLIBS   += $(PKG_LIBS) $(LPEG_LIB)
# Binaries under build/san-* or build/bench do not sit next to lua/: name it.
export FSBROKER_LUA_DIR := $(CURDIR)/lua

ifeq ($(WERROR),1)
CFLAGS   += -Werror
endif

# The one version of the project (VERSION): the binary prints it, and
# tools/check-version.sh fails `make test` when clients/node/package.json or
# the rockspec say another.
VERSION  := $(shell cat VERSION)

BUILD    := build
ifneq ($(SANITIZE),)
comma    := ,
BUILD    := build/san-$(subst $(comma),-,$(SANITIZE))
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SANITIZE)
endif

ifneq ($(V),1)
Q        := @
endif

# main.c and init_main.c are the two programs; the rest is the library.
CORE_SRC := $(filter-out core/main.c core/linux/init_main.c,$(wildcard core/*.c core/store/*.c core/linux/*.c))
CORE_HDR := $(wildcard core/*.h core/store/*.h core/linux/*.h)
CORE_OBJ := $(CORE_SRC:core/%.c=$(BUILD)/core/%.o)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
INTEG_SRC := $(wildcard tests/integration/test_*.c)
INTEG_BIN := $(INTEG_SRC:tests/integration/%.c=$(BUILD)/tests/%)
# The suites that start a seccomp supervisor, run a second time with the
# kernel's own wake-ups (FSBROKER_SYNC_WAKE_UP=0): on a Linux 6.6+ machine
# both of the supervisor's paths are tested, as on Debian 12's 6.1.
PLAIN_WAKE_BIN := $(filter $(BUILD)/tests/test_supervisor% $(BUILD)/tests/test_run_% \
                    $(BUILD)/tests/test_attacks_run $(BUILD)/tests/test_init,$(INTEG_BIN))
HARNESS_SRC := $(wildcard tests/integration/harness.c)
# The client library (clients/lib): what brokered commands and `fsbroker
# delete` link. It needs nothing but libc: a patched toybox or zsh links it.
CLIENT_SRC := $(wildcard clients/lib/*.c)
CLIENT_HDR := $(wildcard clients/lib/*.h)
CLIENT_OBJ := $(CLIENT_SRC:clients/lib/%.c=$(BUILD)/clients/lib/%.o)
CLIENT_LIB := $(BUILD)/clients/libfsbclient.a
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all deps man test test-c test-browser test-lua test-version test-cli test-integration test-workloads test-c-sanitize demo bench \
        bench-peers install uninstall deb lint clean clients toybox toybox-tests zsh zsh-tests node-test \
        fuzz fuzz-build test-fuzz-replay test-valgrind

all: $(BUILD)/fsbroker $(BUILD)/fsbroker-init

$(BUILD)/core/%.o: core/%.c $(CORE_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

# The page fsbroker ui serves is assembled into this object (.incbin).
$(BUILD)/core/ui_page.o: ui/index.html

$(BUILD)/libfsbcore.a: $(CORE_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/clients/lib/%.o: clients/lib/%.c $(CLIENT_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(CLIENT_LIB): $(CLIENT_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

clients: $(CLIENT_LIB) toybox zsh

# The brokered toybox (clients/toybox, docs/clients.md): Debian's toybox
# source, fetched once into build/src (tools/fetch-source.sh), patched and
# built by toybox's own make, linked with the client library. It is built
# without sanitizers whatever SANITIZE says (toybox is not ours to
# sanitize): build/clients/toybox, its dispatcher and one shim per applet.
TOYBOX_SRC      := build/src/toybox
TOYBOX_BIN      := build/clients/toybox
TOYBOX_LIB      := build/clients/libfsbclient.a
TOYBOX_DISPATCH := build/clients/bin/fsbroker-toybox-dispatch
TOYBOX_APPLETS  := cat chmod cp dd find grep head ln ls mkdir mv readlink \
                   realpath rm rmdir sed tail tee touch truncate unlink wc
TOYBOX_SHIMS    := $(TOYBOX_APPLETS:%=build/clients/bin/%)
TOYBOX_INPUTS   := clients/toybox/build.sh clients/toybox/toybox-fsbroker.patch \
                   clients/toybox/toybox.miniconfig clients/toybox/lib/fsbroker.c \
                   clients/toybox/lib/fsbroker.h

ifeq ($(SANITIZE),)
toybox: $(TOYBOX_BIN) $(TOYBOX_DISPATCH) $(TOYBOX_SHIMS) build/clients/toybox-check.o
else
toybox:
	$(Q)$(MAKE) --no-print-directory SANITIZE= toybox
endif

$(TOYBOX_SRC)/.fetched: | tools/fetch-source.sh
	$(Q)sh tools/fetch-source.sh toybox $(TOYBOX_SRC)

$(TOYBOX_BIN): $(TOYBOX_SRC)/.fetched $(TOYBOX_LIB) $(TOYBOX_INPUTS)
	@echo "  TOYBOX  $@"
	$(Q)env -u CFLAGS sh clients/toybox/build.sh $(TOYBOX_SRC) build/clients/toybox-build \
	    $(TOYBOX_LIB) $@

# The wrappers are compiled again with this project's warnings (toybox's
# own build uses toybox's): -Wall -Wextra clean, -Werror with WERROR=1.
build/clients/toybox-check.o: clients/toybox/lib/fsbroker.c clients/toybox/lib/fsbroker.h $(CLIENT_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Iclients/lib -Iclients/toybox/lib -c -o $@ $<

$(TOYBOX_DISPATCH): clients/toybox/dispatch.c $(TOYBOX_LIB) $(CLIENT_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Iclients/lib $(LDFLAGS) -o $@ $< $(TOYBOX_LIB)

$(TOYBOX_SHIMS): | $(TOYBOX_DISPATCH)
	$(Q)ln -sfn fsbroker-toybox-dispatch $@

# toybox's own tests (tests/*.test) of the shimmed applets, run stock (no
# broker) and brokered under a real core: pass/fail counts per applet, and
# a failure when the two pass counts differ (docs/clients.md).
toybox-tests: all toybox
	$(Q)bash clients/toybox/run-toybox-tests.sh $(BUILD)/fsbroker

# The brokered zsh (clients/zsh, docs/clients.md): Debian's zsh source,
# fetched once into build/src, patched, configured and built by zsh's own
# build (clients/zsh/build.sh); the wrappers (fsbroker_zsh.c) are compiled
# here with this project's warnings and linked in with the client library.
# Like toybox it is never built with sanitizers.
ZSH_SRC      := build/src/zsh
ZSH_BIN      := build/clients/zsh
ZSH_WRAPPERS := build/clients/zsh-fsbroker.o
ZSH_INPUTS   := clients/zsh/build.sh clients/zsh/zsh-fsbroker.patch clients/zsh/fsbroker_zsh.h

ifeq ($(SANITIZE),)
zsh: $(ZSH_BIN)
else
zsh:
	$(Q)$(MAKE) --no-print-directory SANITIZE= zsh
endif

$(ZSH_SRC)/.fetched: | tools/fetch-source.sh
	$(Q)sh tools/fetch-source.sh zsh $(ZSH_SRC)

$(ZSH_WRAPPERS): clients/zsh/fsbroker_zsh.c clients/zsh/fsbroker_zsh.h $(CLIENT_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Iclients/lib -Iclients/zsh -c -o $@ $<

$(ZSH_BIN): $(ZSH_SRC)/.fetched $(ZSH_WRAPPERS) $(TOYBOX_LIB) $(ZSH_INPUTS)
	@echo "  ZSH     $@"
	$(Q)env -u CFLAGS sh clients/zsh/build.sh $(ZSH_SRC) build/clients/zsh-build \
	    $(ZSH_WRAPPERS) $(TOYBOX_LIB) $@

# A stock zsh from the same source, configure options and modules as the
# brokered one, without the patch: the baseline of zsh-tests and of the
# clients' benchmark (built by the test script, which knows the options).
ZSH_STOCK := build/clients/zsh-stock
$(ZSH_STOCK): $(ZSH_SRC)/.fetched clients/zsh/run-zsh-tests.sh
	@echo "  ZSH     $@ (stock)"
	$(Q)bash clients/zsh/run-zsh-tests.sh --build-stock

# zsh's own tests (Test/*.ztst) against the stock zsh and the brokered zsh
# under a real core: a failure when the two pass counts differ
# (docs/clients.md).
zsh-tests: all zsh $(ZSH_STOCK)
	$(Q)bash clients/zsh/run-zsh-tests.sh $(BUILD)/fsbroker

# `fsbroker delete` is built on the client library.
$(BUILD)/core/cli_delete.o: CFLAGS += -Iclients/lib
$(BUILD)/core/cli_delete.o: $(CLIENT_HDR)

$(BUILD)/fsbroker: $(BUILD)/core/main.o $(BUILD)/libfsbcore.a $(CLIENT_LIB)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# fsbroker-init runs inside every sandbox: it links only what it uses
# (Landlock, the seccomp filter, cJSON for the core's reply).
$(BUILD)/fsbroker-init: $(BUILD)/core/linux/init_main.o $(BUILD)/libfsbcore.a
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(INIT_LIBS)

$(BUILD)/core/main.o: core/main.c $(CORE_HDR) VERSION
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -DFSB_VERSION='"$(VERSION)"' -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libfsbcore.a tests/unit/unit.h
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Itests/unit -DLUADIR='"$(CURDIR)/lua"' $(LDFLAGS) -o $@ $< \
	    $(BUILD)/libfsbcore.a $(LDLIBS) -lcmocka

$(BUILD)/tests/test_%: tests/integration/test_%.c $(HARNESS_SRC) tests/integration/harness.h $(BUILD)/libfsbcore.a $(CLIENT_LIB) $(CLIENT_HDR)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Itests/integration -Iclients/lib $(LDFLAGS) -o $@ $< $(HARNESS_SRC) \
	    $(BUILD)/libfsbcore.a $(CLIENT_LIB) $(LDLIBS) -lcmocka -lpthread

# Helper programs the run tests start inside the sandbox. They are built
# without the sanitizers (LeakSanitizer's ptrace is refused in there), so
# they behave the same in every build; the tests find them next to
# themselves, in tests/progs/.
PROGS_SRC := $(wildcard tests/integration/progs/*.c)
PROGS_BIN := $(PROGS_SRC:tests/integration/progs/%.c=$(BUILD)/tests/progs/%)
PROGS_CFLAGS := -O2 -g -std=gnu11 -D_GNU_SOURCE $(WARN) $(if $(filter 1,$(WERROR)),-Werror)

$(BUILD)/tests/progs/%: tests/integration/progs/%.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(PROGS_CFLAGS) -o $@ $< -lpthread

$(BUILD)/tests/test_run_programs $(BUILD)/tests/test_run_bypass $(BUILD)/tests/test_attacks_run: $(PROGS_BIN)

# Faults and load (docs/SECURITY.md, "Faults and load"): the LD_PRELOAD
# fault injector the fault tests load into the core (built without the
# sanitizers, like the programs above), and the mixed load both
# test_serve_load and bench/load drive (tests/integration/load_mix.c).
FAULT_SHIM := $(BUILD)/tests/faultinject/fsb_fault.so
LOAD_MIX   := tests/integration/load_mix.c tests/integration/load_mix.h

$(FAULT_SHIM): tests/faultinject/fsb_fault.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(PROGS_CFLAGS) -fPIC -shared -o $@ $< -ldl -lpthread

$(BUILD)/tests/test_fault_inject $(BUILD)/tests/test_hostop_regressions \
		$(BUILD)/tests/test_serve_backup: $(FAULT_SHIM)
$(BUILD)/tests/test_serve_load: HARNESS_SRC += tests/integration/load_mix.c
$(BUILD)/tests/test_serve_load: $(LOAD_MIX)

$(BUILD)/bench/load: bench/load.c $(LOAD_MIX) $(HARNESS_SRC) tests/integration/harness.h \
		$(BUILD)/libfsbcore.a $(CLIENT_LIB)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Itests/integration -Iclients/lib $(LDFLAGS) -o $@ $< \
	    tests/integration/load_mix.c $(HARNESS_SRC) $(BUILD)/libfsbcore.a $(CLIENT_LIB) \
	    $(LDLIBS) -lcmocka -lpthread

$(BUILD)/bench/%: bench/%.c $(BUILD)/libfsbcore.a
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libfsbcore.a $(LDLIBS) -lpthread

deps:
	@sh tools/deps.sh

# The manual pages are made, never written a second time (docs/decisions.md,
# "The manual pages are made from the help texts and docs/rule-packs.md"):
# fsbroker(1) from what the binary's help texts say, fsbroker-pack(5) from
# docs/rule-packs.md, each through scdoc. The .scd sources stay in build/man
# to read. Always in build/man (not build/san-*): pages do not change with
# the sanitizers.
MAN_DIR   := build/man
MAN_PAGES := $(MAN_DIR)/fsbroker.1 $(MAN_DIR)/fsbroker-pack.5
man: $(MAN_PAGES)

$(MAN_DIR)/fsbroker.1.scd: $(BUILD)/fsbroker tools/man.py
	@mkdir -p $(@D)
	@echo "  MAN     $@"
	$(Q)python3 tools/man.py help $(BUILD)/fsbroker $(VERSION) >$@.tmp && mv $@.tmp $@

$(MAN_DIR)/fsbroker-pack.5.scd: docs/rule-packs.md tools/man.py VERSION
	@mkdir -p $(@D)
	@echo "  MAN     $@"
	$(Q)python3 tools/man.py pack docs/rule-packs.md $(VERSION) >$@.tmp && mv $@.tmp $@

$(MAN_DIR)/%: $(MAN_DIR)/%.scd
	@echo "  SCDOC   $@"
	$(Q)scdoc <$< | python3 tools/man.py ascii >$@.tmp && mv $@.tmp $@

# Every suite prints TAP; tools/tap-sum.sh adds them up into the one line
# `N passed, N failed, N skipped` and fails when anything failed.
test: deps
	$(Q)$(MAKE) --no-print-directory all toybox zsh $(ZSH_STOCK) man
	$(Q)$(MAKE) --no-print-directory $(UNIT_BIN) $(INTEG_BIN) $(FUZZ_REPLAY)
	$(Q)sh tools/tap-sum.sh \
	    "C unit" "sh tools/run-cmocka.sh $(UNIT_BIN)" \
	    "Lua specs" "busted --lua=lua5.4 --output=TAP spec" \
	    "version" "sh tools/check-version.sh $(BUILD)/fsbroker" \
	    "static analysis" "sh tools/lint-tap.sh" \
	    "command line" "bash tests/cli/help.sh $(BUILD)/fsbroker" \
	    "manual pages" "bash tests/cli/man.sh $(BUILD)/fsbroker $(MAN_DIR)" \
	    "completion" "bash tests/cli/completion.sh $(BUILD)/fsbroker" \
	    "JSON output" "bash tests/cli/json.sh $(BUILD)/fsbroker" \
	    "install" "bash tests/cli/install.sh $(BUILD)/fsbroker" \
	    "Debian package" "bash tests/cli/deb.sh $(BUILD)/fsbroker" \
	    "agent host hooks" "bash tests/cli/hooks.sh $(BUILD)/fsbroker" \
	    "Gemini CLI hooks" "bash tests/cli/hooks_gemini.sh $(BUILD)/fsbroker" \
	    "Codex CLI hooks" "bash tests/cli/hooks_codex.sh $(BUILD)/fsbroker" \
	    "integration" "FSBROKER=$(BUILD)/fsbroker sh tools/run-cmocka.sh $(INTEG_BIN)" \
	    "supervisor, the kernel's own wake-ups" \
	        "FSBROKER_SYNC_WAKE_UP=0 FSBROKER=$(BUILD)/fsbroker sh tools/run-cmocka.sh $(PLAIN_WAKE_BIN)" \
	    "toybox's own tests" "bash clients/toybox/run-toybox-tests.sh --tap $(BUILD)/fsbroker" \
	    "zsh's own tests" "bash clients/zsh/run-zsh-tests.sh --tap $(BUILD)/fsbroker" \
	    "node package" "sh tools/node-test.sh $(BUILD)/fsbroker" \
	    "workloads" "bash tests/workloads/run.sh $(BUILD)/fsbroker" \
	    "workloads, attached and restored before the commit" \
	        "WORKLOADS_ATTACHED=1 bash tests/workloads/run.sh $(BUILD)/fsbroker" \
	    "fuzz corpus replay" "$(FUZZ_REPLAY_CMD)"

# The npm package (clients/node): npm ci when needed, tsc, node --test.
node-test: all
	$(Q)sh tools/tap-sum.sh "node package" "sh tools/node-test.sh $(BUILD)/fsbroker"

# Real programs (npm ci, git, pip in a venv, tar, rsync, sed -i, chmod -R, …)
# under fsbroker run against the same command bare, then restored.
test-workloads: all
	$(Q)sh tools/tap-sum.sh "workloads" "bash tests/workloads/run.sh $(BUILD)/fsbroker" \
	    "workloads, attached and restored before the commit" \
	        "WORKLOADS_ATTACHED=1 bash tests/workloads/run.sh $(BUILD)/fsbroker"

test-c: $(UNIT_BIN)
	$(Q)sh tools/tap-sum.sh "C unit" "sh tools/run-cmocka.sh $(UNIT_BIN)"

# VERSION against the npm package, the rockspec and the binary.
test-version: all
	$(Q)sh tools/tap-sum.sh "version" "sh tools/check-version.sh $(BUILD)/fsbroker"

# fsbroker ui in Debian's headless Chromium (tests/browser; playwright-core
# from npm drives /usr/bin/chromium and downloads no browser). Skipped (77)
# without chromium. Screenshots in $(BUILD)/ui-artifacts/.
test-browser: all
	$(Q)cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >/dev/null
	$(Q)FSBROKER=$(CURDIR)/$(BUILD)/fsbroker node tests/browser/ui.test.mjs; st=$$?; \
	    [ $$st -eq 77 ] && st=0; exit $$st

# Every command's --help, unknown options, --version (tests/cli/help.sh);
# the manual pages against the help texts and docs (tests/cli/man.sh);
# the completion scripts in bash and zsh (tests/cli/completion.sh); make
# install and uninstall, the installed tree run from / (tests/cli/install.sh);
# make deb (tests/cli/deb.sh); the agent host hooks (tests/cli/hooks.sh,
# hooks_gemini.sh, hooks_codex.sh).
test-cli: all man
	$(Q)sh tools/tap-sum.sh "command line" "bash tests/cli/help.sh $(BUILD)/fsbroker" \
	    "manual pages" "bash tests/cli/man.sh $(BUILD)/fsbroker $(MAN_DIR)" \
	    "completion" "bash tests/cli/completion.sh $(BUILD)/fsbroker" \
	    "JSON output" "bash tests/cli/json.sh $(BUILD)/fsbroker" \
	    "install" "bash tests/cli/install.sh $(BUILD)/fsbroker" \
	    "Debian package" "bash tests/cli/deb.sh $(BUILD)/fsbroker" \
	    "agent host hooks" "bash tests/cli/hooks.sh $(BUILD)/fsbroker" \
	    "Gemini CLI hooks" "bash tests/cli/hooks_gemini.sh $(BUILD)/fsbroker" \
	    "Codex CLI hooks" "bash tests/cli/hooks_codex.sh $(BUILD)/fsbroker"

test-lua:
	$(Q)sh tools/tap-sum.sh "Lua specs" "busted --lua=lua5.4 --output=TAP spec"

test-integration: all toybox zsh $(INTEG_BIN)
	$(Q)sh tools/tap-sum.sh "integration" "FSBROKER=$(BUILD)/fsbroker sh tools/run-cmocka.sh $(INTEG_BIN)" \
	    "supervisor, the kernel's own wake-ups" \
	        "FSBROKER_SYNC_WAKE_UP=0 FSBROKER=$(BUILD)/fsbroker sh tools/run-cmocka.sh $(PLAIN_WAKE_BIN)"

# ---- Fuzzing and leak checks (docs/SECURITY.md) --------------------------
#   make fuzz            each libFuzzer harness of tests/fuzz for FUZZ_SECONDS
#                        (60), new inputs into build/fuzz/corpus, crashes
#                        into build/fuzz/crashes; `N passed, N failed` (one
#                        per target, passed: no crash)
#   make test-valgrind   the serve and backup integration suites (not the
#                        load test) with the core they start run under
#                        valgrind's memcheck: any error or definite leak
#                        fails the test
# The harnesses are built twice: by clang with libFuzzer, ASan and UBSan
# into build/fuzz, and by $(CC) with tests/fuzz/replay.c as their main, the
# replay drivers `make test` runs over the seed corpus and the regressions.
FUZZ_TARGETS := text json control glob journal gitconfig
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_BUILD   := build/fuzz
FUZZ_REPLAY  := $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz_%)
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_CFLAGS  := -O1 -g -std=gnu11 -D_GNU_SOURCE $(filter-out -Wno-format-truncation,$(WARN)) \
                $(PKG_CFLAGS) -iquote core -iquote core/store -iquote core/linux -Iclients/lib -Itests/fuzz -fno-omit-frame-pointer \
                -fsanitize=address,undefined -fno-sanitize-recover=all \
                $(if $(filter 1,$(WERROR)),-Werror)
FUZZ_CORE_OBJ := $(CORE_SRC:core/%.c=$(FUZZ_BUILD)/core/%.o)
FUZZ_REPLAY_CMD := sh tools/fuzz-replay.sh $(BUILD)/tests $(FUZZ_TARGETS)

$(BUILD)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(BUILD)/libfsbcore.a
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -Itests/fuzz -DLUADIR='"$(CURDIR)/lua"' $(LDFLAGS) -o $@ $< \
	    tests/fuzz/replay.c $(BUILD)/libfsbcore.a $(LDLIBS)

$(FUZZ_BUILD)/core/%.o: core/%.c $(CORE_HDR)
	@mkdir -p $(@D)
	@echo "  FUZZCC  $<"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_BUILD)/libfsbcore.a: $(FUZZ_CORE_OBJ)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libfsbcore.a
	@echo "  FUZZLD  $@"
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -DLUADIR='"$(CURDIR)/lua"' -fsanitize=fuzzer -o $@ $< \
	    $(FUZZ_BUILD)/libfsbcore.a $(LDLIBS)

fuzz-build: $(FUZZ_BIN)

fuzz: deps
	$(Q)$(MAKE) --no-print-directory fuzz-build
	$(Q)sh tools/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

test-fuzz-replay: $(FUZZ_REPLAY)
	$(Q)sh tools/tap-sum.sh "fuzz corpus replay" "$(FUZZ_REPLAY_CMD)"

# Not the load test: 200,000 requests twice, hours under memcheck.
VALGRIND_SUITES := $(filter-out $(BUILD)/tests/test_serve_load, \
                   $(filter $(BUILD)/tests/test_serve_% $(BUILD)/tests/test_backup_%,$(INTEG_BIN)))
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --show-leak-kinds=definite \
            --num-callers=30 --suppressions=$(CURDIR)/tests/valgrind.supp

test-valgrind: deps
	$(Q)$(MAKE) --no-print-directory all $(VALGRIND_SUITES)
	$(Q)sh tools/tap-sum.sh "integration, core under valgrind" \
	    "FSBROKER=$(BUILD)/fsbroker FSBROKER_CORE_WRAPPER='$(VALGRIND)' \
	     sh tools/run-cmocka.sh $(VALGRIND_SUITES)"
# ---- end of fuzzing and leak checks ---------------------------------------

$(BUILD)/demo-client: tools/demo_client.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $<

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/demo-client
	$(Q)bash tools/demo.sh $(BUILD)

bench: all $(BENCH_BIN) toybox zsh $(ZSH_STOCK)
	$(Q)sh tools/bench.sh $(BUILD)

bench-peers: all $(BENCH_BIN)
	$(Q)sh tools/bench-peers.sh $(BUILD)

# Everything a user runs or reads, under DESTDIR/PREFIX: bin/fsbroker,
# libexec/fsbroker/ (fsbroker-init, and the patched zsh and toybox with
# their shims when make zsh and make toybox built them), share/fsbroker/lua,
# the manual pages, the bash and zsh completion and share/doc/fsbroker.
# tools/install.sh lists what it put there in
# share/fsbroker/install-manifest; make uninstall (same DESTDIR and PREFIX)
# removes exactly that, and the directories it made when they are empty.
INSTALL_ENV = DESTDIR='$(DESTDIR)' PREFIX='$(PREFIX)' BUILD='$(BUILD)' \
              CLIENTS='build/clients' MANDIR_BUILD='$(MAN_DIR)'

install: all man
	$(Q)$(INSTALL_ENV) sh tools/install.sh install

uninstall:
	$(Q)$(INSTALL_ENV) sh tools/install.sh uninstall

# build/fsbroker_VERSION_ARCH.deb, by dpkg-buildpackage from debian/ in a
# copy of the tree (tools/deb.sh); make zsh toybox first to have the
# clients in it.
deb:
	$(Q)bash tools/deb.sh $(VERSION)

lint:
	$(Q)sh tools/lint-tap.sh

clean:
	rm -rf build
