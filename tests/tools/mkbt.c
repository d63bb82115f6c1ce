/*
 * mkbt: write an lwAFTR configuration with N softwires, for benchmarks
 * and load tests of big binding tables.
 *
 *	mkbt OUT.conf N [PSID_LENGTH]
 *
 * Everything but the binding table is that of ../shared/bench/lwaftr/
 * bench.conf.  The table starts with bench.conf's own 12 softwires (so
 * the bench pcaps, 1.2.3.4 <-> 178.79.150.233:80, still hit a softwire)
 * followed by N - 12 generated ones: addresses from 16.0.0.0 up, each
 * with every PSID of PSID_LENGTH bits (default 4: 16 softwires an
 * address), B4 addresses 2001:db8:ADDR::PSID, BR 8:9:a:b:c:d:e:f.  The
 * output is the same for the same arguments.  "-" writes to stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char head[] =
    "softwire-config {\n"
    "  binding-table {\n";

/* bench.conf's softwires: ipv4, psid, b4, br, psid-length */
static const struct {
	const char	*ipv4;
	unsigned	 psid;
	const char	*b4, *br;
	unsigned	 plen;
} bench_sw[] = {
	{ "178.79.150.3", 4, "127:14:25:36:47:58:69:128", "1e:2:2:2:2:2:2:af",
	    6 },
	{ "178.79.150.233", 22788, "127:11:12:13:14:15:16:128",
	    "8:9:a:b:c:d:e:f", 16 },
	{ "178.79.150.1", 0, "127:10:20:30:40:50:60:128", "8:9:a:b:c:d:e:f",
	    0 },
	{ "178.79.150.233", 2700, "127:11:12:13:14:15:16:128",
	    "8:9:a:b:c:d:e:f", 16 },
	{ "178.79.150.233", 4660, "127:11:12:13:14:15:16:128",
	    "8:9:a:b:c:d:e:f", 16 },
	{ "178.79.150.233", 54192, "127:11:12:13:14:15:16:128",
	    "8:9:a:b:c:d:e:f", 16 },
	{ "178.79.150.233", 7850, "127:11:12:13:14:15:16:128",
	    "8:9:a:b:c:d:e:f", 16 },
	{ "178.79.150.15", 1, "127:22:33:44:55:66:77:128", "8:9:a:b:c:d:e:f",
	    4 },
	{ "178.79.150.233", 2300, "127:11:12:13:14:15:16:128",
	    "8:9:a:b:c:d:e:f", 16 },
	{ "178.79.150.15", 0, "127:22:33:44:55:66:77:128", "8:9:a:b:c:d:e:f",
	    4 },
	{ "178.79.150.233", 80, "127:2:3:4:5:6:7:128", "8:9:a:b:c:d:e:f",
	    16 },
	{ "178.79.150.2", 7850, "127:24:35:46:57:68:79:128",
	    "1e:1:1:1:1:1:1:af", 16 },
};

static const char tail[] =
    "  }\n"
    "  external-interface {\n"
    "    allow-incoming-icmp false;\n"
    "    error-rate-limiting {\n"
    "      packets 600000;\n"
    "    }\n"
    "    reassembly {\n"
    "      max-fragments-per-packet 40;\n"
    "    }\n"
    "  }\n"
    "  instance {\n"
    "    device test;\n"
    "    queue {\n"
    "      id 0;\n"
    "      external-interface {\n"
    "        ip 10.10.10.10;\n"
    "        mac 12:12:12:12:12:12;\n"
    "        next-hop {\n"
    "          mac 68:68:68:68:68:68;\n"
    "        }\n"
    "      }\n"
    "      internal-interface {\n"
    "        ip 8:9:a:b:c:d:e:f;\n"
    "        mac 22:22:22:22:22:22;\n"
    "        next-hop {\n"
    "          mac 44:44:44:44:44:44;\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  internal-interface {\n"
    "    allow-incoming-icmp false;\n"
    "    error-rate-limiting {\n"
    "      packets 600000;\n"
    "    }\n"
    "    reassembly {\n"
    "      max-fragments-per-packet 40;\n"
    "    }\n"
    "  }\n"
    "}\n";

static void
usage(void)
{
	fprintf(stderr, "usage: mkbt OUT.conf N [PSID_LENGTH]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	unsigned long long n, i, gen;
	unsigned plen = 4, per;
	uint32_t a;
	char *end;
	FILE *f;
	size_t k, nb = sizeof(bench_sw) / sizeof(bench_sw[0]);

	if (argc < 3 || argc > 4)
		usage();
	n = strtoull(argv[2], &end, 10);
	if (*end != '\0' || end == argv[2])
		usage();
	if (argc == 4) {
		plen = (unsigned)strtoul(argv[3], &end, 10);
		if (*end != '\0' || plen > 16)
			usage();
	}
	per = 1u << plen;
	/* 16.0.0.0 up: clear of bench.conf's 178.79.150.x */
	if ((n > nb ? n - nb : 0) / per > 0xa0000000ULL)
		usage();
	f = strcmp(argv[1], "-") == 0 ? stdout : fopen(argv[1], "w");
	if (f == NULL) {
		perror(argv[1]);
		return 1;
	}
	fputs(head, f);
	for (k = 0; k < nb && k < n; k++)
		fprintf(f, "    softwire {\n      ipv4 %s;\n      psid %u;\n"
		    "      b4-ipv6 %s;\n      br-address %s;\n"
		    "      port-set {\n        psid-length %u;\n      }\n"
		    "    }\n", bench_sw[k].ipv4, bench_sw[k].psid,
		    bench_sw[k].b4, bench_sw[k].br, bench_sw[k].plen);
	gen = n > nb ? n - nb : 0;
	for (i = 0; i < gen; i++) {
		a = 0x10000000u + (uint32_t)(i / per);
		fprintf(f, "    softwire {\n      ipv4 %u.%u.%u.%u;\n"
		    "      psid %llu;\n"
		    "      b4-ipv6 2001:db8:%x:%x::%llx;\n"
		    "      br-address 8:9:a:b:c:d:e:f;\n"
		    "      port-set {\n        psid-length %u;\n      }\n"
		    "    }\n", a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255,
		    i % per, a >> 16, a & 0xffff, i % per, plen);
	}
	fputs(tail, f);
	if (fflush(f) == EOF || ferror(f) || (f != stdout && fclose(f))) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
