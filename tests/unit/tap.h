/*
 * tap.h: the smallest TAP producer.  ok() prints "ok N - what" or
 * "not ok N - what"; tap_done() prints the plan and returns the exit status.
 * tests/run counts these lines.
 */
#ifndef SNB_TAP_H
#define SNB_TAP_H
#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline __attribute__((format(printf, 2, 3))) int
ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

static inline int
tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
#endif
