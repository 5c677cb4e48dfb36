/* expect: #error "cachelocal: CL_FALSE_SHARING_SIZE must be >= CL_CACHELINE_SIZE" */
/* cflags: -DCL_CACHELINE_SIZE=128 -DCL_FALSE_SHARING_SIZE=64 */
/* A guard smaller than the line. */
#include <cachelocal/cacheline.h>
