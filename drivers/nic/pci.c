/*
 * pci.c: claiming a PCI function through sysfs for a user-space driver,
 * its BARs, DMA memory, and putting the device back when we are gone.
 *
 * Restoring after any exit, SIGKILL included: pci_open() forks a watcher,
 * a small child that blocks reading a pipe whose only write end the driver
 * holds.  When the driver process ends, however it ends, the kernel closes
 * that end, the read returns 0 and the watcher clears bus mastering in the
 * command register, then exits.  The watcher also keeps the driver's
 * hugepages mapped (fork shares MAP_SHARED memory) until it has done so:
 * the device cannot DMA into memory that the kernel already gave to someone
 * else.  It leaves our process group (setsid) and ignores the usual
 * signals, so a Ctrl-C or a launcher stopping the graph does not take it
 * first.  This needs nothing from snb-run and also covers snb-nic run alone.
 *
 * One driver at a time: pci_open() takes an exclusive flock() on the
 * device's sysfs config file.  The watcher shares that open file, so the
 * lock is free only once both are gone, the device stopped: a second
 * snb-nic on the same device is refused, and one restarted after a crash
 * waits (briefly) until the old watcher has cleared bus mastering, which
 * would otherwise stop the new driver's DMA.
 */
#define _GNU_SOURCE		/* pipe2 */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nic.h"
#include "pci.h"

#define SYSFS		"/sys/bus/pci/devices"
#define IOMMU_GROUPS	"/sys/kernel/iommu_groups"
#define HUGEPAGE	(2UL << 20)
/* 2 MiB pages by name: MAP_HUGETLB alone takes the default size, 1 GiB on
 * some hosts, and HUGEPAGE is what we munmap. */
#define MAP_HUGE_2MIB	(21 << MAP_HUGE_SHIFT)

#define PCI_COMMAND	0x04
#define CMD_IO		0x0001
#define CMD_MEMORY	0x0002
#define CMD_MASTER	0x0004
#define CMD_SERR	0x0100
#define CMD_INTX_OFF	0x0400	/* we poll: the device must not raise INTx */
#define LOCK_WAIT_MS	2000	/* for a predecessor's watcher to finish */

/*
 * "0000:00:04.0" or "00:04.0" into the canonical long form; 0 or -1.
 * Strict: a PCI address becomes part of sysfs paths.
 */
static int
parse_addr(const char *s, char out[16])
{
	static const char *shape = "hhhh:hh:hh.h";
	char buf[16];
	size_t i, n = strlen(s);

	if (n == 7) {
		snprintf(buf, sizeof(buf), "0000:%s", s);
		s = buf;
		n = 12;
	}
	if (n != 12)
		return -1;
	for (i = 0; i < n; i++) {
		if (shape[i] == 'h' ? !isxdigit((unsigned char)s[i]) :
		    s[i] != shape[i])
			return -1;
	}
	if (s[11] > '7')	/* function 0..7 */
		return -1;
	for (i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[n] = '\0';
	return 0;
}

/* A sysfs file (path from fmt) holding one hex number; 0 or an errno. */
static int
read_hex(unsigned long *v, const char *fmt, ...)
{
	char path[PATH_MAX], buf[32];
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return EIO;
	buf[n] = '\0';
	*v = strtoul(buf, NULL, 16);
	return 0;
}

int
pci_probe(struct pci_dev *d, const char *addr, char *errbuf, size_t len)
{
	char path[PATH_MAX];
	unsigned long v, dv;
	struct stat st;
	int e;

	memset(d, 0, sizeof(*d));
	d->config_fd = -1;
	d->watch_fd = -1;
	if (parse_addr(addr, d->addr) == -1) {
		snprintf(errbuf, len, "bad PCI address '%s' (want "
		    "DDDD:BB:DD.F or BB:DD.F, hex)", addr);
		return EINVAL;
	}
	snprintf(path, sizeof(path), SYSFS "/%s", d->addr);
	if (stat(path, &st) == -1) {
		snprintf(errbuf, len, "no PCI device %s (%s: %s)", d->addr,
		    path, strerror(errno));
		return ENODEV;
	}
	if ((e = read_hex(&v, SYSFS "/%s/vendor", d->addr)) != 0 ||
	    (e = read_hex(&dv, SYSFS "/%s/device", d->addr)) != 0)
		return nic_fail(errbuf, len, e, "PCI %s: vendor/device",
		    d->addr);
	d->vendor = (uint16_t)v;
	d->device = (uint16_t)dv;
	return 0;
}

/*
 * A device whose kernel interface is up is in use (it may carry this
 * host's own traffic): refuse it rather than cut the host off.  The
 * interface is DEV/net/IF, or DEV/virtioN/net/IF for virtio; its "flags"
 * file holds the IFF_ flags in hex, IFF_UP being bit 0.
 */
static int
in_use(struct pci_dev *d, char *errbuf, size_t len)
{
	static const char *pats[] = { "%s/%s/net/*/flags",
	    "%s/%s/virtio*/net/*/flags" };
	char pat[PATH_MAX], *ifname, *slash;
	unsigned long flags;
	glob_t g;
	size_t i, k;
	int busy = 0;

	for (k = 0; k < 2 && !busy; k++) {
		snprintf(pat, sizeof(pat), pats[k], SYSFS, d->addr);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (i = 0; i < g.gl_pathc && !busy; i++) {
			if (read_hex(&flags, "%s", g.gl_pathv[i]) != 0 ||
			    !(flags & 1))
				continue;
			busy = 1;
			*strrchr(g.gl_pathv[i], '/') = '\0';
			slash = strrchr(g.gl_pathv[i], '/');
			ifname = slash ? slash + 1 : g.gl_pathv[i];
			snprintf(errbuf, len, "PCI %s is interface %s, which is "
			    "up: set it down first if it may be taken from "
			    "the kernel", d->addr, ifname);
		}
		globfree(&g);
	}
	return busy ? EBUSY : 0;
}

/* True when directory path exists and holds anything but . and .. */
static int
dir_has_entries(const char *path)
{
	glob_t g;
	char pat[PATH_MAX];
	int r;

	snprintf(pat, sizeof(pat), "%s/*", path);
	r = glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return r;
}

/*
 * Our drivers give the device physical addresses (/proc/self/pagemap).
 * Behind an IOMMU that translates, those are not the addresses the device
 * sees and its DMA would fault, silently.  So: a device in an IOMMU group
 * is refused unless the group is an identity map (iommu=pt); with no group
 * of its own but IOMMU groups on the host, it is refused too, as we cannot
 * tell.  Such a device wants VFIO, which snb does not drive yet.
 */
static int
iommu_blocks(struct pci_dev *d, char *errbuf, size_t len)
{
	char path[PATH_MAX], type[32] = "", *nl;
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SYSFS "/%s/iommu_group", d->addr);
	if (stat(path, &st) == 0) {
		snprintf(path, sizeof(path), SYSFS "/%s/iommu_group/type",
		    d->addr);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
			if ((n = read(fd, type, sizeof(type) - 1)) > 0)
				type[n] = '\0';
			close(fd);
		}
		if ((nl = strchr(type, '\n')) != NULL)
			*nl = '\0';
		if (strcmp(type, "identity") == 0)
			return 0;
		snprintf(errbuf, len, "PCI %s is behind an active IOMMU (its "
		    "group's type: %s), so it cannot reach memory by physical "
		    "address: snb's PCI drivers need the IOMMU off or in "
		    "passthrough (iommu=pt), or a VFIO driver (vfio-pci, as "
		    "DPDK uses), which snb does not have yet", d->addr,
		    type[0] ? type : "unknown");
		return EPERM;
	}
	if (!dir_has_entries(IOMMU_GROUPS))
		return 0;
	snprintf(errbuf, len, "PCI %s: an IOMMU is active (%s is not empty), "
	    "so the device may not reach memory by physical address: snb's "
	    "PCI drivers need the IOMMU off, or a VFIO driver (vfio-pci, as "
	    "DPDK uses), which snb does not have yet", d->addr, IOMMU_GROUPS);
	return EPERM;
}

/* Unbind the kernel driver, if one is bound; 0 or an errno. */
static int
unbind(struct pci_dev *d, char *errbuf, size_t len)
{
	char path[PATH_MAX];
	int fd, e = 0;

	snprintf(path, sizeof(path), SYSFS "/%s/driver/unbind", d->addr);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : nic_fail(errbuf, len, errno,
		    "PCI %s: %s", d->addr, path);
	if (write(fd, d->addr, strlen(d->addr)) == -1)
		e = nic_fail(errbuf, len, errno, "PCI %s: unbinding the "
		    "kernel driver", d->addr);
	close(fd);
	return e;
}

/* A short transfer is an error too (EIO): a field was not all read. */
static int
config_io(ssize_t n, size_t len)
{
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		errno = EIO;
	return -1;
}

int
pci_config_read(struct pci_dev *d, uint32_t off, void *buf, size_t len)
{
	return config_io(pread(d->config_fd, buf, len, off), len);
}

int
pci_config_write(struct pci_dev *d, uint32_t off, const void *buf,
    size_t len)
{
	return config_io(pwrite(d->config_fd, buf, len, off), len);
}

void
pci_pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int
command_set(int fd, uint16_t set, uint16_t clear)
{
	uint16_t cmd;

	if (pread(fd, &cmd, 2, PCI_COMMAND) != 2)
		return -1;
	cmd = (uint16_t)((cmd | set) & ~clear);
	return pwrite(fd, &cmd, 2, PCI_COMMAND) == 2 ? 0 : -1;
}

int
pci_bus_master(struct pci_dev *d, int on)
{
	return command_set(d->config_fd, on ? CMD_MASTER : 0,
	    on ? 0 : CMD_MASTER);
}

/*
 * The watcher (see the top of this file).  Runs in the child: closes all
 * but the config fd and the pipe, waits for EOF, clears bus mastering.
 */
static void __attribute__((noreturn))
watch(int cfg, int rfd)
{
	char c;
	int fd;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	setsid();
	for (fd = 3; fd < 1024; fd++)
		if (fd != cfg && fd != rfd)
			close(fd);
	while (read(rfd, &c, 1) == -1 && errno == EINTR)
		;
	command_set(cfg, 0, CMD_MASTER);
	_exit(0);
}

int
pci_open(struct pci_dev *d, const char *addr, char *errbuf, size_t len)
{
	char path[PATH_MAX];
	int e, i, p[2];
	sigset_t all, old;

	if ((e = pci_probe(d, addr, errbuf, len)) != 0)
		return e;
	if ((e = in_use(d, errbuf, len)) != 0 ||
	    (e = iommu_blocks(d, errbuf, len)) != 0)
		return e;
	snprintf(path, sizeof(path), SYSFS "/%s/config", d->addr);
	if ((d->config_fd = open(path, O_RDWR | O_CLOEXEC)) == -1)
		return nic_fail(errbuf, len, errno, "PCI %s: %s", d->addr,
		    path);
	for (i = 0; flock(d->config_fd, LOCK_EX | LOCK_NB) == -1; i++) {
		if (errno != EWOULDBLOCK || i == LOCK_WAIT_MS / 10) {
			e = errno == EWOULDBLOCK ? EBUSY : errno;
			snprintf(errbuf, len, "PCI %s is in use by another "
			    "snb-nic (a lock on %s)", d->addr, path);
			goto fail;
		}
		usleep(10000);
	}
	if ((e = unbind(d, errbuf, len)) != 0)
		goto fail;
	/* The watcher first: from the moment the device may master, someone
	 * must be there to stop it. */
	if (pipe2(p, O_CLOEXEC) == -1) {
		e = nic_fail(errbuf, len, errno, "pipe");
		goto fail;
	}
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	d->watcher = fork();
	if (d->watcher == 0) {
		close(p[1]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		watch(d->config_fd, p[0]);
	}
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (d->watcher == -1) {
		close(p[1]);
		e = nic_fail(errbuf, len, e, "fork");
		goto fail;
	}
	d->watch_fd = p[1];
	if (command_set(d->config_fd, CMD_IO | CMD_MEMORY | CMD_MASTER |
	    CMD_SERR | CMD_INTX_OFF, 0) == -1) {
		e = nic_fail(errbuf, len, errno, "PCI %s: command register",
		    d->addr);
		pci_close(d);
		return e;
	}
	return 0;
fail:
	close(d->config_fd);
	d->config_fd = -1;
	return e;
}

void
pci_close(struct pci_dev *d)
{
	if (d->config_fd != -1) {
		pci_bus_master(d, 0);
		close(d->config_fd);
		d->config_fd = -1;
	}
	if (d->watch_fd != -1) {
		close(d->watch_fd);	/* the watcher clears it again, exits */
		d->watch_fd = -1;
		while (waitpid(d->watcher, NULL, 0) == -1 && errno == EINTR)
			;
	}
}

void *
pci_map_bar(struct pci_dev *d, int n, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	void *p;
	int fd, e;

	snprintf(path, sizeof(path), SYSFS "/%s/resource%d", d->addr, n);
	if ((fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || st.st_size == 0) {
		e = st.st_size == 0 ? ENXIO : errno;
		close(fd);
		errno = e;
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0);
	e = errno;
	close(fd);
	if (p == MAP_FAILED) {
		errno = e;
		return NULL;
	}
	*len = (size_t)st.st_size;
	return p;
}

/*
 * A hugepage: MAP_SHARED so the watcher keeps it after we die, locked and
 * populated so its physical address is fixed before we read it.
 */
int
dma_alloc(size_t len, struct dma_mem *m, char *errbuf, size_t errlen)
{
	uint64_t entry;
	void *p;
	int fd, e;

	memset(m, 0, sizeof(*m));
	if (len > HUGEPAGE)
		return nic_fail(errbuf, errlen, EINVAL, "DMA memory: %zu "
		    "bytes", len);
	p = mmap(NULL, HUGEPAGE, PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MIB | MAP_LOCKED |
	    MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return nic_fail(errbuf, errlen, errno, "DMA memory: a 2 MiB "
		    "hugepage (/proc/sys/vm/nr_hugepages)");
	if ((fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) == -1) {
		e = errno;
		goto fail;
	}
	if (pread(fd, &entry, 8, (off_t)((uintptr_t)p / 4096) * 8) != 8) {
		e = errno ? errno : EIO;
		close(fd);
		goto fail;
	}
	close(fd);
	/* Bit 63: present; bits 0-54: the frame number, 0 without
	 * CAP_SYS_ADMIN. */
	if (!(entry >> 63) || (entry & ((1ULL << 55) - 1)) == 0) {
		e = EPERM;
		goto fail;
	}
	m->virt = p;
	m->phys = (entry & ((1ULL << 55) - 1)) * 4096;
	m->len = HUGEPAGE;
	memset(p, 0, HUGEPAGE);
	return 0;
fail:
	munmap(p, HUGEPAGE);
	return nic_fail(errbuf, errlen, e, "DMA memory: physical address "
	    "from /proc/self/pagemap");
}

void
dma_free(struct dma_mem *m)
{
	if (m->virt != NULL)
		munmap(m->virt, m->len);
	m->virt = NULL;
}
