/*
 * cfg_read.c: a configuration file's text, whole, in memory (cfg.h).  It
 * may hold keys, so no copy is left behind: read(2), no stdio buffer, and
 * every buffer outgrown is wiped before it is freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfg.h"

/* cfg_grow() for text (it may hold a key): no copy left in freed memory */
int
cfg_grow_text(char **buf, size_t *cap, size_t need)
{
	size_t ncap = *cap;
	char *p = NULL;

	if (need <= *cap || cfg_grow(&p, &ncap, need, 1) == -1)
		return need <= *cap ? 0 : -1;
	if (*buf != NULL) {
		memcpy(p, *buf, *cap);
		explicit_bzero(*buf, *cap);
		free(*buf);
	}
	*buf = p;
	*cap = ncap;
	return 0;
}

/*
 * fd itself, not a path to it: /dev/stdin cannot be opened on a socket.
 * One block, its copies wiped (cfg_grow_text): a key's text is left in
 * buf alone, which the caller wipes if it must.
 */
char *
cfg_read_fd(int fd, const char *name, size_t *len, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t cap = 0;
	struct stat sb;
	ssize_t n;

	*len = 0;
	if (fd == -1)
		goto fail;
	/* a regular file's size at once; a pipe's by doubling */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode))
		cap = (size_t)sb.st_size + 2;
	if ((buf = malloc(cap ? cap : 1)) == NULL)
		goto fail;
	do {
		if (cap - *len < 2 &&
		    cfg_grow_text(&buf, &cap, *len + 65536) == -1) {
			errno = ENOMEM;
			goto fail;
		}
		if ((n = read(fd, buf + *len, cap - *len - 1)) == -1)
			goto fail;
		*len += (size_t)n;
	} while (n > 0);
	buf[*len] = '\0';
	return buf;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
	if (buf != NULL)
		explicit_bzero(buf, cap);
	free(buf);
	return NULL;
}

char *
cfg_read(const char *path, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = cfg_read_fd(fd, path, len, err, errlen);

	if (fd != -1)
		close(fd);
	return buf;
}

int
cfg_load(const char *path, cfg_parse_fn *parse, void *obj, char *err,
    size_t errlen)
{
	size_t len;
	char *buf;
	int rc;

	if ((buf = cfg_read(path, &len, err, errlen)) == NULL)
		return -1;
	rc = parse(obj, buf, len, path, err, errlen);
	explicit_bzero(buf, len);	/* it may hold keys (snb-esp's) */
	free(buf);
	return rc;
}
