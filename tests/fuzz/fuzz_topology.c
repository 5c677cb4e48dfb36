/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz_topology.c - cl_topology_load() on random sysfs trees.
 *
 * The input is a list of records {path selector, content}; each writes one
 * file of a fake tree (as in tests/data/) under a private temporary
 * directory, then the tree is loaded. Content is either raw fuzzer bytes
 * or one of the well-formed values sysfs holds, so both malformed files and
 * odd but valid trees are reached. Loading must succeed (only ENOMEM may
 * fail) and give a consistent result:
 *  - nr_possible >= 1; present within possible, online within present; the
 *    counters match the per-CPU flags;
 *  - for possible CPUs, core/l2/llc ids are dense: every id in
 *    0..nr_X-1 is used and none is out of range; node >= 0;
 *  - for other ids, core/l2/llc are -1; nr_nodes >= 1.
 */
#include "fuzz.h"

#include <errno.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cachelocal/topology.h>

enum { NR_CPUS_SEL = 8, NR_IDX = 4, NR_NODES_SEL = 4 };

static char root[64];

static const char *const values[] = {
	"0\n", "1\n", "2\n", "3\n", "0-3\n", "0-7\n", "0,4\n", "1-2,5\n", "4-7\n", "0-1\n",
	"Data\n", "Instruction\n", "Unified\n", "7\n", "", "\n", "0-300\n", "300\n",
	"0-3,300\n", "-1\n", "5-2\n", "2,\n",
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Empty the tree (no fork: a shell per input would halve the speed). */
static void rm_tree(const char *dir)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/devices", dir);
	if (access(path, F_OK) == 0 && nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
		abort();
}

static void write_file(const char *rel, const void *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return; /* e.g. a file where a directory was: the tree stays odd */
	if (len)
		(void)fwrite(buf, 1, len, f);
	fclose(f);
}

static void rm_root(void)
{
	rm_tree(root);
	(void)rmdir(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";

	(void)argc;
	(void)argv;
	snprintf(root, sizeof(root), "%s/cl-fuzz-topo-XXXXXX", base);
	if (!mkdtemp(root))
		abort();
	atexit(rm_root);
	return 0;
}

static void record(struct fz *f)
{
	char rel[256];
	unsigned sel = fz_u8(f), cpu = fz_below(f, NR_CPUS_SEL), idx = fz_below(f, NR_IDX);
	unsigned node = fz_below(f, NR_NODES_SEL);
	uint8_t how = fz_u8(f);
	const void *buf;
	size_t len;

	if (cpu == NR_CPUS_SEL - 1)
		cpu = 300; /* a sparse id */
	switch (sel % 16) {
	case 0: snprintf(rel, sizeof(rel), "devices/system/cpu/possible"); break;
	case 1: snprintf(rel, sizeof(rel), "devices/system/cpu/present"); break;
	case 2: snprintf(rel, sizeof(rel), "devices/system/cpu/online"); break;
	case 3: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/topology/core_cpus_list", cpu); break;
	case 4: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/topology/thread_siblings_list", cpu); break;
	case 5: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/topology/core_id", cpu); break;
	case 6: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/topology/physical_package_id", cpu); break;
	case 7: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/cache/index%u/level", cpu, idx); break;
	case 8: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/cache/index%u/type", cpu, idx); break;
	case 9: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/cache/index%u/shared_cpu_list", cpu, idx); break;
	case 10: snprintf(rel, sizeof(rel), "devices/system/node/online"); break;
	case 11: snprintf(rel, sizeof(rel), "devices/system/node/possible"); break;
	case 12: snprintf(rel, sizeof(rel), "devices/system/node/node%u/cpulist", node); break;
	case 13: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/node%u", cpu, node); break;
	case 14: snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%u/online", cpu); break;
	default: snprintf(rel, sizeof(rel), "devices/system/node/node%u", node); break;
	}
	if (how & 0x80) {
		buf = values[(how & 0x7f) % (sizeof(values) / sizeof(values[0]))];
		len = strlen((const char *)buf);
	} else {
		len = how % 24;
		if (len > f->n)
			len = f->n;
		buf = f->p;
		f->p += len;
		f->n -= len;
	}
	write_file(rel, buf, len);
}

static void check_dense(const struct cl_topology *t, int level, unsigned nr)
{
	unsigned char *used = calloc(nr ? nr : 1, 1);

	if (!used)
		abort();
	for (unsigned c = 0; c < t->nr_cpu_ids; c++) {
		const struct cl_cpu_info *ci = &t->cpu[c];
		int id = level == 0 ? ci->core : level == 1 ? ci->l2 : ci->llc;

		if (!ci->possible) {
			FZ_CHECK(id == -1, "cpu %u not possible but level %d id %d", c, level, id);
			continue;
		}
		FZ_CHECK(id >= 0 && (unsigned)id < nr, "cpu %u level %d id %d of %u", c, level, id, nr);
		used[id] = 1;
	}
	for (unsigned i = 0; i < nr; i++)
		FZ_CHECK(used[i], "level %d id %u unused (not dense)", level, i);
	free(used);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f = { data, size };
	struct cl_topology t;
	unsigned np = 0, npr = 0, non = 0;

	if (size > 2048)
		return 0;
	rm_tree(root);
	write_file("devices/system/cpu/.keep", "", 0);
	while (fz_more(&f))
		record(&f);
	errno = 0;
	if (cl_topology_load(&t, root) != 0) {
		FZ_CHECK(errno == ENOMEM, "load failed with errno %d", errno);
		return 0;
	}
	FZ_CHECK(t.nr_cpu_ids >= 1 && t.nr_cpu_ids <= CL_TOPO_MAX_CPU_IDS, "nr_cpu_ids %u", t.nr_cpu_ids);
	FZ_CHECK(t.cpu != NULL, "no cpu array");
	for (unsigned c = 0; c < t.nr_cpu_ids; c++) {
		const struct cl_cpu_info *ci = &t.cpu[c];

		FZ_CHECK(ci->possible == 0 || ci->possible == 1, "cpu %u possible %d", c, ci->possible);
		FZ_CHECK(!ci->present || ci->possible, "cpu %u present, not possible", c);
		FZ_CHECK(!ci->online || ci->present, "cpu %u online, not present", c);
		np += (unsigned)ci->possible;
		npr += (unsigned)ci->present;
		non += (unsigned)ci->online;
		if (ci->possible)
			FZ_CHECK(ci->node >= 0, "cpu %u node %d", c, ci->node);
	}
	FZ_CHECK(np == t.nr_possible && npr == t.nr_present && non == t.nr_online,
		 "counts %u/%u/%u vs flags %u/%u/%u", t.nr_possible, t.nr_present, t.nr_online, np,
		 npr, non);
	FZ_CHECK(t.nr_possible >= 1, "no possible CPU");
	FZ_CHECK(t.nr_nodes >= 1, "no node");
	check_dense(&t, 0, t.nr_cores);
	check_dense(&t, 1, t.nr_l2s);
	check_dense(&t, 2, t.nr_llcs);
	FZ_CHECK(t.nr_cores <= t.nr_possible && t.nr_llcs <= t.nr_possible, "more groups than CPUs");
	cl_topology_free(&t);
	FZ_CHECK(t.cpu == NULL && t.nr_cpu_ids == 0, "free did not reset");
	return 0;
}
