/* expect: cachelocal: struct s: member lock is not in group s_hot */
/* A member asserted into a group it is not in. */
#include <cachelocal/cacheline.h>
struct s {
	CL_GROUP_BEGIN_ALIGNED(s_hot);
	unsigned nr_running;
	CL_GROUP_END_ALIGNED(s_hot);
	int lock;
};
CL_ASSERT_GROUP_MEMBER(struct s, s_hot, nr_running);
CL_ASSERT_GROUP_MEMBER(struct s, s_hot, lock);
