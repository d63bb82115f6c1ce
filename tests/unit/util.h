/*
 * util.h: small helpers unit tests and benches share (included once per
 * program): a deterministic random stream, clocks, and the stress
 * scale the sanitizer pass sets (SNB_TEST_SCALE).
 */
#ifndef SNB_TEST_UTIL_H
#define SNB_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define UNUSED	__attribute__((unused))

/* xorshift64*; a test may set its own seed before the first draw. */
static uint64_t rngstate = 0x9e3779b97f4a7c15ULL;

static UNUSED uint32_t
rnd(void)
{
	rngstate ^= rngstate >> 12;
	rngstate ^= rngstate << 25;
	rngstate ^= rngstate >> 27;
	return (rngstate * 0x2545f4914f6cdd1dULL) >> 32;
}

static UNUSED uint32_t
rndn(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static UNUSED double
clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static UNUSED double
now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time: what a time limit checks on a shared, busy machine */
static UNUSED double
cpu(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static UNUSED int
scale(void)
{
	const char *s = getenv("SNB_TEST_SCALE");
	int n = s ? atoi(s) : 1;

	return n > 0 ? n : 1;
}

#endif
