/*
 * lwaftr_conf_fuzz: libFuzzer target for the softwire-config parser
 * (apps/lwaftr/conf.c on libring/cfg.c) and the binding table built from
 * what it accepts.
 *
 * Build and run (from the repository root; new inputs go to the first
 * directory, so keep the checked-in seeds read-only in the second):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Iapps/lwaftr \
 *	    fuzz/lwaftr_conf_fuzz.c -o build/fuzz_conf
 *	mkdir -p build/fuzz-conf-corpus
 *	build/fuzz_conf -max_total_time=600 -dict=fuzz/conf.dict \
 *	    build/fuzz-conf-corpus fuzz/corpus/conf
 *
 * The input is the whole file, NUL bytes included (parse_text takes a
 * length, as lwaftr_conf_load does).  Beyond "no crash, no leak", each
 * run checks properties: a failure's message is "fuzz.conf:LINE:COL: ..."
 * with LINE inside the input, a success leaves a configuration whose
 * every softwire the table finds again, by single and by burst lookup.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../libring/cfg.c"
#include "../libring/cfg_read.c"
#include "../apps/lwaftr/conf.c"
#include "../apps/lwaftr/bt.c"
#include "../apps/lwaftr/btlookup.c"

static void
check_message(const char *err, const uint8_t *data, size_t size)
{
	const char *p = err + strlen("fuzz.conf:");
	long line, col, lines = 1;
	char *end;
	size_t i;

	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (strncmp(err, "fuzz.conf:", 10) != 0)
		abort();
	line = strtol(p, &end, 10);
	if (*end != ':' || line < 1 || line > lines)
		abort();
	col = strtol(end + 1, &end, 10);
	if (*end != ':' || col < 1 || end[1] != ' ' || end[2] == '\0')
		abort();
}

/* Some port of sw's port set: the PSID bits in place, the rest varied. */
static uint16_t
port_of(const struct softwire *sw, uint32_t salt)
{
	unsigned shift = 16 - sw->reserved_bits - sw->psid_length;
	uint32_t p = salt & 0xffff;

	if (sw->psid_length)
		p = (p & ~(((1u << sw->psid_length) - 1) << shift)) |
		    (uint32_t)sw->psid << shift;
	return htons((uint16_t)p);
}

static void
check_table(const struct lwaftr_conf *c)
{
	const struct softwire *out[64], *s;
	uint32_t ip[64];
	uint16_t port[64];
	struct lwaftr_bt *bt;
	char err[256];
	size_t i;
	int n = 0, j;

	if ((bt = lwaftr_bt_build(c->sw, c->nsw, NULL, NULL, err,
	    sizeof(err))) == NULL)
		return;
	for (i = 0; i < c->nsw; i++) {
		const struct softwire *w = &c->sw[i];

		port[n] = port_of(w, (uint32_t)i * 2654435761u);
		ip[n] = w->ipv4;
		s = lwaftr_bt_lookup(bt, w->ipv4, port[n]);
		if (s == NULL || s->ipv4 != w->ipv4 || s->psid != w->psid ||
		    memcmp(s->b4, w->b4, 16) != 0 ||
		    !lwaftr_bt_has_ipv4(bt, w->ipv4))
			abort();
		if (++n == 64 || i + 1 == c->nsw) {
			lwaftr_bt_lookup_burst(bt, ip, port, n, out);
			for (j = 0; j < n; j++)
				if (out[j] != lwaftr_bt_lookup(bt, ip[j],
				    port[j]))
					abort();
			n = 0;
		}
	}
	lwaftr_bt_free(bt);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lwaftr_conf c;
	char err[512];
	char *text;

	/* an exact-size copy, so a read past the end is caught */
	if ((text = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	if (parse_text(&c, text, size, "fuzz.conf", err, sizeof(err)) == 0)
		check_table(&c);
	else
		check_message(err, data, size);
	lwaftr_conf_free(&c);
	free(text);
	return 0;
}
