/*
 * snb-nic: a network interface as a device app.  Frames the interface
 * receives go to port "out"; packets arriving on port "in" are sent.
 *
 * The back-end is chosen by a prefix: afpacket:IF, xdp:IF, tap:NAME,
 * pci:ADDR (a user-space driver, picked by the device's vendor:device), or
 * none (AF_XDP when the driver has native XDP, else AF_PACKET).  This file
 * is the part every back-end shares: options, the breath, link watching
 * and counters.  See nic.h for the back-end interface.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <linux/if_packet.h>

#include <err.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bsd/stdlib.h>
#include <bsd/string.h>

#include "forward.h"
#include "nic.h"
#include "pci.h"

#define MS		1000000ULL
#define CHECK_BUSY_NS	(100 * MS)	/* link and stats while packets move */
#define CHECK_IDLE_NS	(1 * MS)	/* ... and on idle breaths: see check() */
#define TX_RETRY_NS	200000ULL	/* kernel queue full: look again soon */
#define RX_GRACE_NS	(10 * MS)	/* output ring full: wait this long */
/* A PCI device has no descriptor to sleep on: an idle nic looks again
 * after this long (the runtime sleeps whole ms: 1.5 gives 1 ms). */
#define PCI_POLL_NS	(3 * MS / 2)

static const struct nic_ops *backends[] = { &afpacket_ops, &xdp_ops,
    &tap_ops };
/* User-space PCI drivers, asked in order whether they support a device. */
static const struct nic_ops *pci_drivers[] = { &e1000_ops, &virtio_ops,
    NULL };

static struct nic nic = { .queue = -1, .fanout = -1, .fd = -1 };
static const struct nic_ops *ops;	/* NULL until the first breath */
static int pci;				/* a PCI back-end: no kernel interface */
static int mtu;
static int by_name;			/* the spec named a queue: DEV/qN */
static struct port *out;
static struct fwd txf;			/* the "in" rings, taken in turn */
static uint64_t last_check, full_since;

#define USAGE	"[afpacket:|xdp:|tap:]IFNAME[/qN] [--promisc] [--queue N] " \
		"[--mtu BYTES] [--fanout GROUP]\n" \
		"pci:ADDRESS[/qN] [--promisc]"

int
nic_fail(char *errbuf, size_t len, int e, const char *fmt, ...)
{
	char what[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(errbuf, len, "%s: %s", what, strerror(e));
	return e;
}

/* An interface ioctl on ifr, named ifname: 0 or an errno value. */
static int
if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	static int fd = -1;

	if (fd == -1 && (fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC,
	    0)) == -1)
		err(1, "socket");
	strlcpy(ifr->ifr_name, ifname, sizeof(ifr->ifr_name));
	return ioctl(fd, req, ifr) == -1 ? errno : 0;
}

int
nic_set_up(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int e;

	if ((e = if_ioctl(ifname, SIOCGIFFLAGS, &ifr)) != 0 ||
	    (ifr.ifr_flags & IFF_UP))
		return e;
	ifr.ifr_flags |= IFF_UP;
	return if_ioctl(ifname, SIOCSIFFLAGS, &ifr);
}

static void
set_mtu(void)
{
	struct ifreq ifr = { .ifr_mtu = mtu };
	int e;

	if ((e = if_ioctl(nic.ifname, SIOCSIFMTU, &ifr)) != 0)
		errx(1, "%s: --mtu %d: %s%s", nic.ifname, mtu, strerror(e),
		    e == EPERM ? " (needs CAP_NET_ADMIN)" : "");
}

/*
 * Promiscuous mode as a packet-socket membership rather than IFF_PROMISC:
 * the kernel drops the membership when this process exits, however it
 * exits, so a crash cannot leave the interface promiscuous.  The socket
 * has protocol 0 and so never receives anything itself; it stays open.
 */
static void
set_promisc(void)
{
	struct packet_mreq mr = { .mr_ifindex = nic.ifindex,
	    .mr_type = PACKET_MR_PROMISC };
	int fd;

	if ((fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0)) == -1 ||
	    setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr,
	    sizeof(mr)) == -1)
		err(1, "%s: --promisc%s", nic.ifname, errno == EPERM ?
		    " (needs CAP_NET_RAW)" : "");
}

/*
 * pci:ADDR: look at the device (read-only) and pick the driver that
 * supports its vendor:device.  Nothing is claimed here: an unsupported
 * device is left as it is.
 */
static void
pci_choose(const char *addr)
{
	struct pci_dev d;
	char errbuf[256];
	int e, i;

	if ((e = pci_probe(&d, addr, errbuf, sizeof(errbuf))) != 0)
		errx(e == EINVAL ? 2 : 1, "%s: %s", nic.spec, errbuf);
	for (i = 0; pci_drivers[i] != NULL; i++)
		if (pci_drivers[i]->match(d.vendor, d.device))
			break;
	if ((ops = pci_drivers[i]) == NULL)
		errx(1, "%s: PCI device %s is %04x:%04x, which no snb-nic "
		    "driver supports (drivers: e1000, virtio); left untouched",
		    nic.spec, d.addr, d.vendor, d.device);
	strlcpy(nic.ifname, d.addr, sizeof(nic.ifname));
	pci = 1;
	if (mtu || nic.fanout >= 0 || (nic.queue >= 0 && !by_name))
		errx(2, "%s: --mtu, --queue and --fanout are not for PCI "
		    "devices (a queue pair is pci:ADDRESS/qN)", nic.spec);
	if (nic.queue > 0 && ops != &virtio_ops)
		errx(2, "%s: the %s driver serves one queue pair, q0",
		    nic.spec, ops->name);
}

/*
 * One naming for a device's queues, whatever the back-end: a spec ending
 * in "/qN" is queue N of the device before it.  Cut it off spec (a copy)
 * and note N; what N means is the back-end's (nic.h).  '/' cannot occur
 * in an interface name nor in a PCI address.
 */
static void
split_queue(char *spec)
{
	const char *errstr;
	char *slash;

	if ((slash = strrchr(spec, '/')) == NULL)
		return;
	if (slash[1] != 'q' || slash[2] < '0' || slash[2] > '9')
		errx(2, "%s: bad queue '%s' (the form is DEVICE/qN)", nic.spec,
		    slash + 1);
	if (nic.queue >= 0)	/* --queue */
		errx(2, "%s: give the queue once: /qN or --queue", nic.spec);
	nic.queue = (int)strtonum(slash + 2, 0, 65535, &errstr);
	if (errstr != NULL)
		errx(2, "%s: queue number '%s' is %s (0 to 65535)", nic.spec,
		    slash + 2, errstr);
	*slash = '\0';
	by_name = 1;
}

static void
nic_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "promisc", no_argument, &nic.promisc, 1 },
		{ "queue", required_argument, NULL, 'q' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "fanout", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char spec[sizeof(nic.spec)];
	char *name, *colon;
	size_t i;
	int ch;

	/* Options may follow IFNAME: the graph keys a device by its first
	 * word, so "nic eth0 --promisc | ... | nic eth0" is one process. */
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 0:		/* a flag: --promisc */
			break;
		case 'q':
			nic.queue = (int)app_parse_num("--queue", optarg, 0,
			    65535);
			break;
		case 'm':
			mtu = (int)app_parse_num("--mtu", optarg, 68, 65535);
			break;
		case 'f':
			nic.fanout = (int)app_parse_num("--fanout", optarg, 0,
			    65535);
			break;
		case 'h':
			app_help();
		default:
			app_usage();
		}
	}
	if (optind != argc - 1)
		app_usage();
	if (strlcpy(nic.spec, argv[optind], sizeof(nic.spec)) >=
	    sizeof(nic.spec))
		errx(2, "device '%s' is too long", argv[optind]);
	strlcpy(spec, nic.spec, sizeof(spec));
	split_queue(spec);
	/* ':' cannot occur in a Linux interface name: it is the prefix. */
	if (strncmp(spec, "pci:", 4) == 0) {
		pci_choose(spec + 4);
		return;
	}
	if ((colon = strchr(spec, ':')) != NULL) {
		*colon = '\0';
		for (i = 0; i < sizeof(backends) / sizeof(*backends); i++)
			if (strcmp(spec, backends[i]->name) == 0)
				ops = backends[i];
		if (ops == NULL)
			errx(2, "unknown back-end '%s' in '%s:%s' (afpacket, "
			    "xdp, tap), or pci:ADDR", spec, spec, colon + 1);
		name = colon + 1;
	} else {
		nic.native_only = 1;	/* or else AF_PACKET: see open_device */
		ops = nic.fanout >= 0 ? &afpacket_ops : &xdp_ops;
		name = spec;
	}
	if (*name == '\0' || strlen(name) >= IFNAMSIZ)
		errx(2, "bad interface name '%s'", name);
	strlcpy(nic.ifname, name, sizeof(nic.ifname));
	if (nic.fanout >= 0 && ops != &afpacket_ops)
		errx(2, "--fanout needs the afpacket back-end");
	if (by_name && ops == &tap_ops)
		errx(2, "%s: a tap has one queue here", nic.spec);
	if (by_name && nic.fanout >= 0)
		errx(2, "%s: /qN already chooses the fanout group; drop "
		    "--fanout", nic.spec);
	/* A tap may not exist yet: opening it creates it. */
	if (ops != &tap_ops &&
	    (nic.ifindex = (int)if_nametoindex(name)) == 0)
		errx(1, "no such interface '%s'", name);
	/* AF_PACKET has no queues of its own: IF/qN is a member of the
	 * interface's fanout group, whose id every process derives alike:
	 * fanout ids are per network namespace, as interface indexes are,
	 * and 16 bits wide. */
	if (by_name)
		nic.fanout = (int)((unsigned)nic.ifindex & 0xffff);

	/* The device is opened on the first breath, once the runtime has
	 * bound the ports: what is wired decides what to open. */
}

/* Let go of the back-end's state, after a failed open or at the end. */
static void
release(void)
{
	ops->release(&nic);
	free(nic.priv);
	nic.priv = NULL;
	nic.fd = -1;
}

static int
try_open(char *errbuf, size_t len)
{
	int e;

	if ((nic.priv = calloc(1, ops->size)) == NULL)
		err(1, NULL);
	if ((e = ops->open(&nic, errbuf, len)) != 0)
		release();
	return e;
}

/*
 * A tap that was there before the first of us is the operator's (ip tuntap
 * add, with the addresses and routes set up around it): a restart attaches
 * to it again, and fails when it has gone rather than make a bare tap of
 * that name that would take its traffic nowhere.  A tap the first of us
 * made is ours: it went with the process, and a restart makes it again.
 * The answer holds for one name: a swap to another tap asks afresh.
 */
#define TAP_MAGIC	0x7061746f	/* "otap": the name came in with it */
static void
tap_owner(void)
{
	struct {
		uint32_t magic, theirs;
		char	 name[IFNAMSIZ];
	} *s = app_state(sizeof(*s));
	int there = if_nametoindex(nic.ifname) != 0;

	if (!app_resumed() || s->magic != TAP_MAGIC ||
	    strncmp(s->name, nic.ifname, sizeof(s->name)) != 0) {
		s->magic = TAP_MAGIC;
		s->theirs = (uint32_t)there;
		strncpy(s->name, nic.ifname, sizeof(s->name));	/* 0-padded */
		app_state_commit();
	} else if (s->theirs && !there)
		errx(1, "%s: gone, and not ours to create: the tap was there "
		    "before snb-nic (the operator's)", nic.spec);
}

static void
open_device(void)
{
	char errbuf[256];
	int e, existed = nic.ifindex != 0;

	out = app_port("out");
	fwd_init(&txf, (const char *const[]){ "in", NULL }, NULL);
	nic.rx = out != NULL && out->nrings > 0;
	nic.tx = txf.nin > 0;
	/* Run by hand, it would hold the device and do nothing forever. */
	if (!nic.rx && !nic.tx)
		errx(2, "no port is connected (in, out)");
	if (ops == &tap_ops)
		tap_owner();
	/* Before open: native XDP refuses an MTU too big for its buffers. */
	if (mtu && existed)
		set_mtu();
	if ((e = try_open(errbuf, sizeof(errbuf))) != 0 && nic.native_only &&
	    ops == &xdp_ops) {
		fprintf(stderr, "snb-nic: %s: %s; using AF_PACKET\n",
		    nic.ifname, errbuf);
		ops = &afpacket_ops;
		e = try_open(errbuf, sizeof(errbuf));
	}
	if (e == EPERM || e == EACCES)
		errx(1, "%s: %s (needs %s)", nic.spec, errbuf, ops->caps);
	if (e == ENODEV && !pci)
		errx(1, "no such interface '%s'", nic.ifname);
	if (e)
		errx(1, "%s: %s", nic.spec, errbuf);
	if (mtu && !existed)
		set_mtu();
	if (nic.promisc && !pci)	/* a PCI driver's own */
		set_promisc();
	if (nic.queue >= 0 && ops != &xdp_ops && !by_name)
		fprintf(stderr, "snb-nic: %s: --queue is ignored by %s (use "
		    "--fanout to share an interface)\n", nic.ifname,
		    ops->name);
	if (nic.rx && !pci)
		app_wait_fd(nic.fd, POLLIN);
	/* Counters appear once the device is open: tests and tools can wait
	 * for "rx-packets" to know the nic is receiving. */
	app_counters((uint64_t **)&nic.c, (const char *const[]){ "rx-packets",
	    "rx-bytes", "tx-packets", "tx-bytes", "drop-ring-full",
	    "drop-oversize", "drop-kernel", "drop-tx-error", "drop-link-down",
	    "link-down", NULL });
	if (pci)
		nic.down = !ops->link(&nic);
	last_check = app_now_ns();
}

void
nic_link_lost(struct nic *n)
{
	if (n->down)
		return;
	n->down = 1;
	(*n->c.link_down)++;
	fprintf(stderr, "snb-nic: %s: link down; pausing\n", n->ifname);
}

uint32_t
nic_tx_lost(struct nic *n, uint32_t sent, uint32_t want)
{
	nic_link_lost(n);
	*n->c.drop_link_down += want - sent;
	return want;
}

/*
 * Link state and the device's own counters.  Runs every CHECK_BUSY_NS
 * while packets move and on the first idle breath after CHECK_IDLE_NS: an
 * AF_PACKET socket whose interface went down holds an error that makes
 * poll() return at once until it is read, so an idle nic must clear it
 * soon or it would spin.
 */
static void
check(void)
{
	struct ifreq ifr;
	int e, up;

	if (ops->check)
		ops->check(&nic);
	if (ops->stats)
		ops->stats(&nic);
	/* A PCI device's own link state: carrier, as nothing else would
	 * stop us sending into a cable that is not there. */
	if (pci)
		up = ops->link(&nic);
	else {
		if ((e = if_ioctl(nic.ifname, SIOCGIFFLAGS, &ifr)) == ENODEV)
			errx(1, "%s: interface removed", nic.ifname);
		else if (e)
			errx(1, "%s: SIOCGIFFLAGS: %s", nic.ifname,
			    strerror(e));
		/* Only an interface set down pauses us.  Carrier
		 * (IFF_RUNNING) is the kernel's to handle, and it is
		 * reported late after a change (linkwatch), which would
		 * drop the first frames of a fresh link. */
		up = ifr.ifr_flags & IFF_UP;
	}
	if (!up)
		nic_link_lost(&nic);
	else if (nic.down) {
		nic.down = 0;
		fprintf(stderr, "snb-nic: %s: link up\n", pci ? nic.spec :
		    nic.ifname);
	}
}

/*
 * Receive a burst.  When the output ring is full the frames wait in the
 * kernel's queue (4 MiB for AF_PACKET, 2048 frames for AF_XDP) for up to
 * RX_GRACE_NS: the consumer may just be slow to get a CPU, and a TPACKET_V3
 * block alone can hold more frames than a ring has slots.  After that the
 * world cannot wait any longer (DESIGN 3): frames are drained from the
 * kernel and counted in drop-ring-full until there is room again.  While
 * waiting, an otherwise idle breath sleeps on the ring (may_wait); a breath
 * that sent packets must not, as we may be our own consumer (nic X | nic X).
 */
static uint32_t
rx_step(int may_wait)
{
	struct rx_burst b = { .ring = &out->rings[0] };
	uint64_t now;

	b.room = ring_room(b.ring, APP_BURST);
	if (b.room == 0) {
		now = app_now_ns();
		if (full_since == 0)
			full_since = now;
		if (now - full_since < RX_GRACE_NS) {
			if (may_wait) {
				ring_wait(b.ring, 1);
				b.room = ring_room(b.ring, APP_BURST);
			}
			if (b.room == 0)
				return 0;
		}
	}
	if (b.room > APP_BURST)
		b.room = APP_BURST;
	if (b.room)
		full_since = 0;
	b.budget = b.room ? b.room : APP_BURST;
	if (ops != &afpacket_ops)
		b.ts_ns = app_realtime_ns();
	ops->rx(&nic, &b);
	if (b.n)
		ring_commit(b.ring, b.n);
	return b.seen;
}

/* Hand a burst of "in" to the device (fwd_take releases what it took). */
static uint32_t
tx_take(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint32_t k;

	if (nic.down) {
		/* A down link is the world not waiting: drop. */
		*nic.c.drop_link_down += n;
		return n;
	}
	if ((k = ops->tx(&nic, r, n)) < n)
		app_wake_at(app_now_ns() + TX_RETRY_NS);
	return k;
}

static int
nic_breathe(void)
{
	uint64_t now;
	uint32_t n = 0;

	if (nic.priv == NULL)
		open_device();
	/* A retry deadline from the last breath is moot: we look now. */
	app_wake_at(0);
	if (nic.tx)
		n += (uint32_t)fwd_take(&txf, tx_take, NULL);
	if (nic.rx)
		n += rx_step(n == 0);
	now = app_now_ns();
	if (now - last_check >= (n ? CHECK_BUSY_NS : CHECK_IDLE_NS)) {
		last_check = now;
		check();
	}
	if (pci && n == 0 && nic.rx)
		app_wake_at(now + PCI_POLL_NS);
	return (int)n;
}

static void
nic_stop(int eof)
{
	if (nic.priv == NULL)
		return;
	if (ops->stats)
		ops->stats(&nic);
	if (ops->drain)
		ops->drain(&nic);
	release();
}

static const struct app_desc desc = {
	.name = "nic",
	.usage = USAGE,
	.summary = "Receive frames from a network interface to 'out'; send "
	    "the packets of 'in'.",
	.device = 1,
	.ports = app_device_ports,
	.init = nic_init,
	.breathe = nic_breathe,
	.stop = nic_stop,
};

APP_MAIN(desc)
