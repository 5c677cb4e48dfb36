/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/version.h - library version.
 *
 * The version of the headers a program was compiled against. There is no
 * library binary: the numbers describe this copy of the headers.
 */
#ifndef CACHELOCAL_VERSION_H
#define CACHELOCAL_VERSION_H

#define CL_VERSION_MAJOR 0
#define CL_VERSION_MINOR 1
#define CL_VERSION_PATCH 0

#define CL__STR2(x) #x
#define CL__STR(x) CL__STR2(x)
/* "MAJOR.MINOR.PATCH" as a string literal. */
#define CL_VERSION_STRING \
	CL__STR(CL_VERSION_MAJOR) "." CL__STR(CL_VERSION_MINOR) "." CL__STR(CL_VERSION_PATCH)

/* One integer for comparisons: CL_VERSION >= CL_VERSION_NUM(0, 1, 0). */
#define CL_VERSION_NUM(maj, min, pat) ((maj) * 10000 + (min) * 100 + (pat))
#define CL_VERSION CL_VERSION_NUM(CL_VERSION_MAJOR, CL_VERSION_MINOR, CL_VERSION_PATCH)

/* CL_VERSION_NUM packs minor and patch in two decimal digits each. */
#ifdef __cplusplus
static_assert(CL_VERSION_MINOR < 100 && CL_VERSION_PATCH < 100,
	      "cachelocal: CL_VERSION_NUM needs minor and patch below 100");
#else
_Static_assert(CL_VERSION_MINOR < 100 && CL_VERSION_PATCH < 100,
	       "cachelocal: CL_VERSION_NUM needs minor and patch below 100");
#endif

#endif /* CACHELOCAL_VERSION_H */
