/* A program outside the project, built only against the installed headers. */
#include <cachelocal/cachelocal.h>
#include <stdio.h>
#include <string.h>

struct consumer_stats {
	CL_GROUP_BEGIN_ALIGNED(consumer_read);
	unsigned long nr;
	void *head;
	CL_GROUP_END_ALIGNED(consumer_read);
	CL_GROUP_BEGIN_ALIGNED(consumer_lock);
	int lock;
	CL_GROUP_END_ALIGNED(consumer_lock);
};
#ifndef __cplusplus
CL_ASSERT_GROUP_MEMBER(struct consumer_stats, consumer_read, nr);
CL_ASSERT_GROUP_SIZE(struct consumer_stats, consumer_read, CL_CACHELINE_SIZE);
CL_ASSERT_APART(struct consumer_stats, lock, nr);
#endif

int main(void)
{
	char msg[256];

	if (strcmp(CL_VERSION_STRING, "") == 0)
		return 1;
	if (cl_cacheline_check(msg, sizeof(msg)) != 0)
		printf("%s\n", msg);
	printf("consumer: cachelocal %s, line %d, guard %d, struct %zu bytes\n", CL_VERSION_STRING,
	       CL_CACHELINE_SIZE, CL_FALSE_SHARING_SIZE, sizeof(struct consumer_stats));
	return sizeof(struct consumer_stats) == 2 * CL_CACHELINE_SIZE ? 0 : 1;
}
