# cachelocal - header-only C11 library; this Makefile builds its tests,
# examples and benchmarks, and installs the headers.
# Plain GNU make. Quiet unless V=1. `make help` lists the targets.

PREFIX ?= /usr/local
DESTDIR ?=
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(PREFIX)/share/pkgconfig
CMAKEDIR ?= $(PREFIX)/lib/cmake/cachelocal
MANDIR ?= $(PREFIX)/share/man
# The version's one source: include/cachelocal/version.h.
VERSION := $(shell sh scripts/version.sh)

CC ?= cc
CXX ?= c++
# `make` defaults CC to cc; use gcc explicitly so build dirs are named by compiler.
ifeq ($(origin CC),default)
CC := gcc
endif
ifeq ($(origin CXX),default)
CXX := g++
endif

SAN ?=
CCNAME := $(notdir $(firstword $(CC)))
BUILD ?= build/$(CCNAME)$(if $(SAN),-$(SAN))

ifeq ($(V),1)
Q :=
else
Q := @
endif

URCU_CFLAGS := $(shell pkg-config --cflags liburcu-memb liburcu-cds 2>/dev/null)
URCU_LIBS := $(shell pkg-config --libs liburcu-memb liburcu-cds 2>/dev/null)
# the runtime's I/O (sched/runtime/iopoll.h): io_uring through liburing
URING_LIBS := $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
CRITERION_LIBS := $(shell pkg-config --libs criterion 2>/dev/null || echo -lcriterion)

# Warnings the headers must pass (house style); tests and benches use a subset
# (Criterion's macros are not -pedantic clean).
HDR_WARN := -Wall -Wextra -Werror -pedantic -Wshadow -Wundef -Wcast-align \
	-Wstrict-prototypes -Wmissing-prototypes
PROG_WARN := -Wall -Wextra -Werror -Wshadow -Wundef
# -O1 under the sanitizers: their instrumentation makes -O2 builds twice as
# slow to compile for no more findings.
OPT_asan := -O1
OPT_tsan := -O1
OPT ?= $(or $(OPT_$(SAN)),-O2)
# Debug information: line tables only (-g1) in the sanitizer and valgrind
# builds, whose reports need no more (a third faster to compile); full -g
# in the plain builds, for gdb.
DBG_asan := -g1
DBG_tsan := -g1
DBG_vg := -g1
DBG ?= $(or $(DBG_$(SAN)),-g)
SAN_FLAGS_asan := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_FLAGS_tsan := -fsanitize=thread -fno-omit-frame-pointer
SAN_FLAGS := $(SAN_FLAGS_$(SAN))

# Sanitizer builds run the unit tests through tests/unit/crshim.h (see
# there): TSan because Criterion cannot start under it, ASan because the
# shim forks each test without Criterion's re-exec (3x faster there).
ifneq ($(filter asan tsan,$(SAN)),)
TEST_CPPFLAGS := -DCL_TEST_SHIM
TEST_LIBS :=
else
TEST_CPPFLAGS :=
TEST_LIBS = $(CRITERION_LIBS)
endif

# The generated fake sysfs trees (see "generated fixtures" below).
SYSFS_DIR := tests/data
CPPFLAGS_ALL := -Iinclude -D_GNU_SOURCE -DCL_TEST_DATA_DIR='"$(CURDIR)/$(SYSFS_DIR)"' $(URCU_CFLAGS)
CFLAGS_PROG := -std=c11 $(OPT) $(DBG) $(PROG_WARN) $(SAN_FLAGS) $(CPPFLAGS_ALL) $(EXTRA_CFLAGS)
LDLIBS_PROG := -pthread $(URCU_LIBS) $(URING_LIBS) -lm $(SAN_FLAGS)

HEADERS := $(shell find include/cachelocal -name '*.h' | sort)

UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRC))
# tests/unit/NAME.variants: one line of -D flags per extra build of NAME
# (the "before" side of an A/B switch); binaries NAME.v1, NAME.v2, ...
# A line starting with "plain:" is built and run only without SAN (not under
# the sanitizers or valgrind): the sched tests' single switches, which the
# all-switches-at-once line covers there.
VARIANT_BIN := $(foreach v,$(wildcard tests/unit/*.variants),\
	$(foreach i,$(shell grep -v '^[[:space:]]*\(#\|$$\)' $(v) | grep -n $(if $(SAN),-v '^plain:','') | cut -d: -f1),\
	$(BUILD)/tests/unit/$(basename $(notdir $(v))).v$(i)))
# The "plain:" variants (single layout switches: the id mode changes
# nothing in them) run in the first test mode only.
VARIANT_PLAIN_BIN := $(foreach v,$(wildcard tests/unit/*.variants),\
	$(foreach i,$(shell grep -v '^[[:space:]]*\(#\|$$\)' $(v) | grep -n '^plain:' | cut -d: -f1),\
	$(BUILD)/tests/unit/$(basename $(notdir $(v))).v$(i)))
# Binaries check-unit runs in the first test mode only: the single layout
# switches; under TSan also the sched tests, whose code does not depend on
# who registered rseq (the only difference between TSan's two modes: under
# TSan every per-CPU operation takes the atomic fallback).
ONE_MODE_BIN := $(VARIANT_PLAIN_BIN)
ONE_MODE_WHAT := single layout switches (\"plain:\" variants), the runtime's I/O and stack tests
# The runtime's I/O tests run each test in both I/O backends themselves, and
# nothing of theirs depends on the id mode: one mode (10,000 echoed
# connections each run). Nor do its stack tests (guard modes, 100,000
# parked tasks, the stacks' mappings): one mode too.
ONE_MODE_BIN += $(BUILD)/tests/unit/test_sched_runtime_io $(BUILD)/tests/unit/test_example_echo_server \
	$(BUILD)/tests/unit/test_sched_runtime_stacks
ifeq ($(SAN),tsan)
ONE_MODE_BIN += $(BUILD)/tests/unit/test_sched_%
ONE_MODE_WHAT := sched tests
endif
# Under TSan every per-CPU operation takes the atomic fallback already: the
# CL_NO_RSEQ_ASM variants would rebuild and rerun the same code.
ifeq ($(SAN),tsan)
VARIANT_BIN := $(filter-out $(foreach v,$(wildcard tests/unit/*.variants),\
	$(foreach i,$(shell grep -v '^[[:space:]]*\(#\|$$\)' $(v) | grep -n '^[[:space:]]*-DCL_NO_RSEQ_ASM[[:space:]]*$$' | cut -d: -f1),\
	$(BUILD)/tests/unit/$(basename $(notdir $(v))).v$(i))),$(VARIANT_BIN))
endif
# Under TSan, the sched tests' layout variants (CL_DEBUG, the layout
# switches at once) rerun the base test's synchronization unchanged: the
# plain and ASan builds run them. Their runtime variant (the ucontext switch,
# a different fiber switch under TSan) stays.
ifeq ($(SAN),tsan)
VARIANT_BIN := $(filter-out $(foreach t,balance group rq threads,$(BUILD)/tests/unit/test_sched_$(t).v%),\
	$(VARIANT_BIN))
endif
STRESS_SRC := $(sort $(wildcard tests/stress/*.c))
STRESS_BIN := $(patsubst tests/stress/%.c,$(BUILD)/tests/stress/%,$(STRESS_SRC))
# PERCPU_ONLY=1 (check-matrix-extra: the CL_NO_RSEQ_ASM build and the
# no-mm-cid mode): only the tests whose code reaches a per-CPU operation or
# reads an rseq id; these never do (no rseq section, no mm_cid), so both
# would run the same code again.
PERCPU_SKIP := unit/test_cacheline unit/test_topology unit/test_spinlock unit/test_internal \
	unit/test_atfork unit/test_sched_balance unit/test_sched_eevdf unit/test_sched_group \
	unit/test_sched_rq unit/test_sched_threads stress/sched_soak
# For the same reason every run gives them (and their variants) only its
# first test mode: the id mode cannot change what they do.
ONE_MODE_BIN += $(foreach t,$(filter unit/%,$(PERCPU_SKIP)),$(BUILD)/tests/$(t) $(BUILD)/tests/$(t).v%)
ONE_MODE_WHAT := $(ONE_MODE_WHAT) and the tests that reach no per-CPU operation or rseq id
STRESS_ONE_MODE_BIN := $(addprefix $(BUILD)/tests/,$(filter stress/%,$(PERCPU_SKIP)))
# The CL_NO_RSEQ_ASM build (NOASM=1) also leaves out the runtime's tests:
# their only per-CPU operations are the task descriptors' object cache,
# whose fallback test_objcache and objcache_stress run in that build, and
# the runtime over the atomic fallback runs in make check's no-rseq mode.
ifeq ($(NOASM),1)
PERCPU_SKIP += $(patsubst tests/%.c,%,$(wildcard tests/unit/test_sched_runtime*.c)) unit/test_example_echo_server \
	stress/runtime_stress
endif
ifeq ($(PERCPU_ONLY),1)
UNIT_BIN := $(filter-out $(addprefix $(BUILD)/tests/,$(PERCPU_SKIP)),$(UNIT_BIN))
VARIANT_BIN := $(filter-out $(addsuffix .v%,$(addprefix $(BUILD)/tests/,$(filter unit/%,$(PERCPU_SKIP)))),\
	$(VARIANT_BIN))
STRESS_BIN := $(filter-out $(addprefix $(BUILD)/tests/,$(PERCPU_SKIP)),$(STRESS_BIN))
endif
EXAMPLE_SRC := $(sort $(wildcard examples/*.c))
EXAMPLE_BIN := $(patsubst examples/%.c,$(BUILD)/examples/%,$(EXAMPLE_SRC))
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))
# bench/sched_layout.c built with each "before" layout too (E1, E2)
BENCH_LAYOUT_BIN := $(BUILD)/bench/sched_layout_rq_scattered $(BUILD)/bench/sched_layout_se_inline \
	$(BUILD)/bench/group_tree_ptr_arrays $(BUILD)/bench/pipe_rq_scattered $(BUILD)/bench/pipe_se_inline \
	$(BUILD)/bench/refill_head
# bench/pipe.c without T4's move to the head of cfs_tasks on pick (E4m)
BENCH_LAYOUT_BIN += $(BUILD)/bench/pipe_no_mru
BENCH_BIN += $(BENCH_LAYOUT_BIN)
# bench/peers/: cachelocal beside the libraries a user would pick instead
# (jemalloc, tcmalloc, mimalloc, Concurrency Kit; benchmark-only packages of
# scripts/deps.txt). A peer is built only when its package is installed
# (header found); otherwise `make bench` and `make bench-peers` say
# "skipped: <package> not installed" and report nothing for it. The headers
# are looked up when make reads this file: `make bench` installs them in its
# `deps` step, then builds and reports in a sub-make that reads it anew.
PEERS := $(BUILD)/bench/peers
HAVE_HEADER = $(shell printf '\043include <$(1)>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo 1)
PEER_HAVE_CK := $(call HAVE_HEADER,ck_spinlock.h)
PEER_HAVE_JEMALLOC := $(call HAVE_HEADER,jemalloc/jemalloc.h)
PEER_HAVE_TCMALLOC := $(call HAVE_HEADER,gperftools/tcmalloc.h)
PEER_HAVE_MIMALLOC := $(call HAVE_HEADER,mimalloc.h)
# ck has no version macro: its Debian package's version, at build time.
PEER_CK_VERSION := $(shell dpkg-query -W -f='$${Version}' libck-dev 2>/dev/null)
PEER_BIN := $(PEERS)/peer_alloc_glibc \
	$(if $(PEER_HAVE_JEMALLOC),$(PEERS)/peer_alloc_jemalloc) \
	$(if $(PEER_HAVE_TCMALLOC),$(PEERS)/peer_alloc_tcmalloc) \
	$(if $(PEER_HAVE_MIMALLOC),$(PEERS)/peer_alloc_mimalloc) \
	$(if $(PEER_HAVE_CK),$(PEERS)/peer_locks $(PEERS)/peer_rwlock $(PEERS)/peer_counter)
PEER_SKIPPED := $(if $(PEER_HAVE_JEMALLOC),,libjemalloc-dev) \
	$(if $(PEER_HAVE_TCMALLOC),,libgoogle-perftools-dev) $(if $(PEER_HAVE_MIMALLOC),,libmimalloc-dev) \
	$(if $(PEER_HAVE_CK),,libck-dev)
BENCH_BIN += $(PEER_BIN)
NORSEQ := $(BUILD)/tools/norseq

# Test id modes (scripts/run-tests.sh): the sanitizer runs skip the seccomp one.
# TEST_JOBS: unit test binaries run at once (1: many tests pin or spin a
# thread per CPU, and two such binaries side by side take longer than one
# after the other; valgrind raises it).
TEST_JOBS ?= 1
TEST_MODES ?= default glibc-off no-rseq
RUN_WRAP :=
ifeq ($(SAN),tsan)
RUN_WRAP := setarch $(shell uname -m) -R
TEST_MODES := default glibc-off
endif
ifeq ($(SAN),asan)
TEST_MODES := default glibc-off
endif
# SAN=vg: the unit tests under valgrind's memcheck (make check-valgrind).
# Built with tests/unit/crshim.h (each test in a forked child, which valgrind
# follows without a restart: ~13x faster than Criterion's re-exec'd
# children); VG_CRITERION=1 uses Criterion with --trace-children=yes instead.
# valgrind has no rseq (ENOSYS): the tests run in the valgrind id mode.
VALGRIND ?= valgrind
# Forked children are followed anyway; --trace-children=yes (Criterion
# re-executes itself) would also put every system() shell under valgrind.
VG_FLAGS := --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
	--suppressions=$(CURDIR)/tests/valgrind.supp --fair-sched=yes -q
ifeq ($(SAN),vg)
ifeq ($(VG_CRITERION),1)
VG_FLAGS += --trace-children=yes
else
TEST_CPPFLAGS := -DCL_TEST_SHIM
TEST_LIBS :=
endif
RUN_WRAP := $(VALGRIND) $(VG_FLAGS)
TEST_MODES := valgrind
# The M:N runtime registers its task stacks with valgrind
# (VALGRIND_STACK_REGISTER, when <valgrind/valgrind.h> is there): its tests run too.
# VG_EXCLUDE: binaries left out of check-valgrind (none today). The A/B
# variants are left out (VG_VARIANTS=1 runs them too): each is a one-switch
# rebuild of a test memcheck already runs, and the ASan run covers them.
VG_EXCLUDE :=
UNIT_BIN := $(filter-out $(VG_EXCLUDE),$(UNIT_BIN))
VARIANT_BIN := $(if $(filter 1,$(VG_VARIANTS)),$(filter-out $(VG_EXCLUDE),$(VARIANT_BIN)))
endif
# Stress tests: short by default (make check), long with `make stress`.
STRESS_ENV ?= DURATION=1 ITERATIONS=20000

.PHONY: all help deps check check-cc check-headers check-compile-fail check-unit check-stress \
	check-asan check-tsan stress examples bench-smoke bench install uninstall install-check layout \
	build-tests clean
.PHONY: librseq check-interop bench-librseq bench-long check-bench-report bench-peers FORCE

all: build-tests $(EXAMPLE_BIN)

help:
	@echo "targets:"
	@echo "  deps           install missing Debian packages (scripts/deps.txt)"
	@echo "  check          header checks, negative compile tests, unit and short stress tests"
	@echo "  check-cc       the compiler-dependent part of check: compile-fail, unit, stress, interop"
	@echo "  check-asan     unit and stress tests under AddressSanitizer + UBSan"
	@echo "  check-tsan     unit and stress tests under ThreadSanitizer"
	@echo "  check-matrix   check + check-matrix-extra: unit and stress tests in all five rseq situations"
	@echo "  check-matrix-extra  only mm_cid absent (CL_TEST_RSEQ_FEATURE_SIZE_MAX=20) and a CL_NO_RSEQ_ASM build"
	@echo "  check-valgrind unit tests under valgrind memcheck (VG_CRITERION=1: with Criterion)"
	@echo "  fuzz           libFuzzer targets (clang), each for FUZZ_SECONDS (default 60)"
	@echo "  check-robustness  bad inputs of every public function, plain and CL_DEBUG (part of check)"
	@echo "  check-mutants  defects put back into the headers, each caught by its test (part of check)"
	@echo "  robustness     regenerate docs/robustness.md (ROBUST_FUZZ_LOG=, ROBUST_MATRIX_LOG=)"
	@echo "  stress         long stress tests (DURATION=, ITERATIONS=, CORES=)"
	@echo "  examples       build and run examples/ (and bench-smoke)"
	@echo "  bench-smoke    build the runtime benchmarks, run them tiny (not timed)"
	@echo "  bench          run the benchmark suite (quick, <= 5 min) and write report.md/report.json/plots"
	@echo "  bench-long     the same with the long sizes (both E5 trees)"
	@echo "  bench-run      bench after deps and librseq (bench-long-run: bench-long's); bench runs it as a sub-make"
	@echo "  bench-peers    only the bench/peers/ comparisons (jemalloc, tcmalloc, mimalloc, ck, glibc), quick, as a table"
	@echo "  check-bench-report  report tests + the suite in --smoke mode, report.json validated (part of check)"
	@echo "  librseq        find librseq or build the vendored snapshot into build/librseq (scripts/librseq.sh)"
	@echo "  check-interop  cachelocal and librseq in one process (part of check; skipped without librseq)"
	@echo "  bench-librseq  bench/counter and bench/ids --quick: the side-by-side librseq comparison"
	@echo "  bench-many-core  one command for a >= 8-core machine, <= 8 min, one report (scripts/bench_many_core.py)"
	@echo "  bench-many-core-dry  its steps at the smallest sizes on any machine (CI; report validated)"
	@echo "  floor-builds   bench/counter and bench/ids by the other compilers of FLOOR_CCS (make bench's Floors rows)"
	@echo "  bench-runtime-peers  the runtime beside Go and Boost.Fiber (RT_PEERS_ARGS=, default --quick)"
	@echo "  bench-rpc      bench/rpc: RPC server on the runtime beside Go and an epoll loop, open-loop load (RPC_ARGS=, default --quick)"
	@echo "  bench-wake-mechanisms  bench/pipe with each wake-path mechanism compiled out, beside the unchanged build (WAKE_ARGS=)"
	@echo "  rpc-callgrind  bench/rpc: instructions (callgrind) and system calls (strace) per request, runtime vs epoll loop (scripts/rpc_callgrind.sh)"
	@echo "  install        headers, cachelocal.pc, cachelocal-sched.pc, the CMake package and the man pages under DESTDIR/PREFIX"
	@echo "  man            section 3 and 7 man pages from the headers' kernel-doc into build/man (scripts/man.py)"
	@echo "  html           the same pages as HTML with one index: build/html/index.html"
	@echo "  check-man      every public name has a page, ERRORS against docs/robustness.md, examples compile, groff -ww clean, with its self-test (part of check)"
	@echo "  uninstall      remove what install put there"
	@echo "  install-check  install into a staging dir, build C, C++ and tests/outside consumers via pkg-config and a CMake consumer"
	@echo "  check-kv-server  examples/kv_server driven by a client: replies, idle timeout, drain on SIGTERM, exit code (part of check)"
	@echo "  check-example-builds  every example built with its own header's build line against an installed copy; the README's runtime line preempts (part of check)"
	@echo "  api-check      the headers' public API equals api/cachelocal.api, with its self-test (part of check)"
	@echo "  api-update     rewrite api/cachelocal.api from the headers (note the change in CHANGES.md)"
	@echo "  check-version  version.h, debian/changelog, CHANGES.md, .pc, CMake config and CL_VERSION_STRING agree (part of check)"
	@echo "  dist           build/cachelocal-X.Y.Z.tar.gz from the files git tracks"
	@echo "  distcheck      unpack the tarball in a scratch dir and run make check there"
	@echo "  distcheck-quick  the same with a reduced check (API and version checks, two unit tests)"
	@echo "  deb            Debian packages into build/deb/ (dpkg-buildpackage -us -uc -b)"
	@echo "  deb-check      lintian, then build the consumers against the built package (DEB_CHECK=system: dpkg -i, as root)"
	@echo "  check-install-docs  run README's install blocks (Debian package as root, make install PREFIX=, CMake)"
	@echo "  layout         pahole dumps of the documented structs into docs/layout/ (needs pahole)"
	@echo "  sysfs          generate the fake sysfs trees of tests/data/ (checked against sysfs.sha256)"
	@echo "  sysfs-rehash   regenerate them and record their hashes (after a gen-sysfs.sh change)"
	@echo "  check-aarch64  cross-built tests on Debian's arm64 kernel in qemu-system-aarch64 -smp 2 (<= 5 min)"
	@echo "  check-aarch64-quick  its subset for CI: every section kind with aborts, rseq, the context switch"
	@echo "  check-smp      tests on emulated 8/32/64/96-CPU x86_64 (2-8 LLCs, 1-4 nodes, SMT) and 8-CPU aarch64 guests, kernels 6.12 and 7.3, with CPU hotplug, cpuset shrink and rseq denied (docs/testing.md; SMP_GUESTS=, SMP_FILTER=, SMP_EXTRA=\"file.c ...\")"
	@echo "  check-smp-quick  guest A on 6.12 with one fault (what CI runs)"
	@echo "  smp-setup      fetch QEMU 10 and the guests' kernels into CL_GUEST_DIR (once)"
	@echo "  check-kernels  every unit-test and stress program on Debian's 6.1, 6.12 and 7.3 kernels in an 8-CPU guest, and 7.3 on arm64 (KERNELS=, SMP_EXTRA=)"
	@echo "  check-kernels-quick  6.1 and 7.3, the rseq, cid, percpu_ops, counter and objcache programs and the runtime lifecycle test (what CI runs)"
	@echo "  check-cross    headers for riscv64, ppc64el, s390x, armhf, i386; fallback smoke test under qemu-user"
	@echo "  clean          remove build/ and the generated trees"

deps:
	$(Q)sh scripts/deps.sh

# ---------------------------------------------------------------- generated fixtures

# The fake sysfs trees under tests/data/ (epyc9654-2s, 8core-1l3, ...) are
# generated by tests/data/gen-sysfs.sh, never tracked (.gitignore). Every
# binary that reads them (CL_TEST_DATA_DIR) has the stamp below as an
# order-only prerequisite, so it is generated before the first build and
# again when the generator changes. Each tree's hash must equal the one in
# tests/data/sysfs.sha256: a generator change that alters a tree fails here
# until `make sysfs-rehash` records the new hashes (commit both together).
SYSFS_STAMP := $(SYSFS_DIR)/.generated
.PHONY: sysfs sysfs-rehash
sysfs: $(SYSFS_STAMP)

$(SYSFS_STAMP): $(SYSFS_DIR)/gen-sysfs.sh $(SYSFS_DIR)/sysfs.sha256
	@$(if $(Q),echo "  GEN     $(SYSFS_DIR)/ (sh $(SYSFS_DIR)/gen-sysfs.sh)")
	$(Q)rm -f $@ && sh $(SYSFS_DIR)/gen-sysfs.sh $(SYSFS_DIR) >/dev/null
	$(Q)sh $(SYSFS_DIR)/gen-sysfs.sh --hash $(SYSFS_DIR) >$@.tmp
	$(Q)if ! cmp -s $@.tmp $(SYSFS_DIR)/sysfs.sha256; then \
		echo "sysfs: the generated trees differ from $(SYSFS_DIR)/sysfs.sha256 (want, got):"; \
		diff $(SYSFS_DIR)/sysfs.sha256 $@.tmp; \
		echo "sysfs: if gen-sysfs.sh was changed on purpose, run make sysfs-rehash and commit it"; \
		rm -f $@.tmp; exit 1; fi
	$(Q)mv $@.tmp $@

sysfs-rehash:
	$(Q)sh $(SYSFS_DIR)/gen-sysfs.sh $(SYSFS_DIR)
	$(Q)sh $(SYSFS_DIR)/gen-sysfs.sh --hash $(SYSFS_DIR) >$(SYSFS_DIR)/sysfs.sha256
	$(Q)touch $(SYSFS_STAMP)
	@echo "sysfs-rehash: wrote $(SYSFS_DIR)/sysfs.sha256"

# ---------------------------------------------------------------- build rules

$(BUILD)/tests/unit/%: tests/unit/%.c $(HEADERS) tests/unit/cl_test.h tests/unit/crshim.h | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) $(TEST_CPPFLAGS) -Itests/unit -o $@ $< $(TEST_LIBS) $(LDLIBS_PROG)

# The worked example of docs/structures.md, tested by including it.
$(BUILD)/tests/unit/test_example_histogram $(BUILD)/tests/unit/test_example_histogram.v1 \
	$(BUILD)/tests/unit/test_example_histogram.v2: examples/histogram.c

# The echo server example, tested by including it.
$(BUILD)/tests/unit/test_example_echo_server: examples/echo_server.c

# Variant N of a unit test: flags from line N of NAME.variants.
define VARIANT_RULE
$$(BUILD)/tests/unit/%.v$(1): tests/unit/%.c tests/unit/%.variants $$(HEADERS) tests/unit/cl_test.h tests/unit/crshim.h \
		| $$(SYSFS_STAMP)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  CC      $$@")
	$$(Q)flags=$$$$(grep -v '^[[:space:]]*\(#\|$$$$\)' tests/unit/$$*.variants | sed -n "$(1)p" | sed 's/^plain://'); \
	$$(CC) $$(CFLAGS_PROG) $$(TEST_CPPFLAGS) $$$$flags -Itests/unit -o $$@ $$< $$(TEST_LIBS) $$(LDLIBS_PROG)
endef
$(foreach i,1 2 3 4 5 6 7 8,$(eval $(call VARIANT_RULE,$(i))))

$(BUILD)/tests/stress/%: tests/stress/%.c $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -Itests/stress -o $@ $< $(LDLIBS_PROG)

$(BUILD)/examples/%: examples/%.c $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -o $@ $< $(LDLIBS_PROG)

$(BUILD)/bench/%: bench/%.c bench/bench.h $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -Ibench -o $@ $< $(LDLIBS_PROG)

# bench/slice_locks.c links three more compilations of its lock loops:
# "before" and "control" with CL_SLICE_EXT=0 (the locks without the request
# code, twice), "after" with it.
$(BUILD)/bench/slice_locks: bench/slice_locks.c bench/bench.h $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -Ibench -DCL_SLICE_EXT=0 -DSLICE_LOCKS_LOOP=before -c -o $@.before.o $<
	$(Q)$(CC) $(CFLAGS_PROG) -Ibench -DCL_SLICE_EXT=0 -DSLICE_LOCKS_LOOP=control -c -o $@.control.o $<
	$(Q)$(CC) $(CFLAGS_PROG) -Ibench -DSLICE_LOCKS_LOOP=after -c -o $@.after.o $<
	$(Q)$(CC) $(CFLAGS_PROG) -Ibench -o $@ $< $@.before.o $@.after.o $@.control.o $(LDLIBS_PROG)

# bench/pipe.c with one mechanism of the runtime's wake path compiled out
# each (docs/runtime.md, what each wake-path mechanism saves), measured
# beside the unchanged build by `make bench-wake-mechanisms` (not in
# BENCH_BIN: built by that target only).
WAKE_MECH_BIN := $(foreach m,handoff buddy watch home chain_beside,$(BUILD)/bench/pipe_no_$(m))
$(BUILD)/bench/pipe_no_handoff: BENCH_LAYOUT_DEF := -DCL_RUNTIME_NO_HANDOFF
$(BUILD)/bench/pipe_no_buddy: BENCH_LAYOUT_DEF := -DCL_RUNTIME_NO_BUDDY
$(BUILD)/bench/pipe_no_watch: BENCH_LAYOUT_DEF := -DCL_RUNTIME_NO_WATCH
$(BUILD)/bench/pipe_no_home: BENCH_LAYOUT_DEF := -DCL_RUNTIME_NO_HOME
$(BUILD)/bench/pipe_no_chain_beside: BENCH_LAYOUT_DEF := -DCL_RUNTIME_NO_CHAIN_BESIDE
$(WAKE_MECH_BIN): bench/pipe.c bench/rtbench.h
$(BUILD)/bench/sched_layout_rq_scattered: BENCH_LAYOUT_DEF := -DCL_RQ_LAYOUT_SCATTERED
$(BUILD)/bench/sched_layout_se_inline: BENCH_LAYOUT_DEF := -DCL_SE_AVG_INLINE
$(BUILD)/bench/group_tree_ptr_arrays: BENCH_LAYOUT_DEF := -DCL_GROUP_POINTER_ARRAYS
$(BENCH_LAYOUT_BIN) $(WAKE_MECH_BIN): bench/bench.h $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) $(BENCH_LAYOUT_DEF) -Ibench -o $@ $(filter %.c,$^) $(LDLIBS_PROG)
$(BUILD)/bench/sched_layout_rq_scattered $(BUILD)/bench/sched_layout_se_inline: bench/sched_layout.c
$(BUILD)/bench/group_tree_ptr_arrays: bench/group_tree.c
$(BUILD)/bench/pipe_rq_scattered: BENCH_LAYOUT_DEF := -DCL_RQ_LAYOUT_SCATTERED
$(BUILD)/bench/pipe_se_inline: BENCH_LAYOUT_DEF := -DCL_SE_AVG_INLINE
$(BUILD)/bench/pipe_rq_scattered $(BUILD)/bench/pipe_se_inline: bench/pipe.c bench/rtbench.h
$(BUILD)/bench/refill_head: BENCH_LAYOUT_DEF := -DCL_DETACH_FROM_HEAD
$(BUILD)/bench/refill_head: bench/refill.c bench/rtbench.h
$(BUILD)/bench/pipe_no_mru: BENCH_LAYOUT_DEF := -DCL_PICK_NO_MRU_MOVE
$(BUILD)/bench/pipe_no_mru: bench/pipe.c bench/rtbench.h

# WAKE_ARGS: e.g. --rounds 9 --loops 200000 (scripts/wake_mechanisms.py)
.PHONY: bench-wake-mechanisms
bench-wake-mechanisms: deps $(BUILD)/bench/pipe $(WAKE_MECH_BIN)
	$(Q)$(MAKE) --no-print-directory $(RT_PEERS_BIN) $(WAKE_MECH_PEERS_BIN) $(RT_PEERS_DIR)/runtime_go
	$(Q)python3 scripts/wake_mechanisms.py $(BUILD)/bench $(WAKE_ARGS)

PEER_CFLAGS := $(CFLAGS_PROG) -Ibench -Ibench/peers \
	$(if $(PEER_CK_VERSION),-DPEER_CK_VERSION='"$(PEER_CK_VERSION)"')
$(PEERS)/peer_%: bench/peers/%.c bench/peers/peers.h bench/bench.h $(HEADERS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PEER_CFLAGS) -o $@ $< -lck $(LDLIBS_PROG)
$(PEERS)/peer_alloc_glibc $(PEERS)/peer_alloc_jemalloc $(PEERS)/peer_alloc_tcmalloc \
		$(PEERS)/peer_alloc_mimalloc: \
		bench/peers/alloc.c bench/peers/peers.h bench/bench.h $(HEADERS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PEER_CFLAGS) $(PEER_ALLOC_DEF) -o $@ $< $(PEER_ALLOC_LIB) $(LDLIBS_PROG)
$(PEERS)/peer_alloc_jemalloc: PEER_ALLOC_DEF := -DPEER_ALLOC_JEMALLOC
$(PEERS)/peer_alloc_jemalloc: PEER_ALLOC_LIB := -ljemalloc
$(PEERS)/peer_alloc_tcmalloc: PEER_ALLOC_DEF := -DPEER_ALLOC_TCMALLOC
$(PEERS)/peer_alloc_tcmalloc: PEER_ALLOC_LIB := -ltcmalloc_minimal
$(PEERS)/peer_alloc_mimalloc: PEER_ALLOC_DEF := -DPEER_ALLOC_MIMALLOC
$(PEERS)/peer_alloc_mimalloc: PEER_ALLOC_LIB := -lmimalloc

$(NORSEQ): tests/tools/norseq.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) -std=c11 -O2 -Wall -Wextra -Werror -o $@ $<

build-tests: $(UNIT_BIN) $(VARIANT_BIN) $(STRESS_BIN) $(NORSEQ)

# ---------------------------------------------------------------- librseq (comparison, interop)

# librseq is not a dependency of cachelocal. bench/counter, bench/ids and
# tests/interop link it when scripts/librseq.sh finds it (LIBRSEQ_PREFIX=<dir>,
# pkg-config librseq, or the vendored snapshot once `make librseq` built it);
# without it they build anyway and report the comparison SKIPPED.
LIBRSEQ_CFLAGS := $(shell sh scripts/librseq.sh --cflags)
LIBRSEQ_LIBS := $(shell sh scripts/librseq.sh --libs)
LIBRSEQ_FOUND := $(if $(strip $(LIBRSEQ_LIBS)),1)
LIBRSEQ_BENCH_BIN := $(BUILD)/bench/counter $(BUILD)/bench/ids
# Not under the sanitizers: the interop test is about the rseq paths.
INTEROP_BIN := $(if $(LIBRSEQ_FOUND),$(if $(SAN),,$(BUILD)/tests/interop/test_librseq_interop))
# Changes when librseq appears or moves, so the binaries above are relinked.
LIBRSEQ_STAMP := $(BUILD)/librseq.flags

FORCE:

$(LIBRSEQ_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(LIBRSEQ_CFLAGS) $(LIBRSEQ_LIBS)' | cmp -s - $@ || echo '$(LIBRSEQ_CFLAGS) $(LIBRSEQ_LIBS)' > $@

librseq:
	$(Q)sh scripts/librseq.sh

# Every loop head on a 64-byte boundary: an operation of well under a
# nanosecond runs faster or slower by where its loop lands (the same source
# gave cachelocal / librseq 0.72x to 1.30x with gcc's default, 1-byte and
# 64-byte loop alignment), so both sides of each ratio get the same.
LIBRSEQ_BENCH_ALIGN := -falign-loops=64
$(LIBRSEQ_BENCH_BIN): $(BUILD)/bench/%: bench/%.c bench/bench.h bench/librseq_cmp.h $(HEADERS) $(LIBRSEQ_STAMP) \
		| $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@$(if $(LIBRSEQ_FOUND), (with librseq), (without librseq))")
	$(Q)$(CC) $(CFLAGS_PROG) $(LIBRSEQ_BENCH_ALIGN) -Ibench $(if $(LIBRSEQ_FOUND),-DBENCH_HAVE_LIBRSEQ $(LIBRSEQ_CFLAGS)) \
		-o $@ $< $(LIBRSEQ_LIBS) $(LDLIBS_PROG)

$(BUILD)/tests/interop/%: tests/interop/%.c $(HEADERS) tests/unit/cl_test.h tests/unit/crshim.h \
		$(LIBRSEQ_STAMP) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) $(TEST_CPPFLAGS) -Itests/unit $(LIBRSEQ_CFLAGS) -o $@ $< $(TEST_LIBS) \
		$(LIBRSEQ_LIBS) $(LDLIBS_PROG)

check-interop: $(INTEROP_BIN) $(NORSEQ)
	@echo "== librseq interop test ($(CC))"
	$(Q)$(if $(INTEROP_BIN),sh scripts/run-tests.sh -m "$(TEST_MODES)" $(NORSEQ) $(INTEROP_BIN),\
		echo "librseq: not found, interop test SKIPPED (make librseq, or LIBRSEQ_PREFIX=)")

bench-librseq: librseq
	$(Q)$(MAKE) --no-print-directory OPT=-O2 SAN= $(LIBRSEQ_BENCH_BIN)
	$(Q)for b in $(LIBRSEQ_BENCH_BIN); do echo "== $$b --quick"; $$b --quick || exit 1; done

# ---------------------------------------------------------------- checks

# Builds run in parallel (one job per CPU); tests run one binary at a time.
NPROC := $(shell nproc 2>/dev/null || echo 2)

# $(call STEP,ARGS): make ARGS, then its elapsed time (progress on long runs).
STEP = t=$$(date +%s); $(MAKE) --no-print-directory $(1) || exit 1; \
	echo "   ... $(lastword $(1)): $$(($$(date +%s) - t)) s"

check: deps
	$(Q)$(call STEP,check-headers)
	$(Q)$(call STEP,api-check)
	$(Q)$(call STEP,check-version)
	$(Q)$(call STEP,check-man)
	$(Q)$(MAKE) --no-print-directory check-cc
	$(Q)$(call STEP,check-robustness)
	$(Q)$(call STEP,check-example-builds)
	$(Q)$(call STEP,check-kv-server)
	$(Q)$(call STEP,check-mutants)
	$(Q)$(call STEP,-j$(NPROC) check-bench-report)
	@echo "make check ($(CC)): all passed"

# Defects put back into a copy of the headers (tests/mutants/mutants.txt):
# the test named for each must fail against it (part of check).
.PHONY: check-mutants
check-mutants: deps
	@echo "== mutants: each must be caught by its test"
	$(Q)MUTANT_LIBS="$(LDLIBS_PROG)" sh scripts/check-mutants.sh build/mutants $(CC) $(CFLAGS_PROG)

# The part of check that depends on the compiler (CI runs it again with
# CC=clang; the header checks already cover both compilers).
check-cc:
	$(Q)$(call STEP,check-compile-fail)
	$(Q)$(call STEP,-j$(NPROC) build-tests)
	$(Q)$(call STEP,check-unit)
	$(Q)$(call STEP,check-stress)
	$(Q)$(call STEP,check-interop)
	@echo "make check-cc ($(CC)): compile-fail, unit, stress and interop tests passed"

check-headers:
	@echo "== header checks (each header alone; C11 and C++17; gcc and clang)"
	$(Q)EXTRA_CFLAGS="$(URCU_CFLAGS)" sh scripts/check-headers.sh

check-compile-fail:
	@echo "== negative compile tests ($(CC))"
	$(Q)EXTRA_CFLAGS="$(URCU_CFLAGS)" sh scripts/compile-fail.sh $(CC)

# SCHED_TREE_OPS: operations of test_sched_eevdf's tree property test
# (10^6 by default; fewer under the sanitizers and valgrind, not skipped).
TREE_OPS_asan := 200000
TREE_OPS_tsan := 100000
TREE_OPS_vg := 20000
# BRLOCK_TEST_WRITES: test_brlock's exclusion writes per writer (200 by
# default; under valgrind, which runs one thread at a time, each write waits
# out reader time slices: 200 took three minutes there, 30 about 48 s).
BRLOCK_WRITES_vg := 15
TEST_KNOBS = $(if $(TREE_OPS_$(SAN)),SCHED_TREE_OPS=$(TREE_OPS_$(SAN))) \
	$(if $(BRLOCK_WRITES_$(SAN)),BRLOCK_TEST_WRITES=$(BRLOCK_WRITES_$(SAN)))
check-unit: $(UNIT_BIN) $(VARIANT_BIN) $(NORSEQ)
	@echo "== unit tests ($(CC)$(if $(SAN), $(SAN)); modes: $(TEST_MODES))"
	$(Q)$(TEST_KNOBS) sh scripts/run-tests.sh -m "$(TEST_MODES)" -j $(TEST_JOBS) $(if $(RUN_WRAP),-w "$(RUN_WRAP)") \
		$(NORSEQ) $(filter-out $(ONE_MODE_BIN),$(UNIT_BIN) $(VARIANT_BIN))
	$(Q)$(if $(filter $(ONE_MODE_BIN),$(UNIT_BIN) $(VARIANT_BIN)),\
		echo "== $(ONE_MODE_WHAT) (mode: $(firstword $(TEST_MODES)))"; \
		$(TEST_KNOBS) sh scripts/run-tests.sh -m "$(firstword $(TEST_MODES))" -j $(TEST_JOBS) $(if $(RUN_WRAP),-w "$(RUN_WRAP)") \
		$(NORSEQ) $(filter $(ONE_MODE_BIN),$(UNIT_BIN) $(VARIANT_BIN)))

check-stress: $(STRESS_BIN) $(NORSEQ)
	@echo "== stress tests, short ($(STRESS_ENV))"
	$(Q)$(if $(STRESS_BIN),env $(STRESS_ENV) sh scripts/run-tests.sh -m "$(TEST_MODES)" \
		$(if $(RUN_WRAP),-w "$(RUN_WRAP)") $(NORSEQ) $(filter-out $(STRESS_ONE_MODE_BIN),$(STRESS_BIN)),\
		echo "no stress tests yet")
	$(Q)$(if $(filter $(STRESS_ONE_MODE_BIN),$(STRESS_BIN)),\
		echo "== stress tests that reach no per-CPU operation or rseq id (mode: $(firstword $(TEST_MODES)))"; \
		env $(STRESS_ENV) sh scripts/run-tests.sh -m "$(firstword $(TEST_MODES))" \
		$(if $(RUN_WRAP),-w "$(RUN_WRAP)") $(NORSEQ) $(filter $(STRESS_ONE_MODE_BIN),$(STRESS_BIN)))

stress:
	$(Q)$(MAKE) --no-print-directory check-stress STRESS_ENV="DURATION=$${DURATION:-30} ITERATIONS=$${ITERATIONS:-2000000}"

check-asan: deps
	$(Q)$(call STEP,SAN=asan -j$(NPROC) build-tests)
	$(Q)$(call STEP,SAN=asan check-unit)
	$(Q)$(call STEP,SAN=asan check-stress check-robustness)

check-tsan: deps
	$(Q)$(call STEP,SAN=tsan -j$(NPROC) build-tests)
	$(Q)$(call STEP,SAN=tsan check-unit)
	$(Q)$(call STEP,SAN=tsan check-stress)

# Unit tests (and their A/B variants) under memcheck: any memcheck error or
# definite leak fails the test (exit 99). tests/valgrind.supp covers only
# liburcu's own call_rcu thread.
VG_BUILD := build/$(CCNAME)-vg$(if $(filter 1,$(VG_CRITERION)),-criterion)
# VG_JOBS: binaries under valgrind at once (memcheck runs the threads of a
# process one at a time, so each binary uses one CPU): one per CPU.
VG_JOBS ?= $(NPROC)
check-valgrind: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) SAN=vg BUILD=$(VG_BUILD) TEST_JOBS=$(VG_JOBS) check-unit

# ---------------------------------------------------------------- fallback matrix

# Five rseq situations: the three id modes of `make check` (default, glibc-off,
# no-rseq), mm_cid reported absent (no-mm-cid: test knob
# CL_TEST_RSEQ_FEATURE_SIZE_MAX=20) and a CL_NO_RSEQ_ASM build (atomic
# fallback, default mode). check-matrix-extra runs only the last two, so CI
# runs `make check` once and adds it. The CL_NO_RSEQ_ASM build skips the
# A/B variants (*.variants: layout switches; the percpu_ops and counter
# ones already include a CL_NO_RSEQ_ASM build); both leave out the tests of
# PERCPU_SKIP (no per-CPU operation, no rseq id).
NOASM_BUILD := build/$(CCNAME)-noasm
.PHONY: check-matrix check-matrix-extra check-valgrind fuzz fuzz-build
check-matrix: deps
	$(Q)$(MAKE) --no-print-directory check
	$(Q)$(MAKE) --no-print-directory check-matrix-extra

check-matrix-extra:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) build-tests
	$(Q)$(MAKE) --no-print-directory check-unit check-stress check-robustness TEST_MODES=no-mm-cid PERCPU_ONLY=1
	@echo "== CL_NO_RSEQ_ASM build"
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) BUILD=$(NOASM_BUILD) VARIANT_BIN= PERCPU_ONLY=1 NOASM=1 \
		EXTRA_CFLAGS="$(EXTRA_CFLAGS) -DCL_NO_RSEQ_ASM" build-tests
	$(Q)$(MAKE) --no-print-directory BUILD=$(NOASM_BUILD) VARIANT_BIN= PERCPU_ONLY=1 NOASM=1 \
		EXTRA_CFLAGS="$(EXTRA_CFLAGS) -DCL_NO_RSEQ_ASM" check-unit check-stress check-robustness TEST_MODES=default
	@echo "make check-matrix-extra ($(CC)): no-mm-cid and CL_NO_RSEQ_ASM passed"

# ---------------------------------------------------------------- fuzzing

# libFuzzer targets (tests/fuzz/fuzz_*.c), always built with clang. Each runs
# FUZZ_SECONDS on a work corpus under build/fuzz/corpus/ seeded from
# tests/fuzz/corpus/<target>/ (never written to); crashes land in
# build/fuzz/crashes/. Reproduce one with: build/fuzz/<target> <crash file>.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
# Targets run at once, each for FUZZ_SECONDS (one process each): one per CPU.
FUZZ_JOBS ?= $(NPROC)
FUZZ_FLAGS := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(patsubst tests/fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))

build/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)$(FUZZ_CC) -std=c11 -O1 -g $(PROG_WARN) $(FUZZ_FLAGS) $(CPPFLAGS_ALL) -Itests/fuzz \
		-o $@ $< -pthread $(URCU_LIBS)

fuzz-build: $(FUZZ_BIN)

fuzz: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) fuzz-build
	$(Q)sh scripts/fuzz.sh -j $(FUZZ_JOBS) $(FUZZ_SECONDS) $(FUZZ_BIN)

# ---------------------------------------------------------------- robustness

# tests/robustness/bad_inputs.c: every public function of L1-L5 called with
# its bad inputs, each case in a forked child, checked against the
# documented result; built plain and with CL_DEBUG (whose asserted misuse
# must abort). check-robustness (part of check) runs both in every id mode,
# then fails if a public function has no row (scripts/robustness_report.py
# lists them from the headers with clang; its self-test proves a function
# added without a row is caught). `make robustness` regenerates
# docs/robustness.md from a run; ROBUST_FUZZ_LOG= (the output of make fuzz)
# and ROBUST_MATRIX_LOG= (of make check-matrix) add those tables.
RB_BIN := $(BUILD)/tests/robustness/bad_inputs $(BUILD)/tests/robustness/bad_inputs_debug
RB_ROWS := $(BUILD)/robustness
ROBUST_FUZZ_LOG ?=
ROBUST_MATRIX_LOG ?=
$(BUILD)/tests/robustness/bad_inputs_debug: RB_DEF := -DCL_DEBUG
build-tests: $(RB_BIN)
$(RB_BIN): tests/robustness/bad_inputs.c tests/robustness/rb.h $(HEADERS) | $(SYSFS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) $(RB_DEF) -Itests/robustness -o $@ $< $(LDLIBS_PROG)

.PHONY: check-robustness robustness
check-robustness: $(RB_BIN) $(NORSEQ)
	@echo "== bad inputs of every public function ($(CC)$(if $(SAN), $(SAN)); modes: $(TEST_MODES))"
	$(Q)sh scripts/run-tests.sh -m "$(TEST_MODES)" $(if $(RUN_WRAP),-w "$(RUN_WRAP)") $(NORSEQ) $(RB_BIN)
	$(Q)mkdir -p $(RB_ROWS) && for b in $(RB_BIN); do \
		CL_RB_ROWS=$(RB_ROWS)/$$(basename $$b).default.rows $(RUN_WRAP) $$b >/dev/null || exit 1; done
	$(Q)python3 scripts/robustness_report.py check $(RB_ROWS)/bad_inputs.default.rows \
		$(RB_ROWS)/bad_inputs_debug.default.rows
	$(Q)python3 scripts/robustness_report.py selftest $(RB_ROWS)/bad_inputs.default.rows

robustness: $(RB_BIN) $(NORSEQ)
	$(Q)python3 scripts/robustness_report.py report --norseq $(NORSEQ) --rows-dir $(RB_ROWS) \
		$(if $(ROBUST_FUZZ_LOG),--fuzz-log $(ROBUST_FUZZ_LOG)) \
		$(if $(ROBUST_MATRIX_LOG),--matrix-log $(ROBUST_MATRIX_LOG)) \
		--out docs/robustness.md $(RB_BIN)

# ---------------------------------------------------------------- examples, bench

examples: deps
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) $(EXAMPLE_BIN)
	$(Q)for e in $(EXAMPLE_BIN); do echo "== $$e"; case $$e in */kv_server) ;; \
		*) $$e || { echo "example $$e failed"; exit 1; };; esac; \
		$$e --help >/dev/null && { $$e --no-such-option >/dev/null 2>&1; [ $$? -eq 2 ]; } || { echo "example $$e: --help or unknown option (want exit 2) wrong"; exit 1; }; done
	@echo "examples: $(words $(EXAMPLE_BIN)) built and ran"
	$(Q)$(MAKE) --no-print-directory bench-smoke

# The runtime benchmarks, built and run with tiny sizes: options, output and
# exit codes are checked, never a time (CI runs this through `make examples`).
RT_BENCH := pipe messaging schbench tbench
RT_BENCH_BIN := $(addprefix $(BUILD)/bench/,$(RT_BENCH))
bench-smoke:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) $(RT_BENCH_BIN)
	$(Q)for b in $(RT_BENCH_BIN); do \
		$$b --help >/dev/null || { echo "$$b --help failed"; exit 1; }; \
		$$b --no-such-option >/dev/null 2>&1; rc=$$?; \
		[ $$rc -eq 2 ] || { echo "$$b: unknown option exit $$rc, want 2"; exit 1; }; done
	$(Q)$(BUILD)/bench/pipe -l 2000 --json >/dev/null 2>&1 || { echo "bench-smoke: pipe failed"; exit 1; }
	$(Q)$(BUILD)/bench/messaging -g 1 -l 5 --json >/dev/null 2>&1 || { echo "bench-smoke: messaging failed"; exit 1; }
	$(Q)$(BUILD)/bench/schbench -r 200 -F 4 --json >/dev/null 2>&1 || { echo "bench-smoke: schbench failed"; exit 1; }
	$(Q)$(BUILD)/bench/tbench -r 2000 --json >/dev/null 2>&1 || { echo "bench-smoke: tbench failed"; exit 1; }
	@echo "bench-smoke: $(words $(RT_BENCH_BIN)) runtime benchmarks built and ran (not timed)"

# The M:N runtime beside Go and Boost.Fiber (bench/peers/runtime_*): the
# driver runs runtime_go and runtime_boost from its own directory. Their
# toolchains (golang-go, libboost-fiber-dev) are benchmark-only; a missing one
# is skipped with a note. Go builds offline, standard library only.
RT_PEERS_DIR := $(BUILD)/bench/peers
RT_PEERS_BIN := $(RT_PEERS_DIR)/runtime_peers
# The report runs the driver with the other peers (it runs the Go and Boost
# programs that runtime-peers-build made; without them it exits 77, skipped).
BENCH_BIN += $(RT_PEERS_BIN)
RT_PEERS_ARGS ?= --quick
# Recursive: looked up only when runtime-peers-build runs.
RT_PEERS_GO = $(if $(shell command -v go 2>/dev/null),$(RT_PEERS_DIR)/runtime_go $(RT_PEERS_DIR)/idle_go $(RT_PEERS_DIR)/parked_go)
RT_PEERS_BOOST = $(if $(shell printf '\043include <boost/fiber/all.hpp>\n' | \
	$(CXX) -x c++ -std=c++17 -fsyntax-only - 2>/dev/null && echo y),$(RT_PEERS_DIR)/runtime_boost)
# runtime_peers without buddies (fib: a joiner woken by an exit; storm:
# channel hints) and without homes (storm on two CPUs: every wakeup wide),
# for `make bench-wake-mechanisms` (its Go peer beside it, as it needs one).
WAKE_MECH_PEERS_BIN := $(RT_PEERS_DIR)/runtime_peers_no_buddy $(RT_PEERS_DIR)/runtime_peers_no_home
$(RT_PEERS_DIR)/runtime_peers_no_buddy: WAKE_MECH_DEF := -DCL_RUNTIME_NO_BUDDY
$(RT_PEERS_DIR)/runtime_peers_no_home: WAKE_MECH_DEF := -DCL_RUNTIME_NO_HOME
$(RT_PEERS_BIN) $(WAKE_MECH_PEERS_BIN): bench/peers/runtime_peers.c bench/bench.h bench/rtbench.h $(HEADERS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) $(WAKE_MECH_DEF) -Ibench -o $@ $< $(LDLIBS_PROG)
$(RT_PEERS_DIR)/%_go: bench/peers/%_go/main.go
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GO      $@")
	$(Q)GOCACHE=$(CURDIR)/$(BUILD)/go-cache GOPATH=$(CURDIR)/$(BUILD)/go-path GO111MODULE=off \
		GOFLAGS= GOPROXY=off go build -o $@ ./bench/peers/$*_go
$(RT_PEERS_DIR)/runtime_boost: bench/peers/runtime_boost.cpp
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)$(CXX) -std=c++17 $(OPT) -g $(PROG_WARN) -o $@ $< -lboost_fiber -lboost_context -pthread
.PHONY: bench-runtime-peers runtime-peers-build
# The driver and the peers whose toolchain is installed (a note for the others).
runtime-peers-build:
	$(Q)go="$(RT_PEERS_GO)"; boost="$(RT_PEERS_BOOST)"; \
	[ -n "$$go" ] || echo "skipped: golang-go not installed"; \
	[ -n "$$boost" ] || echo "skipped: libboost-fiber-dev not installed"; \
	$(MAKE) --no-print-directory OPT=-O2 SAN= $(RT_PEERS_BIN) $$go $$boost
# Exit 77 from the driver: no peer to compare with (skipped, not a failure).
bench-runtime-peers: runtime-peers-build
	$(Q)$(RT_PEERS_BIN) $(RT_PEERS_ARGS); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# The RPC benchmark (bench/rpc/, docs/benchmarks.md): the driver and
# open-loop load generator (rpc) starts the servers found next to it:
# rpc_epoll (C), rpc_go (golang-go, benchmark-only) and rpc_cachelocal (the
# runtime's I/O calls, linked with liburing). The cachelocal server is built
# only where the runtime's headers declare cl_accept() (looked up when make
# reads this file); otherwise it is skipped with a note, here and in the
# driver's output.
RPC_DIR := $(BUILD)/bench/rpc
RPC_BIN := $(RPC_DIR)/rpc
RPC_HAVE_RT_IO := $(shell grep -qsw cl_accept $(filter include/cachelocal/sched/%,$(HEADERS)) && echo 1)
RPC_URING_LIBS := $(shell pkg-config --libs liburing 2>/dev/null || echo -luring)
RPC_SERVERS := $(RPC_DIR)/rpc_epoll $(if $(RPC_HAVE_RT_IO),$(RPC_DIR)/rpc_cachelocal)
# The report runs the driver with the peers (bench_report.py's PEER_BENCHES).
BENCH_BIN += $(RPC_BIN)
RPC_ARGS ?= --quick
# Recursive: looked up only when rpc-build runs.
RPC_GO = $(if $(shell command -v go 2>/dev/null),$(RPC_DIR)/rpc_go)
$(RPC_BIN): bench/rpc/rpc.c bench/rpc/rpc_proto.h bench/bench.h bench/rtbench.h bench/peers/peers.h \
		$(HEADERS) | $(RPC_SERVERS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -Ibench -Ibench/peers -o $@ $< $(LDLIBS_PROG)
$(RPC_DIR)/rpc_epoll: bench/rpc/server_epoll.c bench/rpc/rpc_proto.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -o $@ $< $(LDLIBS_PROG)
$(RPC_DIR)/rpc_cachelocal: bench/rpc/server_cachelocal.c bench/rpc/rpc_proto.h $(HEADERS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS_PROG) -o $@ $< $(LDLIBS_PROG) $(RPC_URING_LIBS)
$(RPC_DIR)/rpc_go: bench/rpc/server_go/main.go
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GO      $@")
	$(Q)GOCACHE=$(CURDIR)/$(BUILD)/go-cache GOPATH=$(CURDIR)/$(BUILD)/go-path GO111MODULE=off \
		GOFLAGS= GOPROXY=off go build -o $@ ./bench/rpc/server_go
.PHONY: bench-rpc rpc-build
# The driver and the servers whose toolchain or runtime support is there (a note for the others).
rpc-build:
	$(Q)go="$(RPC_GO)"; [ -n "$$go" ] || echo "go server: skipped (golang-go not installed)"; \
	$(if $(RPC_HAVE_RT_IO),,echo "cachelocal server: skipped (runtime I/O not built)";) \
	$(MAKE) --no-print-directory OPT=-O2 SAN= $(RPC_BIN) $$go
# Exit 77 from the driver: no server could be started (skipped, not a failure).
bench-rpc: rpc-build
	$(Q)$(RPC_BIN) $(RPC_ARGS); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]
# Per request: the servers' instructions under callgrind and their system
# calls under strace, over a fixed request count (docs/benchmarks.md). Not
# part of check or CI. Exit 77 from the script: valgrind or strace missing.
.PHONY: rpc-callgrind
rpc-callgrind: rpc-build
	$(Q)sh scripts/rpc_callgrind.sh $(RPC_DIR); rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# The report (scripts/bench_report.py, docs/benchmarks.md): report.md,
# report.json, results.jsonl and SVG plots in $(BUILD)/bench/report/.
BENCH_REPORT = CC="$(CC)" CFLAGS_PROG="$(CFLAGS_PROG)" python3 scripts/bench_report.py \
	$(foreach p,$(strip $(PEER_SKIPPED)),--peer-skipped $(p))
# Recursive: the toolchain look-ups run only when a bench target expands it.
BENCH_REPORT_RT = $(BENCH_REPORT) $(if $(RT_PEERS_GO),,--peer-skipped golang-go) \
	$(if $(RT_PEERS_BOOST),,--peer-skipped libboost-fiber-dev)

# The peers that `deps` installs are found by the sub-make (PEER_BIN,
# PEER_SKIPPED are fixed when make reads the Makefile): one run reports them.
bench bench-long: deps librseq
	$(Q)$(MAKE) --no-print-directory $@-run
.PHONY: bench-run bench-long-run
bench-run: BENCH_RUN := quick $(BUILD)/bench/report
bench-long-run: BENCH_RUN := long $(BUILD)/bench/report-long
bench-run bench-long-run:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) OPT=-O2 SAN= $(BENCH_BIN)
	$(Q)$(MAKE) --no-print-directory runtime-peers-build
	$(Q)$(MAKE) --no-print-directory rpc-build
	$(Q)$(MAKE) --no-print-directory floor-builds
	$(Q)$(BENCH_REPORT_RT) --mode $(word 1,$(BENCH_RUN)) --out $(word 2,$(BENCH_RUN)) $(FLOOR_BUILD_ARGS) $(BENCH_BIN)

# One prepared command for a machine with >= 8 cores (scripts/bench_many_core.py:
# E3 with real bursts at 10 and 200 ms, the cross-CPU pipe in and across an
# LLC, the rq scale, the RPC servers on 1, 2 and 4 CPUs, tests/smp natively;
# <= 8 minutes; one report naming the machine). bench-many-core-dry: the
# same steps at the smallest sizes, any machine (CI).
MANY_CORE_BIN := $(BUILD)/bench/cid_bursts $(BUILD)/bench/pipe $(BUILD)/bench/rqscale
MANY_CORE_SMP = $(addprefix $(X64_OUT)/bin/,$(SMP_PROGS))
.PHONY: bench-many-core bench-many-core-dry
bench-many-core bench-many-core-dry:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) OPT=-O2 SAN= $(MANY_CORE_BIN) $(MANY_CORE_SMP)
	$(Q)$(MAKE) --no-print-directory rpc-build
	$(Q)python3 scripts/bench_many_core.py $(if $(filter %-dry,$@),--dry) --out $(BUILD)/bench/$(@:bench-%=%) \
		--bench $(BUILD)/bench --smp $(X64_OUT)/bin

# The Floors section's other compilers: bench/counter and bench/ids (with
# librseq's inline operations) built by each of FLOOR_CCS that is installed
# and is not CC, into build/<cc>/, and run beside the main build's. clang 16
# is the first clang with asm goto outputs (docs/percpu_ops.md).
FLOOR_CCS ?= gcc clang clang-16
FLOOR_CC_FOUND = $(foreach c,$(filter-out $(CCNAME),$(FLOOR_CCS)),$(if $(shell command -v $(c) 2>/dev/null),$(c)))
FLOOR_BUILD_ARGS = $(foreach c,$(FLOOR_CC_FOUND),--floor-build $(c)=build/$(c)/bench)
.PHONY: floor-builds
floor-builds:
	$(Q)$(foreach c,$(FLOOR_CC_FOUND),$(MAKE) --no-print-directory CC=$(c) BUILD=build/$(c) OPT=-O2 SAN= \
		build/$(c)/bench/counter build/$(c)/bench/ids &&) true

# Only the peer comparisons (quick sizes), their table on stdout; the same
# binaries `make bench` runs into report.json's "peers" array.
bench-peers:
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) OPT=-O2 SAN= $(PEER_BIN)
	$(Q)for p in $(PEER_SKIPPED); do echo "skipped: $$p not installed"; done
	$(Q)for b in $(PEER_BIN); do echo "== $$b --quick"; $$b --quick || exit 1; done

# Part of check: the report generator's and cache model's unit tests, every
# benchmark's --help / unknown option (exit 2), then the whole suite in
# --smoke mode (tiny sizes; numbers mean nothing) and its report.json validated.
check-bench-report: $(BENCH_BIN)
	$(Q)python3 -m unittest discover -s tests/scripts
	$(Q)for b in $(BENCH_BIN); do \
		$$b --help >/dev/null || { echo "$$b --help failed"; exit 1; }; \
		$$b --no-such-option >/dev/null 2>&1; rc=$$?; \
		[ $$rc -eq 2 ] || { echo "$$b: unknown option exit $$rc, want 2"; exit 1; }; done
	$(Q)$(BENCH_REPORT) --mode smoke --out $(BUILD)/bench/report-smoke $(BENCH_BIN)
	$(Q)python3 scripts/check_report.py $(BUILD)/bench/report-smoke/report.json

# ---------------------------------------------------------------- install

# cachelocal.pc links liburcu only where used (the sched/ headers), if installed.
comma := ,
URCU_LIBS_AS_NEEDED := $(if $(URCU_LIBS),-Wl$(comma)--push-state$(comma)--as-needed $(strip $(URCU_LIBS) $(URING_LIBS)) -Wl$(comma)--pop-state)
# The CMake config finds the headers relative to its own location (relocatable).
CMAKE_TO_INCLUDEDIR = $(shell realpath -m --relative-to=$(CMAKEDIR) $(INCLUDEDIR))
CMAKE_FILES := cachelocalConfig cachelocalConfigVersion

install:
	$(Q)for h in $(HEADERS); do \
		d=$(DESTDIR)$(INCLUDEDIR)/$$(dirname $${h#include/}); \
		install -d "$$d" && install -m 0644 "$$h" "$$d/"; done
	$(Q)install -d $(DESTDIR)$(PKGCONFIGDIR)
	$(Q)for pc in cachelocal cachelocal-sched; do \
		sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|@URCU_LIBS_AS_NEEDED@|$(URCU_LIBS_AS_NEEDED)|' \
		scripts/$$pc.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/$$pc.pc; done
	$(Q)install -d $(DESTDIR)$(CMAKEDIR)
	$(Q)for f in $(CMAKE_FILES); do \
		sed -e 's|@VERSION@|$(VERSION)|g' -e 's|@CMAKE_TO_INCLUDEDIR@|$(CMAKE_TO_INCLUDEDIR)|g' \
		scripts/$$f.cmake.in > $(DESTDIR)$(CMAKEDIR)/$$f.cmake; done
	@echo "installed $(words $(HEADERS)) headers into $(DESTDIR)$(INCLUDEDIR)/cachelocal, cachelocal.pc and cachelocal-sched.pc into $(DESTDIR)$(PKGCONFIGDIR), the CMake package into $(DESTDIR)$(CMAKEDIR)"
	$(Q)python3 scripts/man.py build --out $(MAN_OUT) >/dev/null
	$(Q)for s in 3 7; do install -d $(DESTDIR)$(MANDIR)/man$$s && \
		install -m 0644 $(MAN_OUT)/man$$s/* $(DESTDIR)$(MANDIR)/man$$s/; done
	@echo "installed $$(ls $(MAN_OUT)/man3 | wc -l) section 3 and $$(ls $(MAN_OUT)/man7 | wc -l) section 7 man pages into $(DESTDIR)$(MANDIR)"

uninstall:
	$(Q)rm -rf $(DESTDIR)$(INCLUDEDIR)/cachelocal
	$(Q)rm -f $(DESTDIR)$(PKGCONFIGDIR)/cachelocal.pc $(DESTDIR)$(PKGCONFIGDIR)/cachelocal-sched.pc
	$(Q)rm -f $(foreach f,$(CMAKE_FILES),$(DESTDIR)$(CMAKEDIR)/$(f).cmake)
	$(Q)if [ -d $(DESTDIR)$(CMAKEDIR) ]; then rmdir $(DESTDIR)$(CMAKEDIR); fi
	$(Q)python3 scripts/man.py build --out $(MAN_OUT) >/dev/null
	$(Q)for s in 3 7; do for f in $$(ls $(MAN_OUT)/man$$s); do rm -f $(DESTDIR)$(MANDIR)/man$$s/$$f; done; done
	@echo "removed cachelocal from $(DESTDIR)$(PREFIX)"

# ---------------------------------------------------------------- man pages
# scripts/man.py: one section 3 page per public function from its
# kernel-doc block, one per header (its functions and macros; each macro's
# name a .so link to it), the section 7 overviews of man/. check-man (part
# of check): every name of api/cachelocal.api has a page, ERRORS agree with
# docs/robustness.md, each page's examples compile, groff -ww is silent.
MAN_OUT := build/man
.PHONY: man html check-man
man:
	$(Q)python3 scripts/man.py build --out $(MAN_OUT)

html: man
	$(Q)python3 scripts/man.py html --man $(MAN_OUT) --out build/html

check-man:
	@echo "== man pages (scripts/man.py): a page per public name, ERRORS, examples, groff -ww"
	$(Q)python3 scripts/man.py check --out build/man-check --cc "$(CC)"
	$(Q)python3 scripts/man.py selftest --cc "$(CC)"

# Installs into DESTDIR (default: a staging dir under build/) and compiles
# consumers against the installed copy only: via pkg-config as C and C++ and
# the tests/outside programs, and a CMake project via find_package
# (tests/install/CMakeLists.txt).
STAGE := $(if $(DESTDIR),$(DESTDIR),$(CURDIR)/build/stage)
install-check: deps
	$(Q)$(if $(DESTDIR),,rm -rf $(STAGE))
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(STAGE)
	$(Q)sh scripts/install-check.sh "$(STAGE)" "$(PKGCONFIGDIR)" "$(CC)" "$(CXX)" $(BUILD)/install-check "$(PREFIX)"

# Every example built with the line in its own header comment, verbatim,
# against an installed copy; a spinning task preempted with the README's
# line (part of check).
.PHONY: check-example-builds
check-example-builds:
	$(Q)rm -rf build/stage-examples
	$(Q)$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/build/stage-examples >/dev/null
	$(Q)sh scripts/check-example-builds.sh build/stage-examples "$(PKGCONFIGDIR)" "$(CC)" $(BUILD)/example-builds

# examples/kv_server driven from clients (tests/scripts/test_kv_server.py;
# part of check; make examples only builds it: it serves until a signal).
.PHONY: check-kv-server
check-kv-server: $(BUILD)/examples/kv_server
	$(Q)KV_SERVER=$(CURDIR)/$(BUILD)/examples/kv_server python3 -m unittest -v tests/scripts/test_kv_server.py

# ---------------------------------------------------------------- releases, packages, API

# The public API list (scripts/api.py): api-check (part of check) fails when
# the headers differ from api/cachelocal.api; api-update rewrites it (then
# note the change in CHANGES.md); the self-test plants changes in a copy of
# the headers and sees each caught.
.PHONY: api-check api-update check-version dist distcheck distcheck-quick deb deb-check check-install-docs
api-check:
	@echo "== public API (api/cachelocal.api)"
	$(Q)python3 scripts/api.py check
	$(Q)python3 scripts/api.py selftest

api-update:
	$(Q)python3 scripts/api.py generate --out api/cachelocal.api
	@echo "api-update: review git diff api/cachelocal.api and note the change in CHANGES.md (Unreleased)"

# Part of check: version.h, debian/changelog, CHANGES.md, the installed .pc
# files and CMake package, and CL_VERSION_STRING agree.
check-version:
	@echo "== version $(VERSION) in every place that names it"
	$(Q)sh scripts/check-version.sh "$(CC)"

# make dist: build/cachelocal-X.Y.Z.tar.gz from the files git tracks.
# make distcheck: unpacks it in a scratch directory and runs make check
# there (the whole suite). distcheck-quick (what CI runs): the same with a
# reduced check, DISTCHECK_QUICK: the API and version checks, and the unit
# tests that read the generated sysfs fixtures or check the version, in the
# default id mode (building every test from scratch is most of make check's
# time; CI's make check runs the header checks on the same files).
DIST_TARBALL := build/cachelocal-$(VERSION).tar.gz
DISTCHECK_UNIT := test_topology test_cacheline
DISTCHECK_QUICK := api-check check-version check-unit \
	UNIT_BIN="$(addprefix $(BUILD)/tests/unit/,$(DISTCHECK_UNIT))" VARIANT_BIN= TEST_MODES=default
dist:
	$(Q)sh scripts/dist.sh $(VERSION) build

distcheck: dist
	$(Q)sh scripts/distcheck.sh $(DIST_TARBALL) check

distcheck-quick: dist
	$(Q)sh scripts/distcheck.sh $(DIST_TARBALL) $(DISTCHECK_QUICK)

# make deb: the Debian packages (debian/), built by dpkg-buildpackage from
# the release tarball unpacked under build/deb/, so the source tree stays
# clean and the packages land in build/deb/. deb-check: lintian (errors
# fail; the accepted warnings are in debian/lintian-accepted), then the
# built libcachelocal-dev is unpacked into a staging directory
# (dpkg-deb -x) and the consumers of install-check are built against it;
# DEB_CHECK=system installs it with dpkg -i instead (as root: CI) and
# removes it afterwards.
DEB_DIR := build/deb
DEB_CHECK ?= stage
deb: dist
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)
	$(Q)tar -xzf $(DIST_TARBALL) -C $(DEB_DIR)
	$(Q)cd $(DEB_DIR)/cachelocal-$(VERSION) && dpkg-buildpackage -us -uc -b
	$(Q)rm -rf $(DEB_DIR)/cachelocal-$(VERSION)
	@ls $(DEB_DIR)/*.deb

deb-check: deb
	$(Q)sh scripts/deb-check.sh $(DEB_DIR) $(VERSION) $(DEB_CHECK) "$(CC)" "$(CXX)" $(BUILD)/deb-check

# README "Install": its three blocks run as written in a fresh copy of the
# tree (the deb one only as root: it installs the package, then removes it).
check-install-docs: dist
	$(Q)sh scripts/check-install-docs.sh $(DIST_TARBALL)

# ---------------------------------------------------------------- emulated machines

# The guests: static test programs in an initramfs with tests/guest/init.c
# as /init, booted on Debian's kernels in QEMU 10 (scripts/guest.sh: QEMU
# and the kernels are fetched once into CL_GUEST_DIR, outside the tree).
# Test-only packages of scripts/deps.txt: gcc-aarch64-linux-gnu,
# libc6-dev-arm64-cross, qemu-system-arm (its libraries serve QEMU 10),
# cpio; liburcu-dev:arm64 comes through multiarch (aarch64-setup).
#
# STATIC_RULES(OUT,CC,CFLAGS,LDFLAGS,TAG,USER_CFLAGS): the rules
# that build, static
# into OUT/bin, the unit tests (through tests/unit/crshim.h, no Criterion),
# the percpu_ops variants, the stress programs, the many-CPU programs of
# tests/smp, examples/ (as example_NAME), the guest's /init and fault
# wrapper (tests/guest) with tests/tools/norseq.c, and a
# user's SMP_EXTRA programs (with USER_CFLAGS: gnu11, -O2 -Wall, the
# tree's headers; the user's own -D and warnings are theirs).
define STATIC_RULES
$(1)/bin/test_percpu_ops.v%: tests/unit/test_percpu_ops.c tests/unit/test_percpu_ops.variants \
		$$(HEADERS) tests/unit/cl_test.h tests/unit/crshim.h
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)flags=$$$$(grep -v '^[[:space:]]*\(#\|$$$$\)' tests/unit/test_percpu_ops.variants | sed -n "$$*p" | sed 's/^plain://'); \
	$(2) $(3) $$$$flags -Itests/unit -o $$@ $$< $(4)
$(1)/bin/test_%: tests/unit/test_%.c $$(HEADERS) tests/unit/cl_test.h tests/unit/crshim.h
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) $(3) -Itests/unit -o $$@ $$< $(4)
$(1)/bin/%: tests/stress/%.c tests/stress/stress.h $$(HEADERS)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) $(3) -Itests/stress -o $$@ $$< $(4)
$(1)/bin/%: tests/smp/%.c $$(wildcard tests/smp/*.h) $$(HEADERS)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) $(3) -Itests/smp -o $$@ $$< $(4)
$(1)/bin/extra_%: $$(HEADERS) $$(SMP_EXTRA)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@ ($$(filter %/$$*.c $$*.c,$$(SMP_EXTRA)))")
	$$(Q)$(2) $(6) -o $$@ $$(firstword $$(filter %/$$*.c $$*.c,$$(SMP_EXTRA))) $(4)
$(1)/bin/bench_slice_locks: bench/slice_locks.c bench/bench.h $$(HEADERS)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) $(3) -Ibench -o $$@ $$< $(4)
$(1)/bin/example_%: examples/%.c examples/example_args.h $$(HEADERS)
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) $(3) -Iexamples -o $$@ $$< $(4)
$(1)/bin/fault: tests/guest/fault.c $(1)/bin/norseq
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) -std=c11 -O2 $$(PROG_WARN) -static -o $$@ $$<
$(1)/bin/norseq: tests/tools/norseq.c
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) -std=c11 -O2 $$(PROG_WARN) -static -o $$@ $$<
$(1)/init: tests/guest/init.c
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  $(5)CC   $$@")
	$$(Q)$(2) -std=c11 -O2 $$(PROG_WARN) -static -o $$@ $$<
endef

# SMP_EXTRA="file.c ...": further C sources, built static for every guest's
# architecture against the tree's headers (liburcu's flags) and run in
# every guest of check-smp and check-kernels as "extra FILE".
SMP_EXTRA ?=
SMP_EXTRA_NAMES := $(basename $(notdir $(SMP_EXTRA)))

# aarch64 (make check-aarch64: Debian's arm64 6.1 kernel, -smp 2; and
# guest D of check-smp). liburcu for arm64 (the runtime's lists and
# liburcu-memb) comes from Debian's arm64 package through multiarch:
# headers and archives in the aarch64 directories, which the cross
# compiler does not search by itself.
A64_CC ?= aarch64-linux-gnu-gcc
A64_OUT := build/aarch64
# The runtime's I/O is epoll only there (CL_RUNTIME_NO_IO_URING): the cross
# compiler finds the host's <liburing.h>, but no arm64 liburing is installed.
A64_CFLAGS := -std=c11 -O2 $(PROG_WARN) -Iinclude -D_GNU_SOURCE -DCL_TEST_DATA_DIR='"/data"' \
	-DCL_TEST_SHIM -DCL_RUNTIME_NO_IO_URING -idirafter /usr/include/aarch64-linux-gnu $(EXTRA_CFLAGS)
A64_LDFLAGS := -static -pthread -L/usr/lib/aarch64-linux-gnu -lurcu-cds -lurcu-memb -lurcu-common -lm
$(eval $(call STATIC_RULES,$(A64_OUT),$(A64_CC),$(A64_CFLAGS),$(A64_LDFLAGS),A64,\
	-std=gnu11 -O2 -Wall -Iinclude -idirafter /usr/include/aarch64-linux-gnu $(EXTRA_CFLAGS)))
# x86_64 (the guests of check-smp and check-kernels)
X64_CC ?= gcc
X64_OUT := build/x86_64
X64_CFLAGS := -std=c11 -O2 $(PROG_WARN) -Iinclude -D_GNU_SOURCE -DCL_TEST_DATA_DIR='"/data"' \
	-DCL_TEST_SHIM $(EXTRA_CFLAGS)
X64_LDFLAGS := -static -pthread -lurcu-cds -lurcu-memb -lurcu-common -luring -lm
$(eval $(call STATIC_RULES,$(X64_OUT),$(X64_CC),$(X64_CFLAGS),$(X64_LDFLAGS),X64,\
	-std=gnu11 -O2 -Wall -Iinclude $(EXTRA_CFLAGS)))

# check-aarch64: a subset of the unit tests and the stress programs, run on
# Debian's arm64 cloud kernel in qemu-system-aarch64 -smp 2
# (scripts/check-aarch64.sh; the kernel is fetched once into build/aarch64/,
# or into CL_AARCH64_KERNEL_DIR when set, which survives make clean; what
# runs is tests/guest/aarch64.plan).
# The unit tests whose subject is per-architecture (the sections, rseq
# registration, the context switch and the clock) or built on it, and that
# need no fake sysfs tree; test_percpu_ops also as its variants (.v1 no asm,
# .v2 trap inside a section, .v3 scratch hook). Left out: the topology and
# sched/rq tests (no per-arch code; they read the host's fake sysfs trees),
# test_sched_runtime_stacks (its 100000 parked tasks need more memory than
# the guest has: OOM-killed at 2 GiB). The guest has 2 GiB: test_sched_runtime's
# ten thousand tasks are OOM-killed at 1 GiB.
A64_UNIT := test_percpu_ops test_rseq test_counter test_objcache test_sched_runtime \
	test_sched_runtime_lifecycle test_sched_runtime_preempt test_sched_runtime_wake \
	test_sched_runtime_chan
A64_VARIANTS := test_percpu_ops.v1 test_percpu_ops.v2 test_percpu_ops.v3
A64_STRESS := counter_stress list_stress buffer_stress objcache_stress rseq_param_stress
A64_BIN := $(addprefix $(A64_OUT)/bin/,$(A64_UNIT) $(A64_VARIANTS) $(A64_STRESS))
# check-aarch64-quick (for CI): every section kind with aborts (the stress
# programs), the sections' unit test and its trap and scratch-hook variants,
# rseq registration, the context switch (the runtime's lifecycle and
# preemption tests) and the cross-worker wakeups on a weakly ordered CPU
# (the remote wake list, wake-affine moves, channel hand-over). Left out: test_sched_runtime (most of the guest's time),
# test_counter and test_objcache (their stress programs stay), the no-asm
# variant (the fallback, which check-cross runs too).
A64_QUICK := test_percpu_ops test_percpu_ops.v2 test_percpu_ops.v3 test_rseq \
	test_sched_runtime_lifecycle test_sched_runtime_preempt test_sched_runtime_wake \
	test_sched_runtime_chan $(A64_STRESS)
# What check-aarch64 builds and runs (check-aarch64-quick sets it to A64_QUICK).
A64_RUN_BIN := $(A64_BIN)

.PHONY: check-aarch64 check-aarch64-quick aarch64-build aarch64-setup
aarch64-build: $(A64_RUN_BIN) $(A64_OUT)/init
# arm64 multiarch packages (liburcu-dev:arm64) and the kernel, once
aarch64-setup:
	$(Q)OUT=$(A64_OUT) sh scripts/check-aarch64.sh --setup
check-aarch64:
	@echo "== aarch64: cross-built tests on an arm64 kernel in qemu-system-aarch64 -smp 2"
	$(Q)$(MAKE) --no-print-directory aarch64-setup
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) aarch64-build
	$(Q)OUT=$(A64_OUT) INIT=$(A64_OUT)/init sh scripts/check-aarch64.sh --run $(A64_RUN_BIN)
check-aarch64-quick:
	$(Q)$(MAKE) --no-print-directory check-aarch64 A64_RUN_BIN="$(addprefix $(A64_OUT)/bin/,$(A64_QUICK))"

# check-smp: many CPUs, several LLCs and nodes, CPUs that come and go
# (scripts/check-smp.sh, tests/guest/smp.plan): guests A (8 CPUs, 2 LLCs,
# 1 node), B (32 CPUs, SMT2, 4 LLCs, 2 nodes), C (64 CPUs, 8 LLCs,
# 4 nodes) on 6.12 and 7.3, D (aarch64, 8 CPUs) on 6.12, E (96 CPUs, SMT2,
# 4 LLCs, 4 nodes: the runtime past 64 workers) on 7.3. The programs: the
# unit tests that make sense there, the stress programs, tests/smp (sized
# to the guest), the faults (tests/guest/fault.c: hotplug, cpuset shrink,
# rseq and membarrier denied) and E3k's bursts. SMP_GUESTS picks guests
# (e.g. "B-6.12"); check-smp-quick runs guest A on 6.12 with one fault.
SMP_UNIT := test_rseq test_cid test_percpu test_percpu_ops test_counter test_objcache \
	test_brlock test_spinlock test_sched_threads test_sched_runtime test_sched_runtime_lifecycle \
	test_sched_runtime_preempt test_sched_runtime_wake test_sched_runtime_chan
SMP_STRESS := counter_stress list_stress buffer_stress objcache_stress rseq_param_stress brlock_stress
SMP_PROGS := $(basename $(notdir $(wildcard tests/smp/*.c)))
SMP_NAMES := $(SMP_UNIT) $(SMP_STRESS) $(SMP_PROGS) fault $(addprefix extra_,$(SMP_EXTRA_NAMES))
SMP_GUESTS ?= A-6.12 A-7.3 B-6.12 B-7.3 C-6.12 C-7.3 D-6.12 E-7.3
SMP_ENV = SMP_X64=$(X64_OUT) SMP_A64=$(A64_OUT) SMP_SYSFS=$(SYSFS_DIR) SMP_EXTRA="$(SMP_EXTRA_NAMES)"

.PHONY: check-smp check-smp-quick smp-build smp-build-x64 smp-build-a64 smp-setup
smp-build-x64: $(addprefix $(X64_OUT)/bin/,$(SMP_NAMES)) $(X64_OUT)/init | $(SYSFS_STAMP)
smp-build-a64: $(addprefix $(A64_OUT)/bin/,$(SMP_NAMES)) $(A64_OUT)/init
smp-setup:
	$(Q)sh scripts/check-smp.sh --setup $(SMP_GUESTS)
check-smp:
	@echo "== smp: guests $(SMP_GUESTS) (QEMU 10, TCG: correctness and counts, no timing)"
	$(Q)$(MAKE) --no-print-directory smp-setup
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) smp-build-x64
	$(Q)case "$(SMP_GUESTS)" in *D-*) $(MAKE) --no-print-directory aarch64-setup && \
		$(MAKE) --no-print-directory -j$(NPROC) smp-build-a64;; esac
	$(Q)$(SMP_ENV) sh scripts/check-smp.sh $(SMP_GUESTS)
check-smp-quick:
	$(Q)$(MAKE) --no-print-directory check-smp SMP_GUESTS=A-6.12 SMP_QUICK=1

# check-kernels: every unit-test program and stress program on the kernels
# users run: Debian 12's own 6.1, 6.12 and 7.3, in an 8-CPU x86_64 guest,
# and 7.3 on arm64 (7.3-arm64, an 8-CPU arm64 guest, the aarch64 build)
# (scripts/check-kernels.sh, tests/guest/kernels.plan); SMP_EXTRA as in
# check-smp. check-kernels-quick (CI): 6.1 and 7.3, the rseq, cid,
# percpu_ops, counter and objcache programs, the runtime lifecycle test.
KERNELS ?= 6.1 6.12 7.3 7.3-arm64
KERNELS_NAMES := $(filter-out test_faults,$(basename $(notdir $(wildcard tests/unit/test_*.c) \
	$(wildcard tests/stress/*.c)))) fault example_parked_tasks bench_slice_locks \
	$(addprefix extra_,$(SMP_EXTRA_NAMES))
KERNELS_ENV = KERNELS_X64=$(X64_OUT) KERNELS_A64=$(A64_OUT) KERNELS_SYSFS=$(SYSFS_DIR) \
	SMP_EXTRA="$(SMP_EXTRA_NAMES)"
# an arm64 kernel in KERNELS (7.3-arm64) needs the aarch64 build of the same programs
KERNELS_A64_BIN := $(if $(filter %-arm64,$(KERNELS)),$(addprefix $(A64_OUT)/bin/,$(KERNELS_NAMES)) \
	$(A64_OUT)/init)
.PHONY: check-kernels check-kernels-quick kernels-build kernels-setup
kernels-build: $(if $(filter-out %-arm64,$(KERNELS)),$(addprefix $(X64_OUT)/bin/,$(KERNELS_NAMES)) \
	$(X64_OUT)/init) $(KERNELS_A64_BIN) | $(SYSFS_STAMP)
kernels-setup:
	$(Q)sh scripts/check-kernels.sh --setup $(KERNELS)
check-kernels:
	@echo "== kernels: $(KERNELS) (QEMU 10, TCG: correctness and counts, no timing)"
	$(Q)$(MAKE) --no-print-directory kernels-setup
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) kernels-build
	$(Q)$(KERNELS_ENV) sh scripts/check-kernels.sh $(KERNELS)
check-kernels-quick:
	$(Q)$(MAKE) --no-print-directory check-kernels KERNELS="6.1 7.3" KERNELS_QUICK=1

# check-cross: the headers with Debian's cross compilers for riscv64, ppc64el,
# s390x, armhf and i386, and a fallback smoke test under qemu-user
# (scripts/check-cross.sh; the cross compilers are installed by hand: not in
# deps.txt, not part of check or CI).
.PHONY: check-cross
check-cross:
	$(Q)sh scripts/check-cross.sh

# ---------------------------------------------------------------- layout

# file:struct pairs to dump with pahole.
LAYOUT_STRUCTS ?= examples/layout.c:demo_rq
layout:
	$(Q)if ! command -v pahole >/dev/null; then echo "layout: pahole not installed (apt-get install dwarves); skipped"; exit 0; fi; \
	mkdir -p $(BUILD)/layout docs/layout; \
	for p in $(LAYOUT_STRUCTS); do f=$${p%%:*}; s=$${p##*:}; \
		$(CC) $(CFLAGS_PROG) -g -c $$f -o $(BUILD)/layout/$$s.o && \
		pahole -C $$s $(BUILD)/layout/$$s.o > docs/layout/$$s.pahole.txt && \
		echo "layout: docs/layout/$$s.pahole.txt"; done

clean:
	rm -rf build $(SYSFS_STAMP) $(addprefix $(SYSFS_DIR)/,$(shell sh $(SYSFS_DIR)/gen-sysfs.sh --trees))
-include sched_ext/scx.mk
