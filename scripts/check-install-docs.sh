#!/bin/sh
# check-install-docs.sh - run the install blocks of README.md ("## Install",
# each a ```sh block after an <!-- install-doc: NAME --> line) as written,
# in order prefix, cmake, deb, each with sh -e from the top of a fresh copy
# of the tree (the release tarball unpacked) and HOME a scratch directory.
# The deb block installs into the system: run only as root (skipped
# otherwise), with DEB_BUILD_OPTIONS=nocheck (make deb-check builds the
# package with its tests), and the package is removed afterwards unless it
# was installed before.
# Usage: check-install-docs.sh TARBALL
set -eu
readme=$(realpath README.md)
tarball=$(realpath "$1")
name=$(basename "$tarball" .tar.gz)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cachelocal-install-docs.XXXXXX")
tar -xzf "$tarball" -C "$tmp"
mkdir "$tmp/home"
removed=
cleanup() {
	[ -z "$removed" ] || dpkg -r libcachelocal-dev >/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# block NAME: the lines of the ```sh block after <!-- install-doc: NAME -->
block() {
	awk -v tag="<!-- install-doc: $1 -->" '
		$0 == tag { want = 1; next }
		want && /^```sh$/ { inside = 1; next }
		inside && /^```$/ { exit }
		inside { print }' "$readme"
}

run() { # NAME
	block "$1" >"$tmp/$1.sh"
	[ -s "$tmp/$1.sh" ] || { echo "install-docs: FAIL: README.md has no install-doc block $1"; exit 1; }
	echo "== README install block $1 ($(wc -l <"$tmp/$1.sh") lines)"
	if ! (cd "$tmp/$name" && HOME=$tmp/home sh -e "$tmp/$1.sh") >"$tmp/$1.log" 2>&1; then
		sed 's/^/   | /' "$tmp/$1.sh"
		tail -40 "$tmp/$1.log"
		echo "install-docs: FAIL: the README block $1 failed"
		exit 1
	fi
	tail -2 "$tmp/$1.log"
}

run prefix
run cmake
if [ "$(id -u)" != 0 ]; then
	echo "install-docs: the deb block installs into the system: SKIPPED (not root)"
else
	case "$(dpkg-query -W -f='${Status}' libcachelocal-dev 2>/dev/null || true)" in
	*"install ok installed"*) echo "install-docs: libcachelocal-dev was installed before: left installed" ;;
	*) removed=1 ;;
	esac
	DEB_BUILD_OPTIONS=nocheck run deb
fi
echo "install-docs: the README install blocks ran"
