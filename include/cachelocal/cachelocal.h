/* SPDX-License-Identifier: MIT */
/*
 * cachelocal/cachelocal.h - umbrella header: layers L0-L4 (everything but
 * cachelocal/sched/, which needs liburcu).
 */
#ifndef CACHELOCAL_CACHELOCAL_H
#define CACHELOCAL_CACHELOCAL_H

#include "version.h"
#include "config.h"
#include "compiler.h"
#include "cacheline.h"
#include "spinlock.h"
#include "rseq.h"
#include "slice.h"
#include "topology.h"
#include "percpu.h"
#include "cid.h"
#include "percpu_ops.h"
#include "fence.h"
#include "atfork.h"
#include "counter.h"
#include "counter_cid.h"
#include "objcache.h"
#include "brlock.h"

#endif /* CACHELOCAL_CACHELOCAL_H */
