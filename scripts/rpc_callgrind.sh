#!/bin/sh
# SPDX-License-Identifier: MIT
#
# scripts/rpc_callgrind.sh - where the RPC servers' instructions and system
# calls go per request (docs/benchmarks.md, "Where the runtime's time goes
# per request"). `make rpc-callgrind` runs it after `make rpc-build`.
#
# Each server (rpc_epoll; rpc_cachelocal with 1 and with 2 workers) serves
# scripts/rpc_count_client.py: CONNS connections, exactly N requests sent one
# at a time (the next after the last reply), at 64 B and at 4 KiB replies.
# A server runs twice per reply size, once for N requests and once for none
# (connect only); the client holds its connections until the server is
# stopped (SIGTERM), so neither run has a teardown and
#	per request = (count with N - count with 0) / N.
# 1. Instructions: valgrind --tool=callgrind, Ir per request, and split by
#    where the code comes from (callgrind_annotate's file:function, inlined
#    header code under its header's name) into the groups of the table.
#    Under valgrind the runtime takes its epoll backend (io_uring needs the
#    kernel to write the ring's memory, which valgrind does not follow) and
#    its workers do not spin before they sleep (lifecycle.h).
# 2. System calls: strace -c -f (no valgrind), per request, for the epoll
#    loop and the runtime with CL_RUNTIME_IO=epoll and =io_uring.
#
# Usage: scripts/rpc_callgrind.sh [BUILD_RPC_DIR]   (default build/gcc/bench/rpc)
# Env: N (20000), CONNS (8), KEEP=1 keeps the work directory.
set -eu

DIR=${1:-build/gcc/bench/rpc}
N=${N:-20000}
CONNS=${CONNS:-8}
HERE=$(cd "$(dirname "$0")" && pwd)
CLIENT="$HERE/rpc_count_client.py"

for t in valgrind callgrind_annotate strace python3; do
	command -v $t >/dev/null || { echo "rpc_callgrind: $t not installed" >&2; exit 77; }
done
[ -x "$DIR/rpc_epoll" ] || { echo "rpc_callgrind: $DIR/rpc_epoll missing (make rpc-build)" >&2; exit 1; }
DIR=$(cd "$DIR" && pwd)
# REPORT=DIR: only print the tables from a kept work directory.
if [ -n "${REPORT:-}" ]; then
	WORK=$REPORT
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/rpc_callgrind.XXXXXX")
	[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
fi

# run_one OUT NREQ REPLY CMD... - start the server CMD (its stdout's first
# line is "port P ..."), let the client send NREQ requests, stop the server
# with SIGTERM after the last reply, then let the client go.
run_one() {
	out=$1 nreq=$2 reply=$3
	shift 3
	rm -f "$WORK/srv" "$WORK/cli" "$WORK/in"
	mkfifo "$WORK/srv" "$WORK/cli" "$WORK/in"
	"$@" >"$WORK/srv" 2>"$out.err" &
	spid=$!
	exec 4<"$WORK/srv"
	read -r line <&4 || { echo "rpc_callgrind: '$*' did not start" >&2; cat "$out.err" >&2; exit 1; }
	port=$(echo "$line" | cut -d' ' -f2)
	nice -n 19 python3 "$CLIENT" "$port" "$CONNS" "$nreq" "$reply" <"$WORK/in" >"$WORK/cli" &
	cpid=$!
	exec 6>"$WORK/in"
	exec 5<"$WORK/cli"
	read -r said <&5 || { echo "rpc_callgrind: client failed against '$*'" >&2; exit 1; }
	# strace runs the server as its child; valgrind runs it in its own process.
	kill -TERM "$(pgrep -P "$spid" || echo "$spid")"
	wait "$spid" 2>/dev/null || true
	exec 6>&- 5<&- 4<&-
	wait "$cpid"
	echo "$line" >"$out.line"
	[ "$said" = "done $nreq" ]
}

# The servers: name:program:workers.
SERVERS="epoll:$DIR/rpc_epoll:1"
if [ -x "$DIR/rpc_cachelocal" ]; then
	SERVERS="$SERVERS cachelocal-1w:$DIR/rpc_cachelocal:1 cachelocal-2w:$DIR/rpc_cachelocal:2"
else
	echo "rpc_callgrind: rpc_cachelocal not built (runtime I/O): epoll loop only" >&2
fi

[ -n "${REPORT:-}" ] || {
echo "== instructions per request: callgrind, $N requests over $CONNS connections, one in flight"
for s in $SERVERS; do
	name=${s%%:*}
	prog=$(echo "$s" | cut -d: -f2)
	arg=$(echo "$s" | cut -d: -f3)
	for reply in 64 4096; do
		for nreq in 0 "$N"; do
			out="$WORK/cg.$name.$reply.$nreq"
			run_one "$out" "$nreq" "$reply" nice -n 19 valgrind --tool=callgrind \
				--callgrind-out-file="$out" "$prog" "$arg"
			callgrind_annotate --inclusive=no --auto=no --threshold=100 "$out" >"$out.self"
			callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$out" >"$out.incl"
		done
	done
done

echo "== system calls per request: strace -c -f, $N requests over $CONNS connections"
for s in $SERVERS; do
	name=${s%%:*}
	prog=$(echo "$s" | cut -d: -f2)
	arg=$(echo "$s" | cut -d: -f3)
	case $name in
	cachelocal*) modes="epoll io_uring" ;;
	*) modes="-" ;;
	esac
	for mode in $modes; do
		for reply in 64 4096; do
			for nreq in 0 "$N"; do
				out="$WORK/st.$name.$mode.$reply.$nreq"
				run_one "$out" "$nreq" "$reply" env CL_RUNTIME_IO="$mode" nice -n 19 \
					strace -c -f -o "$out" "$prog" "$arg"
			done
		done
	done
done

}

python3 - "$WORK" "$N" "$SERVERS" <<'EOF'
import re, sys, glob, os
work, n, servers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
names = [s.split(":")[0] for s in servers]

LINE = re.compile(r"^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*?)(?:\s+\[(.*)\])?$")

def fns(path):
    """{file:function: Ir} from a callgrind_annotate listing, and the total."""
    out, total = {}, None
    for l in open(path):
        m = LINE.match(l)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        key = m.group(2)
        if key == "PROGRAM TOTALS":
            total = ir
            continue
        out[key] = out.get(key, 0) + ir
    return out, total

SCHED = ("switch.h", "worker.h", "wakeq.h", "context.h", "current.h", "core.h",
         "task.h", "waitq.h", "blocking.h", "preempt.h", "clock.h", "timer.h",
         "lifecycle.h", "sleep.h", "stack.h", "sync.h", "watch.h")
RQ = ("/sched/rq.h", "/sched/rq_core.h", "/sched/fair.h", "/sched/queue.h",
      "/sched/internal", "/sched/group.h", "/sched/bandwidth.h", "/sched/balance")

def group(key):
    f = os.path.normpath(key.rsplit(":", 1)[0])
    fn = key.rsplit(":", 1)[-1]
    base = os.path.basename(f)
    if fn.startswith("cl__ctx_switch") or "/arch/" in f and base == "context.h" \
       or "/sched/balance" in f:
        return "scheduling (pick, switch, wake, park)"
    if "/sched/runtime/io" in f:
        return "runtime I/O layer (io.h, iocall.h, iopoll.h)"
    if "/sched/runtime/" in f and base in SCHED:
        return "scheduling (pick, switch, wake, park)"
    if any(r in f for r in RQ):
        return "rq (EEVDF) operations"
    if "/sched/runtime/" in f:
        return "scheduling (pick, switch, wake, park)"
    if "sysdeps/unix/sysv/linux" in f or "syscall" in f or fn in ("__errno_location",) \
       or base in ("cancellation.c", "errno-loc.c"):
        return "system call wrappers (libc)"
    if "mem" in base and (".S" in base or "memmove" in fn or "memcpy" in fn or "memset" in fn):
        return "memcpy/memset/memmove (libc)"
    if "rpc_proto.h" in f or "bench/rpc/server_" in f:
        return "protocol + server loop"
    # Helpers inlined from elsewhere (spinlock.h, urcu's list.h, percpu.h):
    # by the function they are inlined into.
    if "cachelocal/" in f or "urcu/" in f:
        if fn.startswith("cl__rt_io") or fn.startswith("cl_read") or fn.startswith("cl_write"):
            return "runtime I/O layer (io.h, iocall.h, iopoll.h)"
        if re.match(r"cl_rq_|cl__rq_|cl__(de|en)queue_entity", fn):
            return "rq (EEVDF) operations"
        if fn.startswith("cl__rt_") or fn.startswith("cl__ctx"):
            return "scheduling (pick, switch, wake, park)"
    return "other"

GROUPS = ["system call wrappers (libc)", "runtime I/O layer (io.h, iocall.h, iopoll.h)",
          "scheduling (pick, switch, wake, park)", "rq (EEVDF) operations",
          "memcpy/memset/memmove (libc)", "protocol + server loop", "other"]

def per_req(name, reply, kind):
    a, ta = fns(f"{work}/cg.{name}.{reply}.{n}.{kind}")
    b, tb = fns(f"{work}/cg.{name}.{reply}.0.{kind}")
    d = {k: (a.get(k, 0) - b.get(k, 0)) / n for k in set(a) | set(b)}
    return d, (ta - tb) / n

print()
print(f"Instructions per request (callgrind Ir, (Ir with {n} requests - Ir with 0) / {n};")
print("runtime on its epoll backend, as valgrind forces it):")
print()
for reply in (64, 4096):
    cols = {}
    for name in names:
        d, tot = per_req(name, reply, "self")
        g = {x: 0.0 for x in GROUPS}
        for k, v in d.items():
            g[group(k)] += v
        cols[name] = (g, tot)
    print(f"| {reply} B replies | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for x in GROUPS:
        print(f"| {x} | " + " | ".join(f"{cols[nm][0][x]:.0f}" for nm in names) + " |")
    print("| **total** | " + " | ".join(f"**{cols[nm][1]:.0f}**" for nm in names) + " |")
    print()

print("Top functions per request (self Ir; file:function, inlined code under its file):")
for reply in (64, 4096):
    for name in names:
        d, tot = per_req(name, reply, "self")
        print(f"\n{name}, {reply} B replies: {tot:.0f} Ir/request")
        for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:14]:
            if v < 1:
                break
            short = re.sub(r"^.*/(include/|bench/|sysdeps/|string/|malloc/|nptl/)", r"\1", k)
            print(f"  {v:8.1f}  {short}")

# Inclusive costs: the task switches make callgrind charge whatever runs
# after a switch (other tasks, the worker's loop) to the function that
# switched away (conn_task, cl__rt_schedule, cl__ctx_switch_x86_64 come out
# at or above the total), so only calls that do not switch are listed.
LEAVES = ("cl__rt_io_wait", "cl__rt_io_epoll_handle", "cl__rq_enqueue", "cl_rq_pick_next",
          "cl__dequeue_entity", "cl__rt_finish", "cl__rt_balance", "recv", "send",
          "epoll_ctl", "syscall", "read", "write", "epoll_wait", "memset", "memcpy")
print("\nInclusive Ir per request of calls that do not switch tasks (callgrind_annotate --inclusive=yes):")
for reply in (64, 4096):
    for name in names:
        d, tot = per_req(name, reply, "incl")
        best = {}
        for k, v in d.items():
            fn = re.sub(r"(\.constprop\.\d+|\.part\.\d+|'\d+)+$", "", k.rsplit(":", 1)[-1])
            fn = re.sub(r"^__(memset|memcpy)_.*", r"\1", fn)
            if fn in LEAVES and v > best.get(fn, 0):
                best[fn] = v
        print(f"  {name}, {reply} B: " + ", ".join(f"{fn} {v:.0f}" for fn, v in
              sorted(best.items(), key=lambda kv: -kv[1]) if v >= 1))

def strace_counts(path):
    out = {}
    for l in open(path):
        p = l.split()
        if len(p) >= 5 and p[0][0].isdigit() and p[-1] != "total":
            calls = int(p[3])
            out[p[-1]] = out.get(p[-1], 0) + calls
    return out

print()
print(f"System calls per request (strace -c -f, (calls with {n} requests - calls with 0) / {n}):")
print()
rows = []
for name in names:
    for mode in (["epoll", "io_uring"] if name.startswith("cachelocal") else ["-"]):
        for reply in (64, 4096):
            a = strace_counts(f"{work}/st.{name}.{mode}.{reply}.{n}")
            b = strace_counts(f"{work}/st.{name}.{mode}.{reply}.0")
            d = {k: (a.get(k, 0) - b.get(k, 0)) / n for k in set(a) | set(b)}
            d = {k: v for k, v in d.items() if abs(v) >= 0.005}
            label = name if mode == "-" else f"{name} ({mode})"
            tot = sum(d.values())
            detail = ", ".join(f"{k} {v:.2f}" for k, v in sorted(d.items(), key=lambda kv: -kv[1]))
            rows.append(f"| {label} | {reply} | {tot:.2f} | {detail} |")
print("| server | reply B | syscalls/request | by call |")
print("|---|---:|---:|---|")
print("\n".join(rows))
EOF
