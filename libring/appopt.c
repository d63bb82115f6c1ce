/*
 * appopt.c: an app's words (app.h): its options by a table, numbers in a
 * range, and the usage error for a word it does not take.
 */
#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "stage.h"

#define APP_OPT_MAX	16
#define LONG_VAL	256	/* long option i's value: LONG_VAL + i */
#define COUNTERS_VAL	(LONG_VAL - 1)	/* the runtime's --counters-out */

long long
app_parse_num(const char *opt, const char *s, long long min, long long max)
{
	long long v;
	char *end;

	errno = 0;
	v = strtoll(s, &end, 10);
	/* "-1" is a number out of range, not "not a number". */
	if (!(*s >= '0' && *s <= '9') && *s != '-')
		end = (char *)s;
	if (end == s || *end != '\0')
		errx(2, "bad %s '%s': not a number", opt, s);
	if (errno || v < min || v > max)
		errx(2, "bad %s '%s': must be %lld..%lld", opt, s, min, max);
	return v;
}

/* What option o given with arg (NULL for a flag) does. */
static void
apply(const struct app_opt *o, char *arg)
{
	char opt[40];
	long long v;

	snprintf(opt, sizeof(opt), "%s%s", o->name[1] ? "--" : "-", o->name);
	if (o->seen != NULL)
		*o->seen = 1;
	if (o->fn != NULL)
		o->fn(opt, arg, o->var);
	else if (o->var != NULL) {
		v = app_parse_num(opt, arg, o->min, o->max);
		if (o->size == sizeof(uint32_t))
			*(uint32_t *)o->var = (uint32_t)v;
		else
			*(uint64_t *)o->var = (uint64_t)v;
	}
}

int
app_options(int argc, char **argv, const struct app_opt *opts, int flags)
{
	struct option lo[APP_OPT_MAX + 2];
	char so[2 * APP_OPT_MAX + 2], *s = so;
	const struct app_opt *o;
	int ch, arg, i, n = 0;

	/* "+": the options end at the first word; without, getopt permutes. */
	*s++ = '+';
	for (i = 0; opts[i].name != NULL; i++) {
		if (i == APP_OPT_MAX)
			errx(1, "more than %d options", APP_OPT_MAX);
		arg = opts[i].var != NULL || opts[i].fn != NULL;
		if (opts[i].name[1] != '\0')
			lo[n++] = (struct option){ opts[i].name,
			    arg ? required_argument : no_argument, NULL,
			    LONG_VAL + i };
		else {
			/* A letter is a short option (tcpdump's -c). */
			*s++ = opts[i].name[0];
			if (arg)
				*s++ = ':';
		}
	}
	if (stage_counters_opt)
		lo[n++] = (struct option){ "counters-out", required_argument,
		    NULL, COUNTERS_VAL };
	lo[n] = (struct option){ NULL, 0, NULL, 0 };
	*s = '\0';
	while ((ch = getopt_long(argc, argv,
	    so + ((flags & APP_OPT_PERMUTE) != 0), lo, NULL)) != -1) {
		if (ch == COUNTERS_VAL) {
			stage_counters_path = optarg;
			continue;
		}
		if (ch >= LONG_VAL) {
			apply(&opts[ch - LONG_VAL], optarg);
			continue;
		}
		for (o = opts; o->name != NULL; o++)
			if (o->name[0] == ch && o->name[1] == '\0')
				break;
		if (o->name == NULL)
			app_usage();	/* getopt said what was wrong */
		apply(o, optarg);
	}
	if (!(flags & APP_OPT_WORDS) && optind < argc) {
		warnx("unexpected argument '%s'", argv[optind]);
		app_usage();
	}
	return optind;
}

void
app_no_words(int argc, char **argv)
{
	app_options(argc, argv, (const struct app_opt[]){ APP_OPT_END }, 0);
}
