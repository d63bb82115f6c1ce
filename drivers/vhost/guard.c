/*
 * guard.c: guest memory that vanishes under us is a lost frontend, not a
 * dead stage.
 *
 * A frontend keeps its memory files and can shrink one after sending the
 * table; a hugetlbfs file can also lose a page it cannot get back (a
 * punched hole, no free huge page to fill it).  Touching such a page is
 * SIGBUS.  Sealing the file against shrinking (msg.c does where the file
 * allows it, as QEMU's memory-backend-memfd does itself) closes the first
 * door only: hugetlbfs files and memfds made without MFD_ALLOW_SEALING,
 * as DPDK makes them, cannot be sealed, and refusing them would refuse the
 * usual frontends.  So a fault inside a region replaces the whole region
 * with anonymous zero pages and marks the device lost: the faulting access
 * is retried on them and succeeds, whatever it reads is checked like any
 * guest memory, and the breathe loop drops the frontend.  Nothing is added
 * to the per-packet path, which a sigsetjmp around each access would.
 *
 * mmap() is not on POSIX's list of async-signal-safe functions, but on
 * Linux it is a system call that takes no lock of ours; the handler runs
 * only on a fault in the stage's one thread, never while the table is
 * being changed (msg.c touches no guest memory).
 */
#include <sys/mman.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "msg.h"

static struct vu_dev *guarded;

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;
	uint8_t *a = si->si_addr, *m;
	int i;

	(void)uc;
	for (i = 0; guarded && i < guarded->nregions; i++) {
		m = guarded->regions[i].map;
		if (a < m || a >= m + guarded->regions[i].maplen)
			continue;
		if (mmap(m, guarded->regions[i].maplen, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			break;
		guarded->mem_lost = 1;
		return;
	}
	/* Not guest memory: a bug of ours, and fatal as it would be. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
}

int
vu_guard(struct vu_dev *d)
{
	struct sigaction sa;

	guarded = d;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL);
}
