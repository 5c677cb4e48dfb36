/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/sched/runtime/signal.h - signals as a channel: cl_signal_chan().
 *
 * The signals' handler writes the signal's number (one byte) to a pipe the
 * process keeps open for good (a handler may still be running on another
 * thread when a channel stops: it must never write to a reused fd); a task
 * of the runtime reads the pipe with cl_read() and offers each number to
 * the channel registered for it (cl_chan_trysend(): a full channel drops
 * it, as Go's signal.Notify does; size the channel for the bursts you
 * expect). Any thread may take the signal; no mask needs to change. At
 * cl_runtime_shutdown() the task's read is cancelled: it puts the default
 * actions back and closes the channel (receivers get EPIPE).
 *
 * A private piece of sched/runtime/core.h, which includes its pieces in
 * order (not API; include <cachelocal/sched/runtime.h>). Included alone, it
 * includes the whole core first.
 */
#include "core.h"

#ifndef CACHELOCAL_SCHED_RUNTIME_SIGNAL_H
#define CACHELOCAL_SCHED_RUNTIME_SIGNAL_H

/* sigaction() needs the POSIX signal API (preempt.h says so). */
#ifndef CL__RT_NEEDS_SIGNAL_API

#include <fcntl.h>

CL_BEGIN_DECLS

#define CL__RT_NSIG 65

/* The process's pipe (fds + 1: 0 until the first channel) and each
 * signal's channel (NULL: not ours). Process-wide: weak. */
CL_WEAK int cl__rt_sig_pipe[2];
CL_WEAK struct cl_chan *cl__rt_sig_chans[CL__RT_NSIG];
CL_WEAK pthread_mutex_t cl__rt_sig_lock = PTHREAD_MUTEX_INITIALIZER;

CL_INLINE void cl__rt_sig_handler(int sig)
{
	int e = errno, fd = CL_ATOMIC_LOAD(&cl__rt_sig_pipe[1], CL_ACQUIRE) - 1;
	unsigned char b = (unsigned char)sig;

	if (fd >= 0 && write(fd, &b, 1) < 0) {
		/* full: the signal is dropped, as a full channel drops it */
	}
	errno = e;
}

/* @ch's signals: the default action back, no channel for them. */
CL_INLINE void cl__rt_sig_release(struct cl_chan *ch)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	pthread_mutex_lock(&cl__rt_sig_lock);
	for (int s = 1; s < CL__RT_NSIG; s++)
		if (cl__rt_sig_chans[s] == ch) {
			sigaction(s, &dfl, NULL);
			CL_ATOMIC_STORE(&cl__rt_sig_chans[s], (struct cl_chan *)NULL, CL_RELEASE);
		}
	pthread_mutex_unlock(&cl__rt_sig_lock);
}

/* The task: each byte of the pipe to its signal's channel, until the read
 * is cancelled (shutdown); then release @p's signals and close it. */
CL_INLINE void *cl__rt_sig_forward(void *p)
{
	struct cl_chan *ch = (struct cl_chan *)p;
	unsigned char b[64];
	ssize_t n;

	while ((n = cl_read(CL_ATOMIC_LOAD(&cl__rt_sig_pipe[0], CL_ACQUIRE) - 1, b, sizeof(b))) > 0 ||
	       (n < 0 && errno == EINTR))
		for (ssize_t i = 0; i < n; i++) {
			struct cl_chan *to = CL_ATOMIC_LOAD(&cl__rt_sig_chans[b[i] % CL__RT_NSIG], CL_ACQUIRE);
			int sig = b[i];

			if (to)
				(void)cl_chan_trysend(to, &sig);
		}
	cl__rt_sig_release(ch);
	(void)cl_chan_close(ch);
	return NULL;
}

/**
 * cl_signal_chan() - a channel that receives the signals @signals as they
 * come, each as an int (the signal's number).
 * @rt: the runtime whose task forwards them.
 * @signals: the signals (SIGINT, SIGTERM, SIGHUP, SIGUSR1, ...).
 * @n: how many; at most 64.
 * @capacity: the channel's room (a signal that finds it full is dropped).
 *
 * Receive or select on it in a task (cl_chan_recv(), cl_select()); the
 * handler is installed here and replaced by the default action when
 * @rt shuts down, which closes the channel: destroy it with
 * cl_chan_destroy() after cl_runtime_shutdown(). A signal belongs to one
 * channel at a time.
 *
 * Context: any thread.
 * Return: the channel, or NULL with errno EINVAL (NULL @rt or @signals, @n
 * 0 or above 64, @capacity 0, a signal out of range or one that cannot be
 * caught or that the runtime uses: SIGKILL, SIGSTOP, SIGSEGV,
 * CL_RUNTIME_PREEMPT_SIGNAL), EBUSY (a signal already has a channel),
 * ENOMEM, EMFILE, or EPIPE (@rt shut down).
 */
CL_INLINE struct cl_chan *cl_signal_chan(struct cl_runtime *rt, const int *signals, unsigned int n,
					 size_t capacity)
{
	struct cl_spawn_attr sa;
	struct sigaction act;
	struct cl_chan *ch;
	int fds[2], e = 0;

	if (CL__BAD_ARG(rt == NULL || signals == NULL || n == 0 || n > 64 || capacity == 0))
		return NULL;
	for (unsigned int i = 0; i < n; i++)
		if (CL__BAD_ARG(signals[i] <= 0 || signals[i] >= CL__RT_NSIG || signals[i] == SIGKILL ||
				signals[i] == SIGSTOP || signals[i] == SIGSEGV ||
				signals[i] == CL_RUNTIME_PREEMPT_SIGNAL))
			return NULL;
	ch = cl_chan_create(sizeof(int), capacity);
	if (!ch)
		return NULL;
	pthread_mutex_lock(&cl__rt_sig_lock);
	if (!cl__rt_sig_pipe[0]) {
		/* the write end never blocks a handler; the read end parks the task */
		if (pipe(fds) != 0) {
			e = errno;
		} else {
			(void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
			(void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
			(void)fcntl(fds[1], F_SETFL, O_NONBLOCK);
			CL_ATOMIC_STORE(&cl__rt_sig_pipe[0], fds[0] + 1, CL_RELEASE);
			CL_ATOMIC_STORE(&cl__rt_sig_pipe[1], fds[1] + 1, CL_RELEASE);
		}
	}
	for (unsigned int i = 0; i < n && !e; i++)
		if (cl__rt_sig_chans[signals[i]])
			e = EBUSY;
	memset(&act, 0, sizeof(act));
	act.sa_handler = cl__rt_sig_handler;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	for (unsigned int i = 0; i < n && !e; i++) {
		CL_ATOMIC_STORE(&cl__rt_sig_chans[signals[i]], ch, CL_RELEASE);
		sigaction(signals[i], &act, NULL);
	}
	pthread_mutex_unlock(&cl__rt_sig_lock);
	memset(&sa, 0, sizeof(sa));
	sa.detached = 1;
	if (!e && !cl_spawn(rt, &sa, cl__rt_sig_forward, ch)) {
		e = errno;
		cl__rt_sig_release(ch);
	}
	if (e) {
		cl_chan_destroy(ch);
		errno = e;
		return NULL;
	}
	return ch;
}

CL_END_DECLS

#endif /* !CL__RT_NEEDS_SIGNAL_API */

#endif /* CACHELOCAL_SCHED_RUNTIME_SIGNAL_H */
