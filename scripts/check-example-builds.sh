#!/bin/sh
# check-example-builds.sh - every example builds with the line its own header
# comment gives (the line after " * Build (from the top of the source tree"),
# run verbatim with sh from a scratch copy of examples/ against an installed
# copy, and answers --help; and a program that spins is preempted when built
# with the README's line for the runtime.
# Usage: check-example-builds.sh STAGE PKGCONFIGDIR CC OUTDIR
#   STAGE: the DESTDIR the copy was installed into; PKGCONFIGDIR as installed.
set -eu
stage=$(realpath -m "$1") pcdir=$2 cc=$3 out=$(realpath -m "$4")
rm -rf "$out"
mkdir -p "$out/examples"
cp examples/*.c examples/*.h "$out/examples/"
export PKG_CONFIG_PATH="$stage$pcdir" PKG_CONFIG_SYSROOT_DIR="$stage"
n=0
for src in examples/*.c; do
	name=$(basename "$src" .c)
	line=$(awk '/^ \* Build \(from the top of the source tree/ { getline; sub(/^ \*\t/, ""); print; exit }' "$src")
	case "$line" in
	"cc "*) ;;
	*) echo "check-example-builds: $src: no build line after ' * Build (from the top of the source tree...'" >&2; exit 1 ;;
	esac
	line="$cc${line#cc}"
	if ! (cd "$out" && sh -c "$line") >"$out/$name.log" 2>&1; then
		echo "check-example-builds: $src: its build line failed: $line" >&2
		cat "$out/$name.log" >&2
		exit 1
	fi
	"$out/$name" --help >/dev/null || { echo "check-example-builds: $name --help failed" >&2; exit 1; }
	n=$((n + 1))
done
# The README's build line for a runtime program, verbatim but for the names.
cp tests/outside/runtime_preempts_a_spinning_task.c "$out/prog.c"
(cd "$out" && $cc -std=c11 prog.c -o prog $(pkg-config --cflags --libs cachelocal-sched)) || exit 1
"$out/prog"
# The README's first programs (<!-- readme-program: NAME compile|run -->,
# a ```c block, then a ```sh block whose line builds it), as written.
m=0
for prog in $(sed -n 's/^<!-- readme-program: \([a-z_]*\.c\) \(compile\|run\) -->$/\1:\2/p' README.md); do
	name=${prog%%:*} how=${prog#*:}
	awk -v tag="<!-- readme-program: $name $how -->" '
		$0 == tag { want = 1; next }
		want && /^```c$/ { inside = 1; next }
		inside && /^```$/ { inside = 0; want = 2; next }
		inside { print > "/dev/stdout"; next }
		want == 2 && /^```sh$/ { sh = 1; next }
		sh && /^```$/ { exit }
		sh { print > "/dev/stderr" }' README.md >"$out/$name" 2>"$out/$name.sh"
	line=$(cat "$out/$name.sh")
	case "$line" in
	"cc "*) ;;
	*) echo "check-example-builds: README.md: $name has no build line after it" >&2; exit 1 ;;
	esac
	(cd "$out" && sh -c "$cc${line#cc}") || { echo "check-example-builds: README.md's $name: $line failed" >&2; exit 1; }
	if [ "$how" = run ]; then
		(cd "$out" && "./${name%.c}") || { echo "check-example-builds: README.md's $name failed to run" >&2; exit 1; }
	fi
	m=$((m + 1))
done
[ "$m" -ge 2 ] || { echo "check-example-builds: README.md: $m readme-program blocks, want the server and the counter" >&2; exit 1; }
echo "check-example-builds: $n examples built with their own lines ($cc), $m README programs, a spinning task preempted with the README's line"
