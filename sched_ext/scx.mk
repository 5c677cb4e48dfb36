# sched_ext/scx.mk - the sched_ext scheduler scx_cachelocal (BPF program and
# daemon) and the programs its guest check runs, built in the Debian 13
# chroot of scripts/scx-chroot.sh (clang 19, libbpf 1.5, bpftool: Debian 12
# has none of them). Included by the top-level Makefile; the chroot runs
# this file alone (target scx-in-chroot).
#
#   make scx         the chroot (once), vmlinux.h of the 7.3 guest kernel,
#                    build/scx/bin/: scx_cachelocal (static), scx_check
#                    (load and checks), init
#                    and the daemon built with the "before" layouts and
#                    head detach (layout choices, same behaviour):
#                    scx_cachelocal_rq_scattered (-DCL_RQ_LAYOUT_SCATTERED),
#                    scx_cachelocal_se_inline (-DCL_SE_AVG_INLINE),
#                    scx_cachelocal_detach_head (-DCL_DETACH_FROM_HEAD)
#   make check-scx   boot the 7.3 guest with them (scripts/check-scx.sh);
#                    SCX_CPUS=32 boots 32 CPUs (4 sockets x 8 cores, 4 nodes)

SCX_OUT ?= build/scx
SCX_CPUS ?= 16
SCX_VARIANTS = rq_scattered se_inline detach_head
SCX_VARIANT_rq_scattered = -DCL_RQ_LAYOUT_SCATTERED
SCX_VARIANT_se_inline = -DCL_SE_AVG_INLINE
SCX_VARIANT_detach_head = -DCL_DETACH_FROM_HEAD
SCX_CLANG ?= clang-19
SCX_CC ?= gcc
SCX_CFLAGS ?= -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-stringop-overflow
SCX_BPF_CFLAGS ?= -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -Wno-missing-declarations \
	-Wno-unused-function

.PHONY: scx check-scx scx-in-chroot

scx:
	nice -n 19 sh scripts/scx-chroot.sh --setup
	@mkdir -p $(SCX_OUT)/bin
	@[ -s $(SCX_OUT)/vmlinux.h ] || nice -n 19 sh scripts/scx-chroot.sh --vmlinux-h $(SCX_OUT)/vmlinux.h
	nice -n 19 sh scripts/scx-chroot.sh . 'make --no-print-directory -f sched_ext/scx.mk scx-in-chroot'

check-scx: scx
	SCX_CPUS=$(SCX_CPUS) nice -n 19 sh scripts/check-scx.sh

scx-in-chroot: $(SCX_OUT)/bin/scx_cachelocal $(SCX_OUT)/bin/scx_check $(SCX_OUT)/bin/init \
	$(SCX_VARIANTS:%=$(SCX_OUT)/bin/scx_cachelocal_%)

$(SCX_OUT)/scx_cachelocal.bpf.o: sched_ext/scx_cachelocal.bpf.c sched_ext/scx_cachelocal.h $(SCX_OUT)/vmlinux.h
	$(SCX_CLANG) $(SCX_BPF_CFLAGS) -I$(SCX_OUT) -Isched_ext -c $< -o $@

$(SCX_OUT)/scx_cachelocal.skel.h: $(SCX_OUT)/scx_cachelocal.bpf.o
	bpftool gen skeleton $< name scx_cachelocal >$@.tmp && mv $@.tmp $@

$(SCX_OUT)/bin/scx_cachelocal: sched_ext/scx_cachelocal.c sched_ext/libeu_shim.c sched_ext/scx_cachelocal.h \
		$(SCX_OUT)/scx_cachelocal.skel.h \
		$(wildcard include/cachelocal/*.h include/cachelocal/*/*.h include/cachelocal/*/*/*.h)
	@mkdir -p $(dir $@)
	$(SCX_CC) $(SCX_CFLAGS) -static -Iinclude -I$(SCX_OUT) -Isched_ext $< sched_ext/libeu_shim.c -o $@ \
		-lbpf -lelf -lz -lzstd -lurcu-memb -lurcu-cds -lurcu-common -lpthread

SCX_DAEMON_DEPS = sched_ext/scx_cachelocal.c sched_ext/libeu_shim.c sched_ext/scx_cachelocal.h \
	$(SCX_OUT)/scx_cachelocal.skel.h \
	$(wildcard include/cachelocal/*.h include/cachelocal/*/*.h include/cachelocal/*/*/*.h)

$(SCX_OUT)/bin/scx_cachelocal_%: $(SCX_DAEMON_DEPS)
	@mkdir -p $(dir $@)
	$(SCX_CC) $(SCX_CFLAGS) $(SCX_VARIANT_$*) -static -Iinclude -I$(SCX_OUT) -Isched_ext $< sched_ext/libeu_shim.c \
		-o $@ -lbpf -lelf -lz -lzstd -lurcu-memb -lurcu-cds -lurcu-common -lpthread

$(SCX_OUT)/bin/scx_check: sched_ext/scx_check.c
	@mkdir -p $(dir $@)
	$(SCX_CC) $(SCX_CFLAGS) -static -Iinclude $< -o $@ -lpthread

$(SCX_OUT)/bin/init: tests/guest/init.c
	@mkdir -p $(dir $@)
	$(SCX_CC) -O2 -static $< -o $@
