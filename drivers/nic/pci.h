/*
 * pci.h: what snb-nic's user-space PCI drivers (e1000.c, virtio.c) share:
 * claiming a PCI function through sysfs (pci.c), its config space and
 * BARs, and DMA memory the device can use, held by a watcher process that
 * stops the device however we exit (pci_watch.c).  Without an IOMMU the
 * device sees physical addresses; with VFIO it would see IO virtual
 * addresses (not done yet).
 */
#ifndef SNB_PCI_H
#define SNB_PCI_H

#include <stddef.h>
#include <stdint.h>

struct pci_dev {
	char		 addr[16];	/* "0000:00:04.0" */
	uint16_t	 vendor, device;
	int		 config_fd;	/* sysfs config, read/write */
	int		 watch_fd;	/* the watcher's socket: EOF = we are
					   gone; DMA memory files go there */
	int		 watcher;	/* its pid */
	int		 shared;	/* one of several processes (below) */
	int		 last;		/* shared, and the last one left */
};

#define HUGEPAGE	(2UL << 20)

/* DMA memory, a hugepage: virtual address for us, physical for the device. */
struct dma_mem {
	unsigned char	*virt;
	uint64_t	 phys;
};

/*
 * Look at ADDR without touching it: canonical address, vendor, device;
 * 0 or EINVAL (malformed), ENODEV (absent) with a message in errbuf.
 */
int	pci_probe(struct pci_dev *, const char *addr, char *errbuf, size_t len);
/*
 * Claim ADDR ("0000:00:04.0", or the short "00:04.0"): alone (first = -1)
 * with an exclusive flock on its config file (see pci.c), or as one of
 * several processes each serving its queues (virtio_mq.c) with a shared
 * one: first = 1 claims the device as alone does (exclusive, then shared:
 * no one else drives it), first = 0 joins whoever did.  0, or an errno
 * value with a message naming the address in errbuf: EBUSY when a kernel
 * interface of the device is up (it may carry the host's own traffic), it
 * is bound to a driver that is not its kernel NIC driver (vfio-pci, UIO),
 * or another snb-nic drives it; EOPNOTSUPP behind an active IOMMU.  Bus
 * mastering is off on return (joining, as the others have it); shared, it
 * goes off only when the last of them is gone (its watcher finds the lock
 * free), so one can exit or be killed while the others go on.
 */
int	pci_open(struct pci_dev *, const char *addr, int first, char *errbuf,
	    size_t len);
/* Shared: 1 if no other process holds the device now (this one stops
 * it); it then stays ours alone until pci_close. */
int	pci_last(struct pci_dev *);
/* Bus mastering off (shared: only by the last), close. */
void	pci_close(struct pci_dev *);
/* Map memory BAR n (sysfs resourceN); NULL with errno set on failure. */
void	*pci_map_bar(struct pci_dev *, int n, size_t *len);
/* Config space read; 0 or -1 with errno. */
int	pci_config_read(struct pci_dev *, uint32_t off, void *buf, size_t len);
/* Set or clear bus mastering (command register bit 2); 0 or an errno. */
#define PCI_CMD_MASTER	0x0004
int	pci_bus_master(struct pci_dev *, int on, char *errbuf, size_t len);
/* Set and clear bits of the command register of config file fd; 0 or -1. */
int	pci_command_set(int fd, uint16_t set, uint16_t clear);

/*
 * len bytes (at most one hugepage) of zeroed, locked, physically
 * contiguous memory for the device, held by its watcher (pci_watch.c)
 * until bus mastering is off; 0 or an errno value.
 */
int	dma_alloc(struct pci_dev *, size_t len, struct dma_mem *,
	    char *errbuf, size_t errlen);
void	dma_free(struct dma_mem *);
/* The physical address of the locked page at p; 0 with errno set. */
uint64_t pci_phys(void *p);
/* The watcher: started by pci_open, stopped (waited for) by pci_close. */
int	pci_watch_start(struct pci_dev *, char *errbuf, size_t len);
void	pci_watch_stop(struct pci_dev *);
/* Hand memory file fd to the watcher to hold (a copy); 0 or an errno. */
int	pci_watch_hold(struct pci_dev *, int fd);

/* 32-bit register access to a mapped BAR: volatile, in device order. */
static inline uint32_t
reg_read(volatile void *bar, uint32_t off)
{
	return *(volatile uint32_t *)((volatile char *)bar + off);
}

static inline void
reg_write(volatile void *bar, uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)((volatile char *)bar + off) = v;
}

#endif
