/* SPDX-License-Identifier: MIT */
/*
 * tests/smp/e3k_bursts.c - E3k: T3's burst workload on the real kernel's
 * mm_cid allocator. Records, per burst, the CPU the kernel ran the thread on
 * (rseq cpu_id) and the mm_cid it handed the thread; scripts/e3k.py feeds
 * those sequences to the calibrated cache model (scripts/cachemodel.py).
 * Timing here means nothing (an emulated guest): only the choices count.
 *
 * The workload (the seed's T3 test, librseq's intermittent benchmark): T
 * threads, each pinned to its own allowed CPU; each round every thread runs
 * one burst (increments every byte of a 16 KiB item indexed by its mm_cid,
 * by its CPU when mm_cid is not live) in a random order per round (a seeded
 * shuffle), gap ms apart, and sleeps in between. Each thread wakes on its
 * own absolute timer (no controller thread running among them), so a
 * thread's bursts are T x gap ms apart. Each gap runs in a forked child
 * (a fresh mm: the cids of one gap do not carry into the next).
 *
 * Knobs (environment; a malformed value is an error, exit 2):
 *   E3K_THREADS   threads (default: the allowed CPUs, at most 1024)
 *   E3K_GAPS      gaps in ms, comma-separated (default "10,200")
 *   E3K_ROUNDS    rounds per gap (default: per gap, SPAN / (threads x gap)
 *                 clamped to 3..16: at 64 threads 3 rounds of 200 ms (38 s)
 *                 and 16 of 10 ms (10 s), under 60 s in all)
 *   E3K_SPAN_MS   guest time one gap may take by default (default 20000)
 *   E3K_PIN       1: thread i pinned to the i-th allowed CPU (default; the
 *                 seed's test); 0: threads free, the kernel places them
 *   E3K_SEED      shuffle seed (default 1)
 *   E3K_BURST_KB  burst size in KiB (default 16)
 *
 * Output (stdout, one write() per line; every line of a record starts with
 * "@@E3K " and ends with " #" + 8 hex digits, the FNV-1a 32 hash of what
 * precedes " #", so a line cut by console messages is detected):
 *
 *   @@E3K BEGIN v=1 gap_ms=G threads=T rounds=R pin=P seed=S burst_kb=K
 *   @@E3K kernel release=<uname -r> machine=<uname -m> ids=<cl_id_mode_name>
 *         mm_cid=live|absent
 *   @@E3K cpus possible=<list> online=<list> allowed=<list>
 *   @@E3K core|llc|node <id>:<cpu list> ...   (repeated lines accumulate)
 *   @@E3K b <first seq> <thread>:<cpu>:<cid>:<ms> ...   (16 bursts a line)
 *   @@E3K END gap_ms=G bursts=N overlap=O changed=C late_ms_max=L
 *         pin_failed=F elapsed_ms=E
 *
 * A burst's seq is its global start order (0..N-1, taken at the start of
 * the burst), ms its start in ms since the block's time 0 (one decimal),
 * cid -1 when mm_cid is not live in that thread. A thread's k-th burst is
 * its round k. END: overlap = bursts that started while another ran,
 * changed = bursts whose CPU or cid differed at the end from the start,
 * late_ms_max = the latest wake after its deadline. The last stdout line is
 * `PASS e3k_bursts: ...` (exit 0) or `FAIL e3k_bursts: ...` (exit 1); a
 * bad knob exits 2.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cachelocal/rseq.h>
#include <cachelocal/topology.h>

#define MAX_THREADS 1024
#define MAX_GAPS 8
#define MAX_CPUS CPU_SETSIZE
#define PER_LINE 16
#define LINE_MAX_BYTES 1024

/* ---------------------------------------------------------------- output */

struct line {
	char buf[LINE_MAX_BYTES];
	size_t len;
};

static void line_start(struct line *l, const char *key)
{
	l->len = (size_t)snprintf(l->buf, sizeof(l->buf), "@@E3K %s", key);
}

static void line_add(struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->len += (size_t)n;
	if (l->len >= sizeof(l->buf) - 16)
		l->len = sizeof(l->buf) - 16; /* never reached with PER_LINE entries */
}

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

static void write_all(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The line, its hash, a newline: one write(). */
static void line_emit(struct line *l)
{
	uint32_t h = fnv1a(l->buf, l->len);

	l->len += (size_t)snprintf(l->buf + l->len, sizeof(l->buf) - l->len, " #%08x\n", h);
	write_all(l->buf, l->len);
}

/* A plain line (PASS/FAIL), stdout unbuffered as the record lines are. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	write_all(buf, (size_t)n);
}

/* "0-3,8" of set[0..n): appended to l. */
static void add_cpulist(struct line *l, const unsigned char *set, unsigned n)
{
	int first = 1;

	for (unsigned c = 0; c < n; c++) {
		unsigned e = c;

		if (!set[c])
			continue;
		while (e + 1 < n && set[e + 1])
			e++;
		line_add(l, e > c ? "%s%u-%u" : "%s%u", first ? "" : ",", c, e);
		first = 0;
		c = e;
	}
	if (first)
		line_add(l, "none");
}

/*
 * "key id:cpus id:cpus ..." lines of one per-CPU attribute (core, llc,
 * node): groups in order of their lowest CPU, a new line after 8 groups.
 */
static void emit_groups(const char *key, const struct cl_topology *t, size_t field)
{
	unsigned n = t->nr_cpu_ids < MAX_CPUS ? t->nr_cpu_ids : MAX_CPUS;
	unsigned char done[MAX_CPUS] = { 0 }, set[MAX_CPUS];
	struct line l;
	int in_line = 0;

	for (unsigned c = 0; c < n; c++) {
		int id;

		if (!t->cpu[c].possible || done[c])
			continue;
		memcpy(&id, (const char *)&t->cpu[c] + field, sizeof(id));
		memset(set, 0, n);
		for (unsigned d = c; d < n; d++) {
			int other;

			if (!t->cpu[d].possible)
				continue;
			memcpy(&other, (const char *)&t->cpu[d] + field, sizeof(other));
			if (other == id)
				set[d] = done[d] = 1;
		}
		if (!in_line)
			line_start(&l, key);
		line_add(&l, " %d:", id);
		add_cpulist(&l, set, n);
		if (++in_line == 8) {
			line_emit(&l);
			in_line = 0;
		}
	}
	if (in_line)
		line_emit(&l);
}

/* ---------------------------------------------------------------- knobs */

struct knobs {
	int threads, rounds, pin, burst_kb, span_ms, nr_gaps;
	unsigned seed;
	int gaps[MAX_GAPS];
};

/* @name as an int in [lo, hi]; @def if unset. Return: 0, or -1 (malformed). */
static int env_int(const char *name, int def, int lo, int hi, int *out)
{
	const char *s = getenv(name);
	char *end;
	long v;

	*out = def;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < lo || v > hi) {
		say("e3k_bursts: %s=%s: want an integer in %d..%d", name, s, lo, hi);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int env_gaps(struct knobs *k)
{
	const char *s = getenv("E3K_GAPS");
	const char *p = s && *s ? s : "10,200";

	k->nr_gaps = 0;
	while (*p) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v < 0 || v > 10000 || k->nr_gaps == MAX_GAPS ||
		    (*end && *end != ',')) {
			say("e3k_bursts: E3K_GAPS=%s: want up to %d gaps in ms (0..10000), comma-separated",
			    p, MAX_GAPS);
			return -1;
		}
		k->gaps[k->nr_gaps++] = (int)v;
		p = *end ? end + 1 : end;
	}
	return k->nr_gaps ? 0 : -1;
}

/* Default rounds of a gap: SPAN / (threads x gap), clamped to 3..16. */
static int rounds_for(const struct knobs *k, int gap_ms)
{
	long r;

	if (k->rounds)
		return k->rounds;
	r = gap_ms ? (long)k->span_ms / ((long)k->threads * gap_ms) : 16;
	return r < 3 ? 3 : r > 16 ? 16 : (int)r;
}

/* ---------------------------------------------------------------- workload */

struct burst {
	uint32_t seq;
	int cpu, cid;
	double ms;
};

struct run;

struct thread {
	pthread_t th;
	int index, cpu; /* cpu: where to pin, -1 unpinned */
	struct burst *b; /* one per round */
	struct run *run;
};

struct run {
	int gap_ms, threads, rounds;
	size_t burst_bytes;
	int nr_items;
	unsigned char *items;
	int *pos;			/* pos[r * threads + t]: thread t's place in round r */
	struct thread *th;
	pthread_barrier_t ready, go;
	struct timespec t0;
	unsigned next_seq;		/* atomics (__atomic builtins) */
	int in_flight;
	unsigned overlap, changed, pin_failed;
	long late_us_max;
};

static double ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) * 1e-6;
}

static struct timespec add_ms(struct timespec t, long ms)
{
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* The kernel's mm_cid of this thread, -1 when it is not live here. */
static int kernel_cid(int live)
{
	return live ? cl_mm_cid() : -1;
}

static void *thread_main(void *arg)
{
	struct thread *me = arg;
	struct run *r = me->run;
	int live;

	if (me->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((unsigned)me->cpu, &set);
		/* EINVAL: the CPU went offline or left the cpuset; run unpinned */
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			__atomic_fetch_add(&r->pin_failed, 1, __ATOMIC_RELAXED);
	}
	live = cl_id_mode() == CL_ID_MM_CID;
	pthread_barrier_wait(&r->ready);
	pthread_barrier_wait(&r->go);
	for (int k = 0; k < r->rounds; k++) {
		long slot = (long)k * r->threads + r->pos[k * r->threads + me->index];
		struct timespec at = add_ms(r->t0, slot * r->gap_ms);
		struct burst *b = &me->b[k];
		unsigned char *item;
		double late;
		int idx;

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR)
			;
		b->seq = __atomic_fetch_add(&r->next_seq, 1, __ATOMIC_RELAXED);
		if (__atomic_fetch_add(&r->in_flight, 1, __ATOMIC_RELAXED) > 0)
			__atomic_fetch_add(&r->overlap, 1, __ATOMIC_RELAXED);
		b->cpu = cl_cpu_id();
		b->cid = kernel_cid(live);
		b->ms = ms_since(&r->t0);
		late = b->ms - (double)(slot * r->gap_ms);
		if (late > 0) {
			long us = (long)(late * 1e3), old = __atomic_load_n(&r->late_us_max, __ATOMIC_RELAXED);

			while (us > old && !__atomic_compare_exchange_n(&r->late_us_max, &old, us, 0,
									__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				;
		}
		/* the burst: the item of the index a program would use */
		idx = b->cid >= 0 ? b->cid : b->cpu;
		if (idx < 0 || idx >= r->nr_items)
			idx = 0;
		item = r->items + (size_t)idx * r->burst_bytes;
		for (size_t i = 0; i < r->burst_bytes; i++)
			item[i]++;
		__asm__ __volatile__("" : : "r"(item) : "memory");
		if (cl_cpu_id() != b->cpu || kernel_cid(live) != b->cid)
			__atomic_fetch_add(&r->changed, 1, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&r->in_flight, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* xorshift32: a fixed sequence per seed (the shuffle must not depend on libc). */
static uint32_t rng_next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * The machine's topology. Inlined into emit_header(): this build
 * (-O2 -Werror) once failed there on a false -Wmaybe-uninitialized inside
 * topology/model.h, which a user's build would have hit too.
 */
static int load_topology(struct cl_topology *t)
{
	return cl_topology_load(t, NULL);
}

static void emit_header(const struct knobs *k, const struct run *r, const unsigned char *allowed)
{
	struct cl_topology t;
	struct utsname u;
	struct line l;
	unsigned char possible[MAX_CPUS] = { 0 }, online[MAX_CPUS] = { 0 };
	unsigned n;
	enum cl_id_mode mode = cl_id_mode();

	line_start(&l, "BEGIN");
	line_add(&l, " v=1 gap_ms=%d threads=%d rounds=%d pin=%d seed=%u burst_kb=%d", r->gap_ms,
		 r->threads, r->rounds, k->pin, k->seed, k->burst_kb);
	line_emit(&l);
	if (uname(&u) != 0) {
		strcpy(u.release, "unknown");
		strcpy(u.machine, "unknown");
	}
	line_start(&l, "kernel");
	line_add(&l, " release=%s machine=%s ids=%s mm_cid=%s", u.release, u.machine,
		 cl_id_mode_name(mode), mode == CL_ID_MM_CID ? "live" : "absent");
	line_emit(&l);
	if (load_topology(&t) != 0) {
		line_start(&l, "cpus");
		line_add(&l, " possible=none online=none allowed=");
		add_cpulist(&l, allowed, MAX_CPUS);
		line_emit(&l);
		return;
	}
	n = t.nr_cpu_ids < MAX_CPUS ? t.nr_cpu_ids : MAX_CPUS;
	for (unsigned c = 0; c < n; c++) {
		possible[c] = (unsigned char)t.cpu[c].possible;
		online[c] = (unsigned char)t.cpu[c].online;
	}
	line_start(&l, "cpus");
	line_add(&l, " possible=");
	add_cpulist(&l, possible, n);
	line_add(&l, " online=");
	add_cpulist(&l, online, n);
	line_add(&l, " allowed=");
	add_cpulist(&l, allowed, MAX_CPUS);
	line_add(&l, " fallback=0x%x", t.fallback);
	line_emit(&l);
	emit_groups("core", &t, offsetof(struct cl_cpu_info, core));
	emit_groups("llc", &t, offsetof(struct cl_cpu_info, llc));
	emit_groups("node", &t, offsetof(struct cl_cpu_info, node));
	cl_topology_free(&t);
}

/* The bursts in seq order, PER_LINE a line; then END. Return: 0, or -1 (a seq is missing). */
static int emit_bursts(struct run *r, double elapsed_ms)
{
	size_t n = (size_t)r->threads * (size_t)r->rounds;
	struct { int t, k; } *at = calloc(n, sizeof(*at));
	struct line l;
	int rc = 0;

	if (!at)
		return -1;
	for (size_t i = 0; i < n; i++)
		at[i].t = -1;
	for (int t = 0; t < r->threads; t++)
		for (int k = 0; k < r->rounds; k++) {
			uint32_t s = r->th[t].b[k].seq;

			if (s < n && at[s].t < 0) {
				at[s].t = t;
				at[s].k = k;
			} else {
				rc = -1;
			}
		}
	for (size_t i = 0; i < n; i++) {
		const struct burst *b;

		if (at[i].t < 0) {
			rc = -1;
			continue;
		}
		if (i % PER_LINE == 0) {
			line_start(&l, "b");
			line_add(&l, " %zu", i);
		}
		b = &r->th[at[i].t].b[at[i].k];
		line_add(&l, " %d:%d:%d:%.1f", at[i].t, b->cpu, b->cid, b->ms);
		if (i % PER_LINE == PER_LINE - 1 || i == n - 1)
			line_emit(&l);
	}
	line_start(&l, "END");
	line_add(&l, " gap_ms=%d bursts=%zu overlap=%u changed=%u late_ms_max=%.1f pin_failed=%u elapsed_ms=%.1f",
		 r->gap_ms, n, r->overlap, r->changed, (double)r->late_us_max / 1e3, r->pin_failed,
		 elapsed_ms);
	line_emit(&l);
	free(at);
	return rc;
}

/* One gap: threads, rounds, output. Return: 0, or -1 (with a reason printed). */
static int run_gap(const struct knobs *k, int gap_ms, const int *allowed_list, int nr_allowed,
		   const unsigned char *allowed)
{
	struct run r = { .gap_ms = gap_ms, .threads = k->threads, .rounds = rounds_for(k, gap_ms) };
	uint32_t rng = k->seed ? k->seed : 1;
	unsigned nr_ids = cl_nr_possible_cpus();
	int created = 0, rc = -1;
	struct timespec now;

	r.burst_bytes = (size_t)k->burst_kb * 1024;
	r.nr_items = (int)(nr_ids > (unsigned)r.threads ? nr_ids : (unsigned)r.threads);
	r.items = aligned_alloc(4096, (size_t)r.nr_items * r.burst_bytes);
	r.pos = malloc((size_t)r.rounds * (size_t)r.threads * sizeof(int));
	r.th = calloc((size_t)r.threads, sizeof(*r.th));
	if (!r.items || !r.pos || !r.th) {
		say("FAIL e3k_bursts: out of memory (%d threads, %d rounds)", r.threads, r.rounds);
		goto out;
	}
	memset(r.items, 0, (size_t)r.nr_items * r.burst_bytes);
	/* the order of each round: a shuffle, stored as each thread's place */
	for (int q = 0; q < r.rounds; q++) {
		int *order = malloc((size_t)r.threads * sizeof(int));

		if (!order)
			goto out;
		for (int t = 0; t < r.threads; t++)
			order[t] = t;
		for (int t = r.threads - 1; t > 0; t--) {
			int j = (int)(rng_next(&rng) % (uint32_t)(t + 1)), x = order[t];

			order[t] = order[j];
			order[j] = x;
		}
		for (int p = 0; p < r.threads; p++)
			r.pos[q * r.threads + order[p]] = p;
		free(order);
	}
	emit_header(k, &r, allowed);
	pthread_barrier_init(&r.ready, NULL, (unsigned)r.threads + 1);
	pthread_barrier_init(&r.go, NULL, (unsigned)r.threads + 1);
	for (int t = 0; t < r.threads; t++) {
		r.th[t].index = t;
		r.th[t].cpu = k->pin ? allowed_list[t % nr_allowed] : -1;
		r.th[t].run = &r;
		r.th[t].b = calloc((size_t)r.rounds, sizeof(struct burst));
		if (!r.th[t].b || pthread_create(&r.th[t].th, NULL, thread_main, &r.th[t]) != 0) {
			/* the barriers wait for every thread: nothing can run; give up */
			say("FAIL e3k_bursts: cannot start thread %d of %d", t, r.threads);
			_exit(1);
		}
		created++;
	}
	pthread_barrier_wait(&r.ready);
	clock_gettime(CLOCK_MONOTONIC, &now);
	r.t0 = add_ms(now, 50);
	pthread_barrier_wait(&r.go);
	for (int t = 0; t < created; t++)
		pthread_join(r.th[t].th, NULL);
	if (emit_bursts(&r, ms_since(&r.t0)) != 0)
		say("FAIL e3k_bursts: burst order has a gap or a duplicate");
	else
		rc = 0;
	pthread_barrier_destroy(&r.ready);
	pthread_barrier_destroy(&r.go);
out:
	if (r.th)
		for (int t = 0; t < r.threads; t++)
			free(r.th[t].b);
	free(r.th);
	free(r.pos);
	free(r.items);
	return rc;
}

int main(void)
{
	static unsigned char allowed[MAX_CPUS];
	static int allowed_list[MAX_CPUS];
	struct knobs k = { 0 };
	cpu_set_t set;
	int nr_allowed = 0, failed = 0, seed;

	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		CPU_ZERO(&set);
		CPU_SET(0, &set);
	}
	for (int c = 0; c < MAX_CPUS; c++)
		if (CPU_ISSET((unsigned)c, &set)) {
			allowed[c] = 1;
			allowed_list[nr_allowed++] = c;
		}
	if (env_int("E3K_THREADS", nr_allowed < MAX_THREADS ? nr_allowed : MAX_THREADS, 1,
		    MAX_THREADS, &k.threads) || env_int("E3K_ROUNDS", 0, 2, 100000, &k.rounds) ||
	    env_int("E3K_SPAN_MS", 20000, 1, 10000000, &k.span_ms) ||
	    env_int("E3K_PIN", 1, 0, 1, &k.pin) || env_int("E3K_SEED", 1, 0, 1 << 30, &seed) ||
	    env_int("E3K_BURST_KB", 16, 1, 1024, &k.burst_kb) || env_gaps(&k))
		return 2;
	k.seed = (unsigned)seed;
	for (int g = 0; g < k.nr_gaps; g++) {
		/* each gap in a child: a fresh mm, so fresh cids */
		pid_t pid = fork();
		int status = 0;

		if (pid == 0)
			_exit(run_gap(&k, k.gaps[g], allowed_list, nr_allowed, allowed) ? 1 : 0);
		if (pid < 0) {
			if (run_gap(&k, k.gaps[g], allowed_list, nr_allowed, allowed) != 0)
				failed++;
			continue;
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	if (failed) {
		say("FAIL e3k_bursts: %d of %d gaps failed", failed, k.nr_gaps);
		return 1;
	}
	say("PASS e3k_bursts: %d gaps, %d threads, ids %s", k.nr_gaps, k.threads,
	    cl_id_mode_name(cl_id_mode()));
	return 0;
}
