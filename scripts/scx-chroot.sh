#!/bin/sh
# scx-chroot.sh - the Debian 13 (trixie) build root of the sched_ext
# scheduler (sched_ext/scx.mk): clang 19, libbpf 1.5, bpftool and the
# static libraries the daemon links, which Debian 12 does not have.
#
# Usage: scx-chroot.sh --setup        make the chroot (once; needs root and
#                                     debootstrap, which it installs from
#                                     the host's own Debian 12 apt if missing)
#        scx-chroot.sh --path         print the chroot's directory
#        scx-chroot.sh --vmlinux-h OUT   OUT: the 7.3 guest kernel's BTF as C
#                                     (bpftool btf dump ... format c)
#        scx-chroot.sh DIR CMD...     run CMD (sh -c) in the chroot, with the
#                                     host directory DIR bind-mounted at
#                                     /src and as the working directory
#
# The chroot lives outside the tree, in
# ${CL_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cachelocal-guest}/trixie-chroot
# (it survives make clean), made by debootstrap from the mirror the host's
# apt uses for bookworm. The host's apt sources and packages are never
# changed: no trixie source is added to the host, nothing is upgraded.
#
# The 7.3 kernel's BTF: the guest kernel (scripts/guest.sh fetches it) is a
# bzImage; its vmlinux ELF, unpacked from the bzImage's payload, carries
# .BTF, and bpftool dumps it. The struct_ops of sched_ext must match the
# kernel it loads on, so the BTF is the guest kernel's, not the host's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
GUEST_DIR=${CL_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cachelocal-guest}
ROOT=$GUEST_DIR/trixie-chroot
PKGS=clang-19,llvm-19,libbpf-dev,bpftool,liburcu-dev,libelf-dev,zlib1g-dev,libzstd-dev,make,gcc,libc6-dev,pkg-config,xz-utils,zstd,bzip2,lz4

die() {
	echo "scx-chroot: $*" >&2
	exit 1
}

ready() {
	[ -x "$ROOT/usr/bin/clang-19" ] && [ -x "$ROOT/usr/sbin/bpftool" ] &&
		[ -s "$ROOT/usr/lib/x86_64-linux-gnu/libbpf.a" ] && [ -f "$ROOT/.scx-ready" ]
}

setup() {
	ready && return 0
	[ "$(id -u)" = 0 ] || die "making the chroot needs root (debootstrap)"
	if ! command -v debootstrap >/dev/null 2>&1; then
		echo "scx-chroot: installing debootstrap (Debian 12's own package)"
		apt-get install -y -q debootstrap >/dev/null 2>&1 || die "apt-get install debootstrap failed"
	fi
	# shellcheck disable=SC2016 # apt's own format fields
	mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
		awk '$2 == "bookworm" { print $1; exit }')
	[ -n "$mirror" ] || die "no Debian 12 (bookworm) apt source on this host to take the mirror from"
	mkdir -p "$GUEST_DIR" || die "cannot create $GUEST_DIR"
	(
		flock 9 || die "cannot lock $GUEST_DIR/.chroot-lock"
		ready && exit 0
		rm -rf "$ROOT.tmp"
		echo "scx-chroot: debootstrap trixie from $mirror into $ROOT (minutes)"
		debootstrap --variant=minbase --include="$PKGS" \
			--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
			trixie "$ROOT.tmp" "$mirror" >"$GUEST_DIR/trixie-chroot.log" 2>&1 ||
			die "debootstrap failed (log: $GUEST_DIR/trixie-chroot.log)"
		rm -rf "$ROOT.tmp/var/cache/apt/archives/"*.deb
		mkdir -p "$ROOT.tmp/src"
		touch "$ROOT.tmp/.scx-ready"
		rm -rf "$ROOT" && mv "$ROOT.tmp" "$ROOT"
	) 9>"$GUEST_DIR/.chroot-lock" || exit 1
	ready || die "the chroot lacks clang-19, bpftool or libbpf.a"
	echo "scx-chroot: ready: $ROOT"
}

# in_chroot DIR CMD: CMD in the chroot, DIR at /src (unmounted after)
in_chroot() {
	dir=$(cd "$1" && pwd) || die "no directory $1"
	shift
	ready || die "no chroot: run $0 --setup"
	[ "$(id -u)" = 0 ] || die "running in the chroot needs root"
	mkdir -p "$ROOT/src" "$ROOT/proc"
	# a private mount namespace: the bind mounts go away with the command
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m sh -c '
		mount --bind "$1" "$2/src" && mount -t proc proc "$2/proc" &&
		shift 2 && exec chroot "$0" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp \
			LC_ALL=C.UTF-8 sh -c "cd /src && $*"' "$ROOT" "$dir" "$ROOT" "$@"
}

# The ELF inside a bzImage: the payload is compressed (zstd in Debian's
# kernels; xz, gzip, lz4 and bzip2 are tried too) at an offset found by its
# magic; the first candidate that unpacks to an ELF with .BTF wins (the
# decompressors complain about the bytes after the payload: ignored).
# shellcheck disable=SC2016 # run by the chroot's shell
UNPACK='f=$1
for m in "28b52ffd:zstd -dcq" "fd377a585a00:xz -dcq" "1f8b0800:gzip -dcq" "02214c18:lz4 -dcq" "425a6839:bzip2 -dcq"; do
	magic=$(echo "${m%%:*}" | sed "s/../\\\\x&/g")
	for off in $(LC_ALL=C grep -obUaP "$magic" "$f" | cut -d: -f1 | head -8); do
		tail -c +$((off + 1)) "$f" | ${m#*:} >vmlinux.try 2>/dev/null
		if [ "$(head -c 4 vmlinux.try | od -An -tx1 | tr -d " ")" = 7f454c46 ] &&
			bpftool btf dump file vmlinux.try format raw >/dev/null 2>&1; then
			mv vmlinux.try vmlinux
			exit 0
		fi
	done
done
rm -f vmlinux.try
exit 1'

# vmlinux_h OUT: the guest 7.3 kernel's BTF as vmlinux.h (the vmlinux
# ELF is kept beside its vmlinuz)
vmlinux_h() {
	out=$1
	# shellcheck source=scripts/guest.sh
	. "$here/guest.sh"
	guest_fetch_kernel 7.3-amd64
	k=$GUEST_DIR/kernels/7.3-amd64
	tmp=$(mktemp -d) || die "mktemp failed"
	if [ ! -s "$k/vmlinux" ]; then
		cp "$k/vmlinuz" "$tmp/vmlinuz"
		printf '%s\n' "$UNPACK" >"$tmp/unpack.sh"
		in_chroot "$tmp" 'sh unpack.sh vmlinuz' || die "no vmlinux with BTF in $k/vmlinuz"
		cp "$tmp/vmlinux" "$k/vmlinux.tmp" && mv "$k/vmlinux.tmp" "$k/vmlinux"
	else
		cp "$k/vmlinux" "$tmp/vmlinux"
	fi
	in_chroot "$tmp" 'bpftool btf dump file vmlinux format c >vmlinux.h' || die "bpftool btf dump failed"
	mkdir -p "$(dirname "$out")"
	cp "$tmp/vmlinux.h" "$out.tmp" && mv "$out.tmp" "$out"
	rm -rf "$tmp"
}

case "${1:-}" in
--setup) setup ;;
--path) echo "$ROOT" ;;
--vmlinux-h)
	[ $# -eq 2 ] || die "usage: $0 --vmlinux-h OUT"
	vmlinux_h "$2"
	;;
-h | --help | "") sed -n '2,28p' "$0" ;;
*)
	[ $# -ge 2 ] || die "usage: $0 DIR CMD..."
	d=$1
	shift
	in_chroot "$d" "$*"
	;;
esac
