/* expect: do not include <cachelocal/arch/generic.h> directly */
/* Still an #error after rseq.h: rseq.h does not leave the door open. */
#include <cachelocal/rseq.h>
#include <cachelocal/arch/generic.h>
int main(void)
{
	return cl_cpu_id() < 0;
}
