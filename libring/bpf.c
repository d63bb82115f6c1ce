/*
 * bpf.c: classic BPF validator and threaded-code interpreter.
 *
 * snb_bpf_load() checks every instruction once (known opcode, scratch
 * index in range, jumps inside the program, constant divisor non-zero,
 * last instruction a RET) and rewrites it as a struct insn holding the
 * address of its handler inside bpf_exec() and absolute jump targets.
 * Running is then a chain of indirect jumps with no decoding, no
 * program-counter arithmetic and no checks except the packet bounds.
 *
 * Two rewrites make common code cheaper:
 *  - a packet load directly followed by a conditional jump on K
 *    (pcap_compile's bread and butter: "ldh [12]; jeq #0x800") runs as
 *    one fused "load and branch" handler.  The jump keeps its own slot,
 *    unchanged, for anything else that jumps to it, so no control-flow
 *    analysis is needed.
 *  - a packet load whose end lies beyond 2^32 can never succeed, so it
 *    becomes "ret #0"; every other load carries its end offset
 *    precomputed, which also makes the 64-bit IND check overflow-free.
 *
 * Semantics follow libpcap's bpf_filter(); see bpf.h for the differences.
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/bpf.h>

#include "bpf.h"

/*
 * Internal operations.  The order matters in two places: the six packet
 * loads (ABS W, H, B, then IND W, H, B) and the four K jumps (GT, GE, EQ,
 * SET) are contiguous, because a fused "load and branch" op is numbered
 * FUSED_BASE + load * 4 + jump; and bpf_exec()'s label table is
 * generated from this same list.
 */
#define FUSED(_, ld)	_(ld##_JGT) _(ld##_JGE) _(ld##_JEQ) _(ld##_JSET)
#define OPS(_)								\
	_(RET_K) _(RET_A)						\
	_(LDW_ABS) _(LDH_ABS) _(LDB_ABS)				\
	_(LDW_IND) _(LDH_IND) _(LDB_IND)				\
	_(LD_LEN) _(LDX_LEN) _(LDX_MSH) _(LD_IMM) _(LDX_IMM)		\
	_(LD_MEM) _(LDX_MEM) _(ST) _(STX)				\
	_(JA) _(JA_BACK)						\
	_(JGT_K) _(JGE_K) _(JEQ_K) _(JSET_K)				\
	_(JGT_X) _(JGE_X) _(JEQ_X) _(JSET_X)				\
	_(ADD_K) _(SUB_K) _(MUL_K) _(DIV_K) _(MOD_K)			\
	_(AND_K) _(OR_K) _(XOR_K) _(LSH_K) _(RSH_K)			\
	_(ADD_X) _(SUB_X) _(MUL_X) _(DIV_X) _(MOD_X)			\
	_(AND_X) _(OR_X) _(XOR_X) _(LSH_X) _(RSH_X)			\
	_(NEG) _(TAX) _(TXA)						\
	FUSED(_, LDW) FUSED(_, LDH) FUSED(_, LDB)			\
	FUSED(_, LDWX) FUSED(_, LDHX) FUSED(_, LDBX)

#define OP_ENUM(name)	OP_##name,
enum op { OPS(OP_ENUM) OP_NR, FUSED_BASE = OP_LDW_JGT };

/*
 * Classic opcode -> internal operation, plus one so that a zero entry
 * means "not an opcode bpf_filter() implements".  Codes above 0xff are
 * all invalid.
 */
static const unsigned char optab[256] = {
#define C(code, op)	[code] = OP_##op + 1
	C(BPF_RET|BPF_K, RET_K),		C(BPF_RET|BPF_A, RET_A),
	C(BPF_LD|BPF_W|BPF_ABS, LDW_ABS),	C(BPF_LD|BPF_H|BPF_ABS, LDH_ABS),
	C(BPF_LD|BPF_B|BPF_ABS, LDB_ABS),	C(BPF_LD|BPF_W|BPF_IND, LDW_IND),
	C(BPF_LD|BPF_H|BPF_IND, LDH_IND),	C(BPF_LD|BPF_B|BPF_IND, LDB_IND),
	C(BPF_LD|BPF_W|BPF_LEN, LD_LEN),	C(BPF_LDX|BPF_W|BPF_LEN, LDX_LEN),
	C(BPF_LDX|BPF_MSH|BPF_B, LDX_MSH),	C(BPF_LD|BPF_IMM, LD_IMM),
	C(BPF_LDX|BPF_IMM, LDX_IMM),		C(BPF_LD|BPF_MEM, LD_MEM),
	C(BPF_LDX|BPF_MEM, LDX_MEM),		C(BPF_ST, ST),
	C(BPF_STX, STX),			C(BPF_JMP|BPF_JA, JA),
	C(BPF_JMP|BPF_JGT|BPF_K, JGT_K),	C(BPF_JMP|BPF_JGE|BPF_K, JGE_K),
	C(BPF_JMP|BPF_JEQ|BPF_K, JEQ_K),	C(BPF_JMP|BPF_JSET|BPF_K, JSET_K),
	C(BPF_JMP|BPF_JGT|BPF_X, JGT_X),	C(BPF_JMP|BPF_JGE|BPF_X, JGE_X),
	C(BPF_JMP|BPF_JEQ|BPF_X, JEQ_X),	C(BPF_JMP|BPF_JSET|BPF_X, JSET_X),
	C(BPF_ALU|BPF_ADD|BPF_K, ADD_K),	C(BPF_ALU|BPF_SUB|BPF_K, SUB_K),
	C(BPF_ALU|BPF_MUL|BPF_K, MUL_K),	C(BPF_ALU|BPF_DIV|BPF_K, DIV_K),
	C(BPF_ALU|BPF_MOD|BPF_K, MOD_K),	C(BPF_ALU|BPF_AND|BPF_K, AND_K),
	C(BPF_ALU|BPF_OR|BPF_K, OR_K),		C(BPF_ALU|BPF_XOR|BPF_K, XOR_K),
	C(BPF_ALU|BPF_LSH|BPF_K, LSH_K),	C(BPF_ALU|BPF_RSH|BPF_K, RSH_K),
	C(BPF_ALU|BPF_ADD|BPF_X, ADD_X),	C(BPF_ALU|BPF_SUB|BPF_X, SUB_X),
	C(BPF_ALU|BPF_MUL|BPF_X, MUL_X),	C(BPF_ALU|BPF_DIV|BPF_X, DIV_X),
	C(BPF_ALU|BPF_MOD|BPF_X, MOD_X),	C(BPF_ALU|BPF_AND|BPF_X, AND_X),
	C(BPF_ALU|BPF_OR|BPF_X, OR_X),		C(BPF_ALU|BPF_XOR|BPF_X, XOR_X),
	C(BPF_ALU|BPF_LSH|BPF_X, LSH_X),	C(BPF_ALU|BPF_RSH|BPF_X, RSH_X),
	C(BPF_ALU|BPF_NEG, NEG),		C(BPF_MISC|BPF_TAX, TAX),
	C(BPF_MISC|BPF_TXA, TXA),
#undef C
};

/*
 * One translated instruction, 32 bytes.  Fields a handler does not use
 * are zero.  A fused load-and-branch takes its jump targets from the
 * jump it absorbed (copied here) and the constant from that jump's k,
 * which is the next slot.
 */
struct insn {
	const void		*op;	/* handler label in bpf_exec() */
	const struct insn	*jt;	/* branch taken; JA: the target */
	const struct insn	*jf;	/* branch not taken */
	uint32_t		 k;	/* operand, as in the classic insn */
	uint32_t		 end;	/* packet loads: k + access size */
};

/* A program: its length and whether it touches scratch memory. */
struct snb_bpf {
	unsigned	 n;
	int		 usesmem;	/* zero scratch before each run */
	struct insn	 code[];
};

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BE16(v)	__builtin_bswap16(v)
#define BE32(v)	__builtin_bswap32(v)
#else
#define BE16(v)	(v)
#define BE32(v)	(v)
#endif

/* Unaligned big-endian loads; memcpy compiles to a single move. */
static inline uint32_t
ld32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return BE32(v);
}

static inline uint32_t
ld16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return BE16(v);
}

static inline uint32_t
ld8(const unsigned char *p)
{
	return *p;
}

/*
 * The interpreter.  Called with labelsp set it only hands out its label
 * table (labels exist only inside their function).  It must be neither
 * inlined nor cloned: a copy would have different label addresses from
 * the ones stored in the translated program.  GCC's cross-jumping and
 * GCSE would also merge the handlers' dispatch jumps into a few shared
 * ones, which predict far worse than one per handler.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define EXEC_ATTRS	noinline, noclone, optimize("no-gcse", "no-crossjumping")
#else
#define EXEC_ATTRS	noinline
#endif
static __attribute__((EXEC_ATTRS)) unsigned
bpf_exec(const struct snb_bpf *p, const unsigned char *pkt, uint32_t caplen,
    uint32_t wirelen, const void *const **labelsp)
{
#define OP_LABEL(name)	&&L_##name,
	static const void *const labels[OP_NR] = { OPS(OP_LABEL) };
	const struct insn *ip;
	uint32_t A = 0, X = 0, mem[BPF_MEMWORDS];
	unsigned backjumps = 0;

	if (labelsp != NULL) {
		*labelsp = labels;
		return 0;
	}
	if (p->usesmem)
		memset(mem, 0, sizeof(mem));
	ip = p->code;
	goto *ip->op;

#define NEXT()		do { ip++; goto *ip->op; } while (0)
	/*
	 * A real conditional branch, not "ip = c ? jt : jf": the predictor
	 * then learns each decision and each arm gets its own dispatch.
	 * About twice as fast on a mixed packet set.
	 */
#define BRANCH(c)	do { if (c) { ip = ip->jt; goto *ip->op; }	\
			     ip = ip->jf; goto *ip->op; } while (0)
	/* A load past caplen rejects the packet; end is 64-bit for IND. */
#define CHECK(end)	do { if ((end) > caplen) return 0; } while (0)
#define LOAD(sz, at)	ld##sz(pkt + (at))
#define ABS(sz)		do { CHECK(ip->end); A = LOAD(sz, ip->k); } while (0)
#define IND(sz)		do { CHECK((uint64_t)X + ip->end);		\
				A = LOAD(sz, (size_t)X + ip->k); } while (0)
#define ALU(name, expr)	L_##name##_K: { uint32_t v = ip->k; expr; NEXT(); } \
			L_##name##_X: { uint32_t v = X; expr; NEXT(); }

L_RET_K:	return ip->k;
L_RET_A:	return A;
L_LDW_ABS:	ABS(32); NEXT();
L_LDH_ABS:	ABS(16); NEXT();
L_LDB_ABS:	ABS(8); NEXT();
L_LDW_IND:	IND(32); NEXT();
L_LDH_IND:	IND(16); NEXT();
L_LDB_IND:	IND(8); NEXT();
L_LD_LEN:	A = wirelen < caplen ? caplen : wirelen; NEXT();
L_LDX_LEN:	X = wirelen < caplen ? caplen : wirelen; NEXT();
L_LDX_MSH:	CHECK(ip->end); X = (pkt[ip->k] & 0xf) << 2; NEXT();
L_LD_IMM:	A = ip->k; NEXT();
L_LDX_IMM:	X = ip->k; NEXT();
L_LD_MEM:	A = mem[ip->k]; NEXT();
L_LDX_MEM:	X = mem[ip->k]; NEXT();
L_ST:		mem[ip->k] = A; NEXT();
L_STX:		mem[ip->k] = X; NEXT();
L_JA:		ip = ip->jt; goto *ip->op;
L_JA_BACK:	if (backjumps++ == SNB_BPF_MAXBACKJUMPS)
			return 0;
		ip = ip->jt; goto *ip->op;
L_JGT_K:	BRANCH(A > ip->k);
L_JGE_K:	BRANCH(A >= ip->k);
L_JEQ_K:	BRANCH(A == ip->k);
L_JSET_K:	BRANCH(A & ip->k);
L_JGT_X:	BRANCH(A > X);
L_JGE_X:	BRANCH(A >= X);
L_JEQ_X:	BRANCH(A == X);
L_JSET_X:	BRANCH(A & X);
	ALU(ADD, A += v)
	ALU(SUB, A -= v)
	ALU(MUL, A *= v)
	ALU(AND, A &= v)
	ALU(OR, A |= v)
	ALU(XOR, A ^= v)
	/* The loader rejects constant zero divisors and shifts >= 32. */
	ALU(DIV, if (v == 0) return 0; A /= v)
	ALU(MOD, if (v == 0) return 0; A %= v)
	ALU(LSH, A = v < 32 ? A << v : 0)
	ALU(RSH, A = v < 32 ? A >> v : 0)
L_NEG:		A = 0U - A; NEXT();
L_TAX:		X = A; NEXT();
L_TXA:		A = X; NEXT();
#define BRANCHES(ld, load)						\
	L_##ld##_JGT:	load; BRANCH(A > ip[1].k);			\
	L_##ld##_JGE:	load; BRANCH(A >= ip[1].k);			\
	L_##ld##_JEQ:	load; BRANCH(A == ip[1].k);			\
	L_##ld##_JSET:	load; BRANCH(A & ip[1].k);
	BRANCHES(LDW, ABS(32))
	BRANCHES(LDH, ABS(16))
	BRANCHES(LDB, ABS(8))
	BRANCHES(LDWX, IND(32))
	BRANCHES(LDHX, IND(16))
	BRANCHES(LDBX, IND(8))
}

unsigned
snb_bpf_run(const struct snb_bpf *p, const unsigned char *pkt,
    unsigned caplen, unsigned wirelen)
{
	return bpf_exec(p, pkt, caplen, wirelen, NULL);
}

static __attribute__((format(printf, 3, 4))) int
fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/*
 * Check a jump from slot i by off (signed, as libpcap applies it) and
 * return the target slot, or -1 when it leaves the program.
 */
static long
target(unsigned i, int64_t off, unsigned n)
{
	int64_t t = (int64_t)i + 1 + off;

	return t >= 0 && t < n ? (long)t : -1;
}

/* Bytes a packet load reads, 0 for everything else. */
static const unsigned char loadsize[OP_NR] = {
	[OP_LDW_ABS] = 4, [OP_LDW_IND] = 4, [OP_LDH_ABS] = 2, [OP_LDH_IND] = 2,
	[OP_LDB_ABS] = 1, [OP_LDB_IND] = 1, [OP_LDX_MSH] = 1,
};

/*
 * Validate insns[i] and translate it into p->code[i], all fields but the
 * handler address.  Returns the internal op, or -1 with errbuf set.
 */
static int
translate(struct snb_bpf *p, const struct bpf_insn *insns, unsigned i,
    char *errbuf, size_t errlen)
{
	const struct bpf_insn *s = &insns[i];
	struct insn *d = &p->code[i];
	unsigned size;
	long jt, jf;
	int op;

	if (s->code > 0xff || optab[s->code] == 0)
		return fail(errbuf, errlen, "insn %u: invalid opcode 0x%02x",
		    i, s->code);
	op = optab[s->code] - 1;
	d->k = s->k;
	switch (op) {
	case OP_LD_MEM: case OP_LDX_MEM: case OP_ST: case OP_STX:
		if (s->k >= BPF_MEMWORDS)
			return fail(errbuf, errlen, "insn %u: scratch memory "
			    "index %u out of range 0..%d", i, s->k,
			    BPF_MEMWORDS - 1);
		p->usesmem = 1;
		break;
	case OP_DIV_K: case OP_MOD_K:
		if (s->k == 0)
			return fail(errbuf, errlen, "insn %u: division by "
			    "constant zero", i);
		break;
	case OP_LSH_K: case OP_RSH_K:
		if (s->k >= 32)
			return fail(errbuf, errlen, "insn %u: shift by "
			    "constant %u (must be < 32)", i, s->k);
		break;
	case OP_JA:
		if ((int32_t)s->k == -1)
			return fail(errbuf, errlen, "insn %u: jump to itself", i);
		if ((jt = target(i, (int32_t)s->k, p->n)) < 0)
			return fail(errbuf, errlen, "insn %u: jump offset %d "
			    "out of range", i, (int32_t)s->k);
		d->jt = &p->code[jt];
		if ((int32_t)s->k < 0)
			op = OP_JA_BACK;
		break;
	case OP_JGT_K: case OP_JGE_K: case OP_JEQ_K: case OP_JSET_K:
	case OP_JGT_X: case OP_JGE_X: case OP_JEQ_X: case OP_JSET_X:
		if ((jt = target(i, s->jt, p->n)) < 0 ||
		    (jf = target(i, s->jf, p->n)) < 0)
			return fail(errbuf, errlen, "insn %u: jump out of range "
			    "(jt %u, jf %u, %u insns)", i, s->jt, s->jf, p->n);
		d->jt = &p->code[jt];
		d->jf = &p->code[jf];
		break;
	}
	if ((size = loadsize[op]) != 0) {
		if ((uint64_t)s->k + size > UINT32_MAX) {
			/* No caplen can hold it: always rejects. */
			op = OP_RET_K;
			d->k = 0;
		} else
			d->end = s->k + size;
	}
	return op;
}

struct snb_bpf *
snb_bpf_load(const struct bpf_insn *insns, unsigned n, char *errbuf,
    size_t errlen)
{
	const void *const *labels;
	struct snb_bpf *p;
	unsigned char *ops;
	unsigned i;
	int op;

	if (insns == NULL || n == 0) {
		fail(errbuf, errlen, "empty program");
		return NULL;
	}
	if (n > SNB_BPF_MAXINSNS) {
		fail(errbuf, errlen, "program too long (%u insns, max %d)",
		    n, SNB_BPF_MAXINSNS);
		return NULL;
	}
	p = calloc(1, sizeof(*p) + (size_t)n * sizeof(p->code[0]));
	ops = calloc(n, 1);
	if (p == NULL || ops == NULL) {
		fail(errbuf, errlen, "out of memory");
		goto bad;
	}
	p->n = n;
	for (i = 0; i < n; i++) {
		if ((op = translate(p, insns, i, errbuf, errlen)) < 0)
			goto bad;
		ops[i] = op;
	}
	if (BPF_CLASS(insns[n - 1].code) != BPF_RET) {
		fail(errbuf, errlen, "program does not end with ret");
		goto bad;
	}

	/* Fuse a packet load with a following "jcc #k" (see the top). */
	for (i = 0; i + 1 < n; i++) {
		if (ops[i] < OP_LDW_ABS || ops[i] > OP_LDB_IND ||
		    ops[i + 1] < OP_JGT_K || ops[i + 1] > OP_JSET_K)
			continue;
		ops[i] = FUSED_BASE + (ops[i] - OP_LDW_ABS) * 4 +
		    (ops[i + 1] - OP_JGT_K);
		p->code[i].jt = p->code[i + 1].jt;
		p->code[i].jf = p->code[i + 1].jf;
	}

	bpf_exec(NULL, NULL, 0, 0, &labels);
	for (i = 0; i < n; i++)
		p->code[i].op = labels[ops[i]];
	free(ops);
	return p;
bad:
	free(ops);
	free(p);
	return NULL;
}

void
snb_bpf_free(struct snb_bpf *p)
{
	free(p);
}
