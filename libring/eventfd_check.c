/*
 * eventfd_check.c: see eventfd_check.h.
 *
 * An eventfd has no file type of its own for fstat() (it is an anonymous
 * inode); the kernel names it "anon_inode:[eventfd]" in /proc/self/fd.
 * O_NONBLOCK is a flag of the open file, so the peer's copy shares it: an
 * eventfd used as the spec intends does not mind.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "eventfd_check.h"

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
