/* expect: cachelocal: struct s: members lock and nr_running share a cache line */
/* APART on two fields of one line (the lock next to the pick fields). */
#include <cachelocal/cacheline.h>
struct s {
	CL_GROUP_BEGIN_ALIGNED(s_hot);
	unsigned nr_running;
	int lock;
	CL_GROUP_END_ALIGNED(s_hot);
};
CL_ASSERT_APART(struct s, lock, nr_running);
