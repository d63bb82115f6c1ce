/*
 * audit.c: the lines of snb-esp's audit log (audit.h), off the data
 * path: once a breath that noted events, and at the stop.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>

#include <bsd/stdlib.h>

#include "app.h"
#include "audit.h"

#define AUDIT_INTERVAL_NS	1000000000ULL	/* a line per kind per second */

struct audit_run audit_runs[AUDIT_KINDS];
int audit_pending;

static const char *const kind_name[AUDIT_KINDS] = {
	[AUDIT_NO_SA] = "no-sa",
	[AUDIT_REPLAY] = "replay",
	[AUDIT_TOO_OLD] = "too-old",
	[AUDIT_ICV] = "icv",
	[AUDIT_SEQ_CYCLE] = "seq-exhausted",
	[AUDIT_INNER_REMOTE] = "inner-remote",
};
static char prefix[128];

void
audit_init(const char *label)
{
	snprintf(prefix, sizeof(prefix), "%s: %s: audit: ", getprogname(),
	    label);
}

/*
 * One line: the first event of the run, RFC 4303's fields (SPI, sequence
 * number, source, destination, flow label, date and time), and how many
 * more came after it that no line showed.
 */
static void
line(enum audit_kind k, struct audit_run *a)
{
	const struct audit_ev *e = &a->first;
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], seq[24], t[32];
	char buf[512];
	struct tm tm;
	int n;

	seq[0] = '\0';
	if (e->has_seq)
		snprintf(seq, sizeof(seq), " seq %u", e->seq);
	gmtime_r(&a->when.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(buf, sizeof(buf), "%s%s: spi 0x%08x%s src %s dst %s "
	    "flow 0x%05x time %s.%06ldZ", prefix, kind_name[k], e->spi, seq,
	    inet_ntop(AF_INET6, e->src, src, sizeof(src)),
	    inet_ntop(AF_INET6, e->dst, dst, sizeof(dst)), e->flow, t,
	    a->when.tv_nsec / 1000);
	if (a->n > 1 && n > 0 && (size_t)n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - (size_t)n,
		    "; %llu more since, not logged",
		    (unsigned long long)(a->n - 1));
	/* One write a line (standard error is unbuffered): whole beside
	 * the other stages' words. */
	fprintf(stderr, "%s\n", buf);
	a->n = 0;
}

void
audit_breath(void)
{
	uint64_t now = app_now_ns(), wake = 0;
	int k;

	for (k = 0; k < AUDIT_KINDS; k++) {
		struct audit_run *a = &audit_runs[k];

		if (a->n == 0)
			continue;
		if (a->when.tv_sec == 0)	/* the first's breath: line()'s */
			clock_gettime(CLOCK_REALTIME, &a->when);
		if (now >= a->quiet_until) {
			line((enum audit_kind)k, a);
			a->quiet_until = now + AUDIT_INTERVAL_NS;
			continue;
		}
		/* Due later: a breath then, even if no packet comes. */
		if (wake == 0 || a->quiet_until < wake)
			wake = a->quiet_until;
	}
	audit_pending = wake != 0;
	if (wake != 0)
		app_wake_at(wake);
}

void
audit_flush(void)
{
	int k;

	for (k = 0; k < AUDIT_KINDS; k++)
		if (audit_runs[k].n != 0)
			line((enum audit_kind)k, &audit_runs[k]);
	audit_pending = 0;
	fflush(stderr);
}
