/*
 * cfg_read.c: a configuration file's text, whole, in memory (cfg.h).  It
 * may hold keys, so no copy is left behind: no stdio buffer, and every
 * buffer outgrown is wiped before it is freed.
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

/* One block, its copies wiped (cfg_grow_text, no stdio buffer): a key's
   text is left in buf alone, which the caller wipes if it must.  f is
   closed; name is what an error names. */
static char *
read_all(FILE *f, const char *name, size_t *len, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t cap = 0, n;
	struct stat sb;

	*len = 0;
	if (f == NULL)
		goto fail;
	setvbuf(f, NULL, _IONBF, 0);
	/* a regular file's size at once; a pipe's by doubling */
	if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode))
		cap = (size_t)sb.st_size + 2;
	if ((buf = malloc(cap ? cap : 1)) == NULL)
		goto fail;
	do {
		if (cap - *len < 2 &&
		    cfg_grow_text(&buf, &cap, *len + 65536) == -1) {
			errno = ENOMEM;
			goto fail;
		}
		*len += (n = fread(buf + *len, 1, cap - *len - 1, f));
	} while (n > 0);
	if (ferror(f))
		goto fail;
	fclose(f);
	buf[*len] = '\0';
	return buf;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
	if (f != NULL)
		fclose(f);
	if (buf != NULL)
		explicit_bzero(buf, cap);
	free(buf);
	return NULL;
}

char *
cfg_read(const char *path, size_t *len, char *err, size_t errlen)
{
	return read_all(fopen(path, "re"), path, len, err, errlen);
}

/* fd itself, not a path to it: /dev/stdin cannot be opened on a socket. */
char *
cfg_read_fd(int fd, const char *name, size_t *len, char *err, size_t errlen)
{
	FILE *f = NULL;
	int d;

	if ((d = fcntl(fd, F_DUPFD_CLOEXEC, 0)) != -1 &&
	    (f = fdopen(d, "r")) == NULL)
		close(d);
	return read_all(f, name, len, err, errlen);
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
	free(buf);
	return rc;
}
