/* expect: struct cl_sched_entity: members .?avg.? and .?cfs_rq.? share a cache line */
/* cflags: -DCL_SE_AVG_INLINE */
/*
 * T2 "before" layout: avg inline next to the read-mostly hierarchy pointers.
 * fair.h asserts the same in the default build; here it must fail.
 */
#include <cachelocal/sched/fair.h>

CL_ASSERT_APART(struct cl_sched_entity, avg, cfs_rq);
