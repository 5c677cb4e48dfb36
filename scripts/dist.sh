#!/bin/sh
# dist.sh - the release tarball OUTDIR/cachelocal-VERSION.tar.gz: the files
# git tracks (git ls-files; so generated trees such as the tests/data
# fixtures are left out and their generator is in), as they are in the work
# tree, under cachelocal-VERSION/. Reproducible: sorted, owner 0, the
# modification time of the last commit, gzip without a name or time.
# Outside a git checkout (an unpacked tarball) it packs the files there
# but what .gitignore leaves out: build/, object files and the generated
# fixtures under tests/data/ (their generator and hashes are packed).
# Usage: dist.sh VERSION OUTDIR
set -eu
cd "$(dirname "$0")/.."
v=$1 out=$2
name=cachelocal-$v
mkdir -p "$out"
list=$(mktemp)
trap 'rm -f "$list"' EXIT
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# tracked files that still exist (a deletion not yet committed is left out)
	git ls-files -z | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\n" "$f"; done' sh >"$list"
	mtime=@$(git log -1 --format=%ct)
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		echo "dist: note: uncommitted changes to tracked files are in the tarball"
	fi
	u=$(git ls-files --others --exclude-standard | wc -l)
	[ "$u" -eq 0 ] || echo "dist: note: $u untracked files are not in the tarball (git add them)"
else
	# the same rules as .gitignore, written out (there is no git to ask)
	find . -path ./build -prune -o -type f -print | sed 's|^\./||' |
		awk '/\.o$/ { next }
		     /^tests\/data\// && !/^tests\/data\/(gen-sysfs\.sh|sysfs\.sha256)$/ { next }
		     { print }' |
		sort >"$list"
	mtime=@$(stat -c %Y include/cachelocal/version.h)
fi
tar --create --format=gnu --sort=name --owner=0 --group=0 --numeric-owner \
	--mtime="$mtime" --transform="s|^|$name/|" --files-from="$list" |
	gzip -9 -n >"$out/$name.tar.gz"
echo "dist: $out/$name.tar.gz ($(wc -l <"$list") files, $(du -k "$out/$name.tar.gz" | cut -f1) KiB)"
