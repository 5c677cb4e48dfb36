/* expect: struct cl_rq: members .?lock.? and .?nr_running.? share a cache line */
/* cflags: -DCL_RQ_LAYOUT_SCATTERED */
/*
 * T1 "before" layout: the pick group and the lock must be apart. The same assert holds in the
 * default build (rq.h asserts it) and must fail here.
 */
#include <cachelocal/sched/rq.h>

CL_ASSERT_APART(struct cl_rq, lock, nr_running);
