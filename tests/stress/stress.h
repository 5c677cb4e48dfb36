/* SPDX-License-Identifier: MIT */
/*
 * tests/stress/stress.h - shared harness of the percpu_ops/counter stress
 * tests. Include it BEFORE any cachelocal header: it overrides the test
 * hooks so that the race windows get wider:
 *
 *   CL_RSEQ_INJECT_ASM(n)  inside each critical section, between its steps:
 *                          a delay loop of stress_asm_loops[n] iterations
 *                          (STRESS_ASM_DELAY: %rcx or x16, x17, declared in
 *                          CL_RSEQ_INJECT_CLOBBER)
 *   CL_INJECT(n)           in C around the sections and in the fallback's
 *                          CAS loops: counts aborts (n = 20..22) and yields
 *                          every STRESS_YIELD_EVERY-th call
 *
 * Knobs (environment): DURATION (default 1): each pass of a test (one per
 * index mode) runs DURATION / 2 seconds; ITERATIONS (default 20000): the
 * minimum operations per worker (workers go on until the time is up);
 * CORES (default: allowed CPUs) -> 6 x CORES worker threads, INJECT_LOOPS
 * (default 64).
 * Disturbances while the workers run: a SIGUSR1 storm at random workers, a
 * migrator that moves random workers between CPUs with sched_setaffinity
 * (both left out when cfg->calm is set), and yields inside the workers.
 * Exit status: 0 pass, 1 fail, 77 skip.
 */
#ifndef CL_STRESS_H
#define CL_STRESS_H

#if defined(CACHELOCAL_PERCPU_OPS_H) || defined(CACHELOCAL_CONFIG_H)
#error "include stress.h before the cachelocal headers"
#endif

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Delay loop counts per inject point, read by the asm hook (rip-relative). */
int stress_asm_loops[8];

/*
 * STRESS_ASM_DELAY(loops, n): asm for a delay loop of loops[n] iterations
 * (loops: an int array at file scope), for CL_RSEQ_INJECT_ASM(n); it uses
 * STRESS_ASM_DELAY_CLOBBER's registers, the flags, and the labels each
 * architecture's sections leave to hooks (x86_64 %rcx and labels 5, 6;
 * aarch64 x16, x17 and labels 6, 7: arch/<arch>/percpu_ops.h).
 */
#if defined(__x86_64__)
#define STRESS_ASM_DELAY(loops, n)                               \
	"movl " #loops "+" #n "*4(%%rip), %%ecx\n\t"            \
	"testl %%ecx, %%ecx\n\t"                                 \
	"jz 6f\n\t"                                              \
	"5:\n\t"                                                 \
	"decl %%ecx\n\t"                                         \
	"jnz 5b\n\t"                                             \
	"6:\n\t"
#define STRESS_ASM_DELAY_CLOBBER , "rcx"
#elif defined(__aarch64__)
#define STRESS_ASM_DELAY(loops, n)                                       \
	"adrp x16, " #loops "+" #n "*4\n\t"                             \
	"ldr w17, [x16, #:lo12:" #loops "+" #n "*4]\n\t"                \
	"cbz w17, 7f\n\t"                                               \
	"6:\n\t"                                                        \
	"subs w17, w17, #1\n\t"                                         \
	"b.ne 6b\n\t"                                                   \
	"7:\n\t"
#define STRESS_ASM_DELAY_CLOBBER , "x16", "x17"
#endif
#ifdef STRESS_ASM_DELAY
#define CL_RSEQ_INJECT_ASM(n) STRESS_ASM_DELAY(stress_asm_loops, n)
#define CL_RSEQ_INJECT_CLOBBER STRESS_ASM_DELAY_CLOBBER
#endif

#define STRESS_YIELD_EVERY 257

static _Thread_local unsigned long stress_tl_inject;
static _Thread_local unsigned long stress_tl_aborts;

static inline void stress_inject(int n)
{
	if (n >= 20 && n <= 26) /* abort paths of the sections */
		stress_tl_aborts++;
	if (++stress_tl_inject % STRESS_YIELD_EVERY == 0)
		sched_yield();
}
#define CL_INJECT(n) stress_inject(n)

/* ---- knobs ---- */

static inline long stress_env(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return def;
	v = strtol(s, &end, 10);
	return *end || v < 0 ? def : v;
}

struct stress_cfg {
	double duration;    /* seconds per index mode (DURATION / 2) */
	long iterations;    /* per worker */
	int cores;
	int nr_workers;
	int allowed[1024];  /* allowed CPU ids */
	int nr_allowed;
	int calm;           /* 1: no signal storm and no migrator (stress_run()) */
};

static inline void stress_cfg_load(struct stress_cfg *cfg)
{
	cpu_set_t set;
	long loops;

	memset(cfg, 0, sizeof(*cfg));
	cfg->duration = (double)stress_env("DURATION", 1) / 2;
	cfg->iterations = stress_env("ITERATIONS", 20000);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE && cfg->nr_allowed < 1024; c++)
			if (CPU_ISSET(c, &set))
				cfg->allowed[cfg->nr_allowed++] = c;
	if (cfg->nr_allowed == 0)
		cfg->allowed[cfg->nr_allowed++] = 0;
	cfg->cores = (int)stress_env("CORES", cfg->nr_allowed);
	if (cfg->cores < 1)
		cfg->cores = 1;
	cfg->nr_workers = 6 * cfg->cores;
	if (cfg->nr_workers > 4096)
		cfg->nr_workers = 4096;
	loops = stress_env("INJECT_LOOPS", 64);
	for (int i = 0; i < 8; i++)
		stress_asm_loops[i] = (int)(loops * (i % 3 + 1) / 2);
}

static inline double stress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the run: workers plus disturbers ---- */

struct stress_run;
typedef void *(*stress_worker_fn)(struct stress_run *run, int id);

struct stress_run {
	const struct stress_cfg *cfg;
	stress_worker_fn fn;
	void *priv;
	double deadline;
	pthread_t *threads;
	int nr_done;                /* workers finished (atomic) */
	int started;                /* workers started (atomic) */
	unsigned long signals;      /* SIGUSR1 sent */
	unsigned long migrations;   /* successful affinity changes */
	unsigned long aborts;       /* aborted critical sections, all workers (atomic) */
	unsigned long ops;          /* operations done, all workers (atomic) */
	int failed;                 /* a worker reported a failure (atomic) */
};

struct stress_worker_arg {
	struct stress_run *run;
	int id;
};

static unsigned long stress_sig_handled;
static void (*stress_sig_hook)(void);

static void stress_sigusr1(int sig)
{
	int saved = errno;

	(void)sig;
	__atomic_fetch_add(&stress_sig_handled, 1, __ATOMIC_RELAXED);
	if (stress_sig_hook)
		stress_sig_hook();
	errno = saved;
}

/* A worker stops after ITERATIONS operations once the time is up too. */
static inline int stress_should_stop(const struct stress_run *run, long done)
{
	return done >= run->cfg->iterations && stress_now() >= run->deadline;
}

static inline void stress_fail(struct stress_run *run, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void stress_fail(struct stress_run *run, const char *fmt, ...)
{
	va_list ap;

	__atomic_store_n(&run->failed, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void *stress_worker_main(void *p)
{
	struct stress_worker_arg *a = p;
	void *ret;

	__atomic_fetch_add(&a->run->started, 1, __ATOMIC_RELAXED);
	ret = a->run->fn(a->run, a->id);
	__atomic_fetch_add(&a->run->aborts, stress_tl_aborts, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->run->nr_done, 1, __ATOMIC_RELEASE);
	return ret;
}

/* Call from a worker once its first operation is done: lets SIGUSR1 in. */
static inline void stress_allow_signals(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

static inline int stress_all_done(struct stress_run *run)
{
	return __atomic_load_n(&run->nr_done, __ATOMIC_ACQUIRE) >= run->cfg->nr_workers;
}

static void *stress_storm_main(void *p)
{
	struct stress_run *run = p;
	unsigned seed = 12345;

	while (!stress_all_done(run)) {
		int t = (int)(rand_r(&seed) % (unsigned)run->cfg->nr_workers);

		if (pthread_kill(run->threads[t], SIGUSR1) == 0)
			run->signals++;
		if (run->signals % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static void *stress_migrator_main(void *p)
{
	struct stress_run *run = p;
	const struct stress_cfg *cfg = run->cfg;
	unsigned seed = 54321;
	struct timespec nap = { 0, 200000 }; /* 0.2 ms */

	while (!stress_all_done(run)) {
		int t = (int)(rand_r(&seed) % (unsigned)cfg->nr_workers);
		cpu_set_t set;

		CPU_ZERO(&set);
		if (rand_r(&seed) % 4 == 0) {
			for (int i = 0; i < cfg->nr_allowed; i++)
				CPU_SET(cfg->allowed[i], &set);
		} else {
			CPU_SET(cfg->allowed[rand_r(&seed) % (unsigned)cfg->nr_allowed], &set);
		}
		if (pthread_setaffinity_np(run->threads[t], sizeof(set), &set) == 0)
			run->migrations++;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/*
 * stress_run() - run cfg->nr_workers workers fn(run, id) with the storm and
 * the migrator; returns 0 when every thread ran and no worker failed.
 */
static inline int stress_run(struct stress_run *run, const struct stress_cfg *cfg,
			     stress_worker_fn fn, void *priv, void (*sig_hook)(void))
{
	struct stress_worker_arg *args;
	struct sigaction sa;
	sigset_t block, old;
	pthread_t storm, migrator;
	int n = cfg->nr_workers, rc = 0;

	memset(run, 0, sizeof(*run));
	run->cfg = cfg;
	run->fn = fn;
	run->priv = priv;
	run->deadline = stress_now() + cfg->duration;
	run->threads = calloc((size_t)n, sizeof(*run->threads));
	args = calloc((size_t)n, sizeof(*args));
	if (!run->threads || !args) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	stress_sig_hook = sig_hook;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stress_sigusr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	/* Workers start with SIGUSR1 blocked (stress_allow_signals()). */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (int i = 0; i < n; i++) {
		args[i] = (struct stress_worker_arg){ run, i };
		if (pthread_create(&run->threads[i], NULL, stress_worker_main, &args[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	if (!cfg->calm && (pthread_create(&storm, NULL, stress_storm_main, run) != 0 ||
			   pthread_create(&migrator, NULL, stress_migrator_main, run) != 0)) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
	if (!cfg->calm) {
		pthread_join(storm, NULL);
		pthread_join(migrator, NULL);
	}
	for (int i = 0; i < n; i++) {
		void *ret;

		pthread_join(run->threads[i], &ret);
		if (ret != NULL)
			rc = 1;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (__atomic_load_n(&run->failed, __ATOMIC_RELAXED))
		rc = 1;
	free(args);
	free(run->threads);
	run->threads = NULL;
	return rc;
}

/* "cpu_id index, ops rseq" for the report line of index mode idx. */
#define STRESS_INDEX_FMT "%s index, ops %s"
#define STRESS_INDEX_ARGS(idx)                                        \
	(idx) == CL_RSEQ_INDEX_MM_CID ? "mm_cid" : "cpu_id",          \
		cl_rseq_ops_mode_name(cl_rseq_ops_mode_index(idx))

/* main(): run_index(cfg, idx) in both index modes; exit 0 when both pass. */
#define STRESS_MAIN(run_index)                                        \
	int main(void)                                                \
	{                                                             \
		struct stress_cfg cfg;                                \
		int rc = 0;                                           \
                                                                      \
		stress_cfg_load(&cfg);                                \
		rc |= run_index(&cfg, CL_RSEQ_INDEX_CPU_ID);          \
		rc |= run_index(&cfg, CL_RSEQ_INDEX_MM_CID);          \
		return rc ? 1 : 0;                                    \
	}

#endif /* CL_STRESS_H */
