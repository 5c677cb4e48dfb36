/* expect: struct cl_rq: members .?nr_running.? and .?curr.? are not on one cache line */
/* cflags: -DCL_RQ_LAYOUT_SCATTERED */
/* T1 "before": the pick fields are spread over several lines. */
#include <cachelocal/sched/rq.h>

CL_ASSERT_SAME_LINE(struct cl_rq, nr_running, curr);
