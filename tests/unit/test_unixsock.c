/*
 * test_unixsock: unix_sock_listen (libring/unixsock.c) takes over a socket
 * file only when nobody listens there.
 *
 *  1. A file whose socket was closed (a dead listener's) is replaced.
 *  2. A live listener of the same type is refused, its file kept.
 *  3. A live listener of another type (connect: EPROTOTYPE, not
 *     ECONNREFUSED) is refused, its file kept and still answering.
 *  4. A live listener whose backlog is full is refused at once.
 *  5. A file its owner removes between our look and our unlink (unlink:
 *     ENOENT) is not an error: we bind the free path.
 *
 * Each listen runs in a child, since a refusal exits; the child's status
 * and its message are checked.  Files live in a private directory under
 * /dev/shm.
 */
#define _GNU_SOURCE	/* syscall() */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/string.h>

#include "tap.h"
#include "unixsock.h"

static char dir[64], path[128], errfile[128];
static int race;	/* unlink(): remove the file first, as its owner would */

/*
 * Ours is the unlink() unixsock.c calls (the executable's symbol comes
 * first): with race set, the owner's removal lands just before it.
 */
int
unlink(const char *p)
{
	if (race)
		syscall(SYS_unlink, p);
	return (int)syscall(SYS_unlink, p);
}

/* A socket of type bound at path, listening if listening. */
static int
bound(int type, int listening)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	if ((fd = socket(AF_UNIX, type, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    (listening && listen(fd, 1) == -1)) {
		perror(path);
		exit(1);
	}
	return fd;
}

/* unix_sock_listen(type) in a child: its exit status; stderr to errfile. */
static int
listen_child(int type)
{
	struct unix_sock u;
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (freopen(errfile, "w", stderr) == NULL)
			_exit(99);
		alarm(20);	/* a hang fails the test, not the run */
		unix_sock_addr(&u, path, 0);
		unix_sock_listen(&u, type, 1);
		_exit(0);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int
said(const char *what)
{
	char buf[512] = "";
	FILE *f = fopen(errfile, "r");
	size_t n;

	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (strstr(buf, what) == NULL) {
		printf("# said: %s", buf);
		return 0;
	}
	return 1;
}

static ino_t
inode(void)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Someone still answers at path on a socket of type (without waiting). */
static int
answers(int type)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
	if ((fd = socket(AF_UNIX, type | SOCK_NONBLOCK, 0)) == -1)
		return 0;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return r;
}

int
main(void)
{
	ino_t ino;
	int fd;

	snprintf(dir, sizeof(dir), "/dev/shm/test_unixsock.%d", (int)getpid());
	if (mkdir(dir, 0700) == -1) {
		perror(dir);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/sock", dir);
	snprintf(errfile, sizeof(errfile), "%s/err", dir);

	/* 1 */
	close(bound(SOCK_SEQPACKET, 1));
	ino = inode();
	ok(listen_child(SOCK_SEQPACKET) == 0 && inode() != ino,
	    "a dead listener's socket file is replaced");
	syscall(SYS_unlink, path);

	/* 2 */
	fd = bound(SOCK_SEQPACKET, 1);
	ino = inode();
	ok(listen_child(SOCK_SEQPACKET) == 1 &&
	    said("another process is listening there") && inode() == ino,
	    "a live listener of the same type is refused, its file kept");
	close(fd);
	syscall(SYS_unlink, path);

	/* 3 */
	fd = bound(SOCK_STREAM, 1);
	ino = inode();
	ok(listen_child(SOCK_SEQPACKET) == 1 && said(path) &&
	    inode() == ino && answers(SOCK_STREAM),
	    "a live SOCK_STREAM listener is not taken by a SOCK_SEQPACKET "
	    "one: refused, naming the path");
	ok(listen_child(SOCK_STREAM | SOCK_NONBLOCK) == 1 &&
	    said("another process is listening there") && inode() == ino,
	    "nor by another SOCK_STREAM one");
	close(fd);
	syscall(SYS_unlink, path);

	/* 4: backlog 0 holds one connection; the next would wait */
	fd = bound(SOCK_SEQPACKET, 0);
	ino = inode();
	if (listen(fd, 0) == -1 || !answers(SOCK_SEQPACKET) ||
	    answers(SOCK_SEQPACKET))
		printf("# backlog 0: not one connection and then EAGAIN\n");
	ok(listen_child(SOCK_SEQPACKET) == 1 &&
	    said("another process is listening there") && inode() == ino,
	    "a live listener whose backlog is full is refused at once");
	close(fd);
	syscall(SYS_unlink, path);

	/* 5 */
	close(bound(SOCK_STREAM, 1));
	race = 1;
	ok(listen_child(SOCK_STREAM) == 0 && inode() != 0,
	    "a socket file removed by its owner just before our unlink: "
	    "the path is bound");
	race = 0;
	syscall(SYS_unlink, path);

	syscall(SYS_unlink, errfile);
	rmdir(dir);
	return tap_done();
}
