# shellcheck shell=sh
# guest.sh - the emulated machines the tests boot: sourced by
# check-aarch64.sh, check-smp.sh and check-kernels.sh, not run.
#
# What it does for them:
#   guest_fetch_qemu            QEMU 10 (qemu-system-x86_64 and -aarch64)
#   guest_fetch_kernel ID       a Debian kernel: 6.1-amd64 (Debian 12's own),
#                               6.12-amd64, 6.12-arm64 (bookworm-backports),
#                               7.3-amd64, 7.3-arm64 (trixie-backports)
#   guest_plan PLAN FILTER SCALE [ENV]
#                               the /plan lines of PLAN whose NAME matches
#                               FILTER (an awk regex), timeouts times SCALE
#   guest_pack ROOT INIT BIN_DIR OUT   the initramfs: ROOT/plan, INIT, the
#                               programs the plan names, from BIN_DIR
#   guest_boot ARCH KERNEL INITRD TOPO LOG TIMEOUT   boot it, console to LOG
#   guest_report LOG PREFIX     one line per run of the plan in LOG; sets
#                               GUEST_PASSED, GUEST_FAILED, GUEST_ABORTS
#   guest_run PREFIX NAME ARCH TOPO SCALE KERNEL_ID PLAN FILTER BUILD DIR [DATA]
#                               all of the above for one guest, booted once
#                               more after an oops
#
# Everything fetched is kept in CL_GUEST_DIR (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/cachelocal-guest), outside the tree: it
# survives make clean and fresh clones. Packages come from the suites
# bookworm-backports and trixie-backports of the mirror the host's own apt
# uses, through an apt state of its own under CL_GUEST_DIR/apt: the host's
# sources and packages are never changed (no suite added, nothing upgraded);
# packages are only downloaded and unpacked there.
#
# Why QEMU 10: Debian 12's QEMU 7.2 crashes the 6.12 x86_64 guest in most
# boots, some mid-run (corrupted registers under TCG); bookworm-backports'
# QEMU 10 runs it clean. Its shared libraries are those of Debian 12's
# qemu-system-arm (scripts/deps.txt), which make deps installs.
# Why these CPUs: under TCG, -cpu max panicked the x86_64 guest; EPYC gives
# a real AMD topology (an L3 per socket, SMT through threads=).
#
# TCG threads: one host thread per guest CPU (multi) runs them in parallel,
# but with many more guest CPUs than host CPUs QEMU spends its time in its
# own locks and in host context switches: a 64-CPU guest on 2 host CPUs
# spent under 1% of its time in guest code (perf), and the runtime's
# smallest smp_runtime round did not finish in 7 minutes; with one thread
# for all guest CPUs (single, round robin) the same round took 3.3 s. So
# CL_GUEST_TCG=auto (the default) picks single for a guest with more than
# 4 CPUs per host CPU, else multi; CL_GUEST_TCG=single|multi forces one.
# Single still preempts a guest CPU at any instruction (interrupts, the
# round robin's slices) but runs no two at the same instant: the races that
# need two CPUs at once are tested in the guests that run multi.
#
# TOPO (guest_boot) is "CPUS:SOCKETS:CORES:THREADS:NODES:MEM_MB" for
# x86_64 (sockets spread evenly over the nodes; each socket an LLC) and
# "CPUS:::1:NODES:MEM_MB" for aarch64 (the virt machine: cores only).

GUEST_DIR=${CL_GUEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cachelocal-guest}

guest_die() {
	echo "guest: $*" >&2
	exit 1
}

# guest_apt ARGS...: apt-get/apt-cache on the private state (first arg: the
# command). The state is made (and its lists fetched) on first use, and
# the lists again when a day old.
guest_apt() {
	cmd=$1
	shift
	a=$GUEST_DIR/apt
	set -- -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" -o Dir::Cache::Archives="$a/archives" \
		-o Dir::State::Status=/var/lib/dpkg/status -o APT::Architectures=amd64,arm64 \
		-o Acquire::Languages=none "$@"
	"$cmd" "$@"
}

guest_apt_update() {
	a=$GUEST_DIR/apt
	if [ -s "$a/sources.list" ] && [ -n "$(find "$a/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
		return 0
	fi
	mkdir -p "$a/lists/partial" "$a/cache" "$a/archives/partial" || guest_die "cannot create $a"
	# the mirror of the host's Debian 12 suite
	mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
		awk '$2 == "bookworm" { print $1; exit }')
	[ -n "$mirror" ] || guest_die "no Debian 12 (bookworm) apt source on this host to take the mirror from"
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	{
		echo "deb [signed-by=$key] $mirror bookworm main"
		echo "deb [signed-by=$key] $mirror bookworm-backports main"
		echo "deb [signed-by=$key] $mirror trixie-backports main"
	} >"$a/sources.list"
	echo "guest: apt lists of bookworm, bookworm-backports and trixie-backports (private state in $a)"
	guest_apt apt-get -qq update >/dev/null 2>&1 || guest_die "apt-get update of $a failed"
}

# guest_download DIR PKG...: the .debs of PKGs into DIR (emptied first).
# GUEST_HOST_APT=1: through the host's own apt lists (Debian 12's own
# packages, with its security updates), else the private state.
guest_download() {
	d=$1
	shift
	rm -rf "$d" && mkdir -p "$d" || guest_die "cannot create $d"
	# apt's sandbox user cannot write here: download as root, quietly
	if [ "${GUEST_HOST_APT:-0}" = 1 ]; then
		(cd "$d" && apt-get -q -o APT::Sandbox::User=root download "$@" >/dev/null 2>&1)
	else
		(cd "$d" && guest_apt apt-get -q -o APT::Sandbox::User=root download "$@" >/dev/null 2>&1)
	fi || guest_die "apt-get download $* failed"
}

# guest_newest PATTERN: the newest package whose name matches PATTERN (a
# grep -E over apt-cache pkgnames).
guest_newest() {
	guest_apt apt-cache pkgnames 2>/dev/null | grep -E "^($1)\$" | sort -V | tail -1
}

# guest_locked FUNCTION ARGS...: FUNCTION under an exclusive lock of
# CL_GUEST_DIR (two checks that fetch at once, as CI's background guests
# on a fresh machine, would unpack into the same place).
guest_locked() {
	mkdir -p "$GUEST_DIR" || guest_die "cannot create $GUEST_DIR"
	(
		flock 9 || guest_die "cannot lock $GUEST_DIR/.lock"
		"$@"
	) 9>"$GUEST_DIR/.lock" || exit 1
}

# guest_bpo_version PKG: PKG's version in bookworm-backports (newest first).
guest_bpo_version() {
	guest_apt apt-cache madison "$1" 2>/dev/null |
		awk -F'|' '/bookworm-backports/ { gsub(/ /, "", $2); print $2; exit }'
}

guest_fetch_qemu() {
	guest_locked guest_fetch_qemu_locked
}

guest_fetch_qemu_locked() {
	q=$GUEST_DIR/qemu
	[ -x "$q/usr/bin/qemu-system-x86_64" ] && [ -x "$q/usr/bin/qemu-system-aarch64" ] &&
		[ -s "$q/usr/share/seabios/bios-256k.bin" ] && return 0
	guest_apt_update
	# bookworm-backports' versions (built against Debian 12's libraries)
	v=$(guest_bpo_version qemu-system-x86)
	sb=$(guest_bpo_version seabios)
	[ -n "$v" ] && [ -n "$sb" ] || guest_die "no qemu-system-x86 or seabios in bookworm-backports"
	echo "guest: fetching QEMU $v from bookworm-backports into $q"
	guest_download "$GUEST_DIR/debs-qemu" "qemu-system-x86=$v" "qemu-system-arm=$v" \
		"qemu-system-common=$v" "qemu-system-data=$v" "seabios=$sb"
	rm -rf "$q.tmp" && mkdir -p "$q.tmp"
	for deb in "$GUEST_DIR"/debs-qemu/*.deb; do
		dpkg-deb -x "$deb" "$q.tmp" || guest_die "dpkg-deb -x $deb failed"
	done
	rm -rf "$q" && mv "$q.tmp" "$q" && rm -rf "$GUEST_DIR/debs-qemu"
	missing=$(ldd "$q/usr/bin/qemu-system-x86_64" "$q/usr/bin/qemu-system-aarch64" | grep 'not found' | sort -u)
	[ -z "$missing" ] || guest_die "QEMU 10 needs libraries this host lacks (make deps installs them with qemu-system-arm): $missing"
}

# guest_qemu ARCH: the command line start for QEMU 10.
guest_qemu() {
	q=$GUEST_DIR/qemu
	case $1 in
	x86_64) echo "$q/usr/bin/qemu-system-x86_64 -L $q/usr/share/qemu -L $q/usr/share/seabios" ;;
	aarch64) echo "$q/usr/bin/qemu-system-aarch64 -L $q/usr/share/qemu" ;;
	*) guest_die "no QEMU for $1" ;;
	esac
}

# guest_fetch_kernel ID: $GUEST_DIR/kernels/ID/vmlinuz (and .../pkg).
# CL_GUEST_KERNEL_<ID with . and - as _>=PACKAGE picks another package.
guest_fetch_kernel() {
	guest_locked guest_fetch_kernel_locked "$1"
}

guest_fetch_kernel_locked() {
	id=$1
	k=$GUEST_DIR/kernels/$id
	[ -s "$k/vmlinuz" ] && return 0
	guest_apt_update
	var=CL_GUEST_KERNEL_$(echo "$id" | tr '.-' '__')
	eval "pkg=\${$var:-}"
	if [ -z "$pkg" ]; then
		case $id in
		6.1-amd64)
			# Debian 12's own kernel: the host's lists (security updates too)
			GUEST_HOST_APT=1
			pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
				sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*-cloud-amd64\)$/\1/p' | head -1)
			if [ -z "$pkg" ]; then
				apt-get update -qq >/dev/null 2>&1 || guest_die "apt-get update failed"
				pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
					sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*-cloud-amd64\)$/\1/p' | head -1)
			fi
			;;
		6.12-amd64) pkg=$(guest_newest 'linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned') ;;
		6.12-arm64) pkg=$(guest_newest 'linux-image-6\.12\.[0-9]+\+deb12-cloud-arm64'):arm64 ;;
		7.3-amd64) pkg=$(guest_newest 'linux-binary-unsigned-7\.3\.[0-9]+\+deb13-cloud-amd64') ;;
		7.3-arm64) pkg=$(guest_newest 'linux-binary-unsigned-7\.3\.[0-9]+\+deb13-cloud-arm64'):arm64 ;;
		*) guest_die "unknown kernel $id (6.1-amd64, 6.12-amd64, 6.12-arm64, 7.3-amd64, 7.3-arm64)" ;;
		esac
	fi
	case $pkg in "" | :*) guest_die "no package for kernel $id in the apt lists" ;; esac
	echo "guest: fetching kernel $id ($pkg) into $k"
	guest_download "$k.debs" "$pkg"
	GUEST_HOST_APT=0
	rm -rf "$k.x" && mkdir -p "$k.x"
	dpkg-deb -x "$k".debs/*.deb "$k.x" || guest_die "dpkg-deb -x $pkg failed"
	img=$(ls "$k".x/boot/vmlinuz-* "$k".x/usr/lib/modules/*/vmlinuz* 2>/dev/null | head -1)
	[ -n "$img" ] || guest_die "no vmlinuz in $pkg"
	mkdir -p "$k" && cp "$img" "$k/vmlinuz.tmp" && mv "$k/vmlinuz.tmp" "$k/vmlinuz"
	echo "$pkg" >"$k/pkg"
	rm -rf "$k.x" "$k.debs"
}

# guest_plan PLAN FILTER SCALE [EXTRA_ENV]: /plan lines (NAME
# TIMEOUT [VAR=VALUE ...] -- /bin/PROGRAM [ARG ...]) of PLAN (NAME TIMEOUT
# PROGRAM [VAR=VALUE ...] [-- ARG ...]) whose NAME matches FILTER, with the
# timeouts multiplied by SCALE; GUEST_EXCLUDE (an awk regex) drops runs,
# GUEST_ONLY (an awk regex) keeps only the runs it matches too.
guest_plan() {
	awk -v filter="$2" -v scale="$3" -v extra="${4:-}" -v excl="${GUEST_EXCLUDE:-}" \
		-v only="${GUEST_ONLY:-}" '
		$1 !~ /^#/ && NF >= 3 && $1 ~ filter && (excl == "" || $1 !~ excl) &&
		(only == "" || $1 ~ only) {
			env = ""; args = ""; dd = 0
			for (i = 4; i <= NF; i++) {
				if ($i == "--" && !dd) { dd = 1; continue }
				if (dd) args = args " " $i; else env = env " " $i
			}
			print $1, int($2 * scale) env (extra != "" ? " " extra : "") " -- /bin/" $3 args
		}' "$1"
}

# guest_pack ROOT INIT BIN_DIR OUT: ROOT/plan must exist; copies INIT and
# every /bin/PROGRAM the plan names (and /bin/ARG the fault wrapper runs,
# and the norseq it execs).
guest_pack() {
	root=$1
	[ -s "$root/plan" ] || guest_die "empty plan"
	mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp"
	cp "$2" "$root/init" || guest_die "cannot copy $2"
	# (the fault wrapper runs /bin/norseq for --deny-rseq)
	for b in $(tr ' ' '\n' <"$root/plan" | sed -n 's,^/bin/fault$,&\nnorseq,; s,^/bin/,,p' | sort -u); do
		[ -f "$root/bin/$b" ] && continue
		cp "$3/$b" "$root/bin/$b" || guest_die "program $b missing from $3 (not built?)"
	done
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$4" ||
		guest_die "cannot pack the initramfs"
}

# guest_tcg CPUS: single or multi (see "TCG threads" above)
guest_tcg() {
	case ${CL_GUEST_TCG:-auto} in
	single | multi) echo "$CL_GUEST_TCG" ;;
	auto) [ "$1" -gt $((4 * $(nproc))) ] && echo single || echo multi ;;
	*) guest_die "CL_GUEST_TCG=$CL_GUEST_TCG: auto, single or multi" ;;
	esac
}

# guest_boot ARCH KERNEL INITRD TOPO LOG TIMEOUT: returns QEMU's status
# (124 on timeout); LOG.txt is the console without carriage returns.
guest_boot() {
	arch=$1 kernel=$2 initrd=$3 log=$5 tmo=$6
	IFS=: read -r cpus sockets cores threads nodes mem <<EOF
$4
EOF
	numa=""
	n=0
	while [ "$n" -lt "$nodes" ]; do
		numa="$numa -object memory-backend-ram,id=m$n,size=$((mem / nodes))M -numa node,nodeid=$n,memdev=m$n"
		n=$((n + 1))
	done
	case $arch in
	x86_64)
		machine="-M q35 -cpu EPYC -smp $cpus,sockets=$sockets,cores=$cores,threads=$threads"
		s=0
		while [ "$nodes" -gt 1 ] && [ "$s" -lt "$sockets" ]; do
			numa="$numa -numa cpu,node-id=$((s * nodes / sockets)),socket-id=$s"
			s=$((s + 1))
		done
		console=ttyS0
		;;
	aarch64)
		machine="-M virt -cpu cortex-a57 -smp $cpus"
		c=0
		while [ "$nodes" -gt 1 ] && [ "$c" -lt "$cpus" ]; do
			numa="$numa -numa cpu,node-id=$((c * nodes / cpus)),core-id=$c"
			c=$((c + 1))
		done
		console=ttyAMA0
		;;
	esac
	[ "$nodes" -gt 1 ] || numa=""
	# shellcheck disable=SC2046,SC2086
	QEMU_MODULE_DIR=$GUEST_DIR/qemu/usr/lib/x86_64-linux-gnu/qemu timeout -k 10 "$tmo" \
		$(guest_qemu "$arch") -accel tcg,thread="$(guest_tcg "$cpus")" $machine -m "${mem}M" $numa \
		-display none -audio none -vga none -nic none -serial stdio -monitor none -no-reboot \
		-kernel "$kernel" -initrd "$initrd" -append "console=$console panic=-1 quiet" \
		</dev/null >"$log" 2>&1
	rc=$?
	tr -d '\r' <"$log" >"$log.txt"
	return "$rc"
}

# guest_report LOG PREFIX: for every run started in LOG.txt, a line
# "PREFIX RUN: pass|fail (...)"; a run with no result (the boot cut short)
# fails, and so does a guest that never reached DONE. Also prints the
# guest's oops lines (a kernel bug or an emulator crash is not a test
# failure, but it is reported and fails the run).
guest_report() {
	GUEST_PASSED=0 GUEST_FAILED=0 GUEST_ABORTS=0
	out=$(awk -v prefix="$2" '
		/^@@CLG START / { run = $3; order[++n] = run; aborts[run] = 0; rseq[run] = 0; next }
		/^@@CLG END / { res[$3] = $4; run = ""; next }
		/^@@CLG TIME / { t[$3] = $4; next }
		run != "" && /ops rseq/ && match($0, /[0-9]+ aborts/) {
			aborts[run] += substr($0, RSTART, RLENGTH - 7) + 0; rseq[run] = 1
		}
		END {
			for (i = 1; i <= n; i++) {
				r = order[i]
				# (test "in" before any res[r]: a reference creates the element)
				extra = (r in res) ? res[r] : "no result"
				ok = extra == "rc=0"
				extra = extra (r in t ? ", " t[r] " s" : "")
				if (rseq[r]) extra = extra ", rseq aborts " aborts[r]
				printf "%s %s: %s (%s)\n", prefix, r, ok ? "pass" : "fail", extra
			}
		}' "$1.txt")
	[ -n "$out" ] && printf '%s\n' "$out"
	GUEST_PASSED=$(printf '%s\n' "$out" | grep -c ': pass (')
	GUEST_FAILED=$(printf '%s\n' "$out" | grep -c ': fail (')
	GUEST_ABORTS=$(awk '/ops rseq/ && match($0, /[0-9]+ aborts/) { s += substr($0, RSTART, RLENGTH - 7) } END { print s + 0 }' "$1.txt")
	if ! grep -q '^@@CLG DONE' "$1.txt"; then
		echo "$2: the guest did not finish (console: $1)"
		GUEST_FAILED=$((GUEST_FAILED + 1))
	fi
	if grep -qE 'Kernel panic|Oops:|BUG: |general protection fault' "$1.txt"; then
		echo "$2: guest kernel oops or panic (emulator or kernel, not a test): $(grep -m1 -E 'Kernel panic|Oops:|BUG: |general protection fault' "$1.txt")"
		GUEST_OOPS=1
	else
		GUEST_OOPS=0
	fi
}

# guest_run PREFIX NAME ARCH TOPO SCALE KERNEL_ID PLAN FILTER BUILD DIR [DATA]:
# the runs of PLAN and of the extra programs SMP_EXTRA names ("extra.NAME":
# "PREFIX NAME extra NAME: exit N" after the report) whose names match
# FILTER (timeouts times SCALE), with the
# programs of BUILD/bin and BUILD/init, in a guest ARCH/TOPO booted on
# kernel KERNEL_ID; DIR keeps the initramfs and the console
# (DIR/console.log.txt); DATA, when given, is packed as /data (the fake
# sysfs trees some unit tests read). Prints "PREFIX guest NAME: ..." and
# guest_report's lines (prefix "PREFIX NAME"); a guest whose kernel oopsed
# with runs failed is booted once more. Sets guest_report's variables,
# GUEST_OOPSES (0-2), GUEST_SECONDS and GUEST_INFO (the GUEST line's
# key=value words).
guest_run() {
	prefix=$1 name=$2 garch=$3 gtopo=$4 gscale=$5 gkid=$6 gplan=$7 gfilter=$8 gbuild=$9
	shift 9
	gdir=$1 gdata=${2:-}
	gkern=$GUEST_DIR/kernels/$gkid/vmlinuz
	[ -s "$gkern" ] || guest_die "kernel $gkid not fetched"
	rm -rf "$gdir" && mkdir -p "$gdir/root"
	# the plan and a run per extra program (SMP_EXTRA: names built as
	# bin/extra_NAME)
	{
		cat "$gplan"
		for x in ${SMP_EXTRA:-}; do
			echo "extra.$x 300 extra_$x"
		done
	} >"$gdir/plan.all"
	# a unit test's own timeouts (tests/unit/crshim.h) scale too: a guest CPU
	# under TCG runs many times slower than the host's
	guest_plan "$gdir/plan.all" "$gfilter" "$gscale" "CRS_TIMEOUT_SCALE=$((4 * gscale))" >"$gdir/root/plan"
	[ -s "$gdir/root/plan" ] || guest_die "no runs for $name"
	if [ -n "$gdata" ] && [ -d "$gdata" ]; then
		mkdir -p "$gdir/root/data"
		for t in $(sh "$gdata/gen-sysfs.sh" --trees); do
			[ -d "$gdata/$t" ] && cp -r "$gdata/$t" "$gdir/root/data/"
		done
	fi
	guest_pack "$gdir/root" "$gbuild/init" "$gbuild/bin" "$gdir/tests.cpio.gz"
	gruns=$(wc -l <"$gdir/root/plan")
	# the whole boot: the plan's timeouts added up, and 5 minutes to boot
	gtmo=$(awk '{ s += $2 } END { print s + 300 }' "$gdir/root/plan")
	GUEST_OOPSES=0
	gtries=0
	while :; do
		gtries=$((gtries + 1))
		echo "$prefix: booting $name ($(cat "$GUEST_DIR/kernels/$gkid/pkg"), $gruns runs, up to $gtmo s)"
		gstart=$(date +%s)
		guest_boot "$garch" "$gkern" "$gdir/tests.cpio.gz" "$gtopo" "$gdir/console.log" "$gtmo"
		gqrc=$?
		GUEST_SECONDS=$(($(date +%s) - gstart))
		GUEST_INFO=$(sed -n 's/^@@CLG GUEST //p' "$gdir/console.log.txt" | head -1)
		[ -n "$GUEST_INFO" ] && echo "$GUEST_INFO" | awk -v p="$prefix" -v g="$name" \
			-v tcg="$(guest_tcg "${gtopo%%:*}")" '{
			for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			printf "%s guest %s: %s cpus, %s llcs, %s nodes, smt %s, kernel %s, mm_cid %s, guard markers %s, io_uring %s, tcg %s\n",
				p, g, v["cpus"], v["llcs"], v["nodes"], v["smt"], v["kernel"], v["mm_cid"], v["guard"], v["io_uring"], tcg }'
		guest_report "$gdir/console.log" "$prefix $name"
		[ "$GUEST_OOPS" = 1 ] && GUEST_OOPSES=$((GUEST_OOPSES + 1))
		if [ "$GUEST_OOPS" = 1 ] && [ "$GUEST_FAILED" -gt 0 ] && [ "$gtries" -lt 2 ]; then
			echo "$prefix: $name: guest oops, booting it once more"
			continue
		fi
		break
	done
	echo "$prefix: $name: $GUEST_SECONDS s in qemu (exit $gqrc); console: $gdir/console.log.txt"
	# the extras' exit codes (their output is in the console log)
	for x in ${SMP_EXTRA:-}; do
		r=$(sed -n "s/^@@CLG END extra\.$x //p" "$gdir/console.log.txt" | head -1)
		echo "$prefix $name extra $x: ${r:-no result}" | sed 's/rc=\([0-9]*\)$/exit \1/'
	done
}

# guest_info KEY: a value of the last guest's GUEST line (guest_run).
guest_info() {
	echo "$GUEST_INFO" | tr ' ' '\n' | sed -n "s/^$1=//p"
}
