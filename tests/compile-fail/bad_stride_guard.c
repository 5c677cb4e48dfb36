/* expect: cachelocal: CL_PERCPU_STRIDE must be a multiple of CL_FALSE_SHARING_SIZE */
/* cflags: -DCL_FALSE_SHARING_SIZE=8192 -DCL_PERCPU_STRIDE=4096 */
/* A guard unit larger than the per-CPU stride: two CPUs' slices would share it. */
#include <cachelocal/config.h>
