/* SPDX-License-Identifier: MIT */
/*
 * tests/robustness/rb.h - the harness of tests/robustness/bad_inputs.c.
 *
 * Each case runs in a fork()ed child, so a crash is one failed row, not the
 * end of the run. The child evaluates the call, compares it with the
 * documented result, and sends "expected<TAB>observed" back through a pipe;
 * the parent writes one machine-readable row per case (to the file named
 * by CL_RB_ROWS; on stdout only the failed ones, or all with CL_RB_VERBOSE):
 *
 *	ROW<TAB>function<TAB>bad input<TAB>documented<TAB>observed<TAB>verdict
 *
 * verdict is "pass", "FAIL" (mismatch, crash or hang), "undefined" (a misuse
 * the documentation leaves undefined and CL_DEBUG asserts: not run in a
 * plain build) or "asserted" (that misuse, run in a CL_DEBUG build: the
 * child must die of SIGABRT). scripts/robustness_report.py turns the rows
 * into docs/robustness.md and checks that every public function has one.
 * Exit status: 0 if every row passed (or is "undefined"), 1 otherwise.
 */
#ifndef CL_RB_H
#define CL_RB_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef CL_DEBUG
#define RB_DEBUG 1
#else
#define RB_DEBUG 0
#endif

static int rb_nfail, rb_nrows;
static int rb_wfd = -1;          /* child: write end of the result pipe */
static char rb_exp[512], rb_obs[512];
static int rb_bad;               /* child: a check did not hold */

static void rb_append(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rb_append(char *buf, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n && n + 3 < 512) {
		buf[n++] = ';';
		buf[n++] = ' ';
		buf[n] = 0;
	}
	va_start(ap, fmt);
	vsnprintf(buf + n, 512 - n, fmt, ap);
	va_end(ap);
}

static const char *rb_errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";

	return n ? n : "E?";
}

static FILE *rb_rows; /* CL_RB_ROWS=path: every row goes there too */

static void rb_row(const char *fn, const char *input, const char *exp, const char *obs, const char *verdict)
{
	int fail = strcmp(verdict, "FAIL") == 0;

	/* stdout: failures only, or every row with CL_RB_VERBOSE=1 */
	if (fail || getenv("CL_RB_VERBOSE"))
		printf("ROW\t%s\t%s\t%s\t%s\t%s\n", fn, input, exp, obs, verdict);
	if (rb_rows)
		fprintf(rb_rows, "ROW\t%s\t%s\t%s\t%s\t%s\n", fn, input, exp, obs, verdict);
	fflush(NULL);
	rb_nrows++;
	if (fail)
		rb_nfail++;
}

/* Open the rows file (CL_RB_ROWS) and write the run's header line. */
static void rb_start(const char *what)
{
	const char *path = getenv("CL_RB_ROWS");

	if (path && *path) {
		rb_rows = fopen(path, "w");
		if (!rb_rows) {
			perror(path);
			exit(2);
		}
		fprintf(rb_rows, "# %s\n", what);
	}
	printf("# %s\n", what);
}

/*
 * Start case (fn, input). dbg: the input is a misuse that CL_DEBUG asserts
 * (undefined otherwise). Returns 1 in the child (run the body), 0 in the
 * parent (the row is printed).
 */
static int rb_begin(const char *fn, const char *input, int dbg)
{
	int p[2];
	pid_t pid;

	if (dbg && !RB_DEBUG) {
		rb_row(fn, input, "undefined; CL_DEBUG asserts", "not run (plain build)", "undefined");
		return 0;
	}
	fflush(stdout);
	fflush(stderr);
	if (pipe(p) != 0) {
		perror("pipe");
		exit(2);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		close(p[0]);
		rb_wfd = p[1];
		rb_exp[0] = rb_obs[0] = 0;
		rb_bad = 0;
		if (dbg) /* the assert message is expected: keep the log readable */
			(void)!freopen("/dev/null", "w", stderr);
		alarm(20); /* a hang is a failure too */
		return 1;
	}
	close(p[1]);
	char buf[1100] = "";
	size_t got = 0;
	ssize_t r;
	while (got + 1 < sizeof(buf) && (r = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = 0;
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	char *tab = strchr(buf, '\t');
	const char *exp = buf, *obs = "";
	if (tab) {
		*tab = 0;
		obs = tab + 1;
	}
	char what[600];
	if (dbg) {
		int ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
		snprintf(what, sizeof(what), "%s",
			 ok ? "assertion failed (SIGABRT)"
			    : WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "returned: no assertion");
		rb_row(fn, input, "CL_DEBUG: assertion (SIGABRT)", what, ok ? "asserted" : "FAIL");
	} else if (WIFSIGNALED(st)) {
		snprintf(what, sizeof(what), "crash: %s%s", WTERMSIG(st) == SIGALRM ? "hang, " : "",
			 strsignal(WTERMSIG(st)));
		rb_row(fn, input, exp[0] ? exp : "(see test)", what, "FAIL");
	} else {
		rb_row(fn, input, exp, obs, WEXITSTATUS(st) == 0 ? "pass" : "FAIL");
	}
	return 0;
}

/* Child: report and leave. */
static void rb_end(void)
{
	char out[1100];
	int n;

	if (!rb_exp[0]) { /* a case that checks nothing is a broken case */
		rb_append(rb_exp, "a check");
		rb_bad = 1;
	}
	n = snprintf(out, sizeof(out), "%s\t%s", rb_exp, rb_obs);

	if (n > 0)
		(void)!write(rb_wfd, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
	close(rb_wfd);
	_exit(rb_bad);
}

/*
 * CASE(fn, input) { body }: the body runs in a child and must check with the
 * RB_* macros below (each adds its expectation and what happened). A body
 * that checks nothing fails.
 */
#define RB_CASE_(fn, input, dbg) \
	for (int rb_once_ = rb_begin(fn, input, dbg); rb_once_; rb_once_ = (rb_end(), 0))
#define CASE(fn, input) RB_CASE_(fn, input, 0)
/* A misuse CL_DEBUG asserts (undefined in a plain build: not run there). */
#define CASE_DEBUG_ASSERT(fn, input) RB_CASE_(fn, input, 1)

/* errno expectation: an E* value, RB_ERRNO_ANY (not specified) or 0 (untouched). */
#define RB_ERRNO_ANY (-1)

static void rb_note_errno(int want, int got)
{
	if (want == RB_ERRNO_ANY)
		return;
	if (want)
		rb_append(rb_exp, "errno %s", rb_errname(want));
	else
		rb_append(rb_exp, "errno untouched");
	if (got != want)
		rb_bad = 1;
	if (got)
		rb_append(rb_obs, "errno %s", rb_errname(got));
	else
		rb_append(rb_obs, "errno untouched");
}

/* An integer result: want, with errno werr. */
#define RB_INT(expr, want, werr)                                                   \
	do {                                                                       \
		errno = 0;                                                         \
		long long rb_r_ = (long long)(expr);                               \
		int rb_e_ = errno;                                                 \
		rb_append(rb_exp, "%lld", (long long)(want));                      \
		rb_append(rb_obs, "%lld", rb_r_);                                  \
		if (rb_r_ != (long long)(want))                                    \
			rb_bad = 1;                                                \
		rb_note_errno(werr, rb_e_);                                        \
	} while (0)

/* A pointer result that must be NULL, with errno werr. */
#define RB_NULL(expr, werr)                                                        \
	do {                                                                       \
		errno = 0;                                                         \
		const void *rb_p_ = (const void *)(expr);                          \
		int rb_e_ = errno;                                                 \
		rb_append(rb_exp, "NULL");                                         \
		rb_append(rb_obs, "%s", rb_p_ ? "non-NULL" : "NULL");              \
		if (rb_p_)                                                         \
			rb_bad = 1;                                                \
		rb_note_errno(werr, rb_e_);                                        \
	} while (0)

/* A pointer result that must not be NULL. */
#define RB_NONNULL(expr)                                                           \
	do {                                                                       \
		const void *rb_p_ = (const void *)(expr);                          \
		rb_append(rb_exp, "non-NULL");                                     \
		rb_append(rb_obs, "%s", rb_p_ ? "non-NULL" : "NULL");              \
		if (!rb_p_)                                                        \
			rb_bad = 1;                                                \
	} while (0)

/* A string result. */
#define RB_STR(expr, want)                                                         \
	do {                                                                       \
		const char *rb_s_ = (expr);                                        \
		rb_append(rb_exp, "\"%s\"", want);                                 \
		rb_append(rb_obs, "\"%s\"", rb_s_ ? rb_s_ : "(null)");             \
		if (!rb_s_ || strcmp(rb_s_, want) != 0)                            \
			rb_bad = 1;                                                \
	} while (0)

/* A void call: returns (no crash), errno werr. */
#define RB_VOID(stmt, werr)                                                        \
	do {                                                                       \
		errno = 0;                                                         \
		stmt;                                                              \
		int rb_e_ = errno;                                                 \
		rb_append(rb_exp, "returns, no effect");                           \
		rb_append(rb_obs, "returned");                                     \
		rb_note_errno(werr, rb_e_);                                        \
	} while (0)

/* A follow-up condition (state left consistent), described by text. */
#define RB_THEN(cond, text)                                                        \
	do {                                                                       \
		int rb_c_ = !!(cond);                                              \
		rb_append(rb_exp, "%s", text);                                     \
		rb_append(rb_obs, "%s%s", rb_c_ ? "" : "NOT ", text);              \
		if (!rb_c_)                                                        \
			rb_bad = 1;                                                \
	} while (0)

/* The call on a debug build must abort; run it (the parent checks SIGABRT). */
#define RB_ABORTS(stmt)                                                            \
	do {                                                                       \
		stmt;                                                              \
		rb_append(rb_obs, "returned");                                     \
		rb_bad = 1;                                                        \
	} while (0)

#endif /* CL_RB_H */
