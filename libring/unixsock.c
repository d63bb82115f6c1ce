/*
 * unixsock.c: a device app's UNIX socket (see unixsock.h).
 */
#include <sys/epoll.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "unixsock.h"

void
unix_sock_addr(struct unix_sock *u, const char *path, int flags)
{
	char dir[sizeof(u->name)];
	const char *name = NULL, *d;
	struct stat st;

	memset(u, 0, sizeof(*u));
	u->fd = -1;
	u->sa.sun_family = AF_UNIX;
	if (*path == '\0' || strlen(path) >= sizeof(u->sa.sun_path))
		errx(2, "bad SOCKET '%s' (1..%zu bytes)", path,
		    sizeof(u->sa.sun_path) - 1);
	memcpy(u->name, path, strlen(path));
	if (flags & UNIX_ABSTRACT) {
		if (path[0] == '@')
			name = path + 1;
		else if (strncmp(path, "abstract:", 9) == 0)
			name = path + 9;
	}
	if ((u->abstract = name != NULL)) {
		if (*name == '\0')
			errx(2, "bad SOCKET '%s': no name", path);
		memcpy(u->sa.sun_path + 1, name, strlen(name));
		u->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		    1 + strlen(name));
		return;
	}
	memcpy(u->sa.sun_path, path, strlen(path));
	u->len = sizeof(u->sa);
	memcpy(dir, u->name, sizeof(dir));
	d = dirname(dir);
	if (stat(d, &st) == -1)
		err(1, "%s: socket directory '%s'", path, d);
	if (!S_ISDIR(st.st_mode))
		errx(1, "%s: socket directory '%s' is not a directory", path,
		    d);
}

void
unix_sock_listen(struct unix_sock *u, int type, int backlog)
{
	struct sockaddr *sa = (struct sockaddr *)&u->sa;
	struct stat st;
	int fd;

	if ((u->fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (bind(u->fd, sa, u->len) == -1) {
		/* An abstract name goes with its last socket: one in use
		 * is another process's.  A file may be a dead one's. */
		if (errno != EADDRINUSE || u->abstract)
			err(1, "%s: bind", u->name);
		if (lstat(u->sa.sun_path, &st) == -1 || !S_ISSOCK(st.st_mode))
			errx(1, "%s: exists and is not a socket", u->name);
		/* Non-blocking: a listener whose backlog is full answers
		 * EAGAIN at once rather than hold us. */
		if ((fd = socket(AF_UNIX, type | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) == -1)
			err(1, "socket");
		if (connect(fd, sa, u->len) == 0 || errno == EAGAIN)
			errx(1, "%s: another process is listening there",
			    u->name);
		/*
		 * Only a refusal says nobody listens: a listener of another
		 * type answers EPROTOTYPE.  A file gone meanwhile (ENOENT)
		 * leaves the path free to bind.
		 */
		if (errno != ECONNREFUSED && errno != ENOENT)
			err(1, "%s: not taken over: a socket that may be in "
			    "use", u->name);
		close(fd);
		if ((unlink(u->sa.sun_path) == -1 && errno != ENOENT) ||
		    bind(u->fd, sa, u->len) == -1)
			err(1, "%s: bind", u->name);
	}
	if (listen(u->fd, backlog) == -1)
		err(1, "%s: listen", u->name);
	if (!u->abstract && stat(u->sa.sun_path, &st) == 0) {
		u->dev = st.st_dev;
		u->ino = st.st_ino;
	}
}

void
unix_sock_close(struct unix_sock *u)
{
	struct stat st;

	if (u->fd == -1)
		return;
	close(u->fd);
	u->fd = -1;
	/* Ours only: a successor may listen there by now. */
	if (u->ino && stat(u->sa.sun_path, &st) == 0 && st.st_dev == u->dev &&
	    st.st_ino == u->ino)
		unlink(u->sa.sun_path);
	u->ino = 0;
}

int
unix_take_fds(struct msghdr *mh, int *fds, int *n, int max)
{
	struct cmsghdr *cm;
	int fd, lost = (mh->msg_flags & MSG_CTRUNC) != 0;
	size_t i;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		    i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			if (*n < max)
				fds[(*n)++] = fd;
			else {
				close(fd);
				lost = 1;
			}
		}
	}
	return lost;
}

/*
 * An eventfd has no file type of its own for fstat() (it is an anonymous
 * inode); the kernel names it "anon_inode:[eventfd]" in /proc/self/fd.
 * O_NONBLOCK is a flag of the open file, so the peer's copy shares it: an
 * eventfd used as the spec intends does not mind.
 */
int
fd_is_eventfd(int fd)
{
	char path[64], link[64] = "";	/* readlink() adds no NUL */
	int fl;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (readlink(path, link, sizeof(link) - 1) == -1 ||
	    strcmp(link, "anon_inode:[eventfd]") != 0)
		return 0;
	return (fl = fcntl(fd, F_GETFL)) != -1 &&
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

void
epoll_set(int ep, int op, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd >= 0 && epoll_ctl(ep, op, fd, &ev) == -1 && op != EPOLL_CTL_DEL)
		err(1, "epoll_ctl");
}

void
closefd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}
