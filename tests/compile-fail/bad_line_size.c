/* expect: #error "cachelocal: CL_CACHELINE_SIZE must be a power of two >= 16" */
/* cflags: -DCL_CACHELINE_SIZE=48 */
/* A bad CL_CACHELINE_SIZE override. */
#include <cachelocal/cacheline.h>
