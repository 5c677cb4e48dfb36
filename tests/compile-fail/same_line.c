/* expect: cachelocal: struct s: members nr_running and clock are not on one cache line */
/* SAME_LINE on fields split across lines. */
#include <cachelocal/cacheline.h>
struct s {
	CL_GROUP_BEGIN_ALIGNED(s_hot);
	unsigned nr_running;
	CL_GROUP_END_ALIGNED(s_hot);
	unsigned long clock;
};
CL_ASSERT_SAME_LINE(struct s, nr_running, clock);
