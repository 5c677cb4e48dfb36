/* expect: do not include <cachelocal/arch/x86_64.h> directly; include <cachelocal/rseq.h> */
/* The arch headers are private to rseq.h: direct inclusion is an #error. */
#include <cachelocal/arch/x86_64.h>
int main(void)
{
	return 0;
}
