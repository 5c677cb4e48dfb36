#!/bin/sh
# check-scx.sh - the sched_ext scheduler scx_cachelocal in an emulated
# machine (make check-scx): a 16-CPU x86_64 guest (2 sockets x 8 cores, an
# LLC per socket, 2 NUMA nodes, 4 GiB) booted on Debian's 7.3 kernel
# (CONFIG_SCHED_CLASS_EXT=y) under QEMU 10 TCG, running tests/guest/scx.plan
# with the programs make scx built into build/scx/bin (the daemon, its three
# layout variants, scx_check). SCX_CPUS=32 boots 32 CPUs instead (4 sockets
# x 8 cores, 4 NUMA nodes, 8 GiB).
#
# Output: the guest's "scx CHECK: pass|fail ..." lines, the behaviour table
# (kernel's scheduler vs cachelocal's EEVDF under the same load), the
# daemon's counters, and last "check-scx: P passed, F failed". A plan run
# that fails or never ends counts as a failure too. The console is kept in
# build/scx/guest/console.log.txt. TCG timing means nothing: the checks are
# behaviour only.
#
# Pressure on the host: while the guest's scx_check has printed "scx
# HOST-HOG on" and not yet "scx HOST-HOG off", a busy loop per host CPU
# (nproc) runs beside QEMU, at this script's nice (QEMU's). SCX_HOST_HOG=N
# runs N more busy loops for the whole run (the must-show "with a CPU hog
# on the host"); the lines "check-scx: host hog ..." say what ran.
set -u
here=$(dirname "$0")
# shellcheck source=scripts/guest.sh
. "$here/guest.sh"
BIN=${SCX_BIN:-build/scx/bin}
OUT=${SCX_GUEST_OUT:-build/scx/guest}
PLAN=tests/guest/scx.plan
# SCX_CPUS=32: 4 sockets x 8 cores, an LLC per socket, 4 NUMA nodes, 8 GiB
case ${SCX_CPUS:-16} in
16) TOPO=16:2:8:1:2:4096 ;;
32) TOPO=32:4:8:1:4:8192 ;;
*) echo "check-scx: SCX_CPUS is 16 or 32" >&2; exit 1 ;;
esac
VARIANTS="scx_cachelocal_rq_scattered scx_cachelocal_se_inline scx_cachelocal_detach_head"

for b in init scx_check scx_cachelocal $VARIANTS; do
	[ -x "$BIN/$b" ] || { echo "check-scx: $BIN/$b missing (make scx)" >&2; exit 1; }
done
guest_fetch_qemu
guest_fetch_kernel 7.3-amd64
rm -rf "$OUT" && mkdir -p "$OUT/root/bin"
guest_plan "$PLAN" '^scx\.' 1 >"$OUT/root/plan"
for b in scx_cachelocal $VARIANTS; do cp "$BIN/$b" "$OUT/root/bin/"; done
guest_pack "$OUT/root" "$BIN/init" "$BIN" "$OUT/initrd.cpio.gz"
tmo=$(awk '{ s += $2 } END { print s + 300 }' "$OUT/root/plan")
echo "check-scx: booting the 7.3 guest ($(cat "$GUEST_DIR/kernels/7.3-amd64/pkg"), $TOPO, up to $tmo s)"
# busy_loop: one host CPU's worth of work until killed
busy_loop() {
	exec sh -c 'while :; do :; done'
}
# hog_watch LOG: the guest asks for the host's hog (scx HOST-HOG on/off)
hog_watch() {
	hw_pids=""
	hw_t=0
	while [ -e "$OUT/.watch" ]; do
		hw_on=$(grep -ac 'scx HOST-HOG on' "$1" 2>/dev/null)
		hw_off=$(grep -ac 'scx HOST-HOG off' "$1" 2>/dev/null)
		if [ "${hw_on:-0}" -gt "${hw_off:-0}" ] && [ -z "$hw_pids" ]; then
			for _ in $(seq "$(nproc)"); do
				busy_loop &
				hw_pids="$hw_pids $!"
			done
			hw_t=$(date +%s.%N)
		elif [ "${hw_on:-0}" -le "${hw_off:-0}" ] && [ -n "$hw_pids" ]; then
			# shellcheck disable=SC2086 # the pids
			kill $hw_pids 2>/dev/null
			echo "check-scx: host hog (phase $hw_on): $(nproc) busy loops for $(awk -v a="$hw_t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" >>"$OUT/hog.txt"
			hw_pids=""
		fi
		sleep 0.2
	done
	# shellcheck disable=SC2086 # the pids
	[ -z "$hw_pids" ] || kill $hw_pids 2>/dev/null
}
touch "$OUT/.watch"
hog_watch "$OUT/console.log" &
watch_pid=$!
whole_pids=""
for _ in $(seq "${SCX_HOST_HOG:-0}"); do
	busy_loop &
	whole_pids="$whole_pids $!"
done
[ -z "$whole_pids" ] || echo "check-scx: host hog: ${SCX_HOST_HOG} busy loops (sh) for the whole run, at nice $(nice)"
t0=$(date +%s)
guest_boot x86_64 "$GUEST_DIR/kernels/7.3-amd64/vmlinuz" "$OUT/initrd.cpio.gz" "$TOPO" "$OUT/console.log" "$tmo"
qrc=$?
rm -f "$OUT/.watch"
wait "$watch_pid" 2>/dev/null
# shellcheck disable=SC2086 # the pids
[ -z "$whole_pids" ] || kill $whole_pids 2>/dev/null
[ ! -s "$OUT/hog.txt" ] || cat "$OUT/hog.txt"
log=$OUT/console.log.txt
sed -n 's/^@@CLG GUEST //p' "$log" | head -1 | sed 's/^/check-scx: guest: /'
grep -E '^scx_check: |^scx_cachelocal: ' "$log" | sed 's/^/  /'
grep -E 'sched_ext: ' "$log" | sed 's/^/  kernel: /' | head -20
grep '^scx TABLE ' "$log" | sed 's/^scx TABLE //'
grep '^scx CHECK: ' "$log"
guest_report "$OUT/console.log" "scx run" >"$OUT/report.txt"
cat "$OUT/report.txt"
# an ejection by the kernel (watchdog, runtime error) is logged at error
# level, which the quiet console shows (the unloads by user space are not)
ej=$(grep -E 'sched_ext: BPF scheduler "cachelocal" disabled' "$log" | grep -v 'unregistered from user space' | head -3)
if [ -n "$ej" ]; then
	echo "scx CHECK: fail kernel-log (the kernel ejected the scheduler: $ej)" | tee -a "$log"
elif grep -q '^@@CLG START scx\.' "$log"; then
	echo "scx CHECK: pass kernel-log (no ejection of the scheduler in the guest's kernel log)" | tee -a "$log"
else
	echo "scx CHECK: fail kernel-log (the guest never ran the check)" | tee -a "$log"
fi
P=$(grep -c '^scx CHECK: pass ' "$log")
F=$(grep -c '^scx CHECK: fail ' "$log")
F=$((F + GUEST_FAILED))
[ "$P" -gt 0 ] || F=$((F + 1))
echo "check-scx: $(($(date +%s) - t0)) s in qemu (exit $qrc); console: $log"
echo "check-scx: $P passed, $F failed"
[ "$F" -eq 0 ]
