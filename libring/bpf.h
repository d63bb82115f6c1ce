/*
 * bpf.h: a classic BPF interpreter for filters compiled by pcap_compile().
 *
 * A program is validated once by snb_bpf_load() and translated into a
 * private threaded form; snb_bpf_run() then needs no per-instruction
 * checks beyond the packet bounds.  Results equal libpcap's bpf_filter()
 * for every program both accept, with these documented differences:
 *
 *  - Rejected at load although libpcap 1.10 runs them: shifts by a
 *    constant >= 32 (undefined behaviour in libpcap's C, rejected by
 *    later libpcap validators too), RET X and other opcodes that
 *    bpf_filter() would abort() on, "ja" to itself, and programs longer
 *    than SNB_BPF_MAXINSNS.
 *  - Shifts by X >= 32 give 0, as libpcap does.
 *  - Scratch memory starts zeroed (libpcap leaves it undefined; programs
 *    from pcap_compile() always store before they load).
 *  - Backward "ja" (libpcap emits them for "protochain") is allowed, but
 *    a run taking more than SNB_BPF_MAXBACKJUMPS of them stops and
 *    returns 0, so every run terminates.  A real protochain walk advances
 *    at least 8 bytes per jump and never comes near the limit.
 */
#ifndef SNB_BPF_H
#define SNB_BPF_H

#include <stddef.h>

#define SNB_BPF_MAXINSNS	65536
#define SNB_BPF_MAXBACKJUMPS	65536

struct bpf_insn;	/* from <pcap/bpf.h> */
struct snb_bpf;		/* opaque, see bpf.c */

/*
 * Validate and translate n instructions.  On failure returns NULL and
 * writes the reason (naming the offending instruction) to errbuf.
 */
struct snb_bpf	*snb_bpf_load(const struct bpf_insn *insns, unsigned n,
		    char *errbuf, size_t errlen);

/*
 * Run on one packet: caplen bytes are readable at pkt, wirelen is the
 * length on the wire (what BPF_LEN sees; raised to caplen if smaller).
 * Returns the program's return value, 0 meaning reject; a load beyond
 * caplen or a division by X == 0 rejects, as in libpcap.
 */
unsigned	 snb_bpf_run(const struct snb_bpf *p, const unsigned char *pkt,
		    unsigned caplen, unsigned wirelen);

void		 snb_bpf_free(struct snb_bpf *p);

#endif
