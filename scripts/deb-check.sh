#!/bin/sh
# deb-check.sh - check the built Debian packages: metadata and contents,
# lintian (errors fail, and warnings not accepted in debian/lintian-accepted),
# then build the consumers of install-check (C, C++, tests/outside via
# pkg-config; the CMake project via find_package; the tests/outside programs
# are built, not run: make install-check runs them) against libcachelocal-dev
# as installed from the .deb: unpacked into a staging root (MODE stage,
# dpkg-deb -x) or installed into the system (MODE system, dpkg -i, as root;
# removed again afterwards unless it was installed before).
# Usage: deb-check.sh DEBDIR VERSION MODE CC CXX OUTDIR
set -eu
dir=$1 v=$2 mode=$3 cc=$4 cxx=$5 out=$6
deb=$dir/libcachelocal-dev_${v}_all.deb
fail() {
	echo "deb-check: FAIL: $*"
	exit 1
}
[ -f "$deb" ] || fail "no $deb (make deb)"

# ---- metadata and contents
[ "$(dpkg-deb -f "$deb" Version)" = "$v" ] || fail "$deb has version $(dpkg-deb -f "$deb" Version), want $v"
[ "$(dpkg-deb -f "$deb" Architecture)" = all ] || fail "$deb is not Architecture: all"
dpkg-deb -f "$deb" Depends | grep -qw liburcu-dev || fail "$deb does not depend on liburcu-dev"
dpkg-deb -c "$deb" | awk '{ print $NF }' | sed 's|^\./|/|' >"$dir/contents"
for f in /usr/include/cachelocal/cachelocal.h /usr/include/cachelocal/sched/rq.h \
	/usr/share/pkgconfig/cachelocal.pc /usr/share/pkgconfig/cachelocal-sched.pc \
	/usr/lib/cmake/cachelocal/cachelocalConfig.cmake \
	/usr/lib/cmake/cachelocal/cachelocalConfigVersion.cmake \
	/usr/share/doc/libcachelocal-dev/copyright; do
	grep -qx "$f" "$dir/contents" || fail "$deb has no $f"
done
nh=$(grep -c '^/usr/include/cachelocal/.*\.h$' "$dir/contents")
nt=$(find include/cachelocal -name '*.h' | wc -l)
[ "$nh" -eq "$nt" ] || fail "$deb has $nh headers, the tree $nt"
# the man pages: one (page or link) for every function and macro of the API
# list, the section 7 overviews (a .so link is a symbolic link in the
# package: listed by its name, not its target)
dpkg-deb -c "$deb" | sed 's/ -> .*//' | awk '{ print $NF }' | sed 's|^\./|/|' >"$dir/names"
for f in /usr/share/man/man3/cl_spawn.3.gz /usr/share/man/man3/CL_ATOMIC_LOAD.3.gz \
	/usr/share/man/man7/cachelocal.7.gz /usr/share/man/man7/cachelocal-runtime.7.gz \
	/usr/share/man/man7/cachelocal-sched.7.gz; do
	grep -qx "$f" "$dir/names" || fail "$deb has no $f"
done
nm=0
for n in $(sed -n 's/^\(function\|macro\) \([A-Za-z0-9_]*\).*/\2/p' api/cachelocal.api | sort -u); do
	grep -qx "/usr/share/man/man3/$n.3.gz" "$dir/names" || fail "$deb has no man page for $n"
	nm=$((nm + 1))
done
np=$(grep -c '^/usr/share/man/man3/.*\.3\.gz$' "$dir/names")
echo "deb-check: $deb: version $v, all, depends on liburcu-dev, $nh headers, .pc and CMake files, $np section 3 man pages (every one of the $nm functions and macros of api/cachelocal.api)"

# ---- lintian: no errors; every warning accepted (with its reason) in debian/lintian-accepted
lintian --fail-on none -I --tag-display-limit 0 "$dir"/*.changes >"$dir/lintian.log" 2>&1 || true
cat "$dir/lintian.log"
grep -q '^E: ' "$dir/lintian.log" && fail "lintian reports errors"
# no man-page tag at all, not even an informational one
grep -E '^[EWI]: [^:]*: (manpage|groff|hyphen-used|spelling-error-in-manpage|bad-so-link|binary-without-manpage)' \
	"$dir/lintian.log" && fail "lintian reports man page tags"
accepted=$(grep -v '^[[:space:]]*#' debian/lintian-accepted | awk 'NF { print $1 }')
bad=0
for tag in $(sed -n 's/^W: [^:]*: \([^ ]*\).*/\1/p' "$dir/lintian.log" | sort -u); do
	if ! printf '%s\n' "$accepted" | grep -qx "$tag"; then
		echo "deb-check: lintian warning $tag is not in debian/lintian-accepted (fix it, or accept it there with the reason)"
		bad=1
	fi
done
[ "$bad" -eq 0 ] || fail "lintian warnings not accepted"
echo "deb-check: lintian: no errors, $(grep -c '^W: ' "$dir/lintian.log" || true) accepted warnings"

# ---- the consumers against the package
rm -rf "$out"
mkdir -p "$out"
case "$mode" in
stage)
	dpkg-deb -x "$deb" "$out/root"
	OUTSIDE_RUN=0 sh scripts/install-check.sh "$out/root" /usr/share/pkgconfig "$cc" "$cxx" "$out/consumers" /usr
	;;
system)
	[ "$(id -u)" = 0 ] || fail "DEB_CHECK=system installs the package: run as root"
	before=$(dpkg-query -W -f='${Status}' libcachelocal-dev 2>/dev/null || true)
	case "$before" in
	*"install ok installed"*) keep=1 ;;
	*) keep=0 ;;
	esac
	[ "$keep" = 0 ] || echo "deb-check: libcachelocal-dev was installed before: upgraded, left installed"
	[ "$keep" = 1 ] || trap 'dpkg -r libcachelocal-dev >/dev/null && echo "deb-check: libcachelocal-dev removed again"' EXIT
	dpkg -i "$deb"
	OUTSIDE_RUN=0 sh scripts/install-check.sh "" /usr/share/pkgconfig "$cc" "$cxx" "$out/consumers" /usr
	;;
*) fail "MODE is stage or system, not $mode" ;;
esac
echo "deb-check: the consumers built against the package ($mode) and ran"
