/*
 * pcap-write.h: what snb-pcap-write's two halves share: the hand-over
 * state (see main.c) and the output (output.c: the file or pipe, its
 * header and rotations, and the writes that fill it).
 */
#ifndef SNB_PCAP_WRITE_H
#define SNB_PCAP_WRITE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "forward.h"

enum { TS_KEEP, TS_ZERO, TS_NOW };

#define PCAP_MAGIC_US	0xa1b2c3d4
#define PCAP_MAGIC_NS	0xa1b23c4d
#define SNAPLEN		262144	/* tcpdump's, and -s 0's */
#define HDR_LEN		24
#define REC_HDR		16

/* The hand-over state.  tail[j] is input ring j's tail after the last
 * burst written (in the launcher's order; rings_id tells it is the same). */
#define WRITE_MAGIC	0x33777070	/* "ppw3" */
#define MAX_RINGS	48
#define W_OPEN		0x1		/* the output was opened */
#define W_NANO		0x2		/* its header says nanoseconds */
struct write_state {
	uint32_t	magic;		/* WRITE_MAGIC once committed */
	uint32_t	nrings;
	uint32_t	rings_id;	/* hash of the input rings' names */
	uint32_t	flags;		/* W_* */
	uint64_t	dev, ino;	/* what is written: file or stdout */
	uint64_t	length;		/* its length after the last burst */
	uint64_t	sdev, sino;	/* the stdout that has our file header */
	uint64_t	packets, bytes;	/* counters after the last burst */
	uint64_t	written;	/* packets of this stream (-c) */
	int64_t		gtime;		/* the -G window's start (time_t) */
	uint32_t	cfile;		/* the -C file's number, 0 first */
	uint32_t	part;		/* bytes in the pipe of the record */
	uint32_t	part_hdr[4];	/* ... with this header, of the next */
	uint32_t	part_ring;	/* ... packet of this input */
	uint64_t	tail[MAX_RINGS];
};
_Static_assert(sizeof(struct write_state) <= APP_STATE_MAX, "state size");
extern struct write_state *st;

extern const char *path, *name;	/* FILE as given; the file written */
extern char cur[PATH_MAX];	/* its name, with rotation */
extern int fd, to_stdout, ts_mode, regular, gone, nano_opt;
extern int64_t rotate_secs;	/* -G (0: none) */
extern uint32_t snaplen;
extern uint64_t *bytes;
extern struct port *in;
extern unsigned char *burst;	/* a burst's records, see the breath */
extern size_t ends[APP_BURST];	/* where each record ends in it */

void	file_name(char *buf, size_t len, int64_t gtime, uint32_t cfile);
void	check_path(const char *f);
int	open_output(int resumed);
int	start_output(struct ring *r, uint32_t n);
int	rotate(int64_t gtime, uint32_t cfile);
int	flush(struct ring *r, uint32_t from, uint32_t to, size_t off,
	    size_t skip);

#endif
