/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/crshim.h - a minimal runner for the Criterion subset the unit
 * tests use, for the sanitizer and valgrind builds.
 *
 * Why: Criterion 2.4.1 (Debian 12) cannot start under TSan on this kernel:
 * its inheritable arena fails ("Could not initialize inheritable arena") with
 * ASLR on or off, and with -j2 libcriterion itself faults. Under ASan and
 * valgrind it works but re-executes itself for every test, which those
 * tools make slow (3x under ASan, 13x under valgrind). `make check-tsan`,
 * `make check-asan` and `make check-valgrind` therefore compile the same
 * test sources with -DCL_TEST_SHIM against this header: every Test() runs
 * in its own forked child, in registration order, with the same assertion
 * macros, and the summary line has Criterion's form. The plain builds of
 * `make check` keep Criterion.
 *
 * Environment: CRS_FILTER=TEXT runs only the tests whose "suite::name"
 * contains TEXT; CRS_TIMES=1 prints each test's wall time (what to trim
 * when a sanitizer run grows); CRS_TIMEOUT_SCALE=X multiplies every
 * .timeout (the emulated machines of check-smp and check-kernels, where a
 * guest CPU runs many times slower than the host's).
 *
 * Stopped with SIGTERM alone (the guests' /init sends it when a program
 * runs past its limit), the runner names the test that was
 * running and prints each of its threads' state, wait channel and system
 * call (/proc/PID/task: a lost wakeup shows as workers asleep in futex),
 * kills it and exits 1 with the summary so far: a hang is never silent.
 *
 * Supported: Test(suite, name[, .init = f][, .fini = f][, .timeout = s]
 * [, .exit_code = n][, .signal = s][, .disabled = 1]), cr_assert*,
 * cr_expect*, cr_skip_test, cr_log_*. Not supported: TestSuite(),
 * parameterized and theory tests, criterion/new/assert.h.
 */
#ifndef CL_CRSHIM_H
#define CL_CRSHIM_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct crs_test {
	const char *suite;
	const char *name;
	void (*fn)(void);
	void (*init)(void);
	void (*fini)(void);
	double timeout;
	int exit_code;
	int signal;
	int disabled;
	const char *description;
	struct crs_test *next;
};

/* Registered tests, in registration order (a singly linked list with a tail). */
static struct crs_test *crs_head, **crs_tail = &crs_head;
static int crs_expect_failed;

static inline void crs_register(struct crs_test *t)
{
	t->next = NULL;
	*crs_tail = t;
	crs_tail = &t->next;
}

static inline void crs_report(const char *kind, const char *file, int line, const char *expr,
			      const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[----] %s:%d: %s: %s", file, line, kind, expr);
	if (fmt && *fmt) {
		fputs(": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	fflush(stderr);
}

#define CRS_CHECK(fatal, cond, expr, ...) \
	do { \
		if (!(cond)) { \
			crs_report((fatal) ? "Assertion failed" : "Expectation failed", __FILE__, \
				   __LINE__, expr, "" __VA_ARGS__); \
			if (fatal) \
				_exit(1); \
			crs_expect_failed = 1; \
		} \
	} while (0)

#define Test(S, N, ...) \
	static void crs_fn_##S##_##N(void); \
	static struct crs_test crs_t_##S##_##N = { \
		.suite = #S, .name = #N, .fn = crs_fn_##S##_##N, __VA_ARGS__ \
	}; \
	__attribute__((constructor)) static void crs_reg_##S##_##N(void) \
	{ \
		crs_register(&crs_t_##S##_##N); \
	} \
	static void crs_fn_##S##_##N(void)

#define cr_assert(cond, ...) CRS_CHECK(1, (cond), #cond, ##__VA_ARGS__)
#define cr_expect(cond, ...) CRS_CHECK(0, (cond), #cond, ##__VA_ARGS__)
#define cr_assert_not(cond, ...) CRS_CHECK(1, !(cond), "!(" #cond ")", ##__VA_ARGS__)
#define cr_expect_not(cond, ...) CRS_CHECK(0, !(cond), "!(" #cond ")", ##__VA_ARGS__)
#define cr_assert_fail(...) CRS_CHECK(1, 0, "fail", ##__VA_ARGS__)
#define cr_expect_fail(...) CRS_CHECK(0, 0, "fail", ##__VA_ARGS__)

#define CRS_CMP(fatal, a, op, b, ...) CRS_CHECK(fatal, (a)op(b), #a " " #op " " #b, ##__VA_ARGS__)
#define cr_assert_eq(a, b, ...) CRS_CMP(1, a, ==, b, ##__VA_ARGS__)
#define cr_assert_neq(a, b, ...) CRS_CMP(1, a, !=, b, ##__VA_ARGS__)
#define cr_assert_lt(a, b, ...) CRS_CMP(1, a, <, b, ##__VA_ARGS__)
#define cr_assert_leq(a, b, ...) CRS_CMP(1, a, <=, b, ##__VA_ARGS__)
#define cr_assert_gt(a, b, ...) CRS_CMP(1, a, >, b, ##__VA_ARGS__)
#define cr_assert_geq(a, b, ...) CRS_CMP(1, a, >=, b, ##__VA_ARGS__)
#define cr_expect_eq(a, b, ...) CRS_CMP(0, a, ==, b, ##__VA_ARGS__)
#define cr_expect_neq(a, b, ...) CRS_CMP(0, a, !=, b, ##__VA_ARGS__)
#define cr_expect_lt(a, b, ...) CRS_CMP(0, a, <, b, ##__VA_ARGS__)
#define cr_expect_leq(a, b, ...) CRS_CMP(0, a, <=, b, ##__VA_ARGS__)
#define cr_expect_gt(a, b, ...) CRS_CMP(0, a, >, b, ##__VA_ARGS__)
#define cr_expect_geq(a, b, ...) CRS_CMP(0, a, >=, b, ##__VA_ARGS__)
#define cr_assert_null(p, ...) CRS_CHECK(1, (p) == NULL, #p " == NULL", ##__VA_ARGS__)
#define cr_assert_not_null(p, ...) CRS_CHECK(1, (p) != NULL, #p " != NULL", ##__VA_ARGS__)
#define cr_expect_null(p, ...) CRS_CHECK(0, (p) == NULL, #p " == NULL", ##__VA_ARGS__)
#define cr_expect_not_null(p, ...) CRS_CHECK(0, (p) != NULL, #p " != NULL", ##__VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) CRS_CHECK(1, strcmp((a), (b)) == 0, #a " eq " #b, ##__VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) CRS_CHECK(1, strcmp((a), (b)) != 0, #a " neq " #b, ##__VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) CRS_CHECK(0, strcmp((a), (b)) == 0, #a " eq " #b, ##__VA_ARGS__)
#define cr_assert_str_empty(a, ...) CRS_CHECK(1, (a)[0] == '\0', #a " is empty", ##__VA_ARGS__)
#define cr_assert_str_not_empty(a, ...) CRS_CHECK(1, (a)[0] != '\0', #a " not empty", ##__VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) \
	CRS_CHECK(1, ((a) - (b) <= (eps)) && ((b) - (a) <= (eps)), #a " ~= " #b, ##__VA_ARGS__)
#define cr_assert_arr_eq(a, b, size, ...) \
	CRS_CHECK(1, memcmp((a), (b), (size)) == 0, #a " arr_eq " #b, ##__VA_ARGS__)

#define cr_skip_test(...) \
	do { \
		fprintf(stderr, "[SKIP] " __VA_ARGS__); \
		fputc('\n', stderr); \
		_exit(77); \
	} while (0)
#define cr_log_info(...) (fprintf(stderr, "[----] " __VA_ARGS__), fputc('\n', stderr))
#define cr_log_warn(...) cr_log_info(__VA_ARGS__)
#define cr_log_error(...) cr_log_info(__VA_ARGS__)

/* CRS_TIMEOUT_SCALE (default 1): a factor for every test's .timeout. */
static double crs_timeout_scale(void)
{
	const char *e = getenv("CRS_TIMEOUT_SCALE");
	double v = e ? atof(e) : 1.0;

	return v >= 1.0 ? v : 1.0;
}

static volatile sig_atomic_t crs_stopped;

static void crs_on_term(int sig)
{
	(void)sig;
	crs_stopped = 1;
}

/* Copy one line of /proc/@pid/task/@tid/@what into @buf (empty if none). */
static void crs_proc_line(long pid, const char *tid, const char *what, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%ld/task/%s/%s", pid, tid, what);
	f = fopen(path, "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/* Each thread of the stuck test @pid: name, state, wait channel and the
 * system call it is in (number and first arguments). */
static void crs_dump_threads(long pid)
{
	char path[64], stat[512], wchan[128], sys[256];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	dir = opendir(path);
	if (!dir) {
		fprintf(stderr, "[----] %s: %s\n", path, strerror(errno));
		return;
	}
	while ((d = readdir(dir))) {
		const char *comm, *state;
		char *close_paren;

		if (d->d_name[0] == '.')
			continue;
		crs_proc_line(pid, d->d_name, "stat", stat, sizeof(stat));
		crs_proc_line(pid, d->d_name, "wchan", wchan, sizeof(wchan));
		crs_proc_line(pid, d->d_name, "syscall", sys, sizeof(sys));
		comm = strchr(stat, '(');
		close_paren = strrchr(stat, ')');
		state = close_paren && close_paren[1] ? close_paren + 2 : "?";
		if (comm && close_paren)
			*close_paren = 0;
		fprintf(stderr, "[----]   thread %s %s): state %.1s, wchan %s, syscall %s\n",
			d->d_name, comm ? comm : "(?", state, wchan[0] ? wchan : "-",
			sys[0] ? sys : "-");
	}
	closedir(dir);
}

static double crs_secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	int tested = 0, passing = 0, failing = 0, crashing = 0, skipped = 0;
	const char *filter = getenv("CRS_FILTER"), *times = getenv("CRS_TIMES");
	struct sigaction sa;

	(void)argc;
	(void)argv;
	setvbuf(stdout, NULL, _IONBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = crs_on_term;
	sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: waitpid() returns EINTR */
	for (struct crs_test *t = crs_head; t; t = t->next) {
		char full[256];
		struct timespec t0, t1;
		int status;
		pid_t pid;

		if (t->disabled)
			continue;
		snprintf(full, sizeof(full), "%s::%s", t->suite, t->name);
		if (filter && *filter && !strstr(full, filter))
			continue;
		tested++;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		pid = fork();
		if (pid < 0) {
			perror("crshim: fork");
			return 2;
		}
		if (pid == 0) {
			signal(SIGTERM, SIG_DFL);
			if (t->timeout > 0)
				alarm((unsigned)(t->timeout * crs_timeout_scale()) + 1);
			if (t->init)
				t->init();
			t->fn();
			if (t->fini)
				t->fini();
			fflush(NULL);
			_exit(crs_expect_failed ? 1 : 0);
		}
		/* (a SIGTERM that came before the wait is seen here too) */
		while (crs_stopped || waitpid(pid, &status, 0) < 0) {
			if (!crs_stopped) {
				if (errno == EINTR)
					continue;
				perror("crshim: waitpid");
				return 2;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			fprintf(stderr, "[FAIL] %s: still running after %.1f s when the runner was stopped:\n",
				full, crs_secs(&t0, &t1));
			crs_dump_threads((long)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d (crshim, %d skipped; stopped)\n",
			       tested, passing, failing + 1, crashing, skipped);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (times && *times && strcmp(times, "0"))
			fprintf(stderr, "[TIME] %s: %.2f s\n", full, crs_secs(&t0, &t1));
		if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
			skipped++;
			tested--;
			continue;
		}
		if (t->signal) {
			if (WIFSIGNALED(status) && WTERMSIG(status) == t->signal) {
				passing++;
			} else {
				fprintf(stderr, "[FAIL] %s::%s: expected signal %d\n", t->suite, t->name,
					t->signal);
				failing++;
			}
		} else if (WIFSIGNALED(status)) {
			fprintf(stderr, "[FAIL] %s::%s: CRASH (signal %d)\n", t->suite, t->name,
				WTERMSIG(status));
			crashing++;
		} else if (WEXITSTATUS(status) == t->exit_code) {
			passing++;
		} else {
			fprintf(stderr, "[FAIL] %s::%s (exit %d)\n", t->suite, t->name,
				WEXITSTATUS(status));
			failing++;
		}
	}
	printf("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d (crshim, %d skipped)\n",
	       tested, passing, failing, crashing, skipped);
	return failing || crashing;
}

#endif /* CL_CRSHIM_H */
