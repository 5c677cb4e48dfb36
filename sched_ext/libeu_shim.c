/* SPDX-License-Identifier: MIT */
/*
 * sched_ext/libeu_shim.c - the four search-tree functions Debian 13's static
 * libelf.a (elfutils 0.192) calls but ships in no static library (they live
 * in elfutils' internal libeu): a binary search tree per ELF handle, built
 * without thread safety (the tree is the root pointer alone). Only linked
 * into the static scx_cachelocal.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdlib.h>

struct eu_search_tree {
	void *root;
};

typedef int (*eu_cmp)(const void *, const void *);

void eu_search_tree_init(struct eu_search_tree *t);
void eu_search_tree_fini(struct eu_search_tree *t, void (*free_node)(void *));
void *eu_tsearch(const void *key, struct eu_search_tree *t, eu_cmp cmp);
void *eu_tdelete(const void *key, struct eu_search_tree *t, eu_cmp cmp);

static void no_free(void *p)
{
	(void)p;
}

void eu_search_tree_init(struct eu_search_tree *t)
{
	t->root = NULL;
}

void eu_search_tree_fini(struct eu_search_tree *t, void (*free_node)(void *))
{
	tdestroy(t->root, free_node ? free_node : no_free);
	t->root = NULL;
}

void *eu_tsearch(const void *key, struct eu_search_tree *t, eu_cmp cmp)
{
	return tsearch(key, &t->root, cmp);
}

void *eu_tdelete(const void *key, struct eu_search_tree *t, eu_cmp cmp)
{
	return tdelete(key, &t->root, cmp);
}
