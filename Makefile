# snb: one non-recursive Makefile.  Every apps/X.c becomes build/bin/snb-X,
# apps/X/ and drivers/X/ become snb-X, every tools/snb-X.c becomes
# build/bin/snb-X, every libring/*.c goes into
# build/libring.a.  BUILD=build-asan SAN=1 gives the sanitizer build.

# The one version every tool's --version prints (libring/cli.c).
VERSION := 0.1
BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc
CFLAGS  ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -pthread -Ilibring
override LDLIBS += -lpcap -lbsd
# STATIC=1: everything linked -static (the QEMU guest's binaries, tests/vm/):
# libpcap.a needs libdbus-1.a, libbsd.a needs libmd.a.  libdbus-1.a refers
# to two libsystemd functions (server side, never called by pcap's D-Bus
# client) and Debian ships no libsystemd.a: they resolve to address 0.
ifeq ($(STATIC),1)
override LDFLAGS += -static -Wl,--defsym=sd_listen_fds=0 -Wl,--defsym=sd_is_socket=0
override LDLIBS += -ldbus-1 -lmd
endif
ifeq ($(SAN),1)
override CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
override LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC   := $(wildcard libring/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libring.a
APP_SRC   := $(wildcard apps/*.c)
# A larger app is a directory: apps/NAME/*.c -> snb-NAME.
APP_DIRS  := $(patsubst apps/%/,%,$(sort $(dir $(wildcard apps/*/*.c))))
TOOL_SRC  := $(wildcard tools/snb-*.c)
# A larger tool is a directory: tools/snb-NAME/*.c -> snb-NAME.
TOOL_DIRS := $(patsubst tools/%/,%,$(sort $(dir $(wildcard tools/*/*.c))))
# A driver is a directory: drivers/NAME/*.c -> snb-NAME (nic, vhost, memif).
DRV_DIRS  := $(patsubst drivers/%/,%,$(sort $(dir $(wildcard drivers/*/*.c))))
# A directory app or driver that needs more than libring is linked with
# LIBS_NAME (the demo's programs need none of these).
LIBS_nic  := -lxdp -lbpf -lelf -lz
LIBS_esp  := -lIPSec_MB
BINS      := $(APP_SRC:apps/%.c=$(BUILD)/bin/snb-%) $(TOOL_SRC:tools/%.c=$(BUILD)/bin/%) \
             $(DRV_DIRS:%=$(BUILD)/bin/snb-%) \
             $(APP_DIRS:%=$(BUILD)/bin/snb-%) $(TOOL_DIRS:%=$(BUILD)/bin/%)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNITS     := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TTOOL_SRC := $(wildcard tests/tools/*.c)
TTOOLS    := $(TTOOL_SRC:tests/tools/%.c=$(BUILD)/tests/%)
# TEST ONLY (tests/memif.bats): snb-memif built to map region files it
# cannot seal, so a test slave can shrink one under the master's mapping
# and show the SIGBUS guard (libring/memguard.h) without draining the
# host's huge page pool.  In build/tests, never installed.
MEMIF_TEST := $(BUILD)/tests/snb-memif-unsealed
BENCH_SRC := $(wildcard bench/*.c)
BENCHES   := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
HDRS      := $(wildcard libring/*.h apps/*/*.h drivers/*/*.h tools/*/*.h tests/unit/*.h)

.PHONY: all bins check check-fast check-vm bench demo install clean deps fuzz
# Keep objects make would call intermediate (apps, tools, tests).
.SECONDARY:
all: $(BINS) $(UNITS) $(TTOOLS) $(MEMIF_TEST) $(BENCHES)
# Just the programs (tests/vm/ builds them with BUILD=build/vm/static STATIC=1).
bins: $(BINS)

# Unit tests, benches and fuzz targets that include an app's .c files.
LWAFTR_C  := $(wildcard apps/lwaftr/*.c)
$(BUILD)/tests/unit/test_lwaftr_conf.o $(BUILD)/tests/unit/test_lwaftr_bt.o \
    $(BUILD)/tests/unit/test_lwaftr_btedit.o: $(LWAFTR_C)
$(BUILD)/bench/lwaftr_bt_bench.o: $(LWAFTR_C)
$(BUILD)/tests/unit/test_vhost_msg.o: drivers/vhost/msg.c
# snb-nic's PCI ring code, driven by a model of the device.
$(BUILD)/tests/test_nic_rings: $(BUILD)/drivers/nic/virtio_ring.o \
    $(BUILD)/drivers/nic/e1000_ring.o
ESP_C     := $(wildcard apps/esp/*.c)
$(BUILD)/tests/unit/test_esp.o: $(ESP_C)
$(BUILD)/tests/test_esp: override LDLIBS += $(LIBS_esp)
$(BUILD)/bench/esp_bench.o: $(ESP_C)
$(BUILD)/bench/esp_bench: override LDLIBS += $(LIBS_esp)

$(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# cli.o alone carries the version; it is rebuilt when the Makefile changes.
$(BUILD)/libring/cli.o: CFLAGS += -DSNB_VERSION='"$(VERSION)"'
$(BUILD)/libring/cli.o: Makefile

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/bin/snb-%: $(BUILD)/apps/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

define APP_DIR_RULE
$(BUILD)/bin/snb-$(1): $(patsubst %.c,$(BUILD)/%.o,$(wildcard apps/$(1)/*.c)) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS) $$(LIBS_$(1))
endef
$(foreach d,$(APP_DIRS),$(eval $(call APP_DIR_RULE,$(d))))

define DRV_DIR_RULE
$(BUILD)/bin/snb-$(1): $(patsubst %.c,$(BUILD)/%.o,$(wildcard drivers/$(1)/*.c)) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS) $$(LIBS_$(1))
endef
$(foreach d,$(DRV_DIRS),$(eval $(call DRV_DIR_RULE,$(d))))

define TOOL_DIR_RULE
$(BUILD)/bin/$(1): $(patsubst %.c,$(BUILD)/%.o,$(wildcard tools/$(1)/*.c)) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach d,$(TOOL_DIRS),$(eval $(call TOOL_DIR_RULE,$(d))))

$(BUILD)/bin/snb-%: $(BUILD)/tools/snb-%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/memif-unsealed/mem.o: drivers/memif/mem.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSNB_TEST_UNSEALED=1 -c -o $@ $<
$(MEMIF_TEST): $(BUILD)/tests/memif-unsealed/mem.o \
    $(patsubst %.c,$(BUILD)/%.o,$(filter-out %/mem.c,$(wildcard drivers/memif/*.c))) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Packages by what they are for (tools/deps.sh): demo < build < check.
deps:
	@sh tools/deps.sh check

# The whole suite, then the whole suite again under ASan+UBSan.
check: deps
	@$(MAKE) --no-print-directory -s all
	@$(MAKE) --no-print-directory -s all BUILD=build-asan SAN=1 CFLAGS="-O1 -g"
	@sh tests/run build build-asan

# One pass, normal build only (for quick iterations).
check-fast:
	@$(MAKE) --no-print-directory -s all
	@sh tests/run build

# The QEMU guest tests (tests/vm/): the user-space PCI drivers (tests/vm.bats)
# and the L2 VPN against the guest's kernel (tests/l2vpn-vm.bats).
check-vm: deps
	@$(MAKE) --no-print-directory -s all
	@SNB_BUILD=$(CURDIR)/build PATH=$(CURDIR)/build/bin:$(CURDIR)/build/tests:$$PATH bats tests/vm.bats tests/l2vpn-vm.bats

bench: deps
	@$(MAKE) --no-print-directory -s all
	@sh bench/run build

# The demo builds and needs only its own programs (no libxdp, no test peers).
DEMO_BINS := $(addprefix $(BUILD)/bin/snb-,run pcap-read pcap-write filter source tee join sink) \
             $(BUILD)/tests/mkpcap
demo:
	@sh tools/deps.sh demo
	@$(MAKE) --no-print-directory -s $(DEMO_BINS)
	@sh examples/demo.sh $(BUILD)

# libFuzzer targets (clang): the lwAFTR's config parser and its data path,
# snb-vhost's vhost-user messages and virtqueues, snb-memif's messages and
# rings, capture files (snb-pcap-read, snb-pcap-write), the graph language
# (parser, checker, --describe), the L2 VPN's tunnel stages, snb-nd,
# the pseudowire configuration, snb-nic's e1000 and virtio rings
# against a hostile device, and snb-esp's ESP input and SA files.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=undefined -Ilibring -Iapps/lwaftr
fuzz:
	@mkdir -p build/fuzz-conf-corpus build/fuzz-frames-corpus
	clang $(FUZZ_CFLAGS) fuzz/lwaftr_conf_fuzz.c -o build/fuzz_conf
	clang $(FUZZ_CFLAGS) fuzz/lwaftr_frames_fuzz.c \
	    $(filter-out apps/lwaftr/main.c,$(wildcard apps/lwaftr/*.c)) \
	    libring/*.c -lpcap -lbsd -o build/fuzz_frames
	build/fuzz_conf -max_total_time=$(FUZZ_SECONDS) -dict=fuzz/conf.dict \
	    build/fuzz-conf-corpus fuzz/corpus/conf
	build/fuzz_frames -max_total_time=$(FUZZ_SECONDS) build/fuzz-frames-corpus
	@mkdir -p build/fuzz-vhost-corpus
	clang $(FUZZ_CFLAGS) -Idrivers/vhost fuzz/vhost_msg_fuzz.c \
	    drivers/vhost/msg.c drivers/vhost/virtq.c libring/*.c -lpcap -lbsd \
	    -o build/fuzz_vhost
	build/fuzz_vhost -max_total_time=$(FUZZ_SECONDS) build/fuzz-vhost-corpus \
	    fuzz/corpus/vhost
	@mkdir -p build/fuzz-memif-corpus
	clang $(FUZZ_CFLAGS) -Idrivers/memif fuzz/memif_msg_fuzz.c \
	    libring/*.c -lpcap -lbsd -o build/fuzz_memif
	build/fuzz_memif -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=2 \
	    build/fuzz-memif-corpus fuzz/corpus/memif
	@# Capture files: snb-pcap-read's reading and resuming, snb-pcap-write's
	@# scanner (a second compilation of the same file: both apps have a main).
	@mkdir -p build/fuzz-pcap-corpus
	clang $(FUZZ_CFLAGS) -DPCAP_FUZZ_WRITE -c fuzz/pcap_fuzz.c \
	    -o build/pcap_fuzz_write.o
	clang $(FUZZ_CFLAGS) fuzz/pcap_fuzz.c build/pcap_fuzz_write.o \
	    libring/*.c -lpcap -lbsd -o build/fuzz_pcap
	build/fuzz_pcap -max_total_time=$(FUZZ_SECONDS) build/fuzz-pcap-corpus \
	    fuzz/corpus/pcap
	@mkdir -p build/fuzz-graph-corpus
	clang $(FUZZ_CFLAGS) fuzz/graph_fuzz.c libring/graph.c \
	    libring/graph_parse.c libring/graph_check.c -lbsd \
	    -o build/fuzz_graph
	build/fuzz_graph -max_total_time=$(FUZZ_SECONDS) -dict=fuzz/graph.dict \
	    build/fuzz-graph-corpus fuzz/corpus/graph
	@# The L2 VPN: snb-l2tp's and snb-gre's stage, snb-nd, the pseudowire
	@# configuration (one source, four targets).
	@for t in l2tp gre nd conf; do \
	    mkdir -p build/fuzz-l2vpn-$$t-corpus && \
	    clang $(FUZZ_CFLAGS) -DFUZZ_$$(echo $$t | tr a-z A-Z) \
	        fuzz/l2vpn_fuzz.c libring/*.c -lpcap -lbsd \
	        -o build/fuzz_l2vpn_$$t && \
	    build/fuzz_l2vpn_$$t -max_total_time=$(FUZZ_SECONDS) \
	        build/fuzz-l2vpn-$$t-corpus fuzz/corpus/l2vpn-$$t || exit 1; \
	done
	@mkdir -p build/fuzz-e1000-corpus build/fuzz-virtio-corpus
	clang $(FUZZ_CFLAGS) -Idrivers/nic fuzz/e1000_ring_fuzz.c \
	    drivers/nic/e1000_ring.c libring/*.c -lpcap -lbsd -o build/fuzz_e1000
	build/fuzz_e1000 -max_total_time=$(FUZZ_SECONDS) build/fuzz-e1000-corpus \
	    fuzz/corpus/e1000
	clang $(FUZZ_CFLAGS) -Idrivers/nic fuzz/virtio_ring_fuzz.c \
	    drivers/nic/virtio_ring.c libring/*.c -lpcap -lbsd \
	    -o build/fuzz_virtio
	build/fuzz_virtio -max_total_time=$(FUZZ_SECONDS) \
	    build/fuzz-virtio-corpus fuzz/corpus/virtio
	@# snb-esp: ESP decapsulation (before and after the ICV), SA files.
	@mkdir -p build/fuzz-esp-corpus
	clang $(FUZZ_CFLAGS) fuzz/esp_fuzz.c libring/cfg.c libring/cfg_read.c -lIPSec_MB \
	    -o build/fuzz_esp
	build/fuzz_esp -max_total_time=$(FUZZ_SECONDS) build/fuzz-esp-corpus \
	    fuzz/corpus/esp

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(BINS) $(DESTDIR)$(PREFIX)/bin
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 644 man/*.7 $(DESTDIR)$(PREFIX)/share/man/man7

clean:
	rm -rf build build-asan
