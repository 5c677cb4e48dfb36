#!/bin/sh
# check-aarch64.sh - run the aarch64 build of the tests on a real arm64 Linux
# kernel in an emulated 2-CPU machine (make check-aarch64).
#
# Usage: check-aarch64.sh --setup           the arm64 package lists (dpkg
#                                           multiarch), liburcu-dev:arm64 for
#                                           the runtime's tests, and the kernel
#                                           in CL_AARCH64_KERNEL_DIR (default $OUT;
#                                           each once; root)
#        check-aarch64.sh --run PROGRAM...  pack PROGRAMs (built by make, static
#                                           aarch64) with the /init of
#                                           tests/guest/init.c, boot, check
#
# The machine is QEMU 10's (scripts/guest.sh, which fetches it once).
# Why a full kernel: qemu-user answers ENOSYS to rseq, so it could run only
# the fallback. Debian's arm64 cloud kernel boots in qemu-system-aarch64
# (TCG) in seconds, glibc registers rseq there, and preemption, migration
# and signals abort critical sections for real. The kernel is 6.1: rseq but
# no mm_cid, so the mm_cid index kind takes its documented fallback
# (atomic-no-mm_cid), which is tested too.
#
# The host side fails on a program that fails, a missing result, a timeout
# (per program, from the plan, and QEMU_TIMEOUT for the whole boot), or
# when the stress programs that ran critical sections ("ops rseq") saw no
# abort at all: a run without aborts has not tested the abort paths.
#
# Environment: OUT (default build/aarch64), INIT (the built /init),
# QEMU_TIMEOUT (seconds, default 240), PLAN_ENV (extra VAR=VALUE for every
# program), CL_AARCH64_KERNEL_PKG (a linux-image-*-arm64 package name:
# default the one linux-image-cloud-arm64 depends on), CL_AARCH64_KERNEL_DIR
# (where the kernel is fetched once and kept, default $OUT: a directory
# outside the tree survives make clean and fresh clones, e.g. in CI).
set -u
# shellcheck source=scripts/guest.sh
. "$(dirname "$0")/guest.sh"
OUT=${OUT:-build/aarch64}
KDIR=${CL_AARCH64_KERNEL_DIR:-$OUT}
QEMU_TIMEOUT=${QEMU_TIMEOUT:-240}

die() {
	echo "check-aarch64: $*" >&2
	exit 1
}

# multiarch: the arm64 package lists, added once.
add_arm64() {
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed (root needed)"
		apt-get update -qq || die "apt-get update failed"
	fi
}

# liburcu-dev:arm64 (the runtime's tests link liburcu-memb).
install_urcu() {
	case "$(dpkg-query -W -f='${Status}' liburcu-dev:arm64 2>/dev/null)" in
	*"install ok installed"*) return 0 ;;
	esac
	add_arm64
	echo "check-aarch64: apt-get install liburcu-dev:arm64"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends liburcu-dev:arm64 \
		>/dev/null || die "apt-get install liburcu-dev:arm64 failed"
}

# fetch_kernel: $KDIR/vmlinuz from Debian's arm64 cloud kernel package.
fetch_kernel() {
	[ -s "$KDIR/vmlinuz" ] && return 0
	mkdir -p "$KDIR/kernel" || die "cannot create $KDIR/kernel"
	add_arm64
	pkg=${CL_AARCH64_KERNEL_PKG:-}
	if [ -z "$pkg" ]; then
		pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-[^:]*-cloud-arm64\).*/\1/p' | head -1)
		if [ -z "$pkg" ]; then
			apt-get update -qq || die "apt-get update failed"
			pkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
				sed -n 's/^ *Depends: \(linux-image-[^:]*-cloud-arm64\).*/\1/p' | head -1)
		fi
	fi
	[ -n "$pkg" ] || die "no arm64 cloud kernel package found (apt-cache depends linux-image-cloud-arm64:arm64)"
	echo "check-aarch64: fetching $pkg:arm64 into $KDIR/kernel"
	rm -f "$KDIR"/kernel/*.deb
	(cd "$KDIR/kernel" && apt-get download -q "$pkg:arm64" >/dev/null 2>&1) ||
		die "apt-get download $pkg:arm64 failed"
	rm -rf "$KDIR/kernel/x"
	dpkg-deb -x "$KDIR"/kernel/*.deb "$KDIR/kernel/x" || die "dpkg-deb -x failed"
	img=$(ls "$KDIR"/kernel/x/boot/vmlinuz-* 2>/dev/null | head -1)
	[ -n "$img" ] || die "no boot/vmlinuz-* in $pkg"
	cp "$img" "$KDIR/vmlinuz.tmp" && mv "$KDIR/vmlinuz.tmp" "$KDIR/vmlinuz"
	echo "$pkg" >"$KDIR/vmlinuz.pkg"
	rm -rf "$KDIR/kernel"
}

# run PROGRAM...: the plan (tests/guest/aarch64.plan lines for the programs
# given), the initramfs, the boot, the verdict (scripts/guest.sh).
run() {
	[ -x "${INIT:-}" ] || die "INIT (the built /init) missing"
	command -v cpio >/dev/null || die "cpio missing (make deps)"
	fetch_kernel
	guest_fetch_qemu
	root=$OUT/root
	rm -rf "$root" && mkdir -p "$root"
	names=""
	for p in "$@"; do
		names="$names|$(basename "$p")"
	done
	# the plan's lines for these programs (its third field), in /init's form
	awk -v want="${names#|}" 'BEGIN { n = split(want, w, "|"); for (i = 1; i <= n; i++) ok[w[i]] = 1 }
		$1 !~ /^#/ && ($3 in ok)' tests/guest/aarch64.plan >"$OUT/plan.sel"
	for p in "$@"; do
		awk -v b="$(basename "$p")" '$3 == b { f = 1 } END { exit !f }' "$OUT/plan.sel" ||
			die "no line for $(basename "$p") in tests/guest/aarch64.plan"
	done
	guest_plan "$OUT/plan.sel" . 1 "${PLAN_ENV:-}" >"$root/plan"
	guest_pack "$root" "$INIT" "$(dirname "$1")" "$OUT/tests.cpio.gz"
	echo "check-aarch64: booting $(cat "$KDIR/vmlinuz.pkg" 2>/dev/null || echo "$KDIR/vmlinuz") in qemu-system-aarch64 -smp 2 ($(wc -l <"$root/plan") runs, up to ${QEMU_TIMEOUT} s)"
	log=$OUT/console.log
	start=$(date +%s)
	guest_boot aarch64 "$KDIR/vmlinuz" "$OUT/tests.cpio.gz" 2:::1:1:2048 "$log" "$QEMU_TIMEOUT"
	qrc=$?
	end=$(date +%s)
	# the programs' own output, without the kernel's
	sed -n '/@@CLG START/,/@@CLG DONE/p' "$log.txt" | grep -v '^\[ *[0-9.]*\] ' | grep -v '^@@CLG '
	guest_report "$log" "check-aarch64:"
	fails=$GUEST_FAILED passed=$GUEST_PASSED aborts=$GUEST_ABORTS
	[ "$qrc" -eq 0 ] || echo "check-aarch64: qemu exit $qrc after $((end - start)) s (console: $log)"
	rseq_lines=$(grep -c 'ops rseq' "$log.txt")
	echo "check-aarch64: rseq aborts seen on the rseq path: $aborts (in $rseq_lines stress runs with ops rseq)"
	if [ "$rseq_lines" -eq 0 ] || [ "$aborts" -eq 0 ]; then
		echo "check-aarch64: no abort on the rseq path: the abort paths were not tested"
		fails=$((fails + 1))
	fi
	echo "check-aarch64: $(uname -m) host, $((end - start)) s in qemu; console log: $log"
	echo "aarch64: $passed passed, $fails failed"
	[ "$fails" -eq 0 ]
}

case "${1:-}" in
--setup)
	install_urcu
	fetch_kernel
	guest_fetch_qemu
	;;
--run)
	shift
	run "$@"
	;;
*) sed -n '2,31p' "$0" ;;
esac
