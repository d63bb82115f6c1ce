/*
 * memguard.h: a peer's memory that vanishes under us ends that peer's
 * connection, not the stage.
 *
 * snb-vhost and snb-memif map files a peer made and keeps (guest memory,
 * memif regions) MAP_SHARED and read and write them on the data path.  The
 * peer can take pages out from under such a mapping: shrink the file
 * (where it is not sealed against that), or punch a hole in it
 * (fallocate(PUNCH_HOLE), which F_SEAL_SHRINK does not stop).  In a
 * shared-memory file the hole reads back as zeros; in a hugetlbfs file the
 * next touch needs a free huge page, and with none left, as with a shrunk
 * file, the touch is SIGBUS, which kills the process.
 *
 * Which mappings are guarded: exactly those registered with memguard_add(),
 * between the mmap() and the memguard_unmap() that ends them.  Nothing
 * else: a SIGBUS anywhere else (a bug of ours, a file of our own) stays
 * fatal, as is a SIGBUS sent with kill(2), and is handled as it was
 * before memguard_init() (SIG_DFL, or under ASan its report).
 *
 * What happens on a fault: the handler looks the faulting address up
 * (si_addr; no sigsetjmp around accesses, so nothing is added to the
 * per-packet path), replaces the whole mapping at the same address with
 * anonymous zero pages (mmap MAP_FIXED), sets the flag the caller gave
 * memguard_add(), then returns: the faulting instruction runs again on
 * the zero pages and succeeds.  The stage reads and writes private zeros
 * from then on, which it checks as it checks anything a peer wrote; its
 * breath sees the flag, ends that connection (counted: memory-faults) and
 * goes on serving its other peers.  Other mappings are untouched.
 *
 * Async-signal safety: the handler only reads the table, writes a
 * sig_atomic_t flag, and calls mmap(), which POSIX does not list as
 * async-signal-safe but which on Linux is a plain system call taking no
 * lock of the process's.  The table is changed by the stage's
 * main thread only, the one that touches peer memory (the fault is
 * delivered to the thread that faulted), and an entry is published with
 * its address and length written before it is marked used (a signal
 * fence orders them for a handler interrupting that same thread).
 */
#ifndef SNB_MEMGUARD_H
#define SNB_MEMGUARD_H

#include <signal.h>
#include <stddef.h>

#define MEMGUARD_MAX	32	/* guarded mappings at once, per process */

/* Install the SIGBUS handler (once; again is harmless).  0, or -1. */
int	memguard_init(void);
/*
 * Guard [addr, addr + len), a mapping of a file a peer controls: a fault
 * in it sets *lost to 1.  0, or -1 when the table is full (the caller
 * must then refuse the mapping: it could not be made safe).
 */
int	memguard_add(void *addr, size_t len, volatile sig_atomic_t *lost);
/*
 * Map the first len bytes of a peer's memory file fd, shared and
 * read-write, and guard them against *lost.  The file must be a regular
 * file; it is sealed against shrinking (the seal added when missing)
 * before it is checked to hold len bytes, so that it cannot shrink
 * between the check and the mapping; growing takes no page from us and
 * stays allowed.  A file that cannot be sealed (a memfd made without
 * MFD_ALLOW_SEALING, a hugetlbfs file) is refused with must_seal, and
 * mapped without: the guard alone keeps us alive then.  Returns the
 * mapping, or NULL with the reason in why.
 */
void	*memguard_map(int fd, size_t len, int must_seal,
	    volatile sig_atomic_t *lost, char *why, size_t whylen);
/* Stop guarding the mapping at addr, then munmap() it. */
void	memguard_unmap(void *addr, size_t len);

#endif
