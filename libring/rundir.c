/*
 * rundir.c: where rings live.  hugetlbfs when it is there and has free
 * pages (one TLB entry covers many slots), else /dev/shm.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bsd/string.h>

#include "ring.h"

static int
hugetlbfs_has_free_pages(const char *mnt)
{
	struct statfs sf;
	size_t page;

	if (!snb_is_hugetlbfs(mnt, &page) || statfs(mnt, &sf) == -1)
		return 0;
	/* A hugetlbfs without a size= option reports its pool here. */
	return sf.f_bfree > 0;
}

/* Make dir (one level) if missing; refuse anything others could write. */
static int
secure_dir(const char *dir, char *errbuf, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		snprintf(errbuf, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (lstat(dir, &st) == -1) {
		snprintf(errbuf, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(errbuf, errlen, "%s: not a directory", dir);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & S_IWOTH)) {
		snprintf(errbuf, errlen, "%s: must be owned by uid %u and not "
		    "world-writable", dir, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

const char *
snb_run_dir(char *errbuf, size_t errlen)
{
	static char dir[PATH_MAX];
	const char *env = getenv("SNB_RUN_DIR");

	if (dir[0])
		return dir;
	if (env && *env)
		strlcpy(dir, env, sizeof(dir));
	else if (hugetlbfs_has_free_pages("/dev/hugepages"))
		strlcpy(dir, "/dev/hugepages/snb", sizeof(dir));
	else
		strlcpy(dir, "/dev/shm/snb", sizeof(dir));
	if (secure_dir(dir, errbuf, errlen) == -1) {
		dir[0] = '\0';
		return NULL;
	}
	return dir;
}
