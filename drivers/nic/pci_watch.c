/*
 * pci_watch.c: putting a PCI device back when its driver is gone, however
 * it went (SIGKILL included), and the DMA memory that must outlive the
 * driver until then.
 *
 * pci_open() forks a watcher, a small child that blocks reading a socket
 * whose other end only the driver holds.  When the driver process ends,
 * the kernel closes that end, the read returns 0 and the watcher clears
 * bus mastering in the command register, then exits.
 *
 * The device may still be writing into the driver's DMA memory at that
 * moment (a receive ring it was given), so that memory must not go back to
 * the kernel before mastering is off: a page the kernel hands to someone
 * else would take the device's writes.  So DMA memory is a hugetlb memfd,
 * and dma_alloc() sends its descriptor to the watcher (SCM_RIGHTS) before
 * the device is told about it; the watcher holds every such file open, and
 * an open file keeps its hugepages out of the pool.  Only after clearing
 * mastering does it exit, and the pages are freed.  A descriptor still in
 * flight when the driver dies is held by the socket, and read before the
 * end of the stream: no window.
 *
 * The watcher leaves our process group (setsid) and ignores the usual
 * signals, so a Ctrl-C or a launcher stopping the graph does not take it
 * first.  It shares the config file's flock (see pci.c).  This needs
 * nothing from snb-run and also covers snb-nic run alone.
 */
#define _GNU_SOURCE		/* memfd_create, MFD_HUGETLB */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nic.h"
#include "pci.h"

/* 2 MiB pages by name: the default size is 1 GiB on some hosts, and
 * HUGEPAGE is what we map. */
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB	(21U << 26)
#endif

/*
 * The watcher (see the top of this file).  Runs in the child: closes all
 * but the config fd and the socket, holds the memory files it is sent
 * until the end of the stream, clears bus mastering, exits.
 */
static void __attribute__((noreturn))
watch(struct pci_dev *d, int sock)
{
	static const int ignore[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1,
	    SIGUSR2, SIGPIPE };
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr msg;
	ssize_t n;
	int fd;

	for (fd = 0; fd < (int)(sizeof(ignore) / sizeof(*ignore)); fd++)
		signal(ignore[fd], SIG_IGN);
	setsid();
	for (fd = 3; fd < 1024; fd++)
		if (fd != d->config_fd && fd != sock)
			close(fd);
	/* The descriptor each message carries stays open. */
	do
		msg = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) > 0 ||
	    (n == -1 && errno == EINTR));
	/* Shared, the device stops only if no one else holds it (two
	 * watchers at once: the second finds the lock free). */
	if (pci_last(d))
		pci_command_set(d->config_fd, 0, PCI_CMD_MASTER);
	_exit(0);
}

int
pci_watch_start(struct pci_dev *d, char *errbuf, size_t len)
{
	sigset_t all, old;
	int e, sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return nic_fail(errbuf, len, errno, "socketpair");
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	d->watcher = fork();
	if (d->watcher == 0) {
		close(sv[1]);
		sigprocmask(SIG_SETMASK, &old, NULL);
		watch(d, sv[0]);
	}
	e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(sv[0]);
	if (d->watcher == -1) {
		close(sv[1]);
		return nic_fail(errbuf, len, e, "fork");
	}
	d->watch_fd = sv[1];
	return 0;
}

void
pci_watch_stop(struct pci_dev *d)
{
	if (d->watch_fd == -1)
		return;
	close(d->watch_fd);	/* the watcher clears mastering, exits */
	d->watch_fd = -1;
	while (waitpid(d->watcher, NULL, 0) == -1 && errno == EINTR)
		;
}

int
pci_watch_hold(struct pci_dev *d, int fd)
{
	char c = 'm', cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	while (sendmsg(d->watch_fd, &msg, MSG_NOSIGNAL) == -1)
		if (errno != EINTR)
			return errno;
	return 0;
}

uint64_t
pci_phys(void *p)
{
	uint64_t e = 0;
	int fd;

	if ((fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	if (pread(fd, &e, 8, (off_t)((uintptr_t)p / 4096) * 8) != 8)
		e = 0;
	close(fd);
	/* Bit 63: present; bits 0-54: the frame number, 0 without
	 * CAP_SYS_ADMIN. */
	errno = EPERM;
	return (e >> 63) ? (e & ((1ULL << 55) - 1)) * 4096 : 0;
}

/*
 * A hugepage of a memfd: locked and populated so its physical address is
 * fixed before we read it, and held by the watcher before the device can
 * know it.
 */
int
dma_alloc(struct pci_dev *d, size_t len, struct dma_mem *m, char *errbuf,
    size_t errlen)
{
	const char *what = "DMA memory: a 2 MiB hugepage "
	    "(/proc/sys/vm/nr_hugepages)";
	void *p = MAP_FAILED;
	int fd, e;

	memset(m, 0, sizeof(*m));
	if (len > HUGEPAGE)
		return nic_fail(errbuf, errlen, EINVAL, "DMA memory: %zu "
		    "bytes", len);
	if (d->watch_fd == -1)
		return nic_fail(errbuf, errlen, EINVAL, "DMA memory: PCI %s "
		    "has no watcher to hold it", d->addr);
	fd = memfd_create("snb-nic-dma", MFD_CLOEXEC | MFD_HUGETLB |
	    MFD_HUGE_2MB);
	if (fd == -1 || ftruncate(fd, HUGEPAGE) == -1 ||
	    (p = mmap(NULL, HUGEPAGE, PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_LOCKED | MAP_POPULATE, fd, 0)) == MAP_FAILED)
		e = errno;
	else if ((e = pci_watch_hold(d, fd)) != 0)
		what = "DMA memory: handing it to the watcher";
	else if ((m->phys = pci_phys(p)) == 0) {
		e = errno;
		what = "DMA memory: physical address from /proc/self/pagemap";
	}
	if (fd != -1)
		close(fd);
	if (e != 0) {
		if (p != MAP_FAILED)
			munmap(p, HUGEPAGE);
		return nic_fail(errbuf, errlen, e, "%s", what);
	}
	m->virt = memset(p, 0, HUGEPAGE);
	return 0;
}

void
dma_free(struct dma_mem *m)
{
	if (m->virt != NULL)
		munmap(m->virt, HUGEPAGE);
	m->virt = NULL;
}
