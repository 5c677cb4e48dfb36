/* expect: cachelocal: struct s: group s_hot is larger than CL_CACHELINE_SIZE bytes */
/* A group larger than its bound. */
#include <cachelocal/cacheline.h>
struct s {
	CL_GROUP_BEGIN_ALIGNED(s_hot);
	unsigned long a[8];
	unsigned long b;
	CL_GROUP_END_ALIGNED(s_hot);
};
CL_ASSERT_GROUP_SIZE(struct s, s_hot, CL_CACHELINE_SIZE);
