/*
 * pci.c: claiming a PCI function through sysfs for a user-space driver,
 * and its configuration space and BARs.  Putting it back when we are gone
 * (the watcher) and its DMA memory are pci_watch.c.  Which devices are
 * taken is told in snb-nic(1); why:
 *
 * A device bound to vfio-pci, a UIO driver or pci-stub is a virtual
 * machine's or a user-space driver's (DPDK's), and unbinding it would pull
 * it from under them; one bound to a driver we do not know may be
 * anything.  Bus mastering stays off until the driver has reset the
 * device: one left running by a killed driver still holds that driver's
 * buffers, and would resume DMA into them the moment mastering came back.
 *
 * One driver at a time: pci_open() takes an flock() on the device's sysfs
 * config file.  The watcher shares that open file, so the lock is free
 * only once both are gone, the device stopped: one restarted after a crash
 * waits (briefly) until the old watcher has cleared bus mastering, which
 * would otherwise stop the new driver's DMA.
 */
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nic.h"
#include "pci.h"

#define SYSFS		"/sys/bus/pci/devices"
#define IOMMU_GROUPS	"/sys/kernel/iommu_groups"

#define PCI_COMMAND	0x04
#define CMD_IO		0x0001
#define CMD_MEMORY	0x0002
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
	static const char long_form[] = "hhhh:hh:hh.h";
	const char *shape;
	size_t i, n = strlen(s);

	if (n != 7 && n != 12)
		return -1;
	shape = long_form + 12 - n;	/* the short form is its tail */
	for (i = 0; i < n; i++)
		if (shape[i] == 'h' ? !isxdigit((unsigned char)s[i]) :
		    s[i] != shape[i])
			return -1;
	if (s[n - 1] > '7')	/* function 0..7 */
		return -1;
	snprintf(out, 16, "%s%s", n == 7 ? "0000:" : "", s);
	for (i = 0; i < 12; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	return 0;
}

/* A sysfs file (path from fmt) into buf, newline cut; 0 or an errno. */
static int
read_str(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int
pci_probe(struct pci_dev *d, const char *addr, char *errbuf, size_t len)
{
	char v[32], dv[32];
	int e;

	memset(d, 0, sizeof(*d));
	d->config_fd = -1;
	d->watch_fd = -1;
	if (parse_addr(addr, d->addr) == -1) {
		snprintf(errbuf, len, "bad PCI address '%s' (want "
		    "DDDD:BB:DD.F or BB:DD.F, hex)", addr);
		return EINVAL;
	}
	if ((e = read_str(v, sizeof(v), SYSFS "/%s/vendor", d->addr)) ==
	    ENOENT) {
		snprintf(errbuf, len, "no PCI device %s (" SYSFS "/%s: %s)",
		    d->addr, d->addr, strerror(e));
		return ENODEV;
	}
	if (e != 0 || (e = read_str(dv, sizeof(dv), SYSFS "/%s/device",
	    d->addr)) != 0)
		return nic_fail(errbuf, len, e, "PCI %s: vendor/device",
		    d->addr);
	d->vendor = (uint16_t)strtoul(v, NULL, 16);
	d->device = (uint16_t)strtoul(dv, NULL, 16);
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
	char pat[PATH_MAX], flags[32];
	glob_t g;
	size_t i;
	int busy = 0;

	snprintf(pat, sizeof(pat), SYSFS "/%s/{,virtio*/}net/*/flags",
	    d->addr);
	if (glob(pat, GLOB_BRACE, NULL, &g) != 0)
		return 0;
	for (i = 0; i < g.gl_pathc && !busy; i++) {
		if (read_str(flags, sizeof(flags), "%s", g.gl_pathv[i]) != 0 ||
		    !(strtoul(flags, NULL, 16) & 1))
			continue;
		busy = 1;
		*strrchr(g.gl_pathv[i], '/') = '\0';	/* DEV/.../net/IF */
		snprintf(errbuf, len, "PCI %s is interface %s, which is up: "
		    "set it down first if it may be taken from the kernel",
		    d->addr, strrchr(g.gl_pathv[i], '/') + 1);
	}
	globfree(&g);
	return busy ? EBUSY : 0;
}

/*
 * Drivers a device may be bound to: the kernel NIC drivers of the devices
 * our back-ends drive (whose NULL), whose device is handed over if its
 * interface is down (in_use); and those that give it to someone else.
 */
static const struct {
	const char	*driver, *whose;
} drivers[] = {
	{ "e1000", NULL },
	{ "e1000e", NULL },
	{ "virtio-pci", NULL },
	{ "vfio-pci", "VFIO: a virtual machine's or a user-space driver's "
	    "such as DPDK" },
	{ "uio_pci_generic", "UIO: a user-space driver's such as DPDK" },
	{ "igb_uio", "UIO: DPDK's" },
	{ "pci-stub", "pci-stub: kept for a virtual machine" },
	{ NULL, NULL }
};

/* Refuse a device bound to any driver but a kernel NIC driver (above). */
static int
not_ours(struct pci_dev *d, char *errbuf, size_t len)
{
	char path[PATH_MAX], link[PATH_MAX], *drv;
	ssize_t n;
	int i;

	snprintf(path, sizeof(path), SYSFS "/%s/driver", d->addr);
	if ((n = readlink(path, link, sizeof(link) - 1)) == -1)
		return 0;	/* unbound */
	link[n] = '\0';
	drv = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	for (i = 0; drivers[i].driver != NULL; i++)
		if (strcmp(drv, drivers[i].driver) == 0)
			break;
	if (drivers[i].driver != NULL && drivers[i].whose == NULL)
		return 0;
	if (drivers[i].driver != NULL)
		snprintf(errbuf, len, "PCI %s is bound to %s, so it is in use "
		    "(%s); unbind it first (%s/unbind) if it is free", d->addr,
		    drv, drivers[i].whose, path);
	else
		snprintf(errbuf, len, "PCI %s is bound to %s, which is not a "
		    "kernel NIC driver snb-nic takes devices from (e1000, "
		    "e1000e, virtio-pci); unbind it first (%s/unbind) if it "
		    "is free", d->addr, drv, path);
	return EBUSY;
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
	char path[PATH_MAX], type[32] = "";
	struct stat st;
	glob_t g;
	int groups;

	snprintf(path, sizeof(path), SYSFS "/%s/iommu_group", d->addr);
	if (stat(path, &st) == 0) {
		(void)read_str(type, sizeof(type), "%s/type", path);
		if (strcmp(type, "identity") == 0)
			return 0;
		snprintf(errbuf, len, "PCI %s is behind an active IOMMU (its "
		    "group's type: %s), so it cannot reach memory by physical "
		    "address: snb's PCI drivers need the IOMMU off or in "
		    "passthrough (iommu=pt), or a VFIO driver (vfio-pci, as "
		    "DPDK uses), which snb does not have yet", d->addr,
		    type[0] ? type : "unknown");
		return EOPNOTSUPP;
	}
	groups = glob(IOMMU_GROUPS "/*", 0, NULL, &g) == 0;
	globfree(&g);
	if (!groups)
		return 0;
	snprintf(errbuf, len, "PCI %s: an IOMMU is active (%s is not empty), "
	    "so the device may not reach memory by physical address: snb's "
	    "PCI drivers need the IOMMU off, or a VFIO driver (vfio-pci, as "
	    "DPDK uses), which snb does not have yet", d->addr, IOMMU_GROUPS);
	return EOPNOTSUPP;
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

int
pci_config_read(struct pci_dev *d, uint32_t off, void *buf, size_t len)
{
	ssize_t n = pread(d->config_fd, buf, len, off);

	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		errno = EIO;	/* short: a field was not all read */
	return -1;
}

int
pci_command_set(int fd, uint16_t set, uint16_t clear)
{
	uint16_t cmd;

	if (pread(fd, &cmd, 2, PCI_COMMAND) != 2)
		return -1;
	cmd = (uint16_t)((cmd | set) & ~clear);
	return pwrite(fd, &cmd, 2, PCI_COMMAND) == 2 ? 0 : -1;
}

int
pci_bus_master(struct pci_dev *d, int on, char *errbuf, size_t len)
{
	if (pci_command_set(d->config_fd, on ? PCI_CMD_MASTER : 0,
	    on ? 0 : PCI_CMD_MASTER) == -1)
		return nic_fail(errbuf, len, errno, "PCI %s: bus mastering",
		    d->addr);
	return 0;
}

int
pci_last(struct pci_dev *d)
{
	d->last = !d->shared || (flock(d->config_fd, LOCK_UN) == 0 &&
	    flock(d->config_fd, LOCK_EX | LOCK_NB) == 0);
	return d->last;
}

int
pci_open(struct pci_dev *d, const char *addr, int first, char *errbuf,
    size_t len)
{
	char path[PATH_MAX];
	int e, i, mode = first == 0 ? LOCK_SH : LOCK_EX;

	if ((e = pci_probe(d, addr, errbuf, len)) != 0 ||
	    (e = in_use(d, errbuf, len)) != 0 ||
	    (e = not_ours(d, errbuf, len)) != 0 ||
	    (e = iommu_blocks(d, errbuf, len)) != 0)
		return e;
	snprintf(path, sizeof(path), SYSFS "/%s/config", d->addr);
	if ((d->config_fd = open(path, O_RDWR | O_CLOEXEC)) == -1)
		return nic_fail(errbuf, len, errno, "PCI %s: %s", d->addr,
		    path);
	for (i = 0; flock(d->config_fd, mode | LOCK_NB) == -1; i++) {
		if (errno != EWOULDBLOCK || i == LOCK_WAIT_MS / 10) {
			e = errno == EWOULDBLOCK ? EBUSY : errno;
			snprintf(errbuf, len, "PCI %s is in use by another "
			    "snb-nic (a lock on %s)", d->addr, path);
			goto fail;
		}
		usleep(10000);
	}
	d->shared = first >= 0;
	if (first == 1 && flock(d->config_fd, LOCK_SH) == -1) {
		e = nic_fail(errbuf, len, errno, "PCI %s: flock", d->addr);
		goto fail;
	}
	if ((e = unbind(d, errbuf, len)) != 0)
		goto fail;
	/* The watcher first: from the moment the device may master, someone
	 * must be there to stop it. */
	if ((e = pci_watch_start(d, errbuf, len)) != 0)
		goto fail;
	/* Joining others, mastering stays as they have it. */
	if (pci_command_set(d->config_fd, CMD_IO | CMD_MEMORY | CMD_SERR |
	    CMD_INTX_OFF, first == 0 ? 0 : PCI_CMD_MASTER) == -1) {
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
		if (!d->shared || d->last)
			pci_command_set(d->config_fd, 0, PCI_CMD_MASTER);
		close(d->config_fd);
		d->config_fd = -1;
	}
	pci_watch_stop(d);	/* it clears mastering again, exits */
}

void *
pci_map_bar(struct pci_dev *d, int n, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	void *p = MAP_FAILED;
	int fd, e;

	snprintf(path, sizeof(path), SYSFS "/%s/resource%d", d->addr, n);
	if ((fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC)) == -1)
		return NULL;
	errno = ENXIO;		/* empty: an I/O BAR */
	if (fstat(fd, &st) == 0 && st.st_size > 0 && (p = mmap(NULL,
	    (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) !=
	    MAP_FAILED)
		*len = (size_t)st.st_size;
	e = errno;
	close(fd);
	errno = e;
	return p == MAP_FAILED ? NULL : p;
}
