/* SPDX-License-Identifier: MIT */
/*
 * bench/peers/runtime_peers.c - the cachelocal M:N runtime beside Go's
 * goroutines and Boost.Fiber on the same three workloads:
 *
 *   pingpong  two tasks bounce an int through two capacity-1 channels;
 *             ns per round trip (-l round trips, a tenth of them on two
 *             CPUs). same-cpu: one worker / GOMAXPROCS=1 / one Boost
 *             thread; two-cpu: two CPUs (ours: two pinned workers, the
 *             tasks started one per worker and not pinned, so placement
 *             is the runtime's (wake-affine); Boost: two pinned threads,
 *             one fiber each; Go: GOMAXPROCS=2 on the two CPUs, goroutine
 *             placement is Go's).
 *   fib       a spawn+join tree: fib(n) spawns fib(n-1) and fib(n-2) as
 *             tasks and joins both (n < 2 returns n); ns per spawn.
 *   storm     hackbench's shape: groups of 20 senders and 20 receivers,
 *             every sender sends LOOPS 100-byte messages to each receiver of
 *             its group (one channel per receiver, 63 slots), released by
 *             closing a gate once all tasks wait on it; ns per message.
 *
 * fib and storm run on one CPU and on two (ours: 1 or 2 pinned workers;
 * Go: GOMAXPROCS 1 or 2 on those CPUs; Boost: the default round-robin
 * scheduler on one thread, work_stealing on two pinned threads).
 *
 * The peers are separate programs (runtime_go, runtime_boost, found next to
 * this binary or given by --go/--boost) taking the same arguments; each
 * checks its own result (fib value, message counts and contents) and exits
 * nonzero when it is wrong, which fails this benchmark. Runs interleave:
 * ours, go, boost, ours, go, boost, ...; each run of every side is preceded
 * by a warm-up pass in the same runtime or process (ours_run()). The
 * peer's version comes from the peer program itself (Go: runtime.Version();
 * Boost: BOOST_LIB_VERSION).
 *
 * With --json, besides the usual result objects, one line per workload and
 * peer: {"kind":"peer","structure":"runtime","peer":...,"workload":...,
 * "ours":...,"theirs":...,"unit":"ns/op","gain":theirs/ours,...} (the
 * fields of the other peer benchmarks' lines, peer_line()); gain > 1
 * means cachelocal is ahead. A peer whose program is missing is skipped with
 * a note (no line); exit 77 when both are missing.
 */
#include <cachelocal/sched/runtime.h>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "rtbench.h"
#include "peers.h"

#define PP_CAP 1
#define STORM_PAIRS 20
#define STORM_MSG 100
#define STORM_CAP 63 /* Boost's buffered_channel(64) holds 63 */
#define PEER_TIMEOUT_S 600 /* one peer run longer than this fails */

enum { W_PINGPONG, W_FIB, W_STORM, W_NR };
enum { P_SAME, P_TWO, P_NR };
static const char *const wname[W_NR] = { "pingpong", "fib", "storm" };
static const char *const pname[P_NR] = { "same-cpu", "two-cpu" };
static const char *const unit_of[W_NR] = { "ns/round trip", "ns/spawn", "ns/message" };

struct params {
	long pp_loops;
	int fib_n;
	int storm_groups;
	long storm_loops;
};

static int cpu_a, cpu_b; /* the first two allowed CPUs */
static unsigned int rt_flags; /* --no-preempt: CL_RUNTIME_NO_PREEMPT */

static struct cl_runtime *rt_make(int place)
{
	struct cl_runtime_attr ra;

	memset(&ra, 0, sizeof(ra));
	ra.nr_workers = place == P_SAME ? 1 : 2;
	ra.flags = rt_flags;
	return cl_runtime_create(&ra);
}

/* ---------------------------------------------------------------- pingpong */

struct pp_arg {
	struct cl_chan *in, *out;
	long loops;
	int serve;
	uint64_t ns; /* the serving task's loop, timed inside the task */
};

static void *pp_task(void *p)
{
	struct pp_arg *a = (struct pp_arg *)p;
	uint64_t t0 = bench_now_ns();
	long v;

	for (long i = 0; i < a->loops; i++) {
		if (a->serve) {
			v = 2 * i;
			if (cl_chan_send(a->out, &v) || cl_chan_recv(a->in, &v) || v != 2 * i + 1)
				goto fail;
		} else {
			if (cl_chan_recv(a->in, &v) || v != 2 * i)
				goto fail;
			v++;
			if (cl_chan_send(a->out, &v))
				goto fail;
		}
	}
	a->ns = bench_now_ns() - t0;
	return NULL;
fail: /* closing wakes the other side (EPIPE): it fails too, nobody hangs */
	cl_chan_close(a->in);
	cl_chan_close(a->out);
	return (void *)1;
}

static double ours_pingpong(struct cl_runtime *rt, int place, long loops)
{
	struct cl_chan *c1 = cl_chan_create(sizeof(long), PP_CAP), *c2 = cl_chan_create(sizeof(long), PP_CAP);
	struct pp_arg a0 = { c2, c1, loops, 1, 0 }, a1 = { c1, c2, loops, 0, 0 };
	struct cl_spawn_attr s0, s1;
	struct cl_rt_task *t0, *t1;
	void *r0 = (void *)1, *r1 = (void *)1;
	int ok;

	if (!c1 || !c2)
		return -1;
	memset(&s0, 0, sizeof(s0));
	memset(&s1, 0, sizeof(s1));
	/* started one per worker, not pinned: placement is the runtime's, as
	 * Go's is (bench/pipe --cross-cpu keeps them apart) */
	s0.worker = CL_SPAWN_WORKER(0);
	s1.worker = CL_SPAWN_WORKER(place == P_SAME ? 0 : 1);
	t1 = cl_spawn(rt, &s1, pp_task, &a1);
	t0 = cl_spawn(rt, &s0, pp_task, &a0);
	ok = t0 && t1 && !cl_join(t0, &r0) && !cl_join(t1, &r1) && !r0 && !r1;
	cl_chan_destroy(c1);
	cl_chan_destroy(c2);
	if (!ok)
		fprintf(stderr, "runtime_peers: ours: pingpong lost, reordered or failed\n");
	return ok ? (double)a0.ns / (double)loops : -1;
}

/* ---------------------------------------------------------------- fib */

/*
 * fib(n): spawn fib(n-1) and fib(n-2), join both. A failure anywhere below
 * comes back as -errno (fib values are never negative).
 */
static void *fib_task(void *p)
{
	long n = (long)(intptr_t)p;
	struct cl_rt_task *a, *b;
	intptr_t ra = -EINVAL, rb = -EINVAL, err = 0;
	void *r;

	if (n < 2)
		return p;
	a = cl_spawn(cl_self()->rt, NULL, fib_task, (void *)(intptr_t)(n - 1));
	if (!a)
		err = -errno;
	b = cl_spawn(cl_self()->rt, NULL, fib_task, (void *)(intptr_t)(n - 2));
	if (!b && !err)
		err = -errno;
	if (a && !cl_join(a, &r))
		ra = (intptr_t)r;
	if (b && !cl_join(b, &r))
		rb = (intptr_t)r;
	if (!err && (ra < 0 || rb < 0))
		err = ra < 0 ? ra : rb;
	return (void *)(err ? err : ra + rb);
}

static long fib_ref(int n, long *calls)
{
	long a = 0, b = 1; /* calls(n) = 2 fib(n+1) - 1, the root's spawn included */

	for (int i = 0; i < n; i++) {
		long t = a + b;

		a = b;
		b = t;
	}
	*calls = 2 * b - 1;
	return a;
}

static double ours_fib(struct cl_runtime *rt, int n)
{
	struct cl_rt_task *root;
	void *r = (void *)(intptr_t)-EINVAL;
	long calls, want = fib_ref(n, &calls);
	uint64_t t;
	int ok;

	t = bench_now_ns();
	root = cl_spawn(rt, NULL, fib_task, (void *)(intptr_t)n);
	ok = root && !cl_join(root, &r) && (long)(intptr_t)r == want;
	t = bench_now_ns() - t;
	if (!ok && (intptr_t)r < 0)
		fprintf(stderr, "runtime_peers: ours: fib(%d) failed: %s\n", n, strerror((int)-(intptr_t)r));
	else if (!ok)
		fprintf(stderr, "runtime_peers: ours: fib(%d) = %ld, want %ld\n", n, (long)(intptr_t)r, want);
	return ok ? (double)t / (double)calls : -1;
}

/* ---------------------------------------------------------------- storm */

struct storm_ctx {
	struct cl_chan *gate;
	int ready;
	int nr_tasks;
	long loops;
	struct cl_chan **rx; /* groups * STORM_PAIRS */
};

struct storm_task {
	struct storm_ctx *ctx;
	int group, idx, sender;
};

static void *storm_fn(void *p)
{
	struct storm_task *t = (struct storm_task *)p;
	struct storm_ctx *ctx = t->ctx;
	struct cl_chan **rx = ctx->rx + (size_t)t->group * STORM_PAIRS;
	unsigned char buf[STORM_MSG];
	long got[STORM_PAIRS] = { 0 };
	char c;

	if (__atomic_add_fetch(&ctx->ready, 1, __ATOMIC_SEQ_CST) == ctx->nr_tasks)
		rtb_futex_wake(&ctx->ready);
	cl_chan_recv(ctx->gate, &c); /* EPIPE once the gate closes */
	if (t->sender) {
		memset(buf, t->idx, sizeof(buf));
		for (long i = 0; i < ctx->loops; i++)
			for (int r = 0; r < STORM_PAIRS; r++) {
				buf[1] = (unsigned char)i;
				if (cl_chan_send(rx[r], buf))
					goto fail;
			}
		return NULL;
	}
	/* receiver: from each sender, loops messages in its order */
	for (long i = 0; i < ctx->loops * STORM_PAIRS; i++) {
		if (cl_chan_recv(rx[t->idx], buf) || buf[0] >= STORM_PAIRS ||
		    buf[1] != (unsigned char)got[buf[0]] || buf[2] != buf[0])
			goto fail;
		got[buf[0]]++;
	}
	for (int s = 0; s < STORM_PAIRS; s++)
		if (got[s] != ctx->loops)
			goto fail;
	return NULL;
fail: /* closing the group's channels ends its other tasks (EPIPE): no hang */
	for (int r = 0; r < STORM_PAIRS; r++)
		cl_chan_close(rx[r]);
	return (void *)1;
}

static double ours_storm(struct cl_runtime *rt, int groups, long loops)
{
	int n = groups * 2 * STORM_PAIRS, ok = 1;
	struct storm_ctx ctx = { cl_chan_create(1, 1), 0, n, loops, NULL };
	struct storm_task *st = calloc((size_t)n, sizeof(*st));
	struct cl_rt_task **h = calloc((size_t)n, sizeof(*h));
	uint64_t ns = 0;

	ctx.rx = calloc((size_t)groups * STORM_PAIRS, sizeof(*ctx.rx));
	if (!ctx.gate || !st || !h || !ctx.rx)
		return -1;
	for (int i = 0; i < groups * STORM_PAIRS; i++)
		if (!(ctx.rx[i] = cl_chan_create(STORM_MSG, STORM_CAP)))
			return -1;
	for (int i = 0; i < n; i++) {
		st[i] = (struct storm_task){ &ctx, i / (2 * STORM_PAIRS), i % STORM_PAIRS,
					     (i / STORM_PAIRS) % 2 };
		if (!(h[i] = cl_spawn(rt, NULL, storm_fn, &st[i])))
			return -1;
	}
	if (rtb_release_join(&ctx.ready, n, ctx.gate, h, &ns))
		ok = 0;
	for (int i = 0; i < groups * STORM_PAIRS; i++)
		cl_chan_destroy(ctx.rx[i]);
	cl_chan_destroy(ctx.gate);
	free(ctx.rx);
	free(st);
	free(h);
	if (!ok)
		fprintf(stderr, "runtime_peers: ours: storm lost or reordered messages\n");
	return ok ? (double)ns / ((double)n / 2 * STORM_PAIRS * (double)loops) : -1;
}

/* Cross-CPU round trips cost a wakeup each, a futex one where a side sleeps
 * (Boost): a tenth of the same-CPU count keeps the run bounded. */
static long pp_loops(const struct params *p, int place)
{
	return place == P_SAME ? p->pp_loops : p->pp_loops / 10 + 1;
}

/*
 * One run of ours: a fresh runtime, the workload once as a warm-up (a tenth
 * of the round trips or messages; the whole fib tree, so that its stacks
 * are mapped and in the descriptor cache, as in a runtime that has run for
 * a while), then once measured. The peers do the same in their process.
 */
static double ours_run(int w, int place, const struct params *p)
{
	struct cl_runtime *rt = rt_make(place);
	double v = -1;

	if (!rt)
		return -1;
	switch (w) {
	case W_PINGPONG:
		if (ours_pingpong(rt, place, pp_loops(p, place) / 10 + 1) >= 0)
			v = ours_pingpong(rt, place, pp_loops(p, place));
		break;
	case W_FIB:
		if (ours_fib(rt, p->fib_n) >= 0)
			v = ours_fib(rt, p->fib_n);
		break;
	default:
		if (ours_storm(rt, p->storm_groups, p->storm_loops / 10 + 1) >= 0)
			v = ours_storm(rt, p->storm_groups, p->storm_loops);
	}
	if (cl_runtime_destroy(rt))
		v = -1;
	return v;
}

/* ---------------------------------------------------------------- peers */

struct peer {
	const char *what;    /* "go", "boost" */
	const char *pkg;     /* the Debian package that provides its toolchain */
	char path[4096];
	char version[64];
	int ok;
};

/*
 * Run @argv with the CPU affinity @cpus (1 or 2 of them) and GOMAXPROCS=@procs;
 * return its stdout's first line in @out. Returns the exit status (-1: not run).
 */
static int run_peer(char *const argv[], int ncpu, int procs, char *out, size_t outlen)
{
	cpu_set_t set;
	int n;

	CPU_ZERO(&set);
	CPU_SET(cpu_a, &set);
	if (ncpu > 1)
		CPU_SET(cpu_b, &set);
	out[0] = 0;
	return peer_exec(argv, &set, procs, PEER_TIMEOUT_S, out, outlen, 1, &n);
}

/* The peer's own version line ("go 1.19.8"), or 0 if it cannot run. */
static int peer_probe(struct peer *pr)
{
	char *argv[] = { pr->path, (char *)"version", NULL };

	if (access(pr->path, X_OK))
		return 0;
	if (run_peer(argv, 1, 1, pr->version, sizeof(pr->version)) != 0 || !pr->version[0])
		return 0;
	return 1;
}

/* One peer run (the program warms up first); ns per op or -1. */
static double peer_run(struct peer *pr, int w, int place, const struct params *p)
{
	char a1[32], a2[32], line[256];
	char *argv[] = { pr->path, (char *)wname[w], (char *)pname[place], a1, a2, NULL };
	int rc;
	double v;

	switch (w) {
	case W_PINGPONG:
		snprintf(a1, sizeof(a1), "%ld", pp_loops(p, place));
		argv[4] = NULL;
		break;
	case W_FIB:
		snprintf(a1, sizeof(a1), "%d", p->fib_n);
		argv[4] = NULL;
		break;
	default:
		snprintf(a1, sizeof(a1), "%d", p->storm_groups);
		snprintf(a2, sizeof(a2), "%ld", p->storm_loops);
	}
	rc = run_peer(argv, place == P_SAME ? 1 : 2, place == P_SAME ? 1 : 2, line, sizeof(line));
	if (rc != 0 || sscanf(line, "ns_per_op %lf", &v) != 1 || v <= 0) {
		fprintf(stderr, "runtime_peers: %s %s %s failed (exit %d, output '%s')\n", pr->what,
			wname[w], pname[place], rc, line);
		return -1;
	}
	return v;
}

/* One comparison as the peer line of the report (peers.h's schema). */
static void peer_line(struct bench *b, const char *peer, const char *workload, int threads,
		      const double *ours, const double *theirs, int n)
{
	double mo, mt, r[6];
	double gain = peer_gains(ours, theirs, n, 0, &mo, &mt, r);

	peer_json(b, "runtime", "cl_runtime", peer, workload, threads, mo, mt, r[0], r[1], r[2],
		  r[3], r[4], r[5], gain, n, "ns/op", 0);
}

static void usage(void)
{
	printf("usage: runtime_peers [--go PATH] [--boost PATH] [--workload pingpong|fib|storm]\n"
	       "                     [--same-cpu | --two-cpu] [-l LOOPS] [-n FIB_N] [-g GROUPS]\n"
	       "                     [--storm-loops N] [--no-preempt] [--runs N] [--quick] [--smoke]\n"
	       "                     [--json | --json=PATH] [--help]\n"
	       "  the cachelocal runtime beside Go and Boost.Fiber: pipe ping-pong, fib spawn+join\n"
	       "  tree, hackbench-shaped message storm; peers default to runtime_go and\n"
	       "  runtime_boost next to this binary (missing: skipped with a note)\n"
	       "  -l LOOPS        ping-pong round trips on one CPU (default 1000000; --quick 200000);\n"
	       "                  on two CPUs a tenth\n"
	       "  -n N            fib(N) tree (default 20; --quick 18): 2 fib(N+1) - 1 tasks, nearly all\n"
	       "                  live at once when a runtime runs them breadth-first (Boost does;\n"
	       "                  ours runs a joined child next, depth-first, as Go does)\n"
	       "  -g GROUPS       storm groups of 20 senders + 20 receivers (default 4; --quick 2)\n"
	       "  --no-preempt    ours without the preemption tick (CL_RUNTIME_NO_PREEMPT): for\n"
	       "                  valgrind's tools, which abort on its signal\n"
	       "  --storm-loops N messages per sender to each receiver (default 500)\n");
	bench_usage("runtime_peers");
}

int main(int argc, char **argv)
{
	struct peer peers[2] = { { "go", "golang-go", "", "", 0 },
				 { "boost", "libboost-fiber-dev", "", "", 0 } };
	struct params p = { -1, -1, -1, -1 };
	int want_w = -1, want_p = -1, nr_peers = 0;
	struct bench b;
	static double ours[BENCH_MAX_RUNS], theirs[2][BENCH_MAX_RUNS];

	peer_exe_path(peers[0].path, sizeof(peers[0].path), "runtime_go");
	peer_exe_path(peers[1].path, sizeof(peers[1].path), "runtime_boost");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else if ((!strcmp(argv[i], "--go") || !strcmp(argv[i], "--boost")) && i + 1 < argc) {
			struct peer *pr = &peers[argv[i][2] == 'g' ? 0 : 1];

			snprintf(pr->path, sizeof(pr->path), "%s", argv[++i]);
		} else if (!strcmp(argv[i], "--workload") && i + 1 < argc) {
			for (want_w = 0; want_w < W_NR && strcmp(argv[i + 1], wname[want_w]); want_w++)
				;
			if (want_w == W_NR)
				rtb_unknown("runtime_peers", argv[i + 1]);
			i++;
		} else if (!strcmp(argv[i], "--no-preempt")) {
			rt_flags |= CL_RUNTIME_NO_PREEMPT;
		} else if (!strcmp(argv[i], "--same-cpu")) {
			want_p = P_SAME;
		} else if (!strcmp(argv[i], "--two-cpu")) {
			want_p = P_TWO;
		} else if (!strcmp(argv[i], "-l")) {
			p.pp_loops = rtb_num_arg("runtime_peers", argc, argv, &i, 1, 1000000000L);
		} else if (!strcmp(argv[i], "-n")) {
			p.fib_n = (int)rtb_num_arg("runtime_peers", argc, argv, &i, 2, 30);
		} else if (!strcmp(argv[i], "-g")) {
			p.storm_groups = (int)rtb_num_arg("runtime_peers", argc, argv, &i, 1, 100);
		} else if (!strcmp(argv[i], "--storm-loops")) {
			p.storm_loops = rtb_num_arg("runtime_peers", argc, argv, &i, 1, 1000000L);
		} else if (!bench_is_shared_arg(argc, argv, &i)) {
			rtb_unknown("runtime_peers", argv[i]);
		}
	}
	bench_init(&b, "runtime_peers", argc, argv);
	if (p.pp_loops < 0)
		p.pp_loops = b.smoke ? 2000 : b.quick ? 200000 : 1000000;
	if (p.fib_n < 0)
		p.fib_n = b.smoke ? 10 : b.quick ? 18 : 20;
	if (p.storm_groups < 0)
		p.storm_groups = b.smoke ? 1 : b.quick ? 2 : 4;
	if (p.storm_loops < 0)
		p.storm_loops = b.smoke ? 10 : 500;
	cpu_a = bench_allowed_cpu(0);
	cpu_b = bench_allowed_cpu(1);
	for (int k = 0; k < 2; k++) {
		peers[k].ok = peer_probe(&peers[k]);
		nr_peers += peers[k].ok;
		if (!peers[k].ok)
			printf("# %s skipped: %s not installed (%s not built or not runnable)\n",
			       peers[k].what, peers[k].pkg, peers[k].path);
		else if (!b.json_only)
			printf("# peer %s: %s\n", peers[k].what, peers[k].version);
	}
	if (!nr_peers)
		return 77;
	if (!b.json_only)
		printf("# placement: same-cpu = CPU %d only (1 worker, GOMAXPROCS=1, 1 Boost thread); "
		       "two-cpu = CPUs %d,%d (2 pinned workers, tasks not pinned; GOMAXPROCS=2 on both; 2 pinned "
		       "Boost threads); context switch %s\n",
		       cpu_a, cpu_a, cpu_b, cl_runtime_context_kind());
	for (int w = 0; w < W_NR; w++) {
		for (int pl = 0; pl < P_NR; pl++) {
			char workload[64];
			double med;

			if ((want_w >= 0 && w != want_w) || (want_p >= 0 && pl != want_p))
				continue;
			if (pl == P_TWO && bench_nr_allowed_cpus() < 2) {
				printf("# %s %s skipped: only one CPU allowed\n", wname[w], pname[pl]);
				continue;
			}
			snprintf(workload, sizeof(workload), "%s %s", wname[w], pname[pl]);
			/* the driver's own thread only waits (join, waitpid) while a side runs */
			for (int r = 0; r < b.runs; r++) {
				ours[r] = ours_run(w, pl, &p);
				if (ours[r] < 0)
					return 1;
				bench_progress(&b, "%s cachelocal run %d: %.1f", workload, r, ours[r]);
				for (int k = 0; k < 2; k++) {
					if (!peers[k].ok)
						continue;
					theirs[k][r] = peer_run(&peers[k], w, pl, &p);
					if (theirs[k][r] < 0)
						return 1;
					bench_progress(&b, "%s %s run %d: %.1f", workload, peers[k].what, r,
						       theirs[k][r]);
				}
			}
			med = bench_report(&b, workload, "cachelocal", pname[pl], pl == P_SAME ? 1 : 2,
					   ours, b.runs, unit_of[w]);
			for (int k = 0; k < 2; k++) {
				char ratio[96];

				if (!peers[k].ok)
					continue;
				double tm = bench_report(&b, workload, peers[k].version, pname[pl],
							 pl == P_SAME ? 1 : 2, theirs[k], b.runs,
							 unit_of[w]);

				snprintf(ratio, sizeof(ratio), "%s / cachelocal (x ahead)", peers[k].version);
				bench_ratio(&b, workload, ratio, tm, med);
				peer_line(&b, peers[k].version, workload, pl == P_SAME ? 1 : 2, ours, theirs[k],
					  b.runs);
				if (w == W_PINGPONG && pl == P_SAME)
					rtb_goal(&b, "pingpong same-cpu >= 3x the peer", tm / med, 3, 1);
				else
					rtb_goal(&b, "ahead of the peer (gain > 1)", tm / med, 1, 1);
				fflush(stdout);
			}
		}
	}
	return bench_finish(&b);
}
