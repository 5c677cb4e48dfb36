/* expect: cachelocal: struct s: members a and b share a false-sharing unit */
/* Two writers on adjacent lines: APART holds, APART_GUARD must not. */
#include <cachelocal/cacheline.h>
struct s {
	CL_GROUP_BEGIN_GUARDED(s_a);
	unsigned long a;
	CL_GROUP_END_ALIGNED(s_a);
	unsigned long b;
};
CL_ASSERT_APART(struct s, a, b);
CL_ASSERT_APART_GUARD(struct s, a, b);
