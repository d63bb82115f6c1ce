/*
 * test_memguard: libring/memguard.c against real faults.  A file is cut to
 * 0 bytes by another process under our guarded mapping: the touch that
 * would have been SIGBUS reads zeros, the owner's flag is set, and another guarded mapping of another file is still
 * that file.  A fault outside the guarded mappings, and a SIGBUS sent with
 * kill(2), end the process as without the guard (killed by SIGBUS, or
 * under a sanitizer its report: its handler was there first).
 * memguard_map seals, checks and maps a peer's file, or says why not.
 */
#define _GNU_SOURCE		/* memfd_create */
#include <sys/mman.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memguard.h"
#include "tap.h"

#define LEN	(16 * 4096)

/* A memfd of LEN bytes, each byte (i * 7 + salt), mapped shared. */
static uint8_t *
filled(int *fd, uint8_t salt)
{
	uint8_t *m;
	size_t i;

	if ((*fd = memfd_create("memguard", 0)) == -1 ||
	    ftruncate(*fd, LEN) == -1)
		abort();
	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (m == MAP_FAILED)
		abort();
	for (i = 0; i < LEN; i++)
		m[i] = (uint8_t)(i * 7 + salt);
	return m;
}

static int
intact(const volatile uint8_t *m, uint8_t salt)
{
	size_t i;

	for (i = 0; i < LEN; i++)
		if (m[i] != (uint8_t)(i * 7 + salt))
			return 0;
	return 1;
}

/* Cut fd to 0 bytes from another process, as a peer would. */
static void
shrink_elsewhere(int fd)
{
	pid_t pid;
	int st;

	if ((pid = fork()) == 0)
		_exit(ftruncate(fd, 0) == 0 ? 0 : 1);
	if (pid == -1 || waitpid(pid, &st, 0) != pid || st != 0)
		abort();
}

/*
 * How a child running f ended (its wait status; stderr, which says why
 * under a sanitizer, to /dev/null): with the guard as without it.
 */
static int
ended(void (*f)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (freopen("/dev/null", "w", stderr) == NULL)
			_exit(99);
		f();
		_exit(0);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid)
		abort();
	return st;
}

/* An unguarded mapping of a file that shrank under it. */
static void
touch_unguarded(void)
{
	volatile uint8_t *m;
	int fd;

	m = filled(&fd, 3);
	shrink_elsewhere(fd);
	(void)m[5 * 4096];
}

static void
sent_sigbus(void)
{
	kill(getpid(), SIGBUS);
}

/* With a and b guarded, MEMGUARD_MAX - 2 more fit and no more. */
static void
table_full(void)
{
	static char page[MEMGUARD_MAX + 1][4096];
	static volatile sig_atomic_t flag;
	int i;

	for (i = 0; i <= MEMGUARD_MAX; i++)
		if (memguard_add(page[i], 4096, &flag) == -1)
			break;
	_exit(i == MEMGUARD_MAX - 2 ? 0 : 1);
}

/* memguard_map: what it refuses, what it seals, what it maps. */
static void
test_map(void)
{
	static volatile sig_atomic_t lost;
	char why[96];
	uint8_t *m;
	int fd, pfd[2];

	ok(pipe(pfd) == 0 && memguard_map(pfd[0], 4096, 0, &lost, why,
	    sizeof(why)) == NULL && strcmp(why, "not a memory file") == 0,
	    "a pipe is not mapped: %s", why);
	close(pfd[0]);
	close(pfd[1]);
	/* Without MFD_ALLOW_SEALING a memfd is born sealed against seals. */
	if ((fd = memfd_create("unsealable", 0)) == -1 ||
	    ftruncate(fd, 4096) == -1)
		abort();
	ok(memguard_map(fd, 4096, 1, &lost, why, sizeof(why)) == NULL &&
	    strstr(why, "cannot be sealed") != NULL,
	    "must_seal refuses a file that cannot be sealed: %s", why);
	m = memguard_map(fd, 4096, 0, &lost, why, sizeof(why));
	ok(m != NULL, "without must_seal it is mapped unsealed");
	if (m)
		memguard_unmap(m, 4096);
	close(fd);
	if ((fd = memfd_create("sealable", MFD_ALLOW_SEALING)) == -1 ||
	    ftruncate(fd, 4096) == -1)
		abort();
	ok(memguard_map(fd, 8192, 1, &lost, why, sizeof(why)) == NULL &&
	    strcmp(why, "file of 4096 bytes, 8192 wanted") == 0,
	    "a file shorter than wanted is refused: %s", why);
	m = memguard_map(fd, 4096, 1, &lost, why, sizeof(why));
	ok(m != NULL && (fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK) &&
	    ftruncate(fd, 0) == -1, "mapped and sealed: the file cannot "
	    "shrink under it");
	if (m) {
		m[4095] = 9;
		memguard_unmap(m, 4096);
	}
	close(fd);
}

int
main(void)
{
	static volatile sig_atomic_t lost_a, lost_b;
	volatile uint8_t *a, *b;
	int fa, fb, st, unguarded_fault, unguarded_sent;
	uint8_t v, back;
	pid_t pid;

	/* Without the guard: killed by SIGBUS, or a sanitizer's report. */
	unguarded_fault = ended(touch_unguarded);
	unguarded_sent = ended(sent_sigbus);
	ok(unguarded_fault != 0 && unguarded_sent != 0, "without the guard, "
	    "a fault and a sent SIGBUS end the process (status %#x, %#x)",
	    unguarded_fault, unguarded_sent);
	ok(memguard_init() == 0 && memguard_init() == 0, "the SIGBUS handler "
	    "is installed (again: harmless)");
	a = filled(&fa, 1);
	b = filled(&fb, 2);
	ok(memguard_add((void *)a, LEN, &lost_a) == 0 &&
	    memguard_add((void *)b, LEN, &lost_b) == 0, "two mappings guarded");
	ok(!lost_a && !lost_b, "no fault yet");

	shrink_elsewhere(fa);
	v = a[5 * 4096 + 3];		/* would be SIGBUS */
	ok(v == 0, "the touch of the lost page read zero (%u)", v);
	ok(lost_a == 1 && lost_b == 0, "the faulting mapping's owner is told, "
	    "the other's is not");
	a[0] = 0x5a;
	ok(a[0] == 0x5a && a[LEN - 1] == 0, "the replaced mapping is "
	    "private zero memory, writable, whole");
	ok(intact(b, 2), "the other mapping still holds its file's bytes");
	b[100] = 0xee;
	ok(pread(fb, &back, 1, 100) == 1 && back == 0xee,
	    "and is still that file (a write shows in it)");
	b[100] = (uint8_t)(100 * 7 + 2);

	memguard_unmap((void *)a, LEN);
	close(fa);
	lost_a = 0;
	a = filled(&fa, 4);
	ok(memguard_add((void *)a, LEN, &lost_a) == 0, "a new mapping guarded");
	shrink_elsewhere(fa);
	v = a[LEN - 1];
	ok(v == 0 && lost_a == 1, "its fault is caught too");
	ok(intact(b, 2) && lost_b == 0, "b untouched by either fault");

	st = ended(touch_unguarded);
	ok(st == unguarded_fault, "a fault outside the guarded mappings ends "
	    "the process as without the guard (status %#x)", st);
	st = ended(sent_sigbus);
	ok(st == unguarded_sent, "SIGBUS sent with kill(2) ends it as without "
	    "the guard (status %#x)", st);
	fflush(stdout);
	if ((pid = fork()) == 0)
		table_full();
	ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0, "a full table refuses one more mapping");

	memguard_unmap((void *)a, LEN);
	memguard_unmap((void *)b, LEN);
	close(fa);
	close(fb);
	test_map();
	return tap_done();
}
