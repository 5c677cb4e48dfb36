/* SPDX-License-Identifier: MIT */
/*
 * examples/example_args.h - the command line every example shares: --help
 * prints the usage and exits 0; an option outside @opts or more than
 * @max_args other arguments print the usage on stderr and exit 2.
 */
#ifndef CACHELOCAL_EXAMPLE_ARGS_H
#define CACHELOCAL_EXAMPLE_ARGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* @opts: NULL-terminated accepted options, or NULL; one that ends in '='
 * takes a value in the same argument ("--workers=4"). Returns the index of
 * the first plain argument or 0. */
static inline int example_args(int argc, char **argv, const char *usage, const char *const *opts,
			       int max_args)
{
	int first = 0, nargs = 0;

	for (int i = 1; i < argc; i++) {
		int ok = 0;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("%s", usage);
			exit(0);
		}
		if (argv[i][0] == '-') {
			for (int k = 0; opts && opts[k]; k++) {
				size_t len = strlen(opts[k]);

				if (len && opts[k][len - 1] == '=')
					ok |= !strncmp(argv[i], opts[k], len) && argv[i][len];
				else
					ok |= !strcmp(argv[i], opts[k]);
			}
		} else if (++nargs <= max_args) {
			ok = 1;
			if (!first)
				first = i;
		}
		if (!ok) {
			fprintf(stderr, "%s: unknown %s '%s'\n%s", argv[0],
				argv[i][0] == '-' ? "option" : "argument", argv[i], usage);
			exit(2);
		}
	}
	return first;
}

#endif /* CACHELOCAL_EXAMPLE_ARGS_H */
