/*
 * memguard.c: SIGBUS on a peer's mapping ends the peer, not the stage
 * (the mechanism and its limits are in memguard.h).
 */
#define _GNU_SOURCE		/* F_ADD_SEALS */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memguard.h"

struct guarded {
	uint8_t			*addr;
	size_t			 len;
	volatile sig_atomic_t	*lost;
	volatile sig_atomic_t	 used;	/* written last, cleared first */
};

static struct guarded table[MEMGUARD_MAX];
static struct sigaction before;	/* SIGBUS's handling without us */
static int installed;

/*
 * Die of sig as if we had never been there: the handling before ours
 * comes back, SIG_DFL, or a sanitizer's handler that reports where.
 */
static void
fatal(int sig, const siginfo_t *si)
{
	sigaction(sig, &before, NULL);
	/* A fault: returning runs the access again and it kills.  Sent by
	 * kill(2): raised again, delivered as the handler returns. */
	if (si->si_code <= 0)
		raise(sig);
}

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uint8_t *a = si->si_addr;
	struct guarded *g;
	int i;

	if (si->si_code <= 0) {		/* kill(2), sigqueue(3): no address */
		fatal(sig, si);
		return;
	}
	for (i = 0; i < MEMGUARD_MAX; i++) {
		g = &table[i];
		if (!g->used || a < g->addr || a >= g->addr + g->len)
			continue;
		if (mmap(g->addr, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		    MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			break;
		*g->lost = 1;
		return;
	}
	fatal(sig, si);		/* not a peer's memory: a bug of ours */
}

int
memguard_init(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus,
	    .sa_flags = SA_SIGINFO };

	if (installed)
		return 0;	/* before must stay what was there first */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &before) == -1)
		return -1;
	installed = 1;
	return 0;
}

int
memguard_add(void *addr, size_t len, volatile sig_atomic_t *lost)
{
	uint8_t *a = addr;
	int i, slot = -1;

	for (i = 0; i < MEMGUARD_MAX; i++) {
		struct guarded *g = &table[i];

		/* The kernel gave us this range: whatever was registered
		 * over it is gone (an entry the caller forgot to remove). */
		if (g->used && a < g->addr + g->len && g->addr < a + len) {
			g->used = 0;
			atomic_signal_fence(memory_order_seq_cst);
		}
		if (!g->used && slot < 0)
			slot = i;
	}
	if (slot < 0)
		return -1;
	table[slot].addr = a;
	table[slot].len = len;
	table[slot].lost = lost;
	atomic_signal_fence(memory_order_seq_cst);
	table[slot].used = 1;
	return 0;
}

static void *
no_map(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return NULL;
}

void *
memguard_map(int fd, size_t len, int must_seal, volatile sig_atomic_t *lost,
    char *why, size_t whylen)
{
	struct stat st;
	int seals, sealed;
	void *a;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return no_map(why, whylen, "not a memory file");
	seals = fcntl(fd, F_GET_SEALS);
	sealed = seals != -1 && ((seals & F_SEAL_SHRINK) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
	if (!sealed && must_seal)
		return no_map(why, whylen, "cannot be sealed against "
		    "shrinking");
	if (fstat(fd, &st) == -1)
		return no_map(why, whylen, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size < len)
		return no_map(why, whylen, "file of %lld bytes, %zu wanted",
		    (long long)st.st_size, len);
	a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED)
		return no_map(why, whylen, "mmap: %s", strerror(errno));
	if (memguard_add(a, len, lost) == -1) {
		munmap(a, len);
		return no_map(why, whylen, "more than %d guarded mappings",
		    MEMGUARD_MAX);
	}
	return a;
}

void
memguard_unmap(void *addr, size_t len)
{
	int i;

	for (i = 0; i < MEMGUARD_MAX; i++)
		if (table[i].used && table[i].addr == addr) {
			table[i].used = 0;
			atomic_signal_fence(memory_order_seq_cst);
		}
	munmap(addr, len);
}
