# blkmirror build.  Plain make: the tree is small, the toolchain is gcc + make
# on every Debian machine, and the test runner is a shell script (HACKING.md).
#
#   make            build bin/blkmirror and the unit tests
#   make check      build, then run the whole suite (tests/run)
#   make WERROR=1   warnings are errors (CI)
#   make SAN=1      AddressSanitizer + UndefinedBehaviorSanitizer (CI)
#   make fuzz       libFuzzer targets (clang)
#   make install    copies build/blkmirror, the man page and the systemd unit
#                   under $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); make uninstall
#   make version    prints the version the build carries

CC ?= cc
BUILD ?= build
CFLAGS_BASE := -std=gnu11 -O2 -g -Wall -Wextra -Wshadow -Wno-unused-parameter \
	-D_GNU_SOURCE -Iinclude -Ilib -Iserver -pthread
ifeq ($(WERROR),1)
CFLAGS_BASE += -Werror
endif
ifeq ($(SAN),1)
CFLAGS_BASE += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
BUILD := build-san
endif
CFLAGS := $(CFLAGS_BASE) $(EXTRA_CFLAGS)
LIBS := -luring -lnbd -lblkid -pthread

LIB_SRC := $(wildcard lib/*.c lib/backends/*.c)
SERVER_SRC := $(wildcard server/*.c)
CLI_SRC := $(wildcard cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/%)

BIN := $(BUILD)/blkmirror

DISKEMU := $(if $(wildcard /usr/include/nbdkit-plugin.h),$(BUILD)/diskemu.so)

all: $(BIN) $(UNIT_BIN) $(TOOL_BIN) $(DISKEMU) bin/blkmirror

# The benchmark's disk emulator (an nbdkit plugin; see bench/diskemu.c).
$(BUILD)/diskemu.so: bench/diskemu.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter $(if $(filter 1,$(WERROR)),-Werror) \
		-fPIC -shared -o $@ $<

bin/blkmirror: $(BIN)
	@mkdir -p bin
	ln -sf ../$(BIN) $@

$(BUILD)/libblkmirror.a: $(LIB_OBJ) $(SERVER_OBJ)
	ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(BUILD)/libblkmirror.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libblkmirror.a $(LIBS)

$(BUILD)/tests/%: tests/tools/%.c server/nbd_proto.h $(BUILD)/libblkmirror.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libblkmirror.a $(LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libblkmirror.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libblkmirror.a $(LIBS)

# The version: the VERSION file, and in a git checkout "+g" and the commit
# (0.1.0+g5fec33d1a2b3): the same tree always says the same, and a tarball
# without git says VERSION.  $(BUILD)/version.h depends on VERSION and on
# the files that say which commit is checked out, and is rewritten only
# when its text changes; otherwise it is touched (a branch deleted rewrites
# packed-refs), so that make -q calls a current build current.
VERSION_SH = v=$$(cat VERSION); if [ -e .git ] && \
	g=$$(git rev-parse --short=12 HEAD 2>/dev/null); then v="$$v+g$$g"; fi
GIT_HEAD_FILES := $(if $(wildcard .git),$(shell git rev-parse --git-path HEAD \
	--git-path packed-refs 2>/dev/null; r=$$(git symbolic-ref -q HEAD 2>/dev/null) \
	&& git rev-parse --git-path "$$r" 2>/dev/null))
$(BUILD)/version.h: VERSION $(wildcard $(GIT_HEAD_FILES))
	@mkdir -p $(BUILD)
	@$(VERSION_SH); echo "#define BM_VERSION \"$$v\"" >$@.tmp; \
	if cmp -s $@.tmp $@; then rm -f $@.tmp; touch $@; else mv $@.tmp $@; fi
$(BUILD)/cli/main.o: $(BUILD)/version.h
$(BUILD)/cli/main.o: CFLAGS += -I$(BUILD)
version:
	@$(VERSION_SH); echo "$$v"
# bench records BM_VERSION in its history too.
$(BUILD)/cli/cmd_bench.o: $(BUILD)/version.h
$(BUILD)/cli/cmd_bench.o: CFLAGS += -I$(BUILD)

$(BUILD)/%.o: %.c $(wildcard include/*.h lib/*.h server/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_LIB_SRC := $(filter-out cli/%,$(LIB_SRC) $(SERVER_SRC))

fuzz: $(FUZZ_BIN)
build-fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_SRC)
	@mkdir -p build-fuzz
	clang -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Ilib -Iserver -pthread \
		-fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_LIB_SRC) $(LIBS)

check: all
	tests/run

# Installation copies what the build made (run make first; a current build
# is not rebuilt).  The unit's ExecStart names the installed binary.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL ?= install

install: $(BIN)
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR)
	$(INSTALL) -m 0755 $(BIN) $(DESTDIR)$(SBINDIR)/blkmirror
	$(INSTALL) -m 0644 man/blkmirror.8 $(DESTDIR)$(MANDIR)/man8/blkmirror.8
	sed 's|^ExecStart=/usr/local/sbin/blkmirror |ExecStart=$(SBINDIR)/blkmirror |' dist/systemd/blkmirror@.service \
		>$(DESTDIR)$(UNITDIR)/.blkmirror@.service.tmp
	chmod 0644 $(DESTDIR)$(UNITDIR)/.blkmirror@.service.tmp
	mv $(DESTDIR)$(UNITDIR)/.blkmirror@.service.tmp $(DESTDIR)$(UNITDIR)/blkmirror@.service

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/blkmirror $(DESTDIR)$(MANDIR)/man8/blkmirror.8 \
		$(DESTDIR)$(UNITDIR)/blkmirror@.service

bench: all
	bench/run

# The soak (scripts/soak, SOAK_SECONDS=N, default 180): not in check or CI.
soak: all
	scripts/soak

# Crash-point torture (tests/tools/crashsim_oracle.c; not in check or CI):
# new seeded workloads for TORTURE_SECONDS (default 180), each at random
# crash points with a second crash during the resync.  A failure prints
# the seed and point; SEED=S POINT=P replays that one crash point.
# TORTURE_SETTLE=N runs the bitmap's settle pass before every Nth request.
TORTURE_SECONDS ?= 180
TORTURE_SEED ?= $(shell date +%s)
TORTURE_OPS ?= 200
TORTURE_QD ?= 4
TORTURE_SETTLE ?= 0
TORTURE_DIR ?= /tmp/blkmirror-torture
torture: $(BUILD)/tests/crashsim_oracle
	@rm -rf $(TORTURE_DIR)
	$(if $(SEED),$(BUILD)/tests/crashsim_oracle --dir $(TORTURE_DIR) \
		--seed $(SEED) --ops $(TORTURE_OPS) --qd $(TORTURE_QD) --settle $(TORTURE_SETTLE) --points $(or $(POINT),all) \
		--subsets 4 --second $(if $(COMPS),--comps $(COMPS)), \
	$(BUILD)/tests/crashsim_oracle --dir $(TORTURE_DIR) \
		--seed $(TORTURE_SEED) --ops $(TORTURE_OPS) --qd $(TORTURE_QD) --settle $(TORTURE_SETTLE) --max-points 8 \
		--subsets 4 --seconds $(TORTURE_SECONDS) $(if $(COMPS),--comps $(COMPS)))
	@rm -rf $(TORTURE_DIR)

clean:
	rm -rf build build-san build-fuzz bin

.PHONY: all check bench clean fuzz install uninstall version torture
